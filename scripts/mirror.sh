#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt uses for bookworm (deb822
# .sources stanzas first, then one-line .list entries), or the default
# mirror when none says bookworm. scripts/clean-room.sh and the package
# test (tests/03-package.bats) make their bookworm roots from it.
set -uo pipefail
for f in /etc/apt/sources.list.d/*.sources; do
	[[ -r $f ]] || continue
	m=$(awk 'BEGIN { RS = ""; FS = "\n" }
		{ uri = ""; suite = 0; deb = 0; off = 0
		  for (i = 1; i <= NF; i++) {
			if ($i ~ /^URIs:/) { split($i, a, " "); uri = a[2] }
			if ($i ~ /^Suites:/ && $i ~ /[ \t]bookworm([ \t]|$)/) suite = 1
			if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb = 1
			if ($i ~ /^Enabled:[ \t]*no/) off = 1
		  }
		  if (uri != "" && suite && deb && !off) { print uri; exit } }' "$f")
	[[ -n $m ]] && { echo "$m"; exit 0; }
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[[ -r $f ]] || continue
	m=$(sed -nE 's/^deb +(\[[^]]*\] +)?([^ ]+) +bookworm( .*)?$/\2/p' "$f" | head -n1)
	[[ -n $m ]] && { echo "$m"; exit 0; }
done
echo http://deb.debian.org/debian
