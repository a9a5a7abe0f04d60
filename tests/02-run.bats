#!/usr/bin/env bats
# tests/run ends with one line per filesystem, the names of the failed
# tests and the total alone on its line, `N passed, N failed, N skipped`
# (CI reads it), counted from bats's TAP report; a failed test's output
# stays visible.

load helpers/common

@test "tests/run ends with the counts per filesystem, the failed tests' names and the total" {
	local f=$BATS_TEST_TMPDIR/sample.bats
	# (printf: a line starting with @test would be one of this file's)
	printf '%s\n' '@test "one passes" { true; }' '@test "two passes" { true; }' \
		'@test "one skips" { skip "on purpose"; }' \
		'@test "one fails # not a skip" { echo "the failure'"'"'s output"; false; }' >"$f"
	run -1 env SFS_FS_LIST="ext4 xfs" "$SFS_REPO/tests/run" "$f"
	assert_line "# the failure's output"
	assert_line "=== ext4: 2 passed, 1 failed, 1 skipped"
	assert_line "=== xfs: 2 passed, 1 failed, 1 skipped"
	assert_line "failed: ext4: 4 one fails # not a skip"
	assert_line "failed: xfs: 4 one fails # not a skip"
	[[ ${lines[-1]} == "4 passed, 2 failed, 2 skipped" ]] || fail "last line: ${lines[-1]}"
}

@test "tests/run exits 0 and counts 0 failed when all pass" {
	local f=$BATS_TEST_TMPDIR/sample.bats
	printf '@test "passes" { true; }\n' >"$f"
	run -0 env SFS_FS_LIST=ext4 "$SFS_REPO/tests/run" "$f"
	[[ ${lines[-1]} == "1 passed, 0 failed, 0 skipped" ]] || fail "last line: ${lines[-1]}"
}

# bats 1.8's `run -N` set a global i (helpers/common.bash patches it): a
# loop over i around it never ended
@test "a loop's i survives run -0 in it" {
	local i n=0
	for ((i = 0; i < 6; i++)); do
		run -0 true
		n=$((n + 1))
		((n < 10)) || fail "the loop did not end: i is $i after run"
	done
	((n == 6)) || fail "$n rounds, not 6"
}

# helpers/common.bash cuts bats's per-command trace for its own helpers:
# a failure must still name the test's line
@test "a failure through a helper still names the test's line" {
	local f=$BATS_TEST_TMPDIR/sample.bats
	mkdir -p "$BATS_TEST_TMPDIR/helpers"
	cp "$SFS_REPO"/tests/helpers/common.bash "$BATS_TEST_TMPDIR/helpers/"
	printf '%s\n' 'load helpers/common' '' '@test "fails" {' '	true' '	sfs_require_cmd true' '	run -0 false' '}' >"$f"
	run -1 env SFS_FS_LIST=ext4 "$SFS_REPO/tests/run" "$f"
	assert_line --partial "sample.bats, line 6)"
	assert_line --partial "expected exit code 0, got 1"
}

# every test's teardown sweeps what it left mounted without recording it:
# under its own directory and in the file's image, a second root swept
# after the first one's unmounts (helpers/common.bash reads the mount
# table once per sweep, again only after an unmount)
@test "a test's teardown unmounts what it left behind unrecorded, in its directory and in the file's image" {
	local f=$BATS_TEST_TMPDIR/sample.bats
	mkdir -p "$BATS_TEST_TMPDIR/helpers"
	cp "$SFS_REPO"/tests/helpers/common.bash "$BATS_TEST_TMPDIR/helpers/"
	# (printf: a line starting with @test would be one of this file's)
	printf '%s\n' 'load helpers/common' \
		'setup_file() { sfs_setup_file 1; }' 'teardown_file() { sfs_cleanup_file; }' \
		'setup() { sfs_setup_branches extra; }' 'teardown() { sfs_cleanup 2>>"$SWEEP_LOG"; }' \
		'@test "leaves mounts" {' \
		'	mkdir "$BATS_TEST_TMPDIR/b1" "$BATS_TEST_TMPDIR/b2"' \
		'	mount --bind "$LO" "$BATS_TEST_TMPDIR/b1"' \
		'	mount --bind "$LO" "$BATS_TEST_TMPDIR/b2"' \
		'	mount --bind "$UP" "$EXTRA"' \
		'	"$SFS" mount "$UP:$LO=ro" "$MNT"' \
		'	[[ $(stat -f -c %T "$MNT") == fuseblk ]]' \
		'}' \
		'@test "the next test finds nothing of it mounted" {' \
		'	run -1 grep -F "$SFS_IMG/" /proc/self/mountinfo' \
		'	run -1 grep -F "$BATS_RUN_TMPDIR/test/" /proc/self/mountinfo' \
		'}' >"$f"
	# (without this test's own variables, which the sample's setup_file
	# would take for its test's)
	run -0 env -u BATS_TEST_NUMBER -u BATS_TEST_TMPDIR SFS_FS_LIST=ext4 \
		SWEEP_LOG="$BATS_TEST_TMPDIR/sweep.log" "$SFS_REPO/tests/run" "$f"
	[[ ${lines[-1]} == "2 passed, 0 failed, 0 skipped" ]] || fail "last line: ${lines[-1]}"
	run -0 cat "$BATS_TEST_TMPDIR/sweep.log"
	assert_line --partial "/mnt (fuse.stackfs) was left mounted"
	assert_line --partial "/b1 (ext4) was left mounted"
	assert_line --partial "/b2 (ext4) was left mounted"
	assert_line --partial "/extra (ext4) was left mounted"
}
