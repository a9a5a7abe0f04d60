#!/usr/bin/env bats
# Differential test against kernel overlayfs (issue 15): the same random
# sequences of operations (create, write, truncate, chmod, chown, link,
# rename of files and directories with flags 0, NOREPLACE and EXCHANGE,
# unlink, rmdir, rm -r, mkdir over deleted names, symlink, user.* xattrs,
# stat, read) through stackfs and through the kernel's overlayfs, over
# copies of the same random lower tree: both must answer every operation
# alike and show the same tree (type, mode, owner, size, link count,
# content, target, xattrs, which names are one file); then each upper must
# read the same through the other implementation. tests/tools/kdiff.py
# says how; NOTES.md "Differences from kernel overlayfs" the differences
# that are meant, each tolerated narrowly there. Long runs:
# tests/stress/kdiff.bats (make stress). KDIFF_SEED=S (the first seed),
# KDIFF_COUNT and KDIFF_OPS change the run.

load helpers/common
load helpers/kdiff

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	kd_init
}

teardown() {
	sfs_cleanup
}

@test "kdiff: the comparison finds each kind of difference put in on purpose" {
	run -0 python3 "$KDIFF" selftest "$T/self"
	assert_output --partial "selftest: ok"
}

@test "kdiff, -o whiteout=overlay: stackfs and kernel overlayfs agree, and read each other's uppers" {
	kd_run overlay "${KDIFF_SEED:-1}" "${KDIFF_COUNT:-30}" "${KDIFF_OPS:-60}"
}

@test "kdiff, -o whiteout=wh: stackfs and kernel overlayfs agree, and stackfs reads the kernel's upper" {
	kd_run wh "${KDIFF_SEED:-1001}" "${KDIFF_COUNT:-30}" "${KDIFF_OPS:-60}"
}
