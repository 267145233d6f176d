#!/usr/bin/env bash
# t-gpu-report.sh: `csampler report`'s GPU tables on files recorded through the stand-in CUPTI
# (tests/cupti/script.h). The "workload" scenario: the kernel table, per-stream and device
# busy time, the window and the main thread's blocked time must equal what `driver expect`
# computes from the script alone; every kernel waited 700 ns in the launch queue; the verdict is
# launch-bound; scripts/gpu-profile.sh's reader of the JSON finds the kernel table. The
# "syncwait" scenario: each wait is blamed on the kernel it waited for, the verdict is
# sync-bound, and the whole "gpu" object (pids, tids and deep frames normalised) equals
# tests/cupti/gpu-report-syncwait.json.
. "$(dirname "$0")/../lib.sh"
export LC_ALL=C
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
if [ ! -f "$LIB" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	skip "gpu-report: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
	finish
fi
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	fail "gpu-report: lib/libcsampler-cupti.so or $DRIVER was not built (make test-programs)"
	finish
fi
# record SCENARIO FILE [OPTIONS]: launch-queue timestamps on (--gpu-latency) unless OPTIONS.
# At -F 1 (one sample a second of a thread's CPU time) the files hold GPU records and no CPU
# samples: which CPU samples fall inside the script's idle gaps depends on the machine's load (a
# context switch's sample once gave the syncwait gap a cause and the workload an input-bound
# verdict on a loaded CI machine). Verdicts and causes from CPU samples are t-gpu-idle.sh's.
record() {
	local opts=${3:---gpu-latency}
	LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record -F 1 --gpu on $opts -o "$2" -- \
		sh -c 'exec "$0" "$1" "$CUDA_INJECTION64_PATH"' "$DRIVER" "$1" >"$2.out" 2>"$2.err" &&
		grep -q "^ok: " "$2.out"
}
if ! record workload w.data || ! record syncwait s.data || ! record workload n.data --quiet; then
	fail "gpu-report: recording through the stand-in failed: $(tail -n 3 w.data.err s.data.err 2>/dev/null | tr '\n' ' ')"
	finish
fi
"$DRIVER" expect >expect.txt || { fail "gpu-report: driver expect failed"; finish; }

# -- workload: JSON figures against the script --
"$CSAMPLER" report -i w.data --format json --limit 0 >w.json 2>w.err || fail "gpu-report: report --format json: $(cat w.err)"
if node -e "JSON.parse(require('fs').readFileSync('w.json','utf8'))" 2>/dev/null; then
	pass "gpu-report: JSON parses"
else
	fail "gpu-report: JSON does not parse"; finish
fi
got=$(json_get w.json "j.gpu.kernels.map(k => ['kernel', k.name, k.calls, k.total_ns, k.min_ns, k.max_ns].join('\t')).sort().join('\n')")
want=$(grep '^kernel' expect.txt | sort)
if [ "$got" = "$want" ]; then
	pass "gpu-report: kernel table (calls, total, min, max) exactly as scripted: $(echo "$want" | wc -l) kernels"
else
	fail "gpu-report: kernel table: got [$(echo "$got" | tr '\n\t' '| ')] want [$(echo "$want" | tr '\n\t' '| ')]"
fi
check "gpu-report: avg = total / calls, percents sum to 100, sorted by total" node -e "
const g = JSON.parse(require('fs').readFileSync('w.json', 'utf8')).gpu;
let sum = 0;
g.kernels.forEach((k, i) => { if (k.avg_ns !== Math.floor(k.total_ns / k.calls)) throw k.name;
  if (i && g.kernels[i - 1].total_ns < k.total_ns) throw 'order'; if (k.mangled !== null) throw 'mangled';
  sum += k.percent; });
if (Math.abs(sum - 100) > 0.01) throw 'sum ' + sum;
if (g.kernel_ns !== g.kernels.reduce((s, k) => s + k.total_ns, 0)) throw 'kernel_ns';"
got=$(json_get w.json "j.gpu.streams.map(s => 'stream\t' + s.stream + '\t' + s.busy_ns).concat(j.gpu.devices.map(d => 'device\t' + d.device + '\t' + d.busy_ns), ['window\t' + j.gpu.devices[0].window_ns, 'blocked\t' + j.gpu.sync.blocked_ns]).join('\n')")
want=$(grep -v '^kernel' expect.txt)
if [ "$got" = "$want" ]; then
	pass "gpu-report: busy per stream and device, window and blocked time as scripted ($(echo "$want" | grep device | cut -f3) ns busy of $(echo "$want" | grep window | cut -f2))"
else
	fail "gpu-report: utilisation: got [$(echo "$got" | tr '\n\t' '| ')] want [$(echo "$want" | tr '\n\t' '| ')]"
fi
lat=$(json_get w.json "[j.gpu.latency.count, j.gpu.latency.from_queued, j.gpu.latency.min_ns, j.gpu.latency.median_ns, j.gpu.latency.max_ns, j.gpu.latency.longest.length].join(' ')")
[ "$lat" = "161 161 700 700 700 5" ] && pass "gpu-report: launch-queue latency 700 ns for all 161 kernels (queued = start - 700)" ||
	fail "gpu-report: latency: $lat (want 161 161 700 700 700 5)"
# without --gpu-latency the kernels' queued times are unknown: latency from the launch call's
# return (the script's API spans end 1 us before their kernel starts)
"$CSAMPLER" report -i n.data --format json --limit 0 >n.json 2>n.err || fail "gpu-report: report of the run without --gpu-latency: $(cat n.err)"
lat=$(json_get n.json "[j.gpu.latency.count, j.gpu.latency.from_queued, j.gpu.latency.min_ns, j.gpu.latency.median_ns, j.gpu.latency.max_ns].join(' ')")
[ "$lat" = "161 0 1000 1000 1000" ] && pass "gpu-report: no latency timestamps: 1000 ns from each launch call's return for all 161 kernels" ||
	fail "gpu-report: latency without timestamps: $lat (want 161 0 1000 1000 1000)"
v=$(json_get w.json "j.gpu.verdicts.map(v => v.bound + ' ' + v.window_ns + ' ' + v.busy_ns).join(',')")
dev=$(grep '^device' expect.txt | cut -f3); win=$(grep '^window' expect.txt | cut -f2)
[ "$v" = "launch-bound $win $dev" ] && pass "gpu-report: workload verdict launch-bound ($v)" || fail "gpu-report: workload verdict: $v"
copies=$(json_get w.json "j.gpu.copies.map(c => c.direction + ' ' + c.calls + ' ' + c.bytes).join(',')")
[ "$copies" = "HtoD 41 3670016,memset 40 163840" ] && pass "gpu-report: copies by direction ($copies)" ||
	fail "gpu-report: copies: $copies"
nvtx=$(json_get w.json "j.gpu.nvtx.map(r => r.name + ' ' + r.count + ' ' + r.total_ns + ' ' + r.marks).join(',')")
[ "$nvtx" = "train 1 5000000 0,checkpoint 0 0 1" ] && pass "gpu-report: NVTX totals ($nvtx)" || fail "gpu-report: NVTX: $nvtx"
site=$(json_get w.json "j.gpu.launch_sites[0].stack.slice(0, 2).join(';') + ' ' + j.gpu.launch_sites[0].calls")
[ "$site" = "worker_launch;worker_main 80" ] && pass "gpu-report: top launch site worker_launch (80 kernels)" ||
	fail "gpu-report: top launch site: $site"

# scripts/gpu-profile.sh reads the kernel table from this JSON with its own code: run it.
sed -n "/^report_json_table()/,/^}/p" "$CSAMPLER_ROOT/scripts/gpu-profile.sh" | sed -n "/<<'EOF'/,/^EOF/p" | sed '1d;$d' >reader.py
if command -v python3 >/dev/null && [ -s reader.py ]; then
	python3 reader.py w.json >table.txt 2>reader.err
	if grep -qP '^forward_kernel\(float\*, int\)\t40\t1\.077280$' table.txt && [ "$(wc -l <table.txt)" = 4 ]; then
		pass "gpu-report: scripts/gpu-profile.sh's reader finds the 4 kernels with calls and ms"
	else
		fail "gpu-report: gpu-profile.sh reader: $(cat table.txt reader.err | tr '\n\t' '| ')"
	fi
elif [ ! -s reader.py ]; then
	fail "gpu-report: the JSON reader was not found in scripts/gpu-profile.sh's report_json_table()"
else
	skip "gpu-report: no python3 to run scripts/gpu-profile.sh's reader"
fi

# -- text --
"$CSAMPLER" report -i w.data >w.txt 2>&1
for section in "^GPU kernels (4 of 4; 161 launches" "^GPU copies and memsets" "^GPU utilisation" \
	"^CPU blocked in synchronisation" "^Launch-queue latency" "^Top launch sites by GPU time" \
	"^NVTX ranges" "^GPU verdict" ": launch-bound\. Over its "; do
	grep -q -- "$section" w.txt && pass "gpu-report: text has '$section'" || fail "gpu-report: text lacks '$section'"
done
grep -Eq '^ +1\.077 +40 +26\.932 +1\.304 +50\.744 +25\.[0-9]+% +forward_kernel\(float\*, int\)$' w.txt &&
	pass "gpu-report: text kernel row of forward_kernel" || fail "gpu-report: text row: $(grep forward_kernel w.txt | head -1)"
"$CSAMPLER" report -i w.data --pid 1 >nopid.txt 2>&1
grep -q "^GPU kernels" nopid.txt && fail "gpu-report: --pid 1 still shows GPU tables" || pass "gpu-report: --pid filters the GPU tables"

# -- syncwait: blame, sync-bound, golden --
"$CSAMPLER" report -i s.data --format json >s.json 2>s.err || fail "gpu-report: syncwait report: $(cat s.err)"
blame=$(json_get s.json "j.gpu.sync.waited_for.map(b => b.name + ' ' + b.waits + ' ' + b.wait_ns).join(',')")
[ "$blame" = "loss_kernel 4 1188000,aux_kernel 4 168000" ] &&
	pass "gpu-report: stream syncs blamed on loss_kernel, device syncs on aux_kernel ($blame)" ||
	fail "gpu-report: blame: $blame"
v=$(json_get s.json "j.gpu.verdicts.map(v => [v.bound, v.window_ns, v.busy_ns, v.blocked_ns, v.waited_mostly_for].join(' ')).join(',')")
[ "$v" = "sync-bound 2212500 1460000 1364000 loss_kernel" ] && pass "gpu-report: syncwait verdict: $v" ||
	fail "gpu-report: syncwait verdict: $v"
node -e "
const g = JSON.parse(require('fs').readFileSync('s.json', 'utf8')).gpu;
console.log(JSON.stringify(g, (k, v) => ['pid', 'tid', 'blocked_tid'].includes(k) ? 0 :
  k === 'comm' ? '' : k === 'stack' && Array.isArray(v) ? v.slice(0, 3) : v, 1));" >s.norm.json
if diff -u "$CSAMPLER_ROOT/tests/cupti/gpu-report-syncwait.json" s.norm.json >s.diff; then
	pass "gpu-report: syncwait JSON equals the golden (normalised)"
else
	fail "gpu-report: syncwait JSON differs from tests/cupti/gpu-report-syncwait.json: $(head -c 600 s.diff | tr '\n' ' ')"
fi
"$CSAMPLER" report -i s.data >s.txt 2>&1
grep -q "sync-bound\. .*blocked in synchronisation 61\.6% (1\.364 ms), mostly waiting for loss_kernel" s.txt &&
	pass "gpu-report: text verdict names the numbers and the kernel waited for" ||
	fail "gpu-report: text verdict: $(grep -A1 '^GPU verdict' s.txt | tail -1)"
finish
