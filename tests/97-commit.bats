#!/usr/bin/env bats
# stackfs commit RW --into LOWER: the lower branch alone (and the emptied
# rw branch over it) shows afterwards exactly what the union of the two
# showed: names, types, modes, owners, sizes, contents, xattrs and ACLs,
# ns mtimes, hard links, holes. The tree is made through a real mount in
# both whiteout styles. Also: --keep, three branches, two filesystems,
# refusal while a branch is mounted, an error part way, --json, usage,
# the progress line.

load helpers/common
load helpers/diff

setup_file() {
	sfs_setup_file 2
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2 other
	dc_lower "$LO"
}

teardown() {
	[[ -n ${IMMUTABLE:-} ]] && chattr -i "$IMMUTABLE" 2>/dev/null
	sfs_cleanup
}

# Makes the changes through a mount of "$1" (default UP:LO) in style $2,
# records the view in $BATS_TEST_TMPDIR/before and unmounts.
change_and_record() {
	local branches=${1:-$UP:$LO} style=${2:-wh} extra=${3:+,$3}
	sfs_mount "$branches" "$MNT" "$(dc_style_opt "$style")$extra"
	dc_change "$MNT"
	dc_state "$MNT" >"$BATS_TEST_TMPDIR/before"
	[[ -s $BATS_TEST_TMPDIR/before ]] || fail "no listing of the view"
	"$SFS" umount "$MNT" || fail "umount failed"
}

# The view of BRANCHES is what was recorded.
assert_view() {
	sfs_mount "$1" "$MNT"
	dc_assert_state "$BATS_TEST_TMPDIR/before" "$MNT"
	"$SFS" umount "$MNT" || fail "umount failed"
}

# UP holds nothing but .stackfs, whose work/ and index/ are empty.
assert_emptied() {
	local left
	left=$(cd "$UP" && find . -mindepth 1 ! -path './.stackfs' ! -path './.stackfs/*')
	[[ -z $left ]] || fail "left in $UP: $left"
	[[ -z $(ls -A "$UP/.stackfs/work") && -z $(ls -A "$UP/.stackfs/index") ]] ||
		fail "work/ or index/ not empty: $(ls -A "$UP/.stackfs/work" "$UP/.stackfs/index")"
	[[ -f $UP/.stackfs/header ]] || fail ".stackfs/header is gone"
}

# UP is as its snapshot had it, but for the times of .stackfs itself (a
# commit writes its journal there and removes it).
assert_rw_unchanged() {
	local snap d
	snap="$BATS_TEST_TMPDIR/snap.$(echo "$UP" | md5sum | cut -c1-12)"
	if ! d=$(diff -u <(grep -v '^\./\.stackfs|' "$snap") <(sfs_tree_state "$UP" | grep -v '^\./\.stackfs|')); then
		fail "$(printf '%s changed:\n%s' "$UP" "$d")"
	fi
	[[ ! -e $UP/.stackfs/commit ]] || fail "the journal was left in $UP/.stackfs"
}

# No private attribute of the union was copied into the lower branch.
assert_no_private_xattrs() {
	local found
	found=$(getfattr -R -P -d -m '^(trusted|user)\.(stackfs|overlay)\.' "$1" 2>/dev/null || true)
	[[ -z $found ]] || fail "private attributes in $1: $found"
}

check_commit() {
	local style=$1
	change_and_record "$UP:$LO" "$style"
	run -0 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "12 added, 10 changed, 6 deleted"
	assert_emptied
	assert_no_private_xattrs "$LO"
	# nothing of the commit's own is left behind
	[[ -z $(find "$LO" -name '.wh.*') ]] || fail "left in $LO: $(find "$LO" -name '.wh.*')"
	assert_view "$LO=ro"
	assert_view "$UP:$LO"
	run -0 "$SFS" diff "$UP"
	assert_output ""
}

@test "commit: the lower branch alone shows the union's tree, the rw branch is emptied (whiteout=wh)" {
	check_commit wh
}

@test "commit: the lower branch alone shows the union's tree, the rw branch is emptied (whiteout=overlay)" {
	check_commit overlay
}

@test "regression: commit of a device 0:0 made through the view makes a marked device below; a removed marked lower one goes" {
	mknod "$LO/ldev" c 0 0
	setfattr -h -n trusted.stackfs.device -v y "$LO/ldev"
	sfs_mount "$UP:$LO" "$MNT"
	mknod "$MNT/dev" c 0 0
	rm "$MNT/ldev"
	"$SFS" umount "$MNT" || fail "umount failed"
	run -0 "$SFS" commit "$UP" --into "$LO"
	[[ -c $LO/dev && ! -e $LO/ldev ]] || fail "lower branch after the commit: $(ls -l "$LO")"
	getfattr -h -n trusted.stackfs.device "$LO/dev" >/dev/null || fail "no device marker on $LO/dev"
	sfs_mount "$LO=ro" "$MNT"
	run -0 stat -c '%F %t:%T' "$MNT/dev"
	assert_output "character special file 0:0"
	[[ ! -e $MNT/ldev ]] || fail "ldev shows after the commit"
}

@test "commit --keep applies the changes and leaves the rw branch as it was" {
	# metacopy=off: a commit brings a metacopy's data into the rw file
	# first (docs/union.md "Metadata-only copy-up", a limit not yet lifted)
	change_and_record "$UP:$LO" wh metacopy=off
	sfs_snapshot "$UP"
	run -0 "$SFS" commit --keep "$UP" --into "$LO"
	assert_output --partial "kept"
	assert_rw_unchanged
	assert_view "$LO=ro"
}

@test "commit into a branch with one below it keeps that branch hidden where it was" {
	mkdir -p "$LO2/d3" "$LO2/d1" "$LO2/mv/k" "$LO2/deep/er"
	echo l2 >"$LO2/d3/l2"      # under an opaque directory: stays hidden
	echo l2 >"$LO2/c"          # deleted through the view: a whiteout stays
	echo l2 >"$LO2/d1/x"       # likewise, in a merged directory
	echo l2 >"$LO2/d1/l2"      # shows through
	echo l2 >"$LO2/mv/k/l2"    # moves with mv (a redirect)
	echo l2 >"$LO2/deep/er/f"  # gets a sibling through the view
	change_and_record "$UP:$LO:$LO2"
	[[ $(cat "$BATS_TEST_TMPDIR/before") == *./moved/k/l2* ]] || fail "mv did not take LO2's part"
	run -0 "$SFS" commit "$UP" --into "$LO"
	assert_emptied
	assert_view "$LO=ro:$LO2=ro"
	assert_view "$UP:$LO:$LO2"
}

@test "commit refuses a lower branch that is not the one just below" {
	change_and_record "$UP:$LO:$LO2"
	sfs_snapshot "$LO2"
	sfs_snapshot "$UP"
	run -1 "$SFS" commit "$UP" --into "$LO2"
	assert_output --partial "not the branch just below"
	sfs_assert_unchanged "$LO2"
	sfs_assert_unchanged "$UP"
}

@test "commit across two filesystems (rw branch on one, lower branch on another)" {
	local lo=$SFS_IMG2/t$BATS_TEST_NUMBER-lower
	rm -rf "$lo"
	mkdir -p "$lo"
	dc_lower "$lo"
	LO=$lo
	change_and_record "$UP:$LO"
	run -0 "$SFS" commit "$UP" --into "$LO"
	assert_emptied
	assert_view "$LO=ro"
}

@test "commit is refused while the rw branch is mounted: nothing changes" {
	sfs_mount "$UP:$LO" "$MNT"
	echo new >"$MNT/new"
	rm "$MNT/a"
	sfs_snapshot "$UP"
	sfs_snapshot "$LO"
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "$UP: branch is in use by a mounted stackfs"
	run -1 "$SFS" commit --json "$UP" --into "$LO"
	local json="{${output#*\{}"
	[[ $(jq -r '"\(.exit) \(.emptied) \(.error)"' <<<"$json") == "1 false $UP: branch is in use by a mounted stackfs"* ]] ||
		fail "JSON: $output"
	sfs_assert_unchanged "$UP"
	sfs_assert_unchanged "$LO"
	[[ -f $MNT/new && ! -e $MNT/a ]] || fail "the mount changed"
}

@test "commit is refused while the lower branch is a branch of another mount: nothing changes" {
	sfs_mount "$UP:$LO" "$MNT"
	echo new >"$MNT/new"
	"$SFS" umount "$MNT"
	# LO read-only under another rw branch: no lock, found by the daemon
	sfs_mount "$OTHER:$LO" "$MNT"
	sfs_snapshot "$UP"
	sfs_snapshot "$LO"
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "$LO: branch is in use by a mounted stackfs (stackfsd pid"
	sfs_assert_unchanged "$UP"
	sfs_assert_unchanged "$LO"
	"$SFS" umount "$MNT"
	# and a relative path in the daemon's command line changes nothing
	(cd "$T" && "$SFS" mount other:lower "$MNT") || fail "relative mount failed"
	sfs_record stackfs "$MNT"
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "in use by a mounted stackfs"
	sfs_assert_unchanged "$LO"
}

@test "an error part way names the path and the errno text, says what was done, keeps the rw branch" {
	sfs_require_cmd chattr lsattr
	change_and_record "$UP:$LO" wh metacopy=off # as above (--keep)
	sfs_snapshot "$UP"
	# d1 (its mode changed, d1/x deleted) is immutable in the lower branch
	chattr +i "$LO/d1" || skip "chattr +i not supported here"
	IMMUTABLE=$LO/d1
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial "stackfs: commit: /d1: "
	assert_output --partial ": Operation not permitted"
	assert_output --regexp "stopped after [0-9]+ of [0-9]+ entries and undone: the union of $UP over $LO shows what it showed before"
	assert_output --partial "$UP was left as it was"
	refute_output --regexp "[Rr]emove|[Dd]elete"
	assert_rw_unchanged
	chattr -i "$LO/d1"
	IMMUTABLE=
	assert_view "$UP:$LO"
	# the lower directory moved aside for /moved went back to /mv
	[[ -f $LO/mv/k/z && -z $(find "$LO" -maxdepth 1 -name '.wh.*') ]] ||
		fail "a moved directory was left aside: $(ls -A "$LO")"
}

@test "commit --json: one object with the counts and the changes; diff agrees" {
	change_and_record
	local d
	d=$("$SFS" diff --json "$UP")
	run -0 "$SFS" commit --json "$UP" --into "$LO"
	jq -e . <<<"$output" >/dev/null || fail "not JSON: $output"
	[[ $(jq -r '.exit, .error, .emptied, .added, .changed, .deleted' <<<"$output" | tr '\n' ' ') == "0 null true 12 10 6 " ]] ||
		fail "$output"
	[[ "$(jq -c '[.changes[] | {path, change}]' <<<"$output")" == "$(jq -c '[.[] | {path, change}]' <<<"$d")" ]] ||
		fail "changes differ from diff --json: $output / $d"
}

@test "commit: hard links stay links, holes stay holes, big xattrs, ACLs and ns times survive" {
	change_and_record
	run -0 "$SFS" commit "$UP" --into "$LO"
	[[ $(stat -c %i "$LO/new") == "$(stat -c %i "$LO/newlink")" ]] || fail "new/newlink not linked"
	[[ $(stat -c %i "$LO/h1") == "$(stat -c %i "$LO/h2")" ]] || fail "h1/h2 not linked"
	[[ $(cat "$LO/h2") == $'h\nH' ]] || fail "h2: $(cat "$LO/h2")"
	[[ $(stat -c %i "$LO/g1") == "$(stat -c %i "$LO/g2")" ]] || fail "g1/g2 not linked"
	(($(stat -c %b "$LO/sparse") < 64)) || fail "holes filled: $(stat -c %b "$LO/sparse") blocks"
	[[ $(stat -c %s "$LO/sparse") == 8388608 ]] || fail "size"
	[[ $(getfacl -cp "$LO/b" 2>/dev/null) == *user:nobody:r--* ]] || fail "ACL lost: $(getfacl -cp "$LO/b")"
	[[ $(stat -c %y "$LO/new") == "2001-02-03 04:05:06.123456789"* ]] || fail "mtime: $(stat -c %y "$LO/new")"
	[[ $(getfattr --only-values -n user.big "$LO/nd/deep/q" | wc -c) == 3000 ]] || fail "user.big"
	[[ $(stat -c %a "$LO/d1") == 700 ]] || fail "d1 mode: $(stat -c %a "$LO/d1")"
	[[ -p $LO/fifo && -L $LO/newsym && -d $LO/td && -f $LO/tc ]] || fail "types"
	[[ ! -e $LO/mv && -f $LO/moved/k/z && -f $LO/moved/k/w && ! -e $LO/moved/top ]] ||
		fail "the moved directory"
	[[ ! -e $LO/d3/m && $(cat "$LO/d3/keep") == keep2 ]] || fail "the opaque directory"
}

@test "commit shows a progress line on a terminal, none otherwise" {
	sfs_require_cmd script
	change_and_record
	local out=$BATS_TEST_TMPDIR/tty
	script -qec "'$SFS' commit --keep '$UP' --into '$LO' 2>&1 >/dev/null" "$out" >/dev/null ||
		fail "commit on a terminal failed: $(cat "$out")"
	grep -q 'commit: [0-9]*/[0-9]* entries' "$out" || fail "no progress line: $(cat -v "$out")"
	run -0 "$SFS" commit --keep "$UP" --into "$LO"
	refute_output --partial "entries:"
}

@test "commit usage errors exit 2" {
	run -2 "$SFS" commit
	assert_output --partial "usage: stackfs commit"
	run -2 "$SFS" commit "$UP"
	assert_output --partial "--into"
	run -2 "$SFS" commit "$UP" --into
	assert_output --partial "--into needs a directory"
	run -2 "$SFS" commit "$UP" "$LO" --into "$LO"
	assert_output --partial "unexpected argument"
	run -2 "$SFS" commit --frob "$UP" --into "$LO"
	assert_output --partial "unknown option"
	run -2 "$SFS" commit "$UP" --into "$UP"
	assert_output --partial "the same directory"
	mkdir -p "$UP/inner"
	run -1 "$SFS" commit "$UP" --into "$UP/inner"
	assert_output --partial "nested"
	run -1 "$SFS" commit "$UP" --into "$T/missing"
	assert_output --partial "$T/missing: No such file or directory"
	run -0 "$SFS" commit --help
	assert_output --partial "--keep"
}

@test "commit --json: a path with bytes that are not UTF-8 comes back exact (\udcXX, surrogateescape)" {
	local name=$'odd\xff\xc3('
	sfs_mount "$UP:$LO" "$MNT"
	echo x >"$MNT/$name"
	"$SFS" umount "$MNT" || fail "umount failed"
	"$SFS" commit --json "$UP" --into "$LO" >"$BATS_TEST_TMPDIR/out.json" || fail "commit failed"
	run -0 python3 -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
print([c["path"].encode("utf-8", "surrogateescape") for c in d["changes"]])' "$BATS_TEST_TMPDIR/out.json"
	assert_output --partial "b'/odd\\xff\\xc3('"
	[[ -f $LO/$name ]] || fail "not committed"
}
