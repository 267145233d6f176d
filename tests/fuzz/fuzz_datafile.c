/* fuzz_datafile.c: libFuzzer harness for the data-file reader. Each input is a whole data
 * file, read from memory by profile_load_mem() (df_read's chunk, CRC, zstd and record checks,
 * then profile_load's id validation and model building); a profile that loads is then walked
 * by what `report` (with its GPU tables), `folded` and `flame` do with it, since those trust
 * the loader's checks.
 * Built and run by `make fuzz` (tests/fuzz/build.mk). */
#include "base/cs.h"
#include "analysis/fold.h"
#include "analysis/gpu.h"
#include "analysis/profile.h"
#include "analysis/report.h"
#include "analysis/stacks.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static FILE *fuzz_sink; /* output goes to /dev/null: only crashes and sanitizer reports count */

static int fuzz_count_fold(void *arg, const struct fold_frame *frames, size_t n, uint64_t count)
{
	*(uint64_t *)arg += n + count;
	return 0;
}

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
	struct profile *p = NULL;
	if (profile_load_mem(data, size, "fuzz.data", &p))
		return 0;

	struct stacks_report r;
	struct stacks_filter all = STACKS_FILTER_ALL;
	if (!stacks_aggregate(p, &all, &r)) {
		struct report_opts ro = REPORT_OPTS_DEFAULT;
		struct gpu_analysis g = { 0 };
		stacks_sort_functions(&r, STACKS_SORT_TOTAL);
		if (p->ngpu_activities) { /* as cmd_report.c does */
			gpu_analyze(p, &all, &g);
			ro.gpu = &g;
		}
		report_write(fuzz_sink, p, &r, &ro);
		ro.format = REPORT_JSON;
		report_write(fuzz_sink, p, &r, &ro);
		gpu_analysis_free(&g);
		stacks_report_free(&r);
	}
	struct fold_opts fo = FOLD_OPTS_DEFAULT;
	fo.per_thread = 1;
	fold_write_folded(fuzz_sink, p, &fo);
	uint64_t sum = 0;
	fo.time_order = 1;
	fold_profile(p, &fo, fuzz_count_fold, &sum);
	profile_free(p);
	return 0;
}
