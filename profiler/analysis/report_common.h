/* report_common.h: what report.c shares with its two renderers, report_text.c and
 * report_json.c (private to analysis/report*.c). */
#ifndef CSAMPLER_REPORT_COMMON_H
#define CSAMPLER_REPORT_COMMON_H

#include "analysis/report.h"

double report_pct(uint64_t part, uint64_t whole);
double report_duration_s(const struct profile *p);
/* The requested sampling rate from the header, or 0 when unknown. */
double report_rate_hz(const struct profile *p);
/* The profiled command ("target"), or csampler's own command line when that is all there is. */
const char *report_command(const struct profile *p);
/* How many of n rows a table shows under o->limit. */
size_t report_rows(size_t n, const struct report_opts *o);
/* A library's file name, "(unknown)" for an empty path. */
const char *report_library_name(const char *path);
/* Whether the file was recorded with --idle (its header says so). */
bool report_idle_recorded(const struct profile *p);

/* The two renderers (report_write picks by o->format). */
void report_write_text(FILE *f, const struct profile *p, const struct stacks_report *r,
		       const struct report_opts *o);
void report_write_json(FILE *f, const struct profile *p, const struct stacks_report *r,
		       const struct report_opts *o);

#endif
