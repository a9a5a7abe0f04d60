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
