# GlusterFS volumes for the suite (issue 33): a glusterd on this machine,
# volumes on loop images made by sfs_make_image, mounted by GlusterFS's
# own FUSE client as other hosts would mount them. Loaded by
# helpers/common (sfs_make_image glusterfs); nothing here runs unless a
# test asks for a volume.
#
# glusterd is started once for the whole suite by the first test that
# needs it, under a lock (the ext4 and XFS runs are side by side), with
# its pid in $SFS_GLUSTERD_PIDFILE (tests/run sets it in the suite's
# directory and ends that glusterd when the suite ends); run outside
# tests/run, the test file that started it ends it. glusterd refuses
# bricks named by a loopback address, so bricks are named by this
# machine's host name, which must resolve; the volumes are served on
# this machine alone all the same.

# sfs_gluster_skip_reason: why GlusterFS cannot run here, or nothing.
sfs_gluster_skip_reason() {
	local c
	for c in glusterd gluster mount.glusterfs; do
		command -v "$c" >/dev/null 2>&1 || { echo "needs $c (Debian: glusterfs-server, glusterfs-client)"; return; }
	done
	getent hosts "$(hostname)" >/dev/null || echo "the host name $(hostname) does not resolve (glusterd names bricks by it)"
}

_sfs_glusterd_answers() {
	timeout 20 gluster --mode=script pool list >/dev/null 2>&1
}

# sfs_glusterd_up: a running glusterd, started if none answers. 0, or 1
# with the reason on stderr.
sfs_glusterd_up() {
	local pidfile=${SFS_GLUSTERD_PIDFILE:-$BATS_FILE_TMPDIR/glusterd.pid} i
	(
		flock 9
		_sfs_glusterd_answers && exit 0
		mkdir -p /var/log/glusterfs
		# nothing of ours open in it: bats waits for its output fds (3,
		# 251) to close, a command substitution for its stdout, and the
		# lock would outlive us
		_sfs_glusterd_start "$pidfile" || exit 1
		for ((i = 0; i < 100; i++)); do
			_sfs_glusterd_answers && exit 0
			sleep 0.2
		done
		exit 1
	) 9>/run/lock/stackfs-glusterd.lock || { echo "glusterd did not start (/var/log/glusterfs/stackfs-suite-glusterd.log)" >&2; return 1; }
	# run outside tests/run: this file ends what it started
	[[ -z ${SFS_GLUSTERD_PIDFILE:-} && -f $pidfile ]] && sfs_record glusterd "$pidfile"
	return 0
}

# _sfs_glusterd_start PIDFILE: glusterd, with no fd of this shell open.
_sfs_glusterd_start() {
	(
		local fd
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		exec glusterd -p "$1" --log-file=/var/log/glusterfs/stackfs-suite-glusterd.log \
			</dev/null >/dev/null 2>&1
	)
}

# _sfs_glusterd_stop PIDFILE: ends the glusterd of PIDFILE, and the brick
# processes it left (each volume is stopped by its own record first).
_sfs_glusterd_stop() {
	local pid
	[[ -f $1 ]] || return 0
	read -r pid <"$1"
	[[ -n $pid ]] && kill "$pid" 2>/dev/null
	rm -f "$1"
}

# sfs_gluster_volume NAME BRICKDIR: a one-brick volume NAME on the
# directory BRICKDIR (on a loop image), started; recorded, so the
# cleanup stops and deletes it before the image is unmounted.
sfs_gluster_volume() {
	local name=$1 brick=$2 out
	mkdir -p "$brick" || return 1
	sfs_record glvol "$name"
	out=$(timeout 60 gluster --mode=script volume create "$name" "$(hostname):$brick" force 2>&1) ||
		{ echo "gluster volume create $name: $out" >&2; return 1; }
	out=$(timeout 60 gluster --mode=script volume start "$name" 2>&1) ||
		{ echo "gluster volume start $name: $out" >&2; return 1; }
}

# _sfs_gluster_drop NAME: stops and deletes volume NAME.
_sfs_gluster_drop() {
	timeout 60 gluster --mode=script volume stop "$1" force >/dev/null 2>&1
	timeout 60 gluster --mode=script volume delete "$1" >/dev/null 2>&1
	return 0
}

# sfs_gluster_mount NAME DIR [OPTS]: the volume mounted on DIR by its
# FUSE client (one "host"); recorded.
sfs_gluster_mount() {
	local log=$BATS_FILE_TMPDIR/glmount.$BASHPID
	mkdir -p "$2" || return 1
	sfs_record mount "$2"
	# to a file: the client that stays behind keeps what it was given
	# open, and a pipe to a command substitution would never end
	if ! mount -t glusterfs ${3:+-o "$3"} "$(hostname):/$1" "$2" </dev/null >"$log" 2>&1; then
		echo "mount of volume $1 on $2: $(cat "$log")" >&2
		return 1
	fi
	[[ $(findmnt -rn -o FSTYPE -M "$2") == fuse.glusterfs ]] ||
		{ echo "$2 is not a fuse.glusterfs mount" >&2; return 1; }
}

# sfs_gluster_image SIZE_MB NAME: what sfs_make_image glusterfs makes: an
# XFS image for the brick (GlusterFS keeps a second link of every file
# and a symlink of every directory in the brick's .glusterfs: an ext4
# brick of this size ran out of inodes under tests/20-lookup-readdir;
# XFS allocates them as needed), the volume, and its client mount (with
# ACLs) on the directory it prints.
sfs_gluster_image() {
	local size=$1 name=$2 scope brickfs vol why
	why=$(sfs_gluster_skip_reason)
	[[ -z $why ]] || { echo "$why" >&2; return 1; }
	sfs_glusterd_up || return 1
	scope=$(_sfs_scope_dir)
	brickfs=$(sfs_make_image xfs "$size" "$name-brick") || return 1
	vol=sfs${BASHPID}x$RANDOM$name
	sfs_gluster_volume "$vol" "$brickfs/brick" || return 1
	sfs_gluster_mount "$vol" "$scope/$name" acl || return 1
	echo "$scope/$name"
}
