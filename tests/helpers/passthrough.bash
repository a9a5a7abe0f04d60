# Helpers for the pass-through tests (tests/8x-*.bats): preallocation,
# timestamps, xattrs, ACLs and inode flags. Load after helpers/common.
#
# The tests compare what the view shows with what the branch holds, and
# what an operation through the view does with what the same operation
# does directly on a reference file of the same filesystem.

PTPROBE=$TOOLS/ptprobe
# stat prints times in the local zone: make them comparable
export TZ=UTC

# pt_mount [OPTS] [BRANCHES]: mounts BRANCHES (default UP:LO) on MNT.
pt_mount() {
	sfs_mount "${2:-$UP:$LO}" "$MNT" "${1:-}"
}

# pt_make_image FS SIZE_MB NAME [MKFS_OPTION...]: like sfs_make_image,
# with the mkfs options given here instead of the suite's usual ones (e.g.
# an ext4 without ea_inode). Records the loop device and the mount for
# cleanup in the current scope; prints the mount directory.
pt_make_image() {
	local fs=$1 size=$2 name=$3 dir img loop scope
	shift 3
	scope=$(_sfs_scope_dir)
	img=$scope/pt-$fs-$name.img
	dir=$scope/$name
	case $fs in
	ext4)
		truncate -s "${size}M" "$img" || return 1
		mkfs.ext4 -q -F "$@" "$img" >&2 || { echo "mkfs.ext4 $* failed on $img" >&2; return 1; }
		;;
	xfs)
		((size >= 320)) || size=320
		truncate -s "${size}M" "$img" || return 1
		mkfs.xfs -q -f "$@" "$img" >&2 || { echo "mkfs.xfs $* failed on $img" >&2; return 1; }
		;;
	*)
		echo "pt_make_image: unknown filesystem '$fs'" >&2
		return 1
		;;
	esac
	loop=$(losetup --find --show "$img") || {
		echo "no free loop device for $img (losetup -a:)" >&2
		losetup -a >&2
		return 1
	}
	sfs_record loop "$loop"
	mkdir -p "$dir"
	sfs_record mount "$dir"
	mount "$loop" "$dir" || { echo "mount $loop on $dir failed" >&2; return 1; }
	echo "$dir"
}

# pt_fill DIR: allocates every free block of DIR's filesystem in files
# DIR/fill.N (fallocate, so it writes nothing), halving the request at
# each ENOSPC down to one block.
pt_fill() {
	local d=$1 i=0 s=$((1 << 30))
	while ((s >= 4096)); do
		if fallocate -l "$s" "$d/fill.$i" 2>/dev/null; then
			i=$((i + 1))
		else
			rm -f "$d/fill.$i"
			s=$((s / 2))
		fi
	done
}

# pt_unflag DIR...: makes every entry under DIR mutable and not append-only
# again (chattr -i -a), so that the cleanup can remove it. Never fails.
pt_unflag() {
	local d
	for d in "$@"; do
		[[ -n $d && -d $d ]] || continue
		find "$d" -xdev \( -type f -o -type d \) -exec chattr -i -a {} + >/dev/null 2>&1
	done
	return 0
}

# ---------------------------------------------------------------- files

# Size and st_blocks of a file.
pt_alloc() {
	stat -c 'size=%s blocks=%b' -- "$1"
}

# pt_extents FILE [LIMIT]: the allocation of FILE as filefrag -v shows it
# (synced first), in logical blocks, adjacent extents of one kind merged:
# one "START-END data|unwritten" line each, holes left out. Physical
# offsets and the shared/last/eof/merged flags are ignored. With LIMIT
# only blocks below LIMIT count.
pt_extents() {
	local f=$1 limit=${2:-}
	filefrag -s -v -- "$f" | awk -v limit="$limit" '
		$1 ~ /^[0-9]+:$/ {
			split($0, f, ":"); gsub(/ /, "", f[2]); split(f[2], r, "\\.\\.")
			s = r[1] + 0; e = r[2] + 0
			kind = ($0 ~ /unwritten/) ? "unwritten" : "data"
			if (limit != "") { if (s >= limit) next; if (e >= limit) e = limit - 1 }
			if (n && kind == k[n] && s == en[n] + 1) { en[n] = e; next }
			n++; st[n] = s; en[n] = e; k[n] = kind
		}
		END { for (i = 1; i <= n; i++) printf "%d-%d %s\n", st[i], en[i], k[i] }'
}

# The SEEK_DATA/SEEK_HOLE map of a file (ptprobe seek).
pt_seekmap() {
	"$PTPROBE" seek "$1"
}

# pt_same_file VIEW BRANCH_FILE REF: the file seen through the view, its
# branch copy and a reference file of the same filesystem (on which the
# same operations were made directly) agree: size, st_blocks, extent
# layout, SEEK_DATA/SEEK_HOLE map and content.
pt_same_file() {
	local v=$1 b=$2 r=$3 x
	[[ $(pt_alloc "$v") == "$(pt_alloc "$b")" ]] ||
		fail "view $(pt_alloc "$v") but the branch $(pt_alloc "$b")"
	[[ $(pt_alloc "$b") == "$(pt_alloc "$r")" ]] ||
		fail "the branch has $(pt_alloc "$b"), the same operations on the branch give $(pt_alloc "$r")"
	x=$(diff <(pt_extents "$r") <(pt_extents "$b")) ||
		fail "$(printf 'extents differ from the reference (< ref, > branch):\n%s' "$x")"
	x=$(diff <(pt_seekmap "$b") <(pt_seekmap "$v")) ||
		fail "$(printf 'SEEK_DATA/SEEK_HOLE differ (< branch, > view):\n%s' "$x")"
	x=$(diff <(pt_seekmap "$r") <(pt_seekmap "$b")) ||
		fail "$(printf 'SEEK_DATA/SEEK_HOLE differ (< ref, > branch):\n%s' "$x")"
	cmp -- "$v" "$r" || fail "content through the view differs from the reference"
	cmp -- "$b" "$r" || fail "content on the branch differs from the reference"
}

# The loop device under the filesystem mounted on (or containing) $1.
pt_loopdev() {
	findmnt -n -o SOURCE --target "$1" | tail -n1
}

# Sectors written so far to the block device $1 (after a sync of $2).
pt_sectors_written() {
	sync -f "$2"
	awk '{ print $7 }' "/sys/block/$(basename "$1")/stat"
}

# ---------------------------------------------------------------- times

# atime, mtime and ctime with nanoseconds.
pt_times() {
	stat -c '%x|%y|%z' -- "$1"
}

# ---------------------------------------------------------------- xattrs

# The names of every xattr of a path (not following symlinks), sorted.
pt_xnames() {
	getfattr -h --absolute-names -d -m - -- "$1" 2>/dev/null | sed -n 's/^\([^#=][^=]*\).*/\1/p' | LC_ALL=C sort
}

# Every xattr name=value (base64) of a path, sorted.
pt_xdump() {
	getfattr -h --absolute-names -d -m - -e base64 -- "$1" 2>/dev/null |
		grep -v '^#' | grep -v '^$' | LC_ALL=C sort
}

# pt_xfill PATH COUNT NAMELEN: sets COUNT user.* attributes with names of
# NAMELEN characters (1-byte values) until one fails; prints how many were
# set and the errno name of the failure ("250 OK" when all were).
pt_xfill() {
	python3 - "$@" <<'EOF'
import errno, os, sys
path, count, namelen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    name = "user.%05d" % i
    name += "n" * (namelen - len(name))
    try:
        os.setxattr(path, name, b"v", follow_symlinks=False)
    except OSError as e:
        print(i, errno.errorcode.get(e.errno, e.errno))
        sys.exit(0)
print(count, "OK")
EOF
}

# ---------------------------------------------------------------- users

# pt_as_nobody CMD...: runs CMD as nobody:nogroup without supplementary
# groups (and without capabilities).
pt_as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

# pt_as_nobody_in DIR CMD [ARGS...]: runs CMD as nobody with DIR as its
# working directory, reached through an inherited descriptor: the suite's
# temporary directories are root's own (mode 0700), so nobody could not
# walk a path to DIR, while permissions inside DIR are checked as usual.
pt_as_nobody_in() {
	local d=$1
	shift
	(
		exec 9<"$d" || exit 125
		pt_as_nobody sh -c 'cd /proc/self/fd/9 && exec 9<&- && exec "$@"' sh "$@"
	)
}

# The value of xattr NAME of PATH as getfattr encodes it in base64
# ("0s..."), or nothing (status 1) when it is missing.
pt_xval64() {
	getfattr -h --absolute-names -e base64 -n "$2" -- "$1" 2>/dev/null | sed -n "s/^$2=//p" | grep .
}
