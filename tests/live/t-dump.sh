#!/usr/bin/env bash
# csampler dump (record/dump.h): a snapshot of running processes.
#  - a job of 4 ranks x 5 threads where rank 2 is somewhere else: every thread's stack and
#    state, and the summary singles rank 2 out; the targets go on unharmed (not traced, same
#    states, the spinner still spins);
#  - GPU kernels in flight against the stand-in libcupti: the two that never finish, with
#    their launch stacks, and not the one that finished (its record comes with the flush);
#  - JSON with hostile names; targets exiting during the dump; a PID not permitted; bad input.
source "$CSAMPLER_ROOT/tests/lib.sh"
C=$CSAMPLER
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$(id -u)" != 0 ] && [ "$scope" -ge 1 ]; then
	skip "dump: kernel.yama.ptrace_scope is $scope and csampler is not root: it may not ptrace this script's children"
	finish
fi
started=()
cleanup() {
	local p
	exec 2>/dev/null   # no "Killed" lines from the shell
	for p in "${started[@]}"; do
		for d in $(descendants "$p"); do kill -9 "$d" 2>/dev/null; done
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
# wait_ready FILE: wait for the "ready" line a target prints
wait_ready() { for _ in $(seq 1 100); do grep -q '^ready' "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
# tracer_free PID: no thread of PID is traced any more, and none is stopped
tracer_free() {
	local s
	for s in /proc/"$1"/task/*/status; do
		grep -q '^TracerPid:[[:space:]]*0$' "$s" || return 1
		grep -q '^State:[[:space:]]*[tT]' "$s" && return 1
	done
	return 0
}

# ---- a job with one rank elsewhere ----
"$TPROG/dump-ranks" 4 5 2 >ranks.out &
L=$!; started+=("$L")
wait_ready ranks.out || { fail "dump: dump-ranks did not start"; finish; }
read -r -a R <<<"$(sed 's/^ready //' ranks.out)"
spin=${R[2]}
ticks0=$(awk '{print $14}' /proc/"$spin"/stat)
"$C" dump -p "$L" --children >text.txt 2>text.err; rc=$?
"$C" dump -p "$L" --children --format json >dump.json 2>json.err; rcj=$?
if [ $rc = 0 ] && [ $rcj = 0 ] && [ ! -s text.err ]; then pass "dump: text and JSON of 5 processes (exit 0, nothing on stderr)"; else
	fail "dump: rc $rc/$rcj: $(head -c 300 text.err json.err)"; fi
got=$(json_get dump.json "j.processes.filter(p => p.rank !== null).map(p => p.rank + ':' + p.threads.length + ':' + p.threads.filter(t => t.frames.some(f => f.name === 'ranks_worker_idle') && t.syscall === 'futex').length).join(' ')")
if [ "$got" = "0:5:4 1:5:4 2:5:4 3:5:4" ]; then
	pass "dump: every rank's 5 threads read, its 4 workers waiting in futex under ranks_worker_idle"
else
	fail "dump: ranks:threads:workers = '$got'"
fi
# (the first dump's stop resumed their nanosleep as restart_syscall: the second dump sees that)
mains=$(json_get dump.json "j.processes.filter(p => p.rank !== null).map(p => { const t = p.threads.find(t => t.tid === p.pid); return p.rank + ':' + t.state + ':' + (t.syscall || '-').replace('restart_syscall', 'clock_nanosleep') + ':' + (t.frames.find(f => /^ranks_(wait|spin)/.test(f.name)) || {name: 'none'}).name }).join(' ')")
if [ "$mains" = "0:S:clock_nanosleep:ranks_wait_collective 1:S:clock_nanosleep:ranks_wait_collective 2:R:-:ranks_spin_elsewhere 3:S:clock_nanosleep:ranks_wait_collective" ]; then
	pass "dump: main threads: ranks 0,1,3 wait in clock_nanosleep (ranks_wait_collective), rank 2 runs ranks_spin_elsewhere"
else
	fail "dump: main threads: $mains"
fi
differs=$(grep '^Differs:' text.txt)
if [ "$(echo "$differs" | grep -c .)" = 1 ] &&
	[[ $differs == "Differs: 3 of 4 processes waiting in clock_nanosleep: clock_nanosleep < ranks_wait_collective"*"; PID $spin (rank 2) is elsewhere: running: ranks_spin_elsewhere"* ]]; then
	pass "dump: the summary singles out rank 2 ($differs)"
else
	fail "dump: summary: $(sed -n '/^Summary/,$p' text.txt | tr '\n' '|')"
fi
grep -q "^  3 of 5 processes (all but PID $L, PID $spin (rank 2)): 3 threads waiting in clock_nanosleep" text.txt &&
	grep -q "^  4 of 5 processes (all but PID $L): 16 threads waiting in futex" text.txt &&
	pass "dump: the summary groups identical stacks across processes" ||
	fail "dump: summary groups: $(sed -n '/^Summary/,$p' text.txt | tr '\n' '|')"
stopped=$(json_get dump.json "Math.max(...j.processes.map(p => p.stopped_ms))")
read_ms=$(json_get dump.json "j.read_ms")
sleep 0.3
ticks1=$(awk '{print $14}' /proc/"$spin"/stat)
ok=1
for p in "${R[@]}" "$L"; do tracer_free "$p" || ok=0; done
if [ $ok = 1 ] && [ "$ticks1" -gt "$ticks0" ] && [ "$(ls /proc/"$spin"/task | wc -l)" = 5 ]; then
	pass "dump: the targets run on untraced and unstopped, the spinner still spins (each stopped at most $stopped ms, all read in $read_ms ms)"
else
	fail "dump: targets after the dump: tracer-free $ok, spinner ticks $ticks0 -> $ticks1"
fi
# the summary only
"$C" dump -p "$(IFS=,; echo "${R[*]}")" --summary >sum.txt 2>&1
if grep -q '^Summary: 4 processes, 20 threads' sum.txt && ! grep -q '^  Thread' sum.txt; then pass "dump: --summary prints the summary only"; else fail "dump: --summary: $(head -c 300 sum.txt)"; fi

# ---- JSON with hostile names ----
weird="$T/we\"ird\\na<me>"
cp /bin/sleep "$weird"
"$weird" 300 &
W=$!; started+=("$W")
sleep 0.2
if "$C" dump -p "$W" --format json >weird.json 2>weird.err &&
	[ "$(json_get weird.json 'j.processes[0].comm')" = "$(cat /proc/$W/comm)" ] &&
	[ "$(json_get weird.json 'j.processes[0].threads[0].syscall')" = clock_nanosleep ]; then
	pass "dump: JSON escapes a process name with quote, backslash and <> ($(cat /proc/$W/comm))"
else
	fail "dump: JSON with a hostile name: $(head -c 300 weird.json weird.err)"
fi

# ---- GPU work in flight (stand-in libcupti) ----
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
IF=$TPROG/cupti/inflight
if [ -f "$LIB" ] && [ -x "$IF" ]; then
	mkdir -p gpu
	CSAMPLER_GPU_DIR=$T/gpu LD_LIBRARY_PATH=$TPROG/cupti/standin "$IF" "$LIB" >if.out 2>if.err &
	G=$!; started+=("$G")
	if wait_ready if.out; then
		"$C" dump -p "$G" --format json >gpu.json 2>gpu.err; rc=$?
		"$C" dump -p "$G" >gpu.txt 2>&1
		kernels=$(json_get gpu.json "j.processes[0].gpu.in_flight.map(k => k.kernel + '@' + k.frames.map(f => f.name).filter(n => /^if_/.test(n)).join('<')).sort().join(' ')")
		if [ $rc = 0 ] && [ "$kernels" = "if_hung_kernel(float*)@if_launch<if_launch_hung if_worker_kernel@if_launch<if_worker_launch<if_worker" ]; then
			pass "dump: GPU: the 2 kernels that never finished, demangled, with their launch stacks ($kernels)"
		else
			fail "dump: GPU in flight: rc $rc, '$kernels' $(head -c 300 gpu.err)"
		fi
		if [ "$(json_get gpu.json 'j.processes[0].gpu.launched')" = 3 ] && ! grep -q if_done_kernel gpu.txt &&
			grep -q '^  GPU: 2 kernels launched and not finished (of 3 launched):' gpu.txt &&
			grep -q '^  GPU: 1 of 1 processes with GPU capture have kernels launched and not finished' gpu.txt; then
			pass "dump: GPU: the finished kernel is not listed (its record came with the flush dump asked for)"
		else
			fail "dump: GPU text: $(grep GPU gpu.txt | tr '\n' '|')"
		fi
		tracer_free "$G" && kill -0 "$G" && pass "dump: GPU: the program runs on untraced" || fail "dump: GPU: the program after the dump"
	else
		fail "dump: GPU: the in-flight program did not start: $(head -c 300 if.err)"
	fi
else
	skip "dump: GPU in flight: lib/libcsampler-cupti.so or bin/tests/cupti/inflight not built (no CUDA toolkit with CUPTI headers)"
fi

# ---- Python frames merged into the native stacks ----
PY=/usr/bin/python3
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
if [ "$pyver" = 3.11 ] || [ "$pyver" = 3.12 ]; then
	cat >py.py <<'PYEOF'
import threading, time
def py_wait_here():
    time.sleep(3600)
def py_outer():
    py_wait_here()
def py_spin():
    x = 0
    while True:
        x += 1
threading.Thread(target=py_spin, daemon=True).start()
print("ready", flush=True)
py_outer()
PYEOF
	"$PY" py.py >py.out 2>&1 &
	P=$!; started+=("$P")
	wait_ready py.out; sleep 0.2
	"$C" dump -p "$P" --format json >py.json 2>py.err
	main=$(json_get py.json "j.processes[0].threads.find(t => t.tid === j.processes[0].pid).frames.filter(f => f.python).map(f => f.name + ':' + f.line).join(' < ')")
	spin=$(json_get py.json "j.processes[0].threads.filter(t => t.tid !== j.processes[0].pid).map(t => t.frames.filter(f => f.python).map(f => f.name).join(' < ')).join('|')")
	native=$(json_get py.json "j.processes[0].threads.find(t => t.tid === j.processes[0].pid).frames.filter(f => !f.python).map(f => f.name).join(' ')")
	if [ "$main" = "py_wait_here:3 < py_outer:5 < <module>:12" ] && [[ $spin == "py_spin < Thread.run < Thread._bootstrap_inner < Thread._bootstrap" ]] &&
		[[ " $native " == *" clock_nanosleep "* ]]; then
		pass "dump: Python $pyver frames in place of the interpreter's, with lines (main: $main; thread: $spin)"
	else
		fail "dump: Python frames: main '$main', thread '$spin', native '$native' $(head -c 200 py.err)"
	fi
	# GPU work in flight launched from Python (libpylaunch.so over the stand-in CUPTI): the
	# launch stack carries the Python functions, and the summary names them
	PL=$TPROG/cupti/libpylaunch.so
	if [ "$pyver" = 3.11 ] && [ -f "$LIB" ] && [ -f "$PL" ]; then
		cat >hang.py <<'PYEOF'
import ctypes, os, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.pl_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
lib.pl_launch_hung.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
def forward():
    lib.pl_launch(b"forward_kernel", 1)
def all_reduce():
    lib.pl_launch_hung(b"nccl_all_reduce_kernel", 2)
def train_step():
    forward()
    all_reduce()
    time.sleep(3600)
if lib.pl_init(os.environ["CUDA_INJECTION64_PATH"].encode()) != 0:
    sys.exit(2)
print("ready", flush=True)
train_step()
PYEOF
		(export CSAMPLER_GPU_DIR=$T/gpu-py; eval "$("$C" env --print)"
		 LD_LIBRARY_PATH=$TPROG/cupti/standin exec "$PY" hang.py "$PL") >hang.out 2>&1 &
		H=$!; started+=("$H")
		if wait_ready hang.out; then
			"$C" dump -p "$H" --format json >hang.json 2>hang.err
			"$C" dump -p "$H" --summary >hang.txt 2>&1
			k=$(json_get hang.json "j.processes[0].gpu.in_flight.map(k => k.kernel + '@' + k.frames.filter(f => f.python).map(f => f.name + ':' + f.line).join('<')).join(' ')")
			if [ "$k" = "nccl_all_reduce_kernel@all_reduce:8<train_step:11<<module>:16" ] &&
				grep -q 'waiting in clock_nanosleep: clock_nanosleep < train_step < <module>' hang.txt; then
				pass "dump: GPU work in flight launched from Python: $k; the summary names the Python functions"
			else
				fail "dump: Python launch stack: '$k'; $(grep clock_nanosleep hang.txt) $(head -c 200 hang.err)"
			fi
		else
			fail "dump: the Python launcher did not start: $(head -c 300 hang.out)"
		fi
	else
		skip "dump: kernels in flight from Python: needs CPython 3.11, lib/libcsampler-cupti.so and libpylaunch.so"
	fi
else
	skip "dump: Python frames: /usr/bin/python3 is ${pyver:-missing}, not 3.11 or 3.12"
fi

# ---- targets exiting during the dump ----
# rank r exits 600 + 500 r ms after its start (dump-ranks.c): back-to-back dumps see them go
# one by one, over 2.5 s
"$TPROG/dump-ranks" 6 8 -1 600 500 >exit.out &
E=$!; started+=("$E")
wait_ready exit.out || fail "dump: exiting ranks did not start"
read -r -a X <<<"$(sed 's/^ready //' exit.out)"
list=$(IFS=,; echo "${X[*]}")
bad=0 runs=0 partial=0
for _ in $(seq 1 200); do
	timeout 10 "$C" dump -p "$list" --format json >ex.json 2>ex.err; rc=$?
	runs=$((runs + 1))
	case $rc in
	0) json_get ex.json "j.processes.length" >/dev/null 2>&1 || bad=$((bad + 1))
	   [ -s ex.err ] && partial=$((partial + 1)) ;;
	125) grep -q 'no such process' ex.err || bad=$((bad + 1)) ;;
	*) bad=$((bad + 1)); echo "rc $rc: $(head -c 200 ex.err)" ;;
	esac
	[ $rc = 125 ] && break
	sleep 0.01
done
if [ $bad = 0 ] && [ $rc = 125 ] && [ "$(grep -c . ex.err)" = 6 ] && [ $partial -ge 1 ]; then
	pass "dump: targets exiting during $runs dumps: never a crash or hang, valid JSON ($partial partial), then one line per gone PID"
else
	fail "dump: exiting targets: $bad bad of $runs runs ($partial partial), last rc $rc, $(grep -c . ex.err) lines: $(head -c 300 ex.err)"
fi

# ---- a process a user stopped stays stopped; a zombie is named as one ----
sleep 300 &
ST=$!; started+=("$ST")
sleep 0.1
kill -STOP "$ST"
sleep 0.1
"$C" dump -p "$ST" >st.txt 2>st.err; rc=$?
state=$(awk '/^State:/ {print $2}' /proc/"$ST"/status)
if [ $rc = 0 ] && grep -q '^  Thread [0-9]* "sleep": stopped (by a signal)' st.txt && [ "$state" = T ] &&
	grep -q 'TracerPid:[[:space:]]*0' /proc/"$ST"/status; then
	pass "dump: a SIGSTOPped process is read and stays stopped, untraced"
else
	fail "dump: stopped process: rc $rc, state $state: $(head -c 300 st.txt st.err)"
fi
kill -CONT "$ST"
# sh starts a short sleep and becomes a long one that never reaps it: a zombie
sh -c 'sleep 0.1 & exec sleep 300' &
ZP=$!; started+=("$ZP")
sleep 0.5
Z=$(pgrep -P "$ZP" | head -n 1)
"$C" dump -p "$Z" >z.out 2>z.err; rc=$?
if [ -n "$Z" ] && [ $rc = 125 ] && [ "$(grep -c . z.err)" = 1 ] && grep -q "PID $Z has exited: a zombie" z.err; then
	pass "dump: a zombie: one line saying so, exit 125"
else
	fail "dump: zombie '$Z': rc $rc: $(cat z.err)"
fi

# ---- --cgroup: the processes of a cgroup made for the test ----
cgroot=/sys/fs/cgroup
[ -e $cgroot/cgroup.procs ] || cgroot=/sys/fs/cgroup/unified
CG=csampler-t-dump-$$
if [ "$(id -u)" = 0 ] && [ -e $cgroot/cgroup.procs ] && mkdir "$cgroot/$CG" 2>/dev/null; then
	sleep 300 &
	S1=$!; started+=("$S1")
	sleep 300 &
	S2=$!; started+=("$S2")
	sleep 0.1
	echo "$S1" >"$cgroot/$CG/cgroup.procs"; echo "$S2" >"$cgroot/$CG/cgroup.procs"
	"$C" dump --cgroup "/$CG" --format json >cg.json 2>cg.err; rc=$?
	got=$(json_get cg.json "j.processes.map(p => p.pid).join(',')" 2>/dev/null)
	want=$(printf '%s\n' "$S1" "$S2" | sort -n | paste -sd,)
	if [ $rc = 0 ] && [ "$got" = "$want" ]; then pass "dump: --cgroup /$CG dumps its 2 processes"; else fail "dump: --cgroup: rc $rc, pids '$got' (want $want) $(head -c 200 cg.err)"; fi
	"$C" dump --cgroup /no-such-cgroup-$$ >cg2.out 2>cg2.err; rc=$?
	[ $rc = 125 ] && [ "$(grep -c . cg2.err)" = 1 ] && grep -q 'cannot read .*cgroup.procs' cg2.err &&
		pass "dump: --cgroup of a missing cgroup: one line, exit 125" || fail "dump: missing cgroup: rc $rc $(cat cg2.err)"
	kill -9 "$S1" "$S2" 2>/dev/null; wait "$S1" "$S2" 2>/dev/null
	for _ in $(seq 1 50); do rmdir "$cgroot/$CG" 2>/dev/null && break; sleep 0.05; done
else
	skip "dump: --cgroup: needs root and a writable cgroup v2 hierarchy to make a test cgroup"
fi

# ---- bad input, and a PID that is not permitted ----
"$C" dump >e1.out 2>e1.err; rc1=$?
"$C" dump -p abc >e2.out 2>e2.err; rc2=$?
"$C" dump -p 2147483646 >e3.out 2>e3.err; rc3=$?
if [ $rc1 = 125 ] && grep -q 'nothing to dump' e1.err && [ $rc2 = 125 ] && grep -q "invalid PID list 'abc'" e2.err &&
	[ $rc3 = 125 ] && [ "$(grep -c . e3.err)" = 1 ] && grep -q 'no such process 2147483646' e3.err; then
	pass "dump: bad input: one line and exit 125 (no target, bad PID list, no such process)"
else
	fail "dump: bad input: rc $rc1/$rc2/$rc3: $(cat e1.err e2.err e3.err | head -c 300)"
fi
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	sleep 300 &
	S=$!; started+=("$S")
	setpriv --reuid=65534 --regid=65534 --clear-groups "$C" dump -p "$S" >p.out 2>p.err; rc=$?
	if [ $rc = 125 ] && [ "$(grep -c . p.err)" = 1 ] && grep -q "PID $S: ptrace not permitted" p.err && [ ! -s p.out ]; then
		pass "dump: a root process dumped by nobody: one line ($(head -c 120 p.err)...), exit 125"
	else
		fail "dump: not permitted: rc $rc: $(head -c 300 p.err)"
	fi
	tracer_free "$S" || fail "dump: the refused target was left traced"
else
	skip "dump: not-permitted case: needs root and setpriv to switch to an unprivileged user"
fi
finish
