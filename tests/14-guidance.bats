#!/usr/bin/env bats
# Messages that say what to do (issue 17): a mount whose daemon died is
# named as such, with the command that removes it; a busy unmount names
# the processes holding the mount, as fuser would; a branch in use names
# the mount using it; an option of mergerfs, fuse-overlayfs or overlayfs
# says what stackfs does instead. And the documented limit of the kernel
# cache: a change made directly in a branch shows only after timeout=
# seconds, at once with timeout=0.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches upper2 mnt2
	echo lo >"$LO/f"
	mkdir -p "$LO/d"
	PIDS=$BATS_TEST_TMPDIR/pids
}

# the processes a test started, ended by their pid before the unmounts
teardown() {
	local p
	if [[ -f $PIDS ]]; then
		while read -r p; do
			kill -KILL "$p" 2>/dev/null
		done <"$PIDS"
		while read -r p; do
			sfs_wait_gone "$p" 5
		done <"$PIDS"
	fi
	sfs_cleanup
}

# bg CMD...: runs CMD in the background (its output to /dev/null),
# records its pid for teardown, and sets BG to it.
bg() {
	"$@" >/dev/null 2>&1 &
	BG=$!
	echo "$BG" >>"$PIDS"
}

# wait_for TEST...: until the test holds, 10 s at most.
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------- a dead daemon

@test "after the daemon is killed, status, branch, diff and fsck say it is gone and to run stackfs umount, which removes the mount" {
	sfs_mount "$UP:$LO" "$MNT"
	local pid mm cmd i
	pid=$(sfs_daemon_pid "$MNT")
	mm=$(findmnt -rn -o MAJ:MIN -M "$MNT")
	[[ -n $pid && -d $SFS_RUNTIME/$mm ]] || fail "no daemon or runtime directory"
	kill -KILL "$pid"
	sfs_wait_gone "$pid" || fail "the daemon did not die"
	# the kernel ends the connection when the last holder of /dev/fuse
	# lets go: with FUSE over io_uring its rings' work does, a moment after
	# the process is gone, and a request made in between is aborted
	# (ECONNABORTED, "Software caused connection abort"; or ECANCELED,
	# "Operation canceled", for a request that met a ring entry being
	# cancelled: seen once under ASan, where the daemon ends slower). No
	# stackfs code runs by then: the daemon is gone.
	for ((i = 0; i < 100; i++)); do
		run ls "$MNT"
		[[ $output == *"not connected"* ]] && break
		[[ $output == *"connection abort"* || $output == *"Operation canceled"* ]] || break
		sleep 0.05
	done
	[[ $output == *"not connected"* ]] || fail "the dead mount answers: $output"
	for cmd in "status $MNT" "branch list $MNT" "branch remove $MNT #0" "diff $MNT" "fsck $MNT"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$SFS" $cmd
		assert_refused
		[[ $stderr == *"$MNT: the stackfs daemon of this mount is gone (pid $pid is not running"* &&
			$stderr == *"run 'stackfs umount $MNT'"* ]] || fail "stackfs $cmd: $stderr"
		[[ $stderr != *"Connection refused"* && $stderr != *"not connected"* ]] ||
			fail "stackfs $cmd still says: $stderr"
	done
	run -0 "$SFS" umount "$MNT"
	! sfs_is_mounted "$MNT" || fail "still mounted"
	[[ ! -e $SFS_RUNTIME/$mm/pid && ! -e $SFS_RUNTIME/$mm/ctl ]] ||
		fail "the dead daemon's runtime files are left: $(ls -la "$SFS_RUNTIME/$mm")"
}

# ---------------------------------------------------------- a busy mount

@test "stackfs umount of a busy mount names each process holding it and what it holds, as fuser would" {
	sfs_require_cmd python3
	sfs_mount "$UP:$LO" "$MNT"
	local cwd open map
	bg bash -c 'cd "$1" && exec sleep 600' cwd "$MNT/d"
	cwd=$BG
	bg bash -c 'exec sleep 600 <"$1"' open "$MNT/f"
	open=$BG
	bg python3 -c '
import mmap, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
f.close()
time.sleep(600)' "$MNT/f"
	map=$BG
	mkdir -p "$MNT/sub" "$T/elsewhere"
	sfs_record mount "$MNT/sub"
	mount --bind "$T/elsewhere" "$MNT/sub"
	wait_for grep -q "$MNT/f" "/proc/$map/maps" || fail "python3 did not map $MNT/f"
	wait_for test "$(readlink "/proc/$cwd/cwd")" = "$MNT/d" || fail "no cwd in the mount"
	wait_for test "$(readlink "/proc/$open/fd/0")" = "$MNT/f" || fail "no open file"
	run -1 --separate-stderr "$SFS" umount "$MNT"
	[[ $stderr == *"$MNT: busy, in use by:"* ]] || fail "$stderr"
	[[ $stderr == *"pid $cwd (sleep): working directory $MNT/d"* ]] || fail "no cwd: $stderr"
	[[ $stderr == *"pid $open (sleep): open file $MNT/f (fd 0)"* ]] || fail "no open file: $stderr"
	[[ $stderr == *"pid $map (python3): mapped file $MNT/f"* ]] || fail "no mapped file: $stderr"
	[[ $stderr == *"a mount on $MNT/sub"* ]] || fail "no mount on top: $stderr"
	sfs_is_mounted "$MNT" || fail "unmounted while busy"
	umount "$MNT/sub"
	kill -KILL "$cwd" "$open" "$map"
	sfs_wait_gone "$cwd" && sfs_wait_gone "$open" && sfs_wait_gone "$map"
	run -0 "$SFS" umount "$MNT"
}

# ---------------------------------------------------------- a branch in use

@test "a rw branch in use: mount, branch add, fsck --repair and commit name the mount using it" {
	sfs_mount "$UP:$LO" "$MNT"
	local pid who
	pid=$(sfs_daemon_pid "$MNT")
	who="the stackfs mount on $MNT, stackfsd pid $pid"
	sfs_record stackfs "$MNT2"
	run -1 --separate-stderr "$SFS" mount "$UP:$LO" "$MNT2"
	[[ $stderr == *"in use by $who"* ]] || fail "mount: $stderr"
	! sfs_is_mounted "$MNT2" || fail "mounted twice"
	sfs_mount "$UPPER2:$LO" "$MNT2"
	run -1 --separate-stderr "$SFS" branch add "$MNT2" "$UP" --mode rw
	[[ $stderr == *"in use by $who"* ]] || fail "branch add: $stderr"
	run -8 --separate-stderr "$SFS" fsck --repair "$UP"
	[[ $stderr == *"branch is in use by a mounted stackfs ($who): not repaired"* ]] ||
		fail "fsck: $stderr"
	run -1 --separate-stderr "$SFS" commit "$UP" --into "$LO"
	[[ $stderr == *"$UP: branch is in use by a mounted stackfs ($who): unmount it first"* ]] ||
		fail "commit: $stderr"
}

# ---------------------------------------------------------- others' options

@test "options of mergerfs, fuse-overlayfs and overlayfs are refused (exit 2) with what stackfs does instead" {
	local opt from word
	# (comma-separated: a '|' would look like a pipe to tests/01-deps.bats)
	while IFS=',' read -r opt from word; do
		sfs_record stackfs "$MNT"
		run --separate-stderr "$SFS" mount -o "$opt" "$UP:$LO" "$MNT"
		((status == 2)) || fail "-o $opt: exit $status: $stderr"
		((${#stderr_lines[@]} == 1)) || fail "-o $opt: not one line: $stderr"
		[[ $stderr == "stackfs: unknown option '$opt': $from's ${opt%%=*} "*"$word"* ]] ||
			fail "-o $opt: $stderr"
		! sfs_is_mounted "$MNT" || fail "mounted with -o $opt"
	done <<'EOF'
category.create=mfs,mergerfs,new files and directories go to the highest rw branch
func.getattr=newest,mergerfs,highest branch holding the name
cache.files=off,mergerfs,keeps file pages
cache.attr=120,mergerfs,timeout=SECONDS
dropcacheonclose=true,mergerfs,passthrough
moveonenospc=true,mergerfs,ENOSPC
minfreespace=4G,mergerfs,whatever its free space
use_ino,mergerfs,inode numbers
kernel_cache,libfuse,high-level API option
plugins=/x.so,fuse-overlayfs,not supported
ino32_t,fuse-overlayfs,64-bit
datadir+=/d,overlayfs,data-only layers
EOF
	# values stackfs cannot honour of options it takes otherwise
	while IFS=',' read -r opt from word; do
		sfs_record stackfs "$MNT"
		run -2 --separate-stderr "$SFS" mount -o "$opt" "$UP:$LO" "$MNT"
		[[ $stderr == "stackfs: bad option '$opt': $from's ${opt%%=*} "*"$word"* ]] ||
			fail "-o $opt: $stderr"
		! sfs_is_mounted "$MNT" || fail "mounted with -o $opt"
	done <<'EOF'
verity=require,overlayfs,fs-verity
xattr_permissions=1,fuse-overlayfs,never kept in xattrs
EOF
	run -2 --separate-stderr "$SFS" mount -o frobnicate "$UP:$LO" "$MNT"
	[[ $stderr == "stackfs: unknown option 'frobnicate' (stackfs mount --help lists the options)" ]] ||
		fail "$stderr"
}

# ---------------------------------------------------------- kernel caches

@test "a file deleted directly in a branch stays visible until timeout= (documented); with timeout=0 it goes at once" {
	sfs_hold_caches
	sfs_mount "$UP:$LO" "$MNT"
	stat "$MNT/f" >/dev/null || fail "f not seen"
	rm "$LO/f"
	# the documented limit: the kernel's cache still has it
	stat "$MNT/f" >/dev/null || fail "with timeout=60 the deleted file went at once (update the docs)"
	run -0 "$SFS" umount "$MNT"
	echo lo >"$LO/g"
	sfs_mount "$UP:$LO" "$MNT" timeout=0
	stat "$MNT/g" >/dev/null || fail "g not seen"
	rm "$LO/g"
	run stat "$MNT/g"
	assert_failure
	grep -q 'timeout=0' "$SFS_REPO/README.md" || fail "the README does not give timeout=0"
	grep -qF 'B \-o timeout=0' "$SFS_REPO/cli/man/stackfs.8" || fail "stackfs.8 does not give timeout=0"
}
