/* export.h: `csampler export`, a loaded profile written in another tool's format. Each format
 * is one row of export_formats[] (export.c): its name for --format, a one-line description and
 * its writer. The Chrome trace-event timeline is chrome.c, speedscope's format speedscope.c,
 * pprof's profile.proto pprof.c. */
#ifndef CSAMPLER_EXPORT_H
#define CSAMPLER_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/profile.h"

/* A writer prints the whole export of p to f. It returns 0, or -EIO when writing failed
 * (the caller reports it with the file name), or another -errno after printing one line. */
struct export_format {
	const char *name;
	const char *description;
	int (*write)(FILE *f, const struct profile *p);
};

extern const struct export_format export_formats[];
extern const size_t export_nformats;

/* The row named name, or NULL. */
const struct export_format *export_find(const char *name);

/* The Chrome trace-event JSON timeline (chrome.c). */
int export_chrome_write(FILE *f, const struct profile *p);

/* speedscope's JSON file format, one sampled profile per thread (speedscope.c). */
int export_speedscope_write(FILE *f, const struct profile *p);
/* The pprof profile.proto, gzip-compressed (pprof.c). */
int export_pprof_write(FILE *f, const struct profile *p);
/* The sampling period in ns from the header's rate_hz, else 1 ms (speedscope.c). */
uint64_t export_period_ns(const struct profile *p);

#endif
