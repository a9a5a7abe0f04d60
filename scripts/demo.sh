#!/usr/bin/env bash
# Mounts a demo union of two example branches:
#   demo/upper (rw)  over  demo/lower (ro)   at   demo/view
# Re-running it remounts (keeping what was written to the view);
# `scripts/demo.sh stop` unmounts.
set -euo pipefail
cd "$(dirname "$0")/.."
d=$PWD/demo
sfs=$PWD/build/stackfs

if [[ ${1:-} == stop ]]; then
	if findmnt -rn -M "$d/view" >/dev/null; then "$sfs" umount "$d/view"; fi
	echo "demo unmounted"
	exit 0
fi
if findmnt -rn -M "$d/view" >/dev/null; then "$sfs" umount "$d/view"; fi
mkdir -p "$d/upper" "$d/lower/etc" "$d/lower/docs" "$d/view"
[[ -e $d/lower/etc/motd ]] || echo "hello from the read-only lower branch" >"$d/lower/etc/motd"
[[ -e $d/lower/docs/readme.txt ]] || echo "a lower file you can read" >"$d/lower/docs/readme.txt"
[[ -e $d/upper/notes.txt ]] || echo "a file of the read-write upper branch" >"$d/upper/notes.txt"
"$sfs" mount "$d/upper=rw:$d/lower=ro" "$d/view"
# an earlier run's "Delete:" left a whiteout over the lower file: put a
# file back through the view (in upper), so the hints below work again
[[ -e $d/view/docs/readme.txt ]] || echo "a file you can delete" >"$d/view/docs/readme.txt"
cat <<MSG
stackfs demo mounted:
  branches  $d/upper (rw) over $d/lower (ro)
  view      $d/view

Look at it:      ls -la $d/view; cat $d/view/etc/motd
Write to it:     echo hi > $d/view/docs/new.txt   (lands in $d/upper/docs/)
Delete:          rm $d/view/docs/readme.txt      (a whiteout in $d/upper/docs/)
Unmount:         scripts/demo.sh stop   (or: build/stackfs umount $d/view)
MSG
