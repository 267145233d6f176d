#!/usr/bin/env bash
# record's live status line (record/status.h): under tmux, while a command that prints records,
# the terminal's last row shows the line and the command's own lines stay whole above it; at the
# end the line is gone and the summary follows the command's output. Not on a pipe, not with -q.
source "$CSAMPLER_ROOT/tests/lib.sh"

# Not a terminal: stderr carries the summary only, no escape sequence, no status line.
"$CSAMPLER" record -o plain.data -- sh -c 'i=0; while [ $i -lt 3 ]; do echo out$i; i=$((i+1)); sleep 0.6; done' >plain.out 2>plain.err
if ! grep -q 'samples/s' plain.err && ! grep -q $'\033' plain.err && grep -q 'samples, ' plain.err &&
	[ "$(cat plain.out)" = "$(printf 'out0\nout1\nout2')" ]; then
	pass "status: nothing but the summary when stderr is not a terminal"
else
	fail "status: stderr on a file holds: $(head -c 300 plain.err | cat -v)"
fi

if ! command -v tmux >/dev/null; then
	skip "status: tmux is not installed (scripts/install-deps.sh --test)"
	finish
fi
SOCK=$T/tmux.sock
tm() { tmux -S "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$T"' EXIT
# a 160x20 terminal; the command prints a numbered line every 0.3 s, 12 of them
PROG="i=0; while [ \$i -lt 12 ]; do echo line-\$i-of-the-command; i=\$((i+1)); sleep 0.3; done"
tm -f /dev/null new-session -d -x 160 -y 20 -s st "cd $T && $CSAMPLER record -o tty.data -- sh -c '$PROG'; echo RECORD-DONE rc=\$?; sleep 30"
# one pane capture while it runs (after ~2 s), then the end
sleep 2.2
tm capture-pane -p -t st >during.txt
# a resize (SIGWINCH): the line moves to the new last row
tm resize-window -t st -x 150 -y 26
sleep 1.3
tm capture-pane -p -t st >resized.txt
for _ in $(seq 1 100); do grep -q RECORD-DONE <(tm capture-pane -p -t st) && break; sleep 0.1; done
tm capture-pane -p -S - -t st >after.txt
last=$(tail -n 1 during.txt)
if [[ $last == "csampler: 0:00:0"*" samples/s | "*" lost | "*" threads, "*" process"*" | "*B ]]; then
	pass "status: the terminal's last row shows the live line ($last)"
else
	fail "status: last row while recording: '$last'; pane: $(cat during.txt | tr '\n' '|')"
fi
rlast=$(tail -n 1 resized.txt)
if [ "$(wc -l <resized.txt)" = 26 ] && [[ $rlast == "csampler: 0:00:0"*" samples/s | "* ]] &&
	[ "$(grep -c 'samples/s' resized.txt)" = 1 ]; then
	pass "status: after a resize to 26 rows the line is on the new last row, once"
else
	fail "status: after a resize: $(cat resized.txt | tr '\n' '|')"
fi
# every command line printed so far is whole, on its own row, none on the status row
printed=$(grep -c '^line-[0-9]*-of-the-command$' during.txt)
mixed=$(grep -v '^line-[0-9]*-of-the-command$' during.txt | grep -c 'line-')
if [ "$printed" -ge 4 ] && [ "$mixed" = 0 ]; then
	pass "status: the command's $printed lines so far are intact above the line"
else
	fail "status: command lines intact: $printed, mixed with other text: $mixed; pane: $(cat during.txt | tr '\n' '|')"
fi
# at the end: the 12 lines in order, then the summary; no status text left anywhere
want=$(for i in $(seq 0 11); do echo "line-$i-of-the-command"; done)
got=$(grep '^line-' after.txt)
if [ "$got" = "$want" ] && ! grep -q 'samples/s' after.txt && grep -q '^csampler: [0-9]* samples, ' after.txt &&
	grep -q 'RECORD-DONE rc=0' after.txt; then
	pass "status: at the end the line is gone, the command's 12 lines are whole and in order, the summary follows"
else
	fail "status: after the run: $(cat after.txt | tr '\n' '|')"
fi
# the summary comes after the command's last line
if [ "$(grep -n '^line-11-' after.txt | cut -d: -f1)" -lt "$(grep -n "^csampler: [0-9]* samples, [0-9]* lost" after.txt | head -n 1 | cut -d: -f1)" ]; then
	pass "status: the summary follows the command's output"
else
	fail "status: summary placed before the command's output: $(cat after.txt | tr '\n' '|')"
fi
# -q: no line on the terminal either
tm kill-session -t st
tm -f /dev/null new-session -d -x 100 -y 20 -s q "cd $T && $CSAMPLER -q record -o q.data -- sh -c 'sleep 1.6; echo Q-DONE'; sleep 30"
sleep 1.3
tm capture-pane -p -t q >q.txt
for _ in $(seq 1 50); do grep -q Q-DONE <(tm capture-pane -p -t q) && break; sleep 0.1; done
if ! grep -q 'samples/s' q.txt; then
	pass "status: -q shows no line"
else
	fail "status: -q showed: $(cat q.txt | tr '\n' '|')"
fi
finish
