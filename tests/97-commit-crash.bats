#!/usr/bin/env bats
# An interrupted `stackfs commit` loses nothing: the commit process is
# killed (SIGKILL, by tests/tools/faultinject.so, armed at its start)
# before its Nth call that changes a branch, for N over a sample of the
# commit's calls (every one in make stress: helpers/commitcrash.bash);
# then the commit is recovered, once by running `stackfs commit` again and
# once by `stackfs fsck --repair` (of the lower branch or of the rw branch,
# in turn), and the union of the two branches, mounted through the daemon,
# shows entry by entry (type, mode, owner, size, mtime, content, symlink
# target, xattrs and ACLs, hard-link groups) what it showed before. A
# branch with an unfinished commit is not mounted. Also: SIGTERM part way
# stops the commit and undoes it, and no message advises removing
# anything.
#
# The tree: a renamed lower directory (a redirect), a subdirectory of it
# moved elsewhere, changed, new and deleted files (whiteouts), an opaque
# directory, hard links, a directory replaced by a file and the reverse
# (helpers/diff.bash), in both whiteout styles.

load helpers/common
load helpers/copyup
load helpers/diff
load helpers/faults
load helpers/commitcrash

setup_file() {
	sfs_setup_file
	sfs_require_tool faultinject.so
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	fi_require_plain_build
	sfs_setup_branches
}

teardown() {
	sfs_cleanup
}

@test "commit killed at its crash points: a re-run or fsck --repair of either branch gives the union of before (whiteout=wh)" {
	cc_crash_points wh 12
}

@test "commit killed at its crash points: a re-run or fsck --repair of either branch gives the union of before (whiteout=overlay)" {
	cc_crash_points overlay 10
}

@test "SIGTERM part way: the commit stops, undoes its moves, says to run it again and never to remove anything" {
	cc_stop_signal term
}

@test "a corrupt journal is never acted on: commit, mount and fsck --repair refuse and say what it is" {
	local off
	cc_template wh
	cc_fresh
	cc_commit_fi 60 kill || true
	[[ -f $UP/.stackfs/commit ]] || fail "no journal after the kill"
	sfs_snapshot "$LO"
	# two bytes of the lower branch's path changed: the checksum no longer
	# matches, and no single byte mends it (one: 94-damage-records)
	for off in 100 101; do
		printf "$(printf '\\x%02x' $(( $(od -An -tu1 -j$off -N1 "$UP/.stackfs/commit") ^ 0x41 )))" |
			dd of="$UP/.stackfs/commit" bs=1 seek=$off conv=notrunc status=none
	done
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "corrupt (checksum mismatch)"
	refute_output --regexp "[Rr]emove|[Dd]elete"
	run -1 "$SFS" mount "$UP:$LO" "$MNT"
	assert_output --partial "unfinished stackfs commit"
	run "$SFS" fsck --repair "$UP"
	assert_output --partial "[COMMIT_CORRUPT]"
	assert_output --partial "no single byte mends it"
	(( status & 4 )) || fail "fsck --repair exited $status"
	sfs_assert_unchanged "$LO"
}

# The commit over a branch below the lower one (cc_below_points); then a
# whiteout beside the directory there before the commit is refused.
@test "commit killed with a branch below the lower one: the undo leaves no whiteout beside a directory put back" {
	local out rc
	cc_below_points 12
	# a whiteout beside the directory before the commit: refused, nothing changed
	cc_below_fresh
	: >"$LO/.wh.dA"
	sfs_snapshot "$LO"
	rc=0
	out=$("$SFS" commit "$UP" --into "$LO" 2>&1) || rc=$?
	((rc != 0)) || fail "the commit of a lower pair succeeded: $out"
	[[ $out == *"whiteout beside"* ]] || fail "the refusal does not say why: $out"
	sfs_assert_unchanged "$LO"
}

# mc_killed_fill: a metacopy of a 1 MiB lower file in UP (times set to a
# known value), and a commit killed right after the call that brought its
# data in (before the times went back). Leaves $MC_T, the times.
mc_killed_fill() {
	head -c 1048576 /dev/urandom >"$LO/f"
	cp "$LO/f" "$BATS_TEST_TMPDIR/f.data"
	sfs_mount "$UP:$LO" "$MNT" metacopy=on
	chmod 600 "$MNT/f"
	"$SFS" umount "$MNT"
	run -0 getfattr --absolute-names -n trusted.stackfs.metacopy "$UP/f"
	MC_T=1500000000.123456789
	touch -d "@$MC_T" "$UP/f"
	# the fill's first write call is a clone (FICLONE): where the branch
	# takes it (XFS) that brings the data in; else (ext4) the copy after
	n=2
	cp --reflink=always "$LO/f" "$T/reflink-probe" 2>/dev/null && n=1
	rm -f "$T/reflink-probe"
	echo "write $n killafter" >"$BATS_TEST_TMPDIR/ctl"
	: >"$BATS_TEST_TMPDIR/log"
	run env LD_PRELOAD="$FI_SO" SFS_FI_CTL="$BATS_TEST_TMPDIR/ctl" SFS_FI_LOG="$BATS_TEST_TMPDIR/log" \
		SFS_FI_ROOTS="$T" SFS_FI_ARM=1 "$SFS" commit "$UP" --into "$LO"
	((status == 137)) || fail "the commit was not killed (exit $status): $output"
	# the kill came after the data was written in place: the times moved
	[[ $(stat -c %.9Y "$UP/f") != "$MC_T" ]] || fail "the fill was killed before it wrote"
	run -0 getfattr --absolute-names -n trusted.stackfs.mctimes "$UP/f"
}

@test "regression: a commit killed while it brings a metacopy's data in loses none of its times: a second commit keeps them" {
	mc_killed_fill
	run -0 "$SFS" commit "$UP" --into "$LO"
	run -0 stat -c %.9Y "$LO/f"
	assert_output "$MC_T"
	cmp "$BATS_TEST_TMPDIR/f.data" "$LO/f"
	run -0 stat -c %a "$LO/f"
	assert_output 600
	run -1 getfattr --absolute-names -n trusted.stackfs.mctimes "$LO/f"
}

@test "regression: a metacopy whose fill was killed: fsck reports METACOPY_TIMES_KEPT and --repair puts the times back" {
	mc_killed_fill
	run "$SFS" fsck --lower "$LO" "$UP"
	assert_output --partial "[METACOPY_TIMES_KEPT]"
	((status != 0)) || fail "fsck found nothing wrong"
	# 1: problems found, all fixed
	run -1 "$SFS" fsck --repair --lower "$LO" "$UP"
	assert_output --partial "[METACOPY_TIMES_KEPT]"
	run -0 stat -c %.9Y "$UP/f"
	assert_output "$MC_T"
	run -1 getfattr --absolute-names -n trusted.stackfs.mctimes "$UP/f"
	run -0 "$SFS" fsck --lower "$LO" "$UP"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 stat -c '%.9Y %a' "$MNT/f"
	assert_output "$MC_T 600"
	cmp "$BATS_TEST_TMPDIR/f.data" "$MNT/f"
}

@test "regression: a metacopy's times changed after its fill was killed are the ones its next fill keeps" {
	mc_killed_fill
	sfs_mount "$UP:$LO" "$MNT" metacopy=on
	touch -d @1600000000.5 "$MNT/f"
	"$SFS" umount "$MNT"
	run -0 "$SFS" commit "$UP" --into "$LO"
	run -0 stat -c %.9Y "$LO/f"
	assert_output 1600000000.500000000
	cmp "$BATS_TEST_TMPDIR/f.data" "$LO/f"
}
