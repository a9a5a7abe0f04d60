# Helpers of the diff and commit tests (96-diff.bats, 97-commit.bats): a
# lower tree, a set of changes made through a real mount (additions,
# changes, deletions, an opaque directory, a moved directory, hard links,
# types replaced), the `stackfs diff` those changes must give, and a
# listing of a view to compare trees before and after a commit.

# dc_lower DIR: the lower tree.
dc_lower() {
	local d=$1
	echo a >"$d/a"
	echo b >"$d/b"
	echo c >"$d/c"
	ln -s a "$d/sym"
	mkdir -p "$d/d1" "$d/d2/sub" "$d/d3" "$d/mv/k" "$d/tc" "$d/same"
	echo x >"$d/d1/x"
	echo y >"$d/d1/y"
	setfattr -n user.dir -v one "$d/d1"
	echo p >"$d/d2/p"
	echo q >"$d/d2/sub/q"
	echo m >"$d/d3/m"
	echo keep >"$d/d3/keep"
	echo z >"$d/mv/k/z"
	echo top >"$d/mv/top"
	echo tc >"$d/tc/f"
	echo td >"$d/td"
	echo s >"$d/same/s"
	echo h >"$d/h1"
	ln "$d/h1" "$d/h2"
	echo g >"$d/g1"
	ln "$d/g1" "$d/g2"
	truncate -s 8M "$d/sparse"
	chmod 755 "$d/d1" "$d/d2" "$d/d3"
}

# dc_change MNT: the changes, made through the mount.
dc_change() {
	local m=$1
	echo more >>"$m/a"                       # C: data
	chmod 600 "$m/b"                         # C: mode
	setfacl -m u:nobody:r "$m/b"             # ACL on the copy
	rm "$m/c"                                # D
	chmod 700 "$m/d1"                        # C: a merged directory's mode
	rm "$m/d1/x"                             # D inside a merged directory
	rm -r "$m/d2"                            # D of a directory (one line)
	rm -r "$m/d3"                            # an opaque directory over d3
	mkdir "$m/d3"
	echo n >"$m/d3/n"
	echo keep2 >"$m/d3/keep"
	mv "$m/mv" "$m/moved"                    # a redirect: D /mv, A /moved
	echo w >"$m/moved/k/w"
	rm "$m/moved/top"
	echo H >>"$m/h1"                         # h2 shows it too (the index)
	echo new >"$m/new"
	ln "$m/new" "$m/newlink"
	touch -d '2001-02-03 04:05:06.123456789' "$m/new"
	mkdir -p "$m/nd/deep"
	echo q >"$m/nd/deep/q"
	setfattr -n user.big -v "$(head -c 3000 /dev/zero | tr '\0' v)" "$m/nd/deep/q"
	mkdir "$m/ed"
	mkfifo "$m/fifo"
	ln -s nowhere "$m/newsym"
	rm "$m/tc/f"                             # a directory replaced by a file
	rmdir "$m/tc"
	echo tc >"$m/tc"
	rm "$m/td"                               # a file replaced by a directory
	mkdir "$m/td"
	echo t2 >"$m/td/t2"
	printf 'x' | dd of="$m/sparse" bs=1 seek=4194304 conv=notrunc status=none
	cat "$m/same/s" >/dev/null               # read only: no change
}

# What `stackfs diff` says about dc_change over dc_lower.
dc_expected_diff() {
	cat <<'EOF'
C /a
C /b
D /c
C /d1
D /d1/x
D /d2
C /d3
C /d3/keep
D /d3/m
A /d3/n
A /ed
A /fifo
C /h1
C /h2
A /moved
A /moved/k/w
D /moved/top
D /mv
A /nd
A /nd/deep
A /nd/deep/q
A /new
A /newlink
A /newsym
C /sparse
C /tc
C /td
A /td/t2
EOF
}

# dc_state DIR: one listing of a view: every entry with its type, mode,
# owner, size (not of directories: their size is the filesystem's
# business), ns mtime and symlink target; the sha256 of every file; the
# xattrs and ACLs of every entry; the groups of hard links (by path); the
# blocks of the sparse file (holes stay holes). No inode numbers, ctimes
# or atimes.
dc_state() {
	(
		cd "$1" || exit 1
		find . ! -type d -printf '%p|%y|%m|%U:%G|%s|%T@|%l\n' | LC_ALL=C sort
		find . -type d -printf '%p|d|%m|%U:%G|%T@\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
		getfattr -R -P -d -m - -e hex . 2>/dev/null || true
		find . -type f -printf '%i %p\n' | LC_ALL=C sort |
			awk '{g[$1] = g[$1] " " $2} END {for (i in g) print "links:" g[i]}' | LC_ALL=C sort
		if [[ -f sparse ]]; then
			echo "sparse blocks under 64: $(($(stat -c %b sparse) < 64))"
		fi
	)
}

# dc_assert_state FILE DIR: DIR's listing is FILE's.
dc_assert_state() {
	local d
	if ! d=$(diff -u "$1" <(dc_state "$2")); then
		fail "$(printf 'the view %s differs from before the commit:\n%s' "$2" "$d")"
	fi
}

dc_style_opt() {
	[[ $1 == overlay ]] && echo whiteout=overlay || echo whiteout=wh
}
