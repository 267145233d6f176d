#!/usr/bin/env bash
# `make install` into a scratch DESTDIR: the programs and man pages land under PREFIX, and the
# installed csampler profiles the installed splat-train found on PATH, as the README shows.
source "$CSAMPLER_ROOT/tests/lib.sh"

root=$T/root
if ! out=$(make --no-print-directory -s -C "$CSAMPLER_ROOT" install DESTDIR="$root" PREFIX=/usr 2>&1); then
	fail "install: make install failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
	finish
fi
missing=
for f in bin/csampler bin/splat-train share/man/man1/csampler.1 share/man/man1/csampler-record.1 \
	share/man/man1/csampler-report.1 share/man/man1/csampler-flame.1 \
	share/man/man1/splat-train.1 share/man/man5/csampler-data.5; do
	[ -e "$root/usr/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && pass "install: programs and man pages under PREFIX" ||
	fail "install: missing under $root/usr:$missing"

# man finds the installed pages through MANPATH.
if command -v man >/dev/null; then
	page=$(MANPATH=$root/usr/share/man man -w csampler-record 2>&1)
	[ "$page" = "$root/usr/share/man/man1/csampler-record.1" ] && pass "install: man -w csampler-record" ||
		fail "install: man -w csampler-record gave '$page'"
else
	skip "install: man is not installed"
fi

# From PATH, with nothing from the source tree: record, then report.
export PATH=$root/usr/bin:$PATH
rc=0
csampler record -q -o micro.data -- splat-train --preset micro --iters 5 --backend cpu \
	--log-interval 0 >train.out 2>rec.err || rc=$?
if [ "$rc" = 0 ] && [ "$(command -v csampler)" = "$root/usr/bin/csampler" ] &&
	csampler report -i micro.data --stdio >report.txt 2>&1 && grep -q 'splat_' report.txt; then
	pass "install: csampler record -- splat-train from PATH, report names splat_ functions"
else
	fail "install: record from PATH: rc $rc, $(tail -n 2 rec.err report.txt 2>/dev/null | tr '\n' ' ')"
fi
finish
