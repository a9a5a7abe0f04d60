#!/usr/bin/env bats
# The daemon under valgrind (memcheck) for a short workload: mount,
# create, write, copy-up, rename (file and directory), readdir, xattrs,
# hard link, rm, rmdir, unmount. Any invalid access, use of uninitialised
# memory or definitely lost block fails the test, with valgrind's report.
# The daemon is started by `stackfs mount -f` through STACKFS_DAEMON (a
# wrapper running it under valgrind), so its exit status is valgrind's.
# valgrind 3.19 (Debian 12) does not know openat2: faultinject.so turns
# the daemon's openat2 calls into openat (SFS_FI_OPENAT2_EMULATE).

load helpers/common
load helpers/copyup

VG_ERR=99

setup_file() {
	sfs_setup_file
	sfs_require_tool faultinject.so
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	# `make asan test`: valgrind cannot run a sanitizer build (the
	# sanitizers check the same things there)
	if grep -q __asan_init "$SFSD" 2>/dev/null; then
		skip "the daemon is an ASan build"
	fi
	command -v valgrind >/dev/null || skip "needs valgrind (scripts/deps.sh)"
	sfs_setup_branches
	VG_PID=
}

teardown() {
	sfs_cleanup
	if [[ -n $VG_PID ]]; then
		kill "$VG_PID" 2>/dev/null
		wait "$VG_PID" 2>/dev/null
	fi
	true
}

# Starts the daemon under valgrind in the foreground on MNT; VG_LOG is
# valgrind's report.
vg_mount() {
	local wrap=$BATS_TEST_TMPDIR/stackfsd-vg i
	VG_LOG=$BATS_TEST_TMPDIR/valgrind.log
	cat >"$wrap" <<-W
	#!/bin/sh
	LD_PRELOAD=$TOOLS/faultinject.so SFS_FI_OPENAT2_EMULATE=1 exec valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite \\
		--show-leak-kinds=definite --error-exitcode=$VG_ERR --track-fds=no \\
		--log-file="$VG_LOG" \\
		--suppressions=$SFS_REPO/tests/valgrind.supp --trace-children=no "$SFSD" "\$@"
	W
	chmod +x "$wrap"
	sfs_record stackfs "$MNT"
	STACKFS_DAEMON=$wrap "$SFS" mount -f "$@" "$UP:$LO" "$MNT" >"$BATS_TEST_TMPDIR/daemon.out" 2>&1 3>&- &
	VG_PID=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] && return 0
		sfs_alive "$VG_PID" || break
		sleep 0.1
	done
	fail "no mount under valgrind: $(cat "$BATS_TEST_TMPDIR/daemon.out" "$VG_LOG")"
}

# Unmounts and waits for the daemon; fails on any report. The kernel
# sends RELEASE after close(2) returns, in the background; a release
# still queued at unmount is dropped with the connection, and the open
# file's memory is then only freed by the exit (a "definite leak" for
# valgrind, once per test run, not a growing one). So first wait until
# the daemon counts no open file.
vg_umount_check() {
	local rc=0 i
	for ((i = 0; i < 100; i++)); do
		"$SFS" status "$MNT" | grep -Eq '^open_files[[:space:]]+0$' && break
		sleep 0.1
	done
	fusermount3 -u "$MNT" || fail "fusermount3 -u failed"
	wait "$VG_PID" || rc=$?
	VG_PID=
	if ((rc != 0)) || grep -q '^==[0-9]*== [A-Z]' "$VG_LOG"; then
		fail "$(printf 'daemon exit %d under valgrind:\n%s\n%s' "$rc" "$(cat "$VG_LOG")" "$(cat "$BATS_TEST_TMPDIR/daemon.out")")"
	fi
}

vg_workload() {
	local m=$MNT
	echo new >"$m/new"
	echo more >>"$m/new"
	echo app >>"$m/f"
	chmod 600 "$m/g"
	setfattr -n user.a -v 1 "$m/d/x"
	getfattr -d "$m/d/x" >/dev/null
	mv "$m/new" "$m/new2"
	mv "$m/d" "$m/d2"
	mkdir -p "$m/e/f"
	ln "$m/new2" "$m/e/link"
	ls -laR "$m" >/dev/null
	cat "$m/f" "$m/g" "$m/d2/x" >/dev/null
	rm "$m/g" "$m/e/link"
	rm -r "$m/d2"
	rmdir "$m/e/f"
	ln -s new2 "$m/sym"
	truncate -s 3 "$m/f"
	ls -la "$m" >/dev/null
}

@test "valgrind: no invalid access and no definite leak in the daemon over a short workload" {
	mkdir -p "$LO/d"
	echo lo >"$LO/f"
	echo g >"$LO/g"
	echo x >"$LO/d/x"
	ln "$LO/f" "$LO/fl"
	vg_mount
	vg_workload
	run -0 cat "$MNT/f"
	assert_output "lo"
	vg_umount_check
}

@test "valgrind: the same with overlay-style whiteouts and -o fsync" {
	mkdir -p "$LO/d"
	echo lo >"$LO/f"
	echo g >"$LO/g"
	echo x >"$LO/d/x"
	vg_mount -o whiteout=overlay,fsync
	vg_workload
	vg_umount_check
}

@test "valgrind: the same with -o coherent, the lower branch changed under the view" {
	local i
	mkdir -p "$LO/d" "$LO/w"
	echo lo >"$LO/f"
	echo g >"$LO/g"
	echo x >"$LO/d/x"
	vg_mount -o coherent,timeout=600
	ls -la "$MNT/w" >/dev/null
	for i in 1 2 3 4 5; do
		echo "$i" >"$LO/w/n$i"
		mkdir "$LO/w/dir$i"
		echo y >"$LO/w/dir$i/y"
	done
	for i in 1 2 3 4 5; do
		[[ -e $MNT/w/n5 && -e $MNT/w/dir5/y ]] && break
		sleep 0.5
	done
	run -0 cat "$MNT/w/n5" "$MNT/w/dir5/y"
	assert_output $'5\ny'
	chmod 600 "$LO/w/n1"
	mv "$LO/w/n2" "$LO/w/n2b"
	rm -r "$LO/w/dir3" "$LO/w/n4"
	# beside its entry in one branch a whiteout hides nothing
	echo x >"$LO/w/.wh.n5"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[[ ! -e $MNT/w/n4 && ! -e $MNT/w/dir3 ]] && break
		sleep 0.5
	done
	run -0 ls "$MNT/w"
	assert_output $'dir1\ndir2\ndir4\ndir5\nn1\nn2b\nn3\nn5'
	vg_workload
	vg_umount_check
}

@test "regression: under valgrind, -o uring serves through /dev/fuse (valgrind stops every thread while one waits in io_uring_enter: the mount hung)" {
	[[ $(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null) == Y ]] ||
		skip "the fuse module does not offer io_uring (tests/run allows it)"
	mkdir -p "$LO/d"
	echo lo >"$LO/f"
	echo g >"$LO/g"
	echo x >"$LO/d/x"
	vg_mount -o uring
	# a request the kernel holds is killable: the test ends either way
	run -0 timeout -s KILL 60 cat "$MNT/f"
	assert_output lo
	run -0 timeout -s KILL 60 "$SFS" status "$MNT"
	assert_line --regexp '^uring[[:space:]]+off$'
	vg_workload
	vg_umount_check
}
