/* steps.h: training steps (iterations) of each process, and what each one cost. A step comes
 * from one of two sources:
 *   nvtx      NVTX ranges (PROFILE_GPU_MARKER with end != 0) of one name: each range is one
 *             step, [start, end). Without --step, ranges named "step" or "iteration" (any
 *             case, or those words followed by a space, digit, '_' or '#': "step 12", "Step#3")
 *   function  a function (native, or a Python frame by its function name) whose calls on the
 *             main thread (tid == pid) delimit steps: a step starts at the first event of the
 *             main thread (sample, or GPU launch record: its stack and time are exact) with the
 *             function on its stack after one without it, and lasts until the next step's
 *             start; the last one ends at the main thread's last event or the process' last GPU
 *             activity end. Back-to-back calls with no event outside the function merge.
 *
 * steps_measure() then gives each step its wall time, GPU busy share, GPU idle time and its top
 * CPU cause (gpu_idle.h), CPU time split into Python, native and off-CPU, and launches; and the
 * process' p50/p90/max, slowest steps and warm-up steps. Every per-step figure is a binary
 * search into time-sorted arrays built once: O((records + steps) log records).
 *
 * Used by the readers' --step/--steps filter (filter.c), report --steps and report --ranks
 * (report_steps.c). */
#ifndef CSAMPLER_STEPS_H
#define CSAMPLER_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/gpu_idle.h"
#include "analysis/profile.h"

enum steps_source { STEPS_NONE = 0, STEPS_NVTX, STEPS_FUNCTION };

struct steps_step {
	uint64_t start, end;         /* CLOCK_MONOTONIC ns, [start, end) */
};

/* The steps of one process: steps[first .. first + n) of struct steps. */
struct steps_proc {
	uint32_t pid;
	size_t first, n;
};

struct steps {
	int source;                  /* enum steps_source; STEPS_NONE: no steps found */
	char name[256];              /* the range name ("step*" when numbered names differ) or
				      * the function */
	struct steps_step *steps; size_t nsteps; /* by process (pid order), then by start */
	struct steps_proc *procs; size_t nprocs;  /* processes with at least one step */
};

/* Find the steps of every process of p. spec: the --step value (an NVTX range name when any
 * range has that name, else a function), or NULL to look for ranges named step/iteration.
 * Returns 0 (out->source STEPS_NONE when nothing was found); free with steps_free(). */
int steps_detect(const struct profile *p, const char *spec, struct steps *out);
void steps_free(struct steps *s);

/* The steps of pid, or NULL. */
const struct steps_proc *steps_of(const struct steps *s, uint32_t pid);

/* Whether an NVTX range name marks steps without --step ("step", "Iteration 3", "step#2"). */
bool steps_auto_name(const char *name);

/* Parse a --steps value: "A-B", "A" or "A-", 1-based (first step is 1). *last is UINT32_MAX
 * for "A-" (to the end). Returns 0, or -EINVAL (nothing printed). */
int steps_parse_range(const char *text, uint32_t *first, uint32_t *last);

/* One step's figures. */
struct steps_row {
	uint32_t step;               /* 1-based, counted from number_from */
	uint64_t start, wall_ns;     /* start: CLOCK_MONOTONIC ns */
	uint64_t busy_ns;            /* union of the process' kernels, copies, memsets inside */
	double gpu_busy_pct;         /* busy_ns over wall_ns */
	uint64_t gpu_idle_ns;        /* gpu_idle_between() over the step */
	uint32_t idle_stack;         /* its top stack, GPU_IDLE_NO_STACK when none */
	uint64_t cpu_ns, python_ns, native_ns, offcpu_ns; /* all threads of the process */
	uint64_t launches;           /* GPU launch records of the process inside */
	bool warmup;
};

/* One process' table. */
struct steps_table {
	uint32_t pid;
	struct steps_row *rows; size_t nrows;
	uint64_t p50_ns, p90_ns, max_ns; /* of wall_ns, nearest rank */
	uint32_t slowest[3]; size_t nslowest; /* step numbers, slowest first (not warm-up) */
	size_t nwarmup;              /* the leading rows flagged warm-up */
	bool gpu;                    /* the process has GPU device work */
};

/* Measure the steps of every process of s over p. period_ns: CPU ns per sample weight (1e9 /
 * rate_hz; 0 gives CPU times of 0). g: the idle analysis of p (gpu_idle_analyze(p, -1)), or
 * NULL. number_from: the number of the first step (1, or the first step a --steps filter
 * kept). Fills out[s->nprocs] in s->procs order. Returns 0; free with steps_tables_free(). */
int steps_measure(const struct profile *p, const struct steps *s, const struct gpu_idle *g,
		  uint64_t period_ns, uint32_t number_from, struct steps_table **out);
void steps_tables_free(struct steps_table *t, size_t n);

/* Nearest-rank percentile q (0..100) of v[0..n) (sorted in place); 0 when n is 0. */
uint64_t steps_percentile(uint64_t *v, size_t n, double q);
/* Flag the leading rows whose wall time is more than 1.5x the median of the rows after them
 * (at least 3 rows; at most half of them flagged). Returns how many were flagged. */
size_t steps_flag_warmup(struct steps_row *rows, size_t n);

#endif
