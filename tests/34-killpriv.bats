#!/usr/bin/env bats
# Set-user-ID and set-group-ID bits are cleared when a user without
# CAP_FSETID writes, truncates or chowns a file, as on the branch: the
# daemon writes as root, which would keep them, so the kernel must do it.

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
