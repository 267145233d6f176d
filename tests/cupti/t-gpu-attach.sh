#!/usr/bin/env bash
# t-gpu-attach.sh: `csampler record -p PID --gpu on` on a CUDA program started plainly (no
# csampler variable): csampler loads lib/libcsampler-cupti.so into it with ptrace (dlopen called
# in one of its threads), starts the capture with csampler_gpu_attach and stops it with
# csampler_gpu_detach at the end. The program is tests/cupti/attach-target.c against the
# stand-in libcupti, which it loads itself; it prints the steps at which it saw the capture turn
# on and off, so that every kernel can be checked against the attach: under its launching
# function, from the attach on, never before. Three recordings in a row of the same process;
# it runs on and exits as without csampler. Each refusal is one line and a CPU-only recording
# (exit 0): CUPTI held by another tool, no CUDA in the process, a statically linked process,
# one that exits during the attach, a library of another version, ptrace refused.
. "$(dirname "$0")/../lib.sh"
export LC_ALL=C
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
D=$CSAMPLER_ROOT/bin/tests/cupti
STANDIN=$D/standin/libcupti.so.13
if [ ! -f "$LIB" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	skip "gpu-attach: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
	finish
fi
if [ ! -f "$LIB" ] || [ ! -x "$D/attach-target" ] || [ ! -f "$STANDIN" ]; then
	fail "gpu-attach: lib/libcsampler-cupti.so or $D/attach-target was not built (make test-programs)"
	finish
fi
if [ "$(uname -m)" != x86_64 ]; then
	skip "gpu-attach: the attach calls are x86-64 only"
	finish
fi
export CSAMPLER_GPU_DIR=$T/gpu   # not the user's /tmp/csampler-gpu-UID
PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$(id -u)" != 0 ] && [ "$scope" -ge 1 ]; then
	# csampler may not ptrace this script's children here: that refusal is what is checked
	"$D/attach-target" "$STANDIN" 300 >yama.out 2>&1 &
	TP=$!; PIDS+=("$TP")
	sleep 0.3
	"$CSAMPLER" record -p "$TP" --gpu on -o yama.data --duration 0.3 >/dev/null 2>yama.err
	rc=$?
	if [ $rc != 0 ] && ! grep -qi 'gpu' yama.err; then
		skip "gpu-attach/yama: the CPU sampler cannot attach here either: $(head -c 200 yama.err)"
	elif [ $rc = 0 ] && [ "$(grep -ci gpu yama.err)" = 1 ] && grep -q 'ptrace_scope is' yama.err; then
		pass "gpu-attach/yama: one line naming kernel.yama.ptrace_scope, exit 0"
	else
		fail "gpu-attach/yama: exit $rc: $(tr '\n' ' ' <yama.err | head -c 300)"
	fi
	skip "gpu-attach: kernel.yama.ptrace_scope is $scope and csampler is not root: it may not load its library into another program's process here"
	finish
fi

# start_target OUT STEPS [VAR=VALUE...]: attach-target in the background, once its loop runs
start_target() {
	local out=$1 steps=$2; shift 2
	env "$@" "$D/attach-target" "$STANDIN" "$steps" >"$out" 2>&1 &
	TP=$!
	PIDS+=("$TP")
	for _ in $(seq 200); do grep -q '^ready$' "$out" && return 0; sleep 0.05; done
	return 1
}
# gpu_lines FILE: the lines of csampler's stderr about the GPU
gpu_lines() { grep -ci 'gpu' "$1"; }

# -- three recordings of one running process --
if ! start_target target.out 3000; then
	fail "gpu-attach: attach-target did not start: $(head -c 300 target.out)"
	finish
fi
sleep 0.3
for k in 1 2 3; do
	"$CSAMPLER" record -p "$TP" --gpu on -o a$k.data --duration 0.6 >a$k.out 2>a$k.err
	echo $? >a$k.rc
	sleep 0.3
done
wait "$TP"; trc=$?
if [ $trc = 0 ] && [ "$(tail -n 1 target.out)" = "attach-target: 3000 steps" ] &&
   [ "$(grep -c '^attached at step' target.out)" = 3 ] && [ "$(grep -c '^detached at step' target.out)" = 3 ]; then
	pass "gpu-attach/target-unharmed: attached and detached 3 times, it ran its 3000 steps and exited 0 as without csampler"
else
	fail "gpu-attach/target-unharmed: exit $trc, output: $(tr '\n' '|' <target.out | head -c 400)"
fi
for k in 1 2 3; do
	name=gpu-attach/recording-$k
	on=$(grep '^attached at step' target.out | sed -n "${k}p" | awk '{print $4}')
	off=$(grep '^detached at step' target.out | sed -n "${k}p" | awk '{print $4}')
	if [ "$(cat a$k.rc)" != 0 ] || ! grep -q 'GPU: [1-9][0-9]* launches' a$k.err; then
		fail "$name: exit $(cat a$k.rc): $(tr '\n' ' ' <a$k.err | head -c 400)"
		continue
	fi
	"$CSAMPLER" info -i a$k.data --gpu-records >a$k.rec 2>/dev/null
	# kernel NAME ... corr=C ... stack=...: its launcher, its step (corr / 16), where it landed
	awk -v on="${on:-x}" -v off="${off:-x}" '
		$1 != "kernel" { next }
		{ c = $4; sub(/^corr=/, "", c); step = int(c / 16); st = $0; sub(/.*stack=/, "", st) }
		st == "-" { nolaunch++; next }
		$2 == "at_forward_kernel" {
			main++
			if (st !~ /;main;at_step;at_forward;launch$/) bad = bad " " $2 "@" st
			if (min == "" || step < min) min = step
			if (step > max) max = step
			next }
		$2 == "at_worker_kernel" {
			worker++
			if (st !~ /;at_worker_main;at_worker_launch;launch$/) bad = bad " " $2 "@" st
			next }
		{ bad = bad " unexpected:" $2 }
		END {
			ok = main > 50 && worker > 50 && bad == "" && nolaunch + 0 <= 2 && min == on && max < off
			printf "%s main=%d worker=%d no-launch=%d main steps %s..%s (attached at %s, detached at %s)%s\n",
				ok ? "ok" : "bad", main, worker, nolaunch, min, max, on, off, bad
		}' a$k.rec >a$k.check
	"$CSAMPLER" report -i a$k.data --format json --limit 0 >a$k.json 2>a$k.jerr
	sites=$(json_get a$k.json "j.gpu.launch_sites.map(s => s.stack.join(';')).join('|')" 2>/dev/null)
	if grep -q '^ok ' a$k.check && echo "$sites" | grep -q 'at_forward;at_step;main' &&
	   echo "$sites" | grep -q 'at_worker_launch;at_worker_main'; then
		pass "$name: kernels under their launchers (report's launch_sites: at_forward;at_step;main and at_worker_launch;at_worker_main), from the attach on: $(cat a$k.check)"
	else
		fail "$name: $(cat a$k.check); launch_sites [$sites]"
	fi
done
if [ -z "$(ls -A "$CSAMPLER_GPU_DIR" 2>/dev/null)" ]; then
	pass "gpu-attach/files-removed: the library's files were merged and removed"
else
	fail "gpu-attach/files-removed: left in $CSAMPLER_GPU_DIR: $(ls "$CSAMPLER_GPU_DIR")"
fi

# -- the process exits during the recording, a zombie its parent (sleep) does not reap: the
# library's exit handler wrote the rest, nothing is left to detach --
sh -c '"$0" "$1" 300 >zombie.out 2>&1 & echo $! >zombie.pid; exec sleep 5' "$D/attach-target" "$STANDIN" &
SP=$!; PIDS+=("$SP")
for _ in $(seq 200); do grep -q '^ready$' zombie.out 2>/dev/null && break; sleep 0.05; done
ZP=$(cat zombie.pid)
"$CSAMPLER" record -p "$ZP" --gpu on -o zombie.data --duration 5 >zombie.rec.out 2>zombie.err
zrc=$?
zstate=$(awk '{print $3}' "/proc/$ZP/stat" 2>/dev/null)
kill "$SP" 2>/dev/null
on=$(awk '/^attached at step/ {print $4}' zombie.out)
last=$("$CSAMPLER" info -i zombie.data --gpu-records 2>/dev/null | awk '$1 == "kernel" && $2 == "at_forward_kernel" {
	c = $4; sub(/^corr=/, "", c); s = int(c / 16); if (min == "" || s < min) min = s; if (s > max) max = s }
	END { print min ".." max }')
if [ $zrc = 0 ] && [ "$zstate" = Z ] && ! grep -qi 'warning' zombie.err && [ "$last" = "$on..299" ] &&
   grep -q '^attach-target: 300 steps$' zombie.out; then
	pass "gpu-attach/exit-during-recording: the process ended (left a zombie), its kernels are there up to its last step ($last), no warning"
else
	fail "gpu-attach/exit-during-recording: exit $zrc, state $zstate, main steps $last (attached at $on): $(tr '\n' ' ' <zombie.err | head -c 400)"
fi

# -- two recorders: the second finds the capture on, reads its records, stops nothing --
if start_target twice.out 1500; then
	"$CSAMPLER" record -p "$TP" --gpu on -o first.data --duration 2 >first.out 2>first.err &
	FP=$!
	for _ in $(seq 100); do grep -q '^attached at step' twice.out && break; sleep 0.05; done
	"$CSAMPLER" record -p "$TP" --gpu on -o second.data --duration 0.5 >second.out 2>second.err
	src=$?
	wait "$FP"; frc=$?
	wait "$TP"
	# kernels: its launch records reach the file once a second (they may come after its end)
	n2=$("$CSAMPLER" info -i second.data 2>/dev/null | awk '$1 == "kernel" && $3 == "records" {print $2}')
	if [ $src = 0 ] && [ $frc = 0 ] && grep -q 'already on in this process' second.err &&
	   [ "$(grep -c '^detached at step' twice.out)" = 1 ] && [ "${n2:-0}" -gt 0 ] &&
	   grep -q 'GPU: [1-9][0-9]* launches' first.err; then
		pass "gpu-attach/second-recorder: the second record -p reads the first one's capture ($n2 kernels) and leaves it on: $(grep -i 'already on' second.err | head -c 160)"
	else
		fail "gpu-attach/second-recorder: exits $frc/$src, $n2 kernels: $(tr '\n' ' ' <second.err | head -c 300) / $(tr '\n' '|' <twice.out | head -c 200)"
	fi
else
	fail "gpu-attach/second-recorder: attach-target did not start"
fi

# -- a process started with csampler env: its own records are read, nothing is loaded --
if [ -x "$TPROG/gpu-writer" ]; then
	"$CSAMPLER" env -- "$TPROG/gpu-writer" stream 3 >env.out 2>&1 &
	EP=$!; PIDS+=("$EP")
	sleep 0.8
	"$CSAMPLER" record -p "$EP" --gpu on -o env.data --duration 1 >/dev/null 2>env.err
	erc=$?
	wait "$EP"
	hdr=$("$CSAMPLER" info -i env.data 2>/dev/null | sed -n 's/^gpu  *\(on.*\)/\1/p')
	nk=$("$CSAMPLER" info -i env.data 2>/dev/null | awk '$1 == "kernel" && $3 == "records" {print $2}')
	if [ $erc = 0 ] && [ "$hdr" = "on (attach: records of csampler env)" ] && [ "${nk:-0}" -gt 0 ] &&
	   ! grep -qi 'warning' env.err; then
		pass "gpu-attach/env-started: --gpu on reads the records of a csampler env process ($nk kernels) and loads nothing"
	else
		fail "gpu-attach/env-started: exit $erc, header [$hdr], $nk kernels: $(tr '\n' ' ' <env.err | head -c 300)"
	fi
else
	skip "gpu-attach/env-started: $TPROG/gpu-writer was not built"
fi

# refused ERR NAME WHAT PATTERN: csampler exited 0, said one GPU line matching PATTERN, and
# its recording is readable
refused() {
	local data=$1 name=$2 what=$3 pat=$4 rc
	rc=$(cat "$data.rc")
	if [ "$rc" = 0 ] && [ "$(gpu_lines "$data.err")" = 1 ] && grep -Eq "$pat" "$data.err" &&
	   "$CSAMPLER" report -i "$data" >/dev/null 2>&1 &&
	   ! "$CSAMPLER" info -i "$data" 2>/dev/null | grep -Eq '^gpu launches: *[1-9]'; then
		pass "$name: $what: one line ($(grep -i gpu "$data.err" | head -c 200)), exit 0, CPU profile readable"
	else
		fail "$name: exit $rc, $(gpu_lines "$data.err") GPU lines: $(tr '\n' ' ' <"$data.err" | head -c 500)"
	fi
}
record_p() { # DATA PID [VAR=VALUE...]
	local data=$1 pid=$2; shift 2
	env "$@" "$CSAMPLER" record -p "$pid" --gpu on -o "$data" --duration 0.4 >"$data.out" 2>"$data.err"
	echo $? >"$data.rc"
}

# -- CUPTI held by another tool --
if start_target busy.out 600 STANDIN_SUBSCRIBE=busy; then
	record_p busy.data "$TP"
	wait "$TP"
	refused busy.data gpu-attach/cupti-busy "CUPTI held by another subscriber" 'CUPTI is already used by Nsight Systems'
else
	fail "gpu-attach/cupti-busy: attach-target did not start"
fi

# -- no CUDA in the process --
sleep 5 &
SP=$!; PIDS+=("$SP")
sleep 0.1
record_p nocuda.data "$SP"
kill "$SP" 2>/dev/null
refused nocuda.data gpu-attach/no-cuda "a process without CUDA" 'no CUDA library mapped'

# -- statically linked: no dlopen to call --
if [ -x "$D/static-loop" ]; then
	"$D/static-loop" 3 &
	SP=$!; PIDS+=("$SP")
	sleep 0.1
	record_p static.data "$SP"
	wait "$SP"; src=$?
	refused static.data gpu-attach/static "a statically linked process (it exited $src)" 'statically linked'
else
	skip "gpu-attach/static: no static libc here, $D/static-loop was not built"
fi

# -- the process exits during the attach (its dlopen ends it: tests/cupti/attach-exit.c) --
if start_target exit.out 600; then
	record_p exit.data "$TP" CSAMPLER_GPU_LIB="$D/attach-exit.so"
	wait "$TP"
	refused exit.data gpu-attach/exit-during-attach "the process exited inside the dlopen" 'exited during the attach'
else
	fail "gpu-attach/exit-during-attach: attach-target did not start"
fi

# -- a library of another version: refused before it is loaded --
ver=$(sed -n 's/^#define GPU_ATTACH_VERSION "\(.*\)"$/\1/p' "$CSAMPLER_ROOT/profiler/inject/attach.h")
other=$(echo "$ver" | tr '0123456789' '9876543210')
sed "s/$ver/$other/g" "$LIB" >other-version.so
if [ -n "$ver" ] && [ "$ver" != "$other" ] && start_target version.out 600; then
	record_p version.data "$TP" CSAMPLER_GPU_LIB="$T/other-version.so"
	grep -c other-version "/proc/$TP/maps" >version.maps 2>/dev/null
	wait "$TP"
	refused version.data gpu-attach/version "a library of another version (never loaded: $(cat version.maps) mappings)" 'this csampler needs'
else
	fail "gpu-attach/version: no version in attach.h ($ver), or attach-target did not start"
fi

# -- ptrace refused: the process is already traced --
if command -v strace >/dev/null; then
	strace -f -o /dev/null "$D/attach-target" "$STANDIN" 600 >traced.out 2>&1 &
	SP=$!; PIDS+=("$SP")
	for _ in $(seq 200); do grep -q '^ready$' traced.out && break; sleep 0.05; done
	TP=$(pgrep -P "$SP" | head -n 1)
	if [ -n "$TP" ]; then
		record_p traced.data "$TP"
		wait "$SP"
		refused traced.data gpu-attach/ptrace-refused "a process another tracer holds" 'PTRACE_SEIZE.*CAP_SYS_PTRACE'
	else
		fail "gpu-attach/ptrace-refused: no traced attach-target under strace"
	fi
else
	skip "gpu-attach/ptrace-refused: no strace here to hold the process"
fi
finish
