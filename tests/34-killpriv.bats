#!/usr/bin/env bats
# Set-user-ID and set-group-ID bits are cleared when a user without
# CAP_FSETID writes, truncates or chowns a file, as on the branch: the
# daemon writes as root, which would keep them, so the kernel must do it;
# an open with O_TRUNC (atomic in the daemon) the daemon handles itself.

load helpers/common

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	chmod 755 "$T" "$UP" "$LO"
	echo x >"$UP/s"
	echo y >"$LO/l"
	chmod 06777 "$UP/s" "$LO/l"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	chmod 755 "$MNT"
}

teardown() {
	sfs_cleanup
}

# run in the mount point: the test's directories are searchable by root only
as_nobody() {
	(cd "$MNT" && setpriv --reuid=nobody --regid=nogroup --clear-groups "$@")
}

@test "a write by another user clears the set-ID bits of a rw file" {
	as_nobody sh -c "echo w >> s"
	run -0 stat -c %a "$MNT/s" "$UP/s"
	assert_output $'777\n777'
}

@test "a write by another user to a lower set-ID file: the copy has no set-ID bits, the lower file keeps them" {
	as_nobody sh -c "echo w >> l"
	run -0 stat -c %a "$MNT/l" "$UP/l"
	assert_output $'777\n777'
	sfs_assert_unchanged "$LO"
}

@test "a truncate by another user clears the set-ID bits" {
	as_nobody truncate -s 1 s
	run -0 stat -c %a "$UP/s"
	assert_output 777
}

@test "a write by root keeps the set-ID bits, as on the branch" {
	echo w >>"$MNT/s"
	run -0 stat -c %a "$UP/s"
	assert_output 6777
}

@test "a truncate by another user of a lower set-ID file: the copy has no set-ID bits" {
	as_nobody truncate -s 1 l
	run -0 stat -c '%a %s' "$MNT/l" "$UP/l"
	assert_output $'777 1\n777 1'
	sfs_assert_unchanged "$LO"
}

# trunc_ref MODE CMD...: sets REF to the mode an O_TRUNC open by CMD (a
# command that runs its arguments, e.g. setpriv) leaves on a root file of
# MODE on the branch filesystem itself, without the union.
trunc_ref() {
	local mode=$1
	shift
	mkdir -p -m 777 "$T/plain"
	echo ref >"$T/plain/ref"
	chmod "$mode" "$T/plain/ref"
	(cd "$T/plain" && "$@" sh -c ': >ref') || fail "the reference open failed"
	REF=$(stat -c %a "$T/plain/ref")
}

# trunc_check MODE CMD...: the same open through the view, of a rw file
# uMODE and a lower file lMODE, leaves what the branch filesystem leaves
# (REF), and empties them.
trunc_check() {
	local mode=$1 f
	shift
	trunc_ref "$mode" "$@"
	for f in "u$mode" "l$mode"; do
		(cd "$MNT" && "$@" sh -c ": >$f") || fail "$* : >$f failed"
		run -0 stat -c '%a %s' "$MNT/$f" "$UP/$f"
		assert_output "$REF 0"$'\n'"$REF 0"
	done
}

# set_id_files MODE...: a rw file uMODE and a lower file lMODE per MODE.
set_id_files() {
	local mode
	for mode in "$@"; do
		echo u >"$UP/u$mode"
		echo l >"$LO/l$mode"
		chmod "$mode" "$UP/u$mode" "$LO/l$mode"
	done
}

@test "an O_TRUNC open by another user clears the set-ID bits as on the branch filesystem (rw and lower files)" {
	local mode
	set_id_files 4777 2777 6777 2767
	for mode in 4777 2777 6777 2767; do
		trunc_check "$mode" setpriv --reuid=nobody --regid=nogroup --clear-groups
		# 2767: set-group-ID without group-exec is cleared for a caller
		# outside the file's group since Linux 6.x; the branch decides
		[[ $mode == 2767 || $REF == 777 ]] || fail "$mode: the branch filesystem keeps $REF"
	done
}

@test "an O_TRUNC open by root keeps the set-ID bits; by root without CAP_FSETID it clears them" {
	set_id_files 6777
	trunc_check 6777 env
	[[ $REF == 6777 ]] || fail "root: $REF"
	chmod 6777 "$MNT/u6777" "$MNT/l6777"
	trunc_check 6777 setpriv --bounding-set=-fsetid
	[[ $REF == 777 ]] || fail "root without CAP_FSETID: $REF"
}

@test "a create with O_TRUNC that meets an existing file (made behind the union's back) clears its set-ID bits and keeps its owner" {
	mkdir -m 777 "$UP/pub"
	# the kernel caches the name as free, so the open below is a create
	run stat "$MNT/pub/x"
	[[ $status -ne 0 ]] || fail "pub/x exists"
	echo x >"$UP/pub/x"
	chmod 6777 "$UP/pub/x"
	as_nobody sh -c ': >pub/x'
	run -0 stat -c '%a %s %U' "$UP/pub/x"
	assert_output "777 0 root"
}

@test "a create that meets an existing file the caller may not open (made behind the union's back) is refused as an open of that file would be" {
	local f
	mkdir -m 777 "$UP/pub"
	# the kernel caches the names as free, so the opens below are creates
	for f in w t r; do
		run stat "$MNT/pub/$f"
		[[ $status -ne 0 ]] || fail "pub/$f exists"
	done
	for f in w t r; do echo secret >"$UP/pub/$f"; done
	chmod 644 "$UP/pub/w" "$UP/pub/t"
	chmod 600 "$UP/pub/r"
	run as_nobody sh -c 'echo evil >>pub/w'
	assert_failure
	assert_output --partial 'Permission denied'
	run as_nobody sh -c ': >pub/t'
	assert_failure
	assert_output --partial 'Permission denied'
	run as_nobody perl -e 'use Fcntl; sysopen(my $f, "pub/r", O_RDONLY | O_CREAT) or die "$!\n"; print <$f>'
	assert_failure
	assert_output 'Permission denied'
	run -0 cat "$UP/pub/w" "$UP/pub/t" "$UP/pub/r"
	assert_output $'secret\nsecret\nsecret'
	# the caller's own file, and O_EXCL, as on any filesystem
	run as_nobody perl -e 'use Fcntl; sysopen(my $f, "pub/w", O_WRONLY | O_CREAT | O_EXCL) or die "$!\n"'
	assert_failure
	assert_output 'File exists'
	run -0 stat -c '%a %U %s' "$UP/pub/w"
	assert_output '644 root 7'
}
