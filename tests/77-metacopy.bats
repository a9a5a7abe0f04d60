#!/usr/bin/env bats
# Kernel overlayfs metacopy uppers (issue 15.1): with metacopy=on, a chmod
# or chown through the kernel's overlayfs copies up the metadata alone;
# the upper file (trusted.overlay.metacopy) holds the size but no data,
# which stays in the lower file at the same path or at the file's
# redirect. Such an upper, used as a branch of stackfs above the same
# lower, must read the lower's data, never the zeros the upper file
# holds; where the data is nowhere, reads fail with EIO and a log line.
# Each upper is made by the kernel's own overlayfs in the test.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd getfattr
	sfs_setup_branches K W
	KMNT=$BATS_TEST_TMPDIR/kernel
	mkdir -p "$KMNT"
	LOG=$BATS_TEST_TMPDIR/daemon.log
}

teardown() {
	sfs_cleanup
}

# The lower: files of several sizes (one of 4 MiB of random bytes), one
# in a directory that the kernel view then renames.
lower() {
	mkdir -p "$LO/d" "$LO/keep"
	head -c 4194304 /dev/urandom >"$LO/big"
	echo small >"$LO/small"
	echo owned >"$LO/owned"
	echo moved >"$LO/moved"
	echo indir >"$LO/d/f"
	echo kept >"$LO/keep/g"
	chmod 0644 "$LO/big" "$LO/small" "$LO/owned" "$LO/moved" "$LO/d/f"
}

# kernel_changes: metadata-only changes through the kernel's overlayfs
# with metacopy=on, making $K a metacopy upper; skips where this kernel
# makes no metacopy files.
kernel_changes() {
	sfs_record mount "$KMNT"
	mount -t overlay overlay -o "metacopy=on,redirect_dir=on,lowerdir=$LO,upperdir=$K,workdir=$W" \
		"$KMNT" || skip "kernel overlayfs does not mount with metacopy=on"
	chmod 0600 "$KMNT/big" "$KMNT/small"
	chown 1000:1000 "$KMNT/owned"
	chmod 0640 "$KMNT/moved" "$KMNT/d/f"
	mv "$KMNT/moved" "$KMNT/renamed"
	mv "$KMNT/d" "$KMNT/d2"
	chmod 0604 "$KMNT/keep/g"
	umount "$KMNT"
	getfattr -h -n trusted.overlay.metacopy "$K/big" >/dev/null 2>&1 ||
		skip "the kernel made no metacopy file"
	# the upper files hold no data: what a reader of them alone gets
	cmp -s "$K/big" "$LO/big" && fail "the metacopy upper holds the data itself"
	[[ $(stat -c %s "$K/big") == 4194304 ]] || fail "the metacopy upper has another size"
}

# view_state DIR: mode, owner, size and content hash of each file.
view_state() {
	(cd "$1" && find . -type f -printf '%p %m %u:%g %s\n' | LC_ALL=C sort |
		while read -r p rest; do echo "$p $rest $(sha256sum <"$p" | cut -c1-16)"; done)
}

# The kernel's own view of the metacopy upper over the lower, read-only.
kernel_view() {
	mount -t overlay overlay -o "metacopy=on,redirect_dir=follow,lowerdir=$K:$LO" "$KMNT" ||
		fail "kernel overlayfs does not mount its own upper as a lower layer"
	view_state "$KMNT" >"$T/kernel.txt"
	umount "$KMNT"
}

@test "metacopy upper as a ro branch: the lower's data under the upper's metadata, as the kernel shows it" {
	lower
	kernel_changes
	kernel_view
	sfs_mount "$UP:$K=ro:$LO=ro" "$MNT"
	view_state "$MNT" >"$T/stackfs.txt"
	run -0 diff "$T/kernel.txt" "$T/stackfs.txt"
	cmp "$MNT/big" "$LO/big"
	[[ $(stat -c %a "$MNT/big") == 600 ]]
	[[ $(stat -c %u "$MNT/owned") == 1000 ]]
	run -0 cat "$MNT/renamed"
	assert_output moved
	run -0 cat "$MNT/d2/f"
	assert_output indir
	# st_blocks: what the data takes, not the empty upper file
	(($(stat -c %b "$MNT/big") >= 8192)) || fail "blocks $(stat -c %b "$MNT/big")"
}

@test "metacopy upper below a rw branch: a write copies up the lower's data, never zeros" {
	lower
	kernel_changes
	sfs_mount "$UP:$K=ro:$LO=ro" "$MNT"
	echo more >>"$MNT/small"
	run -0 cat "$MNT/small"
	assert_output $'small\nmore'
	dd if=/dev/zero of="$MNT/big" bs=1 count=1 seek=4194304 conv=notrunc status=none
	cmp -n 4194304 "$MNT/big" "$LO/big"
	echo x >>"$MNT/renamed"
	run -0 cat "$MNT/renamed"
	assert_output $'moved\nx'
	"$SFS" umount "$MNT"
	# the copies are whole files of the rw branch, with the upper's mode
	run -1 getfattr -h -n trusted.overlay.metacopy "$UP/small"
	[[ $(stat -c %a "$UP/small") == 600 ]]
	cmp -n 4194304 "$UP/big" "$LO/big"
	# and the kernel's upper is untouched
	getfattr -h -n trusted.overlay.metacopy "$K/small" >/dev/null
}

@test "metacopy upper as the rw branch: a write brings the data in and ends the metacopy; the kernel reads the result" {
	lower
	kernel_changes
	sfs_mount "$K:$LO=ro" "$MNT"
	run -0 cat "$MNT/small"
	assert_output small
	# a reader that opened before the write follows it to the file
	exec {rfd}<"$MNT/big"
	echo tail >>"$MNT/big"
	head -c 4194304 <&$rfd | cmp - "$LO/big"
	exec {rfd}<&-
	: >"$MNT/owned"                     # O_TRUNC: no data needed
	truncate -s 3 "$MNT/renamed"
	run -0 cat "$MNT/renamed"
	assert_output mov
	"$SFS" umount "$MNT"
	for f in big owned renamed; do
		run -1 getfattr -h -n trusted.overlay.metacopy "$K/$f"
	done
	run -1 getfattr -h -n trusted.overlay.redirect "$K/renamed"
	getfattr -h -n trusted.overlay.metacopy "$K/small" >/dev/null # not written: still one
	[[ $(stat -c %s "$K/owned") == 0 ]]
	[[ $(stat -c %u "$K/owned") == 1000 ]]
	# the kernel's overlayfs over the same upper agrees
	sfs_record mount "$KMNT"
	mount -t overlay overlay -o "metacopy=on,redirect_dir=on,lowerdir=$LO,upperdir=$K,workdir=$W" "$KMNT"
	run -0 cat "$KMNT/small" "$KMNT/renamed"
	assert_output $'small\nmov'
	head -c 4194304 "$KMNT/big" | cmp - "$LO/big"
	run -0 tail -c 5 "$KMNT/big"
	assert_output tail
	umount "$KMNT"
}

@test "a metacopy whose data is gone reads as EIO with a log line, never as zeros; its metadata still shows" {
	lower
	kernel_changes
	rm "$LO/small" "$LO/moved"
	sfs_mount "$UP:$K=ro:$LO=ro" "$MNT" "log=$LOG"
	[[ $(stat -c '%a %s' "$MNT/small") == "600 6" ]]
	run cat "$MNT/small"
	((status != 0))
	[[ $output == *"Input/output error"* ]] || fail "cat said: $output"
	run cat "$MNT/renamed"
	[[ $output == *"Input/output error"* ]] || fail "cat said: $output"
	# nor can a copy-up make a file of zeros from it
	run bash -c "echo x >>'$MNT/small'"
	((status != 0))
	[[ ! -e $UP/small ]] || fail "a copy was placed: $(od -c "$UP/small" | head -3)"
	cat "$MNT/big" >/dev/null  # the others still read
	"$SFS" umount "$MNT"
	grep -q 'metacopy file whose data is in no branch below' "$LOG" ||
		fail "no log line: $(cat "$LOG")"
}

@test "a metacopy mark that is not the kernel's (user.overlay.metacopy) is not followed" {
	echo secret >"$LO/f"
	chmod 0600 "$LO/f"
	mkdir -p "$K"
	truncate -s 7 "$K/f"
	chmod 0644 "$K/f"
	setfattr -n user.overlay.metacopy "$K/f"
	sfs_mount "$UP:$K=ro:$LO=ro" "$MNT"
	run -0 od -An -c "$MNT/f"
	[[ $output != *s*e*c*r*e*t* ]] || fail "the lower's data showed: $output"
}

@test "commit of a metacopy upper into its lower: each file placed whole, with its new metadata" {
	lower
	kernel_changes
	kernel_view
	sfs_mount "$K:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	run -0 "$SFS" commit "$K" --into "$LO"
	view_state "$LO" >"$T/lower.txt"
	run -0 diff "$T/kernel.txt" "$T/lower.txt"
	[[ ! -e $LO/moved && ! -e $LO/d ]] || fail "old names left: $(ls "$LO")"
	run -1 getfattr -h -n trusted.overlay.metacopy "$LO/small"
}

@test "diff --format=oci of a metacopy upper: each file's data from below, never zeros; none at all when one has no data" {
	lower
	kernel_changes
	sfs_mount "$K:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	"$SFS" diff --format=oci "$K" >"$T/layer.tar"
	run -0 tar -xOf "$T/layer.tar" small
	assert_output small
	tar -xOf "$T/layer.tar" big | cmp - "$LO/big"
	run -0 tar -xOf "$T/layer.tar" renamed
	assert_output moved
	rm "$LO/small"
	run "$SFS" diff --format=oci "$K"
	((status == 1)) || fail "exit $status"
	assert_output --partial "metacopy file whose data is in no branch below"
}

@test "commit refuses a metacopy upper whose data is gone, and changes nothing below" {
	lower
	kernel_changes
	sfs_mount "$K:$LO=ro" "$MNT"
	"$SFS" umount "$MNT"
	rm "$LO/small"
	sfs_snapshot "$LO"
	run "$SFS" commit "$K" --into "$LO"
	((status != 0)) || fail "commit succeeded: $output"
	assert_output --partial "metacopy file whose data is in no branch below"
	sfs_assert_unchanged "$LO"
}

# A composefs-style pair: a metadata layer M of metacopy files whose
# absolute redirects name content-addressed objects in a data-only layer D
# (kernel overlayfs's lowerdir=M::D, Linux 6.5+).
data_layers() {
	local m=$T/M d=$T/D
	mkdir -p "$m/etc" "$d/objects/ab" "$d/objects/cd"
	printf 'config data\n' >"$d/objects/ab/cdef"
	head -c 1048576 /dev/urandom >"$d/objects/cd/0123"
	truncate -s 12 "$m/etc/conf"
	truncate -s 1048576 "$m/blob"
	setfattr -n trusted.overlay.metacopy "$m/etc/conf"
	setfattr -n trusted.overlay.redirect -v /objects/ab/cdef "$m/etc/conf"
	setfattr -n trusted.overlay.metacopy "$m/blob"
	setfattr -n trusted.overlay.redirect -v /objects/cd/0123 "$m/blob"
	chmod 0640 "$m/etc/conf"
	truncate -s 5 "$m/gone"
	setfattr -n trusted.overlay.metacopy "$m/gone"
	setfattr -n trusted.overlay.redirect -v /objects/ee/none "$m/gone"
}

@test "data-only branches (=data, lowerdir=M::D): metacopy files read their objects there, as the kernel shows them" {
	sfs_require_cmd setfattr
	data_layers
	sfs_record mount "$KMNT"
	mount -t overlay overlay -o "lowerdir=$T/M::$T/D" "$KMNT" ||
		skip "this kernel's overlayfs has no data-only layers"
	(cd "$KMNT" && find . -printf '%p %y\n' | LC_ALL=C sort) >"$T/kernel.txt"
	cmp "$KMNT/blob" "$T/D/objects/cd/0123" || fail "the kernel does not read the object"
	umount "$KMNT"
	sfs_mount "$UP:$T/M=ro:$T/D=data" "$MNT"
	(cd "$MNT" && find . -printf '%p %y\n' | LC_ALL=C sort) >"$T/stackfs.txt"
	run -0 diff "$T/kernel.txt" "$T/stackfs.txt"
	run -0 cat "$MNT/etc/conf"
	assert_output "config data"
	cmp "$MNT/blob" "$T/D/objects/cd/0123"
	[[ $(stat -c %a "$MNT/etc/conf") == 640 ]]
	run ls "$MNT/objects"
	((status != 0)) || fail "the data-only branch's names show: $output"
	run cat "$MNT/gone"
	[[ $output == *"Input/output error"* ]] || fail "cat said: $output"
	# a write copies the object's data up
	echo more >>"$MNT/etc/conf"
	run -0 cat "$UP/etc/conf"
	assert_output $'config data\nmore'
	run -0 "$SFS" status "$MNT"
	assert_output --partial "data"
}

@test "data-only branches come last: a spec with one above another branch is refused, and so is a live change that would put one there" {
	mkdir -p "$T/M" "$T/D" "$T/E"
	run "$SFS" mount "$UP:$T/D=data:$T/M=ro" "$MNT"
	((status != 0)) || fail "mounted: $output"
	assert_output --partial "data-only branches come last"
	run "$SFS" mount "$T/D=data" "$MNT"
	((status != 0)) || fail "mounted: $output"
	sfs_mount "$UP:$T/M=ro:$T/D=data" "$MNT"
	run "$SFS" branch add "$MNT" "$T/E" --bottom
	((status != 0)) || fail "branch add below the data-only branch: $output"
	assert_output --partial "data-only"
	run -0 "$SFS" branch add "$MNT" "$T/E" --top
}
