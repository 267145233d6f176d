#!/usr/bin/env bash
# Containers: a program that runs from a path that exists only in its own mount namespace (a
# private tmpfs, as in a container) is still unwound and named, through /proc/PID/root.
source "$CSAMPLER_ROOT/tests/lib.sh"

if ! command -v unshare >/dev/null || ! unshare --mount true 2>/dev/null; then
	skip "container: unshare --mount is not permitted here (needs root or user namespaces)"
	finish
fi
mkdir -p "$T/private"
# Inside the namespace: a tmpfs over $T/private, the program copied into it, exec'd from there.
"$CSAMPLER" record -o ns.data -- unshare --mount sh -c \
	"mount -t tmpfs none '$T/private' && cp '$TPROG/accuracy' '$T/private/inside' && exec '$T/private/inside' 1" \
	>out.txt 2>err.txt
rc=$?
[ "$rc" = 0 ] && pass "container: record exits 0" || fail "container: rc $rc: $(tail -3 err.txt)"
[ ! -e "$T/private/inside" ] && pass "container: the program's path does not exist outside its namespace" \
	|| fail "container: $T/private/inside is visible outside"
"$CSAMPLER" report -i ns.data --format json >ns.json 2>/dev/null
libs=$(json_get ns.json "j.libraries.map(l => l.path).join(' ')")
case "$libs" in
*"$T/private/inside"*) pass "container: the mapping keeps its in-namespace path" ;;
*) fail "container: libraries are: $libs" ;;
esac
named=$(json_get ns.json "j.functions.filter(f => /^work_(alpha|beta)/.test(f.name)).length")
[ "${named:-0}" -ge 2 ] && pass "container: functions of the in-namespace program are named" \
	|| fail "container: its functions are not named: $(json_get ns.json "j.functions.slice(0,5).map(f => f.name).join(', ')")"
complete=$(json_get ns.json "j.unwind.complete_pct")
[ "$(echo "${complete:-0} >= 95" | bc)" = 1 ] && pass "container: ${complete}% complete stacks" \
	|| fail "container: only ${complete}% complete stacks"
finish
