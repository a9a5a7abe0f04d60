#!/usr/bin/env bats
# FUSE passthrough (stackfs/transport/passthrough.c): reads, writes and mmap of a
# file whose top layer is in a rw branch go from the kernel straight to
# the branch file. The counter passthrough_opens of `stackfs status`
# tells which opens passed through. Lower files never do (a copy-up must
# move their descriptors to the copy), the kernel's rule that one inode
# is not open both ways at once holds, and -o nopassthrough, -o writeback
# and a branch on a stacked filesystem turn it off without an error.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lower >"$LO/l"
	sfs_snapshot "$LO"
}

teardown() {
	sfs_cleanup
	# (the overlayfs mount of the last test, after the union over it)
	[[ -z ${OVL:-} ]] || ! mountpoint -q "$OVL" || umount "$OVL"
}

# pt_opens: the mount's passthrough_opens counter
pt_opens() {
	"$SFS" status "$MNT" | awk '$1 == "passthrough_opens" { print $2 }'
}

# pt_state: on or off, as `stackfs status` says
pt_state() {
	"$SFS" status "$MNT" | awk '$1 == "passthrough" { print $2 }'
}

# wait_released: until the daemon counts no open file (the RELEASE of a
# closed descriptor reaches it asynchronously), at most 10 s
wait_released() {
	local i
	for ((i = 0; i < 100; i++)); do
		"$SFS" status "$MNT" | grep -Eq '^open_files[[:space:]]+0$' && return 0
		sleep 0.1
	done
	fail "the daemon still counts open files after 10 s"
}

# the kernel can pass through only from 6.9 and for a daemon run as root
require_pt() {
	local v
	v=$(uname -r)
	v=${v%%-*}
	if (( ${v%%.*} < 6 || (${v%%.*} == 6 && $(cut -d. -f2 <<<"$v") < 9) )); then
		skip "FUSE passthrough needs Linux 6.9 (this is $(uname -r))"
	fi
}

@test "passthrough: a new file is created, written and read through it; the data is the branch's" {
	require_pt
	sfs_mount "$UP:$LO=ro" "$MNT"
	head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/src"
	dd if="$BATS_TEST_TMPDIR/src" of="$MNT/f" bs=64k status=none
	cmp "$BATS_TEST_TMPDIR/src" "$UP/f"
	cmp "$BATS_TEST_TMPDIR/src" "$MNT/f"
	run -0 stat -c %s "$MNT/f"
	assert_output 3000000
	# the create and the read's open
	(($(pt_opens) >= 2)) || fail "passthrough_opens is $(pt_opens)"
	run -0 pt_state
	assert_output on
}

@test "passthrough: a lower file is served by requests, and a descriptor opened before its copy-up reads the copy" {
	require_pt
	sfs_mount "$UP:$LO=ro" "$MNT"
	run -0 "$TOOLS/cuprobe" twofds "$MNT/l" NEW
	assert_line "before=lower"
	assert_line "after=NEWer"
	assert_line "same_ino=yes"
	# neither open passed through: the write open met the read-only one
	# (the kernel refuses an inode open both ways)
	run -0 pt_opens
	assert_output 0
	# once the read-only descriptor is gone, the copy passes through
	wait_released
	echo more >>"$MNT/l"
	run -0 cat "$MNT/l"
	assert_output $'NEWer\nmore'
	(($(pt_opens) >= 1)) || fail "passthrough_opens is $(pt_opens)"
	sfs_assert_unchanged "$LO"
}

@test "passthrough: a file held open by requests keeps new opens on requests, none fails" {
	require_pt
	sfs_mount "$UP:$LO=ro" "$MNT"
	exec {rfd}<"$MNT/l"    # a lower file: by requests
	echo x >>"$MNT/l"      # the copy-up; this open must not pass through
	run -0 cat "$MNT/l"
	assert_output $'lower\nx'
	run -0 cat <&$rfd      # the old descriptor reads the copy
	assert_output $'lower\nx'
	exec {rfd}<&-
	run -0 pt_opens
	assert_output 0
}

@test "passthrough: mmap writes reach the branch file, and reads see them" {
	require_pt
	sfs_mount "$UP:$LO=ro" "$MNT"
	head -c 65536 /dev/zero >"$MNT/m"
	python3 - "$MNT/m" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 65536)
m[4096:4101] = b"hello"
m.flush()
m.close()
os.close(fd)
EOF
	run -0 dd if="$UP/m" bs=1 skip=4096 count=5 status=none
	assert_output hello
	run -0 dd if="$MNT/m" bs=1 skip=4096 count=5 status=none
	assert_output hello
	(($(pt_opens) >= 2)) || fail "passthrough_opens is $(pt_opens)"
}

@test "passthrough: -o nopassthrough and -o writeback serve every open by requests" {
	require_pt
	local o
	for o in nopassthrough writeback; do
		sfs_mount "$UP:$LO=ro" "$MNT" "$o"
		echo "$o" >"$MNT/f-$o"
		run -0 cat "$MNT/f-$o"
		assert_output "$o"
		run -0 pt_opens
		assert_output 0
		run -0 pt_state
		assert_output off
		"$SFS" umount "$MNT"
	done
}

@test "passthrough: a rw branch on a stacked filesystem (overlayfs) falls back to requests" {
	require_pt
	OVL=$T/ovl
	mkdir -p "$T/ol" "$T/ou" "$T/ow" "$OVL"
	# (index and nfs_export: the union registers its branches by file handle)
	mount -t overlay overlay -o "lowerdir=$T/ol,upperdir=$T/ou,workdir=$T/ow,index=on,nfs_export=on" "$OVL"
	sfs_mount "$OVL:$LO=ro" "$MNT"
	echo data >"$MNT/f"
	run -0 cat "$MNT/f"
	assert_output data
	run -0 cat "$T/ou/f"
	assert_output data
	run -0 pt_opens
	assert_output 0
	"$SFS" umount "$MNT"
}
