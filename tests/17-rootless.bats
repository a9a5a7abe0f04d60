#!/usr/bin/env bats
# Rootless mounts (issue 16): stackfs run by an unprivileged user through
# fusermount3, and by the mapped root of a user namespace (`unshare -Urm`,
# what rootless podman does), with no trusted.* attributes and no
# CAP_SYS_ADMIN on the host: copy-up as that user, the union's records in
# user.stackfs.*, the control socket under $XDG_RUNTIME_DIR, the mount's
# note of what is limited, and a root mount that does not follow the
# user's records (docs/trust.md "Rootless mounts").
#
# A dedicated user is made in setup_file (with subuid/subgid ranges) and
# removed in teardown_file. /dev/fuse must be open to her, as on a Debian
# machine: tests/run opens it for the suite (the filesystems' runs go on
# together, so no test may close it again); run alone, the tests skip
# when it is not. The suite's
# directories are root's 0700: the file's image is bind-mounted where the
# user may reach it (a directory of root's, 0755).

load helpers/common

setup_file() {
	sfs_setup_file 1 || return 1
	export RL_USER=sfsrl$$
	if [[ $(stat -c %a /dev/fuse) != 666 ]]; then
		echo "/dev/fuse is not open to users (tests/run opens it for the suite)" \
			>"$BATS_FILE_TMPDIR/skip"
		return 0
	fi
	useradd -m -s /bin/sh "$RL_USER" || return 1
	echo "$RL_USER" >"$BATS_FILE_TMPDIR/user"
	export RL_UID RL_TOP RL_BIN RL_XDG
	RL_UID=$(id -u "$RL_USER") || return 1
	RL_TOP=$(mktemp -d "${SFS_SHARED:-/tmp}/rootless.XXXXXX") || return 1
	echo "$RL_TOP" >"$BATS_FILE_TMPDIR/top"
	chmod 0755 "$RL_TOP" && mkdir "$RL_TOP/img" || return 1
	sfs_record mount "$RL_TOP/img"
	mount --bind "$SFS_IMG" "$RL_TOP/img" || return 1
	RL_BIN=$(sfs_tools_for_others "$SFS" "$SFSD" cohlat) || return 1
	# her runtime directory, as a login manager makes it: hers, 0700
	RL_XDG=$RL_TOP/xdg
	install -d -m 0700 -o "$RL_USER" -g "$RL_USER" "$RL_XDG" || return 1
}

teardown_file() {
	local user top
	user=$(cat "$BATS_FILE_TMPDIR/user" 2>/dev/null)
	# her daemons (a user namespace's mount is out of the cleanup's
	# sight: its daemon keeps the namespace, and the image busy)
	[[ -n $user ]] && pkill -KILL -u "$user" 2>/dev/null && sleep 0.5
	sfs_cleanup_file
	[[ -n $user ]] && userdel -r "$user" >/dev/null 2>&1
	top=$(cat "$BATS_FILE_TMPDIR/top" 2>/dev/null)
	[[ -n $top && -d $top ]] && rm -rf "$top"
	return 0
}

setup() {
	[[ ! -s $BATS_FILE_TMPDIR/skip ]] || skip "$(<"$BATS_FILE_TMPDIR/skip")"
	sfs_require_root "to make a test user and bind mounts"
	sfs_require_cmd setpriv fusermount3 getfattr setfattr
	[[ -n ${RL_UID:-} ]] || fail "setup_file did not make the test user"
	T=$RL_TOP/img/t$BATS_TEST_NUMBER
	rm -rf "$T"
	mkdir -p "$T/up" "$T/lo/d" "$T/lo/dd/sub" "$T/mnt"
	UP=$T/up LO=$T/lo MNT=$T/mnt
	echo hello >"$LO/f"
	echo x >"$LO/d/a"
	echo gone >"$LO/gone"
	echo s >"$LO/dd/sub/s"
	echo h >"$LO/h1"
	ln "$LO/h1" "$LO/h2"
	setfattr -n user.keep -v kept "$LO/f"
	chown -R "$RL_USER:" "$T"
}

teardown() {
	[[ -n ${STOPPED:-} ]] && kill -CONT "$STOPPED" 2>/dev/null
	[[ -n ${WATCHES:-} ]] && echo "$WATCHES" >/proc/sys/fs/inotify/max_user_watches
	[[ -n ${QUEUED:-} ]] && echo "$QUEUED" >/proc/sys/fs/inotify/max_queued_events
	exec 9>&- 2>/dev/null
	sfs_cleanup
}

# wait_for CMD...: true once CMD succeeds, polled for 2 s.
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		"$@" && return 0
		sleep 0.02
	done
	"$@"
}

# coh_count NAME: a counter of her mount's status (coherent_watches...).
coh_count() {
	as_user "$RL_BIN/stackfs" status "$MNT" | awk -v k="$1" '$1 == k { print $2 }'
}

# at_most NAME MAX: the counter is MAX or less.
at_most() {
	local n
	n=$(coh_count "$1")
	[[ -n $n ]] && ((n <= $2))
}

# as_user CMD...: CMD as the test user (no capabilities, her groups), in
# her environment (runtime directory included), from $T.
as_user() {
	(cd "$T" && setpriv --reuid="$RL_USER" --regid="$RL_USER" --init-groups \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="/home/$RL_USER" \
		XDG_RUNTIME_DIR="$RL_XDG" "$@")
}

# user_mount [OPTS]: her mount of up=rw:lo on mnt, recorded for cleanup
# (root's umount2 ends it too); the output in $output.
user_mount() {
	sfs_record stackfs "$MNT"
	run -0 as_user "$RL_BIN/stackfs" mount ${1:+-o "$1"} "$UP=rw:$LO" "$MNT"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "no stackfs mount on $MNT: $output"
}

user_umount() {
	run -0 as_user "$RL_BIN/stackfs" umount "$MNT"
	! sfs_is_mounted "$MNT" || fail "$MNT still mounted after her stackfs umount"
}

@test "rootless: a user's mount through fusermount3 copies up as that user (write, chmod, truncate) and says at mount what is limited" {
	user_mount
	assert_output --partial "running as uid $RL_UID without CAP_SYS_ADMIN: records in user.* attributes"
	assert_output --partial "no allow_other"
	assert_output --partial "control socket is under $RL_XDG/stackfs"
	grep -E " $MNT fuse.stackfs .*user_id=$RL_UID" /proc/mounts
	run -0 as_user sh -c 'echo more >>mnt/f && chmod 600 mnt/d/a && truncate -s 1 mnt/d/a'
	run -0 as_user cat mnt/f
	assert_output $'hello\nmore'
	run -0 stat -c '%U %a %s' "$UP/f" "$UP/d/a"
	assert_output "$RL_USER 644 11"$'\n'"$RL_USER 600 1"
	run -0 cat "$LO/f"
	assert_output hello
	# the copy kept the lower file's xattr, and its origin is a user.* record
	run -0 getfattr --absolute-names -d -m - "$UP/f"
	assert_output --partial 'user.keep="kept"'
	assert_output --partial 'user.stackfs.origin='
	refute_output --partial 'trusted.'
}

# A directory is reopened for its listing by "." (common/bio.c), which
# needs search permission; her daemon may only read one of mode 0444, as
# ls(1) may: the reopen then goes through the fd's /proc link.
@test "rootless: a lower directory she may read but not search lists through her view as it does in the branch" {
	mkdir "$LO/ro"
	: >"$LO/ro/one"
	: >"$LO/ro/two"
	chown -R "$RL_USER:" "$LO/ro"
	chmod 0444 "$LO/ro"
	run -0 as_user ls "$LO/ro"
	assert_output $'one\ntwo'
	user_mount
	run -0 as_user ls mnt/ro
	assert_output $'one\ntwo'
}

@test "rootless: a deleted lower file stays deleted across a remount; mkdir over its whiteout; a renamed lower directory keeps its content (user.stackfs.redirect)" {
	user_mount
	run -0 as_user sh -c 'rm mnt/gone && mv mnt/dd mnt/dd2 && mkdir mnt/d2 && rm mnt/d/a && rmdir mnt/d && mkdir mnt/d && echo new >mnt/d/n'
	user_umount
	user_mount
	run -0 as_user ls -A mnt
	assert_output $'d\nd2\ndd2\nf\nh1\nh2'
	run -0 as_user ls -A mnt/d mnt/dd2/sub
	assert_output $'mnt/d:\nn\n\nmnt/dd2/sub:\ns'
	run -0 getfattr --absolute-names -n user.stackfs.redirect --only-values "$UP/dd2"
	assert_output /dd
	run -1 getfattr --absolute-names -n trusted.stackfs.redirect "$UP/dd2"
	[[ -e $UP/.wh.gone && -e $UP/d/.wh..wh..opq ]]
}

@test "rootless: xattrs and hard links through the view; user.stackfs.* is neither shown nor settable" {
	user_mount
	run -0 as_user sh -c 'setfattr -n user.x -v 1 mnt/f && getfattr -n user.x --only-values mnt/f'
	assert_output 1
	run -0 as_user sh -c 'echo k >>mnt/h1 && ln mnt/f mnt/f2 && stat -c "%i %h" mnt/h1 mnt/h2 mnt/f mnt/f2 && cat mnt/h2'
	[[ ${lines[0]} == "${lines[1]}" && ${lines[0]} == *" 2" ]] || fail "h1/h2 not one inode with 2 links: $output"
	[[ ${lines[2]} == "${lines[3]}" ]] || fail "f/f2 not one inode: $output"
	assert_line --index 4 h
	assert_line --index 5 k
	run -0 as_user getfattr -d -m - mnt/f
	refute_output --partial user.stackfs
	run -1 as_user setfattr -n user.stackfs.origin -v 1 mnt/f
	assert_output --partial 'Operation not permitted'
}

@test "rootless: stackfs status, branch list and umount work for the user (control socket under XDG_RUNTIME_DIR)" {
	user_mount
	local mm
	mm=$(_sfs_mountinfo_dev "$MNT")
	[[ -S $RL_XDG/stackfs/$mm/ctl ]] || fail "no control socket at $RL_XDG/stackfs/$mm/ctl"
	[[ $(stat -c %U "$RL_XDG/stackfs/$mm/pid") == "$RL_USER" ]]
	[[ ! -e /run/stackfs/$mm ]]
	run -0 as_user "$RL_BIN/stackfs" status "$MNT"
	assert_line --regexp '^mountpoint +'"$MNT"'$'
	run -0 as_user "$RL_BIN/stackfs" branch list "$MNT"
	assert_output --partial "$UP"
	assert_output --partial "$LO"
	run -0 as_user "$RL_BIN/stackfs" branch mode "$MNT" "$LO" ro
	user_umount
	[[ ! -e $RL_XDG/stackfs/$mm ]]
}

@test "rootless: without XDG_RUNTIME_DIR the runtime directory is /run/user/UID/stackfs, never /tmp; the mount says it cannot publish" {
	sfs_record stackfs "$MNT"
	run -0 bash -c 'cd "$1" && setpriv --reuid="$2" --regid="$2" --init-groups env -i PATH=/usr/bin:/bin "$3" mount "$4" "$5" 2>&1' \
		_ "$T" "$RL_USER" "$RL_BIN/stackfs" "$UP=rw:$LO" "$MNT"
	assert_output --partial "control socket is under /run/user/$RL_UID/stackfs"
	assert_output --partial "cannot publish pid under /run/user/$RL_UID/stackfs"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]]
	run -0 find /tmp -maxdepth 2 -user "$RL_USER"
	assert_output ''
}

@test "rootless: the user's records are not followed by root: refused while her .stackfs is there, refused by the header's flag, fsck says so, and after it is gone the records are ignored and hidden" {
	user_mount
	run -0 as_user sh -c 'mv mnt/dd mnt/dd2 && echo m >>mnt/f'
	user_umount
	# her .stackfs: the trust rule refuses it
	run ! "$SFS" mount "$UP=rw:$LO" "$MNT"
	assert_output --partial "is owned by uid $RL_UID ($RL_USER), not by uid 0"
	# made root's (by hand, or a rebuild): the header says user.* records
	cp -a "$UP" "$T/rootup"
	chown -R root:root "$T/rootup/.stackfs"
	run ! "$SFS" mount "$T/rootup=rw:$LO" "$MNT"
	assert_output --partial "its records are user.* attributes"
	run -4 "$SFS" fsck "$T/rootup"
	assert_output --partial RECORDS_USER
	# her own fsck judges them
	run -0 as_user "$RL_BIN/stackfs" fsck "$UP"
	assert_output --partial clean
	# gone (her right: the branch is hers): root's mount follows no user.* record
	run -0 as_user rm -rf up/.stackfs
	sfs_mount "$UP=rw:$LO" "$MNT"
	# the moved directory is her upper one alone (its redirect is not
	# followed), the old name stays deleted (a .wh. file is no record)
	run -0 ls -A "$MNT/dd2"
	assert_output ''
	run -2 ls -A "$MNT/dd"
	run -0 getfattr --absolute-names -d -m - "$MNT/f" "$MNT/dd2"
	refute_output --partial user.stackfs
	run -1 setfattr -n user.stackfs.redirect -v /dd "$MNT/dd2"
	run -1 setfattr -n user.stackfs.origin -v x "$MNT/f"
	run -0 getfattr --absolute-names -d -m - "$UP/f"
	refute_output --partial 'trusted.stackfs'
}

@test "rootless: root's view hides and refuses user.stackfs.* names (regression: they were listed and stored)" {
	sfs_mount "$UP=rw:$LO" "$MNT"
	run -1 setfattr -n user.stackfs.origin -v x "$MNT/f"
	setfattr -n user.stackfs.redirect -v /dd "$LO/d"
	run -0 getfattr --absolute-names -d -m - "$MNT/d"
	refute_output --partial user.stackfs
	run -1 getfattr --absolute-names -n user.stackfs.redirect "$MNT/d"
	run -1 getfattr --absolute-names -n user.stackfs.origin "$UP/f"
}

# in_userns SCRIPT: SCRIPT run by sh as the mapped root of a new user and
# mount namespace of the test user (her uid is 0 there, her subordinate
# ids 1..65536), from $T; its mounts end with it (a trap unmounts them:
# its daemons would keep the namespace alive).
in_userns() {
	as_user unshare --map-root-user --map-users="$RL_SUB,1,65536" \
		--map-groups="$RL_SUBG,1,65536" --mount sh -c "$1" sh "$RL_BIN/stackfs"
}

@test "rootless: in a user namespace (unshare, as rootless podman runs it): mount, copy-up, whiteouts, chown only within the mapped ranges" {
	export RL_SUB RL_SUBG
	RL_SUB=$(awk -F: -v u="$RL_USER" '$1 == u { print $2; exit }' /etc/subuid)
	RL_SUBG=$(awk -F: -v u="$RL_USER" '$1 == u { print $2; exit }' /etc/subgid)
	[[ -n $RL_SUB && -n $RL_SUBG ]] || skip "needs subuid/subgid ranges for $RL_USER"
	as_user unshare -Urm true || skip "user namespaces are not allowed (user.max_user_namespaces)"
	run -0 in_userns '
		trap "\"$1\" umount mnt >/dev/null 2>&1 || umount -l mnt" EXIT
		"$1" mount up=rw:lo mnt 2>&1 || exit 1
		grep " $PWD/mnt fuse.stackfs " /proc/self/mounts
		echo more >>mnt/f && rm mnt/gone && mv mnt/dd mnt/dd2 || exit 1
		chown 1000:1000 mnt/f && stat -c "%u:%g" mnt/f || exit 1
		chown 70000 mnt/d/a 2>&1 && exit 1
		mkdir -m 1777 mnt/pub || exit 1
		setpriv --reuid=1000 --regid=1000 --clear-groups sh -c "echo c >mnt/pub/byuser" || exit 1
		stat -c "%u:%g" mnt/pub/byuser
		"$1" status mnt | grep "^mountpoint"'
	assert_output --partial 'running as root of a user namespace, without CAP_SYS_ADMIN on the host'
	assert_output --partial 'allow_other'
	assert_line 1000:1000
	assert_output --partial 'Invalid argument'
	assert_line --regexp '^mountpoint +'
	# on disk: the mapped ids, user.* records, her whiteout
	run -0 stat -c '%u:%g' "$UP/f" "$UP/pub/byuser"
	assert_output "$((RL_SUB + 999)):$((RL_SUBG + 999))"$'\n'"$((RL_SUB + 999)):$((RL_SUBG + 999))"
	run -0 getfattr --absolute-names -n user.stackfs.redirect --only-values "$UP/dd2"
	assert_output /dd
	[[ -e $UP/.wh.gone ]]
	grep -q " $MNT " /proc/mounts && fail "the namespace's mount shows on the host"
	return 0
}

@test "rootless: with whiteout=overlay a user's upper is one kernel overlayfs mounted with userxattr reads (0:0 whiteouts, user.overlay.opaque)" {
	user_mount whiteout=overlay
	run -0 as_user sh -c 'rm mnt/gone && mv mnt/dd mnt/dd2 && rm mnt/d/a && rmdir mnt/d && mkdir mnt/d && echo n >mnt/d/n'
	user_umount
	run -0 stat -c '%F %t:%T' "$UP/gone" "$UP/dd"
	assert_output $'character special file 0:0\ncharacter special file 0:0'
	run -0 getfattr --absolute-names -n user.overlay.redirect --only-values "$UP/dd2"
	assert_output /dd
	run -0 getfattr --absolute-names -n user.overlay.opaque --only-values "$UP/d"
	assert_output y
	# the kernel's view of the same layers (the metadata dir moved aside:
	# kernel overlayfs would show it). With userxattr the kernel follows
	# no redirect (redirect_dir=nofollow): dd2 is its upper alone there.
	mv "$UP/.stackfs" "$T/meta"
	mkdir -p "$T/work" "$T/kmnt"
	sfs_record mount "$T/kmnt"
	mount -t overlay -o "lowerdir=$LO,upperdir=$UP,workdir=$T/work,userxattr" overlay "$T/kmnt" ||
		skip "kernel overlayfs with userxattr cannot be mounted here"
	run -0 ls -A "$T/kmnt" "$T/kmnt/d"
	assert_output "$T/kmnt:"$'\nd\ndd2\nf\nh1\nh2\n\n'"$T/kmnt/d:"$'\nn'
}

# -o coherent without CAP_SYS_ADMIN: fanotify cannot mark a filesystem,
# so the daemon watches the cached directories by inotify
# (docs/coherent.md "Lower branches that change"). Her view is hers alone (no allow_other):
# it is read as her.
@test "rootless: -o coherent by inotify: a name made, rewritten, chmodded, removed and renamed below shows at once (not without the option)" {
	local kind
	sfs_hold_caches
	user_mount timeout=600
	run -1 as_user "$RL_BIN/cohlat" -n 1 -t 1000 "$LO/d" "$MNT/d" create
	assert_output "create: round 0: not seen within 1000 ms"
	user_umount
	user_mount coherent,timeout=600
	run -0 as_user "$RL_BIN/stackfs" status "$MNT"
	assert_output --regexp 'coherent +inotify'
	assert_output --regexp 'coherent_watches +[1-9]'
	for kind in create content attr delete rename; do
		run -0 as_user "$RL_BIN/cohlat" -n 10 -t 2000 "$LO/d" "$MNT/d" "$kind"
		assert_output --regexp "^$kind n=10 median_ms="
	done
}

@test "rootless: -o coherent by inotify: directories made below listed ones show; a watched directory moved out of the branch; watches given back" {
	local i
	for ((i = 0; i < 20; i++)); do mkdir -p "$LO/many/m$i"; done
	chown -R "$RL_USER:" "$LO/many"
	user_mount coherent,timeout=600
	run -0 as_user ls mnt/d
	mkdir "$LO/d/new"
	echo deep >"$LO/d/new/f"
	wait_for as_user test -e mnt/d/new/f
	run -0 as_user cat mnt/d/new/f
	assert_output deep
	# a name made in the new directory after the view listed it
	run -0 as_user ls mnt/d/new
	assert_output f
	echo two >"$LO/d/new/g"
	wait_for as_user test -e mnt/d/new/g
	# one watch per cached directory: root, d, new, many, m0..m19
	run -0 as_user ls mnt/many/m{0..19}
	run -0 coh_count coherent_watches
	((output >= 24 && output <= 30)) || fail "coherent_watches is $output, not 24 to 30"
	# a watched directory moved out of the branch: what is made in it
	# later is nowhere in the view
	mv "$LO/d/new" "$T/outside"
	wait_for as_user test ! -e mnt/d/new
	echo out >"$T/outside/late"
	# a cached directory replaced below by another of the same name: the
	# view shows the new one, and nothing made in the old one
	mkdir "$LO/dd2" && echo new >"$LO/dd2/fresh"
	run -0 as_user cat mnt/dd/sub/s
	mv "$LO/dd" "$T/olddd" && mv "$LO/dd2" "$LO/dd"
	wait_for as_user test -e mnt/dd/fresh
	echo stale >"$T/olddd/sub/late"
	sleep 0.3
	run -0 as_user ls mnt/dd
	assert_output fresh
	run -0 as_user find mnt -name late
	assert_output ""
	# the kernel forgets the nodes (their directories moved out of the
	# branch, not removed: the kernel itself ends no watch): the watches
	# are given back (of the 24 the root's, d's and a few the kernel
	# keeps longer stay)
	mv "$LO/many" "$T/away"
	wait_for as_user test ! -e mnt/many
	for ((i = 0; i < 5; i++)); do at_most coherent_watches 4 && break; sleep 1; done
	at_most coherent_watches 4 || fail "coherent_watches stays at $(coh_count coherent_watches)"
	run -0 as_user "$RL_BIN/stackfs" status "$MNT"
	assert_output --regexp 'coherent_watches_refused +0'
}

@test "rootless: -o coherent by inotify: a watch refused (fs.inotify.max_user_watches) is logged and counted; the view still serves" {
	local i
	sfs_require_root "a global inotify limit"
	for ((i = 0; i < 60; i++)); do mkdir -p "$LO/many/m$i"; done
	chown -R "$RL_USER:" "$LO/many"
	user_mount "coherent,timeout=600,log=$T/log"
	# a limit of every user's, briefly low: taken under the lock the
	# fanotify queue test uses (one for every run: TMPDIR is the run's),
	# put back in teardown
	exec 9>/tmp/stackfs-tests-sysctl.lock
	flock 9
	WATCHES=$(cat /proc/sys/fs/inotify/max_user_watches)
	echo 40 >/proc/sys/fs/inotify/max_user_watches
	run -0 as_user ls mnt/many/m{0..59}
	echo "$WATCHES" >/proc/sys/fs/inotify/max_user_watches
	WATCHES=
	exec 9>&-
	run -0 grep "coherent: cannot watch a directory of $LO" "$T/log"
	assert_output --partial "max_user_watches reached"
	run -0 as_user "$RL_BIN/stackfs" status "$MNT"
	assert_output --regexp 'coherent_watches_refused +[1-9]'
	# the directories already watched still see what is made below
	echo seen >"$LO/d/marker"
	wait_for as_user test -e mnt/d/marker
}

@test "rootless: -o coherent by inotify: events lost (queue overflow) drop everything, nothing is missed" {
	local n
	sfs_require_root "a global inotify limit"
	# the queue's length is the limit when the instance is made: small
	# for this mount's only, under the lock of the other global limits
	exec 9>/tmp/stackfs-tests-sysctl.lock
	flock 9
	QUEUED=$(cat /proc/sys/fs/inotify/max_queued_events)
	echo 16 >/proc/sys/fs/inotify/max_queued_events
	user_mount coherent,timeout=600
	echo "$QUEUED" >/proc/sys/fs/inotify/max_queued_events
	QUEUED=
	exec 9>&-
	run -0 as_user ls mnt/d
	for n in 0 1 2 3 4 5 6 7 8 9; do run -1 as_user stat "mnt/d/x$n"; done
	run -0 as_user cat mnt/f
	# the watcher held still while 200 events come, far past 16: those
	# that matter come last, so they are lost
	STOPPED=$(<"$RL_XDG/stackfs/$(_sfs_mountinfo_dev "$MNT")/pid")
	kill -STOP "$STOPPED"
	for n in {0..99}; do : >"$LO/d/filler$n"; done
	rm "$LO"/d/filler*
	for n in 0 1 2 3 4 5 6 7 8 9; do echo "$n" >"$LO/d/x$n"; done
	echo newer >"$LO/f"
	kill -CONT "$STOPPED"
	STOPPED=
	wait_for as_user test -e mnt/d/x9
	run -0 as_user cat mnt/d/x{0..9} mnt/f
	assert_output "$(printf '%s\n' {0..9} newer)"
	run -0 as_user "$RL_BIN/stackfs" status "$MNT"
	assert_output --regexp 'coherent_overflows +[1-9]'
}
