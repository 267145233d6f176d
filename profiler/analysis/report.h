/* report.h: `csampler report`'s output: an aggregated profile (stacks.h) written as text for
 * people or as JSON for programs. cmd_report.c parses the options, stacks.c does the counting,
 * this module only formats. */
#ifndef CSAMPLER_REPORT_H
#define CSAMPLER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/gpu.h"
#include "analysis/profile.h"
#include "analysis/stacks.h"

enum report_format { REPORT_TEXT, REPORT_JSON };

struct report_opts {
	const char *input;                 /* the data file's name, shown in the header */
	enum stacks_sort sort;             /* order of the function table */
	size_t limit;                      /* rows per table (functions, threads); 0 = all */
	enum report_format format;
	struct stacks_filter filter;       /* shown in the header; already applied to the report */
	const struct gpu_analysis *gpu;    /* the GPU tables (gpu.h), or NULL for none */
	bool python_only;                  /* the stacks were cut to their Python frames
					    * (stacks_python_view); shown in the header */
	const char *compare;               /* --compare BASE: compare input against BASE
					    * (cmd_compare.c, analysis/compare.h) */
};
#define REPORT_DEFAULT_LIMIT 20
#define REPORT_OPTS_DEFAULT { .input = "csampler.data", .sort = STACKS_SORT_SELF,            \
			      .limit = REPORT_DEFAULT_LIMIT, .format = REPORT_TEXT,             \
			      .filter = STACKS_FILTER_ALL }

/* Write r (aggregated from p, its functions already sorted by o->sort) to f in o->format,
 * with the Python function table when r has Python frames (text: after the top functions;
 * JSON: "python", null without them), then the GPU tables of o->gpu when it is set and present (text: after the CPU tables;
 * JSON: the object under "gpu", null without GPU records).
 * Returns 0, or -EIO when writing to f failed (nothing is printed about it here). */
int report_write(FILE *f, const struct profile *p, const struct stacks_report *r,
		 const struct report_opts *o);

/* perf's marker of where a function runs: "[k]" kernel, "[j]" JIT, "[i]" inlined, "[.]" user,
 * and "[o]" for record --idle's off-CPU leaves (PROFILE_FRAME_* flags). */
const char *report_frame_marker(uint32_t flags);

#endif
