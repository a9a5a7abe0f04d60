#!/usr/bin/env bats
# Interrupted copy-ups: the daemon killed with SIGKILL in the middle of
# copying a large file leaves the lower file intact and visible, no
# partial copy in the rw branch, and a staging leftover that the next mount
# removes.
#
# The lower branch is on the file's first image and the rw branch on the
# second, so that the copy is a real copy (no reflink) that takes long
# enough to be caught in the middle.

load helpers/common
load helpers/copyup

BIG_MIB=200

setup_file() {
	sfs_setup_file 2
	export BIGLO=$SFS_IMG/crash-lower
	mkdir -p "$BIGLO"
	head -c $((BIG_MIB * 1024 * 1024)) /dev/urandom >"$BIGLO/big"
	echo small >"$BIGLO/small"
	sync
	export BIG_STATE BIG_SUM
	BIG_STATE=$(stat -c '%s|%Y.%y|%Z.%z|%i' "$BIGLO/big")
	BIG_SUM=$(md5sum <"$BIGLO/big")
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	LO=$BIGLO
	UP=$SFS_IMG2/t$BATS_TEST_NUMBER/up
	rm -rf "$SFS_IMG2/t$BATS_TEST_NUMBER"
	mkdir -p "$UP"
}

teardown() {
	if [[ -n ${WRITER:-} ]]; then
		kill "$WRITER" 2>/dev/null
		wait "$WRITER" 2>/dev/null
	fi
	sfs_cleanup
}

# The lower file has the state it had at setup_file (size, nanosecond
# mtime and ctime, inode); with "content", its content is checked too.
big_lower_intact() {
	[[ $(stat -c '%s|%Y.%y|%Z.%z|%i' "$BIGLO/big") == "$BIG_STATE" ]] || fail "the lower file's inode changed"
	if [[ ${1:-} == content ]]; then
		[[ $(md5sum <"$BIGLO/big") == "$BIG_SUM" ]] || fail "the lower file's content changed"
	fi
}

# The staged entry of a copy-up in progress: prints its path when the
# staging directory holds a non-empty file and the copy is not in place.
staged_partial() {
	local f
	for f in "$UP"/.stackfs/work/*; do
		[[ -f $f && -s $f ]] || continue
		[[ -e $UP/big ]] && return 1
		echo "$f"
		return 0
	done
	return 1
}

# Starts `echo x >> MNT/big` (a copy-up of the 200 MiB lower file) and
# stops the daemon in the middle of it (SIGSTOP, so that what is seen is
# what the kill leaves), then kills it with SIGKILL. Retries with a fresh
# mount when the copy finished before it could be caught; skips after 3.
kill_mid_copy() {
	local opts=$1 try i pid staged
	for try in 1 2 3; do
		# the copy must read the lower file from below, not from the cache
		dd if="$BIGLO/big" iflag=nocache count=0 status=none
		cu_mount "$opts"
		pid=$(sfs_daemon_pid "$MNT")
		[[ -n $pid ]] || fail "no daemon pid for $MNT"
		(echo x >>"$MNT/big") 2>/dev/null &
		WRITER=$!
		staged=
		for ((i = 0; i < 4000; i++)); do
			staged=$(staged_partial) && break
			[[ -e $UP/big ]] && break
			sleep 0.005
		done
		if [[ -n $staged ]]; then
			kill -STOP "$pid"
			if staged_partial >/dev/null; then
				STAGED_SIZE=$(stat -c %s "$staged" 2>/dev/null)
				echo "# killed with $STAGED_SIZE bytes staged (try $try)" >&3
				kill -KILL "$pid"
				sfs_wait_gone "$pid" 10 || fail "daemon $pid survived SIGKILL"
				# the writer's request fails once the daemon is gone
				for ((i = 0; i < 100; i++)); do
					sfs_alive "$WRITER" || break
					sleep 0.1
				done
				! sfs_alive "$WRITER" || fail "the writer still hangs after the daemon died"
				wait "$WRITER" 2>/dev/null || true
				WRITER=
				cu_detach_dead "$MNT"
				return 0
			fi
			kill -CONT "$pid"
		fi
		wait "$WRITER"
		WRITER=
		echo "# try $try: the copy-up finished before it could be interrupted" >&3
		cu_umount
		rm -rf "$UP"
		mkdir -p "$UP"
	done
	skip "the copy-up of $BIG_MIB MiB was always too fast to interrupt here"
}

check_interrupted_copy_up() {
	local opts=$1
	kill_mid_copy "$opts"
	# what the kill left: a partial staged copy, nothing in place
	((STAGED_SIZE < BIG_MIB * 1024 * 1024)) || fail "staged copy is complete ($STAGED_SIZE bytes): not a mid-copy kill"
	cu_assert_absent "$UP/big"
	run -0 ls -A "$UP/.stackfs/work"
	refute_output ""
	cu_mount "$opts"
	# the next mount removes the leftover; the lower file shows, whole
	cu_assert_work_empty "$UP"
	cu_assert_absent "$UP/big"
	[[ $(stat -c %s "$MNT/big") == $((BIG_MIB * 1024 * 1024)) ]] || fail "view size $(stat -c %s "$MNT/big")"
	cmp "$MNT/big" "$BIGLO/big"
	big_lower_intact
}

@test "SIGKILL of the daemon mid copy-up: after remount the lower file is whole and visible, no partial copy, staging emptied" {
	check_interrupted_copy_up ""
	# and the copy-up works now, from the start
	echo x >>"$MNT/big"
	[[ $(stat -c %s "$UP/big") == $((BIG_MIB * 1024 * 1024 + 2)) ]] || fail "UP/big size $(stat -c %s "$UP/big")"
	cmp -n $((BIG_MIB * 1024 * 1024)) "$UP/big" "$BIGLO/big"
	[[ $(tail -c 2 "$UP/big") == x ]]
	cu_assert_work_empty "$UP"
	big_lower_intact content
}

@test "SIGKILL of the daemon mid copy-up with -o fsync: the lower file is whole and visible after remount" {
	check_interrupted_copy_up fsync
}

@test "leftovers in the staging directory are removed at mount, and nothing else" {
	echo up >"$UP/keep"
	cu_mount
	cu_umount
	mkdir -p "$UP/.stackfs/work/cu.999.1.dir/inner"
	echo junk >"$UP/.stackfs/work/cu.999.1.dir/inner/junk"
	echo junk >"$UP/.stackfs/work/cu.999.2"
	ln -s nowhere "$UP/.stackfs/work/cu.999.3"
	mknod "$UP/.stackfs/work/wh.999.4" c 0 0
	cu_mount
	cu_assert_work_empty "$UP"
	run -0 cat "$MNT/keep" "$MNT/small"
	assert_output $'up\nsmall'
	run -0 ls -A "$MNT"
	assert_output $'big\nkeep\nsmall'
}
