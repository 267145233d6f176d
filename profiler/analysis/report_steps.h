/* report_steps.h: report's step table (report --steps, and a short "Steps" section in the
 * plain report) and rank table (report --ranks), text and JSON, over steps.h. Kept apart from
 * report.c, which only calls in. */
#ifndef CSAMPLER_REPORT_STEPS_H
#define CSAMPLER_REPORT_STEPS_H

#include <stdio.h>

#include "analysis/profile.h"
#include "analysis/report.h"
#include "base/json.h"

/* report --steps: the step table of every process with steps (--step SPEC from
 * p->filtered.step), in o->format. Returns 0, -ENOENT when p has no steps (nothing written:
 * the caller says so), or -EIO when writing failed. */
int report_steps_write(FILE *f, const struct profile *p, const struct report_opts *o);

/* The plain report's section: text, a summary per process with steps (nothing without);
 * JSON, when p has steps, the members "steps" (the first process' object) and
 * "steps_processes" (every process') of w's open object (nothing without steps). */
void report_steps_section_text(FILE *f, const struct profile *p, const struct report_opts *o);
void report_steps_section_json(struct json_writer *w, const struct profile *p,
			       const struct report_opts *o);

/* report --ranks: per rank of a merged file, its steps, step time, GPU busy and idle time, and
 * the straggler with the functions where it spends more than the median rank. Returns 0,
 * -ENOENT when p has fewer than two ranks (nothing written), or -EIO. */
int report_ranks_write(FILE *f, const struct profile *p, const struct report_opts *o);

#endif
