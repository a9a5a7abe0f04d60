#!/usr/bin/env bats
# The on-disk format: a mount creates the metadata directory as docs/format.md
# specifies it, byte for byte (checked by an independent reader written
# from the spec, in helpers/format.bash); it refuses a newer or corrupt
# format with a one-line message naming the branch and the problem and
# changes nothing; version 0 is upgraded only with -o upgrade; the format
# parsers survive random, truncated and bit-flipped input under ASan.

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
	echo up >"$UP/u"
	echo lo >"$LO/l"
}

teardown() {
	sfs_cleanup
}

remount() {
	"$SFS" umount "$MNT"
	sfs_mount "$@"
}

# ------------------------------------------------------------ the library

# Builds the format tool with sanitizers (the makefile builds test tools
# without them) into $1.
build_sanitized() {
	local cc=${CC:-cc}
	command -v "$cc" >/dev/null || skip "needs a C compiler ($cc)"
	echo 'int main(void){return 0;}' >"$BATS_TEST_TMPDIR/t.c"
	"$cc" -fsanitize=address,undefined -o "$BATS_TEST_TMPDIR/t" "$BATS_TEST_TMPDIR/t.c" 2>/dev/null ||
		skip "$cc cannot build with -fsanitize=address,undefined"
	"$cc" -O1 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
		-D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -I"$SFS_REPO" \
		-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		-o "$1" "$SFS_REPO/tests/tools/format_fuzz.c" -lpthread
}

@test "format parsers survive random, truncated and bit-flipped input (ASan, UBSan)" {
	# seeds 1 to 4 of 10,000 inputs each, shared out among the suite's
	# filesystems (the parsers do not depend on them)
	local seed idx share
	read -r idx share < <(sfs_suite_share)
	build_sanitized "$BATS_TEST_TMPDIR/ff"
	for ((seed = idx + 1; seed <= 4; seed += share)); do
		run -0 env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$BATS_TEST_TMPDIR/ff" fuzz 10000 "$seed"
		assert_output --partial "0 failures"
	done
}

@test "format library on $SFS_FS (ASan): ids, allocated inodes, origin records, lowers, torn tail" {
	build_sanitized "$BATS_TEST_TMPDIR/ff"
	mkdir "$T/self"
	run -0 env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$BATS_TEST_TMPDIR/ff" selftest "$T/self"
	assert_output --partial "selftest: 0 failures"
	refute_output --partial "skipped"
}

@test "libFuzzer target of the format parsers (clang)" {
	sfs_once_per_suite last
	sfs_require_cmd clang
	clang -g -O1 -fsanitize=fuzzer,address,undefined -DSFS_LIBFUZZER -D_GNU_SOURCE \
		-I"$SFS_REPO" -o "$BATS_TEST_TMPDIR/lf" "$SFS_REPO/tests/tools/format_fuzz.c" -lpthread ||
		skip "clang cannot build a libFuzzer target here"
	mkdir "$BATS_TEST_TMPDIR/corpus"
	run -0 "$BATS_TEST_TMPDIR/lf" -runs=200000 -seed=1 -max_len=1024 "$BATS_TEST_TMPDIR/corpus"
}

# ------------------------------------------------------------ what a mount makes

@test "mount creates .stackfs (0700): header, registry, inomap, lowers, lock, work/, index/" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	[[ $(stat -c %a "$UP/.stackfs") == 700 ]]
	for f in header registry inomap lowers lock; do
		[[ -f $UP/.stackfs/$f ]] || fail "no .stackfs/$f"
	done
	[[ -d $UP/.stackfs/work && -d $UP/.stackfs/index ]]
	# nothing of it shows through the view
	run ls -A "$MNT"
	refute_output --partial .stackfs
	# and nothing but it is made
	run ls -A "$UP"
	assert_output $'.stackfs\nu'
	[[ ! -e $LO/.stackfs ]]
}

@test "header bytes as specified: magic, version 1, flags, UUID, ctime, reserved zero, CRC32C" {
	local before after
	before=$(date +%s)
	sfs_mount "$UP:$LO=ro" "$MNT"
	after=$(date +%s)
	run fmt_header_fields "$UP/.stackfs/header"
	assert_output --regexp "^535441434b465300 1 0 [0-9a-f]{32} [0-9]+ crc_ok res_zero 64$"
	local f=($output)
	((f[4] >= before && f[4] <= after)) || fail "ctime ${f[4]} not in [$before, $after]"
	# RFC 4122 version 4 UUID
	[[ ${f[3]:12:1} == 4 && ${f[3]:16:1} == [89ab] ]] || fail "not a v4 UUID: ${f[3]}"
	# the same UUID after a remount: the header is not rewritten
	remount "$UP:$LO=ro" "$MNT"
	run fmt_header_fields "$UP/.stackfs/header"
	assert_output --partial " ${f[3]} ${f[4]} crc_ok"
}

@test "header flag 1 with -o whiteout=overlay; the flag follows the mount's style" {
	sfs_mount "$UP:$LO=ro" "$MNT" whiteout=overlay
	run fmt_header_fields "$UP/.stackfs/header"
	assert_output --regexp "^535441434b465300 1 1 "
	remount "$UP:$LO=ro" "$MNT" whiteout=wh
	run fmt_header_fields "$UP/.stackfs/header"
	assert_output --regexp "^535441434b465300 1 0 "
}

@test "registry: ids of the filesystem and branches, kept across remount and reorder" {
	mkdir "$T/lo2"
	sfs_mount "$UP:$LO=ro" "$MNT"
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_line --index 0 --regexp '^head_ok [0-9]+ [0-9]+$'
	refute_output --partial crc_bad
	local first=$output
	# each branch and filesystem has one id, ids from 1
	assert_line "1 1 crc_ok"
	assert_line "2 1 crc_ok"
	remount "$UP:$LO=ro" "$MNT"
	run fmt_registry_records "$UP/.stackfs/registry"
	assert_output "$first"
	# another branch, then the order changed: old ids stay, the new one is added
	remount "$UP:$T/lo2=ro:$LO=ro" "$MNT"
	remount "$UP:$LO=ro:$T/lo2=ro" "$MNT"
	run fmt_registry_records "$UP/.stackfs/registry"
	refute_output --partial crc_bad
	local line
	while read -r line; do
		[[ $line == head_ok* ]] && continue
		assert_line "$line"
	done <<<"$first"
	(( ${#lines[@]} == $(wc -l <<<"$first") + 1 )) || fail "expected one new record: $output"
}

@test "lowers: the branches of the last mount, highest first, absolute" {
	mkdir "$T/lo 2"
	sfs_mount "$UP:$LO=ro:$T/lo 2=ro" "$MNT"
	run cat "$UP/.stackfs/lowers"
	assert_output "$(printf 'rw %s\nro %s\nro %s' "$(realpath "$UP")" "$(realpath "$LO")" "$(realpath "$T/lo 2")")"
}

@test "inomap: a valid file header and whole records" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	ls -lR "$MNT" >/dev/null
	fmt_py '
d = open(sys.argv[1], "rb").read()
assert len(d) >= 32 and len(d) % 32 == 0, len(d)
magic, ver, rs = struct.unpack("<8sII", d[:16])
assert magic == b"SFSINO\0\0" and ver == 1 and rs == 32
assert struct.unpack("<I", d[28:32])[0] == crc32c(d[:28])
for i in range(1, len(d) // 32):
    r = d[32 * i:32 * (i + 1)]
    fs, res, ino, uino, res2, crc = struct.unpack("<IIQQII", r)
    assert crc == crc32c(r[:28]) and uino == 0xFF00000000000000 | i, (i, hex(uino))
' "$UP/.stackfs/inomap"
}

@test "fsck of a branch a mount made is clean" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	echo more >>"$MNT/l"
	rm "$MNT/u"
	"$SFS" umount "$MNT"
	run "$SFS" fsck "$UP"
	assert_success
	assert_output --partial ": clean"
}

# ------------------------------------------------------------ refusals

@test "refused: header of format version 2 (newer), nothing changed" {
	mkdir -p "$UP/.stackfs/work"
	"$FMT" header "$UP/.stackfs/header" 2
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" "version 2" "newer"
}

@test "refused: header with a flipped checksum bit, nothing changed" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	fmt_flip_bit "$UP/.stackfs/header" 62 4
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" "header" "checksum"
}

@test "refused: truncated header, nothing changed" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	truncate -s 37 "$UP/.stackfs/header"
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" "header" "truncated"
	: >"$UP/.stackfs/header"
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" "header"
}

@test "refused: a corrupt registry record, nothing changed" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	fmt_flip_bit "$UP/.stackfs/registry" $((168 + 10)) 1
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" "registry" "record 1"
}

@test "refused: .stackfs that is a symlink or a file, nothing changed" {
	mkdir "$T/elsewhere"
	ln -s "$T/elsewhere" "$UP/.stackfs"
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" ".stackfs"
	[[ -z $(ls -A "$T/elsewhere") ]]
	rm "$UP/.stackfs"
	echo x >"$UP/.stackfs"
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" ".stackfs"
}

@test "version 0 (.stackfs with work/ only): refused without -o upgrade, upgraded with it" {
	fmt_v0 "$UP"
	echo stale >"$UP/.stackfs/work/leftover"
	fmt_refused "$UP:$LO=ro" "$MNT"
	fmt_names "$UP" "version 0" "upgrade"
	sfs_mount "$UP:$LO=ro" "$MNT" upgrade
	run fmt_header_fields "$UP/.stackfs/header"
	assert_output --regexp "^535441434b465300 1 0 .* crc_ok res_zero 64$"
	[[ -d $UP/.stackfs/work && ! -e $UP/.stackfs/work/leftover ]]
	# from now on a plain mount
	remount "$UP:$LO=ro" "$MNT"
}

@test "refused: a second mount of a rw branch in use (its lock is held)" {
	mkdir -p "$T/mnt2"
	sfs_mount "$UP:$LO=ro" "$MNT"
	local MNT1=$MNT
	MNT=$T/mnt2
	sfs_snapshot "$UP"
	sfs_record stackfs "$MNT"
	run --separate-stderr "$SFS" mount "$UP:$LO=ro" "$MNT"
	assert_refused
	fmt_names "$UP" "in use"
	sfs_is_mounted "$MNT" && fail "$MNT got mounted"
	run cat "$MNT1/u"
	assert_output up
}

@test "a torn inomap tail (interrupted append) does not stop a mount, and is cut" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	printf 'torn' >>"$UP/.stackfs/inomap"
	sfs_mount "$UP:$LO=ro" "$MNT"
	(( $(stat -c %s "$UP/.stackfs/inomap") % 32 == 0 )) || fail "tail not cut"
}

# bounded CMD...: runs CMD with 20 s and 1 GiB of address space at most
# (ASan reserves terabytes of shadow: no address limit there), its peak
# RSS (KiB) in $rss; stdout in $output, stderr in $stderr (of `run`).
# rss_max: the RSS a run may reach (an ASan build has its own overhead).
bounded() {
	local vlimit='ulimit -v 1048576;'
	grep -q __asan_init "$SFSD" 2>/dev/null && vlimit=
	run --separate-stderr timeout 20 /usr/bin/time -f 'rss=%M' -o "$BATS_TEST_TMPDIR/time" \
		bash -c "$vlimit"' exec "$@"' bounded "$@"
	rss=$(sed -n 's/^rss=//p' "$BATS_TEST_TMPDIR/time")
	((status != 124)) || fail "$* did not finish within 20 s"
}
rss_max() {
	if grep -q __asan_init "$SFSD" 2>/dev/null; then echo 262144; else echo 65536; fi
}

@test "a sparse inomap of 1 TiB, an oversized registry: mount refuses at once naming the limit, fsck reports it, memory stays small" {
	sfs_require_cmd timeout
	[[ -x /usr/bin/time ]] || skip "needs /usr/bin/time"
	local f size
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	for f in inomap registry; do
		cp -a "$UP/.stackfs/$f" "$T/$f.good"
		truncate -s 1T "$UP/.stackfs/$f"
		size=$(stat -c %s "$UP/.stackfs/$f")
		sfs_record stackfs "$MNT"
		bounded "$SFS" mount "$UP:$LO=ro" "$MNT"
		((status != 0)) || fail "mounted with a 1 TiB $f"
		sfs_is_mounted "$MNT" && fail "$MNT got mounted"
		((${#stderr_lines[@]} == 1)) || fail "message is not one line: $stderr"
		[[ $stderr == *"$UP"* && $stderr == *".stackfs/$f"* && $stderr == *limit* ]] ||
			fail "message does not name the branch, $f and the limit: $stderr"
		((rss < $(rss_max))) || fail "mount's RSS was $rss KiB"
		bounded "$SFS" fsck "$UP"
		((status == 4)) || fail "fsck exit $status: $output $stderr"
		[[ $output == *"/.stackfs/$f: "*"[META_TOO_LARGE]"* ]] || fail "fsck: $output"
		((rss < $(rss_max))) || fail "fsck's RSS was $rss KiB"
		[[ $(stat -c %s "$UP/.stackfs/$f") == "$size" ]] || fail "$f changed"
		mv "$T/$f.good" "$UP/.stackfs/$f"
	done
	truncate -s 1T "$UP/.stackfs/lowers"
	bounded "$SFS" fsck "$UP"
	((status == 4)) || fail "fsck exit $status: $output $stderr"
	[[ $output == *"/.stackfs/lowers: "*"[LOWERS_BAD]"* ]] || fail "fsck: $output"
	((rss < $(rss_max))) || fail "fsck's RSS was $rss KiB"
	sfs_mount "$UP:$LO=ro" "$MNT"
	[[ $(cat "$MNT/l") == lo ]]
}
