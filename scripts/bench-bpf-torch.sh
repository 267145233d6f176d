#!/usr/bin/env bash
# bench-bpf-torch.sh: complete stacks and the recorder's CPU on the PyTorch CPU loop
# (tests/python/torch_train.py STEPS, Debian's python3-torch on CPython 3.11), side by side in
# one interleaved run: perf mode (32 KiB stack copies), `--mode bpf` with the unwind-row cache
# warm (filled by a first, untimed run) and cold (an empty cache folder each run), and the same
# two with a reference build (BEFORE=path/to/csampler, e.g. an older version; left out when not
# given). For each: complete stacks (report --format json: unwind.complete_pct), the causes of
# the others, and the recorder's own CPU as a share of the target's (the end-of-record line).
# Needs root (bpf). ROUNDS=2 STEPS=4 BEFORE=/tmp/csampler-old scripts/bench-bpf-torch.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-4}
PY=${TORCH_PYTHON:-/usr/bin/python3}
CSAMPLER=${CSAMPLER:-bin/csampler}
BEFORE=${BEFORE:-}
"$PY" -c 'import torch' 2>/dev/null || { echo "bench-bpf-torch: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
[ -x "$CSAMPLER" ] || { echo "bench-bpf-torch: $CSAMPLER not built; run make" >&2; exit 1; }
W=$(mktemp -d /tmp/csampler-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT

# one run: NAME BINARY CACHEDIR MODE
run() {
	local name=$1 bin=$2 cache=$3 mode=$4 out="$W/$1.$r"
	XDG_CACHE_HOME=$cache "$bin" record --mode "$mode" -o "$out.data" -- "$PY" tests/python/torch_train.py "$STEPS" >"$out.out" 2>&1 || true
	"$bin" report -i "$out.data" --format json >"$out.json" 2>/dev/null || true
	python3 - "$out.json" "$out.out" "$name" <<'EOF' >>"$W/rows"
import json, re, sys
u = json.load(open(sys.argv[1]))['unwind']
txt = open(sys.argv[2]).read()
cpu = re.search(r"own CPU ([0-9.]+) s .*?([0-9.]+)% of the target's ([0-9.]+) s CPU", txt)
rows = re.search(r"(\d+) rows \(([0-9.]+) MB\), built in (\d+) ms", txt)
c = u['causes']
print(sys.argv[3], u['complete_pct'], u['complete'], c['stack_short'], c['error'], c['other'],
      cpu.group(1) if cpu else '-', cpu.group(2) if cpu else '-',
      rows.group(1) if rows else '-', rows.group(2) if rows else '-', rows.group(3) if rows else '-')
EOF
}

mkdir -p "$W/warm" "$W/warm-before"
XDG_CACHE_HOME="$W/warm" "$CSAMPLER" record -q --mode bpf -o "$W/fill.data" -- "$PY" tests/python/torch_train.py "$STEPS" >/dev/null 2>&1 || true
[ -n "$BEFORE" ] && XDG_CACHE_HOME="$W/warm-before" "$BEFORE" record -q --mode bpf -o "$W/fill.data" -- "$PY" tests/python/torch_train.py "$STEPS" >/dev/null 2>&1 || true
for r in $(seq "$ROUNDS"); do
	run perf "$CSAMPLER" "$W/warm" perf
	run bpf-warm "$CSAMPLER" "$W/warm" bpf
	rm -rf "$W/cold"; run bpf-cold "$CSAMPLER" "$W/cold" bpf
	if [ -n "$BEFORE" ]; then
		run before-bpf-warm "$BEFORE" "$W/warm-before" bpf
		rm -rf "$W/cold"; run before-bpf-cold "$BEFORE" "$W/cold" bpf
	fi
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %8s %8s %6s %6s %6s %8s %10s %9s %7s %9s\n' run complete% complete short error other cpu_s cpu%target rows MB build_ms
sort -s -k1,1 "$W/rows" | awk '{ printf "%-16s %8s %8s %6s %6s %6s %8s %10s %9s %7s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }'
