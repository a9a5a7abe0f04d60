#!/usr/bin/env bats
# The daemon's fds do not grow with the inodes the kernel caches (issue
# 13): it held an O_PATH fd per layer of every cached inode, so one user
# making 25,000 files in a world-writable directory of the view made every
# request of every user fail with EMFILE, and a job making 200,000 files
# failed at the 20,000th. Now the node fds have a budget (half the open
# files limit, after a reserve) and closed ones are reopened by handle.
#
# Each mount runs the daemon with a limit of 1024 it cannot raise (no
# CAP_SYS_RESOURCE): the daemon raises its soft limit to the hard one,
# and as root the hard one to fs.nr_open, which would hide the bound.
# SFS_FDLIMIT_FILES sets the number of files of the big test (300,000,
# the issue's figure).

load helpers/common

LIMIT=1024

setup_file() {
	sfs_require_build || return 1
	sfs_require_tool fdwalk || return 1
	export SFS_IMG
	# ext4 has an inode per 16 KiB: 300,000 files, 25,000 and the rest
	SFS_IMG=$(sfs_make_image "$SFS_FS" 6500 img) || return 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_root "mounts, and a daemon without CAP_SYS_RESOURCE"
	sfs_require_cmd setpriv
	sfs_setup_branches
	chmod 755 "$T" "$UP" "$LO"
	# the CLI and the daemon it starts, with a limit they cannot raise
	LOWFD=$BATS_TEST_TMPDIR/stackfs-lowfd
	printf '#!/bin/sh\nulimit -n %d || exit 1\nexec setpriv --bounding-set=-sys_resource %q "$@"\n' \
		"$LIMIT" "$SFS" >"$LOWFD"
	chmod 755 "$LOWFD"
}

teardown() {
	sfs_cleanup
}

mount_low() {
	SFS=$LOWFD sfs_mount "$UP:$LO" "$MNT" "$@" || return 1
	chmod 755 "$MNT"
	PID=$(sfs_daemon_pid "$MNT")
	[[ -n $PID ]] || fail "no daemon pid for $MNT"
	run -0 awk '/^Max open files/ { print $4 }' "/proc/$PID/limits"
	[[ $output == "$LIMIT" ]] || fail "the daemon's open files limit is $output, not $LIMIT"
	# what the node fds may use: half the limit after a reserve of 64
	# (fdcache.c), plus the daemon's own fds and those of requests in
	# flight; far below the limit
	BOUND=$((LIMIT / 2 + 64))
}

# The number of open fds of the daemon, under the bound.
fds_under_bound() {
	local n
	n=$(ls "/proc/$PID/fd" | wc -l)
	((n <= BOUND)) || fail "the daemon holds $n fds (bound $BOUND) $*"
}

# fdwalk MODE DIR N: no error, and the fds it sampled under the bound.
walk() {
	run -0 "$TOOLS/fdwalk" "$1" "$2" "$3" "$PID"
	assert_line "done $3"
	local max=${lines[-1]#max_fds }
	((max <= BOUND)) || fail "the daemon held $max fds during $1 of $3 files (bound $BOUND)"
}

counter() {
	"$SFS" status "$MNT" | awk -v k="$1" '$1 == k { print $2 }'
}

# the budget was used: closed node fds were opened again
reopened() {
	local r
	r=$(counter node_fd_reopens)
	((${r:-0} > 0)) || fail "no node fd was reopened ($(counter node_fds) held): the bound was not exercised"
	run -0 "$SFS" status "$MNT"
	refute_output --partial EMFILE
}

@test "files created, stat'ed and read in one directory: no EMFILE, the daemon's fds stay bounded" {
	# 300,000 as the issue asks, once per suite, on its last filesystem
	# (the first runs most of the tests that run once); on the others
	# 30,000, still 30 times the daemon's fd limit, so the bound is
	# exercised on each
	local n=${SFS_FDLIMIT_FILES:-300000}
	if [[ -z ${SFS_FDLIMIT_FILES:-} && -n ${SFS_SUITE_FS_LIST:-} &&
		${SFS_FS:-} != "${SFS_SUITE_FS_LIST##* }" ]]; then
		n=30000
	fi
	mount_low
	mkdir "$MNT/big"
	walk create "$MNT/big" "$n"
	walk stat "$MNT/big" "$n"
	walk read "$MNT/big" "$n"
	fds_under_bound "after the walks"
	# the files are real files of the upper branch
	[[ $(ls -f "$UP/big" | wc -l) == $((n + 2)) ]] || fail "upper has $(ls -f "$UP/big" | wc -l) entries"
	[[ $(cat "$MNT/big/f1000") == f1000 ]]
	reopened
}

@test "lower files and a merged directory looked up beyond the bound stay usable" {
	mkdir "$LO/lo" "$LO/m" "$UP/m"
	"$TOOLS/fdwalk" create "$LO/lo" 5000 >/dev/null
	"$TOOLS/fdwalk" create "$LO/m" 3000 >/dev/null
	echo up >"$UP/m/u"
	mount_low
	walk read "$MNT/m" 3000
	walk stat "$MNT/lo" 5000
	walk read "$MNT/lo" 5000
	fds_under_bound "after the walks"
	# m's two layers were closed by the walks of lo; it lists, resolves
	# and takes new names as before
	run -0 bash -c "ls -f '$MNT/m' | wc -l"
	assert_output 3003
	[[ $(cat "$MNT/m/u") == up ]]
	[[ $(cat "$MNT/m/f2000") == f2000 ]]
	echo new >"$MNT/m/new"
	[[ $(cat "$UP/m/new") == new ]]
	# a lower file whose fd was closed is copied up on write
	echo more >>"$MNT/lo/f1000"
	[[ $(cat "$UP/lo/f1000") == f1000more ]]
	[[ $(cat "$LO/lo/f1000") == f1000 ]]
	walk stat "$MNT/lo" 5000
	reopened
}

# root_fds DIR: how many of the daemon's fds are DIR itself.
root_fds() {
	local f n=0
	for f in /proc/"$PID"/fd/*; do
		[[ $(readlink "$f" 2>/dev/null) == "$1" ]] && n=$((n + 1))
	done
	echo "$n"
}

# Layers reopened by handle name their filesystem through the branch
# root opened for reading, once per branch (layer.c), not once per layer;
# it goes with the branch.
@test "reopens by handle keep one readable root per branch, given back when the branch is removed" {
	mkdir "$LO/lo" "$T/lo2"
	"$TOOLS/fdwalk" create "$LO/lo" 3000 >/dev/null
	mount_low
	walk stat "$MNT/lo" 3000
	walk read "$MNT/lo" 3000
	walk stat "$MNT/lo" 3000
	reopened
	# the branch's O_PATH root, the root directory's layer, and the one
	# opened for handles
	(($(root_fds "$LO") == 3)) || fail "$(root_fds "$LO") fds of the daemon are $LO"
	run -0 "$SFS" branch add "$MNT" "$T/lo2" --bottom
	run -0 "$SFS" branch remove "$MNT" "$LO" --force
	[[ ! -e $MNT/lo/f1000 ]] || fail "the removed branch still shows"
	(($(root_fds "$LO") == 0)) || fail "$(root_fds "$LO") fds of the daemon are still $LO"
}

@test "allow_other: nobody's 25,000 files leave root able to create, stat and open" {
	mount_low allow_other
	mkdir -m 1777 "$MNT/pub"
	run -0 bash -c "cd '$MNT/pub' && seq 1 25000 | setpriv --reuid=nobody --regid=nogroup --clear-groups xargs touch"
	fds_under_bound "after nobody's files"
	run -0 bash -c "echo root >'$MNT/rootfile' && stat -c %U '$MNT/rootfile' && cat '$MNT/rootfile'"
	assert_output $'root\nroot'
	run -0 stat -c %U "$MNT/pub/25000"
	assert_output nobody
	run -0 bash -c "ls -f '$MNT/pub' | wc -l"
	assert_output 25002
	reopened
}
