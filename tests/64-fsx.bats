#!/usr/bin/env bats
# fsx through the union (tests/tools/fsx.c): random reads, writes (beyond
# the end too), truncates, fallocate (KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE),
# mmap reads and writes, fsync, dropped page caches and reopens on one
# file, each checked against a model in memory; st_size and st_ino checked
# after every step. Short runs here; long ones in tests/stress (make
# stress). A failure prints the seed: FSX_SEED=S replays it exactly.
#
# After each run the file in the rw branch is compared with the model (the
# data reached the branch, not just the kernel's cache), and a file that
# started in the ro branch must be unchanged there.

load helpers/common
load stress/lib

FSX_OPS=${FSX_OPS:-5000}

setup_file() {
	sfs_setup_file 1
	sfs_require_tool fsx
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

@test "fsx on a new file in the view; the rw branch holds what the model says" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_fsx new "$MNT/new" -N "$FSX_OPS"
	"$SFS" umount "$MNT"
	st_same_as_model new "$UP/new"
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_same_as_model new "$MNT/new"
}

@test "fsx on a file that starts in the ro branch: copied up at the first change, lower unchanged" {
	st_make_lower_file "$LO/f"
	echo other >"$LO/other"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	ino=$(stat -c %i "$MNT/f")
	cmp "$LO/f" "$MNT/f"
	# -e: the model starts with the lower content; the O_RDWR open (the
	# copy-up) comes at the first change; -d: an O_RDONLY descriptor
	# opened on the lower file stays open and is read through throughout
	st_fsx low "$MNT/f" -e -d -N "$FSX_OPS"
	[[ -f $UP/f ]] || fail "no copy of f in the rw branch"
	[[ $(stat -c %i "$MNT/f") == "$ino" ]] || fail "st_ino changed across the copy-up"
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	st_same_as_model low "$UP/f"
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_same_as_model low "$MNT/f"
	[[ $(stat -c %i "$MNT/f") == "$ino" ]] || fail "st_ino changed across the remount"
	sfs_assert_unchanged "$LO"
}

@test "two fsx at once on two files: a new one and one from the ro branch" {
	st_make_lower_file "$LO/f"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_fsx_start a "$MNT/a" -N "$FSX_OPS"
	st_fsx_start b "$MNT/f" -e -N "$FSX_OPS"
	st_fsx_wait a
	st_fsx_wait b
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	st_same_as_model a "$UP/a"
	st_same_as_model b "$UP/f"
}

@test "fsx on one name of a lower hard link: the other name shows the same data" {
	st_make_lower_file "$LO/h1"
	ln "$LO/h1" "$LO/h2"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_fsx hl "$MNT/h1" -e -N "$((FSX_OPS / 2))"
	st_same_as_model hl "$MNT/h2"
	[[ $(stat -c %i "$MNT/h1") == $(stat -c %i "$MNT/h2") ]] || fail "the two names have different st_ino"
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT"
	st_same_as_model hl "$MNT/h1"
	st_same_as_model hl "$MNT/h2"
}

@test "fsx with the writeback cache (-o writeback), on a file from the ro branch" {
	st_make_lower_file "$LO/f"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT" writeback
	st_fsx wb "$MNT/f" -e -d -N "$FSX_OPS"
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	st_same_as_model wb "$UP/f"
}

# O_DIRECT (-Z: every descriptor O_DIRECT, 4 KiB-aligned offsets, lengths
# and buffers; -M: no mmap) in each way data moves: passed through to the
# branch file by the kernel, served by the daemon, and with the writeback
# cache. A new file, and a lower one (read through the daemon until the
# copy-up, and after it by the descriptor opened before).
check_fsx_direct() {
	local opts=$1 n=$((FSX_OPS / 2))
	st_make_lower_file "$LO/f"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT" "$opts"
	st_fsx dnew "$MNT/new" -Z -M -N "$n"
	st_fsx dlow "$MNT/f" -Z -M -e -d -N "$n"
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	st_same_as_model dnew "$UP/new"
	st_same_as_model dlow "$UP/f"
}

@test "regression: fsx with O_DIRECT (-Z -M), passed through (default; the lower file is served by the daemon)" {
	check_fsx_direct ""
}

@test "regression: fsx with O_DIRECT (-Z -M), served by the daemon (-o nopassthrough)" {
	check_fsx_direct nopassthrough
}

@test "regression: fsx with O_DIRECT (-Z -M), with the writeback cache (-o writeback)" {
	check_fsx_direct writeback
}

# ------------------------------------------------------------ findings

@test "regression: SEEK_DATA and SEEK_HOLE see data still in the writeback cache (-o writeback)" {
	sfs_require_cmd xfs_io
	sfs_mount "$UP:$LO=ro" "$MNT" writeback
	# the kernel sends FUSE_LSEEK without writing dirty pages back first;
	# an answer from the branch alone misses what is still cached, and
	# cp(1) or tar(1) would then copy written data as a hole
	run -0 xfs_io -f -c "pwrite -q 0 64k" -c "seek -d 0" -c "seek -h 0" "$MNT/new"
	assert_line "DATA	0"
	assert_line "HOLE	65536"
}
