#!/usr/bin/env bats
# Branches on a GlusterFS volume (issue 33, docs/distributed.md): a
# one-brick volume on an XFS loop image, served by a glusterd on this
# machine (started once for the suite, helpers/gluster.bash), mounted
# twice by GlusterFS's FUSE client as two hosts would mount it. The
# tests are those every engine runs (helpers/distributed.bash).

load helpers/common
load helpers/copyup
load helpers/faults
load helpers/distributed

setup_file() {
	# the filesystem is this file's own; once per suite (the filesystem
	# of the runs is not what is tested)
	sfs_once_here >/dev/null || return 0
	sfs_setup_file 1 || return 1
	dfs_setup_file glusterfs
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	dfs_setup
}

teardown() {
	sfs_cleanup
}

@test "a mount on the filesystem says in one line what it lacks and what it does instead" {
	dfs_test_notes
}

@test "lowers on the filesystem show what the same lowers on ext4 show: whiteouts, opaque dirs, links, xattrs, ACLs" {
	dfs_test_lowers
}

@test "a rw branch on the filesystem: copy-up, renames, whiteouts, links, remount and fsck as on ext4" {
	dfs_test_rw
}

@test "a client mount made again (another st_dev, every node forgotten): the view keeps its inode numbers and fsck its origins" {
	dfs_test_client_again
}

@test "sync modes and commit with the rw branch on the filesystem" {
	dfs_test_sync_commit
}

@test "the daemon killed in the middle of a copy-up on the filesystem: the file is whole or untouched" {
	dfs_test_kill_copyup
}

@test "two hosts: a layer published through the other host's mount shows within timeout, never mixed" {
	dfs_test_two_hosts
}

@test "a new shared layer added live on both hosts (stackfs branch add)" {
	dfs_test_branch_add
}

@test "opens for writing racing an unlink or a rename over the file never fail on the filesystem" {
	dfs_test_racing_opens
}

@test "a lower name of 252 bytes renamed and removed on the filesystem stays hidden" {
	dfs_test_long_name
}

@test "regression: a hard-linked lower file copied up keeps its link count after a remount, and tar stores it once" {
	dfs_test_hardlink_count
}

@test "regression: a lower symlink copied up by touch -h, chown -h and a rename (one of a hard-linked pair)" {
	dfs_test_symlink_copyup
}

@test "regression: a change through one name of a lower pair after the other name's directory was removed" {
	dfs_test_removed_dir_link
}

@test "regression: the link count of a hard-linked lower file's copy renamed away from every lower name, and linked again" {
	dfs_test_hardlink_renamed
}

@test "regression: a metacopy's fill out of space on the full filesystem gives its blocks back" {
	dfs_test_fill_enospc
}
