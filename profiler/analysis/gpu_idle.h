/* gpu_idle.h: GPU idle time explained by the CPU. Per (process, device), the idle intervals are
 * the process' GPU window (gpu.h) minus the union of its kernels, copies and memsets: the same
 * intervals as report's utilisation table. Each CPU sample of that process (any thread, on-CPU,
 * and off-CPU in files of record --idle) that falls inside an idle interval is an idle sample;
 * the interval's length is shared evenly among the idle samples in it, by weight, so the idle
 * ns of all stacks add up to the idle time that samples explain.
 *
 * Each idle sample has a class, by what its thread was doing:
 *   sync     inside an API span of its own thread of a call named *Synchronize (or a sync
 *            record of its thread): waiting for the GPU that has nothing left to do
 *   launch   inside any other API span of its own thread: launching, copying, allocating
 *   offcpu   off the CPU (PROFILE_SAMPLE_OFFCPU) outside API calls: the GIL, a lock, I/O
 *   cpu      on the CPU in code that launches nothing: input pipeline, preprocessing, Python
 *
 * Used by report (the "GPU idle time by CPU stack" table and the verdict), folded/flame
 * --gpu-idle, the Chrome export's idle track and the step and rank tables (steps.h). */
#ifndef CSAMPLER_GPU_IDLE_H
#define CSAMPLER_GPU_IDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"

enum gpu_idle_class {
	GPU_IDLE_CPU = 0,
	GPU_IDLE_LAUNCH,
	GPU_IDLE_SYNC,
	GPU_IDLE_OFFCPU,
	GPU_IDLE_NCLASSES,
};

#define GPU_IDLE_NO_STACK UINT32_MAX

/* The span of one process' GPU work, from its first start to its last end: the window that
 * gpu.c's utilisation and verdicts and this file's idle time are measured against. */
struct gpu_window {
	uint32_t pid;
	uint64_t first, last;    /* UINT64_MAX and 0 while empty */
};

/* The element of (*arr)[0..*n) (elements of elem bytes that begin with a struct gpu_window)
 * whose window is pid's; appended, zeroed and with an empty window, when there is none. arr
 * is the address of the array pointer, grown through cs_grow. */
void *gpu_window_of(void *arr, size_t *n, size_t *cap, size_t elem, uint32_t pid);
/* Widen w to hold [start, end]. */
void gpu_window_widen(struct gpu_window *w, uint64_t start, uint64_t end);
/* last - first, 0 for an empty window. */
uint64_t gpu_window_ns(const struct gpu_window *w);

struct gpu_idle_interval {
	uint32_t pid, device;
	uint64_t start, end;     /* CLOCK_MONOTONIC ns, end > start */
	uint64_t samples;        /* weight of the idle samples inside */
	uint32_t top_stack;      /* the stack with most weight inside, or GPU_IDLE_NO_STACK */
};

/* One idle sample (an index into p->samples) in one interval. A sample inside the idle
 * intervals of two devices of its process appears once per device. */
struct gpu_idle_sample {
	uint32_t sample;         /* index into p->samples */
	uint32_t interval;       /* index into intervals */
	uint32_t cls;            /* enum gpu_idle_class */
	double idle_ns;          /* its share of the interval */
};

/* Idle samples grouped by (pid, stack, class). */
struct gpu_idle_stack {
	uint32_t pid, stack, cls;
	uint64_t samples;        /* weights */
	double idle_ns;
	double percent;          /* of all idle ns explained by samples (sampled_ns) */
};

struct gpu_idle {
	struct gpu_idle_interval *intervals; size_t nintervals; /* by start (all processes) */
	struct gpu_idle_sample *samples; size_t nsamples;       /* by sample time */
	struct gpu_idle_stack *stacks; size_t nstacks;          /* by idle_ns, descending */
	uint64_t idle_ns;        /* the intervals' total */
	uint64_t longest_ns;     /* the longest interval (gpu_idle_between's search bound) */
	uint64_t sampled_ns;     /* of which in intervals holding at least one sample */
	uint64_t weight;         /* weights of the idle samples */
	uint64_t class_weight[GPU_IDLE_NCLASSES];
	double class_ns[GPU_IDLE_NCLASSES];
};

/* Find p's idle intervals and idle samples (p as filtered by profile_filter_apply; pid -1:
 * every process). Returns 0 (an empty result when p has no device work); the caller frees
 * with gpu_idle_free(). */
int gpu_idle_analyze(const struct profile *p, int64_t pid, struct gpu_idle *out);
void gpu_idle_free(struct gpu_idle *g);

/* "cpu", "launch", "sync", "offcpu". */
const char *gpu_idle_class_name(uint32_t cls);

/* What a stack is, for a verdict or a table cell: its leaf function (the wait of an off-CPU
 * leaf is skipped for the function under it) and its innermost Python frame ("fn (file.py:12)"
 * written into python, "" when none). Returns the leaf's name ("[no stack]" for none). */
const char *gpu_idle_leaf(const struct profile *p, uint32_t stack, char *python, size_t len);

/* Idle ns of the intervals of pid (-1: all) overlapping [t0, t1), clipped to it, and the stack
 * with the most idle ns among the idle samples in [t0, t1) (GPU_IDLE_NO_STACK when none).
 * O(log n + k) over the k intervals and samples inside: the step table calls it per step. */
uint64_t gpu_idle_between(const struct profile *p, const struct gpu_idle *g, int64_t pid,
			  uint64_t t0, uint64_t t1, uint32_t *top_stack);

#endif
