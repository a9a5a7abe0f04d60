# Branches on a distributed filesystem (issue 33, docs/distributed.md),
# the tests every engine runs: tests/47-gluster (a GlusterFS volume) and
# tests/48-cephfs (a one-node CephFS) define one @test per function
# dfs_test_* here, with the engine's own setup. A filesystem of the
# engine is mounted twice by its FUSE client as two hosts would mount it
# (DFS_H1, DFS_H2). The union over it must be the union over ext4: the
# same trees are built on it and on the local image and the views
# compared. What it cannot do (O_TMPFILE, renameat2 flags) is said in one
# line at mount and taken another way; two hosts see each other's changes
# to a shared lower within the timeout, never a mix of old and new in one
# read; a new shared layer is added live.

# dfs_setup_file ENGINE: the engine's filesystem (glusterfs: a volume on
# an XFS loop image served by the suite's glusterd; cephfs: a cluster of
# the file's own) and its two client mounts; DFS_SKIP says why not
# where the engine cannot run here.
dfs_setup_file() {
	export DFS_ENGINE=$1 DFS_SKIP DFS_H1 DFS_H2 DFS_TYPE DFS_VOL
	local brick
	case $1 in
	glusterfs) DFS_TYPE=fuse.glusterfs DFS_SKIP=$(sfs_gluster_skip_reason) ;;
	cephfs) DFS_TYPE=fuse.ceph-fuse DFS_SKIP=$(sfs_ceph_skip_reason) ;;
	*) echo "dfs_setup_file: unknown engine '$1'" >&2; return 1 ;;
	esac
	[[ -n $DFS_SKIP ]] && return 0
	case $1 in
	glusterfs)
		sfs_glusterd_up || return 1
		brick=$(sfs_make_image xfs 600 gbrick) || return 1
		DFS_VOL=sfs47x$BASHPID
		sfs_gluster_volume "$DFS_VOL" "$brick/brick" || return 1
		;;
	cephfs) DFS_VOL=$(sfs_ceph_up) || return 1 ;;
	esac
	DFS_H1=$BATS_FILE_TMPDIR/h1
	DFS_H2=$BATS_FILE_TMPDIR/h2
	dfs_client_mount "$DFS_H1" && dfs_client_mount "$DFS_H2"
}

# dfs_client_mount DIR: one more client mount of the filesystem (another
# host, or this one after a reboot); recorded.
dfs_client_mount() {
	case $DFS_ENGINE in
	glusterfs) sfs_gluster_mount "$DFS_VOL" "$1" acl ;;
	cephfs) sfs_ceph_mount "$DFS_VOL" "$1" ;;
	esac
}

# dfs_setup: a test's trees: its directory G on host 1's mount, the local
# twin of its trees ($T, sfs_setup_branches) and the views' mount points.
dfs_setup() {
	sfs_once_per_suite
	[[ -z ${DFS_SKIP:-} ]] || skip "$DFS_SKIP"
	sfs_require_root "a $DFS_ENGINE filesystem served here"
	sfs_setup_branches
	# still the engine's: never a test passing on the empty directory a
	# lost client mount leaves
	local h
	for h in "$DFS_H1" "$DFS_H2"; do
		[[ $(findmnt -rn -o FSTYPE -M "$h") == "$DFS_TYPE" ]] || fail "$h is no longer a $DFS_TYPE mount"
	done
	G=$DFS_H1/t$BATS_TEST_NUMBER
	rm -rf "$G"
	mkdir -p "$G"
}

# make_layers DIR: two read-only layers l1 over l2 holding what the
# union rules read: both whiteout forms, both opaque marks, hard links,
# xattrs and an ACL.
make_layers() {
	local d=$1
	mkdir -p "$d/l1/opq" "$d/l1/opq2" "$d/l2/opq" "$d/l2/opq2" "$d/l2/sub" "$d/l1/sub"
	echo two >"$d/l2/plain"
	echo gone >"$d/l2/gone1"
	echo gone >"$d/l2/gone2"
	echo hidden >"$d/l2/opq/x"
	echo hidden >"$d/l2/opq2/y"
	echo kept >"$d/l2/sub/low"
	echo upper >"$d/l1/sub/high"
	echo over >"$d/l2/shadow"
	echo shadow-top >"$d/l1/shadow"
	: >"$d/l1/.wh.gone1"
	mknod "$d/l1/gone2" c 0 0
	: >"$d/l1/opq/.wh..wh..opq"
	echo shown >"$d/l1/opq/z"
	setfattr -n trusted.overlay.opaque -v y "$d/l1/opq2"
	echo shown >"$d/l1/opq2/w"
	echo linked >"$d/l2/a"
	ln "$d/l2/a" "$d/l2/a2"
	echo xa >"$d/l2/xa"
	setfattr -n user.color -v blue "$d/l2/xa"
	echo acl >"$d/l2/acl"
	setfacl -m u:nobody:r "$d/l2/acl"
	ln -s plain "$d/l2/sym"
}

# view_dump DIR: per entry its path, type, mode, size of files, symlink
# target, content hash, user xattrs and ACL; then which names share an
# inode (by the view's st_ino, numbered in order of appearance).
view_dump() {
	(
		cd "$1" || exit 1
		find . -mindepth 1 -name .stackfs -prune -o -printf '%p %y %m %l\n' | LC_ALL=C sort
		find . -mindepth 1 -type f -not -path './.stackfs*' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
		find . -mindepth 1 -not -path './.stackfs*' -print0 | LC_ALL=C sort -z |
			xargs -0 -r getfattr -h -d -m '^user\.' 2>/dev/null
		find . -mindepth 1 -type f -not -path './.stackfs*' -print0 | LC_ALL=C sort -z |
			xargs -0 -r getfacl -p 2>/dev/null
		find . -mindepth 1 -type f -not -path './.stackfs*' -printf '%i %p\n' | LC_ALL=C sort -k2 |
			awk '{ if (!($1 in n)) n[$1] = ++k; print n[$1], $2 }' | sort -n
	)
}

# the operations a user makes through a view ($1), the same on both
work_on_view() {
	local v=$1
	echo more >>"$v/plain"               # copy-up of a lower file
	chmod 600 "$v/sub/low"               # a metadata change
	mkdir "$v/newdir" && echo n >"$v/newdir/f"
	mv "$v/sub" "$v/moved"               # a merged directory renamed
	rm "$v/shadow"                       # a whiteout over two layers
	rm -r "$v/opq"
	mkdir "$v/opq" && echo again >"$v/opq/back"
	ln "$v/xa" "$v/xa-link"              # a hard link of a lower file
	setfattr -n user.size -v big "$v/a"
	truncate -s 100000 "$v/a2"
	fallocate -l 65536 "$v/newdir/f"
	mv "$v/newdir/f" "$v/newdir/g"
	ln -sf xa "$v/sym2"
}

# ino_of VIEW NAME...: "NAME:st_ino" per name, one line.
inos_of() {
	local v=$1 n out=()
	shift
	for n in "$@"; do
		out+=("$n:$(stat -c %i "$v/$n")")
	done
	echo "${out[*]}"
}

# read_loop FILE STOP: opens and reads FILE (one read(2) each) until STOP
# exists; each read must be the old content or the new one exactly (SIZE
# bytes of "o", of "n"). Prints the count of each and of opens refused
# with ESTALE, or the first read that is neither. GlusterFS's own client
# refuses an open of a name another client has just replaced with
# ESTALE while this one holds the old file open, for about half a second
# (docs/distributed.md "Two hosts, one set of lowers"): an answer, not a mix.
read_loop() {
	python3 - "$@" "$SIZE" <<'PY'
import errno, os, sys, time
path, stop, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
old, new = b"o" * size, b"n" * size
counts = {old: 0, new: 0}
stale = 0
while not os.path.exists(stop):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        if e.errno != errno.ESTALE:
            print("open: %s" % e); sys.exit(1)
        stale += 1
        time.sleep(0.01)
        continue
    data = os.read(fd, 1 << 20)
    os.close(fd)
    if data not in counts:
        print("mixed read of %d bytes" % len(data)); sys.exit(1)
    counts[data] += 1
    if counts[old] + counts[new] == 1:
        open(stop + "." + os.path.basename(os.path.dirname(path)), "w").close()
print("old %d new %d estale %d" % (counts[old], counts[new], stale))
PY
}

# waits up to $3 seconds for FILE ($1) to read $2 through a view
wait_content() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[[ $(cat "$1" 2>/dev/null) == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}


dfs_test_notes() {
	make_layers "$G"
	mkdir -p "$G/up"
	sfs_record stackfs "$MNT"
	run -0 --separate-stderr "$SFS" mount -o whiteout=overlay,coherent "$G/up=rw:$G/l1=ro:$G/l2=ro" "$MNT"
	sfs_record pid "$(sfs_daemon_pid "$MNT"):$MNT"
	local rw
	rw=$(grep -F "\"$G/up\"" <<<"$stderr")
	[[ $(wc -l <<<"$rw") -eq 1 ]] || fail "not one line for the rw branch: $stderr"
	assert_equal "$(grep -c "no O_TMPFILE" <<<"$rw")" 1
	assert_equal "$(grep -c "RENAME_NOREPLACE is kept by link and unlink" <<<"$rw")" 1
	assert_equal "$(grep -c "whiteouts are written as .wh.NAME" <<<"$rw")" 1
	assert_equal "$(grep -c "file handles name the FUSE client's nodes" <<<"$rw")" 1
	grep -F "\"$G/l2\"): " <<<"$stderr" | grep -qF "shared with other hosts: -o coherent gets no events" ||
		fail "no line for the shared lower: $stderr"
	# the style written is the one said, and the view works with it
	run -0 "$SFS" status "$MNT"
	assert_line --regexp '^whiteout +wh$'
	rm "$MNT/plain"
	[[ -f $G/up/.wh.plain ]] || fail "no .wh.plain in the rw branch: $(ls -a "$G/up")"
	mv "$MNT/a" "$MNT/b"
	[[ -f $G/up/.wh.a && $(cat "$MNT/b") == linked ]] || fail "rename of a lower file: $(ls -a "$G/up")"
	# nothing of the probes is left in the staging directory
	run -0 find "$G/up/.stackfs/work" -mindepth 1
	assert_output ""
	# on ext4 nothing is lacking: no such line
	make_layers "$T"
	mkdir -p "$T/view2"
	sfs_record stackfs "$T/view2"
	run -0 --separate-stderr "$SFS" mount -o whiteout=overlay "$UP=rw:$T/l1=ro:$T/l2=ro" "$T/view2"
	refute_output --partial "note:"
	[[ -z $stderr ]] || fail "ext4 branches noted: $stderr"
}

dfs_test_lowers() {
	make_layers "$G"
	make_layers "$T"
	mkdir -p "$G/up"
	sfs_mount "$UP=rw:$T/l1=ro:$T/l2=ro" "$MNT"
	sfs_mount "$G/up=rw:$G/l1=ro:$G/l2=ro" "$T/gview"
	local want got
	want=$(view_dump "$MNT")
	got=$(view_dump "$T/gview")
	[[ $want == *"./gone"* ]] && fail "a whiteout's name shows on ext4: $want"
	[[ $want == *"user.color=\"blue\""* ]] || fail "the dump holds no xattr: $want"
	[[ $want == *"user:nobody:r--"* ]] || fail "the dump holds no ACL: $want"
	[[ $got == "$want" ]] || fail "the views differ: $(diff <(echo "$want") <(echo "$got"))"
}

dfs_test_rw() {
	make_layers "$G"
	make_layers "$T"
	mkdir -p "$G/up"
	sfs_mount "$UP=rw:$T/l1=ro:$T/l2=ro" "$MNT"
	sfs_mount "$G/up=rw:$G/l1=ro:$G/l2=ro" "$T/gview"
	work_on_view "$MNT"
	work_on_view "$T/gview"
	local want got
	want=$(view_dump "$MNT")
	got=$(view_dump "$T/gview")
	[[ $got == "$want" ]] || fail "the views differ: $(diff <(echo "$want") <(echo "$got"))"
	cu_umount "$MNT"
	cu_umount "$T/gview"
	run -0 "$SFS" fsck --lower "$G/l1" --lower "$G/l2" "$G/up"
	assert_output --partial clean
	sfs_mount "$G/up=rw:$G/l1=ro:$G/l2=ro" "$T/gview"
	got=$(view_dump "$T/gview")
	[[ $got == "$want" ]] || fail "after a remount: $(diff <(echo "$want") <(echo "$got"))"
	# nothing staged is left behind
	run -0 find "$G/up/.stackfs/work" -mindepth 1
	assert_output ""
}

dfs_test_client_again() {
	# regression: FUSE's file handles name the client's nodes, which the
	# client gives to other files once it forgets them; an origin record
	# holding one made fsck report a live lower file as gone
	# (ORIGIN_DANGLING), and a client mount made again (a reboot) gave
	# the volume another identity, so every number of the view moved
	local h3=$BATS_TEST_TMPDIR/h3 before after i
	dfs_client_mount "$h3"
	G=$h3/t$BATS_TEST_NUMBER
	make_layers "$G"
	mkdir -p "$G/up"
	run -0 --separate-stderr "$SFS" mount "$G/up=rw:$G/l1=ro:$G/l2=ro" "$MNT"
	sfs_record stackfs "$MNT"
	[[ $stderr == *"file handles name the FUSE client's nodes"* ]] ||
		fail "no line for the handles: $stderr"
	echo more >>"$MNT/plain"
	chmod 600 "$MNT/sub/low"
	ln "$MNT/xa" "$MNT/xa-link"
	before=$(inos_of "$MNT" plain sub/low xa xa-link a a2 sub opq2)
	cu_umount "$MNT"
	umount "$h3"
	dfs_client_mount "$h3"
	# the client's new nodes: ids of the forgotten ones handed out again
	for ((i = 0; i < 400; i++)); do
		echo "$i" >"$h3/churn.$BATS_TEST_NUMBER.$i"
	done
	cat "$h3"/churn.* >/dev/null
	run -0 "$SFS" fsck --lower "$G/l1" --lower "$G/l2" "$G/up"
	assert_output --partial clean
	refute_output --partial "no lower branch is on"
	sfs_mount "$G/up=rw:$G/l1=ro:$G/l2=ro" "$MNT"
	after=$(inos_of "$MNT" plain sub/low xa xa-link a a2 sub opq2)
	assert_equal "$after" "$before"
	[[ $(cat "$MNT/plain") == $'two\nmore' ]] || fail "plain: $(cat "$MNT/plain")"
	cu_umount "$MNT"
	rm -f "$h3"/churn.*
	umount "$h3"
}

dfs_test_sync_commit() {
	local mode
	echo base >"$G/lower-f"
	mkdir -p "$G/lo" && mv "$G/lower-f" "$G/lo/f"
	for mode in always normal volatile; do
		rm -rf "$G/up" && mkdir -p "$G/up"
		sfs_mount "$G/up=rw:$G/lo=ro" "$MNT" "sync=$mode"
		echo "$mode" >>"$MNT/f"
		echo new >"$MNT/n"
		run -0 python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); os.write(fd, b"x"); os.fsync(fd)' "$MNT/n"
		cu_umount "$MNT"
		[[ $(cat "$G/up/f") == $'base\n'"$mode" ]] || fail "sync=$mode: $(cat "$G/up/f")"
		run -0 "$SFS" fsck --lower "$G/lo" "$G/up"
	done
	# commit folds the rw branch into the lower one, on the volume
	rm "$G/up/n" && echo gone >"$G/lo/old"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	rm "$MNT/old"
	cu_umount "$MNT"
	run -0 "$SFS" commit "$G/up" --into "$G/lo"
	[[ $(cat "$G/lo/f") == $'base\nvolatile' ]] || fail "commit: f is $(cat "$G/lo/f")"
	[[ ! -e $G/lo/old && ! -e $G/lo/.wh.old ]] || fail "commit: old is still there: $(ls -a "$G/lo")"
}

dfs_test_kill_copyup() {
	fi_require_plain_build
	mkdir -p "$G/lo" "$G/up"
	head -c 4M /dev/urandom >"$G/lo/big"
	local sum
	sum=$(sha256sum <"$G/lo/big")
	UP=$G/up LO=$G/lo T=$G
	fi_mount
	# killed once the first write of the copy's data returned: the copy
	# is staged, not placed (its placing comes after its data and sync)
	fi_arm write 1 killafter
	run bash -c 'echo tail >>"$1"' _ "$MNT/big"
	((status != 0)) || fail "the append succeeded: the daemon was not killed"
	sfs_wait_gone "$FI_PID" 10 || fail "daemon $FI_PID still alive"
	umount -l "$MNT" 2>/dev/null
	[[ ! -e $G/up/big ]] || fail "a partial copy was placed: $(stat -c %s "$G/up/big") bytes"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	[[ $(sha256sum <"$MNT/big") == "$sum" ]] || fail "the view's big is not the lower one"
	run -0 find "$G/up/.stackfs/work" -mindepth 1
	assert_output ""
	echo tail >>"$MNT/big"
	cu_umount "$MNT"
	run -0 "$SFS" fsck --lower "$G/lo" "$G/up"
	[[ $(stat -c %s "$G/up/big") -eq $((4 * 1024 * 1024 + 5)) ]] || fail "the copy-up after the crash"
}

dfs_test_two_hosts() {
	local old new SIZE=300000
	old=$(head -c $SIZE /dev/zero | tr '\0' o)
	new=$(head -c $SIZE /dev/zero | tr '\0' n)
	mkdir -p "$DFS_H2/t$BATS_TEST_NUMBER/shared"
	printf %s "$old" >"$DFS_H2/t$BATS_TEST_NUMBER/shared/f"
	mkdir -p "$T/rwA" "$T/rwB" "$T/rwC"
	# host 1: two views over its own client mount, one with -o coherent;
	# host 2 (the other client mount): a view, and the publisher
	sfs_mount "$T/rwA=rw:$G/shared=ro" "$T/vA" timeout=1
	sfs_mount "$T/rwC=rw:$G/shared=ro" "$T/vC" timeout=1,coherent
	sfs_mount "$T/rwB=rw:$DFS_H2/t$BATS_TEST_NUMBER/shared=ro" "$T/vB" timeout=1
	local pa pb pc
	pa=$(sfs_daemon_pid "$T/vA") pb=$(sfs_daemon_pid "$T/vB") pc=$(sfs_daemon_pid "$T/vC")
	[[ $(cat "$T/vA/f") == "$old" && $(cat "$T/vC/f") == "$old" ]] || fail "old content not seen"
	read_loop "$T/vA/f" "$T/stop" >"$T/readsA" &
	local ra=$!
	read_loop "$T/vC/f" "$T/stop" >"$T/readsC" &
	local rc=$!
	# both readers under way (each says so after its first read)
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -e $T/stop.vA && -e $T/stop.vC ]] && break
		sleep 0.1
	done
	[[ -e $T/stop.vA && -e $T/stop.vC ]] || fail "the readers did not start"
	# the fleet's update: a new file renamed over the old one
	printf %s "$new" >"$DFS_H2/t$BATS_TEST_NUMBER/shared/.f.new"
	mv "$DFS_H2/t$BATS_TEST_NUMBER/shared/.f.new" "$DFS_H2/t$BATS_TEST_NUMBER/shared/f"
	# within timeout (1 s) + 1 s of a name index, and some slack for a
	# busy machine
	wait_content "$T/vA/f" "$new" 6 || fail "host 1's view still reads the old f after 6 s"
	wait_content "$T/vC/f" "$new" 6 || fail "host 1's coherent view still reads the old f after 6 s"
	wait_content "$T/vB/f" "$new" 6 || fail "host 2's view still reads the old f"
	touch "$T/stop"
	wait "$ra" || fail "host 1's reader: $(cat "$T/readsA")"
	wait "$rc" || fail "host 1's coherent reader: $(cat "$T/readsC")"
	grep -q '^old [1-9][0-9]* new [1-9]' "$T/readsA" || fail "reader A saw: $(cat "$T/readsA")"
	for p in "$pa" "$pb" "$pc"; do
		sfs_alive "$p" || fail "daemon $p died"
	done
}

dfs_test_branch_add() {
	mkdir -p "$G/base" "$T/rwA" "$T/rwB"
	echo base >"$G/base/f"
	sfs_mount "$T/rwA=rw:$G/base=ro" "$T/vA"
	sfs_mount "$T/rwB=rw:$DFS_H2/t$BATS_TEST_NUMBER/base=ro" "$T/vB"
	# a process of each host keeps a file open meanwhile
	exec {fa}<"$T/vA/f"
	exec {fb}<"$T/vB/f"
	# published through host 2's mount
	mkdir -p "$DFS_H2/t$BATS_TEST_NUMBER/layer2"
	echo patched >"$DFS_H2/t$BATS_TEST_NUMBER/layer2/f"
	echo added >"$DFS_H2/t$BATS_TEST_NUMBER/layer2/new"
	run -0 "$SFS" branch add "$T/vA" "$G/layer2" --position 1
	run -0 "$SFS" branch add "$T/vB" "$DFS_H2/t$BATS_TEST_NUMBER/layer2" --position 1
	local v
	for v in "$T/vA" "$T/vB"; do
		[[ $(cat "$v/f") == patched && $(cat "$v/new") == added ]] ||
			fail "$v after branch add: $(cat "$v/f") / $(cat "$v/new" 2>&1)"
	done
	[[ $(cat <&$fa) == base && $(cat <&$fb) == base ]] || fail "the open files changed under their readers"
	exec {fa}<&- {fb}<&-
	run -0 "$SFS" branch list "$T/vA"
	assert_output --partial "$G/layer2"
}

# regression: a copy that lost its name was kept as an unlinked file
# staged by name, which GlusterFS cannot reopen: every racing open
# failed with EIO
dfs_test_racing_opens() {
	local op i
	for op in unlink rename; do
		rm -rf "$G/lo" "$G/up" && mkdir -p "$G/lo" "$G/up"
		for ((i = 0; i < 60; i++)); do
			echo "$i" >"$G/lo/f$i"
		done
		sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
		ls -l "$MNT" >/dev/null
		run -0 race_copyup "$op" 60
		assert_line --index 0 "0 failures of 60"
		if [[ $op == unlink ]]; then
			run -0 find "$MNT" -maxdepth 1 -name 'f*'
		else
			run -0 find "$MNT" -maxdepth 1 -name 'f*' -size +0
		fi
		assert_output ""
		cu_umount "$MNT"
	done
}

# regression: a lower name too long for ".wh.NAME" takes a 0:0 device,
# made by RENAME_WHITEOUT, which the volume refuses (EINVAL)
dfs_test_long_name() {
	local n252 n253
	n252=$(printf 'g%.0s' {1..252})
	n253=$(printf 'h%.0s' {1..253})
	mkdir -p "$G/lo" "$G/up"
	echo a >"$G/lo/$n252"
	echo b >"$G/lo/$n253"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	run -0 mv "$MNT/$n252" "$MNT/short"
	run -0 rm "$MNT/$n253"
	cu_umount "$MNT"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	run -0 ls "$MNT"
	assert_output short
	[[ $(cat "$MNT/short") == a ]] || fail "short: $(cat "$MNT/short")"
}

# regression: the link count of a copy-up of a hard-linked lower file is
# the lower file's, read from its origin, which a FUSE branch's number
# handle cannot open: over GlusterFS and CephFS both names showed one
# link after a remount, and tar stored the file twice. The lower file is
# now found by the copy's name too.
dfs_test_hardlink_count() {
	local n
	mkdir -p "$G/lo" "$G/up"
	echo x >"$G/lo/a"
	ln "$G/lo/a" "$G/lo/b"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	echo y >>"$MNT/a"
	for n in a b; do
		[[ $(stat -c %h "$MNT/$n") == 2 ]] || fail "$n: $(stat -c %h "$MNT/$n") links after the copy-up"
	done
	cu_umount "$MNT"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	for n in b a; do
		[[ $(stat -c %h "$MNT/$n") == 2 ]] || fail "$n: $(stat -c %h "$MNT/$n") links after a remount"
	done
	run -0 tar -C "$MNT" -cvvf "$T/l.tar" a b
	[[ $(grep -c ' link to ' <<<"$output") == 1 ]] || fail "tar stored the file twice: $output"
	[[ $(cat "$MNT/b") == $'x\ny' ]] || fail "b: $(cat "$MNT/b")"
}

# A lower symlink copied up by a change of its own (touch -h, chown -h)
# and by a rename, one of them hard-linked: its filesystem is told by
# mountinfo, not by a statfs of the symlink, which GlusterFS's server
# follows and answers ESTALE for a target it cannot find from the brick
# (every copy-up of a lower symlink failed there).
dfs_test_symlink_copyup() {
	local ino
	mkdir -p "$G/lo" "$G/up"
	echo x >"$G/lo/a"
	ln -s a "$G/lo/sl"
	ln -s a "$G/lo/p1"
	ln "$G/lo/p1" "$G/lo/p2"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	ino=$(stat -c %i "$MNT/p1")
	run -0 touch -h -d @1000000000 "$MNT/sl"
	run -0 chown -h 5:6 "$MNT/sl"
	run -0 mv "$MNT/p2" "$MNT/p3"
	[[ -L $G/up/sl && -L $G/up/p3 ]] || fail "not copied up: $(ls -la "$G/up")"
	[[ $(stat -c '%Y %u:%g' "$MNT/sl") == "1000000000 5:6" ]] || fail "sl: $(stat -c '%Y %u:%g' "$MNT/sl")"
	[[ $(readlink "$MNT/sl") == a && $(readlink "$MNT/p3") == a ]] || fail "targets: $(readlink "$MNT/sl") $(readlink "$MNT/p3")"
	[[ $(stat -c %i "$MNT/p3") == "$ino" && $(stat -c %i "$MNT/p1") == "$ino" ]] ||
		fail "the pair is no longer one inode: $(stat -c '%n %i' "$MNT/p1" "$MNT/p3")"
	[[ ! -e $MNT/p2 && ! -L $MNT/p2 ]] || fail "p2 still shows"
	[[ $(stat -c %u "$G/lo/sl") == 0 ]] || fail "the lower symlink was changed"
}

# A change through one name of a lower pair whose other name's directory
# was removed through the view (the node was reached last by that name):
# the copy cannot take the name in the removed directory, which the
# client's cached attributes still showed as linked (ENOENT before).
dfs_test_removed_dir_link() {
	mkdir -p "$G/lo/a" "$G/lo/b" "$G/up"
	echo hello >"$G/lo/a/c"
	ln "$G/lo/a/c" "$G/lo/b/a"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	stat "$MNT/a/c" "$MNT/b/a" >/dev/null
	rm "$MNT/b/a"
	rmdir "$MNT/b"
	run -0 truncate -s 2 "$MNT/a/c"
	run -0 cat "$MNT/a/c"
	assert_output he
	cu_umount "$MNT"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	run -0 cat "$MNT/a/c"
	assert_output he
	[[ ! -e $MNT/b ]] || fail "b shows again"
	[[ $(cat "$G/lo/a/c") == hello ]] || fail "the lower file changed"
}

# The link count of a hard-linked lower file's copy that no lower name
# holds any more (renamed, and linked again through the view): on a FUSE
# lower the origin's handle opens nothing, so the lower file is found by
# the name its lower-name record keeps (one too few before). A record
# rewritten to name another lower file is not taken for it.
dfs_test_hardlink_renamed() {
	local n
	mkdir -p "$G/lo" "$G/up"
	echo x >"$G/lo/a"
	ln "$G/lo/a" "$G/lo/b"
	echo other >"$G/lo/o"
	for n in 1 2 3 4; do ln "$G/lo/o" "$G/lo/o$n"; done
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	echo y >>"$MNT/a"
	mv "$MNT/a" "$MNT/c"
	ln "$MNT/c" "$MNT/d"
	run -0 stat -c %h "$MNT/b" "$MNT/c" "$MNT/d"
	assert_output $'3\n3\n3'
	cu_umount "$MNT"
	[[ $("$TOOLS/format_fuzz" lowername-get "$G/up/c") == a ]] ||
		fail "the lower-name record: $("$TOOLS/format_fuzz" lowername-get "$G/up/c")"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	run -0 stat -c %h "$MNT/c" "$MNT/d" "$MNT/b"
	assert_output $'3\n3\n3'
	run -0 tar -C "$MNT" -cvvf "$T/l.tar" b c d
	[[ $(grep -c ' link to ' <<<"$output") == 2 ]] || fail "tar did not store one file: $output"
	rm "$MNT/d"
	run -0 stat -c %h "$MNT/c" "$MNT/b"
	assert_output $'2\n2'
	cu_umount "$MNT"
	# hostile: the record names a lower file with five links
	"$TOOLS/format_fuzz" lowername-set "$G/up/c" o
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT"
	run -0 stat -c %h "$MNT/c"
	((output <= 2)) || fail "the count of another lower file was taken: $output"
	[[ $(cat "$MNT/c") == $'x\ny' && $(cat "$MNT/b") == $'x\ny' ]] || fail "c or b lost its data"
}

# A metacopy's fill that runs out of space on a full volume gives its
# blocks back: GlusterFS refuses the punch with ENOSPC there, and its
# client answers a truncate with the ENOSPC of writes it still holds
# until they are flushed (6.5 of 24 MiB stayed allocated before). The
# file still reads its data below. GlusterFS only: a CephFS here has
# its OSD in a sparse file of many GiB, too large to fill.
dfs_test_fill_enospc() {
	[[ $DFS_ENGINE == glusterfs ]] || skip "the cluster's OSD is too large to fill here"
	local avail
	mkdir -p "$G/lo" "$G/up"
	head -c $((24 * 1024 * 1024)) /dev/urandom >"$G/lo/big"
	sfs_mount "$G/up=rw:$G/lo=ro" "$MNT" metacopy=on
	chmod 0600 "$MNT/big" # a metacopy: its data stays below
	avail=$(df -B1 --output=avail "$G" | tail -1)
	fallocate -l $((avail - 4 * 1024 * 1024)) "$G/filler" || fail "cannot fill the volume"
	run bash -c "echo x >>'$MNT/big'"
	rm -f "$G/filler"
	assert_failure
	assert_output --partial "No space left on device"
	cmp "$G/lo/big" "$MNT/big" || fail "the view lost the file's data"
	run -0 "$TOOLS/cuprobe" segments "$G/up/big"
	assert_output "size $((24 * 1024 * 1024))"
}
