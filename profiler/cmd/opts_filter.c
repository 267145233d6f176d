/* opts_filter.c: the readers' shared filter options (opts_filter.h): the rows, their --help
 * text and the values' checks; analysis/filter.c parses --time and --steps specs and applies
 * the filter. */
#include "cmd/opts_filter.h"
#include "base/cs.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

enum opts_filter_which { OPTS_FILTER_PID, OPTS_FILTER_TID, OPTS_FILTER_COMM, OPTS_FILTER_RANK,
			 OPTS_FILTER_TIME, OPTS_FILTER_IDLE, OPTS_FILTER_NO_IDLE,
			 OPTS_FILTER_STEP, OPTS_FILTER_STEPS };

/* --pid, --tid, --rank: a number up to INT32_MAX. */
static int opts_filter_id(const char *cmd, const char *opt, const char *value, int64_t *out)
{
	uint64_t v;
	bool rank = !strcmp(opt, "rank");
	if (cs_parse_u64(value, &v) < 0 || v > INT32_MAX)
		return cs_error(EINVAL, "%s: --%s: '%s' is not a %s (a number such as %s)", cmd, opt,
				value, rank ? "rank" : "process or thread id",
				rank ? "0 or 3" : "1234");
	*out = (int64_t)v;
	return 0;
}

/* A name that may not be empty (--comm, --step). */
static int opts_filter_name(const char *cmd, const char *value, const char *what,
			    const char **out)
{
	if (!*value)
		return cs_error(EINVAL, "%s: %s", cmd, what);
	*out = value;
	return 0;
}

static int opts_filter_call(const char *cmd, const struct opts_option *row, const char *value,
			    void *target)
{
	struct profile_filter *f = target;

	switch (row->number) {
	case OPTS_FILTER_PID:
		return opts_filter_id(cmd, "pid", value, &f->pid);
	case OPTS_FILTER_TID:
		return opts_filter_id(cmd, "tid", value, &f->tid);
	case OPTS_FILTER_RANK:
		return opts_filter_id(cmd, "rank", value, &f->rank);
	case OPTS_FILTER_COMM:
		return opts_filter_name(cmd, value, "--comm needs a thread or process name", &f->comm);
	case OPTS_FILTER_TIME:
		return profile_filter_parse_time(f, cmd, value);
	case OPTS_FILTER_IDLE:
		f->idle = PROFILE_FILTER_IDLE_OFFCPU;
		return 0;
	case OPTS_FILTER_NO_IDLE:
		f->idle = PROFILE_FILTER_IDLE_ONCPU;
		return 0;
	case OPTS_FILTER_STEP:
		return opts_filter_name(cmd, value, "--step needs an NVTX range name or a function",
					&f->step);
	case OPTS_FILTER_STEPS:
		return profile_filter_parse_steps(f, cmd, value);
	default:
		return -EINVAL;
	}
}

#define OPTS_FILTER_ROW(name, which, argname, text) { .kind = OPTS_CALL, .long_name = (name), \
		.arg = (argname), .call = opts_filter_call, .number = (which), .help = (text) }

const struct opts_option opts_filter_options[] = {
	OPTS_FILTER_ROW("pid", OPTS_FILTER_PID, "PID", "only process PID"),
	OPTS_FILTER_ROW("tid", OPTS_FILTER_TID, "TID", "only thread TID"),
	OPTS_FILTER_ROW("comm", OPTS_FILTER_COMM, "NAME",
			"only threads named NAME, or of a process named NAME"),
	OPTS_FILTER_ROW("rank", OPTS_FILTER_RANK, "N",
			"only processes of rank N (RANK of the recording, or merged)"),
	OPTS_FILTER_ROW("time", OPTS_FILTER_TIME, "SPEC",
			"only samples in a time window: START,END in seconds from the\n"
			"start (either may be empty), or percent slices 10%/2, 0%-10%"),
	OPTS_FILTER_ROW("idle", OPTS_FILTER_IDLE, NULL,
			"only samples of threads off the CPU (files of record --idle)"),
	OPTS_FILTER_ROW("no-idle", OPTS_FILTER_NO_IDLE, NULL, "only samples of threads on the CPU"),
	OPTS_FILTER_ROW("step", OPTS_FILTER_STEP, "SPEC",
			"where a step starts: an NVTX range name, or a function whose\n"
			"calls on the main thread delimit steps (default: NVTX ranges\n"
			"named step or iteration)"),
	OPTS_FILTER_ROW("steps", OPTS_FILTER_STEPS, "A-B",
			"only steps A to B (1-based; A alone, A- to the end)"),
	OPTS_END_ROW,
};

int opts_filter_set(struct profile_filter *f, const char *cmd, const char *name,
		    const char *value)
{
	for (const struct opts_option *row = opts_filter_options; row->kind != OPTS_END; row++)
		if (!strcmp(row->long_name, name))
			return opts_filter_call(cmd, row, value, f);
	return 1;
}
