#!/usr/bin/env bash
# Python frames exact at depth (issue 21): tests/python/deep.py runs four phases of known CPU
# shares (40% a pure Python loop, 20% a generator, 20% sorted's key callback, 20% a ctypes
# callback from libc's qsort), each under 41 descend frames; once one after the other, once in
# four threads at once (25% each). For every CPython present (Debian's 3.11, and pyenv's 3.11,
# 3.12, 3.13 builds and Debian unstable's 3.14 where installed; SKIPPED otherwise; the list can
# be narrowed with DEEP_VERSIONS) and both backends (perf, ptrace):
#   - placement: at most 0.2% of the samples under frames they cannot have run under (not 41
#     descend frames, a callback not under its own caller, a phase's function under another);
#   - the samples whose Python frames were not read (an interpreter frame left, or the
#     "[Python frames not read]" frame) are at most 1% of the pure Python and generator
#     phases', and at most CB% of the callbacks' from C;
#   - all of them (phases, and the samples left all native then) at most RUN% of the run;
#   - the split within SPLIT points of the truth;
#   - report counts every such sample in its unwind quality.
# The goal is 1% and 2 points everywhere. Under ptrace the frames are copied while the thread
# is stopped (py_capture), so read as of the sample: the goal holds for every version (CB 1.5%,
# RUN 1%, SPLIT 2; measured 0.1-0.9% of the run; main's binary, reading later, lost 2-6% in
# 3.12 and 3.13). In perf mode the recorder's reader copies the frames as it reads the sample,
# woken by every sample: 0.1 ms after it (median), where reading them when the main thread got
# to the sample took 0.6 ms, and up to hundreds under load. deep.py changes phase 32 times in
# 2 s, and a sample whose innermost frame changed before its frames were taken is not read:
# that was 3.11's loss in the phases (CI once lost 14 of 1187 there); now 0-0.9% of them
# (0.1-0.4% in most runs), quiet or beside two busy loops: what is left is samples taken while
# a generator's activation was being entered or left (its _PyCFrame not linked yet), which no
# delay changes. 3.11: CB 3.5%, RUN 4%, SPLIT 2 (measured callbacks 0.5-1.9%,
# run 0.4-1.2%). In 3.12 and 3.13 a callback from C returns microseconds after the sample, so
# before even that copy, and a later call's frames are taken only when they link as the sampled
# one did (or to a shim under the sampled stack pointer that is gone: a later call from deeper
# in C). 3.12 takes, when a callback's chain no longer reads, the frame at the address its
# _PyCFrame gave when it is an entry frame and the caller still runs (or, for an activation
# caught entering or leaving, the frame above its caller's), and shows a callback's frame
# still being set up at its first line: CB 3.5%, RUN 3%, SPLIT 2 (measured callbacks 0-2.4%,
# median 0.9% in 30 runs, run 0.1-2.0%; 1.1-2.4% and 0.9-1.5% in a few runs before 2026-11-28's
# eighth session, 1.5-6.5% and 0.6-4.8% before its seventh). 3.13, whose innermost activation
# is read live, read again when the walk meets a dead shim, and taken from the frame under a
# callback running at the read (py_walk_under_callback): CB 2.5%, RUN 2.5%, SPLIT 2 (measured
# 0-1.75% and 0.05-1.5%).
# README "Python frames" has the figures.
# 3.14 (scripts/get-python3.14.sh's Debian build, whose interpreter loop has no symbol:
# activations found by their entry frames). Such a loop's frame left native says nothing, so
# it is told here by where Python frames go (not-read.awk: the native frame they follow, the
# loop's caller, then none), and the recorder puts the marker frame there since 2026-11-29's
# eleventh session: before, this test saw 8 of 3,929 callbacks unread in a perf threads run
# where 958 of 3,925 were (24%; the recorder's own count said 477), as a callback from C
# returns before perf's reader copies the frames. Now the frame such an activation ran is
# taken from the data stack where its caller's ends (py_act_popped_frame, as 3.13's
# py_walk_under_callback; 3.14 clears a popped frame's code object, so it is found from its
# instruction pointer) when the sample's copy says the caller and it were running then, and
# a later call's run is placed at the sampled activation that linked to the same caller
# (py_act_relink); bpf does the same for a run of its entry frame only (entered or returning
# at the sample, its frame cleared), without a copy (py_fill_entry_runs); an activation with
# no entry frame in the copy is told by the loop's call sites (py_mark_unrun_loops), so that
# report counts what this test counts. Measured in 3 rounds, callbacks from C not read (one
# thread / four): perf 0.5-1.1% / 0.4-0.75%, the run 0.25-0.65% / 0.8-0.95%; ptrace 0.4-0.5% /
# 0.15-0.35%; bpf 0.5-0.75% / 0.4-0.75% (what is left: activations with no entry frame linked
# yet, or whose caller moved on): perf CB 1.5%, RUN 2.5%; bpf CB 2%; SPLIT 2. (A
# sample whose chain was torn when read shows the marker frame in place of its innermost
# activation, unless that one was calling out at the sample and the copy still points to
# where it is; a shim where the interpreter keeps none is not placed, its outer activation
# checked so: 2.2-4% of the run before 2026-11-28's ninth session. A generator that yielded
# before the read was put under the thread's current frame, its caller or not: CI once filed
# 8 samples of gen_values under the next phase, one each round.)
# With --mode bpf (where BPF is permitted, else SKIPPED) the BPF program reads the frame chain at
# the sample, so nothing moves between sample and read: what is left is the few instructions in
# which an activation is entered or left while its _PyCFrame or shim is not linked, counted
# and never misplaced. 3.11 enters and leaves a generator's activation at each yield (0.8-1.8%
# of the Python and generator phases before): the recorder completes such a sample with the
# generator its caller's FOR_ITER resumes, found now in the caller's value stack (running,
# linked to it, or suspended: the only one there), as read after the program moved on; 0.1-1.0%
# are left, and a run of the generator phase alone (deep.py 2 gen) must complete some. A 3.12 or 3.13 callback
# from C caught returning (its frame unlinked before it is cleared: 1.1-1.7% of the callbacks
# before) is found by the program above its caller's frame, by its link to the callback's
# shim: 0.1-0.6% of the callbacks are left (the eval loop's own entry and exit), and each run
# must find some. Limits: 3.11 phases 1%, CB 1.5%; 3.12, 3.13 phases 1%, CB 1%; 3.14 CB 2% (above); RUN 4% (a process' first
# samples are read by the recorder until it has found the interpreter: late ones are not read),
# SPLIT 2. On an overloaded machine (load 12) the recorder once fell over a second behind at
# start-up and a 3.13 run lost 81 of 1307 phase samples that way, as perf and ptrace failed
# their limits in the same run.
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"

within() { awk -v a="$1" -v b="$2" -v p="$SPLIT" 'BEGIN { d = a - b; exit !(d <= p && d >= -p) }'; }
pct_le() { awk -v n="$1" -v t="$2" -v p="$3" 'BEGIN { exit !(t > 0 && 100 * n <= p * t) }'; }

# check_resumed LABEL PY MODE: 3.11: a generator's activation caught being entered or left (its
# _PyCFrame not linked) is completed with the generator its caller's FOR_ITER resumes
# (py_gen_resumed). deep.py's generator phase alone for 2 s: in its 0.4 s of the whole program
# 0 to 4 such samples a run were seen (0 in 2 runs of about 10: a check there failed by
# chance), so about 10 expected here.
# The same completion in ptrace and perf modes (py_gen_prepend, since 2026-11-29's tenth
# session: a chain with one run fewer than the activations): in ptrace mode the generator
# phase alone left 25-39 samples of 2,000 unread before (Debian's and pyenv's 3.11), 5-16 after,
# with 9-27 completed a run; ptrace is checked the same way.
check_resumed() {
	local label=$1 py=$2 mode=$3 f="deep-$1-$3-gen" res
	if ! "$CSAMPLER" record --mode "$mode" -o "$f.data" -- "$py" "$SRC/deep.py" 2 gen \
		>/dev/null 2>"$f.err"; then
		if [ "$mode" = ptrace ] && grep -qiE 'ptrace.*(not permitted|refus|denied|unavailable)' "$f.err"; then
			skip "python-deep: $label ptrace gen: ptrace is refused here: $(head -1 "$f.err")"
		else
			fail "python-deep: $label $mode gen: record failed: $(tail -2 "$f.err")"
		fi
		return
	fi
	res=$(grep -o '[0-9]* with a generator resumed' "$f.err" | tr -dc 0-9)
	[ "${res:-0}" -gt 0 ] &&
		pass "python-deep: $label $mode, the generator alone: $res samples in a generator being resumed or left were completed" ||
		fail "python-deep: $label $mode, the generator alone: no sample in a generator being resumed or left was completed ($(grep -o 'Python: [^:]*' "$f.err"))"
}

# A code object freed and its address taken by another of another frame size (reuse.py): the
# recorder's cache of code objects still held the freed one, whose frame size made every walk
# through the new one's frames fail before the cache was checked, so it stayed wrong: CI lost
# every sample of a 3.13 deep.py threads run that way (popped before the read), and reuse.py
# lost 12-49% of its samples in 3.12-3.14 perf mode. Now a cached code object that the walk
# finds the wrong size is checked again at once: 0-3.4% (the run's start and end). 5%.
check_reused() {
	local label=$1 py=$2 f="deep-$1-reuse" c lost
	if ! "$CSAMPLER" record -q --mode perf -o "$f.data" -- "$py" "$SRC/reuse.py" >/dev/null \
		2>"$f.err"; then
		fail "python-deep: $label perf, a code object's address reused: record failed: $(tail -2 "$f.err")"
		return
	fi
	if ! grep -q 'reused 1' "$f.err"; then
		skip "python-deep: $label perf: the allocator did not give the freed code object's address to the next one (nothing to check)"
		return
	fi
	"$CSAMPLER" folded -i "$f.data" >"$f.folded" 2>/dev/null
	read -r c lost <<<"$(awk -f "$SRC/not-read.awk" -f "$SRC/reuse-split.awk" "$f.folded" "$f.folded")"
	[ "${c:-0}" -gt 500 ] && pct_le "$lost" "$((c + lost))" 5 &&
		pass "python-deep: $label perf, a code object's address reused: $lost of $((c + lost)) samples of the run not read (<= 5%)" ||
		fail "python-deep: $label perf, a code object's address reused: $lost of $((c + lost)) samples of the run not read, ${c:-0} read under run_c (want > 500 and <= 5%)"
}

# check LABEL MODE PY ARGS...: record deep.py, assert as above
check_deep() {
	local label=$1 mode=$2 py=$3 threads=$4 lost_cb=$5 lost_all_max=$6 split_pts=$7 lost_phases=${8:-1} name f
	local phased spin gen sort qsort lost_all all lost misplaced lcb cb
	name="python-deep: $label $mode${threads:+ threads}"
	f="deep-$label-$mode${threads:+-t}"
	# without -q: the summary's Python line (bpf: the generators completed; any mode: why
	# frames were not read, printed when a check fails)
	local fails_before=${TEST_FAILS:-0}
	if ! "$CSAMPLER" record --mode "$mode" -o "$f.data" -- "$py" "$SRC/deep.py" 2 $threads \
		>/dev/null 2>"$f.err"; then
		if [ "$mode" = ptrace ] && grep -qiE 'ptrace.*(not permitted|refus|denied|unavailable)' "$f.err"; then
			skip "$name: ptrace is refused here: $(head -1 "$f.err")"
		else
			fail "$name: record failed: $(tail -2 "$f.err")"
		fi
		return
	fi
	"$CSAMPLER" folded -i "$f.data" >"$f.folded" 2>/dev/null
	read -r phased spin gen sort qsort lost_all all lost misplaced lcb cb \
		<<<"$(awk -f "$SRC/not-read.awk" -f "$SRC/deep-split.awk" "$f.folded" "$f.folded")"
	local want_spin=40 want_rest=20
	[ -n "$threads" ] && want_spin=25 && want_rest=25
	echo "    $label $mode${threads:+ threads}: $spin/$gen/$sort/$qsort% of $phased; not read: $lost of them ($((lost - lcb)) in Python/generator phases, $lcb of $cb in callbacks), $lost_all of the run's $all; misplaced $misplaced"
	SPLIT=$split_pts
	[ "${phased:-0}" -gt 1000 ] && within "$spin" $want_spin && within "$gen" $want_rest &&
		within "$sort" $want_rest && within "$qsort" $want_rest &&
		pass "$name: split $spin/$gen/$sort/$qsort within $SPLIT points of $want_spin/$want_rest/$want_rest/$want_rest" ||
		fail "$name: split $spin/$gen/$sort/$qsort of ${phased:-0} samples, want $want_spin/$want_rest/$want_rest/$want_rest +-$SPLIT"
	pct_le "$lost_all" "$all" "$lost_all_max" &&
		pass "$name: Python frames not read: $lost_all of $all samples of the run (<= $lost_all_max%)" ||
		fail "$name: Python frames not read in $lost_all of $all samples of the run (> $lost_all_max%)"
	pct_le "$misplaced" "$phased" 0.2 &&
		pass "$name: placement: $misplaced of $phased samples under frames they cannot have run under" ||
		fail "$name: $misplaced of $phased samples misplaced (41 descend frames, callbacks under their callers)"
	pct_le "$((lost - lcb))" "$((phased - cb))" "$lost_phases" &&
		pass "$name: Python frames not read: $((lost - lcb)) of $((phased - cb)) samples of the Python and generator phases (<= $lost_phases%)" ||
		fail "$name: Python frames not read in $((lost - lcb)) of $((phased - cb)) samples of the Python and generator phases (> $lost_phases%)"
	pct_le "$lcb" "$cb" "$lost_cb" &&
		pass "$name: Python frames not read: $lcb of $cb samples of the callbacks from C (<= $lost_cb%)" ||
		fail "$name: Python frames not read in $lcb of $cb samples of the callbacks from C (> $lost_cb%)"
	# bpf, 3.12 and 3.13: a callback caught returning is found by the program (its frame
	# above the caller's, linked to the callback's entry frame): some of every run's are
	if [ "$mode" = bpf ] && [ "$want_returning" = 1 ]; then
		local ret
		ret=$(grep -o '[0-9]* with a callback returning' "$f.err" | tr -dc 0-9)
		[ "${ret:-0}" -gt 0 ] &&
			pass "$name: the program found $ret callbacks from C returning" ||
			fail "$name: the program found no callback from C returning ($(grep -o 'Python frames read at the sample[^;]*' "$f.err"))"
	fi
	local counted
	counted=$("$CSAMPLER" report -i "$f.data" 2>/dev/null |
		awk '/Python frames could not be read/ { print $NF == ")" ? 0 : $NF }' | tr -dc 0-9)
	[ "${counted:-0}" -ge "$lost" ] &&
		pass "$name: report counts them ($counted samples whose Python frames could not be read, >= the $lost of the phases)" ||
		fail "$name: report counts ${counted:-0} samples whose Python frames could not be read, the phases show $lost"
	[ "${TEST_FAILS:-0}" -gt "$fails_before" ] && echo "    $name: the recorder said: $(grep 'Python:' "$f.err")"
	return 0
}

ran=0
bpf_ok=0
if "$CSAMPLER" record --mode bpf -q -o bpf-probe.data -- true >/dev/null 2>bpf-probe.err; then
	bpf_ok=1
fi
for v in ${DEEP_VERSIONS:-debian-3.11 3.11 3.12 3.13 3.14}; do
	if [ "$v" = 3.14 ]; then
		PY=$(find_python 3.14) # scripts/get-python3.14.sh's (Debian unstable's build)
	elif [ "$v" = debian-3.11 ]; then
		PY=$(command -v python3.11 || true)
		[ -n "$PY" ] && ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null && PY=
		[ -n "$PY" ] && [ "$(readlink -f "$PY")" = "$(readlink -f "$(find_pyenv 3.11)" 2>/dev/null)" ] && PY=
	else
		PY=$(find_pyenv "$v")
	fi
	if [ -z "$PY" ] && [ "$v" = 3.14 ]; then
		skip "python-deep: CPython 3.14 is not installed here (scripts/get-python3.14.sh installs Debian's build)"
		continue
	elif [ -z "$PY" ]; then
		skip "python-deep: CPython $v is not installed here (pyenv builds: \$HOME/.pyenv/versions/$v.*)"
		continue
	fi
	if ! "$PY" -c 'import ctypes' 2>/dev/null; then
		skip "python-deep: $v ($PY) has no ctypes"
		continue
	fi
	ran=1
	# limits: callbacks from C, whole run, split points (see the top)
	lim="3.5 4 2" ptlim="1.5 1 2"
	case $v in 3.12) lim="3.5 3 2" ;; 3.13) lim="2.5 2.5 2" ;; 3.14) lim="1.5 2.5 2" ;; esac
	check_deep "$v" perf "$PY" "" $lim
	check_deep "$v" ptrace "$PY" "" $ptlim
	check_deep "$v" perf "$PY" threads $lim
	check_reused "$v" "$PY"
	# Four threads on two CPUs under ptrace: a CI run read 24.4/24.2/24.2/27.2 on 3.12, and
	# 3.13 28.5 once on a loaded machine: the CPU time of a thread found blocked at a tick
	# (waiting for the GIL) was dropped, and the thread in qsort's C code, without the GIL,
	# waits least. It is sampled where the thread runs next since 2026-11-29 (within 20 ms):
	# 25.1/25.0/25.0/25.0. 3 points still. And Debian's
	# 3.11 lost 1.4% of the Python and generator phases once (a generator resumed from an
	# unnamed native frame, matched by count: the goal of 1% is not met there yet): 2%.
	check_deep "$v" ptrace "$PY" threads ${ptlim% *} 3 2
	case $v in 3.11|debian-3.11) check_resumed "$v" "$PY" ptrace ;; esac
	# bpf: the frames read in the kernel at the sample (limits at the top)
	if [ "$bpf_ok" = 1 ]; then
		bpflim="1.5 4 2 1"
		case $v in 3.12|3.13) bpflim="1 4 2 1" ;; 3.14) bpflim="2 4 2 1" ;; esac
		want_returning=0
		case $v in 3.12|3.13) want_returning=1 ;; esac
		check_deep "$v" bpf "$PY" "" $bpflim
		check_deep "$v" bpf "$PY" threads $bpflim
		case $v in 3.11|debian-3.11) check_resumed "$v" "$PY" bpf ;; esac
	else
		skip "python-deep: $v bpf: the BPF backend is refused here: $(head -n 1 bpf-probe.err)"
	fi
done
[ "$ran" = 1 ] || skip "python-deep: no CPython 3.11-3.14 with ctypes here"
finish
