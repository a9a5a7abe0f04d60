#!/usr/bin/env bats
# Whiteouts and opaque directories: removing lower entries leaves a
# whiteout in UP (aufs style .wh.NAME by default, a 0:0 character device
# with -o whiteout=overlay); a directory made over a deleted one is opaque;
# creating a name over a whiteout removes it; reserved names cannot be
# created; both formats are read on every branch.

load helpers/common
load helpers/copyup

setup_file() {
	sfs_setup_file 1
	sfs_require_tool cuprobe
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	echo lower >"$LO/f"
	mkdir -p "$LO/ld/sub" "$LO/emptyd" "$LO/merged" "$UP/merged"
	echo in-ld >"$LO/ld/a"
	echo in-sub >"$LO/ld/sub/b"
	echo low-m >"$LO/merged/lm"
	sfs_snapshot "$LO"
}

teardown() {
	# an immutable directory made by a test must not outlive it
	[[ -n ${IMMUTABLE:-} ]] && chattr -i "$IMMUTABLE" 2>/dev/null
	sfs_cleanup
}

lower_unchanged() {
	sfs_assert_unchanged "$LO"
}

style_opt() {
	[[ $1 == overlay ]] && echo whiteout=overlay || echo ""
}

# ------------------------------------------------------------ unlink

check_rm_lower_file() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	rm "$MNT/f"
	cu_assert_whiteout "$UP/f" "$style"
	cu_assert_gone "$MNT" f
	cu_remount "$(style_opt "$style")"
	cu_assert_gone "$MNT" f
	cu_assert_whiteout "$UP/f" "$style"
	lower_unchanged
}

@test "rm of a lower file leaves .wh.NAME in UP (whiteout=wh) and hides it, also after remount" {
	check_rm_lower_file wh
}

@test "rm of a lower file leaves a 0:0 char device in UP (whiteout=overlay) and hides it, also after remount" {
	check_rm_lower_file overlay
}

@test "the default whiteout format is wh" {
	cu_mount
	rm "$MNT/f"
	cu_assert_whiteout "$UP/f" wh
}

check_rm_copied_file() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	echo more >>"$MNT/f"
	[[ -f $UP/f ]] || fail "not copied up"
	rm "$MNT/f"
	cu_assert_whiteout "$UP/f" "$style"
	cu_assert_gone "$MNT" f
	lower_unchanged
}

@test "rm of a copied-up file removes the copy and whites out the lower one (wh)" {
	check_rm_copied_file wh
}

@test "rm of a copied-up file removes the copy and whites out the lower one (overlay)" {
	check_rm_copied_file overlay
}

@test "rm of an upper-only file leaves no whiteout" {
	cu_mount
	echo up >"$MNT/new"
	rm "$MNT/new"
	cu_assert_absent "$UP/new"
	cu_assert_absent "$UP/.wh.new"
	cu_assert_gone "$MNT" new
}

@test "rm of a file in a lower-only directory makes the directory in UP with the whiteout in it" {
	chmod 0750 "$LO/ld"
	sfs_snapshot "$LO"
	cu_mount
	rm "$MNT/ld/a"
	[[ -d $UP/ld ]] || fail "no UP/ld"
	[[ $(stat -c %a "$UP/ld") == 750 ]] || fail "UP/ld mode $(stat -c %a "$UP/ld")"
	cu_assert_whiteout "$UP/ld/a" wh
	run -0 ls -A "$MNT/ld"
	assert_output sub
	lower_unchanged
}

@test "a removed lower file cannot be removed again: ENOENT" {
	cu_mount
	rm "$MNT/f"
	run -1 "$CUPROBE" rename "$MNT/f" "$MNT/g"
	assert_output ENOENT
	run rm "$MNT/f"
	assert_failure
	assert_output --partial "No such file or directory"
}

@test "rm fails, and the file stays, when the whiteout cannot be written" {
	sfs_require_cmd chattr
	cu_mount
	IMMUTABLE=$UP/merged
	chattr +i "$UP/merged" || skip "chattr +i not supported on $SFS_FS here"
	run rm "$MNT/merged/lm"
	assert_failure
	assert_output --partial "Operation not permitted"
	run -0 cat "$MNT/merged/lm"
	assert_output low-m
	chattr -i "$UP/merged"
	cu_remount
	run -0 cat "$MNT/merged/lm"
	assert_output low-m
	lower_unchanged
}

# ------------------------------------------------------------ rmdir

check_rmdir_lower() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	rmdir "$MNT/emptyd"
	cu_assert_whiteout "$UP/emptyd" "$style"
	cu_assert_gone "$MNT" emptyd
	rm -r "$MNT/ld"
	cu_assert_whiteout "$UP/ld" "$style"
	cu_assert_gone "$MNT" ld
	cu_remount "$(style_opt "$style")"
	cu_assert_gone "$MNT" emptyd
	cu_assert_gone "$MNT" ld
	lower_unchanged
}

@test "rmdir and rm -r of lower directories leave whiteouts (wh), also after remount" {
	check_rmdir_lower wh
}

@test "rmdir and rm -r of lower directories leave whiteouts (overlay), also after remount" {
	check_rmdir_lower overlay
}

check_rmdir_merged() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	rm "$MNT/merged/lm"
	rmdir "$MNT/merged"
	cu_assert_whiteout "$UP/merged" "$style"
	cu_assert_gone "$MNT" merged
	cu_remount "$(style_opt "$style")"
	cu_assert_gone "$MNT" merged
	lower_unchanged
}

@test "rmdir of a merged directory emptied in the view leaves a whiteout (wh)" {
	check_rmdir_merged wh
}

@test "rmdir of a merged directory emptied in the view leaves a whiteout (overlay)" {
	check_rmdir_merged overlay
}

@test "rmdir of a merged directory whose view is not empty is ENOTEMPTY, even with its upper part empty" {
	cu_mount
	run -0 ls -A "$UP/merged"
	assert_output ""
	run rmdir "$MNT/merged"
	assert_failure
	assert_output --partial "Directory not empty"
	run rmdir "$MNT/ld"
	assert_failure
	assert_output --partial "Directory not empty"
	[[ -d $UP/merged ]] || fail "UP/merged removed"
	cu_assert_absent "$UP/.wh.merged"
	cu_assert_absent "$UP/.wh.ld"
	run -0 cat "$MNT/merged/lm"
	assert_output low-m
}

# ------------------------------------------------------------ opaque

check_mkdir_opaque() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	rm -r "$MNT/ld"
	mkdir "$MNT/ld"
	case $style in
	wh)
		[[ -f $UP/ld/.wh..wh..opq ]] || fail "no opaque marker in UP/ld: $(ls -lA "$UP/ld")"
		cu_assert_absent "$UP/.wh.ld"
		;;
	overlay)
		run -0 cu_xattr_text "$UP/ld" trusted.overlay.opaque
		assert_output y
		[[ -d $UP/ld ]] || fail "UP/ld is not a directory"
		;;
	esac
	run -0 ls -A "$MNT/ld"
	assert_output ""
	cu_assert_gone "$MNT/ld" a
	cu_assert_gone "$MNT/ld" sub
	echo new >"$MNT/ld/new"
	cu_remount "$(style_opt "$style")"
	run -0 ls -A "$MNT/ld"
	assert_output new
	cu_assert_gone "$MNT/ld" a
	# the marker is not visible through the view
	run getfattr -n trusted.overlay.opaque "$MNT/ld"
	assert_failure
	lower_unchanged
}

@test "mkdir over a deleted lower directory makes it opaque (wh): the old content does not show" {
	check_mkdir_opaque wh
}

@test "mkdir over a deleted lower directory makes it opaque (overlay): the old content does not show" {
	check_mkdir_opaque overlay
}

@test "mkdir over a deleted lower file makes a directory that shows nothing below" {
	mkdir -p "$T/lo2/f"
	echo deep >"$T/lo2/f/x"
	cu_mount "" "$UP:$LO:$T/lo2"
	rm "$MNT/f"
	mkdir "$MNT/f"
	[[ -d $MNT/f ]]
	run -0 ls -A "$MNT/f"
	assert_output ""
}

check_create_over_whiteout() {
	local style=$1
	cu_mount "$(style_opt "$style")"
	rm "$MNT/f"
	echo new >"$MNT/f"
	[[ -f $UP/f ]] || fail "UP/f is not a regular file: $(ls -l "$UP/f" 2>&1)"
	cu_assert_absent "$UP/.wh.f"
	run -0 cat "$MNT/f"
	assert_output new
	# the other kinds of entries take a whiteout's place too
	rm "$MNT/f" "$MNT/ld/a"
	ln -s tgt "$MNT/f"
	mkfifo "$MNT/ld/a"
	[[ -L $UP/f && -p $UP/ld/a ]] || fail "UP: $(ls -lA "$UP" "$UP/ld")"
	cu_assert_absent "$UP/.wh.f"
	cu_assert_absent "$UP/ld/.wh.a"
	cu_remount "$(style_opt "$style")"
	[[ $(readlink "$MNT/f") == tgt ]]
	[[ -p $MNT/ld/a ]]
	lower_unchanged
}

@test "creating a name over a whiteout removes the whiteout (wh)" {
	check_create_over_whiteout wh
}

@test "creating a name over a whiteout removes the whiteout (overlay)" {
	check_create_over_whiteout overlay
}

# A name made again over its whiteout is made in the staging directory
# and swapped in: it must come out as a fresh name in the same directory
# does (the caller's owner and umask, a set-group-ID parent's group and,
# for a directory, its bit; a parent's default ACL instead of the umask).
recreate_meta() {
	stat -c '%F %A %U %G' "$1"
	getfacl -cp "$1" 2>/dev/null
}

check_recreate_like_new() {
	local style=$1 d kind
	sfs_require_cmd setfacl getfacl setpriv
	chmod 755 "$T" "$UP" "$LO"
	for d in sg ac; do
		mkdir -p "$LO/$d/dd"
		echo x >"$LO/$d/x"
		echo y >"$LO/$d/dd/y"
		mkdir -m 777 "$UP/$d"
	done
	sfs_snapshot "$LO"
	chgrp 1234 "$UP/sg"
	chmod 2777 "$UP/sg"
	setfacl -d -m u:1234:rwx,g::r-x,o::r-x "$UP/ac"
	cu_mount "allow_other${style:+,$(style_opt "$style")}"
	for d in sg ac; do
		rm "$MNT/$d/x"
		rm -r "$MNT/$d/dd"
		(cd "$MNT/$d" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
			sh -c 'umask 027; echo new >x; mkdir dd; echo new >fx; mkdir fdd') ||
			fail "nobody could not make the names in $d"
		for kind in x:fx dd:fdd; do
			[[ "$(recreate_meta "$UP/$d/${kind%%:*}")" == "$(recreate_meta "$UP/$d/${kind#*:}")" ]] ||
				fail "$d/${kind%%:*} is not made as a new name is:
$(recreate_meta "$UP/$d/${kind%%:*}")
--- a new name:
$(recreate_meta "$UP/$d/${kind#*:}")"
		done
		run -0 ls -A "$MNT/$d/dd"
		assert_output ""
	done
	run -0 stat -c '%a %U %g' "$UP/sg/x" "$UP/sg/dd"
	assert_output $'640 nobody 1234\n2750 nobody 1234'
	run -0 getfacl -cp "$UP/ac/dd"
	assert_output --partial 'default:user:1234:rwx'
	run -0 ls -A "$UP/.stackfs/work"
	assert_output ""
	lower_unchanged
}

@test "a name made again over its whiteout is made as a new name is: owner, umask, set-group-ID group, default ACL (wh)" {
	check_recreate_like_new ""
}

@test "a name made again over its whiteout is made as a new name is: owner, umask, set-group-ID group, default ACL (overlay)" {
	check_recreate_like_new overlay
}

# ------------------------------------------------------------ 0:0 devices

# A character device 0:0 is what overlayfs calls a whiteout. One made
# through the view (aufs style) carries the device marker and is a device.
has_device_marker() {
	getfattr -h -n trusted.stackfs.device "$1" >/dev/null 2>&1
}

@test "regression: mknod NAME c 0 0 (whiteout=wh) is a real, visible device: readdir, link, rename, unlink, rmdir of its parent, remount" {
	cu_mount
	mkdir "$MNT/nd"
	mknod "$MNT/nd/dev" c 0 0
	run -0 ls "$MNT/nd"
	assert_output dev
	run -0 stat -c '%F %t:%T' "$MNT/nd/dev"
	assert_output "character special file 0:0"
	has_device_marker "$UP/nd/dev" || fail "no device marker on $UP/nd/dev"
	# the marker is private: not listed through the view
	run -0 getfattr -h -d -m - "$MNT/nd/dev"
	refute_output --partial stackfs
	ln "$MNT/nd/dev" "$MNT/nd/dev2"
	[[ -c $MNT/nd/dev2 && $(stat -c %h "$MNT/nd/dev") == 2 ]] || fail "link: $(ls -l "$MNT/nd")"
	mv "$MNT/nd/dev2" "$MNT/nd/dev3"
	run -0 ls "$MNT/nd"
	assert_output $'dev\ndev3'
	run rmdir "$MNT/nd"
	assert_failure
	assert_output --partial "Directory not empty"
	[[ -c $UP/nd/dev && -c $UP/nd/dev3 ]] || fail "rmdir removed the devices: $(ls -l "$UP/nd")"
	# made over a deleted lower file (staged, then swapped in)
	rm "$MNT/f"
	mknod "$MNT/f" c 0 0
	[[ -c $MNT/f ]] || fail "a device made over a whiteout does not show"
	cu_umount
	cu_mount
	run -0 ls "$MNT/nd"
	assert_output $'dev\ndev3'
	[[ -c $MNT/f ]] || fail "f does not show after the remount"
	rm "$MNT/nd/dev" "$MNT/nd/dev3"
	rmdir "$MNT/nd"
	[[ ! -e $UP/nd ]] || fail "nd still in $UP"
	rm "$MNT/f"
	[[ ! -e $MNT/f ]] || fail "f shows after rm"
	cu_assert_whiteout "$UP/f" wh
	lower_unchanged
}

@test "mknod NAME c 0 0 with -o whiteout=overlay is refused with EPERM, as kernel overlayfs does; nothing is made" {
	cu_mount whiteout=overlay
	run mknod "$MNT/dev" c 0 0
	assert_failure
	assert_output --partial "Operation not permitted"
	[[ ! -e $UP/dev && ! -e $MNT/dev ]] || fail "something was made: $(ls -l "$UP")"
	mknod "$MNT/null" c 1 3
	[[ -c $MNT/null && -c $UP/null ]] || fail "other devices are still made"
	run -0 ls "$UP/.stackfs/work"
	assert_output ""
}

@test "a marked 0:0 device in a lower branch is a device (an unmarked one a whiteout); copy-up keeps the marker" {
	mknod "$LO/dev" c 0 0
	setfattr -h -n trusted.stackfs.device -v y "$LO/dev"
	mknod "$LO/wh" c 0 0
	sfs_snapshot "$LO"
	cu_mount
	run -0 ls "$MNT"
	assert_line dev
	refute_line wh
	chmod 0600 "$MNT/dev"
	[[ -c $UP/dev ]] || fail "not copied up"
	has_device_marker "$UP/dev" || fail "the copy has no device marker"
	cu_umount
	cu_mount
	run -0 stat -c '%F %a' "$MNT/dev"
	assert_output "character special file 600"
	lower_unchanged
}

# ------------------------------------------------------------ reserved names

@test "names .wh.* cannot be created through the view: EPERM" {
	cu_mount
	run touch "$MNT/.wh.x"
	assert_failure
	assert_output --partial "Operation not permitted"
	run mkdir "$MNT/ld/.wh.x"
	assert_failure
	assert_output --partial "Operation not permitted"
	echo up >"$MNT/u"
	run ln "$MNT/u" "$MNT/.wh.f"
	assert_failure
	assert_output --partial "Operation not permitted"
	run ln -s x "$MNT/.wh..wh..opq"
	assert_failure
	assert_output --partial "Operation not permitted"
	run mkfifo "$MNT/.wh.p"
	assert_failure
	assert_output --partial "Operation not permitted"
	run -1 "$CUPROBE" rename "$MNT/u" "$MNT/.wh.u"
	assert_output EPERM
	run -0 cu_branch_files "$UP"
	assert_output ./u
	run -0 bash -c "find '$UP' -name '.wh.*'"
	assert_output ""
	lower_unchanged
}

@test "a hard link of a lower file to a reserved name is refused before any copy-up" {
	cu_mount
	run ln "$MNT/f" "$MNT/.wh.f"
	assert_failure
	assert_output --partial "Operation not permitted"
	cu_assert_absent "$UP/.wh.f"
	# the refused operation changed nothing in the rw branch
	run -0 cu_branch_files "$UP"
	assert_output ""
	lower_unchanged
}

@test ".stackfs at the root cannot be created or seen through the view; elsewhere it is an ordinary name" {
	cu_mount
	run touch "$MNT/.stackfs"
	assert_failure
	assert_output --partial "Operation not permitted"
	run mkdir "$MNT/.stackfs"
	assert_failure
	assert_output --partial "Operation not permitted"
	run -1 "$CUPROBE" rename "$MNT/f" "$MNT/.stackfs"
	assert_output EPERM
	run ls -A "$MNT"
	refute_line .stackfs
	run stat "$MNT/.stackfs"
	assert_failure
	assert_output --partial "No such file or directory"
	mkdir "$MNT/ld/.stackfs"
	[[ -d $UP/ld/.stackfs ]]
	run -0 ls -A "$MNT/ld"
	assert_line .stackfs
}

@test ".wh.* names planted in any branch never show in the view" {
	touch "$LO/.wh.orphan" "$LO/ld/.wh.nothing" "$UP/.wh.ghost" "$LO/.wh..wh.aufs"
	mkdir -p "$UP/merged"
	touch "$UP/merged/.wh.nobody"
	sfs_snapshot "$LO"
	cu_mount
	run -0 bash -c "ls -A '$MNT' '$MNT/ld' '$MNT/merged' | grep -c '^\\.wh\\.' || true"
	assert_output 0
	run -0 bash -c "find '$MNT' -name '.wh.*' | wc -l"
	assert_output 0
	run stat "$MNT/.wh.orphan"
	assert_failure
	assert_output --partial "No such file or directory"
	run stat "$MNT/.wh.ghost"
	assert_failure
	lower_unchanged
}

# ------------------------------------------------------------ both formats read

plant_both_formats() {
	LO2=$T/lo2
	mkdir -p "$LO2/o1" "$LO2/o2" "$LO2/o3" "$LO2/m" "$LO"
	for n in a b c keep; do echo "lo2-$n" >"$LO2/$n"; done
	echo lo2-o1 >"$LO2/o1/hidden1"
	echo lo2-o2 >"$LO2/o2/hidden2"
	echo lo2-o3 >"$LO2/o3/hidden3"
	echo lo2-m >"$LO2/m/from2"
	echo lo2-mx >"$LO2/m/x"
	# in LO: an aufs whiteout of a, an overlay whiteout of b
	touch "$LO/.wh.a"
	mknod "$LO/b" c 0 0
	# opaque dirs: aufs marker, overlay xattr, user.overlay xattr
	mkdir -p "$LO/o1" "$LO/o2" "$LO/o3" "$LO/m"
	touch "$LO/o1/.wh..wh..opq"
	echo lo-o1 >"$LO/o1/own1"
	setfattr -n trusted.overlay.opaque -v y "$LO/o2"
	echo lo-o2 >"$LO/o2/own2"
	setfattr -n user.overlay.opaque -v y "$LO/o3"
	# a merged dir with a whiteout of each format inside
	echo lo-m >"$LO/m/from1"
	touch "$LO/m/.wh.x"
	sfs_snapshot "$LO"
}

check_both_formats_read() {
	local style=$1
	plant_both_formats
	cu_mount "$(style_opt "$style")" "$UP:$LO:$LO2"
	run -0 ls -A "$MNT"
	refute_line a
	refute_line b
	assert_line c
	assert_line keep
	cu_assert_gone "$MNT" a
	cu_assert_gone "$MNT" b
	run -0 ls -A "$MNT/o1"
	assert_output own1
	run -0 ls -A "$MNT/o2"
	assert_output own2
	run -0 ls -A "$MNT/o3"
	assert_output ""
	cu_assert_gone "$MNT/o1" hidden1
	cu_assert_gone "$MNT/o2" hidden2
	cu_assert_gone "$MNT/o3" hidden3
	run -0 ls -A "$MNT/m"
	assert_output $'from1\nfrom2'
	cu_assert_gone "$MNT/m" x
	lower_unchanged
}

@test "both whiteout formats and all opaque markers in a middle branch hide the branch below (mounted wh)" {
	check_both_formats_read wh
}

@test "both whiteout formats and all opaque markers in a middle branch hide the branch below (mounted overlay)" {
	check_both_formats_read overlay
}

@test "both formats planted in the rw branch hide the lower entries" {
	touch "$UP/.wh.f"
	mknod "$UP/emptyd" c 0 0
	mkdir -p "$UP/ld"
	setfattr -n trusted.overlay.opaque -v y "$UP/ld"
	cu_mount
	cu_assert_gone "$MNT" f
	cu_assert_gone "$MNT" emptyd
	run -0 ls -A "$MNT/ld"
	assert_output ""
	lower_unchanged
}

# ".wh." and a name of 252 to 255 bytes do not fit in NAME_MAX: rm of
# such a lower name answered ENAMETOOLONG with whiteout=wh (issue 15). It
# is deleted with the overlay form (both are read everywhere), and stays
# deleted; a rename away from it and a rmdir of such a directory too.
@test "regression: lower names of 252 to 255 bytes are deleted with whiteout=wh, and stay deleted after a remount" {
	local n255 n252 d253
	n255=$(printf 'f%.0s' {1..255})
	n252=$(printf 'g%.0s' {1..252})
	d253=$(printf 'd%.0s' {1..253})
	echo a >"$LO/$n255"
	echo b >"$LO/$n252"
	mkdir "$LO/$d253"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO=ro" "$MNT"
	run -0 rm "$MNT/$n255"
	run -0 mv "$MNT/$n252" "$MNT/short"
	run -0 rmdir "$MNT/$d253"
	[[ ! -e $MNT/$n255 && ! -e $MNT/$n252 && ! -e $MNT/$d253 ]] || fail "a name came back"
	[[ -c $UP/$n255 && -c $UP/$n252 && -c $UP/$d253 ]] || fail "no device whiteouts: $(ls -l "$UP")"
	"$SFS" umount "$MNT"
	sfs_mount "$UP:$LO=ro" "$MNT"
	run -0 ls "$MNT"
	refute_output --partial "$n255"
	refute_output --partial "$n252"
	refute_output --partial "$d253"
	[[ $(cat "$MNT/short") == b ]]
	"$SFS" umount "$MNT"
	run -0 "$SFS" fsck --lower "$LO" "$UP"
	lower_unchanged
}
