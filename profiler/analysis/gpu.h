/* gpu.h: the GPU side of a loaded profile, summed up for `csampler report` (and any other reader
 * that wants figures rather than records, such as an exporter): per-kernel statistics, copies and
 * memsets by direction, utilisation per device and stream, CPU time blocked in synchronisation
 * and the work each wait was for, launch-queue latency, launch sites, NVTX range totals and the
 * inputs of a per-process verdict (launch-, sync- or GPU-bound).
 *
 * Definitions (csampler-report(1) documents them for users):
 *   device work   kernels, memcpys and memsets (activities with GPU start/end times).
 *   window        per process: first start to last end of its kernel, memcpy, memset, sync
 *                 and API-span records: the wall time of its GPU phase.
 *   busy          the union of device-work intervals (overlapping work counted once), per
 *                 (pid, device) and per (pid, device, context, stream).
 *   blocked       per thread: the union of its synchronisation records (all types except
 *                 stream-wait-event, which blocks the GPU, not the CPU) and of its API spans of
 *                 calls named *Synchronize.
 *   blame         a wait [s, e] on scope X (its stream for a stream sync; its context for a
 *                 context, event or unknown sync; the whole process for a sync API span
 *                 without a sync record) waited for the device work of X that started before e
 *                 and ended in (s, e + GPU_BLAME_SLACK_NS]: of those, the one that ended last.
 *                 A wait with none waited for nothing (the work had finished: call overhead).
 *   latency       per kernel: start - queued when CUPTI gave queued, else start - the launch
 *                 call's entry time.
 *   verdict       see gpu_verdict_of() in gpu.c and the GPU_*_PCT thresholds below. */
#ifndef CSAMPLER_GPU_H
#define CSAMPLER_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/gpu_idle.h"
#include "analysis/profile.h"
#include "analysis/stacks.h"

#define GPU_BLAME_SLACK_NS 2000   /* CPU and GPU timestamps may disagree by this much */
#define GPU_BOUND_UTIL_PCT 80.0   /* busiest device busy >= this share of the window: GPU-bound */
#define GPU_BOUND_SYNC_PCT 30.0   /* else a thread blocked >= this share: sync-bound */
#define GPU_IDLE_MIN_SAMPLES 10   /* idle samples a process needs for a verdict by their class */
#define GPU_IDLE_CAUSE_PCT 66.0   /* the cause: the most specific function under this share of
                                   * the dominant class' idle time */
#define GPU_TINY_KERNEL_NS 20000  /* median kernel and median idle gap under these: launch-bound */
#define GPU_TINY_GAP_NS 50000
#define GPU_TOP_WAITERS 5         /* launches kept with the longest queue latency */

#define GPU_ALL_STREAMS UINT32_MAX /* gpu_util.stream of a whole device's row */

struct gpu_kernel_stat {
	const char *name;       /* demangled; borrowed from the profile or owned by the analysis */
	const char *mangled;    /* the name as recorded when it was mangled, else NULL */
	uint64_t calls, total_ns, avg_ns, min_ns, max_ns;
	double percent;         /* of all kernels' GPU time */
};

/* Memcpys by direction, memsets as one row. */
struct gpu_copy_stat {
	uint32_t kind;          /* PROFILE_GPU_MEMCPY or PROFILE_GPU_MEMSET */
	uint32_t copy_kind;     /* memcpy: CUPTI's copy kind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP) */
	const char *direction;  /* "HtoD", ..., "memset" */
	uint64_t calls, bytes, total_ns;
	double gb_per_s;        /* bytes / GPU time, 1e9 bytes per second; 0 without time */
};

struct gpu_util {
	uint32_t pid, device, context, stream; /* stream GPU_ALL_STREAMS: the device's row */
	uint64_t busy_ns, work_ns;             /* union, and plain sum of the work's durations */
	uint64_t window_ns;                    /* the process' window */
	uint64_t items;
	double percent;                        /* busy / window */
};

struct gpu_sync_thread {
	uint32_t pid, tid;
	uint64_t waits, blocked_ns;            /* sync records and sync API spans, and the
						* union of their intervals */
};

/* Waits grouped by what they waited for. */
struct gpu_blame {
	const char *name;       /* the kernel, "[memcpy HtoD]", "[memset]"; NULL: nothing */
	uint64_t waits, wait_ns;
	uint64_t last_end;      /* end of the last blamed item (for ordering ties) */
};

struct gpu_waiter {             /* one kernel's launch-queue wait */
	const char *name;
	uint32_t pid, tid;
	uint32_t stack;         /* launch call path (stack id), or UINT32_MAX */
	uint64_t start, latency_ns;
	bool from_queued;       /* false: measured from the launch call's entry */
};

struct gpu_latency {
	uint64_t count, from_queued, total_ns, min_ns, max_ns, median_ns, p95_ns;
	struct gpu_waiter top[GPU_TOP_WAITERS]; /* longest first */
	size_t ntop;
};

struct gpu_site {               /* a CPU call path by the device time it launched */
	uint32_t pid, stack;    /* stack id, UINT32_MAX: work without a launch record */
	uint64_t calls, gpu_ns;
	double percent;         /* of all device work time */
};

struct gpu_range {              /* NVTX ranges of one name */
	const char *name;
	uint64_t count, total_ns, min_ns, max_ns, marks; /* marks: instantaneous markers */
};

enum gpu_bound { GPU_BOUND_NONE, GPU_BOUND_GPU, GPU_BOUND_SYNC, GPU_BOUND_LAUNCH,
		 GPU_BOUND_INPUT, GPU_BOUND_OFFCPU };

struct gpu_verdict {
	uint32_t pid;
	const char *comm;
	enum gpu_bound bound;
	uint64_t window_ns;
	uint32_t device;            /* the busiest device */
	uint64_t busy_ns;           /* its busy time */
	double util_pct;            /* busy / window */
	uint32_t blocked_tid;       /* the thread blocked longest */
	uint64_t blocked_ns;
	double sync_pct;            /* blocked / window */
	uint64_t kernels, kernel_ns;
	uint64_t median_latency_ns; /* of the process' kernels */
	const char *top_blame;      /* what the waits mostly waited for, or NULL */
	/* GPU idle time explained by the CPU (gpu_idle.h), this process' share of it */
	uint64_t idle_ns;           /* window - busy of the busiest device */
	uint64_t idle_weight;       /* idle samples (weights) */
	uint64_t class_weight[GPU_IDLE_NCLASSES];
	double class_ns[GPU_IDLE_NCLASSES], sampled_ns;
	uint32_t cause_cls;         /* the dominant class */
	const char *cause_function; /* the function the GPU waited on, or NULL without samples */
	double cause_pct;           /* its share of sampled_ns */
	uint32_t cause_stack;       /* the stack under it with most idle ns */
	const char *cause_python;   /* the innermost Python frame at or above it, or "" */
	uint64_t median_kernel_ns, median_gap_ns;
};

struct gpu_analysis {
	bool present;               /* the (filtered) profile has GPU activity */
	uint64_t kernel_ns, work_ns; /* all kernels' time; all device work's time */
	uint64_t kernels, activities;
	struct gpu_kernel_stat *kernels_by_time; size_t nkernels;   /* by total, descending */
	struct gpu_copy_stat *copies; size_t ncopies;               /* by time, descending */
	struct gpu_util *devices; size_t ndevices;                  /* by pid, device */
	struct gpu_util *streams; size_t nstreams;                  /* by pid, device, ctx, stream */
	struct gpu_sync_thread *sync_threads; size_t nsync_threads; /* by blocked, descending */
	uint64_t sync_waits, blocked_ns;                            /* over all threads */
	struct gpu_blame *blames; size_t nblames;                   /* by wait time, descending */
	struct gpu_latency latency;
	struct gpu_site *sites; size_t nsites;                      /* by GPU time, descending */
	struct gpu_range *ranges; size_t nranges;                   /* by total, descending */
	struct gpu_verdict *verdicts; size_t nverdicts;             /* by pid */
	struct gpu_idle idle;                                       /* idle time by CPU stack */
	char **owned; size_t nowned;                                /* strings made here */
};

/* Sum up p's GPU records that pass filter (NULL: all; an activity passes by its pid and by the
 * thread that launched it, or its own thread). Returns 0; out->present is false when nothing
 * passes (allocation failures abort, as cs_malloc does everywhere). The caller frees *out with
 * gpu_analysis_free(). */
int gpu_analyze(const struct profile *p, const struct stacks_filter *filter,
		struct gpu_analysis *out);
void gpu_analysis_free(struct gpu_analysis *a);

/* The copy kind's name by vendor v ("HtoD", "DtoH", ... for CUDA), "unknown" for 0, or
 * "kind N" in buf. */
const char *gpu_copy_direction(const struct gpu_vendor *v, uint32_t copy_kind, char *buf,
			       size_t len);
/* "GPU-bound", "sync-bound", "launch-bound", "input-bound", "off-CPU-bound", "none". */
const char *gpu_bound_name(enum gpu_bound b);

#endif
