#!/usr/bin/env bats
# Every crash point of every workload (make stress): the daemon killed
# before each call that changes a branch, N = 1, 2, ... up to the calls
# the workload makes, and once after its last call; both whiteout styles
# and -o fsync. The checks are tests/79-crashpoints.bats's
# (helpers/faults.bash, fi_check_crash). About 1 s per crash point.

load ../helpers/common
load ../helpers/copyup
load ../helpers/faults

export FI_ALL=1

setup_file() {
	sfs_setup_file
	sfs_require_tool faultinject.so cuprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
}

teardown() {
	sfs_cleanup
}

@test "every crash point of copy-up" {
	fi_crash_workload copyup
}

@test "every crash point of copy-up with -o fsync" {
	fi_crash_workload copyup fsync
}

@test "every crash point of renames" {
	fi_crash_workload rename
}

@test "every crash point of renames with overlay-style whiteouts" {
	fi_crash_workload rename whiteout=overlay
}

@test "every crash point of removals" {
	fi_crash_workload whiteout
}

@test "every crash point of removals with overlay-style whiteouts" {
	fi_crash_workload whiteout whiteout=overlay
}

@test "every crash point of hard links" {
	fi_crash_workload hardlink
}

@test "every crash point of hard links with overlay-style whiteouts" {
	fi_crash_workload hardlink whiteout=overlay
}

@test "every crash point of names made again over their whiteouts" {
	fi_crash_workload recreate
}

@test "every crash point of names made again over overlay-style whiteouts" {
	fi_crash_workload recreate whiteout=overlay
}

@test "every crash point of new names made by a user other than root" {
	fi_crash_workload create allow_other
}
