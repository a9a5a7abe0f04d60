#!/usr/bin/env bats
# Mounting and unmounting: the CLI, mount -t fuse.stackfs, fstab,
# fusermount3 -u; BRANCHES specs with escapes; every refused mount gives a
# one-line message naming the problem, a non-zero exit, and changes nothing.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo up >"$UP/u"
	echo lo >"$LO/l"
}

teardown() {
	sfs_cleanup
}

# refused ARGS...: runs `stackfs mount ARGS` and checks it was refused with a
# one-line message, that $T is unchanged and that $MNT is not mounted.
refused() {
	sfs_snapshot "$T"
	local before
	before=$(ls -A "$MNT" 2>&1)
	sfs_record stackfs "$MNT"
	run --separate-stderr "$SFS" mount "$@"
	assert_refused
	[[ -n $stderr ]] || fail "no message on stderr"
	((${#stderr_lines[@]} == 1)) || fail "message is not one line: $stderr"
	sfs_is_mounted "$MNT" && fail "$MNT got mounted"
	sfs_assert_unchanged "$T"
	[[ $(ls -A "$MNT" 2>&1) == "$before" ]] || fail "$MNT changed"
	no_daemon_left
}

# no stackfsd naming this test's directories is still running
no_daemon_left() {
	local p left=
	for p in $(sfs_stackfsd_pids); do
		sfs_alive "$p" || continue
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -e "$T" -e "$MNT" && left+=" $p"
	done
	[[ -z $left ]] || fail "a refused mount left daemons running:$left"
}

# the message names $1
names() {
	[[ $stderr == *"$1"* ]] || fail "message does not name '$1': $stderr"
}

@test "stackfs mount returns with the mount live, and stackfs umount waits for the daemon" {
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
	pid=$(sfs_daemon_pid "$MNT")
	[[ -n $pid ]] || fail "no daemon found for $MNT"
	run -0 "$SFS" umount "$MNT"
	sfs_is_mounted "$MNT" && fail "still mounted after stackfs umount"
	sfs_alive "$pid" && fail "daemon $pid still running when stackfs umount returned"
	true
}

@test "a successful mount makes the metadata dir in the rw branch only" {
	sfs_mount "$UP:$LO" "$MNT"
	[[ -d $UP/.stackfs ]] || fail "no $UP/.stackfs"
	[[ ! -e $LO/.stackfs ]] || fail "metadata dir made in the ro branch"
}

@test "stackfs mount -f stays in the foreground until unmounted, then exits 0" {
	local log=$BATS_TEST_TMPDIR/fg.log pid rc
	sfs_record stackfs "$MNT"
	"$SFS" mount -f "$UP:$LO" "$MNT" >"$log" 2>&1 3>&- &
	pid=$!
	sfs_wait_mounted "$MNT" || fail "not mounted after 10s: $(cat "$log")"
	run -0 cat "$MNT/u"
	sfs_alive "$pid" || fail "stackfs mount -f returned while the mount is live"
	run -0 fusermount3 -u "$MNT"
	sfs_wait_gone "$pid" 10 || fail "foreground daemon still running 10s after fusermount3 -u"
	wait "$pid" && rc=0 || rc=$?
	((rc == 0)) || fail "stackfs mount -f exited $rc: $(cat "$log")"
}

@test "a branch mounts again after an unmount, with its metadata dir and files" {
	sfs_mount "$UP:$LO" "$MNT"
	echo kept >"$MNT/kept"
	run -0 "$SFS" umount "$MNT"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$MNT/kept" "$MNT/l"
	assert_output $'kept\nlo'
	run -0 ls -A "$MNT"
	assert_output $'kept\nl\nu'
}

@test "stackfs umount accepts a relative mount point" {
	sfs_mount "$UP:$LO" "$MNT"
	(cd "$BATS_TEST_TMPDIR" && "$SFS" umount mnt) || fail "stackfs umount mnt failed"
	sfs_is_mounted "$MNT" && fail "still mounted"
	true
}

@test "fusermount3 -u unmounts and the daemon exits by itself" {
	sfs_mount "$UP:$LO" "$MNT"
	pid=$(sfs_daemon_pid "$MNT")
	[[ -n $pid ]] || fail "no daemon found for $MNT"
	run -0 fusermount3 -u "$MNT"
	sfs_is_mounted "$MNT" && fail "still mounted"
	sfs_wait_gone "$pid" 5 || fail "daemon $pid still running 5s after fusermount3 -u"
}

@test "umount(8) unmounts and the daemon exits by itself" {
	sfs_mount "$UP:$LO" "$MNT"
	pid=$(sfs_daemon_pid "$MNT")
	[[ -n $pid ]] || fail "no daemon found for $MNT"
	run -0 umount "$MNT"
	sfs_wait_gone "$pid" 5 || fail "daemon $pid still running 5s after umount"
}

@test "mount -t fuse.stackfs BRANCHES MP -o OPTS works (via mount.fuse3)" {
	sfs_install_for_mount8
	sfs_record stackfs "$MNT"
	run -0 mount -t fuse.stackfs "$UP:$LO" "$MNT" -o default_permissions
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not fuse.stackfs: $(findmnt -M "$MNT")"
	run -0 findmnt -rn -o OPTIONS -M "$MNT"
	assert_output --partial default_permissions
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
	run -0 "$SFS" umount "$MNT"
}

@test "an fstab line 'BRANCHES MP fuse.stackfs defaults 0 0' mounts with 'mount MP'" {
	local fstab=$BATS_TEST_TMPDIR/fstab
	sfs_install_for_mount8
	printf '%s %s fuse.stackfs defaults 0 0\n' "$UP:$LO" "$MNT" >"$fstab"
	sfs_record stackfs "$MNT"
	run -0 mount -T "$fstab" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not fuse.stackfs"
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
	touch "$MNT/new"
	[[ -f $UP/new ]] || fail "first branch of an fstab mount is not rw"
}

@test "an fstab line with FUSE options allow_other,default_permissions" {
	local fstab=$BATS_TEST_TMPDIR/fstab
	sfs_install_for_mount8
	printf '%s %s fuse.stackfs allow_other,default_permissions,noauto 0 0\n' "$UP=rw:$LO=ro" "$MNT" >"$fstab"
	sfs_record stackfs "$MNT"
	run -0 mount -T "$fstab" "$MNT"
	run -0 findmnt -rn -o OPTIONS -M "$MNT"
	assert_output --partial allow_other
	assert_output --partial default_permissions
}

@test "-o fsname=NAME is the mount's source; subtype=stackfs is accepted; the type stays fuse.stackfs" {
	sfs_mount "$UP:$LO" "$MNT"
	run -0 findmnt -rn -o SOURCE,FSTYPE -M "$MNT"
	assert_output "stackfs fuse.stackfs"
	run -0 "$SFS" umount "$MNT"
	sfs_mount "$UP:$LO" "$MNT" fsname=mydata,subtype=stackfs
	run -0 findmnt -rn -o SOURCE,FSTYPE -M "$MNT"
	assert_output "mydata fuse.stackfs"
	# the commands still find it
	run -0 "$SFS" status "$MNT"
	run -0 "$SFS" branch list "$MNT"
	run -0 "$SFS" umount "$MNT"
	[[ $(sfs_fstype "$MNT") != fuse.stackfs ]] || fail "still mounted"
}

@test "an fstab line with fsname= shows that source in findmnt" {
	local fstab=$BATS_TEST_TMPDIR/fstab
	sfs_install_for_mount8
	printf '%s %s fuse.stackfs fsname=layers,noauto 0 0\n' "$UP:$LO" "$MNT" >"$fstab"
	sfs_record stackfs "$MNT"
	run -0 mount -T "$fstab" "$MNT"
	run -0 findmnt -rn -o SOURCE,FSTYPE -M "$MNT"
	assert_output "layers fuse.stackfs"
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
}

@test "-o allow_other,default_permissions pass through to the kernel mount" {
	sfs_mount "$UP:$LO" "$MNT" allow_other,default_permissions
	run -0 findmnt -rn -o OPTIONS -M "$MNT"
	assert_output --partial allow_other
	assert_output --partial default_permissions
}

@test "-o ro makes the whole view read-only (EROFS)" {
	sfs_mount "$UP:$LO" "$MNT" ro
	run -0 findmnt -rn -o OPTIONS -M "$MNT"
	assert_output --regexp '(^|,)ro(,|$)'
	run -1 "$TOOLS/sysprobe" open "$MNT/new" wronly,creat
	assert_output EROFS
	[[ ! -e $UP/new ]]
}

@test "the first branch defaults to rw and the others to ro" {
	sfs_mount "$UP:$LO" "$MNT"
	echo n >"$MNT/new"
	[[ -f $UP/new ]] || fail "new file not in the first branch"
	[[ ! -e $LO/new ]] || fail "new file in the second branch"
}

@test "explicit modes: a ro first branch, new entries go to the rw second branch" {
	sfs_snapshot "$UP"
	sfs_mount "$UP=ro:$LO=rw" "$MNT"
	echo n >"$MNT/new"
	[[ -f $LO/new ]] || fail "new file not in the rw branch $LO"
	[[ ! -e $UP/new ]] || fail "new file in the ro branch"
	[[ -d $LO/.stackfs && ! -e $UP/.stackfs ]] || fail "metadata dir not (only) in the rw branch"
	sfs_assert_unchanged "$UP"
}

@test "branch paths with escaped ':', '=' and '\\' mount and show their files" {
	local a="$T/a:b=c" b="$T/back\\slash=x"
	mkdir -p "$a" "$b"
	echo colon >"$a/f1"
	echo backslash >"$b/f2"
	sfs_mount "$T/a\\:b\\=c=rw:$T/back\\\\slash\\=x=ro" "$MNT"
	run -0 cat "$MNT/f1" "$MNT/f2"
	assert_output $'colon\nbackslash'
	touch "$MNT/new"
	[[ -f $a/new ]] || fail "new file not in the branch with the escaped name"
	[[ -d $a/.stackfs ]] || fail "no metadata dir in $a"
}

@test "relative branch paths are taken from the current directory" {
	(cd "$T" && "$SFS" mount upper:lower "$MNT") || fail "mount with relative paths failed"
	sfs_record stackfs "$MNT"
	run -0 cat "$MNT/u" "$MNT/l"
	assert_output $'up\nlo'
}

@test "stackfs umount refuses a mount point that is not a stackfs mount" {
	mkdir -p "$T/bindsrc" "$T/bind"
	sfs_record mount "$T/bind"
	mount --bind "$T/bindsrc" "$T/bind"
	run --separate-stderr "$SFS" umount "$T/bind"
	assert_refused
	[[ $stderr == *"$T/bind"* ]] || fail "message does not name the mount point: $stderr"
	sfs_is_mounted "$T/bind" || fail "stackfs umount unmounted a bind mount"
}

# ------------------------------------------------------------ refused mounts

@test "refused: a missing branch directory (named, not created)" {
	refused "$UP:$T/missing" "$MNT"
	names "$T/missing"
	[[ ! -e $T/missing ]]
}

@test "refused: a missing first (rw) branch (named, not created)" {
	refused "$T/missing:$LO" "$MNT"
	names "$T/missing"
}

@test "refused: a regular file as a branch" {
	echo x >"$T/file"
	refused "$UP:$T/file" "$MNT"
	names "$T/file"
}

@test "refused: the same branch twice" {
	refused "$UP:$UP" "$MNT"
	names "$UP"
}

@test "refused: the same branch twice under other spellings (trailing /, .., symlink)" {
	ln -s upper "$T/uplink"
	refused "$UP:$UP/" "$MNT"
	refused "$UP:$T/../$(basename "$T")/upper=ro" "$MNT"
	refused "$UP:$T/uplink" "$MNT"
}

@test "refused: a branch nested inside another (both orders)" {
	mkdir "$UP/sub"
	refused "$UP:$UP/sub" "$MNT"
	names "$UP/sub"
	refused "$UP/sub:$UP" "$MNT"
	names "$UP/sub"
	mkdir "$LO/sub"
	refused "$UP:$LO:$LO/sub" "$MNT"
}

@test "refused: the mount point inside a rw branch" {
	mkdir "$UP/mp"
	sfs_snapshot "$T"
	sfs_record stackfs "$UP/mp"
	run --separate-stderr "$SFS" mount "$UP:$LO" "$UP/mp"
	assert_refused
	((${#stderr_lines[@]} == 1)) || fail "message is not one line: $stderr"
	names "$UP/mp"
	sfs_is_mounted "$UP/mp" && fail "mounted inside its own branch"
	sfs_assert_unchanged "$T"
}

@test "refused: the mount point inside a ro branch" {
	mkdir "$LO/mp"
	sfs_snapshot "$T"
	sfs_record stackfs "$LO/mp"
	run --separate-stderr "$SFS" mount "$UP:$LO" "$LO/mp"
	assert_refused
	names "$LO/mp"
	sfs_is_mounted "$LO/mp" && fail "mounted inside its own branch"
	sfs_assert_unchanged "$T"
}

@test "refused: the mount point as a branch, or a branch inside the mount point" {
	mkdir -p "$MNT/inner"
	refused "$MNT:$LO" "$MNT"
	refused "$MNT/inner:$LO" "$MNT"
	names "$MNT"
}

@test "refused: a rw branch on a read-only filesystem (EROFS)" {
	local ro
	ro=$(sfs_make_image "$SFS_FS" 64 rofs)
	mkdir "$ro/data"
	echo ro >"$ro/data/f"
	mount -o remount,ro "$ro"
	refused "$ro/data:$LO" "$MNT"
	names "$ro/data"
	[[ $stderr =~ [Rr]ead-only ]] || fail "message does not say read-only: $stderr"
}

@test "refused: a rw branch on a read-only bind mount (EROFS)" {
	mkdir -p "$T/rosrc" "$T/robind"
	sfs_record mount "$T/robind"
	mount --bind "$T/rosrc" "$T/robind"
	mount -o remount,bind,ro "$T/robind"
	refused "$T/robind=rw:$LO" "$MNT"
	names "$T/robind"
	[[ $stderr =~ [Rr]ead-only ]] || fail "message does not say read-only: $stderr"
	[[ ! -e $T/rosrc/.stackfs ]]
}

@test "a ro branch on a read-only filesystem mounts" {
	local ro
	ro=$(sfs_make_image "$SFS_FS" 64 rofs)
	mkdir "$ro/data"
	echo ro >"$ro/data/f"
	mount -o remount,ro "$ro"
	sfs_mount "$UP:$ro/data" "$MNT"
	run -0 cat "$MNT/f" "$MNT/u"
	assert_output $'ro\nup'
}

@test "refused: an empty BRANCHES spec" {
	refused "" "$MNT"
}

@test "refused: an empty branch between two colons" {
	refused "$UP::$LO" "$MNT"
}

@test "refused: a bad mode =rx (named)" {
	refused "$UP=rx:$LO" "$MNT"
	names "rx"
}

@test "refused: an unknown -o option (named)" {
	refused -o bogus_opt_x "$UP:$LO" "$MNT"
	names "bogus_opt_x"
}

@test "refused: an unknown -o option among known ones (named)" {
	refused -o default_permissions,bogus_opt_y "$UP:$LO" "$MNT"
	names "bogus_opt_y"
}

@test "refused: a missing mount point (named, not created)" {
	refused "$UP:$LO" "$T/nomnt"
	names "$T/nomnt"
	[[ ! -e $T/nomnt ]]
}

@test "the mount's readahead window is 512 KiB (sequential reads: a quarter of the round trips)" {
	sfs_mount "$UP:$LO=ro" "$MNT"
	local dev
	dev=$(mountpoint -d "$MNT")
	[[ $(cat "/sys/class/bdi/$dev/read_ahead_kb") == 512 ]] ||
		fail "read_ahead_kb of $dev: $(cat "/sys/class/bdi/$dev/read_ahead_kb")"
	[[ $(cat "$MNT/l") == lo ]]
}

@test "-o readahead=KIB sets the window; 0 leaves the kernel's 128 KiB" {
	local dev
	sfs_mount "$UP:$LO=ro" "$MNT" readahead=2048
	dev=$(mountpoint -d "$MNT")
	[[ $(cat "/sys/class/bdi/$dev/read_ahead_kb") == 2048 ]] || fail "readahead=2048: $(cat "/sys/class/bdi/$dev/read_ahead_kb")"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT" readahead=0
	dev=$(mountpoint -d "$MNT")
	[[ $(cat "/sys/class/bdi/$dev/read_ahead_kb") == 128 ]] || fail "readahead=0: $(cat "/sys/class/bdi/$dev/read_ahead_kb")"
	[[ $(cat "$MNT/l") == lo ]]
}
