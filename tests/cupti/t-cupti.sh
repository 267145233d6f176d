#!/usr/bin/env bash
# t-cupti.sh: lib/libcsampler-cupti.so end to end without a GPU. A driver program loads it the
# way the CUDA driver does and plays a scripted CUDA workload against a stand-in libcupti.so.13
# (tests/cupti/standin.c); the driver then checks gpu-PID.bin against the script (driver.c,
# script.h). Also: the ABI contract with the real libcupti (symbols, version tag), and the real
# libcupti.so.13 of the toolkit with no driver.
. "$(dirname "$0")/../lib.sh"
export LC_ALL=C   # sort and comm agree on symbol order
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
TD=$CSAMPLER_ROOT/bin/tests/cupti
DRIVER=$TD/driver
if [ ! -f "$LIB" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	skip "cupti: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
	exit 0
fi
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	fail "cupti: the CUDA toolkit has CUPTI but lib/libcsampler-cupti.so or $DRIVER was not built (make test-programs)"
	finish
fi

# --- the ABI contract ---
imports=$(nm -D --undefined-only "$LIB" | awk '{print $2}' | grep '^cupti' | sort)
exports=$(nm -D --defined-only "$TD/standin/libcupti.so.13" | awk '{print $3}' | grep '^cupti' | sort)
if [ -z "$imports" ]; then
	fail "abi: the library imports no cupti symbol (nm failed?)"
elif [ "$(echo "$imports" | sed 's/@.*//')" = "$(echo "$exports" | sed 's/@.*//')" ]; then
	pass "abi: the stand-in exports exactly the $(echo "$imports" | wc -l) CUPTI functions the library imports"
else
	fail "abi: imports and stand-in exports differ: $(diff <(echo "$imports" | sed 's/@.*//') <(echo "$exports" | sed 's/@.*//') | grep '^[<>]' | tr '\n' ' ')"
fi
if echo "$imports" | grep -vq '@libcupti\.so\.13$'; then
	fail "abi: imports without the libcupti.so.13 version: $(echo "$imports" | grep -v '@libcupti\.so\.13$' | tr '\n' ' ')"
else
	pass "abi: every CUPTI import is versioned libcupti.so.13"
fi
if echo "$exports" | grep -vq '@@libcupti\.so\.13$'; then
	fail "abi: stand-in exports without @@libcupti.so.13: $(echo "$exports" | grep -v '@@libcupti' | tr '\n' ' ')"
else
	pass "abi: every stand-in export is tagged @@libcupti.so.13 like the real one"
fi
real=$(ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcupti.so.13 2>/dev/null)
if [ -n "$real" ]; then
	missing=$(comm -23 <(echo "$imports" | sed 's/@.*//') <(nm -D --defined-only "$real" | awk '{print $3}' | sed 's/@.*//' | sort -u))
	if [ -z "$missing" ]; then pass "abi: the real libcupti.so.13 exports every import"
	else fail "abi: the real libcupti.so.13 lacks: $missing"; fi
else
	skip "abi: no libcupti.so.13 in ${CUDA_HOME:-/usr/local/cuda}/lib64 to compare the imports with"
fi
defined=$(nm -D --defined-only "$LIB" | awk '{print $3}' | sort | tr '\n' ' ')
if [ "$defined" = "InitializeInjection csampler_gpu_attach csampler_gpu_attach_version csampler_gpu_detach csampler_gpu_inflight " ]; then
	pass "abi: exports InitializeInjection, the attach entry points (inject/attach.h) and the in-flight table (protocol.h) only"
else fail "abi: exports $defined"; fi
needed=$(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
runpath=$(readelf -d "$LIB" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
case "$needed" in *libcupti.so.13*) pass "abi: needs libcupti.so.13 by soname (RUNPATH $runpath)" ;;
	*) fail "abi: NEEDED $needed" ;; esac
out=$(LD_LIBRARY_PATH=$TD/other-tag "$DRIVER" load "$LIB" 2>&1)
if [ $? = 2 ] && echo "$out" | grep -q 'version libcupti.so.13'; then
	pass "abi: a libcupti.so.13 with another version tag is refused at load"
else
	fail "abi: a stand-in with another version tag loaded or failed otherwise: $out"
fi
out=$(LD_LIBRARY_PATH=$TD/standin "$DRIVER" load "$LIB" 2>&1)
if [ $? = 0 ]; then pass "abi: loads against the stand-in"; else fail "abi: stand-in load: $out"; fi

# --- scripted workloads against the stand-in ---
# scenario NAME [VAR=VALUE...]: run the driver in a fresh CSAMPLER_GPU_DIR with the stand-in.
scenario() {
	local name=$1; shift
	local dir
	dir=$(mktemp -d "$T/gpu.XXXXXX")
	local out
	if out=$(env LD_LIBRARY_PATH="$TD/standin" CSAMPLER_GPU_DIR="$dir" "$@" \
		timeout 60 "$DRIVER" "${name%%:*}" "$LIB" 2>&1); then
		pass "$name: $(echo "$out" | grep '^ok' | tr '\n' ' ')"
	else
		fail "$name: $(echo "$out" | head -n 8 | tr '\n' ' ')"
	fi
}
scenario workload
scenario workload:no-stacks CSAMPLER_GPU_STACK=0
# both callback domains: the runtime call is recorded, its nested driver call returns at once
scenario workload:both-domains CSAMPLER_GPU_SUBSCRIBE=both
# launch-queue timestamps asked for: queued/submitted as scripted (off: unknown, 0)
scenario workload:latency CSAMPLER_GPU_LATENCY=1
# captures left off: their activity kinds are not enabled, nothing else changes
scenario workload:disable CSAMPLER_GPU_DISABLE=memset,nvtx
scenario fork
# stack ids kept under the unwinder's token while the library's stack table starts again
scenario stackreset CSAMPLER_GPU_STACK_TABLE=8
scenario noinit
scenario busy STANDIN_SUBSCRIBE=busy
scenario error STANDIN_ERROR=not_initialized
scenario hang STANDIN_FLUSH=hang CSAMPLER_GPU_FLUSH_MS=400

# --- the toolkit's real libcupti, no driver: every call fails, one note, no hang ---
if ldd "$LIB" | grep -q 'libcupti.so.13 => .*not found'; then
	skip "real-cupti: the toolkit's libcupti.so.13 is not found from the library's RUNPATH"
elif [ -e /dev/nvidiactl ]; then
	skip "real-cupti: this machine has an NVIDIA driver (the no-driver case cannot be shown)"
else
	dir=$(mktemp -d "$T/gpu.XXXXXX")
	if out=$(env -u LD_LIBRARY_PATH CSAMPLER_GPU_DIR="$dir" timeout 60 "$DRIVER" real "$LIB" 2>&1); then
		pass "real-cupti: $(echo "$out" | grep '^ok' | tr '\n' ' ')"
	else
		fail "real-cupti: $(echo "$out" | head -n 5 | tr '\n' ' ')"
	fi
fi
finish
