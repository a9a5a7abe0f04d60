#!/usr/bin/env bats
# The documentation and what installs it: the man pages stackfs(1) and
# stackfs(8) render without warnings; they, the README and the bash
# completion list exactly the options the help prints (the tables the
# commands and the daemon accept options from), both ways, and each one
# documented is accepted; `make install DESTDIR=...` installs binaries,
# man pages and completion, and `make uninstall` removes them. The design
# record (NOTES.md, docs/): its links reach their files, every reference
# to one of its headings in the tree names a heading there
# (tests/helpers/docs.bash says how a reference is matched), and its
# files stay short enough to read.

load helpers/common
load helpers/docs

MAN1=$SFS_REPO/cli/man/stackfs.1
MAN8=$SFS_REPO/cli/man/stackfs.8
COMPLETION=$SFS_REPO/cli/completion/stackfs.bash

# nothing here depends on the branches' filesystem
setup() {
	sfs_once_per_suite
}

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

# The -o option names of the daemon's usage (stackfs's own and those
# passed to libfuse): "whiteout=", "fsync", "lowerdir="...
daemon_o_options() {
	"$SFSD" --help | sed -n '/^stackfs options:/,/^other options:/p' | o_names
}

# complete LINE: runs the completion function on LINE (the cursor at its
# end) in a fresh bash; prints the candidates, one a line.
complete_line() {
	bash -c '
		source "$1" || exit 1
		PATH=$3:$PATH
		COMP_LINE=$2
		COMP_POINT=${#2}
		read -ra COMP_WORDS <<<"$2"
		[[ $2 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_stackfs stackfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"
	' complete_line "$COMPLETION" "$1" "$SFS_BUILD"
}

@test "stackfs.1, stackfs.8 and mount.fuse.stackfs.8 render with groff -ww without a warning" {
	sfs_require_cmd groff
	local page err
	for page in "$MAN1" "$MAN8" "$SFS_REPO/cli/man/mount.fuse.stackfs.8"; do
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

@test "every command of stackfs --help has a section in stackfs.1" {
	local cmds cmd missing=
	cmds=$(help_commands)
	[[ $cmds == *mount* && $cmds == *help* ]] || fail "cannot read the commands of stackfs --help: $cmds"
	for cmd in $cmds; do
		grep -qE "^\.SS \"?$cmd( |\"|$)" "$MAN1" || missing+=" command:$cmd"
	done
	[[ -z $missing ]] || fail "missing from stackfs.1:$missing"
}

@test "each command's options: its --help, its stackfs.1 section, its SYNOPSIS and its README line list the same" {
	local c n=0
	while read -r c; do
		# shellcheck disable=SC2086  # "branch add": command and subcommand
		same_sets "$c: stackfs.1 section" "$(help_flags $c)" "$(man_section_flags "$MAN1" "$c")"
		# shellcheck disable=SC2086
		same_sets "$c: stackfs.1 SYNOPSIS" "$(help_flags $c)" "$(man_synopsis_flags "$MAN1" "$c")"
		# shellcheck disable=SC2086
		same_sets "$c: README" "$(help_flags $c)" "$(readme_flags "$SFS_REPO/README.md" "$c")"
		n=$((n + 1))
	done < <(help_cmds)
	((n >= 10)) || fail "only $n commands read from the help"
	# the three that disagreed (issue 17)
	[[ $(help_flags diff) == *--lower* && $(help_flags commit) == *--json* &&
		$(help_flags fsck) == *--lower* ]] || fail "the help lost diff --lower, commit --json or fsck --lower"
}

@test "the -o options: stackfsd --help, stackfs mount --help and stackfs.8 list the same, the README the stackfs ones" {
	local opts
	opts=$(daemon_o_options)
	[[ $opts == *whiteout=* && $opts == *log=* && $opts == *allow_other* && $opts == *lowerdir=* ]] ||
		fail "cannot read the -o options of stackfsd --help: $opts"
	same_sets "stackfs mount --help" "$opts" "$("$SFS" mount --help | o_names)"
	# stackfs.8's option items, -f, -d, -h, -V of the daemon's argv included
	same_sets "stackfs.8 OPTIONS" "$("$SFSD" --help | o_names)" \
		"$(man_items "$MAN8" '^\.SH OPTIONS' '^\.SH ON-DISK')"
	same_sets "README table" \
		"$("$SFSD" --help | sed -n '/^stackfs options:/,/^FUSE and mount options/p' | o_names)" \
		"$(readme_o_options "$SFS_REPO/README.md")"
}

@test "each -o option of the help is accepted by the parser; an unknown one is refused" {
	local o arg n=0 bad=
	while read -r o; do
		case $o in
		-*) continue ;;
		log=) arg=log=/var/log/x.log ;;
		whiteout=) arg=whiteout=overlay ;;
		sync=) arg=sync=always ;;
		subtype=) arg=subtype=stackfs ;;
		lowerdir= | lowerdir+=) arg=${o}/a ;;
		*=) arg=$(o_sample "$o") || arg=${o}1 ;;
		*) arg=$o ;;
		esac
		# --version: parse the command line, then print the version
		"$SFSD" -o "$arg" --version >/dev/null 2>&1 || bad+=" $arg"
		n=$((n + 1))
	done < <("$SFSD" --help | o_names)
	((n >= 30)) || fail "only $n options read from the help"
	[[ -z $bad ]] || fail "refused by the parser:$bad"
	run -2 "$SFSD" -o blkdev --version
	assert_output --partial "unknown option 'blkdev'"
}

@test "each -o option of the help is accepted by a real mount" {
	sfs_setup_branches work
	sfs_record stackfs "$MNT"
	local o arg out bad=
	while read -r o; do
		case $o in
		# foreground: the mount would not return (-d is tested in 10-mount)
		debug | -*) continue ;;
		# SELinux labels: refused by a kernel without SELinux
		*context=) continue ;;
		# the branches: given overlay-style below
		lowerdir= | upperdir= | workdir=) continue ;;
		# keeps the daemon's stderr: tested in 12-log
		log=) arg=log=$BATS_TEST_TMPDIR/daemon.log ;;
		whiteout=) arg=whiteout=overlay ;;
		sync=) arg=sync=normal ;;
		timeout=) arg=timeout=0.5 ;;
		readahead=) arg=readahead=256 ;;
		subtype=) arg=subtype=stackfs ;;
		fsname=) arg=fsname=docs ;;
		max_read=) arg=max_read=131072 ;;
		lowerdir+=) continue ;;
		# the branches from a file: without BRANCHES (96-many-branches)
		branches=) continue ;;
		*=) arg=$(o_sample "$o") || fail "no sample value for $o: add one to this test" ;;
		*) arg=$o ;;
		esac
		if ! out=$("$SFS" mount -o "$arg" "$UP:$LO" "$MNT" 2>&1) || ! sfs_is_mounted "$MNT"; then
			bad+=" $arg ($out)"
			continue
		fi
		"$SFS" umount "$MNT" || fail "umount after -o $arg failed"
	done < <("$SFSD" --help | sed -n '/^stackfs options:/,/^other options:/p' | o_names)
	# an upper of its own: UP has its .stackfs from the mounts above, and
	# a workdir= mount keeps the metadata in the workdir (99-workdir)
	mkdir "$T/oup"
	run -0 "$SFS" mount -o "lowerdir=$LO,upperdir=$T/oup,workdir=$WORK" "$MNT"
	run -0 "$SFS" umount "$MNT"
	[[ -z $bad ]] || fail "refused by a mount:$bad"
}

@test "each command refuses an option its help does not list, abbreviations included" {
	run -2 --separate-stderr "$SFS" status --jso "$BATS_TEST_TMPDIR"
	[[ $stderr == *"unknown option '--jso'"* ]] || fail "$stderr"
	run -8 --separate-stderr "$SFS" fsck -r "$BATS_TEST_TMPDIR"
	[[ $stderr == *"unknown option '-r'"* ]] || fail "$stderr"
	run -2 --separate-stderr "$SFS" branch list --force "$BATS_TEST_TMPDIR"
	[[ $stderr == *"unknown option '--force'"* ]] || fail "$stderr"
	run -2 --separate-stderr "$SFS" commit --json=1 "$BATS_TEST_TMPDIR" --into /x
	[[ $stderr == *"'--json' takes no value"* ]] || fail "$stderr"
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

@test "stackfs.8 names what the daemon always sets and the on-disk format" {
	local o missing=
	for o in default_permissions fuse.stackfs fstab .wh. .wh..wh..opq trusted.overlay.opaque \
		trusted.stackfs.redirect trusted.overlay.redirect trusted.stackfs.origin workdir \
		LOGGING 'journalctl \-t stackfs'; do
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

@test "completion: the options of each command are those of its --help" {
	local c
	while read -r c; do
		run -0 complete_line "stackfs $c -"
		# shellcheck disable=SC2086
		same_sets "completion of stackfs $c" "$(help_flags $c)" "$(grep -v '^--help$' <<<"$output")"
	done < <(help_cmds | grep -v '^branch ')
	run -0 complete_line "stackfs branch add /mnt /d -"
	same_sets "completion of stackfs branch add" "$(help_flags branch add)" "$(grep -v '^--help$' <<<"$output")"
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
	run -0 complete_line "stackfs mount -o "
	same_sets "completion of -o" "$(daemon_o_options | grep -v '^-')" "$output"
	run -0 complete_line "stackfs mount -o allow_other,lowerd"
	assert_output $'allow_other,lowerdir=\nallow_other,lowerdir+='
	run -0 complete_line "stackfs mount -o allow_other,upp"
	assert_output "allow_other,upperdir="
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

@test "make install DESTDIR=... installs binaries, the mount helper, man pages, completion and the demo; make uninstall removes them" {
	sfs_require_cmd make
	local dest=$BATS_TEST_TMPDIR/i f
	# -o programs: install the binaries under test as they are, build nothing
	run -0 make -C "$SFS_REPO" --no-print-directory -o programs install DESTDIR="$dest" BUILD="$SFS_BUILD"
	local files=(
		usr/local/bin/stackfs
		usr/local/lib/stackfs/stackfsd
		usr/local/share/man/man1/stackfs.1
		usr/local/share/man/man8/stackfs.8
		usr/local/share/bash-completion/completions/stackfs
		usr/local/sbin/mount.fuse.stackfs
		usr/local/share/man/man8/mount.fuse.stackfs.8
		usr/local/share/doc/stackfs/examples/demo.sh
	)
	for f in "${files[@]}"; do
		[[ -f $dest/$f ]] || fail "not installed: $f ($(cd "$dest" && find . -type f))"
	done
	[[ -x $dest/usr/local/bin/stackfs && -x $dest/usr/local/lib/stackfs/stackfsd ]] || fail "binaries not executable"
	[[ $(stat -c %a "$dest/usr/local/share/man/man1/stackfs.1") == 644 ]] || fail "man page mode"
	# the mount helper runs this install's command, first in its PATH
	[[ -x $dest/usr/local/sbin/mount.fuse.stackfs ]] || fail "mount helper not executable"
	grep -qx 'PATH=/usr/local/bin:.*' "$dest/usr/local/sbin/mount.fuse.stackfs" ||
		fail "mount helper's PATH: $(grep PATH= "$dest/usr/local/sbin/mount.fuse.stackfs")"
	run -0 "$dest/usr/local/bin/stackfs" --version
	assert_output --regexp '^stackfs [0-9]'
	run -0 bash -c 'source "$1" && complete -p stackfs' _ "$dest/usr/local/share/bash-completion/completions/stackfs"
	if command -v man >/dev/null && command -v groff >/dev/null; then
		run -0 env MANWIDTH=80 man -l "$dest/usr/local/share/man/man8/stackfs.8"
		assert_output --partial "STACKFS(8)"
	fi
	# another PREFIX: the man pages name the daemon where it is installed
	run -0 make -C "$SFS_REPO" --no-print-directory -o programs install DESTDIR="$dest" BUILD="$SFS_BUILD" PREFIX=/usr
	[[ -x $dest/usr/lib/stackfs/stackfsd ]] || fail "PREFIX=/usr: no daemon in usr/lib/stackfs"
	grep -qF /usr/lib/stackfs/stackfsd "$dest/usr/share/man/man8/stackfs.8" ||
		fail "PREFIX=/usr: stackfs.8 does not name /usr/lib/stackfs/stackfsd"

	run -0 make -C "$SFS_REPO" --no-print-directory uninstall DESTDIR="$dest"
	run -0 make -C "$SFS_REPO" --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr
	run -0 find "$dest" -type f
	assert_output ""
}

# The design record (issue 34): NOTES.md is the map, docs/ one file a
# subject. Each check runs on the tree, then on a small tree broken on
# purpose, which it must refuse (so a check that finds nothing is not a
# check that cannot find anything).

# broken_tree DIR: a record with one good and one bad case of each kind
# (the references written with $DOCS, so that this file holds none).
DOCS=docs
broken_tree() {
	mkdir -p "$1/docs" "$1/src"
	printf '# Map\n\n[union](docs/union.md), [gone](docs/gone.md)\n' >"$1/NOTES.md"
	printf '# R\n\n[rules](docs/union.md#copy-up) [none](docs/union.md#no-such)\n' >"$1/README.md"
	printf '# Union\n\n## Copy-up\n\n## Live changes (`x.c`)\n\nBack to [the map](../NOTES.md).\n' >"$1/docs/union.md"
	printf '%s\n' "/* $DOCS/union.md \"Copy-up\", $DOCS/union.md \"Live changes\" */" \
		"/* $DOCS/union.md, \"Lookup rules\" */" "/* $DOCS/gone.md \"Copy-up\" */" \
		"/* see $DOCS/union.md \"Copy-up\" and $DOCS/union.md \"Live" '   changes" */' >"$1/src/a.c"
}

@test "the design record: every relative link of NOTES.md, README.md and docs/ reaches its file and heading" {
	run -0 bad_md_links "$SFS_REPO"
	[[ -z $output ]] || fail "$(printf 'broken links:\n%s' "$output")"
	# the links are there to check
	grep -q '](docs/union.md)' "$SFS_REPO/NOTES.md" || fail "NOTES.md links no docs/ file"
	grep -q '](NOTES.md)' "$SFS_REPO/README.md" || fail "README.md does not link NOTES.md"
	local t=$BATS_TEST_TMPDIR/broken
	broken_tree "$t"
	run -0 bad_md_links "$t"
	assert_line "NOTES.md: docs/gone.md: no such file"
	assert_line "README.md: docs/union.md#no-such: no such heading"
	assert_equal "${#lines[@]}" 2
}

@test "the design record: every reference FILE.md \"Heading\" in the tree names a heading of that file" {
	run -0 bad_doc_refs "$SFS_REPO"
	[[ -z $output ]] || fail "$(printf 'references to no heading:\n%s' "$output")"
	# there are references to check, in the sources and in the record
	run -0 bash -c "cd '$SFS_REPO' && grep -rIlE 'docs/[a-z-]+\.md \"' --exclude-dir=.git --exclude-dir='build*' . | wc -l"
	((output >= 40)) || fail "only $output files refer to docs/: the pattern no longer finds them"
	local t=$BATS_TEST_TMPDIR/broken
	broken_tree "$t"
	run -0 bad_doc_refs "$t"
	assert_line "./src/a.c:2: $DOCS/union.md, \"Lookup rules\": no such heading in $DOCS/union.md"
	assert_line "./src/a.c:3: $DOCS/gone.md \"Copy-up\": no such file"
	assert_line "./src/a.c:4: $DOCS/union.md \"Live: the heading's quote does not close on this line"
	assert_equal "${#lines[@]}" 3
}

@test "the design record: each docs/ file is at most 600 lines, NOTES.md at most 300, each docs/ file links back to NOTES.md" {
	local f n long= orphan=
	n=$(wc -l <"$SFS_REPO/NOTES.md")
	((n <= 300)) || long+=" NOTES.md ($n)"
	local count=0
	for f in "$SFS_REPO"/docs/*.md; do
		count=$((count + 1))
		n=$(wc -l <"$f")
		((n <= 600)) || long+=" docs/${f##*/} ($n)"
		# its first paragraph says what it covers and links the map
		sed -n '3,/^$/p' "$f" | grep -q '](../NOTES.md)' || orphan+=" docs/${f##*/}"
	done
	((count >= 10)) || fail "only $count files in docs/"
	[[ -z $long ]] || fail "too long:$long"
	[[ -z $orphan ]] || fail "no link to NOTES.md in the first paragraph:$orphan"
}
