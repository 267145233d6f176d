#!/usr/bin/env bash
# t-record-e2e.sh: the whole GPU path without a GPU, through `csampler record`: the recorder sets
# CUDA_INJECTION64_PATH/CSAMPLER_GPU_DIR for the command, the test driver loads the injection
# library from that variable the way the CUDA driver does and plays the scripted workload
# against the stand-in libcupti (tests/cupti/script.h), and the data file must then hold every
# kernel, copy, memset and sync of the script under the exact CPU call path that launched it.
# Also: --gpu off records nothing of the GPU, and the toolkit's real libcupti with no driver
# gives one line and the CPU profile.
. "$(dirname "$0")/../lib.sh"
export LC_ALL=C
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
if [ ! -f "$LIB" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	skip "cupti-e2e: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
	finish
fi
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	fail "cupti-e2e: lib/libcsampler-cupti.so or $DRIVER was not built (make test-programs)"
	finish
fi
run='exec "$0" workload "$CUDA_INJECTION64_PATH"'

LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on -o g.data -- sh -c "$run" "$DRIVER" >rec.out 2>rec.err
rc=$?
if [ $rc != 0 ] || ! grep -q "^ok: " rec.out; then
	fail "cupti-e2e/record: exit $rc: $(tail -n 3 rec.err rec.out | tr '\n' ' ')"
	finish
fi
"$CSAMPLER" info -i g.data --gpu-records >records.txt 2>info.err || fail "cupti-e2e/info: $(cat info.err)"
# kind name -> the call path's last two frames, as the script launches them.
kernel_paths=$(awk '$1 == "kernel" { name = $2; sub(/\(.*/, "", name); st = $0; sub(/.*stack=/, "", st);
	n = split(st, f, ";"); print name, f[n-1] ";" f[n] }' records.txt | sort | uniq -c | awk '{$1=$1; print}')
expected="40 backward_kernel train_step;launch_backward
40 forward_kernel train_step;launch_forward
1 graph_kernel train_tail;run_graph
80 worker_kernel worker_main;worker_launch"
if [ "$kernel_paths" = "$expected" ]; then
	pass "cupti-e2e/kernel-stacks: 161 kernels, each under the function that launched it"
else
	fail "cupti-e2e/kernel-stacks: got [$(echo "$kernel_paths" | tr '\n' '|')] want [$(echo "$expected" | tr '\n' '|')]"
fi
other_paths=$(awk '$1 == "memcpy" || $1 == "memset" || $1 == "sync" { st = $0; sub(/.*stack=/, "", st);
	n = split(st, f, ";"); print $1, f[n] }' records.txt | sort | uniq -c | awk '{$1=$1; print}')
for want in "memset zero_grads" "sync sync_step"; do
	if echo "$other_paths" | grep -q "^40 $want\$"; then
		pass "cupti-e2e/$want: 40 records under ${want#* }"
	else
		fail "cupti-e2e/$want: got [$(echo "$other_paths" | tr '\n' '|')]"
	fi
done
if echo "$other_paths" | grep -q "^40 memcpy copy_grads\$"; then
	pass "cupti-e2e/memcpy: 40 copies under copy_grads"
else
	fail "cupti-e2e/memcpy: got [$(echo "$other_paths" | tr '\n' '|')]"
fi
"$CSAMPLER" info -i g.data >info.txt 2>&1
if grep -Eq '^  kernel +161 records' info.txt && grep -q 'CUPTI 130001, ok' info.txt; then
	pass "cupti-e2e/info: 161 kernels, CUPTI version and status shown"
else
	fail "cupti-e2e/info: $(grep -A8 '^gpu' info.txt | tr '\n' ' ')"
fi

# scripts/gpu-profile.sh's per-kernel table (what it compares with the trainer's timing): the
# script's calls and summed durations (script.h: 1000 + (corr * 7919 mod 2^32) mod 50000 ns)
totals=$("$CSAMPLER_ROOT/scripts/gpu-profile.sh" --kernel-totals g.data 2>totals.err | sed 's/(.*)//' | sort)
want_totals=$(awk 'function d(c) { return 1000 + ((c * 7919) % 4294967296) % 50000 }
	BEGIN { for (s = 0; s < 40; s++) { f += d(1000000 + s * 16); b += d(1000000 + s * 16 + 1)
			w += d(2000000 + s * 16) + d(3000000 + s * 16) }
		printf "backward_kernel\t40\t%.6f\nforward_kernel\t40\t%.6f\ngraph_kernel\t1\t%.6f\nworker_kernel\t80\t%.6f\n",
			b / 1e6, f / 1e6, d(1000000 + 40 * 16 + 2) / 1e6, w / 1e6 }' | sort)
if [ "$totals" = "$want_totals" ]; then
	pass "cupti-e2e/kernel-totals: gpu-profile.sh's per-kernel calls and totals are the script's ($(head -n 1 totals.err))"
else
	fail "cupti-e2e/kernel-totals: got [$(echo "$totals" | tr '\n\t' '| ')] want [$(echo "$want_totals" | tr '\n\t' '| ')]"
fi

# --gpu off: nothing of the GPU, and the library is not even offered to the command.
LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu off -o off.data -- sh -c 'echo "lib=${CUDA_INJECTION64_PATH:-none}"' >off.out 2>off.err
if grep -q '^lib=none$' off.out && ! "$CSAMPLER" info -i off.data 2>&1 | grep -q '^gpu launches'; then
	pass "cupti-e2e/gpu-off: no injection variable, no GPU records"
else
	fail "cupti-e2e/gpu-off: $(cat off.out off.err | tr '\n' ' ')"
fi

# The toolkit's real libcupti with no driver: every CUPTI call fails; one line, a CPU profile.
if [ -e /dev/nvidiactl ]; then
	skip "cupti-e2e/real-cupti-no-driver: this machine has an NVIDIA driver"
else
	timeout 60 "$CSAMPLER" record --gpu on -o real.data -- sh -c 'exec "$0" real "$CUDA_INJECTION64_PATH"' "$DRIVER" >real.out 2>real.err
	rc=$?
	gpu_lines=$(grep -c 'GPU' real.err)
	if [ $rc = 0 ] && [ "$gpu_lines" = 1 ] && grep -q 'CPU profile only' real.err && \
	   "$CSAMPLER" report -i real.data >/dev/null 2>&1; then
		pass "cupti-e2e/real-cupti-no-driver: one line ($(grep GPU real.err | head -c 120)...), CPU profile readable"
	else
		fail "cupti-e2e/real-cupti-no-driver: exit $rc, $gpu_lines GPU lines: $(cat real.err | tr '\n' ' ')"
	fi
fi
finish
