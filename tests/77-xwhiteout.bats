#!/usr/bin/env bats
# The xattr whiteouts of Linux 6.7+ overlayfs (issue 15): in a directory
# marked to hold them (overlay.opaque "x", or 6.7's overlay.whiteouts), an
# empty regular file carrying overlay.whiteout deletes its name below, in
# the trusted. namespace and, for userxattr layers, the user. one. The
# kernel's own overlayfs, mounted over the same layers, is the reference:
# the stackfs view must list what the kernel's lists.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd setfattr
	sfs_setup_branches
	KMNT=$BATS_TEST_TMPDIR/kernel
	mkdir -p "$KMNT"
}

teardown() {
	sfs_cleanup
}

# layers NS MARK: L1 holds a, b, d/c, d/e; L2 deletes a and d/c with
# xattr whiteouts of namespace NS (trusted or user), its root and d
# marked with MARK (opaque-x or whiteouts).
layers() {
	local ns=$1 mark=$2 dir
	mkdir -p "$T/L1/d" "$T/L2/d"
	echo a >"$T/L1/a"
	echo b >"$T/L1/b"
	echo c >"$T/L1/d/c"
	echo e >"$T/L1/d/e"
	: >"$T/L2/a"
	: >"$T/L2/d/c"
	setfattr -n "$ns.overlay.whiteout" -v y "$T/L2/a"
	setfattr -n "$ns.overlay.whiteout" -v y "$T/L2/d/c"
	for dir in "$T/L2" "$T/L2/d"; do
		if [[ $mark == opaque-x ]]; then
			setfattr -n "$ns.overlay.opaque" -v x "$dir"
		else
			setfattr -n "$ns.overlay.whiteouts" -v y "$dir"
		fi
	done
}

# listing DIR: every path under DIR with its type.
listing() {
	(cd "$1" && find . -mindepth 1 -printf '%y %p\n' | LC_ALL=C sort)
}

# kernel_view OPTS: the kernel overlayfs's listing of L2 over L1.
kernel_view() {
	sfs_record mount "$KMNT"
	mount -t overlay overlay -o "${1:+$1,}lowerdir=$T/L2:$T/L1" "$KMNT" ||
		skip "kernel overlayfs did not mount the layers"
	listing "$KMNT" >"$T/kernel.txt"
	umount "$KMNT"
	grep -q ' ./b$' "$T/kernel.txt" || fail "the kernel view lacks b: $(cat "$T/kernel.txt")"
	! grep -q ' ./a$' "$T/kernel.txt" ||
		skip "this kernel does not read xattr whiteouts ($1)"
}

same_as_kernel() {
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	listing "$MNT" >"$T/stackfs.txt"
	run -0 diff "$T/kernel.txt" "$T/stackfs.txt"
	# and a lookup by name agrees with the listing
	run -1 stat "$MNT/a"
	run -1 stat "$MNT/d/c"
	run -0 cat "$MNT/d/e"
	assert_output e
}

@test "xattr whiteouts (trusted.overlay.*) in directories marked opaque=x: as the kernel's overlayfs shows them" {
	layers trusted opaque-x
	kernel_view ""
	same_as_kernel
}

@test "xattr whiteouts in directories marked with overlay.whiteouts (Linux 6.7's marker)" {
	layers trusted whiteouts
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	run -0 listing "$MNT"
	assert_output $'d ./d\nf ./b\nf ./d/e'
}

@test "xattr whiteouts of a userxattr layer (user.overlay.*): as the kernel's overlayfs with -o userxattr shows them" {
	layers user opaque-x
	kernel_view userxattr
	same_as_kernel
}

@test "an empty file carrying overlay.whiteout in an unmarked directory is a file, as the kernel shows it" {
	layers trusted opaque-x
	setfattr -x trusted.overlay.opaque "$T/L2/d"
	kernel_view ""
	grep -q '^f ./d/c$' "$T/kernel.txt" || fail "the kernel hid d/c: $(cat "$T/kernel.txt")"
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	listing "$MNT" >"$T/stackfs.txt"
	run -0 diff "$T/kernel.txt" "$T/stackfs.txt"
	run -0 stat -c %s "$MNT/d/c"
	assert_output 0
}

# The marks are found by one listxattr of the directory
# (whiteout/whiteout.c): a marker among other attributes, and one among
# more names than that list's buffer holds (the reads by name then), count
# as before; an opaque "y" (not "x") makes no xattr whiteouts.
@test "directory marks among other attributes, and beyond a 1 KiB list of names, still mark xattr whiteouts" {
	local i
	layers trusted whiteouts
	setfattr -n user.note -v 1 "$T/L2"
	for ((i = 0; i < 40; i++)); do
		setfattr -n "user.a-long-attribute-name-to-fill-the-list-$i" -v 1 "$T/L2/d"
	done
	(($(getfattr -d -m - "$T/L2/d" 2>/dev/null | wc -c) > 1024)) || fail "the list of d is short"
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	run -0 listing "$MNT"
	assert_output $'d ./d\nf ./b\nf ./d/e'
	run -1 stat "$MNT/a"
	run -1 stat "$MNT/d/c"
	"$SFS" umount "$MNT"
	# opaque "y" beside the whiteouts marker taken away: an opaque
	# directory, its empty file a file of its own
	setfattr -x trusted.overlay.whiteouts "$T/L2/d"
	setfattr -n trusted.overlay.opaque -v y "$T/L2/d"
	sfs_mount "$UP:$T/L2=ro:$T/L1=ro" "$MNT"
	run -0 listing "$MNT/d"
	assert_output 'f ./c'
}

# Escaped names (Linux 6.7+ "Nesting overlayfs"): a layer's
# trusted.overlay.overlay.X is its entry's own trusted.overlay.X, shown as
# such by the outer union and never a mark of it; an inner kernel
# overlayfs over the view then reads it as its mark.
@test "escaped xattr whiteouts of a nested overlay: shown unescaped, read by an inner kernel overlayfs over the view" {
	mkdir -p "$T/L1" "$T/C/d"
	echo hidden >"$T/C/d/w"
	echo kept >"$T/C/d/k"
	mkdir -p "$T/L1/d"
	: >"$T/L1/d/w"
	setfattr -n trusted.overlay.overlay.whiteout -v y "$T/L1/d/w"
	setfattr -n trusted.overlay.overlay.opaque -v x "$T/L1/d"
	# the kernel's own outer overlay shows the same as stackfs
	sfs_record mount "$KMNT"
	mount -t overlay overlay -o "lowerdir=$T/L1:$T/C" "$KMNT" ||
		skip "kernel overlayfs did not mount the layers"
	getfattr -h -n trusted.overlay.whiteout "$KMNT/d/w" >/dev/null 2>&1 ||
		{ umount "$KMNT"; skip "this kernel does not unescape overlay.overlay.* xattrs"; }
	umount "$KMNT"
	sfs_mount "$UP:$T/L1=ro:$T/C=ro" "$MNT"
	# the outer union: w is an empty file with the inner mark, d merged
	run -0 getfattr -h --absolute-names --only-values -n trusted.overlay.whiteout "$MNT/d/w"
	assert_output y
	run -0 getfattr -h --absolute-names --only-values -n trusted.overlay.opaque "$MNT/d"
	assert_output x
	run -0 ls "$MNT/d"
	assert_output $'k\nw'
	run -0 stat -c %s "$MNT/d/w"
	assert_output 0
	# an inner kernel overlayfs over the view takes it as an xattr
	# whiteout of w (of the layer below it: a copy of C)
	mkdir -p "$T/C2/d"
	echo below >"$T/C2/d/w"
	mount -t overlay overlay -o "lowerdir=$MNT:$T/C2" "$KMNT" ||
		fail "kernel overlayfs did not mount over the view"
	run -0 ls "$KMNT/d"
	umount "$KMNT"
	assert_output k
	# a copy-up keeps the escaped names as they are stored
	touch "$MNT/d/w"
	run -0 getfattr -h --absolute-names --only-values -n trusted.overlay.overlay.whiteout "$UP/d/w"
	assert_output y
	run -1 getfattr -h -n trusted.overlay.whiteout "$UP/d/w"
}
