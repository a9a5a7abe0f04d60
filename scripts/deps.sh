#!/usr/bin/env bash
# Installs the Debian packages (bookworm or later) stackfs needs. Run as
# root. Installs only what is missing.
#
#   scripts/deps.sh          what building and running stackfs need (the demo)
#   scripts/deps.sh --deb    that and what `make deb` needs (the Debian package)
#   scripts/deps.sh --test   all that and what the test suite needs (tests/run)
#   scripts/deps.sh --list [--test]   prints the package names, installs nothing
#
# tests/01-deps.bats checks that every command the suite and the scripts
# run comes from a package named here.
set -euo pipefail
# build and run: the compiler and libraries, fusermount3, and the
# mount/findmnt/modprobe the scripts call; apt for the apt-get below (its
# archive priority is required, but dpkg records the .deb's "important",
# which tests/01-deps.bats read as not provided on a fresh chroot)
run_pkgs=(
	build-essential binutils pkg-config libfuse3-dev fuse3 libattr1-dev libacl1-dev
	liburing-dev
	util-linux mount kmod apt
)
# make deb: dpkg-buildpackage and dpkg-architecture (dpkg-dev, also in
# build-essential), debhelper for debian/rules, lintian to check the .deb,
# git to list the tree's files (make-deb.sh copies what git tracks)
deb_pkgs=(dpkg-dev debhelper lintian git)
# the suite: bats, the filesystems of its loop images, the probes' tools
test_pkgs=(
	bats bats-support bats-assert xfsprogs e2fsprogs acl attr coreutils
	findutils procps rsync tar python3 jq man-db groff-base strace
	valgrind
	# podman: tests/96-diff-oci imports the OCI layer stackfs diff writes;
	# tests/16-podman runs it with stackfs as its mount program, with runc
	# (crun refuses hybrid cgroup setups) and busybox for the image's rootfs
	podman runc busybox-static
	# newuidmap/newgidmap: unshare --map-users (tests/17-rootless maps a
	# user's subordinate ids, as rootless podman does); podman only
	# recommends uidmap, and recommends are not installed here
	uidmap
	# tests/47-gluster: a GlusterFS volume served here (glusterd, the gluster
	# command) and mounted by its FUSE client (mount.glusterfs)
	glusterfs-server glusterfs-cli glusterfs-client
	# tests/48-cephfs: a one-node Ceph cluster served here (its monitor,
	# manager, OSD and metadata server; ceph, ceph-authtool, monmaptool)
	# and mounted by its FUSE client
	ceph-mon ceph-mgr ceph-osd ceph-mds ceph-base ceph-common ceph-fuse
	# tests/03-package installs the .deb into a fresh bookworm root
	mmdebstrap
	# tests/03-bench checks the bench's tools, whose columns are kernel
	# overlayfs, fuse-overlayfs and the FUSE floor
	fuse-overlayfs
	# make fuzz: clang and its runtimes. libFuzzer (and clang's ASan) is in
	# libclang-rt-N-dev, which clang only recommends; libclang-rt-dev
	# follows the default clang version.
	clang libclang-rt-dev
)
list=0 test=0 deb=0
for a in "$@"; do
	case $a in
	--test) test=1 deb=1 ;;
	--deb) deb=1 ;;
	--list) list=1 ;;
	*)
		echo "usage: scripts/deps.sh [--deb] [--test] [--list]" >&2
		exit 2
		;;
	esac
done
pkgs=("${run_pkgs[@]}")
((deb)) && pkgs+=("${deb_pkgs[@]}")
((test)) && pkgs+=("${test_pkgs[@]}")
if ((list)); then
	printf '%s\n' "${pkgs[@]}"
	exit 0
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
modprobe fuse 2>/dev/null || true
modprobe loop 2>/dev/null || true
