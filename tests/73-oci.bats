#!/usr/bin/env bats
# Unpacked OCI layers as branches (issue 15): the OCI image spec's
# whiteout rules, checked against a reference flattening written for the
# test (tests/tools/ocilayers.py). In one layer a whiteout applies to the
# layers below only: ".wh.D" beside a directory D deletes the lower D and
# D is the layer's alone; ".wh..wh..opq" hides what the layers below have
# in its directory.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd python3
	sfs_setup_branches
	OCI=$SFS_REPO/tests/tools/ocilayers.py
}

teardown() {
	sfs_cleanup
}

# The pair of the issue: L2 has .wh.d and d/new, L1 has d/old.
beside_pair() {
	mkdir -p "$T/L1/d" "$T/L2/d"
	echo old >"$T/L1/d/old"
	echo new >"$T/L2/d/new"
	: >"$T/L2/.wh.d"
}

@test "OCI: a .wh.D beside the directory D in one layer hides the lower D's content" {
	beside_pair
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	run -0 ls -A "$MNT/d"
	assert_output new
	run -0 ls -A "$MNT"
	assert_output d
	# a copy-up of d keeps it so
	touch "$MNT/d/more"
	run -0 ls -A "$MNT/d"
	assert_output $'more\nnew'
	"$SFS" umount "$MNT" || fail "umount failed"
	# diff of L2 over L1 says the same
	run -0 "$SFS" diff "$T/L2" --lower "$T/L1"
	assert_output $'C /d\nA /d/new\nD /d/old'
}

@test "OCI: fsck --repair of a .wh.D beside D makes D opaque before it removes the whiteout: the view is unchanged" {
	beside_pair
	run -4 "$SFS" fsck "$T/L2" --lower "$T/L1"
	assert_output --partial "[WH_BESIDE]"
	run -1 "$SFS" fsck --repair "$T/L2" --lower "$T/L1"
	[[ ! -e $T/L2/.wh.d && -e $T/L2/d/.wh..wh..opq ]] || fail "not repaired so: $(ls -A "$T/L2" "$T/L2/d")"
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	run -0 ls -A "$MNT/d"
	assert_output new
}

@test "OCI: 200 random three-layer trees (whiteouts, whiteouts beside new entries, opaque directories) flatten as the spec says" {
	mkdir -p "$T/oci/U"
	python3 "$OCI" make "$T/oci" 200 3 || fail "ocilayers make failed"
	sfs_mount "$T/oci/U:$T/oci/L2=ro:$T/oci/L1=ro:$T/oci/L0=ro" "$MNT"
	run python3 "$OCI" check "$T/oci" 200 3 "$MNT"
	((status == 0)) || fail "views not as the spec flattens them: $output"
}
