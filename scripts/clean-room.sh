#!/usr/bin/env bash
# Test-only, not run by CI: checks issue 17's "done" line, that a fresh
# clone in /root of a machine that never had the project's packages
# passes `scripts/deps.sh --test`, `make` and the suite.
#
#   scripts/clean-room.sh [--keep] [--fs "ext4 xfs"] [--all | TEST...]
#
# Makes a Debian bookworm chroot with mmdebstrap (variant minbase: the
# essential packages and apt, nothing of ours) from the mirror this
# machine's apt uses, puts a clean clone of this repository's HEAD (what
# is committed, not the work tree) in its /root/stackfs, and runs there,
# as root: scripts/deps.sh --test, make, then tests/run on the TESTs
# (default: a quick subset, tests/00-cli.bats tests/01-deps.bats
# tests/10-mount.bats) or with --all `make test` (the whole suite and the
# short fuzz run, about 40 minutes). SFS_FS_LIST is --fs (default ext4).
#
# The chroot runs in a mount namespace of its own (unshare), with /dev,
# /proc and /sys mounted into it there: nothing it mounts is seen outside,
# and its mounts go with the namespace. The suite needs loop devices (of
# the host: /dev is shared) and /dev/fuse. At the end, whatever the
# outcome, processes still running in the chroot are ended by pid, loop
# devices backed by files in it are detached, and the chroot is removed
# (--keep leaves it). Needs root; installs mmdebstrap if it is missing.
# The log is kept in /var/tmp/stackfs-clean-room.log.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
keep=0 fs=ext4 all=0 tests=()
while (($#)); do
	case $1 in
	--keep) keep=1 ;;
	--fs)
		fs=${2:?--fs needs a list such as "ext4 xfs"}
		shift
		;;
	--all) all=1 ;;
	-h | --help)
		sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"
		exit 0
		;;
	-*)
		echo "usage: scripts/clean-room.sh [--keep] [--fs \"ext4 xfs\"] [--all | TEST...]" >&2
		exit 2
		;;
	*) tests+=("$1") ;;
	esac
	shift
done
((${#tests[@]})) || tests=(tests/00-cli.bats tests/01-deps.bats tests/10-mount.bats)
log=/var/tmp/stackfs-clean-room.log

die() {
	echo "clean-room: $*" >&2
	exit 1
}

[[ $(id -u) -eq 0 ]] || die "needs root (mmdebstrap in root mode, chroot, loop devices)"

work=$(mktemp -d /var/tmp/stackfs-clean-room.XXXXXX) || die "mktemp failed"
root=$work/root

# Whatever happened: end what still runs in the chroot (by pid: only
# processes whose root is the chroot, which this script started), detach
# the loop devices of its images, remove it unless --keep.
cleanup() {
	local p pid dev back
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] || continue
		pid=${p#/proc/}
		echo "clean-room: ending pid $pid, still running in the chroot" >&2
		kill -KILL "$pid" 2>/dev/null
	done
	sleep 1
	losetup -n -l -O NAME,BACK-FILE 2>/dev/null | while read -r dev back; do
		[[ $back == "$root"/* ]] || continue
		echo "clean-room: detaching $dev ($back)" >&2
		losetup -d "$dev"
	done
	if findmnt -rn -o TARGET | grep -qF "$work/"; then
		echo "clean-room: still mounted under $work, not removed:" >&2
		findmnt -rn -o TARGET | grep -F "$work/" >&2
	elif ((keep)); then
		echo "clean-room: kept $root"
	else
		rm -rf --one-file-system "$work"
	fi
}
trap cleanup EXIT

if ! command -v mmdebstrap >/dev/null; then
	echo "clean-room: installing mmdebstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap >/dev/null ||
		die "cannot install mmdebstrap"
fi
url=$("$repo/scripts/mirror.sh")
head=$(git -C "$repo" rev-parse HEAD) || die "$repo is not a git repository"
exec > >(tee "$log") 2>&1
echo "clean-room: bookworm minbase from $url into $root"
start=$SECONDS
mmdebstrap --variant=minbase --mode=root bookworm "$root" "$url" ||
	die "mmdebstrap failed (is the mirror $url reachable?)"
echo "clean-room: chroot made in $((SECONDS - start)) s"
git clone -q --no-hardlinks "$repo" "$root/root/stackfs" &&
	git -C "$root/root/stackfs" checkout -q "$head" || die "cannot clone $repo"
cp /etc/resolv.conf "$root/etc/resolv.conf"

if ((all)); then
	run="make test"
else
	run="tests/run ${tests[*]}"
fi
# inside: a root login's environment, nothing of this shell's
inner="cd /root/stackfs && scripts/deps.sh --test && make && SFS_FS_LIST='$fs' $run"
echo "clean-room: running in the chroot: $inner"
start=$SECONDS
unshare --mount --propagation private -- bash -c '
	set -e
	root=$1 inner=$2
	mount --rbind /dev "$root/dev"
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount -t tmpfs -o mode=0755 tmpfs "$root/run"
	exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "$inner"
' clean-room "$root" "$inner"
rc=$?
echo "clean-room: exit $rc after $((SECONDS - start)) s ($run, SFS_FS_LIST=$fs, HEAD $head)"
exit $rc
