/* cmd_report.c: `csampler report`: load a data file, aggregate it (stacks.c) and print the
 * perf-like report or its JSON form (report.c). Only option parsing lives here. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/filter.h"
#include "analysis/gpu.h"
#include "analysis/profile.h"
#include "analysis/report.h"
#include "analysis/report_steps.h"
#include "analysis/stacks.h"
#include "cmd/opts.h"
#include "cmd/opts_filter.h"

#include <errno.h>
#include <string.h>

/* report's own tables beyond the plain report */
enum report_table { REPORT_TABLE_PLAIN, REPORT_TABLE_STEPS, REPORT_TABLE_RANKS };

/* What report's own options fill. */
struct report_args {
	struct report_opts *o;
	struct profile_filter *filter;
	int table;                  /* enum report_table */
	const char *input;          /* -i FILE, or NULL */
};

/* Which of report's valued options a call row is. */
enum report_option { REPORT_OPT_SORT, REPORT_OPT_FORMAT, REPORT_OPT_STDIO, REPORT_OPT_LIMIT,
		     REPORT_OPT_STEPS };

/* Whether s looks like a --steps range ("10-12", "5", "100-"), not a file name. */
static bool report_is_steps_range(const char *s)
{
	size_t n = strspn(s, "0123456789");
	if (!n)
		return false;
	if (!s[n])
		return true;
	return s[n] == '-' && strspn(s + n + 1, "0123456789") == strlen(s + n + 1);
}

/* --sort self|total, --format text|json, --stdio, --limit N and --steps [A-B]. */
static int report_option(const char *cmd, const struct opts_option *row, const char *arg,
			 void *target)
{
	struct report_args *a = target;
	struct report_opts *o = a->o;
	uint64_t v;

	switch (row->number) {
	case REPORT_OPT_SORT:
		if (strcmp(arg, "self") && strcmp(arg, "total"))
			return cs_error(EINVAL, "report: --sort takes 'self' or 'total', not '%s'", arg);
		o->sort = !strcmp(arg, "self") ? STACKS_SORT_SELF : STACKS_SORT_TOTAL;
		return 0;
	case REPORT_OPT_FORMAT:
		if (strcmp(arg, "text") && strcmp(arg, "json"))
			return cs_error(EINVAL, "report: --format takes 'text' or 'json', not '%s'", arg);
		o->format = !strcmp(arg, "text") ? REPORT_TEXT : REPORT_JSON;
		return 0;
	case REPORT_OPT_STDIO: /* perf users' habit; csampler's report is text already */
		o->format = REPORT_TEXT;
		return 0;
	case REPORT_OPT_LIMIT:
		if (cs_parse_u64(arg, &v) < 0 || v > SIZE_MAX)
			return cs_error(EINVAL, "report: --limit takes a number of rows (0 for all), "
					"not '%s'", arg);
		o->limit = (size_t)v;
		return 0;
	default: /* --steps alone: the table; --steps A-B: the filter */
		if (!arg) {
			a->table = REPORT_TABLE_STEPS;
			return 0;
		}
		return profile_filter_parse_steps(a->filter, cmd, arg);
	}
}

#define REPORT_ROW(name, which, argname, text) { .kind = OPTS_CALL, .long_name = (name), \
		.value = a, .arg = (argname), .call = report_option, .number = (which), .help = (text) }

/* Parse argv into *a. Returns 0, 1 when --help was printed, or -EINVAL after one line. */
static int report_parse_args(int argc, char **argv, struct report_args *a)
{
	char limit_help[64];
	snprintf(limit_help, sizeof(limit_help), "rows per table, 0 for all (default %d)",
		 REPORT_DEFAULT_LIMIT);
	const struct opts_option options[] = {
		OPTS_STRING_ROW('i', "input", &a->input, "FILE",
				"data file to read (default ./csampler.data)"),
		REPORT_ROW("sort", REPORT_OPT_SORT, "KEY",
			   "order functions by 'self' (default) or 'total' samples"),
		REPORT_ROW("limit", REPORT_OPT_LIMIT, "N", limit_help),
		/* before the filters' --steps A-B: the first exact name wins */
		{ .kind = OPTS_CALL, .long_name = "steps", .value = a, .arg = "A-B", .call = report_option,
		  .number = REPORT_OPT_STEPS, .flags = OPTS_OPTIONAL_VALUE,
		  .takes_next = report_is_steps_range,
		  .help = "alone: the step table (per step: wall, GPU busy, GPU idle and\n"
			  "its CPU cause, CPU ms in Python/native/off-CPU, launches; p50,\n"
			  "p90, max, slowest and warm-up steps); with A-B, a filter" },
		OPTS_INT_ROW(0, "ranks", &a->table, REPORT_TABLE_RANKS,
			     "per rank of a merged file: steps, step p50/p90, GPU busy and\n"
			     "idle; the straggler rank and the functions where it spends\n"
			     "more than the median rank"),
		OPTS_INCLUDE_ROW(opts_filter_options, a->filter),
		REPORT_ROW("format", REPORT_OPT_FORMAT, "FMT", "'text' (default) or 'json'"),
		REPORT_ROW("stdio", REPORT_OPT_STDIO, NULL,
			   "the text report, as perf report --stdio (same as --format text)"),
		OPTS_FLAG_ROW(0, "python-only", &a->o->python_only,
			      "stacks keep only their Python frames (py-spy's look); the\n"
			      "unwind quality is still that of the whole stacks"),
		OPTS_STRING_ROW(0, "compare", &a->o->compare, "BASE",
				"compare the input (NEW) with the data file BASE: per function\n"
				"and thread, the change in share (points, as 'csampler diff')\n"
				"and in CPU ms per second, largest first, with the noise floor;\n"
				"as 'report --compare BASE.data NEW.data'"),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("report", options);
	int first, err = opts_parse(&cmd, argc, argv, &first);

	return err ? err : opts_input(&cmd, argc, argv, first, a->input, &a->o->input);
}

int cmd_report(int argc, char **argv)
{
	struct report_opts o = REPORT_OPTS_DEFAULT;
	struct profile_filter filter = PROFILE_FILTER_ALL;
	struct profile *p = NULL;
	struct stacks_report r = { 0 }, whole = { 0 };
	struct profile view = { 0 };
	struct gpu_analysis g = { 0 };
	int status = CS_EXIT_ERROR;
	struct report_args args = { .o = &o, .filter = &filter, .table = REPORT_TABLE_PLAIN };
	int err;

	err = report_parse_args(argc, argv, &args);
	if (err)
		return opts_exit_status(err);
	int table = args.table;
	if (o.compare)
		return report_compare(&o, &filter);
	if (profile_load_filtered(o.input, &filter, &p) < 0)
		goto out; /* profile_load printed why */
	if (table != REPORT_TABLE_PLAIN) {
		err = table == REPORT_TABLE_STEPS ? report_steps_write(stdout, p, &o)
						  : report_ranks_write(stdout, p, &o);
		if (err == -ENOENT && table == REPORT_TABLE_STEPS && p->filtered.step)
			cs_error(ENOENT, "report: no steps: %s has no NVTX range named '%s' and no call "
				 "of a function '%s' on a main thread", o.input, p->filtered.step,
				 p->filtered.step);
		else if (err == -ENOENT && table == REPORT_TABLE_STEPS)
			cs_error(ENOENT, "report: no steps: the file has no NVTX range named step or "
				 "iteration; give --step FUNCTION or --step RANGE");
		else if (err == -ENOENT)
			cs_error(ENOENT, "report: --ranks needs a merged file of several ranks (csampler "
				 "merge of the ranks' recordings); %s has fewer than two ranks",
				 o.input);
		else if (err < 0 || fflush(stdout) == EOF)
			cs_error(EIO, "report: writing to standard output: %s",
				 strerror(errno ? errno : EIO));
		status = err == -ENOENT ? 1 : err < 0 ? CS_EXIT_ERROR : 0;
		goto out;
	}
	if (o.python_only)
		stacks_python_view(p, &view);
	err = stacks_aggregate(o.python_only ? &view : p, &o.filter, &r);
	if (!err && o.python_only)
		err = stacks_aggregate(p, &o.filter, &whole);
	if (err < 0) {
		cs_error(-err, "report: aggregating %s failed: %s", o.input, strerror(-err));
		goto out;
	}
	if (o.python_only) {
		/* Python-only stacks never reach _start: report how the whole stacks unwound. */
		struct stacks_unwind u = r.unwind;
		r.unwind = whole.unwind;
		whole.unwind = u;
	}
	stacks_sort_functions(&r, o.sort);
	if (p->ngpu_activities) {
		gpu_analyze(p, &o.filter, &g);
		o.gpu = &g;
	}
	if (report_write(stdout, p, &r, &o) < 0 || fflush(stdout) == EOF) {
		cs_error(EIO, "report: writing to standard output: %s", strerror(errno ? errno : EIO));
		goto out;
	}
	status = 0;
out:
	stacks_report_free(&r);
	stacks_report_free(&whole);
	if (o.python_only)
		stacks_python_view_free(&view);
	gpu_analysis_free(&g);
	if (p)
		profile_free(p);
	return status;
}
