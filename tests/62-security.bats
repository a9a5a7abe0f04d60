#!/usr/bin/env bats
# Security (issue 9), beyond tests/60-security.bats (symlinks planted in
# branches), 84-xattr (the private attributes of files), 86-acl (access
# by ACLs) and 95-branches (branch changes refused to others):
#  - with -o allow_other, nobody can read, write, delete and list only
#    what the modes allow, and a refused operation copies nothing up;
#  - set-ID bits are cleared when nobody writes; a copy-up keeps mode and
#    owner exactly, whoever causes it;
#  - the metadata dir and the union's marks (whiteouts, opaque and
#    redirect records) cannot be read, made or changed through the view;
#  - hard links, bind mounts and redirect records with '..' planted in the
#    branches, and links planted in the staging dir, never make the daemon
#    read or write outside the branches;
#  - the control channel and runtime files: others cannot change or
#    stall them.

load helpers/common
load helpers/passthrough
load helpers/badinput

setup_file() {
	sfs_setup_file 1
	sfs_require_tool sysprobe ptprobe ctlprobe format_fuzz
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	# the control channel does not depend on the branches' filesystem
	[[ $BATS_TEST_DESCRIPTION != "control channel:"* ]] || sfs_once_per_suite
	sfs_require_cmd setpriv setfattr getfattr
	getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
		skip "needs the user nobody and the group nogroup"
	# the probes nobody runs, where nobody can reach them
	TOOLS=$(sfs_tools_for_others sysprobe ptprobe ctlprobe format_fuzz) || return 1
	PTPROBE=$TOOLS/ptprobe CTLPROBE=$TOOLS/ctlprobe
	sfs_setup_branches mid outside
	echo up >"$UP/u"
	echo lo >"$LO/l"
	echo secret >"$OUTSIDE/secret"
	mkdir "$OUTSIDE/sub"
	echo secret2 >"$OUTSIDE/sub/secret2"
	sfs_snapshot "$OUTSIDE"
}

teardown() {
	sfs_cleanup
}

# as_nobody CMD...: CMD as nobody:nogroup (no groups, no capabilities) in
# the view's root (reached through a descriptor: the suite's directories
# are root's own, 0700).
as_nobody() {
	pt_as_nobody_in "$MNT" "$@"
}

# probe_nobody EXPECTED SYSPROBE_ARGS...: sysprobe as nobody in the view
# prints EXPECTED (OK, EACCES, ...).
probe_nobody() {
	local want=$1
	shift
	run as_nobody "$TOOLS/sysprobe" "$@"
	[[ ${lines[0]-} == "$want" ]] || fail "nobody: sysprobe $*: ${output:-no output} (expected $want)"
}

# as_root_in_view CMD...: CMD as root with the view's root as its cwd.
as_root_in_view() {
	(cd "$MNT" && "$@")
}

outside_unchanged() {
	sfs_assert_unchanged "$OUTSIDE"
}

# ================================================================ access by mode

@test "nobody: a root 0600 file is EACCES to read; a 0644 one reads but is EACCES to write; nothing is copied up" {
	echo lo600 >"$LO/l600"
	echo lo644 >"$LO/l644"
	echo up600 >"$UP/u600"
	echo up644 >"$UP/u644"
	chmod 600 "$LO/l600" "$UP/u600"
	chmod 644 "$LO/l644" "$UP/u644"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	sfs_snapshot "$UP"
	sfs_snapshot "$LO"
	probe_nobody EACCES open l600 rdonly
	probe_nobody EACCES open u600 rdonly
	run -0 as_nobody cat l644 u644
	assert_output $'lo644\nup644'
	local f
	for f in l644 u644 l600; do
		probe_nobody EACCES open "$f" wronly,append
		probe_nobody EACCES open "$f" wronly,trunc
		probe_nobody EACCES truncate "$f" 0
	done
	sfs_assert_unchanged "$UP"
	sfs_assert_unchanged "$LO"
}

@test "nobody: a root 0755 directory refuses create, mkdir, symlink, mknod, link, unlink and rename (EACCES); nothing is copied up" {
	mkdir "$LO/d" "$UP/ud"
	echo f >"$LO/d/f"
	echo f >"$UP/ud/f"
	chmod 755 "$LO/d" "$UP/ud"
	chmod 666 "$LO/d/f" "$UP/ud/f"
	mkdir -m 777 "$UP/pub"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	sfs_snapshot "$UP"
	sfs_snapshot "$LO"
	local d
	for d in d ud; do
		probe_nobody EACCES open "$d/new" wronly,creat
		probe_nobody EACCES mkdir "$d/nd"
		probe_nobody EACCES symlink x "$d/sl"
		probe_nobody EACCES mknod "$d/p" fifo 0644
		probe_nobody EACCES link "$d/f" "$d/h"
		probe_nobody EACCES unlink "$d/f"
		probe_nobody EACCES rename "$d/f" "$d/g"
		probe_nobody EACCES rename "$d/f" pub/g
		# writing the 0666 file inside is allowed (a copy-up for d/f)
	done
	sfs_assert_unchanged "$UP"
	sfs_assert_unchanged "$LO"
	run -0 as_nobody sh -c 'echo w >>d/f'
	[[ -f $UP/d/f ]] || fail "the allowed write was not copied up"
	[[ $(stat -c '%a %U' "$UP/d" "$UP/d/f") == $'755 root\n666 root' ]] ||
		fail "copies: $(stat -c '%n %a %U' "$UP/d" "$UP/d/f")"
}

@test "nobody: in a 0777 lower directory a new file is nobody's, in UP; the directory's copy stays root's 0777" {
	mkdir -m 777 "$LO/pub"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	run -0 as_nobody sh -c 'umask 022; echo mine >pub/new; mkdir pub/nd'
	run -0 stat -c '%U:%G %a' "$UP/pub/new" "$UP/pub/nd" "$UP/pub" "$MNT/pub/new"
	assert_output $'nobody:nogroup 644\nnobody:nogroup 755\nroot:root 777\nnobody:nogroup 644'
	run -0 as_nobody cat pub/new
	assert_output mine
}

@test "nobody: a 0700 root directory cannot be listed or entered; a 0711 one is entered by name, not listed" {
	mkdir -m 700 "$LO/closed"
	mkdir -m 711 "$LO/blind"
	echo x >"$LO/closed/f"
	echo y >"$LO/blind/known"
	chmod 644 "$LO/closed/f" "$LO/blind/known"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	probe_nobody EACCES opendir closed
	probe_nobody EACCES access closed/f F
	probe_nobody EACCES opendir blind
	run -0 as_nobody cat blind/known
	assert_output y
}

@test "nobody: root's file in a sticky 1777 lower directory cannot be removed or renamed (EPERM); no whiteout is written" {
	mkdir -m 1777 "$LO/tmp"
	echo root >"$LO/tmp/rootf"
	chmod 666 "$LO/tmp/rootf"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	sfs_snapshot "$UP"
	probe_nobody EPERM unlink tmp/rootf
	probe_nobody EPERM rename tmp/rootf tmp/moved
	sfs_assert_unchanged "$UP"
	run -0 cat "$MNT/tmp/rootf"
	assert_output root
}

@test "with allow_root (root's mount lets others in by default) nobody cannot even enter the mount" {
	chmod 777 "$UP"
	sfs_mount "$UP:$LO" "$MNT" allow_root
	run as_nobody true
	assert_failure
	run -0 as_root_in_view true
}

# ================================================================ set-ID bits and copy-up

@test "set-ID bits are cleared when nobody writes a root file it may write (04777, 02777, 06777; lower and rw)" {
	local f
	for f in su sg sug; do
		echo lower >"$LO/$f"
		echo upper >"$UP/u$f"
	done
	chmod 4777 "$LO/su" "$UP/usu"
	chmod 2777 "$LO/sg" "$UP/usg"
	chmod 6777 "$LO/sug" "$UP/usug"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	for f in su sg sug usu usg usug; do
		run -0 as_nobody sh -c "echo w >>$f"
		run -0 stat -c %a "$MNT/$f" "$UP/$f"
		assert_output $'777\n777'
	done
	sfs_assert_unchanged "$LO"
}

@test "an O_TRUNC open by nobody clears set-ID bits as on the branch's own filesystem (lower and rw files)" {
	echo lower >"$LO/l"
	echo upper >"$UP/u"
	mkdir -m 777 "$T/plain"
	echo ref >"$T/plain/ref"
	chmod 6777 "$LO/l" "$UP/u" "$T/plain/ref"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	# the reference: the same open on the branch filesystem itself
	run -0 pt_as_nobody_in "$T/plain" sh -c ': >ref'
	local want
	want=$(stat -c %a "$T/plain/ref")
	[[ $want == 777 ]] || echo "# the branch filesystem keeps $want" >&3
	local f
	for f in u l; do
		run -0 as_nobody sh -c ": >$f"
		run -0 stat -c '%a %s' "$MNT/$f" "$UP/$f"
		assert_output "$want 0"$'\n'"$want 0"
	done
}

@test "copy-up keeps mode and owner exactly when root writes: 0640 1234:1234, 0600, 04750, a 0700 directory" {
	echo a >"$LO/f640"
	echo b >"$LO/f600"
	echo c >"$LO/f4750"
	mkdir "$LO/d700"
	chown 1234:1234 "$LO/f640" "$LO/f600" "$LO/f4750" "$LO/d700"
	chmod 640 "$LO/f640"
	chmod 600 "$LO/f600"
	chmod 4750 "$LO/f4750"
	chmod 700 "$LO/d700"
	sfs_snapshot "$LO"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	echo more >>"$MNT/f640"
	echo more >>"$MNT/f600"
	echo more >>"$MNT/f4750"
	touch "$MNT/d700/new"
	run -0 stat -c '%n %a %u:%g' "$UP/f640" "$UP/f600" "$UP/f4750" "$UP/d700"
	assert_output "$(printf '%s\n' "$UP/f640 640 1234:1234" "$UP/f600 600 1234:1234" \
		"$UP/f4750 4750 1234:1234" "$UP/d700 700 1234:1234")"
	probe_nobody EACCES open f600 rdonly
	probe_nobody EACCES open d700/new rdonly
	sfs_assert_unchanged "$LO"
}

@test "a copy-up caused by nobody keeps the file's owner (not nobody) and mode; the staging area is root's 0700" {
	mkdir -m 777 "$LO/shared"
	chown 1234:1234 "$LO/shared"
	echo theirs >"$LO/shared/f"
	chown 1234:1234 "$LO/shared/f"
	chmod 666 "$LO/shared/f"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	run -0 as_nobody sh -c 'echo mine >>shared/f'
	run -0 stat -c '%a %u:%g' "$UP/shared/f" "$UP/shared"
	assert_output $'666 1234:1234\n777 1234:1234'
	run -0 stat -c '%a %U' "$UP/.stackfs" "$UP/.stackfs/work"
	assert_output $'700 root\n700 root'
}

# ================================================================ the union's own names and marks

@test "the metadata dir is invisible and unreachable through the view, to root and to nobody, from every branch" {
	"$TOOLS/format_fuzz" mkmeta "$LO" >/dev/null   # a former rw branch, now below
	chmod 1777 "$UP"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	local who
	for who in root nobody; do
		local p=(as_root_in_view "$TOOLS/sysprobe")
		[[ $who == nobody ]] && p=(as_nobody "$TOOLS/sysprobe")
		run "${p[@]}" access .stackfs F
		[[ $output == ENOENT ]] || fail "$who: access .stackfs: $output"
		run "${p[@]}" opendir .stackfs
		[[ $output == ENOENT ]] || fail "$who: opendir .stackfs: $output"
		run "${p[@]}" open .stackfs/header rdonly
		[[ $output == ENOENT ]] || fail "$who: open .stackfs/header: $output"
		run "${p[@]}" open .stackfs wronly,creat
		[[ $output == EPERM || $output == EACCES ]] || fail "$who: create .stackfs: $output"
		run "${p[@]}" mkdir .stackfs
		[[ $output == EPERM || $output == EACCES ]] || fail "$who: mkdir .stackfs: $output"
	done
	run -0 as_nobody ls -a
	refute_line .stackfs
	run -0 ls -a "$MNT"
	refute_line .stackfs
	[[ ! -e $UP/.stackfs/x ]]
}

@test "nobody cannot make whiteouts or opaque and redirect records to hide others' files" {
	mkdir -m 1777 "$LO/tmp"
	echo root >"$LO/tmp/rootf"
	mkdir "$LO/tmp/rootd"
	echo in >"$LO/tmp/rootd/x"
	sfs_mount "$UP:$LO" "$MNT" allow_other
	probe_nobody EPERM open tmp/.wh.rootf wronly,creat
	probe_nobody EPERM mknod tmp/.wh.rootd reg 0644
	probe_nobody EPERM mkdir tmp/.wh..wh..opq
	run -0 as_nobody mkdir tmp/mine
	local n
	# a kernel overlayfs name is stored escaped: never a mark of the union
	for n in user.overlay.opaque user.overlay.redirect; do
		run as_nobody "$PTPROBE" setxattr tmp/mine "$n" /tmp/rootd
		[[ $output == OK* || $output == ENOTSUP || $output == EOPNOTSUPP ]] ||
			fail "nobody: setxattr $n on its own directory: $output"
		run getfattr -h -n "$n" "$UP/tmp/mine"
		((status != 0)) || fail "nobody set $n on its directory in the branch"
	done
	run -0 as_nobody ls tmp/mine
	assert_output ""
	run -0 cat "$MNT/tmp/rootf" "$MNT/tmp/rootd/x"
	[[ -z $(find "$UP" -name '.wh.*' -o -name '.wh..wh..opq') ]] || fail "a whiteout was made: $(find "$UP" -name '.wh.*')"
}

@test "a merged directory's opaque and redirect records cannot be read or set through the view, even by root" {
	mkdir -p "$LO/m" "$LO/r"
	echo keep >"$LO/m/lower-file"
	echo r >"$LO/r/x"
	sfs_mount "$UP:$LO" "$MNT"
	mv "$MNT/r" "$MNT/r2"                 # a redirect record on UP/r2
	touch "$MNT/m/upper-file"             # UP/m exists
	local n
	for n in trusted.overlay.opaque trusted.stackfs.opaque trusted.overlay.redirect trusted.stackfs.redirect \
		user.overlay.opaque user.overlay.redirect; do
		run "$PTPROBE" setxattr "$MNT/m" "$n" y
		# the union's own names are refused; kernel overlayfs ones are
		# stored escaped (a nested overlay's marks), never as marks
		if [[ $n == *.stackfs.* ]]; then
			[[ $output == EPERM ]] || fail "setxattr $n on a merged directory: $output"
		else
			[[ $output == OK* ]] || fail "setxattr $n on a merged directory: $output"
			run getfattr -h -n "$n" "$UP/m"
			((status != 0)) || fail "$n set on the branch's directory"
		fi
		run "$PTPROBE" getxattr "$MNT/r2" "$n" 4096
		[[ $output == ENODATA ]] || fail "getxattr $n on a redirected directory: $output"
	done
	run -0 getfattr -d -m - "$MNT/r2"
	refute_output --partial overlay
	refute_output --partial stackfs
	# what was set on m shows as set, and m is still merged
	run -0 getfattr -h --absolute-names -n trusted.overlay.opaque --only-values "$MNT/m"
	assert_output y
	run -0 ls "$MNT/m"
	assert_output $'lower-file\nupper-file'
	run -0 cat "$MNT/r2/x"
}

# ================================================================ planted in the branches

@test "a hard link planted in a lower branch to a file outside: read through the view, a write copies up into UP only" {
	ln "$OUTSIDE/secret" "$LO/hl"
	ln "$OUTSIDE/sub/secret2" "$LO/hl2"
	sfs_snapshot "$OUTSIDE"   # again: the links changed the counts and ctimes
	sfs_mount "$UP:$LO" "$MNT"
	run -0 cat "$MNT/hl"
	assert_output secret
	echo more >>"$MNT/hl"
	chmod 600 "$MNT/hl2"
	rm "$MNT/hl"
	echo new >"$MNT/hl"
	run -0 cat "$MNT/hl"
	assert_output new
	[[ $(stat -c %i "$LO/hl") == $(stat -c %i "$OUTSIDE/secret") ]] || fail "the lower link was replaced"
	outside_unchanged
}

@test "a bind mount of /etc planted in a lower branch is not followed: never /etc's content" {
	mkdir "$LO/etc"
	: >"$LO/hn"
	sfs_record mount "$LO/etc"
	mount --bind /etc "$LO/etc"
	sfs_record mount "$LO/hn"
	mount --bind /etc/passwd "$LO/hn"
	sfs_mount "$UP:$LO" "$MNT"
	run ls "$MNT/etc"
	refute_output --partial passwd
	run cat "$MNT/etc/passwd"
	assert_failure
	refute_output --partial root:
	run cat "$MNT/hn"
	refute_output --partial root:
	run "$TOOLS/sysprobe" open "$MNT/etc/sfs-probe-$$" wronly,creat
	refute_output OK
	[[ ! -e /etc/sfs-probe-$$ ]] || { rm -f "/etc/sfs-probe-$$"; fail "created in /etc"; }
	run "$TOOLS/sysprobe" access "$MNT/etc/passwd" F
	[[ $output != OK && $output != EIO ]] || fail "lookup under the bind mount: $output"
	# the rest of the view is served
	run -0 cat "$MNT/l"
}

@test "a bind mount of a directory outside planted in the rw branch: creates through the view do not land outside" {
	mkdir "$UP/od" "$LO/od"
	echo lo >"$LO/od/lf"
	sfs_record mount "$UP/od"
	mount --bind "$OUTSIDE" "$UP/od"
	sfs_mount "$UP:$LO" "$MNT"
	"$TOOLS/sysprobe" open "$MNT/od/new" wronly,creat || true
	"$TOOLS/sysprobe" mkdir "$MNT/od/nd" || true
	"$TOOLS/sysprobe" rename "$MNT/od/lf" "$MNT/od/lf2" || true
	echo x >>"$MNT/od/secret" 2>/dev/null || true
	outside_unchanged
}

@test "redirect records with '..' planted in the branches never lead outside the branches" {
	local v i=0
	sfs_setup_branches mid outside bottom
	echo secret >"$OUTSIDE/secret"
	sfs_snapshot "$OUTSIDE"
	mkdir "$BOTTOM/b"
	echo b >"$BOTTOM/b/bf"
	for v in "/../outside" "../outside" ".." "/.." "/b/../../outside" "/./../outside" "/b/.." "../../outside/sub"; do
		mkdir "$UP/d$i" "$MID/m$i"
		setfattr -n trusted.stackfs.redirect -v "$v" "$UP/d$i"
		setfattr -n trusted.overlay.redirect -v "$v" "$MID/m$i"
		i=$((i + 1))
	done
	mkdir "$UP/u0"
	setfattr -n user.overlay.redirect -v "../outside" "$UP/u0"
	sfs_mount "$UP:$MID:$BOTTOM" "$MNT"
	for d in "$MNT"/d* "$MNT"/m* "$MNT/u0"; do
		run ls -A "$d"
		refute_output --partial secret
		run cat "$d/secret"
		assert_failure
		refute_output secret
	done
	run -0 cat "$MNT/b/bf"
	outside_unchanged
}

# A user who may write a branch sets user.overlay.redirect (no privilege
# needed) on a directory of hers, pointing at a lower directory whose
# path root's 0700 parent closes to her: root's view follows it only when
# mounted with userxattr (the branches' user.overlay.* marks are meant).
@test "a user.overlay.redirect in a branch is not followed by root's mount unless it has userxattr" {
	sfs_setup_branches mid
	mkdir -p "$MID/closed/inner" "$MID/hers"
	chmod 0700 "$MID/closed"
	chmod 0755 "$MID/closed/inner"
	echo private >"$MID/closed/inner/p"
	chmod 0644 "$MID/closed/inner/p"
	mkdir "$UP/hers"
	chown nobody:nogroup "$UP/hers" "$MID/hers"
	# what she may set on her own directory (set here by root: the suite's
	# directories are closed to her)
	setfattr -n user.overlay.redirect -v /closed/inner "$UP/hers"
	sfs_mount "$UP:$MID" "$MNT"
	run ls -A "$MNT/hers"
	refute_output --partial p
	run -1 as_nobody cat hers/p
	"$SFS" umount "$MNT"
	# told that user.overlay.* marks are meant: followed, as before
	sfs_mount "$UP:$MID" "$MNT" userxattr
	run -0 ls -A "$MNT/hers"
	assert_output p
}

@test "staging leftovers planted in .stackfs/work (symlinks, a hard link, a tree) are removed without touching their targets" {
	"$TOOLS/format_fuzz" mkmeta "$UP" "$LO" >/dev/null
	local w=$UP/.stackfs/work
	ln -s "$OUTSIDE" "$w/dirlink"
	ln -s "$OUTSIDE/secret" "$w/filelink"
	ln "$OUTSIDE/secret" "$w/hardlink"
	mkdir -p "$w/tree/deep"
	ln -s ../../../../../outside "$w/tree/deep/rel"
	ln -s "$OUTSIDE/sub" "$w/tree/abs"
	local before
	before=$(outside_names)
	sfs_mount "$UP:$LO" "$MNT"
	run -0 ls -A "$w"
	assert_output ""
	# the hard link's removal changed the link count back (and the
	# ctime); nothing else
	run -0 stat -c %h "$OUTSIDE/secret"
	assert_output 1
	[[ $(outside_names) == "$before" ]] || fail "outside changed: $(diff <(echo "$before") <(outside_names))"
}

# names, types, modes, sizes and contents under $OUTSIDE (no times).
outside_names() {
	(cd "$OUTSIDE" && find . -printf '%p %y %m %s\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort)
}

# ================================================================ control channel and runtime files

@test "control channel: nobody may list and ask for status, every change is EPERM (raw requests)" {
	ctl_mount
	local nb=(setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTLPROBE" "$SOCK")
	run -0 "${nb[@]}" words list
	assert_line --index 1 --partial "reply OK"
	run -0 "${nb[@]}" words status
	assert_line --index 1 --partial "reply OK"
	mkdir -m 755 "$T/nb"
	run -0 "${nb[@]}" words add "$T/nb" ro bottom
	assert_line --index 1 --partial "reply ERR EPERM"
	run -0 "${nb[@]}" words remove "$LO" 1
	assert_line --index 1 --partial "reply ERR EPERM"
	run -0 "${nb[@]}" words mode "$LO" rw
	assert_line --index 1 --partial "reply ERR EPERM"
	run -0 "${nb[@]}" words mode "$UP" ro
	assert_line --index 1 --partial "reply ERR EPERM"
	ctl_still_serving
}

@test "control channel: a slow unprivileged client cannot stall root's branch commands" {
	ctl_mount
	# nobody trickles a request, one byte every 2 s, for about 30 s: no
	# single read waits long, only the server's deadline for the whole
	# request (2 s, common/control.h) cuts it off
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$CTLPROBE" --trickle 2000 --timeout 60 "$SOCK" fill 15 65 >"$BATS_TEST_TMPDIR/slow.out" 2>&1 &
	local slow=$!
	sleep 1
	local t0=$SECONDS
	run timeout 10 "$SFS" branch list "$MNT"
	local took=$((SECONDS - t0))
	kill "$slow" 2>/dev/null || true # it may have given up already
	wait "$slow" 2>/dev/null || true
	((status == 0)) || fail "root's branch list did not answer within 10 s while nobody trickled a request (exit $status, ${took}s)"
	ctl_still_serving
}

# slow_clients SECONDS N: N unprivileged clients at a time, each sending
# half a request and holding the connection (the server waits its 2 s
# deadline for the rest), relaunched as they end, for SECONDS; their
# replies go to $BATS_TEST_TMPDIR/slow.*.out. Sets SLOW (the pids).
slow_clients() {
	local secs=$1 n=$2 k
	SLOW=()
	for ((k = 0; k < n; k++)); do
		(
			end=$((SECONDS + secs))
			# a refused client comes back a moment later: the slots stay
			# taken without forks in a tight loop eating the CPU whose
			# share root's own client is measured with
			while ((SECONDS < end)); do
				setpriv --reuid=nobody --regid=nogroup --clear-groups \
					"$CTLPROBE" --hold 5 --timeout 8 "$SOCK" raw 'sta' || true
				sleep 0.2
			done
		) >"$BATS_TEST_TMPDIR/slow.$k.out" 2>&1 &
		SLOW+=($!)
	done
}

@test "control channel: many slow unprivileged clients do not delay root's status (served at once)" {
	ctl_mount
	# what a status costs here without them (an ASan build is slower)
	local k t0 ms worst=0 base
	t0=$(date +%s%N)
	run -0 timeout 20 "$SFS" status "$MNT"
	base=$((($(date +%s%N) - t0) / 1000000))
	slow_clients 8 12
	sleep 1.5
	for ((k = 0; k < 6; k++)); do
		t0=$(date +%s%N)
		run -0 timeout 20 "$SFS" status "$MNT"
		ms=$((($(date +%s%N) - t0) / 1000000))
		((ms > worst)) && worst=$ms
		sleep 0.3
	done
	# and a change (refused by the daemon, so nothing on disk moves)
	t0=$(date +%s%N)
	run -1 timeout 20 "$SFS" branch add "$MNT" "$T/missing"
	assert_output --partial "missing"
	ms=$((($(date +%s%N) - t0) / 1000000))
	((ms > worst)) && worst=$ms
	wait "${SLOW[@]}" 2>/dev/null || true
	# queued behind nobody's connections, root would wait out their 2 s
	# deadlines one after the other
	((worst < base + 1500)) ||
		fail "root's status took up to ${worst} ms (${base} ms alone) while nobody held connections"
	# the slow clients were really being served: their deadline passed
	# (ETIMEDOUT), and past the unprivileged slots some were told EAGAIN
	grep -q 'reply ERR ETIMEDOUT' "$BATS_TEST_TMPDIR"/slow.*.out || fail "no slow client was served: $(cat "$BATS_TEST_TMPDIR"/slow.0.out)"
	grep -q 'reply ERR EAGAIN' "$BATS_TEST_TMPDIR"/slow.*.out || fail "no slow client was refused past the unprivileged slots"
	ctl_still_serving
}

@test "control channel: one unprivileged user holds at most 4 connections; another user is still served" {
	ctl_mount
	local k
	# nobody holds 4 connections with half a request each (the server
	# waits its 2 s deadline for the rest)
	for ((k = 0; k < 4; k++)); do
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			"$CTLPROBE" --hold 4 --timeout 8 "$SOCK" raw 'sta' >"$BATS_TEST_TMPDIR/held.$k.out" 2>&1 &
	done
	sleep 0.5
	# a fifth of nobody's is refused at once
	run setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTLPROBE" --timeout 5 "$SOCK" words status
	assert_line --index 1 --partial "reply ERR EAGAIN"
	# another unprivileged user is served
	run -0 setpriv --reuid=daemon --regid=daemon --clear-groups "$CTLPROBE" --timeout 5 "$SOCK" words status
	assert_line --index 1 --partial "reply OK"
	wait
	# the held ones were served, up to the server's deadline
	grep -q 'reply ERR ETIMEDOUT' "$BATS_TEST_TMPDIR"/held.0.out || fail "the held connection was not served: $(cat "$BATS_TEST_TMPDIR"/held.0.out)"
	# and once they are gone, nobody is served again
	run -0 setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTLPROBE" --timeout 5 "$SOCK" words status
	assert_line --index 1 --partial "reply OK"
	ctl_still_serving
}

@test "control channel: unmount while connections are being served ends every thread at once" {
	ctl_mount
	slow_clients 3 30
	sleep 1
	local t0=$SECONDS took
	run -0 timeout 20 "$SFS" umount "$MNT"
	took=$((SECONDS - t0))
	wait "${SLOW[@]}" 2>/dev/null || true
	((took <= 2)) || fail "unmount took $took s"
	sfs_alive "$DPID" && fail "the daemon ($DPID) is still running"
	[[ ! -e $SOCK ]] || fail "the control socket is left behind"
}

@test "runtime files: root's, and nothing but the socket is writable by others" {
	ctl_mount
	local dir=${SOCK%/*} f bad=
	for f in "$SFS_RUNTIME" "$dir" "$dir"/*; do
		[[ $f == "$SOCK" ]] && continue
		[[ $(stat -c %A "$f") == ?????w???? || $(stat -c %A "$f") == ????????w? ]] &&
			bad+=" $f($(stat -c %A "$f"))"
		[[ $(stat -c %u "$f") == 0 ]] || bad+=" $f(owner $(stat -c %U "$f"))"
	done
	[[ -z $bad ]] || fail "writable by others or not root's:$bad"
}
