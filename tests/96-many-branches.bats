#!/usr/bin/env bats
# No limit on the number of branches (issue 19.4): a directory present in
# more branches than any fixed table holds lists, resolves, diffs and
# takes whiteouts in every one of them.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
}

teardown() {
	sfs_cleanup
}

# many_lowers N: N ro branches $T/l0 .. below $UP, each with d/fI and a
# file of its own at the root; prints the branch spec.
many_lowers() {
	local i spec=$UP
	for ((i = 0; i < $1; i++)); do
		mkdir -p "$T/l$i/d"
		echo "$i" >"$T/l$i/d/f$i"
		echo "$i" >"$T/l$i/r$i"
		spec+=":$T/l$i"
	done
	echo "$spec"
}

@test "a directory in 100 branches lists, resolves and deletes the entries of every one (a table of 64 hid the rest)" {
	local spec i
	spec=$(many_lowers 100)
	sfs_mount "$spec" "$MNT"
	run -0 ls "$MNT/d"
	[[ ${#lines[@]} == 100 ]] || fail "d lists ${#lines[@]} entries of 100"
	[[ $(cat "$MNT/d/f99") == 99 && $(cat "$MNT/r99") == 99 ]]
	[[ $(ls "$MNT" | wc -l) == 101 ]] || fail "the root lists $(ls "$MNT" | wc -l) entries of 101"
	# a deletion in the deepest layers leaves a whiteout, and holds
	rm "$MNT/d/f97" "$MNT/d/f3"
	mv "$MNT/d/f98" "$MNT/d/g98"
	"$SFS" umount "$MNT"
	sfs_mount "$spec" "$MNT"
	run -0 ls "$MNT/d"
	[[ ${#lines[@]} == 98 ]] || fail "d lists ${#lines[@]} entries of 98 after the changes"
	[[ ! -e $MNT/d/f97 && ! -e $MNT/d/f98 && $(cat "$MNT/d/g98") == 98 ]]
	"$SFS" umount "$MNT"
	# diff sees the same union
	run -0 "$SFS" diff "$UP"
	assert_line "D /d/f97"
	assert_line "D /d/f98"
	assert_line "D /d/f3"
	assert_line "A /d/g98"
}
