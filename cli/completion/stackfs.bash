# bash completion for stackfs(1)                           -*- shell-script -*-
#
# Commands and subcommands, the options of each, directories for paths,
# the mount points of fuse.stackfs mounts for MOUNTPOINT arguments, and
# the names (and some values) of the -o options of a mount. The options
# are read from the help of the stackfs being completed (`stackfs CMD
# --help`), the list the command itself accepts, so this script cannot
# fall behind it. Works with or without the bash-completion package.

# The mount points of the live stackfs mounts, one a line.
_stackfs_mounts()
{
	local dev mp type rest
	[[ -r /proc/self/mounts ]] || return 0
	while read -r dev mp type rest; do
		# mounts escapes space, tab, newline and backslash in octal
		[[ $type == fuse.stackfs ]] && printf '%b\n' "$mp"
	done </proc/self/mounts
}

# Splits the command line up to the cursor into the array _stackfs_words,
# as the shell would (quotes, backslashes); the last element is the word
# being completed, possibly empty. Unlike COMP_WORDS, '=' and ':' do not
# split words.
_stackfs_split()
{
	local s=$1 w= q= c i n=${#1} inword=0
	_stackfs_words=()
	for ((i = 0; i < n; i++)); do
		c=${s:i:1}
		if [[ -n $q ]]; then
			if [[ $c == "$q" ]]; then
				q=
			elif [[ $c == '\' && $q == '"' ]] && ((i + 1 < n)); then
				i=$((i + 1))
				w+=${s:i:1}
			else
				w+=$c
			fi
		else
			case $c in
			[[:space:]])
				((inword)) && _stackfs_words+=("$w")
				w= inword=0
				continue
				;;
			\\)
				if ((i + 1 < n)); then
					i=$((i + 1))
					w+=${s:i:1}
				fi
				;;
			\' | \") q=$c ;;
			*) w+=$c ;;
			esac
		fi
		inword=1
	done
	_stackfs_words+=("$w")
}

# _stackfs_reply CANDIDATE...: the candidates that start with $cur, into
# COMPREPLY, less the part of $cur that readline does not replace (up to
# its last '=' or ':' when those break words).
_stackfs_reply()
{
	local c trim= head
	head=${cur%[=:]*}
	if [[ $head != "$cur" ]]; then
		trim=${cur:0:$((${#head} + 1))}
		# only when readline breaks words there
		[[ $COMP_WORDBREAKS == *"${cur:${#head}:1}"* ]] || trim=
	fi
	for c in "$@"; do
		[[ $c == "$cur"* ]] && COMPREPLY+=("${c#"$trim"}")
	done
	return 0
}

# Directories starting with $1, each with $2 before it.
_stackfs_dirs()
{
	local d
	while IFS= read -r d; do
		printf '%s%s\n' "$2" "$d"
	done < <(compgen -d -- "$1")
}

_stackfs_want_filenames()
{
	compopt -o filenames 2>/dev/null
	return 0
}

# _stackfs_help_flags PROG CMD [SUB]: the options that `PROG CMD --help`
# lists for CMD (or its subcommand SUB), then --help; one a line.
_stackfs_help_flags()
{
	local line in=0
	while IFS= read -r line; do
		case $line in
		"Options:") [[ -z $3 ]] && in=1 || in=0 ;;
		"Options of $2 $3:") in=1 ;;
		"Options of "* | "") in=0 ;;
		*) ((in)) && [[ $line =~ ^\ \ (-[-a-zA-Z]+) ]] && echo "${BASH_REMATCH[1]}" ;;
		esac
	done < <("$1" "$2" --help 2>/dev/null)
	echo --help
}

# _stackfs_help_mount_opts PROG: the -o options `PROG mount --help`
# lists, one a line as "name", "name=" or "name=a|b" (values to offer).
_stackfs_help_mount_opts()
{
	local line left o more=0
	while IFS= read -r line; do
		# an entry's line, or the next one when it ends in ","
		if [[ $line == "    -o "* ]] || { ((more)) && [[ $line == "       "[a-z]* ]]; }; then
			left=${line#"${line%%[! ]*}"}
			left=${left%%  *}
			[[ $left == *, ]] && more=1 || more=0
			left=${left%,}
			left=${left//, /$'\n'}
			while IFS= read -r o; do
				o=${o#-o }
				[[ -n $o && $o != -* ]] && echo "$o"
			done <<<"$left"
		else
			more=0
		fi
	done < <("$1" mount --help 2>/dev/null)
}

# The -o value being typed, "opt,opt,name=val...": completes the last
# option's name, or its value for the options of a few named values
# (whiteout=wh|overlay) and of a directory (lowerdir=DIR...).
_stackfs_mount_opts()
{
	local before= last=$cur val
	if [[ $cur == *,* ]]; then
		before=${cur%,*},
		last=${cur##*,}
	fi
	local -a cands=() opts=()
	local o name
	mapfile -t opts < <(_stackfs_help_mount_opts "$prog")
	case $last in
	*=*)
		name=${last%%=*}=
		val=${last#*=}
		for o in "${opts[@]}"; do
			[[ $o == "$name"* ]] || continue
			case ${o#"$name"} in
			DIR*)
				local pre=$before$name
				if [[ $name == lowerdir= && $val == *:* ]]; then
					pre+=${val%:*}:
					val=${val##*:}
				fi
				mapfile -t cands < <(_stackfs_dirs "$val" "$pre")
				_stackfs_want_filenames
				;;
			*'|'*)
				# the values named in lower case (not FILE)
				local v vals
				IFS='|' read -ra vals <<<"${o#"$name"}"
				for v in "${vals[@]}"; do
					[[ $v =~ ^[a-z]+$ ]] && cands+=("$before$name$v")
				done
				;;
			esac
		done
		;;
	*)
		for o in "${opts[@]}"; do
			cands+=("$before${o%%=*}${o//[!=]/}")
		done
		;;
	esac
	_stackfs_reply "${cands[@]}"
	# after "name=" the value follows at once
	local r
	for r in "${COMPREPLY[@]}"; do
		[[ $r == *= ]] && compopt -o nospace 2>/dev/null
	done
	return 0
}

_stackfs_complete_dirs()
{
	local -a cands
	mapfile -t cands < <(_stackfs_dirs "$cur" "")
	_stackfs_reply "${cands[@]}"
	_stackfs_want_filenames
}

_stackfs_complete_mounts()
{
	local -a cands
	mapfile -t cands < <(_stackfs_mounts)
	_stackfs_reply "${cands[@]}"
	_stackfs_want_filenames
}

_stackfs()
{
	local line
	if [[ -n ${COMP_LINE-} ]]; then
		line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
	else
		# called without a command line (tests): COMP_WORDS up to COMP_CWORD
		line="${COMP_WORDS[*]:0:$((COMP_CWORD + 1))}"
		[[ -z ${COMP_WORDS[COMP_CWORD]} ]] && line+=" "
	fi
	local -a _stackfs_words
	_stackfs_split "$line"
	local -a words=("${_stackfs_words[@]}")
	local cword=$((${#words[@]} - 1))
	local cur=${words[cword]} prev=
	((cword > 0)) && prev=${words[cword - 1]}
	COMPREPLY=()

	local commands="mount umount unmount fsck branch status diff commit help"
	# the stackfs being completed, whose help lists the options
	local prog=${words[0]}
	[[ $prog == */* ]] || prog=$(type -P -- "$prog") || prog=stackfs
	local i cmd= cmdi=0
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*)
			cmd=${words[i]}
			cmdi=$i
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			_stackfs_reply --help --version
		else
			_stackfs_reply $commands
		fi
		return 0
	fi

	# option arguments
	case $prev in
	-o)
		[[ $cmd == mount ]] && { _stackfs_mount_opts; return 0; }
		;;
	--lower | --into | --workdir)
		_stackfs_complete_dirs
		return 0
		;;
	--mode)
		_stackfs_reply rw ro
		return 0
		;;
	--format)
		_stackfs_reply text json oci
		return 0
		;;
	--position)
		return 0
		;;
	esac

	# the subcommand of branch, and the operands before the cursor
	local sub= subi=$cmdi
	if [[ $cmd == branch ]]; then
		for ((i = cmdi + 1; i < cword; i++)); do
			[[ ${words[i]} == -* ]] && continue
			sub=${words[i]}
			subi=$i
			break
		done
		if [[ -z $sub ]]; then
			if [[ $cur == -* ]]; then
				_stackfs_reply --help
			else
				_stackfs_reply list add remove mode
			fi
			return 0
		fi
	fi
	local nargs=0
	for ((i = subi + 1; i < cword; i++)); do
		case ${words[i]} in
		-o | --lower | --into | --workdir | --mode | --position | --format) i=$((i + 1)) ;;
		--) ;;
		-*) ;;
		*) nargs=$((nargs + 1)) ;;
		esac
	done

	local opts=
	case $cmd in
	help) ;;
	unmount) opts=$(_stackfs_help_flags "$prog" umount) ;;
	mount | umount | fsck | branch | status | diff | commit)
		opts=$(_stackfs_help_flags "$prog" "$cmd" "$sub")
		;;
	esac
	if [[ $cur == -* ]]; then
		_stackfs_reply $opts
		return 0
	fi

	case $cmd${sub:+ $sub} in
	help)
		((nargs == 0)) && _stackfs_reply $commands
		;;
	mount)
		# BRANCHES (a directory after the last ':'), then MOUNTPOINT
		if ((nargs == 0)) && [[ $cur == *:* ]]; then
			local -a cands
			mapfile -t cands < <(_stackfs_dirs "${cur##*:}" "${cur%:*}:")
			_stackfs_reply "${cands[@]}"
			_stackfs_want_filenames
		elif ((nargs < 2)); then
			_stackfs_complete_dirs
		fi
		;;
	umount | unmount | status | "branch list")
		((nargs == 0)) && _stackfs_complete_mounts
		;;
	"branch add" | "branch remove")
		if ((nargs == 0)); then
			_stackfs_complete_mounts
		elif ((nargs == 1)); then
			_stackfs_complete_dirs
		fi
		;;
	"branch mode")
		case $nargs in
		0) _stackfs_complete_mounts ;;
		1) _stackfs_complete_dirs ;;
		2) _stackfs_reply rw ro ;;
		esac
		;;
	fsck | diff | commit)
		((nargs == 0)) && _stackfs_complete_dirs
		;;
	*)
		# stackfs BRANCHES MOUNTPOINT (the mount.fuse3 form)
		_stackfs_complete_dirs
		;;
	esac
	return 0
}
complete -F _stackfs stackfs
