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
# says how; docs/overlayfs.md "Differences from kernel overlayfs" the differences
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

@test "kdiff: a difference put into one lower on purpose is found, with the seed to replay" {
	run -1 python3 "$KDIFF" loop overlay 5 1 20 "$T" "$MNT" "$KMNT" "$SFS" --inject
	assert_output --partial "=== seed 5 (whiteout=overlay, 20 operations) disagrees:"
	assert_output --partial "x/injected: only in B"
	assert_output --partial "replay: KDIFF_SEED=5 "
	assert_output --partial "1 of 1 sequences disagree"
}

@test "kdiff, -o whiteout=overlay: stackfs and kernel overlayfs agree, and read each other's uppers" {
	kd_run overlay "${KDIFF_SEED:-1}" "${KDIFF_COUNT:-30}" "${KDIFF_OPS:-60}"
}

@test "kdiff, -o whiteout=wh: stackfs and kernel overlayfs agree, and stackfs reads the kernel's upper" {
	kd_run wh "${KDIFF_SEED:-1001}" "${KDIFF_COUNT:-30}" "${KDIFF_OPS:-60}"
}

# --mid: a middle ro layer the kernel wrote (its whiteouts, opaque
# directories, redirects and copies) under the upper. It found hard links
# of lower symlinks not kept one inode across copy-up (docs/union.md "Copy-up";
# 94-links has it reduced).
@test "kdiff --mid, -o whiteout=overlay: a middle layer the kernel wrote, read by both alike" {
	kd_run overlay "${KDIFF_SEED:-2001}" "${KDIFF_COUNT:-10}" "${KDIFF_OPS:-60}" --mid
}

# The sequence that found a chain of redirects across layers (what kdiff
# found, docs/overlayfs.md "Differences from kernel overlayfs"): the kernel's
# upper has c redirected to b, and the middle layer's b is itself a moved
# directory, redirected to the lowest layer's c; the kernel follows both.
@test "regression: kdiff --mid seed 5118: a chain of redirects across layers is followed as the kernel follows it" {
	kd_run overlay 5118 1 100 --mid
}

# The sequences that found the copy-up into a removed directory
# (docs/union.md "Copy-up"; 94-links has it reduced): a change of a lower hard-linked
# file whose node was last reached by a name since removed with its
# directory answered ENOENT (write, create with O_TRUNC, chmod,
# removexattr), where the kernel changes the file. (Seeds of kdiff.py's
# generator as it is: a change of it changes what they make. Its fifos
# and links of symlinks and fifos came later, from a generator of their
# own at names the tree left free, so the rest of these trees is as it
# was.)
@test "regression: kdiff seeds 7, 49 and 65 of 100 operations (-o whiteout=overlay)" {
	local s
	for s in 7 49 65; do
		kd_run overlay "$s" 1 100
	done
}
