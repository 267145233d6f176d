/* report.c: `csampler report`'s entry (report_write), which hands the computed report to one of
 * its two renderers: report_text.c writes the text report, report_json.c the JSON one (as perf's
 * ui/ renders what util/ computes); what they share is report_common.c. No counting happens
 * here: stacks.c and gpu.c compute. */
#include "analysis/report_common.h"

#include <errno.h>

int report_write(FILE *f, const struct profile *p, const struct stacks_report *r,
		 const struct report_opts *o)
{
	if (o->format == REPORT_JSON)
		report_write_json(f, p, r, o);
	else
		report_write_text(f, p, r, o);
	return ferror(f) ? -EIO : 0;
}
