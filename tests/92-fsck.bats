#!/usr/bin/env bats
# stackfs fsck: every kind of planted damage is found (exit 4), --repair
# fixes the repairable ones (exit 1) and a second run finds nothing (exit
# 0) — the e2fsprogs "run twice" pattern; what cannot be fixed safely is
# left and reported (exit 4); a whiteout that still hides something is
# never removed; --json parses; --repair refuses a branch in use (exit 8).
#
# The metadata directories are made by the format tool (the same library
# calls a mount makes), so these tests do not need a mount, except those
# named "mounted".

load helpers/common
load helpers/format

setup_file() {
	sfs_setup_file 1
	sfs_require_tool format_fuzz
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lower >"$LO/f"
	echo gone >"$LO/gone"
	mkdir -p "$LO/d/sub" "$LO/old"
	echo in-d >"$LO/d/a"
	echo in-old >"$LO/old/x"
	fmt_mkmeta "$UP" "$LO"
}

teardown() {
	[[ -n ${LOCK_FD:-} ]] && exec {LOCK_FD}>&-
	sfs_cleanup
}

# Holds the branch's lock as a mount does, until the test ends (the fd is
# the test shell's; a command run by the test opens its own).
hold_lock() {
	exec {LOCK_FD}<"$UP/.stackfs/lock"
	flock -x -n "$LOCK_FD" || fail "could not take the lock for the test"
}

# ------------------------------------------------------------ clean

@test "a fresh branch is clean: exit 0, text and --json" {
	run_fsck "$UP"
	assert_fsck_status 0
	assert_output --partial "$UP: clean"
	run "$SFS" fsck --json "$UP"
	assert_fsck_status 0
	python3 -m json.tool <<<"$output" >/dev/null || fail "not JSON: $output"
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["exit"]==0 and d["found"]==0 and d["problems"]==[] and d["lowers"]==[sys.argv[2]], d' \
		"$output" "$(realpath "$LO")"
}

@test "a branch without .stackfs is checked too (note, exit 0)" {
	rm -rf "$UP/.stackfs"
	run_fsck --lower "$LO" "$UP"
	assert_fsck_status 0
	assert_output --partial "never mounted read-write"
}

# ------------------------------------------------------------ header

@test "truncated header: found (exit 4), repaired (exit 1), then clean" {
	local uuid
	uuid=$(fmt_header_fields "$UP/.stackfs/header" | cut -d' ' -f4)
	truncate -s 40 "$UP/.stackfs/header"
	fsck_twice "$UP" HEADER_SHORT
	# the UUID was readable, so it is kept
	run fmt_header_fields "$UP/.stackfs/header"
	assert_output --regexp "^535441434b465300 1 0 $uuid [0-9]+ crc_ok res_zero 64$"
}

@test "flipped checksum bit in the header: found, repaired to the same bytes" {
	cp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/header"
	fmt_flip_bit "$UP/.stackfs/header" 61 3
	run "$FMT" check "$UP"
	assert_output --partial "checksum mismatch"
	fsck_twice "$UP" HEADER_CRC
	cmp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/header"
}

@test "flipped bit in a header field: found as a checksum mismatch and repaired" {
	fmt_flip_bit "$UP/.stackfs/header" 20 0
	fsck_twice "$UP" HEADER_CRC
}

@test "bad magic and missing header: repaired with a new header" {
	printf 'XXXXXXXX' | dd of="$UP/.stackfs/header" bs=1 conv=notrunc status=none
	fsck_twice "$UP" HEADER_MAGIC
	rm "$UP/.stackfs/header"
	fsck_twice "$UP" HEADER_MISSING
}

@test "a header of a newer version is not checked or touched: exit 8" {
	"$FMT" header "$UP/.stackfs/header" 2
	sfs_snapshot "$UP"
	run_fsck --repair "$UP"
	assert_fsck_status 8
	assert_output --partial "format version 2 is newer than this stackfs (1)"
	sfs_assert_unchanged "$UP"
}

@test "a damaged version byte is damage, not a newer format: the checksum finds the byte and --repair undoes it" {
	"$FMT" header "$UP/.stackfs/header" 1
	cp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/good"
	# version 1 -> 0x101 with a stale checksum: damage (it was "newer")
	fmt_flip_bit "$UP/.stackfs/header" 9 0
	run_fsck "$UP"
	assert_fsck_status 4
	assert_output --partial "[HEADER_CRC]"
	assert_output --partial "byte 9 is damaged"
	refute_output --partial "newer"
	fsck_twice "$UP" HEADER_CRC
	cmp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/good"
}

@test "a header damaged in two bytes whose version field is not 1 is reported and left alone" {
	"$FMT" header "$UP/.stackfs/header" 1
	fmt_flip_bit "$UP/.stackfs/header" 8 0
	fmt_flip_bit "$UP/.stackfs/header" 20 3
	cp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/header"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	assert_output --partial "[HEADER_CRC]"
	assert_output --partial "version field is not 1"
	cmp "$UP/.stackfs/header" "$BATS_TEST_TMPDIR/header"
}

@test "metadata directory with mode 0755: fixed to 0700" {
	chmod 755 "$UP/.stackfs"
	fsck_twice "$UP" META_MODE
	[[ $(stat -c %a "$UP/.stackfs") == 700 ]]
}

# ------------------------------------------------------------ records

@test "registry: a record with a flipped bit is restored by its checksum; one damaged in two bytes is dropped, its id never given again" {
	# UP and LO share a filesystem: fs id 1, branch ids 1 (UP) and 2 (LO)
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_output "$(printf 'head_ok 2 3\n1 1 crc_ok\n2 1 crc_ok\n2 2 crc_ok')"
	cp "$UP/.stackfs/registry" "$BATS_TEST_TMPDIR/registry"
	fmt_flip_bit "$UP/.stackfs/registry" $((3 * 168 + 40)) 5
	fsck_twice "$UP" REG_CRC
	cmp "$UP/.stackfs/registry" "$BATS_TEST_TMPDIR/registry"
	fmt_flip_bit "$UP/.stackfs/registry" $((3 * 168 + 40)) 5
	fmt_flip_bit "$UP/.stackfs/registry" $((3 * 168 + 70)) 1
	run "$FMT" check "$UP"
	assert_output --partial "record 3 is corrupt (checksum mismatch)"
	# the record lost is LO's: until a mount records LO again, fsck cannot
	# tell it from another directory at that path (exit 8) unless told
	fsck_twice "$UP" REG_CRC --lower "$LO"
	run_fsck "$UP"
	assert_fsck_status 8
	assert_output --partial "is not the lower branch of the last mount"
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_output "$(printf 'head_ok 2 3\n1 1 crc_ok\n2 1 crc_ok')"
	# LO comes back as a new branch: id 3, not 2
	fmt_mkmeta "$UP" "$LO"
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_output "$(printf 'head_ok 2 4\n1 1 crc_ok\n2 1 crc_ok\n2 3 crc_ok')"
}

@test "registry: a repeated id is dropped" {
	fmt_py '
f = sys.argv[1]
d = open(f, "rb").read()
open(f, "ab").write(d[168 * 3:168 * 4])   # branch 2 again
' "$UP/.stackfs/registry"
	run "$FMT" check "$UP"
	assert_output --partial "repeats the id"
	fsck_twice "$UP" REG_DUP
}

@test "registry: partial record and corrupt file header are repaired" {
	echo junk >>"$UP/.stackfs/registry"
	fsck_twice "$UP" REG_PARTIAL
	fmt_flip_bit "$UP/.stackfs/registry" 3 1
	fsck_twice "$UP" REG_HEAD
	# the records are kept; the next ids follow the highest ones
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_output "$(printf 'head_ok 2 3\n1 1 crc_ok\n2 1 crc_ok\n2 2 crc_ok')"
}

@test "registry missing: recreated" {
	rm "$UP/.stackfs/registry"
	fsck_twice "$UP" REG_MISSING
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_output "head_ok 1 1"
}

@test "inomap: a record with a flipped bit is restored by its checksum; one damaged in two bytes is retired in place and its number never reused" {
	run "$FMT" ino-alloc "$UP" 1 100
	assert_success
	local first=$output
	run "$FMT" ino-alloc "$UP" 1 200
	local second=$output
	run "$FMT" ino-alloc "$UP" 1 300
	# damage record 1 (not the last one: a mount would refuse it)
	cp "$UP/.stackfs/inomap" "$BATS_TEST_TMPDIR/inomap"
	fmt_flip_bit "$UP/.stackfs/inomap" $((32 + 9)) 2
	fsck_twice "$UP" INO_CRC
	cmp "$UP/.stackfs/inomap" "$BATS_TEST_TMPDIR/inomap"
	fmt_flip_bit "$UP/.stackfs/inomap" $((32 + 9)) 2
	fmt_flip_bit "$UP/.stackfs/inomap" $((32 + 20)) 6
	run "$FMT" check "$UP"
	assert_output --partial "record 1 is corrupt"
	fsck_twice "$UP" INO_CRC
	run "$FMT" ino-alloc "$UP" 1 200
	assert_output "$second"
	run "$FMT" ino-alloc "$UP" 1 100
	refute_output "$first"
	refute_output "$second"
	# same length (top byte 0xff): string order is number order
	[[ $output > $second ]] || fail "number $output reused (first $first, second $second)"
}

@test "inomap: the torn tail of an interrupted append is found and cut" {
	"$FMT" ino-alloc "$UP" 1 7 >/dev/null
	printf 'torn' >>"$UP/.stackfs/inomap"
	fsck_twice "$UP" INO_PARTIAL
	[[ $(( $(stat -c %s "$UP/.stackfs/inomap") % 32 )) == 0 ]]
}

@test "leftover temporary files in .stackfs are removed; unknown entries reported" {
	echo x >"$UP/.stackfs/registry.tmp"
	fsck_twice "$UP" META_TMP
	echo x >"$UP/.stackfs/mystery"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	assert_output --partial "[META_UNKNOWN]"
	[[ -e $UP/.stackfs/mystery ]]
}

@test "lowers that cannot be parsed: removed (the next mount writes it)" {
	printf 'xx /nope\n' >"$UP/.stackfs/lowers"
	fsck_twice "$UP" LOWERS_BAD --lower "$LO"
}

# ------------------------------------------------------------ staging and index

@test "orphan staging file of an interrupted copy-up: found, removed" {
	echo partial >"$UP/.stackfs/work/cu.1234.5"
	mkdir -p "$UP/.stackfs/work/dir.1.2/sub"
	ln -s /etc/passwd "$UP/.stackfs/work/dir.1.2/sub/link"
	fsck_twice "$UP" WORK_LEFTOVER
	[[ -z $(ls -A "$UP/.stackfs/work") ]]
	[[ -e /etc/passwd ]]
}

@test "index entry with no other link: removed; a linked one is kept" {
	echo a >"$UP/linked"
	ln "$UP/linked" "$UP/.stackfs/index/00000001-000000000000002a"
	echo b >"$UP/.stackfs/index/00000001-000000000000002b"
	fsck_twice "$UP" INDEX_ORPHAN
	[[ -e $UP/.stackfs/index/00000001-000000000000002a ]]
	[[ ! -e $UP/.stackfs/index/00000001-000000000000002b ]]
}

@test "work/ or index/ that is not a directory: reported, not repaired, nothing removed" {
	local d
	for d in work index; do
		rm -rf "$UP/.stackfs/$d"
		echo keep >"$UP/.stackfs/$d"
		run_fsck --repair "$UP"
		assert_fsck_status 4
		assert_output --partial "[${d^^}_NOT_DIR]"
		[[ $(cat "$UP/.stackfs/$d") == keep ]] || fail "$d was changed"
		rm "$UP/.stackfs/$d"
		mkdir "$UP/.stackfs/$d"
	done
	run_fsck "$UP"
	assert_fsck_status 0
}

# ------------------------------------------------------------ origin records

@test "dangling origin record: found, removed" {
	echo copy >"$UP/gone"
	"$FMT" origin-set "$UP/gone" "$LO/gone"
	run "$FMT" origin-get "$UP/gone"
	assert_output --partial "version 2"
	rm "$LO/gone"
	fsck_twice "$UP" ORIGIN_DANGLING
	run "$FMT" origin-get "$UP/gone"
	assert_output none
	[[ $(cat "$UP/gone") == copy ]]
}

@test "a damaged lower-name record: LOWERNAME_CORRUPT, removed; the file keeps its data and its origin" {
	echo copy >"$UP/f"
	"$FMT" origin-set "$UP/f" "$LO/f"
	"$FMT" lowername-set "$UP/f" d/f
	run -0 "$FMT" lowername-get "$UP/f"
	assert_output d/f
	run_fsck --repair "$UP"
	assert_fsck_status 0 # a valid one is kept
	# one byte of its path changed: the checksum no longer holds
	local v
	v=$(getfattr --absolute-names -h -e hex -n trusted.stackfs.lowername "$UP/f" | sed -n 's/^trusted.stackfs.lowername=0x//p')
	setfattr -h -n trusted.stackfs.lowername -v "0x${v:0:8}2e${v:10}" "$UP/f"
	run -0 "$FMT" lowername-get "$UP/f"
	assert_output corrupt
	fsck_twice "$UP" LOWERNAME_CORRUPT
	run -0 "$FMT" lowername-get "$UP/f"
	assert_output none
	run -0 "$FMT" origin-get "$UP/f"
	assert_output --partial "version 2"
	[[ $(cat "$UP/f") == copy ]]
}

@test "a lower-name record with a path that leaves its branch (its checksum whole) is damage, never opened" {
	echo copy >"$UP/f"
	"$FMT" origin-set "$UP/f" "$LO/f"
	# version 1, len 4, "../f", with a valid CRC32C
	local body=010004002e2e2f66 crc
	crc=$(printf '\x01\x00\x04\x00../f' | "$FMT" crc32c)
	setfattr -h -n trusted.stackfs.lowername -v "0x${body}${crc:6:2}${crc:4:2}${crc:2:2}${crc:0:2}" "$UP/f"
	run -0 "$FMT" lowername-get "$UP/f"
	assert_output corrupt
	fsck_twice "$UP" LOWERNAME_CORRUPT
}

@test "a valid origin record is kept" {
	echo copy >"$UP/f"
	"$FMT" origin-set "$UP/f" "$LO/f"
	run_fsck --repair "$UP"
	assert_fsck_status 0
	run "$FMT" origin-get "$UP/f"
	assert_output --partial "version 2"
}

@test "origin record that does not parse: found, removed" {
	echo copy >"$UP/f"
	setfattr -n trusted.stackfs.origin -v 0x02000000 "$UP/f"
	fsck_twice "$UP" ORIGIN_CORRUPT
	"$FMT" origin-set "$UP/f" "$LO/f"
	fmt_py '
import os
v = bytearray(os.getxattr(sys.argv[1], "trusted.stackfs.origin", follow_symlinks=False))
v[30] ^= 0x10
os.setxattr(sys.argv[1], "trusted.stackfs.origin", bytes(v), follow_symlinks=False)
' "$UP/f"
	fsck_twice "$UP" ORIGIN_CORRUPT
}

# ------------------------------------------------------------ whiteouts

@test "aufs whiteout hiding nothing: found, removed" {
	touch "$UP/.wh.nothing-below"
	mkdir "$UP/d"
	touch "$UP/d/.wh.nope"
	fsck_twice "$UP" WH_NOTHING
	[[ ! -e $UP/.wh.nothing-below && ! -e $UP/d/.wh.nope ]]
}

@test "overlay whiteout hiding nothing: found, removed" {
	mknod "$UP/nothing-below" c 0 0
	fsck_twice "$UP" WH_NOTHING
	[[ ! -e $UP/nothing-below ]]
}

@test "whiteouts that hide something are kept (plain, nested, overlay)" {
	touch "$UP/.wh.f"
	mkdir -p "$UP/d/sub"
	touch "$UP/d/.wh.a" "$UP/d/sub/.wh.nothing"
	mkdir "$UP/x"
	mknod "$UP/x/y" c 0 0
	mkdir "$LO/x" && touch "$LO/x/y"
	run_fsck --repair "$UP"
	assert_fsck_status 1
	assert_output --partial "/d/sub/.wh.nothing"
	[[ -e $UP/.wh.f && -e $UP/d/.wh.a && -e $UP/x/y ]]
	run_fsck "$UP"
	assert_fsck_status 0
}

@test "regression: a 0:0 device with the device marker is a device: not a whiteout hiding nothing; a marked lower one is something hidden" {
	# a device made through the view (no lower entry): kept, clean
	mknod "$UP/dev" c 0 0
	setfattr -h -n trusted.stackfs.device -v y "$UP/dev"
	# an overlay whiteout over a marked device of the lower branch hides it
	mknod "$LO/ldev" c 0 0
	setfattr -h -n trusted.stackfs.device -v y "$LO/ldev"
	mknod "$UP/ldev" c 0 0
	run_fsck --repair "$UP"
	assert_fsck_status 0
	assert_output --partial ": clean"
	[[ -c $UP/dev && -c $UP/ldev ]] || fail "fsck removed a device or a whiteout: $(ls -l "$UP")"
}

@test "a whiteout in a redirected directory hides what is at the redirect target: kept" {
	# new/ as `mv old new` through the union makes it: a redirect to /old;
	# m/ merges with MID/m, itself redirected to /old in LO
	sfs_setup_branches mid
	mkdir -p "$LO/old"
	echo in-old >"$LO/old/x"
	fmt_mkmeta "$UP" "$MID" "$LO"
	mkdir -p "$MID/m" "$UP/m" "$UP/new"
	setfattr -n trusted.stackfs.redirect -v /old "$MID/m"
	setfattr -n trusted.stackfs.redirect -v /old "$UP/new"
	touch "$UP/m/.wh.x" "$UP/new/.wh.x" "$UP/new/.wh.nope"
	run_fsck --repair "$UP"
	assert_fsck_status 1
	assert_output --partial "/new/.wh.nope"
	refute_output --partial "/new/.wh.x"
	refute_output --partial "/m/.wh.x"
	[[ -e $UP/m/.wh.x && -e $UP/new/.wh.x && ! -e $UP/new/.wh.nope ]]
}

@test "a whiteout inside an opaque directory hides nothing" {
	mkdir "$UP/d"
	touch "$UP/d/.wh..wh..opq" "$UP/d/.wh.a"
	fsck_twice "$UP" WH_NOTHING
	[[ -e $UP/d/.wh..wh..opq ]]
}

@test "whiteout beside the entry it hides (interrupted removal): the whiteout goes" {
	echo upper >"$UP/f"
	touch "$UP/.wh.f"
	fsck_twice "$UP" WH_BESIDE
	[[ $(cat "$UP/f") == upper ]]
}

@test ".wh. directory: an empty one is replaced by a file, a full one is left (exit 4)" {
	mkdir "$UP/.wh.f"
	fsck_twice "$UP" WH_EMPTY_DIR
	[[ -f $UP/.wh.f ]]
	rm "$UP/.wh.f"
	mkdir "$UP/.wh.f"
	echo data >"$UP/.wh.f/keep"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	assert_output --partial "[WH_BAD_TYPE]"
	[[ $(cat "$UP/.wh.f/keep") == data ]]
}

@test "aufs internal .wh..wh. names are reported, not fixed" {
	mkdir "$UP/.wh..wh.plnk"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	assert_output --partial "[WH_RESERVED]"
	[[ -d $UP/.wh..wh.plnk ]]
}

# ------------------------------------------------------------ opaque markers

@test "bad opaque marker: xattr value other than y is removed" {
	mkdir "$UP/d"
	setfattr -n trusted.overlay.opaque -v n "$UP/d"
	fsck_twice "$UP" OPQ_VALUE
	run getfattr -h -n trusted.overlay.opaque "$UP/d"
	assert_failure
}

@test "opaque xattr y and x are valid; on a file it is removed" {
	mkdir "$UP/d" "$UP/e"
	setfattr -n trusted.overlay.opaque -v y "$UP/d"
	setfattr -n trusted.overlay.opaque -v x "$UP/e"
	run_fsck "$UP"
	assert_fsck_status 0
	echo f >"$UP/file"
	setfattr -n trusted.overlay.opaque -v y "$UP/file"
	fsck_twice "$UP" OPQ_NOT_DIR
}

@test "bad opaque marker: .wh..wh..opq as a directory becomes an empty file, the directory stays opaque" {
	mkdir -p "$UP/d/.wh..wh..opq"
	fsck_twice "$UP" OPQ_MARKER_TYPE
	[[ -f $UP/d/.wh..wh..opq && ! -s $UP/d/.wh..wh..opq ]]
	# a marker with data is left alone
	echo data >"$UP/d/.wh..wh..opq"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	assert_output --partial "[OPQ_MARKER_DATA]"
}

@test "a whiteout file holding data: not read by default (the view hides it either way), WH_BAD_TYPE with --thorough, kept" {
	echo data >"$UP/.wh.f"
	run_fsck "$UP"
	assert_fsck_status 0
	run_fsck --thorough "$UP"
	assert_fsck_status 4
	assert_output --partial "/.wh.f: "
	assert_output --partial "[WH_BAD_TYPE]"
	run_fsck --repair --thorough "$UP"
	assert_fsck_status 4
	[[ $(cat "$UP/.wh.f") == data ]]
}

@test "regression: a whiteout file holding data that hides nothing is read before --repair would remove it: WH_BAD_TYPE, kept" {
	echo data >"$UP/.wh.nothing-below"
	run_fsck "$UP"
	assert_fsck_status 4
	assert_output --partial "[WH_BAD_TYPE]"
	refute_output --partial "[WH_NOTHING]"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	[[ $(cat "$UP/.wh.nothing-below") == data ]]
}

# A directory of more entries than fsck reads at a time (fsck_facts.c:
# chunks of 512, shared by two threads), its damage spread over every
# chunk: each problem is found once, in the listing's order, and the
# repair leaves it clean.
@test "a directory of 1,500 entries read by two threads: every planted problem found once, in order, then repaired" {
	local i want=()
	mkdir "$UP/big"
	for ((i = 0; i < 1500; i++)); do : >"$UP/big/$(printf 'n%04d' "$i")"; done
	for i in 0007 0600 1100 1499; do
		: >"$UP/big/.wh.gone$i"
		setfattr -n trusted.overlay.opaque -v y "$UP/big/n$i"
	done
	for i in 0007 0600 1100 1499; do want+=("/big/.wh.gone$i"); done
	for i in 0007 0600 1100 1499; do want+=("/big/n$i"); done
	run "$SFS" fsck --json "$UP"
	assert_fsck_status 4
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
got = [(p["path"], p["code"]) for p in d["problems"]]
want = [(p, "WH_NOTHING" if "/.wh." in p else "OPQ_NOT_DIR") for p in sys.argv[2:]]
assert got == want, (got, want)' "$output" "${want[@]}"
	run_fsck --repair "$UP"
	assert_fsck_status 1
	assert_output --partial "8 problems found, 8 fixed, 0 left"
	run_fsck "$UP"
	assert_fsck_status 0
	[[ $(find "$UP/big" -name '.wh.*' | wc -l) == 0 && $(ls "$UP/big" | wc -l) == 1500 ]]
}

@test "a metadata directory below the root is reported" {
	mkdir -p "$UP/sub/.stackfs/work"
	run_fsck --repair "$UP"
	assert_fsck_status 4
	assert_output --partial "/sub/.stackfs: "
	assert_output --partial "[NESTED_META]"
	[[ -d $UP/sub/.stackfs/work ]]
}

# ------------------------------------------------------------ all at once

plant_all_fixable() {
	truncate -s 30 "$UP/.stackfs/header"
	echo partial >"$UP/.stackfs/work/cu.1.1"
	echo copy >"$UP/gone"
	"$FMT" origin-set "$UP/gone" "$LO/gone"
	rm "$LO/gone"
	touch "$UP/.wh.nothing-below"
	mkdir "$UP/d" "$UP/e"
	setfattr -n trusted.overlay.opaque -v n "$UP/d"
	mkdir "$UP/e/.wh..wh..opq"
	mkdir "$UP/.wh.f"
}

@test "every kind of damage at once: exit 4, --repair exit 1, second run clean" {
	plant_all_fixable
	run_fsck "$UP"
	assert_fsck_status 4
	for code in HEADER_SHORT WORK_LEFTOVER ORIGIN_DANGLING WH_NOTHING OPQ_VALUE OPQ_MARKER_TYPE WH_EMPTY_DIR; do
		assert_output --partial "[$code]"
	done
	run_fsck --repair "$UP"
	assert_fsck_status 1
	refute_output --partial "not fixed"
	run_fsck "$UP"
	assert_fsck_status 0
	run "$FMT" check "$UP"
	assert_output current
}

@test "fixable and unfixable damage: --repair exits 5 (1|4), then 4 with only the unfixable" {
	plant_all_fixable
	mkdir "$UP/.wh.full" && echo x >"$UP/.wh.full/x"
	run_fsck --repair "$UP"
	assert_fsck_status 5
	run_fsck "$UP"
	assert_fsck_status 4
	assert_output --partial "[WH_BAD_TYPE]"
	assert_output --partial "1 problem found, 0 fixed, 1 left"
}

@test "--json: parses, lists each problem with code, path, fixable, fixed and the exit status" {
	plant_all_fixable
	run "$SFS" fsck --json "$UP"
	assert_fsck_status 4
	python3 -m json.tool <<<"$output" >/dev/null || fail "not JSON: $output"
	python3 - "$output" <<'EOF'
import json, sys
d = json.loads(sys.argv[1])
assert d["exit"] == 4 and d["found"] == d["left"] >= 7 and d["fixed"] == 0, d
codes = {p["code"] for p in d["problems"]}
assert {"HEADER_SHORT", "WORK_LEFTOVER", "ORIGIN_DANGLING", "WH_NOTHING"} <= codes, codes
for p in d["problems"]:
    assert p["path"].startswith("/") and p["fixable"] is True and p["fixed"] is False, p
EOF
	run "$SFS" fsck --json --repair "$UP"
	assert_fsck_status 1
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["exit"]==1 and d["left"]==0 and all(p["fixed"] for p in d["problems"]), d' "$output"
}

@test "names that are not UTF-8 or have control characters are valid JSON" {
	touch "$UP/.wh.$(printf 'bad\xffname\tx')"
	run "$SFS" fsck --json "$UP"
	assert_fsck_status 4
	python3 -m json.tool <<<"$output" >/dev/null || fail "not JSON: $output"
}

# ------------------------------------------------------------ lower branches

@test "--lower overrides lowers; an unusable --lower is an operational error (exit 8), nothing changed" {
	touch "$UP/.wh.f"
	# a lower that cannot be opened must not make the whiteout of f look
	# as if it hid nothing: nothing is checked
	sfs_snapshot "$UP"
	run_fsck --lower "$T/none" "$UP"
	assert_fsck_status 8
	run_fsck --repair --lower "$T/none" "$UP"
	assert_fsck_status 8
	sfs_assert_unchanged "$UP"
	run_fsck --lower "$LO" "$UP"
	assert_fsck_status 0
}

@test "unknown lower branches: whiteouts are not judged (note)" {
	rm "$UP/.stackfs/lowers"
	touch "$UP/.wh.nothing-below"
	run_fsck --repair "$UP"
	assert_fsck_status 0
	assert_output --partial "lower branches are unknown"
	[[ -e $UP/.wh.nothing-below ]]
}

@test "the recorded lower branch missing, or an empty directory in its place: no whiteout removed, exit 8, a message" {
	touch "$UP/.wh.f" "$UP/.wh.gone" "$UP/.wh.nothing-below"
	mknod "$UP/d" c 0 0
	sfs_snapshot "$UP"
	mv "$LO" "$T/lower.away"
	run_fsck --repair "$UP"
	assert_fsck_status 8
	assert_output --partial "is missing"
	sfs_assert_unchanged "$UP"
	mkdir "$LO"          # what an unmounted lower leaves: its mount point
	run_fsck --repair "$UP"
	assert_fsck_status 8
	assert_output --partial "is not the lower branch of the last mount"
	refute_output --partial "[WH_NOTHING]"
	sfs_assert_unchanged "$UP"
	run --separate-stderr "$SFS" fsck --json --repair "$UP"
	assert_fsck_status 8
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["exit"]==8 and d["fixed"]==0 and d["lowers"] is None and d["errors"], d' "$output"
	sfs_assert_unchanged "$UP"
	# the real one back: the whiteouts hide what they hid; only the one
	# that hides nothing goes
	rmdir "$LO"
	mv "$T/lower.away" "$LO"
	run_fsck --repair "$UP"
	assert_fsck_status 1
	[[ -e $UP/.wh.f && -e $UP/.wh.gone && -c $UP/d && ! -e $UP/.wh.nothing-below ]] ||
		fail "$(ls -la "$UP")"
}

@test "--lower that the registry does not record: judged, reported, not repaired without --force" {
	touch "$UP/.wh.f"
	mkdir "$T/other"
	sfs_snapshot "$UP"
	run_fsck --repair --lower "$T/other" "$UP"
	assert_fsck_status 4
	assert_output --partial "not a branch recorded"
	assert_output --partial "[WH_NOTHING]"
	sfs_assert_unchanged "$UP"
	run_fsck --repair --lower "$LO" "$UP"
	assert_fsck_status 0
	run_fsck --repair --force --lower "$T/other" "$UP"
	assert_fsck_status 1
	[[ ! -e $UP/.wh.f ]] || fail "--force did not repair"
}

@test "the last mount had no branch below: whiteouts are not judged (note)" {
	touch "$UP/.wh.f"
	rm -rf "$UP/.stackfs"
	fmt_mkmeta "$UP"
	sfs_snapshot "$UP"
	run_fsck --repair "$UP"
	assert_fsck_status 0
	assert_output --partial "no branch below"
	sfs_assert_unchanged "$UP"
}

@test "mounted: a rw branch below the highest one is checked against its own lower branches" {
	mkdir "$T/up2"
	sfs_mount "$UP:$T/up2=rw:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	touch "$T/up2/.wh.f" "$T/up2/.wh.nothing-below"
	run_fsck --repair "$T/up2"
	assert_fsck_status 1
	[[ -e $T/up2/.wh.f && ! -e $T/up2/.wh.nothing-below ]] || fail "$(ls -A "$T/up2")"
}

# ------------------------------------------------------------ version 0

@test "a version 0 metadata directory: noted, its staging leftovers still removed" {
	rm -rf "$UP/.stackfs"
	fmt_v0 "$UP"
	echo partial >"$UP/.stackfs/work/cu.1.1"
	fsck_twice "$UP" WORK_LEFTOVER --lower "$LO"
	assert_output --partial "format version 0"
	[[ ! -e $UP/.stackfs/header ]]
}

# ------------------------------------------------------------ in use

@test "--repair refuses while the branch's lock is held (exit 8); plain fsck warns" {
	touch "$UP/.wh.nothing-below"
	hold_lock
	sfs_snapshot "$UP"
	run_fsck --repair "$UP"
	assert_fsck_status 8
	assert_output --partial "branch is in use by a mounted stackfs"
	sfs_assert_unchanged "$UP"
	run_fsck "$UP"
	assert_fsck_status 4
	assert_output --partial "in use"
}

@test "mounted: --repair refuses while the branch is the rw branch of a live mount (exit 8)" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	touch "$UP/.wh.nothing-below"
	sfs_snapshot "$UP"
	run_fsck --repair "$UP"
	assert_fsck_status 8
	assert_output --partial "in use by a mounted stackfs"
	sfs_assert_unchanged "$UP"
	"$SFS" umount "$MNT"
	run_fsck --repair "$UP"
	assert_fsck_status 1
}

@test "mounted: a real copy-up's origin record is valid; dangling once the lower file is gone" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	echo more >>"$MNT/gone"
	"$SFS" umount "$MNT"
	run "$FMT" origin-get "$UP/gone"
	assert_output --partial "version 2"
	run_fsck "$UP"
	assert_fsck_status 0
	rm "$LO/gone"
	fsck_twice "$UP" ORIGIN_DANGLING
}

# ------------------------------------------------------------ command line

@test "usage errors exit 8" {
	run "$SFS" fsck
	assert_fsck_status 8
	run "$SFS" fsck --bogus "$UP"
	assert_fsck_status 8
	run "$SFS" fsck "$UP" "$LO"
	assert_fsck_status 8
	run "$SFS" fsck "$T/does-not-exist"
	assert_fsck_status 8
	run "$SFS" fsck --help
	assert_success
	assert_output --partial "--repair"
}

@test "progress line on a terminal, erased at the end; none when not a terminal" {
	sfs_require_cmd script
	for i in $(seq 200); do echo x >"$UP/f$i"; done
	run script -qec "$SFS fsck $UP" /dev/null
	assert_fsck_status 0
	assert_output --partial "entries checked"
	assert_output --partial $'\r\e[K'
	run_fsck "$UP"
	refute_output --partial "entries checked"
}

@test "--json: a path with bytes that are not UTF-8 comes back exact (\udcXX, surrogateescape)" {
	local name=$'.wh.odd\xff\xc3('
	touch "$UP/$name"
	"$SFS" fsck --json "$UP" >"$BATS_TEST_TMPDIR/out.json" || true
	run -0 python3 -c '
import json, os, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
print([p["path"].encode("utf-8", "surrogateescape") for p in d["problems"]])' "$BATS_TEST_TMPDIR/out.json"
	assert_output --partial "b'/.wh.odd\\xff\\xc3('"
}

@test "fsck of a stackfs mount point (or a directory in the view) is refused, naming the rw branches to check" {
	mkdir "$T/up2" "$LO/sub"
	sfs_mount "$UP:$T/up2=rw:$LO=ro" "$MNT"
	run -8 "$SFS" fsck "$MNT"
	assert_output --partial "a stackfs view"
	assert_output --partial "stackfs fsck $UP"
	assert_output --partial "stackfs fsck $T/up2"
	refute_output --partial "stackfs fsck $LO"
	refute_output --partial "clean"
	run -8 "$SFS" fsck --json "$MNT/sub"
	assert_output --partial "a stackfs view"
	# the branches themselves are still checked
	run -0 "$SFS" fsck "$UP"
	assert_output --partial "clean"
}
