#!/usr/bin/env bats
# Timestamps through the view: utimensat with nanoseconds, UTIME_NOW and
# UTIME_OMIT; stat through the view shows exactly the branch's
# nanoseconds; copy-up keeps atime and mtime to the nanosecond; ctime
# changes as POSIX says; times before 1970 and after 2038 round-trip as
# the branch stores them (ext4 with 256-byte inodes, XFS with bigtime).

load helpers/common
load helpers/passthrough

setup_file() {
	sfs_setup_file 1
	sfs_require_tool ptprobe
}

teardown_file() {
	sfs_cleanup_file
}

# atimes in the future: relatime never updates them when a file is read
TA='2031-05-06 07:08:09.111111111 +0000'
T0='2001-02-03 04:05:06.123456789 +0000'

setup() {
	sfs_setup_branches
	echo upper >"$UP/f"
	echo lower >"$LO/lf"
	touch -m -d "$T0" "$LO/lf"
	touch -a -d "$TA" "$LO/lf"
}

teardown() {
	sfs_cleanup
}

# ctime of a path as integer nanoseconds
ctime_ns() {
	local s
	s=$(stat -c %.9Z -- "$1")
	echo $((10#${s/./}))
}

# The view and the branch show the same three times.
same_times() {
	local v=$1 b=$2
	[[ $(pt_times "$v") == "$(pt_times "$b")" ]] ||
		fail "$(printf 'times differ:\n  view   %s\n  branch %s' "$(pt_times "$v")" "$(pt_times "$b")")"
}

# ------------------------------------------------------------ utimensat

@test "utimensat with nanoseconds through the view: stat of the view equals the branch's to the nanosecond" {
	pt_mount
	touch -d '2011-11-11 11:11:11.123456789 +0000' "$MNT/f"
	run -0 stat -c '%x|%y' "$UP/f"
	assert_output '2011-11-11 11:11:11.123456789 +0000|2011-11-11 11:11:11.123456789 +0000'
	same_times "$MNT/f" "$UP/f"
	run -0 "$PTPROBE" utimens "$MNT/f" 1234567890.000000001 1234567890.999999999
	run -0 stat -c '%.9X %.9Y' "$UP/f" "$MNT/f"
	assert_output $'1234567890.000000001 1234567890.999999999\n1234567890.000000001 1234567890.999999999'
	same_times "$MNT/f" "$UP/f"
}

@test "UTIME_OMIT: setting only atime keeps mtime, setting only mtime keeps atime, to the nanosecond" {
	pt_mount
	run -0 "$PTPROBE" utimens "$MNT/f" 1000000000.111111111 1100000000.222222222
	run -0 "$PTPROBE" utimens "$MNT/f" 1200000000.333333333 omit
	run -0 stat -c '%.9X %.9Y' "$UP/f"
	assert_output '1200000000.333333333 1100000000.222222222'
	run -0 "$PTPROBE" utimens "$MNT/f" omit 1300000000.444444444
	run -0 stat -c '%.9X %.9Y' "$UP/f"
	assert_output '1200000000.333333333 1300000000.444444444'
	same_times "$MNT/f" "$UP/f"
	# both omitted: nothing changes, not even ctime
	local c
	c=$(stat -c %z "$UP/f")
	run -0 "$PTPROBE" utimens "$MNT/f" omit omit
	run -0 stat -c '%.9X %.9Y|%z' "$UP/f"
	assert_output "1200000000.333333333 1300000000.444444444|$c"
}

@test "UTIME_NOW sets the current time on the branch, with the other time omitted" {
	pt_mount
	run -0 "$PTPROBE" utimens "$MNT/f" 1000000000.5 1000000000.5
	local before after a m
	before=$(date +%s)
	run -0 "$PTPROBE" utimens "$MNT/f" now omit
	after=$(($(date +%s) + 1))
	a=$(stat -c %X "$UP/f")
	((a >= before && a <= after)) || fail "atime $a not between $before and $after"
	run -0 stat -c %.9Y "$UP/f"
	assert_output 1000000000.500000000
	run -0 "$PTPROBE" utimens "$MNT/f" omit now
	m=$(stat -c %Y "$UP/f")
	((m >= before && m <= after)) || fail "mtime $m not between $before and $after"
	same_times "$MNT/f" "$UP/f"
}

@test "UTIME_OMIT on a lower file: the copy keeps the omitted time of the lower file" {
	pt_mount
	run -0 "$PTPROBE" utimens "$MNT/lf" 1500000000.123456789 omit
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 stat -c '%.9X|%y' "$UP/lf"
	assert_output "1500000000.123456789|$T0"
	same_times "$MNT/lf" "$UP/lf"
	run -0 stat -c '%x|%y' "$LO/lf"
	assert_output "$TA|$T0"
}

# ------------------------------------------------------------ ctime

@test "ctime changes on chmod, chown, setxattr, utimensat, truncate, write and link; not on stat, read or getfattr" {
	pt_mount
	local c0 c1 op
	for op in "chmod 0640" "chown 1234:1234" "setfattr -n user.x -v 1" "touch -d @1000000000" "truncate -s 3" "write" "link"; do
		c0=$(ctime_ns "$UP/f")
		sleep 0.02
		case $op in
		write) echo more >>"$MNT/f" ;;
		link) ln "$MNT/f" "$MNT/f.$RANDOM" ;;
		*) $op "$MNT/f" ;;
		esac
		c1=$(ctime_ns "$UP/f")
		((c1 > c0)) || fail "$op did not change ctime on the branch ($c0 -> $c1)"
		same_times "$MNT/f" "$UP/f"
	done
	c0=$(stat -c %z "$UP/f")
	sleep 0.02
	stat "$MNT/f" >/dev/null
	cat "$MNT/f" >/dev/null
	getfattr -d "$MNT/f" >/dev/null
	run -0 stat -c %z "$UP/f" "$MNT/f"
	assert_output "$c0"$'\n'"$c0"
}

# chown(2) with -1, -1: no owner changes, but ext4 and XFS still mark
# ctime (the kernel's chown always carries ATTR_CTIME). FUSE sends a
# SETATTR with nothing else in it.
chown_keep() {
	perl -e 'chown(-1, -1, $ARGV[0]) or die "chown $ARGV[0]: $!\n"' "$1"
}

@test "regression: chown(f, -1, -1) marks ctime as the branch's filesystem does, on upper and lower files (copied up), in every mode" {
	local c0 opts native=0
	echo ref >"$T/ref"
	c0=$(ctime_ns "$T/ref")
	sleep 0.02
	chown_keep "$T/ref"
	(($(ctime_ns "$T/ref") > c0)) && native=1
	((native)) || skip "$SFS_FS does not mark ctime on chown -1 -1"
	for opts in "" nopassthrough writeback; do
		echo lower >"$LO/lf"
		pt_mount "$opts"
		c0=$(ctime_ns "$UP/f")
		sleep 0.02
		chown_keep "$MNT/f"
		(($(ctime_ns "$UP/f") > c0)) || fail "-o '$opts': chown -1 -1 left ctime of the upper file unchanged"
		(($(ctime_ns "$MNT/f") > c0)) || fail "-o '$opts': the view's ctime did not change"
		# with the writeback cache the kernel keeps its own ctime of a
		# regular file (set at the SETATTR, before the branch's)
		[[ $opts == writeback ]] || same_times "$MNT/f" "$UP/f"
		# a lower file is copied up, as kernel overlayfs does at any setattr
		c0=$(ctime_ns "$LO/lf")
		sleep 0.02
		chown_keep "$MNT/lf"
		[[ -f $UP/lf ]] || fail "-o '$opts': chown -1 -1 of a lower file did not copy it up"
		(($(ctime_ns "$MNT/lf") > c0)) || fail "-o '$opts': the lower file's ctime did not change"
		[[ $opts == writeback ]] || same_times "$MNT/lf" "$UP/lf"
		"$SFS" umount "$MNT"
		rm -f "$UP/lf"
	done
}

@test "copy-up keeps atime and mtime to the nanosecond; the copy's ctime is the time of the change" {
	pt_mount
	local before
	before=$(date +%s)
	chmod 0640 "$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 stat -c '%x|%y' "$UP/lf"
	assert_output "$TA|$T0"
	same_times "$MNT/lf" "$UP/lf"
	(($(stat -c %Z "$MNT/lf") >= before)) || fail "ctime after chmod $(stat -c %z "$MNT/lf") is older than the chmod"
	run -0 stat -c '%x|%y' "$LO/lf"
	assert_output "$TA|$T0"
}

@test "an append to a lower file: the copy keeps atime, mtime is the write's" {
	pt_mount
	local before
	before=$(date +%s)
	echo more >>"$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 stat -c %x "$UP/lf"
	assert_output "$TA"
	(($(stat -c %Y "$UP/lf") >= before)) || fail "mtime not updated by the write: $(stat -c %y "$UP/lf")"
	same_times "$MNT/lf" "$UP/lf"
}

# ------------------------------------------------------------ wide ranges

# Skips the test when the branch filesystem cannot store times after 2038.
require_wide_times() {
	case $SFS_FS in
	ext4)
		local isz
		isz=$(tune2fs -l "$(pt_loopdev "$SFS_IMG")" 2>/dev/null | awk -F: '/^Inode size/ { gsub(/ /, "", $2); print $2 }')
		((isz >= 256)) || skip "ext4 with ${isz:-?}-byte inodes has no extra time bits"
		;;
	xfs)
		xfs_info "$SFS_IMG" | grep -q 'bigtime=1' || skip "this XFS was made without bigtime: times end in 2038"
		;;
	esac
}

WIDE=(
	'1900-01-01 00:00:00.123456789 +0000'
	'1960-06-15 12:00:00.500000000 +0000'
	'1969-12-31 23:59:59.999999999 +0000'
	'2038-01-19 03:14:08.000000001 +0000'
	'2100-01-01 00:00:00.000000001 +0000'
	'2400-01-01 00:00:00.999999999 +0000'
)

@test "times before 1970 and after 2038 round-trip through the view as the branch stores them" {
	require_wide_times
	pt_mount
	local d k=0
	for d in "${WIDE[@]}"; do
		k=$((k + 1))
		touch "$UP/w$k" "$T/ref$k"
		touch -d "$d" "$MNT/w$k"
		touch -d "$d" "$T/ref$k"
		run -0 stat -c '%x|%y' "$UP/w$k"
		assert_output "$(stat -c '%x|%y' "$T/ref$k")"
		run -0 stat -c '%x|%y' "$MNT/w$k"
		assert_output "$(stat -c '%x|%y' "$T/ref$k")"
	done
	# everything from 1960 on fits both filesystems exactly (1900 is
	# before their range and is clamped, the same way on the branch)
	for k in 2 3 4 5 6; do
		run -0 stat -c %y "$MNT/w$k"
		assert_output "${WIDE[k - 1]}"
	done
	run -0 stat -c '%.9Y' "$MNT/w3"
	assert_output -- '-0.000000001'
}

@test "times before 1970 and after 2038 survive copy-up" {
	require_wide_times
	local d k=0
	for d in "${WIDE[@]}"; do
		k=$((k + 1))
		echo "$k" >"$LO/w$k"
		touch -m -d "$d" "$LO/w$k"
		touch -a -d "${WIDE[5 - k + 1]}" "$LO/w$k"
	done
	pt_mount
	for ((k = 1; k <= ${#WIDE[@]}; k++)); do
		chmod 0600 "$MNT/w$k"
		[[ -f $UP/w$k ]] || fail "w$k not copied up"
		run -0 stat -c '%x|%y' "$UP/w$k"
		assert_output "$(stat -c '%x|%y' "$LO/w$k")"
		run -0 stat -c '%x|%y' "$MNT/w$k"
		assert_output "$(stat -c '%x|%y' "$LO/w$k")"
	done
	run -0 stat -c %y "$MNT/w2" "$MNT/w6"
	assert_output "${WIDE[1]}"$'\n'"${WIDE[5]}"
}
