/* filter.h: the filters every reader of data files shares (report, folded, flame, diff, export):
 * --pid, --tid, --comm, --rank, --time, --step / --steps, and --idle / --no-idle (files of record --idle: only the
 * samples of threads off the CPU, PROFILE_SAMPLE_OFFCPU, or only the others). The options
 * themselves are one table of the commands (cmd/opts_filter.c); here are the --time and
 * --steps spec parsers and one profile_filter_apply() that narrows a loaded profile in place,
 * so that every engine downstream (stacks, the GPU analysis and folding, the exporters) sees
 * only what was kept.
 *
 * --time takes perf's syntax, in seconds from the start of the recording:
 *   START,END      either side may be empty ("2.5," from 2.5 s to the end, ",1" the first
 *                  second); "START" alone is "START,"
 *   P%/N           the N-th slice of P percent of the recording (10%/2: from 10% to 20%)
 *   A%-B%          from A to B percent of the recording
 * Percent items may be listed with commas ("10%/1,10%/3", "0%-10%,50%-60%"): a sample passes
 * when it falls in any of them. Percent slices are half-open [A, B) (the one that reaches 100%
 * keeps the last instant), seconds ranges are closed.
 *
 * --steps A-B (1-based; "A" alone, "A-" to the end) keeps, per process, the time window
 * [start of step A, end of step B) of that process' steps (steps.h: NVTX ranges named step or
 * iteration, or --step SPEC); a process without steps of its own takes its nearest ancestor's,
 * or the only process' with steps. With --time, both must hold.
 *
 * Samples pass by their thread (pid, tid, its name or its process' name, the process' rank)
 * and their time. GPU activities pass by their process, the thread that launched them (or
 * their own, for NVTX ranges and API spans) and their start time; a launch passes by its
 * thread and time, and is also kept when an activity that passed refers to it (a kernel run
 * inside the window keeps the stack that launched it just before). */
#ifndef CSAMPLER_FILTER_H
#define CSAMPLER_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"

#define PROFILE_FILTER_MAX_RANGES 32

struct profile_time_range {
	double lo, hi;      /* seconds from the start, or percent of the recording */
	bool lo_set, hi_set;
	bool pct;
};

/* --idle / --no-idle */
enum profile_filter_idle {
	PROFILE_FILTER_IDLE_ALL = 0,    /* on-CPU and off-CPU samples */
	PROFILE_FILTER_IDLE_OFFCPU,     /* --idle: samples of threads off the CPU only */
	PROFILE_FILTER_IDLE_ONCPU,      /* --no-idle: samples of running threads only */
};

struct profile_filter {
	int64_t pid, tid;   /* -1 = all */
	int idle;           /* enum profile_filter_idle */
	int64_t rank;       /* -1 = all */
	const char *comm;   /* NULL = all; matches a thread's name or its process' name */
	const char *time;   /* the --time text, NULL = the whole recording */
	struct profile_time_range ranges[PROFILE_FILTER_MAX_RANGES];
	size_t nranges;
	const char *step;   /* --step SPEC: an NVTX range name or a function; NULL = automatic */
	const char *steps;  /* the --steps text, NULL = every step */
	uint32_t steps_first, steps_last; /* 1-based; steps_last UINT32_MAX = to the end */
};
#define PROFILE_FILTER_ALL { .pid = -1, .tid = -1, .rank = -1 }

/* Parse a --time value into f->ranges. Returns 0, or -EINVAL after one line naming cmd. */
int profile_filter_parse_time(struct profile_filter *f, const char *cmd, const char *value);

/* Parse a --steps value into f. Returns 0, or -EINVAL after one line naming cmd. */
int profile_filter_parse_steps(struct profile_filter *f, const char *cmd, const char *value);

/* True when f keeps less than everything. */
bool profile_filter_active(const struct profile_filter *f);

/* Narrow p in place to what f keeps: samples, threads and processes, GPU launches, activities,
 * processes and notes; nsamples is recounted, start_ns/end_ns become the time window (within
 * the recording) and p->filtered says what was kept and how many samples there were. name is the file, for a warning when nothing is left. Returns 0, or -EINVAL after one line when
 * --steps asks for steps the file does not have. */
int profile_filter_apply(struct profile *p, const struct profile_filter *f, const char *name);

/* profile_load() then profile_filter_apply() (f NULL or inactive: load only). */
int profile_load_filtered(const char *path, const struct profile_filter *f,
			  struct profile **out);

#endif
