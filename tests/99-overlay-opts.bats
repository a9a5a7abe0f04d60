#!/usr/bin/env bats
# Overlay-style mount options: -o lowerdir=A:B,upperdir=U,workdir=W as
# another way to give the branches (U rw over A, B ro; lowerdir alone: all
# ro), so that stackfs stands in where fuse-overlayfs is the mount program.
# The operands are then [SOURCE] MOUNTPOINT, SOURCE a label that is
# ignored. Refused combinations give a one-line message naming the problem
# and change nothing.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2 work
	echo up >"$UP/u"
	echo lo >"$LO/l"
	echo lo-shared >"$LO/shared"
	echo lo2 >"$LO2/l2"
	echo lo2-shared >"$LO2/shared"
	mkdir "$LO/d" "$LO2/d"
	echo a >"$LO/d/a"
	echo b >"$LO2/d/b"
}

teardown() {
	sfs_cleanup
}

# ovl_mount OPTS [SOURCE]: stackfs mount -o OPTS SOURCE $MNT (the CLI),
# recorded for cleanup; checks it is a live stackfs mount.
ovl_mount() {
	local opts=$1 source=${2:-overlay}
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFS" mount -o "$opts" "$source" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not a stackfs mount: $(findmnt -M "$MNT")"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
}

# refused ARGS...: `stackfs mount ARGS` fails with a one-line message (in
# $stderr), nothing gets mounted and nothing under $T changes.
refused() {
	sfs_snapshot "$T"
	sfs_record stackfs "$MNT"
	run --separate-stderr "$SFS" mount "$@"
	assert_refused
	[[ -n $stderr ]] || fail "no message on stderr"
	((${#stderr_lines[@]} == 1)) || fail "message is not one line: $stderr"
	sfs_is_mounted "$MNT" && fail "$MNT got mounted"
	sfs_assert_unchanged "$T"
}

names() {
	local s
	for s in "$@"; do
		[[ $stderr == *"$s"* ]] || fail "message does not name '$s': $stderr"
	done
}

@test "lowerdir=LO,upperdir=UP,workdir=W overlay MNT: UP rw over LO, writes land in UP" {
	ovl_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK"
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
	echo new >"$MNT/new"
	[[ $(<"$UP/new") == new ]] || fail "a new file did not land in upperdir"
	[[ ! -e $LO/new ]] || fail "a new file landed in lowerdir"
	echo more >>"$MNT/l"
	[[ $(<"$UP/l") == $'lo\nmore' ]] || fail "a written lower file was not copied up into upperdir"
	[[ $(<"$LO/l") == lo ]] || fail "lowerdir changed"
	rm "$MNT/shared"
	[[ -e $LO/shared ]] || fail "a delete reached lowerdir"
	[[ ! -e $MNT/shared ]] || fail "a deleted lower file is still visible"
	# stackfs keeps its staging directory in upperdir, not in workdir
	[[ -d $UP/.stackfs ]] || fail "no $UP/.stackfs"
	[[ -z $(ls -A "$WORK") ]] || fail "workdir was used: $(ls -A "$WORK")"
	run -0 "$SFS" umount "$MNT"
}

@test "lowerdir=A:B: A has priority over B, directories merge, all under upperdir" {
	ovl_mount "lowerdir=$LO:$LO2,upperdir=$UP,workdir=$WORK"
	run -0 cat "$MNT/shared" "$MNT/l" "$MNT/l2" "$MNT/u"
	assert_output $'lo-shared\nlo\nlo2\nup'
	run -0 ls "$MNT/d"
	assert_output $'a\nb'
	touch "$MNT/d/c"
	[[ -f $UP/d/c ]] || fail "new file not in upperdir"
	echo x >>"$MNT/l2"
	[[ -f $UP/l2 && $(<"$LO2/l2") == lo2 ]] || fail "copy-up from the second lowerdir went wrong"
}

@test "the mount-program form: stackfsd -o lowerdir=...,upperdir=...,workdir=... MOUNTPOINT (one operand)" {
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFSD" -o "lowerdir=$LO:$LO2,upperdir=$UP,workdir=$WORK" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not a stackfs mount"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
	run -0 cat "$MNT/l" "$MNT/l2" "$MNT/u"
	assert_output $'lo\nlo2\nup'
	echo n >"$MNT/n"
	[[ -f $UP/n ]] || fail "write did not land in upperdir"
	run -0 "$SFS" umount "$MNT"
}

@test "stackfs mount -o lowerdir=...,upperdir=... MOUNTPOINT: one operand is enough" {
	sfs_record stackfs "$MNT"
	run -0 "$SFS" mount -o "lowerdir=$LO,upperdir=$UP,workdir=$WORK" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not a stackfs mount"
	run -0 cat "$MNT/l" "$MNT/u"
	assert_output $'lo\nup'
	run -2 "$SFS" mount "$MNT"
	assert_output --partial "missing MOUNTPOINT"
	run -0 "$SFS" umount "$MNT"
}

@test "the mount.fuse3 form: stackfs overlay MNT -o lowerdir=...,upperdir=..." {
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFS" overlay "$MNT" -o "lowerdir=$LO,upperdir=$UP,workdir=$WORK"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not a stackfs mount"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
}

@test "mount -t fuse.stackfs overlay MNT -o lowerdir=...,upperdir=...,workdir=..." {
	sfs_install_for_mount8
	sfs_record stackfs "$MNT"
	run -0 mount -t fuse.stackfs overlay "$MNT" -o "lowerdir=$LO:$LO2,upperdir=$UP,workdir=$WORK"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not fuse.stackfs: $(findmnt -M "$MNT")"
	run -0 cat "$MNT/l" "$MNT/l2"
	assert_output $'lo\nlo2'
	touch "$MNT/t"
	[[ -f $UP/t ]] || fail "write did not land in upperdir"
	run -0 "$SFS" umount "$MNT"
}

@test "an fstab line 'overlay MP fuse.stackfs lowerdir=...,upperdir=...,workdir=... 0 0'" {
	local fstab=$BATS_TEST_TMPDIR/fstab
	sfs_install_for_mount8
	printf 'overlay %s fuse.stackfs lowerdir=%s,upperdir=%s,workdir=%s,noauto 0 0\n' \
		"$MNT" "$LO:$LO2" "$UP" "$WORK" >"$fstab"
	sfs_record stackfs "$MNT"
	run -0 mount -T "$fstab" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not fuse.stackfs"
	run -0 cat "$MNT/shared"
	assert_output lo-shared
}

@test "lowerdir only: a read-only union, writes fail with EROFS" {
	ovl_mount "lowerdir=$LO:$LO2"
	run -0 cat "$MNT/l" "$MNT/l2" "$MNT/shared"
	assert_output $'lo\nlo2\nlo-shared'
	sfs_snapshot "$T"
	run sh -c "echo x >'$MNT/new'"
	assert_failure
	assert_output --partial "Read-only file system"
	run sh -c "echo x >>'$MNT/l'"
	assert_failure
	assert_output --partial "Read-only file system"
	run mkdir "$MNT/newdir"
	assert_failure
	assert_output --partial "Read-only file system"
	run rm "$MNT/l2"
	assert_failure
	assert_output --partial "Read-only file system"
	sfs_assert_unchanged "$T"
	[[ ! -e $LO/.stackfs && ! -e $LO2/.stackfs ]] || fail "a metadata directory was made in a ro lowerdir"
}

@test "workdir is optional: lowerdir=LO,upperdir=UP" {
	ovl_mount "lowerdir=$LO,upperdir=$UP"
	echo n >"$MNT/n"
	[[ -f $UP/n ]] || fail "write did not land in upperdir"
}

@test "lowerdir paths with ':' ('\\:' after libfuse's own unescaping), '=' and '\\'" {
	local odd=$T/'we:ird=x\y'
	mkdir "$odd"
	echo odd >"$odd/o"
	# libfuse takes one level of backslashes from -o: '\\:' reaches the
	# parser as '\:', a ':' inside a path, as overlayfs writes it
	ovl_mount "lowerdir=$T/we\\\\:ird=x\\\\\\\\y:$LO,upperdir=$UP,workdir=$WORK"
	run -0 cat "$MNT/o" "$MNT/l"
	assert_output $'odd\nlo'
}

@test "an upperdir with '=' and '\\' in its name" {
	local up=$T/'u=p\q'
	mkdir "$up"
	ovl_mount "lowerdir=$LO,upperdir=$T/u=p\\\\\\\\q"
	echo n >"$MNT/n"
	[[ -f $up/n ]] || fail "write did not land in '$up'"
}

@test "refused: lowerdir= empty" {
	refused -o "lowerdir=,upperdir=$UP" overlay "$MNT"
	names lowerdir
}

@test "refused: an empty directory in lowerdir (A:, A::, ::B, A:::B)" {
	refused -o "lowerdir=$LO:,upperdir=$UP" overlay "$MNT"
	names lowerdir
	refused -o "lowerdir=$LO::,upperdir=$UP" overlay "$MNT"
	names lowerdir
	refused -o "lowerdir=::$LO2,upperdir=$UP" overlay "$MNT"
	names lowerdir
	refused -o "lowerdir=$LO:::$LO2,upperdir=$UP" overlay "$MNT"
	names lowerdir
}

@test "lowerdir=A::B: B is a data-only layer, its names never show" {
	echo lo >"$LO/l"
	echo hidden >"$LO2/only-data"
	ovl_mount "lowerdir=$LO::$LO2,upperdir=$UP,workdir=$WORK"
	run -0 ls -A "$MNT"
	refute_output --partial only-data
	assert_output --partial l
	run -0 "$SFS" status "$MNT"
	assert_output --partial "data"
}

@test "refused: BRANCHES and lowerdir= both given, the message names both" {
	refused -o "lowerdir=$LO,upperdir=$UP" "$UP:$LO2" "$MNT"
	names BRANCHES lowerdir "$UP:$LO2"
	# a SOURCE that is the name of a directory may be meant as BRANCHES
	cd "$T"
	refused -o "lowerdir=$LO,upperdir=$UP" lo2 "$MNT"
	names BRANCHES lowerdir
}

@test "refused: upperdir= or workdir= without lowerdir=" {
	refused -o "upperdir=$UP,workdir=$WORK" overlay "$MNT"
	names upperdir lowerdir
	refused -o "workdir=$WORK" overlay "$MNT"
	names workdir lowerdir
}

@test "refused: workdir missing, or not on upperdir's filesystem" {
	refused -o "lowerdir=$LO,upperdir=$UP,workdir=$T/nope" overlay "$MNT"
	names workdir "$T/nope"
	refused -o "lowerdir=$LO,upperdir=$UP,workdir=$BATS_TEST_TMPDIR" overlay "$MNT"
	names workdir "not on the filesystem"
}

@test "refused: a missing lowerdir or upperdir is named by the branch checks" {
	refused -o "lowerdir=$LO:$T/missing,upperdir=$UP" overlay "$MNT"
	names "$T/missing"
	refused -o "lowerdir=$LO,upperdir=$T/missing-up" overlay "$MNT"
	names "$T/missing-up"
}

@test "refused: upperdir also in lowerdir (a duplicate branch)" {
	refused -o "lowerdir=$UP,upperdir=$UP" overlay "$MNT"
}

@test "stackfsd --help lists lowerdir, upperdir and workdir" {
	run -0 "$SFSD" --help
	assert_output --partial "lowerdir="
	assert_output --partial "upperdir="
	assert_output --partial "workdir="
}
