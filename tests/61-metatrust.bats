#!/usr/bin/env bats
# Trust of the metadata directory (issue 13, item 1): a user who owns the
# root of a rw branch must not get root through the union.
#  - a .stackfs that is not the daemon's user's alone (another owner, an
#    entry writable by others, a symlink) is refused at mount, naming it
#    and its owner; fsck reports it and --repair rebuilds it, keeping the
#    records (inode numbers stay);
#  - copy-up gives owner, mode, set-ID bits, xattrs and times to the copy
#    through its own fd and places that inode, so even a staging area
#    someone else could write never gets their file stamped or placed;
#  - a rw branch root that another user can write draws a warning.

load helpers/common
load helpers/passthrough

setup_file() {
	sfs_setup_file 1
	sfs_require_tool swapper
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd setpriv
	getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
		skip "needs the user nobody and the group nogroup"
	SWAP=$(sfs_tools_for_others swapper)/swapper || return 1
	SWAPPER_PID=
	sfs_setup_branches
	# the branch root is nobody's, as /home/alice/upper would be alice's
	chown nobody:nogroup "$UP"
	chmod 0755 "$T"
	mkdir -p "$LO/usr/bin"
	# a set-user-ID root tool (1 MiB: its copy takes a while)
	head -c 1048576 /dev/zero | tr '\0' g >"$LO/usr/bin/sutool"
	chmod 4755 "$LO/usr/bin/sutool"
	GENUINE=$(sha256sum <"$LO/usr/bin/sutool")
	# the attacker's own "binary"
	echo evil >"$UP/payload"
	chown nobody:nogroup "$UP/payload"
	EVIL=$(sha256sum <"$UP/payload")
}

teardown() {
	stop_swapper
	sfs_cleanup
}

# start_swapper DIR: nobody's swap loop on DIR (staged "cu." names get
# the payload), in the background for at most 60 s.
start_swapper() {
	pt_as_nobody_in "$1" "$SWAP" . cu. ../../payload 60 >"$BATS_TEST_TMPDIR/swapper.out" 2>&1 &
	SWAPPER_PID=$!
	local i
	for i in $(seq 50); do
		grep -q . "$BATS_TEST_TMPDIR/swapper.out" && return 0
		sleep 0.1
	done
	echo "swapper did not start" >&2
	return 1
}

stop_swapper() {
	[[ -n ${SWAPPER_PID:-} ]] || return 0
	# none left when its 60 s ran out first (a slow, loaded machine)
	pkill -TERM -u nobody -x swapper 2>/dev/null || true
	wait "$SWAPPER_PID" 2>/dev/null || true
	SWAPPER_PID=
}

# Nothing of nobody's payload is root's or set-ID anywhere in the branch,
# and every set-ID file there is the genuine tool.
assert_nothing_stamped() {
	local f
	while IFS= read -r -d '' f; do
		[[ $(sha256sum <"$f") != "$EVIL" ]] || fail "the attacker's file became root's: $f"
	done < <(find "$UP" -xdev -type f -user root -print0)
	while IFS= read -r -d '' f; do
		[[ $(sha256sum <"$f") == "$GENUINE" ]] || fail "a set-ID file that is not the tool: $f"
	done < <(find "$UP" -xdev -type f -perm /6000 -print0)
}

@test "a .stackfs the branch root's owner made before the mount is refused, naming it and its owner; her swap loop gets nothing stamped" {
	# the attack of the issue: her own metadata dir (with records of the
	# documented format: copied here from a scratch branch, as she could
	# write them), a loop swapping every staged copy for her file, then
	# root touches a set-ID tool
	mkdir "$T/scratch"
	sfs_mount "$T/scratch=rw" "$MNT"
	"$SFS" umount "$MNT"
	pt_as_nobody_in "$UP" mkdir -p .stackfs/work .stackfs/index
	cp "$T"/scratch/.stackfs/{header,registry,inomap} "$UP/.stackfs/"
	chown -R nobody:nogroup "$UP/.stackfs"
	sfs_snapshot "$UP/.stackfs"
	start_swapper "$UP/.stackfs/work"
	run "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
	if ((status == 0)); then
		sfs_record stackfs "$MNT"
		touch "$MNT/usr/bin/sutool" || true
		sleep 0.5
	fi
	stop_swapper
	assert_nothing_stamped
	((status != 0)) || fail "the mount accepted a .stackfs owned by nobody"
	[[ $output == *'.stackfs is owned by uid 65534 (nobody), not by uid 0 (root)'* ]] ||
		fail "the refusal does not name the directory and its owner: $output"
	[[ $output == *"$UP"* || $output == *'#0'* ]] || fail "the refusal does not name the branch: $output"
	# nothing on disk changed in her directory
	sfs_assert_unchanged "$UP/.stackfs"
}

@test "entries of .stackfs that are not root's alone are each refused at mount and reported by fsck" {
	local how
	for how in owner gwrite symlink; do
		rm -rf "$UP/.stackfs"
		sfs_mount "$UP=rw:$LO=ro" "$MNT"
		"$SFS" umount "$MNT"
		case $how in
		owner) chown nobody "$UP/.stackfs/inomap"; want='.stackfs/inomap is owned by uid 65534 (nobody)' ;;
		gwrite) chmod 0770 "$UP/.stackfs/work"; want='.stackfs/work is writable by its group (mode 0770)' ;;
		symlink) ln -s /etc "$UP/.stackfs/lowers.tmp"; want='.stackfs/lowers.tmp is a symlink' ;;
		esac
		run "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
		((status != 0)) || { sfs_record stackfs "$MNT"; fail "$how: mount accepted it"; }
		[[ $output == *"$want"* ]] || fail "$how: the refusal does not say '$want': $output"
		run "$SFS" fsck "$UP"
		((status == 4)) || fail "$how: fsck exit $status (expected 4): $output"
		[[ $output == *META_UNTRUSTED* && $output == *"$want"* ]] ||
			fail "$how: fsck does not report it: $output"
	done
}

@test "fsck --repair rebuilds a .stackfs given to another user: records kept (st_ino stays), the old one kept beside, the staging area closed to her" {
	mkdir -p "$LO/d"
	echo a >"$LO/d/a"
	sfs_mount "$UP=rw:$LO=ro" "$MNT"
	echo b >>"$MNT/d/a" # a copy-up: an origin record and inode numbers
	local ino_a ino_d
	ino_a=$(stat -c %i "$MNT/d/a")
	ino_d=$(stat -c %i "$MNT/d")
	"$SFS" umount "$MNT"
	# the usual accident: chown -R of the whole upper to its user
	chown -R nobody:nogroup "$UP/.stackfs"
	run "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
	((status != 0)) || { sfs_record stackfs "$MNT"; fail "mount accepted it"; }
	run "$SFS" fsck --repair "$UP"
	((status == 1)) || fail "fsck --repair exit $status (expected 1, fixed): $output"
	[[ $output == *META_UNTRUSTED* && $output == *fixed* ]] || fail "$output"
	run -0 "$SFS" fsck "$UP"
	[[ $(stat -c %U "$UP/.stackfs") == root ]] || fail "the rebuilt .stackfs is not root's"
	compgen -G "$UP/.stackfs.untrusted.*" >/dev/null || fail "the old directory was not kept"
	sfs_mount "$UP=rw:$LO=ro" "$MNT"
	[[ $(stat -c %i "$MNT/d/a") == "$ino_a" ]] || fail "st_ino of d/a changed"
	[[ $(stat -c %i "$MNT/d") == "$ino_d" ]] || fail "st_ino of d changed"
	[[ $(cat "$MNT/d/a") == $'a\nb' ]]
	# the attacker cannot even watch the staging area now
	run pt_as_nobody_in "$UP" "$SWAP" .stackfs/work cu. "$UP/payload" 1
	[[ $output == EACCES ]] || fail "nobody could watch .stackfs/work: $output"
}

@test "fsck --repair's rebuild keeps the index entries that carry an origin record, of every type (a symlink's too), and drops one that does not" {
	echo f >"$LO/f1"
	ln "$LO/f1" "$LO/f2"
	ln -s t "$LO/s1"
	ln -P "$LO/s1" "$LO/s2"
	sfs_mount "$UP=rw:$LO=ro" "$MNT"
	echo more >>"$MNT/f1"    # both pairs copied up, into the index
	setfattr -h -n trusted.t -v v "$MNT/s1"
	"$SFS" umount "$MNT"
	chown -R nobody:nogroup "$UP/.stackfs"
	# hers, planted under an index name: no origin record
	ln "$UP/payload" "$UP/.stackfs/index/1-99"
	run "$SFS" fsck --repair "$UP"
	((status == 1)) || fail "fsck --repair exit $status (expected 1, fixed): $output"
	run -0 ls "$UP/.stackfs/index"
	((${#lines[@]} == 2)) && [[ $output != *1-99* ]] || fail "index after the rebuild: $output"
	sfs_mount "$UP=rw:$LO=ro" "$MNT"
	run -0 cat "$MNT/f2"
	assert_output $'f\nmore'
	run -0 getfattr -h --absolute-names --only-values -n trusted.t "$MNT/s2"
	assert_output v
	[[ $(stat -c %i "$MNT/s1") == "$(stat -c %i "$MNT/s2")" ]] || fail "s1 and s2 are two inodes"
}

@test "a staging area someone else can write (opened up after the mount): her swap loop never gets her file placed or stamped" {
	sfs_mount "$UP=rw:$LO=ro" "$MNT" nopassthrough
	local i
	for i in $(seq 20); do
		cp -a "$LO/usr/bin/sutool" "$LO/usr/bin/tool$i"
	done
	# an administrator's mistake after the mount's check
	chmod 0711 "$UP/.stackfs"
	chmod 0777 "$UP/.stackfs/work"
	start_swapper "$UP/.stackfs/work"
	for i in $(seq 20); do
		touch "$MNT/usr/bin/tool$i" || fail "copy-up of tool$i failed"
	done
	stop_swapper
	echo "# $(tail -n 1 "$BATS_TEST_TMPDIR/swapper.out")" >&3
	for i in $(seq 20); do
		[[ $(stat -c '%U %a' "$UP/usr/bin/tool$i") == 'root 4755' ]] ||
			fail "tool$i: $(stat -c '%U %a' "$UP/usr/bin/tool$i")"
		[[ $(sha256sum <"$UP/usr/bin/tool$i") == "$GENUINE" ]] || fail "tool$i is not the lower file"
		[[ $(sha256sum <"$MNT/usr/bin/tool$i") == "$GENUINE" ]] || fail "the view's tool$i is not the lower file"
	done
	assert_nothing_stamped
}

@test "a rw branch root another user can write draws a warning that says what it allows; root's own 0755 root none" {
	run -0 "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
	sfs_record stackfs "$MNT"
	[[ $output == *'warning:'*'writable by its owner uid 65534 (nobody)'*'rename its .stackfs away'* ]] ||
		fail "no warning: $output"
	"$SFS" umount "$MNT"
	chown root:root "$UP"
	chmod 0755 "$UP"
	run -0 "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
	sfs_record stackfs "$MNT"
	[[ $output != *warning* ]] || fail "a warning for root's own 0755 root: $output"
	"$SFS" umount "$MNT"
	chmod 1777 "$UP"
	run -0 "$SFS" mount "$UP=rw:$LO=ro" "$MNT"
	sfs_record stackfs "$MNT"
	[[ $output == *'writable by every user (mode 1777)'* ]] || fail "no warning for 1777: $output"
}
