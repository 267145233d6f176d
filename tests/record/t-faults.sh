#!/usr/bin/env bash
# Faults during a recording, one named case each: the target segfaults, csampler is SIGKILLed,
# csampler gets SIGINT, the disk fills (a small tmpfs, and the file size limit), the attached
# target exits. Each checks how record ends and that what was recorded before the fault stays
# readable (prefix_readable: info and report read it and show the target's work).
source "$CSAMPLER_ROOT/tests/lib.sh"
W=$TPROG/rec-worker

# wait_gone PID SECONDS: wait until PID has exited; false if it still runs after SECONDS.
wait_gone() {
	local i
	for i in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	! kill -0 "$1" 2>/dev/null
}

# --- the target segfaults mid-run: exit 139 as a shell reports it, one line saying so, and a
# complete file
"$CSAMPLER" record -o segv.data -- "$W" 2 1.5 segv >/dev/null 2>err.txt
rc=$?
[ "$rc" = 139 ] && pass "fault segv: record exits 139 (128+SIGSEGV)" || fail "fault segv: rc $rc: $(cat err.txt)"
grep -q '^csampler: the command was killed by signal SIGSEGV (Segmentation fault); its samples up to then are in segv.data$' err.txt \
	&& pass "fault segv: the death by signal is reported" || fail "fault segv: no death line: $(cat err.txt)"
prefix_readable "fault segv" segv.data 50 complete

# --- csampler SIGKILLed mid-record: nothing is finalized, but the chunks written so far (at
# least once a second) stay readable as a truncated file
"$CSAMPLER" record -o killed.data -- "$W" 2 30 >/dev/null 2>err.txt &
cpid=$!
sleep 2.5
family=$(descendants $cpid)
kill -KILL $cpid
wait $cpid 2>/dev/null
kill -KILL $family 2>/dev/null
grep -q 'truncated' <("$CSAMPLER" info -i killed.data 2>&1 >/dev/null) \
	&& pass "fault SIGKILL: info says the file is truncated" || fail "fault SIGKILL: info does not say truncated"
prefix_readable "fault SIGKILL" killed.data 50 truncated

# --- SIGINT to csampler alone: passed on to the command (perf ends its workload likewise), the
# command is reaped, csampler exits 130 as the command did, and the file is complete
"$CSAMPLER" record -o int.data -- "$W" 2 30 >/dev/null 2>err.txt &
cpid=$!
sleep 2
family=$(descendants $cpid)
kill -INT $cpid
if wait_gone $cpid 10; then
	wait $cpid; rc=$?
	[ "$rc" = 130 ] && pass "fault SIGINT: exit 130, the command died of the forwarded SIGINT" || fail "fault SIGINT: rc $rc: $(cat err.txt)"
else
	fail "fault SIGINT: csampler still runs 10 s after SIGINT"; kill -KILL $cpid
fi
left=""
for p in $family; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[ -z "$left" ] && pass "fault SIGINT: the command is gone, nothing left running" || { fail "fault SIGINT: still running:$left"; kill -KILL $left; }
grep -q ' samples, .* lost' err.txt && pass "fault SIGINT: the summary is printed" || fail "fault SIGINT: no summary: $(cat err.txt)"
prefix_readable "fault SIGINT" int.data 50 complete

# --- the disk fills: one line naming the problem and what to do, sampling stops, the command is
# not harmed (it finishes on its own, csampler waits for it), the file keeps its prefix.
# disk_full NAME FILE PATTERN [PREFIX...]: record (through PREFIX, e.g. a shell setting a limit)
# a 5 s command that writes done.txt at its end, until FILE cannot grow.
disk_full() {
	local name=$1 file=$2 pat=$3; shift 3
	rm -f done.txt
	local start=$(date +%s.%N)
	"$@" "$CSAMPLER" record -o "$file" $FILL_RAW --no-compress -- "$W" 2 $FILL_SECONDS "done:$T/done.txt" >/dev/null 2>err.txt
	local rc=$? el=$(echo "$(date +%s.%N) - $start" | bc)
	if [ "$rc" = 125 ] && [ "$(grep -c . err.txt)" = 1 ] && grep -q -- "$pat" err.txt; then
		pass "fault $name: exit 125 with one line: $(cat err.txt)"
	else
		fail "fault $name: rc $rc, stderr: $(head -c 400 err.txt)"
	fi
	[ -s done.txt ] && pass "fault $name: the command ran to its end unharmed, csampler waited for it (${el}s)" \
		|| fail "fault $name: the command did not finish before csampler exited"
	prefix_readable "fault $name" "$file" 10 truncated
}
# --keep-raw's stack copies fill 4 MiB within the 5 s; a backend that copies no stacks (bpf, run
# by t-bpf.sh) fills a smaller disk with its samples alone: FILL_KB=96 FILL_BLOCKS=192 FILL_RAW=
# FILL_SECONDS=12. About 40 bytes a sample uncompressed: the first second's chunk (up to 80 KB)
# must fit, and the whole run must not; in 5 s a loaded CI machine gave the two threads only
# 1,512 samples (70 KB), so that backend's run is longer.
FILL_KB=${FILL_KB:-4096}
FILL_BLOCKS=${FILL_BLOCKS:-4096}
FILL_RAW=${FILL_RAW---keep-raw}
FILL_SECONDS=${FILL_SECONDS:-5}
mkdir small
if mount -t tmpfs -o size=${FILL_KB}k tmpfs small 2>mount.err; then
	disk_full "disk full" small/full.data 'write small/full.data: No space left on device; free some space or record with -o on another filesystem'
	umount small
else
	skip "fault disk full: cannot mount a small tmpfs here ($(cat mount.err))"
fi
# the same with the file size limit (RLIMIT_FSIZE, 4 MiB): csampler must not die of SIGXFSZ
disk_full "file size limit" fsize.data 'write fsize.data: File too large; the file size limit was reached' \
	sh -c 'ulimit -f '$FILL_BLOCKS' && exec "$@"' limit

# --- the attached target exits (and one that segfaults): record -p ends by itself, exit 0, with
# a complete file
for how in exit segv; do
	"$W" 2 3 "$how" & tpid=$!
	sleep 0.3
	start=$(date +%s.%N)
	timeout 60 "$CSAMPLER" record -o "attach-$how.data" -p $tpid >/dev/null 2>err.txt
	rc=$?
	el=$(echo "$(date +%s.%N) - $start" | bc)
	wait $tpid 2>/dev/null
	[ "$rc" = 0 ] && pass "fault attached target $how: record ends with it, exit 0 (${el}s)" || fail "fault attached target $how: rc $rc: $(cat err.txt)"
	cost=$(grep -E "^csampler: own CPU [0-9.]+ s .*% of the target's [0-9.]+ s CPU$" err.txt)
	[ -n "$cost" ] && pass "fault attached target $how: ${cost#csampler: }" || fail "fault attached target $how: no own-CPU line: $(cat err.txt)"
	prefix_readable "fault attached target $how" "attach-$how.data" 50 complete
done

# --- the command gets SIGPIPE and SIGXFSZ back at their defaults (csampler ignores them for
# itself): `yes | head` ends by SIGPIPE, not by an EPIPE error message
"$CSAMPLER" record -q -o pipe.data -- sh -c 'yes | head -n 1' >out.txt 2>err.txt
rc=$?
[ "$rc" = 0 ] && ! grep -q 'Broken pipe' err.txt && pass "fault: the command's SIGPIPE is not ignored" \
	|| fail "fault: SIGPIPE: rc $rc, $(head -c 200 err.txt)"
finish
