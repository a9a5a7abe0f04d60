#!/usr/bin/env bats
# Copy-up: every modification of an entry of the ro branch first copies
# it, with its parent directories, into the rw branch, keeping type, mode,
# owner, nanosecond times, xattrs, ACLs, holes and content; the lower
# branch is never modified; st_ino stays; open descriptors stay coherent;
# a failed copy-up leaves no trace.

load helpers/common
load helpers/copyup

setup_file() {
	sfs_setup_file 1
	sfs_require_tool cuprobe
}

teardown_file() {
	sfs_cleanup_file
}

T0='2001-02-03 04:05:06.123456789 +0000'
T1='2002-03-04 05:06:07.987654321 +0000'
# an atime in the future: relatime never updates it when the file is read
# (by the snapshot, or by the copy-up itself), so the copy must show it
TA='2031-05-06 07:08:09.111111111 +0000'

setup() {
	sfs_setup_branches
	printf 'lower\n' >"$LO/f"
	setfattr -n user.color -v blue "$LO/f"
	setfattr -n trusted.tag -v t1 "$LO/f"
	touch -m -d "$T0" "$LO/f"
	touch -a -d "$TA" "$LO/f"
	mkdir -p "$LO/d/sub"
	echo in-d >"$LO/d/a"
	echo in-sub >"$LO/d/sub/b"
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
}

lower_unchanged() {
	sfs_assert_unchanged "$LO"
}

# ------------------------------------------------------------ what copies up

@test "reading, stat, listing and getfattr of lower entries copy nothing up" {
	cu_mount
	cat "$MNT/f" "$MNT/d/a" "$MNT/d/sub/b" >/dev/null
	stat "$MNT/f" "$MNT/d" "$MNT/d/sub" >/dev/null
	ls -lR "$MNT" >/dev/null
	getfattr -d "$MNT/f" >/dev/null
	run -0 cu_branch_files "$UP"
	assert_output ""
	run -0 ls -A "$UP"
	assert_output .stackfs
	cu_assert_work_empty "$UP"
	lower_unchanged
}

@test "a write to a lower file lands in a copy in UP: old content plus the write" {
	cu_mount
	echo more >>"$MNT/f"
	run -0 cat "$UP/f"
	assert_output $'lower\nmore'
	run -0 cat "$MNT/f"
	assert_output $'lower\nmore'
	cu_assert_work_empty "$UP"
	lower_unchanged
}

@test "an O_TRUNC open of a lower file leaves only the new content in UP" {
	cu_mount
	printf 'new\n' >"$MNT/f"
	run -0 cat "$UP/f"
	assert_output new
	run -0 cat "$MNT/f"
	assert_output new
	# the copy is still the same file: it keeps the lower file's xattrs
	run -0 cu_xattr_text "$UP/f" user.color
	assert_output blue
	lower_unchanged
}

@test "truncate of a lower file copies it up and sets the size in UP" {
	cu_mount
	truncate -s 3 "$MNT/f"
	run -0 cat "$UP/f"
	assert_output low
	[[ $(stat -c %s "$MNT/f") == 3 ]]
	lower_unchanged
}

@test "chmod of a lower file copies it up with the new mode, content and mtime kept" {
	cu_mount
	chmod 0604 "$MNT/f"
	[[ $(stat -c %a "$UP/f") == 604 ]] || fail "UP mode $(stat -c %a "$UP/f")"
	[[ $(stat -c %a "$MNT/f") == 604 ]]
	# a metadata-only copy (tests/77-metacopy-up): the data is read below
	run -0 cat "$MNT/f"
	assert_output lower
	[[ $(stat -c %s "$UP/f") == 6 ]] || fail "UP size $(stat -c %s "$UP/f")"
	[[ $(stat -c %y "$UP/f") == "$T0" ]] || fail "mtime of the copy: $(stat -c %y "$UP/f"), lower had $T0"
	lower_unchanged
}

@test "chown of a lower file copies it up with the new owner" {
	cu_mount
	chown 1234:2345 "$MNT/f"
	[[ $(stat -c %u:%g "$UP/f") == 1234:2345 ]] || fail "UP owner $(stat -c %u:%g "$UP/f")"
	[[ $(stat -c %u:%g "$MNT/f") == 1234:2345 ]]
	run -0 cat "$MNT/f"
	assert_output lower
	[[ $(stat -c %s "$UP/f") == 6 ]] || fail "UP size $(stat -c %s "$UP/f")"
	lower_unchanged
}

@test "touch of a lower file copies it up with the new nanosecond times" {
	cu_mount
	touch -d "$T1" "$MNT/f"
	[[ $(stat -c %y "$UP/f") == "$T1" ]] || fail "UP mtime $(stat -c %y "$UP/f")"
	[[ $(stat -c %y "$MNT/f") == "$T1" ]] || fail "view mtime $(stat -c %y "$MNT/f")"
	run -0 cat "$UP/f"
	assert_output lower
	lower_unchanged
}

@test "setfattr on a lower file copies it up with the old and the new attribute" {
	cu_mount
	setfattr -n user.new -v yes "$MNT/f"
	run -0 cu_xattr_text "$UP/f" user.new
	assert_output yes
	run -0 cu_xattr_text "$UP/f" user.color
	assert_output blue
	run -0 cu_xattr_text "$MNT/f" user.new
	assert_output yes
	lower_unchanged
}

@test "ln of a lower file copies it up and makes the link in UP: one inode, two names" {
	cu_mount
	ino=$(cu_ino "$MNT/f")
	ln "$MNT/f" "$MNT/g"
	[[ -f $UP/f && -f $UP/g ]] || fail "UP: $(ls -lA "$UP")"
	[[ $(cu_ino "$UP/f") == "$(cu_ino "$UP/g")" ]] || fail "UP/f and UP/g are not one inode"
	[[ $(stat -c %h "$UP/f") == 2 ]]
	[[ $(cu_ino "$MNT/g") == "$ino" && $(cu_ino "$MNT/f") == "$ino" ]] ||
		fail "view st_ino f=$(cu_ino "$MNT/f") g=$(cu_ino "$MNT/g"), before copy-up $ino"
	[[ $(stat -c %h "$MNT/g") == 2 ]] || fail "view link count $(stat -c %h "$MNT/g")"
	echo more >>"$MNT/g"
	run -0 cat "$MNT/f"
	assert_output $'lower\nmore'
	lower_unchanged
}

@test "fallocate on a lower file copies it up with its content and extends it" {
	sfs_require_cmd fallocate
	cu_mount
	fallocate -l 1048576 "$MNT/f"
	[[ $(stat -c %s "$UP/f") == 1048576 ]] || fail "UP size $(stat -c %s "$UP/f")"
	run -0 head -c 6 "$UP/f"
	assert_output lower
	cmp <(tail -c +7 "$MNT/f") <(head -c $((1048576 - 6)) /dev/zero)
	lower_unchanged
}

@test "copy-up with -o fsync makes the same copy" {
	cu_mount fsync
	echo more >>"$MNT/f"
	run -0 cat "$UP/f"
	assert_output $'lower\nmore'
	cu_assert_work_empty "$UP"
	lower_unchanged
}

# ------------------------------------------------------------ what copy-up keeps

@test "copy-up keeps a random multi-MiB content byte for byte" {
	head -c $((3 * 1024 * 1024 + 123)) /dev/urandom >"$LO/rand"
	sfs_snapshot "$LO"
	# metacopy=off: the chmod copies the data (with it on, the first write
	# would: tests/77-metacopy-up)
	cu_mount metacopy=off
	chmod 0600 "$MNT/rand"
	cmp "$LO/rand" "$UP/rand"
	printf 'XY' | dd of="$MNT/rand" bs=1 seek=2000000 conv=notrunc status=none
	cmp -l "$LO/rand" "$UP/rand" | awk '{print $1}' | while read -r off; do
		((off == 2000001 || off == 2000002)) || { echo "byte $off differs"; exit 1; }
	done
	[[ $(dd if="$UP/rand" bs=1 skip=2000000 count=2 status=none) == XY ]]
	lower_unchanged
}

@test "copy-up keeps setuid, setgid and sticky bits, owner and group" {
	printf 'x' >"$LO/su"
	chown 1234:2345 "$LO/su"
	chmod 6755 "$LO/su"
	mkdir "$LO/sticky"
	chown 3:4 "$LO/sticky"
	chmod 1777 "$LO/sticky"
	sfs_snapshot "$LO"
	cu_mount
	setfattr -n user.x -v 1 "$MNT/su"
	[[ $(stat -c '%a %u:%g' "$UP/su") == '6755 1234:2345' ]] || fail "UP/su: $(stat -c '%a %u:%g' "$UP/su")"
	[[ $(stat -c '%a %u:%g' "$MNT/su") == '6755 1234:2345' ]]
	touch "$MNT/sticky/new"
	[[ $(stat -c '%a %u:%g' "$UP/sticky") == '1777 3:4' ]] || fail "UP/sticky: $(stat -c '%a %u:%g' "$UP/sticky")"
	lower_unchanged
}

@test "copy-up keeps atime and mtime to the nanosecond" {
	cu_mount
	setfattr -n user.x -v 1 "$MNT/f"
	[[ -f $UP/f ]] || fail "not copied up"
	run -0 stat -c 'atime=%x mtime=%y' "$UP/f"
	assert_output "atime=$TA mtime=$T0"
	run -0 stat -c 'atime=%x mtime=%y' "$MNT/f"
	assert_output "atime=$TA mtime=$T0"
	lower_unchanged
}

@test "copy-up keeps user.* and trusted.* xattrs, a 64 KiB value too" {
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/big"
	setfattr -n user.big -v "0s$(base64 -w0 "$BATS_TEST_TMPDIR/big")" "$LO/f" ||
		skip "$SFS_FS refuses a 64 KiB xattr value here"
	setfattr -n trusted.empty "$LO/f"
	sfs_snapshot "$LO"
	cu_mount
	chmod 0600 "$MNT/f"
	[[ -f $UP/f ]] || fail "not copied up"
	run -0 cu_xattrs "$UP/f"
	assert_output "$(cu_xattrs "$LO/f")"
	assert_output --partial 'trusted.tag=0sdDE='
	cmp <(getfattr --only-values -n user.big "$UP/f") "$BATS_TEST_TMPDIR/big"
	cmp <(getfattr --only-values -n user.big "$MNT/f") "$BATS_TEST_TMPDIR/big"
	lower_unchanged
}

@test "copy-up keeps POSIX ACLs: a file's access ACL and a directory's default ACL" {
	sfs_require_cmd setfacl getfacl
	printf 'x' >"$LO/acl"
	setfacl -m u:1234:rw-,g:2345:r-- "$LO/acl"
	mkdir "$LO/dacl"
	setfacl -m u:1234:rwx "$LO/dacl"
	setfacl -d -m u:1234:rwx,g:2345:r-x "$LO/dacl"
	sfs_snapshot "$LO"
	cu_mount
	setfattr -n user.x -v 1 "$MNT/acl"
	[[ -f $UP/acl ]] || fail "not copied up"
	run -0 getfacl -cp "$UP/acl"
	assert_output "$(getfacl -cp "$LO/acl")"
	assert_output --partial 'user:1234:rw-'
	# a new file in a lower directory copies the directory up
	touch "$MNT/dacl/new"
	[[ -d $UP/dacl ]] || fail "parent not copied up"
	run -0 getfacl -cp "$UP/dacl"
	assert_output "$(getfacl -cp "$LO/dacl")"
	assert_output --partial 'default:user:1234:rwx'
	# and the default ACL was there when the file was made in it
	run -0 getfacl -cp "$UP/dacl/new"
	assert_output --partial 'user:1234:rwx'
	lower_unchanged
}

@test "parent directories copied up take the lower directories' mode, owner, times and xattrs" {
	mkdir -p "$LO/p1/p2/p3"
	echo deep >"$LO/p1/p2/p3/f"
	echo other >"$LO/p1/p2/other"
	chmod 0750 "$LO/p1"
	chmod 0705 "$LO/p1/p2"
	chmod 2775 "$LO/p1/p2/p3"
	chown 11:12 "$LO/p1"
	chown 13:14 "$LO/p1/p2"
	setfattr -n user.dir -v p2 "$LO/p1/p2"
	setfattr -n trusted.dir -v p3 "$LO/p1/p2/p3"
	touch -m -d "$T0" "$LO/p1/p2/p3" "$LO/p1/p2"
	touch -m -d "$T1" "$LO/p1"
	sfs_snapshot "$LO"
	cu_mount
	echo more >>"$MNT/p1/p2/p3/f"
	for d in p1 p1/p2 p1/p2/p3; do
		[[ -d $UP/$d ]] || fail "$d not copied up"
		[[ $(stat -c '%a|%u:%g|%y' "$UP/$d") == "$(stat -c '%a|%u:%g|%y' "$LO/$d")" ]] ||
			fail "$d: UP $(stat -c '%a|%u:%g|%y' "$UP/$d") LO $(stat -c '%a|%u:%g|%y' "$LO/$d")"
		[[ $(cu_xattrs "$UP/$d") == "$(cu_xattrs "$LO/$d")" ]] ||
			fail "$d xattrs: UP $(cu_xattrs "$UP/$d") LO $(cu_xattrs "$LO/$d")"
		# the view shows the same
		[[ $(stat -c '%a|%u:%g|%y' "$MNT/$d") == "$(stat -c '%a|%u:%g|%y' "$LO/$d")" ]] ||
			fail "$d in the view: $(stat -c '%a|%u:%g|%y' "$MNT/$d")"
	done
	# only the file that changed was copied
	run -0 cu_branch_files "$UP"
	assert_output ./p1/p2/p3/f
	run -0 cat "$MNT/p1/p2/other"
	assert_output other
	lower_unchanged
}

@test "symlinks, fifos and device nodes copy up with their type, target and device number" {
	ln -s some/target "$LO/sl"
	mkfifo "$LO/fifo"
	mknod "$LO/chr" c 1 3
	mknod "$LO/blk" b 7 200
	sfs_snapshot "$LO"
	cu_mount
	for e in sl fifo chr blk; do
		chown -h 4:5 "$MNT/$e"
		[[ -e $UP/$e || -L $UP/$e ]] || fail "$e not copied up"
		[[ $(stat -c '%F|%t:%T|%u:%g' "$UP/$e") == "$(stat -c '%F|%t:%T' "$LO/$e")|4:5" ]] ||
			fail "$e: UP $(stat -c '%F|%t:%T|%u:%g' "$UP/$e") LO $(stat -c '%F|%t:%T' "$LO/$e")"
	done
	[[ $(readlink "$UP/sl") == some/target ]]
	[[ $(readlink "$MNT/sl") == some/target ]]
	[[ $(stat -c %a "$UP/fifo") == "$(stat -c %a "$LO/fifo")" ]]
	lower_unchanged
}

@test "a lower directory copies up on chmod, keeping its lower entries visible and uncopied" {
	cu_mount
	chmod 0700 "$MNT/d"
	[[ -d $UP/d ]] || fail "d not copied up"
	[[ $(stat -c %a "$UP/d") == 700 ]]
	run -0 ls "$MNT/d"
	assert_output $'a\nsub'
	run -0 cat "$MNT/d/sub/b"
	assert_output in-sub
	run -0 cu_branch_files "$UP"
	assert_output ""
	lower_unchanged
}

@test "a copy-up in a lower-only directory leaves its other lower files visible and uncopied" {
	cu_mount
	echo more >>"$MNT/d/a"
	run -0 cu_branch_files "$UP"
	assert_output ./d/a
	run -0 ls "$MNT/d"
	assert_output $'a\nsub'
	run -0 cat "$MNT/d/sub/b"
	assert_output in-sub
	lower_unchanged
}

@test "a 1 GiB sparse lower file copies up sparse, with the same data segments" {
	# made after the setup's snapshot: hashing a GiB of zeros is too slow,
	# so this file's own state is checked below instead
	truncate -s 1G "$LO/sparse"
	head -c 8192 /dev/urandom | dd of="$LO/sparse" bs=4096 seek=0 conv=notrunc status=none
	head -c 4096 /dev/urandom | dd of="$LO/sparse" bs=4096 seek=131072 conv=notrunc status=none
	head -c 4096 /dev/urandom | dd of="$LO/sparse" bs=4096 seek=262143 conv=notrunc status=none
	sync
	segs=$("$CUPROBE" segments "$LO/sparse")
	[[ $segs == *$'\n'*$'\n'* ]] || fail "the lower file has no holes here: $segs"
	lstate=$(stat -c '%s|%b|%Y.%y|%Z.%z|%i' "$LO/sparse")
	cu_mount metacopy=off # the chmod copies the data
	timeout 60 chmod 0600 "$MNT/sparse"
	[[ -f $UP/sparse ]] || fail "not copied up"
	[[ $(stat -c %s "$UP/sparse") == 1073741824 ]] || fail "size $(stat -c %s "$UP/sparse")"
	# allocated: a few data blocks, not a GiB
	blocks=$(stat -c %b "$UP/sparse")
	((blocks * 512 < 8 * 1024 * 1024)) || fail "copy is not sparse: $((blocks * 512)) bytes allocated"
	run -0 "$CUPROBE" segments "$UP/sparse"
	assert_output "$segs"
	# seen through the view too (lseek passes through)
	run -0 "$CUPROBE" segments "$MNT/sparse"
	assert_output "$segs"
	for blk in 0 1 131072 262143; do
		cmp <(dd if="$LO/sparse" bs=4096 skip=$blk count=1 status=none) \
			<(dd if="$MNT/sparse" bs=4096 skip=$blk count=1 status=none) ||
			fail "block $blk differs"
	done
	[[ $(stat -c '%s|%b|%Y.%y|%Z.%z|%i' "$LO/sparse") == "$lstate" ]] || fail "the lower file changed"
	run -0 "$CUPROBE" segments "$LO/sparse"
	assert_output "$segs"
}

@test "on XFS a copy-up shares the lower file's extents (reflink)" {
	[[ $SFS_FS == xfs ]] || skip "$SFS_FS has no reflink"
	sfs_require_cmd filefrag
	head -c $((32 * 1024 * 1024)) /dev/urandom >"$LO/big"
	sync
	sfs_snapshot "$LO"
	cu_mount metacopy=off # the chmod copies the data
	used0=$(df -k --output=used "$SFS_IMG" | tail -1)
	chmod 0600 "$MNT/big"
	sync
	used1=$(df -k --output=used "$SFS_IMG" | tail -1)
	cmp "$LO/big" "$UP/big"
	run -0 filefrag -v "$UP/big"
	assert_output --partial shared
	(((used1 - used0) < 8 * 1024)) || fail "copy-up used $((used1 - used0)) KiB: not a reflink"
	lower_unchanged
}

# ------------------------------------------------------------ identity

@test "st_ino of a lower file is kept across its copy-up and a remount" {
	cu_mount
	ino=$(cu_ino "$MNT/f")
	echo more >>"$MNT/f"
	[[ -f $UP/f ]] || fail "not copied up"
	[[ $(cu_ino "$MNT/f") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/f") after copy-up, $ino before"
	cu_remount
	[[ $(cu_ino "$MNT/f") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/f") after remount, $ino before"
	run -0 cat "$MNT/f"
	assert_output $'lower\nmore'
}

@test "st_ino of copied-up fifos and device nodes is kept across a remount" {
	mkfifo "$LO/fifo"
	mknod "$LO/chr" c 1 3
	cu_mount
	declare -A before
	for e in fifo chr; do
		before[$e]=$(cu_ino "$MNT/$e")
		chown 4:5 "$MNT/$e"
		[[ $(cu_ino "$MNT/$e") == "${before[$e]}" ]] || fail "$e: st_ino changed at copy-up"
	done
	cu_remount
	for e in fifo chr; do
		[[ $(cu_ino "$MNT/$e") == "${before[$e]}" ]] ||
			fail "$e: st_ino $(cu_ino "$MNT/$e") after remount, ${before[$e]} before"
	done
}

@test "st_ino of a copied-up symlink is kept across a remount" {
	ln -s some/target "$LO/sl"
	cu_mount
	ino=$(cu_ino "$MNT/sl")
	chown -h 4:5 "$MNT/sl"
	[[ -L $UP/sl ]] || fail "not copied up"
	[[ $(cu_ino "$MNT/sl") == "$ino" ]] || fail "st_ino changed at copy-up"
	cu_remount
	[[ $(cu_ino "$MNT/sl") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/sl") after remount, $ino before copy-up"
}

@test "readdir's d_ino of copied-up files is their st_ino" {
	for i in $(seq -w 1 40); do echo "$i" >"$LO/n$i"; done
	cu_mount
	for i in 05 20 35; do echo more >>"$MNT/n$i"; done
	run -0 "$CUPROBE" dirino "$MNT" 80
	bad=
	while read -r name dino; do
		sino=$(cu_ino "$MNT/$name")
		[[ $dino == "$sino" ]] || bad+="$name: d_ino $dino st_ino $sino; "
	done <<<"$output"
	[[ -z $bad ]] || fail "readdir and stat disagree: $bad"
}

# ------------------------------------------------------------ open files

@test "a descriptor opened read-only before a copy-up reads the new content after it" {
	cu_mount
	run -0 "$CUPROBE" readafter "$MNT/f" "printf 'NEW\\n' >'$MNT/f'"
	assert_line NEW
	refute_line lower
	assert_line --regexp '^ino_before=([0-9]+) ino_after=\1$'
	run -0 cat "$UP/f"
	assert_output NEW
	lower_unchanged
}

@test "a shell fd opened read-only on a lower file reads the data written after a copy-up" {
	cu_mount
	exec 5<"$MNT/f"
	echo appended >>"$MNT/f"
	run -0 cat <&5
	exec 5<&-
	assert_output $'lower\nappended'
	lower_unchanged
}

@test "O_RDONLY then O_RDWR descriptors of one lower file see one file" {
	cu_mount
	run -0 "$CUPROBE" twofds "$MNT/f" XYZ
	assert_line before=lower
	assert_line after=XYZer
	assert_line same_ino=yes
	run -0 cat "$UP/f"
	assert_output XYZer
	lower_unchanged
}

@test "parallel appends to one lower file all land in one copy" {
	printf 'base\n' >"$LO/log"
	sfs_snapshot "$LO"
	cu_mount
	for p in a b c d e f; do
		(for i in $(seq 40); do echo "$p$i" >>"$MNT/log"; done) &
	done
	wait
	run -0 head -1 "$UP/log"
	assert_output base
	run -0 wc -l <"$UP/log"
	assert_output 241
	run -0 bash -c "sort -u '$MNT/log' | wc -l"
	assert_output 241
	cu_assert_work_empty "$UP"
	lower_unchanged
}

# ------------------------------------------------------------ failure

@test "a copy-up that runs out of space fails with ENOSPC and leaves nothing in the rw branch" {
	small=$(sfs_make_image "$SFS_FS" 64 small)
	mkdir "$small/up"
	avail=$(df -B1 --output=avail "$small" | tail -1)
	fallocate -l $((avail - 4 * 1024 * 1024)) "$small/filler"
	head -c $((24 * 1024 * 1024)) /dev/urandom >"$LO/big"
	sfs_snapshot "$LO"
	UP=$small/up
	cu_mount metacopy=on
	run bash -c "echo x >>'$MNT/big'"
	assert_failure
	assert_output --partial "No space left on device"
	cu_assert_absent "$UP/big"
	cu_assert_work_empty "$UP"
	# the view still shows the lower file, unchanged
	cmp "$LO/big" "$MNT/big"
	# a chmod copies the metadata alone (tests/77-metacopy-up): no room
	# needed; the data stays below
	chmod 0600 "$MNT/big"
	[[ $(stat -c %a "$MNT/big") == 600 ]]
	cmp "$LO/big" "$MNT/big"
	# then a write: the data does not fit; the blocks it took are given
	# back and the file still reads its data below
	run bash -c "echo x >>'$MNT/big'"
	assert_failure
	assert_output --partial "No space left on device"
	cmp "$LO/big" "$MNT/big"
	run -0 "$CUPROBE" segments "$UP/big"
	assert_output "size $((24 * 1024 * 1024))"
	cu_assert_work_empty "$UP"
	lower_unchanged
}

@test "a copy-up whose xattr the rw branch refuses fails with that error and leaves nothing in the rw branch" {
	head -c 16384 /dev/urandom >"$BATS_TEST_TMPDIR/val"
	setfattr -n user.big -v "0s$(base64 -w0 "$BATS_TEST_TMPDIR/val")" "$LO/f" ||
		skip "$SFS_FS refuses a 16 KiB xattr value here"
	sfs_snapshot "$LO"
	# the rw branch on an ext4 without ea_inode: no value over a block
	small=$(cu_make_plain_ext4 noea 64)
	mkdir "$small/up"
	touch "$small/probe"
	run setfattr -n user.big -v "0s$(base64 -w0 "$BATS_TEST_TMPDIR/val")" "$small/probe"
	assert_failure
	refused=${output##*: }
	[[ -n $refused ]] || fail "no error text from setfattr: $output"
	echo "# the rw branch refuses the value: $refused" >&3
	UP=$small/up
	cu_mount
	run bash -c "echo x >>'$MNT/f'"
	assert_failure
	assert_output --partial "$refused"
	run chmod 0600 "$MNT/f"
	assert_failure
	assert_output --partial "$refused"
	cu_assert_absent "$UP/f"
	cu_assert_work_empty "$UP"
	run -0 cat "$MNT/f"
	assert_output lower
	lower_unchanged
}
