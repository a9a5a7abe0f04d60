#!/usr/bin/env bats
# Extended attributes through the view: get, set, list and remove in the
# user, trusted and security namespaces on rw files and on lower files
# (copied up by a change), with the branch's own answers (EEXIST, ENODATA,
# ERANGE, E2BIG, ENOSPC); 64 KiB values and listings near 64 KiB; a
# copy-up whose target cannot hold an attribute fails cleanly; the union's
# own attributes stay invisible and untouchable.

load helpers/common
load helpers/passthrough
load helpers/copyup

setup_file() {
	sfs_setup_file 1
	sfs_require_tool ptprobe sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd getfattr setfattr python3
	sfs_setup_branches
	echo upper >"$UP/f"
	echo lower >"$LO/lf"
	setfattr -n user.low -v l1 "$LO/lf"
	echo ref >"$T/ref"
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/v64k"
	head -c 65537 /dev/urandom >"$BATS_TEST_TMPDIR/v64k1"
}

teardown() {
	sfs_cleanup
}

lower_untouched() {
	run -0 pt_xdump "$LO/lf"
	assert_output 'user.low=0sbDE='
}

# ------------------------------------------------------------ the namespaces

@test "user, trusted and security xattrs: set, get, list and remove through the view act on the rw file" {
	pt_mount
	local ns
	for ns in user trusted security; do
		setfattr -n "$ns.k" -v "v-$ns" "$MNT/f" || fail "setfattr $ns.k through the view failed"
		run -0 cu_xattr_text "$UP/f" "$ns.k"
		assert_output "v-$ns"
		run -0 cu_xattr_text "$MNT/f" "$ns.k"
		assert_output "v-$ns"
	done
	run -0 pt_xdump "$MNT/f"
	assert_output "$(pt_xdump "$UP/f")"
	assert_line 'user.k=0sdi11c2Vy'
	assert_line --partial 'trusted.k='
	assert_line --partial 'security.k='
	setfattr -n user.k -v changed "$MNT/f"
	run -0 cu_xattr_text "$UP/f" user.k
	assert_output changed
	for ns in user trusted security; do
		setfattr -x "$ns.k" "$MNT/f" || fail "setfattr -x $ns.k through the view failed"
	done
	run -0 pt_xnames "$UP/f"
	refute_output --partial '.k'
	run -0 pt_xnames "$MNT/f"
	refute_output --partial '.k'
}

@test "user, trusted and security xattrs on a lower file: a set copies it up with its attributes, a remove removes in the copy" {
	pt_mount
	run -0 cu_xattr_text "$MNT/lf" user.low
	assert_output l1
	local ns
	for ns in user trusted security; do
		setfattr -n "$ns.k" -v "v-$ns" "$MNT/lf" || fail "setfattr $ns.k through the view failed"
	done
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 pt_xdump "$MNT/lf"
	assert_output "$(cu_xattrs "$UP/lf")"
	assert_line 'user.low=0sbDE='
	assert_line 'user.k=0sdi11c2Vy'
	setfattr -x user.low "$MNT/lf"
	run -0 pt_xnames "$UP/lf"
	refute_line user.low
	run -0 pt_xnames "$MNT/lf"
	refute_line user.low
	lower_untouched
}

# ------------------------------------------------------------ errors

@test "XATTR_CREATE of an existing name is EEXIST, XATTR_REPLACE of a missing one is ENODATA, as on the branch" {
	setfattr -n user.a -v old "$UP/f"
	setfattr -n user.a -v old "$T/ref"
	pt_mount
	for f in "$T/ref" "$MNT/f" "$MNT/lf"; do
		run -1 "$PTPROBE" setxattr "$f" "$([[ $f == */lf ]] && echo user.low || echo user.a)" new create
		assert_output EEXIST
		run -1 "$PTPROBE" setxattr "$f" user.missing new replace
		assert_output ENODATA
	done
	run -0 cu_xattr_text "$MNT/f" user.a
	assert_output old
	run -0 cu_xattr_text "$MNT/lf" user.low
	assert_output l1
	run -1 cu_xattr_text "$MNT/f" user.missing
	# the flags also work the other way round
	run -0 "$PTPROBE" setxattr "$MNT/f" user.b new create
	run -0 "$PTPROBE" setxattr "$MNT/f" user.a new replace
	run -0 cu_xattr_text "$UP/f" user.a
	assert_output new
	run -0 cu_xattr_text "$UP/f" user.b
	assert_output new
	lower_untouched
}

@test "getxattr and removexattr of a missing name are ENODATA (No data available), on a rw and a lower file" {
	pt_mount
	for f in "$T/ref" "$MNT/f" "$MNT/lf"; do
		run -1 "$PTPROBE" getxattr "$f" user.missing 100
		assert_output ENODATA
		run -1 "$PTPROBE" removexattr "$f" user.missing
		assert_output ENODATA
	done
	run -1 python3 -c 'import os, sys; os.getxattr(sys.argv[1], "user.missing")' "$MNT/f"
	assert_output --partial "No data available"
	lower_untouched
}

@test "getxattr with a too small buffer is ERANGE; the size query gives the value's size" {
	setfattr -n user.s -v 0123456789 "$UP/f"
	setfattr -n user.s -v 0123456789 "$T/ref"
	setfattr -n user.s -v 0123456789 "$LO/lf"
	pt_mount
	for f in "$T/ref" "$MNT/f" "$MNT/lf"; do
		run -1 "$PTPROBE" getxattr "$f" user.s 9
		assert_output ERANGE
		run -0 "$PTPROBE" getxattr "$f" user.s 0
		assert_output "OK 10"
		run -0 "$PTPROBE" getxattr "$f" user.s 10
		assert_output "OK 10"
	done
	[[ ! -e $UP/lf ]] || fail "reading attributes copied the lower file up"
}

@test "listxattr with a too small buffer is ERANGE; a buffer of the listed size is enough (rw file)" {
	setfattr -n user.one -v 1 "$UP/f"
	setfattr -n user.two -v 2 "$UP/f"
	pt_mount
	# "user.one\0user.two\0": 18 bytes
	run -1 "$PTPROBE" listxattr "$MNT/f" 17
	assert_output ERANGE
	run -0 "$PTPROBE" listxattr "$MNT/f" 18
	assert_line "OK 18"
	assert_line user.one
	assert_line user.two
}

@test "listxattr of a copied-up file: a buffer of exactly the listed size is enough (the hidden origin record does not count)" {
	setfattr -n user.two -v 2 "$LO/lf"
	pt_mount
	chmod 0600 "$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	# "user.low\0user.two\0": 18 bytes, as listxattr(2) reports through the view
	run -0 "$PTPROBE" listxattr "$MNT/lf" 65536
	assert_line "OK 18"
	run -0 "$PTPROBE" listxattr "$MNT/lf" 18
	assert_line "OK 18"
	assert_line user.low
	assert_line user.two
	run -1 "$PTPROBE" listxattr "$MNT/lf" 17
	assert_output ERANGE
}

@test "a value over 64 KiB (65537 bytes) is E2BIG, on a rw and a lower file" {
	pt_mount
	for f in "$T/ref" "$MNT/f" "$MNT/lf"; do
		run -1 "$PTPROBE" setxattr "$f" user.huge "@$BATS_TEST_TMPDIR/v64k1"
		assert_output E2BIG
	done
	run -1 cu_xattr_text "$UP/f" user.huge
	lower_untouched
}

# ------------------------------------------------------------ 64 KiB

@test "a value of exactly 65536 bytes: set and read back through the view on a rw file, byte for byte" {
	pt_mount
	run -0 "$PTPROBE" setxattr "$MNT/f" user.big "@$BATS_TEST_TMPDIR/v64k"
	cmp <(getfattr --only-values -n user.big "$UP/f") "$BATS_TEST_TMPDIR/v64k" || fail "the branch holds another value"
	cmp <(getfattr --only-values -n user.big "$MNT/f") "$BATS_TEST_TMPDIR/v64k" || fail "the view reads another value"
	run -0 "$PTPROBE" getxattr "$MNT/f" user.big 0
	assert_output "OK 65536"
	run -1 "$PTPROBE" getxattr "$MNT/f" user.big 65535
	assert_output ERANGE
	run -0 "$PTPROBE" setxattr "$MNT/f" trusted.big "@$BATS_TEST_TMPDIR/v64k"
	cmp <(getfattr --only-values -n trusted.big "$UP/f") "$BATS_TEST_TMPDIR/v64k"
}

@test "a 65536-byte value of a lower file is intact through the view and after copy-up" {
	run -0 "$PTPROBE" setxattr "$LO/lf" user.big "@$BATS_TEST_TMPDIR/v64k"
	run -0 "$PTPROBE" setxattr "$LO/lf" trusted.big "@$BATS_TEST_TMPDIR/v64k"
	pt_mount
	cmp <(getfattr --only-values -n user.big "$MNT/lf") "$BATS_TEST_TMPDIR/v64k" || fail "wrong value before copy-up"
	echo x >>"$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	cmp <(getfattr --only-values -n user.big "$UP/lf") "$BATS_TEST_TMPDIR/v64k" || fail "the copy holds another value"
	cmp <(getfattr --only-values -n trusted.big "$UP/lf") "$BATS_TEST_TMPDIR/v64k" || fail "the copy holds another trusted value"
	cmp <(getfattr --only-values -n user.big "$MNT/lf") "$BATS_TEST_TMPDIR/v64k" || fail "the view reads another value after copy-up"
	run -0 cat "$MNT/lf"
	assert_output $'lower\nx'
}

# ------------------------------------------------------------ many names

@test "250 names of 250 characters: the view takes as many as the branch (XFS: all, a listing near 64 KiB; ext4: its ENOSPC)" {
	pt_mount
	run -0 pt_xfill "$T/ref" 250 250
	local want=$output
	run -0 pt_xfill "$MNT/f" 250 250
	assert_output "$want"
	case $SFS_FS in
	xfs) assert_output "250 OK" ;;
	# ext4 keeps the names of one inode in one block: full long before 250
	ext4) assert_output --regexp '^[0-9]+ ENOSPC$' ;;
	esac
	run -0 pt_xnames "$MNT/f"
	assert_output "$(pt_xnames "$UP/f")"
	assert_output "$(pt_xnames "$T/ref")"
	local n=${want%% *}
	run -0 "$PTPROBE" listxattr "$MNT/f" 65536
	assert_line "OK $((n * 251))"
	run -0 python3 -c 'import os, sys; print(len(os.listxattr(sys.argv[1])))' "$MNT/f"
	assert_output "$n"
}

@test "a lower file with 250 names of 250 characters (a listing near 64 KiB) keeps them all through copy-up" {
	[[ $SFS_FS == xfs ]] || skip "ext4 keeps the names of one inode in one 4 KiB block: no listing near 64 KiB"
	run -0 pt_xfill "$LO/lf" 250 250
	assert_output "250 OK"
	pt_mount
	run -0 "$PTPROBE" listxattr "$MNT/lf" 65536
	assert_line "OK $((250 * 251 + 9))"
	echo x >>"$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 "$PTPROBE" listxattr "$MNT/lf" 65536
	assert_line "OK $((250 * 251 + 9))"
	run -0 pt_xnames "$MNT/lf"
	assert_output "$(pt_xnames "$LO/lf")"
	run -0 cu_xattrs "$UP/lf"
	assert_output "$(cu_xattrs "$LO/lf")"
}

@test "a copied-up file whose listing is just under 64 KiB can still be listed through the view" {
	[[ $SFS_FS == xfs ]] || skip "ext4 keeps the names of one inode in one 4 KiB block: no listing near 64 KiB"
	# 255 names of 255 bytes and one of 239: a listing of 65520 bytes
	python3 - "$LO/lf" <<'EOF'
import os, sys
p = sys.argv[1]
os.removexattr(p, "user.low")
for i in range(255):
    os.setxattr(p, ("user.%05d" % i).ljust(255, "n"), b"v")
os.setxattr(p, "user.last".ljust(239, "n"), b"v")
EOF
	run -0 "$PTPROBE" listxattr "$LO/lf" 65536
	assert_line "OK 65520"
	pt_mount
	chmod 0600 "$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 "$PTPROBE" listxattr "$MNT/lf" 0
	run -0 "$PTPROBE" listxattr "$MNT/lf" 65536
	assert_line "OK 65520"
	run -0 getfattr -d "$MNT/lf"
}

# ------------------------------------------------------------ ENOSPC

@test "ENOSPC: on a full filesystem a 64 KiB value fails through the view as on the branch, and nothing is left set" {
	local img
	case $SFS_FS in
	ext4) img=$(pt_make_image ext4 64 full -O ea_inode -I 256) ;;
	xfs) img=$(pt_make_image xfs 320 full) ;;
	esac
	[[ -n $img ]] || fail "no image"
	mkdir "$img/up"
	echo a >"$img/up/f"
	echo b >"$img/ref"
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/other64k"
	sfs_mount "$img/up:$LO" "$MNT"
	pt_fill "$img"
	# what fallocate left (XFS keeps a reserve) is taken by values of ref
	run -0 python3 - "$img/ref" <<'EOF'
import errno, os, sys
for i in range(2000):
    try:
        os.setxattr(sys.argv[1], "user.pad%d" % i, os.urandom(65536))
    except OSError as e:
        print(errno.errorcode[e.errno])
        break
EOF
	assert_output ENOSPC
	run -1 "$PTPROBE" setxattr "$img/ref" user.big "@$BATS_TEST_TMPDIR/other64k"
	assert_output ENOSPC
	run -1 "$PTPROBE" setxattr "$MNT/f" user.big "@$BATS_TEST_TMPDIR/v64k"
	assert_output ENOSPC
	run -1 cu_xattr_text "$img/up/f" user.big
	run -1 setfattr -n user.big2 -v "0s$(base64 -w0 "$BATS_TEST_TMPDIR/v64k")" "$MNT/f"
	assert_output --partial "No space left on device"
	rm -f "$img"/fill.*
	run -0 "$PTPROBE" setxattr "$MNT/f" user.big "@$BATS_TEST_TMPDIR/v64k"
}

@test "a copy-up whose target cannot hold an attribute fails with the target's errno and leaves no partial copy" {
	# the rw branch: ext4 without ea_inode, where no value is larger than
	# a block; the lower file has a 64 KiB value
	local img want
	img=$(pt_make_image ext4 64 small -O ^ea_inode -I 256) || fail "no image"
	mkdir -p "$img/up"
	echo probe >"$img/probe"
	run -1 "$PTPROBE" setxattr "$img/probe" user.big "@$BATS_TEST_TMPDIR/v64k"
	want=$output
	[[ $want == E* ]] || fail "the small ext4 took a 64 KiB value: $want"
	run -0 "$PTPROBE" setxattr "$LO/lf" user.big "@$BATS_TEST_TMPDIR/v64k"
	mkdir -p "$LO/d"
	cp -a "$LO/lf" "$LO/d/g"
	sfs_snapshot "$LO"
	sfs_mount "$img/up:$LO" "$MNT"
	run -1 "$TOOLS/sysprobe" open "$MNT/lf" wronly,append
	assert_output "$want"
	run -1 bash -c "echo x >>'$MNT/lf'"
	assert_output --partial "$(python3 -c 'import errno, os, sys; print(os.strerror(getattr(errno, sys.argv[1])))' "$want")"
	run -1 chmod 0600 "$MNT/d/g"
	cu_assert_absent "$img/up/lf"
	cu_assert_absent "$img/up/d/g"
	cu_assert_work_empty "$img/up"
	# the view still shows the lower file, whole
	run -0 cat "$MNT/lf"
	assert_output lower
	cmp <(getfattr --only-values -n user.big "$MNT/lf") "$BATS_TEST_TMPDIR/v64k"
	sfs_assert_unchanged "$LO"
}

# ------------------------------------------------------------ the union's own

@test "the union's private attributes of a rw file are not listed, not readable, not settable, not removable" {
	setfattr -n user.mine -v 1 "$UP/f"
	setfattr -n trusted.overlay.x -v p1 "$UP/f"
	setfattr -n user.overlay.x -v p2 "$UP/f"
	setfattr -n trusted.stackfs.x -v p3 "$UP/f"
	pt_mount
	run -0 pt_xnames "$MNT/f"
	assert_output user.mine
	run -0 "$PTPROBE" listxattr "$MNT/f" 65536
	assert_output $'OK 10\nuser.mine'
	local n
	for n in trusted.overlay.x user.overlay.x trusted.stackfs.x; do
		run -1 "$PTPROBE" getxattr "$MNT/f" "$n" 100
		assert_output ENODATA
		run -1 "$PTPROBE" removexattr "$MNT/f" "$n"
		assert_output ENODATA
	done
	# the union's own namespace: refused
	run -1 "$PTPROBE" setxattr "$MNT/f" trusted.stackfs.x changed
	assert_output EPERM
	run -1 "$PTPROBE" setxattr "$MNT/f" trusted.stackfs.x.new v
	assert_output EPERM
	[[ $(cu_xattr_text "$UP/f" trusted.stackfs.x.new) == "" ]] || fail "trusted.stackfs.x.new was created"
	# kernel overlayfs names: stored escaped, as the kernel's overlayfs
	# stores them, never as the union's marks
	run -0 "$PTPROBE" setxattr "$MNT/f" trusted.overlay.x changed
	run -0 "$PTPROBE" setxattr "$MNT/f" user.overlay.x changed2
	run -0 cu_xattr_text "$UP/f" trusted.overlay.overlay.x
	assert_output changed
	run -0 cu_xattr_text "$UP/f" user.overlay.overlay.x
	assert_output changed2
	run -0 pt_xnames "$MNT/f"
	assert_output $'trusted.overlay.x\nuser.mine\nuser.overlay.x'
	run -0 "$PTPROBE" removexattr "$MNT/f" trusted.overlay.x
	[[ $(cu_xattr_text "$UP/f" trusted.overlay.overlay.x) == "" ]] || fail "not removed"
	# the branch's own records are untouched
	run -0 cu_xattr_text "$UP/f" trusted.overlay.x
	assert_output p1
	run -0 cu_xattr_text "$UP/f" user.overlay.x
	assert_output p2
	run -0 cu_xattr_text "$UP/f" trusted.stackfs.x
	assert_output p3
	run -0 "$PTPROBE" setxattr "$MNT/f" trusted.overlay_not_private v
	run -0 cu_xattr_text "$UP/f" trusted.overlay_not_private
}

@test "a copied-up file shows no trusted.stackfs.origin through the view though its copy has it" {
	pt_mount
	chmod 0600 "$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 cu_xattr "$UP/lf" trusted.stackfs.origin
	run -0 pt_xnames "$MNT/lf"
	assert_output user.low
	run -1 "$PTPROBE" getxattr "$MNT/lf" trusted.stackfs.origin 100
	assert_output ENODATA
	run -1 "$PTPROBE" setxattr "$MNT/lf" trusted.stackfs.origin forged
	assert_output EPERM
	run -1 "$PTPROBE" removexattr "$MNT/lf" trusted.stackfs.origin
	run -0 cu_xattr "$UP/lf" trusted.stackfs.origin
	refute_output forged
}
