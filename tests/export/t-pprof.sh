#!/usr/bin/env bash
# t-pprof.sh: `csampler export --format pprof` on a real recording of tests/progs/report-mix
# (main thread in hot_main through chain_outer -> chain_inner, thread "rm-worker" in
# hot_worker). The gzip stream is checked with gzip -t, the protobuf wire format with Debian's
# `protoc --decode_raw`, and the message decoded with `protoc --decode` against profile.proto
# (the Profile fields, beside this script): the string table holds the known function names,
# the sample types are samples/count and cpu/nanoseconds, the samples' values sum to the
# `csampler folded` total (and that times the period), every location and function id a
# sample uses is defined, and a sample's first location (the leaf) is hot_main with its
# callers after it; and on tests/progs/accuracy, that an inlined function is an extra line of
# its caller's location. The decoding here is protoc's; t-pprof-go.sh reads the export with
# go tool pprof and pprof-format. SKIPPED without protoc.
source "$CSAMPLER_ROOT/tests/lib.sh"

if ! command -v protoc >/dev/null; then
	skip "export/pprof: Debian's protoc is not installed (scripts/install-deps.sh --test installs protobuf-compiler)"
	finish
fi
cp "$TPROG/report-mix" ./mix
if ! "$CSAMPLER" record -q -o mix.data -- ./mix 0.3 >rec.out 2>rec.err ||
   ! "$CSAMPLER" -q export --format pprof -i mix.data -o p.pb.gz 2>export.err ||
   ! "$CSAMPLER" folded -i mix.data >folded.txt 2>folded.err; then
	fail "export/pprof: record, export or folded failed: $(tail -n 3 rec.err export.err folded.err | tr '\n' ' ')"
	finish
fi
check "export/pprof: gzip stream is whole" gzip -t p.pb.gz
check "export/pprof: protoc --decode_raw reads the wire format" \
	sh -c 'gzip -dc p.pb.gz | protoc --decode_raw >raw.txt'
if ! gzip -dc p.pb.gz | protoc --decode=perftools.profiles.Profile \
	-I "$CSAMPLER_ROOT/tests/export" profile.proto >decoded.txt 2>decode.err; then
	fail "export/pprof: protoc --decode as a pprof Profile failed: $(head -n 3 decode.err | tr '\n' ' ')"
	finish
fi
pass "export/pprof: decodes as a pprof Profile"

folded_total=$(awk '{ n += $NF } END { print n + 0 }' folded.txt)
out=$(python3 - decoded.txt "$folded_total" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
total = int(sys.argv[2])
why = []
# The top-level messages of protoc's text format: "name {" ... "}" at column 0, or "name: v".
blocks, strings, scalars = [], [], {}
cur = None
for line in text.splitlines():
    if cur is None:
        m = re.match(r'^(\w+) \{$', line)
        if m:
            cur = (m.group(1), [])
            continue
        m = re.match(r'^string_table: "(.*)"$', line)
        if m:
            strings.append(m.group(1))
            continue
        m = re.match(r'^(\w+): (\d+)$', line)
        if m:
            scalars[m.group(1)] = int(m.group(2))
    elif line == '}':
        blocks.append(cur)
        cur = None
    else:
        cur[1].append(line.strip())
def fields(body, name):
    return [int(l.split(': ')[1]) for l in body if l.startswith(name + ': ')]
if not strings or strings[0] != '':
    why.append('string_table[0] is not ""')
for name in ('hot_main', 'hot_worker', 'chain_inner', 'chain_outer'):
    if name not in strings:
        why.append('%s not in the string table' % name)
types = [(fields(b, 'type')[0], fields(b, 'unit')[0]) for k, b in blocks if k == 'sample_type']
names = [(strings[t], strings[u]) for t, u in types]
if names != [('samples', 'count'), ('cpu', 'nanoseconds')]:
    why.append('sample types %s' % names)
period = scalars.get('period', 0)
functions = {fields(b, 'id')[0]: strings[fields(b, 'name')[0]] for k, b in blocks if k == 'function'}
locations = {}
for k, b in blocks:
    if k == 'location':
        # nested "line {" blocks: function_id lines inside, in order (innermost first)
        locations[fields(b, 'id')[0]] = [int(l.split(': ')[1]) for l in b if l.startswith('function_id: ')]
counts = nanos = 0
hot_main_leaf = False
for k, b in blocks:
    if k != 'sample':
        continue
    v = fields(b, 'value')
    if len(v) != 2:
        why.append('a sample has %d values' % len(v))
        break
    counts += v[0]
    nanos += v[1]
    locs = fields(b, 'location_id')
    if any(l not in locations or any(f not in functions for f in locations[l]) for l in locs):
        why.append('a sample uses an undefined location or function')
        break
    chain = [functions[f] for l in locs for f in locations[l]]
    if chain and chain[0] == 'hot_main':
        hot_main_leaf = True
        if 'chain_inner' not in chain or chain.index('chain_inner') > chain.index('chain_outer'):
            why.append('hot_main\'s callers are not leaf first: %s' % chain[:6])
if counts != total:
    why.append('sample counts sum to %d, folded total %d' % (counts, total))
if period <= 0 or nanos != total * period:
    why.append('cpu nanoseconds %d != %d samples x period %d' % (nanos, total, period))
if not hot_main_leaf:
    why.append('no sample has hot_main as its leaf')
print('; '.join(why) if why else 'ok')
PY
)
[ "$out" = ok ] && pass "export/pprof: names, sample types, values agree with folded ($folded_total samples)" ||
	fail "export/pprof: $out"

# Inline frames: tests/progs/accuracy always inlines work_gamma into gamma_caller, so one
# location must carry two lines, work_gamma (innermost) then gamma_caller.
if "$CSAMPLER" record -q -o acc.data -- "$TPROG/accuracy" 0.3 >acc.out 2>acc.err &&
   "$CSAMPLER" -q export --format pprof -i acc.data -o acc.pb.gz 2>>export.err &&
   gzip -dc acc.pb.gz | protoc --decode=perftools.profiles.Profile \
	-I "$CSAMPLER_ROOT/tests/export" profile.proto >acc.txt 2>>decode.err; then
	out=$(python3 - acc.txt <<'PY'
import re, sys
text = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
functions = {int(i): strings[int(n)] for i, n in
             re.findall(r'^function \{\n  id: (\d+)\n  name: (\d+)\n', text, re.M)}
chains = [[functions[int(f)] for f in re.findall(r'function_id: (\d+)', body)]
          for body in re.findall(r'^location \{\n(.*?)^\}', text, re.M | re.S)]
print('ok' if ['work_gamma', 'gamma_caller'] in chains else
      'no location with lines work_gamma, gamma_caller among %d' % len(chains))
PY
)
	[ "$out" = ok ] && pass "export/pprof: an inlined function is an extra line of its caller's location" ||
		fail "export/pprof: inline frames: $out"
else
	fail "export/pprof: recording or exporting accuracy failed: $(tail -n 2 acc.err export.err decode.err | tr '\n' ' ')"
fi

# A truncated stream must not decode: the check above can fail.
head -c 200 p.pb.gz >cut.gz
if gzip -dc cut.gz 2>/dev/null | protoc --decode=perftools.profiles.Profile \
	-I "$CSAMPLER_ROOT/tests/export" profile.proto >/dev/null 2>&1 && gzip -t cut.gz 2>/dev/null; then
	fail "export/pprof: a cut file passed the checks"
else
	pass "export/pprof: a cut file fails the checks"
fi
finish
