#!/usr/bin/env bats
# Messages that say what to do (issue 17): an option of mergerfs,
# fuse-overlayfs or overlayfs says what stackfs does instead.

load helpers/common

setup_file() {
	sfs_setup_file 1
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

# ---------------------------------------------------------- others' options

@test "options of mergerfs, fuse-overlayfs and overlayfs are refused (exit 2) with what stackfs does instead" {
	local opt from word
	while IFS='|' read -r opt from word; do
		sfs_record stackfs "$MNT"
		run --separate-stderr "$SFS" mount -o "$opt" "$UP:$LO" "$MNT"
		((status == 2)) || fail "-o $opt: exit $status: $stderr"
		((${#stderr_lines[@]} == 1)) || fail "-o $opt: not one line: $stderr"
		[[ $stderr == "stackfs: unknown option '$opt': $from's ${opt%%=*} "*"$word"* ]] ||
			fail "-o $opt: $stderr"
		! sfs_is_mounted "$MNT" || fail "mounted with -o $opt"
	done <<'EOF'
category.create=mfs|mergerfs|new files and directories go to the highest rw branch
func.getattr=newest|mergerfs|highest branch holding the name
cache.files=off|mergerfs|keeps file pages
cache.attr=120|mergerfs|timeout=SECONDS
dropcacheonclose=true|mergerfs|passthrough
moveonenospc=true|mergerfs|ENOSPC
minfreespace=4G|mergerfs|whatever its free space
use_ino|mergerfs|inode numbers
kernel_cache|libfuse|high-level API option
uidmapping=0:1000:1|fuse-overlayfs|owners
fsync=0|fuse-overlayfs|the flag fsync
metacopy=on|overlayfs|not accepted yet
userxattr|overlayfs|not accepted yet
index=off|overlayfs|not accepted yet
xino=auto|overlayfs|not accepted yet
redirect_dir=on|overlayfs|not accepted yet
volatile|overlayfs|not accepted yet
EOF
	run -2 --separate-stderr "$SFS" mount -o frobnicate "$UP:$LO" "$MNT"
	[[ $stderr == "stackfs: unknown option 'frobnicate' (stackfs mount --help lists the options)" ]] ||
		fail "$stderr"
}
