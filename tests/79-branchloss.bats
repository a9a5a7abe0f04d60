#!/usr/bin/env bats
# A branch taken away under a running mount. The daemon works on the fds
# it opened at mount (DESIGN.md decision 2), so:
#  - a ro branch whose directory is renamed away, or whose filesystem is
#    lazily unmounted, keeps being served from those fds (nothing to fail);
#  - entries removed from a branch (rm -rf) are gone: ENOENT;
#  - a rw branch whose tree (metadata directory included) is removed:
#    copy-up fails with ENOENT (the staging directory is gone), logged
#    with the cause; a new file in its root is still made; reads of the other
#    branches go on, and the mount unmounts cleanly.
# The daemon runs in the foreground (-f) so its log is its stderr.

load helpers/common
load helpers/copyup

setup_file() {
	sfs_setup_file
	sfs_require_tool sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2
	mkdir -p "$LO/d" "$LO2/e"
	echo x >"$LO/d/x"
	echo y >"$LO2/e/y"
	echo f >"$LO/f"
	FG_PID=
}

teardown() {
	sfs_cleanup
	[[ -z $FG_PID ]] || { kill "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null; }
	true
}

fg_mount() {
	LOG=$BATS_TEST_TMPDIR/daemon.log
	sfs_record stackfs "$MNT"
	"$SFS" mount -f -o timeout=0 "$1" "$MNT" >"$LOG" 2>&1 3>&- &
	FG_PID=$!
	sfs_wait_mounted "$MNT" 10 || fail "mount failed: $(cat "$LOG")"
}

fg_umount() {
	fusermount3 -u "$MNT" || fail "fusermount3 -u failed"
	wait "$FG_PID" || fail "daemon exit $?: $(cat "$LOG")"
	FG_PID=
}

@test "a ro branch's entries removed under the mount: ENOENT for them, the other branches served" {
	fg_mount "$UP:$LO=ro:$LO2=ro"
	run -0 cat "$MNT/d/x"
	rm -rf "$LO/d"
	run -1 "$TOOLS/sysprobe" open "$MNT/d/x" rdonly
	assert_output ENOENT
	run -0 cat "$MNT/e/y" "$MNT/f"
	run -0 ls "$MNT"
	assert_output $'e\nf'
	fg_umount
}

@test "a ro branch renamed away or lazily unmounted under the mount: served from its fds" {
	local img2 lo3
	img2=$(sfs_make_image "$SFS_FS" 64 lo3img) || fail "no second image"
	lo3=$img2/lo3
	mkdir -p "$lo3/g"
	echo z >"$lo3/g/z"
	fg_mount "$UP:$LO=ro:$lo3=ro"
	mv "$LO" "$T/moved"
	umount -l "$img2"
	run -0 cat "$MNT/d/x" "$MNT/g/z"
	assert_output $'x\nz'
	# copy-up from a branch whose filesystem is detached still works
	echo more >>"$MNT/g/z"
	run -0 cat "$MNT/g/z"
	assert_output $'z\nmore'
	fg_umount
}

@test "the rw branch's tree removed under the mount: writes fail with ENOENT and are logged; reads go on" {
	fg_mount "$UP:$LO=ro:$LO2=ro"
	run -0 cat "$MNT/d/x"
	rm -rf "${UP:?}"/* "$UP/.stackfs"
	run -1 "$TOOLS/sysprobe" open "$MNT/f" wronly,append 0 more
	assert_output ENOENT
	# its root is still there: a new file needs no staging
	run -0 "$TOOLS/sysprobe" open "$MNT/new" wronly,creat 0644
	run -0 cat "$MNT/d/x" "$MNT/e/y" "$MNT/f"
	assert_output $'x\ny\nf'
	grep -q 'copy-up of f failed: No such file or directory' "$LOG" || fail "no log of the failed copy-up: $(cat "$LOG")"
	fg_umount
}
