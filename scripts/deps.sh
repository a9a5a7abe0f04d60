#!/usr/bin/env bash
# Installs what building, running and testing stackfs need on Debian
# (bookworm or later). Run as root. Installs only what is missing.
set -euo pipefail
pkgs=(
	build-essential pkg-config libfuse3-dev fuse3 libattr1-dev libacl1-dev
	bats bats-support bats-assert xfsprogs e2fsprogs acl attr util-linux
	mount kmod coreutils findutils procps rsync tar python3 man-db groff-base
	valgrind
	# make fuzz: clang and its runtimes. libFuzzer (and clang's ASan) is in
	# libclang-rt-N-dev, which clang only recommends; libclang-rt-dev
	# follows the default clang version.
	clang libclang-rt-dev
)
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
