#!/usr/bin/env bats
# A mount point inside a branch is never crossed, by the daemon, fsck or
# diff: a FUSE server there that never answers (tests/tools/hangfs.c)
# would otherwise put them, and every caller after them, to sleep. The
# view lists the name (readdir reads the covered entry of the branch) and
# refuses it with EXDEV; fsck and diff name it and skip it 
# (docs/trust.md "Access never leaves a branch").
#
# Every command runs under `timeout`: a call that crosses hangs until the
# cleanup aborts the hangfs connection, so a timeout fails the test.

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool hangfs getdents_small sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	mkdir -p "$LO/d/lm" "$LO/d/ld" "$UP/d/um" "$UP/d/.wh.gone" "$UP/o/.wh..wh..opq" \
		"$LO/o" "$UP/top"
	echo lsib >"$LO/d/lsib"
	echo lsib2 >"$LO/d/lsib2"
	echo gone >"$LO/d/gone"
	echo ld >"$LO/d/ld/f"
	echo usib >"$UP/d/usib"
	echo lo >"$LO/o/lf"
	# a copy-up in the rw branch (an origin record) beside the mount point
	echo lcp >"$LO/d/lcp"
}

teardown() {
	sfs_cleanup
	[[ -z ${FG_PID:-} ]] || { kill "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null; }
	true
}

# A mount in the foreground, its log in $LOG.
fg_mount() {
	LOG=$BATS_TEST_TMPDIR/daemon.log
	sfs_record stackfs "$MNT"
	"$SFS" mount -f "$1" "$MNT" >"$LOG" 2>&1 3>&- &
	FG_PID=$!
	sfs_wait_mounted "$MNT" 10 || fail "mount failed: $(cat "$LOG")"
}

# bounded CMD...: runs CMD (as `run` does) and fails the test when it did
# not finish in 20 s. Not `timeout`, which waits for its child: a caller
# stuck in a FUSE request already sent cannot be killed, so the test would
# hang with it (until the cleanup aborts the hung servers).
bounded() {
	local out=$BATS_TEST_TMPDIR/bounded.out pid i
	"$@" >"$out" 2>&1 3>&- &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		sfs_alive "$pid" || break
		sleep 0.1
	done
	if sfs_alive "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		fail "did not finish in 20 s (a call crossed into the hung mount?): $*"
	fi
	status=0
	wait "$pid" || status=$?
	output=$(<"$out")
	mapfile -t lines <"$out"
}

# The hung mounts: a directory of a ro branch, a directory of the rw
# branch, an aufs whiteout name and an aufs opaque marker of the rw branch.
hang_all() {
	sfs_hang_mount "$LO/d/lm"
	sfs_hang_mount "$UP/d/um"
	sfs_hang_mount "$UP/d/.wh.gone"
	sfs_hang_mount "$UP/o/.wh..wh..opq"
}

@test "the view lists a mount point inside a branch, refuses it with EXDEV and serves everything beside it" {
	fg_mount "$UP:$LO"
	bounded "$TOOLS/sysprobe" open "$MNT/d/lcp" wronly,append x
	assert_success
	hang_all
	bounded ls -la "$MNT/d"
	# ls names what it could not stat (status 1), and lists the rest
	assert_line --regexp '^-.* lsib$'
	assert_line --regexp '^-.* usib$'
	assert_line --regexp '^d.* ld$'
	assert_output --regexp 'lm'
	assert_output --regexp 'um'
	refute_output --partial gone
	bounded "$TOOLS/getdents_small" -b 4096 "$MNT/d"
	assert_success
	assert_line lm
	assert_line um
	assert_line lsib
	refute_line gone
	bounded stat "$MNT/d/lm"
	assert_failure
	assert_output --partial "Invalid cross-device link"
	bounded stat "$MNT/d/um"
	assert_failure
	assert_output --partial "Invalid cross-device link"
	bounded "$TOOLS/sysprobe" access "$MNT/d/gone" F
	assert_output ENOENT
	bounded getfattr -d -m - "$MNT/d/lm"
	assert_failure
	bounded getfattr -d -m - "$MNT/d/lsib" "$MNT/d/usib" "$MNT/d"
	assert_success
	bounded find "$MNT"
	assert_line "$MNT/d/lsib"
	assert_line "$MNT/d/ld/f"
	assert_line "$MNT/o"
	bounded cat "$MNT/o/lf"
	# an aufs opaque marker that is a mount point: the directory is opaque
	refute_output lo
	# copy-up of a sibling, removal of siblings, new names
	bounded "$TOOLS/sysprobe" open "$MNT/d/lsib" wronly,append more
	assert_success
	[[ -f $UP/d/lsib ]] || fail "no copy-up of lsib"
	bounded rm "$MNT/d/lsib2" "$MNT/d/usib"
	assert_success
	bounded "$TOOLS/sysprobe" mkdir "$MNT/d/nd"
	assert_success
	bounded mv "$MNT/d/ld" "$MNT/d/ld2"
	assert_success
	bounded ls "$MNT/d"
	refute_line lsib2
	refute_line usib
	assert_line ld2
	assert_line nd
	# a rm -r of the parent stops at the mount points, removing the rest
	bounded rm -rf "$MNT/d"
	assert_failure
	bounded "$TOOLS/getdents_small" -b 4096 "$MNT/d"
	assert_success
	assert_line lm
	assert_line um
	refute_line lsib
	bounded "$SFS" umount "$MNT"
	assert_success
	sfs_wait_gone "$FG_PID" 20 || fail "the daemon did not exit after the unmount"
	wait "$FG_PID" || fail "daemon exit $?: $(cat "$LOG")"
	FG_PID=
	# logged with branch and path, not once per call (rate-limited)
	run grep -c 'mount point' "$LOG"
	((output >= 1 && output <= 2)) || fail "$(cat "$LOG")"
	run grep 'mount point' "$LOG"
	assert_output --regexp "branch ($LO: /d/lm|$UP: /d/um): a mount point"
}

@test "stackfs fsck and diff skip a mount point inside a branch and name it" {
	sfs_mount "$UP:$LO" "$MNT"
	bounded "$TOOLS/sysprobe" open "$MNT/d/lcp" wronly,append x
	assert_success
	hang_all
	bounded "$SFS" diff "$MNT"
	assert_failure 1 # the list is incomplete
	assert_output --partial "/d/lm: Invalid cross-device link (a mount point"
	assert_output --partial "/d/um"
	assert_line "C /d/lcp"
	bounded "$SFS" umount "$MNT"
	assert_success
	bounded "$SFS" diff "$UP"
	assert_failure 1
	assert_output --partial "/d/um: Invalid cross-device link (a mount point"
	assert_line "C /d/lcp"
	bounded "$SFS" fsck "$UP"
	assert_output --partial "/d/um: a mount point: not crossed"
	assert_output --partial "/d/.wh.gone: a mount point: not crossed"
	bounded "$SFS" fsck --lower "$LO" "$UP"
	assert_output --partial "/d/um: a mount point: not crossed"
	bounded "$SFS" fsck "$LO"
	assert_output --partial "/d/lm: a mount point: not crossed"
	bounded "$SFS" commit "$UP" --into "$LO"
	assert_failure
}

@test "stackfs commit stops at a mount point under a lower directory it removes, without entering it" {
	mkdir -p "$LO/x/m"
	echo f >"$LO/x/f"
	sfs_mount "$UP:$LO" "$MNT"
	bounded rm -rf "$MNT/x"
	assert_success
	bounded "$SFS" umount "$MNT"
	assert_success
	sfs_hang_mount "$LO/x/m"
	bounded "$SFS" commit "$UP" --into "$LO"
	assert_failure
	assert_output --partial "/x"
	assert_output --partial "Invalid cross-device link"
}
