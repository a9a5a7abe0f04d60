#!/usr/bin/env bats
# Long runs of the power-loss explorer (make stress, make crash): for each
# sync mode that promises something, STRESS_PL_STATES crash states (1000
# by default) of the workload of tests/crash/explore checked against that
# mode's rules, and the volatile flag's rule. A fresh seed each run unless
# PL_SEED is set; every run prints its seed. See tests/81-powerloss.bats
# for the short ones, docs/durability.md "Power loss" for the rules. About 0.5 s a
# state on ext4, 0.6 s on XFS (2 cores).

load ../helpers/common
load ../helpers/powerloss

STATES=${STRESS_PL_STATES:-1000}

setup_file() {
	sfs_require_build
	sfs_require_tool blkrec
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	pl_require
}

teardown() {
	sfs_cleanup
}

@test "stress: power loss of the filesystem alone (--bare, no stackfs): it mounts and checks clean in $STATES crash states" {
	pl_explore bare --bare --states "$STATES" --seed "$(pl_seed)"
}

@test "stress: power loss with sync=normal (the default), $STATES crash states" {
	pl_explore normal --opts sync=normal --rules normal --states "$STATES" --seed "$(pl_seed)"
}

@test "stress: power loss with sync=always, $STATES crash states" {
	pl_explore always --opts sync=always --rules always --states "$STATES" --seed "$(pl_seed)"
}

@test "stress: power loss with sync=normal and copy-up by reflink (XFS), $STATES crash states" {
	[[ $SFS_FS == xfs ]] || skip "reflink copies are XFS's here"
	pl_explore reflink --reflink --rules normal --states "$STATES" --seed "$(pl_seed)"
}

@test "stress: power loss under a volatile mount, $STATES crash states" {
	pl_explore volatile --opts sync=volatile --rules volatile --states "$STATES" \
		--seed "$(pl_seed)"
}
