#!/usr/bin/env bash
# Python frames on a PyTorch CPU training loop (tests/python/torch_train.py, Debian's
# python3-torch on CPython 3.11): the report's top Python frames are the model's own functions
# (train_step, TinyNet.forward) and rank above the interpreter's _PyEval_EvalFrameDefault;
# torch's native code sits under the Python line that called it (the convolutions under
# TinyNet.forward -> Conv2d._conv_forward, autograd's engine under backward, never under
# another Python function: the frames of each interpreter activation are the ones it ran at
# the time of the sample); torch's own threads (OpenMP workers) carry no Python frames; the
# Python split (one torch thread) is printed beside a --mode ptrace run's (not asserted: it
# differs by more than 2 points in some pairs of runs: below), with at most 1% (ptrace, whose
# frames are copied at the stop: 0 measured, 0.7-2.4% when read after it) and 2.5% (perf) of
# the training samples without their Python frames (the goal is 1%: measured 0.58-0.98% in
# eight runs of 2026-11-29's eleventh session, 0.8-1.5% earlier since the loop's steps take 16-20
# ms, module calls from C whose frames were popped and reused before the read; 2.1-2.8%
# before, 0.15-0.3% with its slower steps of 2026-11-28; the limit was 6% until then).
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"

PY=${TORCH_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
	skip "python-torch: needs CPython 3.11 at $PY"
	exit 0
fi
if ! err=$("$PY" -c 'import torch' 2>&1); then
	skip "python-torch: $PY cannot import torch (apt-get install python3-torch): $(echo "$err" | tail -1)"
	exit 0
fi

"$CSAMPLER" record -q -o torch.data -- "$PY" "$SRC/torch_train.py" 4 >rec.out 2>rec.err
rc=$?
[ "$rc" = 0 ] && pass "python-torch: record the training loop ($(grep -o 'torch_train: [0-9]* steps' rec.err))" ||
	fail "python-torch: record rc $rc: $(tail -3 rec.err)"
"$CSAMPLER" report --limit 0 -i torch.data >report.txt 2>&1
"$CSAMPLER" folded -i torch.data >torch.folded 2>/dev/null
"$CSAMPLER" folded --per-thread -i torch.data >thr.folded 2>/dev/null

# ---- the model's functions, not the interpreter's ----
sed -n '/^Top functions by total/,/^$/p' report.txt >bytotal.txt
rank_of() { awk -v f="$1" '$NF == f { print NR; exit }' bytotal.txt; }
total_of() { awk -v f="$1" '$NF == f { print $4; exit }' bytotal.txt; }
ts=$(total_of train_step) fw=$(total_of TinyNet.forward) ev=$(total_of _PyEval_EvalFrameDefault)
echo "    by total: train_step ${ts:-0} (row $(rank_of train_step)), TinyNet.forward ${fw:-0}, _PyEval_EvalFrameDefault ${ev:-0}"
[ "${ts:-0}" -gt 200 ] && [ "${fw:-0}" -gt 50 ] &&
	pass "python-torch: train_step ($ts) and TinyNet.forward ($fw) are functions of the report" ||
	fail "python-torch: train_step ${ts:-0}, TinyNet.forward ${fw:-0} samples: the model's functions are missing"
[ "${ts:-0}" -gt "${ev:-0}" ] &&
	pass "python-torch: train_step ranks above _PyEval_EvalFrameDefault (${ev:-0})" ||
	fail "python-torch: _PyEval_EvalFrameDefault (${ev:-0}) outranks train_step (${ts:-0})"
grep -qE '^ .*TinyNet\.forward +[^ ]*torch_train\.py:[0-9]+$' <(sed -n '/^Python functions by self/,/^$/p' report.txt) &&
	pass "python-torch: the Python table names TinyNet.forward in torch_train.py" ||
	fail "python-torch: no TinyNet.forward row in the Python table"
# samples of the training loop that still show an interpreter activation (its frames were
# popped before csampler read them): a few, not the rule
read -r tr keep <<<"$(awk '/train_step \(/ { t += $NF; if (/_PyEval_EvalFrameDefault/) e += $NF } END { print t + 0, e + 0 }' torch.folded)"
[ "$tr" -gt 0 ] && [ "$keep" -le $((tr / 4)) ] &&
	pass "python-torch: $keep of $tr training samples keep an interpreter frame (<= 25%)" ||
	fail "python-torch: $keep of $tr training samples keep _PyEval_EvalFrameDefault"

# ---- native code under the Python line that ran it ----
grep -qE 'TinyNet\.forward \([^)]*torch_train\.py:[0-9]+\);([^;]*;)*Conv2d\._conv_forward \([^)]*\);([^;]*;)*[^;]*(convolution|dnnl)' torch.folded &&
	pass "python-torch: convolutions under TinyNet.forward -> Conv2d._conv_forward" ||
	fail "python-torch: no convolution under TinyNet.forward -> Conv2d._conv_forward"
# autograd's engine: the innermost Python frame above it is backward (torch/autograd), never a
# forward line or another function (that would be another op's frames, read later)
awk '/THPEngine_run_backward/ { s = $0; sub(/;THPEngine_run_backward.*/, "", s); n = split(s, f, ";"); py = "";
	for (i = n; i > 0; i--) if (f[i] ~ / \([^()]*:[0-9]+\)$/) { py = f[i]; break }
	if (py == "") none += $NF; else if (py ~ /^backward \([^)]*autograd/) ok += $NF; else { bad += $NF; if (!ex) ex = py } }
	END { printf "%d %d %d %s\n", ok, bad, none, ex }' torch.folded >bw.txt
read -r ok bad none ex <bw.txt
echo "    autograd engine samples: under backward $ok, under another Python frame $bad, native only $none"
[ "$ok" -gt 50 ] && [ "$bad" -le $(((ok + bad) / 50)) ] &&
	pass "python-torch: autograd's engine under backward ($ok), elsewhere $bad (<= 2%)" ||
	fail "python-torch: autograd's engine under backward $ok, under another Python frame $bad (${ex:-})"

# ---- perf mode's and ptrace's runs of the loop, one thread each ----
# (issue 21) the same loop under --mode perf and --mode ptrace (whose reads happen right after
# the stop): the share of each Python function (innermost Python frame of the training loop's
# samples) was to be within 2 points between them, and each leaves at most 2.5% (perf) and 1%
# (ptrace) of those samples without their Python frames (an interpreter frame left, or
# "[Python frames not read]"). Only the second is asserted. The loop's own split moved up to
# 20 points from run to run in every backend while its tensors' memory was mapped afresh each
# step (TinyNet.forward 8.9-25.8%, backward 45.5-65.8%); in malloc's heap (torch_train.py) it
# holds within about 2 points (three runs each, 2026-11-28: backward 45.8-46.9% under ptrace,
# 44.8-46.4% under bpf, 44.1-45.8% under perf events), but one run against another still moves
# 2-4 points: perf's against ptrace's 1.7-4.7 apart in six pairs, bpf's 0.2-3.6 in three; the
# means of six runs each within 1.7 points (README): printed as figures; t-python-deep holds each
# backend to 2 points on programs whose split is known, and the placement checks above hold
# the frames of this loop.
pysplit() { # folded -> "fn share" lines (%, of the samples under train_step), then "#lost N total"
	awk '/train_step \(/ { n = $NF; t += n; if (/_PyEval_EvalFrameDefault|\[Python frames not read\]/) l += n
		k = split($0, f, ";"); py = "";
		for (i = k; i > 0; i--) if (f[i] ~ / \([^()]*:[0-9]+\)( [0-9]+)?$/) { py = f[i]; break }
		sub(/ \(.*/, "", py); c[py] += n }
		END { for (p in c) printf "%s %.2f\n", p, 100 * c[p] / t; printf "#lost %d %d\n", l, t }' "$1"
}
# (one torch thread in both: with two, the main thread's waits on the other vary with the load)
if "$CSAMPLER" record -q --mode perf -o perf1.data -- "$PY" "$SRC/torch_train.py" 4 1 >/dev/null 2>perf1.err &&
	"$CSAMPLER" record -q --mode ptrace -o pt.data -- "$PY" "$SRC/torch_train.py" 4 1 >/dev/null 2>pt.err; then
	"$CSAMPLER" folded -i perf1.data >perf1.folded 2>perf1.ferr
	"$CSAMPLER" folded -i pt.data >pt.folded 2>pt.ferr
	pysplit perf1.folded >split.perf
	pysplit pt.folded >split.pt
	worst=$(join <(grep -v '^#' split.perf | sort) <(grep -v '^#' split.pt | sort) -a1 -a2 -e 0 -o 0,1.2,2.2 |
		awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > w) { w = d; f = $1 } } END { printf "%.2f %s\n", w, f }')
	echo "    Python split, perf vs ptrace: $(sort -k2 -nr split.perf | grep -v '^#' | head -4 | tr '\n' ' ')| $(sort -k2 -nr split.pt | grep -v '^#' | head -4 | tr '\n' ' ')"
	echo "    (largest difference ${worst% *} points, ${worst#* }: a figure, not asserted; see above)"
	echo "    $(grep -o 'ptrace: [0-9]* stops.*' pt.err)"
	for m in perf:2.5 pt:1; do
		read -r _ l t <<<"$(grep '^#lost' split.${m%:*})"
		awk -v l="$l" -v t="$t" -v p="${m#*:}" 'BEGIN { exit !(t > 200 && 100 * l <= p * t) }' &&
			pass "python-torch: ${m%:*}: Python frames not read in $l of $t training samples (<= ${m#*:}%)" ||
			{ fail "python-torch: ${m%:*}: Python frames not read in $l of $t training samples (> ${m#*:}%)"
			  f=perf1; [ "${m%:*}" = pt ] && f=pt
			  echo "    $f: $(awk '{ n += $NF } END { print n + 0 }' $f.folded) samples in all; its record's last lines:"
			  tail -n 4 $f.err | sed 's/^/    /'; head -n 2 $f.ferr | sed "s/^/    folded: /"
			  echo "    its heaviest stacks:"; awk '{ print $NF, substr($0, 1, 200) }' $f.folded | sort -nr | head -3 | sed 's/^/    /'; }
	done
elif grep -qiE 'ptrace.*(not permitted|refus|denied|unavailable)' pt.err; then
	skip "python-torch: --mode ptrace: ptrace is refused here: $(head -1 pt.err)"
else
	fail "python-torch: one-thread runs: record failed: $(tail -2 perf1.err pt.err)"
fi

# ---- --mode bpf: the frames read in the kernel at the sample ----
# The same one-thread loop with the BPF backend (SKIPPED where BPF is refused): nothing moves
# between the sample and the read, so the goal holds: at most 1% of the training samples
# without their Python frames (measured 0 of 1096); its split is printed beside ptrace's.
if [ ! -s split.pt ]; then
	skip "python-torch: bpf: no ptrace run to compare with"
elif ! "$CSAMPLER" record -q --mode bpf -o bpf1.data -- "$PY" "$SRC/torch_train.py" 4 1 >/dev/null 2>bpf1.err; then
	if grep -q "bpf:" bpf1.err; then
		skip "python-torch: bpf: the BPF backend is refused here: $(head -n 1 bpf1.err)"
	else
		fail "python-torch: bpf: record failed: $(tail -2 bpf1.err)"
	fi
else
	"$CSAMPLER" folded -i bpf1.data >bpf1.folded 2>/dev/null
	pysplit bpf1.folded >split.bpf
	worst=$(join <(grep -v '^#' split.bpf | sort) <(grep -v '^#' split.pt | sort) -a1 -a2 -e 0 -o 0,1.2,2.2 |
		awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > w) { w = d; f = $1 } } END { printf "%.2f %s\n", w, f }')
	echo "    Python split, bpf: $(sort -k2 -nr split.bpf | grep -v '^#' | head -4 | tr '\n' ' ')"
	echo "    (largest difference from ptrace's ${worst% *} points, ${worst#* }: a figure, not asserted)"
	read -r _ l t <<<"$(grep '^#lost' split.bpf)"
	awk -v l="$l" -v t="$t" 'BEGIN { exit !(t > 200 && 100 * l <= t) }' &&
		pass "python-torch: bpf: Python frames not read in $l of $t training samples (<= 1%)" ||
		fail "python-torch: bpf: Python frames not read in $l of $t training samples (> 1%)"
fi

# ---- torch's threads ----
pid=$(awk '/^Processes/ { getline; getline; print $3; exit }' report.txt)
awk -v pid="$pid" '{ split($1, fr, ";"); root = fr[1]; tid = root; sub(/.*-/, "", tid);
	if (tid == pid) next; n[root] += $NF; if ($0 ~ / \([^()]*:[0-9]+\);|\([^()]*:[0-9]+\) [0-9]+$/) py[root] += $NF }
	END { k = 0; p = 0; for (r in n) { k++; p += py[r] } print k, p }' thr.folded >thr.txt
read -r nthr pyin <thr.txt
[ "$nthr" -ge 1 ] && [ "$pyin" = 0 ] &&
	pass "python-torch: torch's $nthr other threads sampled, none with Python frames" ||
	fail "python-torch: $nthr other threads, $pyin of their samples with Python frames"
# ---- --mode bpf: complete stacks (issue 22: >= 98% with the row cache warm) ----
# The same loop walked in the kernel, twice with a row cache of its own: the first run builds
# the rows (cold), the second reads them (warm). Measured warm 98.6-99.0% (perf mode 98.3-98.7%,
# before this round 93.5-94.4%), cold 98.7-99.1%; cold is held to 97, as samples taken before
# their file's rows are loaded depend on the build's timing under load. The rest: samples in the
# process' exit after its address space is gone (kernel frames only; perf mode has none) and in
# libraries while ld.so loads them.
complete_of() { "$CSAMPLER" report -i "$1" --format json 2>/dev/null |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["unwind"]["complete_pct"])' 2>/dev/null; }
if ! "$CSAMPLER" record --mode bpf -o probe.data -- true >probe.out 2>&1; then
	skip "python-torch: bpf: the BPF backend is refused here: $(head -n 1 probe.out)"
else
	for c in cold warm; do
		XDG_CACHE_HOME="$PWD/bpfcache" "$CSAMPLER" record --mode bpf -o bpf-$c.data -- "$PY" "$SRC/torch_train.py" 4 >bpf-$c.out 2>&1 ||
			fail "python-torch: bpf ($c row cache): record failed: $(tail -2 bpf-$c.out)"
	done
	pc=$(complete_of torch.data) bc=$(complete_of bpf-cold.data) bw=$(complete_of bpf-warm.data)
	echo "    complete stacks: perf mode ${pc:-?}%, bpf cold ${bc:-?}%, warm ${bw:-?}%; $(grep -o 'unwind tables: [^;]*' bpf-warm.out)"
	awk -v w="${bw:-0}" -v p="${pc:-0}" 'BEGIN { exit !(w >= 98 && w >= p - 1) }' &&
		pass "python-torch: bpf: ${bw}% of the stacks complete with the row cache warm (>= 98, perf mode ${pc}%)" ||
		fail "python-torch: bpf: ${bw:-?}% of the stacks complete with the row cache warm (want >= 98 and within 1 point of perf mode's ${pc:-?}%)"
	awk -v c="${bc:-0}" -v p="${pc:-0}" 'BEGIN { exit !(c >= 97 && c >= p - 2) }' &&
		pass "python-torch: bpf: ${bc}% complete with the row cache cold (>= 97)" ||
		fail "python-torch: bpf: ${bc:-?}% complete with the row cache cold (want >= 97 and within 2 points of perf mode's ${pc:-?}%)"
fi
finish
