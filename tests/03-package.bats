#!/usr/bin/env bats
# The Debian package (debian/, make deb): it builds from the tree with
# dpkg-buildpackage, lintian reports no error, and it holds what a user
# installs. Installed with apt into a fresh bookworm root (mmdebstrap from
# this machine's mirror, as scripts/clean-room.sh makes its own) it runs
# the demo and an fstab mount from the installed files alone; purged, it
# leaves nothing of its own behind. The root runs in a mount namespace of
# its own, with /dev, /proc and /sys of the host, so nothing it mounts is
# seen outside; teardown_file ends what still runs in it.

load helpers/common

setup() {
	# the build and the root take a minute each: once, on the run with
	# less else to do
	sfs_once_per_suite last
	sfs_require_root "a package build and a chroot"
	sfs_require_cmd dpkg-buildpackage lintian mmdebstrap
	DEB_DIR=$BATS_FILE_TMPDIR/deb
	ROOT=$BATS_FILE_TMPDIR/root
}

teardown() {
	sfs_cleanup
}

teardown_file() {
	local root=$BATS_FILE_TMPDIR/root p
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	[[ -d $root ]] && rm -rf --one-file-system "$root"
	sfs_cleanup_file
}

# The version the tree says and the architecture: the .deb's name.
deb_path() {
	local version
	version=$(sed -n 's/^VERSION *:= *//p' "$SFS_REPO/GNUmakefile")
	echo "$DEB_DIR/stackfs_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb"
}

# Builds the package once for the file (make deb's script: a copy of the
# tree, dpkg-buildpackage, lintian --fail-on error).
build_deb() {
	[[ -f $(deb_path) ]] && return 0
	"$SFS_REPO/scripts/make-deb.sh" "$DEB_DIR"
}

# A fresh bookworm root (minbase: essential packages and apt) holding the
# package's dependencies, made once for the file.
make_root() {
	local deps
	[[ -x $ROOT/usr/bin/apt-get ]] && return 0
	# "libc6 (>= 2.34), fuse3" -> "libc6,fuse3"
	deps=$(dpkg-deb -f "$(deb_path)" Depends | sed 's/([^)]*)//g; s/[[:space:]]//g')
	mmdebstrap --variant=minbase --mode=root --include="$deps" bookworm "$ROOT" \
		"$("$SFS_REPO/scripts/mirror.sh")" >"$BATS_FILE_TMPDIR/mmdebstrap.log" 2>&1 ||
		{ tail -n 20 "$BATS_FILE_TMPDIR/mmdebstrap.log"; return 1; }
	cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
}

# in_root SCRIPT: runs bash SCRIPT as root in the root, in a mount
# namespace of its own with the host's /dev (/dev/fuse), /proc and /sys.
in_root() {
	unshare --mount --propagation private -- bash -c '
		set -e
		mount --rbind /dev "$1/dev"
		mount -t proc proc "$1/proc"
		mount --rbind /sys "$1/sys"
		mount -t tmpfs -o mode=0755 tmpfs "$1/run"
		exec chroot "$1" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			/bin/bash -euo pipefail -c "$2"
	' in_root "$ROOT" "$1"
}

# What the root holds, but for what apt and dpkg keep of their own work
# and the runtime directories: a path, its type and mode a line.
root_files() {
	(cd "$ROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
		-o -path ./tmp -o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/log \
		-o -path ./var/cache \) -prune -o -printf '%p %y %m\n' | sort)
}

@test "make deb builds stackfs_VERSION_ARCH.deb from the tree and lintian reports no error" {
	run -0 build_deb
	refute_output --regexp '^E: '
	[[ -f $(deb_path) ]] || fail "no $(deb_path): $output"
	# the changelog's version is the tree's
	run -0 dpkg-deb -f "$(deb_path)" Version
	assert_output "$(sed -n 's/^VERSION *:= *//p' "$SFS_REPO/GNUmakefile")"
	# lintian again, on its own: no error tag
	run lintian --fail-on error "$(deb_path)"
	((status == 0)) || fail "lintian: $output"
	refute_output --regexp '^E: '
}

@test "the package holds the command, the daemon, the mount helper, man pages, completion, copyright and changelog" {
	run -0 build_deb
	run -0 dpkg-deb -c "$(deb_path)"
	local f
	for f in ./usr/bin/stackfs ./usr/libexec/stackfs/stackfsd ./sbin/mount.fuse.stackfs \
		./usr/share/man/man1/stackfs.1.gz ./usr/share/man/man8/stackfs.8.gz \
		./usr/share/man/man8/mount.fuse.stackfs.8.gz \
		./usr/share/bash-completion/completions/stackfs \
		./usr/share/doc/stackfs/copyright ./usr/share/doc/stackfs/changelog.gz \
		./usr/share/doc/stackfs/examples/demo.sh; do
		grep -qE " $f( |$)" <<<"$output" || fail "not in the package: $f"
	done
	# nothing of the suite's: no test tool, nothing under /usr/local
	refute_output --partial /tools/
	refute_output --partial /usr/local
	run -0 dpkg-deb -f "$(deb_path)" Depends
	assert_output --partial fuse3
	assert_output --partial libfuse3-3
	# the man page names the daemon where the package puts it
	run -0 bash -c 'dpkg-deb --fsys-tarfile "$1" | tar -xOf - ./usr/share/man/man8/stackfs.8.gz | gzip -dc' _ "$(deb_path)"
	assert_output --partial /usr/libexec/stackfs/stackfsd
	refute_output --partial /usr/local/lib/stackfs
}

@test "installed into a fresh bookworm root: the demo and an fstab mount run from its files, and purge leaves nothing" {
	run -0 build_deb
	run -0 make_root
	local before after
	before=$(root_files)
	cp "$(deb_path)" "$ROOT/tmp/stackfs.deb"
	run -0 in_root 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/stackfs.deb'
	# nothing more was to be installed: the root held the dependencies
	assert_output --partial "0 upgraded, 1 newly installed"

	# the demo, as its example says: the stackfs in PATH, the demo in the
	# current directory
	run -0 in_root '
		cd /root
		/usr/share/doc/stackfs/examples/demo.sh
		cat stackfs-demo/view/etc/motd
		echo written >stackfs-demo/view/docs/new.txt
		cat stackfs-demo/upper/docs/new.txt
		findmnt -rn -o FSTYPE -M /root/stackfs-demo/view
		/usr/share/doc/stackfs/examples/demo.sh stop
		findmnt -M /root/stackfs-demo/view || echo "not mounted"
		rm -rf stackfs-demo'
	assert_line "hello from the read-only lower branch"
	assert_line written
	assert_line fuse.stackfs
	assert_line "not mounted"

	# an fstab line, mounted by mount(8) through the package's
	# /sbin/mount.fuse.stackfs: a decoy stackfs first in PATH (where the
	# generic mount.fuse would find it) must not be the one that runs
	run -0 in_root '
		cp /etc/fstab /tmp/fstab.orig
		mkdir -p /srv/up /srv/lo /srv/view
		echo lower >/srv/lo/f
		printf "#!/bin/sh\necho decoy ran >&2\nexit 1\n" >/usr/local/bin/stackfs
		chmod 755 /usr/local/bin/stackfs
		echo "/srv/up=rw:/srv/lo=ro /srv/view fuse.stackfs defaults,noauto 0 0" >>/etc/fstab
		mount /srv/view
		findmnt -rn -o FSTYPE -M /srv/view
		cat /srv/view/f
		echo new >/srv/view/g
		cat /srv/up/g
		/usr/bin/stackfs status /srv/view >/dev/null && echo "status ok"
		umount /srv/view
		findmnt -M /srv/view || echo "not mounted"
		for i in $(seq 50); do
			daemon=$(for p in /proc/[0-9]*; do readlink "$p/exe"; done 2>/dev/null | grep -x /usr/libexec/stackfs/stackfsd || true)
			[[ -z $daemon ]] && break
			sleep 0.1
		done
		[[ -z $daemon ]] && echo "no daemon"
		rm -rf /srv/up /srv/lo /srv/view /usr/local/bin/stackfs
		cp /tmp/fstab.orig /etc/fstab'
	refute_output --partial "decoy ran"
	assert_line fuse.stackfs
	assert_line lower
	assert_line new
	assert_line "status ok"
	assert_line "not mounted"
	assert_line "no daemon"

	run -0 in_root 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q stackfs; dpkg-query -W -f="\${Status}\n" stackfs 2>&1 || true'
	refute_output --partial "install ok installed"
	after=$(root_files)
	[[ $before == "$after" ]] || fail "the root differs after purge: $(diff <(echo "$before") <(echo "$after"))"
}
