#!/usr/bin/env python3
"""Differential testing of stackfs against kernel overlayfs
(tests/75-kdiff.bats, tests/stress/kdiff.bats; issue 15).

  kdiff.py tree SEED DIR       a random lower tree in DIR (empty or new):
                               files (data and holes), directories three
                               deep, symlinks, fifos, hard links of
                               each, user.* xattrs
  kdiff.py ops SEED N          the N operations of SEED, one a line
                               (what a failure prints to replay)
  kdiff.py run SEED N VIEW LOG DUMP
                               runs the N operations of SEED on VIEW, each
                               with its result (0 or the errno's name) in
                               LOG, then the dump of VIEW in DUMP
  kdiff.py dump VIEW [--skip-root NAME]...
                               one line per entry of VIEW (below)
  kdiff.py compare A B [--ops]  entry by entry (or, --ops, result by
                               result): each disagreement, exit 1 if any
  kdiff.py selftest DIR        the comparison finds a difference put in
                               on purpose (one per field); exit 1 if not
  kdiff.py loop STYLE FIRST COUNT N DIR MNT KMNT STACKFS [--mid] [--inject]
                               COUNT sequences (seeds FIRST..) of N
                               operations each, the whole differential
                               test of each (below) in DIR/s<SEED>, with
                               stackfs (the command STACKFS, -o
                               whiteout=STYLE) mounted on MNT and kernel
                               overlayfs on KMNT; a report of each that
                               disagrees, exit 1 if any does; exit 2 when
                               a mount or unmount failed (it stops there);
                               --mid adds a middle ro layer that kernel
                               overlayfs wrote (Loop.layers; a short run
                               in 75-kdiff, none in the stress test while
                               the bug
                               docs/overlayfs.md "Differences from kernel overlayfs"
                               has open); --inject
                               puts a difference into the kernel's lower
                               on purpose (inject())

One sequence: a random lower tree (tree SEED) in two identical copies;
the N operations of SEED through a stackfs view (a rw upper over the
first copy) and through a kernel overlayfs view of the second; both must
answer every operation alike and end with the same tree. Then each upper
is read by the other implementation over its own lower: the kernel's
upper by stackfs (either style: stackfs reads overlayfs whiteouts and
redirects on every branch), stackfs's upper by the kernel (whiteout=
overlay only: kernel overlayfs does not read `.wh.` files); each must
show the tree its writer showed. One process does it all (a Python start
takes most of a second on a loaded machine).

The operations of a seed depend on the seed alone, never on what an
operation answered: both views get the same sequence, and a view that
answers differently shows as a different result, not as another
sequence. Paths come from a fixed pool of names (a, b, c, d; three
levels) shared with the tree generator, so operations often hit lower
entries, each other's results and names deleted before. Symlink targets
are relative and never climb with "..": whatever follows one stays in
the view.

A dump line (tab-separated): path, type (f d l p), mode (octal, with the
setuid, setgid and sticky bits), owner uid:gid, size (not of
directories: what a directory's st_size is differs by filesystem and
union), link count, sha256 of the content (f) or "->" and the target
(l), the user.* xattrs sorted (name=value in hex, a value over 16 bytes
by its hash), and the inode number, which is never compared itself:
only which names share one (of any type but a directory). Times are
not in it.

A fifo is never waited on: the operations open with O_NONBLOCK (a
writer without a reader answers ENXIO, a reader reads nothing), which
changes nothing for a regular file.
"""
import ctypes
import errno
import gc
import hashlib
import os
import random
import shutil
import stat
import subprocess
import sys
import time

NAMES = ["a", "b", "c", "d"]
MODES_FILE = [0o644, 0o600, 0o755, 0o444, 0o640, 0o4755, 0o2755, 0o000]
MODES_DIR = [0o755, 0o700, 0o775, 0o1777, 0o2755, 0o555]
XNAMES = ["user.x", "user.y", "user.long.name"]
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
XATTR_CREATE = 1
XATTR_REPLACE = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                            ctypes.c_char_p, ctypes.c_uint]


def renameat2(src, dst, flags):
    AT_FDCWD = -100
    if _libc.renameat2(AT_FDCWD, src.encode(), AT_FDCWD, dst.encode(),
                       flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def rand_path(rnd):
    """A path of the pool: one level 40%, two 40%, three 20%."""
    depth = rnd.choices([1, 2, 3], [4, 4, 2])[0]
    return "/".join(rnd.choice(NAMES) for _ in range(depth))


def rand_target(rnd):
    """A symlink target: a name or a path below the link's directory
    (dangling or not, maybe a loop), never absolute, never "..".."""
    return "/".join(rnd.choice(NAMES) for _ in range(rnd.choice([1, 1, 2])))


def rand_data(rnd, n):
    return rnd.randbytes(n)


# ---------------------------------------------------------------- the tree

def tree(seed, root):
    """A lower tree: each path of the pool becomes, by chance, a
    directory (more often near the root), a file, a symlink or a hard
    link of a file made before; some entries get xattrs. Of the names
    left free, some become a fifo or a hard link of a symlink or fifo
    made before (links(): a second generator, so that the rest of the
    tree of a seed is what it was before they were added)."""
    rnd = random.Random("tree-%s" % seed)
    more = random.Random("tree-links-%s" % seed)
    files, others = [], []
    real_root = os.path.realpath(root)
    for depth in (1, 2, 3):
        for p in sorted(all_paths(depth)):
            parent = os.path.normpath(os.path.join(real_root,
                                                   os.path.dirname(p)))
            # a directory, not a symlink's target: each name made once
            if not os.path.isdir(parent) or \
                    os.path.realpath(parent) != parent:
                continue
            if not make_entry(rnd, root, p, depth, files, others):
                links(more, root, p, others)
    for p in files:
        if os.path.exists(os.path.join(root, p)) and rnd.random() < 0.3:
            os.chmod(os.path.join(root, p), rnd.choice(MODES_FILE))


def all_paths(depth):
    if depth == 1:
        return list(NAMES)
    return [p + "/" + n for p in all_paths(depth - 1) for n in NAMES]


def make_entry(rnd, root, p, depth, files, others):
    """Makes p by chance; False when the name is left free."""
    full = os.path.join(root, p)
    r = rnd.random()
    pdir = {1: 0.6, 2: 0.35, 3: 0.0}[depth]
    if r < pdir:
        os.mkdir(full, rnd.choice([0o755, 0o755, 0o700, 0o775]))
        add_xattrs(rnd, full)
    elif r < pdir + 0.3:
        with open(full, "wb") as f:
            n = rnd.choice([0, 1, 100, 4096, 5000, 20000])
            f.write(rand_data(rnd, n))
            if rnd.random() < 0.2:  # a hole at the end
                f.truncate(n + rnd.choice([4096, 65536]))
        os.chmod(full, rnd.choice([0o644, 0o644, 0o600, 0o755]))
        add_xattrs(rnd, full)
        files.append(p)
    elif r < pdir + 0.45 and files:
        os.link(os.path.join(root, rnd.choice(files)), full)
    elif r < pdir + 0.55:
        os.symlink(rand_target(rnd), full)
        others.append(p)
    else:
        return False
    return True


def links(rnd, root, p, others):
    """A free name p: a hard link of a symlink or fifo made before (one
    inode of several names that is not a regular file: kernel overlayfs
    with index=on keeps it one across copy-up, and stackfs must too), a
    new fifo, or still free."""
    full = os.path.join(root, p)
    r = rnd.random()
    if r < 0.3 and others:
        os.link(os.path.join(root, rnd.choice(others)), full,
                follow_symlinks=False)
    elif r < 0.4:
        os.mkfifo(full, rnd.choice([0o644, 0o600]))
        others.append(p)


def add_xattrs(rnd, full):
    for x in XNAMES:
        if rnd.random() < 0.25:
            os.setxattr(full, x, rand_data(rnd, rnd.choice([0, 3, 200])))


# ---------------------------------------------------------------- operations

def ops(seed, n):
    """The operations of SEED: tuples (name, args...), a function of the
    seed alone."""
    rnd = random.Random("ops-%s" % seed)
    table = [
        ("create", 8), ("write", 10), ("truncate", 5), ("chmod", 5),
        ("chown", 2), ("link", 5), ("rename", 12), ("unlink", 8),
        ("rmdir", 5), ("rmtree", 3), ("mkdir", 9), ("symlink", 4),
        ("setxattr", 6), ("removexattr", 4), ("stat", 6), ("read", 3),
        ("remount", 1),
    ]
    names = [t[0] for t in table]
    weights = [t[1] for t in table]
    out = []
    for _ in range(n):
        op = rnd.choices(names, weights)[0]
        out.append(make_op(rnd, op))
    return out


def make_op(rnd, op):
    if op == "remount":
        return (op, ".")
    p = rand_path(rnd)
    if op == "create":
        flags = rnd.choice(["", "excl", "trunc"])
        return (op, p, flags, rnd.choice([0o644, 0o600, 0o755]))
    if op == "write":
        off = rnd.choice([0, 0, 1, 4095, 4096, 10000, 70000])
        size = rnd.choice([1, 10, 4096, 5000])
        return (op, p, off, size, rnd.getrandbits(32))
    if op == "truncate":
        return (op, p, rnd.choice([0, 1, 3000, 4096, 30000]))
    if op == "chmod":
        return (op, p, rnd.choice(MODES_FILE + MODES_DIR))
    if op == "chown":
        return (op, p, rnd.choice([0, 1000]), rnd.choice([0, 1000]))
    if op == "link":
        return (op, p, rand_path(rnd))
    if op == "rename":
        flags = rnd.choices([0, RENAME_NOREPLACE, RENAME_EXCHANGE],
                            [6, 2, 1])[0]
        return (op, p, rand_path(rnd), flags)
    if op == "mkdir":
        return (op, p, rnd.choice([0o755, 0o700]))
    if op == "symlink":
        return (op, p, rand_target(rnd))
    if op == "setxattr":
        flags = rnd.choices([0, XATTR_CREATE, XATTR_REPLACE], [4, 1, 1])[0]
        return (op, p, rnd.choice(XNAMES), rnd.choice([0, 5, 300]),
                rnd.getrandbits(32), flags)
    if op == "removexattr":
        return (op, p, rnd.choice(XNAMES))
    return (op, p)  # unlink, rmdir, rmtree, stat, read


MODE_ARG = {"chmod": 2, "mkdir": 2, "create": 3}


def fmt_op(o):
    """An operation as a line: its name, then its arguments (modes in
    octal)."""
    return " ".join("0%o" % a if i == MODE_ARG.get(o[0]) else str(a)
                    for i, a in enumerate(o))


def apply_op(view, o):
    """Runs one operation on VIEW; its result: "0", "0 DETAIL" (stat,
    read) or the errno's name."""
    op = o[0]
    p = os.path.join(view, o[1])
    try:
        detail = OPS[op](view, p, o)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return "0" if detail is None else "0 " + detail


def op_create(view, p, o):
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK
    flags |= {"": 0, "excl": os.O_EXCL, "trunc": os.O_TRUNC}[o[2]]
    os.close(os.open(p, flags, o[3]))


def op_write(view, p, o):
    data = random.Random(o[4]).randbytes(o[3])
    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.pwrite(fd, data, o[2])
    finally:
        os.close(fd)


def op_truncate(view, p, o):
    os.truncate(p, o[2])


def op_chmod(view, p, o):
    os.chmod(p, o[2])


def op_chown(view, p, o):
    os.chown(p, o[2], o[3], follow_symlinks=False)


def op_link(view, p, o):
    os.link(p, os.path.join(view, o[2]), follow_symlinks=False)


def op_rename(view, p, o):
    renameat2(p, os.path.join(view, o[2]), o[3])


def op_unlink(view, p, o):
    os.unlink(p)


def op_rmdir(view, p, o):
    os.rmdir(p)


def op_rmtree(view, p, o):
    """rm -r: depth first, names sorted; the first error ends it."""
    st = os.lstat(p)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(p)
        return
    for name in sorted(os.listdir(p)):
        op_rmtree(view, os.path.join(p, name), o)
    os.rmdir(p)


def op_mkdir(view, p, o):
    os.mkdir(p, o[2])


def op_symlink(view, p, o):
    os.symlink(o[2], p)


def op_setxattr(view, p, o):
    data = random.Random(o[4]).randbytes(o[3])
    os.setxattr(p, o[2], data, o[5], follow_symlinks=False)


def op_removexattr(view, p, o):
    os.removexattr(p, o[2], follow_symlinks=False)


def op_stat(view, p, o):
    st = os.lstat(p)
    kind = entry_type(st.st_mode)
    size = "-" if kind == "d" else str(st.st_size)
    nlink = "-" if kind == "d" else str(st.st_nlink)
    # the inode number only says which lower file it is (compare_logs)
    return "%s %o %s %s i%d" % (kind, stat.S_IMODE(st.st_mode), size, nlink,
                                st.st_ino)


def op_read(view, p, o):
    """The content's hash (a file) or the listing (a directory)."""
    st = os.stat(p)
    if stat.S_ISDIR(st.st_mode):
        return "[%s]" % ",".join(sorted(os.listdir(p)))
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


OPS = {
    "create": op_create, "write": op_write, "truncate": op_truncate,
    "chmod": op_chmod, "chown": op_chown, "link": op_link,
    "rename": op_rename, "unlink": op_unlink, "rmdir": op_rmdir,
    "rmtree": op_rmtree, "mkdir": op_mkdir, "symlink": op_symlink,
    "setxattr": op_setxattr, "removexattr": op_removexattr,
    "stat": op_stat, "read": op_read,
}


def run(seed, n, view, log, dumpfile):
    lines, dumped = run_view(view, ops(seed, n))
    save(os.path.dirname(log) or ".", os.path.basename(log), lines)
    save(os.path.dirname(dumpfile) or ".", os.path.basename(dumpfile), dumped)


# ---------------------------------------------------------------- the dump

def entry_type(mode):
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISREG(mode):
        return "f"
    if stat.S_ISLNK(mode):
        return "l"
    if stat.S_ISFIFO(mode):
        return "p"
    return "?%o" % stat.S_IFMT(mode)


def dump(view, skip_root):
    lines = []
    walk(view, ".", lines, skip_root)
    return lines


def walk(view, rel, lines, skip_root):
    full = os.path.join(view, rel)
    st = os.lstat(full)
    lines.append(dump_line(full, rel, st))
    if not stat.S_ISDIR(st.st_mode):
        return
    for name in sorted(os.listdir(full)):
        if rel == "." and name in skip_root:
            continue
        walk(view, os.path.normpath(os.path.join(rel, name)), lines,
             skip_root)


def dump_line(full, rel, st):
    kind = entry_type(st.st_mode)
    if kind == "f":
        with open(full, "rb") as f:
            what = hashlib.sha256(f.read()).hexdigest()
    elif kind == "l":
        what = "->" + os.readlink(full)
    else:
        what = "-"
    size = "-" if kind == "d" else str(st.st_size)
    return "\t".join([rel, kind, "%o" % stat.S_IMODE(st.st_mode),
                      "%d:%d" % (st.st_uid, st.st_gid), size,
                      str(st.st_nlink), what, xattrs(full),
                      str(st.st_ino)])


def xattrs(full):
    try:
        names = os.listxattr(full, follow_symlinks=False)
    except OSError as e:
        return "listxattr:" + errno.errorcode.get(e.errno, str(e.errno))
    out = []
    for x in sorted(n for n in names if n.startswith("user.")):
        v = os.getxattr(full, x, follow_symlinks=False)
        # short values as they are, long ones by their hash
        out.append("%s=%s" % (x, v.hex() if len(v) <= 16 else
                              "sha256:" + hashlib.sha256(v).hexdigest()[:16]))
    return ",".join(out)


# ---------------------------------------------------------------- compare

# the fields of a dump line after the path; "ino" is never compared
# itself (each view numbers its own way), only which names share one
FIELDS = ["type", "mode", "owner", "size", "nlink", "content", "xattrs",
          "ino"]
NLINK, INO = FIELDS.index("nlink"), FIELDS.index("ino")


def parse_dump(lines):
    out = {}
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        out[parts[0]] = parts[1:]
    return out


def link_groups(d):
    """For each non-directory, the other names of its inode in the
    view."""
    by_ino = {}
    for p, e in d.items():
        if e[0] != "d":
            by_ino.setdefault(e[INO], []).append(p)
    return {p: ",".join(x for x in by_ino[e[INO]] if x != p)
            for p, e in d.items() if e[0] != "d"}


class Known:
    """What the documented differences need to know of a sequence: the
    lower non-directories that had several names (by the inode number of
    the kernel's lower copy), and which names of the kernel's view are
    one of them: the kernel shows such an entry, copied up or not, with
    the lower inode's number (index=on, every layer on one
    filesystem)."""

    def __init__(self, k_dump=(), klow_dumps=()):
        self.lower_hl = {e[INO]: e for x in klow_dumps
                         for e in parse_dump(x).values()
                         if e[0] != "d" and int(e[NLINK]) > 1}
        self.hl = {p: e[INO] for p, e in parse_dump(k_dump).items()
                   if e[0] != "d" and e[INO] in self.lower_hl}


def compare_dumps(la, lb, known=None, cross=False):
    """The disagreements of two dumps (lists of lines), one line each.
    A is the writer's view (stackfs's in the first comparison), B the
    reader's: the kernel's, or in a cross reading the other
    implementation's over the writer's upper."""
    a, b = parse_dump(la), parse_dump(lb)
    ga, gb = link_groups(a), link_groups(b)
    known = known or Known()
    diffs = []
    for p in sorted(set(a) | set(b)):
        if p not in a or p not in b:
            diffs.append("%s: only in %s" % (p, "A" if p in a else "B"))
            continue
        for i, field in enumerate(FIELDS):
            if i == INO:
                x, y = ga.get(p, ""), gb.get(p, "")
                field = "same file as"
            else:
                x, y = a[p][i], b[p][i]
            if x != y and not tolerated(p, i, a[p], b[p], known, cross):
                diffs.append("%s: %s A=%s B=%s" % (p, field, x, y))
    return diffs


def tolerated(p, i, ea, eb, known, cross):
    """The documented differences
    (docs/overlayfs.md "Differences from kernel overlayfs"), each as narrow as
    it can be said. Only names that are a
    lower file of several names have any."""
    # a directory's count of 1 is "not counted" (a merged directory) in
    # both; which directories are merged differs (the kernel copies up the
    # parents of a hard link's index copy, stackfs those of the name the
    # file's node was last reached by)
    if i == NLINK and ea[0] == "d" and "1" in (ea[NLINK], eb[NLINK]):
        return True
    if p not in known.hl:
        return False
    # stackfs's link count of such a file may count a name twice or one
    # deleted through the view, never miss one (docs/union.md "Copy-up"); the
    # kernel's index counts exactly
    if not cross:
        return i == NLINK and int(ea[NLINK]) > int(eb[NLINK])
    # a reader over another's upper: each keeps the copy of such a file
    # in its own index (the kernel's workdir/index/, stackfs's
    # .stackfs/index/), which the other does not read: its other names
    # show the lower file as it was (wherever a redirect found it), and
    # counts are the upper file's
    if i in (NLINK, INO):
        return True
    return same_but_links(known.lower_hl[known.hl[p]], eb)


def same_but_links(x, y):
    return all(x[k] == y[k] for k in range(len(FIELDS))
               if k not in (NLINK, INO))


def compare_logs(la, lb, known=None):
    """The operations whose results differ (logs as lists of lines; A
    stackfs's, B the kernel's)."""
    diffs = []
    for x, y in zip(la, lb):
        if x != y and not same_stat(x, y, known or Known()) and \
                not notempty_as_eexist(x, y):
            diffs.append("A: %s\n  B: %s" % (x, y))
    if len(la) != len(lb):
        diffs.append("A has %d results, B %d" % (len(la), len(lb)))
    return diffs


def same_stat(x, y, known):
    """Two results of a stat ("N stat PATH = 0 KIND MODE SIZE NLINK iINO")
    that differ in the inode number alone, or also in the link count of a
    lower file that had several names (the kernel shows its lower inode
    number), which stackfs may count higher (tolerated())."""
    fx, fy = x.split(" "), y.split(" ")
    if len(fx) != 10 or len(fy) != 10 or fx[1] != "stat" or fx[4] != "0":
        return False
    if fx[:8] != fy[:8]:
        return False
    if fx[8] == fy[8]:
        return True
    return fx[5] != "d" and fy[9][1:] in known.lower_hl and \
        int(fx[8]) > int(fy[8])


def notempty_as_eexist(x, y):
    """A rename (flags 0) over a directory that is not empty: stackfs
    checks the union's directory and answers ENOTEMPTY on every
    filesystem (as the kernel does for a merged one); the kernel passes
    on what the upper's filesystem answers for an upper-only one, which
    on XFS is EEXIST. rename(2) allows both
    (docs/overlayfs.md "Differences from kernel overlayfs")."""
    fx, fy = x.split(" "), y.split(" ")
    return len(fx) == 7 and fx[1] == "rename" and fx[4] == "0" and \
        fx[:6] == fy[:6] and fx[6] == "ENOTEMPTY" and fy[6:] == ["EEXIST"]


def compare(a, b, ops_mode):
    with open(a) as fa, open(b) as fb:
        la, lb = fa.read().splitlines(), fb.read().splitlines()
    diffs = compare_logs(la, lb) if ops_mode else compare_dumps(la, lb)
    for d in diffs:
        print(d)
    return 1 if diffs else 0


# ---------------------------------------------------------------- selftest

def selftest(d):
    """Each kind of difference a view could have, made in a copy of a
    tree on purpose, must be found by compare_dumps (and an answer that
    differs by compare_logs)."""
    base = os.path.join(d, "base")
    os.makedirs(base)
    with open(os.path.join(base, "f"), "wb") as f:
        f.write(b"data")
    os.mkdir(os.path.join(base, "dir"))
    os.symlink("f", os.path.join(base, "l"))
    os.setxattr(os.path.join(base, "f"), "user.x", b"v")
    ref = dump(base, [])
    changes = [
        ("content", lambda: open(os.path.join(base, "f"), "r+b").write(b"D")),
        ("mode", lambda: os.chmod(os.path.join(base, "f"), 0o600)),
        ("owner", lambda: os.chown(os.path.join(base, "f"), 1, 1)),
        ("xattr", lambda: os.setxattr(os.path.join(base, "f"), "user.x",
                                      b"w")),
        ("nlink", lambda: os.link(os.path.join(base, "f"),
                                  os.path.join(base, "dir", "g"))),
        ("target", lambda: (os.unlink(os.path.join(base, "l")),
                            os.symlink("g", os.path.join(base, "l")))),
        ("missing", lambda: os.unlink(os.path.join(base, "dir", "g"))),
    ]
    failed = 0
    for name, change in changes:
        change()
        now = dump(base, [])
        if not compare_dumps(ref, now):
            print("selftest: a change of %s was not found" % name)
            failed = 1
        ref = now
        if compare_dumps(ref, now):
            print("selftest: a dump differs from itself")
            failed = 1
    if compare_logs(["0 rename a b 0 = ENOTEMPTY"],
                    ["0 rename a b 0 = EEXIST"]) or \
            not compare_logs(["0 rename a b 0 = EEXIST"],
                             ["0 rename a b 0 = ENOTEMPTY"]) or \
            not compare_logs(["0 rename a b 2 = ENOTEMPTY"],
                             ["0 rename a b 2 = EEXIST"]):
        print("selftest: the ENOTEMPTY/EEXIST rule is not as narrow as said")
        failed = 1
    if not compare_logs(["0 unlink a = 0"], ["0 unlink a = ENOENT"]):
        print("selftest: a different result was not found")
        failed = 1
    print("selftest: %s" % ("FAILED" if failed else "ok"))
    return failed


# ---------------------------------------------------------------- the loop

# what the kernel mounts: redirect_dir=on (stackfs moves directories by
# redirects; the kernel without them answers EXDEV), index=on (stackfs
# keeps the names of a lower hard-linked file linked across copy-up; the
# kernel only with an index), metacopy=off (stackfs copies the data)
KOPTS = "redirect_dir=on,index=on,metacopy=off"
# the kernel over stackfs's upper: metacopy=on, as stackfs makes
# metadata-only copies by default (docs/union.md "Metadata-only copy-up"), which
# a kernel mounted metacopy=off refuses to follow
XOPTS = "redirect_dir=on,index=on,metacopy=on"


class MountError(Exception):
    pass


def sh(*cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise MountError("%s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                               r.stdout.decode().strip()))


# the middle layer (--mid) is an upper the kernel wrote over the lower
# with a sequence of its own: its whiteouts, opaque directories,
# redirects and copies, read by both as a ro layer
MID_KOPTS = "redirect_dir=on,index=off,metacopy=off"


class Loop:
    def __init__(self, style, top, mnt, kmnt, sfs, inject=False, mid=False):
        self.style, self.top, self.mnt, self.kmnt, self.sfs = \
            style, top, mnt, kmnt, sfs
        self.inject, self.mid = inject, mid

    def sfs_mount(self, upper, lowers):
        sh(self.sfs, "mount", "-o", "whiteout=" + self.style,
           upper + "".join(":%s=ro" % x for x in lowers), self.mnt)

    def sfs_umount(self):
        # a file an operation that raised left open (its object kept by
        # the traceback) makes the unmount busy: collected, asked again
        for tries in range(4):
            try:
                sh(self.sfs, "umount", self.mnt)
                return
            except MountError as e:
                if "busy" not in str(e) or tries == 3:
                    raise
                gc.collect()
                time.sleep(0.2)

    def kmount(self, lowers, upper, work, opts=KOPTS):
        sh("mount", "-t", "overlay", "overlay", "-o",
           "lowerdir=%s,upperdir=%s,workdir=%s,%s" % (":".join(lowers), upper,
                                                      work, opts), self.kmnt)

    def kumount(self):
        sh("umount", self.kmnt)

    def on_view(self, mount, umount, work):
        """work() on a view mounted by mount(), always unmounted; an
        error of work() (a failed remount in it) is the one reported,
        not the unmount's that follows it."""
        mount()
        done = False
        try:
            r = work()
            done = True
            return r
        finally:
            try:
                umount()
            except Exception:  # noqa: BLE001 (the first error is said)
                if done:
                    raise

    def layers(self, seed, n, p):
        """The lower layers of both, highest first: the random tree, and
        with --mid the kernel's upper of N/2 operations of their own over
        it; and the dumps of the kernel's copies."""
        tree(seed, p["lo"])
        lows, klows = [p["lo"]], [p["klo"]]
        if self.mid:
            self.on_view(lambda: self.kmount([p["lo"]], p["mid"], p["mw"],
                                             MID_KOPTS), self.kumount,
                         lambda: run_view(self.kmnt, ops("mid%d" % seed,
                                                         n // 2)))
            lows.insert(0, p["mid"])
            klows.insert(0, p["kmid"])
        for x, y in zip(lows, klows):
            sh("cp", "-a", x + "/.", y)
        if self.inject:
            inject(p["klo"])
        return lows, klows, [dump(x, []) for x in klows]

    def sequence(self, seed, n):
        """The disagreements of one sequence, as report lines."""
        d = os.path.join(self.top, "s%d" % seed)
        shutil.rmtree(d, ignore_errors=True)
        p = {k: os.path.join(d, k) for k in
             ("lo", "up", "klo", "kup", "kw", "xw", "mid", "kmid", "mw")}
        for x in p.values():
            os.makedirs(x)
        lows, klows, klow_dumps = self.layers(seed, n, p)
        seq = ops(seed, n)
        s_up = lambda: self.sfs_mount(p["up"], lows)
        k_up = lambda: self.kmount(klows, p["kup"], p["kw"])
        s_log, s_dump = self.on_view(
            s_up, self.sfs_umount,
            lambda: run_view(self.mnt, seq,
                             lambda: (self.sfs_umount(), s_up())))
        k_log, k_dump = self.on_view(
            k_up, self.kumount,
            lambda: run_view(self.kmnt, seq,
                             lambda: (self.kumount(), k_up())))
        known = Known(k_dump, klow_dumps)
        out = section("results (A stackfs, B kernel)",
                      compare_logs(s_log, k_log, known))
        out += section("views (A stackfs, B kernel)",
                       compare_dumps(s_dump, k_dump, known))
        out += self.cross(p, lows, klows, s_dump, k_dump, known)
        save(d, "s.ops", s_log)
        save(d, "k.ops", k_log)
        return out

    def cross(self, p, lows, klows, s_dump, k_dump, known):
        ks = self.on_view(lambda: self.sfs_mount(p["kup"], klows),
                          self.sfs_umount, lambda: dump(self.mnt, []))
        out = section("the kernel's upper (A kernel, B stackfs over it)",
                      compare_dumps(k_dump, ks, known, cross=True))
        if self.style != "overlay":
            return out
        # the kernel shows stackfs's metadata directory
        # (docs/overlayfs.md "Differences from kernel overlayfs"): checked, then left out
        sk = self.on_view(lambda: self.kmount(lows, p["up"], p["xw"], XOPTS),
                          self.kumount, lambda: kernel_over_sfs(self.kmnt))
        out += section("stackfs's upper (A stackfs, B kernel over it)",
                       compare_dumps(s_dump, sk, known, cross=True))
        return out


def kernel_over_sfs(view):
    """The kernel's view of a stackfs upper, but `.stackfs`, which it
    shows (a directory, as stackfs made it)."""
    if not os.path.isdir(os.path.join(view, ".stackfs")):
        return ["./.stackfs: not shown by the kernel (docs/overlayfs.md says it is)"]
    return dump(view, [".stackfs"])


def run_view(view, seq, remount=None):
    """The log of SEQ run on VIEW, and its dump after. remount() unmounts
    the view and mounts it again on the same layers (what was written
    must read back the same); without it, a remount is skipped."""
    log = []
    for i, o in enumerate(seq):
        if o[0] == "remount":
            res = "skipped"
            if remount:
                remount()
                res = "0"
        else:
            res = apply_op(view, o)
        log.append("%d %s = %s" % (i, fmt_op(o), res))
    return log, dump(view, [])


def section(title, diffs):
    return ["%s:" % title] + ["  " + x for x in diffs] if diffs else []


def save(d, name, lines):
    with open(os.path.join(d, name), "w") as f:
        f.writelines(x + "\n" for x in lines)


def inject(klo):
    """--inject: a difference between the two lowers, on purpose (the
    test of the test): a directory "x" with a file in the kernel's alone.
    The views must disagree."""
    os.mkdir(os.path.join(klo, "x"))
    with open(os.path.join(klo, "x", "injected"), "w") as f:
        f.write("only in the kernel's lower\n")


def loop(style, first, count, n, top, mnt, kmnt, sfs, flags):
    lp = Loop(style, top, mnt, kmnt, sfs, "--inject" in flags,
              "--mid" in flags)
    bad = 0
    for seed in range(first, first + count):
        try:
            out = lp.sequence(seed, n)
        except MountError as e:
            print("=== seed %d (whiteout=%s): %s" % (seed, style, e))
            return 2
        except OSError as e:  # a dump that failed: a view is broken
            out = ["failed: %r" % e]
        if out:
            bad += 1
            print("=== seed %d (whiteout=%s, %d operations) disagrees:" %
                  (seed, style, n))
            print("\n".join(out))
            print("replay: KDIFF_SEED=%d KDIFF_COUNT=1 KDIFF_OPS=%d; "
                  "python3 tests/tools/kdiff.py ops %d %d lists the "
                  "operations; the trees and logs: %s" %
                  (seed, n, seed, n, os.path.join(top, "s%d" % seed)))
        else:
            shutil.rmtree(os.path.join(top, "s%d" % seed))
    print("kdiff: whiteout=%s, seeds %d..%d, %d operations each: "
          "%d of %d sequences disagree" %
          (style, first, first + count - 1, n, bad, count))
    return 1 if bad else 0


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "tree" and len(argv) == 4:
        os.makedirs(argv[3], exist_ok=True)
        tree(argv[2], argv[3])
    elif cmd == "ops" and len(argv) == 4:
        for i, o in enumerate(ops(argv[2], int(argv[3]))):
            print(i, fmt_op(o))
    elif cmd == "run" and len(argv) == 7:
        run(argv[2], int(argv[3]), argv[4], argv[5], argv[6])
    elif cmd == "dump" and len(argv) >= 3:
        skip = [argv[i + 1] for i in range(3, len(argv) - 1)
                if argv[i] == "--skip-root"]
        for line in dump(argv[2], skip):
            print(line)
    elif cmd == "compare" and len(argv) in (4, 5):
        return compare(argv[2], argv[3], len(argv) == 5 and argv[4] == "--ops")
    elif cmd == "selftest" and len(argv) == 3:
        return selftest(argv[2])
    elif cmd == "loop" and len(argv) >= 10 and \
            set(argv[10:]) <= {"--inject", "--mid"}:
        return loop(argv[2], int(argv[3]), int(argv[4]), int(argv[5]),
                    *argv[6:10], argv[10:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
