#!/usr/bin/env bats
# Bad input (issue 9): a table of malformed inputs, one @test per row.
# Each row is answered with a clear one-line message naming the problem
# and the documented exit status (stackfs(1) EXIT STATUS: 1 a refused
# mount or a failed operation, 2 a usage error; fsck: 8), without a crash
# (no signal, no core, no hang) and with nothing changed on disk: the test
# directory $T (every branch, the mount point's neighbours) is compared
# byte for byte and metadata for metadata before and after, so no
# .stackfs is made by a refused mount.
#
# Rows: mount options (opt), BRANCHES specs and mount points (spec),
# damaged metadata (meta), control-channel requests sent raw with
# tests/tools/ctlprobe (ctl: an ERR reply or a closed connection, and the
# daemon keeps serving), command lines of the other commands (cli, fsck),
# names at NAME_MAX and paths at and beyond PATH_MAX through the view
# (name: a limit works or gives ENAMETOOLONG, never EIO), and the fuzz
# targets of the BRANCHES and option parsers (fuzz, tests/fuzz/).
#
# Under `make asan test` the daemon of every row runs with ASan/UBSan.

load helpers/common
load helpers/format
load helpers/badinput

setup_file() {
	sfs_setup_file 1
	sfs_require_tool ctlprobe format_fuzz sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	# rows of command lines, option parsing and the control protocol do
	# not depend on the branches' filesystem
	case $BATS_TEST_DESCRIPTION in
	"opt "* | "cli "* | "ctl "* | "fsck 0"[1-6]*) sfs_once_per_suite ;;
	"fuzz "*) sfs_once_per_suite last ;; # the long ones: on the other run

	esac
	sfs_setup_branches
	echo up >"$UP/u"
	echo lo >"$LO/l"
	BAD_PREFIX=()
}

teardown() {
	sfs_cleanup
}

# refused_meta TEXT: the mount of UP:LO is refused (exit 1) with a message
# naming branch #0 (as branch list numbers it) and TEXT (the damaged file), nothing changed.
refused_meta() {
	refused_mount 1 "$1" "$UP:$LO" "$MNT"
	[[ ${stderr_lines[0]} == *"branch #0"* ]] || fail "the message does not name the branch: $stderr"
}

# bad_deep_path N: the relative path of level N of a bad_deep tree (0 is
# its first directory), and a 256-byte name. (Rows are one-line tests:
# bats takes the last '{' of such a line for the body, so they use no
# braces.)
bad_deep_path() {
	local i p=
	for i in $(seq 0 "$1"); do
		p+=$(printf '%03d' "$i")$(printf 'd%.0s' $(seq 197))/
	done
	echo "${p%/}"
}

bad_long_name() {
	printf 'n%.0s' $(seq 256)
}

# bad_garbage FILE N SEED: N pseudo-random bytes (the same for a seed).
bad_garbage() {
	python3 -c 'import random, sys
r = random.Random(int(sys.argv[3]))
open(sys.argv[1], "wb").write(bytes(r.randrange(256) for _ in range(int(sys.argv[2]))))' "$@"
}

# ================================================================ mount options

@test "opt 01: -o foo (unknown option): usage error (2) naming it" { refused_mount 2 "foo" -o foo "$UP:$LO" "$MNT"; }
@test "opt 02: -o whiteout=bogus" { refused_mount 2 "whiteout=bogus" -o whiteout=bogus "$UP:$LO" "$MNT"; }
@test "opt 03: -o whiteout= (empty value)" { refused_mount 2 "whiteout" -o whiteout= "$UP:$LO" "$MNT"; }
@test "opt 04: -o timeout=-1" { refused_mount 2 "timeout" -o timeout=-1 "$UP:$LO" "$MNT"; }
@test "opt 05: -o timeout=abc" { refused_mount 2 "timeout=abc" -o timeout=abc "$UP:$LO" "$MNT"; }
@test "opt 06: -o timeout= (empty value)" { refused_mount 2 "timeout" -o timeout= "$UP:$LO" "$MNT"; }
@test "opt 07: -o timeout=nan" { refused_mount 2 "timeout" -o timeout=nan "$UP:$LO" "$MNT"; }
@test "opt 08: -o timeout=1abc (trailing junk)" { refused_mount 2 "timeout" -o timeout=1abc "$UP:$LO" "$MNT"; }
@test "opt 09: -o fsync=2 (fsync= takes 0 or 1)" { refused_mount 2 "fsync" -o fsync=2 "$UP:$LO" "$MNT"; }
@test "opt 10: -o max_read=abc (a FUSE option with a bad value)" { refused_mount 2 "max_read" -o max_read=abc "$UP:$LO" "$MNT"; }
@test "opt 11: -o whiteout=wh,whiteout=overlay (conflicting duplicates)" { refused_mount 2 "whiteout" -o whiteout=wh,whiteout=overlay "$UP:$LO" "$MNT"; }
@test "opt 12: -o lowerdir= (empty)" { refused_mount 2 "lowerdir" -o lowerdir= "$MNT"; }
@test "opt 13: -o lowerdir=LO: (an empty directory in the list)" { refused_mount 2 "lowerdir" -o "lowerdir=$LO:" "$MNT"; }
@test "opt 14: -o lowerdir=LO,upperdir= (empty)" { refused_mount 2 "upperdir" -o "lowerdir=$LO,upperdir=" "$MNT"; }
@test "opt 15: -o upperdir=UP without lowerdir=" { refused_mount 2 "lowerdir" -o "upperdir=$UP" overlay "$MNT"; }
@test "opt 16: -o lowerdir=LO\\ (trailing backslash)" { refused_mount 2 "trailing backslash" -o "lowerdir=$LO\\" "$MNT"; }
@test "opt 17: -o workdir= a missing directory" { refused_mount 2 "workdir" -o "lowerdir=$LO,upperdir=$UP,workdir=$T/nowork" "$MNT"; }
@test "opt 18: BRANCHES and -o lowerdir= both given" { refused_mount 2 "lowerdir" -o "lowerdir=$LO" "$UP:$LO" "$MNT"; }
@test "opt 19: -o without its value" { refused_mount 2 "'-o'" "$UP:$LO" "$MNT" -o; }
@test "opt 20: an unknown command-line option -x" { refused_mount 2 "-x" -x "$UP:$LO" "$MNT"; }
@test "opt 21: a third operand" { refused_mount 2 "extra" "$UP:$LO" "$MNT" extra; }
@test "opt 22: a -o value with a newline (the message stays one line)" { refused_mount 2 "whiteout" -o "whiteout=wh"$'\n'"x" "$UP:$LO" "$MNT"; }
@test "opt 23: -o readahead=-1" { refused_mount 2 "readahead" -o readahead=-1 "$UP:$LO" "$MNT"; }
@test "opt 24: -o readahead=1x (trailing junk)" { refused_mount 2 "readahead=1x" -o readahead=1x "$UP:$LO" "$MNT"; }
@test "opt 25: -o readahead=99999999999 (too large, no wrap-around)" { refused_mount 2 "readahead" -o readahead=99999999999 "$UP:$LO" "$MNT"; }
@test "opt 26: -o readahead=512,readahead=256 (conflicting duplicates)" { refused_mount 2 "readahead" -o readahead=512,readahead=256 "$UP:$LO" "$MNT"; }
@test "opt 27: -o subtype=other (the type is always fuse.stackfs)" { refused_mount 2 "subtype=other" -o subtype=other "$UP:$LO" "$MNT"; }
@test "opt 28: -o subtype= (empty)" { refused_mount 2 "subtype=" -o subtype= "$UP:$LO" "$MNT"; }
@test "opt 29: -o fsname= (empty)" { refused_mount 2 "fsname=" -o fsname= "$UP:$LO" "$MNT"; }
@test "opt 30: -o fsname=a,fsname=b (conflicting duplicates)" { refused_mount 2 "fsname" -o fsname=a,fsname=b "$UP:$LO" "$MNT"; }
@test "opt 31: -o sync=sometimes" { refused_mount 2 "sync=sometimes" -o sync=sometimes "$UP:$LO" "$MNT"; }
@test "opt 32: -o sync= (empty)" { refused_mount 2 "sync=" -o sync= "$UP:$LO" "$MNT"; }
@test "opt 33: -o fsync,sync=volatile (two sync modes)" { refused_mount 2 "sync=volatile" -o fsync,sync=volatile "$UP:$LO" "$MNT"; }
@test "opt 34: -o volatile=1 (a flag given a value)" { refused_mount 2 "volatile" -o volatile=1 "$UP:$LO" "$MNT"; }

@test "tolerated (not a bad input): an empty -o '' mounts, as with mount(8)" {
	sfs_record stackfs "$MNT"
	bad_run "$SFS" mount -o '' "$UP:$LO" "$MNT"
	bad_status 0
	run -0 cat "$MNT/u" "$MNT/l"
}

# ================================================================ BRANCHES and mount points

@test "spec 01: an empty BRANCHES" { refused_mount 1 "empty" "" "$MNT"; }
@test "spec 02: BRANCHES ':' only" { refused_mount 1 "empty path" ":" "$MNT"; }
@test "spec 03: '::' between two branches" { refused_mount 1 "empty path" "$UP::$LO" "$MNT"; }
@test "spec 04: a trailing ':'" { refused_mount 1 "empty path" "$UP:$LO:" "$MNT"; }
@test "spec 05: a relative path that does not exist" { refused_mount 1 "no-such-dir" "no-such-dir:$LO" "$MNT"; }
@test "spec 06: a trailing backslash" { refused_mount 1 "trailing backslash" "$UP:$LO\\" "$MNT"; }
@test "spec 07: mode =rx" { refused_mount 1 "rx" "$UP=rx:$LO" "$MNT"; }
@test "spec 08: '=' with an empty mode" { refused_mount 1 "empty mode" "$UP=:$LO" "$MNT"; }
@test "spec 09: a second '='" { refused_mount 1 "second '='" "$UP=rw=ro:$LO" "$MNT"; }
@test "spec 10: mode in capitals =RW" { refused_mount 1 "RW" "$UP=RW:$LO" "$MNT"; }
@test "spec 11: a branch nested inside another" { mkdir "$UP/sub"; refused_mount 1 "nested" "$UP:$UP/sub" "$MNT"; }
@test "spec 12: a branch containing an earlier one" { mkdir "$LO/sub"; refused_mount 1 "nested" "$LO/sub:$LO" "$MNT"; }
@test "spec 13: the same branch twice, through a symlink" { ln -s upper "$T/uplink"; refused_mount 1 "same directory" "$UP:$T/uplink" "$MNT"; }
@test "spec 14: the same branch twice, with a trailing slash" { refused_mount 1 "same directory" "$UP:$UP/" "$MNT"; }
@test "spec 15: an unreadable branch (mode 000; root without its override capabilities)" { mkdir -m 000 "$T/noread"; bad_nocaps; refused_mount 1 "not readable" "$UP:$T/noread" "$MNT"; }
@test "spec 16: a branch under an unsearchable directory (same)" { mkdir -p "$T/closed/inner"; chmod 000 "$T/closed"; bad_nocaps; refused_mount 1 "closed/inner" "$UP:$T/closed/inner" "$MNT"; }

@test "spec 17: a rw branch on a read-only bind mount" {
	mkdir -p "$T/rosrc" "$T/robind"
	sfs_record mount "$T/robind"
	mount --bind "$T/rosrc" "$T/robind"
	mount -o remount,bind,ro "$T/robind"
	refused_mount 1 "read-only" "$T/robind=rw:$LO" "$MNT"
}

@test "spec 18: a rw branch on a filesystem image mounted read-only" {
	local ro
	ro=$(sfs_make_image "$SFS_FS" 64 rofs) || fail "no image"
	mkdir "$ro/data"
	mount -o remount,ro "$ro"
	sfs_snapshot "$ro"
	refused_mount 1 "read-only" "$ro/data:$LO" "$MNT"
	sfs_assert_unchanged "$ro"
}

@test "spec 19: a branch that is a regular file" { echo f >"$T/afile"; refused_mount 1 "not a directory" "$UP:$T/afile" "$MNT"; }
@test "spec 20: a branch that is the device node /dev/null" { refused_mount 1 "not a directory" "$UP:/dev/null" "$MNT"; }
@test "spec 21: a branch that is a dangling symlink" { ln -s nowhere "$T/dangle"; refused_mount 1 "dangle" "$UP:$T/dangle" "$MNT"; }
@test "spec 22: a missing branch with a newline in its name (one-line message)" { refused_mount 1 "no such directory" "$UP:$T/new"$'\n'"line" "$MNT"; }
@test "spec 23: a branch whose path is longer than PATH_MAX (it exists)" { bad_deep "$T" 22 dirs >/dev/null; refused_mount 1 "too long" "$UP:$T/$(bad_deep_path 21)" "$MNT"; }
@test "spec 24: a branch name longer than NAME_MAX" { refused_mount 1 "too long" "$UP:$T/$(bad_long_name)" "$MNT"; }
@test "spec 25: the mount point inside a branch" { mkdir "$UP/mp"; refused_mount 1 "mountpoint" "$UP:$LO" "$UP/mp"; }
@test "spec 26: the mount point is a branch" { refused_mount 1 "mountpoint" "$UP:$LO" "$LO"; }
@test "spec 27: a branch inside the mount point" { mkdir "$MNT/inner"; refused_mount 1 "mountpoint" "$UP:$MNT/inner" "$MNT"; }
@test "spec 28: the mount point is a regular file" { touch "$T/mpfile"; refused_mount 1 "mpfile" "$UP:$LO" "$T/mpfile"; }
@test "spec 29: a missing mount point (named, not created)" { refused_mount 1 "$T/nomnt" "$UP:$LO" "$T/nomnt"; }
@test "spec 30: an empty mount point argument" { refused_mount 1 "mountpoint" "$UP:$LO" ""; }
@test "spec 31: a data-only branch above a ro one" { refused_mount 1 "data-only branches come last" "$UP:$LO=data:$T" "$MNT"; }
@test "spec 32: a data-only branch alone" { refused_mount 1 "cannot be the highest" "$LO=data" "$MNT"; }
@test "spec 33: mode =data for the first branch, a ro one below" { refused_mount 1 "data-only branches come last" "$UP=data:$LO" "$MNT"; }

# ================================================================ damaged metadata

@test "meta 01: header truncated to 30 bytes" { bad_meta; truncate -s 30 "$UP/.stackfs/header"; refused_meta ".stackfs/header"; }
@test "meta 02: header with one bit flipped" { bad_meta; fmt_flip_bit "$UP/.stackfs/header" 20 3; refused_meta ".stackfs/header"; }
@test "meta 03: header empty" { bad_meta; : >"$UP/.stackfs/header"; refused_meta ".stackfs/header"; }
@test "meta 04: header of a newer format version" { bad_meta; "$FMT" header "$UP/.stackfs/header" 2; refused_meta "newer"; }
@test "meta 05: header is a directory" { bad_meta; rm "$UP/.stackfs/header"; mkdir "$UP/.stackfs/header"; refused_meta ".stackfs/header"; }
@test "meta 06: header is a FIFO (no hang)" { bad_meta; rm "$UP/.stackfs/header"; mkfifo "$UP/.stackfs/header"; refused_meta ".stackfs/header"; }
@test "meta 07: registry garbage" { bad_meta; bad_garbage "$UP/.stackfs/registry" 500 7; refused_meta ".stackfs/registry"; }
@test "meta 08: registry record with one bit flipped" { bad_meta; fmt_flip_bit "$UP/.stackfs/registry" 180 1; refused_meta ".stackfs/registry"; }
@test "meta 09: registry a symlink to /dev/zero" { bad_meta; ln -sf /dev/zero "$UP/.stackfs/registry"; refused_meta ".stackfs/registry"; }
@test "meta 10: inomap garbage" { bad_meta; bad_garbage "$UP/.stackfs/inomap" 100 10; refused_meta ".stackfs/inomap"; }

@test "meta 11: inomap with a bad record before the last" {
	bad_meta
	"$FMT" ino-alloc "$UP" 1 100 >/dev/null
	"$FMT" ino-alloc "$UP" 1 200 >/dev/null
	fmt_flip_bit "$UP/.stackfs/inomap" $((32 + 9)) 0
	refused_meta ".stackfs/inomap"
}

@test "meta 12: inomap is a FIFO (no hang)" { bad_meta; rm "$UP/.stackfs/inomap"; mkfifo "$UP/.stackfs/inomap"; refused_meta ".stackfs/inomap"; }
@test "meta 13: .stackfs is a regular file" { echo x >"$UP/.stackfs"; refused_meta ".stackfs"; }
@test "meta 14: .stackfs is a symlink to a directory outside" { bad_meta; mv "$UP/.stackfs" "$T/elsewhere"; ln -s ../elsewhere "$UP/.stackfs"; refused_meta ".stackfs"; }

@test "meta 15: .stackfs/work is a symlink to a directory outside (not emptied)" {
	bad_meta
	mkdir "$T/victim"
	echo keep >"$T/victim/keep"
	rm -rf "$UP/.stackfs/work"
	ln -s ../../victim "$UP/.stackfs/work"
	refused_meta ".stackfs/work"
	[[ -f $T/victim/keep ]] || fail "the victim directory was emptied"
}

@test "meta 16: .stackfs/index is a symlink" { bad_meta; rm -rf "$UP/.stackfs/index"; mkdir "$T/victim"; ln -s ../../victim "$UP/.stackfs/index"; refused_meta ".stackfs/index"; }
@test "meta 17: .stackfs/lock is a symlink" { bad_meta; echo keep >"$T/victim"; rm "$UP/.stackfs/lock"; ln -s ../../victim "$UP/.stackfs/lock"; refused_meta ".stackfs/lock"; }
@test "meta 18: format version 0 without -o upgrade" { fmt_v0 "$UP"; refused_meta "upgrade"; }

@test "not refused, by design: garbage in .stackfs/lowers is rewritten by the mount (it only records the last mount)" {
	bad_meta
	bad_garbage "$UP/.stackfs/lowers" 300 5
	local f
	for f in header registry inomap; do
		cp -p "$UP/.stackfs/$f" "$BATS_TEST_TMPDIR/$f"
	done
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$UP/.stackfs/lowers"
	assert_output "$(printf 'rw %s\nro %s' "$UP" "$LO")"
	for f in header registry inomap; do
		cmp "$UP/.stackfs/$f" "$BATS_TEST_TMPDIR/$f" || fail ".stackfs/$f changed"
	done
}

# ================================================================ control channel
# Each row: a live mount, one raw request, then the checks of ctl_refused
# (ERR reply or closed connection; the daemon alive; branch list, the view
# and both branches as before).

@test "ctl 01: an empty request (connect, close)" { ctl_mount; ctl_refused EPROTO empty; }
@test "ctl 02: a single NUL" { ctl_mount; ctl_refused EPROTO raw '\0'; }
@test "ctl 03: a verb without any NUL" { ctl_mount; ctl_refused EPROTO raw 'list'; }
@test "ctl 04: a verb without the terminating empty word" { ctl_mount; ctl_refused EPROTO raw 'list\0'; }
@test "ctl 05: 100 KB of random bytes" { ctl_mount; ctl_refused any random 102400 1; }
@test "ctl 06: 8193 bytes (over the 8192-byte limit)" { ctl_mount; ctl_refused any fill 8193 65; }
@test "ctl 07: 8192 NUL bytes" { ctl_mount; ctl_refused any fill 8192 0; }
@test "ctl 08: binary junk with NULs inside" { ctl_mount; ctl_refused EINVAL hex 00ff00fe7f800a0000; }
@test "ctl 09: an unknown verb" { ctl_mount; ctl_refused EINVAL words frobnicate; }
@test "ctl 10: add without arguments" { ctl_mount; ctl_refused EINVAL words add; }
@test "ctl 11: add with a missing position" { ctl_mount; mkdir "$T/new"; ctl_refused EINVAL words add "$T/new" ro; }
@test "ctl 12: add with mode x" { ctl_mount; mkdir "$T/new"; ctl_refused EINVAL words add "$T/new" x top; }
@test "ctl 13: add with position -x" { ctl_mount; mkdir "$T/new"; ctl_refused EINVAL words add "$T/new" ro -x; }
@test "ctl 14: add of the mount point itself" { ctl_mount; ctl_refused EINVAL words add "$MNT" ro bottom; }
@test "ctl 15: add of a regular file" { ctl_mount; echo f >"$T/afile"; ctl_refused ENOTDIR words add "$T/afile" ro bottom; }
@test "ctl 16: add of a missing directory" { ctl_mount; ctl_refused ENOENT words add "$T/missing" ro bottom; }
@test "ctl 17: add of an empty path" { ctl_mount; ctl_refused ENOENT words add "" ro bottom; }
@test "ctl 18: add of a directory whose path is longer than PATH_MAX" { ctl_mount; bad_deep "$T" 22 dirs >/dev/null; ctl_refused ENAMETOOLONG words add "$T/$(bad_deep_path 21)" ro bottom; }
@test "ctl 19: add of a directory nested in a branch" { ctl_mount; mkdir "$LO/sub"; sfs_snapshot "$LO"; ctl_refused EINVAL words add "$LO/sub" ro bottom; }
@test "ctl 20: add of a branch already there" { ctl_mount; ctl_refused EINVAL words add "$LO" ro bottom; }
@test "ctl 21: remove of a path that is not a branch" { ctl_mount; ctl_refused ENOENT words remove /etc 0; }
@test "ctl 22: remove of an id that does not exist" { ctl_mount; ctl_refused ENOENT words remove 999 0; }
@test "ctl 23: remove without its force word" { ctl_mount; ctl_refused EINVAL words remove "$LO"; }
@test "ctl 24: remove of the only rw branch without force" { ctl_mount; ctl_refused EBUSY words remove "$UP" 0; }
@test "ctl 25: mode x y" { ctl_mount; ctl_refused ENOENT words mode x y; }
@test "ctl 26: mode of a branch to 'bogus'" { ctl_mount; ctl_refused EINVAL words mode "$LO" bogus; }
@test "ctl 27: list with an extra word" { ctl_mount; ctl_refused EINVAL words list extra; }
@test "ctl 28: 20 words" { ctl_mount; ctl_refused EINVAL words a b c d e f g h i j k l m n o p q r s t; }
@test "ctl 29: a verb with a newline in it" { ctl_mount; ctl_refused EINVAL raw 'list\n\0\0'; }
@test "ctl 30: a request left unfinished, the connection held open: ETIMEDOUT at the server's deadline" { ctl_mount; ctl_refused ETIMEDOUT --hold 8 raw 'list\0'; }
@test "ctl 31: add with position -1 (no wrap-around to the bottom)" { ctl_mount; mkdir "$T/new"; ctl_refused EINVAL words add "$T/new" ro -1; }
@test "ctl 32: add with a position past the bottom (not clamped)" { ctl_mount; mkdir "$T/new"; ctl_refused EINVAL words add "$T/new" ro 3; }
@test "ctl 33: add with position ' 1' and '+1' (digits only)" { ctl_mount; mkdir "$T/new"; ctl_refused EINVAL words add "$T/new" ro ' 1'; ctl_refused EINVAL words add "$T/new" ro +1; }

# ================================================================ other commands

@test "cli 01: branch add --mode rx" { ctl_mount; mkdir "$T/new"; refused_cmd 2 "rx" branch add "$MNT" "$T/new" --mode rx; ctl_still_serving; }
@test "cli 02: branch add --position x" { ctl_mount; mkdir "$T/new"; refused_cmd 2 "position" branch add "$MNT" "$T/new" --position x; ctl_still_serving; }
@test "cli 03: branch add --position -1" { ctl_mount; mkdir "$T/new"; refused_cmd 2 "position" branch add "$MNT" "$T/new" --position -1; ctl_still_serving; }
@test "cli 04: branch with an unknown subcommand" { ctl_mount; refused_cmd 2 "bogus" branch bogus "$MNT"; ctl_still_serving; }
@test "cli 05: branch remove without a branch" { ctl_mount; refused_cmd 2 "missing" branch remove "$MNT"; ctl_still_serving; }
@test "cli 06: branch mode with mode 'bogus'" { ctl_mount; refused_cmd 2 "bogus" branch mode "$MNT" "$LO" bogus; ctl_still_serving; }
@test "cli 07: branch list of a directory that is not a stackfs mount" { refused_cmd 1 "not mounted" branch list "$T"; }
@test "cli 08: status of a regular file" { echo f >"$T/afile"; refused_cmd 1 "afile" status "$T/afile"; }
@test "cli 09: branch paths with a tab and a newline: branch list shows each whole, --json parses with the exact paths" {
	mkdir "$T/lo"$'\t'"tab" "$T/lo"$'\n'"nl"
	sfs_mount "$UP:$T/lo"$'\t'"tab:$T/lo"$'\n'"nl" "$MNT"
	run -0 "$SFS" branch list "$MNT"
	((${#lines[@]} == 4)) || fail "expected a header and 3 branch lines: $output"
	# escaped as /proc/mounts does: tab \011, newline \012
	assert_line --index 2 --partial "$T/lo\011tab "
	assert_line --index 3 --partial "$T/lo\012nl "
	run -0 "$SFS" branch list --json "$MNT"
	run -0 python3 -c 'import json, sys
print(json.dumps([b["path"] for b in json.loads(sys.argv[1])]))' "$output"
	assert_output "$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$UP" "$T/lo"$'\t'"tab" "$T/lo"$'\n'"nl")"
	run -0 "$SFS" status --json "$MNT"
	run -0 python3 -c 'import json, sys; json.loads(sys.argv[1])' "$output"
}

@test "fsck 01: no BRANCH" { refused_cmd 8 "BRANCH" fsck; }
@test "fsck 02: an unknown option" { refused_cmd 8 "--bogus" fsck --bogus "$UP"; }
@test "fsck 03: two branches" { refused_cmd 8 "$LO" fsck "$UP" "$LO"; }
@test "fsck 04: a missing branch" { refused_cmd 8 "$T/missing" fsck "$T/missing"; }
@test "fsck 05: --lower without its directory" { refused_cmd 8 "--lower" fsck "$UP" --lower; }
@test "fsck 06: a branch that is a regular file" { echo f >"$T/afile"; refused_cmd 8 "afile" fsck "$T/afile"; }
@test "fsck 07: --repair of a branch with a newer format (not touched)" { bad_meta; "$FMT" header "$UP/.stackfs/header" 2; refused_cmd 8 "newer" fsck --repair "$UP"; }

# ================================================================ names and paths through the view

# name255 PREFIX: PREFIX padded with 'a' to a 255-byte name.
name255() {
	printf '%s%s' "$1" "$(printf 'a%.0s' $(seq $((255 - ${#1}))))"
}

@test "name 01: a 255-byte name works for every kind of entry; 256 bytes is ENAMETOOLONG" {
	local k op
	sfs_mount "$UP:$LO" "$MNT"
	for k in f d s p h r; do
		local n=$MNT/$(name255 "$k")
		case $k in
		f) op=(open "$n" wronly,creat,excl) ;;
		d) op=(mkdir "$n") ;;
		s) op=(symlink target "$n") ;;
		p) op=(mknod "$n" fifo 0644) ;;
		h) op=(link "$MNT/u" "$n") ;;
		r) op=(rename "$MNT/l" "$n") ;;
		esac
		# the same with the name (argument 1, or 2 after a source) one byte longer
		local long=("${op[@]}") i=1
		[[ $k == [shr] ]] && i=2
		long[i]=${op[i]}x
		run "$TOOLS/sysprobe" "${long[@]}"
		[[ $output == ENAMETOOLONG ]] || fail "${op[0]} of a 256-byte name: $output"
		run "$TOOLS/sysprobe" "${op[@]}"
		[[ $output == OK* ]] || fail "${op[0]} of a 255-byte name: $output"
	done
	# all six landed in UP with their names whole
	run -0 bash -c "ls -A '$UP' | awk 'length(\$0) == 255' | wc -l"
	assert_output 6
	run -0 cat "$MNT/$(name255 r)"
	assert_output lo
}

@test "name 02: a lower file with a 255-byte name: read and copied up; renamed, or ENAMETOOLONG (its .wh. name would be too long)" {
	local n255
	n255=$(printf 'c%.0s' {1..255})
	echo lower >"$LO/$n255"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$MNT/$n255"
	assert_output lower
	echo more >>"$MNT/$n255" || fail "append (copy-up) failed"
	run -0 cat "$UP/$n255"
	assert_output $'lower\nmore'
	sfs_snapshot "$UP"
	run "$TOOLS/sysprobe" rename "$MNT/$n255" "$MNT/${n255:1}d"
	case $output in
	OK) run -0 cat "$MNT/${n255:1}d" ;;
	ENAMETOOLONG)
		run -0 cat "$MNT/$n255"
		assert_output $'lower\nmore'
		sfs_assert_unchanged "$UP"
		;;
	*) fail "rename of the 255-byte name: $output" ;;
	esac
}

@test "name 03: removing a lower file whose whiteout name (.wh.NAME) would exceed NAME_MAX: clean error or success, never EIO" {
	local n252 unlinked
	n252=$(printf 'w%.0s' {1..252})
	echo lower >"$LO/$n252"
	mkdir "$LO/$n252.d"
	sfs_mount "$UP:$LO" "$MNT" whiteout=wh
	sfs_snapshot "$LO"
	sfs_snapshot "$UP"
	run "$TOOLS/sysprobe" unlink "$MNT/$n252"
	unlinked=$output
	case $unlinked in
	OK) [[ ! -e $MNT/$n252 ]] || fail "unlink said OK but the file is still visible" ;;
	ENAMETOOLONG)
		run -0 cat "$MNT/$n252"
		sfs_assert_unchanged "$UP"
		;;
	*) fail "unlink: $unlinked (expected OK or ENAMETOOLONG)" ;;
	esac
	run "$TOOLS/sysprobe" rmdir "$MNT/$n252.d"
	[[ $output == OK || $output == ENAMETOOLONG ]] || fail "rmdir: $output"
	sfs_assert_unchanged "$LO"
	# the same after a remount: nothing half done
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO" "$MNT" whiteout=wh
	if [[ $unlinked == OK ]]; then
		[[ ! -e $MNT/$n252 ]] || fail "the removed file is back after a remount"
	else
		run -0 cat "$MNT/$n252"
	fi
}

@test "name 04: with overlay whiteouts the same removal works (the whiteout has the name itself)" {
	local n255
	n255=$(printf 'o%.0s' {1..255})
	echo lower >"$LO/$n255"
	sfs_mount "$UP:$LO" "$MNT" whiteout=overlay
	run "$TOOLS/sysprobe" unlink "$MNT/$n255"
	assert_output OK
	[[ -c $UP/$n255 ]] || fail "no 0:0 whiteout in UP"
	[[ ! -e $MNT/$n255 ]]
}

@test "name 05: an absolute path of 4095 bytes (PATH_MAX - 1) works through the view; 4096 is ENAMETOOLONG" {
	local p c f rest
	sfs_mount "$UP:$LO" "$MNT"
	c=$(printf 'd%.0s' {1..200})
	p=$MNT
	while ((${#p} + 201 < 4095 - 20)); do p+=/$c; done
	mkdir -p "$p" || fail "mkdir -p of a ${#p}-byte path"
	rest=$((4095 - ${#p} - 1))
	f=$p/$(printf 'f%.0s' $(seq "$rest"))
	((${#f} == 4095)) || fail "path is ${#f} bytes"
	run "$TOOLS/sysprobe" open "$f" wronly,creat 0644 data
	assert_output OK
	run "$TOOLS/sysprobe" open "${f}g" wronly,creat 0644
	assert_output ENAMETOOLONG
	run "$TOOLS/sysprobe" mkdir "${f}h"
	assert_output ENAMETOOLONG
	# (UP's own path may be longer than MNT's: look from inside it)
	(cd "$UP" && [[ -f ${f#"$MNT"/} ]]) || fail "the file is not in UP"
}

@test "name 06: a tree deeper than PATH_MAX made through the view (35 levels of 200 bytes): every create works" {
	sfs_mount "$UP:$LO" "$MNT"
	run -0 bad_deep "$MNT" 35 mkdir
	refute_output --partial EIO
	assert_output "depth 35 length $((${#MNT} + 35 * 201))"
	run -0 bad_deep "$UP" 35 read
	assert_line x
}

@test "name 07: copy-up from a lower tree deeper than PATH_MAX: an append at every level works, never EIO" {
	run -0 bad_deep "$LO" 30 mkdir
	bad_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT"
	run bad_deep "$MNT" 30 append
	assert_line --index -1 --partial "depth 30 length"
	# a limit may be refused, cleanly: ENAMETOOLONG and nothing else
	local l
	for l in "${lines[@]:0:${#lines[@]}-1}"; do
		[[ $l == ENAMETOOLONG* ]] || fail "append through the view: $l"
	done
	run -0 bad_deep "$MNT" 30 read
	assert_line xy
	bad_assert_unchanged "$LO"
}

@test "name 08: rename of a lower directory deeper than PATH_MAX: done, EXDEV or ENAMETOOLONG, never EIO; nothing changes on failure" {
	run -0 bad_deep "$LO" 28 mkdir
	bad_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT"
	run bad_deep_rename "$MNT" 25 @next moved
	case $output in
	OK)
		run -0 bad_deep_rename "$MNT" 25 moved @next
		;;
	EXDEV | ENAMETOOLONG) ;;
	*) fail "rename: $output" ;;
	esac
	# there under its old name, with its content
	run -0 bad_deep "$MNT" 28 read
	assert_line x
	bad_assert_unchanged "$LO"
}

@test "name 09: symlink targets of 1023 to 4096 bytes: through the view as on the branch filesystem (XFS stops at 1024, ext4 at 4095)" {
	local len t want got
	mkdir "$T/plain"
	sfs_mount "$UP:$LO" "$MNT"
	for len in 1023 1024 1025 4094 4095 4096; do
		t=$(printf 't%.0s' $(seq "$len"))
		run "$TOOLS/sysprobe" symlink "$t" "$T/plain/s$len"
		want=$output
		run "$TOOLS/sysprobe" symlink "$t" "$MNT/s$len"
		got=$output
		[[ $got == "$want" ]] || fail "a $len-byte target: $got through the view, $want on the branch filesystem"
		if [[ $got == OK ]]; then
			run -0 "$TOOLS/sysprobe" readlink "$MNT/s$len"
			assert_output "OK"$'\n'"$t"
		fi
	done
}

# ================================================================ fuzz targets

# fuzz_build NAME OUT: builds tests/fuzz/NAME.c as a standalone driver
# with ASan and UBSan (as tests/90-format.bats builds format_fuzz).
fuzz_build() {
	local cc=${CC:-cc}
	command -v "$cc" >/dev/null || skip "needs a C compiler ($cc)"
	echo 'int main(void){return 0;}' >"$BATS_TEST_TMPDIR/t.c"
	"$cc" -fsanitize=address,undefined -o "$BATS_TEST_TMPDIR/t" "$BATS_TEST_TMPDIR/t.c" 2>/dev/null ||
		skip "$cc cannot build with -fsanitize=address,undefined"
	# shellcheck disable=SC2046
	"$cc" -O1 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
		-D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -DFUSE_USE_VERSION=314 -I"$SFS_REPO" \
		$(pkg-config --cflags fuse3) \
		-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
		-o "$2" "$SFS_REPO/tests/fuzz/$1.c" $(pkg-config --libs fuse3) -lm
}

@test "fuzz 01: the BRANCHES parser survives random specs and round-trips valid ones (ASan, UBSan, seeds 1-3)" {
	fuzz_build fuzz_branch_spec "$BATS_TEST_TMPDIR/fbs"
	local seed
	for seed in 1 2 3; do
		run -0 env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$BATS_TEST_TMPDIR/fbs" 30000 "$seed"
		assert_output --partial "0 failures"
	done
}

@test "fuzz 02: the option parser survives random command lines; overlay options give a parsable spec (ASan, UBSan, seeds 1-3)" {
	fuzz_build fuzz_opts "$BATS_TEST_TMPDIR/fo"
	local seed
	for seed in 1 2 3; do
		run -0 env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$BATS_TEST_TMPDIR/fo" 30000 "$seed"
		assert_output --partial "0 failures"
	done
}

@test "fuzz 03: libFuzzer targets of both parsers, 4 s each from the seed corpus (clang)" {
	sfs_require_cmd clang
	local t
	for t in fuzz_branch_spec fuzz_opts; do
		# shellcheck disable=SC2046
		clang -g -O1 -fsanitize=fuzzer,address,undefined -DSFS_LIBFUZZER -D_GNU_SOURCE \
			-D_FILE_OFFSET_BITS=64 -DFUSE_USE_VERSION=314 -I"$SFS_REPO" $(pkg-config --cflags fuse3) \
			-o "$BATS_TEST_TMPDIR/$t" "$SFS_REPO/tests/fuzz/$t.c" $(pkg-config --libs fuse3) -lm ||
			skip "clang cannot build a libFuzzer target here"
	done
	for t in branch_spec opts; do
		mkdir -p "$BATS_TEST_TMPDIR/corpus-$t"
		run -0 "$BATS_TEST_TMPDIR/fuzz_$t" -max_total_time=4 -seed=1 -max_len=512 \
			-dict="$SFS_REPO/tests/fuzz/$t.dict" -artifact_prefix="$BATS_TEST_TMPDIR/" \
			"$BATS_TEST_TMPDIR/corpus-$t" "$SFS_REPO/tests/fuzz/corpus/$t"
	done
}
