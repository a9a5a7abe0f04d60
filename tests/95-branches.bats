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
	sfs_cleanup
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
	run -0 "$SFS" branch remove "$MNT" "$id"
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
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$SFS" branch add "$MNT" "$LO2"
	assert_output --partial "Operation not permitted"
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$SFS" branch remove "$MNT" "$LO" --force
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
