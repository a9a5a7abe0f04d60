#!/usr/bin/env bats
# Decision 2: branch access never leaves a branch. Symlinks planted in the
# branches must never make the daemon read or write outside the branch
# roots. (A symlink the view shows is followed by the kernel, relative to
# the view, like any symlink: that is not the daemon's doing.)

load helpers/common

setup_file() {
	sfs_setup_file 1
	sfs_require_tool sysprobe getdents_small
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches mid bottom outside
	mkdir -p "$OUTSIDE/b/c" "$OUTSIDE/meta"
	echo secret >"$OUTSIDE/secret"
	echo secret2 >"$OUTSIDE/b/secret2"
	echo up >"$UP/uf"
	sfs_snapshot "$OUTSIDE"
	ETC_PROBE=/etc/sfs-escape-$BATS_TEST_NUMBER-$$
}

teardown() {
	sfs_cleanup
	# only a broken daemon makes it; remove what the test caused
	[[ -e $ETC_PROBE ]] && rm -rf "$ETC_PROBE"
	return 0
}

outside_unchanged() {
	sfs_assert_unchanged "$OUTSIDE"
}

@test "a directory symlink in a lower branch is not merged with a directory above it" {
	mkdir -p "$MID/d" "$MID/e"
	touch "$MID/d/m" "$MID/e/m"
	ln -s "$OUTSIDE" "$BOTTOM/d"
	ln -s ../outside "$BOTTOM/e"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	run -0 "$TOOLS/getdents_small" -b 4096 "$MNT/d"
	refute_line secret
	refute_line b
	run -0 "$TOOLS/getdents_small" -b 4096 "$MNT/e"
	refute_line secret
	run -1 "$TOOLS/sysprobe" access "$MNT/d/secret" F
	assert_output ENOENT
	run -1 "$TOOLS/sysprobe" access "$MNT/e/b/secret2" F
	assert_output ENOENT
	outside_unchanged
}

@test "a lower symlink to a directory is shown as a symlink (lstat does not follow)" {
	ln -s "$OUTSIDE" "$LO/abs"
	ln -s ../outside "$LO/rel"
	ln -s /etc/passwd "$LO/pw"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 stat -c '%F %s' "$MNT/abs" "$MNT/rel" "$MNT/pw"
	assert_output "$(printf 'symbolic link %s\nsymbolic link 10\nsymbolic link 11' "${#OUTSIDE}")"
	run -0 readlink "$MNT/rel"
	assert_output ../outside
}

@test "a relative lower symlink resolves in the view, not in the branch" {
	# branch side: $T/lower/rel -> ../target = $T/target
	mkdir -p "$T/target" "$BATS_TEST_TMPDIR/target"
	echo branch-side >"$T/target/which"
	echo view-side >"$BATS_TEST_TMPDIR/target/which"
	ln -s ../target "$LO/rel"
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$MNT/rel/which"
	assert_output view-side
}

@test "parent creation does not follow a symlink in the rw branch to outside (absolute)" {
	mkdir -p "$LO/a/b/c"
	ln -s "$OUTSIDE" "$UP/a"
	# the ro branch is above: the view shows its directory a/
	sfs_mount "$LO=ro:$UP=rw" "$MNT"
	run stat -c %F "$MNT/a"
	assert_output directory
	"$TOOLS/sysprobe" open "$MNT/a/x" wronly,creat || true
	"$TOOLS/sysprobe" open "$MNT/a/b/c/x" wronly,creat || true
	"$TOOLS/sysprobe" mkdir "$MNT/a/b/newdir" || true
	[[ ! -e $OUTSIDE/x && ! -e $OUTSIDE/b/c/x && ! -e $OUTSIDE/b/newdir ]] || fail "created outside the branch: $(cd "$OUTSIDE" && find .)"
	outside_unchanged
}

@test "parent creation does not follow a symlink in the rw branch to outside (relative)" {
	mkdir -p "$LO/a/b/c"
	ln -s ../outside "$UP/a"
	sfs_mount "$LO=ro:$UP=rw" "$MNT"
	"$TOOLS/sysprobe" open "$MNT/a/b/c/x" wronly,creat || true
	"$TOOLS/sysprobe" symlink t "$MNT/a/b/sl" || true
	"$TOOLS/sysprobe" mknod "$MNT/a/b/fifo" fifo 0644 || true
	outside_unchanged
}

@test "parent creation does not follow a symlink deeper in the rw branch" {
	mkdir -p "$LO/a/b/c" "$UP/a"
	ln -s "$OUTSIDE" "$UP/a/b"
	sfs_mount "$LO=ro:$UP=rw" "$MNT"
	"$TOOLS/sysprobe" open "$MNT/a/b/c/x" wronly,creat || true
	"$TOOLS/sysprobe" mkdir "$MNT/a/b/c/d" || true
	[[ ! -e $OUTSIDE/c ]] || fail "created $OUTSIDE/c"
	outside_unchanged
}

@test "parent creation does not follow a symlink in the rw branch to /etc" {
	mkdir -p "$LO/a"
	ln -s /etc "$UP/a"
	sfs_mount "$LO=ro:$UP=rw" "$MNT"
	"$TOOLS/sysprobe" open "$MNT/a/${ETC_PROBE#/etc/}" wronly,creat || true
	"$TOOLS/sysprobe" mkdir "$MNT/a/${ETC_PROBE#/etc/}" || true
	[[ ! -e $ETC_PROBE ]] || fail "the daemon created $ETC_PROBE"
}

@test "rename and link into a directory whose rw name is a symlink stay inside" {
	mkdir -p "$LO/a"
	ln -s "$OUTSIDE" "$UP/a"
	echo mine >"$UP/f"
	echo mine >"$UP/g"
	sfs_mount "$LO=ro:$UP=rw" "$MNT"
	"$TOOLS/sysprobe" rename "$MNT/f" "$MNT/a/f" || true
	"$TOOLS/sysprobe" link "$MNT/g" "$MNT/a/g" || true
	[[ ! -e $OUTSIDE/f && ! -e $OUTSIDE/g ]] || fail "moved or linked outside the branch"
	outside_unchanged
}

@test "chown -h and touch -h on a rw symlink to outside change the link, not the target" {
	sfs_require_root "chown"
	ln -s "$OUTSIDE/secret" "$UP/l"
	sfs_mount "$UP:$LO" "$MNT"
	chown -h 1234:1234 "$MNT/l"
	touch -h -d @1000000000.5 "$MNT/l"
	run -0 stat -c '%u %.9Y' "$UP/l"
	assert_output "1234 1000000000.500000000"
	outside_unchanged
}

@test "a .stackfs planted as a symlink in a rw branch is not followed" {
	ln -s "$OUTSIDE/meta" "$UP/.stackfs"
	sfs_record stackfs "$MNT"
	run "$SFS" mount "$UP:$LO" "$MNT"
	if ((status == 0)); then
		touch "$MNT/newfile" || true
		"$SFS" umount "$MNT" || true
	fi
	outside_unchanged
}

@test "the metadata dir cannot be created, entered or replaced through the view" {
	sfs_mount "$UP:$LO" "$MNT"
	sfs_snapshot "$UP/.stackfs"
	run "$TOOLS/sysprobe" mkdir "$MNT/.stackfs"
	[[ $output != OK ]] || fail "mkdir .stackfs succeeded"
	run "$TOOLS/sysprobe" open "$MNT/.stackfs/x" wronly,creat
	[[ $output != OK ]] || fail "created .stackfs/x"
	run "$TOOLS/sysprobe" rename "$MNT/uf" "$MNT/.stackfs"
	[[ $output != OK ]] || fail "renamed over .stackfs"
	run "$TOOLS/sysprobe" symlink x "$MNT/.stackfs"
	[[ $output != OK ]] || fail "symlink .stackfs created"
	[[ -f $UP/uf ]] || fail "uf moved"
	sfs_assert_unchanged "$UP/.stackfs"
}
