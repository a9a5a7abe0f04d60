#!/usr/bin/env bats
# An interrupted `stackfs commit` loses nothing: the commit process is
# killed (SIGKILL, by tests/tools/faultinject.so, armed at its start)
# before its Nth call that changes a branch, for N over the whole commit;
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

# cc_template STYLE: the branches of the test made through a mount
# (dc_change, and a subdirectory of the renamed directory moved out of
# it), and the view they show in $CC/before. Made afresh for every crash
# point by cc_fresh: a copy would not do (the rw branch's index, inode
# map and origin records name the lower branch's inode numbers).
cc_template() {
	CC=$BATS_TEST_TMPDIR/cc
	CC_STYLE=$1
	mkdir -p "$CC"
	cc_fresh
	cc_view "$UP:$LO" >"$CC/before"
	grep -q '^./moved/k' "$CC/before" && fail "the template has no moved subdirectory"
	grep -q '^./d1/k2/z|' "$CC/before" || fail "the moved subdirectory lost its lower content"
}

cc_fresh() {
	rm -rf "$UP" "$LO"
	mkdir -p "$UP" "$LO"
	dc_lower "$LO"
	sfs_mount "$UP:$LO" "$MNT" "$(dc_style_opt "$CC_STYLE")" || return 1
	dc_change "$MNT"
	mv "$MNT/moved/k" "$MNT/d1/k2"           # a moved subdirectory (its own redirect)
	echo kk >"$MNT/d1/k2/new"
	"$SFS" umount "$MNT" || return 1
	# the same times in every build (a commit keeps them: 97-commit.bats)
	find "$UP" "$LO" -path '*/.stackfs' -prune -o -exec touch -h -d @1500000000.123456789 {} +
}

# cc_view BRANCHES: the listing of the view of BRANCHES, mounted.
cc_view() {
	sfs_mount "$1" "$MNT" >&2 || return 1
	dc_state "$MNT"
	"$SFS" umount "$MNT" >&2 || return 1
}

# cc_commit_fi N ACTION: the commit with the shim, killed (ACTION kill)
# before call N, or counting (N 0, ACTION count). Its exit status.
cc_commit_fi() {
	local rc=0
	echo "mut $1 $2" >"$CC/ctl"
	: >"$CC/log"
	LD_PRELOAD=$FI_SO SFS_FI_CTL=$CC/ctl SFS_FI_LOG=$CC/log SFS_FI_ROOTS=$T SFS_FI_ARM=1 \
		"$SFS" commit "$UP" --into "$LO" >"$CC/out" 2>&1 || rc=$?
	return "$rc"
}

# cc_points COUNT: every N with FI_ALL=1 or when COUNT <= CC_POINTS
# (default 50); else the first and the last 15 and a spread between.
cc_points() {
	local count=$1 max=${CC_POINTS:-50} n step
	((max > 30)) || max=31
	if [[ -n ${FI_ALL:-} ]] || ((count <= max)); then
		seq 1 "$count"
		return
	fi
	seq 1 15
	step=$(((count - 30 + max - 31) / (max - 30)))
	for ((n = 16; n <= count - 15; n += step)); do echo "$n"; done
	seq $((count - 14)) "$count"
}

# cc_check POINT HOW: kill the commit before call POINT, recover by HOW
# (commit, fsck-lower, fsck-upper), compare the union with before. Prints
# what is wrong and returns 1.
cc_check() {
	local p=$1 how=$2 rc=0 out errs=() jnl= br
	cc_fresh
	cc_commit_fi "$p" kill && rc=0 || rc=$?
	if ((rc != 137)); then
		echo "point $p: the commit was not killed (exit $rc): $(head -c 300 "$CC/out")"
		return 1
	fi
	[[ -e $UP/.stackfs/commit ]] && jnl=1
	if [[ -n $jnl || -e $LO/.stackfs/commit-from ]] && ((p % 5 == 0)); then
		# the view would be half of the commit: no mount of either branch
		if out=$("$SFS" mount "$UP:$LO" "$MNT" 2>&1); then
			"$SFS" umount "$MNT"
			errs+=("a branch with an unfinished commit was mounted")
		elif [[ $out != *"unfinished stackfs commit"*"stackfs fsck --repair"* ]]; then
			errs+=("the refused mount does not say what to run: $out")
		fi
		# fsck of either branch alone finds it (and changes nothing)
		for br in "$UP" "$LO"; do
			[[ $br == "$UP" && -z $jnl ]] && continue
			[[ $br == "$LO" && ! -e $LO/.stackfs/commit-from ]] && continue
			rc=0
			out=$("$SFS" fsck "$br" 2>&1) || rc=$?
			((rc & 4)) && [[ $out == *"[COMMIT_UNFINISHED]"* || $out == *"[COMMIT_MARKER_STALE]"* ]] ||
				errs+=("fsck $br (exit $rc) does not report the unfinished commit: $out")
		done
	fi
	case $how in
	commit)
		out=$("$SFS" commit "$UP" --into "$LO" 2>&1) || errs+=("the second commit failed: $out")
		if [[ -n $jnl && $out != *"resuming an unfinished commit"* ]]; then
			errs+=("the second commit did not say it resumed: $out")
		fi
		[[ ! -e $UP/.stackfs/commit ]] || errs+=("the journal is left after the second commit")
		;;
	fsck-lower | fsck-upper)
		local br=$LO
		[[ $how == fsck-upper ]] && br=$UP
		rc=0
		out=$("$SFS" fsck --repair "$br" 2>&1) || rc=$?
		((rc == 0 || rc == 1)) || errs+=("fsck --repair $br exited $rc: $out")
		[[ ! -e $UP/.stackfs/commit && ! -e $LO/.stackfs/commit-from ]] ||
			errs+=("fsck --repair $br left the journal or the marker: $out")
		;;
	esac
	out=$(diff "$CC/before" <(cc_view "$UP:$LO")) || errs+=("the union ($how) differs from before:
$(head -n 20 <<<"$out")")
	[[ -z $(find "$LO" -maxdepth 1 -name '.wh..wh.sfs-moved.*') ]] || errs+=("a staging directory is left in $LO")
	out=$(find "$LO" -name '.wh..wh.sfs-commit.*')
	[[ -z $out ]] || errs+=("temporary copies left in $LO: $out")
	if [[ $how == commit ]] && ((p % 3 == 0)); then
		out=$(diff "$CC/before" <(cc_view "$LO=ro")) || errs+=("the lower branch alone differs from before:
$(head -n 20 <<<"$out")")
	fi
	if ((${#errs[@]})); then
		printf 'point %s (%s), recovered by %s:\n' "$p" "$(grep -m1 "^$p " "$CC/trace" | sed "s|$T|\$T|g")" "$how"
		printf '  %s\n' "${errs[@]}"
		return 1
	fi
}

cc_crash_points() {
	local p bad=() msg tried=0 calls i=0 hows=(fsck-lower fsck-upper)
	cc_template "$1"
	cc_fresh
	cc_commit_fi 0 count || fail "the counting commit failed: $(cat "$CC/out")"
	calls=$(grep -c '^[0-9]' "$CC/log")
	cp "$CC/log" "$CC/trace"
	((calls > 0)) || fail "the commit made no counted call"
	diff "$CC/before" <(cc_view "$LO=ro") || fail "the counting commit did not give the same view"
	for p in $(cc_points "$calls"); do
		tried=$((tried + 1))
		msg=$(cc_check "$p" commit) || bad+=("$msg")
		msg=$(cc_check "$p" "${hows[i++ % 2]}") || bad+=("$msg")
	done
	echo "# commit ($1): $calls calls, $tried crash points tried (each recovered twice), ${#bad[@]} failures" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}" | head -n 80)"
}

@test "commit killed at its crash points: a re-run or fsck --repair of either branch gives the union of before (whiteout=wh)" {
	cc_crash_points wh
}

@test "commit killed at its crash points: a re-run or fsck --repair of either branch gives the union of before (whiteout=overlay)" {
	CC_POINTS=${CC_POINTS:-36} cc_crash_points overlay
}

# cc_stop_signal SIG: the commit gets SIG (by the shim, before its
# middle call): it stops at its next step, undoes what it moved, exits 1,
# says to run it again and never to remove anything; the union is as
# before, and a new commit then completes.
cc_stop_signal() {
	local calls out rc=0
	cc_template wh
	cc_fresh
	cc_commit_fi 0 count || fail "the counting commit failed: $(cat "$CC/out")"
	calls=$(grep -c '^[0-9]' "$CC/log")
	cc_fresh
	cc_commit_fi $((calls / 2)) "$1" || rc=$?
	out=$(cat "$CC/out")
	grep -q "^${1^^} " "$CC/log" || fail "the shim sent no signal"
	((rc == 1)) || fail "exit $rc (not stopped cleanly): $out"
	[[ $out == *"stopped by a signal"* && $out == *"undone"* ]] || fail "no word of the stop: $out"
	[[ $out != *[Rr]emove* && $out != *[Dd]elete* ]] || fail "advice to remove: $out"
	[[ ! -e $UP/.stackfs/commit && ! -e $LO/.stackfs/commit-from ]] || fail "the journal or marker is left: $out"
	[[ -z $(find "$LO" -maxdepth 1 -name '.wh..wh.sfs-moved.*') ]] || fail "a staging directory is left"
	diff "$CC/before" <(cc_view "$UP:$LO") || fail "the union differs after the stop"
	run -0 "$SFS" commit "$UP" --into "$LO"
	diff "$CC/before" <(cc_view "$LO=ro") || fail "the lower branch alone differs after the commit"
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
	# one bit of the lower branch's path flipped: the checksum no longer matches
	off=100
	printf '\x01' | dd of="$UP/.stackfs/commit" bs=1 seek=$off conv=notrunc status=none
	printf "$(printf '\\x%02x' $(( $(od -An -tu1 -j$off -N1 "$UP/.stackfs/commit") ^ 0x41 )))" |
		dd of="$UP/.stackfs/commit" bs=1 seek=$off conv=notrunc status=none
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "corrupt (checksum mismatch)"
	refute_output --regexp "[Rr]emove|[Dd]elete"
	run -1 "$SFS" mount "$UP:$LO" "$MNT"
	assert_output --partial "unfinished stackfs commit"
	run "$SFS" fsck --repair "$UP"
	assert_output --partial "[COMMIT_UNFINISHED]"
	(( status & 4 )) || fail "fsck --repair exited $status"
	sfs_assert_unchanged "$LO"
}

# A moved lower directory whose old name a branch below LOWER still shows:
# the commit leaves a whiteout of the old name in LOWER; an undo that put
# the directory back beside it made the pair "LOWER's alone" (the OCI
# rule, union/resolve.c) and hid the content below (found by the power-
# loss explorer: dB/a3 of its workload). Every kill point, recovered by
# fsck --repair of both branches; then a pair there before is refused.
@test "commit killed with a branch below the lower one: the undo leaves no whiteout beside a directory put back" {
	local calls p bad=() before out rc
	sfs_setup_branches lo2
	CC=$BATS_TEST_TMPDIR/cc
	mkdir -p "$CC"
	cb_fresh() {
		rm -rf "$UP" "$LO" "$LO2"
		mkdir -p "$UP" "$LO/dA/sub" "$LO2/dA"
		echo a1 >"$LO/dA/a1"; echo a2 >"$LO/dA/sub/a2"; echo a3 >"$LO2/dA/a3"; echo f >"$LO/f"
		sfs_mount "$UP:$LO:$LO2" "$MNT" || return 1
		mv "$MNT/dA" "$MNT/dB"
		echo x >>"$MNT/f"
		"$SFS" umount "$MNT" || return 1
		find "$UP" "$LO" "$LO2" -path '*/.stackfs' -prune -o -exec touch -h -d @1500000000.123456789 {} +
	}
	cb_fresh
	before=$(cc_view "$UP:$LO:$LO2")
	[[ $before == *"./dB/a3|"* ]] || fail "the template does not show the lower content: $before"
	cc_commit_fi 0 count || fail "the counting commit failed: $(cat "$CC/out")"
	calls=$(grep -c '^[0-9]' "$CC/log")
	for ((p = 1; p <= calls; p++)); do
		cb_fresh
		cc_commit_fi "$p" kill || true
		"$SFS" fsck --repair "$UP" >/dev/null 2>&1 || true
		"$SFS" fsck --repair "$LO" >/dev/null 2>&1 || true
		out=$(diff <(echo "$before") <(cc_view "$UP:$LO:$LO2") 2>&1) ||
			bad+=("point $p: $(grep -m1 "^$p " "$CC/log"): $(head -n 5 <<<"$out")")
	done
	echo "# $calls crash points, ${#bad[@]} failures" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}" | head -n 40)"
	# a whiteout beside the directory before the commit: refused, nothing changed
	cb_fresh
	: >"$LO/.wh.dA"
	sfs_snapshot "$LO"
	rc=0
	out=$("$SFS" commit "$UP" --into "$LO" 2>&1) || rc=$?
	((rc != 0)) || fail "the commit of a lower pair succeeded: $out"
	[[ $out == *"whiteout beside"* ]] || fail "the refusal does not say why: $out"
	sfs_assert_unchanged "$LO"
}
