#!/usr/bin/env bats
# Entries a READDIRPLUS listing answers unopened (stackfs/nodes/lookup_listed.c,
# issue 20): a non-directory of a one-layer directory that the union's
# rules can only show as it is gets its attributes from one statx, and
# its node no fd until its first use, when its name is resolved again in
# full. The attributes must be those a lookup gives; what the rules must
# look at closer (an origin, the hard-link index) must still be looked
# at; an entry replaced or removed in its branch meanwhile is looked up
# again (ESTALE), never served as another inode; and every operation on
# such a node works as on any other. The subdirectories of such a listing
# are read ahead (stackfs/listing/dirahead.c): in every layer, never through a
# symlink or into a mount point, a bounded number of them.

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

# attrs DIR: what a stat of each entry of DIR shows, one line each
# (name, inode, type, mode, links, owner, size, mtime, symlink)
attrs() {
	local f
	for f in "$1"/*; do
		stat -c '%n %i %F %a %h %u:%g %s %.9Y %N' "$f"
	done | sed "s|$1/||g"
}

# a lower directory of files of several kinds, sizes and modes
lower_dir() {
	local i
	mkdir -p "$LO/d"
	for ((i = 0; i < 40; i++)); do
		head -c $((i * 37)) /dev/urandom >"$LO/d/f$i"
		chmod $((600 + i % 8 * 10)) "$LO/d/f$i"
	done
	chown 1000:1000 "$LO/d/f3"
	chmod 4755 "$LO/d/f4"
	touch -d '2001-02-03 04:05:06.123456789' "$LO/d/f5"
	ln -s f1 "$LO/d/s"
	mkfifo "$LO/d/p"
	mkdir "$LO/d/sub"
}

@test "a listing answers a lower-only directory's entries unopened, as a lookup shows them" {
	lower_dir
	sfs_mount "$UP:$LO=ro" "$MNT"
	local fds0 listed
	fds0=$(sfs_status_of node_fds)
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	listed=$(sfs_status_of listed_lookups)
	# the files, the link and the fifo; the directory is looked up in full
	((listed == 42)) || fail "listed_lookups is $listed, not 42"
	(($(sfs_status_of node_fds) <= fds0 + 2)) ||
		fail "the listing opened fds: $fds0 -> $(sfs_status_of node_fds)"
	attrs "$MNT/d" >"$BATS_TEST_TMPDIR/listed"
	"$SFS" umount "$MNT"
	# the same names looked up one by one, nothing listed
	sfs_mount "$UP:$LO=ro" "$MNT"
	for f in "$LO"/d/*; do
		stat -c '%n %i %F %a %h %u:%g %s %.9Y %N' "$MNT/d/${f##*/}"
	done | sed "s|$MNT/d/||g" >"$BATS_TEST_TMPDIR/looked"
	(($(sfs_status_of listed_lookups) == 0)) || fail "a lookup was answered as listed"
	diff "$BATS_TEST_TMPDIR/looked" "$BATS_TEST_TMPDIR/listed"
}

# layered_dir: d in $UP and three ro branches $L1 $L2 $L3 (highest
# first), holding a name in two layers (the higher shows), names of one
# lower layer, names hidden by whiteouts of both styles, an empty file, a
# kernel metacopy over its data, and a file of the rw branch.
layered_dir() {
	mkdir -p "$UP/d" "$L1/d" "$L2/d" "$L3/d"
	echo one >"$L1/d/a"
	echo two-longer >"$L2/d/a"
	echo three >"$L3/d/b"
	ln -s b "$L2/d/s"
	: >"$L2/d/e"
	echo hidden >"$L3/d/c"
	: >"$L1/d/.wh.c"
	echo hidden >"$L2/d/w"
	mknod "$L1/d/w" c 0 0
	head -c 200000 /dev/urandom >"$L2/d/m"
	truncate -s 200000 "$L1/d/m"
	setfattr -n trusted.overlay.metacopy "$L1/d/m"
	echo up >"$UP/d/u"
}

@test "a directory in several layers answers entries unopened from the layer that shows them, as a lookup shows them" {
	local f listed
	sfs_setup_branches l1 l2 l3
	layered_dir
	sfs_mount "$UP:$L1=ro:$L2=ro:$L3=ro" "$MNT"
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	listed=$(sfs_status_of listed_lookups)
	# a (from l1), b, s and e; not the metacopy (its data is below) nor
	# the rw branch's u (an origin may give its identity)
	((listed == 4)) || fail "listed_lookups is $listed, not 4"
	for f in a b s e m u; do
		stat -c '%n %i %F %a %h %s %b %.9Y %N' "$MNT/d/$f"
	done >"$BATS_TEST_TMPDIR/listed"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$L1=ro:$L2=ro:$L3=ro" "$MNT"
	for f in a b s e m u; do
		stat -c '%n %i %F %a %h %s %b %.9Y %N' "$MNT/d/$f"
	done >"$BATS_TEST_TMPDIR/looked"
	(($(sfs_status_of listed_lookups) == 0)) || fail "a lookup was answered as listed"
	diff "$BATS_TEST_TMPDIR/looked" "$BATS_TEST_TMPDIR/listed"
	[[ $(cat "$MNT/d/a") == one && $(cat "$MNT/d/b") == three ]]
	cmp "$L2/d/m" "$MNT/d/m"
	[[ ! -e $MNT/d/c && ! -e $MNT/d/w ]]
	# the metacopy shows its data's blocks, not its own none
	(($(stat -c %b "$MNT/d/m") > 0)) || fail "the metacopy shows no blocks"
}

@test "an entry of a layered directory changed in its branches after the listing is looked up again: the layer above or below that shows it now, never the listed inode" {
	sfs_setup_branches l1 l2 l3
	layered_dir
	sfs_mount "$UP:$L1=ro:$L2=ro:$L3=ro" "$MNT"
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	stat "$MNT/d/a" "$MNT/d/b" >/dev/null
	(($(sfs_status_of listed_lookups) == 4)) || fail "listed_lookups is $(sfs_status_of listed_lookups)"
	# by a user who can write in the branches, under the mount: b made
	# in a layer above the one it was listed from, a removed from its
	# layer (l2's a shows through)
	echo above and beyond >"$L1/d/b"
	rm "$L1/d/a"
	run -0 cat "$MNT/d/b"
	assert_output "above and beyond"
	run -0 cat "$MNT/d/a"
	assert_output two-longer
	(($(sfs_status_of failures) == 0)) || fail "$("$SFS" status "$MNT" | grep -i error)"
}

@test "a listed entry is opened at its first use: data, link target, xattrs" {
	lower_dir
	setfattr -n user.k -v val "$LO/d/f7"
	sfs_mount "$UP:$LO=ro" "$MNT"
	ls -l "$MNT/d" >/dev/null
	(($(sfs_status_of listed_lookups) == 42)) || fail "listed_lookups is $(sfs_status_of listed_lookups)"
	for ((i = 0; i < 40; i++)); do
		cmp "$LO/d/f$i" "$MNT/d/f$i"
	done
	run -0 readlink "$MNT/d/s"
	assert_output f1
	run -0 getfattr --absolute-names --only-values -n user.k "$MNT/d/f7"
	assert_output val
	(($(sfs_status_of failures) == 0)) || fail "$("$SFS" status "$MNT" | grep -i error)"
}

@test "listed entries change through the view: chmod, write, rename, unlink, xattr, link; also after their directory got an upper copy" {
	lower_dir
	sfs_mount "$UP:$LO=ro" "$MNT"
	ls -l "$MNT/d" >/dev/null
	touch "$MNT/d/new" # the directory is copied up: two layers now
	chmod 640 "$MNT/d/f1"
	echo more >>"$MNT/d/f2"
	mv "$MNT/d/f3" "$MNT/d/f3b"
	rm "$MNT/d/f6"
	setfattr -n user.x -v y "$MNT/d/f8"
	ln "$MNT/d/f9" "$MNT/d/f9b"
	: >"$MNT/d/f10"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT"
	run -0 stat -c %a "$MNT/d/f1"
	assert_output 640
	cmp <(cat "$LO/d/f2"; echo more) "$MNT/d/f2"
	cmp "$LO/d/f3" "$MNT/d/f3b"
	[[ ! -e $MNT/d/f3 && ! -e $MNT/d/f6 && -e $LO/d/f6 ]]
	run -0 getfattr --absolute-names --only-values -n user.x "$MNT/d/f8"
	assert_output y
	[[ $(stat -c %i "$MNT/d/f9") == $(stat -c %i "$MNT/d/f9b") ]]
	[[ ! -s $MNT/d/f10 && -s $LO/d/f10 ]]
}

@test "a listed entry replaced or removed in its branch is looked up again, never served as another inode" {
	mkdir "$LO/d"
	echo first >"$LO/d/f"
	echo second >"$LO/d/g"
	echo gone >"$LO/d/h"
	echo attr >"$LO/d/x"
	sfs_mount "$UP:$LO=ro" "$MNT"
	# listed and stat'ed (no request: the listing gave the attributes);
	# not ls -l, whose xattr reads open each node
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	stat "$MNT"/d/* >/dev/null
	(($(sfs_status_of listed_lookups) == 4)) || fail "listed_lookups is $(sfs_status_of listed_lookups)"
	(($(sfs_status_of node_fds) <= 3)) || fail "node_fds is $(sfs_status_of node_fds)"
	# by a user who can write in the branch, under the mount
	mv "$LO/d/g" "$LO/d/f"
	rm "$LO/d/h"
	rm "$LO/d/x" && echo other >"$LO/d/x"
	run -0 cat "$MNT/d/f"
	assert_output second
	run -1 cat "$MNT/d/h"
	assert_output --partial "No such file or directory"
	run -0 cat "$MNT/d/x"
	assert_output other
	(($(sfs_status_of failures) == 0)) || fail "$("$SFS" status "$MNT" | grep -i error)"
}

@test "regression: listed entries the rules must look at closer keep what a lookup shows (an origin, the hard-link index)" {
	mkdir -p "$LO/a" "$LO/b" "$LO/c"
	echo linked >"$LO/a/h1"
	ln "$LO/a/h1" "$LO/b/h2"
	echo moved >"$LO/c/m"
	sfs_mount "$UP:$LO=ro" "$MNT"
	local ino_m ino_h
	ino_m=$(stat -c %i "$MNT/c/m")
	ino_h=$(stat -c %i "$MNT/a/h1")
	chmod 600 "$MNT/a/h1" # copied up and indexed: b/h2 shows the copy
	mkdir "$MNT/n"
	mv "$MNT/c/m" "$MNT/n/m" # a copy with its origin, in an upper-only dir
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT"
	ls -l "$MNT/b" "$MNT/n" >/dev/null
	run -0 stat -c '%a %i %h' "$MNT/b/h2"
	assert_output "600 $ino_h 2"
	run -0 stat -c '%i' "$MNT/n/m"
	assert_output "$ino_m"
	(($(sfs_status_of listed_lookups) == 0)) || fail "listed_lookups is $(sfs_status_of listed_lookups)"
}

@test "listed entries read by many processes at once: each resolves to its own file" {
	local i
	mkdir "$LO/d"
	for ((i = 0; i < 200; i++)); do
		echo "file $i" >"$LO/d/f$i"
	done
	sfs_mount "$UP:$LO=ro" "$MNT"
	ls -l "$MNT/d" >/dev/null
	for ((j = 0; j < 6; j++)); do
		(for ((i = 0; i < 200; i++)); do
			[[ $(<"$MNT/d/f$i") == "file $i" ]] || { echo "f$i: wrong" >&2; exit 1; }
		done) &
	done
	for ((j = 0; j < 6; j++)); do
		wait -n || fail "a reader saw another file's data"
	done
	(($(sfs_status_of listed_lookups) == 200)) || fail "listed_lookups is $(sfs_status_of listed_lookups)"
	(($(sfs_status_of failures) == 0)) || fail "$("$SFS" status "$MNT" | grep -i error)"
}

# wait_ahead N: dirs_read_ahead reaches N within 10 s (the read-ahead
# thread runs at nice 19)
wait_ahead() {
	local i
	for ((i = 0; i < 100; i++)); do
		(($(sfs_status_of dirs_read_ahead) >= $1)) && return 0
		sleep 0.1
	done
	fail "dirs_read_ahead is $(sfs_status_of dirs_read_ahead), not $1"
}

@test "a listing reads its subdirectories ahead, in each layer; never through a symlink or into a mount point" {
	mkdir -p "$LO/d/sub1" "$LO/d/sub2" "$LO/d/mp" "$UP/d/sub1" "$T/other"
	touch "$LO/d/sub1/a" "$LO/d/sub2/b" "$UP/d/sub1/c"
	ln -s "$T/other" "$LO/d/link"
	mount -t tmpfs -o size=1m tmpfs "$LO/d/mp"
	sfs_record mount "$LO/d/mp"
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	# sub1 and sub2 in each of d's two layers: three exist (the upper has
	# no sub2); the mount point, and the symlink, are not read
	wait_ahead 3
	sleep 1
	run -0 sfs_status_of dirs_read_ahead
	assert_output 3
	run -0 ls "$MNT/d/sub1"
	assert_output $'a\nc'
}

@test "read-ahead is bounded: of 300 subdirectories listed at once, at most 256 are read ahead" {
	local i
	for ((i = 0; i < 300; i++)); do
		mkdir -p "$LO/d/s$i"
	done
	sfs_mount "$UP:$LO=ro" "$MNT"
	"$TOOLS/getdents_small" -b 65536 "$MNT/d" >/dev/null
	wait_ahead 200
	sleep 1
	(($(sfs_status_of dirs_read_ahead) <= 256)) || fail "dirs_read_ahead is $(sfs_status_of dirs_read_ahead)"
	run -0 find "$MNT/d" -mindepth 1 -type d
	((${#lines[@]} == 300)) || fail "find gave ${#lines[@]} directories"
}

# xattr_lists TRACE: the xattr lists asked of directory layers
# in an strace of the daemon (listxattrat is syscall 465, which this
# strace knows by number only)
xattr_lists() {
	grep -cE 'listxattr|syscall_0x1d1' "$1" || true
}

# issue 33: a directory of the lowest branch has no marks read at its
# lookup, so each empty file in it asked the directory's xattr list again
# (whether it is marked to hold xattr whiteouts): 818 round trips to a
# GlusterFS volume for a listing of 2,000 names, 0.26 s where the volume
# lists in 0.09 s. The answer is now kept in the directory's layer.
@test "regression: a listing and lookups of 300 empty files in the lowest branch ask the directory's xattrs a few times, not once per file; with and without -o coherent" {
	sfs_require_cmd strace
	local i pid sp n opts
	mkdir "$LO/d"
	for ((i = 0; i < 300; i++)); do : >"$LO/d/e$i"; done
	for opts in "" coherent; do
		sfs_mount "$UP:$LO" "$MNT" "$opts"
		pid=$(sfs_daemon_pid "$MNT")
		strace -f -qq -p "$pid" -o "$BATS_TEST_TMPDIR/st" &
		sp=$!
		sleep 0.5
		[[ $(ls -l "$MNT/d" | grep -c ' e[0-9]') == 300 ]] || fail "not 300 entries (${opts:-default})"
		for ((i = 0; i < 300; i += 7)); do stat "$MNT/d/e$i" >/dev/null || fail "stat e$i"; done
		kill "$sp"
		wait "$sp" 2>/dev/null || true
		n=$(xattr_lists "$BATS_TEST_TMPDIR/st")
		((n <= 20)) || fail "$n xattr lists for 300 empty files (${opts:-default})"
		"$SFS" umount "$MNT"
	done
}

# the kept answer must still be the directory's: a lowest-branch
# directory marked for xattr whiteouts hides its whiteout files, in the
# listing and by name, whichever comes first
@test "an xattr whiteout in a marked directory of the lowest branch is hidden by listing and by lookup, in either order, with and without -o coherent" {
	local i opts
	for opts in "" coherent; do
		rm -rf "$LO/m"
		mkdir "$LO/m"
		for ((i = 0; i < 20; i++)); do : >"$LO/m/e$i"; done
		: >"$LO/m/gone"
		setfattr -n trusted.overlay.whiteout -v y "$LO/m/gone"
		setfattr -n trusted.overlay.opaque -v x "$LO/m"
		sfs_mount "$UP:$LO" "$MNT" "$opts"
		[[ $(ls "$MNT/m" | wc -l) == 20 ]] || fail "listing first: $(ls "$MNT/m" | wc -l) names (${opts:-default})"
		run -1 stat "$MNT/m/gone"
		"$SFS" umount "$MNT"
		sfs_mount "$UP:$LO" "$MNT" "$opts"
		run -1 stat "$MNT/m/gone"
		stat "$MNT/m/e3" >/dev/null || fail "e3 by name"
		[[ $(ls "$MNT/m" | wc -l) == 20 ]] || fail "lookup first: $(ls "$MNT/m" | wc -l) names (${opts:-default})"
		"$SFS" umount "$MNT"
	done
}
