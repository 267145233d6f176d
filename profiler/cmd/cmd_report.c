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

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <string.h>

/* report's own tables beyond the plain report */
enum report_table { REPORT_TABLE_PLAIN, REPORT_TABLE_STEPS, REPORT_TABLE_RANKS };

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: csampler report [-i FILE] [--sort self|total] [--limit N] [--pid PID]\n"
		"                       [--tid TID] [--comm NAME] [--rank N] [--time SPEC]\n"
		"                       [--format text|json] [--stdio] [--python-only]\n"
		"                       [--compare BASE] [--steps [A-B]] [--step SPEC] [--ranks]\n"
		"\n"
		"Print the top functions by self and total samples, per-process, per-thread and\n"
		"per-library breakdowns, the hottest source lines and the unwind quality; with\n"
		"GPU records, the kernel table, copies, utilisation, synchronisation and what it\n"
		"waited for, launch-queue latency, launch sites, NVTX ranges and a verdict.\n"
		"\n"
		"  -i, --input FILE     data file to read (default ./csampler.data)\n"
		"      --sort KEY       order functions by 'self' (default) or 'total' samples\n"
		"      --limit N        rows per table, 0 for all (default %d)\n"
		PROFILE_FILTER_HELP
		"      --format FMT     'text' (default) or 'json'\n"
		"      --stdio          the text report, as perf report --stdio (same as --format text)\n"
		"      --python-only    stacks keep only their Python frames (py-spy's look); the\n"
		"                       unwind quality is still that of the whole stacks\n"
		"      --compare BASE   compare the input (NEW) with the data file BASE: per function\n"
		"                       and thread, the change in share (points, as 'csampler diff')\n"
		"                       and in CPU ms per second, largest first, with the noise floor;\n"
		"                       as 'report --compare BASE.data NEW.data'\n"
		"      --steps          alone: the step table (per step: wall, GPU busy, GPU idle and\n"
		"                       its CPU cause, CPU ms in Python/native/off-CPU, launches; p50,\n"
		"                       p90, max, slowest and warm-up steps); with A-B, a filter\n"
		"      --ranks          per rank of a merged file: steps, step p50/p90, GPU busy and\n"
		"                       idle; the straggler rank and the functions where it spends\n"
		"                       more than the median rank\n"
		"  -h, --help           show this help\n",
		REPORT_DEFAULT_LIMIT);
}

/* Parse argv into *o. Returns 0, 1 when --help was printed, or -EINVAL after one line. */
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

/* The long options without a short letter. */
enum { OPT_SORT = 256, OPT_LIMIT, OPT_FORMAT, OPT_STDIO, OPT_PYTHON_ONLY, OPT_COMPARE,
       OPT_STEPS, OPT_RANKS };

/* --sort self|total and --format text|json (c says which). 0, or -EINVAL (printed). */
static int report_word_option(int c, const char *arg, struct report_opts *o)
{
	if (c == OPT_SORT && !strcmp(arg, "self"))
		o->sort = STACKS_SORT_SELF;
	else if (c == OPT_SORT && !strcmp(arg, "total"))
		o->sort = STACKS_SORT_TOTAL;
	else if (c == OPT_SORT)
		return cs_error(EINVAL, "report: --sort takes 'self' or 'total', not '%s'", arg);
	else if (!strcmp(arg, "text"))
		o->format = REPORT_TEXT;
	else if (!strcmp(arg, "json"))
		o->format = REPORT_JSON;
	else
		return cs_error(EINVAL, "report: --format takes 'text' or 'json', not '%s'", arg);
	return 0;
}

static int report_parse_args(int argc, char **argv, struct report_opts *o,
			     struct profile_filter *filter, int *table)
{
	static const struct option longopts[] = {
		/* before the filters' --steps A-B: getopt_long takes the first exact match */
		{ "steps", optional_argument, NULL, OPT_STEPS },
		{ "ranks", no_argument, NULL, OPT_RANKS },
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		PROFILE_FILTER_LONGOPTS,
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "python-only", no_argument, NULL, OPT_PYTHON_ONLY },
		{ "compare", required_argument, NULL, OPT_COMPARE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool input_given = false;
	uint64_t v;
	int c, err;

	optind = 0; /* glibc: start a fresh scan (the command may run twice in one process) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->input = optarg;
			input_given = true;
			break;
		case OPT_SORT:
		case OPT_FORMAT:
			err = report_word_option(c, optarg, o);
			if (err < 0)
				return err;
			break;
		case OPT_LIMIT:
			if (cs_parse_u64(optarg, &v) < 0 || v > SIZE_MAX)
				return cs_error(EINVAL, "report: --limit takes a number of rows (0 for "
						"all), not '%s'", optarg);
			o->limit = (size_t)v;
			break;
		case OPT_STDIO: /* perf users' habit; csampler's report is text already */
			o->format = REPORT_TEXT;
			break;
		case OPT_PYTHON_ONLY:
			o->python_only = true;
			break;
		case OPT_COMPARE:
			o->compare = optarg;
			break;
		case OPT_STEPS: /* --steps alone: the table; --steps A-B: the filter */
			if (!optarg && optind < argc && report_is_steps_range(argv[optind]))
				optarg = argv[optind++];
			if (!optarg) {
				*table = REPORT_TABLE_STEPS;
				break;
			}
			err = profile_filter_parse_steps(filter, "report", optarg);
			if (err < 0)
				return err;
			break;
		case OPT_RANKS:
			*table = REPORT_TABLE_RANKS;
			break;
		case 'h':
			report_usage(stdout);
			return 1;
		case ':':
			return cs_error(EINVAL, "report: option '%s' needs a value; see 'csampler "
					"report --help'", argv[optind - 1]);
		default:
			err = profile_filter_option(filter, "report", c, optarg);
			if (err < 0)
				return err;
			if (err == 0)
				break;
			return cs_error(EINVAL, "report: unknown option '%s'; see 'csampler report "
					"--help'", argv[optind - 1]);
		}
	}
	/* One operand is taken as the input file, as `csampler report my.data`. */
	if (optind < argc && !input_given)
		o->input = argv[optind++];
	if (optind < argc)
		return cs_error(EINVAL, "report: unexpected argument '%s'; see 'csampler report "
				"--help'", argv[optind]);
	return 0;
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
	int table = REPORT_TABLE_PLAIN;
	int err;

	err = report_parse_args(argc, argv, &o, &filter, &table);
	if (err)
		return err > 0 ? 0 : CS_EXIT_ERROR;
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
