# Helpers for the stackfs bats suite. Every .bats file loads this first.
#
# Environment:
#   SFS_BUILD   where `stackfs`, `stackfsd` and tools/ are (default: build/
#               of this repository)
#   SFS_FS      the filesystem of the loop images the branches live on:
#               ext4 (default) or xfs. tests/run runs the suite for both.
#
# Resources a test makes (loop devices, image mounts, stackfs mounts, bind
# mounts) are recorded in a cleanup list as they are made: the test's list
# ($BATS_TEST_TMPDIR) inside a test, the file's list ($BATS_FILE_TMPDIR) in
# setup_file. sfs_cleanup (teardown) and sfs_cleanup_file (teardown_file)
# undo them in reverse order and then sweep whatever is still mounted under
# the suite's temporary directories; they never fail.

bats_require_minimum_version 1.5.0
# bats-support and bats-assert, sourced file by file: their load.bash files
# fork a dirname per file they source (about 5 ms each here), which made
# loading them 200 ms of every test. Their src/ files define functions only.
_sfs_load_bats_lib() {
	local f n=0
	for f in "/usr/lib/bats/$1/src/"*.bash; do
		[[ -f $f ]] || continue
		source "$f" || return 1
		n=$((n + 1))
	done
	((n > 0)) || { echo "needs $1 (Debian package bats-${1#bats-})" >&2; return 1; }
}
_sfs_load_bats_lib bats-support && _sfs_load_bats_lib bats-assert || exit 1

# bats runs its DEBUG trap before every command, to keep the stack trace
# a failure is reported with: about half a millisecond each, which made
# these helpers' loops (the mount table, the cleanup sweeps) most of a
# short test's time. The trap is kept for the test files themselves, so
# a failure still names the line of the test; commands of the helpers
# here, of bats itself and of bats-assert skip it (a failure in them is reported at the
# test's line that called them).
_SFS_UNTRACED=("$BATS_TEST_DIRNAME/helpers/" /usr/lib/bats)

# _sfs_patch_fn NAME CODE: bats's function NAME with CODE run first.
_sfs_patch_fn() {
	local src
	declare -F "$1" >/dev/null || return 0
	src=$(declare -f "$1")
	[[ $src == *"$2"* ]] && return 0 # loaded twice
	eval "${src%%\{*}{ $2 ${src#*\{}"
}
# the same function with a first line that returns at once for them
# (not a wrapper: the trace bats keeps counts the trap's frames)
_sfs_patch_fn bats_debug_trap \
	'[[ $1 == "${_SFS_UNTRACED[0]}"* || $1 == "${_SFS_UNTRACED[1]}"* ]] && return 0;'
# bats 1.8's version comparison, which `run -N` calls, loops on a global
# i: a test's `for ((i...))` around a `run -0` went wrong silently
_sfs_patch_fn bats_version_lt 'local i;'

SFS_REPO=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
# GlusterFS volumes as branch filesystems (SFS_FS=glusterfs, tests/47-gluster)
source "${BASH_SOURCE[0]%/*}/gluster.bash"
# A one-node CephFS mounted by ceph-fuse (SFS_FS=cephfs, tests/48-cephfs)
source "${BASH_SOURCE[0]%/*}/cephfs.bash"
: "${SFS_BUILD:=$SFS_REPO/build}"
: "${SFS_FS:=ext4}"
export SFS_BUILD SFS_FS
SFS=$SFS_BUILD/stackfs
SFSD=$SFS_BUILD/stackfsd
TOOLS=$SFS_BUILD/tools
SFS_RUNTIME=${STACKFS_RUNTIME_DIR:-/run/stackfs}

# ---------------------------------------------------------------- basics

# Fails setup when the product or a test tool is not built.
sfs_require_build() {
	local f
	for f in "$SFS" "$SFSD" "$@"; do
		if [[ ! -x $f ]]; then
			echo "not built: $f (run make)" >&2
			return 1
		fi
	done
}

sfs_require_tool() {
	local t
	for t in "$@"; do
		[[ -x $TOOLS/$t ]] || { echo "test tool not built: $TOOLS/$t (run make)" >&2; return 1; }
	done
}

# For a test that does not touch a branch's filesystem (command lines,
# option parsing, the control protocol, the docs): run once per suite, on
# its first filesystem (tests/run sets SFS_SUITE_FIRST_FS and
# SFS_SUITE_FS_LIST), skipped with the reason on the others; with "last",
# on its last one instead, so that the long ones of these share out
# between the filesystems' runs, which go on side by side. Run by hand
# (no SFS_SUITE_FIRST_FS) it runs.
sfs_once_per_suite() {
	local why
	why=$(sfs_once_here "$@") || skip "$why"
}

# sfs_once_here [last]: whether this run is the one of sfs_once_per_suite;
# if not, says why and fails (for setup_file, where bats 1.8 cannot skip).
sfs_once_here() {
	local on=${SFS_SUITE_FIRST_FS:-}
	[[ ${1:-} == last && -n ${SFS_SUITE_FS_LIST:-} ]] && on=${SFS_SUITE_FS_LIST##* }
	[[ -z $on || ${SFS_FS:-} == "$on" ]] && return 0
	echo "does not depend on the branches' filesystem: run on $on"
	return 1
}

# sfs_suite_share: "INDEX COUNT", this run's place among the suite's
# filesystems (tests/run) and their number; "0 1" when run alone. A test
# whose samples (crash points, fuzz seeds) need not all run on every
# filesystem takes its share by it: together the runs cover them all.
sfs_suite_share() {
	local fs i=0 n=0 me=0
	for fs in ${SFS_SUITE_FS_LIST:-}; do
		[[ $fs == "${SFS_FS:-}" ]] && me=$i
		i=$((i + 1)) n=$((n + 1))
	done
	((n > 0)) || { echo "0 1"; return; }
	echo "$me $n"
}

# Skips the test when a program is missing; names it.
sfs_require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "needs $c"
	done
}

sfs_require_root() {
	[[ $(id -u) -eq 0 ]] || skip "needs root ($*)"
}

_sfs_list() {
	if [[ -n ${BATS_TEST_NUMBER:-} && -n ${BATS_TEST_TMPDIR:-} ]]; then
		echo "$BATS_TEST_TMPDIR/.sfs-cleanup"
	else
		echo "$BATS_FILE_TMPDIR/.sfs-cleanup"
	fi
}

_sfs_scope_dir() {
	if [[ -n ${BATS_TEST_NUMBER:-} && -n ${BATS_TEST_TMPDIR:-} ]]; then
		echo "$BATS_TEST_TMPDIR"
	else
		echo "$BATS_FILE_TMPDIR"
	fi
}

# sfs_record KIND ARG: remember a resource to undo at cleanup.
#   KIND: stackfs (a stackfs mount point: stackfs umount, then fusermount3
#   -u, then abort the connection and detach lazily), mount (any other mount
#   point), loop (a loop device), pid (PID:MP, a daemon that must end with
#   its mount), symlink (a symlink to $SFS to remove), hang (PID:MP, a
#   hangfs server and its mount: aborted before anything else is undone),
#   shared (a directory of sfs_tools_for_others to remove).
sfs_record() {
	printf '%s\t%s\n' "$1" "$2" >>"$(_sfs_list)"
}

# sfs_tools_for_others TOOL...: copies of executables that other users
# (nobody, daemon) must run, in a directory they can reach; prints that
# directory. A TOOL is a name in $TOOLS or a path. The clone, and so
# build/, may be where others cannot enter (root's home is 0700), and the
# suite's temporary directories are root's own 0700 ones. The directory is
# $SFS_SHARED (tests/run: root's 0755 directory in its 0711 run
# directory), else one made under /tmp for this test or file. Others may
# enter it and run what is there, never write in it. Fails naming the
# cause when nobody still cannot run a copy.
sfs_tools_for_others() {
	local dir=${SFS_SHARED:-} t src dst
	if [[ -z $dir ]]; then
		dir=$(mktemp -d /tmp/stackfs-shared.XXXXXX) || return 1
		sfs_record shared "$dir"
		chmod 0755 "$dir" || return 1
	fi
	for t in "$@"; do
		src=$t
		[[ $t == */* ]] || src=$TOOLS/$t
		dst=$dir/${src##*/}
		cmp -s "$src" "$dst" && continue
		# a whole new file put in place: one already run is not changed
		install -m 0755 "$src" "$dst.$$" && mv -f "$dst.$$" "$dst" || return 1
		if ! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$dst"; then
			echo "nobody cannot run $dst: a directory on its path is not searchable by others:" >&2
			namei -m "$dst" >&2
			return 1
		fi
	done
	echo "$dir"
}

# ---------------------------------------------------------------- images

# sfs_make_image FS SIZE_MB [NAME [MOUNT_OPTS]]
# Makes a loop image with filesystem FS (ext4 with ea_inode and 256-byte
# inodes, or xfs with reflink), mounts it and prints the mount directory.
# glusterfs: a GlusterFS volume on an ext4 image, mounted by its client
# (helpers/gluster.bash).
sfs_make_image() {
	local fs=$1 size=$2 name=${3:-img} mopts=${4:-} dir img loop scope
	scope=$(_sfs_scope_dir)
	img=$scope/sfs-$fs-$name.img
	dir=$scope/$name
	case $fs in
	ext4)
		command -v mkfs.ext4 >/dev/null || { echo "needs mkfs.ext4 (e2fsprogs)" >&2; return 1; }
		truncate -s "${size}M" "$img" || return 1
		mkfs.ext4 -q -F -O ea_inode -I 256 "$img" >&2 || { echo "mkfs.ext4 failed on $img" >&2; return 1; }
		;;
	xfs)
		command -v mkfs.xfs >/dev/null || { echo "needs mkfs.xfs (xfsprogs)" >&2; return 1; }
		((size >= 320)) || size=320 # mkfs.xfs refuses less than 300 MB
		truncate -s "${size}M" "$img" || return 1
		mkfs.xfs -q -f -m reflink=1 "$img" >&2 || { echo "mkfs.xfs failed on $img" >&2; return 1; }
		;;
	glusterfs)
		# a volume on an ext4 brick, mounted by GlusterFS's client
		sfs_gluster_image "$size" "$name"
		return
		;;
	cephfs)
		# a cluster of its own, mounted by ceph-fuse (no image: the
		# size is the OSD's sparse file's)
		sfs_ceph_image "$name"
		return
		;;
	*)
		echo "sfs_make_image: unknown filesystem '$fs' (ext4, xfs, glusterfs or cephfs)" >&2
		return 1
		;;
	esac
	loop=$(losetup --find --show "$img") || {
		echo "no free loop device for $img (losetup -a:)" >&2
		losetup -a >&2
		return 1
	}
	sfs_record loop "$loop"
	mkdir -p "$dir"
	sfs_record mount "$dir"
	mount ${mopts:+-o "$mopts"} "$loop" "$dir" || { echo "mount $loop on $dir failed" >&2; return 1; }
	echo "$dir"
}

# ---------------------------------------------------------------- mounts

# The mount table, read from /proc/self/mountinfo with builtins alone
# (cleanup runs after every test: a findmnt or losetup fork costs tens of
# ms on a busy machine, and a test's teardown made a dozen), into
# _SFS_MI_TARGET, _SFS_MI_TYPE and _SFS_MI_DEV (MAJ:MIN), in mount order.
# Nothing is stat'ed: a mount whose server never answers is not entered.
_sfs_mountinfo() {
	local -a f mi
	local i target line
	_SFS_MI_TARGET=() _SFS_MI_TYPE=() _SFS_MI_DEV=()
	# read whole, from start to end (mapfile reads on, never seeks): the
	# builtin read seeks back after each line, and a seek in mountinfo
	# counts entries again from the first, so a mount or unmount elsewhere
	# meanwhile (the other filesystem's run) made a line be skipped (a
	# live mount taken for none)
	mapfile -t mi </proc/self/mountinfo
	# split by the shell, globbing off (a here-string per line cost a
	# pipe each); `local -` gives the options back on return
	local - IFS=' '
	set -f
	for line in "${mi[@]}"; do
		f=($line)
		target=${f[4]}
		[[ $target == *\\* ]] && printf -v target '%b' "${target//\\/\\0}"
		for ((i = 6; i < ${#f[@]}; i++)); do
			[[ ${f[i]} == - ]] && break
		done
		_SFS_MI_TARGET+=("$target")
		_SFS_MI_TYPE+=("${f[i + 1]}")
		_SFS_MI_DEV+=("${f[2]}")
	done
}

# _sfs_mount_at MP: sets _SFS_AT to the index of the topmost mount on MP
# in the table just read, or -1.
_sfs_mount_at() {
	local i
	_SFS_AT=-1
	for ((i = ${#_SFS_MI_TARGET[@]} - 1; i >= 0; i--)); do
		if [[ ${_SFS_MI_TARGET[i]} == "$1" ]]; then
			_SFS_AT=$i
			return 0
		fi
	done
	return 1
}

# The MAJ:MIN of the mount on $1.
_sfs_mountinfo_dev() {
	_sfs_mountinfo
	_sfs_mount_at "$1" && echo "${_SFS_MI_DEV[_SFS_AT]}"
	return 0
}

# sfs_hang_mount DIR: mounts a hangfs server (tests/tools/hangfs.c: it
# answers INIT and never anything else) on DIR, recorded for cleanup.
# Nothing may stat DIR after this: only the abort makes the caller return.
sfs_hang_mount() {
	local dir=$1 pid
	pid=$("$TOOLS/hangfs" "$dir") || { echo "hangfs mount on $dir failed" >&2; return 1; }
	sfs_record hang "$pid:$dir"
}

# Aborts the connection of a hangfs mount (every pending caller gets
# ENOTCONN), ends its server and detaches the mount. Never stats it first.
_sfs_abort_hang() {
	local pid=$1 mp=$2 dev i
	dev=$(_sfs_mountinfo_dev "$mp")
	[[ -n $dev && -w /sys/fs/fuse/connections/${dev#*:}/abort ]] &&
		echo 1 >"/sys/fs/fuse/connections/${dev#*:}/abort" 2>/dev/null
	if [[ -n $pid ]] && sfs_alive "$pid" &&
		[[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */hangfs ]]; then
		kill -KILL "$pid" 2>/dev/null
	fi
	for ((i = 0; i < 20; i++)); do
		[[ -n $(_sfs_mountinfo_dev "$mp") ]] || return 0
		umount -l "$mp" >/dev/null 2>&1 || sleep 0.1
	done
	return 0
}

sfs_is_mounted() {
	_sfs_mountinfo
	_sfs_mount_at "$1"
}

sfs_fstype() {
	_sfs_mountinfo
	_sfs_mount_at "$1" && echo "${_SFS_MI_TYPE[_SFS_AT]}"
	return 0
}

# The kernel's caches are dropped for every mount at once, and the ext4
# and XFS runs go side by side: a test that asserts the kernel still
# caches an entry (changes made below hidden for timeout=) holds this lock
# shared until it ends, and a drop takes it alone.
SFS_CACHES_LOCK=/tmp/stackfs-caches.lock

# sfs_drop_caches N: sync, then N into /proc/sys/vm/drop_caches.
sfs_drop_caches() {
	sync
	flock -x "$SFS_CACHES_LOCK" sh -c "echo $1 >/proc/sys/vm/drop_caches"
}

# sfs_hold_caches: no drop of the kernel's caches until this test ends
# (fd 7 is closed with the test's process).
sfs_hold_caches() {
	exec 7>"$SFS_CACHES_LOCK"
	flock -s 7
}

# sfs_status_of KEY [MP]: the value of KEY in `stackfs status` of the
# mount on MP (default $MNT)
sfs_status_of() {
	"$SFS" status "${2:-$MNT}" | awk -v k="$1" '$1 == k { print $2 }'
}

# The pid of the daemon serving the stackfs mount on $1, or nothing.
sfs_daemon_pid() {
	local mp=$1 mm pid p cmd
	mm=$(_sfs_mountinfo_dev "$mp")
	if [[ -n $mm && -r $SFS_RUNTIME/$mm/pid ]]; then
		pid=$(<"$SFS_RUNTIME/$mm/pid")
		if sfs_alive "$pid"; then
			echo "$pid"
			return 0
		fi
	fi
	# fallback: a stackfsd process whose command line names the mount point
	for p in $(sfs_stackfsd_pids); do
		sfs_alive "$p" || continue
		cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
		if [[ " $cmd " == *" $mp "* || " $cmd " == *" $(realpath -m "$mp") "* ]]; then
			echo "$p"
			return 0
		fi
	done
	return 0
}

# The pids of the running stackfsd processes (an ASan build's too): one
# pgrep by name, not a readlink of every /proc/PID/exe (a fork per
# process: seconds per test on a busy machine).
sfs_stackfsd_pids() {
	pgrep '^stackfsd' 2>/dev/null || true
}

# sfs_mount BRANCHES MP [OPTS]: mounts with the real CLI (no -f), records
# the mount for cleanup and checks that it is a live fuse.stackfs mount.
sfs_mount() {
	local branches=$1 mp=$2 opts=${3:-} out rc
	[[ -d $mp ]] || mkdir -p "$mp"
	sfs_record stackfs "$mp"
	out=$("$SFS" mount ${opts:+-o "$opts"} "$branches" "$mp" 2>&1)
	rc=$?
	if ((rc != 0)); then
		echo "stackfs mount ${opts:+-o $opts }'$branches' '$mp' failed (exit $rc): $out" >&2
		return 1
	fi
	if [[ $(sfs_fstype "$mp") != fuse.stackfs ]]; then
		echo "stackfs mount returned 0 but $mp is not a fuse.stackfs mount:" >&2
		findmnt -M "$mp" >&2
		return 1
	fi
	sfs_record pid "$(sfs_daemon_pid "$mp"):$mp"
}

# sfs_alive PID: the process exists and has not exited (a zombie whose
# parent has not reaped it yet has exited).
sfs_alive() {
	local stat
	[[ -n $1 ]] || return 1
	# read, not $(cat): a fork costs tens of ms on a busy machine
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}

# Kills a daemon we started when it outlived its mount. Only a stackfsd.
_sfs_reap_daemon() {
	local pid=$1 i
	sfs_alive "$pid" || return 0
	for ((i = 0; i < 50; i++)); do
		sfs_alive "$pid" || return 0
		sleep 0.1
	done
	[[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */stackfsd* ]] || return 0
	echo "cleanup: daemon $pid outlived its mount; SIGTERM" >&2
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 20; i++)); do
		sfs_alive "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	return 0
}

# Unmounts a stackfs mount by every means, then makes sure its daemon ended.
_sfs_umount_stackfs() {
	local mp=$1 pid mm
	sfs_is_mounted "$mp" || return 0
	[[ $(sfs_fstype "$mp") == fuse* ]] || { _sfs_umount_other "$mp"; return 0; }
	pid=$(sfs_daemon_pid "$mp")
	mm=$(_sfs_mountinfo_dev "$mp")
	if [[ -x $SFS ]] && timeout 20 "$SFS" umount "$mp" >/dev/null 2>&1 && ! sfs_is_mounted "$mp"; then
		:
	elif timeout 10 fusermount3 -u "$mp" >/dev/null 2>&1 && ! sfs_is_mounted "$mp"; then
		echo "cleanup: stackfs umount failed on $mp; fusermount3 -u did it" >&2
	else
		echo "cleanup: aborting the FUSE connection of $mp and detaching it lazily" >&2
		[[ -n $mm && -w /sys/fs/fuse/connections/${mm#*:}/abort ]] &&
			echo 1 >"/sys/fs/fuse/connections/${mm#*:}/abort" 2>/dev/null
		fusermount3 -u -z "$mp" >/dev/null 2>&1 || umount -l "$mp" >/dev/null 2>&1
	fi
	_sfs_reap_daemon "$pid"
	return 0
}

_sfs_umount_other() {
	local mp=$1 i
	for ((i = 0; i < 20; i++)); do
		sfs_is_mounted "$mp" || return 0
		umount "$mp" >/dev/null 2>&1 && continue
		sleep 0.2
	done
	sfs_is_mounted "$mp" && {
		echo "cleanup: $mp busy; lazy unmount" >&2
		umount -l "$mp" >/dev/null 2>&1
	}
	return 0
}

# The loop devices and their backing files, from sysfs (no losetup
# fork): _SFS_LOOP_DEV and _SFS_LOOP_BACK.
_sfs_loops() {
	local f back dev
	_SFS_LOOP_DEV=() _SFS_LOOP_BACK=()
	for f in /sys/block/loop*/loop/backing_file; do
		[[ -r $f ]] || continue
		{ read -r back <"$f"; } 2>/dev/null || continue
		dev=${f#/sys/block/}
		_SFS_LOOP_DEV+=("/dev/${dev%%/*}")
		_SFS_LOOP_BACK+=("${back% (deleted)}")
	done
}

_sfs_detach_loop() {
	local dev=$1
	[[ -r /sys/block/${dev#/dev/}/loop/backing_file ]] || return 0
	losetup -d "$dev" >/dev/null 2>&1 || echo "cleanup: losetup -d $dev failed" >&2
	return 0
}

# _sfs_mounts_under ROOT: sets _SFS_UNDER_TYPE and _SFS_UNDER_TARGET to
# the mounts under ROOT in the table _sfs_mountinfo read, the last mounted
# first (a mount inside another was made after it).
_sfs_mounts_under() {
	local root=$1 i
	_SFS_UNDER_TYPE=() _SFS_UNDER_TARGET=()
	[[ -n $root ]] || return 0
	for ((i = ${#_SFS_MI_TARGET[@]} - 1; i >= 0; i--)); do
		if [[ ${_SFS_MI_TARGET[i]} == "$root"/* ]]; then
			_SFS_UNDER_TYPE+=("${_SFS_MI_TYPE[i]}")
			_SFS_UNDER_TARGET+=("${_SFS_MI_TARGET[i]}")
		fi
	done
	return 0
}

# _sfs_run_list LIST fuse|rest: undoes the recorded stackfs mounts (fuse)
# or the other mounts and loop devices (rest), newest first.
_sfs_run_list() {
	local list=$1 phase=$2 kind arg pids=() pid lines i
	[[ -f $list ]] || return 0
	mapfile -t lines <"$list"
	for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
		kind=${lines[i]%%$'\t'*}
		arg=${lines[i]#*$'\t'}
		case $phase:$kind in
		hang:hang) _sfs_abort_hang "${arg%%:*}" "${arg#*:}" ;;
		fuse:stackfs) _sfs_umount_stackfs "$arg" ;;
		fuse:pid) pids+=("${arg%%:*}") ;;
		rest:mount) _sfs_umount_other "$arg" ;;
		rest:loop) _sfs_detach_loop "$arg" ;;
		rest:symlink) [[ -L $arg && $(readlink "$arg") == "$SFS" ]] && rm -f "$arg" ;;
		rest:shared) [[ $arg == /tmp/stackfs-shared.* ]] && rm -rf "$arg" ;;
		rest:glvol) _sfs_gluster_drop "$arg" ;;
		rest:glusterd) _sfs_glusterd_stop "$arg" ;;
		rest:cephfs) _sfs_ceph_down "$arg" ;;
		esac
	done
	# daemons recorded at mount time must have ended with their mounts
	for pid in "${pids[@]}"; do
		_sfs_reap_daemon "$pid"
	done
	return 0
}

# _sfs_sweep fuse|all ROOT...: unmounts what is still mounted under ROOTs.
# The table is read once, and again only after something was unmounted
# (every test's teardown sweeps several roots, mostly finding nothing).
_sfs_sweep() {
	local which=$1 root type target i types targets fresh=0
	shift
	for root in "$@"; do
		[[ -n $root ]] || continue
		((fresh)) || _sfs_mountinfo
		fresh=1
		_sfs_mounts_under "$root"
		types=("${_SFS_UNDER_TYPE[@]}") targets=("${_SFS_UNDER_TARGET[@]}")
		for ((i = 0; i < ${#targets[@]}; i++)); do
			type=${types[i]} target=${targets[i]}
			[[ $which == all || $type == fuse* ]] || continue
			[[ " ${_SFS_SWEEP_KEEP:-} " == *" $type "* ]] && continue
			fresh=0
			echo "cleanup: $target ($type) was left mounted" >&2
			if [[ $type == fuse.hangfs ]]; then
				_sfs_abort_hang "" "$target"
			elif [[ $type == fuse* ]]; then
				_sfs_umount_stackfs "$target"
			else
				_sfs_umount_other "$target"
			fi
		done
	done
	return 0
}

_sfs_sweep_loops() {
	local root i
	_sfs_loops
	for root in "$@"; do
		[[ -n $root ]] || continue
		for ((i = 0; i < ${#_SFS_LOOP_DEV[@]}; i++)); do
			[[ ${_SFS_LOOP_BACK[i]} == "$root"/* ]] || continue
			echo "cleanup: loop device ${_SFS_LOOP_DEV[i]} (${_SFS_LOOP_BACK[i]}) was left attached" >&2
			_sfs_detach_loop "${_SFS_LOOP_DEV[i]}"
		done
	done
	return 0
}

# Teardown of a test: never fails. When the test failed, first shows the
# output of its last `run` (run -N shows none when the status differs).
sfs_cleanup() {
	if [[ -z ${BATS_TEST_COMPLETED:-} && -n ${output+set} ]]; then
		printf 'last run: status %s, output:\n%s\n' "${status:-?}" "$output" >&2
	fi
	{
		local list=$BATS_TEST_TMPDIR/.sfs-cleanup
		_sfs_run_list "$list" hang
		_sfs_run_list "$list" fuse
		_sfs_sweep fuse "$BATS_TEST_TMPDIR"
		# the file's GlusterFS and CephFS client mounts (its volume,
		# its "hosts") outlive each test: FUSE mounts too, but the
		# file's own
		_SFS_SWEEP_KEEP="fuse.glusterfs fuse.ceph-fuse" _sfs_sweep fuse "$BATS_FILE_TMPDIR"
		_sfs_run_list "$list" rest
		rm -f "$list"
		# and bind mounts a test made inside the file's images
		_sfs_sweep all "$BATS_TEST_TMPDIR" "${SFS_IMAGES[@]}"
		_sfs_sweep_loops "$BATS_TEST_TMPDIR"
	} || true
	return 0
}

# Teardown of a test file: never fails.
sfs_cleanup_file() {
	{
		local list=$BATS_FILE_TMPDIR/.sfs-cleanup
		_sfs_run_list "$list" hang
		_sfs_sweep fuse "$BATS_RUN_TMPDIR/test" "$BATS_FILE_TMPDIR"
		_sfs_run_list "$list" fuse
		_sfs_sweep all "$BATS_RUN_TMPDIR/test"
		_sfs_run_list "$list" rest
		rm -f "$list"
		_sfs_sweep all "$BATS_FILE_TMPDIR"
		_sfs_sweep_loops "$BATS_FILE_TMPDIR" "$BATS_RUN_TMPDIR/test"
	} || true
	return 0
}

# ---------------------------------------------------------------- per file

# sfs_setup_file [N_IMAGES]: the usual setup_file: checks the build and
# makes N_IMAGES (default 1, at most 2) images of $SFS_FS, exported as
# SFS_IMG (and SFS_IMG2).
# Skip in setup(), not in setup_file(): bats 1.8 reports the teardown_file
# of a file skipped in setup_file as failed.
sfs_setup_file() {
	local n=${1:-1}
	sfs_require_build || return 1
	export SFS_IMG SFS_IMG2
	SFS_IMG=$(sfs_make_image "$SFS_FS" 512 img) || return 1
	if ((n > 1)); then
		SFS_IMG2=$(sfs_make_image "$SFS_FS" 400 img2) || return 1
	fi
}

SFS_IMAGES=()
[[ -n ${SFS_IMG:-} ]] && SFS_IMAGES+=("$SFS_IMG")
[[ -n ${SFS_IMG2:-} ]] && SFS_IMAGES+=("$SFS_IMG2")

# sfs_setup_branches [NAMES...]: fresh directories for this test on the
# file's image: T (the test's directory), UP (rw), LO (ro) and any extra
# NAMES (exported as upper-case variables pointing to $T/name); MNT is an
# empty mount point in the test's own temporary directory.
sfs_setup_branches() {
	local n
	local dirs=()
	T=$SFS_IMG/t$BATS_TEST_NUMBER
	# (one mkdir for all: a fork is some ms on a busy machine, and every
	# test comes here)
	if [[ -e $T || -L $T ]]; then
		rm -rf "$T"
	fi
	UP=$T/upper
	LO=$T/lower
	MNT=$BATS_TEST_TMPDIR/mnt
	dirs=("$UP" "$LO" "$MNT")
	for n in "$@"; do
		printf -v "${n^^}" '%s' "$T/$n"
		dirs+=("$T/$n")
	done
	mkdir -p "${dirs[@]}"
}

# ---------------------------------------------------------------- checks

# One line per entry under $1: path, type, mode, owner, size, mtime and
# ctime (ns), symlink target, inode, links; then the sha256 of each file.
# atime is left out (reading a file may update it).
sfs_tree_state() {
	(
		cd "$1" || exit 1
		find . -printf '%p|%y|%m|%U:%G|%s|%T@|%C@|%l|%i|%n\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

# sfs_snapshot DIR / sfs_assert_unchanged DIR: DIR is byte-for-byte and
# metadata-for-metadata as it was at the snapshot.
sfs_snapshot() {
	sfs_tree_state "$1" >"$BATS_TEST_TMPDIR/snap.$(echo "$1" | md5sum | cut -c1-12)"
}

sfs_assert_unchanged() {
	local snap d
	snap="$BATS_TEST_TMPDIR/snap.$(echo "$1" | md5sum | cut -c1-12)"
	[[ -f $snap ]] || fail "no snapshot of $1"
	if ! d=$(diff -u "$snap" <(sfs_tree_state "$1")); then
		fail "$(printf '%s changed:\n%s' "$1" "$d")"
	fi
}

# The exit status of a refused command: an error, not success, not a
# signal, not "command not found".
assert_refused() {
	if ((status == 0)); then
		fail "expected a non-zero exit status, got 0; output: $output"
	fi
	if ((status >= 126)); then
		fail "expected an error exit status (1..125), got $status; output: $output"
	fi
}

# mount(8) runs its helpers with PATH removed from the environment, so
# mount.fuse3 finds `stackfs` only in the shell's default PATH: this puts a
# symlink to the build's stackfs into /usr/local/bin for the test (removed
# at cleanup). Skips when another stackfs is installed there. The link is
# the machine's, not the run's: those tests run on the suite's first
# filesystem alone, so that the runs of the others, going on at the same
# time (tests/run), never see it vanish under them.
sfs_install_for_mount8() {
	local link=/usr/local/bin/stackfs
	sfs_once_per_suite
	if [[ -e $link || -L $link ]]; then
		[[ -L $link && $(readlink "$link") == "$SFS" ]] && return 0
		skip "needs /usr/local/bin/stackfs to be this build (another stackfs is installed there)"
	fi
	sfs_record symlink "$link"
	mkdir -p /usr/local/bin
	ln -s "$SFS" "$link"
}

# Waits up to $2 seconds (default 5) for process $1 to end.
sfs_wait_gone() {
	local pid=$1 t=${2:-5} i
	for ((i = 0; i < t * 10; i++)); do
		sfs_alive "$pid" || return 0
		sleep 0.1
	done
	return 1
}

# Waits up to $2 seconds (default 10) for $1 to be a stackfs mount.
sfs_wait_mounted() {
	local mp=$1 t=${2:-10} i
	for ((i = 0; i < t * 10; i++)); do
		[[ $(sfs_fstype "$mp") == fuse.stackfs ]] && return 0
		sleep 0.1
	done
	return 1
}
