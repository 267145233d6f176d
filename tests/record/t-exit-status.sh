#!/usr/bin/env bash
# csampler's exit status is the command's (128+N for death by signal N); 127 not found,
# 126 not executable; stdout belongs to the command.
source "$CSAMPLER_ROOT/tests/lib.sh"

expect_rc() {
	local name=$1 want=$2; shift 2
	"$CSAMPLER" record -q -o x.data -- "$@" >out.txt 2>err.txt
	local rc=$?
	[ "$rc" = "$want" ] && pass "exit: $name -> $want" || fail "exit: $name: got $rc, want $want ($(head -c 200 err.txt))"
}
expect_rc "exit 7" 7 sh -c 'exit 7'
expect_rc "exit 0" 0 true
expect_rc "SIGKILL" 137 sh -c 'kill -KILL $$'
expect_rc "SIGSEGV" 139 sh -c 'kill -SEGV $$'
expect_rc "not found" 127 ./no-such-command
[ "$(grep -c . err.txt)" = 1 ] && grep -q 'command not found' err.txt && pass "exit: not found is one line" || fail "exit: not-found message: $(cat err.txt)"
printf 'plain text\n' >notexec; chmod 644 notexec
expect_rc "not executable" 126 ./notexec
grep -q 'cannot execute' err.txt && pass "exit: not executable message" || fail "exit: message: $(cat err.txt)"
"$CSAMPLER" record -q -o x.data -- echo hello-stdout >out.txt 2>err.txt
[ "$(cat out.txt)" = hello-stdout ] && pass "exit: stdout belongs to the command" || fail "exit: stdout was '$(cat out.txt)'"
"$CSAMPLER" record -o x.data -- true >out.txt 2>err.txt
[ ! -s out.txt ] && grep -q samples err.txt && pass "exit: csampler's summary goes to stderr" || fail "exit: summary on stdout"
finish
