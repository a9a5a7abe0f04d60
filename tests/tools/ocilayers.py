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
Entries are listed "d PATH" or "f PATH CONTENT".

Rules applied, lowest layer first: in a layer, its whiteouts apply to the
layers below only (".wh.NAME" removes NAME; ".wh..wh..opq" in a directory
removes everything the layers below have in it), then its own entries are
added (a directory merges with a directory below, anything else replaces
what is below). A whiteout never shows.
"""
import os
import random
import sys

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
    return ["d " + p if tree[p][0] == "d" else "f %s %s" % (p, tree[p][1].strip())
            for p in sorted(tree)]


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


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    else:
        sys.exit("usage: ocilayers.py make DIR SEEDS N | check DIR SEEDS N VIEW")
