#!/usr/bin/env bash
# t-gpu-idle.sh: GPU idle time explained by the CPU (profiler/analysis/gpu_idle.h), end to end
# through `csampler record --gpu on` and the stand-in CUPTI, on workloads that play real time
# (tests/cupti/driver.c, "real-time scenarios"; tests/cupti/gil_launch.py): the CPU spends the
# time in named functions while csampler samples it, and the GPU records carry timestamps of the
# same clock. Exact where the script decides (kernel ns, busy, window, idle ns and intervals,
# recomputed by the driver from the records the library wrote; per step busy), thresholds where
# sampling does (shares):
#   dataload   input-bound, >= 90% of the idle samples under decode_batch, the cause names it;
#              the table, the verdict line, folded/flame --gpu-idle, the chrome idle track,
#              and (when report has --steps) the NVTX "step" ranges
#   tiny       launch-bound, idle samples mostly of class launch
#   syncbound  sync-bound, the idle time under postprocess
#   gpubound   GPU-bound, the little idle time under save_checkpoint
#   gil        (record --idle) off-CPU-bound, mostly class offcpu, the GIL wait (take_gil)
. "$(dirname "$0")/../lib.sh"
export LC_ALL=C
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
PYLIB=$CSAMPLER_ROOT/bin/tests/cupti/libpylaunch.so
if [ ! -f "$LIB" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	skip "gpu-idle: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
	finish
fi
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ] || [ ! -f "$PYLIB" ]; then
	fail "gpu-idle: lib/libcsampler-cupti.so, $DRIVER or $PYLIB was not built (make test-programs)"
	finish
fi

# The checks of one JSON report: node prints "PASS|name" and "FAIL|name: why" lines.
cat >check.js <<'EOF'
const fs = require('fs');
const [scenario, file, figs] = process.argv.slice(2);
const j = JSON.parse(fs.readFileSync(file, 'utf8'));
const f = {};  // the driver's "ok:" figures: key value ...
(figs || '').split(/\s+/).forEach((w, i, a) => { if (i % 2 === 0 && a[i + 1] !== undefined) f[w] = Number(a[i + 1]); });
const out = (ok, name, why) => console.log((ok ? 'PASS|' : 'FAIL|') + 'gpu-idle/' + scenario + ': ' + name + (ok ? '' : ': ' + why));
const g = j.gpu || {};
const idle = g.idle;
if (!idle) { out(false, 'gpu.idle', 'no gpu.idle in the JSON (keys: ' + Object.keys(g).join(',') + ')'); process.exit(0); }
const v = (g.verdicts || [])[0] || {};
const dev = (g.devices || [])[0] || {};
const sum = (a, fn) => a.reduce((s, x) => s + fn(x), 0);
const has = (st, fn) => (st.stack || []).includes(fn);
const share = fn => idle.samples ? sum(idle.stacks.filter(s => has(s, fn)), s => s.samples) / idle.samples : 0;
const pct = x => (100 * x).toFixed(1) + '%';
const C = ['cpu', 'launch', 'sync', 'offcpu'];

// -- exact figures: from the records the library wrote (the driver's ok: line) --
if (f.kernel_ns !== undefined) {
  const got = [g.kernel_ns, dev.busy_ns, dev.window_ns, idle.idle_ns, idle.intervals, v.idle_ns];
  const want = [f.kernel_ns, f.busy_ns, f.window_ns, f.idle_ns, f.intervals, f.idle_ns];
  out(JSON.stringify(got) === JSON.stringify(want),
      `kernel ns ${f.kernel_ns}, busy ${f.busy_ns}, window ${f.window_ns}, idle ${f.idle_ns} ns in ${f.intervals} intervals as the records say (verdict's idle_ns too)`,
      `got kernel/busy/window/idle/intervals/verdict idle ${got.join(' ')}, want ${want.join(' ')}`);
} else {
  out(idle.idle_ns === dev.window_ns - dev.busy_ns && v.idle_ns === idle.idle_ns,
      `idle ns = window - busy (${idle.idle_ns})`, `idle ${idle.idle_ns}, window ${dev.window_ns}, busy ${dev.busy_ns}, verdict ${v.idle_ns}`);
}
if (f.scripted_kernel_ns !== undefined)
  out(g.kernel_ns === f.scripted_kernel_ns, `kernel ns as scripted (${f.scripted_kernel_ns})`, `${g.kernel_ns}`);

// -- the sums add up --
{
  const errs = [];
  const cs = sum(C, c => idle.classes[c].samples), cn = sum(C, c => idle.classes[c].idle_ns);
  const ss = sum(idle.stacks, s => s.samples), sn = sum(idle.stacks, s => s.idle_ns);
  const tol = 1e-6 * idle.sampled_ns + idle.stacks.length + 1;
  if (!(idle.sampled_ns <= idle.idle_ns)) errs.push(`sampled_ns ${idle.sampled_ns} > idle_ns`);
  if (cs !== idle.samples) errs.push(`classes' samples ${cs} != ${idle.samples}`);
  if (ss !== idle.samples) errs.push(`stacks' samples ${ss} != ${idle.samples}`);
  if (Math.abs(cn - idle.sampled_ns) > tol) errs.push(`classes' idle_ns ${cn} != sampled_ns ${idle.sampled_ns}`);
  if (Math.abs(sn - idle.sampled_ns) > tol) errs.push(`stacks' idle_ns ${sn} != sampled_ns ${idle.sampled_ns}`);
  idle.stacks.forEach((s, i) => {
    if (i && idle.stacks[i - 1].idle_ns < s.idle_ns) errs.push(`stacks not sorted at ${i}`);
    if (Math.abs(s.percent - 100 * s.idle_ns / idle.sampled_ns) > 0.01) errs.push(`stack ${i}: percent ${s.percent}`);
    if (!C.includes(s.class) || !Array.isArray(s.stack) || !s.stack.length || s.pid !== v.pid) errs.push(`stack ${i}: class ${s.class} pid ${s.pid} stack ${s.stack}`);
  });
  out(!errs.length, `classes and stacks add up to the ${idle.samples} idle samples and ${idle.sampled_ns} sampled ns, sorted, percents of sampled ns`, errs.slice(0, 4).join('; '));
}
const cls = c => idle.samples ? idle.classes[c].samples / idle.samples : 0;
const cause = v.cause || {};
const desc = `verdict ${v.bound}, cause ${JSON.stringify({ class: cause.class, leaf: cause.leaf, python: cause.python, stack: (cause.stack || []).slice(0, 8) })}, classes ${C.map(c => c + ' ' + idle.classes[c].samples).join(' ')}, top stack ${(idle.stacks[0] || { stack: [] }).stack.slice(0, 6).join(';')}`;

switch (scenario) {
case 'dataload': {
  out(idle.samples >= 300, `enough idle samples (${idle.samples})`, `${idle.samples} idle samples, want >= 300`);
  const d = share('decode_batch');
  out(d >= 0.9, `${pct(d)} of the idle samples under decode_batch (>= 90%)`, desc);
  out(cls('cpu') >= 0.9, `${pct(cls('cpu'))} of the idle samples of class cpu`, desc);
  out(v.bound === 'input-bound' && cause.class === 'cpu' && cause.leaf === 'decode_batch' && cause.python === '' &&
      (cause.stack || [])[0] === 'decode_batch' && cause.stack[1] === 'load_batch' && cause.percent >= 80,
      `input-bound, cause decode_batch <- load_batch (class cpu, ${cause.percent}% of the idle time)`, desc);
  break;
}
case 'tiny':
  out(idle.samples >= 150, `enough idle samples (${idle.samples})`, `${idle.samples} idle samples, want >= 150`);
  out(cls('launch') >= 0.7, `${pct(cls('launch'))} of the idle samples of class launch (>= 70%)`, desc);
  out(v.bound === 'launch-bound' && cause.class === 'launch' && (cause.stack || []).includes('tiny_launch'),
      `launch-bound, cause of class launch under tiny_launch (leaf ${cause.leaf})`, desc);
  break;
case 'syncbound': {
  out(idle.samples >= 150, `enough idle samples (${idle.samples})`, `${idle.samples} idle samples, want >= 150`);
  const p = share('postprocess');
  out(p >= 0.8, `${pct(p)} of the idle samples under postprocess (>= 80%)`, desc);
  out(v.bound === 'sync-bound' && v.sync_pct >= 30 && (!v.cause || cause.leaf === 'postprocess'),
      `sync-bound (blocked ${v.sync_pct.toFixed(1)}% of the window${v.cause ? ', idle time under ' + cause.leaf : ''})`, desc + `, sync_pct ${v.sync_pct}`);
  break;
}
case 'gpubound': {
  out(v.bound === 'GPU-bound' && v.util_pct >= 80, `GPU-bound (busy ${v.util_pct.toFixed(1)}%)`, desc + `, util ${v.util_pct}`);
  const c = share('save_checkpoint');
  if (idle.samples >= 5)
    out(c >= 0.5, `${pct(c)} of the ${idle.samples} idle samples under save_checkpoint`, desc);
  else
    console.log(`SKIPPED|gpu-idle/gpubound: only ${idle.samples} idle samples (a loaded machine), save_checkpoint's share not checked`);
  break;
}
case 'gil': {
  const takeGil = process.env.TAKE_GIL === '1';
  out(idle.samples >= 300, `enough idle samples (${idle.samples})`, `${idle.samples} idle samples, want >= 300`);
  out(cls('offcpu') >= 0.5, `${pct(cls('offcpu'))} of the idle samples of class offcpu (>= 50%)`, desc);
  const w = takeGil ? share('take_gil') : 0;
  if (takeGil)
    out(w >= 0.5, `${pct(w)} of the idle samples wait in take_gil`, desc);
  out(v.bound === 'off-CPU-bound' && cause.class === 'offcpu' &&
      (!takeGil || ((cause.leaf === 'take_gil' || cause.leaf === '[off-cpu: futex]') && (cause.stack || []).includes('take_gil'))) &&
      /^(launch|spin|prepare|main) \((.*\/)?gil_launch\.py:\d+\)$/.test(cause.python),
      `off-CPU-bound, cause ${cause.leaf} (class offcpu, Python ${cause.python})`, desc);
  break;
}
}
EOF
check_json() {  # SCENARIO JSON [FIGURES]
	local line
	while IFS= read -r line; do
		case "$line" in
		PASS\|*) pass "${line#PASS|}" ;;
		FAIL\|*) fail "${line#FAIL|}" ;;
		SKIPPED\|*) skip "${line#SKIPPED|}" ;;
		*) fail "gpu-idle/$1: checker: $line" ;;
		esac
	done < <(node check.js "$@" 2>&1)
}
# record SCENARIO: S.data, S.json and the driver's figures in S.figs (key value ...)
record() {
	LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on -o "$1.data" -- \
		sh -c 'exec "$0" "$1" "$CUDA_INJECTION64_PATH"' "$DRIVER" "$1" >"$1.out" 2>"$1.err"
	local rc=$?
	if [ $rc != 0 ] || ! grep -q "^ok: $1: " "$1.out"; then
		fail "gpu-idle/$1: recording through the stand-in failed (exit $rc): $(tail -n 3 "$1.err" "$1.out" | tr '\n' ' ')"
		return 1
	fi
	sed -n "s/^ok: $1: //p" "$1.out" >"$1.figs"
	echo " scripted_kernel_ns $(sed -n "s/^script: $1 .*kernel_ns \([0-9]*\).*/\1/p" "$1.out")" >>"$1.figs"
	if ! "$CSAMPLER" report -i "$1.data" --format json --limit 0 >"$1.json" 2>"$1.rerr"; then
		fail "gpu-idle/$1: report --format json: $(head -c 300 "$1.rerr")"
		return 1
	fi
}
figure() { tr ' ' '\n' <"$1.figs" | grep -A1 -x "$2" | tail -n 1; }

# -- dataload: the whole interface --
dataload_text() {
	local txt=dataload.txt n total under top
	"$CSAMPLER" report -i dataload.data >$txt 2>&1
	if grep -q "^GPU idle time by CPU stack" $txt &&
	   sed -n '/^GPU idle time by CPU stack/,/^$/p' $txt | grep -m1 -E '^ +[0-9.]+ ' | grep -q " cpu  *decode_batch <- load_batch <- "; then
		pass "gpu-idle/dataload: text table 'GPU idle time by CPU stack', first row decode_batch <- load_batch (class cpu)"
	else
		fail "gpu-idle/dataload: text table: $(sed -n '/^GPU idle time by CPU stack/,/^$/p' $txt | head -n 5 | cut -c1-160 | tr '\n' '|')"
	fi
	local verdict
	verdict=$(sed -n '/^GPU verdict/,/^$/p' $txt | grep "input-bound\.")
	if echo "$verdict" | grep -qE "decode_batch \([0-9.]+% of it\)" && ! echo "$verdict" | grep -q "CUDA graphs"; then
		pass "gpu-idle/dataload: the verdict line names decode_batch with its share, no 'CUDA graphs'"
	else
		fail "gpu-idle/dataload: verdict line: $(sed -n '/^GPU verdict/,/^$/p' $txt | tail -n +2 | cut -c1-500)"
	fi
	# folded --gpu-idle: only the idle samples, root first, weights = samples
	"$CSAMPLER" folded --gpu-idle -i dataload.data >idle.folded 2>folded.err || fail "gpu-idle/dataload: folded --gpu-idle: $(head -c 200 folded.err)"
	n=$(json_get dataload.json j.gpu.idle.samples)
	total=$(awk '{ s += $NF } END { print s + 0 }' idle.folded)
	under=$(awk '/;decode_batch(;| )/ { s += $NF } END { print s + 0 }' idle.folded)
	top=$(awk '{ print $NF, $0 }' idle.folded | sort -nr | head -n 1 | cut -d' ' -f2-)
	if [ "$total" = "$n" ] && [ $((under * 10)) -ge $((total * 9)) ] && [[ "$top" == *";dl_step;load_batch;decode_batch "* ]]; then
		pass "gpu-idle/dataload: folded --gpu-idle: $total samples (= gpu.idle.samples), $under under decode_batch, heaviest ...;dl_step;load_batch;decode_batch"
	else
		fail "gpu-idle/dataload: folded --gpu-idle: $total samples (gpu.idle.samples $n), $under under decode_batch, heaviest: $(echo "$top" | cut -c1-200)"
	fi
	# flame --gpu-idle: the same samples drawn; the SVG carries the idle ns for the tooltips
	"$CSAMPLER" flame --gpu-idle -i dataload.data >idle.svg 2>flame.err
	"$CSAMPLER" flame --gpu-idle --dump-layout --minwidth 0 -i dataload.data >idle.layout 2>>flame.err
	local root dec
	root=$(awk '!/^#/ && $1 == 0 { print $5 }' idle.layout)
	dec=$(awk '!/^#/ && $7 == "decode_batch" { s += $5 } END { print s + 0 }' idle.layout)
	if [ "$root" = "$n" ] && [ $((dec * 10)) -ge $((n * 9)) ] && head -c 100 idle.svg | grep -q "<?xml" &&
	   tail -c 20 idle.svg | grep -q "</svg>" && grep -q "idle_ns" idle.svg && grep -q "decode_batch" idle.svg; then
		pass "gpu-idle/dataload: flame --gpu-idle draws the $n idle samples ($dec in decode_batch), SVG with idle ns for its tooltips"
	else
		fail "gpu-idle/dataload: flame --gpu-idle: root $root (want $n), decode_batch $dec, svg $(wc -c <idle.svg) bytes, idle_ns $(grep -c idle_ns idle.svg); $(head -c 200 flame.err)"
	fi
	# chrome export: one "GPU idle" event per interval on the idle track
	"$CSAMPLER" export --format chrome -i dataload.data -o trace.json 2>export.err || fail "gpu-idle/dataload: export: $(head -c 200 export.err)"
	local res
	res=$(node -e "
const j = JSON.parse(require('fs').readFileSync('trace.json', 'utf8'));
const idle = JSON.parse(require('fs').readFileSync('dataload.json', 'utf8')).gpu.idle;
const ev = (j.traceEvents || j).filter(e => e.cat === 'gpu-idle');
const errs = [];
if (ev.length !== idle.intervals) errs.push(ev.length + ' events for ' + idle.intervals + ' intervals');
if (ev.some(e => e.name !== 'GPU idle' || e.ph !== 'X' || typeof e.args.samples !== 'number')) errs.push('name/ph/args: ' + JSON.stringify(ev[0]));
const dur = ev.reduce((s, e) => s + e.dur, 0), s = ev.reduce((a, e) => a + e.args.samples, 0);
if (Math.abs(dur * 1000 - idle.idle_ns) > 1e-4 * idle.idle_ns + ev.length) errs.push('durations ' + dur + ' us for ' + idle.idle_ns + ' ns');
if (s !== idle.samples) errs.push('samples ' + s + ' for ' + idle.samples);
const d = ev.filter(e => typeof e.args.top_stack === 'string' && e.args.top_stack.startsWith('decode_batch;load_batch;')).reduce((a, e) => a + e.args.samples, 0);
if (d * 10 < s * 9) errs.push(d + ' of ' + s + ' samples in intervals whose top stack is decode_batch;load_batch;...');
console.log(errs.length ? 'FAIL ' + errs.join('; ') : 'ok ' + ev.length + ' events, ' + s + ' samples, ' + d + ' in intervals topped by decode_batch');" 2>&1)
	case "$res" in
	ok*) pass "gpu-idle/dataload: chrome export's idle track: ${res#ok }" ;;
	*) fail "gpu-idle/dataload: chrome export's idle track: $res" ;;
	esac
}

# report --steps (another engineer's): the NVTX ranges "step"; skipped while report lacks it
dataload_steps() {
	if ! "$CSAMPLER" report --steps -i dataload.data --format json >steps.json 2>steps.err; then
		if grep -qi "unknown option" steps.err; then
			skip "gpu-idle/steps: report --steps is not supported yet ($(head -n 1 steps.err))"
		else
			fail "gpu-idle/steps: report --steps: $(head -c 300 steps.err)"
		fi
		return
	fi
	local res
	res=$(node -e "
const j = JSON.parse(require('fs').readFileSync('steps.json', 'utf8'));
const want = Number(process.argv[1]), idle_ns = JSON.parse(require('fs').readFileSync('dataload.json', 'utf8')).gpu.idle.idle_ns;
const st = j.steps || {}, s = st.steps || [];
const errs = [];
if (st.source !== 'nvtx:step') errs.push('source ' + st.source);
if (s.length !== want) errs.push(s.length + ' steps, the script ran ' + want);
s.forEach((x, i) => {
  if (x.step !== i + 1 || !(x.wall_ns > 0)) errs.push('step ' + i + ': ' + JSON.stringify(x).slice(0, 120));
  /* every step holds its three kernels, 900 us of GPU time */
  else if (Math.abs(x.gpu_busy_pct - 100 * 900000 / x.wall_ns) > 0.051) errs.push('step ' + x.step + ': busy ' + x.gpu_busy_pct + '% for 900 us in ' + x.wall_ns + ' ns');
});
const sumIdle = s.reduce((a, x) => a + (x.gpu_idle_ns || 0), 0);
if (sumIdle > idle_ns) errs.push('steps idle ' + sumIdle + ' > ' + idle_ns);
const dec = s.filter(x => x.idle_cause && x.idle_cause.leaf === 'decode_batch').length;
if (dec * 10 < s.length * 8) errs.push('idle_cause decode_batch in ' + dec + ' of ' + s.length + ' steps: ' + JSON.stringify(s.slice(0, 2)).slice(0, 300));
console.log(errs.length ? 'FAIL ' + errs.slice(0, 4).join('; ') : 'ok ' + s.length + ' steps, 900 us busy each, idle_cause decode_batch in ' + dec);" "$(figure dataload steps)" 2>&1)
	case "$res" in
	ok*) pass "gpu-idle/steps: report --steps finds the NVTX ranges 'step': ${res#ok }" ;;
	*) fail "gpu-idle/steps: $res" ;;
	esac
}

for s in dataload tiny syncbound gpubound; do
	record $s || continue
	check_json $s $s.json "$(cat $s.figs)"
	case $s in
	dataload) dataload_text; dataload_steps ;;
	esac
done

# -- gil: a Python launcher starved by GIL contention, recorded with --idle --
PY=
for v in 3.11 3.12 3.13; do
	p=$(command -v python$v) || continue
	p=$("$p" -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$p" ] && { PY=$p; break; }
done
if [ -z "$PY" ]; then
	skip "gpu-idle/gil: no CPython 3.11, 3.12 or 3.13 (the versions whose frames csampler reads)"
	finish
fi
# take_gil is static: named only when the interpreter (or its libpython) keeps its symbol table
TAKE_GIL=0
for f in "$PY" $(ldd "$PY" 2>/dev/null | awk '/libpython/ { print $3 }'); do
	nm "$f" 2>/dev/null | grep -qw take_gil && TAKE_GIL=1
done
export TAKE_GIL
LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --idle --gpu on -o gil.data -- "$PY" "$CSAMPLER_ROOT/tests/cupti/gil_launch.py" "$PYLIB" >gil.out 2>gil.err
rc=$?
if [ $rc != 0 ] || ! grep -q "^ok: gil: " gil.out; then
	fail "gpu-idle/gil: record --idle of gil_launch.py failed (exit $rc): $(tail -n 3 gil.err gil.out | tr '\n' ' ')"
	finish
fi
"$CSAMPLER" report -i gil.data --format json --limit 0 >gil.json 2>gil.rerr || fail "gpu-idle/gil: report: $(head -c 300 gil.rerr)"
check_json gil gil.json "scripted_kernel_ns $(sed -n 's/^ok: gil: .*kernel_ns \([0-9]*\).*/\1/p' gil.out)"
[ "$TAKE_GIL" = 1 ] || skip "gpu-idle/gil: $PY has no symbol take_gil (stripped): the GIL wait is not checked by name"
"$CSAMPLER" report -i gil.data >gil.txt 2>&1
leaf=$(json_get gil.json "(j.gpu.verdicts[0].cause || {}).leaf")
if sed -n '/^GPU verdict/,/^$/p' gil.txt | grep "off-CPU-bound\." | grep -qF -- "$leaf" &&
   sed -n '/^GPU verdict/,/^$/p' gil.txt | grep "off-CPU-bound\." | grep -q "gil_launch\.py:"; then
	pass "gpu-idle/gil: the verdict line names $leaf and the Python line"
else
	fail "gpu-idle/gil: verdict line (cause leaf $leaf): $(sed -n '/^GPU verdict/,/^$/p' gil.txt | tail -n +2 | cut -c1-500)"
fi
finish
