#!/usr/bin/env bats
# stackfs as podman's mount program (issue 16), rootful: real podman with
# a private storage on the file's loop image and `mount_program = stackfs`
# (the build's), containers run by runc (crun refuses this machine's
# hybrid cgroup setup) without a network. No registry: the base image is
# `podman import`ed from a busybox rootfs made here, with a static setuid
# probe (tools/euid). Everything podman makes — containers, images, its
# mounts under the storage root — goes in teardown_file.

load helpers/common
load helpers/podman

setup_file() {
	sfs_setup_file 1 || return 1
	export PM_DIR=$BATS_FILE_TMPDIR/podman PM_IMG=localhost/sfs-base:1
	export PM_STORE=$SFS_IMG/storage
	export CONTAINERS_CONF=$PM_DIR/containers.conf
	export CONTAINERS_STORAGE_CONF=$PM_DIR/storage.conf
	# podman's cleanup refuses a runroot over 50 characters (see pm_config)
	PM_RUN=$(mktemp -d /tmp/sfs-pm.XXXXXX) || return 1
	export PM_RUN
	pm_ready || return 0
	pm_config || return 1
	pm_base_image || return 1
}

teardown_file() {
	if [[ -n ${PM_DIR:-} && -f $CONTAINERS_CONF ]]; then
		pm rm -a -f >/dev/null 2>&1
		pm unmount -a >/dev/null 2>&1
	fi
	# its state; nothing of it stays mounted once the containers are gone
	if [[ -n ${PM_RUN:-} && -d $PM_RUN ]] && ! findmnt -rn -o TARGET | grep -qF "$PM_RUN/"; then
		rm -rf "$PM_RUN"
	fi
	sfs_cleanup_file
}

setup() {
	sfs_require_root "podman's rootful storage"
	[[ -z $(cat "$BATS_FILE_TMPDIR/pm-skip" 2>/dev/null) ]] ||
		skip "$(<"$BATS_FILE_TMPDIR/pm-skip")"
	[[ -f $CONTAINERS_CONF ]] || fail "setup_file did not configure podman"
}

teardown() {
	[[ -f ${CONTAINERS_CONF:-} ]] && pm rm -a -f >/dev/null 2>&1
	sfs_cleanup
}

# ---------------------------------------------------------------- helpers

# What podman needs; the reason to skip is kept for setup().
pm_ready() {
	local c why=
	for c in podman busybox python3; do
		command -v "$c" >/dev/null || why+=" $c"
	done
	# runc: crun refuses this machine's hybrid cgroup setup
	PM_RUNTIME=$(command -v runc || command -v crun) || why+=" runc"
	[[ -z $why ]] && return 0
	echo "needs$why (scripts/deps.sh --test installs them)" >"$BATS_FILE_TMPDIR/pm-skip"
	return 1
}

# A private podman: its storage on the image, stackfs as mount program,
# runc on cgroupfs, default ulimits root can set here (it lacks
# CAP_SYS_RESOURCE, so podman's 1048576 open files fail), no events,
# networks or state outside $PM_DIR, $PM_RUN and the storage. conmon runs
# `podman container cleanup` with --root, --runroot and --tmpdir but not
# this configuration: its database stays in the storage (no static_dir),
# and its runroot is short (podman 4.3's cleanup refuses one over 50
# characters), or the cleanup fails and every `podman run` waits 20 s for
# the exit it would have recorded ("Exceeded conmon timeout").
pm_config() {
	mkdir -p "$PM_DIR/tmp" "$PM_DIR/volumes" "$PM_STORE"
	cat >"$CONTAINERS_STORAGE_CONF" <<-EOF
		[storage]
		driver = "overlay"
		runroot = "$PM_RUN"
		graphroot = "$PM_STORE"
		[storage.options.overlay]
		mount_program = "$SFS"
	EOF
	cat >"$CONTAINERS_CONF" <<-EOF
		[containers]
		default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
		netns = "none"
		[engine]
		cgroup_manager = "cgroupfs"
		runtime = "$PM_RUNTIME"
		events_logger = "none"
		tmp_dir = "$PM_DIR/tmp"
		volume_path = "$PM_DIR/volumes"
	EOF
}

pm() {
	timeout 300 podman "$@"
}

# The base image: busybox (every applet a symlink), users root and u
# (1000), and lower content the tests change: files, a hard-linked pair,
# directories to remove, replace and rename, the setuid probe.
pm_base_image() {
	local r=$PM_DIR/rootfs
	pm_rootfs "$r" || return 1
	tar -C "$r" -c . | pm import -c 'ENV PATH=/bin' -c 'CMD ["/bin/sh"]' - "$PM_IMG" >/dev/null
}

# pm_run ARGS...: podman run --rm of the base image unless ARGS name one.
pm_run() {
	run --separate-stderr pm run --rm --pull=never "$@"
}

# pm_compare IMAGE: the image's tree as `podman export` of a container
# shows it, against the reference flattening of its OCI layers, entry by
# entry (content, mode, owner, xattrs, hard links).
pm_compare() {
	local img=$1 d=$BATS_TEST_TMPDIR/cmp
	mkdir -p "$d"
	pm save --format oci-dir -o "$d/oci" "$img" >/dev/null 2>&1 || fail "podman save $img failed"
	pm create --name cmp "$img" >/dev/null || fail "podman create $img failed"
	pm export -o "$d/export.tar" cmp || fail "podman export failed"
	python3 "$SFS_REPO/tests/tools/ocitar.py" flatten "$d/oci" >"$d/ref" || fail "flatten failed"
	python3 "$SFS_REPO/tests/tools/ocitar.py" list "$d/export.tar" >"$d/got" || fail "list failed"
	diff -u "$d/ref" "$d/got" >"$d/diff" ||
		fail "$(printf 'export of %s differs from its layers (-ref +export):\n%s' "$img" "$(head -40 "$d/diff")")"
}

# ---------------------------------------------------------------- tests

@test "podman run --rm: the root is a stackfs mount; create, modify, delete, rm -rf, mkdir over, mv of lower entries" {
	pm_run "$PM_IMG" sh -ec '
		grep -q " / fuse.stackfs " /proc/mounts
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
	assert_output $'new\nmodify\nmore\nm\nfresh\nok'
	# --rm: the container and its mount are gone, the image unchanged
	pm_run "$PM_IMG" cat /data/del /data/modify /data/dir/a
	assert_output $'del\nmodify\na'
}

@test "podman run as a user: allow_other lets it in; a setuid-root binary runs as root (suid)" {
	pm_run --user 1000:1000 "$PM_IMG" sh -ec 'id -u; cat /data/keep; echo x >/tmp/t; echo y >>/data/mine; cat /data/mine; /bin/euid'
	((status == 0)) || fail "exit $status: $stderr"
	assert_output $'1000\nkeep\nmine\ny\nuid=1000 euid=0'
	pm_run --user 1000:1000 "$PM_IMG" sh -c 'echo x >>/data/keep'
	((status != 0)) || fail "a user wrote root's 0644 file"
	[[ $stderr$output == *"Permission denied"* ]] || fail "not EACCES: $stderr $output"
}

@test "podman build: RUN steps that create, modify, delete, make opaque and rename lower entries; USER; setuid; the image equals its layers" {
	local ctx=$BATS_TEST_TMPDIR/ctx
	mkdir -p "$ctx"
	cat >"$ctx/Containerfile" <<-EOF
		FROM $PM_IMG
		RUN echo built >/data/built && echo more >>/data/modify && rm /data/del && \
		    rm -rf /data/opq && mkdir -p /data/opq/new && echo n >/data/opq/new/n && \
		    mv /data/mvd /data/moved && mv /data/keep /data/kept && \
		    cp /bin/euid /bin/euid2 && chmod 4755 /bin/euid2 && \
		    echo l >/data/l1 && ln /data/l1 /data/l2 && echo h >>/data/h2
		RUN rm -rf /data/dir/sub && echo again >/data/dir/sub && mv /data/moved/in /data/in && \
		    rm /data/h1 && chmod 600 /data/mine && chown 1000:0 /data/built
		USER 1000
		RUN id -u && /bin/euid2 && echo u >/home/u/f && cat /data/mine
	EOF
	run --separate-stderr pm build --pull=never --network=none -t localhost/sfs-built:1 "$ctx"
	((status == 0)) || fail "build failed ($status): $stderr $output"
	[[ $output == *"uid=1000 euid=0"* ]] || fail "setuid did not run as root in the USER step: $output"
	pm_run -u 0 localhost/sfs-built:1 sh -ec '
		cat /data/built /data/modify /data/opq/new/n /data/dir/sub /data/in/m /data/kept /data/h2 /data/mine
		ls -A /data/opq; ls -A /data/moved | wc -l
		test ! -e /data/del && test ! -e /data/keep && test ! -e /data/mvd && test ! -e /data/h1
		test ! -e /data/opq/old
		stat -c "%a %u:%g %h" /data/mine /data/built /data/l1 /home/u/f'
	((status == 0)) || fail "exit $status: $stderr $output"
	# (h2's link count is its lower inode's, 2, as with kernel overlayfs:
	# h1 is whited out above it, in a later layer)
	# (/data/mine: a chmod of a lower file, a metadata-only copy-up: the
	# layer must carry its data, not the upper's sparse file)
	assert_output "$(printf '%s\n' built modify more n again m keep h h mine new 0 \
		'600 1000:1000 1' '644 1000:0 1' '644 0:0 2' '644 1000:1000 1')"
	pm_compare localhost/sfs-built:1
}

@test "podman commit, diff and cp of a container whose changes are on stackfs" {
	# (a name with letters beyond hex: podman diff takes an image too,
	# and "c1" was the prefix of the built image's id in one run)
	pm run --name sfs-ctr --pull=never "$PM_IMG" sh -ec 'echo c >/data/c; rm /data/del; rm -rf /data/gone; echo m >>/data/modify' ||
		fail "podman run failed"
	run -0 pm diff sfs-ctr
	local want
	for want in "A /data/c" "D /data/del" "D /data/gone" "C /data/modify"; do
		[[ $output == *"$want"* ]] || fail "podman diff lacks '$want': $output"
	done
	[[ $output != *.stackfs* ]] || fail "podman diff shows the union's metadata directory: $output"
	echo from-host >"$BATS_TEST_TMPDIR/hostfile"
	run -0 pm cp "$BATS_TEST_TMPDIR/hostfile" sfs-ctr:/data/fromhost
	run -0 pm cp sfs-ctr:/data/modify "$BATS_TEST_TMPDIR/out"
	[[ $(<"$BATS_TEST_TMPDIR/out") == $'modify\nm' ]] || fail "podman cp out: $(<"$BATS_TEST_TMPDIR/out")"
	run -0 pm commit sfs-ctr localhost/sfs-commit:1
	pm_run localhost/sfs-commit:1 sh -c 'cat /data/c /data/fromhost /data/modify; ls /data'
	((status == 0)) || fail "exit $status: $stderr"
	[[ $output == $'c\nfrom-host\nmodify\nm\n'* ]] || fail "committed image: $output"
	[[ $output != *del* && $output != *gone* ]] || fail "a deleted entry came back: $output"
	pm_compare localhost/sfs-commit:1
}
