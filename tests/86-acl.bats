#!/usr/bin/env bats
# POSIX ACLs through the view: setfacl/getfacl (system.posix_acl_access
# and _default) act on the branch's ACLs; default ACLs are inherited by
# entries created in the view exactly as in a plain directory of the same
# filesystem, with the caller's umask where there is none; access is
# decided by the ACL (the mounts use default_permissions; -o allow_other
# lets nobody in); copy-up keeps access and default ACLs.

load helpers/common
load helpers/passthrough

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_require_cmd setfacl getfacl setpriv
	getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
		skip "needs the user nobody and the group nogroup"
	NOBODY_UID=$(id -u nobody)
	sfs_setup_branches plain
	echo secret >"$UP/f"
	chmod 0600 "$UP/f"
	echo secret >"$T/ref"
	chmod 0600 "$T/ref"
	echo lower-secret >"$LO/lf"
	chmod 0600 "$LO/lf"
	setfacl -m u:nobody:r-- "$LO/lf"
}

teardown() {
	sfs_cleanup
}

acl() {
	getfacl -cpn -- "$1" 2>/dev/null
}

# ------------------------------------------------------------ getfacl/setfacl

@test "setfacl and getfacl through the view act on the rw file's ACL exactly as on the branch" {
	pt_mount
	local spec
	for spec in "-m u:nobody:r--,g:nogroup:rw-" "-m u:1234:rwx" "-m m::r--" "-x u:1234" "-x g:nogroup"; do
		# shellcheck disable=SC2086
		setfacl $spec "$MNT/f" || fail "setfacl $spec through the view failed"
		# shellcheck disable=SC2086
		setfacl $spec "$T/ref"
		run -0 acl "$UP/f"
		assert_output "$(acl "$T/ref")"
		run -0 acl "$MNT/f"
		assert_output "$(acl "$T/ref")"
		run -0 stat -c %a "$MNT/f"
		assert_output "$(stat -c %a "$T/ref")"
	done
	assert_output 640
	run -0 acl "$MNT/f"
	assert_line "user:$NOBODY_UID:r--"
	# the raw attribute too
	run -0 pt_xval64 "$MNT/f" system.posix_acl_access
	assert_output "$(pt_xval64 "$UP/f" system.posix_acl_access)"
	setfacl -b "$MNT/f"
	setfacl -b "$T/ref"
	run -1 pt_xval64 "$UP/f" system.posix_acl_access
	run -0 acl "$MNT/f"
	assert_output "$(acl "$T/ref")"
	assert_output $'user::rw-\ngroup::---\nother::---'
}

@test "system.posix_acl_access and _default set as raw attributes through the view are the branch's ACLs" {
	mkdir "$T/refd" "$UP/d"
	setfacl -m u:nobody:r-x "$T/ref" "$T/refd"
	setfacl -d -m u:nobody:rwx,g:nogroup:r-x "$T/refd"
	pt_mount
	setfattr -n system.posix_acl_access -v "$(pt_xval64 "$T/ref" system.posix_acl_access)" "$MNT/f"
	setfattr -n system.posix_acl_default -v "$(pt_xval64 "$T/refd" system.posix_acl_default)" "$MNT/d"
	run -0 acl "$UP/f"
	assert_output "$(acl "$T/ref")"
	run -0 getfacl -cpn -d "$UP/d"
	assert_output "$(getfacl -cpn -d "$T/refd")"
	assert_line "user:$NOBODY_UID:rwx"
	run -0 getfacl -cpn -d "$MNT/d"
	assert_output "$(getfacl -cpn -d "$T/refd")"
	setfattr -x system.posix_acl_default "$MNT/d"
	run -0 getfacl -cpn -d "$UP/d"
	assert_output ""
}

@test "setfacl on a lower file copies it up with the new ACL; the lower file keeps its own" {
	local before
	before=$(acl "$LO/lf")
	cp -a "$LO/lf" "$T/lref"
	setfacl -m u:1234:rw- "$T/lref"
	pt_mount
	run -0 acl "$MNT/lf"
	assert_output "$before"
	setfacl -m u:1234:rw- "$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 acl "$UP/lf"
	assert_output "$(acl "$T/lref")"
	assert_line "user:$NOBODY_UID:r--"
	assert_line "user:1234:rw-"
	run -0 acl "$MNT/lf"
	assert_output "$(acl "$T/lref")"
	run -0 acl "$LO/lf"
	assert_output "$before"
}

# ------------------------------------------------------------ inheritance

# make_entries DIR UMASK: a file, a directory and a fifo made in DIR under
# UMASK, named after it.
make_entries() {
	(
		umask "$2"
		touch "$1/f$2" && mkdir "$1/d$2" && mkfifo "$1/p$2" && mkdir -p "$1/d$2/sub" && touch "$1/d$2/sub/g"
	)
}

# Entries made in the view and in the plain directory have the same mode and ACLs.
same_as_plain() {
	local v=$1 p=$2 e
	for e in f077 d077 p077 f022 d022 p022 d077/sub d077/sub/g d022/sub d022/sub/g; do
		run -0 stat -c %A "$v/$e"
		assert_output "$(stat -c %A "$p/$e")"
		run -0 acl "$v/$e"
		assert_output "$(acl "$p/$e")"
		run -0 getfacl -cpn -d "$v/$e"
		assert_output "$(getfacl -cpn -d "$p/$e")"
	done
}

@test "a default ACL on a rw directory is inherited by files, dirs and fifos created in the view, as in a plain directory (umask 077 and 022)" {
	mkdir "$UP/d"
	setfacl -d -m u:nobody:rwx,g:nogroup:r-x,o::r-x "$UP/d" "$PLAIN"
	pt_mount
	for u in 077 022; do
		make_entries "$MNT/d" "$u"
		make_entries "$PLAIN" "$u"
	done
	same_as_plain "$MNT/d" "$PLAIN"
	same_as_plain "$UP/d" "$PLAIN"
	# the ACL, not the umask, decided
	run -0 acl "$UP/d/f077"
	assert_line "user:$NOBODY_UID:rwx	#effective:rw-"
	run -0 stat -c %a "$UP/d/d077"
	assert_output 775
}

@test "without a default ACL the caller's umask decides, as in a plain directory (umask 077 and 022)" {
	mkdir "$UP/d"
	pt_mount
	for u in 077 022; do
		make_entries "$MNT/d" "$u"
		make_entries "$PLAIN" "$u"
	done
	same_as_plain "$MNT/d" "$PLAIN"
	run -0 stat -c %a "$UP/d/f077" "$UP/d/d077" "$UP/d/f022" "$UP/d/d022"
	assert_output $'600\n700\n644\n755'
}

@test "a lower directory with a default ACL: entries created in it through the view inherit it; the new upper directory has it" {
	mkdir "$LO/ld" "$T/plain2"
	setfacl -m u:nobody:rwx "$LO/ld" "$T/plain2"
	setfacl -d -m u:nobody:rwx,g:nogroup:r-x "$LO/ld" "$T/plain2"
	pt_mount
	(umask 077 && touch "$MNT/ld/new" && mkdir "$MNT/ld/nd")
	(umask 077 && touch "$T/plain2/new" && mkdir "$T/plain2/nd")
	[[ -d $UP/ld ]] || fail "the directory was not copied up"
	run -0 acl "$UP/ld"
	assert_output "$(acl "$LO/ld")"
	run -0 getfacl -cpn -d "$UP/ld"
	assert_output "$(getfacl -cpn -d "$LO/ld")"
	assert_line "user:$NOBODY_UID:rwx"
	for e in new nd; do
		run -0 acl "$UP/ld/$e"
		assert_output "$(acl "$T/plain2/$e")"
		assert_line --partial "user:$NOBODY_UID:rwx"
		run -0 stat -c %a "$MNT/ld/$e"
		assert_output "$(stat -c %a "$T/plain2/$e")"
	done
	run -0 getfacl -cpn -d "$UP/ld/nd"
	assert_output "$(getfacl -cpn -d "$T/plain2/nd")"
}

# ------------------------------------------------------------ access

@test "allow_other: nobody reads and writes a 0600 file through named-user ACL entries, and is denied once they are gone" {
	pt_mount allow_other
	run ! pt_as_nobody_in "$MNT" cat f
	assert_output --partial "Permission denied"
	setfacl -m u:nobody:r-- "$MNT/f"
	run -0 pt_as_nobody_in "$MNT" cat f
	assert_output secret
	run ! pt_as_nobody_in "$MNT" sh -c 'echo more >>f'
	assert_output --partial "Permission denied"
	setfacl -m u:nobody:rw- "$MNT/f"
	run -0 pt_as_nobody_in "$MNT" sh -c 'echo more >>f'
	run -0 cat "$UP/f"
	assert_output $'secret\nmore'
	# the mask limits the named entry
	setfacl -m m::r-- "$MNT/f"
	run ! pt_as_nobody_in "$MNT" sh -c 'echo again >>f'
	assert_output --partial "Permission denied"
	setfacl -x u:nobody "$MNT/f"
	run ! pt_as_nobody_in "$MNT" cat f
	assert_output --partial "Permission denied"
}

@test "allow_other: a directory's ACL decides who may create in it" {
	mkdir "$UP/d"
	chmod 0755 "$UP/d"
	pt_mount allow_other
	run ! pt_as_nobody_in "$MNT" touch d/x
	assert_output --partial "Permission denied"
	setfacl -m u:nobody:rwx "$MNT/d"
	run -0 pt_as_nobody_in "$MNT" touch d/x
	run -0 stat -c %U "$UP/d/x"
	assert_output nobody
	setfacl -x u:nobody "$MNT/d"
	run ! pt_as_nobody_in "$MNT" touch d/y
	assert_output --partial "Permission denied"
}

@test "another user's new file, directory and fifo in a set-group-ID directory with a default ACL: as in a plain directory" {
	# a new name for a caller other than root is made whole before it
	# shows (a file through O_TMPFILE, the others in staging): the group,
	# set-group-ID bit and inherited ACL must still be the parent's
	local d kind out
	for d in "$UP/sg" "$PLAIN/sg"; do
		mkdir "$d"
		chgrp nogroup "$d"
		chmod 2777 "$d"
		setfacl -d -m u::rwx,g::r-x,o::---,u:nobody:rwx,m::rwx "$d"
	done
	pt_mount allow_other
	for kind in "$MNT/sg" "$PLAIN/sg"; do
		pt_as_nobody_in "$kind" sh -c 'umask 077; : >f; mkdir d; mkfifo p' ||
			fail "nobody could not create in $kind"
	done
	for out in f d p; do
		[[ $(stat -c '%U %G %a' "$UP/sg/$out") == $(stat -c '%U %G %a' "$PLAIN/sg/$out") ]] ||
			fail "$out: $(stat -c '%U %G %a' "$UP/sg/$out") in the view, $(stat -c '%U %G %a' "$PLAIN/sg/$out") in a plain directory"
		[[ $(acl "$UP/sg/$out") == $(acl "$PLAIN/sg/$out") ]] ||
			fail "$out: the ACL differs: $(acl "$UP/sg/$out") against $(acl "$PLAIN/sg/$out")"
	done
	run -0 stat -c %U "$MNT/sg/f"
	assert_output nobody
}

@test "copy-up keeps the access ACL: nobody reads a 0600 lower file through its ACL before and after copy-up" {
	pt_mount allow_other
	run -0 pt_as_nobody_in "$MNT" cat lf
	assert_output lower-secret
	setfattr -n user.x -v 1 "$MNT/lf"
	[[ -f $UP/lf ]] || fail "not copied up"
	run -0 acl "$UP/lf"
	assert_output "$(acl "$LO/lf")"
	run -0 pt_as_nobody_in "$MNT" cat lf
	assert_output lower-secret
	setfacl -x u:nobody "$MNT/lf"
	run ! pt_as_nobody_in "$MNT" cat lf
	assert_output --partial "Permission denied"
	run -0 acl "$LO/lf"
	assert_line "user:$NOBODY_UID:r--"
}

@test "copy-up keeps a restrictive ACL: a lower file 0644 whose ACL denies nobody stays unreadable to nobody" {
	echo closed >"$LO/deny"
	chmod 0644 "$LO/deny"
	setfacl -m u:nobody:--- "$LO/deny"
	pt_mount allow_other
	run ! pt_as_nobody_in "$MNT" cat deny
	assert_output --partial "Permission denied"
	echo more >>"$MNT/deny"
	[[ -f $UP/deny ]] || fail "not copied up"
	run ! pt_as_nobody_in "$MNT" cat deny
	assert_output --partial "Permission denied"
	run -0 acl "$UP/deny"
	assert_output "$(acl "$LO/deny")"
}
