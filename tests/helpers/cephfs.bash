# A CephFS for the suite (issue 33): a one-node cluster (a monitor, a
# manager, one OSD keeping BlueStore in a plain sparse file, one metadata
# server) started on this machine from Debian's ceph packages, on
# 127.0.0.1 only, with every daemon's data, keys, sockets and logs in one
# directory of its own; mounted by ceph-fuse as other hosts would mount
# it. Loaded by helpers/common; nothing here runs unless a test asks for
# a cluster. Up in 12 to 16 s, about 0.5 GB of memory; no loop device.
#
# The cluster is a test file's (tests/48-cephfs): recorded, so the
# file's cleanup unmounts its clients, stops its daemons and removes its
# directory, also when a test fails.

# sfs_ceph_skip_reason: why CephFS cannot run here, or nothing.
sfs_ceph_skip_reason() {
	local c
	for c in ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph ceph-authtool monmaptool; do
		command -v "$c" >/dev/null 2>&1 ||
			{ echo "needs $c (Debian: ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common)"; return; }
	done
}

# the ceph command of the cluster in $1
_sfs_ceph() {
	local dir=$1
	shift
	timeout 30 ceph -c "$dir/ceph.conf" --log-file=/dev/null "$@" </dev/null 2>/dev/null
}

# _sfs_ceph_conf DIR PORT: the cluster's configuration. One copy of
# each object (one OSD); the metadata server lets an inode hold 1 MiB of
# xattrs (64 KiB by default, and one value may be 64 KiB); every client
# process its own socket and log.
_sfs_ceph_conf() {
	cat >"$1/ceph.conf" <<EOF
[global]
fsid = $(cat /proc/sys/kernel/random/uuid)
mon host = 127.0.0.1:$2
mon initial members = a
public network = 127.0.0.0/8
ms bind msgr2 = false
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $1/\$name.keyring
run dir = $1/run
admin socket = $1/run/\$name.asok
pid file = $1/run/\$name.pid
log file = $1/log/\$name.log
log to stderr = false
err to stderr = false
log to syslog = false
crash dir = $1/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
mgr initial modules =
[mon]
mon data = $1/mon.\$id
[mgr]
mgr data = $1/mgr.\$id
[osd]
osd data = $1/osd.\$id
osd objectstore = bluestore
bluestore block path = $1/osd.\$id/block.file
bluestore block size = 8589934592
bluestore block create = true
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mkfs = false
bluestore cache autotune = false
bluestore cache size = 268435456
osd memory target = 1073741824
osd op num shards = 2
osd op num threads per shard = 1
[mds]
mds data = $1/mds.\$id
mds max xattr pairs size = 1048576
[client]
admin socket = $1/run/\$name.\$pid.asok
pid file = $1/run/\$name.\$pid.pid
log file = $1/log/\$name.\$pid.log
EOF
}

# _sfs_ceph_daemon DIR NAME ID [ARGS]: one daemon of the cluster, as
# root, its output to its log directory, no fd of this shell held (bats
# waits for its output fds to close)
_sfs_ceph_daemon() {
	local dir=$1 name=$2 id=$3 fd
	shift 3
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		exec "$name" -c "$dir/ceph.conf" --setuser root --setgroup root -i "$id" "$@" \
			</dev/null >>"$dir/log/$name.$id.out" 2>&1
	)
}

# _sfs_ceph_wait SECONDS CMD...: until CMD succeeds (0), or 1
_sfs_ceph_wait() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.5
	done
}

_sfs_ceph_mds_active() { _sfs_ceph "$1" mds stat | grep -q 'up:active'; }
_sfs_ceph_osd_up() { _sfs_ceph "$1" osd stat | grep -q '1 up'; }
_sfs_ceph_pgs_active() {
	local s
	s=$(_sfs_ceph "$1" pg stat) || return 1
	[[ $s == *" active+clean;"* && $s != *peering* && $s != *creating* && $s != *unknown* ]]
}

# _sfs_ceph_keys DIR: the monitor's and the admin's keys
_sfs_ceph_keys() {
	ceph-authtool --create-keyring "$1/mon.a.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null &&
		ceph-authtool --create-keyring "$1/client.admin.keyring" --gen-key -n client.admin \
			--cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null &&
		ceph-authtool "$1/mon.a.keyring" --import-keyring "$1/client.admin.keyring" >/dev/null
}

# _sfs_ceph_osd DIR: OSD 0, its BlueStore made in its sparse file
_sfs_ceph_osd() {
	local dir=$1 uuid key id
	uuid=$(cat /proc/sys/kernel/random/uuid)
	key=$(ceph-authtool --gen-print-key) || return 1
	printf '{"cephx_secret": "%s"}\n' "$key" >"$dir/osd.0/secret.json"
	id=$(_sfs_ceph "$dir" osd new "$uuid" -i "$dir/osd.0/secret.json")
	[[ $id == 0 ]] || { echo "ceph osd new: '$id'" >&2; return 1; }
	ceph-authtool --create-keyring "$dir/osd.0.keyring" --name osd.0 --add-key "$key" >/dev/null &&
		_sfs_ceph_daemon "$dir" ceph-osd 0 --mkfs --osd-uuid "$uuid" &&
		_sfs_ceph_daemon "$dir" ceph-osd 0
}

# sfs_ceph_up: a cluster in a directory of its own under /tmp (a short
# path: its sockets' names must fit in 108 bytes), its monitor on a free
# port of 127.0.0.1; recorded, so the cleanup ends it. Prints the
# directory; 1 with the reason on stderr.
sfs_ceph_up() {
	local dir port
	dir=$(mktemp -d /tmp/sfsceph.XXXXXX) || return 1
	sfs_record cephfs "$dir"
	mkdir -p "$dir"/{run,log,crash,mon.a,mgr.x,osd.0,mds.a}
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	_sfs_ceph_conf "$dir" "$port"
	_sfs_ceph_keys "$dir" &&
		monmaptool --create --fsid "$(sed -n 's/^fsid = //p' "$dir/ceph.conf")" \
			--addv a "[v1:127.0.0.1:$port]" "$dir/monmap" >/dev/null &&
		_sfs_ceph_daemon "$dir" ceph-mon a --mkfs --monmap "$dir/monmap" --keyring "$dir/mon.a.keyring" &&
		_sfs_ceph_daemon "$dir" ceph-mon a &&
		_sfs_ceph_wait 30 _sfs_ceph "$dir" -s >/dev/null ||
		{ echo "the ceph monitor did not start ($dir/log)" >&2; return 1; }
	_sfs_ceph "$dir" auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
		-o "$dir/mgr.x.keyring" >/dev/null &&
		_sfs_ceph_daemon "$dir" ceph-mgr x &&
		_sfs_ceph_osd "$dir" &&
		_sfs_ceph "$dir" auth get-or-create mds.a mon 'allow profile mds' osd 'allow rwx' mds 'allow *' \
			mgr 'allow profile mds' -o "$dir/mds.a.keyring" >/dev/null &&
		_sfs_ceph_daemon "$dir" ceph-mds a &&
		_sfs_ceph_wait 60 _sfs_ceph_osd_up "$dir" &&
		_sfs_ceph "$dir" osd pool create cephfs_metadata 8 8 >/dev/null &&
		_sfs_ceph "$dir" osd pool create cephfs_data 8 8 >/dev/null &&
		_sfs_ceph "$dir" fs new cephfs cephfs_metadata cephfs_data >/dev/null &&
		_sfs_ceph_wait 120 _sfs_ceph_mds_active "$dir" &&
		_sfs_ceph_wait 60 _sfs_ceph_pgs_active "$dir" ||
		{ echo "the ceph cluster did not come up ($dir/log): $(_sfs_ceph "$dir" -s)" >&2; return 1; }
	echo "$dir"
}

# sfs_ceph_mount DIR MOUNTPOINT [OPTION...]: the cluster's file system
# mounted by ceph-fuse (one "host"), with POSIX ACLs (its client checks
# them; off by default) and the OPTIONs; recorded.
sfs_ceph_mount() {
	local dir=$1 mp=$2 log=$1/log/mount.$BASHPID.$RANDOM fd
	shift 2
	mkdir -p "$mp" || return 1
	sfs_record mount "$mp"
	if ! (
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		exec ceph-fuse -c "$dir/ceph.conf" --id admin --client_acl_type=posix_acl "$@" "$mp" \
			</dev/null >"$log" 2>&1
	); then
		echo "ceph-fuse $mp: $(cat "$log")" >&2
		return 1
	fi
	[[ $(findmnt -rn -o FSTYPE -M "$mp") == fuse.ceph-fuse ]] ||
		{ echo "$mp is not a fuse.ceph-fuse mount" >&2; return 1; }
}

# _sfs_ceph_down DIR: the cluster of DIR ended: its clients unmounted
# (their mounts are recorded after the cluster, so undone first; this
# is for any left), its daemons stopped (the metadata server and the
# OSD ignore SIGTERM for seconds: killed; the data is thrown away), its
# directory removed.
_sfs_ceph_down() {
	local dir=$1 mp pid f pids=() i
	[[ $dir == /tmp/sfsceph.* && -d $dir ]] || return 0
	while read -r mp; do
		[[ -n $mp ]] && { umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null; }
	done < <(pgrep -a -f -- "ceph-fuse -c $dir/ceph.conf" | awk '{ print $NF }')
	for f in "$dir"/run/*.pid; do
		[[ -f $f ]] && read -r pid <"$f" && [[ -n $pid ]] || continue
		grep -qF -- "$dir/ceph.conf" "/proc/$pid/cmdline" 2>/dev/null && pids+=("$pid")
	done
	while read -r pid; do pids+=("$pid"); done < <(pgrep -f -- "-c $dir/ceph.conf")
	((${#pids[@]})) && kill -KILL "${pids[@]}" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		pgrep -f -- "-c $dir/ceph.conf" >/dev/null || break
		sleep 0.1
	done
	rm -rf "$dir"
	return 0
}

# sfs_ceph_image NAME: what sfs_make_image cephfs makes: a cluster of its
# own, mounted (with ACLs) on the directory it prints.
sfs_ceph_image() {
	local why dir mp
	why=$(sfs_ceph_skip_reason)
	[[ -z $why ]] || { echo "$why" >&2; return 1; }
	dir=$(sfs_ceph_up) || return 1
	mp=$(_sfs_scope_dir)/$1
	# a directory's st_size an ordinary one, not the recursive byte
	# count the metadata server updates a moment after a write below:
	# the union tests compare snapshots of the lower branches
	sfs_ceph_mount "$dir" "$mp" --client_dirsize_rbytes=false || return 1
	echo "$mp"
}
