#!/usr/bin/env bats
# nsstress through the union (tests/tools/nsstress.c): 4 processes change
# a small name space (3 levels x 8 names) at once for a few seconds —
# create, write, rename (flags 0, NOREPLACE, EXCHANGE; files and
# directories, across directories), link, unlink, mkdir, rmdir, rm -rf,
# setxattr/removexattr — over a rw branch and two ro branches populated
# with the same names, so that the operations hit lower entries (copy-ups,
# whiteouts, opaque directories, redirects, the index of hard links).
# Errors another process explains (ENOENT, EEXIST, ENOTEMPTY, ...) are
# counted; EXDEV, EIO, ESTALE... are failures. Then the consistency checks
# of st_ns_round (stress/lib.bash): the view walks and reads clean, a
# remount shows the same view, fsck --repair answers 0 or 1 and then 0,
# the ro branches are unchanged, no name is listed twice.
# Longer runs: tests/stress (make stress). NS_SEED=S sets the seed.
#
# The "finding:" tests are the bugs nsstress found, each reduced to a
# deterministic (or reliably racing) reproduction.

load helpers/common
load stress/lib

NS_SECS=${NS_SECS:-5}
NS_PROCS=${NS_PROCS:-4}

setup_file() {
	sfs_setup_file 1
	sfs_require_tool nsstress cuprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2
}

teardown() {
	sfs_cleanup
}

@test "nsstress, -o whiteout=wh: the view stays consistent" {
	st_ns_populate "$(st_seed "${NS_SEED:-}")" # the seed of the run too
	st_ns_round wh "$NS_SECS" "$NS_PROCS"
}

@test "nsstress, -o whiteout=overlay: the view stays consistent" {
	st_ns_populate "$(st_seed "${NS_SEED:-}")"
	st_ns_round overlay "$NS_SECS" "$NS_PROCS"
}

# ------------------------------------------------------------ findings

@test "regression: rename of a lower file out of a directory only a ro branch has (no EXDEV)" {
	mkdir "$LO/d"
	echo x >"$LO/d/f"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	# the copy-up makes d's upper directory; the rename must then look
	# the name up in d's new stack, not in the one it started with
	run -0 "$TOOLS/cuprobe" rename "$MNT/d/f" "$MNT/g"
	assert_output OK
	[[ $(cat "$MNT/g") == x ]] || fail "g holds '$(cat "$MNT/g")'"
	[[ ! -e $MNT/d/f ]] || fail "d/f still shows"
	sfs_assert_unchanged "$LO"
}

@test "regression: rename of one name of a lower hard link, the other name looked up last (no EXDEV)" {
	echo x >"$LO/a"
	ln "$LO/a" "$LO/b"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	stat "$MNT/a" >/dev/null
	stat "$MNT/b" >/dev/null # the node's name is now b
	run -0 "$TOOLS/cuprobe" rename "$MNT/a" "$MNT/c"
	assert_output OK
	[[ ! -e $MNT/a ]] || fail "a still shows"
	[[ $(cat "$MNT/c") == x && $(cat "$MNT/b") == x ]] || fail "c or b lost its content"
	[[ $(stat -c %i "$MNT/b") == $(stat -c %i "$MNT/c") ]] || fail "b and c are no longer one inode"
	sfs_assert_unchanged "$LO"
}

@test "regression: RENAME_EXCHANGE of a lower hard link racing a copy-up through its other name (no EXDEV)" {
	# nsstress met it: the exchange copied the file up at its name, but a
	# write open of the other name copied it up first, so the name still
	# showed the lower entry (the copy in the index) and the exchange
	# answered EXDEV. 300 rounds: the old code failed about 4 in 100.
	local i n=300
	mkdir "$LO/d"
	for ((i = 0; i < n; i++)); do
		echo "a$i" >"$LO/a$i"
		ln "$LO/a$i" "$LO/d/b$i"
		echo "c$i" >"$LO/c$i"
	done
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	run -0 "$TOOLS/cuprobe" xchgrace "$MNT" "$n"
	assert_output "0 of $n failed"
	for ((i = 0; i < n; i += 37)); do
		[[ $(cat "$MNT/a$i") == "c$i" && $(cat "$MNT/c$i") == "a$i" ]] || fail "a$i or c$i holds the wrong content"
		[[ $(stat -c %i "$MNT/c$i") == $(stat -c %i "$MNT/d/b$i") ]] || fail "c$i and d/b$i are no longer one inode"
	done
	sfs_assert_unchanged "$LO"
}

# nsstress met it (CI, whiteout=overlay): "chmod n3/n3/n3: EIO". A
# process that still holds a directory removed through the view (its
# lookup came before the rmdir) changes it: the directory's copy-up
# placed its copy at the name, which the removal had given to its
# whiteout. With overlay whiteouts the copy-up took the whiteout for the
# directory (the chmod changed the whiteout's mode, and the kernel, shown
# a character device for a directory, failed every use of the inode with
# EIO); with .wh. whiteouts the removed directory came back into the
# view. A copy-up of a directory now lands only where the name still
# shows it, else stays out of the view, as an unlinked file's does.
ns_removed_dir_changed() {
	local style=$1
	mkdir "$LO/d" "$LO/e"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT" "whiteout=$style"
	mkdir "$MNT/w"
	chmod 0751 "$MNT/w"
	run -0 python3 -c '
import os, sys
m = sys.argv[1]
d = os.open(m + "/d", os.O_RDONLY)
e = os.open(m + "/e", os.O_RDONLY)
os.rmdir(m + "/d")
os.rename(m + "/w", m + "/e")   # a directory renamed over e
for fd, name in ((d, "d"), (e, "e")):
    os.fchmod(fd, 0o700)
    os.setxattr(fd, "user.k", b"v")
    print(name, oct(os.fstat(fd).st_mode))
' "$MNT"
	assert_line "d 0o40700"
	assert_line "e 0o40700"
	[[ ! -e $MNT/d ]] || fail "the removed d shows again: $(ls -la "$MNT")"
	[[ $(stat -c %a "$MNT/e") == 751 ]] || fail "the directory now at e got the change meant for the old e: mode $(stat -c %a "$MNT/e")"
	[[ -z $(getfattr --absolute-names -n user.k "$MNT/e" 2>/dev/null) ]] || fail "the directory now at e got the old e's xattr"
	if [[ $style == overlay ]]; then
		[[ $(stat -c %F:%t:%T:%a "$UP/d") == "character special file:0:0:0" ]] ||
			fail "d's whiteout changed: $(stat -c %F:%t:%T:%a "$UP/d")"
	fi
	run -0 "$SFS" status "$MNT"
	refute_output --partial error.
	"$SFS" umount "$MNT"
	run "$SFS" fsck "$UP"
	assert_success
	sfs_assert_unchanged "$LO"
}

@test "regression: a directory removed through the view, changed through a process that still holds it (whiteout=overlay)" {
	ns_removed_dir_changed overlay
}

@test "regression: a directory removed through the view, changed through a process that still holds it (whiteout=wh)" {
	ns_removed_dir_changed wh
}
