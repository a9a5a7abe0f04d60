#!/usr/bin/env bats
# Interoperability with the kernel's overlayfs and with OCI layers: a rw
# branch written by stackfs with -o whiteout=overlay is a valid overlayfs
# upper directory over the same lower branch; a kernel overlayfs upper
# directory, or an unpacked OCI layer with .wh. files, used as a lower
# branch of stackfs shows the deletions it records.

load helpers/common
load helpers/copyup

setup_file() {
	sfs_setup_file 1
	modprobe overlay 2>/dev/null || true
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	grep -qw overlay /proc/filesystems || skip "the kernel has no overlayfs"
	MNT2=$BATS_TEST_TMPDIR/ovl
	mkdir -p "$MNT2"
}

teardown() {
	sfs_cleanup
}

# mount_overlay LOWER UPPER [OPTS]: kernel overlayfs on MNT2, with a fresh
# work directory on the upper's filesystem; unmounted at cleanup.
mount_overlay() {
	local lower=$1 upper=$2 extra=${3:+,$3} work
	work=$T/ovlwork.$RANDOM
	mkdir -p "$work"
	sfs_record mount "$MNT2"
	mount -t overlay overlay \
		-o "lowerdir=$lower,upperdir=$upper,workdir=$work,redirect_dir=on,index=off$extra" "$MNT2" ||
		fail "kernel overlayfs refused lowerdir=$lower upperdir=$upper: $(dmesg | tail -3)"
}

umount_overlay() {
	umount "$MNT2" || fail "umount of the overlay failed"
}

# A lower tree with something for every kind of change.
make_base() {
	local b=$1
	mkdir -p "$b/keepdir" "$b/deldir/sub" "$b/redo" "$b/mvd/sub" "$b/mvd3" "$b/merged"
	echo keep >"$b/keep"
	echo mod >"$b/mod"
	echo del >"$b/del"
	echo mvf >"$b/mvf"
	echo chm >"$b/chm"
	echo x >"$b/deldir/x"
	echo y >"$b/deldir/sub/y"
	echo old >"$b/redo/old"
	echo m1 >"$b/mvd/m1"
	echo m2 >"$b/mvd/sub/m2"
	echo z >"$b/mvd3/z"
	echo k >"$b/keepdir/k"
	echo lm >"$b/merged/lm"
	echo lm2 >"$b/merged/lm2"
	ln -s keep "$b/sl"
}

# The same changes, through a view (stackfs or overlayfs) at $1.
change_view() {
	local v=$1
	echo new >"$v/newfile"
	mkdir "$v/newdir"
	echo nd >"$v/newdir/f"
	ln -s newfile "$v/newsl"
	echo more >>"$v/mod"
	rm "$v/del"
	rm -r "$v/deldir"
	rm -r "$v/redo"
	mkdir "$v/redo"
	echo fresh >"$v/redo/fresh"
	mv "$v/mvd" "$v/mvd2"
	mkdir "$v/nd"
	mv "$v/mvd3" "$v/nd/mvd3"
	mv "$v/mvf" "$v/mvf2"
	chmod 0600 "$v/chm"
	echo kk >"$v/keepdir/new"
	rm "$v/merged/lm"
	mkfifo "$v/fifo"
}

@test "a rw branch written by stackfs with whiteout=overlay shows the same tree under kernel overlayfs" {
	make_base "$LO"
	sfs_snapshot "$LO"
	cu_mount whiteout=overlay
	change_view "$MNT"
	cu_view_state "$MNT" >"$BATS_TEST_TMPDIR/stackfs.state"
	# sanity: the changes are what we think they are
	grep -q '^./mvd2/sub/m2|f|' "$BATS_TEST_TMPDIR/stackfs.state" || fail "stackfs view lacks mvd2/sub/m2"
	grep -q '^./nd/mvd3/z|f|' "$BATS_TEST_TMPDIR/stackfs.state" || fail "stackfs view lacks nd/mvd3/z"
	! grep -q '^./deldir' "$BATS_TEST_TMPDIR/stackfs.state" || fail "stackfs view shows deldir"
	! grep -q '^./redo/old' "$BATS_TEST_TMPDIR/stackfs.state" || fail "stackfs view shows redo/old"
	cu_umount
	# metacopy=on: a chmod through stackfs copied the metadata alone
	# (docs/union.md "Metadata-only copy-up"), which the kernel follows only so
	mount_overlay "$LO" "$UP" metacopy=on
	run -0 cu_view_state "$MNT2"
	assert_output "$(cat "$BATS_TEST_TMPDIR/stackfs.state")"
	umount_overlay
	sfs_assert_unchanged "$LO"
}

@test "a kernel overlayfs upper directory used as a ro middle branch shows the deletions, opaque and moved directories it records" {
	make_base "$LO"
	OUP=$T/ovlupper
	mkdir -p "$OUP"
	mount_overlay "$LO" "$OUP"
	change_view "$MNT2"
	cu_view_state "$MNT2" >"$BATS_TEST_TMPDIR/overlay.state"
	umount_overlay
	# what overlayfs recorded is in both formats' reach: device whiteouts,
	# an opaque xattr, redirects
	[[ -c $OUP/del ]] || fail "overlayfs wrote no device whiteout for del: $(ls -lA "$OUP")"
	cu_xattr_text "$OUP/redo" trusted.overlay.opaque >/dev/null || fail "overlayfs wrote no opaque xattr on redo"
	sfs_snapshot "$LO"
	sfs_snapshot "$OUP"
	cu_mount "" "$UP:$OUP=ro:$LO"
	run -0 cu_view_state "$MNT"
	assert_output "$(cat "$BATS_TEST_TMPDIR/overlay.state")"
	# and that view can be written on
	rm "$MNT/keep"
	rm -r "$MNT/mvd2"
	cu_assert_gone "$MNT" keep
	cu_assert_gone "$MNT" mvd2
	cu_remount "" "$UP:$OUP=ro:$LO"
	cu_assert_gone "$MNT" keep
	cu_assert_gone "$MNT" mvd2
	run -0 cat "$MNT/nd/mvd3/z"
	assert_output z
	sfs_assert_unchanged "$LO"
	sfs_assert_unchanged "$OUP"
}

@test "an unpacked OCI layer with .wh. files used as a ro branch shows the deletions it records" {
	make_base "$LO"
	LAYER=$T/layer
	mkdir -p "$LAYER/redo" "$LAYER/merged" "$LAYER/keepdir"
	touch "$LAYER/.wh.del" "$LAYER/.wh.deldir" "$LAYER/redo/.wh..wh..opq" "$LAYER/merged/.wh.lm"
	echo fresh >"$LAYER/redo/fresh"
	echo layer-keep >"$LAYER/keep"
	echo added >"$LAYER/keepdir/added"
	sfs_snapshot "$LO"
	sfs_snapshot "$LAYER"
	cu_mount "" "$UP:$LAYER=ro:$LO"
	cu_assert_gone "$MNT" del
	cu_assert_gone "$MNT" deldir
	run -0 ls -A "$MNT/redo"
	assert_output fresh
	run -0 ls -A "$MNT/merged"
	assert_output lm2
	run -0 ls -A "$MNT/keepdir"
	assert_output $'added\nk'
	run -0 cat "$MNT/keep"
	assert_output layer-keep
	run -0 bash -c "ls -A '$MNT' '$MNT/redo' '$MNT/merged' | grep -c '^\\.wh\\.' || true"
	assert_output 0
	# the whole view, against what an OCI runtime would unpack
	run -0 bash -c "cd '$MNT' && find . | LC_ALL=C sort"
	assert_output "$(printf '%s\n' . ./chm ./keep ./keepdir ./keepdir/added ./keepdir/k ./merged ./merged/lm2 \
		./mod ./mvd ./mvd/m1 ./mvd/sub ./mvd/sub/m2 ./mvd3 ./mvd3/z ./mvf ./redo ./redo/fresh ./sl)"
	sfs_assert_unchanged "$LO"
	sfs_assert_unchanged "$LAYER"
}
