#!/usr/bin/env bats
# The metadata of an upper mounted overlay-style with workdir=W lives in
# W/.stackfs (docs/format.md "Where the metadata lives"): the upper U stays a
# clean overlayfs upper (kernel overlayfs shows the same tree over it) and
# OCI layer directory; U's root records W (trusted.stackfs.workdir), so a
# later mount of U, and every command given U, finds the metadata there.
# The workdir's metadata obeys the trust rules of a branch's own; a
# workdir of another upper, a second metadata dir in U, a workdir on
# another mount or nested with a branch are refused, changing nothing.

load helpers/common
load helpers/copyup
load helpers/diff
load helpers/faults

setup_file() {
	sfs_setup_file 1
	modprobe overlay 2>/dev/null || true
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches wd
	MNT2=$BATS_TEST_TMPDIR/ovl
	mkdir -p "$MNT2"
}

teardown() {
	sfs_cleanup
}

# wd_mount [OPTS] [UPPER] [WORKDIR]: stackfs mount -o lowerdir=$LO,
# upperdir=UPPER,workdir=WORKDIR[,OPTS] on $MNT, recorded for cleanup.
wd_mount() {
	local opts="lowerdir=$LO,upperdir=${2:-$UP},workdir=${3:-$WD}${1:+,$1}" out
	sfs_record stackfs "$MNT"
	out=$("$SFS" mount -o "$opts" "$MNT" 2>&1) || fail "stackfs mount -o $opts failed: $out"
	[[ $(sfs_fstype "$MNT") == fuse.stackfs ]] || fail "$MNT is not a stackfs mount"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
}

# refused_mount TEXT... -- MOUNT ARGS: the mount fails with one line on
# stderr naming each TEXT, nothing is mounted, nothing under $T changes.
refused_mount() {
	local want=()
	while [[ $1 != -- ]]; do
		want+=("$1")
		shift
	done
	shift
	sfs_snapshot "$T"
	sfs_record stackfs "$MNT"
	run --separate-stderr "$SFS" mount "$@"
	assert_refused
	((${#stderr_lines[@]} == 1)) || fail "not one line: $stderr"
	for w in "${want[@]}"; do
		[[ $stderr == *"$w"* ]] || fail "the message does not say '$w': $stderr"
	done
	! sfs_is_mounted "$MNT" || fail "$MNT got mounted"
	sfs_assert_unchanged "$T"
}

# The root's record of the workdir, or nothing.
record_of() {
	getfattr --only-values -n trusted.stackfs.workdir "$1" 2>/dev/null
}

# A lower tree with something for each kind of change.
make_lower() {
	mkdir -p "$LO/deldir/sub" "$LO/mvd/sub" "$LO/keepdir"
	echo keep >"$LO/keep"
	echo mod >"$LO/mod"
	echo del >"$LO/del"
	echo chm >"$LO/chm"
	echo x >"$LO/deldir/x"
	echo y >"$LO/deldir/sub/y"
	echo m1 >"$LO/mvd/m1"
	echo m2 >"$LO/mvd/sub/m2"
	echo k >"$LO/keepdir/k"
}

# Every kind of change the upper records, through the view at $1.
change_view() {
	echo new >"$1/newfile"
	mkdir "$1/newdir"
	echo more >>"$1/mod"
	chmod 0600 "$1/chm"
	rm "$1/del"
	rm -rf "$1/deldir"
	mv "$1/mvd" "$1/mvd2"
	echo kk >"$1/keepdir/new"
}

@test "workdir=: the upper gets no .stackfs, the metadata is in the workdir, kernel overlayfs over the upper shows the same tree" {
	grep -qw overlay /proc/filesystems || skip "the kernel has no overlayfs"
	make_lower
	sfs_snapshot "$LO"
	wd_mount whiteout=overlay
	change_view "$MNT"
	cu_view_state "$MNT" >"$BATS_TEST_TMPDIR/stackfs.state"
	grep -q '^./mvd2/sub/m2|f|' "$BATS_TEST_TMPDIR/stackfs.state" || fail "the view lacks mvd2/sub/m2"
	grep -q '^./chm|f|600|' "$BATS_TEST_TMPDIR/stackfs.state" || fail "the view lacks chm 0600"
	! grep -q '^./deldir\|^./del|' "$BATS_TEST_TMPDIR/stackfs.state" || fail "the view shows del or deldir"
	cu_umount
	[[ ! -e $UP/.stackfs ]] || fail "the upper has a .stackfs: $(ls -A "$UP")"
	run -0 find "$UP" -name '.stackfs*'
	assert_output ""
	[[ -f $WD/.stackfs/header && -d $WD/.stackfs/work && -d $WD/.stackfs/index ]] ||
		fail "no metadata in the workdir: $(ls -lA "$WD" "$WD/.stackfs" 2>&1)"
	[[ $(stat -c %a "$WD/.stackfs") == 700 ]] || fail "the workdir's .stackfs is not 0700"
	[[ $(record_of "$UP") == "$WD" ]] || fail "the upper's root does not record the workdir: '$(record_of "$UP")'"
	# kernel overlayfs, a fresh workdir of its own
	mkdir "$T/kwork"
	sfs_record mount "$MNT2"
	# metacopy=on: stackfs's chmod made a metadata-only copy
	# (docs/union.md "Metadata-only copy-up"), which the kernel follows only so
	mount -t overlay overlay -o "lowerdir=$LO,upperdir=$UP,workdir=$T/kwork,redirect_dir=on,index=off,metacopy=on" "$MNT2" ||
		fail "kernel overlayfs refused the upper: $(dmesg | tail -3)"
	run -0 cu_view_state "$MNT2"
	assert_output "$(cat "$BATS_TEST_TMPDIR/stackfs.state")"
	[[ ! -e $MNT2/.stackfs ]] || fail "kernel overlayfs shows a .stackfs"
	umount "$MNT2" || fail "umount of the overlay failed"
	sfs_assert_unchanged "$LO"
}

@test "workdir= with aufs whiteouts: the upper is a clean OCI layer directory (no .stackfs, .wh. files only)" {
	make_lower
	wd_mount
	change_view "$MNT"
	cu_umount
	run -0 bash -c "cd '$UP' && find . | LC_ALL=C sort"
	assert_output "$(printf '%s\n' . ./.wh.del ./.wh.deldir ./.wh.mvd ./chm ./keepdir ./keepdir/new ./mod \
		./mvd2 ./newdir ./newfile)"
}

@test "remount with the same workdir: copied-up files keep their st_ino, copied-up hard links stay linked" {
	make_lower
	echo one >"$LO/h1"
	ln "$LO/h1" "$LO/h2"
	wd_mount
	echo more >>"$MNT/mod"
	echo two >>"$MNT/h1"
	local mod h1 h2
	mod=$(cu_ino "$MNT/mod")
	h1=$(cu_ino "$MNT/h1")
	h2=$(cu_ino "$MNT/h2")
	[[ $h1 == "$h2" ]] || fail "h1 and h2 differ before the remount: $h1 $h2"
	ls "$WD/.stackfs/index" | grep -q . || fail "the hard link went to no index in the workdir"
	cu_umount
	wd_mount
	[[ $(cu_ino "$MNT/mod") == "$mod" ]] || fail "mod changed st_ino: $mod -> $(cu_ino "$MNT/mod")"
	[[ $(cu_ino "$MNT/h1") == "$h1" && $(cu_ino "$MNT/h2") == "$h1" ]] ||
		fail "h1/h2 changed st_ino: $h1 -> $(cu_ino "$MNT/h1") $(cu_ino "$MNT/h2")"
	run -0 cat "$MNT/h2"
	assert_output $'one\ntwo'
	[[ $(stat -c %h "$MNT/h1") == 2 ]] || fail "h1 has $(stat -c %h "$MNT/h1") links"
	cu_umount
	[[ ! -e $UP/.stackfs ]] || fail "the upper got a .stackfs"
}

@test "a mount of the upper without workdir= finds its metadata where its root records it" {
	make_lower
	echo one >"$LO/h1"
	ln "$LO/h1" "$LO/h2"
	wd_mount
	echo two >>"$MNT/h1"
	local h1
	h1=$(cu_ino "$MNT/h1")
	cu_umount
	cu_mount "" "$UP:$LO"
	[[ $(cu_ino "$MNT/h2") == "$h1" ]] || fail "h2 is not the copy: $(cu_ino "$MNT/h2") (want $h1)"
	run -0 cat "$MNT/h2"
	assert_output $'one\ntwo'
	run -0 "$SFS" status --json "$MNT"
	run -0 python3 -c 'import json,sys; b=json.loads(sys.argv[1])["branches"]; print(b[0]["workdir"], b[1]["workdir"])' "$output"
	assert_output "$WD None"
	cu_umount
	[[ ! -e $UP/.stackfs ]] || fail "a mount without workdir= made $UP/.stackfs"
	# overlay-style without workdir= too
	sfs_record stackfs "$MNT"
	run -0 "$SFS" mount -o "lowerdir=$LO,upperdir=$UP" "$MNT"
	[[ $(cu_ino "$MNT/h2") == "$h1" ]] || fail "h2 is not the copy without workdir="
	cu_umount
	[[ ! -e $UP/.stackfs ]] || fail "a mount without workdir= made $UP/.stackfs"
}

@test "a recorded workdir that is gone, or a corrupt record: the mount is refused with the way out, nothing changes" {
	wd_mount
	touch "$MNT/f"
	cu_umount
	mv "$WD" "$T/wd.moved"
	refused_mount "$WD" "gone" "workdir=" "setfattr -x trusted.stackfs.workdir" -- "$UP:$LO" "$MNT"
	# naming the moved workdir goes on with its metadata, and records it
	wd_mount "" "$UP" "$T/wd.moved"
	[[ -e $MNT/f ]] || fail "f is gone"
	cu_umount
	[[ $(record_of "$UP") == "$T/wd.moved" ]] || fail "the record is '$(record_of "$UP")'"
	# a record that is no absolute path: damage, refused, saying how to
	# write it again (94-damage-records walks its bytes)
	setfattr -n trusted.stackfs.workdir -v not/absolute "$UP"
	refused_mount "trusted.stackfs.workdir" "corrupt" "fsck --repair --workdir" -- "$UP:$LO" "$MNT"
	refused_mount "trusted.stackfs.workdir" "corrupt" "fsck --repair --workdir" -- \
		-o "lowerdir=$LO,upperdir=$UP,workdir=$T/wd.moved" "$MNT"
}

@test "a workdir other than the recorded one starts afresh there, with a warning naming the old one" {
	wd_mount
	cu_umount
	mkdir "$T/wd2"
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFS" mount -o "lowerdir=$LO,upperdir=$UP,workdir=$T/wd2" "$MNT"
	[[ $stderr == *"warning"*"$WD"*"$T/wd2"* ]] || fail "no warning naming both workdirs: $stderr"
	cu_umount
	[[ $(record_of "$UP") == "$T/wd2" && -f $T/wd2/.stackfs/header ]] || fail "not recorded, or no metadata in wd2"
}

@test "the workdir's metadata must be the daemon user's alone: another owner or a group-writable one is refused" {
	wd_mount
	cu_umount
	chown nobody "$WD/.stackfs"
	refused_mount "$WD" ".stackfs is owned by uid 65534" "refused" -- \
		-o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	refused_mount "$WD" ".stackfs is owned by uid 65534" -- "$UP:$LO" "$MNT"
	chown root "$WD/.stackfs"
	chmod 0770 "$WD/.stackfs"
	refused_mount "$WD" ".stackfs is writable by its group" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	chmod 0700 "$WD/.stackfs"
	chmod 0666 "$WD/.stackfs/header"
	refused_mount ".stackfs/header is writable by" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	chmod 0600 "$WD/.stackfs/header"
	ln -s /etc "$WD/.stackfs/lowers.tmp"
	refused_mount ".stackfs/lowers.tmp is a symlink" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	rm "$WD/.stackfs/lowers.tmp"
	mv "$WD/.stackfs" "$T/meta.real"
	ln -s "$T/meta.real" "$WD/.stackfs"
	refused_mount ".stackfs is not a directory" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
}

@test "a workdir other users can write draws a warning; root's 0700 workdir is fine" {
	chmod 0700 "$WD"
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFS" mount -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	[[ $stderr != *workdir* ]] || fail "a warning about root's 0700 workdir: $stderr"
	cu_umount
	chmod 0777 "$WD"
	run -0 --separate-stderr "$SFS" mount -o "lowerdir=$LO,upperdir=$UP,workdir=$WD" "$MNT"
	[[ $stderr == *"warning"*"workdir holding its metadata is writable by every user"* ]] ||
		fail "no warning: $stderr"
	cu_umount
}

@test "refused: the workdir of another upper, an upper with a .stackfs of its own, nested workdirs, a workdir on another mount" {
	wd_mount
	cu_umount
	mkdir "$T/up2"
	refused_mount "$WD" "holds the metadata of another branch" -- \
		-o "lowerdir=$LO,upperdir=$T/up2,workdir=$WD" "$MNT"
	# an upper mounted the BRANCHES way has its own .stackfs
	mkdir "$T/up3" "$T/wd3"
	cu_mount "" "$T/up3:$LO"
	cu_umount
	refused_mount "metadata directory of its own" "one place" -- \
		-o "lowerdir=$LO,upperdir=$T/up3,workdir=$T/wd3" "$MNT"
	mkdir "$UP/inside" "$LO/inlow"
	refused_mount "nested" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$UP/inside" "$MNT"
	refused_mount "nested" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$LO/inlow" "$MNT"
	refused_mount "nested" -- -o "lowerdir=$LO,upperdir=$UP,workdir=$T" "$MNT"
	# the same filesystem through another mount: renames into the upper fail
	mkdir "$T/wdb" "$BATS_TEST_TMPDIR/bind"
	sfs_record mount "$BATS_TEST_TMPDIR/bind"
	mount --bind "$T/wdb" "$BATS_TEST_TMPDIR/bind"
	refused_mount "not on the mount of the branch" -- \
		-o "lowerdir=$LO,upperdir=$T/up2,workdir=$BATS_TEST_TMPDIR/bind" "$MNT"
}

@test "fsck finds the upper's metadata in the workdir its root records (--workdir names one): reports and repairs it there" {
	wd_mount
	echo new >"$MNT/f"
	cu_umount
	run -0 "$SFS" fsck "$UP"
	assert_output --partial "the metadata directory is in the workdir $WD"
	assert_output --partial "$UP: clean"
	run -0 "$SFS" fsck --json --workdir "$WD" "$UP"
	run -0 python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j["workdir"], j["found"], j["exit"])' "$output"
	assert_output "$WD 0 0"
	# damage in the workdir's .stackfs: found there, repaired there
	touch "$WD/.stackfs/work/leftover"
	run -4 "$SFS" fsck "$UP"
	assert_output --partial "/.stackfs/work/leftover"
	run -1 "$SFS" fsck --repair "$UP"
	[[ ! -e $WD/.stackfs/work/leftover ]] || fail "the leftover is still in the workdir"
	run -0 "$SFS" fsck "$UP"
	# an untrusted one is rebuilt in the workdir, as the mount's message says
	chown nobody "$WD/.stackfs"
	run -1 "$SFS" fsck --repair "$UP"
	assert_output --partial "META_UNTRUSTED"
	ls -d "$WD"/.stackfs.untrusted.* >/dev/null || fail "the old one is not kept in the workdir: $(ls -A "$WD")"
	[[ ! -e $UP/.stackfs && $(stat -c %U "$WD/.stackfs") == root ]] || fail "rebuilt in the wrong place"
	wd_mount
	cu_umount
	[[ ! -e $UP/.stackfs ]] || fail "the upper got a .stackfs"
}

@test "fsck of a mounted upper sees its lock in the workdir; --repair is refused; a wrong --workdir is refused" {
	wd_mount
	run -0 "$SFS" fsck "$UP"
	assert_output --partial "in use by a mounted stackfs (the stackfs mount on $MNT"
	run -8 "$SFS" fsck --repair "$UP"
	assert_output --partial "in use"
	cu_umount
	mkdir "$T/other"
	run -8 --separate-stderr "$SFS" fsck --workdir "$UP/.." "$UP"
	[[ $stderr == *nested* ]] || fail "$stderr"
	run -8 --separate-stderr "$SFS" fsck "$UP" --workdir
	[[ $stderr == *"--workdir needs a directory"* ]] || fail "$stderr"
}

@test "diff of the upper given its lowers, of the upper alone and of the mount: the changes, hard links shown through the workdir's index" {
	make_lower
	echo one >"$LO/h1"
	ln "$LO/h1" "$LO/h2"
	wd_mount
	change_view "$MNT"
	echo two >>"$MNT/h1"
	local want
	want=$(printf '%s\n' "C /chm" "D /del" "D /deldir" "C /h1" "C /h2" "A /keepdir/new" "C /mod" "D /mvd" \
		"A /mvd2" "A /newdir" "A /newfile")
	run -0 "$SFS" diff "$MNT"
	assert_output "$want"
	run -2 --separate-stderr "$SFS" diff --workdir "$WD" "$MNT"
	[[ $stderr == *"--workdir is for a branch directory"* ]] || fail "$stderr"
	cu_umount
	run -0 "$SFS" diff --lower "$LO" "$UP"
	assert_output "$want"
	run -0 "$SFS" diff "$UP"
	assert_output "$want"
	run -0 "$SFS" diff --workdir "$WD" "$UP"
	assert_output "$want"
	run -1 --separate-stderr "$SFS" diff --workdir "$T" "$UP"
	[[ $stderr == *nested* ]] || fail "$stderr"
}

@test "branch list shows the workdir; branch mode ro and back to rw keeps the metadata in it; branch remove sees the upper's changes" {
	wd_mount
	echo x >"$MNT/x"
	run -0 "$SFS" branch list --json "$MNT"
	run -0 python3 -c 'import json,sys; v=json.loads(sys.argv[1]); print(v[0]["workdir"], v[1]["workdir"])' "$output"
	assert_output "$WD None"
	run -0 "$SFS" branch mode "$MNT" "$UP" ro
	run -0 "$SFS" branch mode "$MNT" "$UP" rw
	echo y >"$MNT/y"
	[[ -f $UP/y && ! -e $UP/.stackfs ]] || fail "y not in the upper, or a .stackfs made there"
	run -1 --separate-stderr "$SFS" branch remove "$MNT" "$UP"
	[[ $stderr == *"unmerged change"* ]] || fail "$stderr"
	cu_umount
}

@test "commit of an upper whose metadata is in its workdir: the lower shows the union, the upper is emptied and stays clean, the workdir's journal and index go" {
	dc_lower "$LO"
	wd_mount whiteout=overlay
	dc_change "$MNT"                         # h1 written: h2 shows it (the index)
	dc_state "$MNT" >"$BATS_TEST_TMPDIR/before"
	cu_umount
	ls "$WD/.stackfs/index" | grep -q . || fail "no index entry in the workdir"
	run -0 "$SFS" commit "$UP" --into "$LO"
	[[ -z $(ls -A "$UP") ]] || fail "the upper is not empty: $(ls -A "$UP")"
	[[ ! -e $WD/.stackfs/commit && -z $(ls -A "$WD/.stackfs/index") ]] ||
		fail "the journal or index entries are left: $(ls -AR "$WD/.stackfs")"
	[[ ! -e $LO/.stackfs ]] || fail "the lower branch kept a .stackfs"
	[[ $(record_of "$UP") == "$WD" ]] || fail "the record went"
	cu_mount "" "$LO=ro"
	dc_assert_state "$BATS_TEST_TMPDIR/before" "$MNT"
	run -0 cat "$MNT/h2"
	assert_output $'h\nH'
	cu_umount
	wd_mount whiteout=overlay
	dc_assert_state "$BATS_TEST_TMPDIR/before" "$MNT"
	cu_umount
	run -0 "$SFS" diff "$UP"
	assert_output ""
}

# wdc_fresh: the branches made afresh through a workdir= mount.
wdc_fresh() {
	rm -rf "$UP" "$LO" "$WD"
	mkdir -p "$UP" "$LO" "$WD"
	dc_lower "$LO"
	wd_mount
	dc_change "$MNT"
	cu_umount
}

# wdc_commit N ACTION: the commit with the fault shim, killed (kill)
# before its call N, or counting (0 count). Its exit status.
wdc_commit() {
	local rc=0
	echo "mut $1 $2" >"$BATS_TEST_TMPDIR/fi.ctl"
	: >"$BATS_TEST_TMPDIR/fi.log"
	LD_PRELOAD=$FI_SO SFS_FI_CTL=$BATS_TEST_TMPDIR/fi.ctl SFS_FI_LOG=$BATS_TEST_TMPDIR/fi.log \
		SFS_FI_ROOTS=$T SFS_FI_ARM=1 "$SFS" commit "$UP" --into "$LO" >"$BATS_TEST_TMPDIR/out" 2>&1 ||
		rc=$?
	return "$rc"
}

@test "a commit of such an upper killed part way: neither branch mounts, fsck --repair of the lower (through the record) or a new commit recovers the union" {
	fi_require_plain_build
	sfs_require_tool faultinject.so
	local calls p rc i=0 out jnl=0
	wdc_fresh
	wdc_commit 0 count || fail "the counting commit failed: $(cat "$BATS_TEST_TMPDIR/out")"
	calls=$(grep -c '^[0-9]' "$BATS_TEST_TMPDIR/fi.log")
	((calls > 6)) || fail "the commit made only $calls counted calls"
	for p in $((calls / 3)) $((calls / 2)) $((calls * 2 / 3)) $((calls - 1)); do
		wdc_fresh
		cu_mount "" "$UP:$LO"
		dc_state "$MNT" >"$BATS_TEST_TMPDIR/before"
		cu_umount
		rc=0
		wdc_commit "$p" kill || rc=$?
		((rc == 137)) || fail "point $p: the commit was not killed (exit $rc): $(cat "$BATS_TEST_TMPDIR/out")"
		[[ ! -e $UP/.stackfs ]] || fail "point $p: the journal went into the upper"
		if [[ -e $WD/.stackfs/commit ]]; then
			jnl=$((jnl + 1))
			sfs_record stackfs "$MNT"
			run -1 "$SFS" mount "$UP:$LO" "$MNT"
			assert_output --partial "unfinished stackfs commit"
			rc=0
			out=$("$SFS" fsck "$UP" 2>&1) || rc=$?
			((rc & 4)) && [[ $out == *COMMIT_UNFINISHED* ]] || fail "point $p: fsck of the upper: $out"
		fi
		if ((i++ % 2)); then
			run "$SFS" commit "$UP" --into "$LO"
			((status == 0)) || fail "point $p: the second commit: $output"
		else
			run "$SFS" fsck --repair "$LO"
			((status <= 1)) || fail "point $p: fsck --repair of the lower: $output"
		fi
		[[ ! -e $WD/.stackfs/commit && ! -e $LO/.stackfs/commit-from ]] ||
			fail "point $p: the journal or the marker is left"
		cu_mount "" "$UP:$LO"
		dc_assert_state "$BATS_TEST_TMPDIR/before" "$MNT"
		cu_umount
	done
	((jnl >= 2)) || fail "only $jnl of the points left a journal in the workdir"
}
