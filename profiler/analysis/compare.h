/* compare.h: `csampler report --compare BASE NEW`, two recordings side by side. Each function
 * (matched by name and library basename) and each thread (matched by name and order of
 * appearance, as thread ids differ between runs) gets its share of the samples in BASE and in
 * NEW and the change, NEW's share minus BASE's in points of each recording's own total: the
 * same change `csampler diff` colours a frame by (flamegraph/flame.js). Beside it, the CPU
 * time the function took per second of the recording (samples x sampling period / duration),
 * so that a function that got faster shows as less time even where the shares hardly move.
 * Rows are sorted by the size of the change in share. When both recordings have steps (NVTX
 * ranges named step, or --step), their step times p50/p90/mean come first, with the change.
 *
 * The noise floor: a share of n samples taken at random has a binomial standard error
 * sqrt(s(1-s)/n); the change's is the root of the sum of both squares. A change smaller than
 * twice that is marked as within the noise. Samples of a periodic workload are not quite
 * independent, so this is a lower bound of the run-to-run noise, stated as such. */
#ifndef CSAMPLER_COMPARE_H
#define CSAMPLER_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/profile.h"
#include "analysis/stacks.h"

/* One recording: its aggregation (the caller's, filtered as it wished) and what normalises
 * it. */
struct compare_side {
	const char *input;             /* file name, for the header */
	const struct profile *p;
	const struct stacks_report *r;
	const char *step;              /* --step SPEC for both, or NULL (steps.h) */
};

/* One side's steps (steps.h), of its first process with steps: the step time a change to the
 * input pipeline or the model should move. */
struct compare_steps {
	size_t n;                      /* 0: no steps */
	uint64_t p50_ns, p90_ns, mean_ns;
	char source[280];              /* "nvtx:step", "function:load_batch" */
};

struct compare_row {
	const char *name;              /* function name, or thread label ("comm", "comm #2") */
	const char *library;           /* functions: library basename, "" unknown; threads: NULL */
	uint32_t flags;                /* functions: PROFILE_FRAME_* of either side */
	uint64_t base, new;            /* samples on the basis (self or total; threads: all) */
	double base_pct, new_pct;      /* shares, percent of each side's samples */
	double change_pct;             /* new_pct - base_pct, points */
	double noise_pct;              /* twice the change's binomial standard error, points */
	double base_ms, new_ms;        /* CPU milliseconds per second of recording */
	double change_ms;              /* new_ms - base_ms */
};

struct compare_result {
	struct compare_side base, new;
	enum stacks_sort basis;        /* functions compared on self or total samples */
	double base_s, new_s;          /* durations, seconds */
	uint64_t base_period_ns, new_period_ns; /* time of one sample; 0 when unknown */
	struct compare_row *functions; /* sorted by |change_pct|, largest first */
	size_t nfunctions;
	struct compare_row *threads;   /* likewise */
	size_t nthreads;
	struct compare_steps base_steps, new_steps;
};

/* Match base and new's functions and threads into *out. Returns 0 (the caller frees with
 * compare_free), or -ENODATA when a side has no samples. */
int compare_build(const struct compare_side *base, const struct compare_side *new,
		  enum stacks_sort basis, struct compare_result *out);
void compare_free(struct compare_result *c);

/* Write c as text (json false) or JSON, at most limit rows per table (0: all). Returns 0, or
 * -EIO when writing failed. */
int compare_write(FILE *f, const struct compare_result *c, size_t limit, bool json);

#endif
