#!/usr/bin/env bash
# GPU capture without a GPU: bin/tests/gpu-writer writes gpu-PID.bin files as the in-target
# library would (inject/protocol.h), with launch stacks from its own functions. Checks that
# record --gpu on merges them into the data file with every launch stack named exactly, that
# counts, durations, drops, lost timestamps, the clock check and notes reach info; that garbled,
# truncated, foreign and missing files give one line and an intact CPU profile; that --gpu auto
# changes nothing for a program without GPU work; and that env + record -p collects them.
source "$CSAMPLER_ROOT/tests/lib.sh"

W=$TPROG/gpu-writer
# No CUDA driver here: the injection library is never loaded, so any existing file stands in
# for it and for libcupti (gpu_setup.h: CSAMPLER_GPU_LIB, CSAMPLER_CUPTI_PATH).
export CSAMPLER_GPU_LIB=$W CSAMPLER_CUPTI_PATH=$W
unset CUDA_INJECTION64_PATH
export TMPDIR=$T  # the private directories of record go here

rec() { # rec NAME MODE...: record gpu-writer MODE with --gpu on into NAME.data
	local name=$1; shift
	"$CSAMPLER" record --gpu on -o "$name.data" -- "$W" "$@" >"$name.out" 2>"$name.err"
}

# --- a complete file
rec ok ok || fail "gpu: record ok: $(tail -n 3 ok.err)"
"$CSAMPLER" info -i ok.data --gpu-records >ok.rec
"$CSAMPLER" info -i ok.data --format json >ok.json
fwd=$(grep -c '^kernel render_forward(float\*, int) .* api=cudaLaunchKernel stack=.*;main;play_ok;train_step;launch_forward$' ok.rec)
bwd=$(grep -c '^kernel render_backward .* api=cudaLaunchKernel stack=.*;main;play_ok;train_step;launch_backward$' ok.rec)
[ "$fwd" = 20 ] && [ "$bwd" = 10 ] && pass "gpu: 20 forward and 10 backward kernels under their exact launch stacks" ||
	fail "gpu: forward $fwd/20 backward $bwd/10 under their launch stacks: $(grep -m2 '^kernel' ok.rec)"
fdur=$(grep '^kernel render_forward' ok.rec | grep -c 'dur_ns=50000 ')
bdur=$(grep '^kernel render_backward' ok.rec | grep -c 'dur_ns=120000 ')
[ "$fdur" = 20 ] && [ "$bdur" = 10 ] && pass "gpu: kernel durations exact" || fail "gpu: durations: $fdur/20 $bdur/10"
for k in "memcpy - .*dur_ns=2000 bytes=4096 .*api=cudaMemcpyAsync stack=.*;play_ok;copy_and_sync$" \
	 "memset - .*dur_ns=500 bytes=1024 .*api=cudaMemsetAsync stack=.*;play_ok;copy_and_sync$" \
	 "sync - .*dur_ns=5000 .*api=cudaStreamSynchronize stack=.*;play_ok;copy_and_sync$" \
	 "api - .*dur_ns=9500 .*api=cudaStreamSynchronize stack=" \
	 "nvtx forward pid="; do
	[ "$(grep -c "^$k" ok.rec)" = 1 ] && pass "gpu: one '${k%% *}' record as written" || fail "gpu: no '$k' in $(cat ok.rec | cut -c1-80 | sort -u | head -5)"
done
launches=$(grep -c '^launch ' ok.rec)
[ "$launches" = 33 ] && [ "$(json_get ok.json j.gpu.launches)" = 33 ] && pass "gpu: 33 launches" || fail "gpu: launches $launches"
[ "$(json_get ok.json j.gpu.kinds.kernel.count)" = 30 ] && [ "$(json_get ok.json j.gpu.kinds.kernel.total_ns)" = 2200000 ] &&
	pass "gpu: info json: 30 kernels, 2.2 ms" || fail "gpu: info json kernels: $(json_get ok.json 'JSON.stringify(j.gpu.kinds.kernel)')"
got=$(json_get ok.json '[j.gpu.processes.length, j.gpu.processes[0].vendor, j.gpu.processes[0].cupti_version, j.gpu.processes[0].clock_offset_ns, j.gpu.processes[0].dropped, j.gpu.processes[0].lost_timestamps, j.gpu.processes[0].status].join(" ")')
[ "$got" = "1 CUDA 130001 -123 2 1 ok" ] && pass "gpu: vendor, CUPTI version, clock offset, drops, lost timestamps in info" || fail "gpu: process info '$got'"
"$CSAMPLER" info -i ok.data >ok.txt
grep -q 'kernel *30 records *2.200 ms' ok.txt && grep -q 'CUPTI 130001, ok, clock offset -123 ns, dropped 2' ok.txt &&
	pass "gpu: info text" || fail "gpu: info text: $(grep -A8 '^gpu launches' ok.txt)"
grep -q 'GPU: 2 activity records dropped' ok.err && grep -q 'GPU: 1 activity records lost their timestamps' ok.err &&
	pass "gpu: drops and lost timestamps said at the end of record" || fail "gpu: record said: $(cat ok.err)"
[ "$(json_get ok.json j.samples)" -gt 0 ] && pass "gpu: CPU samples too" || fail "gpu: no CPU samples"
ls -d "$T"/csampler-gpu.* >/dev/null 2>&1 && fail "gpu: the private directory was left behind: $(ls -d "$T"/csampler-gpu.*)" ||
	pass "gpu: private directory removed"

# --- the launch path (the runtime's API, nvcc's stub and host wrapper, an API inlined into the
# launching function) trimmed by the recorder: the file (format version 2) keeps the call site
rec runtime runtime || fail "gpu: record runtime: $(tail -n 3 runtime.err)"
"$CSAMPLER" info -i runtime.data --gpu-records >runtime.rec
blur=$(grep -c '^launch cudaLaunchKernel .* stack=.*;main;play_runtime;launch_blur$' runtime.rec)
inl=$(grep -c '^launch cudaLaunchCooperativeKernel .* stack=.*;main;play_runtime;launch_inline$' runtime.rec)
ver=$("$CSAMPLER" info -i runtime.data | sed -n 's/^format version: //p')
[ "$blur" = 5 ] && [ "$inl" = 5 ] && [ "$ver" = 2 ] &&
	pass "gpu: the recorder trims the launch path: stacks end at the call site (format version 2)" ||
	fail "gpu: runtime: $blur/5 launch_blur, $inl/5 launch_inline, version '$ver': $(grep -m2 '^launch' runtime.rec)"

# --- two processes
rec fork fork || fail "gpu: record fork"
"$CSAMPLER" info -i fork.data --format json >fork.json
got=$(json_get fork.json '[j.gpu.processes.length, j.gpu.launches, j.gpu.kinds.kernel.count].join(" ")')
[ "$got" = "2 66 60" ] && pass "gpu: a forked child's file merged too" || fail "gpu: fork: '$got'"

# --- damaged files: one line each, CPU profile intact
rec garbled garbled; rc=$?
"$CSAMPLER" info -i garbled.data --format json >garbled.json
got=$(json_get garbled.json '[j.gpu.kinds.kernel.count, j.gpu.processes[0].corrupt, j.samples > 0].join(" ")')
[ "$rc" = 0 ] && [ "$got" = "30 true true" ] && [ "$(grep -c 'corrupt record at offset' garbled.err)" = 1 ] &&
	pass "gpu: garbled file: one line, records before it kept, CPU profile intact" || fail "gpu: garbled: rc $rc '$got' $(cat garbled.err)"
rec truncated truncated; rc=$?
"$CSAMPLER" info -i truncated.data --format json >truncated.json
got=$(json_get truncated.json '[j.gpu.launches, j.gpu.processes[0].cut, j.samples > 0].join(" ")')
[ "$rc" = 0 ] && [ "$got" = "33 true true" ] && [ "$(grep -c 'partial record' truncated.err)" = 1 ] &&
	pass "gpu: truncated file: one line, complete records kept" || fail "gpu: truncated: rc $rc '$got' $(cat truncated.err)"
rec badmagic badmagic; rc=$?
"$CSAMPLER" info -i badmagic.data --format json >badmagic.json
got=$(json_get badmagic.json '[j.gpu.launches, j.gpu.activities, j.samples > 0].join(" ")')
[ "$rc" = 0 ] && [ "$got" = "0 0 true" ] && [ "$(grep -c 'not a csampler GPU file' badmagic.err)" = 1 ] &&
	pass "gpu: foreign file: one line, no GPU records" || fail "gpu: badmagic: rc $rc '$got' $(cat badmagic.err)"
rec none none; rc=$?
"$CSAMPLER" info -i none.data --format json >none.json
got=$(json_get none.json '[j.gpu.launches, j.gpu.activities, j.gpu.processes.length, j.samples > 0].join(" ")')
[ "$rc" = 0 ] && [ "$got" = "0 0 0 true" ] && grep -q 'no GPU records' none.err &&
	pass "gpu: no file: no GPU records, --gpu on says why" || fail "gpu: none: rc $rc '$got' $(cat none.err)"
rec subscriber subscriber
"$CSAMPLER" info -i subscriber.data >subscriber.txt
grep -q 'CUPTI held by another tool (CPU-only)' subscriber.txt && grep -q 'CUPTI is held by another subscriber (Nsight Systems): CPU-only' subscriber.txt &&
	grep -q 'warning: GPU: CUPTI is held by another subscriber' subscriber.err &&
	pass "gpu: another subscriber: status and note in info and at the end of record" || fail "gpu: subscriber: $(cat subscriber.err) $(grep -A5 '^gpu' subscriber.txt)"

# --- auto on a program without GPU work: the same as --gpu off
"$CSAMPLER" record -q -o auto.data -- "$TPROG/rec-family" 0.3 >/dev/null 2>auto.err; rc=$?
"$CSAMPLER" info -i auto.data --format json >auto.json
got=$(json_get auto.json '[j.gpu.launches, j.gpu.activities, j.gpu.processes.length, j.header.gpu].join(" ")')
[ "$rc" = 0 ] && [ "$got" = "0 0 0 on" ] && ! grep -qi gpu auto.err && pass "gpu: --gpu auto on a CPU program: nothing changes" ||
	fail "gpu: auto: rc $rc '$got' $(cat auto.err)"
"$CSAMPLER" record -q --gpu off -o off.data -- sh -c 'echo "${CUDA_INJECTION64_PATH-unset} ${CSAMPLER_GPU_DIR-unset}"' >off.out 2>/dev/null
[ "$(cat off.out)" = "unset unset" ] && pass "gpu: --gpu off sets nothing" || fail "gpu: --gpu off: $(cat off.out)"
"$CSAMPLER" record -q -o env.data -- sh -c 'echo "$CUDA_INJECTION64_PATH|$NVTX_INJECTION64_PATH|$CSAMPLER_GPU_DIR"; stat -c %a "$CSAMPLER_GPU_DIR"' >env.out 2>/dev/null
{ read -r vars; read -r mode; } <env.out
[ "$vars" = "$W|$W|${vars##*|}" ] && [ "$mode" = 700 ] && pass "gpu: the command's environment, private 0700 directory" || fail "gpu: env '$(cat env.out)'"
[ -z "${CUDA_INJECTION64_PATH-}" ] && pass "gpu: csampler's own environment unchanged" || fail "gpu: CUDA_INJECTION64_PATH leaked"
CSAMPLER_GPU_LIB=$T/missing.so "$CSAMPLER" record -q --gpu on -o x.data -- true >/dev/null 2>on.err; rc=$?
[ "$rc" = 125 ] && [ "$(grep -c . on.err)" = 1 ] && grep -q 'CSAMPLER_GPU_LIB' on.err && pass "gpu: --gpu on without the library: one line, exit 125" ||
	fail "gpu: --gpu on missing lib: rc $rc $(cat on.err)"
CSAMPLER_GPU_LIB=$T/missing.so "$CSAMPLER" record -q -o x.data -- true >/dev/null 2>auto2.err; rc=$?
[ "$rc" = 0 ] && ! grep -qi gpu auto2.err && [ "$(json_get <("$CSAMPLER" info -i x.data --format json) 'j.header.gpu')" = "off (CSAMPLER_GPU_LIB=$T/missing.so is not a readable file)" ] &&
	pass "gpu: --gpu auto without the library: off, the header says why" || fail "gpu: auto missing lib: rc $rc $(cat auto2.err)"

# --- csampler env, then record -p
export CSAMPLER_GPU_DIR=$T/gpudir
"$CSAMPLER" env -- "$W" stream 4 >stream.out 2>&1 &
wpid=$!
[ "$(stat -c %a "$CSAMPLER_GPU_DIR" 2>/dev/null)" = 700 ] || sleep 0.5
sleep 1
"$CSAMPLER" record -q -p "$wpid" --duration 1.5 -o att.data >/dev/null 2>att.err
wait "$wpid"
"$CSAMPLER" info -i att.data --gpu-records >att.rec
n=$(grep -c '^kernel render_forward.*;train_step;launch_forward$' att.rec)
bad=$(grep -c '^kernel' att.rec); bad=$((bad - n - $(grep -c '^kernel render_backward.*;train_step;launch_backward$' att.rec)))
[ "$(stat -c %a "$CSAMPLER_GPU_DIR")" = 700 ] && [ "$n" -gt 5 ] && [ "$bad" = 0 ] &&
	pass "gpu: env + record -p: $n forward kernels of the attached process, all under their stacks" ||
	fail "gpu: env + record -p: $n forward, $bad unattributed; $(cat att.err) $(head -3 att.rec)"
total=$(grep -c '^kernel render_forward' att.rec)
[ "$total" -lt 200 ] && pass "gpu: record -p keeps only its own time window ($total of ~300)" || fail "gpu: record -p took $total forward kernels (whole run?)"
rm -rf "$T/gpudir"; ln -s /tmp "$T/gpudir"
"$CSAMPLER" env -- true 2>link.err; rc=$?
[ "$rc" = 125 ] && [ "$(grep -c . link.err)" = 1 ] && grep -q 'symbolic link' link.err && pass "gpu: env refuses a symlinked directory" || fail "gpu: env symlink: rc $rc $(cat link.err)"
rm -f "$T/gpudir"; mkdir -m 755 "$T/gpudir"
"$CSAMPLER" env -- true 2>open.err; rc=$?
[ "$rc" = 125 ] && grep -q 'open to other users' open.err && pass "gpu: env refuses a directory open to others" || fail "gpu: env 755: rc $rc $(cat open.err)"
finish
