#!/usr/bin/env bats
# Runs last: after every other file of this bats run has torn down, nothing
# the run made may be left: no mount (stackfs or image), no loop device, no
# daemon. Only this run's directory is looked at, so that another run on
# the machine at the same time does not count.

load helpers/common

@test "no mount is left behind under this run's directory" {
	run -0 bash -c "findmnt -rn -o TARGET,FSTYPE | grep -F '$BATS_RUN_TMPDIR/' || true"
	assert_output ""
}

@test "no loop device made by this run is left attached" {
	run -0 bash -c "losetup -n -l -O NAME,BACK-FILE | grep -F '$BATS_RUN_TMPDIR/' || true"
	assert_output ""
}

@test "no stackfsd daemon started by this run is still running" {
	local p leftover=
	for p in $(sfs_stackfsd_pids); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$BATS_RUN_TMPDIR/"; then
			leftover+="$p: $(tr '\0' ' ' <"/proc/$p/cmdline")"$'\n'
		fi
	done
	[[ -z $leftover ]] || fail "daemons left running: $leftover"
}
