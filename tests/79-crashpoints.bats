#!/usr/bin/env bats
# Crash points: the daemon killed (SIGKILL, by tests/tools/faultinject.so)
# before the Nth call that changes a branch, for N spread over each
# workload (every N in `make stress`: tests/stress/crashpoints.bats).
# After a remount the view is the one before the interrupted operation or
# the one after it, nothing staged shows, the lower branch is unchanged,
# and fsck repairs whatever is left (helpers/faults.bash, fi_check_crash).

load helpers/common
load helpers/copyup
load helpers/faults

setup_file() {
	sfs_setup_file
	sfs_require_tool faultinject.so cuprobe
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

@test "crash points of copy-up: append, chmod, setxattr, truncate, chown and an fsynced write of lower files" {
	fi_crash_workload copyup
}

@test "crash points of renames: lower files and directories (redirects), replacing, RENAME_EXCHANGE, across directories" {
	fi_crash_workload rename
}

@test "crash points of removals: whiteouts of lower files, symlinks and directories (rmdir of a directory holding whiteouts)" {
	fi_crash_workload whiteout
}

@test "crash points of removals with overlay-style whiteouts (a device swapped with a directory)" {
	fi_crash_workload whiteout whiteout=overlay
}

@test "crash points of hard links: copy-up through the index, a new link, removal and rename of a name" {
	fi_crash_workload hardlink
}

@test "crash points of new names made by a user other than root: file, directory, symlink, fifo (never root's)" {
	fi_crash_workload create allow_other
}

@test "crash points of names made again over their whiteouts: file, directory (opaque), symlink, fifo, hard link" {
	fi_crash_workload recreate
}

@test "crash points of names made again over overlay-style whiteouts (the entry swapped with the device)" {
	fi_crash_workload recreate whiteout=overlay
}
