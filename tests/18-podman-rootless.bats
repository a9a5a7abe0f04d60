#!/usr/bin/env bats
# Rootless podman with stackfs as its mount program (issue 16): a plain
# user (made here, with the subuid/subgid ranges useradd gives) runs
# podman 4.3 with `driver = "overlay"` and `mount_program = stackfs` (a
# copy of the build's she may run) in her ~/.config/containers. Podman
# runs the mount program as the root of its user namespace, without
# CAP_SYS_ADMIN on the host (docs/trust.md "Rootless mounts", "Container
# engines"). Her storage is on the file's image (bind-mounted where she
# may reach it), her runtime directory in her home (no login session
# here makes /run/user/UID). No registry: the base image is `podman
# import`ed from a busybox rootfs made here, as in tests/16-podman.bats.
#
# Whether rootless podman runs here at all is probed first with the vfs
# driver (no mount program): when it does not, every test skips with its
# error; when it does, a failure with stackfs is stackfs's.
#
# Cleanup (teardown_file, also on failure): `podman system reset -f` as
# her, her remaining processes (podman's pause process, daemons in its
# namespace), the suite's mounts and images, `userdel -r`.
# /dev/fuse is never changed: it is 0600 here, and other test files
# chmod it and give its mode back while this one runs. Her podman runs in
# a private mount namespace where a 0666 node of the same device (made
# here) is bind-mounted on /dev/fuse; podman's pause process keeps that
# namespace for every later call.

load helpers/common
load helpers/podman

setup_file() {
	sfs_setup_file 1 || return 1
	export RP_USER=sfsrp$$ RP_IMG=localhost/sfs-rl-base:1
	export RP_SKIP=$BATS_FILE_TMPDIR/rp-skip
	rp_ready || return 0
	useradd -m -s /bin/sh "$RP_USER" || return 1
	echo "$RP_USER" >"$BATS_FILE_TMPDIR/user"
	export RP_UID RP_HOME RP_SUB RP_SUBG RP_TOP RP_BIN RP_STORE RP_FUSE
	RP_UID=$(id -u "$RP_USER") || return 1
	RP_HOME=$(getent passwd "$RP_USER" | cut -d: -f6)
	RP_SUB=$(awk -F: -v u="$RP_USER" '$1 == u { print $2; exit }' /etc/subuid)
	RP_SUBG=$(awk -F: -v u="$RP_USER" '$1 == u { print $2; exit }' /etc/subgid)
	if [[ -z $RP_SUB || -z $RP_SUBG ]]; then
		echo "useradd gave $RP_USER no subuid/subgid range (SUB_UID_COUNT in /etc/login.defs)" >"$RP_SKIP"
		return 0
	fi
	# her storage on the file's image, in a directory of root's (0755)
	RP_TOP=$(mktemp -d "${SFS_SHARED:-/tmp}/podrl.XXXXXX") || return 1
	echo "$RP_TOP" >"$BATS_FILE_TMPDIR/top"
	chmod 0755 "$RP_TOP" && mkdir "$RP_TOP/img" || return 1
	sfs_record mount "$RP_TOP/img"
	mount --bind "$SFS_IMG" "$RP_TOP/img" || return 1
	RP_STORE=$RP_TOP/img/storage
	install -d -m 0700 -o "$RP_USER" -g "$RP_USER" "$RP_STORE" "$RP_HOME/xdg" || return 1
	RP_BIN=$(sfs_tools_for_others "$SFS" "$SFSD") || return 1
	# her /dev/fuse (rp): the device's node, 0666, in root's directory
	RP_FUSE=$RP_TOP/fuse
	mknod -m 0666 "$RP_FUSE" c "$((16#$(stat -c %t /dev/fuse)))" "$((16#$(stat -c %T /dev/fuse)))" ||
		return 1
	rp_rootfs || return 1
	rp_probe || return 0
	rp_config || return 1
	rp import -c 'ENV PATH=/bin' -c 'CMD ["/bin/sh"]' rootfs.tar "$RP_IMG" >/dev/null || return 1
}

teardown_file() {
	local user top
	user=$(cat "$BATS_FILE_TMPDIR/user" 2>/dev/null)
	if [[ -n $user ]]; then
		# her storage (its files are her subordinate ids'), then what is
		# left of hers: podman's pause process keeps its user and mount
		# namespaces, the stackfs daemons in them, and the image busy
		rp system reset -f >/dev/null 2>&1
		pkill -KILL -u "$user" 2>/dev/null && sleep 0.5
	fi
	sfs_cleanup_file
	[[ -n $user ]] && userdel -r "$user" >/dev/null 2>&1
	top=$(cat "$BATS_FILE_TMPDIR/top" 2>/dev/null)
	[[ -n $top && -d $top ]] && rm -rf "$top"
	return 0
}

setup() {
	sfs_require_root "to make a test user"
	[[ -z $(cat "$RP_SKIP" 2>/dev/null) ]] || skip "$(<"$RP_SKIP")"
	[[ -f ${RP_HOME:-}/.config/containers/storage.conf ]] || fail "setup_file did not configure her podman"
}

teardown() {
	[[ -n ${RP_HOME:-} ]] && rp rm -a -f >/dev/null 2>&1
	sfs_cleanup
}

# ---------------------------------------------------------------- helpers

# What rootless podman needs; the reason to skip is kept for setup().
rp_ready() {
	local c why=
	for c in podman busybox python3 newuidmap newgidmap useradd runuser runc; do
		command -v "$c" >/dev/null || why+=" $c"
	done
	[[ -z $why ]] && return 0
	echo "needs$why (scripts/deps.sh --test installs them)" >"$RP_SKIP"
	return 1
}

# rp ARGS...: podman as her, in her home, with her environment (her
# runtime directory: no login session made /run/user/UID), in a private
# mount namespace whose /dev/fuse is $RP_FUSE (0666). That namespace
# starts with a copy of every mount, and podman's pause process keeps it
# for the file's life: the mounts of other tests under the suite's
# directory (the other filesystem's run: a kernel overlayfs whose workdir
# must be free to mount again, loop images to detach) are detached in it
# first, all but this file's own.
rp() {
	local top=${SFS_SHARED:+${SFS_SHARED%/*/shared}}
	(cd "$RP_HOME" && timeout 120 unshare --mount --propagation private -- sh -c '
		mount --bind "$1" /dev/fuse || exit 125
		top=$2 k1=$3 k2=$4 u=$5
		shift 5
		if [ -n "$top" ]; then
			mi=$(cat /proc/self/mountinfo)
			printf "%s\n" "$mi" | while read -r _ _ _ _ m _; do
				case $m in
				"$k1" | "$k1"/* | "$k2" | "$k2"/*) ;;
				"$top"/*) umount -l "$m" 2>/dev/null ;;
				esac
			done
		fi
		exec runuser -u "$u" -- "$@"' \
		sh "$RP_FUSE" "$top" "$RP_TOP" "$SFS_IMG" "$RP_USER" \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$RP_HOME" \
		USER="$RP_USER" LOGNAME="$RP_USER" XDG_RUNTIME_DIR="$RP_HOME/xdg" podman "$@")
}

# rp_run ARGS...: podman run --rm (stderr apart: podman warns that / is
# not a shared mount).
rp_run() {
	run --separate-stderr rp run --rm --pull=never "$@"
}

# The base image's rootfs, as $RP_HOME/rootfs.tar: busybox, users root and
# u (1000), lower content the tests change, the setuid probe.
rp_rootfs() {
	local r=$BATS_FILE_TMPDIR/rootfs
	pm_rootfs "$r" || return 1
	tar -C "$r" --numeric-owner -cf "$RP_HOME/rootfs.tar" . &&
		chown "$RP_USER:" "$RP_HOME/rootfs.tar"
}

# Does rootless podman run here at all? An import and a run with the vfs
# driver (no mount program) in a store of its own; if not, its error is
# the reason every test skips.
rp_probe() {
	local p=$RP_HOME/probe err
	local -a o=(--storage-driver=vfs --root="$p/root" --runroot="$p/run")
	rp_config_engine || return 1
	if ! err=$( { rp "${o[@]}" import rootfs.tar localhost/probe:1 >/dev/null &&
		rp "${o[@]}" run --rm --pull=never localhost/probe:1 true; } 2>&1); then
		printf 'rootless podman does not run here (vfs driver, no mount program): %s\n' \
			"$(grep -v 'is not a shared mount' <<<"$err" | tail -3 | tr '\n' ' ')" >"$RP_SKIP"
		return 1
	fi
	rp "${o[@]}" system reset -f >/dev/null 2>&1
	rm -rf "$p"
}

# Her containers.conf: runc on cgroupfs (crun refuses this machine's hybrid
# cgroup setup, and there is no systemd user session), events in a file,
# no network.
rp_config_engine() {
	install -d -o "$RP_USER" -g "$RP_USER" "$RP_HOME/.config" "$RP_HOME/.config/containers" || return 1
	cat >"$RP_HOME/.config/containers/containers.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=1024:1024"]
		netns = "none"
		[engine]
		cgroup_manager = "cgroupfs"
		runtime = "runc"
		events_logger = "file"
	EOF
	chown "$RP_USER:" "$RP_HOME/.config/containers/containers.conf"
}

# Her storage.conf: overlay with stackfs as the mount program.
rp_config() {
	cat >"$RP_HOME/.config/containers/storage.conf" <<-EOF
		[storage]
		driver = "overlay"
		graphroot = "$RP_STORE"
		[storage.options.overlay]
		mount_program = "$RP_BIN/stackfs"
	EOF
	chown "$RP_USER:" "$RP_HOME/.config/containers/storage.conf"
}

# rp_oci IMAGE DIR: the image saved as an OCI layout in DIR (hers, so that
# podman may write it), for root to read.
rp_oci() {
	install -d -o "$RP_USER" -g "$RP_USER" "$2" || return 1
	rp save --format oci-dir -o "$2/oci" "$1" >/dev/null 2>&1
}

# rp_layer OCIDIR N: the path of the image's layer blob N (0: the lowest).
rp_layer() {
	python3 - "$1" "$2" <<-'EOF'
		import json, sys
		d = sys.argv[1]
		def blob(dg):
		    return d + "/blobs/sha256/" + dg.split(":", 1)[1]
		ix = json.load(open(d + "/index.json"))
		m = json.load(open(blob(ix["manifests"][0]["digest"])))
		print(blob(m["layers"][int(sys.argv[2])]["digest"]))
	EOF
}

# ---------------------------------------------------------------- tests

@test "rootless podman run --rm: the root is a stackfs mount of her namespace; create, modify, delete, rm -rf, mkdir over, mv of lower entries" {
	rp_run "$RP_IMG" sh -ec '
		grep " / fuse.stackfs " /proc/mounts
		echo new >/data/new
		echo more >>/data/modify
		rm /data/del
		rm -rf /data/dir
		mkdir /data/dir && echo fresh >/data/dir/fresh
		mv /data/mvd /data/moved
		cat /data/new /data/modify /data/moved/in/m
		ls /data/dir
		test ! -e /data/del && test ! -e /data/mvd && test ! -e /data/dir/a
		echo ok'
	((status == 0)) || fail "exit $status: $stderr $output"
	# podman mounts it in its user namespace: user_id=0 is her uid there
	assert_line --index 0 --regexp ' / fuse\.stackfs .*user_id=0,group_id=0'
	assert_line --index 0 --partial allow_other
	[[ ${lines[*]:1} == "new modify more m fresh ok" ]] || fail "in the container: $output"
	# --rm: the container is gone, the image unchanged
	rp_run "$RP_IMG" cat /data/del /data/modify /data/dir/a
	assert_output $'del\nmodify\na'
	grep -q "$RP_STORE" /proc/mounts && fail "her container's mount shows on the host"
	return 0
}

@test "rootless podman: the container's upper is hers with user.stackfs.* records; a user in the container (allow_other), setuid, chown within her ranges; diff, commit and cp" {
	run --separate-stderr rp run --name sfs-ctr --pull=never "$RP_IMG" sh -ec '
		mv /data/mvd /data/moved && echo c >/data/c && rm /data/del && rm -rf /data/gone
		chown 1000:1000 /data/c && echo m >>/data/modify
		if chown 70000 /data/keep 2>/dev/null; then echo "chown 70000 worked"; exit 1; fi
		su -s /bin/sh u -c "id -u; cat /data/keep; /bin/euid; echo y >>/data/mine"'
	((status == 0)) || fail "exit $status: $stderr $output"
	assert_output $'1000\nkeep\nuid=1000 euid=0'
	local up
	up=$(rp inspect --format '{{.GraphDriver.Data.UpperDir}}' sfs-ctr 2>/dev/null)
	[[ -d $up ]] || fail "no upper directory: '$up'"
	# on disk: the namespace's root is her uid, its 1000 her subordinate
	# 100x; the union's records are user.* attributes, none trusted.*
	run -0 stat -c '%n %u:%g' "$up/data/moved" "$up/data/c" "$up/data/mine"
	assert_output "$(printf '%s\n' "$up/data/moved $RP_UID:$RP_UID" \
		"$up/data/c $((RP_SUB + 999)):$((RP_SUBG + 999))" \
		"$up/data/mine $((RP_SUB + 999)):$((RP_SUBG + 999))")"
	run -0 getfattr --absolute-names -n user.stackfs.redirect --only-values "$up/data/moved"
	assert_output /data/mvd
	run -0 getfattr --absolute-names -R -d -m - "$up"
	refute_output --partial trusted.
	run -0 rp diff sfs-ctr
	local want
	for want in "A /data/c" "D /data/del" "D /data/gone" "C /data/modify" "A /data/moved" "D /data/mvd"; do
		[[ $output == *"$want"* ]] || fail "podman diff lacks '$want': $output"
	done
	[[ $output != *.stackfs* ]] || fail "podman diff shows the union's metadata directory: $output"
	run -0 rp commit sfs-ctr localhost/sfs-rl-commit:1
	rp_run localhost/sfs-rl-commit:1 sh -c 'cat /data/c /data/modify /data/mine /data/moved/in/m; stat -c "%u:%g" /data/c; ls /data'
	((status == 0)) || fail "exit $status: $stderr"
	[[ $output == $'c\nmodify\nm\nmine\ny\nm\n1000:1000\n'* ]] || fail "committed image: $output"
	[[ $output != *del* && $output != *gone* && $output != *mvd* ]] || fail "a deleted entry came back: $output"
	# podman cp out of the container and into it (its upper, on stackfs)
	echo into >"$RP_HOME/cpin"
	chown "$RP_USER:" "$RP_HOME/cpin"
	run -0 rp cp sfs-ctr:/data/c "$RP_HOME/cpout"
	[[ $(cat "$RP_HOME/cpout") == c ]] || fail "podman cp out gave: $(cat "$RP_HOME/cpout")"
	run -0 rp cp "$RP_HOME/cpin" sfs-ctr:/data/cpin
	run -0 rp diff sfs-ctr
	[[ $output == *"A /data/cpin"* ]] || fail "what podman cp put in is not in the diff: $output"
	[[ $(cat "$up/data/cpin") == into ]] || fail "podman cp in did not land in the upper"
	# a user of the container may not write root's 0644 file
	rp_run --user 1000:1000 "$RP_IMG" sh -c 'echo x >>/data/keep'
	((status != 0)) || fail "a user wrote root's 0644 file"
	[[ $stderr$output == *"Permission denied"* ]] || fail "not EACCES: $stderr $output"
}

@test "rootless podman build: a RUN step deletes a lower file and makes a directory opaque; the layer has them, the built image runs without them and equals its layers" {
	local ctx=$RP_HOME/ctx d=$RP_HOME/cmp
	install -d -o "$RP_USER" -g "$RP_USER" "$ctx"
	cat >"$ctx/Containerfile" <<-EOF
		FROM $RP_IMG
		RUN echo built >/data/built && echo more >>/data/modify && rm /data/del && \
		    rm -rf /data/opq && mkdir -p /data/opq/new && echo n >/data/opq/new/n && \
		    mv /data/mvd /data/moved && cp /bin/euid /bin/euid2 && chmod 4755 /bin/euid2 && \
		    echo l >/data/l1 && ln /data/l1 /data/l2 && chown 1000:0 /data/built
		USER 1000
		RUN id -u && /bin/euid2 && echo u >/home/u/f && cat /data/mine
	EOF
	run --separate-stderr rp build --pull=never --network=none -t localhost/sfs-rl-built:1 ctx
	((status == 0)) || fail "build failed ($status): $stderr $output"
	[[ $output == *"uid=1000 euid=0"* ]] || fail "setuid did not run as root in the USER step: $output"
	rp_run -u 0 localhost/sfs-rl-built:1 sh -ec '
		cat /data/built /data/modify /data/opq/new/n /data/moved/in/m
		ls -A /data/opq
		test ! -e /data/del && test ! -e /data/opq/old && test ! -e /data/mvd
		stat -c "%a %u:%g %h" /data/built /data/l1 /home/u/f'
	((status == 0)) || fail "exit $status: $stderr $output"
	assert_output "$(printf '%s\n' built modify more n m new '644 1000:0 1' '644 0:0 2' '644 1000:1000 1')"
	# the RUN step's layer: the deleted file's whiteout, the old content of
	# the opaque directory gone (podman's diff of the mounted views
	# writes it as .wh.old, kernel overlayfs's as .wh..wh..opq), no
	# metadata of the union
	rp_oci localhost/sfs-rl-built:1 "$d" || fail "podman save failed"
	local layer
	layer=$(rp_layer "$d/oci" 1) || fail "no second layer in $d/oci"
	run -0 tar -tf "$layer"
	assert_line --regexp '^(\./)?data/\.wh\.del$'
	assert_line --regexp '^(\./)?data/opq/(\.wh\.old|\.wh\.\.wh\.\.opq)$'
	assert_line --regexp '^(\./)?data/opq/new/n$'
	assert_line --regexp '^(\./)?data/\.wh\.mvd$'
	refute_output --partial .stackfs
	# the image's tree, as an export of a container shows it, against
	# the reference flattening of its layers, entry by entry
	rp create --name cmp localhost/sfs-rl-built:1 >/dev/null 2>&1 || fail "podman create failed"
	rp export -o cmp/export.tar cmp || fail "podman export failed"
	python3 "$SFS_REPO/tests/tools/ocitar.py" flatten "$d/oci" >"$BATS_TEST_TMPDIR/ref" || fail "flatten failed"
	python3 "$SFS_REPO/tests/tools/ocitar.py" list "$d/export.tar" >"$BATS_TEST_TMPDIR/got" || fail "list failed"
	diff -u "$BATS_TEST_TMPDIR/ref" "$BATS_TEST_TMPDIR/got" >"$BATS_TEST_TMPDIR/diff" ||
		fail "$(printf 'export differs from its layers (-ref +export):\n%s' "$(head -40 "$BATS_TEST_TMPDIR/diff")")"
}
