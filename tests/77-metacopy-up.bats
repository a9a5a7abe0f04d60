#!/usr/bin/env bats
# Metadata-only copy-up (issue 19): chmod, chown, utimes, setxattr,
# setfacl and chattr of a lower regular file copy its metadata alone into
# the rw branch: a sparse file of the lower size, with the origin record
# and a metacopy mark, no data. Every reader of the data sees the lower
# bytes; the first open for write (or truncate) brings the data in; the
# mark is the kernel's with -o whiteout=overlay, so kernel overlayfs
# (metacopy=on) reads the upper the same; it is the default, and
# -o metacopy=off copies whole.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd getfattr
	sfs_require_cmd python3
	sfs_setup_branches
	LOG=$BATS_TEST_TMPDIR/daemon.log
	head -c 3145728 /dev/urandom >"$LO/big"
	echo small >"$LO/small"
	chmod 0644 "$LO/big" "$LO/small"
}

teardown() {
	sfs_cleanup
}

# no_data FILE: FILE (a branch's) has no data extent of its own.
no_data() {
	python3 - "$1" <<'PY' || fail "$1 holds data: $(stat -c '%s %b' "$1")"
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.lseek(fd, 0, os.SEEK_DATA)
except OSError as e:
    sys.exit(0 if e.errno == errno.ENXIO else 2)
sys.exit(1)
PY
}

# is_metacopy FILE: FILE carries a metacopy mark (either style).
is_metacopy() {
	getfattr -h -n trusted.stackfs.metacopy "$1" >/dev/null 2>&1 ||
		getfattr -h -n trusted.overlay.metacopy "$1" >/dev/null 2>&1
}

# readers VIEWFILE LOWERFILE: read, mmap, copy_file_range and SEEK_DATA
# of the view's file all give the lower's bytes.
readers() {
	cmp "$1" "$2"
	python3 - "$1" "$2" <<'PY'
import mmap, os, sys
view, lower = sys.argv[1], sys.argv[2]
want = open(lower, 'rb').read()
with open(view, 'rb') as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    assert m[:] == want, "mmap"
    m.close()
fd = os.open(view, os.O_RDONLY)
assert os.lseek(fd, 0, os.SEEK_DATA) == 0, "SEEK_DATA"
# into a file of the view: the daemon's copy_file_range
out = os.open(os.path.dirname(view) + '/.cfr.out', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
n, off = 0, 0
while True:
    k = os.copy_file_range(fd, out, 1 << 20, off, off)
    if k == 0:
        break
    off += k
os.lseek(out, 0, os.SEEK_SET)
assert os.read(out, len(want) + 1) == want, "copy_file_range"
os.unlink(os.path.dirname(view) + '/.cfr.out')
PY
}

@test "each metadata change of a lower file copies no data; the view reads the lower bytes (read, mmap, copy_file_range, SEEK_DATA)" {
	sfs_require_cmd setfacl
	sfs_require_cmd chattr
	for f in chmod chown utimes setxattr setfacl chattr; do
		cp "$LO/big" "$LO/$f"
	done
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/chmod"
	chown 1000:1000 "$MNT/chown"
	touch -h -d '2001-02-03 04:05:06' "$MNT/utimes"
	setfattr -n user.color -v blue "$MNT/setxattr"
	setfacl -m u:1000:r "$MNT/setfacl"
	chattr +d "$MNT/chattr" 2>/dev/null || chattr +A "$MNT/chattr"
	for f in chmod chown utimes setxattr setfacl chattr; do
		[[ -f $UP/$f ]] || fail "$f: no copy"
		is_metacopy "$UP/$f" || fail "$f: no metacopy mark"
		no_data "$UP/$f"
		[[ $(stat -c %s "$UP/$f") == 3145728 ]] || fail "$f: size $(stat -c %s "$UP/$f")"
		readers "$MNT/$f" "$LO/$f"
		# st_blocks: what the data takes
		(($(stat -c %b "$MNT/$f") >= 6144)) || fail "$f: blocks $(stat -c %b "$MNT/$f")"
	done
	[[ $(stat -c %a "$MNT/chmod") == 600 ]]
	[[ $(stat -c %u:%g "$MNT/chown") == 1000:1000 ]]
	[[ $(stat -c %Y "$MNT/utimes") == $(date -d '2001-02-03 04:05:06' +%s) ]]
	run -0 getfattr --absolute-names -n user.color --only-values "$MNT/setxattr"
	assert_output blue
	run -0 getfacl -cn "$MNT/setfacl"
	assert_output --partial "user:1000:r--"
	"$SFS" umount "$MNT"
	# the upper's disk use: none of the data
	used=$(du -sk "$UP" | cut -f1)
	((used < 200)) || fail "upper uses $used KiB"
}

@test "the default is a metadata-only copy (no option); the fill after keeps the file's times" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	chmod 0600 "$MNT/big"
	touch -h -d @1500000000.25 "$MNT/big"  # -h: no open for writing
	is_metacopy "$UP/big" || fail "the default copied the whole file"
	no_data "$UP/big"
	readers "$MNT/big" "$LO/big"
	# a rename brings the data in first; the times stay the file's
	mv "$MNT/big" "$MNT/moved"
	! is_metacopy "$UP/moved" || fail "the renamed file is still a metacopy"
	run -0 stat -c '%.9Y %a' "$MNT/moved"
	assert_output "1500000000.250000000 600"
	cmp "$MNT/moved" "$LO/big"
}

@test "the first write brings the data in and the mark goes; an O_TRUNC open copies nothing" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big" "$MNT/small"
	is_metacopy "$UP/big" && no_data "$UP/big"
	# a reader opened before the write follows it
	exec {rfd}<"$MNT/big"
	echo tail >>"$MNT/big"
	head -c 3145728 <&$rfd | cmp - "$LO/big"
	exec {rfd}<&-
	run -0 tail -c 5 "$MNT/big"
	assert_output tail
	echo new >"$MNT/small"
	run -0 cat "$MNT/small"
	assert_output new
	"$SFS" umount "$MNT"
	for f in big small; do
		! is_metacopy "$UP/$f" || fail "$f: still marked"
	done
	head -c 3145728 "$UP/big" | cmp - "$LO/big"
	[[ $(stat -c %a "$UP/big") == 600 ]]
	run -0 cat "$UP/small"
	assert_output new
}

@test "truncate of a metacopy keeps the lower bytes it keeps" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big"
	is_metacopy "$UP/big" && no_data "$UP/big"
	truncate -s 1000 "$MNT/big"
	head -c 1000 "$LO/big" | cmp - "$MNT/big"
	"$SFS" umount "$MNT"
	! is_metacopy "$UP/big" || fail "still marked"
	head -c 1000 "$LO/big" | cmp - "$UP/big"
}

@test "rename of a metacopy brings its data in first, then reads the lower bytes at the new name" {
	mkdir "$LO/d"
	cp "$LO/big" "$LO/d/f"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big" "$MNT/d/f"
	is_metacopy "$UP/big" && is_metacopy "$UP/d/f"
	mv "$MNT/big" "$MNT/moved"
	mv "$MNT/d/f" "$MNT/f2"
	cmp "$MNT/moved" "$LO/big"
	cmp "$MNT/f2" "$LO/d/f"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	cmp "$MNT/moved" "$LO/big"
	cmp "$MNT/f2" "$LO/d/f"
	[[ $(stat -c %a "$MNT/moved") == 600 ]]
	[[ ! -e $MNT/big ]]
}

@test "hard links: a lower file with several names copies whole (one copy for all); a link of a metacopy brings its data in" {
	ln "$LO/big" "$LO/big2"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big"
	! is_metacopy "$UP/big" || fail "a linked lower file became a metacopy"
	[[ $(stat -c %a "$MNT/big2") == 600 ]]
	cmp "$MNT/big2" "$LO/big"
	chmod 0600 "$MNT/small"
	is_metacopy "$UP/small"
	ln "$MNT/small" "$MNT/small2"
	run -0 cat "$MNT/small2" "$MNT/small"
	assert_output $'small\nsmall'
	"$SFS" umount "$MNT"
	! is_metacopy "$UP/small" || fail "a linked metacopy stayed one"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	run -0 cat "$MNT/small2"
	assert_output small
	[[ $(stat -c %i "$MNT/small") == $(stat -c %i "$MNT/small2") ]]
}

@test "a metacopy keeps reading its data across remount, and keeps its inode number" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big"
	ino=$(stat -c %i "$MNT/big")
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	is_metacopy "$UP/big" && no_data "$UP/big"
	readers "$MNT/big" "$LO/big"
	[[ $(stat -c %i "$MNT/big") == "$ino" ]]
	[[ $(stat -c %a "$MNT/big") == 600 ]]
}

@test "branch reorder: the data is found again where it moved; where the name now shows another file, reads fail with EIO" {
	sfs_setup_branches A B
	echo in-b >"$B/f"
	echo also-b >"$B/g"
	echo other-a >"$A/g"
	sfs_mount "$UP:$A=ro:$B=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/f"
	run -0 cat "$MNT/f"
	assert_output in-b
	"$SFS" umount "$MNT"
	# g is chowned while B is on top: its data is B's g
	sfs_mount "$UP:$B=ro:$A=ro" "$MNT" "metacopy=on,log=$LOG"
	run -0 cat "$MNT/f"
	assert_output in-b
	chown 1000 "$MNT/g"
	run -0 cat "$MNT/g"
	assert_output also-b
	"$SFS" umount "$MNT"
	# the first order again: A's g shows at the name, not the file it was
	sfs_mount "$UP:$A=ro:$B=ro" "$MNT" "metacopy=on,log=$LOG"
	run -0 cat "$MNT/f"
	assert_output in-b
	run cat "$MNT/g"
	[[ $output == *"Input/output error"* ]] || fail "cat said: $output"
}

@test "a metacopy whose data was removed offline reads as EIO, never zeros, and fsck reports it" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/small" "$MNT/big"
	"$SFS" umount "$MNT"
	rm "$LO/small"
	sfs_mount "$UP:$LO=ro" "$MNT" "metacopy=on,log=$LOG"
	[[ $(stat -c %a "$MNT/small") == 600 ]]
	run cat "$MNT/small"
	[[ $output == *"Input/output error"* ]] || fail "cat said: $output"
	cmp "$MNT/big" "$LO/big"
	"$SFS" umount "$MNT"
	run "$SFS" fsck "$UP"
	((status == 4)) || fail "fsck exit $status: $output"
	assert_output --partial METACOPY_NO_DATA
	assert_output --partial "/small"
	refute_output --partial "/big"
}

@test "a lower file replaced offline (another inode at the name): the metacopy reads EIO and fsck reports it" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/small"
	"$SFS" umount "$MNT"
	rm "$LO/small"
	echo replaced >"$LO/other"
	mv "$LO/other" "$LO/small"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	run cat "$MNT/small"
	[[ $output == *"Input/output error"* ]] || fail "cat said: $output"
	"$SFS" umount "$MNT"
	run "$SFS" fsck "$UP"
	((status == 4)) || fail "fsck exit $status: $output"
	assert_output --partial METACOPY_NO_DATA
	# neither a layer nor a commit takes the new file's bytes for its data
	run "$SFS" diff --format=oci "$UP"
	((status == 1)) || fail "diff exit $status"
	assert_output --partial "metacopy file whose data is in no branch below"
	sfs_snapshot "$LO"
	run "$SFS" commit "$UP" --into "$LO"
	((status != 0)) || fail "commit succeeded: $output"
	sfs_assert_unchanged "$LO"
}

@test "kernel overlayfs (metacopy=on) reads a whiteout=overlay upper of stackfs's metacopies as stackfs does" {
	W=$T/work
	mkdir "$W"
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on,whiteout=overlay
	chmod 0600 "$MNT/big"
	chown 1000:1000 "$MNT/small"
	"$SFS" umount "$MNT"
	getfattr -h -n trusted.overlay.metacopy "$UP/big" >/dev/null
	no_data "$UP/big"
	KMNT=$BATS_TEST_TMPDIR/kernel
	mkdir -p "$KMNT"
	sfs_record mount "$KMNT"
	mount -t overlay overlay -o "metacopy=on,redirect_dir=on,lowerdir=$LO,upperdir=$UP,workdir=$W" \
		"$KMNT" || skip "kernel overlayfs does not mount with metacopy=on"
	cmp "$KMNT/big" "$LO/big"
	run -0 cat "$KMNT/small"
	assert_output small
	[[ $(stat -c %a "$KMNT/big") == 600 ]]
	[[ $(stat -c %u:%g "$KMNT/small") == 1000:1000 ]]
	umount "$KMNT"
}

@test "commit and diff --format=oci of stackfs's metacopies carry the full data" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big"
	chown 1000:1000 "$MNT/small"
	"$SFS" umount "$MNT"
	is_metacopy "$UP/big"
	"$SFS" diff --format=oci "$UP" >"$T/layer.tar"
	tar -xOf "$T/layer.tar" big | cmp - "$LO/big"
	run -0 tar -xOf "$T/layer.tar" small
	assert_output small
	run -0 tar -tvf "$T/layer.tar" big
	assert_output --partial "-rw-------"
	cp "$LO/big" "$T/big.want"
	mtime=$(stat -c %y "$UP/big")
	run -0 "$SFS" commit "$UP" --into "$LO"
	cmp "$LO/big" "$T/big.want"
	[[ $(stat -c %a "$LO/big") == 600 ]]
	# regression: the data brought in kept the file's times
	[[ $(stat -c %y "$LO/big") == "$mtime" ]] || fail "mtime $(stat -c %y "$LO/big"), was $mtime"
	run -0 cat "$LO/small"
	assert_output small
	[[ $(stat -c %u "$LO/small") == 1000 ]]
	! is_metacopy "$LO/big" || fail "the commit placed a mark"
}

@test "a metacopy mark a user sets in a branch she owns (user.*) is not followed by root's daemon" {
	sfs_setup_branches U
	echo secret >"$LO/f"
	chmod 0600 "$LO/f"
	chown 1000 "$U"
	truncate -s 7 "$U/f"
	chown 1000 "$U/f"
	chmod 0644 "$U/f"
	setfattr -n user.stackfs.metacopy "$U/f"
	setfattr -n user.overlay.metacopy "$U/f"
	sfs_mount "$UP:$U:$LO=ro" "$MNT" metacopy=on
	run -0 od -An -c "$MNT/f"
	[[ $output != *s*e*c*r*e*t* ]] || fail "the lower's data showed: $output"
}

@test "-o metacopy=off: a chmod copies the whole file" {
	sfs_mount "$UP:$LO=ro" "$MNT" metacopy=off
	chmod 0600 "$MNT/big"
	"$SFS" umount "$MNT"
	! is_metacopy "$UP/big" || fail "marked"
	cmp "$UP/big" "$LO/big"
	run "$SFS" mount -o metacopy=maybe "$UP:$LO=ro" "$MNT"
	((status != 0)) || fail "mounted"
	assert_output --partial "metacopy is on or off"
}
