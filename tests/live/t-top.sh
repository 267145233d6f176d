#!/usr/bin/env bash
# csampler top (cmd/cmd_top.c over record/live.h), driven under tmux: keys sent, the pane
# captured and checked.
#  - launch mode on tests/progs/accuracy (50/30/20% in work_alpha/beta/gamma): the functions by
#    self, then by total (s), the threads (t), the GPU view (g), pause (p) freezes the numbers,
#    a resize redraws at the new size, q quits with exit 0, the terminal restored (canonical
#    mode, echo), the -o file readable by report;
#  - colour: reverse video in the header by default, no attribute at all under NO_COLOR;
#  - attach mode with GPU capture loaded into the stand-in CUDA program: the GPU panel's
#    kernels; SIGINT (^C) ends it with the terminal restored and the target running;
#  - Python frames, when python3 is 3.11 or 3.12; refusals without a terminal, bad input.
source "$CSAMPLER_ROOT/tests/lib.sh"
C=$CSAMPLER
# refusals first: they need no tmux
"$C" top -- true </dev/null >nt.out 2>nt.err; rc=$?
[ $rc = 125 ] && [ "$(grep -c . nt.err)" = 1 ] && grep -q 'top needs a terminal' nt.err &&
	pass "top: without a terminal: one line, exit 125" || fail "top: without a terminal: rc $rc $(cat nt.err)"
"$C" top >e1.out 2>e1.err; rc1=$?
"$C" top -p 1 -- true >e2.out 2>e2.err; rc2=$?
"$C" top --delay 0 -- true >e3.out 2>e3.err; rc3=$?
if [ $rc1 = 125 ] && grep -q 'nothing to watch' e1.err && [ $rc2 = 125 ] && grep -q 'not both' e2.err &&
	[ $rc3 = 125 ] && grep -q "invalid --delay '0'" e3.err; then
	pass "top: bad input: one line and exit 125"
else
	fail "top: bad input: rc $rc1/$rc2/$rc3: $(cat e1.err e2.err e3.err | head -c 300)"
fi
if ! command -v tmux >/dev/null; then
	skip "top: tmux is not installed (scripts/install-deps.sh --test)"
	finish
fi
SOCK=$T/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
PIDS=()
trap 'exec 2>/dev/null; tm kill-server; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
cap() { tm capture-pane -p -t "$1"; }
# wait_for SESSION PATTERN: until the pane shows PATTERN (10 s at most)
wait_for() { for _ in $(seq 1 100); do cap "$1" | grep -q -- "$2" && return 0; sleep 0.1; done; return 1; }
# data rows of the table: the lines after the column header
rows() { awk 'f && NF { print } /%Self|TID  Name|%GPU/ { f = 1 }'; }
num() { echo "${1%\%}" | awk '{ printf "%d", $1 }'; }

# ---- launch mode ----
tm -f /dev/null new-session -d -x 120 -y 30 -s a "cd $T && $C top -o a.data -- $TPROG/accuracy 20; echo TOP-DONE rc=\$?; stty -a | tr ' ' '\n' | grep -xE -- '-?(icanon|echo)' | tr '\n' ' '; echo; sleep 60"
wait_for a 'work_alpha' && sleep 2.2
cap a >self.txt
first=$(rows <self.txt | head -n 1)
read -r pself ptotal _ <<<"$first"
if [[ $(head -n 1 self.txt) == "csampler top: $TPROG/accuracy 20 | 0:00:0"*" samples/s | "*" samples"* ]] &&
	[[ $first == *" work_alpha (accuracy)" ]] && [ "$(num "$pself")" -ge 35 ] && [ "$(num "$pself")" -le 65 ] &&
	rows <self.txt | grep -q ' work_beta (accuracy)$' && rows <self.txt | grep -q ' work_gamma (accuracy)$' &&
	grep -q 'sort: self' self.txt; then
	pass "top: functions by self: work_alpha first at $pself (true share 50%), work_beta and work_gamma below"
else
	fail "top: self view: $(head -n 8 self.txt | tr '\n' '|')"
fi
tm send-keys -t a s
sleep 0.6
cap a >total.txt
t1=$(rows <total.txt | head -n 1 | awk '{print $2}')
if grep -q 'sort: total' total.txt && [ "$(num "$t1")" -ge 99 ] && rows <total.txt | head -n 5 | grep -q ' level_0[0-9] (accuracy)$'; then
	pass "top: s sorts by total: the callers of every sample first ($t1)"
else
	fail "top: total view: $(head -n 8 total.txt | tr '\n' '|')"
fi
tm send-keys -t a t
sleep 0.6
cap a >threads.txt
nth=$(rows <threads.txt | grep -c ' accuracy ')
if grep -q 'view: threads' threads.txt && [ "$nth" = 2 ] && [ "$(rows <threads.txt | grep -c 'work_alpha (')" = 2 ]; then
	pass "top: t shows the 2 threads, each with work_alpha as its top function"
else
	fail "top: threads view: $(head -n 8 threads.txt | tr '\n' '|')"
fi
tm send-keys -t a g
sleep 0.6
cap a >gpu.txt
grep -q 'view: GPU kernels' gpu.txt && grep -q 'no GPU kernel records yet' gpu.txt &&
	pass "top: g switches to the GPU kernels (none here)" || fail "top: GPU view: $(head -n 6 gpu.txt | tr '\n' '|')"
tm send-keys -t a g t p
sleep 0.4
cap a >p1.txt
sleep 1.6
cap a >p2.txt
n1=$(head -n 1 p1.txt | grep -o '[0-9]* samples$\|[0-9]* samples |' | grep -o '[0-9]*')
n2=$(head -n 1 p2.txt | grep -o '[0-9]* samples$\|[0-9]* samples |' | grep -o '[0-9]*')
if grep -q 'PAUSED' p2.txt && [ -n "$n1" ] && [ "$n1" = "$n2" ] && grep -q 'view: functions' p2.txt; then
	pass "top: p pauses: the numbers stand still over 1.6 s ($n1 samples)"
else
	fail "top: pause: $n1 -> $n2: $(head -n 2 p2.txt | tr '\n' '|')"
fi
tm send-keys -t a p
sleep 1.3
cap a >p3.txt
n3=$(head -n 1 p3.txt | grep -o '[0-9]* samples$\|[0-9]* samples |' | grep -o '[0-9]*')
! grep -q PAUSED p3.txt && [ "${n3:-0}" -gt "${n2:-0}" ] && pass "top: p again resumes ($n2 -> $n3 samples)" ||
	fail "top: resume: $n2 -> $n3"
tm resize-window -t a -x 70 -y 14
sleep 0.6
cap a >small.txt
long=$(awk 'length > 70' small.txt | wc -l)
if [ "$(wc -l <small.txt)" = 14 ] && [ "$long" = 0 ] && [ "$(rows <small.txt | wc -l)" = 10 ] && head -n 1 small.txt | grep -q '^csampler top: '; then
	pass "top: a resize to 70x14 redraws to fit: header, keys, 10 rows, no line wider than 70"
else
	fail "top: after a resize: $(cat small.txt | tr '\n' '|')"
fi
tm resize-window -t a -x 120 -y 30
tm send-keys -t a q
wait_for a 'TOP-DONE' || true; sleep 0.5
cap a >end.txt
if grep -q '^TOP-DONE rc=0' end.txt && grep -q '^icanon echo *$' end.txt &&
	grep -q "^csampler top: [0-9]* samples in [0-9]* s; the data file is a.data; the command's output is in csampler-top.log" end.txt &&
	! grep -q '%Self' end.txt; then
	pass "top: q quits, exit 0, the terminal restored (main screen, icanon echo), one closing line"
else
	fail "top: after q: $(cat end.txt | tr '\n' '|')"
fi
"$C" report -i a.data --format json >a.json 2>a.err &&
	[ "$(json_get a.json "j.functions.some(f => f.name === 'work_alpha')")" = true ] &&
	pass "top: -o a.data is an ordinary data file (report reads work_alpha from it)" ||
	fail "top: -o file: $(head -c 200 a.err)"
tm kill-session -t a

# ---- colour, and NO_COLOR ----
for mode in color nocolor; do
	envs=""; [ $mode = nocolor ] && envs="NO_COLOR=1"
	tm -f /dev/null new-session -d -x 120 -y 20 -s $mode "cd $T && env $envs $C top -- $TPROG/accuracy 5; sleep 60"
	wait_for $mode 'work_alpha'
	tm capture-pane -e -p -t $mode >$mode.txt
	tm send-keys -t $mode q
	sleep 0.3
	tm kill-session -t $mode
done
if grep -q $'\033\\[7m' color.txt && ! grep -q $'\033\\[[0-9;]*m' nocolor.txt && grep -q 'work_alpha' nocolor.txt; then
	pass "top: reverse video in the header by default; NO_COLOR=1 draws without any attribute"
else
	fail "top: colour: with $(grep -c $'\033' color.txt) escaped lines, NO_COLOR with $(grep -c $'\033' nocolor.txt)"
fi

# ---- attach mode, GPU panel, SIGINT ----
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
D=$TPROG/cupti
if [ -f "$LIB" ] && [ -x "$D/attach-target" ] && [ "$(uname -m)" = x86_64 ] && [ "$(id -u)" = 0 ]; then
	"$D/attach-target" "$D/standin/libcupti.so.13" 100000 >at.out 2>&1 &
	TP=$!; PIDS+=("$TP")
	for _ in $(seq 1 100); do grep -q '^ready$' at.out && break; sleep 0.05; done
	tm -f /dev/null new-session -d -x 120 -y 30 -s g "cd $T && CSAMPLER_GPU_DIR=$T/gpu $C top -p $TP --gpu on; echo TOP-DONE rc=\$?; stty -a | tr ' ' '\n' | grep -xE -- '-?(icanon|echo)' | tr '\n' ' '; echo; sleep 60"
	wait_for g 'at_worker_kernel' && sleep 1.2
	cap g >g.txt
	k1=$(awk '/^GPU kernels by GPU time:/ { f = 1; next } f && /Kernel$/ { g = 1; next } g && NF { print $NF }' g.txt | sort | tr '\n' ' ')
	if [ "$k1" = "at_forward_kernel at_worker_kernel " ] && head -n 1 g.txt | grep -q '| GPU [0-9]* kernels, [0-9.]* ms' &&
		rows <g.txt | head -n 1 | grep -q '%'; then
		pass "top: the GPU panel lists the kernels by GPU time under the functions ($k1)"
	else
		fail "top: GPU panel: $(cat g.txt | tr '\n' '|')"
	fi
	tm send-keys -t g C-c
	wait_for g 'TOP-DONE' || true; sleep 0.5
	cap g >gend.txt
	if grep -q '^TOP-DONE rc=0' gend.txt && grep -q '^icanon echo *$' gend.txt && kill -0 "$TP" 2>/dev/null &&
		grep -q 'TracerPid:[[:space:]]*0' /proc/"$TP"/status; then
		pass "top: ^C ends an attached top: the terminal restored, the target running on, untraced"
	else
		fail "top: ^C: $(cat gend.txt | tr '\n' '|'); target alive: $(kill -0 "$TP" 2>/dev/null && echo yes || echo no)"
	fi
	tm kill-session -t g
else
	skip "top: GPU panel: needs lib/libcsampler-cupti.so, bin/tests/cupti/attach-target, x86-64 and root"
fi

# ---- Python frames ----
PY=/usr/bin/python3
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
if [ "$pyver" = 3.11 ] || [ "$pyver" = 3.12 ]; then
	cat >spin.py <<'PYEOF'
def py_inner(n):
    x = 0
    for i in range(n):
        x += i
    return x
def py_outer():
    while True:
        py_inner(100000)
py_outer()
PYEOF
	tm -f /dev/null new-session -d -x 140 -y 60 -s py "cd $T && NO_COLOR=1 $C top -- $PY spin.py; sleep 60"
	wait_for py 'py_inner' && sleep 1.5
	cap py >py.txt
	tm send-keys -t py s
	sleep 0.6
	cap py >pytotal.txt
	tm send-keys -t py q
	if rows <py.txt | head -n 3 | grep -q '\[py\] py_inner (spin.py)$' && rows <pytotal.txt | grep -q '\[py\] py_outer (spin.py)$'; then
		pass "top: Python $pyver frames are functions with their file: py_inner near the top by self, py_outer among the totals ($(rows <pytotal.txt | grep -m1 'py_outer' | sed 's/  */ /g'))"
	else
		fail "top: Python frames: $(head -n 8 py.txt | tr '\n' '|') TOTAL: $(head -n 16 pytotal.txt | tr '\n' '|')"
	fi
	sleep 0.5
	tm kill-session -t py
else
	skip "top: Python frames: /usr/bin/python3 is ${pyver:-missing}, not 3.11 or 3.12"
fi
finish
