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
	# the metadata (staging included) is in workdir, not in upperdir
	# (tests/99-workdir.bats has the rest)
	[[ -d $WORK/.stackfs/work ]] || fail "no $WORK/.stackfs/work"
	[[ ! -e $UP/.stackfs ]] || fail "upperdir got a .stackfs"
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

# ------------------------------------------- as podman's mount program (issue 16)

# prog_mount OPTS: `stackfs -o OPTS MNT`, as podman runs its mount program;
# recorded for cleanup; checks it is a live stackfs mount.
prog_mount() {
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFS" -o "$1" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not a stackfs mount: $(findmnt -M "$MNT")"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
}

mount_opts() {
	findmnt -rn -o OPTIONS -M "$MNT"
}

@test "stackfs -o lowerdir=...,upperdir=...,workdir=...,,volatile MNT (podman's argv, an empty element); unmounted by umount2" {
	prog_mount "lowerdir=$LO:$LO2,upperdir=$UP,workdir=$WORK,,volatile"
	run -0 cat "$MNT/l" "$MNT/l2" "$MNT/u"
	assert_output $'lo\nlo2\nup'
	echo n >"$MNT/n"
	[[ -f $UP/n ]] || fail "write did not land in upperdir"
	local pid
	pid=$(sfs_daemon_pid "$MNT")
	# podman unmounts with umount2 itself: the daemon ends, cleanly
	umount "$MNT"
	sfs_wait_gone "$pid" || fail "the daemon outlived umount"
	prog_mount "lowerdir=$LO:$LO2,upperdir=$UP,workdir=$WORK,"
	run -0 cat "$MNT/n"
	run -0 "$SFS" --version
	assert_output --partial "stackfs"
}

@test "umount2 then at once a mount of the same upper (podman's commit after a run): it waits for the ending daemon" {
	local cycle
	# (not $i: the helpers' loops set a global i)
	for cycle in 1 2 3 4 5; do
		prog_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK,volatile"
		echo "$cycle" >>"$MNT/l"
		umount "$MNT"
	done
	prog_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK"
	run -0 cat "$MNT/l"
	assert_output $'lo\n1\n2\n3\n4\n5'
}

@test "volatile and fsync=0 are not a no-op: after the daemon is killed the upper is refused until accept_unclean" {
	local o pid
	for o in volatile fsync=0; do
		prog_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK,$o"
		echo more >>"$MNT/l"
		pid=$(sfs_daemon_pid "$MNT")
		kill -KILL "$pid"
		sfs_wait_gone "$pid"
		fusermount3 -u -z "$MNT"
		run -1 "$SFS" -o "lowerdir=$LO,upperdir=$UP,workdir=$WORK" "$MNT"
		assert_output --partial 'sync=volatile'
		assert_output --partial 'accept_unclean'
		prog_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK,accept_unclean"
		run -0 "$SFS" umount "$MNT"
	done
}

@test "a volatile mount's end makes no name in the metadata dir (regression: podman's removal of the layer right after umount2 failed with ENOTEMPTY on .stackfs)" {
	local pid
	prog_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK,volatile"
	echo more >>"$MNT/l"
	pid=$(sfs_daemon_pid "$MNT")
	# the engine removing the layer while the daemon ends: its header
	# is gone before the daemon clears the volatile flag
	rm "$WORK/.stackfs/header"
	umount "$MNT"
	sfs_wait_gone "$pid"
	run -0 ls -A "$WORK/.stackfs"
	refute_line --regexp '^header'
}

@test "root's mount: allow_other and suid unless told nosuid or allow_root, nodev unless told dev; another user reads through it" {
	prog_mount "lowerdir=$LO,upperdir=$UP"
	local o
	o=$(mount_opts)
	[[ ,$o, == *,allow_other,* && ,$o, != *,nosuid,* && ,$o, == *,nodev,* ]] || fail "options: $o"
	# (from inside: the test's directories are root's 0700 ones)
	run -0 bash -c "cd '$MNT' && setpriv --reuid=nobody --regid=nogroup --clear-groups cat l"
	assert_output lo
	run -0 "$SFS" umount "$MNT"
	prog_mount "lowerdir=$LO,upperdir=$UP,nosuid,dev,allow_root"
	o=$(mount_opts)
	[[ ,$o, == *,nosuid,* && ,$o, != *,nodev,* ]] || fail "options: $o"
	# allow_root: the kernel's allow_other, with libfuse refusing others
	run bash -c "cd '$MNT' && setpriv --reuid=nobody --regid=nogroup --clear-groups cat l"
	assert_failure
	run -0 "$SFS" umount "$MNT"
	run -2 "$SFS" -o "lowerdir=$LO,suid,nosuid" "$MNT"
	assert_output --partial "nosuid"
}

@test "a branch on a nosuid mount makes the view nosuid (a note says which); an explicit suid is root's to give; branch add refuses one" {
	mount --bind "$LO2" "$LO2" && sfs_record mount "$LO2"
	mount -o remount,bind,nosuid "$LO2"
	prog_mount "lowerdir=$LO:$LO2,upperdir=$UP,log=$BATS_TEST_TMPDIR/log"
	local o
	o=$(mount_opts)
	[[ ,$o, == *,nosuid,* ]] || fail "options: $o"
	grep -q "the view is nosuid: branch $LO2 is on a nosuid mount" "$BATS_TEST_TMPDIR/log" ||
		fail "no note: $(cat "$BATS_TEST_TMPDIR/log")"
	run -0 "$SFS" umount "$MNT"
	prog_mount "lowerdir=$LO:$LO2,upperdir=$UP,suid"
	[[ ,$(mount_opts), != *,nosuid,* ]] || fail "an explicit suid was not given: $(mount_opts)"
	run -0 "$SFS" umount "$MNT"
	# a view suid by default takes no branch from a nosuid mount later
	prog_mount "lowerdir=$LO,upperdir=$UP"
	run -1 "$SFS" branch add "$MNT" "$LO2" --mode ro
	assert_output --partial "$LO2: a nosuid mount"
	run -0 "$SFS" branch list "$MNT"
	[[ $output != *"$LO2"* ]] || fail "the branch was added: $output"
}

@test "kernel tunings of overlayfs and fuse-overlayfs are accepted, each with a note in the log; bad values are refused" {
	# (metacopy= and nfs_export= are stackfs's own since issue 19:
	# tests/77-metacopy-up, tests/45-export)
	local opts=redirect_dir=on,index=off,xino=auto,uuid=null,verity=off
	opts+=,static_nlink,fast_ino=1,threaded=1,xattr_permissions=0,userxattr
	prog_mount "lowerdir=$LO,upperdir=$UP,workdir=$WORK,$opts,log=$BATS_TEST_TMPDIR/log"
	local o
	for o in ${opts//,/ }; do
		grep -q "option '$o' accepted" "$BATS_TEST_TMPDIR/log" || fail "no note of $o: $(cat "$BATS_TEST_TMPDIR/log")"
	done
	run -0 cat "$MNT/l"
	run -0 "$SFS" umount "$MNT"
	for o in metacopy=yes xino=maybe fast_ino=2 nfs_export=maybe "userxattr,whiteout=overlay"; do
		refused -o "lowerdir=$LO,$o" "$MNT"
		names "${o%%[=,]*}"
	done
}

@test "context=\"...:c1,c2\": the comma inside the quotes does not split it; without SELinux it is ignored with a note" {
	prog_mount "lowerdir=$LO,upperdir=$UP,context=\"system_u:object_r:container_file_t:s0:c1,c2\",log=$BATS_TEST_TMPDIR/log"
	grep -q "option 'context=\"system_u:object_r:container_file_t:s0:c1,c2\"' ignored: SELinux is not enabled" \
		"$BATS_TEST_TMPDIR/log" || fail "$(cat "$BATS_TEST_TMPDIR/log")"
	run -0 cat "$MNT/l"
}

@test "lowerdir+=A,lowerdir+=B is lowerdir=A:B (paths taken as they are); not with lowerdir=" {
	local odd=$T/'c:d'
	mkdir "$odd" && echo odd >"$odd/o"
	prog_mount "lowerdir+=$LO,lowerdir+=$odd,lowerdir+=$LO2,upperdir=$UP"
	run -0 cat "$MNT/shared" "$MNT/o" "$MNT/l2"
	assert_output $'lo-shared\nodd\nlo2'
	run -0 "$SFS" umount "$MNT"
	refused -o "lowerdir=$LO,lowerdir+=$LO2" "$MNT"
	names "lowerdir+="
}

@test "uidmapping=/gidmapping=: stored owners shown through the ranges and stored back; unmapped ones are 65534" {
	chown 1000:1000 "$LO/l"
	chown 7:7 "$LO2/l2"
	# fuse-overlayfs's form with a comma between the triples, and podman's leading ':'
	prog_mount "lowerdir=$LO:$LO2,upperdir=$UP,uidmapping=0:100000:1000,1000:200000:10,gidmapping=:0:100000:1000:1000:200000:10"
	run -0 stat -c '%u:%g' "$MNT/shared" "$MNT/l" "$MNT/l2"
	assert_output $'100000:100000\n200000:200000\n100007:100007'
	# a chown to view ids is stored through the ranges; a file made by a
	# view id is stored so; one no range covers is 65534
	chown 100005:200001 "$MNT/u"
	[[ $(stat -c %u:%g "$UP/u") == 5:1001 ]] || fail "stored as $(stat -c %u:%g "$UP/u")"
	mkdir -m 1777 "$MNT/pub"
	(cd "$MNT/pub" && setpriv --reuid=200003 --regid=200003 --clear-groups sh -c 'echo x >byuser') ||
		fail "a mapped user could not create a file"
	[[ $(stat -c %u:%g "$UP/pub/byuser") == 1003:1003 ]] || fail "stored as $(stat -c %u:%g "$UP/pub/byuser")"
	[[ $(stat -c %u:%g "$MNT/pub/byuser") == 200003:200003 ]] || fail "shown as $(stat -c %u:%g "$MNT/pub/byuser")"
	# root (0) is not mapped: what it makes is stored as 65534
	[[ $(stat -c %u:%g "$UP/pub") == 65534:65534 ]] || fail "stored as $(stat -c %u:%g "$UP/pub")"
	chown 4242 "$MNT/u"
	[[ $(stat -c %u "$UP/u") == 65534 ]] || fail "unmapped id stored as $(stat -c %u "$UP/u")"
	run -0 "$SFS" umount "$MNT"
	refused -o "lowerdir=$LO,uidmapping=0:100000" "$MNT"
	names uidmapping
	refused -o "lowerdir=$LO,uidmapping=0:100000:10:5:200000:10" "$MNT"
	names overlapping
}

@test "squash_to_root, squash_to_uid=, squash_to_gid=: what the view shows, not what is stored" {
	chown 1000:1000 "$LO/l"
	prog_mount "lowerdir=$LO,upperdir=$UP,squash_to_root"
	run -0 stat -c '%u:%g' "$MNT/l" "$MNT/u"
	assert_output $'0:0\n0:0'
	run -0 "$SFS" umount "$MNT"
	prog_mount "lowerdir=$LO,upperdir=$UP,squash_to_root,squash_to_uid=7"
	run -0 stat -c '%u:%g' "$MNT/l"
	assert_output '7:0'
	echo more >>"$MNT/l"
	[[ $(stat -c %u:%g "$UP/l") == 1000:1000 ]] || fail "the copy-up's owner is $(stat -c %u:%g "$UP/l")"
}

@test "noacl: the view has no POSIX ACLs (refused, not listed); the branch's stay; noxattrs=1: no xattrs at all" {
	sfs_require_cmd setfacl getfattr
	setfacl -m u:1000:r "$LO/l"
	setfattr -n user.k -v v "$LO/l"
	prog_mount "lowerdir=$LO,upperdir=$UP,noacl"
	run getfacl -cn "$MNT/l"
	[[ $output != *user:1000* ]] || fail "the ACL shows: $output"
	run setfacl -m u:1001:r "$MNT/u"
	assert_failure
	assert_output --partial "Operation not supported"
	run -0 getfattr -d -m - "$MNT/l"
	[[ $output != *posix_acl* && $output == *user.k* ]] || fail "listing: $output"
	echo more >>"$MNT/l"
	run -0 getfacl -cn "$UP/l"
	assert_output --partial "user:1000:r--"
	run -0 "$SFS" umount "$MNT"
	prog_mount "lowerdir=$LO,upperdir=$UP,noxattrs=1"
	run -0 getfattr -d -m - "$MNT/l"
	assert_output ""
	run setfattr -n user.x -v 1 "$MNT/u"
	assert_failure
}
