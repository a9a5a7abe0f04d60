#!/usr/bin/env python3
"""OCI layers for tests/73-oci.bats: random layer trees, and the reference
flattening of the OCI image spec ("Whiteouts"), written for the test.

  ocilayers.py make DIR SEEDS NLAYERS  the layers DIR/L0 (lowest) ..
                                       DIR/L<N-1>, each holding a random
                                       tree s<SEED> for SEED in 1..SEEDS
  ocilayers.py check DIR SEEDS NLAYERS VIEW
                                       VIEW/s<SEED> against the flattening
                                       of DIR's layers: the seeds that differ
                                       and a diff of the first; exit 1 then
  ocilayers.py apply LAYER.tar DIR    applies an OCI layer tarball to DIR
                                       (a copy of the layers below) by the
                                       same rules, restoring type, mode,
                                       owner, mtime (ns), xattrs (PAX
                                       SCHILY.xattr.*), symlinks, hard
                                       links, devices and fifos
  ocilayers.py manifest DIR            one line per entry under DIR: type,
                                       mode, owner, size, sha256, link
                                       target, device, xattrs, mtime (not
                                       of directories); then the groups of
                                       hard links (by path)
  ocilayers.py flat DIR SEEDS NLAYERS OUT
                                       the flattening of DIR's layers as a
                                       tree OUT/s<SEED>
  ocilayers.py mutate VIEW SEEDS SALT  random changes in VIEW/s<SEED>:
                                       deletions, renames, directories
                                       removed and made again, writes
  ocilayers.py same A B SEEDS          A/s<SEED> and B/s<SEED> hold the
                                       same trees; exit 1 when not
Entries are listed "d PATH" or "f PATH CONTENT".

Rules applied, lowest layer first: in a layer, its whiteouts apply to the
layers below only (".wh.NAME" removes NAME; ".wh..wh..opq" in a directory
removes everything the layers below have in it), then its own entries are
added (a directory merges with a directory below, anything else replaces
what is below). A whiteout never shows.
"""
import errno
import hashlib
import os
import random
import shutil
import stat
import sys
import tarfile

NAMES = ["a", "b", "c", "d"]
OPQ = ".wh..wh..opq"


def make(root, seeds, nlayers):
    for seed in range(1, seeds + 1):
        rnd = random.Random(seed)
        for k in range(nlayers):
            d = os.path.join(root, "L%d" % k, "s%d" % seed)
            os.makedirs(d)
            fill(rnd, d, k, 0)


def fill(rnd, d, k, depth):
    for n in NAMES:
        r = rnd.random()
        p = os.path.join(d, n)
        if r < 0.25:
            with open(p, "w") as f:
                f.write("L%d:%s\n" % (k, n))
        elif r < 0.55 and depth < 2:
            os.mkdir(p)
            fill(rnd, p, k, depth + 1)
        if k > 0 and rnd.random() < 0.2:
            # a whiteout of the name, also beside a new entry of it
            open(os.path.join(d, ".wh." + n), "w").close()
    if k > 0 and depth > 0 and rnd.random() < 0.15:
        open(os.path.join(d, OPQ), "w").close()


def flatten(layers):
    tree = flatten_tree(layers)
    return ["d " + p if tree[p][0] == "d" else "f %s %s" % (p, tree[p][1].strip())
            for p in sorted(tree)]


def flatten_tree(layers):
    tree = {}  # path -> ("d", None) or ("f", content)
    for layer in layers:
        entries, whiteouts, opaque = [], [], []
        for dirpath, dirs, files in os.walk(layer):
            rel = os.path.relpath(dirpath, layer)
            rel = "" if rel == "." else rel
            for n in dirs:
                entries.append((os.path.join(rel, n), "d", None))
            for n in files:
                if n == OPQ:
                    opaque.append(rel)
                elif n.startswith(".wh."):
                    whiteouts.append(os.path.join(rel, n[4:]))
                else:
                    with open(os.path.join(dirpath, n)) as f:
                        entries.append((os.path.join(rel, n), "f", f.read()))
        for w in whiteouts:
            remove(tree, w)
        for o in opaque:
            for p in [p for p in tree if p.startswith(o + "/")]:
                del tree[p]
        for p, t, c in sorted(entries):
            old = tree.get(p)
            if old and (old[0] != "d" or t != "d"):
                remove(tree, p)
            parent = os.path.dirname(p)
            if parent and tree.get(parent, ("",))[0] != "d":
                continue  # under a path this layer does not make a directory
            tree[p] = (t, c)
    return tree


def flat(root, seeds, nlayers, out):
    """The flattening of the layers made by make, as a directory tree."""
    for seed in range(1, seeds + 1):
        tree = flatten_tree([os.path.join(root, "L%d" % k, "s%d" % seed) for k in range(nlayers)])
        os.makedirs(os.path.join(out, "s%d" % seed))
        for p in sorted(tree):
            t, c = tree[p]
            if t == "d":
                os.mkdir(os.path.join(out, "s%d" % seed, p))
            else:
                with open(os.path.join(out, "s%d" % seed, p), "w") as f:
                    f.write(c)


def write(p, text):
    if not os.path.isdir(p):
        with open(p, "w") as f:
            f.write(text + "\n")


def mutate_one(rnd, top, step):
    """One random change in the tree top: a deletion, a rename (a moved
    directory, a moved file), a directory removed and made again
    (opaque), a file written, a directory made."""
    paths = []
    for dirpath, dirs, files in os.walk(top):
        paths += [os.path.join(dirpath, n) for n in sorted(dirs) + sorted(files)]
    dirs = [top] + [p for p in paths if os.path.isdir(p)]
    r = rnd.random()
    if paths and r < 0.2:
        rm(rnd.choice(paths))
    elif paths and r < 0.45:
        p = rnd.choice(paths)
        dst = os.path.join(rnd.choice(dirs), "m%d" % step)
        if not (dst + "/").startswith(p + "/") and not os.path.lexists(dst):
            os.rename(p, dst)
    elif len(dirs) > 1 and r < 0.6:
        d = rnd.choice(dirs[1:])
        rm(d)
        os.mkdir(d)
        write(os.path.join(d, "r%d" % step), "R%d" % step)
    elif r < 0.85:
        write(os.path.join(rnd.choice(dirs), rnd.choice(NAMES + ["w%d" % step])), "U%d" % step)
    else:
        d = os.path.join(rnd.choice(dirs), "k%d" % step)
        os.mkdir(d)
        write(os.path.join(d, "x"), "K%d" % step)


def mutate(viewdir, seeds, salt):
    for seed in range(1, seeds + 1):
        rnd = random.Random(seed * 7919 + salt)
        for step in range(6):
            mutate_one(rnd, os.path.join(viewdir, "s%d" % seed), step)


def same(a, b, seeds):
    bad = [seed for seed in range(1, seeds + 1)
           if view(os.path.join(a, "s%d" % seed)) != view(os.path.join(b, "s%d" % seed))]
    for seed in bad[:1]:
        print("seed %d: %s\n     vs %s" % (seed, view(os.path.join(a, "s%d" % seed)),
                                         view(os.path.join(b, "s%d" % seed))))
    if bad:
        print("seeds that differ: " + " ".join(map(str, bad)))
    return 1 if bad else 0


def view(root):
    out = []
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel
        for n in dirs:
            p = os.path.join(rel, n)
            out.append((p, "d " + p))
        for n in files:
            p = os.path.join(rel, n)
            with open(os.path.join(dirpath, n)) as f:
                out.append((p, "f %s %s" % (p, f.read().strip())))
    return [line for _, line in sorted(out)]


def check(root, seeds, nlayers, viewdir):
    bad = []
    for seed in range(1, seeds + 1):
        want = flatten([os.path.join(root, "L%d" % k, "s%d" % seed) for k in range(nlayers)])
        got = view(os.path.join(viewdir, "s%d" % seed))
        if want != got:
            bad.append((seed, want, got))
    for seed, want, got in bad[:1]:
        print("seed %d: want %s, got %s" % (seed, want, got))
    if bad:
        print("seeds that differ: " + " ".join(str(b[0]) for b in bad))
    return 1 if bad else 0


def remove(tree, p):
    for q in [q for q in tree if q == p or q.startswith(p + "/")]:
        del tree[q]


def safe_path(root, rel):
    """root/rel when every directory on the way is a real directory (not
    a symlink, which a layer must never make its entries go through);
    else None. rel is relative, "" for root itself."""
    path = root
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    for p in parts[:-1]:
        if p == "..":
            return None
        path = os.path.join(path, p)
        st = os.lstat(path) if os.path.lexists(path) else None
        if st is None or not stat.S_ISDIR(st.st_mode):
            return None
    if parts and parts[-1] == "..":
        return None
    return os.path.join(path, parts[-1]) if parts else root


def rm(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def pax_ns(m):
    """The member's mtime in ns, exactly (tarfile's float loses them)."""
    v = m.pax_headers.get("mtime")
    if v is None:
        return m.mtime * 10**9
    neg = v.startswith("-")
    whole, _, frac = v.lstrip("-").partition(".")
    ns = int(whole) * 10**9 + int((frac + "000000000")[:9])
    return -ns if neg else ns


def set_meta(path, m):
    """Owner first (chown clears set-ID bits and security.capability),
    then mode, then exactly the entry's xattrs (ACLs included: a new
    entry's inherited default ACL is not the layer's, and a directory
    over a directory takes the layer's attributes), then mtime."""
    link = m.issym()
    os.chown(path, m.uid, m.gid, follow_symlinks=False)
    if not link:
        os.chmod(path, m.mode & 0o7777)
    want = {k[len("SCHILY.xattr."):]: v.encode("utf-8", "surrogateescape")
            for k, v in m.pax_headers.items() if k.startswith("SCHILY.xattr.")}
    for x in os.listxattr(path, follow_symlinks=False):
        if x not in want:
            try:
                os.removexattr(path, x, follow_symlinks=False)
            except OSError as e:
                # XFS lists each ACL twice (system.posix_acl_* and
                # trusted.SGI_ACL_*): one removed, the other is gone
                if e.errno != errno.ENODATA:
                    raise
    for x, v in sorted(want.items()):
        os.setxattr(path, x, v, follow_symlinks=False)
    ns = pax_ns(m)
    os.utime(path, ns=(ns, ns), follow_symlinks=False)


def make_entry(path, m, tf, root):
    if m.isdir():
        if not os.path.isdir(path) or os.path.islink(path):
            os.mkdir(path)
    elif m.isreg():
        with open(path, "wb") as out:
            shutil.copyfileobj(tf.extractfile(m), out, 1 << 20)
    elif m.issym():
        os.symlink(m.linkname, path)
    elif m.islnk():
        os.link(safe_path(root, m.linkname), path)
    elif m.ischr() or m.isblk():
        kind = stat.S_IFCHR if m.ischr() else stat.S_IFBLK
        os.mknod(path, kind | 0o600, os.makedev(m.devmajor, m.devminor))
    elif m.isfifo():
        os.mkfifo(path)
    else:
        raise SystemExit("%s: a tar type the OCI layer format has not: %r" % (m.name, m.type))


def apply(layer, root):
    """The OCI rules: the layer's whiteouts first, on what is below
    only; then its entries in order (a directory over a directory
    merges its attributes, anything else replaces what is there); the
    directories' times last (their entries change them)."""
    tf = tarfile.open(layer, "r:")
    members = tf.getmembers()
    entries, dirs = [], []
    for m in members:
        base = os.path.basename(m.name.rstrip("/"))
        parent = os.path.dirname(m.name.rstrip("/"))
        if m.isreg() and base == OPQ:
            d = safe_path(root, parent)
            if d and os.path.isdir(d) and not os.path.islink(d):
                for n in os.listdir(d):
                    rm(os.path.join(d, n))
        elif m.isreg() and base.startswith(".wh."):
            p = safe_path(root, os.path.join(parent, base[4:]))
            if p:
                rm(p)
        else:
            entries.append(m)
    for m in entries:
        path = safe_path(root, m.name)
        if path is None:
            raise SystemExit("%s: its parent is not a directory (parents come first)" % m.name)
        old = os.lstat(path) if os.path.lexists(path) else None
        if old and path != root and not (m.isdir() and stat.S_ISDIR(old.st_mode)):
            rm(path)
        make_entry(path, m, tf, root)
        if not m.islnk():
            set_meta(path, m)
        if m.isdir():
            dirs.append((path, pax_ns(m)))
    for path, ns in reversed(dirs):
        os.utime(path, ns=(ns, ns), follow_symlinks=False)


def manifest(root):
    lines, inodes = [], {}
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for n in ([""] if dirpath == root else []) + sorted(dirs + files):
            path = os.path.join(dirpath, n) if n else root
            rel = os.fsencode(os.path.relpath(path, root))
            st = os.lstat(path)
            kind = stat.S_IFMT(st.st_mode)
            f = ["%r" % rel, "%o" % kind, "%04o" % stat.S_IMODE(st.st_mode),
                 "%d:%d" % (st.st_uid, st.st_gid)]
            if stat.S_ISREG(kind):
                h = hashlib.sha256()
                with open(path, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                f += ["size=%d" % st.st_size, h.hexdigest()[:16]]
            if stat.S_ISLNK(kind):
                f.append("-> %r" % os.fsencode(os.readlink(path)))
            if stat.S_ISCHR(kind) or stat.S_ISBLK(kind):
                f.append("dev=%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
            for x in sorted(os.listxattr(path, follow_symlinks=False)):
                f.append("%s=%s" % (x, os.getxattr(path, x, follow_symlinks=False).hex()))
            if not stat.S_ISDIR(kind):
                f.append("mtime=%d" % st.st_mtime_ns)
                if st.st_nlink > 1:
                    inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
            lines.append(" ".join(f))
    for names in sorted(sorted(v) for v in inodes.values()):
        lines.append("links: " + " ".join("%r" % n for n in names))
    return lines


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "apply":
        apply(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "flat":
        flat(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif len(sys.argv) == 5 and sys.argv[1] == "mutate":
        mutate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 5 and sys.argv[1] == "same":
        sys.exit(same(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    elif len(sys.argv) == 3 and sys.argv[1] == "manifest":
        sys.stdout.write("".join(line + "\n" for line in manifest(sys.argv[2])))
    elif len(sys.argv) == 5 and sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    else:
        sys.exit("usage: ocilayers.py make DIR SEEDS N | check DIR SEEDS N VIEW | "
                 "apply LAYER.tar DIR | manifest DIR | flat DIR SEEDS N OUT | "
                 "mutate VIEW SEEDS SALT | same A B SEEDS")
