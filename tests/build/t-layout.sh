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
finish
