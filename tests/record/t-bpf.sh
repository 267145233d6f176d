#!/usr/bin/env bash
# The BPF backend (record --mode bpf): stacks walked in the kernel. First the end-to-end tests of
# `record` again with the backend their own run did not use (a wrapper in $T, as t-ptrace.sh
# does): where auto chooses bpf (root), they ran with bpf, and run here with --mode perf (lines
# prefixed "perf: "), so that perf events, every user's backend without root, keep their
# coverage; elsewhere they ran with perf events and run here with --mode bpf ("bpf: "):
# threads and children followed (t-family), attach (t-attach), exit status (t-exit-status),
# signals (t-signals), faults (t-faults), the known-split accuracy with >= 99% complete stacks
# (t-accuracy), JIT code (t-jit) and Python frames (t-python); t-idle runs --idle with bpf
# itself. Then what is its own: complete stacks of a program without frame pointers, the same records as perf mode and no more bytes per sample, `info` naming the backend and why,
# auto's choice (bpf as root; perf events with --keep-raw or -g fp, and after a bpf start that
# fails: CSAMPLER_BPF_BTF at a missing file or one that is not BTF, one warning line), record -a,
# --cgroup, and the refusal as an unprivileged user (one line, and auto records with perf events,
# saying why). Where BPF is refused here, each part says SKIPPED with the reason.
source "$CSAMPLER_ROOT/tests/lib.sh"
C=$CSAMPLER
# the unwind-row cache of this run only (not ~/.cache/csampler)
export XDG_CACHE_HOME="$T/cache"

# --- the refusal path first: it needs no BPF, only root to switch to nobody
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	mkdir -m 777 "$T/nobody"
	nobody "$C" record --mode bpf -o "$T/nobody/r.data" -- true >out.txt 2>err.txt
	rc=$?
	if [ "$rc" = 125 ] && [ "$(grep -c . err.txt)" = 1 ] && grep -q "CAP_BPF" err.txt; then
		pass "bpf: refused as nobody in one line: $(cat err.txt)"
	else
		fail "bpf: refusal as nobody: rc $rc, $(head -c 400 err.txt)"
	fi
	# auto as nobody: bpf is not tried, perf events (or ptrace) record the command
	nobody "$C" record -o "$T/nobody/auto.data" -- "$TPROG/rec-worker" 1 1 >out.txt 2>err.txt
	rc=$?
	if [ "$rc" = 0 ] && "$C" info -i "$T/nobody/auto.data" 2>&1 | grep -q "^sampler_choice  *auto; bpf refused: needs root, or CAP_BPF and CAP_PERFMON" &&
		! "$C" info -i "$T/nobody/auto.data" | grep -q "^sampler  *bpf"; then
		pass "bpf: auto as nobody records with $("$C" info -i "$T/nobody/auto.data" | awk '$1 == "sampler" { print $2 }') and says why: $("$C" info -i "$T/nobody/auto.data" | grep '^sampler_choice')"
	else
		fail "bpf: auto as nobody: rc $rc, $(head -c 400 err.txt)"
	fi
else
	skip "bpf: refusal as an unprivileged user: needs root and setpriv"
fi

if ! "$C" record --mode bpf -o probe.data -- true >probe.out 2>probe.err; then
	skip "bpf: the BPF backend is refused here: $(head -n 1 probe.err)"
	finish
fi
grep -q "sampled with bpf (--mode bpf)" probe.err && pass "bpf: the end-of-record line names the backend" ||
	fail "bpf: end-of-record line: $(head -c 400 probe.err)"

# the backend auto chooses here: the scripts' own runs used it, the loop below takes the other
"$C" record -o auto.data -- true >/dev/null 2>&1
other=bpf
"$C" info -i auto.data 2>/dev/null | grep -q '^sampler  *bpf' && other=perf
cat >"$T/csampler" <<WRAP
#!/bin/sh
if [ "\$1" = record ]; then shift; exec "$C" record --mode $other "\$@"; fi
exec "$C" "\$@"
WRAP
chmod 755 "$T/csampler"
# with bpf, no stack copies to keep: the disk-full faults fill a smaller disk with samples alone
fill="FILL_KB=96 FILL_BLOCKS=192 FILL_RAW= FILL_SECONDS=12"
[ "$other" = perf ] && fill=

for t in tests/record/t-family.sh tests/record/t-attach.sh tests/record/t-exit-status.sh \
	tests/record/t-signals.sh tests/record/t-faults.sh tests/t-accuracy.sh tests/record/t-jit.sh \
	tests/python/t-python.sh; do
	env $fill CSAMPLER_BIN=$T/csampler bash "$CSAMPLER_ROOT/$t" >"$T/sub.log" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|SKIPPED):' "$T/sub.log" | sed -E "s/^(PASS|FAIL|SKIPPED): /\1: $other: /"
	nfail=$(grep -c '^FAIL:' "$T/sub.log")
	TEST_FAILS=$((TEST_FAILS + nfail))
	if [ "$rc" != 0 ] && [ "$nfail" = 0 ]; then
		fail "$other: $t exited with status $rc: $(tail -n 3 "$T/sub.log" | tr '\n' ' ')"
	fi
done

# --- complete stacks without frame pointers, side by side with perf mode on the same program
for mode in bpf perf; do
	"$C" record --mode $mode -o $mode.data -- "$TPROG/accuracy" >/dev/null 2>$mode.err ||
		fail "bpf: record --mode $mode: $(head -c 300 $mode.err)"
	"$C" report -i $mode.data --format json >$mode.json 2>/dev/null
done
complete=$(json_get bpf.json "j.unwind.complete_pct")
if awk -v c="$complete" 'BEGIN { exit !(c >= 99) }'; then
	pass "bpf: complete stacks $complete% (accuracy, -fomit-frame-pointer: unwind rows in the kernel)"
else
	fail "bpf: complete stacks $complete% < 99%: $(grep '^csampler: bpf:' bpf.err)"
fi
grep -q "unwind tables: rows for [1-9][0-9]* of" bpf.err && pass "bpf: unwind tables loaded: $(grep -o 'unwind tables: [^;]*' bpf.err)" ||
	fail "bpf: no unwind tables loaded: $(grep '^csampler: bpf:' bpf.err)"
# again: the rows come from the on-disk cache, and the stacks are as complete
"$C" record --mode bpf -o bpf2.data -- "$TPROG/accuracy" >/dev/null 2>bpf2.err
"$C" report -i bpf2.data --format json >bpf2.json 2>/dev/null
complete2=$(json_get bpf2.json "j.unwind.complete_pct")
if grep -q "from the cache" bpf2.err && ! grep -q ", 0 from the cache" bpf2.err &&
	awk -v c="$complete2" 'BEGIN { exit !(c >= 99) }'; then
	pass "bpf: second run reads its rows from the cache, $complete2% complete: $(grep -o 'unwind tables: [^;]*' bpf2.err)"
else
	fail "bpf: second run: $complete2% complete, $(grep -o 'unwind tables: [^;]*' bpf2.err)"
fi
# the smallest samples' ring (-m 1: 1 MiB) on an empty row cache: the first samples carry stack
# slices (33 KiB each), which have a ring of their own, so none is lost and every one completes
XDG_CACHE_HOME="$T/small-cache" "$C" record --mode bpf -m 1 -o small.data -- "$TPROG/accuracy" \
	>/dev/null 2>small.err
"$C" report -i small.data --format json >small.json 2>/dev/null
complete_small=$(json_get small.json "j.unwind.complete_pct")
read -r walked_small sliced_small lost_small <<<"$(sed -n 's/.* \([0-9]*\) samples walked in the kernel ([^)]*), \([0-9]*\) of them completed from a stack slice in user space, \([0-9]*\) lost.*/\1 \2 \3/p' small.err | head -n 1)"
if [ "${sliced_small:-0}" -gt 0 ] && [ "${lost_small:-1}" = 0 ] && grep -q ", 0 lost," small.err &&
	awk -v c="$complete_small" 'BEGIN { exit !(c >= 99) }'; then
	pass "bpf: -m 1 on an empty row cache: $sliced_small of $walked_small samples with a slice, 0 lost, $complete_small% complete"
else
	fail "bpf: -m 1 on an empty row cache: $(grep -E '^csampler: ([0-9]+ samples|bpf:)' small.err | head -c 500), $complete_small% complete"
fi
# attached a second time: the rows of the target's files are in the cache, so they are in the
# kernel before its first sample, and (almost) no sample carries a stack slice: at most 0.5% of
# them (the version before preloading sent 64 of about 1,500; one run of this one sent 1 of
# 1,581, a sample whose walk needed a frame-pointer step)
mkfifo pfifo
"$TPROG/rec-spinner" pfifo preply.txt &
ppid=$!
sleep 0.3
"$C" record --mode bpf -p "$ppid" --duration 1 -o pre1.data >/dev/null 2>pre1.err
"$C" record --mode bpf -p "$ppid" --duration 1 -o pre2.data >/dev/null 2>pre2.err
kill "$ppid"
wait "$ppid" 2>/dev/null
read -r walked sliced <<<"$(sed -n 's/.* \([0-9]*\) samples walked in the kernel ([^)]*), \([0-9]*\) of them completed from a stack slice.*/\1 \2/p' pre2.err | head -n 1)"
if grep -q ", [1-9][0-9]* of them without waiting for a sample" pre2.err &&
	[ "${walked:-0}" -gt 100 ] && [ $((${sliced:-1000000} * 200)) -le "$walked" ]; then
	pass "bpf: attached again, the cached rows are loaded before the first sample: $sliced of $walked samples with a slice ($(grep -o 'unwind tables: [^;]*' pre2.err))"
else
	fail "bpf: attached again: $(grep '^csampler: bpf:' pre2.err | head -c 400) (first run: $(grep -o '[0-9]* of them completed[^;]*' pre1.err))"
fi
# the reader thread sleeps between collections: a wake-up left pending (the builder's eventfd,
# once unread when nothing more was wanted) made its poll return at once for the whole
# recording, a CPU of csampler's while the command ran, in about one launch in five; 6 launches
# of a 1 s command, csampler's CPU while it ran under half its wall time in each
spins=""
for i in 1 2 3 4 5 6; do
	"$C" record -q --mode bpf -o spin.data -- "$TPROG/rec-worker" 2 1 >/dev/null 2>spin.err
	while=$(sed -n 's/^csampler: own CPU while the command ran: \([0-9.]*\) s.*/\1/p' spin.err)
	awk -v w="${while:-9}" 'BEGIN { exit !(w < 0.5) }' || spins="$spins run $i: ${while:-no line};"
done
[ -z "$spins" ] && pass "bpf: the reader waits between collections: csampler's CPU while a 1 s command ran under 0.5 s in 6 launches" ||
	fail "bpf: the reader spun:$spins"
ls "$XDG_CACHE_HOME"/csampler/cfi-v1/*.rows.* >/dev/null 2>&1 && fail "bpf: temporary files left in the row cache" ||
	pass "bpf: no temporary files left in the row cache"
# the same records: every reader works, and the same functions lead
for f in work_alpha work_beta; do
	b=$(json_get bpf.json "(j.functions||[]).some(x => x.name === '$f')")
	[ "$b" = true ] && pass "bpf: report names $f" || fail "bpf: report lacks $f"
done
bpb() { grep -o '([0-9]* bytes/sample)' "$1" | tr -dc 0-9; }
if [ -n "$(bpb bpf.err)" ] && [ "$(bpb bpf.err)" -le $(( $(bpb perf.err) + 2 )) ]; then
	pass "bpf: $(bpb bpf.err) bytes per sample (perf mode: $(bpb perf.err))"
else
	fail "bpf: bytes per sample $(bpb bpf.err) against perf mode's $(bpb perf.err)"
fi
if "$C" info -i bpf.data | grep -q "^sampler  *bpf" && "$C" info -i bpf.data | grep -q "^callgraph  *bpf"; then
	pass "bpf: info names the backend and the call graph"
else
	fail "bpf: info: $("$C" info -i bpf.data | head -c 400)"
fi
# auto: bpf where permitted (root here), perf events where the options ask for what bpf cannot do
"$C" record -o auto.data -- true >/dev/null 2>auto.err
if "$C" info -i auto.data | grep -q "^sampler  *bpf" && "$C" info -i auto.data | grep -q "^sampler_choice  *auto$" &&
	grep -q "^csampler: sampled with bpf (auto)" auto.err; then
	pass "bpf: auto chooses bpf as root: $("$C" info -i auto.data | grep '^sampler_choice')"
else
	fail "bpf: auto's choice as root: $("$C" info -i auto.data | grep sampler)"
fi
for opt in --keep-raw "-g fp"; do
	"$C" record $opt -o auto.data -- true >/dev/null 2>auto.err
	if "$C" info -i auto.data | grep -q "^sampler  *perf_event_open" &&
		"$C" info -i auto.data | grep -q "^sampler_choice  *auto; bpf not used: ${opt% *}"; then
		pass "bpf: auto with $opt takes perf events and says why: $("$C" info -i auto.data | grep '^sampler_choice')"
	else
		fail "bpf: auto with $opt: $("$C" info -i auto.data | grep sampler) $(head -c 300 auto.err)"
	fi
done
# a refused start (libbpf finds no kernel BTF where CSAMPLER_BPF_BTF points): one line, perf events
CSAMPLER_BPF_BTF=$T/no-such-btf "$C" record -o auto.data -- "$TPROG/rec-worker" 1 1 >/dev/null 2>auto.err
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c "bpf" auto.err)" = 2 ] &&
	grep -q "^csampler: warning: bpf: could not start (no kernel BTF: $T/no-such-btf: .*): sampling with perf events instead" auto.err &&
	"$C" info -i auto.data | grep -q "^sampler  *perf_event_open" &&
	"$C" info -i auto.data | grep -q "^sampler_choice  *auto; bpf failed: no kernel BTF"; then
	pass "bpf: a failed bpf start falls back to perf events in one line: $(grep warning auto.err)"
else
	fail "bpf: fallback from a failed bpf start: rc $rc, $(head -c 600 auto.err)"
fi
# the same with a file that is not BTF: libbpf refuses it, and auto still records
CSAMPLER_BPF_BTF=/proc/self/status "$C" record -o auto.data -- true >/dev/null 2>auto.err
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c "^csampler: warning: bpf: could not start" auto.err)" = 1 ] &&
	"$C" info -i auto.data | grep -q "^sampler  *perf_event_open"; then
	pass "bpf: a BTF file libbpf refuses: one line, perf events: $(grep warning auto.err)"
else
	fail "bpf: fallback from an unusable BTF file: rc $rc, $(head -c 600 auto.err)"
fi

# --- record -a: every process; a worker started beside it is in the file
"$TPROG/rec-worker" 1 3 >/dev/null & wpid=$!
"$C" record -a --duration 1 -o all.data >/dev/null 2>all.err
rc=$?
wait $wpid 2>/dev/null
"$C" report -i all.data --format json >all.json 2>/dev/null
nproc_seen=$(grep -o '[0-9]* processes' all.err | tr -dc 0-9)
if [ "$rc" = 0 ] && [ "$(json_get all.json "(j.functions||[]).some(x => x.name === 'worker_burn')")" = true ] &&
	[ "${nproc_seen:-0}" -ge 2 ]; then
	pass "bpf: record -a: $nproc_seen processes, the worker among them"
else
	fail "bpf: record -a: rc $rc, $(tail -n 4 all.err | tr '\n' ' ')"
fi
# rows only for the files samples needed, not for every file of every process
read -r built mapped <<<"$(grep -o 'rows for [0-9]* of [0-9]* mapped' all.err | awk '{print $3, $5}')"
if [ -n "$built" ] && [ "$built" -ge 1 ] && [ "$built" -lt "$mapped" ]; then
	pass "bpf: record -a built rows for $built of $mapped mapped files"
else
	fail "bpf: record -a rows: $(grep -o 'unwind tables: [^;]*' all.err)"
fi
# the recorder's stack memo (record/stackmemo.c): a kernel-walked stack seen before takes the
# earlier sample's stack id. CSAMPLER_STACK_MEMO=check unwinds every such sample again and
# counts those that differ: none may, over -a with processes and threads coming and going (their
# mappings' generations), and most samples of a loop come from the memo; -g fp (perf's
# frame-pointer callchains) uses it too
memo_check() { # label, then the record command's arguments
	local label=$1
	shift
	CSAMPLER_STACK_MEMO=check "$C" record "$@" >/dev/null 2>memo.err
	read -r hits total bad <<<"$(sed -n 's/.*stack memo check: \([0-9]*\) of \([0-9]*\) samples found in the memo, \([0-9]*\) of them.*/\1 \2 \3/p' memo.err)"
	if [ "${bad:-1}" = 0 ] && [ "${total:-0}" -gt 100 ] && [ $(( ${hits:-0} * 2 )) -gt "$total" ]; then
		pass "bpf: stack memo, $label: $hits of $total samples from the memo, each the same unwound again"
	else
		fail "bpf: stack memo, $label: $(grep -E 'memo|samples,' memo.err | head -c 400)"
	fi
}
( "$TPROG/rec-worker" 1 2 >/dev/null & for i in $(seq 40); do "$TPROG/rec-worker" 1 0 >/dev/null 2>&1; /bin/true; done; wait ) &
churn=$!
memo_check "record -a over short-lived processes" -a --duration 1.5 -o memo.data
wait $churn 2>/dev/null
memo_check "launch, threads" --mode bpf -o memo.data -- "$TPROG/accuracy"
memo_check "perf events, -g fp" --mode perf -g fp -o memo.data -- "$TPROG/rec-worker" 2 2
CSAMPLER_STACK_MEMO=bogus "$C" record --mode bpf -o memo.data -- true >/dev/null 2>memo.err
grep -q "CSAMPLER_STACK_MEMO=bogus: expected 0 (off), 1 (on) or check" memo.err &&
	pass "bpf: CSAMPLER_STACK_MEMO with an unknown value: one warning line" ||
	fail "bpf: CSAMPLER_STACK_MEMO=bogus: $(head -c 300 memo.err)"
one_line_rc() { "$@" >o.txt 2>e.txt; echo "$? $(grep -c . e.txt)"; }
[ "$(one_line_rc "$C" record --mode bpf --keep-raw -o x.data -- true)" = "125 1" ] && pass "bpf: --keep-raw: one line ($(cat e.txt))" ||
	fail "bpf: --keep-raw: $(cat e.txt)"
[ "$(one_line_rc "$C" record -a --mode perf -o x.data)" = "125 1" ] && pass "bpf: -a with --mode perf: one line ($(cat e.txt))" ||
	fail "bpf: -a with --mode perf: $(cat e.txt)"
[ "$(one_line_rc "$C" record -a -o x.data -- true)" = "125 1" ] && pass "bpf: -a with a command: one line" ||
	fail "bpf: -a with a command: $(cat e.txt)"
[ "$(one_line_rc "$C" record --cgroup /nonexistent --duration 1 -o x.data)" = "125 1" ] && pass "bpf: --cgroup of no directory: one line ($(cat e.txt))" ||
	fail "bpf: --cgroup /nonexistent: $(cat e.txt)"

# --- --cgroup: only the processes of one cgroup (v2) and below
CG2=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2" && $4 == "/") print $5; break } }' /proc/self/mountinfo | head -n 1)
CG=$CG2/csampler-test-$$
if [ -n "$CG2" ] && mkdir "$CG" 2>/dev/null; then
	"$TPROG/rec-worker" 1 4 >/dev/null & inpid=$!
	echo $inpid >"$CG/cgroup.procs"
	"$TPROG/accuracy" >/dev/null & outpid=$!
	"$C" record --cgroup "$CG" --duration 1 -o cg.data >/dev/null 2>cg.err
	rc=$?
	kill $outpid 2>/dev/null; wait $outpid $inpid 2>/dev/null
	"$C" report -i cg.data --format json >cg.json 2>/dev/null
	inside=$(json_get cg.json "(j.functions||[]).some(x => x.name === 'worker_burn')")
	outside=$(json_get cg.json "(j.functions||[]).some(x => /^work_/.test(x.name))")
	if [ "$rc" = 0 ] && [ "$inside" = true ] && [ "$outside" = false ]; then
		pass "bpf: --cgroup: the cgroup's worker is sampled, a process outside it is not"
	else
		fail "bpf: --cgroup: rc $rc, inside $inside, outside $outside: $(tail -n 3 cg.err | tr '\n' ' ')"
	fi
	rmdir "$CG" 2>/dev/null
else
	skip "bpf: --cgroup: no writable cgroup v2 hierarchy (mounted at '${CG2:-nowhere}')"
fi
finish
