# Reading the options out of the help, the man pages and the README, to
# check them against each other (tests/98-docs.bats, tests/00-cli.bats).
# The help is the reference: it prints the tables the commands and the
# daemon accept their options from (common/optlist.c, cli/*.c).

# help_flags CMD [SUB]: the options `stackfs CMD --help` lists for CMD
# (or for its subcommand SUB), one a line: "--json", "-o".
help_flags() {
	"$SFS" "$1" --help | awk -v want="${2:+Options of $1 $2:}" '
		$0 == "Options:" { on = (want == ""); next }
		/^Options of / { on = ($0 == want); next }
		/^$/ { on = 0; next }
		on && /^  -/ { print $1 }' | sort -u
}

# help_cmds: "mount", "umount", ..., "branch list", "branch add"...: each
# command (and subcommand) stackfs --help lists, but help.
help_cmds() {
	local c s
	for c in $("$SFS" --help | sed -n '/^Commands:/,/^$/{/^  [a-z]/s/^  \([a-z][a-z-]*\).*/\1/p}'); do
		[[ $c == help ]] && continue
		if [[ $c == branch ]]; then
			for s in list add remove mode; do
				echo "branch $s"
			done
		else
			echo "$c"
		fi
	done
}

# o_sample NAME=: a value the option takes (overlayfs's and
# fuse-overlayfs's options take only their documented values).
o_sample() {
	case $1 in
	uidmapping= | gidmapping=) echo "${1}0:0:65536" ;;
	metacopy= | index= | nfs_export= | redirect_dir= | verity=) echo "${1}off" ;;
	xino= | uuid=) echo "${1}auto" ;;
	fsync= | writeback= | fast_ino= | threaded= | noxattrs=) echo "${1}1" ;;
	xattr_permissions=) echo "${1}0" ;;
	squash_to_uid= | squash_to_gid=) echo "${1}1000" ;;
	*context=) echo "${1}system_u:object_r:container_file_t:s0" ;;
	*) return 1 ;;
	esac
}

# o_names: on stdin an option list as --help prints it ("    -o NAME=ARG
# help", "    -o a, b, c" wrapped under its first name, "    -h, --help");
# prints each option's name, one a line: "whiteout=", "fsync", "-f".
o_names() {
	awk '
		/^    -/ || (more && /^       [a-z]/) {
			left = $0; sub(/^ +/, "", left); sub(/  .*/, "", left)
			more = (left ~ /,$/); sub(/,$/, "", left)
			n = split(left, part, ", ")
			for (i = 1; i <= n; i++) {
				o = part[i]; sub(/^-o /, "", o)
				if (o ~ /=/) sub(/=.*/, "=", o)
				print o
			}
			next
		}
		{ more = 0 }' | sort -u
}

# man_items FILE FROM TO: the option names of the .TP/.TQ items of the
# roff FILE from the line matching FROM (an awk regex) to the one matching
# TO: each alternative of an item (", "-separated), its first word, cut
# after '=' ("whiteout=", "fsync", "-d", "debug"). Items that do not
# start with an option name are left out.
man_items() {
	awk -v from="$2" -v to="$3" '
		$0 ~ from { on = 1; prev = ""; next }
		on && $0 ~ to { on = 0 }
		on && (prev == ".TP" || prev == ".TQ") && /^\.(B|BR|BI|RB|I|IR) / {
			line = $0
			sub(/^\.[A-Z]+ /, "", line)
			gsub(/\\-/, "-", line)
			gsub(/\\f[A-Z]/, "", line)
			n = split(line, part, /" *, *"/)
			for (i = 1; i <= n; i++) {
				p = part[i]; gsub(/"/, "", p); sub(/^ +/, "", p)
				if (p ~ /^-o +[a-z]/) sub(/^-o +/, "", p)
				split(p, w, " "); o = w[1]
				if (o ~ /=/) sub(/=.*/, "=", o)
				if (o ~ /^(-|[a-z_+]+=?$)/) print o
			}
		}
		{ prev = $0 }' "$1" | sort -u
}

# man_synopsis_flags FILE CMD: the options in the SYNOPSIS blocks of
# stackfs(1) for CMD ("fsck", "branch add"), one a line.
man_synopsis_flags() {
	awk -v cmd="$2" '
		/^\.SY stackfs/ { blk = 1; text = ""; name = ""; next }
		blk && /^\.YS/ { if (name == cmd) print text; blk = 0; next }
		blk && name == "" && /^\.B [a-z]/ { name = $0; sub(/^\.B /, "", name) }
		blk { text = text " " $0 }' "$1" | sed 's/\\-/-/g' |
		grep -oE '(^|[][ |"])--?[a-z][a-z-]*' | sed 's/^[][ |"]//' | sort -u
}

# man_section_flags FILE CMD: the options of the .TP items of the .SS
# section of stackfs(1) whose title starts with CMD.
man_section_flags() {
	man_items "$1" "^\\.SS \"$2( |\"|$)" '^\.S[SH] ' | grep '^-'
}

# readme_flags FILE CMD: the options in the README's usage lines of
# "stackfs CMD ...", one a line.
readme_flags() {
	grep -E "^    stackfs $2( |$)" "$1" | grep -oE '(^|[][ |])--?[a-z][a-z-]*' |
		sed 's/^[][ |]//' | sort -u
}

# readme_o_options FILE: the option names of the README's table of -o
# options (the backquoted words of its first column).
readme_o_options() {
	awk '/^\| option \| meaning \|/ { on = 1; next } on && !/^\|/ { on = 0 }
		on && /^\| `/ { print $2 }' FS='|' "$1" | grep -oE '`[^`]+`' | tr -d '`' |
		tr ',' '\n' | sed -e 's/=.*/=/' | sort -u
}

# same_sets WHAT A B: fails naming what is in one list and not the other.
same_sets() {
	local only_a only_b
	only_a=$(comm -23 <(sort -u <<<"$2") <(sort -u <<<"$3") | tr '\n' ' ')
	only_b=$(comm -13 <(sort -u <<<"$2") <(sort -u <<<"$3") | tr '\n' ' ')
	[[ -z $only_a && -z $only_b ]] ||
		fail "$1: only in the help: [${only_a% }]; only in the other: [${only_b% }]"
}

# The design record: NOTES.md (the map) and docs/*.md (one file a
# subject). The checks below take the root of a tree, so a test can also
# run them on a small broken tree and see them fail.

# md_headings FILE: the text of each markdown heading of FILE, one a
# line, without its leading #'s and without backticks.
md_headings() {
	sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | tr -d '`'
}

# md_anchor TEXT: the anchor a heading gets on a forge's page: lower
# case, nothing but letters, digits, '_', '-' and spaces, spaces as '-'.
md_anchor() {
	tr 'A-Z' 'a-z' <<<"$1" | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# heading_ok FILE REF: whether FILE has the heading REF. A reference
# names a heading by its text, backticks left out; it may leave out what
# the heading adds after the name in parentheses or after a colon:
# "Copy-up" names "Copy-up", "Live branch changes" names "Live branch
# changes (`stackfs branch`, control.c, branch_change.c)", "Trust" names
# "Trust: who may own what in a branch". The case counts.
heading_ok() {
	local h ref=${2//\`/}
	while IFS= read -r h; do
		[[ $h == "$ref" || $h == "$ref ("* || $h == "$ref:"* ]] && return 0
	done < <(md_headings "$1")
	return 1
}

# bad_md_links ROOT: "FILE: LINK: why" for each relative link of
# ROOT/NOTES.md, ROOT/README.md and ROOT/docs/*.md, [text](path) or
# [text](path#anchor), whose file does not exist (the path taken from the
# linking file's folder) or whose anchor is no heading's there. Links
# with a scheme (https:, mailto:) are not followed.
bad_md_links() {
	local root=$1 f link path anchor target h found
	for f in "$root/NOTES.md" "$root/README.md" "$root"/docs/*.md; do
		[[ -f $f ]] || continue
		while IFS= read -r link; do
			[[ $link =~ ^[a-z]+: ]] && continue
			path=${link%%#*}
			anchor=
			[[ $link == *"#"* ]] && anchor=${link#*#}
			if [[ -z $path ]]; then
				target=$f
			else
				target=$(dirname "$f")/$path
			fi
			if [[ ! -e $target ]]; then
				echo "${f#"$root"/}: $link: no such file"
				continue
			fi
			[[ -n $anchor ]] || continue
			found=0
			while IFS= read -r h; do
				[[ $(md_anchor "$h") == "$anchor" ]] && found=1 && break
			done < <(md_headings "$target")
			((found)) || echo "${f#"$root"/}: $link: no such heading"
		done < <(grep -o '\[[^]]*\]([^) ]*)' "$f" | sed 's/^\[[^]]*\](\(.*\))$/\1/')
	done
}

# bad_doc_refs ROOT: "FILE:LINE: REFERENCE: why" for each reference to a
# part of the design record anywhere in the tree under ROOT (sources,
# headers, scripts, tests, the makefile, bench/, the README, the man
# pages and the record itself): NOTES.md or docs/NAME.md (NAME in lower
# case), maybe a comma, then a heading in double quotes, all on one line
# (a reference whose quote does not close on its line cannot be checked,
# and is refused). Its file must exist and have that heading
# (heading_ok). Build trees and .git are not read.
bad_doc_refs() {
	local root=$1 hit loc ref file head
	while IFS= read -r hit; do
		loc=${hit%"${hit#*:*:}"}
		ref=${hit#"$loc"}
		file=${ref%%.md*}.md
		if [[ $ref != *'"'*'"' ]]; then
			echo "$loc $ref: the heading's quote does not close on this line"
			continue
		fi
		head=${ref#*\"}
		head=${head%\"}
		if [[ ! -f $root/$file ]]; then
			echo "$loc $ref: no such file"
		elif ! heading_ok "$root/$file" "$head"; then
			echo "$loc $ref: no such heading in $file"
		fi
	done < <(cd "$root" && grep -rIonE --exclude-dir=.git --exclude-dir='build*' \
		'(NOTES|docs/[a-z0-9-]+)\.md,? "([^"]*"|[^"]*$)' .)
}
