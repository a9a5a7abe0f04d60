# Helpers for the copy-up, whiteout, rename, interoperability and crash
# tests (tests/7*-*.bats). Load after helpers/common.
#
# The tests use the branches of sfs_setup_branches (UP rw, LO ro, MNT) and
# these helpers to mount, unmount and look at the real state of a branch.

CUPROBE=$TOOLS/cuprobe

# cu_mount [OPTS] [BRANCHES]: mounts BRANCHES (default UP:LO) on MNT.
cu_mount() {
	sfs_mount "${2:-$UP:$LO}" "$MNT" "${1:-}"
}

# cu_umount [MP]: a clean unmount through the CLI; fails the test if the
# mount is still there afterwards.
cu_umount() {
	local mp=${1:-$MNT} out
	out=$("$SFS" umount "$mp" 2>&1) || fail "stackfs umount $mp failed: $out"
	! sfs_is_mounted "$mp" || fail "$mp still mounted after stackfs umount"
}

# cu_remount [OPTS] [BRANCHES]: unmount MNT and mount it again.
cu_remount() {
	cu_umount "$MNT"
	cu_mount "$@"
}

# The st_ino of a path (not following a symlink).
cu_ino() {
	stat -c %i -- "$1"
}

# Type, mode, owner, size, device numbers and nanosecond atime/mtime of
# one entry (not following symlinks): what copy-up must keep.
cu_meta() {
	stat -c '%F|%a|%u:%g|%s|%t:%T|atime=%x|mtime=%y' -- "$1"
}

# The same without atime (which reading may change).
cu_meta_noatime() {
	stat -c '%F|%a|%u:%g|%s|%t:%T|mtime=%y' -- "$1"
}

# The value of the xattr NAME of PATH (not following symlinks), in a form
# that compares exactly (base64), or fails when it is missing.
cu_xattr() {
	getfattr -h --absolute-names -e base64 --only-values -n "$2" -- "$1" 2>/dev/null ||
		{ echo "no xattr $2 on $1"; return 1; }
}

# The value of a text xattr, or nothing (status 1) when missing.
cu_xattr_text() {
	getfattr -h --absolute-names --only-values -n "$2" -- "$1" 2>/dev/null
}

# Every xattr of a path, name=value (base64) sorted, without the union's
# own private attributes (trusted.stackfs.*, trusted.overlay.*).
cu_xattrs() {
	getfattr -h --absolute-names -d -m - -e base64 -- "$1" 2>/dev/null |
		grep -v '^#' | grep -v '^$' | grep -v '^trusted\.stackfs\.' |
		grep -v '^trusted\.overlay\.' | LC_ALL=C sort
}

# Asserts that the staging directory of rw branch $1 exists and is empty.
cu_assert_work_empty() {
	local w=$1/.stackfs/work left
	[[ -d $w ]] || fail "no staging directory $w"
	left=$(ls -A "$w")
	[[ -z $left ]] || fail "staging directory $w not empty: $(ls -lA "$w")"
}

# Regular files of a branch outside its metadata directory, one per line,
# without whiteouts and opaque markers (.wh.*): the files copied up or
# created there.
cu_branch_files() {
	(cd "$1" && find . -path ./.stackfs -prune -o -type f ! -name '.wh.*' -print | LC_ALL=C sort)
}

# Asserts that $1 does not exist (not even as a dangling symlink).
cu_assert_absent() {
	[[ ! -e $1 && ! -L $1 ]] || fail "$1 exists: $(ls -ld "$1")"
}

# Asserts that $1 is a whiteout in style $2 (wh or overlay) in its branch:
# .wh.NAME beside it, or a character device 0:0 named NAME.
cu_assert_whiteout() {
	local p=$1 style=$2 d n
	d=$(dirname "$p")
	n=$(basename "$p")
	case $style in
	wh)
		[[ -f $d/.wh.$n ]] || fail "no whiteout $d/.wh.$n: $(ls -lA "$d")"
		[[ ! -e $p && ! -L $p ]] || fail "$p is still there beside its whiteout: $(ls -ld "$p")"
		;;
	overlay)
		[[ -c $p ]] || fail "$p is not a character device whiteout: $(ls -ld "$p" 2>&1)"
		[[ $(stat -c '%t:%T' "$p") == 0:0 ]] || fail "$p is a device $(stat -c '%t:%T' "$p"), not 0:0"
		[[ ! -e $d/.wh.$n ]] || fail "unexpected aufs whiteout $d/.wh.$n in overlay style"
		;;
	*) fail "cu_assert_whiteout: style $style" ;;
	esac
}

# Asserts that NAME is not in the listing of DIR and that it does not
# resolve (stat says ENOENT).
cu_assert_gone() {
	local dir=$1 name=$2 out
	if ls -A "$dir" | grep -qxF -- "$name"; then
		fail "$name still listed in $dir: $(ls -A "$dir" | tr '\n' ' ')"
	fi
	out=$(stat -- "$dir/$name" 2>&1) && fail "$dir/$name still resolves: $out"
	[[ $out == *"No such file or directory"* ]] || fail "stat $dir/$name: $out (expected ENOENT)"
}

# One line per entry under DIR (relative path, type, mode, size but not
# for directories, symlink target), then the sha256 of every regular file. What a
# user sees of a tree: no inode numbers, owners or times. The metadata
# directory .stackfs at the top is left out.
cu_view_state() {
	(
		cd "$1" || exit 1
		find . -path ./.stackfs -prune -o -printf '%p|%y|%m|%s|%l\n' |
			awk -F'|' -v OFS='|' '$2 == "d" { $4 = "-" } { print }' | LC_ALL=C sort
		find . -path ./.stackfs -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

# Kills the daemon of mount $1 with SIGKILL and waits until it is gone.
cu_kill9_daemon() {
	local pid
	pid=$(sfs_daemon_pid "$1")
	[[ -n $pid ]] || fail "no daemon found for $1"
	kill -KILL "$pid"
	sfs_wait_gone "$pid" 10 || fail "daemon $pid of $1 survived SIGKILL"
}

# Detaches the dead FUSE mount on $1.
cu_detach_dead() {
	local mp=$1
	fusermount3 -u -z "$mp" >/dev/null 2>&1 || umount -l "$mp" >/dev/null 2>&1
	! sfs_is_mounted "$mp" || fail "could not detach the dead mount $mp"
}

# Makes a directory of N files f1..fN with content "iI" under $1.
cu_make_files() {
	local d=$1 n=$2 i
	mkdir -p "$d"
	for ((i = 1; i <= n; i++)); do
		echo "i$i" >"$d/f$i"
	done
}

# cu_make_plain_ext4 NAME SIZE_MB: an ext4 loop image WITHOUT ea_inode (so
# an xattr value larger than a block is refused), mounted; prints its
# directory. Recorded for cleanup like sfs_make_image's images.
cu_make_plain_ext4() {
	local name=$1 size=$2 scope img dir loop
	command -v mkfs.ext4 >/dev/null || { echo "needs mkfs.ext4 (e2fsprogs)" >&2; return 1; }
	if [[ -n ${BATS_TEST_NUMBER:-} && -n ${BATS_TEST_TMPDIR:-} ]]; then
		scope=$BATS_TEST_TMPDIR
	else
		scope=$BATS_FILE_TMPDIR
	fi
	img=$scope/sfs-ext4-$name.img
	dir=$scope/$name
	truncate -s "${size}M" "$img" || return 1
	mkfs.ext4 -q -F -O ^ea_inode -b 4096 "$img" >&2 || { echo "mkfs.ext4 failed on $img" >&2; return 1; }
	loop=$(losetup --find --show "$img") || { echo "no free loop device for $img" >&2; return 1; }
	sfs_record loop "$loop"
	mkdir -p "$dir"
	sfs_record mount "$dir"
	mount "$loop" "$dir" || { echo "mount $loop on $dir failed" >&2; return 1; }
	echo "$dir"
}

# race_copyup OP N (tests/74-rename, tests/47-gluster): for each of N
# lower files f<i> of $MNT, one thread opens it for writing (a copy-up)
# while another, at the same moment, renames a new file t<i> over it (OP
# rename) or unlinks it (OP unlink). Prints
# "K failures of N", then the first failures. Either order is fine; an
# error is not, except ENOENT for an open that comes after the unlink.
race_copyup() {
	python3 - "$MNT" "$@" <<'PY'
import errno, os, sys, threading
m, op, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
bar = threading.Barrier(2)
errs = {}
def work(who):
    for i in range(n):
        p, t = f"{m}/f{i}", f"{m}/t{i}"
        if who == op == "rename":
            os.close(os.open(t, os.O_CREAT | os.O_WRONLY, 0o644))
        bar.wait()
        try:
            if who == "open":
                os.close(os.open(p, os.O_WRONLY))
            elif op == "rename":
                os.rename(t, p)
            else:
                os.unlink(p)
        except OSError as e:
            if who == "open" and op == "unlink" and e.errno == errno.ENOENT:
                continue
            k = f"{who} f{i}: {errno.errorcode.get(e.errno, e.errno)}"
            errs[k] = errs.get(k, 0) + 1
ts = [threading.Thread(target=work, args=(w,)) for w in ("open", op)]
[t.start() for t in ts]
[t.join() for t in ts]
print(f"{len(errs)} failures of {n}")
for k in list(errs)[:10]:
    print(k)
PY
}
