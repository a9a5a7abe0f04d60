#!/usr/bin/env bats
# Power loss (docs/durability.md "Power loss"): what each sync mode makes durable.
# - Short runs of the crash explorer (tests/crash/explore): the branches'
#   filesystem on a disk that records its writes, crash states rebuilt
#   from them and checked against the mode's rules. One of them shows it
#   finds the window the old default had (copies placed before their data
#   was on the disk). The long runs are tests/stress/powerloss.bats.
# - The daemon's syncs in order, as the fault-injection shim traces them.
# - The volatile flag: a crashed volatile mount's branch is refused.

load helpers/common
load helpers/copyup
load helpers/faults
load helpers/powerloss

setup_file() {
	sfs_setup_file
	sfs_require_tool blkrec faultinject.so
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

# ------------------------------------------------------------ the disk model

# The explorer's states are a real disk's (docs/durability.md "The block contract"):
# tests/crash/model_check sends known writes, flushes and FUA writes to a
# loop device over the recorder and compares every state the explorer
# draws with every disk the contract allows, worked out from the writes.
@test "the disk model: the recorder logs writes, flushes and FUA writes as sent; the explorer draws every state the block contract allows and none it forbids" {
	pl_require
	sfs_once_per_suite
	local dio sector
	for dio in on off; do
		for sector in 512 4096; do
			run "$SFS_REPO/tests/crash/model_check" "$BATS_TEST_TMPDIR/m-$dio-$sector" \
				--dio "$dio" --sector "$sector"
			echo "# direct I/O $dio, $sector-byte sectors: $output" | head -n 4 >&3
			assert_success
			assert_output --partial ": 0 forbidden, 0 missing"
			assert_output --partial ": 0 not allowed, "
			refute_output --partial "MODEL "
		done
	done
}

# Why the explorer's disk has 4 KiB sectors (explore --sector): ext4's
# superblock is 1 KiB, two sectors of a 512-byte disk, and the update a
# mount makes to it, torn between them, is a superblock that fails its
# checksum: the kernel refuses it (e2fsck mends it from a backup). No
# stackfs here: a property of ext4 on 512-byte sectors.
@test "ext4 alone: its superblock update torn at 512 bytes does not mount (why the explorer's disk has 4 KiB sectors)" {
	sfs_require_root "loop devices, mounts"
	sfs_once_per_suite
	local d=$BATS_TEST_TMPDIR dev sec
	truncate -s 64M "$d/new.img"
	mkfs.ext4 -q -F -O ea_inode -I 256 -b 1024 "$d/new.img"
	cp "$d/new.img" "$d/old.img"
	dev=$(losetup -f --show "$d/new.img")
	mkdir -p "$d/m"
	mount "$dev" "$d/m" && umount "$d/m"
	losetup -d "$dev"
	# the mount changed both halves of the superblock (sectors 2 and 3)
	run bash -c "cmp -l '$d/old.img' '$d/new.img' | awk '{ print int((\$1 - 1) / 512) }' | sort -u"
	assert_output $'2\n3'
	for sec in 2 3; do
		cp "$d/old.img" "$d/torn.img"
		dd if="$d/new.img" of="$d/torn.img" bs=512 skip="$sec" seek="$sec" count=1 conv=notrunc status=none
		dev=$(losetup -f --show -r "$d/torn.img")
		run mount -o ro "$dev" "$d/m"
		[[ $status -ne 0 ]] || umount "$d/m"
		losetup -d "$dev"
		assert_failure
		run e2fsck -fn "$d/torn.img"
		assert_output --partial "uperblock"
	done
}

# ------------------------------------------------------------ the explorer

@test "power loss of the filesystem alone (explore --bare): it mounts and checks clean in 40 crash states" {
	pl_require
	pl_explore bare --bare --states "${PL_STATES:-40}" --seed "$(pl_seed 3)"
}

@test "power loss with the default sync mode (normal): no rule broken in 30 crash states" {
	pl_require
	pl_explore normal --states "${PL_STATES:-30}" --seed "$(pl_seed 3)"
}

@test "power loss with sync=always: no rule of always broken in 20 crash states" {
	pl_require
	pl_explore always --opts sync=always --rules always --states "${PL_STATES:-20}" \
		--seed "$(pl_seed 5)"
}

# The files named are copied up and not fsynced: their data is wrong only
# if a copy was placed before its data was on the disk (s3: a chmod alone).
@test "power loss without copy-up syncs (sync=volatile, judged by the normal rules): the explorer finds copies hiding their lower files" {
	pl_require
	[[ $SFS_FS == ext4 ]] ||
		skip "on XFS the copies reached the disk before the log named them in every state explored so far (docs/durability.md, Power loss)"
	pl_explore window --opts sync=volatile --check-opts accept_unclean --rules normal \
		--expect-violations data:big,data:s1,data:s3,data:s4 --states "${PL_STATES:-20}" \
		--seed "$(pl_seed 3)"
}

@test "power loss under a volatile mount: the branch is refused, and mounts with -o accept_unclean" {
	pl_require
	pl_explore volatile --opts sync=volatile --rules volatile --states "${PL_STATES:-10}" \
		--seed "$(pl_seed 3)"
}

# ------------------------------------------------------------ the syncs, traced

# trace_sync OPTS CMD...: with the shim counting syncs, links and renames
# in a daemon mounted with OPTS (on the first call), runs CMD in the view;
# the trace in $output and $lines (trace_output).
trace_sync() {
	local opts=$1
	shift
	if [[ ! -v FI_PID ]]; then
		fi_mount "$opts" || fail "mount with the shim failed"
	fi
	fi_arm sync,link,rename 0 count
	(cd "$MNT" && "$@") || fail "$* failed"
	trace_output
}

# The trace as $output and $lines (as run sets them), $T shortened to T.
trace_output() {
	output=$(grep '^[0-9]' "$FI_LOG" | sed "s|$T|T|g")
	mapfile -t lines <<<"$output"
}

lower_tree() {
	mkdir -p "$LO/a/b"
	printf 'lower data\n' >"$LO/a/b/f"
	printf 'other\n' >"$LO/a/b/g"
}

fsync_twice() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
print("#", flush=True)
os.fsync(fd)' "$1"
}

@test "normal: a copy's data is synced before the link that places it, not after" {
	fi_require_plain_build
	lower_tree
	trace_sync "" sh -c 'echo more >>a/b/f'
	local sync link
	sync=$(grep -n ' sync fsync T/upper/.stackfs/work/' <<<"$output" | head -1 | cut -d: -f1)
	link=$(grep -n ' link linkat T/upper/a/b/f ' <<<"$output" | head -1 | cut -d: -f1)
	[[ -n $sync && -n $link ]] || fail "no sync of the copy or no link placing it: $output"
	((sync < link)) || fail "the copy was placed before it was synced: $output"
	[[ $(cat "$UP/a/b/f") == $'lower data\nmore' ]]
}

@test "normal: an fsync through the view syncs the directories the union made on the file's path, once" {
	fi_require_plain_build
	lower_tree
	trace_sync "" sh -c 'echo more >>a/b/f'
	fi_arm sync 0 count
	fsync_twice "$MNT/a/b/f" >/dev/null
	trace_output
	# the file, then its upper directories up to the root (a copy-up made
	# a/ and a/b/ and placed the copy); the second fsync: the file alone
	assert_line --index 1 --regexp ' sync fsync T/upper/a/b$'
	assert_line --index 2 --regexp ' sync fsync T/upper/a$'
	assert_line --index 3 --regexp ' sync fsync T/upper$'
	[[ $(wc -l <<<"$output") == 5 ]] || fail "expected 5 syncs (file, a/b, a, root, file): $output"
	refute_line --index 4 --regexp 'T/upper(/a)?(/b)?$'
}

@test "normal: an fsync through the view after rm -rf syncs the directory holding the whiteout" {
	fi_require_plain_build
	lower_tree
	mkdir -p "$LO/a/c"
	printf 'x\n' >"$LO/a/c/x"
	trace_sync "" rm -rf a/c
	fi_arm sync 0 count
	python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' "$MNT/a"
	trace_output
	assert_line --regexp ' sync fsync T/upper/a$'
	assert_line --regexp ' sync fsync T/upper$'
	[[ ! -e $MNT/a/c ]]
}

@test "always: every change is synced before the reply (a whiteout's directory, a copy and its directory)" {
	fi_require_plain_build
	lower_tree
	trace_sync sync=always rm a/b/g
	assert_line --regexp ' sync fsync T/upper/a/b$'
	trace_sync sync=always sh -c 'echo more >>a/b/f'
	local link after
	link=$(grep -n ' link linkat T/upper/a/b/f ' <<<"$output" | head -1 | cut -d: -f1)
	after=$(tail -n +"$((link + 1))" <<<"$output")
	grep -q ' sync fsync T/upper/a/b$' <<<"$after" || fail "the copy's directory was not synced after it was placed: $output"
}

@test "volatile: no sync at all, neither of a copy nor through the view" {
	fi_require_plain_build
	lower_tree
	trace_sync sync=volatile sh -c 'echo more >>a/b/f; rm a/b/g'
	fi_arm sync 0 count
	fsync_twice "$MNT/a/b/f" >/dev/null
	[[ $(fi_count) == 0 ]] || fail "syncs under sync=volatile: $(cat "$FI_LOG")"
	refute_output --partial ' sync '
}

# ------------------------------------------------------------ the volatile flag

# The header's flags word (bytes 12..15, little-endian) of $UP/.stackfs.
header_flags() {
	od -An -tu4 -j12 -N4 "$UP/.stackfs/header" | tr -d ' '
}

@test "-o volatile is sync=volatile: the header flag while mounted, cleared by a clean unmount; status shows the mode" {
	printf 'x\n' >"$LO/f"
	cu_mount volatile
	[[ $(( $(header_flags) & 2 )) == 2 ]] || fail "no volatile flag while mounted: $(header_flags)"
	run -0 "$SFS" status "$MNT"
	assert_line --regexp '^sync +volatile$'
	echo more >>"$MNT/f"
	cu_umount
	[[ $(( $(header_flags) & 2 )) == 0 ]] || fail "the flag outlived a clean unmount"
	[[ $(cat "$UP/f") == $'x\nmore' ]]
	cu_mount sync=volatile
	run -0 "$SFS" status "$MNT" --json
	assert_output --partial '"sync":"volatile"'
}

@test "a volatile mount that did not end cleanly: the branch is refused naming -o accept_unclean, fsck reports it, commit refuses it, accept_unclean mounts it and clears the flag" {
	printf 'x\n' >"$LO/f"
	cu_mount volatile
	echo more >>"$MNT/f"
	local pid
	pid=$(sfs_daemon_pid "$MNT")
	kill -KILL "$pid"
	sfs_wait_gone "$pid"
	fusermount3 -u -z "$MNT"
	sfs_snapshot "$UP"
	run -1 "$SFS" mount "$UP:$LO" "$MNT"
	assert_output --partial 'sync=volatile'
	assert_output --partial 'accept_unclean'
	sfs_assert_unchanged "$UP"
	run -4 "$SFS" fsck "$UP"
	assert_output --partial 'VOLATILE_UNCLEAN'
	run -4 "$SFS" fsck --repair "$UP"
	# what may be partial is not folded into the lower branch
	sfs_snapshot "$LO"
	run -1 "$SFS" commit "$UP" --into "$LO"
	assert_output --partial 'sync=volatile'
	sfs_assert_unchanged "$LO"
	cu_mount accept_unclean
	[[ $(cat "$MNT/f") == $'x\nmore' ]]
	cu_umount
	[[ $(( $(header_flags) & 2 )) == 0 ]] || fail "accept_unclean kept the flag"
	run -0 "$SFS" fsck "$UP"
	cu_mount
}

@test "sync modes: fsync is sync=always, volatile is sync=volatile, normal is the default; a second, other one is refused" {
	cu_mount
	run -0 "$SFS" status "$MNT"
	assert_line --regexp '^sync +normal$'
	cu_umount
	cu_mount fsync
	run -0 "$SFS" status "$MNT"
	assert_line --regexp '^sync +always$'
	assert_line --regexp '^fsync +1$'
	cu_umount
	cu_mount sync=always,fsync
	cu_umount
	run -2 "$SFS" mount -o fsync,sync=normal "$UP:$LO" "$MNT"
	assert_output --partial "bad option 'sync=normal'"
	run -2 "$SFS" mount -o volatile,sync=always "$UP:$LO" "$MNT"
	assert_output --partial "the sync mode is volatile already"
	! sfs_is_mounted "$MNT"
}
