# The machinery of the commit crash tests (tests/97-commit-crash.bats, a
# sample of the crash points; tests/stress/commitcrash.bats, all of
# them): a commit killed by tests/tools/faultinject.so before its Nth
# call that changes a branch, recovered, and the union compared with what
# it showed before. Needs helpers/common, copyup, diff and faults loaded.

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

# cc_points COUNT MAX: the crash points to try of a commit that makes
# COUNT counted calls: every one with FI_ALL=1 or when COUNT <= MAX (the
# environment's CC_POINTS, when set, is MAX); else the first 4 and the
# last 4 (where the journal is begun and ended, and the marker set and
# cleared) and MAX - 8 spread evenly between. The suite's filesystems
# (sfs_suite_share) deal these out among them, every other one each for
# two: together the runs try the MAX points, each run a share of them.
# Every point in make stress (tests/stress/commitcrash.bats).
cc_points() {
	local count=$1 max=${CC_POINTS:-$2} n step idx share i=0 all
	if [[ -n ${FI_ALL:-} ]] || ((count <= max)); then
		seq 1 "$count"
		return
	fi
	((max >= 10)) || max=10
	read -r idx share < <(sfs_suite_share)
	step=$(((count - 8 + max - 9) / (max - 8)))
	all=(1 2 3 4)
	for ((n = 5; n <= count - 4; n += step)); do all+=("$n"); done
	all+=($((count - 3)) $((count - 2)) $((count - 1)) "$count")
	for n in "${all[@]}"; do
		((i++ % share == idx)) && echo "$n"
	done
	return 0
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

# cc_crash_points STYLE MAX: the commit of cc_template STYLE killed at
# each of its cc_points, each recovered twice (cc_check: by a second
# commit, and by fsck --repair of one branch or the other in turn).
cc_crash_points() {
	local p bad=() msg tried=0 calls i=0 hows=(fsck-lower fsck-upper)
	cc_template "$1"
	cc_fresh
	cc_commit_fi 0 count || fail "the counting commit failed: $(cat "$CC/out")"
	calls=$(grep -c '^[0-9]' "$CC/log")
	cp "$CC/log" "$CC/trace"
	((calls > 0)) || fail "the commit made no counted call"
	diff "$CC/before" <(cc_view "$LO=ro") || fail "the counting commit did not give the same view"
	for p in $(cc_points "$calls" "$2"); do
		tried=$((tried + 1))
		msg=$(cc_check "$p" commit) || bad+=("$msg")
		msg=$(cc_check "$p" "${hows[i++ % 2]}") || bad+=("$msg")
	done
	echo "# commit ($1): $calls calls, $tried crash points tried (each recovered twice), ${#bad[@]} failures" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}" | head -n 80)"
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

# cc_below_points MAX: a moved lower directory whose old name a branch
# below LOWER still shows: the commit leaves a whiteout of the old name
# in LOWER; an undo that put the directory back beside it made the pair
# "LOWER's alone" (the OCI rule, union/resolve.c) and hid the content
# below (found by the power-loss explorer: dB/a3 of its workload). The
# commit killed at its cc_points, recovered by fsck --repair of both
# branches: the union is as before.
cc_below_points() {
	local calls p bad=() before out tried=0
	sfs_setup_branches lo2
	CC=$BATS_TEST_TMPDIR/cc
	mkdir -p "$CC"
	cc_below_fresh
	before=$(cc_view "$UP:$LO:$LO2")
	[[ $before == *"./dB/a3|"* ]] || fail "the template does not show the lower content: $before"
	cc_commit_fi 0 count || fail "the counting commit failed: $(cat "$CC/out")"
	calls=$(grep -c '^[0-9]' "$CC/log")
	for p in $(cc_points "$calls" "$1"); do
		tried=$((tried + 1))
		cc_below_fresh
		cc_commit_fi "$p" kill || true
		"$SFS" fsck --repair "$UP" >/dev/null 2>&1 || true
		"$SFS" fsck --repair "$LO" >/dev/null 2>&1 || true
		out=$(diff <(echo "$before") <(cc_view "$UP:$LO:$LO2") 2>&1) ||
			bad+=("point $p: $(grep -m1 "^$p " "$CC/log"): $(head -n 5 <<<"$out")")
	done
	echo "# branch below: $calls calls, $tried crash points tried, ${#bad[@]} failures" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}" | head -n 40)"
}

# cc_below_fresh: the branches of cc_below_points, made afresh: dA of
# LOWER (with a subdirectory) over dA of the branch below, renamed to dB
# through a mount, and a changed file.
cc_below_fresh() {
	rm -rf "$UP" "$LO" "$LO2"
	mkdir -p "$UP" "$LO/dA/sub" "$LO2/dA"
	echo a1 >"$LO/dA/a1"
	echo a2 >"$LO/dA/sub/a2"
	echo a3 >"$LO2/dA/a3"
	echo f >"$LO/f"
	sfs_mount "$UP:$LO:$LO2" "$MNT" || return 1
	mv "$MNT/dA" "$MNT/dB"
	echo x >>"$MNT/f"
	"$SFS" umount "$MNT" || return 1
	find "$UP" "$LO" "$LO2" -path '*/.stackfs' -prune -o -exec touch -h -d @1500000000.123456789 {} +
}
