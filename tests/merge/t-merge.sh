#!/usr/bin/env bash
# Many processes: `record -o` patterns and `csampler merge`.
#  - a two-rank run under a small launcher that sets RANK (as torchrun does) writes one file per
#    rank through -o 'prof.%h.%r.data', each with its rank and host in the header;
#  - merge joins them: both processes kept apart and labelled; report --rank 1 shows only rank
#    1's process, with its samples; every reader (report, folded, flame, export, info) reads
#    the merged file; pids that clash (the same file twice) are renumbered, the original kept;
#  - %p, %t, %%, no rank variable ('norank') and a bad pattern;
#  - truncated, corrupt and missing inputs: one line, exit 125, no output file.
source "$CSAMPLER_ROOT/tests/lib.sh"

cp "$TPROG/phases" ./phases
host=$(hostname)
cat >launch.sh <<'EOS'
#!/bin/sh
# launch.sh N COMMAND...: start COMMAND N times at once with RANK=0..N-1, as torchrun does.
n=$1; shift
r=0; pids=
while [ "$r" -lt "$n" ]; do
	RANK=$r "$@" "rank$r" & pids="$pids $!"
	r=$((r + 1))
done
st=0
for p in $pids; do wait "$p" || st=1; done
exit $st
EOS
chmod +x launch.sh
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK
if ! ./launch.sh 2 "$CSAMPLER" record -q -o 'prof.%h.%r.data' -- ./phases 0.25 0 >launch.out 2>launch.err; then
	fail "merge: the two-rank launch failed: $(tail -n 3 launch.err | tr '\n' ' ')"
	finish
fi
files=$(ls prof.*.data 2>/dev/null | tr '\n' ' ')
[ "$files" = "prof.$host.0.data prof.$host.1.data " ] && pass "record -o 'prof.%h.%r.data': one file per rank ($files)" ||
	{ fail "record -o 'prof.%h.%r.data': files '$files'"; finish; }
for r in 0 1; do
	"$CSAMPLER" info -i "prof.$host.$r.data" --format json >info$r.json 2>/dev/null
	got=$(json_get info$r.json "[j.header.rank, j.header.rank_from, j.header.hostname, j.processes.map(p => p.comm + ':' + p.rank).join(',')].join(' ')")
	[ "$got" = "$r RANK $host rank$r:$r" ] && pass "rank $r: header rank $r from RANK, host $host" ||
		fail "rank $r: header/processes '$got'"
done
s1=$(json_get info1.json j.samples)

# -- merge --
if "$CSAMPLER" merge -o all.data prof.$host.0.data prof.$host.1.data >merge.out 2>merge.err; then
	pass "merge: exit 0"
else
	fail "merge: $(cat merge.err)"; finish
fi
"$CSAMPLER" info -i all.data --format json >all.json 2>all.err || fail "merge: info on the merged file: $(cat all.err)"
got=$(json_get all.json "j.processes.map(p => p.comm + ':' + p.rank + ':' + p.host).sort().join(' ')")
[ "$got" = "rank0:0:$host rank1:1:$host" ] && pass "merge: two processes, labelled with rank and host" ||
	fail "merge: processes '$got'"
total=$(json_get all.json j.samples); s0=$(json_get info0.json j.samples)
[ "$total" = $((s0 + s1)) ] && pass "merge: $total samples = $s0 + $s1" || fail "merge: $total samples, want $s0 + $s1"
json_get all.json "j.header.merged + ' ' + j.header['merge.input.1']" | grep -q "^2 prof.$host.1.data (host $host, rank 1)" &&
	pass "merge: the header lists the inputs" || fail "merge: header $(json_get all.json "JSON.stringify(j.header)" | head -c 300)"

"$CSAMPLER" report -i all.data --rank 1 --format json >r1.json 2>r1.err
got=$(json_get r1.json "j.processes.map(p => p.comm + ':' + p.rank).join(' ') + ' ' + j.samples + ' ' + j.filter.rank")
[ "$got" = "rank1:1 $s1 1" ] && pass "report --rank 1: only rank 1's process, its $s1 samples" ||
	fail "report --rank 1: '$got' (want 'rank1:1 $s1 1') $(cat r1.err)"
"$CSAMPLER" report -i all.data --rank 1 >r1.txt 2>/dev/null
procs=$(sed -n '/^Processes/,/^$/p' r1.txt | grep -Ec '^ *[0-9.]+%')
sed -n '/^Processes/,/^$/p' r1.txt | grep -q "rank1 (rank 1, $host)" && [ "$procs" = 1 ] &&
	! sed -n '/^Threads/,/^$/p' r1.txt | grep -q rank0 &&
	pass "report --rank 1 (text): rank 1 alone, labelled" || fail "report --rank 1 (text): $(sed -n '/^Processes/,/^$/p' r1.txt | tr '\n' ' ')"
"$CSAMPLER" report -i prof.$host.0.data --rank 0 --format json >own.json 2>/dev/null
[ "$(json_get own.json j.samples)" = "$s0" ] && pass "report --rank 0 on rank 0's own file keeps it all" ||
	fail "report --rank 0 on a single file: $(json_get own.json j.samples) of $s0"
"$CSAMPLER" report -i prof.$host.0.data --rank 1 --format json >other.json 2>/dev/null
[ "$(json_get other.json j.samples)" = 0 ] && pass "report --rank 1 on rank 0's file keeps nothing" ||
	fail "report --rank 1 on rank 0's file: $(json_get other.json j.samples)"
# the pprof export of the merged file labels each process' samples with its own rank
if command -v go >/dev/null; then
	"$CSAMPLER" export --format pprof -i all.data -o all.pb.gz 2>/dev/null &&
		go tool pprof -traces all.pb.gz >traces.txt 2>/dev/null
	ranks=$(grep -E '^ *rank: +[0-9]+$' traces.txt | awk '{ print $2 }' | sort -u | tr '\n' ' ')
	[ "$ranks" = "0 1 " ] && pass "pprof export of the merged file: rank labels 0 and 1" ||
		fail "pprof export of the merged file: rank labels '$ranks'"
else
	skip "pprof rank labels of a merged file: go (golang-go) is not installed"
fi
roots=$("$CSAMPLER" folded -i all.data --rank 0 | cut -d';' -f1 | sort -u | tr '\n' ' ')
[ "$roots" = "rank0 " ] && pass "folded --rank 0: root rank0 only" || fail "folded --rank 0: roots '$roots'"

# every reader takes the merged file
check "merge: report reads it" "$CSAMPLER" report -i all.data
check "merge: folded reads it" "$CSAMPLER" folded -i all.data
check "merge: flame reads it" "$CSAMPLER" flame -o all.svg all.data
for fmt in chrome speedscope pprof; do
	check "merge: export --format $fmt reads it" "$CSAMPLER" export -i all.data --format $fmt -o all.$fmt
done
check "merge: info reads it" "$CSAMPLER" info -i all.data
check "merge: the merged file merges again" "$CSAMPLER" merge -o again.data all.data prof.$host.0.data

# clashing pids: the same recording twice
"$CSAMPLER" merge -o twice.data prof.$host.1.data prof.$host.1.data 2>/dev/null
"$CSAMPLER" info -i twice.data --format json >twice.json 2>/dev/null
got=$(json_get twice.json "(() => { const p = j.processes; const o = p.find(x => x.pid === x.orig_pid), m = p.find(x => x.pid !== x.orig_pid);
	return p.length + ' ' + (o && m && m.orig_pid === o.pid && m.pid >= 4194304 && m.samples === o.samples); })()")
[ "$got" = "2 true" ] && pass "merge: a clashing pid is renumbered from 4194304 up, its original kept" ||
	fail "merge: clashing pids: $(json_get twice.json "JSON.stringify(j.processes)")"

# GPU records (stand-in CUPTI) follow their process through the renumbering
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
if [ -f "$LIB" ] && [ -x "$DRIVER" ]; then
	for r in 0 1; do
		RANK=$r LD_LIBRARY_PATH=$CSAMPLER_ROOT/bin/tests/cupti/standin "$CSAMPLER" record -q --gpu on \
			-o "g.%r.data" -- sh -c 'exec "$0" workload "$CUDA_INJECTION64_PATH"' "$DRIVER" >/dev/null 2>&1
	done
	"$CSAMPLER" merge -o g.data g.0.data g.1.data 2>/dev/null
	launches() { "$CSAMPLER" report --format json "$@" 2>/dev/null | node -e "
const j = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(j.gpu ? j.gpu.launches : 0)"; }
	one=$(launches -i g.0.data); both=$(launches -i g.data); r1=$(launches -i g.data --rank 1)
	[ "${one:-0}" -gt 0 ] && [ "$both" = $((2 * one)) ] && [ "$r1" = "$one" ] &&
		pass "merge: GPU launches of both ranks kept ($both), --rank 1 keeps its $r1" ||
		fail "merge: GPU launches: one file $one, merged $both, --rank 1 $r1"
else
	skip "merge/gpu: lib/libcsampler-cupti.so or the stand-in driver is not built (no CUPTI headers)"
fi

# -- patterns --
"$CSAMPLER" record -q -o 'p.%p.data' -- ./phases 0.05 >/dev/null 2>&1
f=$(ls p.*.data 2>/dev/null)
pid=${f#p.}; pid=${pid%.data}
"$CSAMPLER" info -i "$f" --format json >p.json 2>/dev/null
[ -n "$f" ] && [ "$(json_get p.json "j.processes.map(p => p.pid).join(' ')")" = "$pid" ] &&
	pass "record -o 'p.%p.data': $f, named after the launched process" || fail "record -o %p: file '$f', processes $(json_get p.json "JSON.stringify(j.processes)")"
"$CSAMPLER" record -q -o 't.%t.%%.data' -- ./phases 0.05 >/dev/null 2>&1
ls | grep -Eq '^t\.[0-9]{8}-[0-9]{6}\.%\.data$' && pass "record -o 't.%t.%%.data': $(ls t.*)" || fail "record -o %t: $(ls | grep '^t\.' | tr '\n' ' ')"
"$CSAMPLER" record -q -o 'n.%r.data' -- ./phases 0.05 >/dev/null 2>&1
[ -s n.norank.data ] && pass "record -o %r without a rank variable: n.norank.data" || fail "record -o %r without rank: $(ls | grep '^n\.' | tr '\n' ' ')"
LOCAL_RANK=3 "$CSAMPLER" record -q -o 'l.%r.data' -- ./phases 0.05 >/dev/null 2>&1
[ -s l.3.data ] && pass "record -o %r from LOCAL_RANK" || fail "record -o %r from LOCAL_RANK: $(ls | grep '^l\.' | tr '\n' ' ')"

expect_error() {
	local name=$1; shift
	"$@" >err.out 2>err.txt
	local rc=$?
	if [ "$rc" = 125 ] && [ "$(wc -l <err.txt)" = 1 ] && [ ! -s err.out ]; then
		pass "$name: exit 125, one line: $(cat err.txt)"
	else
		fail "$name: exit $rc, stderr: $(head -n 3 err.txt | tr '\n' ' ')"
	fi
}
expect_error "record -o 'x.%q'" "$CSAMPLER" record -o 'x.%q' -- ./phases 0.05
[ -e x.%q ] && fail "record -o 'x.%q' wrote a file" || true

# -- bad inputs: nothing written --
size=$(stat -c %s prof.$host.0.data)
head -c $((size - 64)) prof.$host.0.data >cut.data
expect_error "merge: truncated input" "$CSAMPLER" merge -o bad.data prof.$host.1.data cut.data
cp prof.$host.1.data corrupt.data
printf '\377\377\377\377' | dd of=corrupt.data bs=1 seek=100 conv=notrunc 2>/dev/null
expect_error "merge: corrupt input" "$CSAMPLER" merge -o bad.data prof.$host.1.data corrupt.data
expect_error "merge: missing input" "$CSAMPLER" merge -o bad.data prof.$host.1.data missing.data
printf 'not a profile\n' >junk.data
expect_error "merge: not a data file" "$CSAMPLER" merge -o bad.data junk.data
[ ! -e bad.data ] && pass "merge: no output file after a refused input" || fail "merge: bad.data was left"
cp all.data keep.data
expect_error "merge: truncated input, existing output" "$CSAMPLER" merge -o keep.data cut.data
cmp -s all.data keep.data && pass "merge: an existing output is untouched by a refused merge" || fail "merge: keep.data changed"
expect_error "merge: no -o" "$CSAMPLER" merge prof.$host.0.data
expect_error "merge: no inputs" "$CSAMPLER" merge -o x.data
expect_error "merge: output is an input" "$CSAMPLER" merge -o all.data all.data prof.$host.0.data
finish
