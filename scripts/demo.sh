#!/usr/bin/env bash
# Mounts a demo union of two example branches:
#   demo/upper (rw)  over  demo/lower (ro)   at   demo/view
# Re-running it remounts (keeping what was written to the view);
# `demo.sh stop` unmounts.
#
# In the source tree (scripts/demo.sh) it runs the build's stackfs and
# keeps demo/ in the tree. Installed (the package's
# /usr/share/doc/stackfs/examples/demo.sh) it runs the stackfs in PATH and
# keeps the demo in $STACKFS_DEMO_DIR, by default ./stackfs-demo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -f $here/../GNUmakefile && -d $here/../stackfs ]]; then
	d=$(dirname "$here")/demo
	sfs=$(dirname "$here")/build/stackfs
	[[ -x $sfs ]] || { echo "demo.sh: no $sfs: run make first" >&2; exit 1; }
else
	d=${STACKFS_DEMO_DIR:-$PWD/stackfs-demo}
	sfs=$(command -v stackfs) || { echo "demo.sh: no stackfs command in PATH" >&2; exit 1; }
fi
me=$0
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
Unmount:         $me stop   (or: $sfs umount $d/view)
MSG
