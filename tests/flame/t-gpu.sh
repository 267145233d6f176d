#!/usr/bin/env bash
# GPU flame graphs and folded stacks (folded/flame/diff --gpu and --both) on data files recorded
# without a GPU: the scripted CUDA workload of tests/cupti/driver.c played against the stand-in
# libcupti (exact launch stacks and leaves, weights recomputed from tests/cupti/script.h's
# duration formula), and bin/tests/gpu-writer's "flame" mode (nested NVTX ranges, templated
# kernel names with < > &). Checks --both's roots against the CPU time (samples x sampling
# period) and the GPU time that info reports, the escaping of kernel names in the SVG, that
# folded text and data files draw alike, and diff --gpu.
source "$CSAMPLER_ROOT/tests/lib.sh"
export LC_ALL=C
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
W=$TPROG/gpu-writer

# Sum "STACK COUNT" lines by STACK, sorted.
sum_by_stack() { awk '{ n = $NF; $NF = ""; sub(/ $/, ""); s[$0] += n } END { for (k in s) print k, s[k] }' | sort; }

# ---- the scripted workload through the stand-in CUPTI ----
if [ ! -x "$DRIVER" ] || [ ! -f "$CSAMPLER_ROOT/lib/libcsampler-cupti.so" ]; then
	if [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
		fail "gpu-flame: $DRIVER or lib/libcsampler-cupti.so was not built (make test-programs)"
	else
		skip "gpu-flame/script: no CUPTI headers, so the stand-in and the injection library are not built"
	fi
else
	LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on -o g.data -- \
		sh -c 'exec "$0" workload "$CUDA_INJECTION64_PATH"' "$DRIVER" >rec.out 2>rec.err ||
		fail "gpu-flame/record: $(tail -n 3 rec.err | tr '\n' ' ')"
	"$CSAMPLER" folded --gpu -i g.data >gpu.folded 2>folded.err || fail "gpu-flame/folded: $(cat folded.err)"
	# Launch stacks from the driver's workload() (or worker_main()) down; the NVTX range "train"
	# covers the first 5 ms of the script, so whether it encloses a launch depends on speed:
	# its frame is dropped here (t-gpu's gpu-writer part checks NVTX frames exactly).
	sed -E -e 's/;\[nvtx\] train//' -e 's/^[^;]*;(.*;)?(workload|worker_main);/\2;/' gpu.folded |
		sum_by_stack >got.txt
	# tests/cupti/script.h: corr = (thread + 1) * 1000000 + step * 16 + index,
	# duration = 1000 + (corr * 7919 mod 2^32) mod 50000 ns; 40 steps, 2 workers.
	awk 'function dur(c) { return 1000 + ((c * 7919) % 4294967296) % 50000 }
	BEGIN {
		split("launch_forward;[gpu] forward_kernel(float*, int)|launch_backward;[gpu] backward_kernel(float*, int)|copy_grads;[memcpy HtoD]|zero_grads;[memset]|sync_step;[sync]", main, "|")
		for (i = 0; i < 5; i++) {
			s = 0
			for (step = 0; step < 40; step++)
				s += dur(1000000 + step * 16 + i)
			print "workload;train_step;" main[i + 1], s
		}
		s = 0
		for (t = 1; t <= 2; t++)
			for (step = 0; step < 40; step++)
				s += dur((t + 1) * 1000000 + step * 16)
		print "worker_main;worker_launch;[gpu] worker_kernel", s
		print "workload;train_tail;copy_weights;[memcpy HtoD]", dur(1000000 + 40 * 16 + 1 + 500000)
		print "workload;train_tail;run_graph;[gpu] graph_kernel", dur(1000000 + 40 * 16 + 2)
	}' | sort >want.txt
	if diff want.txt got.txt >stacks.diff; then
		pass "gpu-flame/script: folded --gpu has every scripted launch stack and leaf with its exact GPU time"
	else
		fail "gpu-flame/script: folded --gpu differs from the script: $(tr '\n' '|' <stacks.diff)"
	fi
	# Every stack under the process root (no "[no launch stack]": each record joined its launch).
	if ! grep -q '\[no launch stack\]' gpu.folded && [ "$(cut -d';' -f1 gpu.folded | sort -u | wc -l)" = 1 ]; then
		pass "gpu-flame/script-roots: one process root, every activity under its launch"
	else
		fail "gpu-flame/script-roots: $(cut -d' ' -f1 gpu.folded | cut -c1-60 | sort -u | tr '\n' '|')"
	fi

	# --both: the CPU root is the samples times the sampling period, the GPU root the GPU time.
	"$CSAMPLER" folded --both -i g.data >both.folded 2>both.err || fail "gpu-flame/both: $(cat both.err)"
	"$CSAMPLER" info -i g.data --format json >info.json
	rate=$(json_get info.json 'j.header.rate_hz')
	samples=$(json_get info.json 'j.samples')
	gpu_ns=$("$CSAMPLER" info -i g.data --gpu-records | awk '$1 == "kernel" || $1 == "memcpy" || $1 == "memset" || $1 == "sync" {
		for (i = 1; i <= NF; i++) if ($i ~ /^dur_ns=/) { sub(/dur_ns=/, "", $i); s += $i } } END { print s + 0 }')
	roots=$(awk '{ split($1, f, ";"); s[f[1]] += $NF } END { printf "CPU=%d GPU=%d", s["CPU"], s["GPU"] }' both.folded)
	others=$(grep -cv '^[CG]PU;' both.folded)
	cpu_ns=$(awk -v r="$rate" -v n="$samples" 'BEGIN { printf "%d", n * int(1e9 / r + 0.5) }')
	if [ "$roots" = "CPU=$cpu_ns GPU=$gpu_ns" ] && [ "$others" = 0 ] && [ "$samples" -gt 0 ]; then
		pass "gpu-flame/both-roots: CPU root $cpu_ns ns ($samples samples at $rate Hz), GPU root $gpu_ns ns"
	else
		fail "gpu-flame/both-roots: got $roots ($others lines under neither), want CPU=$cpu_ns GPU=$gpu_ns ($samples samples at ${rate} Hz)"
	fi
	# The GPU half of --both is --gpu under a GPU root; the CPU half is --cpu times the period.
	if diff <(grep '^GPU;' both.folded | sed 's/^GPU;//' | sort) <(sort gpu.folded) >/dev/null &&
	   diff <(grep '^CPU;' both.folded | sed 's/^CPU;//' | awk '{ $NF = $NF; print }' | sort) \
		<("$CSAMPLER" folded -i g.data | awk -v p="$(( cpu_ns / samples ))" '{ $NF = $NF * p; print }' | sort) >/dev/null; then
		pass "gpu-flame/both-halves: the GPU root holds folded --gpu, the CPU root folded --cpu in ns"
	else
		fail "gpu-flame/both-halves: --both is not --cpu and --gpu side by side"
	fi
	# folded --cpu is the default and unchanged.
	if cmp -s <("$CSAMPLER" folded -i g.data) <("$CSAMPLER" folded --cpu -i g.data); then
		pass "gpu-flame/cpu-default: folded --cpu is folded"
	else
		fail "gpu-flame/cpu-default: folded --cpu differs from folded"
	fi
fi

# ---- NVTX ranges and templated kernel names (gpu-writer plays the injection library) ----
wrec() { # wrec NAME: record gpu-writer flame into NAME.data
	CSAMPLER_GPU_LIB=$W CSAMPLER_CUPTI_PATH=$W "$CSAMPLER" record --gpu on -o "$1.data" -- "$W" flame \
		>"$1.out" 2>"$1.err"
}
if ! wrec w; then
	fail "gpu-flame/writer: record failed: $(tail -n 3 w.err | tr '\n' ' ')"
	finish
fi
"$CSAMPLER" folded --gpu w.data >w.folded 2>w.ferr || fail "gpu-flame/writer-folded: $(cat w.ferr)"
sed -E 's/;_start;.*;main;/;...;main;/' w.folded | sort >w.norm
sort >w.want <<'IN'
gpu-writer;[nvtx] step;...;main;play_flame;copy_and_sync;[memcpy HtoD] 2000
gpu-writer;[nvtx] step;...;main;play_flame;copy_and_sync;[memset] 500
gpu-writer;[nvtx] step;...;main;play_flame;copy_and_sync;[sync] 5000
gpu-writer;[nvtx] step;[nvtx] forward;...;main;play_flame;train_step;launch_forward;[gpu] render_forward(float*, int) 200000
gpu-writer;[nvtx] step;[nvtx] reduce<&>;...;main;play_flame;launch_template;[gpu] void reduce<float, 256>(float*) 90000
gpu-writer;[nvtx] step;[nvtx] reduce<&>;...;main;play_flame;launch_template;[gpu] void scan<int>(int const&) 21000
IN
if diff w.want w.norm >w.diff; then
	pass "gpu-flame/nvtx: nested NVTX ranges around their launches, demangled templated kernels, exact times"
else
	fail "gpu-flame/nvtx: $(tr '\n' '|' <w.diff)"
fi

# The SVG: well-formed, names only as JSON escapes, the exact names in the frame data.
"$CSAMPLER" -q flame --gpu w.data -o w.svg 2>svg.err || fail "gpu-flame/svg: $(cat svg.err)"
if xmllint --noout w.svg 2>xml.err; then
	pass "gpu-flame/svg-wellformed: the GPU flame graph is well-formed XML"
else
	fail "gpu-flame/svg-wellformed: $(head -n 3 xml.err | tr '\n' ' ')"
fi
raw=$(grep -c -e 'reduce<' -e 'scan<int>' -e 'int const&' w.svg)
node -e '
const s = require("fs").readFileSync("w.svg", "utf8");
const m = /<script type="application\/json" id="flamedata">([^]*?)<\/script>/.exec(s);
const d = JSON.parse(m[1]);
const want = ["[gpu] void reduce<float, 256>(float*)", "[gpu] void scan<int>(int const&)", "[nvtx] reduce<&>"];
const miss = want.filter((n) => !d.names.includes(n));
if (miss.length || d.countname !== "ns" || !d.calls) { console.log("missing " + JSON.stringify(miss) + " countname " + d.countname); process.exit(1); }
' >names.out 2>&1
if [ "$raw" = 0 ] && [ ! -s names.out ]; then
	pass "gpu-flame/svg-escaping: < > & of kernel and range names escaped, names intact in the data"
else
	fail "gpu-flame/svg-escaping: $raw raw lines; $(cat names.out)"
fi
"$CSAMPLER" flame --gpu --dump-layout w.data >w.layout
kinds=$(awk '$7 ~ /^\[gpu\]/ { print $6 } $7 ~ /^\[nvtx\]/ { print $6 } $7 ~ /^\[(memcpy|memset|sync)/ { print $6 }' w.layout | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
if [ "$kinds" = "gpu-copy:2 gpu-kernel:3 gpu-sync:1 nvtx:3 " ]; then
	pass "gpu-flame/kinds: GPU kernels, copies, syncs and NVTX ranges are kinds of their own"
else
	fail "gpu-flame/kinds: $kinds"
fi
# Its folded text draws the same graph as the data file (the kinds of CPU frames aside: folded
# text has no modules to tell them by).
cpu_kind_blank() { awk '$7 !~ /^\[/ { $6 = "-" } { print }'; }
if diff <("$CSAMPLER" flame --dump-layout w.folded | cpu_kind_blank) <(cpu_kind_blank <w.layout) >/dev/null; then
	pass "gpu-flame/folded-input: folded --gpu text draws as the data file does"
else
	fail "gpu-flame/folded-input: the layouts differ"
fi

# diff --gpu: the same script twice: every GPU frame unchanged, counts in ns.
wrec w2 || fail "gpu-flame/diff: second record failed"
if "$CSAMPLER" diff --gpu --dump-layout w.data w2.data >d.layout 2>d.err &&
   awk '$8 == "[gpu]" || $8 ~ /^\[(memset|sync)/ { n++; if ($5 != $6) bad++ } END { exit !(n == 5 && !bad) }' d.layout &&
   grep -q ' 200000 200000 gpu-kernel \[gpu\] render_forward' d.layout; then
	pass "gpu-flame/diff: diff --gpu compares GPU time per frame"
else
	fail "gpu-flame/diff: $(cat d.err) $(grep -m3 'gpu' d.layout | tr '\n' '|')"
fi
finish
