#!/usr/bin/env bash
# Privilege: an unprivileged user (nobody, through setpriv) is refused a root process with one
# line, and may attach to its own process and record its own command; data files are 0600
# whatever the umask; raw stack bytes stay in a file only with --keep-raw, and info says which.
source "$CSAMPLER_ROOT/tests/lib.sh"
W=$TPROG/rec-worker
C=$CSAMPLER

if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	mkdir -m 777 "$T/nobody"
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)

	# --- attaching to a root process: refused, one line, exit 125, the process unharmed
	"$W" 1 30 & rootpid=$!
	nobody "$C" record -o "$T/nobody/root.data" -p $rootpid >out.txt 2>err.txt
	rc=$?
	if [ "$rc" = 125 ] && [ "$(grep -c . err.txt)" = 1 ] && grep -q "not permitted to profile PID $rootpid" err.txt; then
		pass "privilege: attaching to a root process is refused: $(cat err.txt)"
	else
		fail "privilege: root process: rc $rc, $(head -c 300 err.txt)"
	fi
	kill -0 $rootpid 2>/dev/null && pass "privilege: the root process runs on" || fail "privilege: the root process is gone"
	kill $rootpid; wait $rootpid 2>/dev/null

	# --- attaching to one's own process works
	nobody "$W" 2 30 & spid=$!
	sleep 0.3
	ownpid=$(pgrep -P $spid || echo $spid) # setpriv execs, so this is the worker itself
	nobody "$C" record -o "$T/nobody/own-attach.data" -p $ownpid --duration 2 >out.txt 2>err.txt
	rc=$?
	if [ "$rc" = 0 ]; then
		pass "privilege: nobody attaches to its own process"
		prefix_readable "privilege: own attach" "$T/nobody/own-attach.data" 20 complete
	elif [ "$paranoid" -gt 2 ]; then
		skip "privilege: own attach: perf_event_paranoid is $paranoid"
	else
		fail "privilege: own attach: rc $rc $(head -c 300 err.txt)"
	fi
	kill $spid 2>/dev/null; wait $spid 2>/dev/null

	# --- ... and records its own command (without kernel frames at perf_event_paranoid 2)
	nobody "$C" record -o "$T/nobody/own.data" -- "$W" 2 2 >/dev/null 2>err.txt
	rc=$?
	if [ "$rc" = 0 ]; then
		prefix_readable "privilege: own command" "$T/nobody/own.data" 20 complete
	elif [ "$paranoid" -gt 2 ]; then
		skip "privilege: own command: perf_event_paranoid is $paranoid"
	else
		fail "privilege: own command: rc $rc $(head -c 300 err.txt)"
	fi

	# --- 0600 whatever the umask, for nobody too (and the .old it rotates)
	nobody sh -c "umask 000 && '$C' record -q -o '$T/nobody/mode.data' -- true && '$C' record -q -o '$T/nobody/mode.data' -- true" >/dev/null 2>&1
	m=$(stat -c %a "$T/nobody/mode.data" 2>/dev/null) mo=$(stat -c %a "$T/nobody/mode.data.old" 2>/dev/null)
	[ "$m" = 600 ] && [ "$mo" = 600 ] && pass "privilege: nobody's files are 0600 under umask 000 (.old too)" \
		|| fail "privilege: nobody's file modes under umask 000: $m, .old $mo"
else
	skip "privilege: unprivileged cases: need root and setpriv to switch to an unprivileged user"
fi

# --- 0600 whatever the umask
for mask in 000 022 077 277; do
	(umask $mask && "$C" record -q -o "mode-$mask.data" -- true >/dev/null 2>&1)
	m=$(stat -c %a "mode-$mask.data" 2>/dev/null)
	[ "$m" = 600 ] && pass "privilege: data file 0600 under umask $mask" || fail "privilege: data file mode ${m:-missing} under umask $mask"
done

# --- raw stack bytes: only with --keep-raw. rec-worker keeps "rec-worker-stack-secret-PID" on
# each thread's stack; uncompressed, the text is in the file only when the stacks were kept.
"$C" record -q -o plain.data --no-compress -- "$W" 2 1 >/dev/null 2>&1
"$C" record -q -o raw.data --no-compress --keep-raw -- "$W" 2 1 >/dev/null 2>&1
nplain=$(grep -c -a 'rec-worker-stack-secret-' plain.data)
nraw=$(grep -c -a 'rec-worker-stack-secret-' raw.data)
[ "$nplain" = 0 ] && pass "privilege: without --keep-raw no stack bytes are in the file" || fail "privilege: the stack secret is in a file recorded without --keep-raw ($nplain lines)"
[ "$nraw" -gt 0 ] && pass "privilege: with --keep-raw the stack bytes are kept ($nraw lines hold the secret)" || fail "privilege: --keep-raw did not keep the stack bytes"
"$C" info -i plain.data >plain.txt 2>&1
"$C" info -i raw.data >raw.txt 2>&1
grep -q '^raw stacks: *none$' plain.txt && pass "privilege: info says 'raw stacks: none'" || fail "privilege: info on plain.data: $(grep -i raw plain.txt)"
grep -q '^raw stacks: *kept (--keep-raw): [1-9][0-9]* samples' raw.txt && pass "privilege: info says 'raw stacks: kept (--keep-raw)'" || fail "privilege: info on raw.data: $(grep -i raw raw.txt)"
"$C" info -i raw.data --format json >raw.json
[ "$(json_get raw.json 'j.raw_stacks > 0')" = true ] && pass "privilege: info JSON raw_stacks $(json_get raw.json j.raw_stacks)" || fail "privilege: info JSON raw_stacks missing"
finish
