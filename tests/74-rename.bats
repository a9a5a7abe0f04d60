#!/usr/bin/env bats
# rename(2) across branches: lower files are copied up, renamed, and their
# old name whited out; directories with lower content move in constant
# time by a redirect record on their upper directory (no EXDEV, no copy);
# RENAME_NOREPLACE, RENAME_EXCHANGE and replacing entries of any branch.

load helpers/common
load helpers/copyup

NFILES=10000

setup_file() {
	sfs_setup_file 1
	sfs_require_tool cuprobe
	# one lower branch with a 10,000-file directory, shared read-only by
	# the tests that move it (each has its own rw branch)
	export BIGLO=$SFS_IMG/big-lower
	rm -rf "$BIGLO"
	mkdir -p "$BIGLO/tree/sub"
	cu_make_files "$BIGLO/tree" "$NFILES"
	echo deep >"$BIGLO/tree/sub/deep"
	mkdir -p "$BIGLO/empty"
	export BIGLO_STATE
	BIGLO_STATE=$(cd "$BIGLO" && find . -printf '%p|%y|%m|%s|%T@|%C@|%i\n' | LC_ALL=C sort | md5sum)
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lower-a >"$LO/a"
	echo lower-b >"$LO/b"
	ln -s some/target "$LO/sl"
	mkdir -p "$LO/ld/sub" "$LO/other" "$LO/merged" "$UP/merged" "$LO/gone"
	echo in-ld >"$LO/ld/x"
	echo in-sub >"$LO/ld/sub/y"
	echo low-m >"$LO/merged/lm"
	echo up-m >"$UP/merged/um"
	echo gone >"$LO/gone/old"
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
}

lower_unchanged() {
	sfs_assert_unchanged "$LO"
}

big_lower_unchanged() {
	local now
	now=$(cd "$BIGLO" && find . -printf '%p|%y|%m|%s|%T@|%C@|%i\n' | LC_ALL=C sort | md5sum)
	[[ $now == "$BIGLO_STATE" ]] || fail "the 10,000-file lower branch changed"
}

# The 10,000-file lower branch under a fresh, empty rw branch.
use_big_lower() {
	LO=$BIGLO
	UP=$T/bigup
	mkdir -p "$UP"
}

style_opt() {
	[[ $1 == overlay ]] && echo whiteout=overlay || echo ""
}

# The listing of DIR with each file's content: "name:content" lines.
contents() {
	(cd "$1" && grep -r . | LC_ALL=C sort)
}

# ------------------------------------------------------------ files

check_mv_lower_file() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	ino=$(cu_ino "$MNT/a")
	mv "$MNT/a" "$MNT/a2"
	run -0 cat "$UP/a2"
	assert_output lower-a
	cu_assert_whiteout "$UP/a" "$style"
	cu_assert_gone "$MNT" a
	[[ $(cu_ino "$MNT/a2") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/a2") after mv, $ino before"
	cu_remount "$(style_opt "$style")"
	run -0 cat "$MNT/a2"
	assert_output lower-a
	cu_assert_gone "$MNT" a
	[[ $(cu_ino "$MNT/a2") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/a2") after remount, $ino before"
	lower_unchanged
}

@test "mv of a lower file in its directory: copy, rename, whiteout; content and st_ino kept (wh)" {
	check_mv_lower_file wh
}

@test "mv of a lower file in its directory: copy, rename, whiteout; content and st_ino kept (overlay)" {
	check_mv_lower_file overlay
}

@test "mv of a lower file into another lower directory copies that directory up and keeps st_ino" {
	cu_mount
	ino=$(cu_ino "$MNT/a")
	mv "$MNT/a" "$MNT/other/a"
	[[ -d $UP/other ]] || fail "no UP/other"
	run -0 cat "$UP/other/a"
	assert_output lower-a
	cu_assert_whiteout "$UP/a" wh
	[[ $(cu_ino "$MNT/other/a") == "$ino" ]] || fail "st_ino changed by mv"
	cu_remount
	[[ $(cu_ino "$MNT/other/a") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/other/a") after remount, $ino before"
	cu_assert_gone "$MNT" a
	lower_unchanged
}

@test "mv of a lower file into a new directory keeps its st_ino across a remount" {
	cu_mount
	ino=$(cu_ino "$MNT/a")
	mkdir "$MNT/newdir"
	mv "$MNT/a" "$MNT/newdir/a"
	[[ $(cu_ino "$MNT/newdir/a") == "$ino" ]] || fail "st_ino changed by mv"
	cu_remount
	run -0 cat "$MNT/newdir/a"
	assert_output lower-a
	[[ $(cu_ino "$MNT/newdir/a") == "$ino" ]] || fail "st_ino $(cu_ino "$MNT/newdir/a") after remount, $ino before"
}

@test "mv of a lower symlink keeps its target and its st_ino" {
	cu_mount
	ino=$(cu_ino "$MNT/sl")
	mv "$MNT/sl" "$MNT/sl2"
	[[ -L $UP/sl2 && $(readlink "$UP/sl2") == some/target ]] || fail "UP/sl2: $(ls -l "$UP/sl2" 2>&1)"
	[[ $(readlink "$MNT/sl2") == some/target ]]
	[[ $(cu_ino "$MNT/sl2") == "$ino" ]] || fail "st_ino changed by mv"
	cu_assert_gone "$MNT" sl
	cu_remount
	[[ $(readlink "$MNT/sl2") == some/target ]]
	cu_assert_gone "$MNT" sl
	lower_unchanged
}

@test "rename over an existing lower file replaces it, also after remount" {
	cu_mount
	mv -f "$MNT/a" "$MNT/b"
	run -0 cat "$MNT/b"
	assert_output lower-a
	cu_assert_gone "$MNT" a
	run -0 cat "$UP/b"
	assert_output lower-a
	cu_remount
	run -0 cat "$MNT/b"
	assert_output lower-a
	cu_assert_gone "$MNT" a
	lower_unchanged
}

@test "RENAME_NOREPLACE over an existing lower name is EEXIST and changes nothing" {
	cu_mount
	run -1 "$CUPROBE" rename "$MNT/a" "$MNT/b" noreplace
	assert_output EEXIST
	echo up >"$MNT/u"
	run -1 "$CUPROBE" rename "$MNT/u" "$MNT/b" noreplace
	assert_output EEXIST
	run -1 "$CUPROBE" rename "$MNT/ld" "$MNT/other" noreplace
	assert_output EEXIST
	run -0 cat "$MNT/a" "$MNT/b"
	assert_output $'lower-a\nlower-b'
	run -0 cu_branch_files "$UP"
	assert_output $'./merged/um\n./u'
	run -0 bash -c "find '$UP' -name '.wh.*'"
	assert_output ""
	lower_unchanged
}

@test "RENAME_NOREPLACE to a free name moves a lower file" {
	cu_mount
	run -0 "$CUPROBE" rename "$MNT/a" "$MNT/new" noreplace
	run -0 cat "$MNT/new"
	assert_output lower-a
	cu_assert_gone "$MNT" a
}

@test "rename of a file over a lower directory is EISDIR, of a directory over a lower file ENOTDIR" {
	cu_mount
	run -1 "$CUPROBE" rename "$MNT/a" "$MNT/ld"
	assert_output EISDIR
	run -1 "$CUPROBE" rename "$MNT/other" "$MNT/b"
	assert_output ENOTDIR
	run -0 cat "$MNT/a" "$MNT/ld/x"
	assert_output $'lower-a\nin-ld'
	lower_unchanged
}

@test "rename of a directory over a non-empty merged directory is ENOTEMPTY, even with its upper part empty" {
	mkdir -p "$LO/full"
	echo f >"$LO/full/f"
	mkdir -p "$UP/full"
	sfs_snapshot "$LO"
	cu_mount
	mkdir "$MNT/src"
	run -1 "$CUPROBE" rename "$MNT/src" "$MNT/full"
	assert_output ENOTEMPTY
	run -1 "$CUPROBE" rename "$MNT/src" "$MNT/merged"
	assert_output ENOTEMPTY
	run -0 cat "$MNT/full/f"
	assert_output f
	[[ -d $MNT/src ]]
	lower_unchanged
}

@test "rename of a directory over a merged directory empty in the view replaces it; the old lower entries stay hidden" {
	cu_mount
	rm "$MNT/merged/lm" "$MNT/merged/um"
	mkdir "$MNT/src"
	echo s >"$MNT/src/s"
	mv -T "$MNT/src" "$MNT/merged"
	run -0 ls -A "$MNT/merged"
	assert_output s
	cu_assert_gone "$MNT" src
	cu_remount
	run -0 ls -A "$MNT/merged"
	assert_output s
	cu_assert_gone "$MNT/merged" lm
	lower_unchanged
}

@test "RENAME_EXCHANGE of two lower files swaps them" {
	cu_mount
	run -0 "$CUPROBE" rename "$MNT/a" "$MNT/b" exchange
	run -0 cat "$MNT/a" "$MNT/b"
	assert_output $'lower-b\nlower-a'
	cu_remount
	run -0 cat "$MNT/a" "$MNT/b"
	assert_output $'lower-b\nlower-a'
	lower_unchanged
}

@test "RENAME_EXCHANGE of an upper file and a lower file swaps them" {
	cu_mount
	echo up >"$MNT/u"
	run -0 "$CUPROBE" rename "$MNT/u" "$MNT/a" exchange
	run -0 cat "$MNT/a" "$MNT/u"
	assert_output $'up\nlower-a'
	lower_unchanged
}

@test "RENAME_EXCHANGE of two upper files swaps them" {
	cu_mount
	echo one >"$MNT/u1"
	echo two >"$MNT/u2"
	run -0 "$CUPROBE" rename "$MNT/u1" "$MNT/u2" exchange
	run -0 cat "$UP/u1" "$UP/u2"
	assert_output $'two\none'
}

@test "renaming onto the name of a deleted lower file removes its whiteout" {
	cu_mount
	rm "$MNT/b"
	[[ -e $UP/.wh.b ]] || fail "no whiteout of b"
	echo up >"$MNT/u"
	mv "$MNT/u" "$MNT/b"
	cu_assert_absent "$UP/.wh.b"
	run -0 cat "$MNT/b"
	assert_output up
	cu_remount
	run -0 cat "$MNT/b"
	assert_output up
}

# The rename happens over the destination's whiteout (RENAME_EXCHANGE
# with an overlay device, which then whites out the old name or goes;
# an aufs .wh.NAME removed after): never the whiteout first.
check_rename_onto_whiteout() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	rm "$MNT/a" "$MNT/b"
	echo up >"$MNT/u"
	mkdir "$MNT/ud"
	echo in >"$MNT/ud/in"
	mv "$MNT/u" "$MNT/a"
	mv -T "$MNT/ud" "$MNT/b"
	[[ -f $UP/a && -d $UP/b ]] || fail "UP: $(ls -lA "$UP")"
	cu_assert_absent "$UP/.wh.a"
	cu_assert_absent "$UP/.wh.b"
	# nothing below the old names: no whiteout left there either
	cu_assert_absent "$UP/u"
	cu_assert_absent "$UP/ud"
	# a lower file onto a deleted name leaves a whiteout of its own name
	rm "$MNT/sl"
	mv "$MNT/b/in" "$MNT/b/in2"
	mv -T "$MNT/ld/x" "$MNT/sl"
	cu_assert_whiteout "$UP/ld/x" "$style"
	cu_remount "$(style_opt "$style")"
	run -0 cat "$MNT/a" "$MNT/b/in2" "$MNT/sl"
	assert_output $'up\nin\nin-ld'
	run -0 ls -A "$MNT/b"
	assert_output in2
	cu_assert_gone "$MNT" u
	cu_assert_gone "$MNT/ld" x
	run -0 ls -A "$UP/.stackfs/work"
	assert_output ""
	lower_unchanged
}

@test "renaming files and directories onto deleted lower names (wh)" {
	check_rename_onto_whiteout wh
}

@test "renaming files and directories onto deleted lower names (overlay)" {
	check_rename_onto_whiteout overlay
}

# ------------------------------------------------------------ directories

check_mv_big_dir() {
	local style=$1 xattr=$2
	use_big_lower
	cu_mount "$(style_opt "$style")"
	mv "$MNT/tree" "$MNT/moved"
	cu_assert_gone "$MNT" tree
	cu_assert_whiteout "$UP/tree" "$style"
	# a redirect record on the upper directory, no copy of any file
	run -0 cu_xattr_text "$UP/moved" "$xattr"
	assert_output /tree
	run -0 cu_branch_files "$UP"
	assert_output ""
	run -0 bash -c "ls -A '$MNT/moved' | wc -l"
	assert_output $((NFILES + 1))
	if [[ $style == wh ]]; then # every file's content once; a sample for overlay
		run -0 contents "$MNT/moved"
		assert_output "$(contents "$BIGLO/tree")"
	else
		run -0 cat "$MNT/moved/f2" "$MNT/moved/f5000"
		assert_output $'i2\ni5000'
	fi
	cu_remount "$(style_opt "$style")"
	run -0 bash -c "ls -A '$MNT/moved' | wc -l"
	assert_output $((NFILES + 1))
	run -0 cat "$MNT/moved/f1" "$MNT/moved/f$NFILES" "$MNT/moved/sub/deep"
	assert_output $'i1\ni'"$NFILES"$'\ndeep'
	cu_assert_gone "$MNT" tree
	big_lower_unchanged
}

@test "mv of a lower directory of 10,000 files is a redirect, not a copy: all entries under the new name (wh)" {
	check_mv_big_dir wh trusted.stackfs.redirect
}

@test "mv of a lower directory of 10,000 files is a redirect, not a copy: all entries under the new name (overlay)" {
	check_mv_big_dir overlay trusted.overlay.redirect
}

@test "mv of a merged directory with 10,000 lower files shows upper and lower entries under the new name" {
	use_big_lower
	mkdir -p "$UP/tree"
	echo up >"$UP/tree/upfile"
	cu_mount
	mv "$MNT/tree" "$MNT/moved"
	run -0 cu_xattr_text "$UP/moved" trusted.stackfs.redirect
	assert_output /tree
	run -0 bash -c "ls -A '$MNT/moved' | wc -l"
	assert_output $((NFILES + 2))
	run -0 cat "$MNT/moved/upfile" "$MNT/moved/f77"
	assert_output $'up\ni77'
	run -0 cu_branch_files "$UP"
	assert_output ./moved/upfile
	cu_assert_gone "$MNT" tree
	big_lower_unchanged
}

@test "mv of a 10,000-file lower directory costs about what mv of an empty one does (no per-file work)" {
	use_big_lower
	cu_mount
	s=$(date +%s%N)
	mv "$MNT/empty" "$MNT/empty2"
	t_empty=$((($(date +%s%N) - s) / 1000000))
	s=$(date +%s%N)
	mv "$MNT/tree" "$MNT/tree2"
	t_big=$((($(date +%s%N) - s) / 1000000))
	echo "# mv empty dir ${t_empty} ms, mv 10,000-file dir ${t_big} ms" >&3
	# what is asserted is the absence of a copy, not a time
	run -0 bash -c "find '$UP' -path '$UP/.stackfs' -prune -o -print | wc -l"
	(( output < 10 )) || fail "the rw branch has $output entries after the two mv: a copy happened"
}

@test "mv of a lower directory into another lower directory copies that parent up and keeps the content" {
	cu_mount
	mv "$MNT/ld" "$MNT/other/ld"
	[[ -d $UP/other/ld ]] || fail "no UP/other/ld"
	run -0 cu_xattr_text "$UP/other/ld" trusted.stackfs.redirect
	assert_output /ld
	run -0 contents "$MNT/other/ld"
	assert_output "$(contents "$LO/ld")"
	cu_remount
	run -0 contents "$MNT/other/ld"
	assert_output "$(contents "$LO/ld")"
	cu_assert_gone "$MNT" ld
	lower_unchanged
}

@test "a lower directory moved twice, into new directories, still shows its content, also after remount" {
	cu_mount
	mkdir -p "$MNT/n1" "$MNT/n2/deeper"
	mv "$MNT/ld" "$MNT/n1/ld1"
	mv "$MNT/n1/ld1" "$MNT/n2/deeper/ld2"
	run -0 contents "$MNT/n2/deeper/ld2"
	assert_output "$(contents "$LO/ld")"
	cu_assert_gone "$MNT" ld
	cu_assert_gone "$MNT/n1" ld1
	cu_remount
	run -0 contents "$MNT/n2/deeper/ld2"
	assert_output "$(contents "$LO/ld")"
	cu_assert_gone "$MNT" ld
	cu_assert_gone "$MNT/n1" ld1
	run -0 cu_branch_files "$UP"
	assert_output ./merged/um
	lower_unchanged
}

@test "a lower directory moved away and back to its name shows its content after remount" {
	cu_mount
	mv "$MNT/ld" "$MNT/tmpname"
	mv "$MNT/tmpname" "$MNT/ld"
	run -0 contents "$MNT/ld"
	assert_output "$(contents "$LO/ld")"
	cu_remount
	run -0 contents "$MNT/ld"
	assert_output "$(contents "$LO/ld")"
	cu_assert_gone "$MNT" tmpname
	lower_unchanged
}

@test "a lower directory moved onto the name of a deleted lower directory shows its own content after remount" {
	cu_mount
	rm -r "$MNT/gone"
	mv "$MNT/ld" "$MNT/gone"
	run -0 contents "$MNT/gone"
	assert_output "$(contents "$LO/ld")"
	cu_remount
	run -0 contents "$MNT/gone"
	assert_output "$(contents "$LO/ld")"
	cu_assert_gone "$MNT/gone" old
	cu_assert_gone "$MNT" ld
	lower_unchanged
}

@test "inside a moved lower directory, copy-up, delete and create work and survive a remount" {
	cu_mount
	mv "$MNT/ld" "$MNT/ld2"
	echo more >>"$MNT/ld2/x"
	rm "$MNT/ld2/sub/y"
	echo new >"$MNT/ld2/new"
	cu_remount
	run -0 contents "$MNT/ld2"
	assert_output $'new:new\nx:in-ld\nx:more'
	run -0 ls -A "$MNT/ld2/sub"
	assert_output ""
	lower_unchanged
}

@test "a moved lower directory can itself be removed once emptied, and stays gone" {
	cu_mount
	mv "$MNT/ld" "$MNT/ld2"
	rm -r "$MNT/ld2"
	cu_assert_gone "$MNT" ld2
	cu_assert_gone "$MNT" ld
	cu_remount
	cu_assert_gone "$MNT" ld2
	cu_assert_gone "$MNT" ld
	lower_unchanged
}

# ------------------------------------------------------------ races with copy-up
# (race_copyup: helpers/copyup.bash)

lower_files() {
	local i
	for ((i = 0; i < $1; i++)); do
		echo "$i" >"$LO/f$i"
	done
	sfs_snapshot "$LO"
}

@test "an open for writing of a lower file while a rename replaces it never fails, and the rename's file stays" {
	sfs_require_cmd python3
	lower_files 200
	sfs_mount "$UP:$LO" "$MNT"
	ls -l "$MNT" >/dev/null
	run -0 race_copyup rename 200
	assert_line --index 0 "0 failures of 200"
	# every name shows the (empty) file renamed over it
	run -0 find "$MNT" -maxdepth 1 -name 'f*' -size +0
	assert_output ""
	run -0 find "$MNT" -maxdepth 1 -name 't*'
	assert_output ""
	sfs_assert_unchanged "$LO"
}

check_unlink_race() {
	sfs_require_cmd python3
	lower_files 200
	sfs_mount "$UP:$LO" "$MNT" $(style_opt "$1")
	ls -l "$MNT" >/dev/null
	run -0 race_copyup unlink 200
	assert_line --index 0 "0 failures of 200"
	# an unlinked file never comes back, also after a remount
	run -0 find "$MNT" -maxdepth 1 -name 'f*'
	assert_output ""
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO" "$MNT" $(style_opt "$1")
	run -0 find "$MNT" -maxdepth 1 -name 'f*'
	assert_output ""
	sfs_assert_unchanged "$LO"
}

@test "an open for writing of a lower file while it is unlinked: the file stays deleted (aufs whiteouts)" {
	check_unlink_race wh
}

@test "an open for writing of a lower file while it is unlinked: the file stays deleted (overlay whiteouts)" {
	check_unlink_race overlay
}

@test "regression: a merged directory whose upper part has no origin keeps its st_ino over two renames and a remount (no EXDEV)" {
	# UP/merged was made outside the union: its identity is its own. The
	# first rename gives it a redirect to the lower part; its identity
	# became the lower directory's, so the second rename found no node
	# for it (EXDEV) and st_ino changed (nsstress met it).
	local ino
	cu_mount
	ino=$(stat -c %i "$MNT/merged")
	run -0 "$TOOLS/cuprobe" rename "$MNT/merged" "$MNT/m2"
	assert_output OK
	run -0 "$TOOLS/cuprobe" rename "$MNT/m2" "$MNT/m3"
	assert_output OK
	run -0 "$TOOLS/cuprobe" rename "$MNT/m3" "$MNT/a" exchange
	assert_output OK
	run -0 ls "$MNT/a"
	assert_output $'lm\num'
	[[ $(stat -c %i "$MNT/a") == "$ino" ]] || fail "st_ino changed: $ino, now $(stat -c %i "$MNT/a")"
	cu_umount
	cu_mount
	[[ $(stat -c %i "$MNT/a") == "$ino" ]] || fail "st_ino changed after a remount: $ino, now $(stat -c %i "$MNT/a")"
	run -0 cat "$MNT/m3"
	assert_output lower-a
	lower_unchanged
}
