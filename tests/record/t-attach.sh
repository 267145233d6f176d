#!/usr/bin/env bash
# Attach mode: -p PID samples every thread, including one created after attaching; the target
# keeps running and answers afterwards; the record ends when the targets exit.
source "$CSAMPLER_ROOT/tests/lib.sh"

mkfifo fifo
"$TPROG/rec-spinner" fifo reply.txt &
spid=$!
sleep 0.5
"$CSAMPLER" record -o att.data -p "$spid" --duration 3 >out.txt 2>err.txt
rc=$?
[ "$rc" = 0 ] && pass "attach: exit 0 after --duration" || fail "attach: rc $rc: $(cat err.txt)"
if kill -0 "$spid" 2>/dev/null; then pass "attach: target still running after detach"; else fail "attach: target died"; fi
echo ping >fifo
for i in 1 2 3 4 5 6 7 8 9 10; do grep -q pong reply.txt 2>/dev/null && break; sleep 0.2; done
grep -q 'pong 1' reply.txt 2>/dev/null && pass "attach: target still responsive" || fail "attach: target did not answer"
"$CSAMPLER" info -i att.data --format json >info.json 2>info.err || fail "attach: info: $(cat info.err)"
n=$(json_get info.json "j.threads.filter(t => t.comm === 'spinner').reduce((a, t) => a + t.samples, 0)")
[ "${n:-0}" -gt 100 ] && pass "attach: spinner thread sampled ($n)" || fail "attach: spinner thread has ${n:-0} samples"
n=$(json_get info.json "j.threads.filter(t => t.comm === 'late').reduce((a, t) => a + t.samples, 0)")
[ "${n:-0}" -gt 50 ] && pass "attach: thread created after attaching sampled ($n)" || fail "attach: late thread has ${n:-0} samples"
mode=$(json_get info.json "j.header.mode")
[ "$mode" = attach ] && pass "attach: header says attach" || fail "attach: mode $mode"
kill "$spid"; wait "$spid" 2>/dev/null

# two targets at once, and the recording ends when both exit
# (5 s and 5.5 s: on a loaded machine attaching can take over a second, more with the bpf
# backend auto chooses as root (loading the program: 3 s targets were gone before it attached
# at load 13), and a target that is gone by then is not sampled)
"$TPROG/rec-family" 5 & p1=$!
"$TPROG/rec-family" 5.5 & p2=$!
sleep 0.2
start=$(date +%s.%N)
timeout 20 "$CSAMPLER" record -q -o two.data -p "$p1,$p2" >/dev/null 2>err2.txt
rc=$?
el=$(echo "$(date +%s.%N) - $start" | bc)
[ "$rc" = 0 ] && pass "attach: two PIDs, ends when they exit (${el}s)" || fail "attach: two PIDs rc $rc: $(cat err2.txt)"
"$CSAMPLER" info -i two.data --format json >two.json 2>/dev/null
np=$(json_get two.json "j.processes.filter(p => p.pid === $p1 || p.pid === $p2).length")
[ "$np" = 2 ] && pass "attach: both targets sampled" || fail "attach: $np of 2 targets sampled"
wait

# a target that exits while another is still sampled: the exited one's events report POLLHUP
# from then on, which must not make csampler spin (it used a whole CPU, ~3 s here, before the fix; startup and
# symbolization take well under 1 s)
"$TPROG/rec-family" 0.3 & p1=$!
sleep 30 & p2=$!
sleep 0.1
TIMEFORMAT='%U %S'
{ time "$CSAMPLER" record -q -o hup.data -p "$p1,$p2" --duration 3 >/dev/null 2>hup.err; } 2>hup.time
kill "$p2"; wait 2>/dev/null
cpu=$(awk '{print $1 + $2}' hup.time)
if [ "$(echo "$cpu < 2.0" | bc)" = 1 ]; then pass "attach: no busy loop after a target exits (${cpu}s CPU in 3 s)"
else fail "attach: csampler used ${cpu}s of CPU in a 3 s recording: busy loop"; fi
finish
