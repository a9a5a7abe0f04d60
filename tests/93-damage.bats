#!/usr/bin/env bats
# A damaged record is damage, not a newer format
# (docs/format.md "On-disk format", the checksum rule): each byte of the
# header, the registry and
# the inode map of a branch made by a real mount is flipped in turn. For
# every position fsck reports the file's problem (exit 4, never "newer"),
# the mount refuses the branch as corrupt, --repair fixes it (exit 1) and
# a second fsck is clean (exit 0). A valid newer version, checksum and
# all, alone gets "newer" (exit 8, nothing touched).

load helpers/common
load helpers/format

setup_file() {
	sfs_setup_file
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lower >"$LO/f"
	sfs_mount "$UP=rw:$LO=ro" "$MNT"
	echo more >>"$MNT/f"
	ln "$MNT/f" "$MNT/f2"
	"$SFS" umount "$MNT"
	# numbers that cannot be packed: inode map records (filesystem id 1)
	"$FMT" ino-alloc "$UP" 1 $((1 << 50)) >/dev/null
	"$FMT" ino-alloc "$UP" 1 $(((1 << 50) + 1)) >/dev/null
	cp -a "$UP/.stackfs" "$BATS_TEST_TMPDIR/pristine"
}

teardown() {
	sfs_cleanup
}

# flip FILE POS: byte POS of .stackfs/FILE xor 0xff, on a pristine copy.
flip() {
	rm -rf "$UP/.stackfs"
	cp -a "$BATS_TEST_TMPDIR/pristine" "$UP/.stackfs"
	fmt_py 'p, i = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[i] ^= 0xFF; open(p, "wb").write(b)' \
		"$UP/.stackfs/$1" "$2"
}

# walk FILE CODE POS...: each position flipped: damage found as CODE
# (a regex of problem codes), the mount refused, repaired, clean after.
walk() {
	local file=$1 code=$2 pos bad=()
	shift 2
	for pos in "$@"; do
		flip "$file" "$pos"
		run "$SFS" fsck "$UP"
		if [[ $status -ne 4 || $output == *newer* ]] || ! grep -Eq "\[($code)\]" <<<"$output"; then
			bad+=("byte $pos: fsck exit $status: ${output//$'\n'/ | }")
			continue
		fi
		run "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
		if [[ $status -eq 0 ]]; then
			"$SFS" umount "$MNT"
			bad+=("byte $pos: mounted")
			continue
		fi
		if [[ $output != *corrupt* || $output == *newer* ]]; then
			bad+=("byte $pos: mount refused as: $output")
			continue
		fi
		run "$SFS" fsck --repair "$UP"
		[[ $status -eq 1 ]] || bad+=("byte $pos: --repair exit $status: ${output//$'\n'/ | }")
		run "$SFS" fsck "$UP"
		[[ $status -eq 0 ]] || bad+=("byte $pos: second fsck exit $status: ${output//$'\n'/ | }")
	done
	echo "# $file: $# positions flipped, ${#bad[@]} wrong" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}")"
}

@test "every byte of the header flipped: damage (HEADER_*), refused by the mount, undone by --repair" {
	walk header 'HEADER_[A-Z]+' $(seq 0 63)
	# the flipped byte itself is found and undone, not the fields rewritten
	flip header 8
	run "$SFS" fsck "$UP"
	assert_output --partial "byte 8 is damaged"
	run "$SFS" fsck --repair "$UP"
	cmp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/pristine/header"
}

@test "64 bytes of the registry flipped (its head and its records): damage, refused, repaired" {
	local size
	size=$(stat -c %s "$UP/.stackfs/registry")
	walk registry 'REG_[A-Z]+' $(seq 0 3 167) $(seq 168 $(((size - 168) / 8)) $((size - 1)) | head -n 8)
}

# Not the last record: a mount takes a bad last one for an append a
# crash interrupted (docs/format.md "inomap"), and leaves it to fsck.
@test "every byte of the inode map's head and first record flipped: damage, refused, repaired" {
	local size
	size=$(stat -c %s "$UP/.stackfs/inomap")
	((size == 96)) || fail "ino-alloc made no two inode map records ($size bytes)"
	walk inomap 'INO_[A-Z]+' $(seq 0 63)
}

# The only "newer": a whole record of a higher version. A newer header
# stops fsck (exit 8: not checked); a newer registry or inode map is a
# problem it leaves (exit 4, REG_NEWER, INO_NEWER); neither is touched.
@test "a valid newer version, checksum and all, is newer (untouched); the same with a stale checksum is damage" {
	local file sum
	for file in header registry inomap; do
		rm -rf "$UP/.stackfs"
		cp -a "$BATS_TEST_TMPDIR/pristine" "$UP/.stackfs"
		# version 2 at byte 8, the head's checksum recomputed where it lies
		fmt_py 'p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = {"header": 60, "registry": 164, "inomap": 28}[sys.argv[2]]
b[8:12] = struct.pack("<I", 2)
b[n:n + 4] = struct.pack("<I", crc32c(bytes(b[:n])))
open(p, "wb").write(b)' "$UP/.stackfs/$file" "$file"
		sum=$(sha256sum "$UP/.stackfs/$file")
		run "$SFS" fsck --repair "$UP"
		if [[ $file == header ]]; then
			assert_equal "$status" 8
		else
			assert_equal "$status" 4
			assert_output --regexp "\[(REG|INO)_NEWER\]"
		fi
		assert_output --partial "newer"
		assert_equal "$(sha256sum "$UP/.stackfs/$file")" "$sum"
		run "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
		assert_failure
		assert_output --partial "newer"
		# the same version 2, its checksum left as it was: damage
		rm -rf "$UP/.stackfs"
		cp -a "$BATS_TEST_TMPDIR/pristine" "$UP/.stackfs"
		fmt_py 'p = sys.argv[1]
b = bytearray(open(p, "rb").read()); b[8:12] = struct.pack("<I", 2); open(p, "wb").write(b)' \
			"$UP/.stackfs/$file"
		run "$SFS" fsck "$UP"
		assert_equal "$status" 4
		refute_output --partial "newer"
	done
}
