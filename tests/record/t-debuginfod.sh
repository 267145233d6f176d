#!/usr/bin/env bash
# t-debuginfod.sh: debug info found by build id on a debuginfod server at record time. Debian's
# debuginfod serves, on a free port (queried on loopback), a directory holding only the debug
# file of tests/progs/accuracy (objcopy --only-keep-debug); the recorded program is its
# stripped copy (bin/tests/accuracy-stripped, same build id). With DEBUGINFOD_URLS and a
# private DEBUGINFOD_CACHE_PATH the report names work_alpha, work_beta and the inlined
# work_gamma, with accuracy.c source lines, and the debug file is in the cache; with the
# server stopped, the cache alone still names them. Without the variable, and with
# --no-debuginfod (the command still sees the variable), nothing changes: the frames are
# accuracy-stripped+0xOFFSET and nothing is cached. SKIPPED when the server cannot start.
source "$CSAMPLER_ROOT/tests/lib.sh"
export HOME=$T DEBUGINFOD_TIMEOUT=20
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_PROGRESS
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

if ! command -v debuginfod >/dev/null; then
	skip "debuginfod: Debian's debuginfod server is not installed (scripts/install-deps.sh --test installs it)"
	finish
fi
mkdir srv
if ! objcopy --only-keep-debug "$TPROG/accuracy" srv/accuracy.debug; then
	fail "debuginfod: objcopy --only-keep-debug failed"
	finish
fi
build_id=$(readelf -n "$TPROG/accuracy-stripped" | awk '/Build ID/ { print $3 }')
if [ -z "$build_id" ] || readelf -S "$TPROG/accuracy-stripped" | grep -q debug_info; then
	fail "debuginfod: $TPROG/accuracy-stripped has no build id, or has debug info"
	finish
fi

# A free port: bind port 0, read what the kernel gave, close (a clash after that is unlikely
# and shows as the server not starting).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$T/db.sqlite" -t 0 -g 0 srv >server.log 2>&1 &
SERVER_PID=$!
url=http://127.0.0.1:$port
served=no
for _ in $(seq 1 60); do
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		break
	fi
	if python3 - "$url/buildid/$build_id/debuginfo" <<'PY' 2>/dev/null; then
import sys, urllib.request
sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)
PY
		served=yes
		break
	fi
	sleep 0.5
done
if [ "$served" != yes ]; then
	skip "debuginfod: the server did not start or serve $build_id within 30 s: $(tail -n 2 server.log | tr '\n' ' ')"
	finish
fi
pass "debuginfod: the server on port $port serves the debug file of $build_id"

# rec NAME [OPTIONS...]: record the stripped program into NAME.data, then NAME.json and
# NAME.folded. The command prints the DEBUGINFOD_URLS it got into NAME.env.
rec() {
	local name=$1; shift
	"$CSAMPLER" record -q "$@" -o "$name.data" -- \
		sh -c 'echo "$DEBUGINFOD_URLS" >"$0"; exec "$1" 1' "$name.env" "$TPROG/accuracy-stripped" \
		>"$name.out" 2>&1 &&
	"$CSAMPLER" report -i "$name.data" --format json --limit 0 >"$name.json" 2>>"$name.out" &&
	"$CSAMPLER" folded -i "$name.data" >"$name.folded" 2>>"$name.out" ||
		{ fail "debuginfod: $name: record or report failed: $(tail -n 3 "$name.out" | tr '\n' ' ')"; return 1; }
}
# named NAME: the leaves are named (work_alpha and work_beta are functions of the report)
named() {
	test "$(json_get "$1.json" "['work_alpha', 'work_beta'].every(n => j.functions.some(f => f.name === n))")" = true
}
# unnamed NAME: as without debug info: offsets, none of the names
unnamed() {
	! grep -qE 'work_alpha|work_beta|level_0' "$1.folded" &&
		grep -qE ';accuracy-stripped\+0x[0-9a-f]+ [0-9]+$' "$1.folded"
}

if rec plain; then
	check "debuginfod: without DEBUGINFOD_URLS the frames are offsets, as before" unnamed plain
fi
export DEBUGINFOD_CACHE_PATH=$T/cache
if DEBUGINFOD_URLS=$url rec off --no-debuginfod; then
	check "debuginfod: --no-debuginfod: the frames are offsets" unnamed off
	check "debuginfod: --no-debuginfod: nothing was fetched into the cache" \
		test ! -e "$T/cache/$build_id/debuginfo"
	check "debuginfod: --no-debuginfod: the command still got DEBUGINFOD_URLS" grep -qx "$url" off.env
	check "debuginfod: --no-debuginfod: the header says off" \
		sh -c "'$CSAMPLER' info -i off.data | grep -q '^debuginfod *off (--no-debuginfod)'"
fi
if DEBUGINFOD_URLS=$url rec on; then
	check "debuginfod: the report names work_alpha and work_beta" named on
	check "debuginfod: the inlined work_gamma is its own frame" grep -q 'gamma_caller;work_gamma_\[i\] ' on.folded
	line=$(json_get on.json "((f) => f && f.file ? f.file.replace(/.*\//, '') + ':' + f.line : 'none')(j.functions.find(f => f.name === 'work_alpha'))")
	check "debuginfod: work_alpha has its source line ($line)" \
		bash -c "[[ '$line' =~ ^accuracy\.c:[1-9][0-9]*$ ]]"
	check "debuginfod: the debug file is in DEBUGINFOD_CACHE_PATH" test -s "$T/cache/$build_id/debuginfo"
	check "debuginfod: the header has the server" \
		sh -c "'$CSAMPLER' info -i on.data | grep -q '^debuginfod *$url'"
fi
kill "$SERVER_PID" 2>/dev/null
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=
if DEBUGINFOD_URLS=$url rec cached; then
	check "debuginfod: with the server stopped, the cache still names the functions" named cached
fi
finish
