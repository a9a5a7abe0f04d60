#!/usr/bin/env bats
# st_dev and st_ino of the view with branches on two filesystems. Each test
# makes two fresh images and uses their root directories as branches:
# entries made in the same order in both roots get the same inode numbers
# below, so the view has to tell them apart.

load helpers/common

setup_file() {
	sfs_require_build
	sfs_require_tool getdents_small
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	A=$(sfs_make_image "$SFS_FS" 64 fsa)
	B=$(sfs_make_image "$SFS_FS" 64 fsb)
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	# the same shape, made in the same order, on both
	local r i
	for r in "$A" "$B"; do
		for ((i = 0; i < 30; i++)); do echo "$r" >"$r/f$i-${r##*/}"; done
		mkdir "$r/d"
		for ((i = 0; i < 30; i++)); do echo "$r" >"$r/d/g$i-${r##*/}"; done
		echo "$r" >"$r/same"
		mkdir -p "$r/both"
	done
	# precondition: the two branches share inode numbers
	local common
	common=$(comm -12 <(find "$A" -printf '%i\n' | sort -u) <(find "$B" -printf '%i\n' | sort -u) | wc -l)
	((common > 10)) || fail "test setup: only $common inode numbers in common between $A and $B"
}

teardown() {
	sfs_cleanup
}

@test "st_ino is unique across the view, with branches on two filesystems" {
	sfs_mount "$A:$B" "$MNT"
	local dups
	dups=$(find "$MNT" -printf '%i\n' | sort | uniq -d)
	[[ -z $dups ]] || fail "$(printf 'st_ino shared by:\n'; find "$MNT" -printf '%i %p\n' | grep -wF "$dups" | sort | head -20)"
	# and every entry is there to be counted
	run -0 bash -c "find '$MNT' -mindepth 1 -name '[fg]*' | wc -l"
	assert_output 120
}

@test "one st_dev for the whole view, with branches on two filesystems" {
	sfs_mount "$A:$B" "$MNT"
	run -0 bash -c "find '$MNT' -printf '%D\n' | sort -u"
	((${#lines[@]} == 1)) || fail "st_dev values in the view: $output"
	[[ $(stat -c %d "$MNT") == $(stat -c %d "$MNT/f0-fsb") ]] || fail "root and a lower file differ"
	[[ $(stat -c %d "$MNT/d/g0-fsa") == $(stat -c %d "$MNT/d/g0-fsb") ]] || fail "upper and lower file differ"
}

@test "readdir d_ino agrees with stat st_ino, with branches on two filesystems" {
	sfs_mount "$A:$B" "$MNT"
	local ino type name bad=
	while read -r ino type name; do
		[[ $name == .. ]] && continue
		[[ $(stat -c %i "$MNT/d/$name") == "$ino" ]] || bad+="$name: d_ino $ino st_ino $(stat -c %i "$MNT/d/$name")"$'\n'
	done < <("$TOOLS/getdents_small" -l -b 4096 "$MNT/d")
	[[ -z $bad ]] || fail "$bad"
}

@test "st_ino does not change after the kernel forgets the entries" {
	sfs_mount "$A:$B" "$MNT"
	local before after
	before=$(find "$MNT" -printf '%i %p\n' | sort)
	sfs_drop_caches 2
	after=$(find "$MNT" -printf '%i %p\n' | sort)
	[[ $before == "$after" ]] || fail "$(diff <(echo "$before") <(echo "$after") | head -20)"
}

@test "new entries get st_ino values unused in the view" {
	sfs_mount "$A:$B" "$MNT"
	local i
	for ((i = 0; i < 30; i++)); do echo n >"$MNT/new$i"; mkdir "$MNT/d/newd$i"; done
	run -0 bash -c "find '$MNT' -printf '%i\n' | sort | uniq -d"
	assert_output ""
}

@test "forgotten entries release the daemon's descriptors (5000 lookups, then forget)" {
	mkdir "$B/many"
	(cd "$B/many" && seq -f 'm%g' 1 5000 | xargs touch) 2>&1 | head -5
	sfs_mount "$A:$B" "$MNT"
	local pid base n i
	pid=$(sfs_daemon_pid "$MNT")
	[[ -n $pid ]] || fail "no daemon found for $MNT"
	base=$(ls "/proc/$pid/fd" | wc -l)
	run -0 bash -c "find '$MNT/many' -type f | wc -l"
	assert_output 5000
	sfs_drop_caches 2
	for ((i = 0; i < 50; i++)); do
		n=$(ls "/proc/$pid/fd" | wc -l)
		((n <= base + 50)) && break
		sleep 0.1
	done
	((n <= base + 50)) || fail "daemon holds $n descriptors after forget (was $base before the lookups)"
}
