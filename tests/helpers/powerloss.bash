# Helpers for the power-loss tests: tests/81-powerloss.bats (short runs,
# make test) and tests/stress/powerloss.bats (long ones, make stress and
# make crash). Load after helpers/common.
#
# The explorer is tests/crash/explore (its header and
# docs/durability.md "Power loss" say what it does). It makes its own image and
# uses one loop device
# at a time; its work directory is in the test's, so the suite's cleanup
# finds whatever a killed run left mounted or attached there.

# (found from here: SFS_REPO is wrong for the files in tests/stress/)
EXPLORE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/crash/explore

# pl_require: what the explorer needs.
pl_require() {
	sfs_require_root "loop devices, mounts"
	sfs_require_cmd python3 losetup fusermount3
	[[ -x $TOOLS/blkrec ]] || fail "test tool not built: $TOOLS/blkrec (run make)"
}

# pl_explore NAME [EXPLORE_ARGS...]: one run on $SFS_FS, its work
# directory $BATS_TEST_TMPDIR/NAME; its summary line shown (states,
# violations, the filesystem's own failures; also for a test that
# passes); on failure its whole report, then the test fails.
pl_explore() {
	local name=$1 out=$BATS_TEST_TMPDIR/$1.out rc=0
	shift
	"$EXPLORE" --fs "$SFS_FS" --work "$BATS_TEST_TMPDIR/$name" --keep "$@" >"$out" 2>&1 || rc=$?
	grep -m1 '^explore: .* crash states, ' "$out" | sed 's/^/# /' >&3
	if ((rc != 0)); then
		cat "$out" >&2
		fail "explore $* exited $rc (report above; the run is in $BATS_TEST_TMPDIR/$name)"
	fi
}

# pl_seed [SEED]: SEED, $PL_SEED, or a fresh one (printed by the run).
pl_seed() {
	echo "${1:-${PL_SEED:-$(((RANDOM << 15) ^ RANDOM))}}"
}
