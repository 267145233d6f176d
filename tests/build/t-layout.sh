#!/usr/bin/env bash
# t-layout.sh: the include rules of the README's design section hold in this tree
# (scripts/check-layout.sh), and the checker does catch each kind of violation when one is
# planted in a copy of the tree.
source "$CSAMPLER_ROOT/tests/lib.sh"
CHECK=$CSAMPLER_ROOT/scripts/check-layout.sh

if out=$("$CHECK" "$CSAMPLER_ROOT" 2>&1); then
	pass "layout/rules-hold"
else
	fail "layout/rules-hold: $(echo "$out" | head -n 3 | tr '\n' ' ')"
fi

# plant NAME FILE LINE EXPECTED: a copy of the sources with LINE added to FILE must fail the
# check with a message matching EXPECTED.
plant() {
	local name=$1 file=$2 line=$3 expected=$4
	rm -rf tree && mkdir tree
	(cd "$CSAMPLER_ROOT" && git ls-files -z profiler flamegraph target kernels | xargs -0 cp --parents -t "$T/tree")
	mkdir -p "tree/$(dirname "$file")"
	printf '%s\n' "$line" >> "tree/$file"
	if out=$("$CHECK" "$T/tree" 2>&1); then
		fail "layout/$name: a planted violation passed the check"
	elif echo "$out" | grep -q "$expected"; then
		pass "layout/$name"
	else
		fail "layout/$name: unexpected message: $out"
	fi
}
plant reader-includes-sampler profiler/analysis/report.c '#include "sampler/sampler.h"' \
	'analysis/report.c includes "sampler/sampler.h"'
plant reader-includes-record profiler/analysis/stacks.c '#include "record/record.h"' \
	'analysis/stacks.c includes "record/record.h"'
plant inject-includes-recorder profiler/inject/protocol.h '#include "record/record.h"' \
	'inject/protocol.h includes "record/record.h"'
plant inject-includes-base profiler/inject/protocol.h '#include "base/cs.h"' \
	'(of base/, only base/pywalk.h)'
plant inject-includes-elfutils profiler/inject/protocol.h '#include <elfutils/libdwfl.h>' \
	'inject/protocol.h includes elfutils'
plant record-includes-inject-internals profiler/record/record.c '#include "inject/cupti_buffers.h"' \
	'only inject/protocol.h'
plant record-includes-analysis profiler/record/record.c '#include "analysis/profile.h"' \
	'record/record.c includes "analysis/profile.h"'
plant target-includes-profiler target/train.c '#include "../profiler/base/cs.h"' \
	'target/train.c includes profiler code'
plant new-folder-without-rule profiler/gadgets/x.c '#include "base/cs.h"' \
	"folder 'gadgets' has no include rule"
# The ways round the rules that once passed (issue 24): the angle form, a path through "..",
# a unit test, and a function of another folder declared by hand.
plant angle-include profiler/analysis/stacks.c '#include <record/record.h>' \
	'analysis/stacks.c includes <record/record.h>'
plant dotdot-include profiler/sampler/sampler.c '#include "unwind/../record/record.h"' \
	'sampler/sampler.c includes "unwind/../record/record.h"'
plant dotdot-flamegraph profiler/cmd/cmd_flame.c '#include "../flamegraph/../profiler/record/record.h"' \
	'cmd/cmd_flame.c includes "../flamegraph/../profiler/record/record.h"'
plant test-includes-record profiler/analysis/stacks_test.c '#include "record/record.h"' \
	'analysis/stacks_test.c includes "record/record.h"'
plant extern-of-record profiler/analysis/report.c 'extern int record_run(const struct record_opts *opts, char **written);' \
	'analysis/report.c declares record_run, a function of record/'
plant prototype-of-format profiler/export/chrome.c 'void df_put(struct df_writer *w, uint16_t type, const void *payload, size_t len);' \
	'export/chrome.c declares df_put, a function of format/'
plant extern-in-test profiler/format/datafile_test.c 'extern int record_run(const struct record_opts *opts, char **written);' \
	'format/datafile_test.c declares record_run'
# The allow-table as the design has it: sampler/ takes of unwind/ only the snapshot struct, the
# off-CPU states and the BPF walker's rows; export/ only analysis/ and base/.
plant sampler-includes-python profiler/sampler/sampler.c '#include "unwind/python.h"' \
	'sampler/sampler.c includes "unwind/python.h"'
plant export-includes-format profiler/export/chrome.c '#include "format/merge.h"' \
	'export/chrome.c includes "format/merge.h"'

# The in-target library's imports: checked on the built library (make test builds it first
# where the CUDA toolkit is), and the check does catch an import of printf.
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
if [ -f "$LIB" ]; then
	pass "layout/inject-imports: lib/libcsampler-cupti.so was checked (rules-hold)"
elif [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	fail "layout/inject-imports: the CUDA toolkit is here but lib/libcsampler-cupti.so was not built (make test builds it)"
else
	skip "layout/inject-imports: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
fi
if command -v cc >/dev/null; then
	rm -rf tree && mkdir -p tree/lib
	(cd "$CSAMPLER_ROOT" && git ls-files -z profiler flamegraph target kernels | xargs -0 cp --parents -t "$T/tree")
	printf '#include <stdio.h>\nvoid csampler_planted(int n) { printf("%%d\\n", n); }\n' >planted.c
	if cc -shared -fPIC -o tree/lib/libcsampler-cupti.so planted.c 2>cc.err; then
		if out=$("$CHECK" "$T/tree" 2>&1); then
			fail "layout/inject-imports-planted: a library importing printf passed the check"
		elif echo "$out" | grep -q 'imports printf'; then
			pass "layout/inject-imports-planted"
		else
			fail "layout/inject-imports-planted: unexpected message: $out"
		fi
	else
		fail "layout/inject-imports-planted: cc -shared failed: $(head -n 2 cc.err)"
	fi
else
	skip "layout/inject-imports-planted: no C compiler to build the planted library"
fi
finish
