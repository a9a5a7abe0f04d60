#!/usr/bin/env bats
# FUSE over io_uring (stackfs/transport/uring.c, the default): where the fuse module
# allows it (enable_uring; tests/run sets it for the suite), requests and
# replies go through ring entries the daemon registers per CPU, not
# read(2)/writev(2) of /dev/fuse.
# `stackfs status` says `uring on` and counts the requests served that way
# (uring_requests). The data that travels both ways, at the largest sizes
# the kernel sends (1 MiB writes, 1 MiB reads, 64 KiB xattrs, long readdir
# replies), must be the branch's; with -o nouring, where the
# module refuses or where io_uring cannot be set up, /dev/fuse serves (-o
# uring then says why, and the mount never waits for rings that will not
# come); a daemon killed, stopped, traced or unmounted with live rings
# loses no request.

load helpers/common

URING_PARAM=/sys/module/fuse/parameters/enable_uring

setup_file() {
	sfs_setup_file 1
	# run alone (not by tests/run, which allows it for the whole suite)
	if [[ -w $URING_PARAM && $(cat "$URING_PARAM") == N ]]; then
		echo Y >"$URING_PARAM"
		export URING_RESTORE=N
	fi
}

teardown_file() {
	[[ -z ${URING_RESTORE:-} ]] || echo "$URING_RESTORE" >"$URING_PARAM"
	sfs_cleanup_file
}

setup() {
	[[ -r $URING_PARAM ]] || skip "this kernel's fuse has no io_uring (Linux 6.14+)"
	sfs_setup_branches
	head -c 8388608 /dev/urandom >"$LO/big"
	mkdir "$LO/many"
	for ((i = 0; i < 2000; i++)); do : >"$LO/many/entry-with-a-longish-name-$i"; done
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
}

# uring_mount OPTS: UP:LO on MNT with OPTS, under the lock of the global
# settings two tests turn off for a moment (enable_uring and
# kernel.io_uring_disabled; the ext4 and XFS runs go side by side), held
# until the daemon has answered INIT (which any request waits for): that
# is when it reads them
URING_LOCK=/tmp/stackfs-uring-param.lock

# uring_on: enable_uring is on, read under the same lock (the other run
# may have it off for a moment: a test here failed so, reading it bare)
uring_on() {
	(
		exec 9>"$URING_LOCK"
		flock 9
		[[ $(cat "$URING_PARAM") == Y ]]
	)
}
uring_mount() {
	(
		exec 9>"$URING_LOCK"
		flock 9
		sfs_mount "$UP:$LO=ro" "$MNT" "$1" && stat "$MNT/big" >/dev/null
	)
}

# answered_or_abort PID: PID (a process waiting on the view) ends within
# 10 s; else the mount's FUSE connection is aborted (through fusectl) so
# that it and the test can end at all, and this fails: a request given to
# a ring entry whose thread is gone is never answered, and its caller
# cannot be killed
answered_or_abort() {
	local i dev ctl=/sys/fs/fuse/connections
	for ((i = 0; i < 100; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	# the mount's device from mountinfo: a stat of it would hang too
	dev=$(awk -v m="$MNT" '$5 == m { print $3 }' /proc/self/mountinfo)
	[[ -d $ctl/${dev#*:} ]] || mount -t fusectl none "$ctl" 2>/dev/null
	echo 1 >"$ctl/${dev#*:}/abort"
	return 1
}

# traffic: what crosses the transport, checked against the branches:
# 1 MiB writes and reads (the largest payload), a lower file read cold,
# a 64 KiB xattr value both ways, a 2,000-entry readdir, names changed
traffic() {
	local src=$BATS_TEST_TMPDIR/src
	head -c 5000000 /dev/urandom >"$src"
	dd if="$src" of="$MNT/new" bs=1M status=none
	cmp "$src" "$UP/new"
	sfs_drop_caches 3
	cmp "$src" "$MNT/new"
	cmp "$LO/big" "$MNT/big"
	head -c 65000 /dev/urandom | base64 -w0 | head -c 65000 >"$BATS_TEST_TMPDIR/xv"
	setfattr -n user.big -v "$(cat "$BATS_TEST_TMPDIR/xv")" "$MNT/new"
	getfattr --absolute-names --only-values -n user.big "$MNT/new" >"$BATS_TEST_TMPDIR/xview"
	cmp "$BATS_TEST_TMPDIR/xv" "$BATS_TEST_TMPDIR/xview"
	getfattr --absolute-names --only-values -n user.big "$UP/new" >"$BATS_TEST_TMPDIR/xbranch"
	cmp "$BATS_TEST_TMPDIR/xv" "$BATS_TEST_TMPDIR/xbranch"
	run -0 find "$MNT/many" -mindepth 1
	((${#lines[@]} == 2000)) || fail "readdir gave ${#lines[@]} entries, not 2000"
	mkdir "$MNT/d"
	mv "$MNT/new" "$MNT/d/moved"
	ln -s moved "$MNT/d/link"
	rm "$MNT/many/entry-with-a-longish-name-7"
	[[ -f $UP/d/moved && $(readlink "$UP/d/link") == moved ]]
	[[ ! -e $MNT/many/entry-with-a-longish-name-7 && -e $LO/many/entry-with-a-longish-name-7 ]]
	run -1 cat "$MNT/nothing-here"
	assert_output --partial "No such file or directory"
}

@test "io_uring: requests and replies of every size go through the rings; the data is the branch's" {
	uring_on || fail "enable_uring is off"
	uring_mount nopassthrough,uring
	run -0 sfs_status_of uring
	assert_output on
	traffic
	n=$(sfs_status_of uring_requests)
	# 5 writes, 26 reads of 512 KiB, the readdir, the xattrs, the names
	((n > 40)) || fail "only $n requests went through the rings"
}

@test "io_uring: with passthrough, open replies carry their backing file through the ring" {
	uring_on || fail "enable_uring is off"
	uring_mount uring
	run -0 sfs_status_of uring
	assert_output on
	head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/src"
	dd if="$BATS_TEST_TMPDIR/src" of="$MNT/f" bs=64k status=none
	cmp "$BATS_TEST_TMPDIR/src" "$UP/f"
	cmp "$BATS_TEST_TMPDIR/src" "$MNT/f"
	(($(sfs_status_of passthrough_opens) >= 2)) || fail "passthrough_opens is $(sfs_status_of passthrough_opens)"
	(($(sfs_status_of uring_requests) > 0)) || fail "no request went through the rings"
}

@test "io_uring: by default the rings serve where offered; with -o nouring every request goes through /dev/fuse, with the same results" {
	sfs_mount "$UP:$LO=ro" "$MNT" nopassthrough
	run -0 sfs_status_of uring
	assert_output on
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT" nopassthrough,uring,nouring
	run -0 sfs_status_of uring
	assert_output off
	traffic
	run -0 sfs_status_of uring_requests
	assert_output 0
}

@test "io_uring: -o uring where the fuse module refuses it serves through /dev/fuse and says why" {
	# the INIT offer is what the daemon sees: off for this mount alone
	[[ -w $URING_PARAM ]] || skip "the module's setting is not writable here"
	uring_on || fail "enable_uring is off"
	log=$BATS_TEST_TMPDIR/log
	(
		exec 9>"$URING_LOCK"
		flock 9
		trap 'echo Y >"$URING_PARAM"' EXIT
		echo N >"$URING_PARAM"
		sfs_mount "$UP:$LO=ro" "$MNT" "nopassthrough,uring,log=$log" &&
			stat "$MNT/big" >/dev/null # INIT is answered by now
		rc=$?
		echo Y >"$URING_PARAM"
		exit $rc
	)
	cat "$MNT/big" >/dev/null
	run -0 sfs_status_of uring
	assert_output off
	run -0 sfs_status_of uring_requests
	assert_output 0
	run -0 cat "$log"
	assert_output --partial "-o uring: the kernel does not offer FUSE over io_uring"
	cmp "$LO/big" "$MNT/big"
}

@test "io_uring: many processes on one CPU share its queue's entries; none waits for another's reply" {
	uring_on || fail "enable_uring is off"
	uring_mount nopassthrough,uring
	for ((p = 0; p < 8; p++)); do
		taskset -c 0 bash -c '
			mkdir "$1/p$2" || exit 1
			for ((i = 0; i < 150; i++)); do
				echo "$2 $i" >"$1/p$2/f$i" || exit 1
				[[ $(<"$1/p$2/f$i") == "$2 $i" ]] || exit 1
				mv "$1/p$2/f$i" "$1/p$2/g$i" || exit 1
			done' _ "$MNT" "$p" 2>>"$BATS_TEST_TMPDIR/writers.err" &
	done
	for ((p = 0; p < 8; p++)); do
		wait -n || fail "a writer failed: $(cat "$BATS_TEST_TMPDIR/writers.err")"
	done
	for ((p = 0; p < 8; p++)); do
		run -0 ls "$UP/p$p"
		((${#lines[@]} == 150)) || fail "p$p has ${#lines[@]} files"
		[[ $(<"$UP/p$p/g149") == "$p 149" ]] || fail "p$p/g149 holds '$(<"$UP/p$p/g149")'"
	done
	(($(sfs_status_of uring_requests) > 8 * 150 * 4)) || fail "only $(sfs_status_of uring_requests) requests went through the rings"
}

@test "io_uring: a daemon killed while its rings serve leaves a dead mount that unmounts; a clean unmount ends the daemon" {
	uring_on || fail "enable_uring is off"
	uring_mount nopassthrough,uring
	pid=$(sfs_daemon_pid "$MNT")
	(for ((i = 0; ; i++)); do stat "$MNT/many/entry-with-a-longish-name-$((i % 2000))" >/dev/null 2>&1 || exit 0; done) &
	loop=$!
	sleep 0.5
	kill -9 "$pid"
	# the reader sees the connection gone, not a hang
	run timeout 10 bash -c "while kill -0 $loop 2>/dev/null; do sleep 0.1; done"
	assert_success
	run stat "$MNT/never-looked-up"  # not in the kernel's cache
	assert_failure
	assert_output --partial "Transport endpoint is not connected"
	umount "$MNT"
	uring_mount nopassthrough,uring
	pid=$(sfs_daemon_pid "$MNT")
	cat "$MNT/big" >/dev/null
	"$SFS" umount "$MNT"
	run timeout 10 bash -c "while [[ -e /proc/$pid ]]; do sleep 0.1; done"
	assert_success
}

@test "regression: io_uring: the daemon stopped and continued, then traced, keeps every entry; no request fails" {
	uring_on || fail "enable_uring is off"
	sfs_require_cmd strace
	log=$BATS_TEST_TMPDIR/log
	uring_mount "nopassthrough,uring,log=$log"
	pid=$(sfs_daemon_pid "$MNT")
	for round in 1 2 3; do
		kill -STOP "$pid"
		(stat "$MNT/big" >/dev/null) &
		sleep 0.3
		kill -CONT "$pid"
		answered_or_abort $! || fail "a stat across SIGSTOP/SIGCONT got no answer (round $round)"
		wait $! || fail "a stat across SIGSTOP/SIGCONT failed"
	done
	# a tracer attaching interrupts every thread's wait (the copy-ups below
	# were answered ECANCELED when an interrupted wait ended its entry)
	strace -f -qq -o /dev/null -p "$pid" &
	tracer=$!
	sleep 1
	for ((i = 0; i < 20; i++)); do
		echo "$i" >>"$MNT/many/entry-with-a-longish-name-$i" || fail "write $i failed under strace"
	done
	kill "$tracer"
	wait "$tracer" || true
	for ((i = 0; i < 200; i++)); do
		stat "$MNT/many/entry-with-a-longish-name-$i" >/dev/null || fail "stat $i failed"
	done
	run grep -c 'io_uring entry .* stops' "$log"
	assert_output 0
	(($(sfs_status_of uring_requests) > 200)) || fail "the rings served $(sfs_status_of uring_requests) requests"
}

@test "regression: -o uring where io_uring cannot be set up (kernel.io_uring_disabled) serves through /dev/fuse at once and says why" {
	uring_on || fail "enable_uring is off"
	[[ -w /proc/sys/kernel/io_uring_disabled ]] || skip "no kernel.io_uring_disabled here"
	log=$BATS_TEST_TMPDIR/log
	(
		exec 9>"$URING_LOCK"
		flock 9
		was=$(cat /proc/sys/kernel/io_uring_disabled)
		# put back however the subshell ends: the whole machine's setting
		trap 'echo "$was" >/proc/sys/kernel/io_uring_disabled' EXIT
		echo 2 >/proc/sys/kernel/io_uring_disabled
		# the kernel would hold every request for rings that never come:
		# a mount that hangs fails here, bounded
		timeout 20 "$SFS" mount -o "nopassthrough,uring,log=$log" "$UP:$LO=ro" "$MNT" &&
			timeout 20 stat "$MNT/big" >/dev/null # INIT is answered by now
		rc=$?
		echo "$was" >/proc/sys/kernel/io_uring_disabled
		exit $rc
	)
	sfs_record stackfs "$MNT"
	run -0 timeout 20 cat "$MNT/big"
	run -0 sfs_status_of uring
	assert_output off
	run -0 cat "$log"
	assert_output --partial "io_uring cannot be used here"
	cmp "$LO/big" "$MNT/big"
}
