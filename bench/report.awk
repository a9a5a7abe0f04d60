# bench/report.awk: turns bench/run's raw rows into the markdown report.
#   T KEY SYSTEM RUN T0 T1   one timed run (EPOCHREALTIME stamps)
#   L KEY LABEL              the workload's description
#   M KEY VALUE              a measurement that is not a time (memory)
# Portable awk (Debian's default is mawk): no asort, no gensub.
BEGIN { FS = "\t" }
$1 == "T" {
	k = $2 SUBSEP $3
	n[k]++
	v[k, n[k]] = $6 - $5
	seen[$2] = 1
}
$1 == "L" { label[$2] = $3 }
$1 == "M" { nm[$2]++; mv[$2, nm[$2]] = $3 }

function sortk(k,    i, j, t, c) {	# sorts v[k, 1..n[k]] in place
	c = n[k]
	for (i = 2; i <= c; i++)
		for (j = i; j > 1 && v[k, j - 1] > v[k, j]; j--) {
			t = v[k, j]; v[k, j] = v[k, j - 1]; v[k, j - 1] = t
		}
}
function med(key, sys,    k, c) {
	k = key SUBSEP sys
	c = n[k]
	if (!c)
		return ""
	sortk(k)
	return c % 2 ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2
}
function cell(key, sys,    k, m) {
	k = key SUBSEP sys
	if (!n[k])
		return "—"
	m = med(key, sys)
	return sprintf("%s (%s–%s)", num(m), num(v[k, 1]), num(v[k, n[k]]))
}
function num(x) {
	return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : x >= 1 ? sprintf("%.2f", x) : sprintf("%.3f", x)
}
function ratio(key, a, b,    ma, mb) {
	ma = med(key, a); mb = med(key, b)
	if (ma == "" || mb == "" || mb <= 0)
		return ""
	return ma / mb
}
function rs(r) { return r == "" ? "—" : sprintf("%.2f", r) }
function mmed(key,    c, i, j, t, a) {	# median of the M values of key
	c = nm[key]
	if (!c)
		return ""
	for (i = 1; i <= c; i++)
		a[i] = mv[key, i] + 0
	for (i = 2; i <= c; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	mmin = a[1]; mmax = a[c]
	return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
function miss(what) { missed[++nmiss] = what }

END {
	split("create create_load stat_cold stat_warm list rm rm_load seqwrite seqread rand1 rand4 cu_big cu_big_sync cu_small cu_sparse cu_sparse_sync untar", order, " ")
	# issue 20's targets: the time over kernel overlayfs's (lo) and
	# never behind fuse-overlayfs (lf 1) anywhere; info rows have none
	for (i = 1; i in order; i++)
		lf[order[i]] = 1
	lo["create"] = lo["create_load"] = lo["rm"] = lo["rm_load"] = 2
	lo["stat_cold"] = 1.3
	lo["stat_warm"] = 1.1
	lo["list"] = 1.3
	lo["seqwrite"] = 1.11	# 0.9x the throughput
	lo["seqread"] = 1.1
	lo["rand1"] = lo["rand4"] = 1.25
	cls["cu_sparse"] = "sparse"
	cls["cu_big_sync"] = cls["cu_sparse_sync"] = "info"

	print "## Workloads"
	print ""
	print "floor: the FUSE floor, a plain passthrough of the directory the row reads (or writes to) with stackfs's FUSE settings (bench/floor.c). A row where stackfs is slower than the floor is marked: a bug to find (issue 35)."
	print ""
	print "| workload | stackfs | overlayfs | fuse-overlayfs | floor | ext4 | stackfs/ovl | stackfs/fov | stackfs/floor | stackfs/ext4 | target | met |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i in order; i++) {
		key = order[i]
		if (!(key in seen))
			continue
		ro = ratio(key, "stackfs", "overlayfs")
		rf = ratio(key, "stackfs", "fuse-overlayfs")
		re = ratio(key, "stackfs", "ext4")
		rl = ratio(key, "stackfs", "floor")
		rls = rs(rl)
		if (rl != "" && rl > 1) {
			rls = "**" rls "** (slower)"
			slow[++nslow] = sprintf("%s: %.2f× the floor (%s against %s)", label[key], rl, \
				num(med(key, "stackfs")), num(med(key, "floor")))
		}
		c = cls[key]
		met = "—"
		t = ""
		if (c != "info") {
			t = (key in lo) ? sprintf("≤%g× ovl, ≤1× fov", lo[key]) : "≤1× fov"
			if (c == "sparse")
				t = t "; ≤2× the 8 MiB file"
		}
		if (c != "info" && rf != "") {
			ok = 1; why = ""
			if (rf > lf[key]) { ok = 0; why = sprintf("%.2f× fov (limit 1)", rf) }
			if ((key in lo) && ro != "" && ro > lo[key]) { ok = 0; why = why (why ? ", " : "") sprintf("%.2f× ovl (limit %g)", ro, lo[key]) }
			if (c == "sparse") {
				sp = ratio("cu_sparse", "stackfs", "stackfs")
				rr = med("cu_sparse", "stackfs") / med("cu_small", "stackfs")
				if (rr > 2) { ok = 0; why = why (why ? ", " : "") sprintf("%.1f× the 8 MiB file (limit 2)", rr) }
			}
			if (ok)
				met = "yes"
			else {
				met = "**NO**: " why
				miss(label[key] ": " why)
			}
		}
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label[key], \
			cell(key, "stackfs"), cell(key, "overlayfs"), cell(key, "fuse-overlayfs"), cell(key, "floor"), \
			cell(key, "ext4"), rs(ro), rs(rf), rls, rs(re), t, met
	}
	print ""

	if (nslow) {
		print "## Slower than the FUSE floor"
		print ""
		print "Rows where stackfs took longer than a plain FUSE passthrough of the same directory (medians of this run; on a shared machine a ratio near 1 may be noise, min–max in the table says how much):"
		print ""
		for (i = 1; i <= nslow; i++)
			print "- " slow[i]
		print ""
	}

	if ("cu_sparse" in seen && "cu_small" in seen) {
		print "## Copy-up: cost proportional to the data"
		print ""
		print "Time of the first write to the sparse file over the time of the first write to a dense file holding the same amount of data (target for stackfs: ≤ 2)."
		print ""
		print "| system | sparse / dense-of-same-data |"
		print "|---|---|"
		split("stackfs overlayfs fuse-overlayfs", us, " ")
		for (j = 1; j <= 3; j++)
			if (med("cu_small", us[j]) > 0)
				printf "| %s | %.2f |\n", us[j], med("cu_sparse", us[j]) / med("cu_small", us[j])
		print ""
	}

	if (("cu_big" SUBSEP "stackfs-volatile") in n) {
		print "## stackfs sync modes"
		print ""
		print "stackfs is the default, `sync=normal`: a copy's data is fsynced before the copy is placed. `sync=volatile` syncs no copy, as the default did before the sync modes (what `normal` costs is the ratio normal/volatile); `sync=always` syncs every change before its reply. The `+ sync` rows are the `sync` right after: what each left for later."
		print ""
		print "| workload | normal | volatile | always | normal/volatile | always/volatile |"
		print "|---|---|---|---|---|---|"
		for (i = 1; i in order; i++) {
			key = order[i]
			if (!((key SUBSEP "stackfs-volatile") in n))
				continue
			printf "| %s | %s | %s | %s | %s | %s |\n", label[key], cell(key, "stackfs"), \
				cell(key, "stackfs-volatile"), cell(key, "stackfs-always"), \
				rs(ratio(key, "stackfs", "stackfs-volatile")), rs(ratio(key, "stackfs-always", "stackfs-volatile"))
		}
		print ""
	}

	if (("create" SUBSEP "stackfs-devfuse") in n || ("rm" SUBSEP "stackfs-devfuse") in n) {
		print "## stackfs transports: FUSE over io_uring against /dev/fuse"
		print ""
		print "stackfs takes FUSE over io_uring by default where the fuse module allows it (`enable_uring`, which this run sets: the stackfs column of the other tables); `-o nouring` reads requests from /dev/fuse and answers with writev(2). The ratio is io_uring's time over /dev/fuse's: below 1, io_uring is faster."
		print ""
		print "The floor (bench/floor.c) is served over /dev/fuse: /dev/fuse / floor is what stackfs costs over a plain FUSE passthrough on the same transport."
		print ""
		print "| workload | io_uring | /dev/fuse | floor | io_uring / dev | /dev/fuse / floor |"
		print "|---|---|---|---|---|---|"
		for (i = 1; i in order; i++) {
			key = order[i]
			if (!((key SUBSEP "stackfs-devfuse") in n))
				continue
			printf "| %s | %s | %s | %s | %s | %s |\n", label[key], cell(key, "stackfs"), \
				cell(key, "stackfs-devfuse"), cell(key, "floor"), \
				rs(ratio(key, "stackfs", "stackfs-devfuse")), rs(ratio(key, "stackfs-devfuse", "floor"))
		}
		print ""
	}

	if (nm["bytes_per_inode"]) {
		print "## stackfs daemon memory"
		print ""
		b = mmed("bytes_per_inode")
		printf "- Per cached inode after the cold stat walk (VmRSS after the walk minus VmRSS right after mount, over %d entries walked): median **%d B** (%d–%d over %d runs); target < 300 B: %s.\n", \
			mv["nent", 1], b, mmin, mmax, nm["bytes_per_inode"], b < 300 ? "met" : "**NOT met**"
		if (b >= 300)
			miss(sprintf("daemon memory: %d B per cached inode (limit 300)", b))
		printf "- VmRSS right after mount: median %d KiB; after the walk: median %d KiB.\n", mmed("rss0"), mmed("rss1")
	}
	if (nm["leak_rss1"]) {
		for (i = 1; ("leak_rss" i) in nm; i++)
			last = i
		s = mv["leak_rss0", 1] " KiB at mount"
		for (i = 1; i <= last; i++)
			s = s ", " mv["leak_rss" i, 1]
		printf "- Repeated workload (drop caches + cold stat walk, %d times on one mount), VmRSS in KiB: %s.\n", last, s
		if (last >= 2) {
			g = mv["leak_rss" last, 1] - mv["leak_rss2", 1]
			step1 = mv["leak_rss1", 1] - mv["leak_rss0", 1]
			lim = step1 / 20 > 256 ? step1 / 20 : 256
			printf "  Growth from walk 2 to walk %d: %d KiB (limit: 5%% of the first walk's %d KiB, at least 256 KiB): %s.\n", last, g, step1, g <= lim ? "no leak seen" : "**grows**"
			if (g > lim)
				miss(sprintf("daemon memory grows by %d KiB over %d repeated walks", g, last - 2))
		}
		print ""
	}

	if ("br_stat" in seen) {
		nb = mv["nbr", 1]
		print "## Branch count: " nb " branches vs 2"
		print ""
		printf "2 branches: an empty upper over one lower holding the tree; %d: an empty upper over %d lowers with the tree's files spread round-robin (every directory in every lower). overlayfs for reference. Target: stackfs's %d-branch stat walk ≤ 2× its 2-branch one.\n\n", nb, nb - 1, nb
		printf "| workload | stackfs, 2 | stackfs, %d | %d/2 | overlayfs, 2 | overlayfs, %d | %d/2 | met |\n", nb, nb, nb, nb
		print "|---|---|---|---|---|---|---|---|"
		split("br_stat br_list", bo, " ")
		for (i = 1; i <= 2; i++) {
			key = bo[i]
			r1 = ratio(key, "stackfs-" nb, "stackfs-2")
			r2 = ratio(key, "overlayfs-" nb, "overlayfs-2")
			met = "—"
			if (key == "br_stat") {
				met = r1 <= 2 ? "yes" : sprintf("**NO**: %.2f (limit 2)", r1)
				if (r1 > 2)
					miss(sprintf("%d-branch stat walk: %.2f× the 2-branch one (limit 2)", nb, r1))
			}
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label[key], cell(key, "stackfs-2"), \
				cell(key, "stackfs-" nb), rs(r1), cell(key, "overlayfs-2"), cell(key, "overlayfs-" nb), rs(r2), met
		}
		print ""
	}

	if (nm["coh_create"]) {
		print "## -o coherent: a change made below, seen in the view (issue 19.2)"
		print ""
		printf "Milliseconds from a change made directly in the lower branch to the view showing it (tests/tools/cohlat polls the view every 0.1 ms), %d changes of each kind per run, `timeout=600` (without the option none would show for 10 minutes). Median: of the runs' medians; p99 and max: the worst run's. Target: p99 under 100 ms.\n\n", mv["ncoh", 1]
		print "| change | median | p99 | max | met |"
		print "|---|---|---|---|---|"
		split("create content attr delete rename", ck, " ")
		for (i = 1; i in ck; i++) {
			key = "coh_" ck[i]
			if (!nm[key])
				continue
			delete meds
			wp = 0; wm = 0
			for (r = 1; r <= nm[key]; r++) {
				split(mv[key, r], f, " ")
				meds[r] = f[1] + 0
				if (f[2] + 0 > wp) wp = f[2] + 0
				if (f[3] + 0 > wm) wm = f[3] + 0
			}
			c = nm[key]
			for (a = 1; a <= c; a++)	# insertion sort of the medians
				for (b = a; b > 1 && meds[b - 1] > meds[b]; b--) {
					t = meds[b]; meds[b] = meds[b - 1]; meds[b - 1] = t
				}
			m = c % 2 ? meds[(c + 1) / 2] : (meds[c / 2] + meds[c / 2 + 1]) / 2
			if (wp >= 100)
				miss(sprintf("-o coherent, %s: p99 %.1f ms (target under 100 ms)", ck[i], wp))
			printf "| %s | %.2f | %.2f | %.2f | %s |\n", ck[i], m, wp, wm, wp < 100 ? "yes" : "**NO**"
		}
		print ""
	}

	if ("many_stat" in seen) {
		nms = split(mv["many", 1], ms, " ")
		base = "stackfs-" ms[1]
		print "## Many branches: a stat walk over N branches (issue 19.4)"
		print ""
		printf "The files of the tree of the rows above spread over N-1 lowers below an empty upper (file i in lower i mod (N-1), in directory i / 100; a lower holds only its files' directories, so a directory is in up to 100 lowers), stackfs mounted from a branches file; overlayfs for reference where its option page holds the lowers. Target: stackfs's %s-branch walk ≤ 4× its %s-branch one.\n\n", ms[nms], ms[1]
		print "| branches | stackfs | ×2 branches | overlayfs | met |"
		print "|---|---|---|---|---|"
		for (i = 1; i <= nms; i++) {
			r1 = ratio("many_stat", "stackfs-" ms[i], base)
			met = "—"
			if (i == nms) {
				met = r1 <= 4 ? "yes" : sprintf("**NO**: %.2f (limit 4)", r1)
				if (r1 > 4)
					miss(sprintf("%s-branch stat walk: %.2f× the %s-branch one (limit 4)", ms[i], r1, ms[1]))
			}
			printf "| %s | %s | %s | %s | %s |\n", ms[i], cell("many_stat", "stackfs-" ms[i]), rs(r1), \
				cell("many_stat", "overlayfs-" ms[i]), met
		}
		print ""
	}

	if ("chown" in seen) {
		data = mv["chown_data_kib", 1]
		print "## Metadata-only copy-up: chown -R (issue 19)"
		print ""
		printf "`chown -R` of a lower tree (%s) through each union: stackfs (metadata-only copy-up, its default), kernel overlayfs with `metacopy=on,redirect_dir=on` (overlayfs-mc), fuse-overlayfs, and stackfs `-o metacopy=off` (whole copies). The upper's disk use is `du -sk` of the upper after the sync (stackfs's includes its `.stackfs`), as a share of the tree's %d KiB. Targets: stackfs ≤ 1.5× overlayfs-mc, and its upper < 1%% of the data.\n\n", label["chown"], data
		print "| system | chown -R | + sync | ×overlayfs-mc | upper KiB | upper / data | met |"
		print "|---|---|---|---|---|---|---|"
		split("stackfs overlayfs-mc fuse-overlayfs stackfs-mcoff", cs, " ")
		for (i = 1; i <= 4; i++) {
			if (!n["chown" SUBSEP cs[i]])
				continue
			r1 = ratio("chown", cs[i], "overlayfs-mc")
			du = mmed("chown_du_" cs[i])
			fr = data > 0 ? du / data : 0
			met = "—"
			if (cs[i] == "stackfs") {
				met = r1 != "" && r1 <= 1.5 && fr < 0.01 ? "yes" : "**NO**"
				if (r1 != "" && r1 > 1.5)
					miss(sprintf("chown -R: %.2f× kernel overlayfs metacopy=on (limit 1.5)", r1))
				if (fr >= 0.01)
					miss(sprintf("chown -R: the upper holds %.2f%% of the data (limit 1%%)", fr * 100))
			}
			printf "| %s | %s | %s | %s | %d | %.3f%% | %s |\n", cs[i], cell("chown", cs[i]), \
				cell("chown_sync", cs[i]), rs(r1), du, fr * 100, met
		}
		print ""
	}

	if (("scale_walk" SUBSEP "stackfs") in n) {
		print "## Scale: a cold stat walk of a large lower tree"
		print ""
		ne = mv["scale_entries", 1]
		s1 = med("scale_walk", "stackfs"); s2 = med("scale_walk", "overlayfs")
		r0 = mv["scale_rss0", 1]; r1 = mv["scale_rss1", 1]
		printf "`bt walk` of %d entries (1000 dirs) of a lower branch, through a fresh mount over an empty upper, cold (once each).\n\n", ne
		print "| stackfs | overlayfs | stackfs/ovl | daemon RSS after mount | after the walk | per cached inode | fds the daemon holds after |"
		print "|---|---|---|---|---|---|---|"
		per = (ne > 0) ? (r1 - r0) * 1024 / ne : 0
		printf "| %s s | %s s | %.2f | %d KiB | %d KiB | %d B | %d |\n\n", num(s1), num(s2), \
			(s2 > 0) ? s1 / s2 : 0, r0, r1, per, mv["scale_fds", 1]
	}

	if (("fsck" SUBSEP "stackfs") in n) {
		print "## fsck at scale"
		print ""
		ne = mv["fsck_entries", 1]
		printf "`stackfs fsck` of a rw branch of %d entries (new files, aufs whiteouts, metadata-only copies with origin records, renamed directories with redirects) over the lower tree above, cold cache, against `e2fsck -fn` of the whole ext4 filesystem both are on (3 runs each, alternating; medians). Target: within 1.5× e2fsck (goal 1×), memory bounded.\n\n", ne
		f1 = med("fsck", "stackfs"); f2 = med("fsck", "e2fsck")
		rss = mv["fsck_maxrss_kib", 1]
		printf "| stackfs fsck | e2fsck -fn | ratio | stackfs fsck peak RSS | per million entries | exit status | met |\n|---|---|---|---|---|---|---|\n"
		r = f2 > 0 ? f1 / f2 : 0
		met = r <= 1.5 ? "yes" : "**NO**"
		if (r > 1.5)
			miss(sprintf("fsck of %d entries: %.2f× e2fsck -fn (limit 1.5)", ne, r))
		per = (ne > 0) ? rss / 1024 * 1000000 / ne : 0
		printf "| %s s | %s s | %.2f | %.1f MiB | %.1f MiB | %s | %s |\n\n", num(f1), num(f2), r, \
			rss / 1024, per, mv["fsck_rc", 1], met
	}

	print "## Targets missed"
	print ""
	if (!nmiss)
		print "None."
	for (i = 1; i <= nmiss; i++)
		print "- " missed[i]
	print ""

	print "<details><summary>Every run (seconds, sorted)</summary>"
	print ""
	print "| workload | system | runs |"
	print "|---|---|---|"
	for (k in n) {
		split(k, kk, SUBSEP)
		line[kk[1], kk[2]] = 1
	}
	split("stackfs overlayfs fuse-overlayfs floor ext4 overlayfs-mc stackfs-mcoff stackfs-volatile stackfs-always stackfs-devfuse stackfs-2 stackfs-16 stackfs-128 stackfs-1000 overlayfs-2 overlayfs-16", sl, " ")
	split("create create_load stat_cold stat_warm list rm rm_load seqwrite seqread rand1 rand4 cu_big cu_big_sync cu_small cu_sparse cu_sparse_sync untar chown chown_sync br_stat br_list many_stat", ol, " ")
	for (i = 1; i in ol; i++)
		for (j = 1; j in sl; j++) {
			k = ol[i] SUBSEP sl[j]
			if (!n[k])
				continue
			sortk(k)
			s = ""
			for (r = 1; r <= n[k]; r++)
				s = s (r > 1 ? " " : "") num(v[k, r])
			printf "| %s | %s | %s |\n", ol[i], sl[j], s
		}
	print ""
	print "</details>"
}
