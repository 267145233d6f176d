# deep-split.awk: reads `csampler folded` of tests/python/deep.py and prints one line (run
# with not-read.awk first, the file given twice: awk -f not-read.awk -f deep-split.awk F F):
#   phased spin gen sort qsort lost_run run lost_phased misplaced lost_callbacks callbacks
# phased: samples under one of deep.py's four phases (spin_plain, gen_consume, sort_keys,
# qsort_calls); spin..qsort: each phase's share of them (%); run: the phased ones and those
# whose Python frames were not read at all (native frames only: no phase to file them under)
# outside the interpreter's start-up, imports and shutdown; lost_run: those of them whose
# Python frames were not read (an interpreter frame left, or the "[Python frames not read]"
# frame); lost_phased: the same among the phased ones; misplaced: phased samples filed
# under frames they cannot have run under (not 41 descend frames; gen_values not under
# gen_consume, key_of not under sort_keys, cmp_cb not under qsort in qsort_calls; a
# callback under another phase); lost_callbacks of callbacks: lost_phased and phased for the
# phases whose Python code is called back from C (sort_keys, qsort_calls). The same holds for `deep.py S threads` (one phase a thread).
{
	n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
	lost = frames_not_read(line)
	m = split(line, fr, ";"); ph = ""; d = 0; leaf = ""
	for (i = 1; i <= m; i++) {
		if (fr[i] ~ /^descend \(/) d++
		if (fr[i] ~ /^(spin_plain|gen_consume|sort_keys|qsort_calls) \(/) { ph = fr[i]; sub(/ .*/, "", ph) }
		if (fr[i] ~ /^(gen_values|key_of|cmp_cb|spin_plain) \(/) { leaf = fr[i]; sub(/ .*/, "", leaf) }
	}
	if (ph == "") {
		# not read at all (not-read.awk)
		if (not_read_native(line)) {
			run += n; lost_run += n
		}
		next
	}
	run += n; if (lost) lost_run += n
	c[ph] += n; phased += n
	if (lost) lost_phased += n
	if (ph == "sort_keys" || ph == "qsort_calls") { cb += n; if (lost) lost_cb += n }
	bad = d != 41
	if (leaf == "gen_values" && (ph != "gen_consume" || line !~ /gen_consume \([^)]*\);(.*;)?gen_values \(/)) bad = 1
	if (leaf == "key_of" && (ph != "sort_keys" || line !~ /sort_keys \([^)]*\);(.*;)?key_of \(/)) bad = 1
	if (leaf == "cmp_cb" && (ph != "qsort_calls" || line !~ /qsort_calls \([^)]*\);(.*;)?qsort[^;]*;(.*;)?cmp_cb \(/)) bad = 1
	if (leaf == "spin_plain" && ph != "spin_plain") bad = 1
	if (bad) misplaced += n
}
END {
	t = phased ? phased : 1
	printf "%d %.1f %.1f %.1f %.1f %d %d %d %d %d %d\n", phased, 100 * c["spin_plain"] / t,
		100 * c["gen_consume"] / t, 100 * c["sort_keys"] / t, 100 * c["qsort_calls"] / t,
		lost_run, run, lost_phased, misplaced, lost_cb, cb
}
