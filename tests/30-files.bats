#!/usr/bin/env bats
# Every ordinary operation on entries of rw branches, done in place:
# checked through the view and on the branch itself. The ro branch must be
# byte-for-byte unchanged after each test.

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool sysprobe lockprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	mkdir -p "$LO/ld" "$LO/both" "$UP/both"
	head -c $((1024 * 1024 + 123)) /dev/urandom >"$LO/rand"
	echo lower >"$LO/lf"
	echo lower >"$LO/both/lf"
	echo upper >"$UP/uf"
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
}

mnt() {
	sfs_mount "$UP:$LO" "$MNT" "$@"
}

lower_unchanged() {
	sfs_assert_unchanged "$LO"
}

# ------------------------------------------------------------ data

@test "reading a lower file gives its bytes, at every offset" {
	mnt
	cmp "$MNT/rand" "$LO/rand"
	run -0 bash -c "dd if='$MNT/rand' bs=1 skip=1048570 count=20 2>/dev/null | od -An -tx1"
	assert_output "$(dd if="$LO/rand" bs=1 skip=1048570 count=20 2>/dev/null | od -An -tx1)"
	lower_unchanged
}

@test "write: a new file lands in the rw branch with its content" {
	mnt
	head -c $((8 * 1024 * 1024 + 7)) /dev/urandom >"$BATS_TEST_TMPDIR/src"
	cp "$BATS_TEST_TMPDIR/src" "$MNT/new"
	cmp "$BATS_TEST_TMPDIR/src" "$UP/new"
	cmp "$BATS_TEST_TMPDIR/src" "$MNT/new"
	[[ ! -e $LO/new ]]
	lower_unchanged
}

@test "write in the middle of a rw file (no truncation) changes only those bytes" {
	printf 'aaaaaaaaaa' >"$UP/mid"
	mnt
	printf 'XY' | dd of="$MNT/mid" bs=1 seek=4 conv=notrunc 2>/dev/null
	run -0 cat "$UP/mid"
	assert_output aaaaXYaaaa
	run -0 cat "$MNT/mid"
	assert_output aaaaXYaaaa
	lower_unchanged
}

@test "a write through one descriptor is seen through another and on the branch" {
	mnt
	exec 5<>"$MNT/shared"
	printf 'hello' >&5
	run -0 cat "$MNT/shared"
	assert_output hello
	exec 5>&-
	run -0 cat "$UP/shared"
	assert_output hello
}

@test "create with O_EXCL: a new name is created, an existing one is EEXIST" {
	mnt
	run -0 "$TOOLS/sysprobe" open "$MNT/x" wronly,creat,excl 0644 data
	run -0 cat "$UP/x"
	assert_output data
	run -1 "$TOOLS/sysprobe" open "$MNT/x" wronly,creat,excl
	assert_output EEXIST
	run -1 "$TOOLS/sysprobe" open "$MNT/uf" wronly,creat,excl
	assert_output EEXIST
	run -1 "$TOOLS/sysprobe" open "$MNT/lf" wronly,creat,excl
	assert_output EEXIST
	run -0 cat "$UP/uf"
	assert_output upper
	lower_unchanged
}

@test "create with O_TRUNC empties a rw file, in the branch too" {
	echo "long old content" >"$UP/t"
	mnt
	run -0 "$TOOLS/sysprobe" open "$MNT/t" wronly,trunc 0644 new
	run -0 cat "$UP/t"
	assert_output new
	run -0 "$TOOLS/sysprobe" open "$MNT/t" wronly,creat,trunc
	[[ ! -s $UP/t && ! -s $MNT/t ]] || fail "not empty after O_TRUNC"
	lower_unchanged
}

@test "O_APPEND writes go to the end" {
	echo one >"$UP/ap"
	mnt
	echo two >>"$MNT/ap"
	"$TOOLS/sysprobe" open "$MNT/ap" wronly,append 0644 $'three\n' >/dev/null
	run -0 cat "$UP/ap"
	assert_output $'one\ntwo\nthree'
	run -0 cat "$MNT/ap"
	assert_output $'one\ntwo\nthree'
}

@test "O_APPEND from two processes at once loses no write" {
	mnt
	: >"$MNT/log"
	for p in a b; do
		(for i in $(seq 300); do echo "$p$i" >>"$MNT/log"; done) &
	done
	wait
	run -0 wc -l <"$UP/log"
	assert_output 600
	run -0 bash -c "sort '$MNT/log' | uniq | wc -l"
	assert_output 600
}

@test "truncate shrinks and grows (with zeros) a rw file" {
	printf 'abcdefghij' >"$UP/tr"
	mnt
	truncate -s 3 "$MNT/tr"
	run -0 cat "$UP/tr"
	assert_output abc
	run -0 "$TOOLS/sysprobe" truncate "$MNT/tr" 1048576
	[[ $(stat -c %s "$UP/tr") == 1048576 && $(stat -c %s "$MNT/tr") == 1048576 ]] || fail "size not 1 MiB"
	cmp <(tail -c +4 "$MNT/tr") <(head -c $((1048576 - 3)) /dev/zero)
	lower_unchanged
}

@test "a sparse file stays sparse in the rw branch" {
	mnt
	truncate -s 1G "$MNT/sparse"
	echo end >>"$MNT/sparse"
	[[ $(stat -c %s "$UP/sparse") == $((1024 * 1024 * 1024 + 4)) ]]
	(($(stat -c %b "$UP/sparse") < 1024)) || fail "not sparse: $(stat -c %b "$UP/sparse") blocks"
}

@test "fsync and fdatasync succeed on rw files and directories" {
	mnt
	echo data >"$MNT/s"
	run -0 "$TOOLS/sysprobe" fsync "$MNT/s"
	run -0 "$TOOLS/sysprobe" fdatasync "$MNT/s"
	run -0 "$TOOLS/sysprobe" fsync "$MNT/both"
	run -0 "$TOOLS/sysprobe" fsync "$MNT"
	run -0 cat "$UP/s"
	assert_output data
}

# ------------------------------------------------------------ namespace

@test "mkdir makes the directory in the rw branch, with the caller's umask" {
	mnt
	(umask 027 && mkdir "$MNT/d")
	[[ -d $UP/d ]] || fail "no $UP/d"
	run -0 stat -c %a "$UP/d" "$MNT/d"
	assert_output $'750\n750'
	run -0 "$TOOLS/sysprobe" mkdir "$MNT/d2" 0700
	run -0 stat -c %a "$UP/d2"
	assert_output 700
	[[ ! -e $LO/d ]]
	lower_unchanged
}

@test "a new file gets the caller's umask and mode" {
	mnt
	(umask 077 && echo x >"$MNT/f")
	run -0 stat -c %a "$UP/f" "$MNT/f"
	assert_output $'600\n600'
}

@test "new entries in a merged directory go to its rw part" {
	mnt
	echo n >"$MNT/both/new"
	mkdir "$MNT/both/newd"
	[[ -f $UP/both/new && -d $UP/both/newd ]] || fail "not in $UP/both"
	run -0 ls "$MNT/both"
	assert_output $'lf\nnew\nnewd'
	lower_unchanged
}

@test "mkfifo makes a FIFO in the rw branch, and it carries data" {
	mnt
	mkfifo "$MNT/fifo"
	run -0 stat -c %F "$UP/fifo" "$MNT/fifo"
	assert_output $'fifo\nfifo'
	(echo through >"$MNT/fifo") &
	run -0 timeout 10 cat "$MNT/fifo"
	assert_output through
	wait
}

@test "mknod of char and block devices (as root) in the rw branch" {
	sfs_require_root "mknod of devices"
	mnt
	mknod "$MNT/chr" c 1 3
	mknod "$MNT/blk" b 7 250
	run -0 stat -c '%F %t:%T' "$UP/chr" "$UP/blk" "$MNT/chr" "$MNT/blk"
	assert_output $'character special file 1:3\nblock special file 7:fa\ncharacter special file 1:3\nblock special file 7:fa'
}

@test "-o dev: a device node in the view can be opened" {
	sfs_require_root "mknod of devices"
	mnt dev
	mknod "$MNT/null" c 1 3
	run -0 bash -c "echo discard >'$MNT/null' && head -c 5 '$MNT/null' | wc -c"
	assert_output 0
}

@test "symlink and readlink (also dangling and 1000-byte targets)" {
	mnt
	local long
	long=$(printf 'x%.0s' {1..1000})
	ln -s uf "$MNT/l"
	ln -s /no/such/target "$MNT/dangling"
	ln -s "$long" "$MNT/longl"
	run -0 readlink "$UP/l" "$UP/dangling" "$UP/longl"
	assert_output "$(printf 'uf\n/no/such/target\n%s' "$long")"
	run -0 readlink "$MNT/l" "$MNT/dangling" "$MNT/longl"
	assert_output "$(printf 'uf\n/no/such/target\n%s' "$long")"
	run -0 stat -c '%F %s' "$MNT/l"
	assert_output "symbolic link 2"
	run -0 cat "$MNT/l"
	assert_output upper
}

@test "link: two names, one st_ino, link count 2, in the view and the branch" {
	mnt
	echo data >"$MNT/a"
	ln "$MNT/a" "$MNT/b"
	[[ $(stat -c %i "$UP/a") == $(stat -c %i "$UP/b") ]] || fail "not a hard link in the branch"
	run -0 stat -c '%i %h' "$MNT/a" "$MNT/b"
	[[ ${lines[0]} == "${lines[1]}" && ${lines[0]} == *" 2" ]] || fail "view: $output"
	echo more >>"$MNT/b"
	run -0 cat "$MNT/a"
	assert_output $'data\nmore'
	rm "$MNT/b"
	run -0 stat -c %h "$MNT/a"
	assert_output 1
}

@test "unlink removes from the rw branch; an open file stays readable" {
	echo bye >"$UP/gone"
	echo open >"$UP/opened"
	mnt
	rm "$MNT/gone"
	[[ ! -e $UP/gone && ! -e $MNT/gone ]] || fail "still there"
	exec 6<"$MNT/opened"
	rm "$MNT/opened"
	run -0 cat <&6
	assert_output open
	exec 6<&-
	lower_unchanged
}

@test "rmdir removes an empty rw directory" {
	mkdir "$UP/ed"
	mnt
	rmdir "$MNT/ed"
	[[ ! -e $UP/ed && ! -e $MNT/ed ]] || fail "still there"
}

@test "rename of a file within the rw branch (new name, over a file, into a subdir)" {
	echo a >"$UP/a"
	echo victim >"$UP/v"
	mkdir "$UP/sub"
	mnt
	local ino
	ino=$(stat -c %i "$MNT/a")
	mv "$MNT/a" "$MNT/b"
	[[ ! -e $UP/a && $(cat "$UP/b") == a ]] || fail "rename to a new name"
	[[ $(stat -c %i "$MNT/b") == "$ino" ]] || fail "st_ino changed across rename"
	mv "$MNT/b" "$MNT/v"
	[[ $(cat "$UP/v") == a && $(cat "$MNT/v") == a ]] || fail "rename over a file"
	mv "$MNT/v" "$MNT/sub/w"
	[[ $(cat "$UP/sub/w") == a && ! -e $MNT/v ]] || fail "rename into a subdir"
	lower_unchanged
}

@test "rename of a directory with content within the rw branch" {
	mkdir -p "$UP/dir/deep"
	echo x >"$UP/dir/deep/f"
	mnt
	mv "$MNT/dir" "$MNT/moved"
	[[ ! -e $UP/dir && $(cat "$UP/moved/deep/f") == x ]] || fail "branch: $(ls -R "$UP")"
	run -0 cat "$MNT/moved/deep/f"
	assert_output x
	run -1 "$TOOLS/sysprobe" access "$MNT/dir" F
	assert_output ENOENT
}

@test "rename RENAME_NOREPLACE: EEXIST over an existing name, else renames" {
	echo a >"$UP/a"
	echo b >"$UP/b"
	mnt
	run -1 "$TOOLS/sysprobe" rename "$MNT/a" "$MNT/b" noreplace
	assert_output EEXIST
	[[ $(cat "$UP/a") == a && $(cat "$UP/b") == b ]] || fail "changed by a refused rename"
	run -0 "$TOOLS/sysprobe" rename "$MNT/a" "$MNT/c" noreplace
	[[ ! -e $UP/a && $(cat "$UP/c") == a ]] || fail "not renamed"
}

@test "rename RENAME_EXCHANGE swaps two rw entries (file/file and file/dir)" {
	echo a >"$UP/a"
	echo b >"$UP/b"
	mkdir "$UP/d"
	touch "$UP/d/inside"
	mnt
	run -0 "$TOOLS/sysprobe" rename "$MNT/a" "$MNT/b" exchange
	[[ $(cat "$UP/a") == b && $(cat "$UP/b") == a ]] || fail "branch not swapped"
	[[ $(cat "$MNT/a") == b && $(cat "$MNT/b") == a ]] || fail "view not swapped"
	run -0 "$TOOLS/sysprobe" rename "$MNT/a" "$MNT/d" exchange
	[[ -f $UP/a/inside && $(cat "$UP/d") == b ]] || fail "file/dir not swapped"
	[[ -f $MNT/a/inside && $(cat "$MNT/d") == b ]] || fail "view: file/dir not swapped"
	run -1 "$TOOLS/sysprobe" rename "$MNT/a" "$MNT/nothere" exchange
	assert_output ENOENT
}

# ------------------------------------------------------------ attributes

@test "chmod changes the rw entry's mode (file, setuid, directory)" {
	touch "$UP/m"
	mkdir "$UP/md"
	mnt
	chmod 0640 "$MNT/m"
	chmod 4755 "$MNT/both"
	chmod 0700 "$MNT/md"
	run -0 stat -c %a "$UP/m" "$UP/both" "$UP/md"
	assert_output $'640\n4755\n700'
	run -0 stat -c %a "$MNT/m" "$MNT/both" "$MNT/md"
	assert_output $'640\n4755\n700'
	lower_unchanged
}

@test "chown changes the rw entry's owner; chown -h changes a symlink, not its target" {
	sfs_require_root "chown to other users"
	touch "$UP/o"
	ln -s o "$UP/ol"
	mnt
	chown 1234:5678 "$MNT/o"
	run -0 stat -c %u:%g "$UP/o" "$MNT/o"
	assert_output $'1234:5678\n1234:5678'
	chown -h 4321:8765 "$MNT/ol"
	run -0 stat -c %u:%g "$UP/ol" "$UP/o"
	assert_output $'4321:8765\n1234:5678'
	chown 42 "$MNT/both"
	run -0 stat -c %u "$UP/both"
	assert_output 42
	lower_unchanged
}

@test "utimens with nanoseconds: atime and mtime, each alone, and on a symlink" {
	touch "$UP/t"
	ln -s t "$UP/tl"
	mnt
	touch -d @1500000000.123456789 "$MNT/t"
	run -0 stat -c '%.9X %.9Y' "$UP/t" "$MNT/t"
	assert_output $'1500000000.123456789 1500000000.123456789\n1500000000.123456789 1500000000.123456789'
	touch -m -d @1600000000.000000001 "$MNT/t"
	run -0 stat -c '%.9X %.9Y' "$UP/t" "$MNT/t"
	assert_output $'1500000000.123456789 1600000000.000000001\n1500000000.123456789 1600000000.000000001'
	touch -a -d @1400000000.999999999 "$MNT/t"
	run -0 stat -c '%.9X %.9Y' "$UP/t"
	assert_output '1400000000.999999999 1600000000.000000001'
	touch -h -m -d @1300000000.5 "$MNT/tl"
	run -0 stat -c '%.9Y' "$UP/tl" "$UP/t"
	assert_output $'1300000000.500000000\n1600000000.000000001'
	touch -d @1500000000.25 "$MNT/both"
	run -0 stat -c '%.9Y' "$UP/both"
	assert_output 1500000000.250000000
	lower_unchanged
}

@test "utimens to now (touch without -d) sets the current time" {
	touch -d @1000000000 "$UP/now"
	mnt
	local before
	before=$(date +%s)
	touch "$MNT/now"
	(($(stat -c %Y "$UP/now") >= before)) || fail "mtime not now: $(stat -c %Y "$UP/now")"
}

@test "a write updates the rw file's mtime" {
	touch -d @1000000000 "$UP/w"
	mnt
	echo x >>"$MNT/w"
	(($(stat -c %Y "$UP/w") > 1000000000)) || fail "mtime not updated on the branch"
	(($(stat -c %Y "$MNT/w") > 1000000000)) || fail "mtime not updated in the view"
}

@test "access: F_OK, W_OK, and X_OK denied on a file without x bits even for root" {
	install -m 0644 /dev/null "$UP/rx"
	install -m 0755 /dev/null "$UP/x"
	mnt
	run -0 "$TOOLS/sysprobe" access "$MNT/rx" F
	run -0 "$TOOLS/sysprobe" access "$MNT/rx" RW
	run -1 "$TOOLS/sysprobe" access "$MNT/rx" X
	assert_output EACCES
	run -0 "$TOOLS/sysprobe" access "$MNT/x" X
	run -1 "$TOOLS/sysprobe" access "$MNT/nothere" F
	assert_output ENOENT
}

@test "statfs reports the highest rw branch's filesystem, not the first branch's" {
	# the first branch is ro and on another filesystem than the rw one
	local other=$BATS_TEST_TMPDIR/other
	mkdir -p "$other"
	[[ $(stat -f -c %b "$other") != $(stat -f -c %b "$UP") ]] || skip "needs $BATS_TEST_TMPDIR on another filesystem than the image"
	sfs_mount "$other=ro:$UP=rw" "$MNT"
	local want got
	want=$("$TOOLS/sysprobe" statfs "$UP" | sed -n 2p | grep -o 'blocks=[0-9]* \|files=[0-9]* \|namelen=[0-9]*' | tr -d '\n')
	got=$("$TOOLS/sysprobe" statfs "$MNT" | sed -n 2p | grep -o 'blocks=[0-9]* \|files=[0-9]* \|namelen=[0-9]*' | tr -d '\n')
	[[ $got == "$want" ]] || fail "view: $got; rw branch: $want"
	[[ $(stat -f -c %S "$MNT") == $(stat -f -c %S "$UP") ]] || fail "fundamental block size differs"
}

@test "statfs free space follows writes to the rw branch" {
	mnt
	local before after
	before=$(stat -f -c %a "$MNT")
	head -c $((64 * 1024 * 1024)) /dev/zero >"$MNT/big"
	sync
	after=$(stat -f -c %a "$MNT")
	local bs
	bs=$(stat -f -c %S "$MNT")
	(((before - after) * bs >= 60 * 1024 * 1024)) || fail "free space went from $before to $after blocks of $bs"
}

# ------------------------------------------------------------ locks

@test "POSIX locks (F_SETLK/F_GETLK) conflict between two processes" {
	echo data >"$UP/lk"
	mnt
	run -0 "$TOOLS/lockprobe" posix "$MNT/lk"
	assert_line PASS
}

@test "a blocking POSIX lock (F_SETLKW) waits for the holder" {
	echo data >"$UP/lk"
	mnt
	run -0 timeout 30 "$TOOLS/lockprobe" wait "$MNT/lk"
	assert_line PASS
}

@test "open file description locks (F_OFD_SETLK) conflict between two processes" {
	echo data >"$UP/lk"
	mnt
	run -0 "$TOOLS/lockprobe" ofd "$MNT/lk"
	assert_line PASS
}

@test "flock conflicts between two processes" {
	echo data >"$UP/lk"
	mnt
	run -0 "$TOOLS/lockprobe" flock "$MNT/lk"
	assert_line PASS
}

# ------------------------------------------------------------ branches

@test "with two rw branches, new entries go to the highest" {
	local rw2=$T/rw2
	mkdir -p "$rw2/d"
	echo two >"$rw2/f2"
	sfs_mount "$UP=rw:$rw2=rw:$LO" "$MNT"
	touch "$MNT/new"
	[[ -f $UP/new && ! -e $rw2/new ]] || fail "new file not (only) in the highest rw branch"
	lower_unchanged
}

@test "entries of a lower rw branch are written, chmodded and removed in place" {
	local rw2=$T/rw2
	mkdir -p "$rw2"
	echo two >"$rw2/f2"
	echo gone >"$rw2/g2"
	sfs_mount "$UP=rw:$rw2=rw:$LO" "$MNT"
	echo more >>"$MNT/f2"
	chmod 0600 "$MNT/f2"
	rm "$MNT/g2"
	run -0 cat "$rw2/f2"
	assert_output $'two\nmore'
	run -0 stat -c %a "$rw2/f2"
	assert_output 600
	[[ ! -e $rw2/g2 && ! -e $UP/f2 && ! -e $UP/g2 ]] || fail "not done in place"
	lower_unchanged
}

@test "a union of ro branches only refuses creation with EROFS" {
	sfs_mount "$UP=ro:$LO=ro" "$MNT"
	run -1 "$TOOLS/sysprobe" open "$MNT/new" wronly,creat
	assert_output EROFS
	run -1 "$TOOLS/sysprobe" mkdir "$MNT/newd"
	assert_output EROFS
	run -0 cat "$MNT/uf"
	assert_output upper
	[[ ! -e $UP/.stackfs ]] || fail "metadata dir made in a ro branch"
	lower_unchanged
}

@test "the ro branch is byte-for-byte unchanged after a session of rw work" {
	mnt
	mkdir -p "$MNT/both/x/y"
	echo 1 >"$MNT/both/x/y/f"
	mv "$MNT/both/x" "$MNT/both/z"
	ln -s lf "$MNT/both/sl"
	chmod 700 "$MNT/both"
	touch -d @1 "$MNT/both"
	cat "$MNT/rand" "$MNT/lf" "$MNT/ld" >/dev/null 2>&1 || true
	ls -laR "$MNT" >/dev/null
	rm -r "$MNT/both/z"
	run -0 "$SFS" umount "$MNT"
	lower_unchanged
}

# ------------------------------------------------------------ O_DIRECT

# dd with oflag/iflag=direct, $1 the dd operands; prints dd's error.
dd_direct() {
	dd status=none "$@" 2>&1
}

@test "regression: O_DIRECT writes and reads in every mode (passthrough, nopassthrough, writeback); an unaligned one fails as on the branch" {
	local opts native
	head -c 8192 /dev/urandom >"$BATS_TEST_TMPDIR/src"
	# what the branch's filesystem says to an unaligned O_DIRECT write
	native=$(dd_direct if="$BATS_TEST_TMPDIR/src" of="$T/native" bs=1000 count=1 oflag=direct) && native=ok
	for opts in "" nopassthrough writeback; do
		mnt "$opts"
		run -0 dd_direct if="$BATS_TEST_TMPDIR/src" of="$MNT/d" bs=4096 count=2 oflag=direct
		cmp "$BATS_TEST_TMPDIR/src" "$UP/d" || fail "-o '$opts': the branch file differs"
		run -0 dd_direct if="$MNT/d" of="$BATS_TEST_TMPDIR/back" bs=4096 iflag=direct
		cmp "$BATS_TEST_TMPDIR/src" "$BATS_TEST_TMPDIR/back" || fail "-o '$opts': read back differs"
		# a lower file is read by the daemon in every mode
		run -0 dd_direct if="$MNT/rand" of="$BATS_TEST_TMPDIR/lback" bs=64k iflag=direct
		cmp "$LO/rand" "$BATS_TEST_TMPDIR/lback" || fail "-o '$opts': the lower file read back differs"
		run dd_direct if="$BATS_TEST_TMPDIR/src" of="$MNT/u" bs=1000 count=1 oflag=direct
		if [[ $native == ok ]]; then
			((status == 0)) || fail "-o '$opts': unaligned O_DIRECT write failed, natively not: $output"
		else
			((status != 0)) || fail "-o '$opts': unaligned O_DIRECT write worked, natively: $native"
			assert_output --partial "Invalid argument"
		fi
		"$SFS" umount "$MNT"
		rm -f "$UP/d" "$UP/u"
	done
	lower_unchanged
}
