#!/usr/bin/env bats
# scripts/deps.sh installs what the suite and the scripts run: every
# external command of tests/, scripts/, .ci/run and the makefile comes from
# a package `scripts/deps.sh --test` names (or one of that package's direct
# dependencies, or a package every Debian system has: Priority required),
# and every command of scripts/demo.sh and the build from one the plain
# `scripts/deps.sh` names. A test that uses a new program fails here until
# deps.sh installs it (a fresh machine lacked jq, issue 17).

load helpers/common

# Words found at a command's place that are prose, not commands run.
NOT_COMMANDS=" as size view write who dir "

setup() {
	sfs_once_per_suite
	sfs_require_cmd dpkg dpkg-query
}

# commands FILE...: the words at a command's place in shell source (line
# starts and after | ; & ( ` $( then do else, past run/if/!/exec/timeout
# N), plus the names given to sfs_require_cmd and `command -v`.
commands() {
	sed -E 's/^[[:space:]]*#.*$//' "$@" |
		sed -E 's/(\$\(|\|\||&&|[|;`(]|\bthen\b|\bdo\b|\belse\b)/\n/g' |
		sed -E 's/^[[:space:]]+//
			s/^((run|if|while|until|!|exec|command|time|elif)([[:space:]]+(-[0-9]+|!|--separate-stderr|--keep-empty-lines))*[[:space:]]+)+//
			s/^timeout([[:space:]]+-[a-z][[:space:]]*[0-9]+)*[[:space:]]+[0-9.]+[smh]?[[:space:]]+//' |
		awk '{ print $1 }'
	sed -E 's/^[[:space:]]*#.*$//' "$@" |
		grep -oE '(sfs_require_cmd|command -v)( +[a-z][a-z0-9._+-]*)+' |
		sed -E 's/^(sfs_require_cmd|command -v)//' | tr ' ' '\n'
}

# external FILE...: those of commands that are programs on this system
# (not the shell's keywords and builtins: found as a file in the system
# PATH), sorted. No fork per word: there are hundreds.
external() {
	local c d builtins
	builtins=" $(compgen -b -k | tr '\n' ' ') "
	commands "$@" | grep -E '^[a-z][a-z0-9._+-]*$' | sort -u | while read -r c; do
		[[ $NOT_COMMANDS == *" $c "* || $builtins == *" $c "* ]] && continue
		for d in /usr/sbin /usr/bin /sbin /bin; do
			if [[ -f $d/$c && -x $d/$c ]]; then
				echo "$c"
				break
			fi
		done
	done
}

# packages CMD...: "CMD PACKAGE" for each program CMD that a package
# ships (usr-merged paths and alternatives followed: the first of its
# paths a package owns). One dpkg -S for all: it reads the whole package
# database at each call, and a call per command took most of a minute.
packages() {
	local c p d f line pkg paths=() real=()
	local -A owner=() cands=()
	for c in "$@"; do
		for d in /usr/sbin /usr/bin /sbin /bin; do
			[[ -f $d/$c && -x $d/$c ]] && break
		done
		paths+=("$d/$c")
	done
	mapfile -t real < <(realpath -m "${paths[@]}")
	for ((p = 0; p < $#; p++)); do
		c=${paths[p]##*/}
		cands[$c]="${paths[p]} ${real[p]} /bin/$c /sbin/$c /usr/bin/$c /usr/sbin/$c"
	done
	# shellcheck disable=SC2086  # the paths hold no blanks
	while IFS= read -r line; do
		[[ $line == diversion* ]] && continue
		pkg=${line%%:*}
		f=${line#*: }
		[[ -n ${owner[$f]:-} ]] || owner[$f]=$pkg
	done < <(dpkg -S ${cands[*]} 2>/dev/null)
	for c in "$@"; do
		for f in ${cands[$c]}; do
			if [[ -n ${owner[$f]:-} ]]; then
				echo "$c ${owner[$f]}"
				break
			fi
		done
	done
}

# allowed DEPS_ARGS...: the packages deps.sh with DEPS_ARGS names, their
# direct dependencies, and the Priority required ones, one a line.
allowed() {
	local named
	named=$("$SFS_REPO/scripts/deps.sh" --list "$@") || return 1
	echo "$named"
	# shellcheck disable=SC2086  # one package name a word
	dpkg-query -W -f='${Pre-Depends},${Depends}\n' $named 2>/dev/null | tr ',|' '\n\n' |
		sed -E 's/^ *//; s/[ :].*//'
	dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2 == "required" { print $1 }'
}

# check_provided "DEPS_ARGS" MIN FILE...: fails naming each command of
# FILEs whose package is not in allowed DEPS_ARGS, or when fewer than MIN
# commands were found.
check_provided() {
	local args=$1 min=$2 ok c p bad=() n=0 cmds=()
	local -A owned=()
	shift 2
	# shellcheck disable=SC2086  # the deps.sh arguments
	ok=" $(allowed $args | sort -u | tr '\n' ' ') "
	mapfile -t cmds < <(external "$@")
	while read -r c p; do
		owned[$c]=$p
	done < <(packages "${cmds[@]}")
	for c in "${cmds[@]}"; do
		n=$((n + 1))
		p=${owned[$c]:-}
		[[ -n $p ]] || { bad+=("$c (no package ships it)"); continue; }
		[[ $ok == *" $p "* ]] || bad+=("$c (package $p)")
	done
	((n >= min)) || fail "only $n commands found in $*: the extraction is broken"
	((${#bad[@]} == 0)) || fail "not installed by scripts/deps.sh $args: ${bad[*]}"
}

@test "deps.sh --test installs every program the suite and the scripts run" {
	cd "$SFS_REPO"
	# the extraction sees the commands it must (jq: tests/96-diff.bats)
	run -0 external tests/*.bats tests/helpers/*.bash
	assert_line jq
	assert_line setpriv
	assert_line mkfs.xfs
	# (scripts/clean-room.sh is left out: it runs on the machine that
	# makes the clean room, not in it, and installs its own mmdebstrap)
	check_provided --test 50 tests/*.bats tests/helpers/*.bash tests/run \
		$(ls scripts/*.sh | grep -v '/clean-room\.sh$') .ci/run GNUmakefile
}

@test "deps.sh without --test installs what building and the demo run" {
	cd "$SFS_REPO"
	check_provided "" 5 scripts/demo.sh GNUmakefile
	# and not the suite's own tools
	run -0 "$SFS_REPO/scripts/deps.sh" --list
	refute_line bats
	refute_line valgrind
	refute_line clang
}

@test "deps.sh refuses an unknown argument" {
	run -2 "$SFS_REPO/scripts/deps.sh" --tests
	assert_output --partial "usage"
}
