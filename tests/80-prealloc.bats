#!/usr/bin/env bats
# Preallocation through the view: fallocate in the modes the kernel's FUSE
# layer forwards (default, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE) acts on the
# branch file exactly as on the branch itself; the modes FUSE refuses
# (COLLAPSE_RANGE, INSERT_RANGE, UNSHARE_RANGE) fail with EOPNOTSUPP and
# change nothing; posix_fallocate writes no zeros; unwritten extents
# survive copy-up (a 1 GiB preallocated file is copied without writing
# it); SEEK_DATA/SEEK_HOLE and copy_file_range work through the view.
#
# Each operation is made through the view on a file of the rw branch (rf)
# and on a lower file (lf, copied up by it), and directly on reference
# files of the same filesystem (T/ref_rf, T/ref_lf) with the same content:
# the results must agree.

load helpers/common
load helpers/passthrough

setup_file() {
	sfs_require_build || return 1
	sfs_require_tool ptprobe || return 1
	# room for a 1 GiB lower file and its 1 GiB copy
	export SFS_IMG
	SFS_IMG=$(sfs_make_image "$SFS_FS" 3000 img) || return 1
}

teardown_file() {
	sfs_cleanup_file
}

MIB=1048576

setup() {
	sfs_require_cmd fallocate filefrag xfs_io
	sfs_setup_branches
	head -c $MIB /dev/urandom >"$BATS_TEST_TMPDIR/data"
	cp "$BATS_TEST_TMPDIR/data" "$UP/rf"
	cp "$BATS_TEST_TMPDIR/data" "$LO/lf"
	cp "$BATS_TEST_TMPDIR/data" "$T/ref_rf"
	cp "$BATS_TEST_TMPDIR/data" "$T/ref_lf"
	sync -f "$T"
}

teardown() {
	sfs_cleanup
	# the 1 GiB files of one test must not fill the image for the next
	[[ -n ${T:-} && -d $T ]] && rm -rf "$T"
	return 0
}

# both_ways FALLOCATE_ARGS...: fallocate(1) through the view on rf and lf,
# and directly on their reference files.
both_ways() {
	fallocate "$@" "$MNT/rf" || fail "fallocate $* on the rw file through the view failed"
	fallocate "$@" "$MNT/lf" || fail "fallocate $* on the lower file through the view failed"
	fallocate "$@" "$T/ref_rf"
	fallocate "$@" "$T/ref_lf"
}

# Both files agree with their references.
both_same() {
	[[ -f $UP/lf ]] || fail "the lower file was not copied up"
	pt_same_file "$MNT/rf" "$UP/rf" "$T/ref_rf"
	pt_same_file "$MNT/lf" "$UP/lf" "$T/ref_lf"
	cmp "$LO/lf" "$BATS_TEST_TMPDIR/data" || fail "the lower file changed"
}

# ------------------------------------------------------------ forwarded modes

@test "fallocate default mode extends the size with unwritten extents, on a rw and a lower file, as on the branch" {
	pt_mount
	both_ways -o $MIB -l $((2 * MIB))
	both_same
	run -0 pt_alloc "$MNT/rf"
	assert_output --partial "size=$((3 * MIB)) "
	run -0 pt_extents "$UP/lf"
	assert_output --partial "256-767 unwritten"
	cmp <(tail -c +$((MIB + 1)) "$MNT/lf") <(head -c $((2 * MIB)) /dev/zero) || fail "the new range does not read as zeros"
}

@test "fallocate -n (KEEP_SIZE) allocates past EOF without changing the size, on a rw and a lower file" {
	pt_mount
	local before
	before=$(stat -c %b "$UP/rf")
	both_ways -n -o $MIB -l $((4 * MIB))
	both_same
	run -0 stat -c %s "$MNT/rf" "$MNT/lf"
	assert_output $'1048576\n1048576'
	(($(stat -c %b "$MNT/rf") >= before + 8192)) || fail "st_blocks did not grow by 4 MiB: $before -> $(stat -c %b "$MNT/rf")"
	run -0 pt_extents "$UP/rf"
	assert_output --partial "256-1279 unwritten"
}

@test "fallocate -p (PUNCH_HOLE) makes a hole that reads as zeros, on a rw and a lower file" {
	pt_mount
	both_ways -p -o 65536 -l 131072
	both_same
	run -0 pt_seekmap "$MNT/lf"
	assert_line "hole 65536 196608"
	run -0 pt_seekmap "$MNT/rf"
	assert_line "hole 65536 196608"
	cmp <(dd if="$MNT/rf" bs=65536 skip=1 count=2 status=none) <(head -c 131072 /dev/zero) ||
		fail "the punched range does not read as zeros"
	run -0 stat -c %s "$MNT/rf" "$MNT/lf"
	assert_output $'1048576\n1048576'
}

@test "fallocate -z (ZERO_RANGE) zeroes a range in place, on a rw and a lower file" {
	pt_mount
	both_ways -z -o 65536 -l 131072
	both_same
	cmp <(dd if="$MNT/lf" bs=65536 skip=1 count=2 status=none) <(head -c 131072 /dev/zero) ||
		fail "the zeroed range does not read as zeros"
	cmp <(head -c 65536 "$MNT/lf") <(head -c 65536 "$BATS_TEST_TMPDIR/data") || fail "bytes before the range changed"
	cmp <(tail -c +196609 "$MNT/lf") <(tail -c +196609 "$BATS_TEST_TMPDIR/data") || fail "bytes after the range changed"
	# zeroing past EOF extends the file, as on the branch
	both_ways -z -o $MIB -l 8192
	both_same
	run -0 stat -c %s "$MNT/rf"
	assert_output $((MIB + 8192))
}

# ------------------------------------------------------------ refused modes

@test "collapse, insert and unshare fail with EOPNOTSUPP and leave a rw file byte for byte as it was" {
	pt_mount
	sfs_snapshot "$UP"
	run -1 fallocate -c -o 65536 -l 65536 "$MNT/rf"
	assert_output --partial "Operation not supported"
	run -1 fallocate -i -o 65536 -l 65536 "$MNT/rf"
	assert_output --partial "Operation not supported"
	run -1 xfs_io -c 'funshare 0 65536' "$MNT/rf"
	assert_output --partial "Operation not supported"
	for m in collapse insert unshare; do
		run -1 "$PTPROBE" fallocate "$MNT/rf" "$m" 65536 65536
		assert_output EOPNOTSUPP
	done
	cmp "$MNT/rf" "$BATS_TEST_TMPDIR/data" || fail "content changed through the view"
	sfs_assert_unchanged "$UP"
	run -0 stat -c %s "$MNT/rf"
	assert_output $MIB
}

@test "collapse, insert and unshare fail with EOPNOTSUPP on a lower file and change neither the view nor the lower file" {
	pt_mount
	sfs_snapshot "$LO"
	run -1 fallocate -c -o 65536 -l 65536 "$MNT/lf"
	assert_output --partial "Operation not supported"
	run -1 fallocate -i -o 65536 -l 65536 "$MNT/lf"
	assert_output --partial "Operation not supported"
	run -1 xfs_io -c 'funshare 0 65536' "$MNT/lf"
	assert_output --partial "Operation not supported"
	for m in collapse insert unshare; do
		run -1 "$PTPROBE" fallocate "$MNT/lf" "$m" 65536 65536
		assert_output EOPNOTSUPP
	done
	cmp "$MNT/lf" "$BATS_TEST_TMPDIR/data" || fail "content changed through the view"
	run -0 stat -c %s "$MNT/lf"
	assert_output $MIB
	sfs_assert_unchanged "$LO"
}

@test "a mode the branch filesystem lacks answers its own EOPNOTSUPP (ext4: fallocate on a block-mapped file)" {
	[[ $SFS_FS == ext4 ]] || skip "$SFS_FS supports every mode FUSE forwards on every file (only ext4 refuses preallocation on block-mapped files)"
	: >"$UP/bm"
	: >"$T/ref_bm"
	chattr -e "$UP/bm" "$T/ref_bm" || skip "this ext4 cannot convert an empty file to block mapping"
	run -1 "$PTPROBE" fallocate "$T/ref_bm" 0 0 65536
	assert_output EOPNOTSUPP
	pt_mount
	run -1 "$PTPROBE" fallocate "$MNT/bm" 0 0 65536
	assert_output EOPNOTSUPP
	run -1 "$PTPROBE" fallocate "$MNT/bm" keep 0 65536
	assert_output EOPNOTSUPP
	run -0 pt_alloc "$UP/bm"
	assert_output "size=0 blocks=0"
	run -0 pt_alloc "$MNT/bm"
	assert_output "size=0 blocks=0"
}

# ------------------------------------------------------------ posix_fallocate

@test "posix_fallocate through the view allocates unwritten extents and writes no zeros (rw and lower file)" {
	local dev w0 w1
	dev=$(pt_loopdev "$SFS_IMG")
	pt_mount
	w0=$(pt_sectors_written "$dev" "$SFS_IMG")
	run -0 "$PTPROBE" posix_fallocate "$MNT/rf" $MIB $((64 * MIB))
	run -0 "$PTPROBE" posix_fallocate "$MNT/lf" $MIB $((64 * MIB))
	w1=$(pt_sectors_written "$dev" "$SFS_IMG")
	for f in rf lf; do
		run -0 pt_alloc "$MNT/$f"
		assert_output --partial "size=$((65 * MIB)) "
		(($(stat -c %b "$UP/$f") >= 65 * 2048)) || fail "$f: st_blocks $(stat -c %b "$UP/$f") < 65 MiB"
		run -0 pt_extents "$UP/$f"
		assert_output --partial "256-16639 unwritten"
	done
	# 128 MiB of zeros would be 262144 sectors; the copy-up of lf writes 1 MiB
	((w1 - w0 < 16384)) || fail "$((w1 - w0)) sectors written to $dev by posix_fallocate of 2 x 64 MiB"
}

# ------------------------------------------------------------ copy-up of preallocation

# Makes LO/big: 1 GiB preallocated, 12 KiB written at its start.
make_big() {
	fallocate -l 1G "$LO/big"
	head -c 12288 /dev/urandom | dd of="$LO/big" conv=notrunc status=none
	sync -f "$LO"
}

@test "copy-up of a 1 GiB preallocated lower file keeps st_blocks and the unwritten extents, writing no zeros" {
	make_big
	local dev w0 w1 blocks
	dev=$(pt_loopdev "$SFS_IMG")
	pt_mount metacopy=off # the chmod copies the data (else its first write would)
	w0=$(pt_sectors_written "$dev" "$SFS_IMG")
	chmod 0600 "$MNT/big"
	w1=$(pt_sectors_written "$dev" "$SFS_IMG")
	[[ -f $UP/big ]] || fail "not copied up"
	blocks=$(stat -c %b "$LO/big")
	((blocks >= 2097152)) || fail "the lower file has only $blocks blocks"
	run -0 stat -c %b "$UP/big"
	assert_output "$blocks"
	run -0 stat -c %b "$MNT/big"
	assert_output "$blocks"
	run -0 pt_extents "$UP/big"
	assert_output "$(pt_extents "$LO/big")"
	assert_output --partial " unwritten"
	run -0 pt_seekmap "$MNT/big"
	assert_output "$(pt_seekmap "$LO/big")"
	cmp <(head -c 12288 "$MNT/big") <(head -c 12288 "$LO/big")
	# 1 GiB of zeros would be 2097152 sectors
	((w1 - w0 < 16384)) || fail "$((w1 - w0)) sectors written by the copy-up of a 1 GiB preallocated file"
}

@test "an append to a 1 GiB preallocated lower file: the copy keeps the lower file's allocation below the old EOF" {
	make_big
	local dev w0 w1 bs limit lo_blocks up_blocks extra
	dev=$(pt_loopdev "$SFS_IMG")
	bs=$(stat -f -c %S "$LO")
	limit=$((1073741824 / bs))
	pt_mount
	w0=$(pt_sectors_written "$dev" "$SFS_IMG")
	echo x >>"$MNT/big"
	w1=$(pt_sectors_written "$dev" "$SFS_IMG")
	[[ -f $UP/big ]] || fail "not copied up"
	run -0 stat -c %s "$MNT/big"
	assert_output 1073741826
	run -0 tail -c 2 "$MNT/big"
	assert_output x
	# the same extents as the lower file below its old end (the append
	# writes one block past it)
	run -0 pt_extents "$UP/big" "$limit"
	assert_output "$(pt_extents "$LO/big")"
	# st_blocks: the lower file's plus the blocks of the append
	lo_blocks=$(stat -c %b "$LO/big")
	up_blocks=$(stat -c %b "$UP/big")
	extra=$(pt_extents "$UP/big" | awk -v l="$limit" -v f=$((bs / 512)) -F'[- ]' '$2 >= l { n += ($2 - ($1 > l ? $1 : l) + 1) * f } END { print n + 0 }')
	((up_blocks - extra == lo_blocks)) ||
		fail "the copy has $up_blocks blocks ($extra past the old EOF), the lower file $lo_blocks"
	((w1 - w0 < 16384)) || fail "$((w1 - w0)) sectors written by the copy-up of a 1 GiB preallocated file"
}

# ------------------------------------------------------------ seek, copy_file_range

# A sparse file: data, a hole, data, a preallocated range, data, a hole.
make_sparse() {
	local f=$1
	: >"$f"
	head -c 65536 "$BATS_TEST_TMPDIR/data" | dd of="$f" conv=notrunc status=none
	head -c 4096 "$BATS_TEST_TMPDIR/data" | dd of="$f" bs=4096 seek=256 conv=notrunc status=none
	fallocate -n -o $((2 * MIB)) -l $MIB "$f"
	head -c 8192 "$BATS_TEST_TMPDIR/data" | dd of="$f" bs=4096 seek=1024 conv=notrunc status=none
	truncate -s $((6 * MIB)) "$f"
}

@test "SEEK_DATA and SEEK_HOLE through the view find the branch's data and holes (rw file, lower file, after copy-up)" {
	make_sparse "$UP/sp"
	make_sparse "$LO/lsp"
	sync -f "$T"
	pt_mount
	run -0 pt_seekmap "$MNT/sp"
	assert_output "$(pt_seekmap "$UP/sp")"
	assert_line "data 0 65536"
	assert_line --regexp '^hole 65536 '
	assert_line --regexp '^hole [0-9]+ 6291456$'
	run -0 xfs_io -c 'seek -a -r 0' "$MNT/sp"
	assert_output "$(xfs_io -c 'seek -a -r 0' "$UP/sp")"
	run -0 pt_seekmap "$MNT/lsp"
	assert_output "$(pt_seekmap "$LO/lsp")"
	chmod 0600 "$MNT/lsp"
	# a metadata-only copy first: the view's SEEK_DATA is the lower's;
	# then an open for writing brings the data in
	run -0 pt_seekmap "$MNT/lsp"
	assert_output "$(pt_seekmap "$LO/lsp")"
	: >>"$MNT/lsp"
	[[ -f $UP/lsp ]] || fail "not copied up"
	run -0 pt_seekmap "$MNT/lsp"
	assert_output "$(pt_seekmap "$LO/lsp")"
	run -0 pt_seekmap "$UP/lsp"
	assert_output "$(pt_seekmap "$LO/lsp")"
	cmp "$MNT/lsp" "$LO/lsp"
}

@test "copy_file_range through the view: rw to rw, lower to a new file, and into a lower file (copied up)" {
	local d=$BATS_TEST_TMPDIR/data
	pt_mount
	run -0 "$PTPROBE" copy_range "$MNT/rf" "$MNT/new" 4096 8192 65536
	assert_output "OK 65536"
	cmp <(tail -c +8193 "$MNT/new") <(dd if="$d" bs=4096 skip=1 count=16 status=none) || fail "rw to new: wrong bytes"
	cmp <(head -c 8192 "$MNT/new") <(head -c 8192 /dev/zero) || fail "rw to new: the gap is not zeros"
	run -0 "$PTPROBE" copy_range "$MNT/lf" "$MNT/rf" 0 $MIB $MIB
	assert_output "OK $MIB"
	cmp "$UP/rf" <(cat "$d" "$d") || fail "lower to rw: wrong content on the branch"
	run -0 "$PTPROBE" copy_range "$MNT/rf" "$MNT/lf" 0 131072 65536
	assert_output "OK 65536"
	[[ -f $UP/lf ]] || fail "the destination was not copied up"
	cmp "$MNT/lf" <(head -c 131072 "$d"; head -c 65536 "$d"; tail -c +196609 "$d") || fail "into a lower file: wrong content"
	cmp "$LO/lf" "$d" || fail "the lower file changed"
	touch "$MNT/new2"
	run -0 xfs_io -c "copy_range -s 0 -d 0 -l 4096 $MNT/lf" "$MNT/new2"
	cmp "$UP/new2" <(head -c 4096 "$d") || fail "xfs_io copy_range: wrong content"
}
