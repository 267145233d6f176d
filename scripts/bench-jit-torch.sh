#!/usr/bin/env bash
# bench-jit-torch.sh: stack completeness on a PyTorch CPU training loop, where oneDNN generates
# its convolution and matmul kernels at run time (JIT code without CFI, rbp an ordinary
# register). A small CNN trains STEPS steps on random data, recorded by `csampler record` with
# default options, and by `perf record --call-graph dwarf` with its default 8 KiB copy and with
# the largest one, at the same rate. DNNL_JIT_PROFILE=2 makes oneDNN name its kernels in
# /tmp/perf-PID.map (=1 is for VTune only and writes nothing perf or csampler can read).
# Prints, for each: the share of samples whose stack reaches the thread's entry point, counted
# from the raw stacks (csampler: the roots of `folded`, beside report's own figure; perf: the
# outermost frame of each `perf script` stack), then csampler's frames by how they were found,
# its incomplete stacks by cause, and which library calls the JIT frames.
# Needs Debian's python3-torch (apt-get install python3-torch) and perf (linux-perf).
#   STEPS=100 RATE=999 PYTHON=/usr/bin/python3 scripts/bench-jit-torch.sh
set -eu
cd "$(dirname "$0")/.."
STEPS=${STEPS:-100}
RATE=${RATE:-999}
PYTHON=${PYTHON:-/usr/bin/python3}
CSAMPLER=${CSAMPLER:-bin/csampler}
PERF=${PERF:-perf}
W=$(mktemp -d /tmp/csampler-torch.XXXXXX)
trap 'rm -rf "$W"' EXIT

[ -x "$CSAMPLER" ] || { echo "bench-jit-torch: $CSAMPLER not built; run make" >&2; exit 1; }
"$PYTHON" -c 'import torch' 2>/dev/null ||
	{ echo "bench-jit-torch: $PYTHON cannot import torch; apt-get install python3-torch" >&2; exit 1; }
command -v "$PERF" >/dev/null || { echo "bench-jit-torch: perf not found; install linux-perf" >&2; exit 1; }
command -v node >/dev/null || { echo "bench-jit-torch: node not found (reads the JSON report)" >&2; exit 1; }

cat >"$W/train.py" <<'EOF'
# A small CNN on random 3x32x32 images: convolutions and linear layers run in oneDNN kernels.
import sys, time, torch
torch.manual_seed(0)
steps = int(sys.argv[1])
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(32 * 16 * 16, 64), torch.nn.ReLU(),
    torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
t0 = time.time()
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print(f"train: {steps} steps, loss {loss.item():.3f}, {time.time() - t0:.2f} s", file=sys.stderr)
EOF

export DNNL_JIT_PROFILE=2
TRAIN="$PYTHON $W/train.py $STEPS"

"$CSAMPLER" record -q -F "$RATE" -o "$W/c.data" -- $TRAIN 2>"$W/c.err"
"$CSAMPLER" report -i "$W/c.data" --format json --limit 0 >"$W/c.json"
"$CSAMPLER" report -i "$W/c.data" >"$W/c.txt"
"$CSAMPLER" folded -i "$W/c.data" >"$W/c.folded"
"$PERF" record -q --call-graph dwarf -F "$RATE" -o "$W/p8.data" -- $TRAIN 2>"$W/p8.err"
"$PERF" record -q --call-graph dwarf,65528 -F "$RATE" -o "$W/p64.data" -- $TRAIN 2>"$W/p64.err"

# Entry points that end a complete stack (report's rule: csampler's analysis/stacks.c).
ROOTS='_start|__libc_start_main|__libc_start_main_impl|__libc_start_call_main|clone|__clone|clone3|__clone3|start_thread'

# csampler, from folded: "comm;root;...;leaf COUNT".
read -r c_total c_rooted <<<"$(awk -v roots="^($ROOTS)\$" '
	{ n = $NF; total += n; split($1, f, ";"); if (f[2] ~ roots) rooted += n }
	END { print total + 0, rooted + 0 }' "$W/c.folded")"

# perf: one block per sample, frames leaf first, the outermost last.
perf_complete() { # FILE -> "total complete"
	"$PERF" script -i "$1" -F comm,tid,ip,sym 2>/dev/null | awk -v roots="^($ROOTS)(@.*)?\$" '
		function done_sample() { if (in_s) { total++; if (last ~ roots) ok++ } in_s = 0; last = "" }
		/^[^ \t]/ { done_sample(); in_s = 1; next }
		/^[ \t]+[0-9a-f]+ / { last = $2; next }
		/^$/ { done_sample() }
		END { done_sample(); print total + 0, ok + 0 }'
}
read -r p8_total p8_ok <<<"$(perf_complete "$W/p8.data")"
read -r p64_total p64_ok <<<"$(perf_complete "$W/p64.data")"

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }'; }
printf '\nbench-jit-torch: %s, %s steps, %s Hz, %s, %s CPUs\n' "$(date -u +%F)" "$STEPS" "$RATE" \
	"torch $("$PYTHON" -c 'import torch; print(torch.__version__)')" "$(nproc)"
printf '%-36s %9s %14s\n' profiler samples "complete (%)"
printf '%-36s %9s %14s\n' "csampler record (defaults)" "$c_total" "$(pct "$c_rooted" "$c_total")"
printf '%-36s %9s %14s\n' "  report's own figure" "" "$(node -e "console.log(JSON.parse(require('fs').readFileSync('$W/c.json')).unwind.complete_pct)")"
printf '%-36s %9s %14s\n' "perf --call-graph dwarf (8 KiB)" "$p8_total" "$(pct "$p8_ok" "$p8_total")"
printf '%-36s %9s %14s\n' "perf --call-graph dwarf,65528" "$p64_total" "$(pct "$p64_ok" "$p64_total")"
echo
sed -n '/^Unwind quality/,/^$/p' "$W/c.txt" | sed '/incomplete stacks stop in/,$d'

# The caller of each JIT frame (the frame before it, root first), by library.
node -e '
const fs = require("fs");
const j = JSON.parse(fs.readFileSync(process.argv[1]));
const lib = new Map(j.functions.map(f => [f.name, f.library]));
const by = new Map();
let jit = 0;
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
	const sp = line.lastIndexOf(" ");
	if (sp < 0) continue;
	const n = +line.slice(sp + 1), fr = line.slice(0, sp).split(";");
	for (let i = 2; i < fr.length; i++) {
		const isJit = f => f.endsWith("_[j]") || f.startsWith("//anon");
		if (!isJit(fr[i]) || isJit(fr[i - 1])) continue;
		jit += n;
		const name = fr[i - 1].replace(/_\[[ki]\]$/, "");
		const l = (lib.get(name) || "(unknown)").split("/").pop();
		by.set(l, (by.get(l) || 0) + n);
	}
}
console.log(`JIT frames (outermost of each run of them): ${jit} samples; their callers by library:`);
for (const [l, n] of [...by].sort((a, b) => b[1] - a[1]))
	console.log(`${String(n).padStart(10)}  ${l}`);
' "$W/c.json" "$W/c.folded"
