#!/usr/bin/env bats
# stackfs diff --format=oci: a rw branch's changes as an OCI image layer
# (issue 15). The changes are made through a real mount (the diff tests'
# set, plus xattrs, ACLs, a file capability, hard links, devices, odd and
# long names, long link targets, big owner ids, times before 1970); the
# layer of the upper is applied over a copy of the lower branch by the
# reference flattening of the spec (tests/tools/ocilayers.py apply), and
# the result must be the view, entry by entry. GNU tar and podman read
# the layer; a terminal, usage errors, a full disk and a write cut short
# are refused or leave an archive that says it is incomplete; a file of
# more than 8 GiB takes a pax size record.

load helpers/common
load helpers/diff

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd python3 setfacl setfattr
	sfs_setup_branches
	dc_lower "$LO"
	OCI=$SFS_REPO/tests/tools/ocilayers.py
	LAYER=$BATS_TEST_TMPDIR/layer.tar
	LONG=$(printf 'n%.0s' {1..120})
}

teardown() {
	# podman's run directory (its path must be short: not in the test's)
	if [[ -n ${PM_RUN:-} && -d $PM_RUN ]]; then
		findmnt -rn -o TARGET | grep -F "$PM_RUN" | sort -r | xargs -r -n1 umount -l 2>/dev/null
		rm -rf "$PM_RUN"
	fi
	sfs_cleanup
}

# oci_change MNT: more changes than the diff tests make, for what the
# tar format has to say: xattrs and ACLs, a capability, names with a
# space, a newline and a byte that is not UTF-8, a name and a path over
# 100 bytes, a link target over 100 bytes, owner ids over 2097151, times
# before 1970 and with nanoseconds, devices, a hard link to a lower file.
oci_change() {
	local m=$1
	setfattr -n user.note -v "hello world" "$m/b"
	setfacl -d -m u:nobody:rx "$m/nd"
	setfacl -m g:nogroup:rw "$m/new"
	echo cap >"$m/capfile"
	# cap_net_bind_service+ep, revision 2, as setcap writes it
	setfattr -n security.capability -v 0x0100000200040000000000000000000000000000 "$m/capfile"
	echo sp >"$m/with space"
	echo nl >"$m/"$'new\nline'
	echo ff >"$m/"$'bad\xffname'
	mkdir "$m/$LONG"
	echo deep >"$m/$LONG/$LONG"
	echo lb >"$m/$LONG"$'\xfe'
	ln -s "$LONG/$LONG" "$m/longlink"
	echo big >"$m/bigowner"
	chown 3000000:3000001 "$m/bigowner"
	echo old >"$m/old"
	touch -d '1960-06-01 12:00:00.25' "$m/old"
	mknod "$m/cdev" c 1 7
	mknod "$m/bdev" b 7 200
	ln "$m/d1/y" "$m/ylink"
	touch -h -d '2002-02-02 02:02:02.5' "$m/newsym"
	chmod 0750 "$m" # the root's own entry
}

# oci_layer STYLE: the changes made through a mount in a whiteout style,
# the view's manifest in $BATS_TEST_TMPDIR/view.txt, unmounted, and the
# layer of the upper in $LAYER.
oci_layer() {
	sfs_mount "$UP:$LO" "$MNT" "$(dc_style_opt "${1:-wh}")"
	dc_change "$MNT"
	oci_change "$MNT"
	python3 "$OCI" manifest "$MNT" >"$BATS_TEST_TMPDIR/view.txt" || fail "manifest of the view failed"
	"$SFS" umount "$MNT" || fail "umount failed"
	"$SFS" diff --format=oci "$UP" >"$LAYER" || fail "diff --format=oci failed"
}

# The layer applied over a copy of the lower branch is the view.
check_applied() {
	local d
	cp -a "$LO" "$T/applied" || fail "cp -a of the lower branch failed"
	run -0 python3 "$OCI" apply "$LAYER" "$T/applied"
	python3 "$OCI" manifest "$T/applied" >"$BATS_TEST_TMPDIR/applied.txt" || fail "manifest failed"
	if ! d=$(diff -u "$BATS_TEST_TMPDIR/view.txt" "$BATS_TEST_TMPDIR/applied.txt"); then
		fail "$(printf 'the layer applied over the lower branch is not the view:\n%s' "$d")"
	fi
	# the test sees what it means to: the manifest has those entries
	grep -q "security.capability=" "$BATS_TEST_TMPDIR/view.txt" || fail "no capability in the view"
	grep -q "system.posix_acl_default=" "$BATS_TEST_TMPDIR/view.txt" || fail "no default ACL"
	grep -q "^links: b'new' b'newlink'" "$BATS_TEST_TMPDIR/view.txt" || fail "no link group"
}

@test "the OCI layer applied over the lower branch gives the view, entry by entry (whiteout=wh)" {
	oci_layer wh
	check_applied
}

@test "the OCI layer applied over the lower branch gives the view, entry by entry (whiteout=overlay)" {
	oci_layer overlay
	check_applied
}

@test "random layered trees changed at random through the view: the layer applied over their flattening is the view" {
	local seeds=80
	mkdir -p "$T/oci/U"
	python3 "$OCI" make "$T/oci" "$seeds" 3 || fail "ocilayers make failed"
	sfs_mount "$T/oci/U:$T/oci/L2=ro:$T/oci/L1=ro:$T/oci/L0=ro" "$MNT"
	python3 "$OCI" mutate "$MNT" "$seeds" 1 || fail "ocilayers mutate failed"
	"$SFS" diff --format=oci "$MNT" >"$LAYER" || fail "diff --format=oci failed"
	python3 "$OCI" flat "$T/oci" "$seeds" 3 "$T/flat" || fail "ocilayers flat failed"
	run -0 python3 "$OCI" apply "$LAYER" "$T/flat"
	run python3 "$OCI" same "$MNT" "$T/flat" "$seeds"
	((status == 0)) || fail "the layer over the flattened layers is not the view: $output"
}

@test "the layer: parents first, whiteouts before their siblings, hard links, pax records, no private xattr; the same bytes twice and for the mount point" {
	sfs_mount "$UP:$LO" "$MNT"
	dc_change "$MNT"
	oci_change "$MNT"
	# the mount point names the same branches: the same archive
	"$SFS" diff --format=oci "$MNT" >"$BATS_TEST_TMPDIR/mp.tar" || fail "diff of the mount point failed"
	"$SFS" umount "$MNT" || fail "umount failed"
	"$SFS" diff --format=oci "$UP" >"$LAYER" || fail "diff failed"
	"$SFS" diff --format=oci "$UP" >"$BATS_TEST_TMPDIR/again.tar" || fail "diff failed"
	cmp "$LAYER" "$BATS_TEST_TMPDIR/again.tar" || fail "two layers of the same branch differ"
	cmp "$LAYER" "$BATS_TEST_TMPDIR/mp.tar" || fail "the mount point's layer differs from the branch's"
	run -0 python3 - "$LAYER" "$LONG" "$(date -d '2001-02-03 04:05:06' +%s)" \
		"$(date -d '2002-02-02 02:02:02' +%s)" <<'EOF'
import os, sys, tarfile
ms = tarfile.open(sys.argv[1]).getmembers()
long, t_new, t_sym = sys.argv[2:5]
bad, seen, by = [], {""}, {m.name: m for m in ms}
for i, m in enumerate(ms):
    if os.path.dirname(m.name) not in seen:
        bad.append("before its parent: %r" % m.name)
    seen.add(m.name)
    if m.islnk() and m.linkname not in seen:
        bad.append("a hard link before its target: %r" % m.name)
    for k in m.pax_headers:
        x = k[len("SCHILY.xattr."):]
        if k.startswith("SCHILY.xattr.") and x.startswith(("trusted.overlay.", "user.overlay.", "trusted.stackfs.")):
            bad.append("private xattr %s on %r" % (x, m.name))
        if k.startswith("SCHILY.xattr.trusted.SGI_"):
            bad.append("XFS's own alias of an ACL %s on %r" % (x, m.name))
# in each directory the whiteouts come before the other entries
last_wh, first_other = {}, {}
for i, m in enumerate(ms):
    d, b = os.path.dirname(m.name), os.path.basename(m.name)
    if m.name == ".":
        continue  # the root itself
    if b.startswith(".wh."):
        last_wh[d] = i
    else:
        first_other.setdefault(d, i)
for d, i in last_wh.items():
    if d in first_other and first_other[d] < i:
        bad.append("a whiteout after an entry in %r" % d)
want = {
    ".wh.c": "0", "d1/.wh.x": "0", ".wh.d2": "0", ".wh.mv": "0", "d3/.wh..wh..opq": "0",
    "moved": "5", "moved/k/z": "0", "moved/top": None, "moved/.wh.top": None,
    "d2": None, "d3/m": None, "d3/.wh.m": None, "d1": "5", "fifo": "6", "cdev": "3", "bdev": "4",
    "newsym": "2", "longlink": "2", "new\nline": "0", "bad\udcffname": "0", "with space": "0",
    "%s/%s" % (long, long): "0", long + "\udcfe": "0", ".": "5",
}
for n, t in want.items():
    m = by.get(n)
    if t is None and m is not None:
        bad.append("%r should not be in the layer" % n)
    elif t is not None and (m is None or m.type.decode() != t):
        bad.append("%r: want type %s, got %s" % (n, t, m and m.type))
links = sorted((m.name, m.linkname) for m in ms if m.islnk())
if links != [("h2", "h1"), ("newlink", "new"), ("ylink", "d1/y")]:
    bad.append("hard links: %r" % links)
def rec(name, key):
    return by[name].pax_headers.get(key) if name in by else None
checks = [
    (rec("%s/%s" % (long, long), "path") == "%s/%s" % (long, long), "pax path"),
    (rec(long + "\udcfe", "path") == long + "\udcfe", "pax path of a long name not UTF-8"),
    (ms[0].name == "." and ms[0].mode == 0o750, "the root's entry first"),
    (rec("longlink", "linkpath") == "%s/%s" % (long, long), "pax linkpath"),
    (rec("bigowner", "uid") == "3000000" and rec("bigowner", "gid") == "3000001", "pax uid/gid"),
    ((rec("old", "mtime") or "").startswith("-"), "pax mtime before 1970"),
    (rec("new", "mtime") == t_new + ".123456789", "pax mtime ns"),
    (rec("newsym", "mtime") == t_sym + ".500000000", "a symlink's mtime"),
    (rec("capfile", "SCHILY.xattr.security.capability") is not None, "capability"),
    (rec("new", "SCHILY.xattr.system.posix_acl_access") is not None, "access ACL"),
    (rec("nd", "SCHILY.xattr.system.posix_acl_default") is not None, "default ACL"),
    (rec("b", "SCHILY.xattr.user.note") == "hello world", "user xattr"),
    (rec("d1", "SCHILY.xattr.user.dir") == "one", "a parent directory's xattr"),
    (by.get("cdev") is not None and (by["cdev"].devmajor, by["cdev"].devminor) == (1, 7), "device numbers"),
]
bad += ["missing: " + what for ok, what in checks if not ok]
print("\n".join(bad) or "ok")
sys.exit(1 if bad else 0)
EOF
	assert_output ok
	# GNU tar lists it and extracts it with its xattrs, without a word
	run -0 --separate-stderr tar -tvf "$LAYER"
	[[ -z $stderr ]] || fail "tar -tvf said: $stderr"
	mkdir "$BATS_TEST_TMPDIR/x"
	run -0 --separate-stderr tar --xattrs --xattrs-include='*' -xpf "$LAYER" -C "$BATS_TEST_TMPDIR/x"
	# (GNU tar's opinion of the time before 1970 given to "old")
	stderr=$(grep -v "old: implausibly old time stamp" <<<"$stderr" || true)
	[[ -z $stderr ]] || fail "tar -x said: $stderr"
	run -0 getfattr --absolute-names -n user.note --only-values "$BATS_TEST_TMPDIR/x/b"
	assert_output "hello world"
	[[ $(stat -c %u:%g "$BATS_TEST_TMPDIR/x/bigowner") == 3000000:3000001 ]] || fail "owner lost"
	[[ -e $BATS_TEST_TMPDIR/x/$LONG/$LONG ]] || fail "the long path is not extracted"
}

@test "podman imports the layer, and its image shows the view" {
	sfs_require_cmd podman
	local pm img dir
	PM_RUN=$(mktemp -d /tmp/sfs-pm.XXXXXX)
	pm=(podman --root "$BATS_TEST_TMPDIR/podman" --runroot "$PM_RUN" --storage-driver vfs)
	oci_layer wh
	run -0 "${pm[@]}" import "$LAYER" localhost/sfs-oci-test:1
	img=$output
	run -0 "${pm[@]}" image mount localhost/sfs-oci-test:1
	dir=${lines[-1]}
	[[ -d $dir ]] || fail "podman image mount gave no directory: $output"
	[[ $(<"$dir/moved/k/z") == z && $(<"$dir/moved/k/w") == w ]] || fail "the moved directory's content"
	[[ $(<"$dir/d3/n") == n && ! -e $dir/d3/.wh..wh..opq ]] || fail "the opaque directory"
	[[ $(<"$dir/$LONG/$LONG") == deep ]] || fail "the long path"
	[[ $(readlink "$dir/newsym") == nowhere ]] || fail "the symlink"
	[[ $(stat -c %i "$dir/new") == $(stat -c %i "$dir/newlink") ]] || fail "the hard link"
	[[ ! -e $dir/.wh.c && ! -e $dir/.wh.mv ]] || fail "whiteouts show in the image"
	run -0 getfattr --absolute-names -n user.note --only-values "$dir/b"
	assert_output "hello world"
	run -0 "${pm[@]}" image unmount localhost/sfs-oci-test:1
	run -0 "${pm[@]}" rmi -f localhost/sfs-oci-test:1
}

@test "diff --format=oci refuses a terminal (exit 2), usage errors exit 2, a missing branch exits 1" {
	sfs_require_cmd script
	echo x >"$UP/f"
	# stdout a terminal: script gives the command a pty
	run -2 script -qec "$SFS diff --format=oci --lower $LO $UP" /dev/null
	assert_output --partial "not to a terminal"
	run -2 "$SFS" diff --format=zip "$UP"
	assert_output --partial "unknown format 'zip'"
	run -2 "$SFS" diff "$UP" --format
	assert_output --partial "--format needs text, json or oci"
	run -2 "$SFS" diff --json --format=oci "$UP"
	assert_output --partial "one output format"
	run -1 --separate-stderr "$SFS" diff --format=oci "$T/missing"
	[[ $stderr == *"$T/missing: No such file or directory"* ]] || fail "$stderr"
	[[ -z $output ]] || fail "something on stdout: $output"
	# the other formats by name
	run -0 "$SFS" diff --format=text --lower "$LO" "$UP"
	assert_output "A /f"
	run -0 "$SFS" diff --format json --lower "$LO" "$UP"
	assert_output --partial '"change": "A"'
}

@test "a socket is left out of the layer, and said; the rest is written (exit 0)" {
	sfs_mount "$UP:$LO" "$MNT"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$MNT/sock"
	[[ -S $MNT/sock ]] || fail "no socket made through the view"
	echo x >"$MNT/after"
	"$SFS" umount "$MNT" || fail "umount failed"
	run -0 --separate-stderr bash -c 'set -o pipefail; "$1" diff --format=oci "$2" | tar -tf -' _ "$SFS" "$UP"
	assert_output "after"
	[[ $stderr == *"/sock: left out of the layer: a socket"* ]] || fail "$stderr"
}

@test "an entry that cannot be read: no layer at all, exit 1" {
	echo new >"$UP/new"
	mkdir "$UP/bm"
	mount --bind "$T/lower" "$UP/bm"
	sfs_record mount "$UP/bm"
	run -1 --separate-stderr "$SFS" diff --format=oci --lower "$LO" "$UP"
	[[ -z $output ]] || fail "a layer was written: $(wc -c <<<"$output") bytes"
	[[ $stderr == *"/bm: Invalid cross-device link"* && $stderr == *"no layer written"* ]] ||
		fail "$stderr"
}

@test "an entry no layer can hold stops it between two entries: the archive reads as truncated, exit 1" {
	echo a >"$UP/a"
	echo z >"$UP/z"
	setfattr -n 'user.x=y' -v 1 "$UP/z" || skip "$SFS_FS takes no '=' in an xattr name"
	run -1 --separate-stderr bash -c '"$1" diff --format=oci --lower "$2" "$3" >"$4"' _ \
		"$SFS" "$LO" "$UP" "$LAYER"
	[[ $stderr == *"/z: an xattr whose name holds '='"* && $stderr == *incomplete* ]] || fail "$stderr"
	# "a" was written whole; a reader that stopped there would take the
	# archive for complete
	run tar -tf "$LAYER"
	((status != 0)) || fail "tar read the cut archive as whole: $output"
	assert_line a
	run python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
for m in t:
    if m.isreg(): t.extractfile(m).read()' "$LAYER"
	((status != 0)) || fail "python read the cut archive as whole"
}

@test "a failed write: the errno said, exit 1, and the archive cut short reads as truncated" {
	sfs_mount "$UP:$LO" "$MNT"
	dc_change "$MNT"
	"$SFS" umount "$MNT" || fail "umount failed"
	run -1 --separate-stderr bash -c '"$1" diff --format=oci "$2" >/dev/full' _ "$SFS" "$UP"
	[[ $stderr == *"writing the layer: No space left on device"* && $stderr == *incomplete* ]] ||
		fail "$stderr"
	# the third 64 KiB write fails (the fault shim): in the sparse file
	if grep -q __asan_init "$SFS"; then
		skip "an ASan build: the fault shim cannot be preloaded"
	fi
	echo "write 3 EIO" >"$BATS_TEST_TMPDIR/fi.ctl"
	run -1 --separate-stderr bash -c 'LD_PRELOAD=$4 SFS_FI_CTL=$5 SFS_FI_LOG=$6 SFS_FI_ROOTS=$3 \
		SFS_FI_ARM=1 "$1" diff --format=oci "$2" >"$3"' _ "$SFS" "$UP" "$LAYER" \
		"$TOOLS/faultinject.so" "$BATS_TEST_TMPDIR/fi.ctl" "$BATS_TEST_TMPDIR/fi.log"
	[[ $stderr == *"writing the layer: Input/output error"* ]] || fail "$stderr"
	(($(stat -c %s "$LAYER") == 2 * 65536)) || fail "not cut at the failed write: $(stat -c %s "$LAYER") bytes"
	run tar -tf "$LAYER"
	((status != 0)) || fail "tar read the cut archive as whole: $output"
	run python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
for m in t:
    if m.isreg(): t.extractfile(m).read()' "$LAYER"
	((status != 0)) || fail "python read the cut archive as whole"
}

@test "a file of more than 8 GiB (sparse) is written whole, its size in a pax record" {
	sfs_once_per_suite
	sfs_mount "$UP:$LO" "$MNT"
	truncate -s 8G "$MNT/huge"
	printf 'tail' >>"$MNT/huge"
	"$SFS" umount "$MNT" || fail "umount failed"
	# GNU tar hands each file to a command: its size as the header says
	# (the ustar field cannot hold it: a pax record) and its data, 8 GiB
	# of zeros then the tail. One pass: 8 GiB through a pipe takes time.
	cat >"$BATS_TEST_TMPDIR/check.py" <<'EOF'
import os, sys
n, tail, buf = 0, b"", bytearray(1 << 20)
zero, r = bytes(1 << 20), sys.stdin.buffer.raw
while True:
    k = r.readinto(buf)
    if not k:
        break
    if buf[:k] != zero[:k]:
        tail = bytes(buf[:k]).lstrip(b"\0")
    n += k
print(os.environ["TAR_FILENAME"], os.environ["TAR_SIZE"], n, tail)
EOF
	run -0 bash -c 'set -o pipefail; "$1" diff --format=oci "$2" |
		tar -xf - --to-command="python3 $3"' _ "$SFS" "$UP" "$BATS_TEST_TMPDIR/check.py"
	assert_output "huge 8589934596 8589934596 b'tail'"
}
