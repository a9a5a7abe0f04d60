# Helpers for the on-disk format tests (90-format, 92-fsck). Load after
# helpers/common.
#
# FMT is the format tool (tests/tools/format_fuzz.c): it makes valid
# metadata directories, headers and origin records, so that the tests can
# damage them byte by byte.

FMT=$TOOLS/format_fuzz

# CRC32C (Castagnoli) written independently of whiteout/crc32c.c, bit by
# bit from docs/format.md "On-disk format", so the tests read the format as a second reader would.
# fmt_py HEX... or with stdin: python3 with crc32c() defined.
_FMT_PY_CRC='
def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
assert crc32c(b"123456789") == 0xE3069283
'

# fmt_py SCRIPT ARGS...: runs python3 with crc32c() and struct imported.
fmt_py() {
	local script=$1
	shift
	python3 -c "import struct, sys
$_FMT_PY_CRC
$script" "$@"
}

# fmt_header_fields FILE: prints "magic version flags uuid ctime crc_ok
# reserved_zero size" of a header, parsed by the spec alone.
fmt_header_fields() {
	fmt_py '
d = open(sys.argv[1], "rb").read()
magic, ver, flags, uuid, ctime, res, crc = struct.unpack("<8sII16sQ20sI", d[:64])
print(magic.hex(), ver, flags, uuid.hex(), ctime,
      "crc_ok" if crc == crc32c(d[:60]) else "crc_bad",
      "res_zero" if res == bytes(20) else "res_nonzero", len(d))
' "$1"
}

# fmt_registry_records FILE: "head_ok next_fs next_branch" then one line
# per record "kind id crc_ok".
fmt_registry_records() {
	fmt_py '
d = open(sys.argv[1], "rb").read()
assert len(d) % 168 == 0, "registry size %d" % len(d)
h = d[:168]
magic, ver, rs, nf, nb = struct.unpack("<8sIIII", h[:24])
ok = magic == b"SFSREG\0\0" and ver == 1 and rs == 168 and struct.unpack("<I", h[164:168])[0] == crc32c(h[:164])
print("head_ok" if ok else "head_bad", nf, nb)
for i in range(1, len(d) // 168):
    r = d[168 * i:168 * (i + 1)]
    kind, rid = struct.unpack("<II", r[:8])
    good = struct.unpack("<I", r[164:168])[0] == crc32c(r[:164])
    print(kind, rid, "crc_ok" if good else "crc_bad")
' "$1"
}

# fmt_flip_bit FILE OFFSET [BIT]: flips one bit of FILE in place.
fmt_flip_bit() {
	fmt_py '
f, off, bit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = bytearray(open(f, "rb").read())
d[off] ^= 1 << bit
open(f, "r+b").write(bytes(d))
' "$1" "$2" "${3:-0}"
}

# fmt_mkmeta [--overlay] BRANCH [LOWER...]: a valid version 1 metadata
# directory in BRANCH (as a mount makes it), with lowers = BRANCH, LOWERs.
fmt_mkmeta() {
	"$FMT" mkmeta "$@"
}

# fmt_v0 BRANCH: a metadata directory of version 0 (work/ only).
fmt_v0() {
	mkdir -p "$1/.stackfs/work"
	chmod 700 "$1/.stackfs"
}

# run_fsck ARGS...: `run stackfs fsck ARGS` with stdout and stderr merged.
# The exit status is checked by the caller (run -N is not used: the
# status is part of what is tested and shown on failure).
run_fsck() {
	run "$SFS" fsck "$@"
}

# assert_fsck_status N: the last run_fsck exited N; shows output if not.
assert_fsck_status() {
	if ((status != $1)); then
		fail "$(printf 'stackfs fsck exited %s, expected %s; output:\n%s' "$status" "$1" "$output")"
	fi
}

# fsck_twice BRANCH CODE [FSCK ARGS...]: the e2fsprogs pattern: fsck finds
# CODE (exit 4), --repair fixes it (exit 1), a second fsck finds nothing
# (exit 0).
fsck_twice() {
	local b=$1 code=$2
	shift 2
	run_fsck "$@" "$b"
	assert_fsck_status 4
	assert_output --partial "[$code]"
	run_fsck --repair "$@" "$b"
	assert_fsck_status 1
	assert_output --partial "[$code]"
	assert_output --partial "fixed:"
	run_fsck "$@" "$b"
	assert_fsck_status 0
	assert_output --partial ": clean"
}

# fmt_tree_state DIR: like sfs_tree_state, plus the xattrs of every entry
# (origin and opaque records are xattrs).
fmt_tree_state() {
	sfs_tree_state "$1"
	(cd "$1" && getfattr -R -P -h -d -m - -e hex . 2>/dev/null)
}

# fmt_refused ARGS...: `stackfs mount ARGS` is refused with a one-line
# message on stderr, $T (the branches, metadata included) is unchanged
# byte for byte, and $MNT is not mounted.
fmt_refused() {
	sfs_snapshot "$T"
	sfs_record stackfs "$MNT"
	run --separate-stderr "$SFS" mount "$@"
	assert_refused
	[[ -n $stderr ]] || fail "no message on stderr"
	((${#stderr_lines[@]} == 1)) || fail "message is not one line: $stderr"
	sfs_is_mounted "$MNT" && fail "$MNT got mounted"
	sfs_assert_unchanged "$T"
}

# fmt_names WORD...: the message of the last refusal names each WORD.
fmt_names() {
	local w
	for w in "$@"; do
		[[ $stderr == *"$w"* ]] || fail "message does not name '$w': $stderr"
	done
}
