#!/usr/bin/env bats
# stackfs diff: what a rw branch changes relative to the branches below
# it, one "A|C|D /path" line per change, sorted by path. The tree is made
# through a real mount (both whiteout styles): additions, changes of data,
# mode, ACLs and a directory's mode, deletions of files and of a whole
# directory, an opaque directory, a moved directory, hard links through
# the index, types replaced. Given a mount point or the branch directory,
# the same list; --json, --lower, usage errors, an unreadable entry.

load helpers/common
load helpers/diff

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2 other
	dc_lower "$LO"
}

teardown() {
	sfs_cleanup
}

# Makes the changes through a mount of UP over LO in a whiteout style,
# leaving it mounted.
changed_mount() {
	sfs_mount "$UP:$LO" "$MNT" "$(dc_style_opt "$1")"
	dc_change "$MNT"
}

check_diff() {
	local style=$1
	changed_mount "$style"
	# a live mount: its highest rw branch against the branches below
	run -0 "$SFS" diff "$MNT"
	assert_output "$(dc_expected_diff)"
	"$SFS" umount "$MNT" || fail "umount failed"
	# the branch directory: the branches below from its last mount
	run -0 "$SFS" diff "$UP"
	assert_output "$(dc_expected_diff)"
	# the whiteouts really are of the style asked for
	if [[ $style == overlay ]]; then
		[[ -c $UP/c && ! -e $UP/.wh.c ]] || fail "no overlay whiteout for c"
	else
		[[ -f $UP/.wh.c && ! -e $UP/c ]] || fail "no .wh.c whiteout"
	fi
}

@test "diff lists additions, changes and deletions, an opaque and a moved directory (whiteout=wh)" {
	check_diff wh
}

@test "diff lists additions, changes and deletions, an opaque and a moved directory (whiteout=overlay)" {
	check_diff overlay
}

@test "regression: a device 0:0 made through the view is an addition; removing a marked lower one a deletion" {
	mknod "$LO/ldev" c 0 0
	setfattr -h -n trusted.stackfs.device -v y "$LO/ldev"
	sfs_mount "$UP:$LO" "$MNT"
	mknod "$MNT/dev" c 0 0
	rm "$MNT/ldev"
	run -0 "$SFS" diff "$MNT"
	assert_output $'A /dev\nD /ldev'
}

@test "diff of an unchanged branch prints nothing and exits 0" {
	sfs_mount "$UP:$LO" "$MNT"
	cat "$MNT/a" "$MNT/d1/y" >/dev/null
	ls -R "$MNT" >/dev/null
	run -0 "$SFS" diff "$MNT"
	assert_output ""
	"$SFS" umount "$MNT"
	run -0 "$SFS" diff "$UP"
	assert_output ""
}

@test "diff --json prints an array of {path, change}, a moved directory with its old path" {
	changed_mount wh
	run -0 "$SFS" diff --json "$MNT"
	local json=$output
	[[ $(jq -r '.[] | "\(.change) \(.path)"' <<<"$json") == "$(dc_expected_diff)" ]] ||
		fail "JSON differs from the text list: $json"
	[[ $(jq -r '.[] | select(.path == "/moved") | .from' <<<"$json") == /mv ]] ||
		fail "no \"from\": \"/mv\" on /moved: $json"
	[[ $(jq '[.[] | select(.from)] | length' <<<"$json") == 1 ]] || fail "$json"
}

@test "diff --lower names the branches below a branch that was never mounted over them" {
	echo new >"$UP/n1"
	: >"$UP/.wh.a"
	mkdir "$UP/d3"
	: >"$UP/d3/.wh..wh..opq"
	echo b2 >"$UP/b"
	# no .stackfs/lowers: the branches below cannot be guessed
	run -1 "$SFS" diff "$UP"
	assert_output --partial "--lower"
	assert_output --partial "$UP"
	run -0 "$SFS" diff --lower "$LO" "$UP"
	assert_output "D /a
C /b
C /d3
D /d3/keep
D /d3/m
A /n1"
	# two lower branches: the first one holding a name wins
	echo lo2 >"$LO2/only2"
	run -0 "$SFS" diff --lower "$LO2" --lower "$LO" "$UP"
	assert_output "D /a
C /b
C /d3
D /d3/keep
D /d3/m
A /n1"
	: >"$UP/.wh.only2"
	run -0 "$SFS" diff --lower "$LO" --lower "$LO2" "$UP"
	assert_line "D /only2"
}

@test "diff of a three-branch mount compares with both branches below" {
	mkdir -p "$LO2/d3" "$LO2/e"
	echo l2 >"$LO2/d3/l2"
	echo l2 >"$LO2/e/f"
	sfs_mount "$UP:$LO:$LO2" "$MNT"
	rm -r "$MNT/d3" "$MNT/e"
	mkdir "$MNT/d3"
	echo more >>"$MNT/e2" # new
	run -0 "$SFS" diff "$MNT"
	assert_output "C /d3
D /d3/keep
D /d3/l2
D /d3/m
D /e
A /e2"
	"$SFS" umount "$MNT"
	run -0 "$SFS" diff "$UP"
	assert_output "C /d3
D /d3/keep
D /d3/l2
D /d3/m
D /e
A /e2"
}

@test "diff reads nothing but the branches: the trees are unchanged" {
	changed_mount overlay
	"$SFS" umount "$MNT"
	sfs_snapshot "$UP"
	sfs_snapshot "$LO"
	run -0 "$SFS" diff "$UP"
	run -0 "$SFS" diff --json "$UP"
	sfs_assert_unchanged "$UP"
	sfs_assert_unchanged "$LO"
}

@test "a mount point inside the rw branch is reported as an error, the rest is listed, exit 1" {
	sfs_mount "$UP:$LO" "$MNT"
	echo new >"$MNT/new"
	"$SFS" umount "$MNT"
	mkdir "$UP/bm"
	mount --bind "$OTHER" "$UP/bm"
	sfs_record mount "$UP/bm"
	run -1 "$SFS" diff "$UP"
	assert_line "A /new"
	assert_line --partial "stackfs: diff: /bm: Invalid cross-device link"
	assert_line --partial "incomplete"
}

@test "diff usage errors exit 2; a mount without a rw branch or a missing branch exit 1" {
	run -2 "$SFS" diff
	assert_output --partial "usage: stackfs diff"
	run -2 "$SFS" diff --frobnicate "$UP"
	assert_output --partial "unknown option '--frobnicate'"
	run -2 "$SFS" diff "$UP" "$LO"
	assert_output --partial "unexpected argument"
	run -2 "$SFS" diff "$UP" --lower
	assert_output --partial "--lower needs a directory"
	sfs_mount "$UP:$LO" "$MNT"
	run -2 "$SFS" diff --lower "$LO" "$MNT"
	assert_output --partial "--lower is for a branch directory"
	"$SFS" umount "$MNT"
	sfs_mount "$LO=ro" "$MNT"
	run -1 "$SFS" diff "$MNT"
	assert_output --partial "no rw branch"
	run -1 "$SFS" diff "$T/missing"
	assert_output --partial "$T/missing: No such file or directory"
	run -0 "$SFS" diff --help
	assert_output --partial "A /path"
}

@test "diff --json: a path with bytes that are not UTF-8 comes back exact (\udcXX, surrogateescape)" {
	sfs_mount "$UP:$LO" "$MNT"
	echo x >"$MNT/"$'odd\xff\xc3(\x01'
	"$SFS" diff --json "$MNT" >"$BATS_TEST_TMPDIR/out.json" || fail "diff failed"
	run -0 python3 -c '
import json, sys
v = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
print([(c["change"], c["path"].encode("utf-8", "surrogateescape")) for c in v])' "$BATS_TEST_TMPDIR/out.json"
	assert_output --partial "('A', b'/odd\\xff\\xc3(\\x01')"
}

# The mount's branch list comes over the control channel with paths
# escaped (\ooo); diff read it with its own parser and took "\134" as
# written: a branch path with a backslash was not found.
@test "regression: diff MOUNTPOINT of branches whose paths hold a backslash, a colon and a space" {
	local up="$T/u\\p: 1" lo="$T/l\\o 2"
	mkdir -p "$up" "$lo"
	echo x >"$lo/f"
	echo y >"$lo/g"
	sfs_mount "$(printf '%s' "$up" | sed 's/[\\:=]/\\&/g'):$(printf '%s' "$lo" | sed 's/[\\:=]/\\&/g')=ro" "$MNT"
	echo z >"$MNT/new"
	rm "$MNT/g"
	run -0 "$SFS" diff "$MNT"
	assert_output $'D /g\nA /new'
}
