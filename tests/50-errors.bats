#!/usr/bin/env bats
# Errors keep the underlying errno: ENOSPC, ENOTEMPTY, EEXIST, ENOENT,
# EISDIR, ENOTDIR, ENAMETOOLONG, EINVAL, ELOOP, EPERM. Never EIO.

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	mkdir -p "$UP/ud/sub" "$UP/empty" "$LO/ld/sub" "$LO/both" "$UP/both"
	echo u >"$UP/uf"
	echo l >"$LO/lf"
	echo l >"$LO/both/lower-only"
	touch "$UP/ud/sub/f"
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
}

# probe OP ARGS...: expects the call to fail with the errno name in $ERR
errno_is() {
	local want=$1
	shift
	run -1 "$TOOLS/sysprobe" "$@"
	[[ $output == "$want" ]] || fail "sysprobe $*: want $want, got: $output"
}

@test "ENOSPC: writing past the end of a full rw filesystem fails with ENOSPC" {
	local small avail
	small=$(sfs_make_image "$SFS_FS" 64 full)
	mkdir "$small/up"
	avail=$(($(stat -f -c '%a * %S' "$small")))
	fallocate -l $((avail - 2 * 1024 * 1024)) "$small/filler" || dd if=/dev/zero of="$small/filler" bs=1M count=$((avail / 1048576 - 2)) 2>/dev/null
	sfs_mount "$small/up:$LO" "$MNT"
	run -1 "$TOOLS/sysprobe" fill "$MNT/big" 64
	assert_output --regexp '^(write|fsync|close): ENOSPC$'
	# the view stays usable: remove the file, space is back
	rm "$MNT/big"
	run -0 "$TOOLS/sysprobe" fill "$MNT/small" 1
	sfs_assert_unchanged "$LO"
}

@test "ENOSPC: dd into a full rw filesystem says 'No space left on device'" {
	local small avail
	small=$(sfs_make_image "$SFS_FS" 64 full)
	mkdir "$small/up"
	avail=$(($(stat -f -c '%a * %S' "$small")))
	fallocate -l $((avail - 1024 * 1024)) "$small/filler" || dd if=/dev/zero of="$small/filler" bs=1M count=$((avail / 1048576 - 1)) 2>/dev/null
	sfs_mount "$small/up:$LO" "$MNT"
	run dd if=/dev/zero of="$MNT/big" bs=1M count=16 conv=fsync
	assert_failure
	assert_output --partial "No space left on device"
	refute_output --partial "Input/output error"
}

@test "ENOTEMPTY: rmdir of a non-empty rw directory" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ENOTEMPTY rmdir "$MNT/ud"
	[[ -d $UP/ud/sub ]]
}

@test "ENOTEMPTY: rename of a directory over a non-empty rw directory" {
	mkdir "$UP/src"
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ENOTEMPTY rename "$MNT/src" "$MNT/ud"
	[[ -d $UP/src && -f $UP/ud/sub/f ]]
}

@test "ENOTEMPTY: rmdir of a merged directory whose rw part is empty but lower part is not" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ENOTEMPTY rmdir "$MNT/both"
	[[ -d $UP/both ]] || fail "the rw part was removed"
	run -0 cat "$MNT/both/lower-only"
	sfs_assert_unchanged "$LO"
}

@test "EEXIST: mkdir over rw and lower entries, files and directories" {
	sfs_mount "$UP:$LO" "$MNT"
	for n in ud uf ld lf both; do
		errno_is EEXIST mkdir "$MNT/$n"
	done
	sfs_assert_unchanged "$LO"
}

@test "EEXIST: symlink, link and mknod over existing names" {
	sfs_mount "$UP:$LO" "$MNT"
	for n in uf lf ld; do
		errno_is EEXIST symlink target "$MNT/$n"
		errno_is EEXIST link "$MNT/uf" "$MNT/$n"
		errno_is EEXIST mknod "$MNT/$n" fifo 0644
	done
	run -0 cat "$UP/uf"
	assert_output u
	sfs_assert_unchanged "$LO"
}

@test "ENOENT: lookups, opens, removals and renames of missing names" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ENOENT access "$MNT/nothere" F
	errno_is ENOENT open "$MNT/nothere" rdonly
	errno_is ENOENT unlink "$MNT/nothere"
	errno_is ENOENT rmdir "$MNT/nothere"
	errno_is ENOENT readlink "$MNT/nothere"
	errno_is ENOENT rename "$MNT/nothere" "$MNT/other"
	errno_is ENOENT link "$MNT/nothere" "$MNT/other"
	errno_is ENOENT truncate "$MNT/nothere" 0
	errno_is ENOENT open "$MNT/nodir/new" wronly,creat
	errno_is ENOENT mkdir "$MNT/nodir/new"
	errno_is ENOENT access "$MNT/ld/nothere" F
	[[ ! -e $UP/nodir && ! -e $UP/other ]]
}

@test "EISDIR: writing, unlinking and renaming a file over a directory" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is EISDIR open "$MNT/ud" wronly
	errno_is EISDIR open "$MNT/ld" rdwr
	errno_is EISDIR unlink "$MNT/ud"
	errno_is EISDIR rename "$MNT/uf" "$MNT/empty"
	[[ -f $UP/uf && -d $UP/empty ]]
	sfs_assert_unchanged "$LO"
}

@test "ENOTDIR: a file used as a directory" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ENOTDIR mkdir "$MNT/uf/x"
	errno_is ENOTDIR open "$MNT/uf/x" wronly,creat
	errno_is ENOTDIR access "$MNT/lf/x" F
	errno_is ENOTDIR rmdir "$MNT/uf"
	errno_is ENOTDIR opendir "$MNT/uf"
	errno_is ENOTDIR open "$MNT/lf" rdonly,directory
	errno_is ENOTDIR rename "$MNT/empty" "$MNT/uf"
	[[ -d $UP/empty && -f $UP/uf ]]
	sfs_assert_unchanged "$LO"
}

@test "ENAMETOOLONG: a 256-byte name" {
	local long
	long=$(printf 'n%.0s' {1..256})
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ENAMETOOLONG open "$MNT/$long" wronly,creat
	errno_is ENAMETOOLONG mkdir "$MNT/$long"
	errno_is ENAMETOOLONG access "$MNT/$long" F
}

@test "EINVAL: renaming a directory into itself" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is EINVAL rename "$MNT/ud" "$MNT/ud/sub/inside"
	[[ -d $UP/ud/sub ]]
}

@test "ELOOP: O_NOFOLLOW on a symlink" {
	ln -s uf "$UP/sl"
	ln -s lf "$LO/lsl"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT"
	errno_is ELOOP open "$MNT/sl" rdonly,nofollow
	errno_is ELOOP open "$MNT/lsl" rdonly,nofollow
}

@test "EPERM: a hard link to a directory" {
	sfs_mount "$UP:$LO" "$MNT"
	errno_is EPERM link "$MNT/ud" "$MNT/udlink"
}
