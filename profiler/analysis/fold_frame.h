/* fold_frame.h: the vocabulary of folded stacks, shared by the CPU fold (stacks.c), the GPU
 * fold (fold_gpu.c) and their readers: a frame, the callback that receives a stack, the
 * options, and the frame helpers (fold_frame.c). The dispatcher over the sources is fold.h. */
#ifndef CSAMPLER_FOLD_FRAME_H
#define CSAMPLER_FOLD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"

struct fold_frame {
	const char *name;    /* never NULL; without any "_[k]"-style suffix */
	const char *module;  /* basename of the ELF file, or NULL when unknown */
	const char *file;    /* source file, or NULL */
	uint32_t line;       /* 0 when unknown */
	uint32_t flags;      /* PROFILE_FRAME_* */
};

/* Called once per stack with frames[0] the root. count is the number of samples (or the
 * weight) for CPU stacks, nanoseconds for GPU and FOLD_BOTH stacks. calls is the number of GPU
 * activities merged into the stack (0 for CPU stacks). Return 0 to go on, or a negative errno
 * to stop the walk with that value. */
typedef int (*fold_fn)(void *arg, const struct fold_frame *frames, size_t nframes,
		       uint64_t count, uint64_t calls);

/* What the stacks weigh. */
enum fold_source {
	FOLD_CPU = 0,        /* CPU samples, counted in samples */
	FOLD_GPU = 1,        /* GPU activities under their launch stacks, in ns (fold_gpu.c) */
	FOLD_BOTH = 2,       /* a "CPU" root (samples times the sampling period) and a "GPU"
			      * root, both in ns */
	FOLD_GPU_IDLE = 3,   /* only the CPU samples that fell in GPU idle time (gpu_idle.h),
			      * counted in samples; calls carries the idle ns they explain */
};

struct fold_opts {
	int per_thread;      /* root frame "comm-tid" instead of the process name */
	int time_order;      /* one call per sample in time order, no merging (flamechart) */
	int64_t pid, tid;    /* filters; -1 = all */
	const char *comm;    /* filter on thread name; NULL = all */
	int source;          /* enum fold_source */
};
#define FOLD_OPTS_DEFAULT { .per_thread = 0, .time_order = 0, .pid = -1, .tid = -1, .comm = NULL, \
			    .source = FOLD_CPU }

/* The time one CPU sample of weight 1 stands for: 1e9 / rate_hz ns (the header's sampling
 * frequency) rounded to the nanosecond, or 0 when the file does not say. */
uint64_t fold_cpu_period_ns(const struct profile *p);

/* The fold_frame of profile frame id fid (name, module basename, file, line, flags). */
void fold_frame_of(const struct profile *p, uint32_t fid, struct fold_frame *out);

/* Append one frame to b in folded-text form, with its annotation suffix. */
struct cs_buf;
void fold_format_frame(struct cs_buf *b, const struct fold_frame *f);
/* Append a stack's frames[0, n) to b, root first, each as fold_format_frame writes it, joined
 * by ';': the stack part of a folded line. */
void fold_format_stack(struct cs_buf *b, const struct fold_frame *frames, size_t n);

#endif
