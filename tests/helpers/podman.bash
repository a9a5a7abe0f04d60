# Podman tests' base image (tests/16-podman.bats, rootful, and
# 18-podman-rootless.bats): no registry here, so its tree is made from
# busybox and imported.

# pm_rootfs DIR: the base image's tree in DIR: busybox, a user u (1000),
# lower entries the tests change (kept, modified, deleted, a directory to
# make opaque, one to move, hard links) and a static setuid probe.
pm_rootfs() {
	local r=$1 a
	mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/home/u" "$r/data/dir/sub" "$r/data/gone" \
		"$r/data/opq/old" "$r/data/mvd/in" || return 1
	cp /bin/busybox "$r/bin/busybox" || return 1
	for a in $(busybox --list); do
		[[ $a == busybox ]] || ln -s busybox "$r/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n' >"$r/etc/passwd"
	printf 'root:x:0:\nu:x:1000:\n' >"$r/etc/group"
	chmod 1777 "$r/tmp"
	chown 1000:1000 "$r/home/u"
	echo keep >"$r/data/keep"
	echo modify >"$r/data/modify"
	echo del >"$r/data/del"
	echo a >"$r/data/dir/a"
	echo b >"$r/data/dir/sub/b"
	echo g >"$r/data/gone/g"
	echo o >"$r/data/opq/old/o"
	echo m >"$r/data/mvd/in/m"
	echo mine >"$r/data/mine" && chown 1000:1000 "$r/data/mine"
	echo h >"$r/data/h1" && ln "$r/data/h1" "$r/data/h2"
	install -m 4755 "$TOOLS/euid" "$r/bin/euid" || return 1
}
