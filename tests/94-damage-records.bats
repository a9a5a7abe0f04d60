#!/usr/bin/env bats
# The checksum rule for the records of entries and of commits
# (docs/format.md "On-disk format"; 93-damage walks the header, registry and inode map):
# each record a real mount or commit made is damaged in turn, and for
# every position fsck reports it with its code (exit 4, never "newer",
# "empty" or "absent"), the view answers EUCLEAN for the entry or the
# mount refuses the branch, --repair mends it (exit 1) and a second fsck
# is clean. Records with a checksum (origin, journal, marker) have each
# byte flipped; those without one (redirect, device marker, workdir,
# lowers, kept times) each byte the validation covers.

load helpers/common
load helpers/format
load helpers/copyup
load helpers/diff
load helpers/faults
load helpers/commitcrash

setup_file() {
	sfs_setup_file
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	read -r SHARE_I SHARE_N < <(sfs_suite_share)
}

# mine K: whether walk position K is this run's: the suite's runs (one
# per filesystem) share the long walks out, and together try every one.
mine() {
	(($1 % SHARE_N == SHARE_I))
}

teardown() {
	sfs_cleanup
}

# xattr_hex PATH NAME: the value, in hex (not followed).
xattr_hex() {
	fmt_py 'import os
print(os.getxattr(sys.argv[1], sys.argv[2], follow_symlinks=False).hex())' "$1" "$2"
}

# xattr_put PATH NAME HEX
xattr_put() {
	fmt_py 'import os
os.setxattr(sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3]), follow_symlinks=False)' "$1" "$2" "$3"
}

# hex_flip HEX POS: HEX with byte POS xor 0xff.
hex_flip() {
	fmt_py 'b = bytearray.fromhex(sys.argv[1]); b[int(sys.argv[2])] ^= 0xFF; print(b.hex())' "$1" "$2"
}

# hex_nul HEX POS: HEX with byte POS made 0.
hex_nul() {
	fmt_py 'b = bytearray.fromhex(sys.argv[1]); b[int(sys.argv[2])] = 0; print(b.hex())' "$1" "$2"
}

# damaged CODE [FSCK_ARGS...]: fsck finds CODE, exit 4, nothing "newer".
damaged() {
	local code=$1
	shift
	run "$SFS" fsck "$@" "$UP"
	[[ $status -eq 4 && $output != *newer* && $output == *"[$code]"* ]] ||
		bad+=("$what: fsck exit $status: ${output//$'\n'/ | }")
}

# answers_euclean PATH: through a mount of UP:LO, stat PATH fails with
# EUCLEAN (the daemon never shows the entry as if it had no record).
answers_euclean() {
	if ! sfs_mount "$UP:$LO=ro" "$MNT" "${MOUNT_OPTS:-}"; then
		bad+=("$what: the mount failed")
		return
	fi
	run stat -c %i "$MNT/$1"
	[[ $status -ne 0 && $output == *"Structure needs cleaning"* ]] ||
		bad+=("$what: stat $1 answered $status: $output")
	"$SFS" umount "$MNT"
}

# mended [FSCK_ARGS...]: --repair fixes (exit 1), then fsck is clean.
mended() {
	run "$SFS" fsck --repair "$@" "$UP"
	[[ $status -eq 1 ]] || bad+=("$what: --repair exit $status: ${output//$'\n'/ | }")
	run "$SFS" fsck "$@" "$UP"
	[[ $status -eq 0 ]] || bad+=("$what: second fsck exit $status: ${output//$'\n'/ | }")
}

report() {
	echo "# $1: $2 damaged, ${#bad[@]} wrong" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}")"
}

@test "every byte of a copy-up's origin record flipped: ORIGIN_CORRUPT, EUCLEAN in the view, the byte put back" {
	local name=trusted.stackfs.origin good pos n what bad=()
	echo lower >"$LO/f"
	sfs_mount "$UP:$LO=ro" "$MNT"
	echo more >>"$MNT/f"
	"$SFS" umount "$MNT"
	good=$(xattr_hex "$UP/f" $name)
	n=$((${#good} / 2))
	((n >= 36)) || fail "origin record of $n bytes"
	for ((pos = 0; pos < n; pos++)); do
		mine $pos || continue
		what="byte $pos"
		xattr_put "$UP/f" $name "$(hex_flip "$good" $pos)"
		damaged ORIGIN_CORRUPT
		answers_euclean f
		mended
		[[ $(xattr_hex "$UP/f" $name) == "$good" ]] || bad+=("$what: not put back as it was")
	done
	report origin "$(((n + SHARE_N - 1 - SHARE_I) / SHARE_N)) of $n bytes"
	# two bytes damaged: no mend; the record goes, the file keeps its data
	xattr_put "$UP/f" $name "$(hex_flip "$(hex_flip "$good" 3)" 20)"
	run "$SFS" fsck --repair "$UP"
	assert_equal "$status" 1
	assert_output --partial "no single byte mends it"
	run getfattr -h -n $name "$UP/f"
	assert_failure
	assert_equal "$(cat "$UP/f")" "$(printf 'lower\nmore')"
}

@test "every byte of a lower-name record flipped: LOWERNAME_CORRUPT, the entry still shown (a hint), the record removed" {
	local name=trusted.stackfs.lowername good pos n what bad=()
	echo lower >"$LO/f"
	sfs_mount "$UP:$LO=ro" "$MNT"
	echo more >>"$MNT/f"
	"$SFS" umount "$MNT"
	# on ext4 and XFS the origin's handle opens: the record is a FUSE
	# lower's, made here by hand
	"$FMT" lowername-set "$UP/f" d/f
	good=$(xattr_hex "$UP/f" $name)
	n=$((${#good} / 2))
	((n == 11)) || fail "lower-name record of $n bytes"
	for ((pos = 0; pos < n; pos++)); do
		mine $pos || continue
		what="byte $pos"
		xattr_put "$UP/f" $name "$(hex_flip "$good" $pos)"
		damaged LOWERNAME_CORRUPT
		if sfs_mount "$UP:$LO=ro" "$MNT"; then
			[[ $(cat "$MNT/f" 2>&1) == $'lower\nmore' ]] || bad+=("$what: the view shows '$(cat "$MNT/f" 2>&1)'")
			"$SFS" umount "$MNT"
		else
			bad+=("$what: the mount failed")
		fi
		mended
		run getfattr -h -n $name "$UP/f"
		((status != 0)) || bad+=("$what: the record was not removed")
		"$FMT" lowername-set "$UP/f" d/f
	done
	report "lower name" "$(((n + SHARE_N - 1 - SHARE_I) / SHARE_N)) of $n bytes"
}

@test "every byte of an index entry's origin flipped: ORIGIN_CORRUPT, never an orphan unlinked; the other lower name answers EUCLEAN" {
	local name=trusted.stackfs.origin good pos n what bad=() idx
	echo shared >"$LO/a"
	ln "$LO/a" "$LO/b"
	sfs_mount "$UP:$LO=ro" "$MNT"
	echo more >>"$MNT/a"
	"$SFS" umount "$MNT"
	idx=$(find "$UP/.stackfs/index" -type f | head -n 1)
	[[ -n $idx ]] || fail "no index entry"
	# the copy placed at a is the index entry's inode: one record for both
	rm "$UP/a"
	good=$(xattr_hex "$idx" $name)
	n=$((${#good} / 2))
	for ((pos = 0; pos < n; pos++)); do
		mine $pos || continue
		what="byte $pos"
		xattr_put "$idx" $name "$(hex_flip "$good" $pos)"
		damaged ORIGIN_CORRUPT
		answers_euclean b
		mended
		[[ -f $idx && $(xattr_hex "$idx" $name) == "$good" ]] || bad+=("$what: not put back")
	done
	report "index origin" "$(((n + SHARE_N - 1 - SHARE_I) / SHARE_N)) of $n bytes"
	# two bytes: left (the copy may be all the lower names show), kept
	xattr_put "$idx" $name "$(hex_flip "$(hex_flip "$good" 5)" 30)"
	run "$SFS" fsck --repair "$UP"
	assert_equal "$status" 4
	assert_output --partial "[ORIGIN_CORRUPT]"
	refute_output --partial "INDEX_ORPHAN"
	[[ -f $idx ]] || fail "the index entry was removed"
	# the diff of the union refuses rather than show b as the lower file
	run "$SFS" diff "$UP"
	assert_failure
	assert_output --partial "origin record is damaged"
}

# A moved directory's redirect (the daemon's rename), then each value
# that is no path: fsck REDIRECT_BAD, the directory answers EUCLEAN, and
# --repair removes it, the directory made opaque (its own entries only).
@test "a redirect that is no path (each byte made NUL, '', '.', '..', 'a/b', '/', '//d', '/d/./x', 256-byte name): REDIRECT_BAD, EUCLEAN, repaired opaque" {
	local name good what bad=() v n=0 vals=()
	mkdir "$LO/d"
	echo x >"$LO/d/inner"
	sfs_mount "$UP:$LO=ro" "$MNT"
	mv "$MNT/d" "$MNT/e"
	touch "$MNT/e/own"
	"$SFS" umount "$MNT"
	name=$(getfattr -h -d -m '.*redirect' --absolute-names "$UP/e" | sed -n 's/^\([^=]*redirect\)=.*/\1/p')
	[[ -n $name ]] || fail "no redirect on the moved directory"
	good=$(xattr_hex "$UP/e" "$name")
	for ((i = 0; i < ${#good} / 2; i++)); do
		vals+=("$(hex_nul "$good" $i)")
	done
	for v in "" . .. a/b / //d /d/./x "/$(printf 'n%.0s' {1..256})"; do
		vals+=("$(fmt_py 'print(sys.argv[1].encode().hex())' "$v")")
	done
	for v in "${vals[@]}"; do
		what="value '$v'"
		n=$((n + 1))
		rm -rf "$UP/e"
		mkdir "$UP/e"
		touch "$UP/e/own"
		xattr_put "$UP/e" "$name" "$v"
		damaged REDIRECT_BAD
		answers_euclean e/own
		mended
		sfs_mount "$UP:$LO=ro" "$MNT"
		[[ $(ls "$MNT/e") == own ]] || bad+=("$what: after the repair e shows: $(ls "$MNT/e" | tr '\n' ' ')")
		"$SFS" umount "$MNT"
	done
	report redirect "$n values"
}

@test "a real 0:0 device's marker damaged (empty, 'n', 'Y', 'yy', NUL): DEVICE_BAD, EUCLEAN, written again" {
	local what bad=() v n=0
	sfs_mount "$UP:$LO=ro" "$MNT"
	mknod "$MNT/dev" c 0 0
	"$SFS" umount "$MNT"
	[[ $(xattr_hex "$UP/dev" trusted.stackfs.device) == 79 ]] || fail "no device marker"
	for v in "" 6e 59 7979 00; do
		what="value '$v'"
		n=$((n + 1))
		xattr_put "$UP/dev" trusted.stackfs.device "$v"
		damaged DEVICE_BAD
		answers_euclean dev
		mended
		[[ $(xattr_hex "$UP/dev" trusted.stackfs.device) == 79 ]] || bad+=("$what: not written again")
	done
	report "device marker" "$n values"
	sfs_mount "$UP:$LO=ro" "$MNT"
	assert_equal "$(stat -c '%F %t:%T' "$MNT/dev")" "character special file 0:0"
}

# The times a fill keeps on a metacopy: 25 bytes, no checksum; each byte
# the validation covers (the version, the size, each nanosecond field's
# high byte) damaged: METACOPY_TIMES_BAD, the view answers EUCLEAN (it
# would show the time of a killed fill), --repair drops the record.
@test "a metacopy's kept times damaged (version, size, nanoseconds): METACOPY_TIMES_BAD, EUCLEAN, dropped" {
	local name=trusted.stackfs.mctimes what bad=() v n=0 good
	echo data >"$LO/f"
	sfs_mount "$UP:$LO=ro" "$MNT"
	chmod 600 "$MNT/f"
	"$SFS" umount "$MNT"
	getfattr -h -n trusted.stackfs.metacopy "$UP/f" >/dev/null 2>&1 ||
		getfattr -h -n trusted.overlay.metacopy "$UP/f" >/dev/null 2>&1 || fail "no metacopy"
	good=$(fmt_py 'print((bytes([1]) + struct.pack("<qI", 1500000000, 5) + struct.pack("<qI", 1500000001, 7)).hex())')
	for v in "$(hex_flip "$good" 0)" "${good:0:48}" "${good}00" "$(hex_flip "$good" 12)" "$(hex_flip "$good" 24)" ""; do
		what="value '$v'"
		n=$((n + 1))
		xattr_put "$UP/f" $name "$v"
		damaged METACOPY_TIMES_BAD
		answers_euclean f
		mended
		run getfattr -h -n $name "$UP/f"
		[[ $status -ne 0 ]] || bad+=("$what: the record is still there")
	done
	report "kept times" "$n values"
	# a whole record is put back on the file (a fill killed before)
	xattr_put "$UP/f" $name "$good"
	run "$SFS" fsck --repair "$UP"
	assert_output --partial "[METACOPY_TIMES_KEPT]"
	assert_equal "$(stat -c %Y "$UP/f")" 1500000001
}

@test "the root's workdir record damaged (each byte made NUL, the slash flipped): WORKDIR_CORRUPT, every mount refuses, --repair --workdir writes it again" {
	local name=trusted.stackfs.workdir WD=$T/work good what bad=() v vals=() n=0
	mkdir -p "$WD"
	sfs_record stackfs "$MNT"
	"$SFS" mount -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	touch "$MNT/x"
	"$SFS" umount "$MNT"
	good=$(xattr_hex "$UP" $name)
	for ((i = 0; i < ${#good} / 2; i++)); do
		vals+=("$(hex_nul "$good" $i)")
	done
	vals+=("$(hex_flip "$good" 0)")
	for v in "${vals[@]}"; do
		n=$((n + 1))
		mine $n || continue
		what="value '$v'"
		xattr_put "$UP" $name "$v"
		damaged WORKDIR_CORRUPT
		run "$SFS" fsck --repair "$UP"
		[[ $status -eq 4 ]] || bad+=("$what: --repair without --workdir exit $status")
		run "$SFS" mount -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
		if [[ $status -eq 0 ]]; then
			"$SFS" umount "$MNT"
			bad+=("$what: mounted with workdir=")
		elif [[ $output != *corrupt* ]]; then
			bad+=("$what: refused as: $output")
		fi
		run "$SFS" mount "$UP:$LO=ro" "$MNT"
		if [[ $status -eq 0 ]]; then
			"$SFS" umount "$MNT"
			bad+=("$what: mounted")
		fi
		mended --workdir "$WD"
		[[ $(xattr_hex "$UP" $name) == "$good" ]] || bad+=("$what: not written again as it was")
	done
	report "workdir record" "$(((n + SHARE_N - SHARE_I) / SHARE_N)) of $n values"
}

# lowers has no checksum: its paths are checked against the registry's
# (checksummed) identities, and a byte of a path (or a line's newline:
# two lines made one) flipped leaves a list that parses, naming no
# recorded branch (fsck then checks nothing against it: docs/format.md "lowers"). Each
# byte its syntax covers is damage: both letters, the space and the
# first slash of each line, the last newline; and an empty file.
@test "lowers: each byte of its syntax damaged, and an empty file: LOWERS_BAD, diff refuses, removed" {
	local good what bad=() pos n=0 line
	sfs_mount "$UP:$LO=ro" "$MNT"
	touch "$MNT/x"
	"$SFS" umount "$MNT"
	cp "$UP/.stackfs/lowers" "$BATS_TEST_TMPDIR/lowers"
	good=$(od -An -tx1 "$BATS_TEST_TMPDIR/lowers" | tr -d ' \n')
	# per line: r, w/o, the space, the first slash, the newline
	local syntax=() off=0
	while IFS= read -r line; do
		syntax+=($off $((off + 1)) $((off + 2)) $((off + 3)))
		off=$((off + ${#line} + 1))
	done <"$BATS_TEST_TMPDIR/lowers"
	syntax+=($((off - 1)))
	for pos in "${syntax[@]}" empty; do
		what="byte $pos"
		n=$((n + 1))
		if [[ $pos == empty ]]; then
			: >"$UP/.stackfs/lowers"
		else
			fmt_py 'open(sys.argv[2], "wb").write(bytes.fromhex(sys.argv[1]))' \
				"$(hex_flip "$good" "$pos")" "$UP/.stackfs/lowers"
		fi
		damaged LOWERS_BAD
		run "$SFS" diff "$UP"
		[[ $status -ne 0 && $output == *lowers* ]] || bad+=("$what: diff answered $status: $output")
		mended
		cp "$BATS_TEST_TMPDIR/lowers" "$UP/.stackfs/lowers"
	done
	report lowers "$n positions"
}

# A commit killed part way leaves its journal (in the rw branch) and its
# marker (in the lower one). 64 bytes of each flipped in turn: fsck names
# COMMIT_CORRUPT and the very byte, the mount refuses (the file is then
# put back). Then for 4 bytes of each, on a fresh killed commit (its
# journal names the inodes it moved: a copy would not do), --repair puts
# the byte back and recovers the commit, both branches are clean and the
# union is as before.
# no_dir_times: a cc_view listing without the times of directories.
no_dir_times() {
	sed 's/^\([^|]*|d|.*|\)[0-9.]*$/\1-/'
}

# killed_commit: a fresh template, its commit killed where both the
# journal and the marker are left (call 60 on; the count can shift by a
# call between runs).
killed_commit() {
	local at
	for at in $(seq 60 80); do
		cc_fresh
		cc_commit_fi $at kill || true
		[[ -f $UP/.stackfs/commit && -f $LO/.stackfs/commit-from ]] && return 0
	done
	echo "no kill point left a journal and a marker" >&2
	return 1
}

@test "64 bytes of an unfinished commit's journal and of its marker flipped: COMMIT_CORRUPT at that byte, refused; mended and recovered" {
	local what bad=() pos n=0 rec dir size k out
	fi_require_plain_build
	cc_template wh
	killed_commit
	for rec in commit commit-from; do
		dir=$([[ $rec == commit ]] && echo "$UP" || echo "$LO")
		cp "$dir/.stackfs/$rec" "$BATS_TEST_TMPDIR/$rec"
		size=$(stat -c %s "$dir/.stackfs/$rec")
		for ((k = 0; k < 64 && k < size; k++)); do
			pos=$((k * size / (size < 64 ? size : 64)))
			mine $k || continue
			what="$rec byte $pos"
			n=$((n + 1))
			fmt_py 'p, i = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[i] ^= 0xFF; open(p, "wb").write(b)' "$dir/.stackfs/$rec" "$pos"
			run "$SFS" fsck "$dir"
			[[ $status -eq 4 && $output == *"[COMMIT_CORRUPT]"* && $output == *"byte $pos is damaged"* &&
				$output != *newer* ]] || bad+=("$what: fsck exit $status: ${output//$'\n'/ | }")
			run "$SFS" mount "$UP:$LO" "$MNT"
			if [[ $status -eq 0 ]]; then
				"$SFS" umount "$MNT"
				bad+=("$what: mounted")
			fi
			cp "$BATS_TEST_TMPDIR/$rec" "$dir/.stackfs/$rec"
		done
	done
	report "journal and marker (this run's share)" "$n bytes"
	k=0
	for rec in commit commit-from; do
		size=$(stat -c %s "$BATS_TEST_TMPDIR/$rec")
		for pos in 0 9 $((size / 2)) $((size - 1)); do
			k=$((k + 1))
			mine $k || continue
			what="$rec byte $pos (recovered)"
			killed_commit
			dir=$([[ $rec == commit ]] && echo "$UP" || echo "$LO")
			fmt_py 'p, i = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[i] ^= 0xFF; open(p, "wb").write(b)' "$dir/.stackfs/$rec" "$pos"
			run "$SFS" fsck --repair "$dir"
			[[ $status -eq 1 && $output == *"[COMMIT_CORRUPT]"* ]] ||
				bad+=("$what: --repair exit $status: ${output//$'\n'/ | }")
			run "$SFS" fsck "$dir"
			[[ $status -eq 0 ]] || bad+=("$what: fsck after: exit $status: ${output//$'\n'/ | }")
			[[ ! -e $UP/.stackfs/commit && ! -e $LO/.stackfs/commit-from ]] ||
				bad+=("$what: the journal or the marker is left")
			# (directories' mtimes aside: the upper's recovery at these
			# points sets them anew with no damage at all, a bug of the
			# recovery docs/format.md "On-disk format" records; the content is compared)
			out=$(diff <(no_dir_times <"$CC/before") <(cc_view "$UP:$LO" | no_dir_times)) ||
				bad+=("$what: the union differs: $(head -n 8 <<<"$out")")
		done
	done
	report "journal and marker, recovered (this run's share)" "$(((8 + SHARE_N - 1 - SHARE_I) / SHARE_N))"
}
