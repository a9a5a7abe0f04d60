#!/usr/bin/env bats
# Long fsx runs (make stress; tests/stress/run sets the sizes): a new file,
# a file that starts in the ro branch (copied up at the first change, with
# a second O_RDONLY descriptor opened before), both at once, and the same
# with the writeback cache. See tests/64-fsx.bats for the short ones.

load ../helpers/common
load lib

OPS=${STRESS_FSX_OPS:-200000}
MAXLEN=${STRESS_FSX_MAXLEN:-1048576}

setup_file() {
	sfs_setup_file 1
	sfs_require_tool fsx
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
}

teardown() {
	sfs_cleanup
}

@test "stress: fsx on a new file" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_fsx new "$MNT/new" -N "$OPS" -l "$MAXLEN"
	"$SFS" umount "$MNT"
	st_same_as_model new "$UP/new"
}

@test "stress: fsx on a file from the ro branch, and a new one at once" {
	st_make_lower_file "$LO/f"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_fsx_start low "$MNT/f" -e -d -N "$OPS" -l "$MAXLEN"
	st_fsx_start new "$MNT/new" -N "$OPS" -l "$MAXLEN"
	st_fsx_wait low
	st_fsx_wait new
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	st_same_as_model low "$UP/f"
	st_same_as_model new "$UP/new"
}

@test "stress: fsx with the writeback cache, on a file from the ro branch" {
	st_make_lower_file "$LO/f"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT" writeback
	st_fsx wb "$MNT/f" -e -d -N "$OPS" -l "$MAXLEN"
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	st_same_as_model wb "$UP/f"
}
