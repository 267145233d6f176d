/* opts_filter.h: the options every reader of data files shares (report, folded, flame, diff,
 * export): --pid, --tid, --comm, --rank, --time, --idle, --no-idle, --step and --steps, as one
 * table to include in a command's own (OPTS_INCLUDE_ROW(opts_filter_options, &filter)), which
 * fills a struct profile_filter of analysis/filter.h (the engine that applies it). */
#ifndef CSAMPLER_OPTS_FILTER_H
#define CSAMPLER_OPTS_FILTER_H

#include "cmd/opts.h"
#include "analysis/filter.h"

extern const struct opts_option opts_filter_options[];

/* Set the filter option named name ("pid", "time", ...; NULL value for --idle and --no-idle)
 * in f, as if given to command cmd. Returns 0, 1 when name is none of them, or -EINVAL after
 * one line naming cmd. */
int opts_filter_set(struct profile_filter *f, const char *cmd, const char *name,
		    const char *value);

#endif
