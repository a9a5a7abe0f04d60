#!/usr/bin/env bats
# Where the daemon logs (-o log=FILE|syslog|stderr, strictly parsed; a
# FILE opened by rules no other user can turn against root) and what
# `stackfs status` tells of it: where the log is, the last errors and
# warnings, and the errors returned counted as failures apart from the
# expected answers (ENODATA of an xattr probe is no error). Issue 17.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lo >"$LO/f"
}

teardown() {
	sfs_cleanup
}

# status_val KEY: KEY's value in the text of `stackfs status`.
status_val() {
	"$SFS" status "$MNT" | awk -v k="$1" '$1 == k { print $2 }'
}

# A mount point inside the lower branch (at mp): looking it up through
# the view logs a warning, the same each time.
plant_mountpoint() {
	mkdir -p "$LO/mp" "$T/elsewhere"
	sfs_record mount "$LO/mp"
	mount --bind "$T/elsewhere" "$LO/mp"
}

# refused_log EXIT VALUE WORD: `stackfs mount -o log=VALUE` exits EXIT
# with one line naming WORD, and nothing is mounted.
refused_log() {
	sfs_record stackfs "$MNT"
	run --separate-stderr "$SFS" mount -o "log=$2" "$UP:$LO" "$MNT"
	((status == $1)) || fail "exit $status, not $1: $stderr"
	((${#stderr_lines[@]} == 1)) || fail "not one line: $stderr"
	[[ $stderr == *"$3"* ]] || fail "does not say '$3': $stderr"
	! sfs_is_mounted "$MNT" || fail "mounted with log=$2"
}

# A small rw branch that fills up: a write then fails with ENOSPC.
small_upper() {
	SMALL=$BATS_TEST_TMPDIR/small
	mkdir -p "$SMALL"
	sfs_record mount "$SMALL"
	mount -t tmpfs -o size=1m tmpfs "$SMALL"
}

@test "log=: a relative path, an empty value or a name ending in '/' is a usage error (exit 2), named" {
	refused_log 2 rel.log "log=rel.log"
	refused_log 2 "" "log="
	refused_log 2 sys "log=sys"
	refused_log 2 "$BATS_TEST_TMPDIR/" "absolute path"
	run -2 --separate-stderr "$SFS" mount -o "log=syslog,log=stderr" "$UP:$LO" "$MNT"
	[[ $stderr == *"given twice"* ]] || fail "$stderr"
}

@test "log=FILE: warnings and failures are appended to FILE (created 0600), one line each; status names it" {
	local log=$BATS_TEST_TMPDIR/daemon.log
	echo "an earlier line" >"$log"
	chmod 0600 "$log"
	plant_mountpoint
	sfs_mount "$UP:$LO" "$MNT" "log=$log"
	run ls "$MNT/mp"
	[[ $output == *"cross-device"* ]] || fail "the mount point inside the branch: $output"
	run -0 cat "$log"
	assert_line --index 0 "an earlier line"
	assert_line --regexp "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[-+][0-9]{4} stackfs\[[0-9]+\]: warning: branch $LO: /mp: a mount point inside the branch"
	[[ $(status_val log) == "$log" ]] || fail "status log: $(status_val log)"
	rm -f "$BATS_TEST_TMPDIR/new.log"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO" "$MNT" "log=$BATS_TEST_TMPDIR/new.log"
	[[ $(stat -c %a "$BATS_TEST_TMPDIR/new.log") == 600 ]] || fail "mode $(stat -c %a "$BATS_TEST_TMPDIR/new.log")"
}

@test "log=FILE is refused (exit 1, nothing mounted, nothing written) where another user could redirect it" {
	local d=$BATS_TEST_TMPDIR/logs
	mkdir -p "$d/real"
	echo "root's" >"$d/target"
	# a symlink on the path, and as the file itself
	ln -s "$d/real" "$d/link"
	refused_log 1 "$d/link/x.log" "symlink"
	ln -s "$d/target" "$d/sym.log"
	refused_log 1 "$d/sym.log" "symlink"
	# another user's file, a file with a second name, not a regular file
	touch "$d/theirs.log"
	chown nobody "$d/theirs.log"
	refused_log 1 "$d/theirs.log" "another user"
	ln "$d/target" "$d/linked.log"
	refused_log 1 "$d/linked.log" "hard links"
	mkfifo "$d/fifo.log"
	refused_log 1 "$d/fifo.log" "not a regular file"
	# a directory others may write (not sticky), or another user's
	mkdir -m 0777 "$d/open"
	chmod 0777 "$d/open"
	refused_log 1 "$d/open/x.log" "writable by other users"
	mkdir "$d/nobodys"
	chown nobody "$d/nobodys"
	refused_log 1 "$d/nobodys/x.log" "owned by another user"
	[[ $(cat "$d/target") == "root's" ]] || fail "the target was written"
	[[ ! -e $d/real/x.log && ! -e $d/open/x.log && ! -e $d/nobodys/x.log ]] || fail "a log file was created"
	# a sticky directory (as /tmp) is fine
	mkdir "$d/sticky"
	chmod 1777 "$d/sticky"
	sfs_mount "$UP:$LO" "$MNT" "log=$d/sticky/x.log"
	[[ -f $d/sticky/x.log ]] || fail "no log file in the sticky directory"
}

@test "log=stderr: in the background the daemon keeps the stderr it was started with and logs there" {
	plant_mountpoint
	sfs_record stackfs "$MNT"
	# not through $(...): the daemon holds the stderr until it ends
	"$SFS" mount -o log=stderr "$UP:$LO" "$MNT" 2>"$BATS_TEST_TMPDIR/err" </dev/null
	sfs_wait_mounted "$MNT" || fail "not mounted"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
	ls "$MNT/mp" 2>/dev/null || true
	run -0 cat "$BATS_TEST_TMPDIR/err"
	assert_line --partial "stackfs: branch $LO: /mp: a mount point inside the branch"
	[[ $(status_val log) == stderr ]] || fail "status log: $(status_val log)"
}

@test "without log=, the daemon logs to syslog, and status says so" {
	sfs_mount "$UP:$LO" "$MNT"
	[[ $(status_val log) == syslog ]] || fail "status log: $(status_val log)"
	"$SFSD" --help | grep -q "log=FILE|syslog|stderr" || fail "stackfsd --help does not list log="
}

@test "status: a missing xattr is an answer (answer.ENODATA), not an error; nothing logged" {
	sfs_mount "$UP:$LO" "$MNT"
	local i
	for i in 1 2 3; do
		getfattr -n user.missing "$MNT/f" >/dev/null 2>&1 && fail "user.missing exists"
	done
	run -0 "$SFS" status "$MNT"
	refute_line --partial "error.ENODATA"
	refute_line --partial "last errors"
	(($(status_val answer.ENODATA) >= 3)) || fail "answer.ENODATA: $output"
	[[ $(status_val failures) == 0 ]] || fail "failures: $output"
	run -0 "$SFS" status --json "$MNT"
	[[ $(jq -r '.failures, .["answer.ENODATA"] >= 3, (.last_errors | length), has("error.ENODATA")' <<<"$output" |
		tr '\n' ' ') == "0 true 0 false " ]] || fail "json: $output"
}

@test "status: a failure (ENOSPC) is error.ENOSPC, logged, and among the last errors (text, --json)" {
	small_upper
	local log=$BATS_TEST_TMPDIR/daemon.log
	sfs_mount "$SMALL:$LO" "$MNT" "nopassthrough,log=$log"
	dd if=/dev/zero of="$MNT/big" bs=64k count=64 2>/dev/null && fail "a 4 MiB write fit in 1 MiB"
	(($(status_val error.ENOSPC) >= 1)) || fail "error.ENOSPC: $("$SFS" status "$MNT")"
	(($(status_val failures) >= 1)) || fail "failures"
	run -0 "$SFS" status "$MNT"
	assert_line "last errors and warnings, oldest first:"
	assert_line --regexp "^  [0-9-]{10}T[0-9:]{8}[-+][0-9]{4} error: write: ENOSPC \(No space left on device\)$"
	run -0 "$SFS" status --json "$MNT"
	[[ $(jq -r '.last_errors[-1] | "\(.level) \(.message) \(.time > 1700000000)"' <<<"$output") == \
		"error write: ENOSPC (No space left on device) true" ]] || fail "json: $output"
	grep -q 'stackfs\[[0-9]*\]: error: write: ENOSPC' "$log" || fail "not logged: $(cat "$log")"
}

@test "failure lines are rate-limited: at most 10 in 10 s, then the next says how many were left out" {
	small_upper
	local log=$BATS_TEST_TMPDIR/daemon.log i n
	sfs_mount "$SMALL:$LO" "$MNT" "nopassthrough,log=$log"
	dd if=/dev/zero of="$MNT/big" bs=64k count=64 2>/dev/null || true
	for ((i = 0; i < 30; i++)); do
		echo x >>"$MNT/big" 2>/dev/null || true
	done
	n=$(grep -c ': error: ' "$log")
	# a 10 s window may end in the middle: two windows at most
	((n >= 10 && n <= 20)) || fail "$n failure lines for 31 failures: $(cat "$log")"
	(($(status_val error.ENOSPC) >= 31)) || fail "counted $(status_val error.ENOSPC)"
	sleep 10.5
	echo x >>"$MNT/big" 2>/dev/null || true
	tail -n 1 "$log" | grep -q 'more failures not logged before it\]$' || fail "last line: $(tail -n 1 "$log")"
}
