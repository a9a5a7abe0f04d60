#!/usr/bin/env bats
# -o coherent: a change made directly in a read-only branch shows in the
# view at once, whatever the kernel's cache timeout (issue 19, part 2).
# Every test mounts with timeout=600, under which a view without the
# option stays stale: the first test shows that it does (so these tests
# can fail), the others that with the option it does not.

load helpers/common

# how long a change may take to show (the target is 100 ms: bench/)
BOUND_MS=2000

setup_file() {
	sfs_setup_file 1
	sfs_require_tool cohlat inowatch
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	mkdir -p "$LO/d/sub"
	echo old >"$LO/d/f"
	echo keep >"$LO/d/k"
}

teardown() {
	[[ -n ${STOPPED:-} ]] && kill -CONT "$STOPPED" 2>/dev/null
	[[ -n ${QUEUE:-} ]] && echo "$QUEUE" >/proc/sys/fs/fanotify/max_queued_events
	exec 9>&- 2>/dev/null
	[[ -n ${READERS:-} ]] && kill $READERS 2>/dev/null
	[[ -n ${WATCH:-} ]] && kill "$WATCH" 2>/dev/null
	wait 2>/dev/null
	sfs_cleanup
}

# wait_for CMD...: true once CMD succeeds, polled for BOUND_MS.
wait_for() {
	local i
	for ((i = 0; i < BOUND_MS / 20; i++)); do
		"$@" && return 0
		sleep 0.02
	done
	"$@"
}

@test "without -o coherent a change made below stays hidden for the timeout" {
	local kind
	sfs_hold_caches
	sfs_mount "$UP:$LO" "$MNT" timeout=600
	for kind in create content attr delete rename; do
		run -1 "$TOOLS/cohlat" -n 1 -t 1000 "$LO/d" "$MNT/d" "$kind"
		assert_output "$kind: round 0: not seen within 1000 ms"
	done
}

@test "coherent: a name made, changed, chmodded, removed and renamed below shows at once" {
	local kind
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	for kind in create content attr delete rename; do
		run -0 "$TOOLS/cohlat" -n 20 -t "$BOUND_MS" "$LO/d" "$MNT/d" "$kind"
		assert_output --regexp "^$kind n=20 median_ms="
	done
	run -0 ls "$MNT/d"
	refute_output --partial c0.
	assert_line c19
	assert_line r19.moved
	refute_line d3
}

@test "coherent: stackfs status says how the branches are watched" {
	sfs_mount "$UP:$LO" "$MNT" coherent
	run -0 "$SFS" status "$MNT"
	assert_output --regexp 'coherent +fanotify'
	assert_output --regexp 'coherent_events +[0-9]+'
	refute_output --partial coherent_watches
	mkdir "$T/up2"
	sfs_mount "$T/up2:$LO" "$BATS_TEST_TMPDIR/m2"
	run -0 "$SFS" status "$BATS_TEST_TMPDIR/m2"
	assert_output --regexp 'coherent +off'
}

# Where fanotify cannot watch (no CAP_SYS_ADMIN: a rootless mount), inotify
# watches instead: tests/17-rootless.bats mounts so, as a user.

@test "coherent: the union's rules still hold for what appears below" {
	mkdir -p "$UP/d" "$LO/o"
	echo upper >"$UP/d/u"
	touch "$UP/d/.wh.gone"
	mkdir "$UP/o2" && touch "$UP/o2/.wh..wh..opq"
	mkdir "$LO/o2"
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	run -0 cat "$MNT/d/u"
	run -1 stat "$MNT/d/gone"
	run -0 ls "$MNT/o2"
	assert_output ""
	# below a name the upper has, a whiteout, an opaque directory
	echo lower >"$LO/d/u"
	echo lower >"$LO/d/gone"
	echo lower >"$LO/o2/hidden"
	echo seen >"$LO/d/marker"
	wait_for test -e "$MNT/d/marker"
	sleep 0.2
	run -0 cat "$MNT/d/u"
	assert_output upper
	run -1 stat "$MNT/d/gone"
	run -0 ls "$MNT/o2"
	assert_output ""
	# removed through the view: whited out, whatever is made below
	rm "$MNT/d/u"
	run -1 stat "$MNT/d/u"
	rm "$LO/d/u"
	echo again >"$LO/d/u"
	echo seen >"$LO/d/marker2"
	wait_for test -e "$MNT/d/marker2"
	sleep 0.2
	run -1 stat "$MNT/d/u"
	# a name that shows only below comes and goes
	rm "$LO/d/marker"
	wait_for test ! -e "$MNT/d/marker"
}

@test "coherent: a directory made below under a cached merged one, and removed" {
	mkdir -p "$UP/d"
	echo u >"$UP/d/top"
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	run -0 ls "$MNT/d" "$MNT/d/sub"
	run -1 stat "$MNT/d/new"
	mkdir "$LO/d/new"
	echo deep >"$LO/d/new/f"
	echo deeper >"$LO/d/sub/g"
	wait_for test -e "$MNT/d/new/f"
	wait_for test -e "$MNT/d/sub/g"
	run -0 cat "$MNT/d/new/f" "$MNT/d/sub/g"
	assert_output $'deep\ndeeper'
	run -0 ls "$MNT/d"
	assert_output $'f\nk\nnew\nsub\ntop'
	rm -r "$LO/d/new"
	wait_for test ! -e "$MNT/d/new"
	run -0 ls "$MNT/d"
	assert_output $'f\nk\nsub\ntop'
}

@test "coherent: a directory of many read-only branches (name index) sees a new name" {
	local i spec=$UP
	for ((i = 0; i < 10; i++)); do
		mkdir -p "$T/l$i/d"
		echo "$i" >"$T/l$i/d/n$i"
		spec+=":$T/l$i"
	done
	sfs_mount "$spec" "$MNT" timeout=600,coherent
	run -0 cat "$MNT/d/n3"
	run -1 stat "$MNT/d/late"
	echo late >"$T/l7/d/late"
	wait_for test -e "$MNT/d/late"
	run -0 cat "$MNT/d/late"
	assert_output late
	rm "$T/l3/d/n3"
	wait_for test ! -e "$MNT/d/n3"
}

@test "coherent: the daemon's own writes (copy-ups, creations) cause no notifications" {
	local before after i
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	run -0 cat "$MNT/d/f"
	before=$("$SFS" status "$MNT" | awk '$1 == "coherent_notifications" { print $2 }')
	for ((i = 0; i < 100; i++)); do echo "$i" >"$MNT/d/made$i"; done
	echo more >>"$MNT/d/f"
	mkdir "$MNT/d/newdir"
	rm "$MNT/d/k"
	sleep 0.5
	after=$("$SFS" status "$MNT" | awk '$1 == "coherent_notifications" { print $2 }')
	assert_equal "$after" "$before"
}

@test "coherent: inotify watchers of the view are not told (the kernel gives no way)" {
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	run -0 stat "$MNT/d/k" "$MNT/d/f"
	"$TOOLS/inowatch" "$MNT/d" 3 >"$T/events" &
	WATCH=$!
	wait_for grep -q ready "$T/events"
	rm "$LO/d/k"
	echo changed >>"$LO/d/f"
	echo new >"$LO/d/n"
	wait_for test ! -e "$MNT/d/k"
	wait_for test -e "$MNT/d/n"
	wait "$WATCH"
	WATCH=
	# what this kernel does (README, docs/coherent.md): if a kernel starts telling
	# watchers, this fails and the documentation is to change
	run -0 cat "$T/events"
	assert_output ready
}

@test "coherent: readers looping in the view while the branch below changes" {
	local end i pid
	mkdir -p "$LO/w"
	for ((i = 0; i < 20; i++)); do echo "v0" >"$LO/w/f$i"; done
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	pid=$(sfs_daemon_pid "$MNT")
	READERS=
	for i in 1 2 3; do
		(
			set +e
			while :; do
				for f in "$MNT"/w/f*; do cat "$f" >/dev/null 2>>"$T/err$i"; done
				stat "$MNT"/w/f* >/dev/null 2>>"$T/err$i"
				ls -l "$MNT/w" >/dev/null 2>>"$T/err$i"
			done
		) &
		READERS+=" $!"
	done
	end=$((SECONDS + 8))
	i=0
	while ((SECONDS < end)); do
		echo "v$i" >"$LO/w/f$((i % 20))"
		mv "$LO/w/f$(((i + 7) % 20))" "$LO/w/tmp" && mv "$LO/w/tmp" "$LO/w/f$(((i + 7) % 20))"
		rm -f "$LO/w/g$(((i + 3) % 10))"
		echo "g" >"$LO/w/g$((i % 10))"
		chmod $((i % 2 ? 600 : 644)) "$LO/w/f$(((i + 11) % 20))"
		i=$((i + 1))
	done
	kill $READERS
	wait $READERS 2>/dev/null || true
	READERS=
	for ((i = 0; i < 20; i++)); do echo "final$i" >"$LO/w/f$i"; done
	rm -f "$LO/w"/g*
	touch "$LO/w/last"
	wait_for test -e "$MNT/w/last"
	sleep 0.3
	# no stale name, data or mode after the bound
	run -0 timeout 20 ls "$MNT/w"
	assert_output "$(ls "$LO/w")"
	run -0 timeout 20 cat "$MNT"/w/f{0..19}
	assert_output "$(cat "$LO"/w/f{0..19})"
	run -0 stat -c %a "$MNT"/w/f{0..19}
	assert_output "$(stat -c %a "$LO"/w/f{0..19})"
	# readers saw only names going away, never another error
	run cat "$T"/err*
	refute_output --regexp '(Input/output|Stale|Transport|Bad file|Permission)'
	sfs_alive "$pid"
}

@test "coherent: a ro branch added to the live mount is watched too" {
	mkdir -p "$T/lo2/d"
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	run -0 "$SFS" branch add "$MNT" "$T/lo2" --bottom
	run -1 stat "$MNT/d/from2"
	echo two >"$T/lo2/d/from2"
	wait_for test -e "$MNT/d/from2"
	run -0 cat "$MNT/d/from2"
	assert_output two
}

@test "coherent: events lost (queue overflow) drop everything, nothing is missed" {
	local n
	sfs_require_root "a global fanotify limit"
	# the limit a group gets at its creation: small for this mount's
	# only; the runs of other filesystems wait (the lock: in /tmp, not
	# the run's TMPDIR, which differs by filesystem), so that none takes
	# another's 16 for the value to put back
	exec 9>/tmp/stackfs-tests-sysctl.lock
	flock 9
	QUEUE=$(cat /proc/sys/fs/fanotify/max_queued_events)
	echo 16 >/proc/sys/fs/fanotify/max_queued_events
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	echo "$QUEUE" >/proc/sys/fs/fanotify/max_queued_events
	QUEUE=
	exec 9>&-
	run -0 ls "$MNT/d"
	for n in 0 1 2 3 4 5 6 7 8 9; do run -1 stat "$MNT/d/x$n"; done
	run -0 cat "$MNT/d/f"
	# the watcher held still while 200 events come, far past 16: those
	# that matter come last, so they are lost
	STOPPED=$(sfs_daemon_pid "$MNT")
	kill -STOP "$STOPPED"
	for n in {0..99}; do : >"$LO/d/filler$n"; done
	rm "$LO"/d/filler*
	for n in 0 1 2 3 4 5 6 7 8 9; do echo "$n" >"$LO/d/x$n"; done
	echo newer >"$LO/d/f"
	kill -CONT "$STOPPED"
	STOPPED=
	wait_for test -e "$MNT/d/x9"
	run -0 cat "$MNT"/d/x{0..9} "$MNT/d/f"
	assert_output "$(printf '%s\n' {0..9} newer)"
	run -0 "$SFS" status "$MNT"
	assert_output --regexp 'coherent_overflows +[1-9]'
}

@test "coherent: a cached directory renamed, then removed, below" {
	mkdir -p "$LO/d/sub/deep"
	echo s >"$LO/d/sub/deep/s"
	sfs_mount "$UP:$LO" "$MNT" timeout=600,coherent
	run -0 cat "$MNT/d/sub/deep/s"
	run -1 stat "$MNT/d/moved"
	mv "$LO/d/sub" "$LO/d/moved"
	wait_for test -e "$MNT/d/moved/deep/s"
	run -1 stat "$MNT/d/sub"
	run -0 cat "$MNT/d/moved/deep/s"
	assert_output s
	rm -r "$LO/d/moved"
	wait_for test ! -e "$MNT/d/moved"
	run -1 stat "$MNT/d/moved/deep/s"
	run -0 ls "$MNT/d"
	assert_output $'f\nk'
}
