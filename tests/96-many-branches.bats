#!/usr/bin/env bats
# No limit on the number of branches (issue 19.4): a directory present in
# more branches than any fixed table holds lists, resolves, diffs and
# takes whiteouts in every one of them.

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool getdents_small
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

# idx_layers: 12 ro branches whose directory d holds: names of one layer
# each, a name in several (the highest wins), whiteouts of both styles
# hiding lower names, an opaque directory, a directory renamed with a
# bare-name redirect in a higher layer; prints the spec.
idx_layers() {
	local i spec=$UP
	for ((i = 0; i < 12; i++)); do
		mkdir -p "$T/l$i/d/sub$i" "$T/l$i/d/o"
		echo "$i" >"$T/l$i/d/own$i"
		echo "$i" >"$T/l$i/d/shared"
		echo "$i" >"$T/l$i/d/o/in$i"
		echo "$i" >"$T/l$i/d/sub$i/x"
		spec+=":$T/l$i"
	done
	: >"$T/l3/d/.wh.own7"                       # aufs whiteout over l7's
	mknod "$T/l5/d/own9" c 0 0                  # overlay whiteout over l9's
	: >"$T/l4/d/o/.wh..wh..opq"                 # o of l4 hides o below it
	# a ".wh.both" beside the directory both in l2: l2's both alone
	# (the OCI rule), l6's below it hidden; l9's lone both/x9 hidden too
	mkdir -p "$T/l2/d/both" "$T/l6/d/both" "$T/l9/d/both"
	echo 2 >"$T/l2/d/both/x2"
	echo 6 >"$T/l6/d/both/x6"
	echo 9 >"$T/l9/d/both/x9"
	: >"$T/l2/d/.wh.both"
	# a ".wh.merged" in l5 hides l8's merged; l1's and l3's merge
	mkdir -p "$T/l1/d/merged" "$T/l3/d/merged" "$T/l8/d/merged"
	echo 1 >"$T/l1/d/merged/m1"
	echo 3 >"$T/l3/d/merged/m3"
	echo 8 >"$T/l8/d/merged/m8"
	: >"$T/l5/d/.wh.merged"
	echo "$spec"
}

# idx_state: what the view at $MNT shows of d, entry by entry.
idx_state() {
	(cd "$MNT/d" && find . -printf '%p %y %s\n' | sort && cat own* shared o/* sub*/x)
}

@test "a directory in 12 read-only branches resolves through its name index as through every layer (timeout=0 has none)" {
	local spec
	spec=$(idx_layers)
	sfs_mount "$spec" "$MNT" timeout=0
	idx_state >"$BATS_TEST_TMPDIR/every"
	# names the lookups must not find
	[[ ! -e $MNT/d/own7 && ! -e $MNT/d/own9 && ! -e $MNT/d/o/in5 && ! -e $MNT/d/nothere ]]
	"$SFS" umount "$MNT"
	sfs_mount "$spec" "$MNT"
	# lookups before any listing (the index is read by the first one)
	[[ $(cat "$MNT/d/shared") == 0 && $(cat "$MNT/d/own11") == 11 && $(cat "$MNT/d/o/in4") == 4 ]]
	[[ $(cat "$MNT/d/both/x2") == 2 && ! -e $MNT/d/both/x6 && ! -e $MNT/d/both/x9 ]]
	[[ $(cat "$MNT/d/merged/m1") == 1 && $(cat "$MNT/d/merged/m3") == 3 && ! -e $MNT/d/merged/m8 ]]
	[[ ! -e $MNT/d/own7 && ! -e $MNT/d/own9 && ! -e $MNT/d/o/in5 && ! -e $MNT/d/nothere ]]
	idx_state >"$BATS_TEST_TMPDIR/indexed"
	diff "$BATS_TEST_TMPDIR/every" "$BATS_TEST_TMPDIR/indexed"
	grep -q '^./own7 \|^./own9 ' "$BATS_TEST_TMPDIR/every" && fail "a whiteout did not hide"
	# changes through the view, in the rw branch above the index
	rm "$MNT/d/own2"
	echo new >"$MNT/d/own7"
	mv "$MNT/d/sub3" "$MNT/d/moved3"
	[[ ! -e $MNT/d/own2 && $(cat "$MNT/d/own7") == new && $(cat "$MNT/d/moved3/x") == 3 ]]
	"$SFS" umount "$MNT"
	sfs_mount "$spec" "$MNT" timeout=0
	[[ ! -e $MNT/d/own2 && $(cat "$MNT/d/own7") == new && $(cat "$MNT/d/moved3/x") == 3 ]]
	"$SFS" umount "$MNT"
	# diff's walk looks names up through the indexes too
	run -0 "$SFS" diff "$UP"
	assert_line "D /d/own2"
	assert_line "A /d/own7"
	assert_line "D /d/sub3"
	refute_line --partial "/d/own9"
	refute_line --partial "/d/shared"
}

# A listing reads every layer anyway: it fills the directory's name
# index on the way (stackfs/ops/readdir.c), and the lookups of the entries
# it serves read no layer again (name_index_reads stays put).
@test "a listing of a directory in 12 read-only branches fills its name index; the lookups after it resolve as through every layer" {
	local spec reads
	spec=$(idx_layers)
	sfs_mount "$spec" "$MNT" timeout=0
	idx_state >"$BATS_TEST_TMPDIR/every"
	"$SFS" umount "$MNT"
	sfs_mount "$spec" "$MNT"
	run -0 ls "$MNT/d"
	(($(sfs_status_of name_index_listed) >= 1)) ||
		fail "name_index_listed: $(sfs_status_of name_index_listed)"
	reads=$(sfs_status_of name_index_reads)
	[[ ! -e $MNT/d/own7 && ! -e $MNT/d/own9 && ! -e $MNT/d/nothere ]]
	[[ $(cat "$MNT/d/shared") == 0 && $(cat "$MNT/d/own11") == 11 && $(cat "$MNT/d/sub5/x") == 5 ]]
	[[ $(cat "$MNT/d/both/x2") == 2 && ! -e $MNT/d/both/x6 && ! -e $MNT/d/both/x9 ]]
	[[ $(cat "$MNT/d/merged/m1") == 1 && $(cat "$MNT/d/merged/m3") == 3 && ! -e $MNT/d/merged/m8 ]]
	assert_equal "$(sfs_status_of name_index_reads)" "$reads"
	idx_state >"$BATS_TEST_TMPDIR/listed"
	diff "$BATS_TEST_TMPDIR/every" "$BATS_TEST_TMPDIR/listed"
	grep -q '^./own7 \|^./own9 ' "$BATS_TEST_TMPDIR/listed" && fail "a whiteout did not hide"
	return 0
}

# idx_stats: what a stat of each file of d in idx_layers shows.
idx_stats() {
	local f
	for f in own{0..6} own8 own10 own11 shared mc; do
		stat -c '%n %i %F %a %h %s %b %.9Y' "$MNT/d/$f"
	done
}

# The entries of such a listing are answered unopened (lookup_listed.c)
# from the one layer the index says lists them, as in a directory of one
# layer: nothing above it lists the name or its whiteout.
@test "a listing of a directory in 12 read-only branches answers its files unopened from the layer its index names, as lookups show them" {
	local spec listed
	spec=$(idx_layers)
	head -c 100000 /dev/urandom >"$T/l4/d/mc"
	truncate -s 100000 "$T/l1/d/mc"
	setfattr -n trusted.overlay.metacopy "$T/l1/d/mc"
	sfs_mount "$spec" "$MNT"
	idx_stats >"$BATS_TEST_TMPDIR/looked"
	(($(sfs_status_of listed_lookups) == 0)) || fail "a lookup was answered as listed"
	"$SFS" umount "$MNT"
	sfs_mount "$spec" "$MNT"
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	listed=$(sfs_status_of listed_lookups)
	# own0-11 but the two whited out, and shared; not the metacopy mc
	((listed == 11)) || fail "listed_lookups is $listed, not 11"
	idx_stats >"$BATS_TEST_TMPDIR/listed"
	diff "$BATS_TEST_TMPDIR/looked" "$BATS_TEST_TMPDIR/listed"
	[[ $(cat "$MNT/d/shared") == 0 && $(cat "$MNT/d/own11") == 11 ]]
	cmp "$T/l4/d/mc" "$MNT/d/mc"
	[[ ! -e $MNT/d/own7 && ! -e $MNT/d/own9 ]]
}

@test "a name made directly in one of 12 read-only branches shows within timeout + 1 s (the index is read again)" {
	local spec i
	spec=$(idx_layers)
	sfs_mount "$spec" "$MNT" timeout=1
	[[ ! -e $MNT/d/late ]] || fail "late is there before it is made"
	echo late >"$T/l8/d/late"
	for ((i = 0; i < 40; i++)); do
		[[ -e $MNT/d/late ]] && break
		sleep 0.1
	done
	[[ $(cat "$MNT/d/late") == late ]] || fail "late does not show after $((i / 10)) s"
	# and one removed directly is gone as soon
	rm "$T/l8/d/late"
	for ((i = 0; i < 40; i++)); do
		[[ -e $MNT/d/late ]] || break
		sleep 0.1
	done
	[[ ! -e $MNT/d/late ]] || fail "late still shows after 4 s"
}

@test "1,000 branches from a branches file (-o branches=FILE): mounted, listed, resolved, changed; status and diff name them" {
	local i list=$BATS_TEST_TMPDIR/layers
	mkdir -p "$T"/l{0..999}/d
	{
		echo "# the union's layers, highest first"
		echo "$UP=rw"
		for ((i = 0; i < 1000; i++)); do
			echo "$i" >"$T/l$i/d/f$i"
			echo "$T/l$i"
		done
	} >"$list"
	sfs_record stackfs "$MNT"
	"$SFS" mount -o "branches=$list" "$MNT" || fail "the mount failed"
	run -0 "$SFS" status "$MNT"
	[[ $(grep -c '^branch' <<<"$output") == 1001 ]] || fail "status lists $(grep -c '^branch' <<<"$output") branches"
	[[ $(ls "$MNT/d" | wc -l) == 1000 && $(cat "$MNT/d/f999") == 999 && $(cat "$MNT/d/f0") == 0 ]]
	rm "$MNT/d/f998"
	echo x >>"$MNT/d/f500"
	[[ ! -e $MNT/d/f998 && $(cat "$MNT/d/f500") == $'500\nx' ]]
	run -0 "$SFS" diff "$MNT"
	assert_line "D /d/f998"
	assert_line "C /d/f500"
}

@test "branches files: ':' and CRLF lines taken, bad files refused with the reason and nothing mounted" {
	local f=$BATS_TEST_TMPDIR/b
	mkdir -p "$T/a:b" "$T/c"
	echo ab >"$T/a:b/x"
	echo c >"$T/c/y"
	printf '%s\r\n\r\n# c\r\n%s=ro\r\n%s\r\n' "$UP" "$T/a:b" "$T/c" >"$f"
	"$SFS" mount -o "branches=$f" "$MNT" || fail "mount failed"
	sfs_record stackfs "$MNT"
	[[ $(cat "$MNT/x") == ab && $(cat "$MNT/y") == c ]]
	"$SFS" umount "$MNT"
	run -2 "$SFS" mount -o "branches=$BATS_TEST_TMPDIR/none" "$MNT"
	assert_output --partial "branches file $BATS_TEST_TMPDIR/none: No such file or directory"
	printf '# nothing\n\n' >"$f"
	run -2 "$SFS" mount -o "branches=$f" "$MNT"
	assert_output --partial "no branch in it"
	printf '%s\n\0%s\n' "$UP" "$T/c" >"$f"
	run -2 "$SFS" mount -o "branches=$f" "$MNT"
	assert_output --partial "holds a NUL byte"
	run -2 "$SFS" mount -o "branches=$T" "$MNT"
	assert_output --partial "not a regular file"
	printf '%s\n' "$UP" >"$f"
	run -2 "$SFS" mount -o "branches=$f" "$UP:$T/c" "$MNT"
	assert_output --partial "give the branches one way"
	run -2 "$SFS" mount -o "branches=$f,lowerdir=$T/c" "$MNT"
	assert_output --partial "give the branches one way"
	! sfs_is_mounted "$MNT" || fail "something was mounted"
}
