#!/usr/bin/env bats
# Open bugs found by nsstress, kept failing until fixed (run by
# `make stress`, not by `make test`): a copy-up racing a rename that
# replaces the file answers EEXIST. See NOTES.md.

# nsstress through the union (tests/tools/nsstress.c): 4 processes change
# a small name space (3 levels x 8 names) at once for a few seconds —
# create, write, rename (flags 0, NOREPLACE, EXCHANGE; files and
# directories, across directories), link, unlink, mkdir, rmdir, rm -rf,
# setxattr/removexattr — over a rw branch and two ro branches populated
# with the same names, so that the operations hit lower entries (copy-ups,
# whiteouts, opaque directories, redirects, the index of hard links).
# Errors another process explains (ENOENT, EEXIST, ENOTEMPTY, ...) are
# counted; EXDEV, EIO, ESTALE... are failures. Then the consistency checks
# of st_ns_round (stress/lib.bash): the view walks and reads clean, a
# remount shows the same view, fsck --repair answers 0 or 1 and then 0,
# the ro branches are unchanged, no name is listed twice.
# Longer runs: tests/stress (make stress). NS_SEED=S sets the seed.
#
# The "finding:" tests are the bugs nsstress found, each reduced to a
# deterministic (or reliably racing) reproduction.

load ../helpers/common
load lib

NS_SECS=${NS_SECS:-5}
NS_PROCS=${NS_PROCS:-4}

setup_file() {
	sfs_setup_file 1
	sfs_require_tool nsstress cuprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2
}

teardown() {
	sfs_cleanup
}

@test "finding: open O_WRONLY of a lower file while a rename replaces it never fails (EEXIST)" {
	sfs_require_cmd python3
	local i
	for ((i = 0; i < 400; i++)); do
		echo "$i" >"$LO/f$i"
	done
	sfs_mount "$UP:$LO=ro" "$MNT"
	ls -l "$MNT" >/dev/null
	# two threads meet at each name: one opens f<i> for writing (a
	# copy-up), the other renames a new file over f<i>. Either order is
	# fine; an error is not: the name exists throughout.
	run -0 python3 - "$MNT" 400 <<'PY'
import errno, os, sys, threading
m, n = sys.argv[1], int(sys.argv[2])
bar = threading.Barrier(2)
errs = {}
def work(who):
    for i in range(n):
        p, t = f"{m}/f{i}", f"{m}/t{i}"
        if who == "rename":
            os.close(os.open(t, os.O_CREAT | os.O_WRONLY, 0o644))
        bar.wait()
        try:
            if who == "open":
                os.close(os.open(p, os.O_WRONLY))
            else:
                os.rename(t, p)
        except OSError as e:
            k = f"{who} f{i}: {errno.errorcode.get(e.errno, e.errno)}"
            errs[k] = errs.get(k, 0) + 1
ts = [threading.Thread(target=work, args=(w,)) for w in ("open", "rename")]
[t.start() for t in ts]
[t.join() for t in ts]
print(f"{len(errs)} failures of {n}")
for k in list(errs)[:10]:
    print(k)
PY
	assert_line --index 0 "0 failures of 400"
}
