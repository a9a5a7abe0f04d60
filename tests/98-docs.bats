#!/usr/bin/env bats
# The documentation and what installs it: the man pages stackfs(1) and
# stackfs(8) render without warnings and cover every command and option
# the binaries print in their help; the bash completion loads and
# completes; `make install DESTDIR=...` installs binaries, man pages and
# completion, and `make uninstall` removes them.

load helpers/common

MAN1=$SFS_REPO/cli/man/stackfs.1
MAN8=$SFS_REPO/cli/man/stackfs.8
COMPLETION=$SFS_REPO/cli/completion/stackfs.bash

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

teardown() {
	sfs_cleanup
}

# The commands `stackfs --help` lists, one a line.
help_commands() {
	"$SFS" --help | sed -n '/^Commands:/,/^$/{/^  [a-z]/s/^  \([a-z][a-z-]*\).*/\1/p}'
}

# An option as written in roff source: every '-' as '\-'.
roff_opt() {
	printf '%s' "${1//-/\\-}"
}

# The -o option names of the daemon's usage (stackfs's own and libfuse's):
# "whiteout=", "fsync", "lowerdir="...
daemon_o_options() {
	"$SFSD" --help | sed -n 's/^ *-o \([^ ]*\).*/\1/p' | tr ',' '\n' |
		sed -e 's/=.*/=/' -e 's/[[|].*//' | sort -u
}

# complete LINE: runs the completion function on LINE (the cursor at its
# end) in a fresh bash; prints the candidates, one a line.
complete_line() {
	bash -c '
		source "$1" || exit 1
		COMP_LINE=$2
		COMP_POINT=${#2}
		read -ra COMP_WORDS <<<"$2"
		[[ $2 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_stackfs stackfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"
	' complete_line "$COMPLETION" "$1"
}

@test "stackfs.1 and stackfs.8 render with groff -ww without a warning" {
	sfs_require_cmd groff
	local page err
	for page in "$MAN1" "$MAN8"; do
		err=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page: $err"
		[[ -z $err ]] || fail "groff warns on $page: $err"
	done
}

@test "man -l shows both pages with their sections" {
	sfs_require_cmd man groff
	run -0 --separate-stderr env MANWIDTH=80 man -l "$MAN1"
	[[ -z $stderr ]] || fail "man -l $MAN1 said: $stderr"
	assert_output --partial "STACKFS(1)"
	local s
	for s in NAME SYNOPSIS DESCRIPTION COMMANDS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
		assert_output --partial "$s"
	done
	run -0 --separate-stderr env MANWIDTH=80 man -l "$MAN8"
	[[ -z $stderr ]] || fail "man -l $MAN8 said: $stderr"
	assert_output --partial "STACKFS(8)"
	for s in OPTIONS "OVERLAY-STYLE OPTIONS" "ON-DISK FORMAT" NOTES; do
		assert_output --partial "$s"
	done
}

@test "every command of stackfs --help has a section in stackfs.1, with every option of its --help" {
	local cmds cmd opt missing=
	cmds=$(help_commands)
	[[ $cmds == *mount* && $cmds == *help* ]] || fail "cannot read the commands of stackfs --help: $cmds"
	for cmd in $cmds; do
		grep -qE "^\.SS \"?$cmd( |\"|$)" "$MAN1" || missing+=" command:$cmd"
		[[ $cmd == help ]] && continue
		for opt in $("$SFS" "$cmd" --help | grep -oE '(^|[ [])--?[a-z][a-z-]*' | sed 's/^[ []//' | sort -u); do
			grep -qF -- "$(roff_opt "$opt")" "$MAN1" || missing+=" $cmd:$opt"
		done
	done
	[[ -z $missing ]] || fail "missing from stackfs.1:$missing"
}

@test "stackfs.1 documents the commands of issue 7, exit codes and the environment" {
	local s missing=
	for s in '.SS "branch list' '.SS "branch add' '.SS "branch remove' '.SS "branch mode' \
		'.SS "status' '.SS "diff' '.SS "commit' '.SS "umount' '.SS "fsck' \
		'\-\-version' STACKFS_DAEMON STACKFS_RUNTIME_DIR /run/stackfs .stackfs/; do
		grep -qF -- "$s" "$MAN1" || missing+=" '$s'"
	done
	[[ -z $missing ]] || fail "missing from stackfs.1:$missing"
}

@test "every -o option of the daemon's usage (stackfsd --help) is in stackfs.8" {
	local opts o missing=
	opts=$(daemon_o_options)
	[[ $opts == *whiteout=* && $opts == *lowerdir=* && $opts == *allow_other* ]] ||
		fail "cannot read the -o options of stackfsd --help: $opts"
	for o in $opts; do
		grep -qF -- "$o" "$MAN8" || missing+=" $o"
	done
	[[ -z $missing ]] || fail "missing from stackfs.8:$missing"
	for o in default_permissions fuse.stackfs fstab .wh. .wh..wh..opq trusted.overlay.opaque \
		trusted.stackfs.redirect trusted.overlay.redirect trusted.stackfs.origin workdir; do
		grep -qF -- "$o" "$MAN8" || missing+=" $o"
	done
	[[ -z $missing ]] || fail "missing from stackfs.8:$missing"
}

@test "the completion script loads in bash and registers _stackfs for stackfs" {
	run -0 bash -c 'source "$1" && complete -p stackfs' _ "$COMPLETION"
	assert_output "complete -F _stackfs stackfs"
}

@test "completion: 'stackfs br<TAB>' is branch, 'stackfs <TAB>' lists every command" {
	run -0 complete_line "stackfs br"
	assert_output branch
	run -0 complete_line "stackfs "
	local cmd
	for cmd in $(help_commands) branch status diff commit; do
		assert_line "$cmd"
	done
}

@test "completion: 'stackfs branch <TAB>' lists the subcommands" {
	run -0 complete_line "stackfs branch "
	assert_output $'list\nadd\nremove\nmode'
	run -0 complete_line "stackfs branch re"
	assert_output remove
}

@test "completion: called with COMP_WORDS and COMP_CWORD only" {
	run -0 bash -c '
		source "$1"
		COMP_WORDS=(stackfs branch "")
		COMP_CWORD=2
		_stackfs stackfs "" branch
		echo "${COMPREPLY[*]}"' _ "$COMPLETION"
	assert_output "list add remove mode"
}

@test "completion: options of each command" {
	run -0 complete_line "stackfs fsck --"
	assert_line --repair
	assert_line --json
	assert_line --lower
	run -0 complete_line "stackfs branch add /mnt /d --"
	assert_line --mode
	assert_line --position
	assert_line --top
	assert_line --bottom
	run -0 complete_line "stackfs branch add /mnt /d --mode "
	assert_output $'rw\nro'
	run -0 complete_line "stackfs commit /a --"
	assert_line --into
	assert_line --keep
	run -0 complete_line "stackfs branch mode /mnt /d "
	assert_output $'rw\nro'
}

@test "completion: every -o option of the daemon's usage, and values after whiteout=" {
	local o missing=
	run -0 complete_line "stackfs mount -o "
	for o in $(daemon_o_options); do
		[[ $'\n'$output$'\n' == *$'\n'"$o"$'\n'* ]] || missing+=" $o"
	done
	[[ -z $missing ]] || fail "-o options not completed:$missing"
	run -0 complete_line "stackfs mount -o allow_other,low"
	assert_output "allow_other,lowerdir="
	run -0 complete_line "stackfs mount -o whiteout="
	assert_output $'wh\noverlay'
}

@test "completion: directories for paths, after ':' in BRANCHES and lowerdir=" {
	mkdir -p "$BATS_TEST_TMPDIR/dirs/alpha" "$BATS_TEST_TMPDIR/dirs/beta"
	touch "$BATS_TEST_TMPDIR/dirs/afile"
	local d=$BATS_TEST_TMPDIR/dirs
	run -0 complete_line "stackfs fsck $d/a"
	assert_output "$d/alpha"
	run -0 complete_line "stackfs mount $d/alpha:$d/b"
	assert_output "$d/beta" # readline replaces the text after the ':'
	run -0 complete_line "stackfs mount -o lowerdir=$d/alpha:$d/b"
	assert_output "$d/beta"
	run -0 complete_line "stackfs mount -o upperdir=$d/al"
	assert_output "$d/alpha"
}

@test "completion: MOUNTPOINT arguments offer the live stackfs mounts" {
	sfs_setup_branches
	sfs_mount "$UP:$LO" "$MNT"
	run -0 complete_line "stackfs umount "
	assert_line "$MNT"
	run -0 complete_line "stackfs branch list "
	assert_line "$MNT"
	run -0 complete_line "stackfs status "
	assert_line "$MNT"
	# an image mount (not stackfs) is not offered
	[[ $output != *"$SFS_IMG"$'\n'* && $output != *"$SFS_IMG" ]] || fail "a non-stackfs mount is offered: $output"
}

@test "make install DESTDIR=... installs binaries, man pages and completion; make uninstall removes them" {
	sfs_require_cmd make
	local dest=$BATS_TEST_TMPDIR/i f
	# -o all: install the binaries under test as they are, build nothing
	run -0 make -C "$SFS_REPO" --no-print-directory -o all install DESTDIR="$dest" BUILD="$SFS_BUILD"
	local files=(
		usr/local/bin/stackfs
		usr/local/lib/stackfs/stackfsd
		usr/local/share/man/man1/stackfs.1
		usr/local/share/man/man8/stackfs.8
		usr/local/share/bash-completion/completions/stackfs
	)
	for f in "${files[@]}"; do
		[[ -f $dest/$f ]] || fail "not installed: $f ($(cd "$dest" && find . -type f))"
	done
	[[ -x $dest/usr/local/bin/stackfs && -x $dest/usr/local/lib/stackfs/stackfsd ]] || fail "binaries not executable"
	[[ $(stat -c %a "$dest/usr/local/share/man/man1/stackfs.1") == 644 ]] || fail "man page mode"
	run -0 "$dest/usr/local/bin/stackfs" --version
	assert_output --regexp '^stackfs [0-9]'
	run -0 bash -c 'source "$1" && complete -p stackfs' _ "$dest/usr/local/share/bash-completion/completions/stackfs"
	if command -v man >/dev/null && command -v groff >/dev/null; then
		run -0 env MANWIDTH=80 man -l "$dest/usr/local/share/man/man8/stackfs.8"
		assert_output --partial "STACKFS(8)"
	fi
	# another PREFIX: the man pages name the daemon where it is installed
	run -0 make -C "$SFS_REPO" --no-print-directory -o all install DESTDIR="$dest" BUILD="$SFS_BUILD" PREFIX=/usr
	[[ -x $dest/usr/lib/stackfs/stackfsd ]] || fail "PREFIX=/usr: no daemon in usr/lib/stackfs"
	grep -qF /usr/lib/stackfs/stackfsd "$dest/usr/share/man/man8/stackfs.8" ||
		fail "PREFIX=/usr: stackfs.8 does not name /usr/lib/stackfs/stackfsd"

	run -0 make -C "$SFS_REPO" --no-print-directory uninstall DESTDIR="$dest"
	run -0 make -C "$SFS_REPO" --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr
	run -0 find "$dest" -type f
	assert_output ""
}
