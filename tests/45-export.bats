#!/usr/bin/env bats
# nfs_export=on: file handles of the view (name_to_handle_at, then
# open_by_handle_at on the mount, as an NFS server does) open the same
# entry after the kernel dropped its inodes, across copy-up and rename,
# after an unmount and a restart of the daemon; a handle of a deleted
# entry, of a reused inode number or a forged one answers ESTALE and
# never opens another file. The kernel's caches are dropped before each
# open, so that the kernel asks the daemon (LOOKUP of ".").

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool fhprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	mkdir -p "$LO/d/sub" "$LO/ld"
	echo lower-f >"$LO/d/f"
	echo lower-g >"$LO/d/sub/g"
	echo lower-h >"$LO/ld/h"
	mkdir -p "$UP/ud"
	echo upper-u >"$UP/ud/u"
	H=$BATS_TEST_TMPDIR/h
	mkdir -p "$H"
}

teardown() {
	sfs_cleanup
}

xmount() {
	sfs_mount "$UP=rw:$LO=ro" "$MNT" "nfs_export=on${1:+,$1}"
}

drop() {
	sfs_drop_caches 2
}

# save PATH NAME: the handle of view path PATH, and its st_ino
save() {
	run -0 "$TOOLS/fhprobe" save "$MNT/$1" "$H/$2"
	stat -c %i "$MNT/$1" >"$H/$2.ino"
}

# opens_as NAME [DATA]: handle NAME opens the entry it was taken of (its
# st_ino, which survives copy-up, rename and remount), with first line
# DATA. Its name is not looked up before: the handle alone finds it.
opens_as() {
	drop
	run -0 "$TOOLS/fhprobe" open "$MNT" "$H/$1"
	assert_output --partial "ino=$(cat "$H/$1.ino") "
	[[ -z ${2:-} ]] || assert_output --partial " data=$2"
}

stale() {
	drop
	run -1 "$TOOLS/fhprobe" open "$MNT" "$H/$1"
	assert_output --partial ESTALE
}

# unmount: the daemon ends (and writes the names it keeps)
unmount() {
	local pid
	pid=$(sfs_daemon_pid "$MNT")
	run -0 "$SFS" umount "$MNT"
	sfs_wait_gone "$pid" || fail "the daemon $pid did not end"
}

restart() {
	unmount
	xmount "$@"
}

@test "handles of lower and upper files and directories open after the caches are dropped" {
	xmount
	save d/f f
	save d/sub/g g
	save ud/u u
	save d d
	save d/sub sub
	save ud ud
	opens_as f lower-f
	opens_as g lower-g
	opens_as u upper-u
	opens_as d
	opens_as sub
	opens_as ud
}

@test "without nfs_export a handle answers ESTALE once the kernel dropped its inode" {
	sfs_mount "$UP=rw:$LO=ro" "$MNT"
	save d d
	save d/f f
	stale d
	stale f
}

@test "a handle of a lower file opens its copy after copy-up (chmod, write)" {
	xmount
	save d/f f
	save d/sub/g g
	chmod 600 "$MNT/d/f"
	echo more >>"$MNT/d/sub/g"
	[[ -f $UP/d/f && -f $UP/d/sub/g ]] || fail "no copy-up"
	opens_as f lower-f
	run -0 stat -c %a "$MNT/d/f"
	assert_output 600
	opens_as g lower-g
	drop
	run -0 "$TOOLS/fhprobe" write "$MNT" "$H/g" "by-handle"
	run -0 cat "$MNT/d/sub/g"
	assert_output "lower-g
more
by-handle"
	[[ $(cat "$LO/d/sub/g") == lower-g ]] || fail "the lower file changed"
}

@test "a handle follows a rename of its file and of its directory" {
	xmount
	save d/f f
	save ud/u u
	save ld ld
	mv "$MNT/d/f" "$MNT/ud/f2"
	mv "$MNT/ud/u" "$MNT/d/u2"
	mv "$MNT/ld" "$MNT/ld2"
	opens_as f lower-f
	opens_as u upper-u
	opens_as ld
}

@test "a handle of a deleted file or directory answers ESTALE" {
	xmount
	save d/f f
	save ud/u u
	save ld/h h
	save ld ld
	save ud ud
	rm "$MNT/d/f" "$MNT/ud/u" "$MNT/ld/h"
	rmdir "$MNT/ld" "$MNT/ud"
	stale f
	stale u
	stale h
	stale ld
	stale ud
}

@test "a handle of a removed file whose inode number was reused answers ESTALE, not the new file" {
	xmount
	local k old new b=
	echo first >"$MNT/ud/a"
	old=$(stat -c %i "$UP/ud/a")
	save ud/a a
	rm "$MNT/ud/a"
	# a new file gets the freed number (at once on ext4 and XFS; a few
	# tries at most)
	for ((k = 0; k < 50; k++)); do
		echo second >"$MNT/ud/b$k"
		new=$(stat -c %i "$UP/ud/b$k")
		if [[ $new == "$old" ]]; then
			b=ud/b$k
			break
		fi
	done
	[[ -n $b ]] || skip "no inode number reused in 50 files"
	save "$b" b
	stale a
	opens_as b second
}

@test "handles of directories and files open after an unmount and a remount" {
	xmount
	save d d
	save d/sub sub
	save ud ud
	save ld ld
	save d/f f
	save ud/u u
	mkdir "$MNT/ld/new"
	save ld/new new
	restart
	opens_as d
	opens_as sub
	opens_as ud
	opens_as ld
	opens_as new
	opens_as f lower-f
	opens_as u upper-u
}

@test "handles open after the daemon is killed and the view mounted again" {
	xmount
	save d d
	save ud ud
	save d/f f
	local pid
	pid=$(sfs_daemon_pid "$MNT")
	kill -KILL "$pid"
	sfs_wait_gone "$pid" || fail "the daemon $pid did not end"
	umount -l "$MNT" 2>/dev/null || true
	xmount
	opens_as d
	opens_as ud
	# the names of files are written when the daemon ends: killed, it
	# wrote none, and a file with no name known answers ESTALE (its
	# branch shares its filesystem with another), never another file
	stale f
	[[ ! -e $UP/.stackfs/exportnames ]]
}

@test "after a crash a file of the only branch of its filesystem answers ESTALE, not a file the view may hide" {
	# its inode alone cannot tell a file of the view from one of a branch
	# removed since, or one outside the branch on that filesystem
	sfs_mount "$UP=rw" "$MNT" nfs_export=on
	save ud/u u
	local pid
	pid=$(sfs_daemon_pid "$MNT")
	kill -KILL "$pid"
	sfs_wait_gone "$pid" || fail "the daemon $pid did not end"
	umount -l "$MNT" 2>/dev/null || true
	sfs_mount "$UP=rw" "$MNT" nfs_export=on
	stale u
	# once its name is looked up again, the handle opens it
	cat "$MNT/ud/u" >/dev/null
	opens_as u upper-u
}

@test "readdir offsets of a merged directory resume the same listing after a restart (NFS READDIR cookies)" {
	local k off name rest
	for ((k = 0; k < 40; k++)); do echo >"$LO/d/lo$k"; done
	mkdir -p "$UP/d"
	for ((k = 0; k < 40; k++)); do echo >"$UP/d/up$k"; done
	xmount
	run -0 "$TOOLS/fhprobe" offsets "$MNT/d"
	local before=$output
	# a cookie from the middle of the listing
	read -r off name <<<"$(sed -n 30p <<<"$before")"
	rest=$(sed -n '31,$p' <<<"$before" | cut -d' ' -f2-)
	[[ -n $rest ]] || fail "short listing: $before"
	restart
	run -0 "$TOOLS/fhprobe" offsets "$MNT/d"
	assert_output "$before"
	run -0 "$TOOLS/fhprobe" from "$MNT/d" "$off"
	assert_output "$rest"
}

@test "branch changes: handles of a removed branch answer ESTALE, and open again when it is back; others stay valid" {
	mkdir -p "$T/lo2/d2" "$T/up2"
	echo k >"$T/lo2/d2/k"
	xmount
	run -0 "$SFS" branch add "$MNT" "$T/lo2" --bottom
	save d2 d2
	save d2/k k
	save d/f f
	save ud ud
	run -0 "$SFS" branch remove "$MNT" "$T/lo2"
	stale d2
	stale k
	opens_as f lower-f
	run -0 "$SFS" branch add "$MNT" "$T/lo2" --bottom
	opens_as d2
	opens_as k k
	# a new rw branch on top: ids name filesystems, not positions
	run -0 "$SFS" branch add "$MNT" "$T/up2" --mode rw --top
	opens_as f lower-f
	opens_as ud
	opens_as k k
}

# xnames_file FILE ID PARENT NAME...: an exportnames file of the records
# (ID PARENT NAME), as the daemon writes it (docs/format.md "exportnames")
xnames_file() {
	python3 - "$@" <<'PY'
import struct, sys
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF
out, a = sys.argv[1], sys.argv[2:]
recs = [(int(a[i]), int(a[i + 1]), a[i + 2].encode()) for i in range(0, len(a), 3)]
h = b"SFSXNAM\0" + struct.pack("<II", 1, len(recs)) + bytes(12)
data = h + struct.pack("<I", crc32c(h))
for i, p, n in recs:
    r = struct.pack("<QQHH", i, p, len(n), 0) + n
    data += r + struct.pack("<I", crc32c(r))
open(out, "wb").write(data)
PY
}

@test "the names kept for handles: checked by fsck, damage removed; a hostile record opens nothing else" {
	echo other >"$LO/d/other"
	xmount
	save d d
	save d/f f
	save d/other other
	restart
	opens_as f lower-f
	unmount
	[[ -s $UP/.stackfs/exportnames ]]
	run -0 "$SFS" fsck "$UP"
	refute_output --partial XNAMES_BAD
	# a flipped byte in a record: its checksum fails
	printf 'X' | dd of="$UP/.stackfs/exportnames" bs=1 seek=40 conv=notrunc 2>/dev/null
	run -4 "$SFS" fsck "$UP"
	assert_output --partial "[XNAMES_BAD]"
	run -1 "$SFS" fsck --repair "$UP"
	[[ ! -e $UP/.stackfs/exportnames ]]
	run -0 "$SFS" fsck "$UP"
	# f's id named as d/other (whose own id the file gives too): the
	# name gives another node, so f's handle answers ESTALE; the file
	# is what a forger with write access to .stackfs could make
	xnames_file "$UP/.stackfs/exportnames" "$(cat "$H/f.ino")" "$(cat "$H/d.ino")" other
	run -0 "$SFS" fsck "$UP"
	xmount
	stale f
	# a file named as a parent, and a cycle of parents
	unmount
	xnames_file "$UP/.stackfs/exportnames" "$(cat "$H/f.ino")" "$(cat "$H/other.ino")" x \
		"$(cat "$H/d.ino")" "$(cat "$H/f.ino")" d
	xmount
	stale f
	opens_as d
}

@test "forged and garbage handles answer an error, never an entry, and the daemon goes on" {
	xmount
	save d/f f
	save ud ud
	drop
	local how
	for how in gen+1 id+1 zero short type id=0100000000000002 id=ff00000000000001 id=0000000000000001 id=fe00000000000010; do
		run "$TOOLS/fhprobe" forge "$MNT" "$H/f" "$how"
		((status != 0)) || [[ $how == id=0000000000000001 ]] || fail "forged ($how) opened: $output"
		refute_output --partial "data=lower-f"
	done
	run -0 "$TOOLS/fhprobe" garbage "$MNT" 3000
	assert_output "opened=0"
	run -0 cat "$MNT/d/f"
	assert_output lower-f
	opens_as ud
}

@test "a branch whose filesystem's handles are not ext4's or XFS's is refused with nfs_export=on" {
	local tm=$BATS_TEST_TMPDIR/tmpfs
	mkdir -p "$tm"
	sfs_record mount "$tm"
	mount -t tmpfs tmpfs "$tm"
	run -1 "$SFS" mount -o nfs_export=on "$UP=rw:$tm=ro" "$MNT"
	assert_output --partial "nfs_export=on: branch $tm"
	run -2 "$SFS" mount -o nfs_export=maybe "$UP=rw:$LO=ro" "$MNT"
	assert_output --partial "nfs_export is on or off"
}
