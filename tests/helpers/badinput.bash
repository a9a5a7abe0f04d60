# Helpers for the bad-input table (tests/58-bad-input.bats) and the
# security tests (tests/62-security.bats). Load after helpers/common.
#
# Every malformed input must get a clear message and a documented exit
# status (stackfs(1), EXIT STATUS: 1 a refused mount or failed operation,
# 2 a usage error; fsck: 8 usage or operational error), no crash (no
# signal, no core, no hang) and no change on disk.

CTLPROBE=$TOOLS/ctlprobe

# bad_run CMD...: runs CMD in a directory of its own (where a crash
# would leave its core: core dumps are allowed for it), at most 30 s,
# with `run --separate-stderr`. BAD_PREFIX (an array, e.g. a setpriv
# command line) is put before CMD when set.
bad_run() {
	BAD_CWD=$BATS_TEST_TMPDIR/cwd
	mkdir -p "$BAD_CWD"
	# shellcheck disable=SC2016
	run --separate-stderr timeout -k 5 30 bash -c \
		'cd "$1" || exit 125; shift; ulimit -c unlimited 2>/dev/null; exec "$@"' \
		_ "$BAD_CWD" "${BAD_PREFIX[@]}" "$@"
}

# bad_no_crash: the command of the last bad_run ended by itself (no
# signal, no timeout) and left no core.
bad_no_crash() {
	local cores
	((status != 124 && status < 128)) ||
		fail "killed or timed out: exit status $status; stderr: $stderr"
	cores=$(find "$BAD_CWD" -maxdepth 1 -name 'core*' 2>/dev/null)
	[[ -z $cores ]] || fail "a core was dumped: $cores"
}

# bad_status N: the last bad_run exited with N, without crashing.
bad_status() {
	bad_no_crash
	((status == $1)) ||
		fail "exit status $status, expected $1 ($(bad_status_meaning "$1")); stderr: $stderr"
}

bad_status_meaning() {
	case $1 in
	0) echo "success" ;;
	1) echo "the operation failed / a refused mount" ;;
	2) echo "a usage error" ;;
	8) echo "fsck: usage or operational error" ;;
	*) echo "?" ;;
	esac
}

# bad_message TEXT: the last bad_run's message on stderr is one line
# that contains TEXT (a usage error, exit 2 or fsck's 8, may add "usage:"
# lines after it).
bad_message() {
	local first=${stderr_lines[0]-} l
	[[ -n $stderr ]] || fail "no message on stderr (stdout: $output)"
	[[ $first == *"$1"* ]] || fail "message does not name '$1': $stderr"
	for l in "${stderr_lines[@]:1}"; do
		[[ $l == usage:* || $l == " "* || -z $l ]] ||
			fail "message is not one line (plus usage): $stderr"
	done
	if ((status != 2 && status != 8)); then
		((${#stderr_lines[@]} == 1)) || fail "message is not one line: $stderr"
	fi
}

# No stackfsd whose command line names this test's directories runs.
bad_no_daemon_left() {
	local p left=
	for p in $(sfs_stackfsd_pids); do
		sfs_alive "$p" || continue
		tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -e "$T" -e "$BATS_TEST_TMPDIR" &&
			left+=" $p"
	done
	[[ -z $left ]] || fail "a refused mount left daemons running:$left"
}

# No fuse.stackfs mount under this test's directories.
bad_nothing_mounted() {
	local m
	m=$(findmnt -rn -t fuse.stackfs -o TARGET 2>/dev/null | grep -F -e "$T" -e "$BATS_TEST_TMPDIR" || true)
	[[ -z $m ]] || fail "mounted although refused: $m"
}

# refused_mount STATUS TEXT ARGS...: `stackfs mount ARGS` exits with
# STATUS and a one-line message naming TEXT; nothing is mounted, no
# daemon is left, nothing under $T changed (no .stackfs made) and the
# mount point is as it was.
refused_mount() {
	local want=$1 text=$2 mp_before
	shift 2
	sfs_snapshot "$T"
	mp_before=$(ls -A "$MNT" 2>&1)
	sfs_record stackfs "$MNT"
	bad_run "$SFS" mount "$@"
	bad_status "$want"
	bad_message "$text"
	bad_nothing_mounted
	bad_no_daemon_left
	sfs_assert_unchanged "$T"
	[[ $(ls -A "$MNT" 2>&1) == "$mp_before" ]] || fail "the mount point $MNT changed"
}

# refused_cmd STATUS TEXT CMD...: a stackfs command (not mount) exits
# with STATUS and a message naming TEXT; nothing under $T changed.
refused_cmd() {
	local want=$1 text=$2
	shift 2
	sfs_snapshot "$T"
	bad_run "$SFS" "$@"
	bad_status "$want"
	bad_message "$text"
	sfs_assert_unchanged "$T"
}

# bad_nocaps: the next bad_run runs as root without the capabilities
# that let root read any directory, so modes decide as for a user.
bad_nocaps() {
	sfs_require_cmd setpriv
	# shellcheck disable=SC2054  # commas inside setpriv's arguments
	BAD_PREFIX=(setpriv --bounding-set=-dac_override,-dac_read_search
		--inh-caps=-dac_override,-dac_read_search)
}

# bad_meta: a valid metadata directory in $UP (format 1, lowers UP, LO),
# the one a mount would have made, ready to be damaged.
bad_meta() {
	"$TOOLS/format_fuzz" mkmeta "$UP" "$LO" >/dev/null ||
		fail "format_fuzz mkmeta $UP failed"
}

# ------------------------------------------------------------ control channel

# ctl_mount: mounts UP:LO on MNT and remembers its control socket (SOCK),
# daemon (DPID) and branch list (LIST0, without free space); snapshots UP
# and LO.
ctl_mount() {
	local mm
	sfs_mount "$UP:$LO" "$MNT" || return 1
	mm=$(findmnt -rn -o MAJ:MIN -M "$MNT" | tail -n1)
	SOCK=$SFS_RUNTIME/$mm/ctl
	[[ -S $SOCK ]] || fail "no control socket $SOCK"
	DPID=$(sfs_daemon_pid "$MNT")
	[[ -n $DPID ]] || fail "no daemon pid for $MNT"
	LIST0=$(ctl_list) || fail "branch list failed before the probe"
	sfs_snapshot "$UP"
	sfs_snapshot "$LO"
}

# ctl_refused ERRNO|any [CTLPROBE_ARGS...]: sends a request with ctlprobe
# (options first, then the request: see tests/tools/ctlprobe.c); the
# daemon answers "ERR ERRNO ..." (any: some errno, or it may close the
# connection without a reply); then it still runs, still serves (branch
# list as before, the view readable) and nothing changed in the branches.
ctl_refused() {
	local want=$1 opts=() last
	shift
	while [[ ${1-} == --* ]]; do
		opts+=("$1" "$2")
		shift 2
	done
	run timeout -k 5 40 "$CTLPROBE" "${opts[@]}" "$SOCK" "$@"
	((status == 0)) || fail "ctlprobe: exit $status (1: no reply in time, 2: cannot connect): $output"
	last=${lines[-1]}
	if [[ $want == any ]]; then
		[[ $last =~ ^reply\ ERR\ E[A-Z0-9]+\  || $last == closed ]] ||
			fail "expected an ERR reply or a closed connection, got: $last"
	else
		[[ $last == "reply ERR $want "* ]] || fail "expected 'ERR $want ...', got: $last"
	fi
	ctl_still_serving
}

# The branch list of MNT without its free-space column (it moves).
ctl_list() {
	local out
	out=$(timeout 20 "$SFS" branch list "$MNT") || return 1
	awk '{ print $1, $2, $3, $4, $5 }' <<<"$out"
}

ctl_still_serving() {
	local now
	sfs_alive "$DPID" || fail "the daemon ($DPID) died"
	now=$(ctl_list) || fail "branch list fails after the probe"
	[[ $now == "$LIST0" ]] || fail "the branch list changed: $now"
	run -0 cat "$MNT/u" "$MNT/l"
	sfs_assert_unchanged "$UP"
	sfs_assert_unchanged "$LO"
}

# ------------------------------------------------------------ deep trees

# bad_deep ROOT DEPTH OP: walks (making them when OP is mkdir) DEPTH
# directories of 200-byte names beneath ROOT, one component at a time
# through directory descriptors, so the whole path may be far longer than
# PATH_MAX, and at each level does OP:
#   mkdir   make the level and a file "f" in it (content "x")
#   dirs    make the level only
#   append  append "y" to "f" of each level
#   read    print the content of "f" of the deepest level
# Prints "ERRNO depth N op" for each failure, then "depth N length L".
bad_deep() {
	python3 - "$@" <<'EOF'
import errno, os, sys
root, depth, op = sys.argv[1], int(sys.argv[2]), sys.argv[3]
comp = lambda i: "%03d" % i + "d" * 197
fd, plen = os.open(root, os.O_RDONLY | os.O_DIRECTORY), len(root)
def err(e, i, what):
    print(errno.errorcode.get(e.errno, str(e.errno)), "depth", i + 1, what)
for i in range(depth):
    if op in ("mkdir", "dirs"):
        try:
            os.mkdir(comp(i), dir_fd=fd)
        except FileExistsError:
            pass
        except OSError as e:
            err(e, i, "mkdir"); break
    try:
        nfd = os.open(comp(i), os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    except OSError as e:
        err(e, i, "open"); break
    os.close(fd)
    fd, plen = nfd, plen + 201
    try:
        if op == "mkdir":
            f = os.open("f", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644, dir_fd=fd)
            os.write(f, b"x"); os.close(f)
        elif op == "append":
            f = os.open("f", os.O_WRONLY | os.O_APPEND, dir_fd=fd)
            os.write(f, b"y"); os.close(f)
        elif op == "read" and i == depth - 1:
            f = os.open("f", os.O_RDONLY, dir_fd=fd)
            print(os.read(f, 100).decode()); os.close(f)
    except OSError as e:
        err(e, i, op)
print("depth", depth, "length", plen)
EOF
}

# bad_deep_rename ROOT LEVEL OLD NEW: renames OLD to NEW inside level LEVEL
# of a bad_deep tree (0: ROOT itself); "@next" stands for the tree's
# directory of the next level. Prints OK or the errno name.
bad_deep_rename() {
	python3 - "$@" <<'EOF'
import errno, os, sys
root, level, old, new = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
comp = lambda i: "%03d" % i + "d" * 197
fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
for i in range(level):
    nfd = os.open(comp(i), os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd); fd = nfd
old = comp(level) if old == "@next" else old
new = comp(level) if new == "@next" else new
try:
    os.rename(old, new, src_dir_fd=fd, dst_dir_fd=fd); print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno))); sys.exit(1)
EOF
}

# bad_tree_state DIR: like sfs_tree_state, for trees whose paths are
# longer than PATH_MAX (walked through directory descriptors): one line
# per entry with its path, mode, owner, size, mtime and ctime (ns), inode,
# and the symlink target or the sha256 of a regular file.
bad_tree_state() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys
out = []
def entry(path, name, dfd):
    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    extra = ""
    if stat.S_ISLNK(st.st_mode):
        extra = os.readlink(name, dir_fd=dfd)
    elif stat.S_ISREG(st.st_mode):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
        h = hashlib.sha256()
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
        os.close(fd)
        extra = h.hexdigest()
    out.append("%s|%o|%d:%d|%d|%d|%d|%d|%s" % (path, st.st_mode, st.st_uid, st.st_gid,
               st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, extra))
for top, dirs, files, dfd in os.fwalk(sys.argv[1]):
    rel = os.path.relpath(top, sys.argv[1])
    if rel == ".":
        entry(".", ".", dfd)
    for n in dirs + files:
        entry(os.path.join(rel, n), n, dfd)
print("\n".join(sorted(out)))
EOF
}

# bad_snapshot DIR / bad_assert_unchanged DIR: sfs_snapshot and
# sfs_assert_unchanged for trees deeper than PATH_MAX.
bad_snapshot() {
	bad_tree_state "$1" >"$BATS_TEST_TMPDIR/bsnap.$(echo "$1" | md5sum | cut -c1-12)" ||
		fail "cannot take the state of $1"
}

bad_assert_unchanged() {
	local snap d
	snap="$BATS_TEST_TMPDIR/bsnap.$(echo "$1" | md5sum | cut -c1-12)"
	[[ -f $snap ]] || fail "no snapshot of $1"
	if ! d=$(diff -u "$snap" <(bad_tree_state "$1")); then
		fail "$(printf '%s changed:\n%s' "$1" "$d")"
	fi
}
