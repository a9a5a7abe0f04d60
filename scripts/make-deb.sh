#!/usr/bin/env bash
# Builds the Debian package from this tree (make deb):
#
#   scripts/make-deb.sh OUTDIR
#
# Copies the tree's files (those git tracks or would track: what is
# committed and what is not yet, never build/ or another ignored file)
# into a temporary directory, runs `dpkg-buildpackage -us -uc -b` there
# (its clean step would otherwise remove the work tree's build/), and
# leaves stackfs_VERSION_ARCH.deb, the .changes and the .buildinfo in
# OUTDIR; then lintian checks the package and fails on any error.
# Needs dpkg-dev, debhelper and lintian (scripts/deps.sh --test), and the
# Build-Depends of debian/control.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/make-deb.sh OUTDIR}
version=$(sed -n 's/^VERSION *:= *//p' "$repo/GNUmakefile")
changelog=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
if [[ $version != "$changelog" ]]; then
	echo "make-deb: GNUmakefile says version $version, debian/changelog $changelog" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/stackfs-$version
mkdir -p "$src" "$out"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _ |
		tar --null -T - -cf -) | tar -C "$src" -xf -
else
	tar -C "$repo" --exclude='./build*' -cf - . | tar -C "$src" -xf -
fi
echo "make-deb: building stackfs $version in $src"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 || {
	tail -n 40 "$tmp/build.log" >&2
	echo "make-deb: dpkg-buildpackage failed" >&2
	exit 1
}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
for f in "stackfs_${version}_$arch.deb" "stackfs_${version}_$arch.changes" \
	"stackfs_${version}_$arch.buildinfo"; do
	mv "$tmp/$f" "$out/"
done
echo "make-deb: $out/stackfs_${version}_$arch.deb"
lintian --fail-on error --info "$out/stackfs_${version}_$arch.deb"
