#!/usr/bin/env bats
# The bench's own parts that a `make bench` would only find broken after
# minutes (bench/README.md): the FUSE floor (bench/floor.c, issue 35)
# builds with the project's warnings as errors and serves a directory
# through a real mount; bench/report.awk gives the floor its column and
# marks the rows where stackfs is slower than it.

load helpers/common

setup() {
	sfs_once_per_suite
	FLOOR_PID=""
}

# The floor's daemon ends with its mount; one that outlived it is ended
# here, by the pid this test started, never by name.
teardown() {
	sfs_cleanup
	if [[ -n $FLOOR_PID ]] && sfs_alive "$FLOOR_PID" &&
		[[ $(readlink "/proc/$FLOOR_PID/exe" 2>/dev/null) == */floor ]]; then
		kill -TERM "$FLOOR_PID" 2>/dev/null
	fi
	return 0
}

# The pid of the floor serving MP: the one whose command line names it
# (a bench may run its own floors meanwhile).
floor_pid() {
	local p
	for p in $(pgrep -x floor); do
		[[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == *" $1 "* ]] && echo "$p"
	done
	return 0
}

@test "the FUSE floor builds from bench/floor.c with -Werror, mounts a directory and serves its files" {
	sfs_require_root "a FUSE mount"
	local b=$BATS_TEST_TMPDIR/build floor lo=$BATS_TEST_TMPDIR/lo mp=$BATS_TEST_TMPDIR/mnt
	# the GNUmakefile's rule, into a build directory of this test's own
	run -0 make -s -C "$SFS_REPO" BUILD="$b" "$b/bench/floor"
	floor=$b/bench/floor
	[[ -x $floor ]] || fail "make gave no $floor"
	mkdir -p "$lo/d" "$mp"
	echo "through the floor" >"$lo/d/small"
	head -c 3000000 /dev/urandom >"$lo/d/big" # several READs of 1 MiB at most
	sfs_record mount "$mp"
	run -0 "$floor" "$lo" "$mp"
	[[ $(sfs_fstype "$mp") == fuse.floor ]] || fail "$mp is not a fuse.floor mount: $(findmnt -M "$mp")"
	FLOOR_PID=$(floor_pid "$mp")
	run -0 cat "$mp/d/small"
	assert_output "through the floor"
	cmp "$lo/d/big" "$mp/d/big" || fail "the 3 MB file read back different"
	run -0 ls "$mp/d"
	assert_output $'big\nsmall'
	# what a write row does: new files and directories land in the directory
	mkdir "$mp/new" && echo written >"$mp/new/f" && chmod 640 "$mp/new/f"
	[[ $(<"$lo/new/f") == written ]] || fail "the write did not reach $lo"
	[[ $(stat -c %a "$lo/new/f") == 640 ]] || fail "chmod through the floor: $(stat -c %a "$lo/new/f")"
	rm -r "$mp/new"
	[[ ! -e $lo/new ]] || fail "rm -r through the floor left $lo/new"
	run -0 fusermount3 -u "$mp"
	sfs_is_mounted "$mp" && fail "$mp still mounted after fusermount3 -u"
	return 0
}

@test "the floor refuses a missing directory and a missing mount point with its usage" {
	local floor=$SFS_BUILD/bench/floor
	[[ -x $floor ]] || fail "not built: $floor (run make)"
	run -2 "$floor" "$BATS_TEST_TMPDIR/none"
	assert_output --partial "usage: floor"
	mkdir -p "$BATS_TEST_TMPDIR/mnt"
	run -1 "$floor" "$BATS_TEST_TMPDIR/none" "$BATS_TEST_TMPDIR/mnt"
	assert_output --partial "$BATS_TEST_TMPDIR/none"
	sfs_is_mounted "$BATS_TEST_TMPDIR/mnt" && fail "mounted over a missing directory"
	return 0
}

@test "bench/report.awk gives the floor its column and marks a row where stackfs is slower" {
	local raw=$BATS_TEST_TMPDIR/raw.tsv
	printf '%s\n' $'L\tstat_cold\tcold walk' $'L\tlist\treaddir' \
		$'T\tstat_cold\tstackfs\t1\t0\t0.30' $'T\tstat_cold\tfloor\t1\t0\t0.20' \
		$'T\tlist\tstackfs\t1\t0\t0.10' $'T\tlist\tfloor\t1\t0\t0.40' >"$raw"
	run -0 awk -f "$SFS_REPO/bench/report.awk" "$raw"
	assert_line --partial "| workload | stackfs | overlayfs | fuse-overlayfs | floor | ext4 |"
	assert_line --regexp '^\| cold walk \| 0\.300 .*\| 0\.200 .*\*\*1\.50\*\* \(slower\)'
	assert_line --regexp '^\| readdir \| 0\.100 .*\| 0\.400 .*\| 0\.25 \|'
	assert_line "## Slower than the FUSE floor"
	assert_line "- cold walk: 1.50× the floor (0.300 against 0.200)"
	refute_line --partial "- readdir:"
}
