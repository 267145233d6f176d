/* fold.h: a stream of weighted call stacks, root first: the common input of `folded`, `flame`
 * and `diff`, whether it comes from a data file (stacks.c) or from folded text
 * (flamegraph/ parser). Folded text is "root;...;leaf COUNT" with the frame annotations
 * "_[k]" kernel, "_[i]" inlined, "_[j]" JIT, as perf's stackcollapse and inferno write them. */
#ifndef CSAMPLER_FOLD_H
#define CSAMPLER_FOLD_H

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
 * weight). Return 0 to go on, or a negative errno to stop the walk with that value. */
typedef int (*fold_fn)(void *arg, const struct fold_frame *frames, size_t nframes,
		       uint64_t count);

struct fold_opts {
	int per_thread;      /* root frame "comm-tid" instead of the process name */
	int time_order;      /* one call per sample in time order, no merging (flamechart) */
	int64_t pid, tid;    /* filters; -1 = all */
	const char *comm;    /* filter on thread name; NULL = all */
};
#define FOLD_OPTS_DEFAULT { .per_thread = 0, .time_order = 0, .pid = -1, .tid = -1, .comm = NULL }

/* Walk a loaded profile's samples as merged stacks (or, with time_order, sample by sample).
 * The root frame is the process name (comm of the process), or "comm-tid" with per_thread. */
int fold_profile(const struct profile *p, const struct fold_opts *opts, fold_fn fn, void *arg);

/* Append one frame to b in folded-text form, with its annotation suffix. */
struct cs_buf;
void fold_format_frame(struct cs_buf *b, const struct fold_frame *f);

#endif
