#!/usr/bin/env python3
"""Image trees as tar streams see them, for tests/16-podman.bats: the
reference flattening of an image's OCI layers (the image spec's
"Applying Changesets", written for the test), and the listing of a
`podman export` tar, in one format so that they can be compared entry by
entry.

  ocitar.py flatten OCIDIR   the image of an OCI layout (`podman save
                             --format oci-dir`): its layers applied
                             lowest first
  ocitar.py list TAR         the entries of one tar (`podman export`)

Each prints one line per entry, sorted: "PATH TYPE MODE UID:GID WHAT
XATTRS", WHAT being the sha256 of a file's content, a symlink's target or
a device's numbers; then one line per set of hard links, "link PATH
PATH...". Modes keep the set-ID and sticky bits; times are left out (a
layer's tar and an export are taken at different times).

Rules, lowest layer first: a layer's whiteouts apply to the layers below
(".wh.NAME" removes NAME and what is under it, ".wh..wh..opq" everything
the layers below have in its directory); then its entries are added (a
directory's attributes replace those below and its content merges;
anything else replaces what is below). A hard link names an entry of the
tree as it stands, and shares its content and attributes.
"""
import hashlib
import json
import os
import sys
import tarfile

OPQ = ".wh..wh..opq"
WH = ".wh."


def norm(name):
    name = name.lstrip("./") if name not in (".", "./") else ""
    return "/" + name.rstrip("/") if name else "/"


def xattrs(m):
    return ",".join(sorted("%s=%s" % (k[len("SCHILY.xattr."):], v)
                           for k, v in m.pax_headers.items()
                           if k.startswith("SCHILY.xattr.")))


def entry(tf, m):
    """(type, mode, owner, what, xattrs) of member m; None for a hard link."""
    if m.islnk():
        return None
    if m.isreg():
        what = hashlib.sha256(tf.extractfile(m).read()).hexdigest()
        kind = "f"
    elif m.isdir():
        what, kind = "-", "d"
    elif m.issym():
        what, kind = m.linkname, "l"
    elif m.ischr() or m.isblk():
        what, kind = "%d:%d" % (m.devmajor, m.devminor), "c" if m.ischr() else "b"
    else:
        what, kind = "-", "p"
    # permission bits only: some writers (Go's archive/tar) add the type's
    return [kind, "%o" % (m.mode & 0o7777), "%d:%d" % (m.uid, m.gid), what, xattrs(m)]


def remove(tree, links, path):
    for p in [p for p in tree if p == path or p.startswith(path.rstrip("/") + "/")]:
        del tree[p]
        links.pop(p, None)


def apply(tree, links, tf):
    members = tf.getmembers()
    for m in members:
        p = norm(m.name)
        d, b = os.path.split(p)
        if b == OPQ:
            for q in [q for q in tree if q.startswith(d.rstrip("/") + "/")]:
                del tree[q]
                links.pop(q, None)
        elif b.startswith(WH):
            remove(tree, links, os.path.join(d, b[len(WH):]))
    for m in members:
        p = norm(m.name)
        b = os.path.basename(p)
        if b == OPQ or b.startswith(WH):
            continue
        e = entry(tf, m)
        if e is None:
            target = norm(m.linkname)
            remove(tree, links, p)
            tree[p] = tree[target]  # the same list: one inode
            links[p] = links.setdefault(target, target)
            continue
        if e[0] != "d" or p not in tree or tree[p][0] != "d":
            remove(tree, links, p)
        tree[p] = e
        links.pop(p, None)


def layers_of(ocidir):
    def blob(digest):
        return os.path.join(ocidir, "blobs", *digest.split(":"))
    with open(os.path.join(ocidir, "index.json")) as f:
        mdigest = json.load(f)["manifests"][0]["digest"]
    with open(blob(mdigest)) as f:
        return [blob(layer["digest"]) for layer in json.load(f)["layers"]]


def show(tree, links):
    for p in sorted(tree):
        print(p, *tree[p])
    groups = {}
    for p, head in links.items():
        if p in tree:
            groups.setdefault(head, set()).add(p)
    for g in sorted(sorted(s) for s in groups.values()):
        if len(g) > 1:
            print("link", *g)


def main():
    tree, links = {}, {}
    if len(sys.argv) == 3 and sys.argv[1] == "flatten":
        for layer in layers_of(sys.argv[2]):
            with tarfile.open(layer) as tf:
                apply(tree, links, tf)
    elif len(sys.argv) == 3 and sys.argv[1] == "list":
        with tarfile.open(sys.argv[2]) as tf:
            apply(tree, links, tf)
    else:
        sys.exit(__doc__)
    tree.setdefault("/", ["d", "755", "0:0", "-", ""])
    show(tree, links)


if __name__ == "__main__":
    main()
