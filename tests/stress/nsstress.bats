#!/usr/bin/env bats
# Long nsstress runs (make stress; tests/stress/run sets the length):
# STRESS_NS_ROUNDS rounds per whiteout style, each on freshly populated
# branches (a rw one and two ro ones), each followed by every consistency
# check of st_ns_round (stress/lib.bash). See tests/66-nsstress.bats.

load ../helpers/common
load lib

SECS=${STRESS_NS_SECS:-60}
PROCS=${STRESS_NS_PROCS:-4}
ROUNDS=${STRESS_NS_ROUNDS:-3}

setup_file() {
	sfs_setup_file 1
	sfs_require_tool nsstress
}

teardown_file() {
	sfs_cleanup_file
}

teardown() {
	sfs_cleanup
}

# rounds STYLE: each round on fresh branches, with its own seed; every
# round runs, the test fails at the end if any did
rounds() {
	local r base failed=()
	base=$(st_seed "${NS_SEED:-}")
	for ((r = 0; r < ROUNDS; r++)); do
		sfs_setup_branches lo2
		st_ns_populate "$((base + r * 10))"
		st_ns_round "$1" "$SECS" "$PROCS" || failed+=("round $((r + 1)) (seed $((base + r * 10)))")
		sfs_is_mounted "$MNT" && "$SFS" umount "$MNT"
	done
	((${#failed[@]} == 0)) || fail "whiteout=$1: failed: ${failed[*]} of $ROUNDS rounds"
}

@test "stress: nsstress, -o whiteout=wh" {
	rounds wh
}

@test "stress: nsstress, -o whiteout=overlay" {
	rounds overlay
}
