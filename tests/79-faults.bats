#!/usr/bin/env bats
# Injected errors (tests/tools/faultinject.so): a call of the daemon on
# the rw branch fails with ENOSPC, EIO or EDQUOT during a copy-up (data
# copy, xattr copy, the placing rename), a write, a rename, a setxattr.
# The caller sees that errno, the lower file is intact, nothing half-made
# shows in the view or stays in the rw branch (staging emptied), and the
# same operation works once the fault is gone, on the same mount.

load helpers/common
load helpers/copyup
load helpers/faults

setup_file() {
	sfs_setup_file
	sfs_require_tool faultinject.so sysprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	fi_require_plain_build
	sfs_setup_branches
	printf 'lower data\n' >"$LO/f"
	setfattr -n user.k -v lowerval "$LO/f"
	mkdir -p "$LO/d"
	printf 'in d\n' >"$LO/d/g"
	printf 'upper\n' >"$UP/u"
	sfs_snapshot "$LO"
	fi_mount || fail "mount with the shim failed"
}

teardown() {
	sfs_cleanup
}

# inject KINDS ACTION CMD...: runs CMD with the fault armed (the Nth=1st
# call of KINDS fails, every later one too with a "+" ACTION); its output
# in $output, status in $status. Checks the fault was hit, then disarms.
inject() {
	local kinds=$1 act=$2 before
	shift 2
	before=$(fi_view_state "$MNT")
	upfiles=$(cu_branch_files "$UP")
	fi_arm "$kinds" 1 "$act" || fail "arming failed"
	run "$@"
	grep -q '^FAIL ' "$FI_LOG" || fail "the fault ($kinds $act) was never hit: $(cat "$FI_LOG")"
	fi_arm mut 0 count || fail "disarming failed"
	BEFORE_VIEW=$before BEFORE_UP=$upfiles
}

# Nothing changed: same view, no new file in the rw branch, staging
# empty, the lower branch as it was.
assert_nothing_made() {
	local d
	d=$(diff <(echo "$BEFORE_VIEW") <(fi_view_state "$MNT")) || fail "the view changed: $d"
	d=$(diff <(echo "$BEFORE_UP") <(cu_branch_files "$UP")) || fail "the rw branch changed: $d"
	cu_assert_work_empty "$UP"
	sfs_assert_unchanged "$LO"
}

# The view is as it was; the rw branch changed by at most a copy-up of
# NAME, which is the lower file's; staging empty, the lower branch as it was.
view_unchanged_but_copy() {
	local d
	d=$(diff <(echo "$BEFORE_VIEW") <(fi_view_state "$MNT")) || fail "the view changed: $d"
	d=$(diff <(echo "$BEFORE_UP" | grep -vx "./$1") <(cu_branch_files "$UP" | grep -vx "./$1")) ||
		fail "the rw branch changed beyond a copy of $1: $d"
	if [[ -e $UP/$1 ]]; then
		cmp -s "$UP/$1" "$LO/$1" || fail "the copy of $1 is not the lower file"
	fi
	cu_assert_work_empty "$UP"
	sfs_assert_unchanged "$LO"
}

# The daemon and the rest of the mount still serve.
assert_mount_works() {
	run -0 cat "$MNT/d/g"
	assert_output "in d"
	run -0 ls "$MNT"
	assert_output $'d\nf\nu'
}

copyup_errno() {
	local kinds=$1 err=$2
	inject "$kinds" "$err+" "$TOOLS/sysprobe" open "$MNT/f" wronly,append 0 more
	assert_failure
	assert_output "$err"
	assert_nothing_made
	assert_mount_works
	# and the copy-up works once the fault is gone
	run -0 "$TOOLS/sysprobe" open "$MNT/f" wronly,append 0 more
	run -0 cat "$MNT/f"
	assert_output $'lower data\nmore'
	[[ $(cu_xattr_text "$MNT/f" user.k) == lowerval ]] || fail "xattr lost in the copy-up"
	cu_assert_work_empty "$UP"
	sfs_assert_unchanged "$LO"
}

@test "ENOSPC from the data copy of a copy-up reaches the caller; nothing is left" {
	copyup_errno write ENOSPC
}

@test "EIO from the data copy of a copy-up reaches the caller; nothing is left" {
	copyup_errno write EIO
}

@test "ENOSPC from the xattr copy of a copy-up reaches the caller; nothing is left" {
	copyup_errno xattr ENOSPC
}

@test "EDQUOT from the xattr copy of a copy-up reaches the caller; nothing is left" {
	copyup_errno xattr EDQUOT
}

@test "EIO from creating the staged copy reaches the caller; nothing is left" {
	copyup_errno open EIO
}

# a copy-up places its file by a link from the copy's fd (docs/union.md "Copy-up")
@test "ENOSPC from the link that places a copy-up reaches the caller; nothing is left" {
	copyup_errno link ENOSPC
}

@test "EIO from the link that places a copy-up reaches the caller; nothing is left" {
	copyup_errno link EIO
}

@test "ENOSPC from the copy-up of a parent directory (mkdir in staging) reaches the caller" {
	inject mkdir ENOSPC "$TOOLS/sysprobe" open "$MNT/d/g" wronly,append 0 more
	assert_failure
	assert_output ENOSPC
	assert_nothing_made
	assert_mount_works
}

@test "ENOSPC and EDQUOT from a write reach the caller as they are" {
	local err
	for err in ENOSPC EDQUOT EIO; do
		inject write "$err" "$TOOLS/sysprobe" open "$MNT/u" wronly,append 0 more
		assert_failure
		assert_output "write: $err"
		assert_nothing_made
	done
	run -0 "$TOOLS/sysprobe" open "$MNT/u" wronly,append 0 more
	run -0 cat "$MNT/u"
	assert_output $'upper\nmore'
}

@test "EDQUOT and EIO from a rename reach the caller; both names stay as they were" {
	local err
	for err in EDQUOT EIO; do
		inject rename "$err+" "$TOOLS/sysprobe" rename "$MNT/u" "$MNT/u2"
		assert_failure
		assert_output "$err"
		assert_nothing_made
		# a lower file: copy-up (placed by a link), then the rename; the
		# view is as it was, the rw branch may keep the copy of f
		inject rename "$err+" "$TOOLS/sysprobe" rename "$MNT/f" "$MNT/f2"
		assert_failure
		assert_output "$err"
		view_unchanged_but_copy f
		# a lower directory: its redirect, then the rename
		inject rename "$err+" "$TOOLS/sysprobe" rename "$MNT/d" "$MNT/d2"
		assert_failure
		assert_output "$err"
		assert_nothing_made
	done
	assert_mount_works
	run -0 mv "$MNT/d" "$MNT/d2"
	run -0 cat "$MNT/d2/g"
}

@test "ENOSPC from a setxattr reaches the caller, on an upper and on a lower file" {
	inject xattr ENOSPC setfattr -n user.x -v 1 "$MNT/u"
	assert_failure
	assert_output --partial "No space left on device"
	assert_nothing_made
	inject xattr ENOSPC+ setfattr -n user.x -v 1 "$MNT/f"
	assert_failure
	assert_output --partial "No space left on device"
	assert_nothing_made
	run -0 setfattr -n user.x -v 1 "$MNT/f"
	[[ $(cu_xattr_text "$MNT/f" user.x) == 1 ]]
}

@test "ENOSPC from writing a whiteout reaches rm; the file stays" {
	inject open ENOSPC rm "$MNT/f"
	assert_failure
	assert_output --partial "No space left on device"
	assert_nothing_made
	assert_mount_works
}
