#!/usr/bin/env bash
# SIGTERM/SIGHUP to csampler: forwarded to the launched command, sampling stops, and the file
# is complete (not truncated, symbolized). In attach mode the target survives SIGINT.
# SIGINT in launch mode and SIGKILL are fault cases of t-faults.sh.
source "$CSAMPLER_ROOT/tests/lib.sh"

for sig in TERM HUP; do
	"$CSAMPLER" record -o sig.data -- "$TPROG/rec-family" 30 >/dev/null 2>err.txt &
	cpid=$!
	sleep 1.5
	family=$(descendants $cpid)
	kill -$sig $cpid
	for i in $(seq 50); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
	if kill -0 $cpid 2>/dev/null; then fail "signal $sig: csampler still running 5 s later"; kill -9 $cpid; fi
	wait $cpid; rc=$?
	want=$((128 + $(kill -l $sig)))
	[ "$rc" = "$want" ] && pass "signal $sig: exit status $rc (command died of the forwarded signal)" || fail "signal $sig: rc $rc, want $want: $(tail -2 err.txt)"
	"$CSAMPLER" info -i sig.data --format json >info.json 2>info.err
	ok=$(json_get info.json "!j.truncated && j.symbolized && j.samples > 500")
	[ "$ok" = true ] && pass "signal $sig: complete, readable file" || fail "signal $sig: file: $(cat info.err) $(head -c 300 info.json)"
	kill -9 $family 2>/dev/null
done

mkfifo fifo
"$TPROG/rec-spinner" fifo reply.txt & spid=$!
sleep 0.3
"$CSAMPLER" record -o att.data -p $spid >/dev/null 2>err.txt &
cpid=$!
sleep 3 # bpf's start (the verifier, the maps) took most of 1.5 s on a loaded CI machine
kill -INT $cpid
wait $cpid; rc=$?
[ "$rc" = 0 ] && pass "signal attach: csampler exits 0 on SIGINT" || fail "signal attach: rc $rc"
kill -0 $spid 2>/dev/null && pass "signal attach: target not signalled" || fail "signal attach: target gone"
"$CSAMPLER" info -i att.data --format json >info.json 2>/dev/null
[ "$(json_get info.json '!j.truncated && j.samples > 300')" = true ] && pass "signal attach: complete file" ||
	fail "signal attach: want a complete file of over 300 samples: $(json_get info.json '(j.truncated ? "truncated, " : "complete, ") + j.samples + " samples"')"
kill $spid; wait $spid 2>/dev/null
finish
