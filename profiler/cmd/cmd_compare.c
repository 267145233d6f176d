/* cmd_compare.c: `csampler report --compare BASE [NEW]`: load both recordings, aggregate each
 * with report's filter and view, and print the comparison (analysis/compare.h). Reached from
 * cmd_report.c, which parses the options. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/compare.h"
#include "analysis/filter.h"
#include "analysis/profile.h"
#include "analysis/report.h"
#include "analysis/stacks.h"

#include <errno.h>
#include <string.h>

struct compare_load {
	struct profile *p;
	struct profile view;      /* --python-only */
	struct stacks_report r;
};

/* Load and aggregate path into *l. Returns 0, or -errno after one line. */
static int compare_load(const struct report_opts *o, const struct profile_filter *filter,
			const char *path, struct compare_load *l)
{
	int err = profile_load_filtered(path, filter, &l->p);
	if (err < 0)
		return err; /* profile_load printed why */
	if (o->python_only)
		stacks_python_view(l->p, &l->view);
	err = stacks_aggregate(o->python_only ? &l->view : l->p, &o->filter, &l->r);
	if (err < 0)
		return cs_error(-err, "report: aggregating %s failed: %s", path, strerror(-err));
	return 0;
}

static void compare_unload(const struct report_opts *o, struct compare_load *l)
{
	stacks_report_free(&l->r);
	if (l->p && o->python_only)
		stacks_python_view_free(&l->view);
	if (l->p)
		profile_free(l->p);
}

int report_compare(const struct report_opts *o, const struct profile_filter *filter)
{
	struct compare_load base = { 0 }, new = { 0 };
	struct compare_result c = { 0 };
	int status = CS_EXIT_ERROR;

	if (compare_load(o, filter, o->compare, &base) < 0 || compare_load(o, filter, o->input, &new) < 0)
		goto out;
	struct compare_side bs = { .input = o->compare, .p = base.p, .r = &base.r,
				   .step = filter->step },
			    ns = { .input = o->input, .p = new.p, .r = &new.r, .step = filter->step };
	if (compare_build(&bs, &ns, o->sort, &c) < 0) {
		cs_error(ENODATA, "report: %s has no samples%s; nothing to compare",
			 base.r.samples ? o->input : o->compare,
			 filter->pid >= 0 || filter->tid >= 0 || filter->comm || filter->rank >= 0 ||
					 filter->nranges
				 ? " that pass the filter"
				 : "");
		goto out;
	}
	if (compare_write(stdout, &c, o->limit, o->format == REPORT_JSON) < 0 ||
	    fflush(stdout) == EOF) {
		cs_error(EIO, "report: writing to standard output: %s", strerror(errno ? errno : EIO));
		goto out;
	}
	status = 0;
out:
	compare_free(&c);
	compare_unload(o, &base);
	compare_unload(o, &new);
	return status;
}
