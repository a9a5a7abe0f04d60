#!/usr/bin/env bats
# The layout shows the architecture (issue 14,
# NOTES.md "Architecture as built"): every product source file is named in
# that table, none is over 800 lines, the libraries and the command never include the daemon's
# headers (what both binaries need lives in a library both link), and the
# daemon's parts (its folders) call only the parts the table lists before
# them.

load helpers/common

setup() {
	sfs_once_per_suite
	cd "$SFS_REPO"
	SOURCES=$(find common union whiteout xattr stackfs cli -name '*.[ch]' | sort)
	[[ $(wc -w <<<"$SOURCES") -ge 80 ]] || fail "only $(wc -w <<<"$SOURCES") sources found"
}

# The architecture section of NOTES.md: from its heading to the next
# heading of level 2 or 3.
arch_section() {
	sed -n '/^## Architecture as built/,/^###\? /p' NOTES.md
}

@test "every source file is in NOTES.md's architecture table" {
	local f table missing=
	table=$(arch_section | grep '^| `')
	[[ -n $table ]] || fail "no architecture table in NOTES.md"
	for f in $SOURCES; do
		# a row names a file by its path, or by its bare name after
		# another file of the same folder ("`stackfs/base/log.c`, `stats.c`")
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
	refute_output --regexp 'stackfs/([a-z_]+/)?[a-z_]+\.c'
}

# The daemon's parts, lowest first: its folders in the order the
# architecture table first names them.
daemon_parts() {
	arch_section | grep -o '^| `stackfs/[a-z_]*/' | sed 's#^| `stackfs/##; s#/$##' | awk '!seen[$0]++'
}

# calls_up OBJDIR PART...: "FILE -> FILE: SYMBOL" for each symbol an
# object of a part takes from an object of a part listed after it (a
# file directly in stackfs/ is above every part).
calls_up() {
	local objdir=$1 o rel
	shift
	for o in $(find "$objdir" -name '*.o' | sort); do
		rel=${o#"$objdir"/}
		nm "$o" | awk -v f="${rel%.o}" '$1 == "U" { print "U", f, $2 }
			NF == 3 && $2 ~ /^[TDBRC]$/ { print "D", f, $3 }'
	done | awk -v order="$*" '
		function part(f, a) { return split(f, a, "/") > 1 ? a[1] : "(top)" }
		BEGIN { n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i
			rank["(top)"] = n + 1 }
		$1 == "D" { def[$3] = $2; next }
		{ use[++u] = $2 " " $3 }
		END { for (i = 1; i <= u; i++) {
			split(use[i], x, " "); d = def[x[2]]
			if (d == "" || d == x[1]) continue
			p = part(x[1]); q = part(d)
			if (!(p in rank)) print x[1] ": a part the table does not name"
			else if (!(q in rank)) print d ": a part the table does not name"
			else if (rank[q] > rank[p]) print x[1] " -> " d ": " x[2]
		} }' | sort -u
}

@test "the daemon's parts call only the parts before them in the architecture table" {
	local parts objdir=$SFS_BUILD/obj/stackfs out
	parts=$(daemon_parts)
	[[ $(wc -w <<<"$parts") -ge 8 ]] || fail "the table names only these parts: $parts"
	[[ -d $objdir/nodes ]] || fail "no daemon objects in $objdir"
	# every folder of stackfs/ is a part of the table
	for d in stackfs/*/; do
		d=${d#stackfs/}
		grep -qx "${d%/}" <<<"$parts" || fail "stackfs/$d is no part of the table"
	done
	out=$(calls_up "$objdir" $parts)
	[[ -z $out ]] || fail "$(printf 'calls up, against the order %s:\n%s' "$(echo $parts)" "$out")"
	# the check sees calls: with the order turned over it finds many
	out=$(calls_up "$objdir" $(tac <<<"$parts"))
	[[ $(wc -l <<<"$out") -ge 20 ]] || fail "the reversed order shows only: $out"
}
