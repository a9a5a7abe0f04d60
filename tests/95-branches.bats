#!/usr/bin/env bats
# Live branch management through the control channel: stackfs branch
# list/add/remove/mode and stackfs status on a mounted union.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches lo2 up2
	echo a >"$LO/a"
	echo b >"$LO2/b"
	mkdir "$LO/d" "$LO2/d"
	echo da >"$LO/d/da"
	echo db >"$LO2/d/db"
	sfs_mount "$UP:$LO" "$MNT"
}

teardown() {
	exec 8<&- 2>/dev/null || true
	# a test that stopped the daemon or started a fake one
	[[ -n ${STOPPED:-} ]] && kill -CONT "$STOPPED" 2>/dev/null
	[[ -n ${FAKE:-} ]] && kill "$FAKE" 2>/dev/null && wait "$FAKE" 2>/dev/null
	sfs_cleanup
}

# The control socket of $MNT.
ctl_sock() {
	echo "$SFS_RUNTIME/$(findmnt -rn -o MAJ:MIN -M "$MNT" | tail -n1)/ctl"
}

# fake_daemon REPLY_FILE: puts a server in place of the daemon's control
# socket that answers every request (read whole) with the file's bytes,
# read anew each time (FAKE: its pid),
# so the command can be fed replies the daemon never gives.
fake_daemon() {
	local sock
	sock=$(ctl_sock)
	rm -f "$sock"
	python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    req = b""
    while not req.endswith(b"\0\0"):
        b = c.recv(65536)
        if not b:
            break
        req += b
    c.sendall(open(sys.argv[2], "rb").read())
    c.close()
' "$sock" "$1" >"$BATS_TEST_TMPDIR/fake.out" 2>&1 &
	FAKE=$!
	local i
	for ((i = 0; i < 50; i++)); do
		grep -q ready "$BATS_TEST_TMPDIR/fake.out" && return 0
		sleep 0.1
	done
	fail "the fake daemon did not start: $(cat "$BATS_TEST_TMPDIR/fake.out")"
}

# json_check CMD...: CMD's stdout is valid UTF-8 and valid JSON.
json_check() {
	"$@" >"$BATS_TEST_TMPDIR/out.json" || fail "$* failed"
	python3 -c 'import json,sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' \
		"$BATS_TEST_TMPDIR/out.json" || fail "not valid JSON: $(cat -v "$BATS_TEST_TMPDIR/out.json")"
}

@test "branch list shows position, path, mode, id, filesystem and free space" {
	run -0 "$SFS" branch list "$MNT"
	assert_line --index 1 --regexp "^0 +$UP +rw +[0-9]+ +$SFS_FS +[0-9.]+[BKMGT]$"
	assert_line --index 2 --regexp "^1 +$LO +ro +[0-9]+ +$SFS_FS "
	run -0 "$SFS" branch list "$MNT" --json
	run -0 python3 -c 'import json,sys; v=json.loads(sys.argv[1]); print(len(v), v[0]["path"], v[1]["mode"], v[0]["free_bytes"] > 0)' "$output"
	assert_output "2 $UP ro True"
}

@test "branch add: a ro branch at the bottom shows at once, merged, and inode numbers stay" {
	local before
	before=$(stat -c %i "$MNT/a" "$MNT/d")
	ls "$MNT/d" >/dev/null
	[[ ! -e $MNT/b ]]
	run -0 "$SFS" branch add "$MNT" "$LO2" --bottom
	run -0 cat "$MNT/b"
	assert_output b
	run -0 ls "$MNT/d"
	assert_output $'da\ndb'
	[[ $(stat -c %i "$MNT/a" "$MNT/d") == "$before" ]] || fail "inode numbers changed"
	run -0 "$SFS" branch list "$MNT"
	assert_line --index 3 --regexp "^2 +$LO2 +ro "
}

@test "branch add: a rw branch at the top takes new files; its ids are stable" {
	run -0 "$SFS" branch add "$MNT" "$UP2" --mode rw --top
	echo new >"$MNT/n"
	[[ -f $UP2/n && ! -e $UP/n ]] || fail "new file not in the new top rw branch"
	[[ -d $UP2/.stackfs ]]
	echo more >>"$MNT/a"
	[[ -f $UP2/a ]] || fail "copy-up did not go to the new top rw branch"
}

@test "branch remove: its entries disappear at once; refused while one of its files is open" {
	run -0 "$SFS" branch add "$MNT" "$LO2" --bottom
	exec 8<"$MNT/b"
	run -1 "$SFS" branch remove "$MNT" "$LO2"
	assert_output --partial "open"
	assert_output --partial "Device or resource busy"
	[[ -e $MNT/b ]]
	run -0 "$SFS" branch remove "$MNT" "$LO2" --force
	[[ ! -e $MNT/b ]] || fail "b still visible"
	run -0 cat <&8
	assert_output b
	exec 8<&-
	run -0 ls "$MNT/d"
	assert_output da
}

@test "branch remove by id; the only rw branch is refused without --force" {
	local id
	id=$("$SFS" branch list "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[1]["id"])')
	run -0 "$SFS" branch remove "$MNT" --id "$id"
	assert_output "removed branch #1 (id $id) $LO (ro)"
	[[ ! -e $MNT/a ]]
	run -1 "$SFS" branch remove "$MNT" "$UP"
	assert_output --partial "only rw branch"
}

@test "branch mode: ro refuses writes with EROFS, rw allows them again" {
	run -0 "$SFS" branch mode "$MNT" "$UP" ro
	run ! sh -c "echo x > '$MNT/new'"
	assert_output --partial "Read-only file system"
	[[ ! -e $UP/new ]]
	run -0 "$SFS" branch mode "$MNT" "$UP" rw
	echo x >"$MNT/new"
	[[ -f $UP/new ]]
}

@test "refused changes: missing, a file, a duplicate, nested, the mount point; nothing changes" {
	local before
	before=$("$SFS" branch list "$MNT")
	touch "$T/file"
	mkdir -p "$LO/nested"
	run -1 "$SFS" branch add "$MNT" "$T/missing"
	assert_output --partial "no such directory"
	run -1 "$SFS" branch add "$MNT" "$T/file"
	assert_output --partial "not a directory"
	run -1 "$SFS" branch add "$MNT" "$LO"
	assert_output --partial "same directory"
	run -1 "$SFS" branch add "$MNT" "$LO/nested"
	assert_output --partial "nested"
	run -1 "$SFS" branch add "$MNT" "$MNT"
	run -1 "$SFS" branch remove "$MNT" "$T/missing"
	assert_output --partial "not a branch"
	run -2 "$SFS" branch mode "$MNT" "$UP" rx
	[[ $("$SFS" branch list "$MNT") == "$before" ]] || fail "the branch list changed"
	[[ ! -e $T/missing && ! -e $LO/nested/.stackfs ]]
}

@test "an unprivileged user may list but not change branches (EPERM)" {
	chmod 755 "$BATS_TEST_TMPDIR" "$(dirname "$MNT")" 2>/dev/null || true
	local sfs
	sfs=$(sfs_tools_for_others "$SFS")/stackfs || fail "no stackfs nobody can run"
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$sfs" branch add "$MNT" "$LO2"
	assert_output --partial "Operation not permitted"
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$sfs" branch remove "$MNT" "$LO" --force
	assert_output --partial "Operation not permitted"
	[[ -e $MNT/a ]]
}

@test "status shows branches, options and counters that move" {
	run -0 "$SFS" status "$MNT"
	assert_line --regexp "^whiteout +wh$"
	assert_line --regexp "^branch +0 $UP rw "
	echo more >>"$MNT/a"
	rm "$MNT/d/da"
	run -0 "$SFS" status "$MNT" --json
	run -0 python3 -c 'import json,sys; v=json.loads(sys.argv[1]); print(v["copyups"] >= 1, v["copyup_bytes"] >= 2, v["whiteouts"] >= 1, len(v["branches"]))' "$output"
	assert_output "True True True 2"
}

@test "branches change under a workload of reads, writes and listings without errors" {
	local log=$BATS_TEST_TMPDIR/workload.log
	mkdir "$MNT/w"
	(
		set -e
		end=$((SECONDS + 8))
		i=0
		while ((SECONDS < end)); do
			echo "$i" >"$MNT/w/f$((i % 50))"
			cat "$MNT/a" >/dev/null
			ls "$MNT/w" "$MNT/d" >/dev/null
			cat "$MNT/w/f$((i % 50))" >/dev/null
			i=$((i + 1))
		done
		echo "done $i"
	) >"$log" 2>&1 &
	local wl=$! k
	for ((k = 0; k < 10; k++)); do
		"$SFS" branch add "$MNT" "$LO2" --bottom
		"$SFS" branch mode "$MNT" "$LO2" rw
		"$SFS" branch mode "$MNT" "$LO2" ro
		"$SFS" branch remove "$MNT" "$LO2"
	done
	wait "$wl" || fail "the workload failed: $(cat "$log")"
	grep -q '^done' "$log" || fail "$(cat "$log")"
	run -0 "$SFS" branch list "$MNT"
	[[ -n $(sfs_daemon_pid "$MNT") ]] || fail "the daemon is gone"
}

@test "--json: a path with bytes that are not UTF-8 comes back exact (\udcXX, surrogateescape)" {
	local odd=$T/$'odd\xff-\xc3(-\xe2\x82-é-"\\'
	mkdir "$odd"
	run -0 "$SFS" branch add "$MNT" "$odd" --bottom
	json_check "$SFS" branch list "$MNT" --json
	run -0 python3 -c '
import json, os, sys
v = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
p = v[-1]["path"].encode("utf-8", "surrogateescape")
print(p == os.fsencode(sys.argv[2]), repr(v[-1]["path"]))' "$BATS_TEST_TMPDIR/out.json" "$odd"
	assert_output --partial "True '"
	assert_output --partial "odd\\udcff-\\udcc3(-\\udce2\\udc82-é-\"\\\\"
	json_check "$SFS" status "$MNT" --json
	run -0 python3 -c '
import json, os, sys
v = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
print(v["branches"][-1]["path"].encode("utf-8", "surrogateescape") == os.fsencode(sys.argv[2]))' \
		"$BATS_TEST_TMPDIR/out.json" "$odd"
	assert_output True
}

@test "status --json and branch list --json give every branch, past 256" {
	sfs_once_per_suite last
	local i
	for ((i = 0; i < 300; i++)); do
		mkdir "$T/b$i"
		"$SFS" branch add "$MNT" "$T/b$i" --bottom || fail "branch add $i failed"
	done
	json_check "$SFS" status "$MNT" --json
	run -0 python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
b = v["branches"]
print(len(b), b[-1]["position"], b[-1]["path"].endswith("/b299"))' "$BATS_TEST_TMPDIR/out.json"
	assert_output "302 301 True"
	json_check "$SFS" branch list "$MNT" --json
	run -0 python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$BATS_TEST_TMPDIR/out.json"
	assert_output 302
}

@test "--json stays valid JSON when the reply has a malformed branch line or an fstype to escape" {
	local reply=$BATS_TEST_TMPDIR/reply
	printf 'OK\nmountpoint\t/m\nbranch\t0\t/a\trw\t1\text4\t100\nbranch\tbroken\nbranch\t1\t/b\tro\t2\tfuse."x\\134y\t5\nbranch\tx\t/c\tro\t3\text4\t5\nlookups\t7\n' >"$reply"
	fake_daemon "$reply"
	json_check "$SFS" status "$MNT" --json
	run -0 python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
print(v["lookups"], [(b["path"], b["fstype"]) for b in v["branches"]])' "$BATS_TEST_TMPDIR/out.json"
	assert_output "7 [('/a', 'ext4'), ('/b', 'fuse.\"x\\\\y')]"
	printf 'OK\n0\t/a\trw\t1\text4\t100\nbroken\n1\t/b\tro\t2\tfuse."x\\134y\t5\n' >"$reply"
	json_check "$SFS" branch list "$MNT" --json
	run -0 python3 -c '
import json, sys
print([(b["path"], b["fstype"]) for b in json.load(open(sys.argv[1]))])' "$BATS_TEST_TMPDIR/out.json"
	assert_output "[('/a', 'ext4'), ('/b', 'fuse.\"x\\\\y')]"
}

@test "a daemon that does not answer: status and branch give up with ETIMEDOUT, exit 1" {
	STOPPED=$(sfs_daemon_pid "$MNT")
	kill -STOP "$STOPPED"
	local t0=$SECONDS
	STACKFS_CTL_TIMEOUT=1.5 run -1 timeout 20 "$SFS" status "$MNT"
	assert_output --partial "did not answer within 1.5 s (Connection timed out)"
	STACKFS_CTL_TIMEOUT=1 run -1 timeout 20 "$SFS" branch list "$MNT"
	assert_output --partial "(Connection timed out)"
	# past the listen backlog: connect itself must give up too
	local i pids=()
	for ((i = 0; i < 12; i++)); do
		STACKFS_CTL_TIMEOUT=3 timeout 20 "$SFS" status "$MNT" >/dev/null 2>&1 &
		pids+=($!)
	done
	STACKFS_CTL_TIMEOUT=1 run -1 timeout 20 "$SFS" branch list "$MNT"
	assert_output --partial "(Connection timed out)"
	local rc
	for i in "${pids[@]}"; do
		rc=0
		wait "$i" || rc=$?
		((rc == 1)) || fail "a status against a stopped daemon: exit $rc (124: it hung)"
	done
	((SECONDS - t0 < 15)) || fail "took $((SECONDS - t0)) s"
	run -1 env STACKFS_CTL_TIMEOUT=x "$SFS" status "$MNT"
	assert_output --partial "bad STACKFS_CTL_TIMEOUT"
	kill -CONT "$STOPPED"
	STOPPED=
	run -0 "$SFS" status "$MNT"
}

@test "branch remove/mode: a bare number is refused (a position or an id?), #N is a position, --id N an id" {
	mkdir "$T/up3"
	echo keep >"$T/up3/data"
	run -0 "$SFS" branch add "$MNT" "$T/up3" --mode rw --bottom
	assert_output --regexp "^added branch #2 \(id [0-9]+\) $T/up3 \(rw\)$"
	local before
	before=$("$SFS" branch list "$MNT")
	run -2 "$SFS" branch remove "$MNT" 2
	assert_output --partial "write #2 for the branch at position 2, or --id 2"
	run -2 "$SFS" branch mode "$MNT" 1 ro
	assert_output --partial "#1"
	[[ $("$SFS" branch list "$MNT") == "$before" ]] || fail "the branch list changed"
	run -1 "$SFS" branch remove "$MNT" "#7"
	assert_output --partial "no branch #7 (the mount has #0 to #2)"
	run -0 "$SFS" branch mode "$MNT" "#1" rw
	assert_output --regexp "^branch #1 \(id [0-9]+\) $LO \(ro\) is now rw$"
	[[ -f $MNT/data ]]
}

@test "branch remove: a rw branch with unmerged changes is refused without --force" {
	mkdir "$T/up3"
	run -0 "$SFS" branch add "$MNT" "$T/up3" --mode rw --top
	echo precious >"$MNT/new"                # lands in up3
	[[ -f $T/up3/new ]]
	run -1 "$SFS" branch remove "$MNT" "#0"
	assert_output --partial "holds 1 unmerged change"
	assert_output --partial "stackfs diff $T/up3"
	assert_output --partial "--force"
	[[ -f $MNT/new ]] || fail "removed anyway"
	# a rw branch without changes goes without --force
	run -0 "$SFS" branch remove "$MNT" "$UP"
	assert_output --regexp "^removed branch #1 \(id [0-9]+\) $UP \(rw\)$"
	run -0 "$SFS" branch remove "$MNT" "#0" --force
	assert_output --regexp "^removed branch #0 \(id [0-9]+\) $T/up3 \(rw\)$"
	[[ ! -e $MNT/new && -f $T/up3/new ]]
}

# Stacks name branches by identity, not position
# (docs/branches.md, "Branches and snapshots"): a node opened before a branch
# was added on top keeps a
# stack of the old snapshot, while its parent is looked up again on the
# new one; a copy-up through both indexed the parent's stack with the
# node's old position (another branch's directory) and failed ENOENT.
@test "regression: fchmod and fchown of a file and a symlink opened before branch add --top copy them into the new top" {
	mkdir "$UP/d"            # d merged: an upper part and a lower part
	echo g >"$LO/d/g"
	ln -s target "$LO/d/s"
	setfattr -h -n trusted.k -v v "$LO/d/s"
	mkdir "$T/new"
	sfs_snapshot "$LO"
	run -0 python3 - "$MNT" "$SFS" "$T/new" <<'PY'
import ctypes, os, subprocess, sys
mnt, sfs, new = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
g = os.open(mnt + "/d/g", os.O_RDONLY)
s = os.open(mnt + "/d/s", os.O_PATH | os.O_NOFOLLOW)
subprocess.run([sfs, "branch", "add", mnt, new, "--top", "--mode", "rw"], check=True,
               stdout=subprocess.DEVNULL)
os.stat(mnt + "/d")             # d alone is looked up again: the new snapshot
os.fchmod(g, 0o640)
# fchownat(s, "", AT_EMPTY_PATH) of the symlink opened before the change
if libc.fchownat(s, b"", 12, 34, 0x1000) != 0:
    e = ctypes.get_errno(); print("fchownat:", os.strerror(e)); sys.exit(1)
print("OK")
PY
	assert_output OK
	[[ $(stat -c %a "$T/new/d/g") == 640 ]] || fail "g: $(ls -l "$T/new/d" 2>&1)"
	[[ $(stat -c %u:%g "$T/new/d/s") == 12:34 ]] || fail "s: $(ls -l "$T/new/d" 2>&1)"
	[[ $(getfattr -h --only-values -n trusted.k "$T/new/d/s") == v ]] || fail "s lost its xattr"
	[[ $(cat "$MNT/d/g") == g ]]
	sfs_assert_unchanged "$LO"
}

# Device numbers are reused: a daemon that ends after its mount is gone
# may find that a new mount has its number and has bound its control
# socket at the same path. It removed that socket (mounts made and
# removed side by side: "control channel .../ctl: No such file or
# directory" for the new mount). Here a socket bound in the daemon's
# place, as the new mount's daemon binds it, must outlive the old one.
@test "regression: a daemon that ends leaves a control socket bound in its place by another (device numbers are reused)" {
	local ctl ino
	ctl=$(ctl_sock)
	[[ -S $ctl ]] || fail "no control socket at $ctl"
	rm "$ctl"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$ctl"
	ino=$(stat -c %i "$ctl")
	"$SFS" umount "$MNT"
	[[ -S $ctl && $(stat -c %i "$ctl") == "$ino" ]] ||
		fail "the ending daemon removed the socket bound in its place"
	rm "$ctl"
	rmdir "$(dirname "$ctl")" 2>/dev/null || true
}
