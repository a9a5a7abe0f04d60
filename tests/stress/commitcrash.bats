#!/usr/bin/env bats
# Long runs of the commit crash tests (make stress): the checks of
# tests/97-commit-crash.bats (helpers/commitcrash.bash) at STRESS_CC_POINTS
# crash points of each commit (default 64, against the suite's 10 to 12),
# or at every one with FI_ALL=1. About 5 s per point with whiteout=wh,
# 10 s with whiteout=overlay (two recoveries each).

load ../helpers/common
load ../helpers/copyup
load ../helpers/diff
load ../helpers/faults
load ../helpers/commitcrash

export CC_POINTS=${STRESS_CC_POINTS:-64}

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

@test "commit killed at many crash points, recovered twice each (whiteout=wh)" {
	cc_crash_points wh 64
}

@test "commit killed at many crash points, recovered twice each (whiteout=overlay)" {
	cc_crash_points overlay 64
}

@test "commit killed at many crash points with a branch below the lower one" {
	cc_below_points 64
}
