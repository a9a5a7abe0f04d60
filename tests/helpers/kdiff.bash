# The differential test against kernel overlayfs (tests/75-kdiff.bats,
# tests/stress/kdiff.bats; issue 15): tests/tools/kdiff.py runs the
# sequences (see its header), mounting stackfs on $MNT and kernel
# overlayfs on $KMNT, both recorded here for cleanup. Load after
# helpers/common, from a test whose setup ran sfs_setup_branches.
#
# Environment: KDIFF_SEED (the first seed: a failure's report names the
# seed to replay), KDIFF_COUNT (sequences per whiteout style), KDIFF_OPS
# (operations per sequence).

# beside this file, whoever loads it (tests/ or tests/stress/)
KDIFF=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)/kdiff.py

# kd_init: skips without kernel overlayfs; the mount points, recorded
# once for cleanup (a sequence mounts and unmounts them many times).
kd_init() {
	sfs_require_root "kernel overlayfs mounts, trusted.* xattrs"
	sfs_require_cmd python3
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
	grep -qw overlay /proc/filesystems || skip "the kernel has no overlayfs"
	KMNT=$BATS_TEST_TMPDIR/kernel
	mkdir -p "$KMNT" "$MNT"
	sfs_record mount "$KMNT"
	sfs_record stackfs "$MNT"
}

# kd_run STYLE FIRST COUNT N [--mid]: COUNT sequences of N operations
# (seeds FIRST, FIRST+1, ...) with -o whiteout=STYLE (and --mid: a middle
# ro layer the kernel wrote); fails with the report of each sequence that
# disagrees. The trees and logs of those stay in $T.
kd_run() {
	local style=$1 first=$2 count=$3 n=$4 start=$SECONDS
	run python3 "$KDIFF" loop "$style" "$first" "$count" "$n" "$T" "$MNT" "$KMNT" "$SFS" "${@:5}"
	echo "# ${lines[-1]} ($((SECONDS - start)) s)" >&3
	((status == 0)) || fail "$(printf 'kdiff: %s\n%s' "$(kd_status_says "$status")" "${output:0:30000}")"
}

kd_status_says() {
	case $1 in
	1) echo "the views disagree (KDIFF_SEED=S KDIFF_COUNT=1 replays one)" ;;
	2) echo "a mount or unmount failed" ;;
	*) echo "kdiff.py failed (exit $1)" ;;
	esac
}
