#!/usr/bin/env bats
# -o writeback: the kernel's writeback cache. Data, appends, sizes and
# times must be what they are without it, also after a remount.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lower >"$LO/l"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT" writeback
}

teardown() {
	sfs_cleanup
}

@test "writeback: written data reaches the rw branch by fsync, and survives a remount" {
	head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/src"
	dd if="$BATS_TEST_TMPDIR/src" of="$MNT/f" bs=64k conv=fsync status=none
	cmp "$BATS_TEST_TMPDIR/src" "$UP/f"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO" "$MNT" writeback
	cmp "$BATS_TEST_TMPDIR/src" "$MNT/f"
}

@test "writeback: O_APPEND and write-only opens work as without it" {
	echo one >"$MNT/a"
	echo two >>"$MNT/a"
	printf 'x' | dd of="$MNT/a" bs=1 seek=2 conv=notrunc status=none
	sync
	run -0 cat "$UP/a"
	assert_output $'onx\ntwo'
	echo more >>"$MNT/l"
	sync
	run -0 cat "$MNT/l" "$UP/l"
	assert_output $'lower\nmore\nlower\nmore'
	sfs_assert_unchanged "$LO"
}

@test "writeback: size and mtime seen through the view match the branch after sync" {
	printf '12345' >"$MNT/s"
	truncate -s 3 "$MNT/s"
	sync
	[[ $(stat -c %s "$MNT/s") == 3 && $(stat -c %s "$UP/s") == 3 ]]
	touch -d '2020-01-02 03:04:05.123456789' "$MNT/s"
	sync
	[[ $(stat -c %y "$MNT/s") == "$(stat -c %y "$UP/s")" ]] || fail "$(stat -c %y "$MNT/s" "$UP/s")"
}

@test "regression: writeback: dirty pages written back through an O_DIRECT descriptor of the file (the kernel picks any writable one)" {
	# the buffered write leaves a dirty page of 100 bytes; the kernel
	# writes it back through the most recently opened writable file, the
	# O_DIRECT one, with a length O_DIRECT refuses
	run -0 python3 - "$MNT/wp" <<'PY'
import os, sys
p = sys.argv[1]
b = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
d = os.open(p, os.O_RDWR | os.O_DIRECT)
os.pwrite(b, b"x" * 100, 0)
os.fsync(b)
os.close(b)
os.close(d)
PY
	run -0 cat "$UP/wp"
	assert_output "$(printf 'x%.0s' {1..100})"
	sfs_assert_unchanged "$LO"
}
