/* fold.h: a stream of weighted call stacks, root first: the common input of `folded`, `flame`
 * and `diff`, whether it comes from a data file (fold.c over stacks.c and fold_gpu.c) or from
 * folded text (flamegraph/ parser). Folded text is "root;...;leaf COUNT" with the frame annotations
 * "_[k]" kernel, "_[i]" inlined, "_[j]" JIT, as perf's stackcollapse and inferno write them. */
#ifndef CSAMPLER_FOLD_H
#define CSAMPLER_FOLD_H

#include <stdio.h>

#include "analysis/fold_frame.h"

/* Walk a loaded profile's stacks as opts->source says (NULL opts: FOLD_OPTS_DEFAULT), merged
 * (or, with time_order, one by one). The root frame is the process name (comm of the
 * process), or "comm-tid" with per_thread.
 *   FOLD_CPU, FOLD_GPU_IDLE: the CPU samples (stacks_fold, stacks.h);
 *   FOLD_GPU: each kernel, copy, memset and sync weighs its duration in ns and sits on the CPU
 *     stack of the API call that launched it, below the process (or thread) root and the NVTX
 *     ranges open on the launching thread at that moment ("[nvtx] NAME", outermost first),
 *     with a leaf "[gpu] KERNEL", "[memcpy HtoD]" (DtoH, DtoD, ...), "[memset]" or "[sync]";
 *     activities without a launch stack go under "[no launch stack]" (fold_gpu.h);
 *   FOLD_BOTH: first the CPU samples under a "CPU" root, each weighing fold_cpu_period_ns(),
 *     then the GPU under a "GPU" root.
 * Returns 0, the callback's error, -EINVAL for a bad filter, or -ENODATA for FOLD_BOTH when
 * the sampling rate is unknown. */
int fold_profile(const struct profile *p, const struct fold_opts *opts, fold_fn fn, void *arg);

/* Write p's stacks that pass opts as folded text ("root;...;leaf COUNT\n"): lines sorted
 * bytewise, identical lines merged. Returns 0, -EINVAL for a bad filter, -ENODATA as
 * fold_profile, or -EIO when writing to f failed (none is printed). */
int fold_write_folded(FILE *f, const struct profile *p, const struct fold_opts *opts);

#endif
