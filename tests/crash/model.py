"""The disk at a power cut: the block contract (docs/durability.md "Power loss",
"The block contract") and the crash states it allows of a recorded log.

A log (tests/tools/blkrec list) holds the requests the recorded device
handled, in the order it handled them: writes and zeroes (offset,
length), flushes, and the workload's marks. The device is a loop device
with a volatile write cache and no FUA (explore checks both when it
records), so the block layer hands it a filesystem's FUA write as the
write and then a flush, and a REQ_PREFLUSH write as a flush and then the
write: a flush record is the device's only barrier. What it may have
persisted when the power went:
- every write handled before a flush that completed, whole;
- of the writes handled since the last completed flush (one epoch), any
  subset, and of each write any subset of its sectors (the device's
  logical block size; a sector is written whole or not at all); where
  a sector was written more than once in the epoch, it holds one of
  those versions or the one before them.
Nothing else: no torn sector, no write lost from before a flush, no byte
that was never written.

A state is a spec that tests/tools/blkrec replay rebuilds: "N", the
records 0..N-1 all applied, or "N+P,P,..." with N the first record of an
epoch and then pieces P of its writes: "I" (write I whole) or
"I:OFF+LEN:..." (only those byte ranges of write I, relative to its
start, whole sectors). A state counts what happened up to the flush
that ends its epoch (Plan.steps_at).
"""
# an epoch whose writes have at most this many sectors in all is
# enumerated whole (2**n states), not sampled
EXHAUSTIVE_SECTORS = 12
# a torn write of more sectors than this keeps runs of sectors, not
# sectors drawn one by one (the spec stays short)
SECTOR_DRAW_MAX = 64


class Rec:
    __slots__ = ("i", "kind", "off", "len", "text")

    def __init__(self, i, kind, off=0, length=0, text=""):
        self.i, self.kind, self.off, self.len, self.text = i, kind, off, length, text

    def data(self):
        return self.kind in ("write", "zero")


def parse_list(lines):
    """Records from the lines of `blkrec list`."""
    recs = []
    for line in lines:
        f = line.split(" ", 2)
        i, kind = int(f[0]), f[1]
        if kind in ("write", "zero"):
            off, length = f[2].split()
            recs.append(Rec(i, kind, int(off), int(length)))
        else:
            recs.append(Rec(i, kind, text=f[2] if len(f) > 2 else ""))
    return recs


class Epoch:
    """The records from `start` (the first after a flush, or 0) up to
    `end` (the flush that closes it, or the end of the log)."""

    def __init__(self, start, end, writes):
        self.start, self.end, self.writes = start, end, writes

    def sectors(self, g):
        return sum(nsectors(w, g) for w in self.writes)


def epochs(recs):
    out, start = [], 0
    for r in recs:
        if r.kind == "flush":
            out.append(Epoch(start, r.i, [w for w in recs[start:r.i] if w.data()]))
            start = r.i + 1
    out.append(Epoch(start, len(recs), [w for w in recs[start:] if w.data()]))
    return out


def nsectors(w, g):
    """Sectors of write w; a write not on sector bounds (the recorder
    never saw one) counts as one sector, kept whole or not at all."""
    if w.off % g or w.len % g:
        return 1
    return w.len // g


def piece(w, secs, g):
    """The spec piece of write w keeping the sectors `secs` (sorted)."""
    n = nsectors(w, g)
    if len(secs) == n:
        return str(w.i)
    if n == 1:
        return str(w.i)
    runs, out = [], [str(w.i)]
    for s in secs:
        if runs and runs[-1][1] == s:
            runs[-1][1] = s + 1
        else:
            runs.append([s, s + 1])
    for a, b in runs:
        out.append(f"{a * g}+{(b - a) * g}")
    return ":".join(out)


def spec(start, pieces):
    return f"{start}+" + ",".join(pieces) if pieces else str(start)


class Draw:
    """The states of one epoch's writes: all of them when few, else
    drawn."""

    def __init__(self, ep, g):
        self.ep, self.g = ep, g
        self.full = ep.sectors(g)

    def nontrivial(self):
        """Whether the epoch has a state other than its two flush
        points (nothing kept, everything kept)."""
        return self.full >= 2

    def all(self):
        """Every spec of the epoch but the two flush points."""
        per = [[(w, k) for k in range(nsectors(w, self.g))] for w in self.ep.writes]
        flat = [x for p in per for x in p]
        for mask in range(1, (1 << len(flat)) - 1):
            keep = {}
            for b, (w, k) in enumerate(flat):
                if mask >> b & 1:
                    keep.setdefault(w.i, []).append(k)
            yield self.spec_of(keep)

    def spec_of(self, keep):
        """keep: write index -> kept sector numbers (ascending)."""
        by_i = {w.i: w for w in self.ep.writes}
        return spec(self.ep.start, [piece(by_i[i], secs, self.g)
                                    for i, secs in sorted(keep.items())])

    def torn(self, w, rng):
        """Sectors of w that reached the medium, some but not all."""
        n = nsectors(w, self.g)
        if n == 1:
            return [0]
        how = rng.random()
        if how < 0.4:                       # the write went in order and stopped
            return list(range(rng.randrange(1, n)))
        if how < 0.6:                       # it went out of order and stopped
            return list(range(rng.randrange(1, n), n))
        if n <= SECTOR_DRAW_MAX:            # each sector on its own
            secs = [k for k in range(n) if rng.random() < 0.5]
            return secs if 0 < len(secs) < n else [rng.randrange(n)]
        a = rng.randrange(n - 1)            # one run of it
        return list(range(a, rng.randrange(a + 1, n)))

    def sample(self, rng):
        """One spec drawn (maybe a flush point's, which the caller drops)."""
        w, how, keep = self.ep.writes, rng.random(), {}

        def whole(x):
            keep[x.i] = list(range(nsectors(x, self.g)))

        if how < 0.25:      # in order up to a point, the last one torn or whole
            k = rng.randrange(1, len(w) + 1)
            for x in w[:k - 1]:
                whole(x)
            if rng.random() < 0.5:
                keep[w[k - 1].i] = self.torn(w[k - 1], rng)
            else:
                whole(w[k - 1])
        elif how < 0.4:     # all but one
            skip = rng.randrange(len(w))
            for j, x in enumerate(w):
                if j != skip:
                    whole(x)
        elif how < 0.6:     # each write kept whole or not
            for x in w:
                if rng.random() < 0.5:
                    whole(x)
        elif how < 0.8:     # each write whole, torn or not there
            for x in w:
                c = rng.random()
                if c < 1 / 3:
                    whole(x)
                elif c < 2 / 3:
                    keep[x.i] = self.torn(x, rng)
        else:               # all of them, one torn
            t = rng.randrange(len(w))
            for j, x in enumerate(w):
                if j == t:
                    keep[x.i] = self.torn(x, rng)
                else:
                    whole(x)
        return self.spec_of({i: s for i, s in keep.items() if s})

    def source(self, rng):
        """An endless iterator of this epoch's specs (None when it has
        run out: an enumerated epoch, every state given)."""
        if self.full <= EXHAUSTIVE_SECTORS:
            specs = list(self.all())
            rng.shuffle(specs)
            yield from specs
            while True:
                yield None
        while True:
            yield self.sample(rng)


class Plan:
    """Crash states of a log: the flush points, then states inside the
    epochs, up to the budget. Both are drawn evenly over the workload's
    steps (the one in flight at the point), so that a step with many
    flushes (a commit) does not crowd out the others. With a budget of
    at least the number of states, every state is given."""

    def __init__(self, recs, budget, rng, sector=512):
        self.recs, self.g = recs, sector
        self.flushes = [r.i for r in recs if r.kind == "flush"]
        self.epochs = epochs(recs)
        self.states = self.pick(budget, rng) if budget else []

    def flush_points(self):
        return sorted({e.start for e in self.epochs} | {len(self.recs)})

    def by_step(self, items, key):
        """items grouped by the step started at key(item); the groups
        in step order."""
        groups = {}
        for it in items:
            groups.setdefault(self.steps_at(str(key(it)))[1], []).append(it)
        return [groups[g] for g in sorted(groups)]

    @staticmethod
    def round_robin(groups, rng):
        """One of each group in turn, each group in random order."""
        for g in groups:
            rng.shuffle(g)
        while any(groups):
            for g in groups:
                if g:
                    yield g.pop()

    def pick(self, budget, rng):
        end = len(self.recs)
        states = [str(end)]
        for n in self.round_robin(self.by_step(self.flush_points(), lambda n: n), rng):
            if len(states) >= max(1, budget // 2) and len(states) >= budget - self.inner_room():
                break
            if n != end:
                states.append(str(n))
        draws = [Draw(e, self.g) for e in self.epochs if e.writes]
        draws = [d for d in draws if d.nontrivial()]
        groups = [[d.source(rng) for d in g] for g in self.by_step(draws, lambda d: d.ep.start)]
        seen, tries = set(states), 0
        while any(groups) and len(states) < budget and tries < budget * 20:
            for g in groups:
                if len(states) >= budget or not g:
                    continue
                src = g[tries % len(g)]
                tries += 1
                sp = next(src)
                if sp is None:
                    g.remove(src)
                elif sp not in seen:
                    seen.add(sp)
                    states.append(sp)
            groups = [g for g in groups if g]
        return states

    def inner_room(self):
        """How many states inside epochs there are at most (capped: a
        large epoch counts as a budget's worth)."""
        room = 0
        for e in self.epochs:
            n = e.sectors(self.g)
            if n >= 2:
                room += (1 << n) - 2 if n <= EXHAUSTIVE_SECTORS else 1 << 30
        return room

    def steps_at(self, sp):
        """(completed, started): steps whose end / begin mark comes before
        the first flush after the state's point (docs/durability.md "The explorer")."""
        n = int(sp.split("+")[0])
        cut = next((f for f in self.flushes if f >= n), len(self.recs))
        done = started = 0
        for r in self.recs[:cut]:
            if r.kind == "mark" and r.text[:1] in ("B", "E") and " " in r.text:
                kind, k = r.text.split()
                if kind == "E":
                    done = max(done, int(k))
                else:
                    started = max(started, int(k))
        return done, max(started, done)

    def live_at(self, sp):
        """Whether the view was mounted at the state's point: its mount
        had returned and its unmount not begun before the cut."""
        n = int(sp.split("+")[0])
        cut = next((f for f in self.flushes if f >= n), len(self.recs))
        live = False
        for r in self.recs[:cut]:
            if r.kind == "mark" and r.text in ("M+", "M-"):
                live = r.text == "M+"
        return live


def all_states(recs, g):
    """Every state the contract allows of the log, as specs (for a small
    log: the model test compares them with the images they make)."""
    p = Plan(recs, 0, None, g)
    out = set(str(n) for n in p.flush_points())
    for e in p.epochs:
        d = Draw(e, g)
        if e.writes and d.nontrivial():
            out.update(d.all())
    return out

