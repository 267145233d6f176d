/* merge.h: `csampler merge`: several data files (the ranks of a distributed run, on one host or
 * many) joined into one that every reader takes as a single recording.
 *
 *   - Every process stays apart and is labelled: each pid and tid of each input gets a
 *     DF_TASK_LABEL record with its rank (the input's header "rank"), host (its "hostname"),
 *     input index and original id. A pid or tid already used by an earlier input (two hosts,
 *     or containers, reuse pids) is given a free id from DF_TASK_REMAP_BASE (2^22, above any
 *     Linux pid) up; its label keeps the original. Inputs that were merged files keep their
 *     labels.
 *   - Times: each host's CLOCK_MONOTONIC is brought onto the first input's by the difference
 *     of the wall clock (start_realtime_ns) and the monotonic clock (start_monotonic_ns) at
 *     each recording's start; inputs from one host keep their times as they are. --time
 *     windows of a merged file are therefore in the first input's time, hosts aligned to the
 *     precision of their wall clocks.
 *   - Strings, modules, locations and stacks are renumbered into one table each.
 *   - The header is the first input's, with start_monotonic_ns/start_realtime_ns the earliest
 *     start, hostname the hosts joined by ',', no rank, and "merged" (the number of inputs) and
 *     "merge.input.N" (each input's path, host and rank) added.
 *
 * Inputs must be complete: a truncated or corrupt one is refused before the output is created,
 * and an output whose writing fails is removed. */
#ifndef CSAMPLER_MERGE_H
#define CSAMPLER_MERGE_H

#include <stdbool.h>
#include <stddef.h>

/* Merge inputs[0..ninputs) into output (df_writer_open: an existing file becomes .old).
 * cmdline is stored in the header ("merge_cmdline"). Returns 0, or -errno after printing one
 * line. */
int df_merge(const char *output, const char *const *inputs, size_t ninputs, bool compress,
	     const char *cmdline);

#endif
