#!/usr/bin/env bash
# t-speedscope-file.sh: `csampler export --format speedscope` on a real recording of
# tests/progs/report-mix (main thread in hot_main, thread "rm-worker" in hot_worker): valid
# JSON in speedscope's file format, one sampled profile per thread named "comm tid", frames
# interned once, and sample counts and weights (weight x period) that agree with `csampler
# folded`. Then speedscope itself (npm, as t-speedscope.sh) loads it in headless Chromium and
# lists each thread and the known functions. The browser part is SKIPPED without chromium/node.
source "$CSAMPLER_ROOT/tests/lib.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

if ! command -v node >/dev/null; then
	skip "export/speedscope-file: node is needed to read the JSON"
	finish
fi
cp "$TPROG/report-mix" ./mix
if ! "$CSAMPLER" record -q -o mix.data -- ./mix 0.3 >rec.out 2>rec.err ||
   ! "$CSAMPLER" -q export --format speedscope -i mix.data -o s.json 2>export.err ||
   ! "$CSAMPLER" folded -i mix.data >folded.txt 2>folded.err; then
	fail "export/speedscope-file: record, export or folded failed: $(tail -n 3 rec.err export.err folded.err | tr '\n' ' ')"
	finish
fi
check "export/speedscope-file: valid JSON" node -e "JSON.parse(require('fs').readFileSync('s.json','utf8'))"

folded_total=$(awk '{ n += $NF } END { print n + 0 }' folded.txt)
# Each check prints "ok" or why not.
out=$(node - s.json "$folded_total" <<'JS'
const fs = require('fs');
const [file, total] = process.argv.slice(2);
const d = JSON.parse(fs.readFileSync(file, 'utf8'));
const why = [];
if (!/speedscope/.test(d.$schema)) why.push('no speedscope $schema');
const frames = d.shared.frames;
const keys = frames.map((f) => `${f.name}\0${f.file}\0${f.line}`);
if (new Set(keys).size !== keys.length) why.push('a frame is listed twice');
let weightSum = 0, count = 0, period = 0;
const names = [];
for (const p of d.profiles) {
	names.push(p.name);
	if (p.type !== 'sampled' || p.unit !== 'nanoseconds') why.push(`${p.name}: type ${p.type} unit ${p.unit}`);
	if (p.samples.length !== p.weights.length) why.push(`${p.name}: ${p.samples.length} samples, ${p.weights.length} weights`);
	for (const s of p.samples)
		if (s.some((i) => !(i >= 0 && i < frames.length))) { why.push(`${p.name}: frame index out of range`); break; }
	for (const w of p.weights) { weightSum += w; period = period ? Math.min(period, w) : w; }
	count += p.samples.length;
	if (p.endValue <= p.startValue) why.push(`${p.name}: empty time span`);
}
// Every record of report-mix stands for one sample, so the smallest weight is the period.
if (Math.round(weightSum / period) !== Number(total)) why.push(`weights / period ${weightSum / period} != folded total ${total}`);
if (count !== Number(total)) why.push(`${count} samples != folded total ${total}`);
if (!names.some((n) => /^rm-worker \d+$/.test(n))) why.push(`no "rm-worker TID" profile in ${names}`);
if (d.profiles.length !== 2) why.push(`${d.profiles.length} profiles, want 2 (two threads)`);
const main = d.profiles.find((p) => /^mix \d+$/.test(p.name));
// hot_main can be several frames (one per source line sampled).
const isHot = (i) => frames[i].name === 'hot_main';
if (!main) why.push(`no "mix TID" profile in ${names}`);
else if (!main.samples.some((s) => isHot(s[s.length - 1]))) why.push('hot_main is no leaf of the main thread');
else if (main.samples.some((s) => s.length > 1 && isHot(s[0]))) why.push('samples are not root first');
console.log(why.length ? why.join('; ') : 'ok');
JS
)
[ "$out" = ok ] && pass "export/speedscope-file: profiles, frames, counts agree with folded ($folded_total samples)" ||
	fail "export/speedscope-file: $out"

if [ -z "$CHROMIUM" ]; then
	skip "export/speedscope-file: Debian's chromium is not installed (scripts/install-deps.sh --test installs it)"
	finish
fi
if ! command -v npm >/dev/null; then
	skip "export/speedscope-file: npm is needed to install playwright-core and speedscope"
	finish
fi
if [ ! -f "$CSAMPLER_ROOT/tests/node_modules/playwright-core/package.json" ] ||
   [ ! -f "$CSAMPLER_ROOT/tests/node_modules/speedscope/dist/release/index.html" ]; then
	if ! (cd "$CSAMPLER_ROOT/tests" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
		>npm.log 2>&1; then
		skip "export/speedscope-file: npm could not install playwright-core and speedscope: $(tail -n 2 npm.log | tr '\n' ' ')"
		finish
	fi
fi
# The first profile is the first thread, the main one: its table has hot_main and its callers.
first=$(node -e "console.log(JSON.parse(require('fs').readFileSync('s.json','utf8')).profiles[0].name)")
case "$first" in
"mix "*) want=hot_main,chain_inner,chain_outer ;;
*) want=hot_worker ;;
esac
mkdir -p "$CSAMPLER_ROOT/tests/out"
CHROMIUM=$CHROMIUM timeout 240 node "$CSAMPLER_ROOT/tests/export/speedscope.js" s.json \
	"$CSAMPLER_ROOT/tests/out/export-speedscope-file.png" "$want" >browser.out 2>browser.err
rc=$?
cat browser.out
if [ $rc != 0 ] && ! grep -q '^FAIL:' browser.out; then
	fail "export/speedscope-file: speedscope.js exited with status $rc: $(tail -n 3 browser.err | tr '\n' ' ')"
fi
finish
