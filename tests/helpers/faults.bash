# Fault injection and crash points (tests/79-crashpoints.bats,
# tests/79-faults.bats, tests/stress/crashpoints.bats). Load after
# helpers/common and helpers/copyup.
#
# The daemon runs with tests/tools/faultinject.so preloaded (its header
# says what it counts and does). It is dormant until fi_arm, so the calls
# of the mount itself never shift N; it counts only calls beneath $T (the
# test's branches).

FI_SO=$TOOLS/faultinject.so

# fi_require_plain_build: skips the test on a sanitizer build. ASan's
# runtime must come first in the process, and with the log_path that
# `make asan test` sets it crashes at start when the shim is preloaded
# before it; these tests run in the plain build of every `make test`.
fi_require_plain_build() {
	if grep -q __asan_init "$SFSD" 2>/dev/null; then
		skip "the daemon is an ASan build (the shim cannot be preloaded)"
	fi
}

# fi_mount [OPTS]: mounts UP:LO on MNT with the shim in the daemon.
fi_mount() {
	FI_CTL=$BATS_TEST_TMPDIR/fi.ctl
	FI_LOG=$BATS_TEST_TMPDIR/fi.log
	: >"$FI_CTL"
	: >"$FI_LOG"
	# (nopassthrough: a passed-through write never reaches the daemon's
	# syscalls, where the shim injects its errors)
	LD_PRELOAD=$FI_SO SFS_FI_CTL=$FI_CTL SFS_FI_LOG=$FI_LOG SFS_FI_ROOTS=$T \
		cu_mount "nopassthrough${1:+,$1}" || return 1
	FI_PID=$(sfs_daemon_pid "$MNT")
	[[ -n $FI_PID ]] || { echo "no daemon for $MNT" >&2; return 1; }
	grep -q faultinject "/proc/$FI_PID/maps" || { echo "the shim is not in daemon $FI_PID" >&2; return 1; }
}

# fi_arm KINDS N ACTION: (re)arms the shim of the daemon on MNT, with an
# empty trace, and waits until it has read the line.
fi_arm() {
	local i
	echo "$1 $2 $3" >"$FI_CTL"
	: >"$FI_LOG"
	kill -USR2 "$FI_PID" || return 1
	for ((i = 0; i < 100; i++)); do
		grep -q '^ARMED' "$FI_LOG" && return 0
		grep -q '^BADCTL' "$FI_LOG" && { echo "the shim refused '$*'" >&2; return 1; }
		sleep 0.02
	done
	echo "the shim of daemon $FI_PID did not arm" >&2
	return 1
}

# fi_count: calls counted since fi_arm.
fi_count() {
	grep -c '^[0-9]' "$FI_LOG"
}

# fi_call N: the trace line of call N ("N KIND FUNCTION PATH [-> PATH]"),
# with the test's directory shortened to $T.
fi_call() {
	grep -m1 "^$1 " "$FI_LOG" | sed "s|$T|\$T|g"
}

# The view as the crash checks compare it: per entry its path, type,
# mode, owner, size (not of directories), symlink target and link count
# (not of directories: a merged one shows 1), the sha256 of each file and
# the user.* xattrs of every entry.
# The link count of a file with several names is shown as "linked": for
# a lower hard link copied up through the index it is a bound that may
# count a name removed through the view (docs/union.md "Copy-up": never misses one), and the
# kernel's count of a live mount (adjusted at each link and unlink) can be
# exact where a fresh daemon's is that bound. The names themselves, and
# their content, are compared.
fi_view_state() {
	(
		cd "$1" || exit 1
		find . -printf '%p|%y|%m|%U:%G|%s|%l|%n\n' |
			awk -F'|' -v OFS='|' '$2 == "d" { $5 = "-"; $7 = "-" }
				$2 == "f" && $7 > 1 { $7 = "linked" } { print }' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
		find . -print0 | LC_ALL=C sort -z |
			xargs -0 -r getfattr -h -d -m '^user\.' -e hex 2>/dev/null | grep -v '^$'
	)
}

# ------------------------------------------------------------ workloads
# A workload is wl_NAME_setup (fills $1/lower and $1/upper, the same way
# every time) and WL_NAME, an array of steps: shell commands run in MNT,
# each one operation whose effect the view shows at once.

wl_copyup_setup() {
	mkdir -p "$1/lower/d/e" "$1/upper"
	printf 'one\n' >"$1/lower/f1"
	printf 'two\n' >"$1/lower/f2"
	printf 'three\n' >"$1/lower/f3"
	head -c 200000 /dev/zero | tr '\0' 'q' >"$1/lower/f4"
	printf 'five\n' >"$1/lower/d/e/f5"
	setfattr -n user.old -v kept "$1/lower/f3"
	chmod 640 "$1/lower/f2"
}
WL_copyup=(
	'printf "more\n" >>f1'
	'chmod 600 f2'
	'setfattr -n user.new -v val f3'
	'truncate -s 1000 f4'
	'chown 1:1 d/e/f5'
	'printf "fsynced\n" | dd of=d/e/f5 oflag=append conv=notrunc,fsync status=none'
)

wl_rename_setup() {
	mkdir -p "$1/lower/d1/sub" "$1/lower/d2" "$1/upper/u"
	printf 'a\n' >"$1/lower/f1"
	printf 'b\n' >"$1/lower/f2"
	printf 'c\n' >"$1/lower/f3"
	printf 'in d1\n' >"$1/lower/d1/x"
	printf 'deep\n' >"$1/lower/d1/sub/y"
	printf 'in d2\n' >"$1/lower/d2/z"
	printf 'up1\n' >"$1/upper/u/x1"
	printf 'up2\n' >"$1/upper/u/x2"
	mkdir -p "$1/lower/e1" "$1/upper/e1"
	printf 'old\n' >"$1/lower/e1/old"
}
WL_rename=(
	'mv f1 f1new'
	'mv -f f2 f3'
	'mv d1 d1new'
	'mv d1new/sub d2/sub2'
	"$TOOLS/cuprobe rename u/x1 u/x2 exchange"
	'mv u/x1 d2/'
	'mv d2 u/d2moved'
	'mv f3 f1'
	'mv d1new d1'
	'rm e1/old'
	'mkdir u/nd'
	'mv -T u/nd e1'
)

wl_whiteout_setup() {
	mkdir -p "$1/lower/d1" "$1/lower/d2/in" "$1/upper"
	printf 'f\n' >"$1/lower/f1"
	printf 'a\n' >"$1/lower/d1/a"
	printf 'b\n' >"$1/lower/d1/b"
	printf 'c\n' >"$1/lower/d2/in/c"
	ln -s f1 "$1/lower/l1"
}
WL_whiteout=(
	'rm f1'
	'rm d1/a'
	'rm d1/b'
	'rmdir d1'
	'rm l1'
	'rm d2/in/c'
	'rmdir d2/in'
)

# Names made again over their whiteouts: a file create, a directory
# (opaque: the deleted one's lower children stay hidden), a symlink, a
# fifo (mknod) and a hard link, each made whole in the staging directory
# and put over the whiteout in one step (docs/durability.md "Crash consistency and fault injection").
wl_recreate_setup() {
	wl_whiteout_setup "$@"
}
WL_recreate=(
	'rm f1'
	': >f1'
	'rm d1/a'
	'rm d1/b'
	'rmdir d1'
	'mkdir d1'
	'rm l1'
	'ln -s d1 l1'
	'rm d2/in/c'
	'mkfifo d2/in/c'
	'rm d2/in/c'
	'ln f1 d2/in/c'
)

# new names made by a user other than root (mount with allow_other): each
# is made whole, owner included, before it shows
wl_create_setup() {
	mkdir -p "$1/lower/pub" "$1/upper"
	chmod 755 "$1/lower" "$1/upper"
	chmod 1777 "$1/lower/pub"
}
FI_AS_USER='setpriv --reuid=daemon --regid=daemon --clear-groups'
WL_create=(
	"$FI_AS_USER sh -c ': >pub/f1'"
	"$FI_AS_USER mkdir pub/d1"
	"$FI_AS_USER ln -s f1 pub/s1"
	"$FI_AS_USER mkfifo pub/p1"
	"$FI_AS_USER sh -c ': >pub/d1/f2'"
)

wl_hardlink_setup() {
	mkdir -p "$1/lower/d" "$1/upper"
	printf 'linked\n' >"$1/lower/h1"
	ln "$1/lower/h1" "$1/lower/h2"
	ln "$1/lower/h1" "$1/lower/d/h3"
}
WL_hardlink=(
	'printf "more\n" >>h1'
	'printf "again\n" >>d/h3'
	'ln h2 h4'
	'rm h2'
	'mv d/h3 h5'
)

# ------------------------------------------------------------ crash points

# fi_fresh NAME: UP (and its metadata) as the workload's template has
# it; LO is the template's lower branch itself, never written.
fi_fresh() {
	rm -rf "$UP"
	cp -a "$T/tmpl-$1/upper" "$UP"
}

# fi_run_steps NAME [STATE_PREFIX]: runs the steps of workload NAME in MNT;
# prints how many completed before the first failure. With STATE_PREFIX,
# the view after step i goes to STATE_PREFIX.i (and before all to .0).
fi_run_steps() {
	local -n steps=WL_$1
	local prefix=${2:-} i
	[[ -z $prefix ]] || fi_view_state "$MNT" >"$prefix.0"
	for ((i = 0; i < ${#steps[@]}; i++)); do
		if ! (cd "$MNT" && eval "${steps[i]}") >/dev/null 2>&1; then
			echo "$i"
			return 0
		fi
		[[ -z $prefix ]] || fi_view_state "$MNT" >"$prefix.$((i + 1))"
	done
	echo "${#steps[@]}"
}

# fi_measure NAME OPTS: the counting run: fresh branches, every step
# succeeds, the views between steps go to $FI_W/state.*; sets FI_CALLS.
fi_measure() {
	local name=$1 opts=$2 done
	local -n steps=WL_$name
	FI_W=$BATS_TEST_TMPDIR/wl-$name
	mkdir -p "$FI_W"
	fi_fresh "$name"
	fi_mount "$opts" || return 1
	fi_arm mut 0 count || return 1
	done=$(fi_run_steps "$name" "$FI_W/state")
	((done == ${#steps[@]})) || { echo "workload $name: step $((done + 1)) (${steps[done]}) failed without a fault" >&2; return 1; }
	FI_CALLS=$(fi_count)
	cp "$FI_LOG" "$FI_W/trace"
	cu_umount
	((FI_CALLS > 0)) || { echo "workload $name made no counted call" >&2; return 1; }
}

# fi_points COUNT: the crash points to try: every N from 1 to COUNT and
# "after" (the last call made, then the kill) with FI_ALL=1; else about
# FI_POINTS (default 8) of them spread evenly, the first, the last and
# "after" always among them. The suite's filesystems (sfs_suite_share)
# deal these out among them, every other one each for two: together the
# runs try them all, each run a share (every one in `make stress`).
fi_points() {
	local count=$1 max=${FI_POINTS:-8} n step idx share i=0 all
	if [[ -n ${FI_ALL:-} ]] || ((count <= max)); then
		seq 1 "$count"
		echo after
		return 0
	fi
	read -r idx share < <(sfs_suite_share)
	step=$(((count + max - 2) / (max - 1)))
	all=()
	for ((n = 1; n < count; n += step)); do all+=("$n"); done
	all+=("$count" after)
	for n in "${all[@]}"; do
		((i++ % share == idx)) && echo "$n"
	done
	return 0
}

# fi_check_crash NAME OPTS POINT: one crash point. Fresh branches, the
# shim set to SIGKILL the daemon before call POINT (or after the last
# call), the workload run until it fails; then after a remount:
#  - the view is the one before the interrupted step or the one after it
#    (each step is atomic; the completed ones are all there, fsynced
#    data included);
#  - the staging directory is empty, the lower branch unchanged;
#  - fsck --repair of UP exits 0 or 1 (nothing it cannot repair), a
#    second fsck exits 0, and the view is still the same.
# Prints what is wrong and returns 1.
fi_check_crash() {
	local name=$1 opts=$2 point=$3 n act done view errs=() st rc out
	if [[ $point == after ]]; then n=$FI_CALLS act=killafter; else n=$point act=kill; fi
	fi_fresh "$name"
	fi_mount "$opts" || return 1
	fi_arm mut "$n" "$act" || return 1
	done=$(fi_run_steps "$name")
	if ! sfs_wait_gone "$FI_PID" 10; then
		echo "point $point: the daemon did not die (call $n not reached; $(fi_count) calls)"
		return 1
	fi
	cu_detach_dead "$MNT" >/dev/null
	cu_mount "$opts" || return 1
	view=$BATS_TEST_TMPDIR/view
	fi_view_state "$MNT" >"$view"
	st=none
	cmp -s "$view" "$FI_W/state.$done" && st=$done
	[[ $st != none ]] || ! cmp -s "$view" "$FI_W/state.$((done + 1))" 2>/dev/null || st=$((done + 1))
	if [[ $st == none ]]; then
		errs+=("the view is neither the state after step $done nor after step $((done + 1)):
$(diff "$FI_W/state.$done" "$view" | head -n 20)")
	fi
	out=$(ls -A "$UP/.stackfs/work")
	[[ -z $out ]] || errs+=("staging not emptied by the mount: $out")
	out=$(sfs_assert_unchanged "$LO" 2>&1) || errs+=("$out")
	cu_umount || return 1
	rc=0
	out=$("$SFS" fsck --repair "$UP" 2>&1) || rc=$?
	((rc == 0 || rc == 1)) || errs+=("fsck --repair exited $rc: $out")
	((rc == 0)) || echo "$point: $(grep -v '^$' <<<"$out" | head -n 3 | tr '\n' ' ')" >>"$FI_W/repairs"
	rc=0
	out=$("$SFS" fsck "$UP" 2>&1) || rc=$?
	((rc == 0)) || errs+=("the second fsck exited $rc: $out")
	cu_mount "$opts" || return 1
	fi_view_state "$MNT" >"$view.2"
	out=$(diff "$view" "$view.2") || errs+=("fsck --repair changed the view: $out")
	cu_umount || return 1
	if ((${#errs[@]})); then
		printf 'crash point %s (%s of call %s: %s), %s steps done:\n' "$point" "$act" "$n" \
			"$(grep -m1 "^$n " "$FI_W/trace" | sed "s|$T|\$T|g")" "$done"
		printf '  %s\n' "${errs[@]}"
		return 1
	fi
}

# fi_crash_workload NAME [OPTS]: measures workload NAME, then tries its
# crash points (fi_points); reports every failing point and fails the
# test at the end. Prints the number of points tried.
fi_crash_workload() {
	local name=$1 opts=${2:-} p bad=() msg tried=0
	rm -rf "$T/tmpl-$name"
	mkdir -p "$T/tmpl-$name"
	"wl_${name}_setup" "$T/tmpl-$name"
	LO=$T/tmpl-$name/lower
	sfs_snapshot "$LO"
	fi_measure "$name" "$opts" || fail "measuring workload $name failed"
	for p in $(fi_points "$FI_CALLS"); do
		tried=$((tried + 1))
		msg=$(fi_check_crash "$name" "$opts" "$p") || bad+=("${msg:-crash point $p: a step of the check failed}")
	done
	echo "# $name${opts:+ ($opts)}: $FI_CALLS calls, $tried crash points tried, ${#bad[@]} failed" >&3
	[[ ! -s $FI_W/repairs ]] || sed 's/^/# fsck repaired after crash point /' "$FI_W/repairs" >&3
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}")"
}
