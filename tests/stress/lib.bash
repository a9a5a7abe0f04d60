# Helpers for the tests of the random testers: tests/64-fsx.bats,
# tests/66-nsstress.bats (short runs, in `make test`) and tests/stress/*.bats
# (long runs, `make stress`). Load after helpers/common.
#
# The testers are tests/tools/fsx.c and tests/tools/nsstress.c (see their
# headers). Every run prints its seed; a failure names it, and
#   FSX_SEED=S / NS_SEED=S
# in the environment replay a run with that seed (fsx replays exactly; a
# multi-process nsstress run only approximately).

FSX=$TOOLS/fsx
NSSTRESS=$TOOLS/nsstress

# st_seed [SEED]: SEED, or a fresh random one.
st_seed() {
	if [[ -n ${1:-} ]]; then
		echo "$1"
	else
		echo $(((RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM))
	fi
}

# st_say TEXT...: a line in the bats output, shown for passing tests too.
st_say() {
	echo "# $*" >&3
}

# ------------------------------------------------------------ fsx

# st_fsx_start NAME FILE [FSX_ARGS...]: starts fsx on FILE in the
# background with the seed $FSX_SEED (or a fresh one), its output in
# $BATS_TEST_TMPDIR/NAME.out and the final model in NAME.model.
# st_fsx_wait NAME waits for it and fails the test (with fsx's report)
# when it failed.
st_fsx_start() {
	local name=$1 file=$2 seed
	shift 2
	seed=$(st_seed "${FSX_SEED:-}")
	"$FSX" -S "$seed" -w "$BATS_TEST_TMPDIR/$name.model" "$@" "$file" \
		>"$BATS_TEST_TMPDIR/$name.out" 2>&1 3>&- &
	printf -v "ST_PID_$name" '%s' "$!"
}

st_fsx_wait() {
	local name=$1 pidvar="ST_PID_$1" rc=0
	wait "${!pidvar}" || rc=$?
	if ((rc != 0)); then
		fail "$(printf 'fsx %s failed (exit %d):\n%s' "$name" "$rc" "$(cat "$BATS_TEST_TMPDIR/$name.out")")"
	fi
	st_say "$(tail -n 1 "$BATS_TEST_TMPDIR/$name.out")${ST_VERBOSE:+ ($(grep 'counts:' "$BATS_TEST_TMPDIR/$name.out" | sed 's/^fsx: //'))}"
}

# st_fsx NAME FILE [FSX_ARGS...]: one run in the foreground.
st_fsx() {
	st_fsx_start "$@"
	st_fsx_wait "$1"
}

# st_model NAME: the path of the model fsx NAME wrote.
st_model() {
	echo "$BATS_TEST_TMPDIR/$1.model"
}

# st_same_as_model NAME FILE: FILE holds exactly what the model says.
st_same_as_model() {
	local out
	out=$(cmp -- "$(st_model "$1")" "$2" 2>&1) ||
		fail "$2 differs from the model of fsx $1: $out"
}

# st_make_lower_file FILE: a 448 KiB file with data and holes (and an
# unwritten extent: preallocated, reads as zeros) for fsx -e to start from.
st_make_lower_file() {
	local f=$1
	rm -f -- "$f"
	head -c 131072 /dev/urandom >"$f"
	dd if=/dev/urandom of="$f" bs=4096 seek=48 count=16 conv=notrunc status=none
	fallocate -o 327680 -l 65536 "$f" 2>/dev/null || true
	dd if=/dev/urandom of="$f" bs=4096 seek=100 count=12 conv=notrunc status=none
}

# ------------------------------------------------------------ nsstress

# st_ns_populate SEED: (SEED also becomes the seed of the runs: ST_NS_SEED)
# a random tree of the nsstress name space in each of
# LO (full), LO2 (sparser) and UP (sparse), so that the run meets lower
# entries (copy-ups, whiteouts, redirects), merged and opaque directories,
# hard links and xattrs.
st_ns_populate() {
	local seed=$1
	ST_NS_SEED=$seed
	"$NSSTRESS" -I -S "$seed" -f 70 "$LO" >/dev/null || fail "populating $LO failed"
	"$NSSTRESS" -I -S "$((seed + 1))" -f 45 "$LO2" >/dev/null || fail "populating $LO2 failed"
	"$NSSTRESS" -I -S "$((seed + 2))" -f 25 "$UP" >/dev/null || fail "populating $UP failed"
}

# st_ns_mount STYLE: mounts UP:LO:LO2 on MNT with whiteout=STYLE.
st_ns_mount() {
	sfs_mount "$UP:$LO=ro:$LO2=ro" "$MNT" "whiteout=$1"
}

st_ns_umount() {
	local out
	out=$("$SFS" umount "$MNT" 2>&1) || fail "stackfs umount $MNT failed: $out"
	! sfs_is_mounted "$MNT" || fail "$MNT still mounted after stackfs umount"
}

# st_ns_check_view OUT: the consistency checks of a view on MNT: find(1)
# walks it without an error; nsstress -C (every entry stat'ed, every file
# read whole and made of valid records, xattrs read, no name twice in a
# listing with a large or a small buffer, d_ino and d_type as lstat says,
# hard links consistent) finds nothing; its manifest goes to OUT. Prints
# what is wrong and returns 1.
st_ns_check_view() {
	local out=$1 err rc=0
	err=$(find "$MNT" -printf '' 2>&1 >/dev/null) || { echo "find over the view failed: $err"; rc=1; }
	[[ -z $err || $rc != 0 ]] || { echo "find over the view printed errors: $err"; rc=1; }
	if ! "$NSSTRESS" -C -m "$MNT" >"$out" 2>"$out.err"; then
		printf 'the view is inconsistent:\n%s\n' "$(head -n 40 "$out.err")"
		rc=1
	fi
	return $rc
}

# st_ns_same_manifest A B WHAT: two manifests of the view are equal, or
# prints the difference and returns 1.
st_ns_same_manifest() {
	local d
	d=$(diff -u "$1" "$2") && return 0
	printf '%s:\n%s\n' "$3" "$(head -n 60 <<<"$d")"
	return 1
}

# st_ns_round STYLE SECS PROCS: one nsstress run on a fresh mount of the
# populated branches, then every consistency check:
#  (a) the view walks, stats and reads clean (st_ns_check_view);
#  (b) a fresh remount shows the same view, name for name, content for
#      content, st_ino for st_ino;
#  (c) fsck --repair of UP answers 0 or 1, and a second fsck 0; the view
#      after the repair is still the same;
#  (d) the lower branches are byte-for-byte unchanged;
#  (e) no name twice in any listing (part of (a)).
# Every check runs even when an earlier one failed; the test fails at the
# end with all that was wrong.
st_ns_round() {
	local style=$1 secs=$2 procs=$3 seed out rc msg errs=()
	seed=$(st_seed "${ST_NS_SEED:-${NS_SEED:-}}")
	# (the steps that must work return at once: under `||` a failing
	# command does not end the test by itself)
	sfs_snapshot "$LO" || return 1
	sfs_snapshot "$LO2" || return 1
	st_ns_mount "$style" || return 1
	out=$BATS_TEST_TMPDIR/ns-$style
	rc=0
	"$NSSTRESS" -p "$procs" -t "$secs" -S "$seed" "$MNT" >"$out.run" 2>&1 || rc=$?
	if ((rc != 0)); then
		errs+=("$(printf 'nsstress failed (exit %d, whiteout=%s, seed %s):\n%s' "$rc" "$style" "$seed" "$(cat "$out.run")")")
		# whether the daemon answered the failure itself (error.NAME,
		# logged) or the kernel made it (none: e.g. EIO of an inode the
		# kernel marked bad), and what it logged last
		errs+=("$(printf "the daemon's failures and last errors:\n%s" \
			"$("$SFS" status "$MNT" 2>&1 | grep -E '^(error\.|failures|last_error)')")")
	fi
	if [[ -n ${ST_VERBOSE:-} ]]; then
		grep -v '^nsstress: .*ops, seed' "$out.run" | sed 's/^nsstress: /  /' | while IFS= read -r l; do st_say "$l"; done
	fi
	st_say "whiteout=$style: $(tail -n 1 "$out.run") ($procs processes, $secs s)"

	msg=$(st_ns_check_view "$out.m1") || errs+=("after the run: $msg")        # (a), (e)
	st_ns_umount || return 1
	st_ns_mount "$style" || return 1
	msg=$(st_ns_check_view "$out.m2") || errs+=("after a remount: $msg")
	msg=$(st_ns_same_manifest "$out.m1" "$out.m2" "the view changed across a remount") || errs+=("$msg") # (b)
	st_ns_umount || return 1

	run "$SFS" fsck --repair "$UP"                                          # (c)
	if ((status != 0 && status != 1)); then
		errs+=("$(printf 'fsck --repair of the rw branch exited %d:\n%s' "$status" "$output")")
	fi
	((status != 1)) || st_say "fsck --repair fixed: $(grep -v '^$' <<<"$output" | head -n 5 | tr '\n' ' ')"
	run "$SFS" fsck "$UP"
	((status == 0)) || errs+=("$(printf 'the second fsck exited %d:\n%s' "$status" "$output")")

	msg=$(sfs_assert_unchanged "$LO" 2>&1) || errs+=("$msg")                # (d)
	msg=$(sfs_assert_unchanged "$LO2" 2>&1) || errs+=("$msg")

	st_ns_mount "$style" || return 1
	msg=$(st_ns_check_view "$out.m3") || errs+=("after fsck: $msg")
	msg=$(st_ns_same_manifest "$out.m1" "$out.m3" "the view changed across fsck --repair") || errs+=("$msg")
	st_ns_umount || return 1
	if ((${#errs[@]})); then
		fail "$(printf 'whiteout=%s, seed %s:\n' "$style" "$seed"; printf '%s\n' "${errs[@]}")"
	fi
}
