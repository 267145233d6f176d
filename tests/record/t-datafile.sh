#!/usr/bin/env bash
# Readers: a file cut short is read as truncated with the samples before the cut; a corrupt,
# foreign or empty file gets one clear error line and exit 125, never a crash.
source "$CSAMPLER_ROOT/tests/lib.sh"

"$CSAMPLER" record -q -o full.data --no-compress -- "$TPROG/rec-family" 5 >/dev/null 2>&1 || fail "datafile: record failed"
"$CSAMPLER" info -i full.data --format json >full.json
total=$(json_get full.json j.samples)
size=$(stat -c %s full.data)
# Cut inside the last chunk that holds samples (the file is uncompressed, so the records can be
# read here): the chunks before it come back whole, its samples and those after do not.
# Halving the file instead depended on where chunk boundaries fell (the first data chunk can hold
# more than half of it), and so did cutting the very last chunk (it may hold only symbols).
cut=$(python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read(); off = 64; cut = 0
while off + 24 <= len(d):
    stored = struct.unpack_from("<I", d, off + 8)[0]
    body = d[off + 24:off + 24 + stored]; p = 0
    while p + 8 <= len(body):
        t, _, sz = struct.unpack_from("<HHI", body, p)
        if t == 10:
            cut = off + 24 + stored // 2
            break
        if sz < 8:
            break
        p += sz
    off += 24 + stored
print(cut)' full.data)
head -c "$cut" full.data >half.data
"$CSAMPLER" info -i half.data --format json >half.json 2>half.err
rc=$?
got=$(json_get half.json j.samples 2>/dev/null)
if [ "$rc" = 0 ] && grep -q "truncated: $got samples recovered" half.err && [ "${got:-0}" -gt 0 ] && [ "$got" -lt "$total" ]; then
	pass "datafile: half file: truncated, $got of $total samples recovered"
else
	fail "datafile: half file: rc $rc, '$(cat half.err)', $got of $total"
fi
[ "$(json_get half.json j.truncated)" = true ] && pass "datafile: truncated flag" || fail "datafile: truncated flag missing"

cp full.data corrupt.data
printf '\xff\xfe\xfd\xfc' | dd of=corrupt.data bs=1 seek=$((size / 2)) conv=notrunc status=none
"$CSAMPLER" info -i corrupt.data >/dev/null 2>c.err; rc=$?
[ "$rc" = 125 ] && grep -q corrupt c.err && [ "$(grep -c . c.err)" = 1 ] && pass "datafile: corrupt byte -> one error line" || fail "datafile: corrupt: rc $rc '$(cat c.err)'"

perl -e 'srand(3); print map { chr(int(rand(256))) } 1..1000' >foreign.data
"$CSAMPLER" info -i foreign.data >/dev/null 2>f.err; rc=$?
[ "$rc" = 125 ] && grep -q 'not a csampler data file' f.err && pass "datafile: foreign file" || fail "datafile: foreign: rc $rc '$(cat f.err)'"
: >empty.data
"$CSAMPLER" info -i empty.data >/dev/null 2>e.err; rc=$?
[ "$rc" = 125 ] && pass "datafile: empty file -> error ($(cat e.err))" || fail "datafile: empty: rc $rc"
"$CSAMPLER" info -i missing.data >/dev/null 2>m.err; rc=$?
[ "$rc" = 125 ] && grep -q 'cannot open' m.err && pass "datafile: missing file" || fail "datafile: missing: rc $rc"
# every cut point of a small file: never a crash
"$CSAMPLER" record -q -o small.data -- "$TPROG/rec-family" 0.3 >/dev/null 2>&1
ssize=$(stat -c %s small.data); crashes=0
for cut in $(seq 0 97 "$ssize"); do
	head -c "$cut" small.data >cut.data
	"$CSAMPLER" info -i cut.data >/dev/null 2>&1; rc=$?
	[ "$rc" -ge 128 ] && crashes=$((crashes + 1))
done
[ "$crashes" = 0 ] && pass "datafile: no crash at any cut point" || fail "datafile: $crashes crashes on cut files"
finish
