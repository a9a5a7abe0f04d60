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
