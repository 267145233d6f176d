#!/usr/bin/env bash
# JIT code without CFI (tests/progs/jit.h): stacks through the kernels of jit-kernel (oneDNN-like:
# pushes callee-saved registers, rbp an ordinary register), jit-fp (keeps a frame pointer),
# jit-decoy (a genuine return address after a direct call stored in the JIT frame) and
# jit-nested (JIT code calling C calling JIT code: two recoveries per sample) must be
# complete with default options: report's figure >= 99%, and a count that does not trust it (the
# root frame of each line of `folded`), every JIT frame under worker_loop;jit_caller and named
# from the perf map the program writes; jit-fp's callers found by frame-pointer steps (a scan only
# for samples on the kernel's first instruction or its ret), the decoy never taken. A 512-byte stack copy cuts the scan short: only then the report says the copy
# was too short.
source "$CSAMPLER_ROOT/tests/lib.sh"

# record NAME PROG [RECORD OPTIONS...]: NAME.csp, NAME.json, NAME.folded; removes the perf map.
record() {
	local name=$1 prog=$2; shift 2
	if [ ! -x "$TPROG/$prog" ]; then
		fail "setup: $TPROG/$prog is not built (make test-programs)"
		return 1
	fi
	if ! "$CSAMPLER" record -q "$@" -o "$name.csp" -- "$TPROG/$prog" 2 >"$name.out" 2>&1; then
		fail "$name: csampler record failed: $(tail -n 3 "$name.out" | tr '\n' ' ')"
		return 1
	fi
	"$CSAMPLER" report -i "$name.csp" --format json >"$name.json" 2>"$name.err" &&
		"$CSAMPLER" report -i "$name.csp" >"$name.txt" 2>>"$name.err" &&
		"$CSAMPLER" folded -i "$name.csp" >"$name.folded" 2>>"$name.err" || {
		fail "$name: report/folded failed: $(tail -n 3 "$name.err" | tr '\n' ' ')"
		return 1
	}
	local pid
	pid=$(json_get "$name.json" "j.processes[0].pid")
	rm -f "/tmp/perf-$pid.map"
}

# samples NAME AWK-CONDITION: the samples of NAME.folded's lines that match.
samples() { awk "$2 { n += \$NF } END { print n + 0 }" "$1.folded"; }

# NAME:KERNEL[:CALLERS]: the program, the kernel its samples are mostly in, the frames above it.
for prog in jit-kernel:jit_gemm_kernel jit-fp:jit_fp_kernel jit-decoy:jit_decoy_kernel \
	"jit-nested:jit_gemm_kernel:worker_loop;jit_caller;jit_outer_kernel_\\[j\\];jit_callback"; do
	IFS=: read -r name sym callers <<<"$prog"
	callers=${callers:-worker_loop;jit_caller}
	record "$name" "$name" || continue
	complete=$(json_get "$name.json" "j.unwind.complete_pct")
	if awk -v c="$complete" 'BEGIN { exit !(c >= 99) }'; then
		pass "$name: complete stacks $complete%"
	else
		fail "$name: complete stacks $complete% < 99% ($(grep -A8 '^Unwind quality' "$name.txt" | tr '\n' ' '))"
	fi
	# Independent of report's rule: the frame after the process name is an entry point.
	total=$(samples "$name" "1")
	rooted=$(samples "$name" '$0 ~ /^[^;]*;(_start|__clone3|__clone|clone3|clone);/')
	check "$name: $rooted of $total samples rooted at _start or clone in folded (>= 99%)" \
		test $((rooted * 100)) -ge $((total * 99))
	jit=$(samples "$name" "/;${sym}_\\[j\\]/")
	under=$(samples "$name" "/;${callers};${sym}_\\[j\\]/")
	check "$name: most samples in the JIT kernel ($jit of $total)" test $((jit * 2)) -gt "$total"
	check "$name: every $sym frame under ${callers//\\/} ($under of $jit)" test "$under" = "$jit"
	# (samples taken in execve, before the program runs, have the launcher's pc, and samples
	# taken in do_exit, as the address space is torn down (bpf's per-CPU timer takes them), a
	# user pc that no mapping names any more: not JIT)
	unnamed=$(grep '//anon' "$name.folded" | grep -v -e sys_execve -e do_exit_ | head -n 2 | cut -c1-600)
	[ -z "$unnamed" ] && pass "$name: no unnamed JIT frame" ||
		fail "$name: unnamed JIT frame: $unnamed ($("$CSAMPLER" info -i "$name.csp" 2>/dev/null | grep "^sampler "))"
	fp=$(json_get "$name.json" "j.unwind.frames.fp")
	scan=$(json_get "$name.json" "j.unwind.frames.scan")
	case $name in
	jit-fp)
		check "$name: callers found by frame-pointer steps ($fp for $jit JIT samples)" \
			test $((fp * 100)) -ge $((jit * 99))
		# Only a sample on the kernel's first instruction or its ret (rbp is then the
		# caller's) needs the scan.
		check "$name: almost nothing found by scanning ($scan, <= 1%)" \
			test $((scan * 100)) -le "$jit" ;;
	jit-nested)
		# Two frames without CFI per sample of the inner kernel.
		check "$name: two callers found by scanning per sample ($scan for $jit samples)" \
			test $((scan * 100)) -ge $((jit * 2 * 99)) ;;
	*)
		check "$name: callers found by scanning ($scan for $jit JIT samples)" \
			test $((scan * 100)) -ge $((jit * 99)) ;;
	esac
	grep -q 'user frames by how they were found: .* frame-pointer step, .* stack scan' "$name.txt" &&
		pass "$name: report lists frames by method" || fail "$name: report lacks frames by method"
done
[ -f jit-decoy.folded ] && check "jit-decoy: the decoy return address was never taken" \
	bash -c "! grep -q decoy_site jit-decoy.folded"

# A copy too short for the JIT frame: the scan runs off its end. Those stacks are reported as
# "stack copy too short", not as JIT code whose caller was not found.
if record short jit-kernel --stack-size 64; then
	ss=$(json_get short.json "j.unwind.causes.stack_short")
	anon=$(json_get short.json "j.unwind.causes.anon_no_cfi")
	jit=$(samples short "/;jit_gemm_kernel_\\[j\\]/")
	check "short copy: JIT stacks reported as copy too short ($ss of $jit), none as no CFI ($anon)" \
		test $((ss * 100)) -ge $((jit * 95)) -a "$anon" = 0
fi
finish
