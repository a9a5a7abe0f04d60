#!/usr/bin/env bats
# The layout shows the architecture (issue 14, NOTES.md "Architecture as
# built"): every product source file is named in that table, none is over
# 800 lines, and the libraries and the command never include the daemon's
# headers (what both binaries need lives in a library both link).

load helpers/common

setup() {
	sfs_once_per_suite
	cd "$SFS_REPO"
	SOURCES=$(find common union whiteout xattr stackfs cli -name '*.[ch]' | sort)
	[[ $(wc -w <<<"$SOURCES") -ge 80 ]] || fail "only $(wc -w <<<"$SOURCES") sources found"
}

# The architecture section of NOTES.md.
arch_section() {
	sed -n '/^## Architecture as built/,/^### /p' NOTES.md
}

@test "every source file is in NOTES.md's architecture table" {
	local f table missing=
	table=$(arch_section | grep '^| `')
	[[ -n $table ]] || fail "no architecture table in NOTES.md"
	for f in $SOURCES; do
		# a row names a file by its path, or by its bare name after
		# another file of the same folder ("`stackfs/log.c`, `stats.c`")
		grep -q -e "\`$f\`" -e "^| \`${f%/*}/[^|]*\`${f##*/}\`" <<<"$table" || missing+=" $f"
	done
	[[ -z $missing ]] || fail "not in NOTES.md's architecture table:$missing"
}

@test "no source file is over 800 lines" {
	local f n long=
	for f in $SOURCES; do
		n=$(wc -l <"$f")
		((n <= 800)) || long+=" $f ($n)"
	done
	[[ -z $long ]] || fail "over 800 lines:$long"
}

@test "the libraries and the command include none of the daemon's headers" {
	local bad
	bad=$(grep -n '#include "stackfs/' common union whiteout xattr cli -r --include='*.[ch]' || true)
	[[ -z $bad ]] || fail "$(printf 'the daemon'"'"'s headers outside it:\n%s' "$bad")"
	# and the command's build links no daemon source
	run -0 make -s -n -B build/stackfs BUILD=build
	refute_output --regexp 'stackfs/[a-z_]+\.c'
}
