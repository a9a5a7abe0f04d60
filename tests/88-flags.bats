#!/usr/bin/env bats
# Inode flags through the view: lsattr/chattr (FS_IOC_GETFLAGS/SETFLAGS)
# and the fsxattr calls of xfs_io (FS_IOC_FSGETXATTR/FSSETXATTR) act on
# the branch entry; immutable and append-only files behave as on the
# branch; copy-up keeps a lower entry's flags, so a lower immutable file
# stays unwritable until `chattr -i` through the view, which leaves the
# lower file immutable.

load helpers/common
load helpers/passthrough
load helpers/copyup

setup_file() {
	sfs_setup_file 1
	sfs_require_tool sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd chattr lsattr
	sfs_setup_branches
	echo upper >"$UP/f"
	mkdir "$UP/d"
	# a lower file of several blocks and extents
	head -c 200000 /dev/urandom >"$BATS_TEST_TMPDIR/data"
	cp "$BATS_TEST_TMPDIR/data" "$LO/big"
	echo lower >"$LO/small"
}

teardown() {
	# immutable and append-only entries could not be removed
	pt_unflag "${T:-}"
	sfs_cleanup
}

# The flags lsattr shows for an entry (not its contents for a directory).
flags() {
	lsattr -d -- "$1" 2>&1 | awk '{ print $1 }'
}

# ------------------------------------------------------------ lsattr/chattr

@test "chattr +a, +i, +d, +A through the view on a rw file and a rw directory: lsattr shows them through the view and on the branch" {
	pt_mount
	local e fl
	for e in f d; do
		for fl in a i d A; do
			chattr "+$fl" "$MNT/$e" || fail "chattr +$fl $e through the view failed"
			run -0 flags "$UP/$e"
			[[ $output == *"$fl"* ]] || fail "chattr +$fl $e: the branch shows $output"
			assert_output "$(flags "$MNT/$e")"
			chattr "-$fl" "$MNT/$e" || fail "chattr -$fl $e through the view failed"
			run -0 flags "$UP/$e"
			[[ $output != *"$fl"* ]] || fail "chattr -$fl $e: the branch still shows $output"
			assert_output "$(flags "$MNT/$e")"
		done
	done
	# flags set on the branch show through the view
	chattr +d "$UP/f"
	run -0 flags "$MNT/f"
	assert_output "$(flags "$UP/f")"
	[[ $output == *d* ]] || fail "the view shows $output"
}

@test "an append-only rw file takes >> but refuses >, truncate and rm with EPERM" {
	chattr +a "$UP/f"
	pt_mount
	echo more >>"$MNT/f" || fail "append to an append-only file failed"
	run -1 "$TOOLS/sysprobe" open "$MNT/f" wronly
	assert_output EPERM
	run -1 "$TOOLS/sysprobe" open "$MNT/f" wronly,trunc
	assert_output EPERM
	run ! bash -c "echo new >'$MNT/f'"
	assert_output --partial "Operation not permitted"
	run ! truncate -s 0 "$MNT/f"
	assert_output --partial "Operation not permitted"
	run ! rm -f "$MNT/f"
	assert_output --partial "Operation not permitted"
	run -0 cat "$UP/f"
	assert_output $'upper\nmore'
	run -0 cat "$MNT/f"
	assert_output $'upper\nmore'
}

@test "an immutable rw file refuses writes, rm, mv, chmod, chown, touch, ln and setfattr with EPERM; chattr -i allows them again" {
	chattr +i "$UP/f"
	pt_mount
	sfs_snapshot "$UP"
	run -1 "$TOOLS/sysprobe" open "$MNT/f" wronly,append
	assert_output EPERM
	run ! bash -c "echo x >>'$MNT/f'"
	assert_output --partial "Operation not permitted"
	local cmd
	for cmd in "rm -f" "mv -T" "chmod 0600" "chown 1:1" "touch" "ln" "setfattr -n user.x -v 1"; do
		case $cmd in
		"mv -T" | ln) run ! $cmd "$MNT/f" "$MNT/f2" ;;
		*) run ! $cmd "$MNT/f" ;;
		esac
		assert_output --partial "Operation not permitted"
	done
	sfs_assert_unchanged "$UP"
	chattr -i "$MNT/f"
	echo x >>"$MNT/f"
	chmod 0600 "$MNT/f"
	run -0 cat "$UP/f"
	assert_output $'upper\nx'
	rm "$MNT/f"
	cu_assert_absent "$UP/f"
}

@test "an immutable rw directory refuses new entries, removals and renames inside it" {
	touch "$UP/d/in"
	chattr +i "$UP/d"
	pt_mount
	run ! touch "$MNT/d/new"
	assert_output --partial "Operation not permitted"
	run ! mkdir "$MNT/d/sub"
	assert_output --partial "Operation not permitted"
	run ! rm -f "$MNT/d/in"
	assert_output --partial "Operation not permitted"
	run ! mv "$MNT/d/in" "$MNT/d/in2"
	assert_output --partial "Operation not permitted"
	run -0 ls "$UP/d"
	assert_output in
	chattr -i "$MNT/d"
	touch "$MNT/d/new"
	[[ -f $UP/d/new ]] || fail "no new entry after chattr -i"
}

# ------------------------------------------------------------ lower entries

@test "a lower immutable file stays immutable through the view: writes fail with EPERM, the lower file is untouched" {
	chattr +i "$LO/big" "$LO/small"
	sfs_snapshot "$LO"
	pt_mount
	for e in small big; do
		run -0 flags "$MNT/$e"
		[[ $output == *i* ]] || fail "lsattr $e through the view: $output"
		run -1 "$TOOLS/sysprobe" open "$MNT/$e" wronly,append
		assert_output EPERM
		# a second attempt: the same answer, whatever the first left
		run -1 "$TOOLS/sysprobe" open "$MNT/$e" wronly,append
		assert_output EPERM
		run ! chmod 0600 "$MNT/$e"
		assert_output --partial "Operation not permitted"
	done
	cmp "$MNT/big" "$BATS_TEST_TMPDIR/data"
	run -0 cat "$MNT/small"
	assert_output lower
	cu_assert_work_empty "$UP"
	sfs_assert_unchanged "$LO"
}

@test "chattr -i through the view on a lower immutable file allows writes; the lower file stays immutable" {
	chattr +i "$LO/big" "$LO/small"
	sfs_snapshot "$LO"
	pt_mount
	for e in small big; do
		chattr -i "$MNT/$e" || fail "chattr -i $e through the view failed"
		[[ -f $UP/$e ]] || fail "$e not copied up"
		run -0 flags "$MNT/$e"
		[[ $output != *i* ]] || fail "lsattr $e through the view: $output"
		echo more >>"$MNT/$e" || fail "append to $e after chattr -i failed"
		run -0 flags "$LO/$e"
		[[ $output == *i* ]] || fail "the lower $e lost its immutable flag: $output"
	done
	cmp "$UP/big" <(cat "$BATS_TEST_TMPDIR/data"; echo more)
	run -0 cat "$MNT/small"
	assert_output $'lower\nmore'
	sfs_assert_unchanged "$LO"
}

@test "a lower append-only file takes >> through the view and refuses >; the copy is append-only" {
	chattr +a "$LO/big" "$LO/small"
	sfs_snapshot "$LO"
	pt_mount
	for e in small big; do
		echo more >>"$MNT/$e" || fail "append to the lower append-only $e failed"
		[[ -f $UP/$e ]] || fail "$e not copied up"
		run -0 flags "$UP/$e"
		[[ $output == *a* ]] || fail "the copy of $e is not append-only: $output"
		run -1 "$TOOLS/sysprobe" open "$MNT/$e" wronly,trunc
		assert_output EPERM
	done
	cmp "$MNT/big" <(cat "$BATS_TEST_TMPDIR/data"; echo more)
	run -0 cat "$MNT/small"
	assert_output $'lower\nmore'
	sfs_assert_unchanged "$LO"
}

@test "copy-up keeps the inode flags of a small lower file and a lower directory exactly as lsattr shows them" {
	chattr +d "$LO/small"
	mkdir "$LO/ld"
	chattr +d +A "$LO/ld"
	pt_mount
	chmod 0600 "$MNT/small" || fail "chmod of the lower +d file failed"
	touch "$MNT/ld/new" || fail "creating in the lower +dA directory failed"
	[[ -f $UP/small && -d $UP/ld ]] || fail "not copied up: $(ls -A "$UP")"
	for e in small ld; do
		run -0 flags "$UP/$e"
		assert_output "$(flags "$LO/$e")"
		run -0 flags "$MNT/$e"
		assert_output "$(flags "$LO/$e")"
	done
	# the copy is a normal file of its filesystem: it can be preallocated
	run -0 fallocate -n -l 1048576 "$MNT/small"
}

@test "a change to a multi-block lower file with chattr flags (+A) copies it up with its flags and content" {
	chattr +A "$LO/big"
	sfs_snapshot "$LO"
	pt_mount
	chmod 0600 "$MNT/big" || fail "chmod of the lower +A file failed"
	[[ -f $UP/big ]] || fail "not copied up"
	run -0 flags "$UP/big"
	assert_output "$(flags "$LO/big")"
	run -0 stat -c %a "$MNT/big"
	assert_output 600
	cmp "$MNT/big" "$BATS_TEST_TMPDIR/data"
	echo more >>"$MNT/big"
	cmp "$UP/big" <(cat "$BATS_TEST_TMPDIR/data"; echo more)
	cu_assert_work_empty "$UP"
	sfs_assert_unchanged "$LO"
}

# ------------------------------------------------------------ fsxattr

@test "xfs_io lsattr/chattr and FS_IOC_FSGETXATTR through the view act on the branch entry" {
	sfs_require_cmd xfs_io
	sfs_require_tool ptprobe
	pt_mount
	xfs_io -c 'chattr +d' "$MNT/f" || fail "xfs_io chattr +d through the view failed"
	run -0 flags "$UP/f"
	[[ $output == *d* ]] || fail "the branch shows $output"
	run -0 xfs_io -r -c lsattr "$MNT/f"
	assert_output "$(xfs_io -r -c lsattr "$UP/f" | sed "s|$UP|$MNT|")"
	assert_output --regexp '^-*d'
	run -0 "$PTPROBE" fsxattr "$MNT/f"
	assert_output "$("$PTPROBE" fsxattr "$UP/f")"
	xfs_io -c 'chattr +A' "$MNT/d" || fail "xfs_io chattr +A on a directory through the view failed"
	run -0 flags "$UP/d"
	[[ $output == *A* ]] || fail "the branch directory shows $output"
	run -0 "$PTPROBE" fsxattr "$MNT/d"
	assert_output "$("$PTPROBE" fsxattr "$UP/d")"
}

@test "FS_IOC_FSSETXATTR of a project id through the view lands on the branch, or fails with the branch's errno" {
	sfs_require_tool ptprobe
	: >"$UP/e"
	: >"$T/ref"
	pt_mount
	# ext4 without the project feature refuses (EOPNOTSUPP), XFS takes it
	run "$PTPROBE" fsxattr "$T/ref" projid=42
	local want=$output
	run "$PTPROBE" fsxattr "$MNT/e" projid=42
	assert_output "$want"
	run -0 "$PTPROBE" fsxattr "$UP/e"
	assert_output "$("$PTPROBE" fsxattr "$T/ref")"
	if [[ $SFS_FS == xfs ]]; then
		assert_output --partial "projid=42"
	fi
}

@test "an XFS extent size hint set through the view (FS_IOC_FSSETXATTR) is the branch file's" {
	[[ $SFS_FS == xfs ]] || skip "$SFS_FS has no extent size hints"
	sfs_require_tool ptprobe
	: >"$UP/e"
	pt_mount
	run -0 "$PTPROBE" fsxattr "$MNT/e" extsize=1048576
	assert_output --partial "extsize=1048576"
	run -0 "$PTPROBE" fsxattr "$UP/e"
	assert_output --partial "extsize=1048576"
	run -0 xfs_io -r -c extsize "$UP/e"
	assert_output --partial '[1048576]'
}
