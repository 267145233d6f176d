/* fuzz_folded.c: libFuzzer harness for the folded-stack text reader of `csampler flame` and
 * `diff` (flame_folded.c through flame_input.c), fed from memory with fmemopen; text that
 * reads is then merged, laid out and written as SVG or as the --dump-layout text, as
 * `csampler flame` does. The input's length picks one of four option sets (plain, flame
 * chart, reversed icicle, layout dump) so that every mutation path reaches them all.
 * Built and run by `make fuzz` (tests/fuzz/build.mk). */
#include "base/cs.h"
#include "../../flamegraph/flame.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *fuzz_sink; /* output goes to /dev/null: only crashes and sanitizer reports count */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_sink = fopen("/dev/null", "w");
	cs_quiet = 1;
	return fuzz_sink ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flame_opts o;
	struct flame_tree t;
	struct flame_layout l = { 0 };

	if (!size)
		return 0; /* fmemopen refuses an empty buffer */
	flame_opts_init(&o);
	switch (size % 4) {
	case 1: o.flamechart = true; break;
	case 2: o.reverse = o.inverted = true; break;
	case 3: o.dump_layout = true; o.minwidth = 0; break;
	default: break;
	}
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	flame_tree_init(&t, o.flamechart, o.reverse);
	int err = flame_input_read_folded(&t, f, "fuzz input", FLAME_SERIES_MAIN, &o, true);
	fclose(f);
	if (!err && t.total[FLAME_SERIES_MAIN] > 0) {
		flame_tree_finish(&t);
		if (!flame_layout_build(&t, &o, &l)) {
			if (o.dump_layout)
				flame_layout_dump(fuzz_sink, &t, &l, &o);
			else
				flame_svg_write(fuzz_sink, &t, &l, &o);
		}
	}
	flame_layout_free(&l);
	flame_tree_free(&t);
	free(o.inputs);
	return 0;
}
