#!/usr/bin/env bats
# The stackfs command line: help, version, usage errors and exit codes
# (0 success, 1 operation failed, 2 usage error). No mounts here.

load helpers/common

# nothing here depends on the branches' filesystem
setup() {
	sfs_once_per_suite
}

setup_file() {
	sfs_require_build
}

@test "stackfs --help prints usage on stdout and exits 0" {
	run -0 --separate-stderr "$SFS" --help
	assert_output --partial "mount"
	assert_output --partial "umount"
	[[ -z $stderr ]] || fail "stderr not empty: $stderr"
}

@test "stackfs -h is --help" {
	run -0 "$SFS" -h
	assert_output --partial "mount"
}

@test "stackfs --version prints the version and exits 0" {
	run -0 --separate-stderr "$SFS" --version
	assert_output --regexp '^stackfs [0-9]+\.[0-9]+\.[0-9]+'
}

@test "stackfs without arguments is a usage error (exit 2) on stderr" {
	run -2 --separate-stderr "$SFS"
	[[ -n $stderr ]] || fail "no message on stderr"
	assert_output ""
}

@test "stackfs bogus: unknown command exits 2 and names it" {
	run -2 --separate-stderr "$SFS" bogus
	[[ $stderr == *bogus* ]] || fail "stderr does not name 'bogus': $stderr"
	assert_output ""
}

@test "stackfs --bogus: unknown option exits 2 and names it" {
	run -2 --separate-stderr "$SFS" --bogus
	[[ $stderr == *--bogus* ]] || fail "stderr does not name '--bogus': $stderr"
}

@test "stackfs mount without arguments is a usage error (exit 2)" {
	run -2 --separate-stderr "$SFS" mount
	[[ -n $stderr ]] || fail "no message on stderr"
}

@test "stackfs mount with one argument is a usage error (exit 2)" {
	run -2 --separate-stderr "$SFS" mount "$BATS_TEST_TMPDIR"
	[[ -n $stderr ]] || fail "no message on stderr"
}

@test "stackfs mount with three operands is a usage error (exit 2)" {
	run -2 --separate-stderr "$SFS" mount "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR" extra
	[[ $stderr == *extra* ]] || fail "stderr does not name 'extra': $stderr"
}

@test "stackfs mount -o without a value is a usage error (exit 2)" {
	run -2 --separate-stderr "$SFS" mount -o
	[[ -n $stderr ]] || fail "no message on stderr"
}

@test "stackfs mount --help exits 0 and shows the BRANCHES syntax" {
	run -0 --separate-stderr "$SFS" mount --help
	assert_output --partial "BRANCHES"
	assert_output --partial "MOUNTPOINT"
}

@test "stackfs umount --help exits 0" {
	run -0 "$SFS" umount --help
	assert_output --partial "umount"
}

@test "stackfs help mount is stackfs mount --help" {
	run -0 "$SFS" mount --help
	local direct=$output
	run -0 "$SFS" help mount
	assert_output "$direct"
}

@test "stackfs umount without a mount point is a usage error (exit 2)" {
	run -2 --separate-stderr "$SFS" umount
	[[ -n $stderr ]] || fail "no message on stderr"
}

@test "stackfs umount of a directory that is not mounted fails (exit 1) and names it" {
	mkdir -p "$BATS_TEST_TMPDIR/notmounted"
	run -1 --separate-stderr "$SFS" umount "$BATS_TEST_TMPDIR/notmounted"
	[[ $stderr == *notmounted* ]] || fail "stderr does not name the directory: $stderr"
	[[ $(wc -l <<<"$stderr") -eq 1 ]] || fail "message is not one line: $stderr"
}

@test "stackfs mount --help lists the -o options (the daemon's table), stackfs's own and FUSE's" {
	run -0 --separate-stderr "$SFS" mount --help
	local o
	for o in whiteout=wh timeout=SECONDS log=FILE lowerdir= allow_other default_permissions noatime; do
		assert_output --partial "$o"
	done
}

@test "each option a command's --help lists is accepted by it (not refused as unknown)" {
	load helpers/docs
	local c f n=0 bad=
	while read -r c; do
		for f in $(help_flags $c); do
			# an argument for those that take one (fsync: a -o option too);
			# operands that fail later
			# shellcheck disable=SC2086  # "branch add": command and subcommand
			run --separate-stderr "$SFS" $c "$f" fsync "$BATS_TEST_TMPDIR/none" "$BATS_TEST_TMPDIR/none2"
			[[ $stderr == *"unknown option"* || $stderr == *"takes no value"* ]] && bad+=" $c:$f"
			n=$((n + 1))
		done
	done < <(help_cmds)
	((n >= 15)) || fail "only $n options read from the help"
	[[ -z $bad ]] || fail "refused as unknown:$bad"
}

@test "an option a command's --help does not list is refused (exit 2; fsck 8), naming it and the help" {
	run -2 --separate-stderr "$SFS" diff -j "$BATS_TEST_TMPDIR"
	[[ $stderr == *"unknown option '-j'"*"stackfs diff --help"* ]] || fail "$stderr"
	run -8 --separate-stderr "$SFS" fsck --rep "$BATS_TEST_TMPDIR"
	[[ $stderr == *"unknown option '--rep'"* ]] || fail "$stderr"
	run -2 --separate-stderr "$SFS" branch mode "$BATS_TEST_TMPDIR" --force x rw
	[[ $stderr == *"unknown option '--force'"*"stackfs branch mode --help"* ]] || fail "$stderr"
	run -2 --separate-stderr "$SFS" mount -x "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR"
	[[ $stderr == *"unknown option '-x'"* ]] || fail "$stderr"
}
