#!/usr/bin/env bats
# A new entry in a directory that exists only in a ro branch: the missing
# parents are made in the highest rw branch with the mode, owner and
# timestamps (ns) that the union shows for them.

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

# sets mode, owner and ns times on dir $1: mode $2 owner $3 mtime $4
# seconds ago; atime a day ahead, so that relatime leaves it alone when a
# directory is read (it updates an atime older than mtime, ctime or a day)
set_attrs() {
	chmod "$2" "$1"
	chown "$3" "$1"
	touch -m -d "@$((NOW - $4)).123456789" "$1"
	touch -a -d "@$((NOW + 86400 - $4)).987654321" "$1"
}

setup() {
	sfs_setup_branches mid bottom
	NOW=$(date +%s)
	mkdir -p "$LO/a/b/c"
	echo lower >"$LO/a/b/c/lf"
	set_attrs "$LO/a/b/c" 0770 1005:1006 3000
	set_attrs "$LO/a/b" 2705 1003:1004 4000
	set_attrs "$LO/a" 0751 1001:1002 5000
	echo upper >"$UP/uf"
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
}

attrs() {
	stat -c '%a %u:%g %.9X %.9Y' "$@"
}

# mode and owner and atime, not mtime (a new entry changes its parent's)
attrs_no_mtime() {
	stat -c '%a %u:%g %.9X' "$@"
}

# the parents a, a/b, a/b/c of $UP copy those of $1 (default $LO)
assert_parents_copied() {
	local src=${1:-$LO}
	[[ -d $UP/a/b/c ]] || fail "parents not made in the rw branch: $(cd "$UP" && find .)"
	run -0 attrs "$UP/a" "$UP/a/b"
	assert_output "$(attrs "$src/a" "$src/a/b")"
	run -0 attrs_no_mtime "$UP/a/b/c"
	assert_output "$(attrs_no_mtime "$src/a/b/c")"
}

@test "creating a file deep in a lower-only directory makes its parents like the lower ones" {
	sfs_mount "$UP:$LO" "$MNT"
	local view_before
	view_before=$(attrs "$MNT/a" "$MNT/a/b")
	echo new >"$MNT/a/b/c/new"
	run -0 cat "$UP/a/b/c/new"
	assert_output new
	assert_parents_copied
	run -0 attrs "$MNT/a" "$MNT/a/b"
	assert_output "$view_before"
	[[ ! -e $UP/a/b/c/lf ]] || fail "a sibling was copied along"
	run -0 cat "$MNT/a/b/c/lf"
	assert_output lower
	sfs_assert_unchanged "$LO"
}

@test "mkdir deep in a lower-only directory makes its parents like the lower ones" {
	sfs_mount "$UP:$LO" "$MNT"
	mkdir "$MNT/a/b/c/newdir"
	[[ -d $UP/a/b/c/newdir ]] || fail "no $UP/a/b/c/newdir"
	assert_parents_copied
	sfs_assert_unchanged "$LO"
}

@test "symlink, mkfifo and mknod deep in a lower-only directory make the parents" {
	sfs_mount "$UP:$LO" "$MNT"
	ln -s target "$MNT/a/b/c/sl"
	assert_parents_copied
	mkfifo "$MNT/a/b/c/fifo"
	run -0 "$TOOLS/sysprobe" mknod "$MNT/a/b/c/reg" reg 0600
	run -0 stat -c %F "$UP/a/b/c/sl" "$UP/a/b/c/fifo" "$UP/a/b/c/reg"
	assert_output $'symbolic link\nfifo\nregular empty file'
	sfs_assert_unchanged "$LO"
}

@test "link into a lower-only directory makes the parents; the link is in the rw branch" {
	sfs_mount "$UP:$LO" "$MNT"
	ln "$MNT/uf" "$MNT/a/b/c/hl"
	assert_parents_copied
	[[ $(stat -c %i "$UP/uf") == $(stat -c %i "$UP/a/b/c/hl") ]] || fail "not a hard link in the rw branch"
	sfs_assert_unchanged "$LO"
}

@test "rename into a lower-only directory makes the parents and moves within the rw branch" {
	sfs_mount "$UP:$LO" "$MNT"
	mv "$MNT/uf" "$MNT/a/b/c/moved"
	assert_parents_copied
	[[ ! -e $UP/uf && $(cat "$UP/a/b/c/moved") == upper ]] || fail "not moved within the rw branch"
	sfs_assert_unchanged "$LO"
}

@test "a parent that already exists in the rw branch is left as it is" {
	mkdir -m 0700 "$UP/a"
	touch -d @1000000000 "$UP/a"
	sfs_mount "$UP:$LO" "$MNT"
	touch "$MNT/a/b/c/new"
	run -0 stat -c '%a %u %Y' "$UP/a"
	assert_output "700 0 $(stat -c %Y "$UP/a")"
	[[ $(stat -c %a "$UP/a") == 700 ]] || fail "existing rw parent changed"
	run -0 attrs "$UP/a/b"
	assert_output "$(attrs "$LO/a/b")"
}

@test "parents come from the branch the union shows (middle over bottom), made in the top rw branch" {
	mkdir -p "$MID/p/q" "$BOTTOM/p/q/r"
	NOW=$(date +%s)
	set_attrs "$BOTTOM/p/q/r" 0710 2005:2006 3000
	set_attrs "$BOTTOM/p/q" 0755 2003:2004 4000
	set_attrs "$BOTTOM/p" 0755 2001:2002 5000
	set_attrs "$MID/p/q" 0750 3003:3004 4500
	set_attrs "$MID/p" 0711 3001:3002 5500
	sfs_snapshot "$MID"
	sfs_snapshot "$BOTTOM"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	touch "$MNT/p/q/r/new"
	[[ -f $UP/p/q/r/new ]] || fail "not in the top rw branch"
	[[ ! -e $MID/p/q/r ]] || fail "made in the middle ro branch"
	run -0 attrs "$UP/p" "$UP/p/q"
	assert_output "$(attrs "$MID/p" "$MID/p/q")"
	run -0 attrs_no_mtime "$UP/p/q/r"
	assert_output "$(attrs_no_mtime "$BOTTOM/p/q/r")"
	sfs_assert_unchanged "$MID"
	sfs_assert_unchanged "$BOTTOM"
}

@test "20 processes creating in the same lower-only directory at once all succeed" {
	sfs_mount "$UP:$LO" "$MNT"
	local i pids=() failed=0
	for ((i = 0; i < 20; i++)); do
		echo "$i" >"$MNT/a/b/c/par$i" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
	((failed == 0)) || fail "$failed creations failed"
	run -0 bash -c "ls '$UP/a/b/c' | grep -c '^par'"
	assert_output 20
	assert_parents_copied
}

@test "mkdir -p of different subtrees of a lower-only directory at once all succeed" {
	sfs_mount "$UP:$LO" "$MNT"
	local i pids=() failed=0
	for ((i = 0; i < 10; i++)); do
		mkdir -p "$MNT/a/b/c/t$i/x/y" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
	((failed == 0)) || fail "$failed mkdir -p failed"
	run -0 bash -c "ls -d '$UP'/a/b/c/t*/x/y | wc -l"
	assert_output 10
}
