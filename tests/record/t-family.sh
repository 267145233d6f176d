#!/usr/bin/env bash
# Launch mode: every thread and the forked+exec'd child get samples, with their names, and the
# data file is private (0600). The old file is kept as .old.
source "$CSAMPLER_ROOT/tests/lib.sh"

"$CSAMPLER" record -o fam.data -- "$TPROG/rec-family" 1.5 >out.txt 2>err.txt
rc=$?
[ "$rc" = 0 ] && pass "family: exit status 0" || fail "family: exit status $rc: $(cat err.txt)"
"$CSAMPLER" info -i fam.data --format json >info.json 2>info.err || fail "family: info failed: $(cat info.err)"
for comm in family-main alpha beta kidexec; do
	n=$(json_get info.json "j.threads.filter(t => t.comm === '$comm').reduce((a, t) => a + t.samples, 0)")
	if [ "${n:-0}" -gt 50 ]; then pass "family: thread $comm has samples ($n)"; else fail "family: thread $comm has ${n:-0} samples"; fi
done
np=$(json_get info.json "j.processes.length")
[ "$np" = 2 ] && pass "family: 2 processes" || fail "family: $np processes"
child_ok=$(json_get info.json "(() => { const p = j.processes; const kid = p.find(x => x.comm === 'kidexec'); const par = p.find(x => x.comm === 'family-main'); return kid && par && kid.ppid === par.pid; })()")
[ "$child_ok" = true ] && pass "family: child's parent is the launched command" || fail "family: child/parent link missing"
grep -q '^csampler: .* samples, 0 lost, 4 threads, 2 processes' err.txt && pass "family: summary line" || fail "family: summary line: $(grep samples err.txt)"
mode=$(stat -c %a fam.data)
[ "$mode" = 600 ] && pass "family: data file mode 0600" || fail "family: data file mode $mode"
"$CSAMPLER" record -q -o fam.data -- true 2>/dev/null
[ -s fam.data.old ] && cmp -s fam.data.old fam.data && fail "family: .old is a copy?" || true
[ -s fam.data.old ] && pass "family: previous file kept as .old" || fail "family: no fam.data.old"
lost=$(json_get info.json "j.lost")
[ "$lost" = 0 ] && pass "family: no lost samples" || fail "family: $lost lost samples"
finish
