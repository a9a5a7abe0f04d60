#!/usr/bin/env bats
# Lookup across branches (priority, merging, whiteouts and opaque
# directories in both formats, hidden metadata dir) and the merged
# readdir (each name once, stable offsets, seekdir, many entries).
# st_dev and st_ino across filesystems are in 25-inodes.bats.

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool getdents_small seekdir_walk sysprobe dirstreams
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches mid bottom
}

teardown() {
	sfs_cleanup
}

# names of a directory as getdents returns them, sorted
listing() {
	"$TOOLS/getdents_small" -b 4096 "$1" | LC_ALL=C sort
}

# sorted list of the arguments, one per line
sorted() {
	printf '%s\n' "$@" | LC_ALL=C sort
}

@test "the highest branch holding a name wins" {
	echo upper >"$UP/f"
	echo lower >"$LO/f"
	echo lower-only >"$LO/g"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$MNT/f" "$MNT/g"
	assert_output $'upper\nlower-only'
}

@test "three branches: a name comes from the highest branch that has it" {
	echo up >"$UP/a"
	echo mid >"$MID/a"
	echo bottom >"$BOTTOM/a"
	echo mid >"$MID/b"
	echo bottom >"$BOTTOM/b"
	echo bottom >"$BOTTOM/c"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 cat "$MNT/a" "$MNT/b" "$MNT/c"
	assert_output $'up\nmid\nbottom'
}

@test "ten branches: every name is seen, the first branch's copy wins" {
	local i spec=
	for ((i = 0; i < 10; i++)); do
		mkdir -p "$T/b$i/d"
		echo "$i" >"$T/b$i/n"
		echo "$i" >"$T/b$i/f$i"
		echo "$i" >"$T/b$i/d/g$i"
		spec+="${spec:+:}$T/b$i"
	done
	sfs_mount "$spec" "$MNT"
	run -0 cat "$MNT/n"
	assert_output 0
	run -0 cat "$MNT/f9" "$MNT/d/g9" "$MNT/d/g5"
	assert_output $'9\n9\n5'
	run -0 bash -c "ls '$MNT/d' | wc -l"
	assert_output 10
}

@test "a file in a higher branch hides a directory of the same name below" {
	echo file >"$UP/x"
	mkdir "$LO/x"
	echo inner >"$LO/x/inner"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 stat -c %F "$MNT/x"
	assert_output "regular file"
	run -1 "$TOOLS/sysprobe" access "$MNT/x/inner" F
	assert_output ENOTDIR
}

@test "a directory in a higher branch is not merged with a file of that name below" {
	mkdir "$UP/y"
	echo a >"$UP/y/a"
	echo file >"$LO/y"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 stat -c %F "$MNT/y"
	assert_output "directory"
	run -0 listing "$MNT/y"
	assert_output "$(sorted . .. a)"
}

@test "directories in several branches are merged, the highest entry winning" {
	mkdir -p "$UP/d" "$MID/d" "$BOTTOM/d/deep"
	echo u >"$UP/d/a"
	echo u >"$UP/d/both"
	echo m >"$MID/d/b"
	echo m >"$MID/d/both"
	echo b >"$BOTTOM/d/c"
	echo b >"$BOTTOM/d/deep/f"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 listing "$MNT/d"
	assert_output "$(sorted . .. a b both c deep)"
	run -0 cat "$MNT/d/both" "$MNT/d/deep/f"
	assert_output $'u\nb'
}

@test "a non-directory in a middle branch stops the merge of lower directories" {
	mkdir -p "$UP/d" "$BOTTOM/d"
	echo u >"$UP/d/u"
	echo file >"$MID/d"
	echo hidden >"$BOTTOM/d/b"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 listing "$MNT/d"
	assert_output "$(sorted . .. u)"
	run -1 "$TOOLS/sysprobe" access "$MNT/d/b" F
	assert_output ENOENT
}

@test "merged readdir lists every name once, with . and .." {
	mkdir -p "$UP/d" "$MID/d" "$BOTTOM/d"
	for n in a b c d e; do touch "$UP/d/$n" "$MID/d/$n" "$BOTTOM/d/$n"; done
	for n in f g; do touch "$MID/d/$n" "$BOTTOM/d/$n"; done
	mkdir "$UP/d/sub" "$MID/d/sub" "$BOTTOM/d/sub"
	touch "$BOTTOM/d/h"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 listing "$MNT/d"
	assert_output "$(sorted . .. a b c d e f g h sub)"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. d)"
}

@test "'..' of a merged directory is the view's parent (same st_ino)" {
	mkdir -p "$UP/d/e" "$LO/d/e"
	sfs_mount "$UP:$LO" "$MNT"
	[[ $(stat -c %i "$MNT/d/..") == $(stat -c %i "$MNT") ]] || fail "d/.. is not the root"
	[[ $(stat -c %i "$MNT/d/e/..") == $(stat -c %i "$MNT/d") ]] || fail "d/e/.. is not d"
}

@test "overlay whiteouts (char 0:0) in the rw branch hide lower entries and themselves" {
	echo lower >"$LO/x"
	mkdir "$LO/xd"
	touch "$LO/xd/f" "$LO/keep"
	mknod "$UP/x" c 0 0
	mknod "$UP/xd" c 0 0
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. keep)"
	run -1 "$TOOLS/sysprobe" access "$MNT/x" F
	assert_output ENOENT
	run -1 "$TOOLS/sysprobe" access "$MNT/xd" F
	assert_output ENOENT
}

@test "aufs whiteouts (.wh.NAME) in the rw branch hide lower entries and themselves" {
	echo lower >"$LO/y"
	mkdir "$LO/yd"
	touch "$LO/yd/f" "$LO/keep"
	touch "$UP/.wh.y" "$UP/.wh.yd"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. keep)"
	run -1 "$TOOLS/sysprobe" access "$MNT/y" F
	assert_output ENOENT
	run -1 "$TOOLS/sysprobe" access "$MNT/yd" F
	assert_output ENOENT
	run -1 "$TOOLS/sysprobe" access "$MNT/.wh.y" F
	assert_output ENOENT
}

@test "whiteouts of both formats in a middle ro branch hide the bottom, not the top" {
	for n in x y z w; do echo bottom >"$BOTTOM/$n"; done
	mknod "$MID/x" c 0 0
	touch "$MID/.wh.y"
	mknod "$MID/w" c 0 0
	echo up >"$UP/w"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. w z)"
	run -0 cat "$MNT/w" "$MNT/z"
	assert_output $'up\nbottom'
	run -1 "$TOOLS/sysprobe" access "$MNT/x" F
	assert_output ENOENT
	run -1 "$TOOLS/sysprobe" access "$MNT/y" F
	assert_output ENOENT
}

@test "whiteouts inside merged subdirectories hide lower entries there" {
	mkdir -p "$UP/d/e" "$LO/d/e"
	touch "$LO/d/a" "$LO/d/b" "$LO/d/e/c" "$LO/d/e/keep"
	mknod "$UP/d/a" c 0 0
	touch "$UP/d/.wh.b" "$UP/d/e/.wh.c"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT/d"
	assert_output "$(sorted . .. e)"
	run -0 listing "$MNT/d/e"
	assert_output "$(sorted . .. keep)"
}

@test "a whiteout without a matching lower entry is hidden and cannot be looked up" {
	touch "$LO/.wh.ghost" "$LO/real"
	mknod "$LO/ghost2" c 0 0
	touch "$UP/.wh.ghost3"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. real)"
	for n in .wh.ghost ghost ghost2 .wh.ghost3 ghost3; do
		run -1 "$TOOLS/sysprobe" access "$MNT/$n" F
		assert_output ENOENT
	done
}

@test "a char device other than 0:0 is not a whiteout" {
	sfs_require_root "mknod of a char device"
	mknod "$LO/null" c 1 3
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. null)"
	run -0 stat -c '%F %t:%T' "$MNT/null"
	assert_output "character special file 1:3"
}

@test "an opaque directory (.wh..wh..opq) hides lower content, and the marker itself" {
	mkdir -p "$UP/d" "$LO/d"
	touch "$UP/d/u" "$UP/d/.wh..wh..opq" "$LO/d/l"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT/d"
	assert_output "$(sorted . .. u)"
	run -1 "$TOOLS/sysprobe" access "$MNT/d/l" F
	assert_output ENOENT
}

@test "an opaque directory (trusted.overlay.opaque=y) hides lower content" {
	sfs_require_cmd setfattr
	mkdir -p "$UP/d" "$LO/d"
	touch "$UP/d/u" "$LO/d/l"
	setfattr -n trusted.overlay.opaque -v y "$UP/d"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT/d"
	assert_output "$(sorted . .. u)"
	run -1 "$TOOLS/sysprobe" access "$MNT/d/l" F
	assert_output ENOENT
}

@test "opaque directories in a middle ro branch hide the bottom, merge with the top" {
	sfs_require_cmd setfattr
	mkdir -p "$UP/o1" "$MID/o1" "$BOTTOM/o1" "$UP/o2" "$MID/o2" "$BOTTOM/o2"
	touch "$UP/o1/u" "$MID/o1/m" "$BOTTOM/o1/b" "$MID/o1/.wh..wh..opq"
	touch "$UP/o2/u" "$MID/o2/m" "$BOTTOM/o2/b"
	setfattr -n trusted.overlay.opaque -v y "$MID/o2"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 listing "$MNT/o1"
	assert_output "$(sorted . .. m u)"
	run -0 listing "$MNT/o2"
	assert_output "$(sorted . .. m u)"
}

@test "the metadata dir .stackfs is hidden at the root and cannot be looked up" {
	touch "$UP/f"
	sfs_mount "$UP:$LO" "$MNT"
	[[ -d $UP/.stackfs ]] || fail "no metadata dir in the rw branch"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. f)"
	run -1 "$TOOLS/sysprobe" access "$MNT/.stackfs" F
	assert_output ENOENT
}

@test "the .stackfs of a ro branch (an old rw branch) is hidden too" {
	mkdir -p "$LO/.stackfs/x"
	touch "$LO/f"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT"
	assert_output "$(sorted . .. f)"
}

@test "a .stackfs below the root is an ordinary name" {
	mkdir -p "$UP/sub/.stackfs" "$LO/sub2/.stackfs"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 listing "$MNT/sub"
	assert_output "$(sorted . .. .stackfs)"
	run -0 listing "$MNT/sub2"
	assert_output "$(sorted . .. .stackfs)"
}

# a merged directory of about 600 names: upper, lower, both, whited out
make_big() {
	mkdir -p "$UP/big" "$LO/big"
	(cd "$UP/big" && touch $(seq -f 'u%g' 0 199) $(seq -f 'b%g' 0 199) $(seq -f '.wh.w%g' 0 199))
	(cd "$LO/big" && touch $(seq -f 'l%g' 0 199) $(seq -f 'b%g' 0 199) $(seq -f 'w%g' 0 199))
	EXPECTED=$( {
		echo .
		echo ..
		seq -f 'u%g' 0 199
		seq -f 'l%g' 0 199
		seq -f 'b%g' 0 199
	} | LC_ALL=C sort)
}

@test "getdents64 with a 64-byte buffer returns every entry exactly once" {
	make_big
	sfs_mount "$UP:$LO" "$MNT"
	run -0 "$TOOLS/getdents_small" -b 64 "$MNT/big"
	[[ $(printf '%s\n' "${lines[@]}" | LC_ALL=C sort) == "$EXPECTED" ]] ||
		fail "$(diff <(echo "$EXPECTED") <(printf '%s\n' "${lines[@]}" | LC_ALL=C sort) | head -20)"
}

@test "getdents64 with buffers of 100, 333 and 1000 bytes returns every entry exactly once" {
	make_big
	sfs_mount "$UP:$LO" "$MNT"
	for b in 100 333 1000; do
		run -0 "$TOOLS/getdents_small" -b "$b" "$MNT/big"
		[[ $(printf '%s\n' "${lines[@]}" | LC_ALL=C sort) == "$EXPECTED" ]] ||
			fail "buffer $b: $(diff <(echo "$EXPECTED") <(printf '%s\n' "${lines[@]}" | LC_ALL=C sort) | head -20)"
	done
}

@test "long names (200 chars) through a small getdents buffer, every entry once" {
	local i pad
	pad=$(printf 'n%.0s' {1..195})
	mkdir -p "$UP/long" "$LO/long"
	for ((i = 0; i < 60; i++)); do
		touch "$UP/long/$pad-u$i" "$LO/long/$pad-l$i"
	done
	sfs_mount "$UP:$LO" "$MNT"
	run -0 "$TOOLS/getdents_small" -b 300 "$MNT/long"
	((${#lines[@]} == 122)) || fail "got ${#lines[@]} entries, want 122"
	run -0 bash -c "'$TOOLS/getdents_small' -b 300 '$MNT/long' | sort | uniq -d"
	assert_output ""
}

@test "files created while a directory is listed: every old entry exactly once, nothing twice" {
	make_big
	sfs_mount "$UP:$LO" "$MNT"
	run -0 "$TOOLS/getdents_small" -b 64 -c 2 "$MNT/big"
	local got
	got=$(printf '%s\n' "${lines[@]}")
	# no name twice
	run -0 bash -c "sort <<<\"\$1\" | uniq -d" _ "$got"
	assert_output ""
	# every old name present
	run -0 bash -c "comm -23 <(echo \"\$1\") <(grep -v '^new\.' <<<\"\$2\" | LC_ALL=C sort)" _ "$EXPECTED" "$got"
	assert_output ""
	[[ -f $UP/big/new.1.0 ]] || fail "new files not created in the rw branch"
}

@test "telldir/seekdir: every saved position returns the same entry" {
	make_big
	sfs_mount "$UP:$LO" "$MNT"
	run -0 "$TOOLS/seekdir_walk" -s 7 "$MNT/big"
	assert_output "entries 602"
}

@test "telldir/seekdir positions stay valid while files are created" {
	make_big
	sfs_mount "$UP:$LO" "$MNT"
	run -0 "$TOOLS/seekdir_walk" -s 11 -c 100 "$MNT/big"
	assert_output "entries 602"
}

# 6,000 names of 60 bytes (360 KB: the listing's names span several
# chunks, and the radix sort orders them), half of them in both branches
@test "a merged listing of 6,000 long names: every entry once, positions valid" {
	local pad
	pad=$(printf 'p%.0s' {1..54})
	mkdir -p "$UP/huge" "$LO/huge"
	(cd "$UP/huge" && touch $(seq -f "u%04g$pad" 0 2999) $(seq -f "b%04g$pad" 0 1499))
	(cd "$LO/huge" && touch $(seq -f "l%04g$pad" 0 1499) $(seq -f "b%04g$pad" 0 1499) \
		$(seq -f ".wh.u%04g$pad" 0 9))
	sfs_mount "$UP:$LO" "$MNT"
	# a listing out of cookie order never ends: time it out, a failure
	run -0 timeout 60 "$TOOLS/getdents_small" -b 4096 "$MNT/huge"
	((${#lines[@]} == 6002)) || fail "got ${#lines[@]} entries, want 6002"
	run -0 bash -c "timeout 60 '$TOOLS/getdents_small' -b 1000 '$MNT/huge' | sort | uniq -d"
	assert_output ""
	run -0 timeout 60 "$TOOLS/seekdir_walk" -s 13 "$MNT/huge"
	assert_output "entries 6002"
	run -0 bash -c "ls -f '$MNT/huge' | LC_ALL=C sort | diff - <( (echo .; echo ..; ls -f '$UP/huge' '$LO/huge' | grep -v -e '^\.' -e '^\$' -e ':\$') | LC_ALL=C sort -u)"
}

# Directories are opened by the kernel (OPENDIR answers ENOSYS once):
# no OPENDIR or RELEASEDIR round trip per open, listings kept per node.
@test "listing a directory 30 times sends one OPENDIR in all: the kernel opens directories itself" {
	mkdir -p "$LO/d" && touch "$LO/d/a" "$LO/d/b"
	sfs_mount "$UP:$LO" "$MNT"
	local i
	for ((i = 0; i < 30; i++)); do
		run -0 ls "$MNT/d"
		assert_output $'a\nb'
	done
	run -0 sfs_status_of dir_opens
	assert_output 1
}

# 100 directories (more than the 64 listings kept), two streams each, read
# 64 bytes at a time in turn: listings are given up and read again at the
# offset a stream is at
@test "200 streams of 100 directories read in turn: every stream returns every entry once" {
	local d
	for ((d = 0; d < 100; d++)); do
		mkdir -p "$UP/m/d$d" "$LO/m/d$d"
		(cd "$UP/m/d$d" && touch u0 u1 u2 b0 b1 .wh.l0)
		(cd "$LO/m/d$d" && touch l0 l1 l2 b0 b1)
	done
	sfs_mount "$UP:$LO" "$MNT"
	local dirs=()
	for ((d = 0; d < 100; d++)); do dirs+=("$MNT/m/d$d"); done
	run -0 timeout 120 "$TOOLS/dirstreams" -b 64 -s 2 "${dirs[@]}"
	# . .. u0 u1 u2 b0 b1 l1 l2 in each of the 200 streams
	((${#lines[@]} == 200 * 9)) || fail "got ${#lines[@]} entries, want $((200 * 9))"
	[[ $output != *" l0"* ]] || fail "a whited-out name is listed: $(grep -m1 ' l0$' <<<"$output")"
	run -0 bash -c "sort <<<\"\$1\" | uniq -d" _ "$output"
	assert_output ""
	(($(sfs_status_of listings_read) >= 100)) || fail "listings_read: $(sfs_status_of listings_read)"
}

@test "ls -l of 2000 merged entries: every entry once, every stat works" {
	local i
	mkdir -p "$UP/many" "$LO/many"
	(cd "$UP/many" && touch $(seq -f 'u%g' 1 1000) $(seq -f 'b%g' 1 200))
	(cd "$LO/many" && touch $(seq -f 'l%g' 1 800) $(seq -f 'b%g' 1 200))
	sfs_mount "$UP:$LO" "$MNT"
	run -0 ls -l "$MNT/many"
	((${#lines[@]} == 2001)) || fail "ls -l gave ${#lines[@]} lines, want 2001 (total + 2000)"
	[[ $output != *'?'* ]] || fail "ls -l shows unknown fields: $(grep -m3 '?' <<<"$output")"
	run -0 bash -c "ls -1 '$MNT/many' | sort | uniq -d"
	assert_output ""
}

@test "hard links in a ro branch show one st_ino and their link count" {
	echo data >"$LO/h1"
	ln "$LO/h1" "$LO/h2"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 stat -c '%i %h' "$MNT/h1" "$MNT/h2"
	[[ ${lines[0]} == "${lines[1]}" ]] || fail "h1 and h2 differ: $output"
	[[ ${lines[0]} == *" 2" ]] || fail "link count not 2: $output"
}

@test "st_ino of an entry does not change after the kernel forgets it" {
	mkdir -p "$UP/d" "$LO/d"
	touch "$UP/d/u" "$LO/d/l" "$LO/lf"
	sfs_mount "$UP:$LO" "$MNT"
	local before after
	before=$(stat -c '%n %i' "$MNT/d" "$MNT/d/u" "$MNT/d/l" "$MNT/lf")
	sfs_drop_caches 2
	after=$(stat -c '%n %i' "$MNT/d" "$MNT/d/u" "$MNT/d/l" "$MNT/lf")
	[[ $before == "$after" ]] || fail "$(diff <(echo "$before") <(echo "$after"))"
}

@test "entries deep in a lower-only tree are looked up and read" {
	mkdir -p "$BOTTOM/a/b/c/d"
	echo deep >"$BOTTOM/a/b/c/d/f"
	ln -s ../../x "$BOTTOM/a/b/l"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 cat "$MNT/a/b/c/d/f"
	assert_output deep
	run -0 readlink "$MNT/a/b/l"
	assert_output ../../x
}

@test "lookups and listings leave the ro branches unchanged" {
	mkdir -p "$UP/d" "$MID/d/m" "$BOTTOM/d/b"
	touch "$MID/d/m/f" "$BOTTOM/d/b/g" "$MID/.wh.z" "$BOTTOM/z"
	mknod "$MID/x" c 0 0
	echo content >"$BOTTOM/d/file"
	sfs_snapshot "$MID"
	sfs_snapshot "$BOTTOM"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	ls -laR "$MNT" >/dev/null
	cat "$MNT/d/file" >/dev/null
	"$TOOLS/seekdir_walk" "$MNT/d" >/dev/null
	run -0 "$SFS" umount "$MNT"
	sfs_assert_unchanged "$MID"
	sfs_assert_unchanged "$BOTTOM"
}
