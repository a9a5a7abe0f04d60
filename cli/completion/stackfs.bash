# bash completion for stackfs(1)                           -*- shell-script -*-
#
# Commands and subcommands, the options of each, directories for paths,
# the mount points of fuse.stackfs mounts for MOUNTPOINT arguments, and
# the names (and some values) of the -o options of a mount. Works with or
# without the bash-completion package.

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

# The -o value being typed, "opt,opt,name=val...": completes the last
# option's name, or its value for whiteout= and the directory options.
_stackfs_mount_opts()
{
	local before= last=$cur val
	if [[ $cur == *,* ]]; then
		before=${cur%,*},
		last=${cur##*,}
	fi
	local -a cands=()
	case $last in
	whiteout=*)
		cands=("${before}whiteout=wh" "${before}whiteout=overlay")
		;;
	sync=*)
		cands=("${before}sync=normal" "${before}sync=always" "${before}sync=volatile")
		;;
	lowerdir=*)
		val=${last#lowerdir=}
		local pre=${before}lowerdir=
		if [[ $val == *:* ]]; then
			pre+=${val%:*}:
			val=${val##*:}
		fi
		mapfile -t cands < <(_stackfs_dirs "$val" "$pre")
		_stackfs_want_filenames
		;;
	upperdir=* | workdir=*)
		val=${last#*=}
		mapfile -t cands < <(_stackfs_dirs "$val" "$before${last%%=*}=")
		_stackfs_want_filenames
		;;
	timeout=* | readahead=*) ;;
	*)
		local o
		for o in whiteout= timeout= readahead= sync= fsync volatile accept_unclean upgrade writeback \
			nopassthrough lowerdir= upperdir= workdir= \
			allow_other allow_root auto_unmount default_permissions debug \
			ro rw dev nodev suid nosuid exec noexec noatime sync dirsync; do
			cands+=("$before$o")
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
	--lower | --into)
		_stackfs_complete_dirs
		return 0
		;;
	--mode)
		_stackfs_reply rw ro
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
		-o | --lower | --into | --mode | --position) i=$((i + 1)) ;;
		--) ;;
		-*) ;;
		*) nargs=$((nargs + 1)) ;;
		esac
	done

	local opts=
	case $cmd${sub:+ $sub} in
	mount) opts="-f -d -o --help" ;;
	umount | unmount) opts="--help" ;;
	fsck) opts="--repair --json --lower --help" ;;
	"branch list") opts="--json --help" ;;
	"branch add") opts="--mode --position --top --bottom --help" ;;
	"branch remove") opts="--id --force --help" ;;
	"branch mode") opts="--id --help" ;;
	status) opts="--json --help" ;;
	diff) opts="--json --help" ;;
	commit) opts="--into --keep --help" ;;
	help) ;;
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
