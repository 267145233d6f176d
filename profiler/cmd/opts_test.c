/* opts_test.c: unit tests of the option parser (opts.c): the argument forms, the order of
 * operands, the one-line messages, --help from the table, and the shared rows (PID lists,
 * words, the readers' filters of opts_filter.c). */
#include "cmd/opts.h"
#include "cmd/opts_filter.h"

#include "base/cs.h"
#include "base/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What the test table fills. */
struct opts_t {
	const char *output, *steps, *rank;
	bool all, quiet, steps_given;
	int source;
	struct opts_pids pids;
	struct profile_filter filter;
};

static bool opts_t_is_number(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static int opts_t_steps(const char *cmd, const struct opts_option *row, const char *value,
			void *target)
{
	struct opts_t *t = target;
	t->steps_given = true;
	t->steps = value;
	return 0;
}

/* Parse argv (NULL-terminated) with a table of every kind; stderr into err. Returns what
 * opts_parse returned; *first the first operand. */
static int opts_t_parse(char **argv, unsigned flags, struct opts_t *t, int *first, char *err,
			size_t errlen)
{
	const struct opts_option options[] = {
		OPTS_STRING_ROW('o', "output", &t->output, "FILE", "the output"),
		OPTS_FLAG_ROW('a', "all", &t->all, "everything"),
		OPTS_FLAG_ROW('q', "quiet", &t->quiet, "no chatter"),
		OPTS_INT_ROW(0, "gpu", &t->source, 2, "GPU time"),
		OPTS_INT_ROW(0, "gpu-idle", &t->source, 3, "GPU idle time"),
		OPTS_CALL_ROW('p', "pid", &t->pids, "PID[,PID]", opts_pids_call, "processes"),
		{ .kind = OPTS_CALL, .long_name = "steps", .value = t, .arg = "A-B",
		  .call = opts_t_steps, .flags = OPTS_OPTIONAL_VALUE, .takes_next = opts_t_is_number,
		  .help = "the step table, or a filter" },
		/* over the filters' --rank, as diff's --rank A,B */
		OPTS_STRING_ROW(0, "rank", &t->rank, "N|A,B", "ranks"),
		OPTS_INCLUDE_ROW(opts_filter_options, &t->filter),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = { .name = "t", .usage = "usage: t\n", .man = "t-man",
					  .options = options, .flags = flags };
	int argc = 0;
	while (argv[argc])
		argc++;
	unit_stderr_begin();
	int ret = opts_parse(&cmd, argc, argv, first);
	unit_stderr_end(err, errlen);
	return ret;
}

#define OPTS_T_INIT { .pids = { .max = 3 }, .filter = PROFILE_FILTER_ALL }

UNIT_TEST(opts_forms)
{
	char err[512];
	int first;
	struct opts_t t = OPTS_T_INIT;
	char *a1[] = { "t", "in1", "--out=x", "-aq", "--gpu-i", "-p1,2", "in2", "--tid", "-3",
		       NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a1, 0, &t, &first, err, sizeof(err)), -EINVAL);
	UNIT_ASSERT(!strcmp(err, "csampler: t: --tid: '-3' is not a process or thread id (a "
				 "number such as 1234)\n"));
	t = (struct opts_t)OPTS_T_INIT;
	char *a2[] = { "t", "in1", "--out=x", "-aq", "--gpu-i", "-p1,2", "in2", "--comm", "w",
		       "--steps", "4", "--ran", "0,1", "--", "-in3", NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a2, 0, &t, &first, err, sizeof(err)), 0);
	UNIT_ASSERT(!strcmp(t.output, "x") && t.all && t.quiet && t.source == 3);
	UNIT_ASSERT(t.pids.n == 2 && t.pids.pids[0] == 1 && t.pids.pids[1] == 2);
	UNIT_ASSERT(!strcmp(t.filter.comm, "w") && t.steps_given && !strcmp(t.steps, "4"));
	UNIT_ASSERT(!strcmp(t.rank, "0,1") && t.filter.rank == -1); /* the first row of a name */
	/* getopt's order: options, "--", then the operands as they came */
	UNIT_ASSERT_EQ_INT(first, 12);
	UNIT_ASSERT(!strcmp(a2[10], "0,1") && !strcmp(a2[11], "--") && !strcmp(a2[12], "in1") &&
		    !strcmp(a2[13], "in2") && !strcmp(a2[14], "-in3") && !a2[15]);
	free(t.pids.pids);

	/* --steps takes the next argument only when it looks like its value */
	t = (struct opts_t)OPTS_T_INIT;
	char *a3[] = { "t", "--steps", "file", "-oy", NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a3, 0, &t, &first, err, sizeof(err)), 0);
	UNIT_ASSERT(t.steps_given && !t.steps && !strcmp(t.output, "y"));
	UNIT_ASSERT(first == 3 && !strcmp(a3[3], "file"));

	/* a command line after the options stays as it is */
	t = (struct opts_t)OPTS_T_INIT;
	char *a4[] = { "t", "-a", "prog", "-o", "z", NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a4, OPTS_STOP_AT_OPERAND, &t, &first, err, sizeof(err)), 0);
	UNIT_ASSERT(first == 2 && !t.output && !strcmp(a4[3], "-o"));
	char *a5[] = { "t", "--", "-prog", NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a5, OPTS_STOP_AT_OPERAND, &t, &first, err, sizeof(err)), 0);
	UNIT_ASSERT_EQ_INT(first, 2);

	/* flamegraph.pl's forms: "-name" is long unless its letter is a short option's value */
	t = (struct opts_t)OPTS_T_INIT;
	char *a6[] = { "t", "-all", "-gpu-i", "-oFILE", "-comm=w", NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a6, OPTS_ONE_DASH_LONG, &t, &first, err, sizeof(err)), 0);
	UNIT_ASSERT(t.all && t.source == 3 && !strcmp(t.output, "FILE") && !strcmp(t.filter.comm, "w"));
	char *a7[] = { "t", "-bogus", NULL };
	UNIT_ASSERT_EQ_INT(opts_t_parse(a7, OPTS_ONE_DASH_LONG, &t, &first, err, sizeof(err)), -EINVAL);
	UNIT_ASSERT(!strcmp(err, "csampler: t: unknown option '-bogus'; see 'csampler t --help'\n"));
}

UNIT_TEST(opts_messages)
{
	static const struct {
		const char *args[3];
		const char *want;
	} cases[] = {
		{ { "--bogus" }, "csampler: t: unknown option '--bogus'; see 'csampler t --help'\n" },
		{ { "-x" }, "csampler: t: unknown option '-x'; see 'csampler t --help'\n" },
		{ { "-ax" }, "csampler: t: unknown option '-x'; see 'csampler t --help'\n" },
		{ { "--output" }, "csampler: t: option '--output' needs a value; see 'csampler t "
				  "--help'\n" },
		{ { "-o" }, "csampler: t: option '-o' needs a value; see 'csampler t --help'\n" },
		{ { "--all=1" }, "csampler: t: option '--all' takes no value; see 'csampler t "
				 "--help'\n" },
		{ { "--gpux" }, "csampler: t: unknown option '--gpux'; see 'csampler t --help'\n" },
		{ { "--s" }, "csampler: t: option '--s' is ambiguous (--steps, --step, ...); see "
			     "'csampler t --help'\n" },
		{ { "-p", "abc" }, "csampler: invalid PID list 'abc': give -p PID[,PID...]\n" },
		{ { "-p", "1,2,3,4" }, "csampler: too many PIDs: -p takes at most 3\n" },
		{ { "--comm", "" }, "csampler: t: --comm needs a thread or process name\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512];
		char *argv[4] = { "t", (char *)cases[i].args[0], (char *)cases[i].args[1], NULL };
		struct opts_t t = OPTS_T_INIT;
		int first;
		int ret = opts_t_parse(argv, 0, &t, &first, err, sizeof(err));
		free(t.pids.pids);
		if (ret >= 0 || strcmp(err, cases[i].want)) {
			fprintf(stderr, "%s: got %d '%s'\n", cases[i].args[0], ret, err);
			UNIT_ASSERT(0);
		}
	}
}

static int opts_t_number(const char *cmd, const struct opts_option *row, const char *value,
			 void *target)
{
	return cs_parse_double(value, target);
}

UNIT_TEST(opts_help_from_the_table)
{
	static double width = 1200;
	static bool tid;
	static const char *colors = "type", *none = NULL;
	const struct opts_option options[] = {
		OPTS_STRING_ROW('o', "output", &none, "FILE", "the output"),
		{ .kind = OPTS_STRING, .long_name = "colors", .value = &colors, .arg = "PALETTE",
		  .help = "a palette:\nhot or type", .flags = OPTS_DEFAULT_STRING },
		{ .kind = OPTS_CALL, .long_name = "width", .value = &width, .arg = "PX",
		  .call = opts_t_number, .help = "image width", .flags = OPTS_DEFAULT_DOUBLE },
		OPTS_FLAG_ROW(0, "tid", &tid, "hides the filter's"),
		OPTS_INCLUDE_ROW(opts_filter_options, NULL),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = { .name = "t", .usage = "usage: t [OPTIONS]\n",
					  .about = "What t does.\n", .footer = "Keys: q\n",
					  .man = "csampler-t", .options = options };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	UNIT_ASSERT(f);
	opts_usage(&cmd, f);
	fclose(f);
	UNIT_ASSERT(!strncmp(text, "usage: t [OPTIONS]\n\nWhat t does.\n\n  -o, --output FILE", 49));
	UNIT_ASSERT(strstr(text, "\n      --colors PALETTE  a palette:\n"
				 "                        hot or type (default: type)\n"));
	UNIT_ASSERT(strstr(text, "\n      --width PX        image width (default: 1200)\n"));
	UNIT_ASSERT(strstr(text, "\n      --tid             hides the filter's\n"));
	UNIT_ASSERT(!strstr(text, "only thread TID"));
	UNIT_ASSERT(strstr(text, "\n      --pid PID         only process PID\n"));
	UNIT_ASSERT(strstr(text, "\n  -h, --help            show this help\n\nKeys: q\n\n"
				 "The manual: man csampler-t\n"));
	free(text);
}

UNIT_TEST(opts_shared_rows)
{
	struct profile_filter f = PROFILE_FILTER_ALL;
	UNIT_ASSERT(opts_filter_set(&f, "test", "rank", "3") == 0 && f.rank == 3);
	UNIT_ASSERT(opts_filter_set(&f, "test", "width", "3") == 1);
	UNIT_ASSERT(opts_filter_set(&f, "test", "step", "load_batch") == 0 &&
		    !strcmp(f.step, "load_batch"));
	UNIT_ASSERT(opts_filter_set(&f, "test", "steps", "x") == -EINVAL);
	UNIT_ASSERT(opts_filter_set(&f, "test", "idle", NULL) == 0 &&
		    f.idle == PROFILE_FILTER_IDLE_OFFCPU);
	UNIT_ASSERT(opts_filter_set(&f, "test", "time", "10%/2") == 0 && f.nranges == 1);

	static const char *const words[] = { "auto", "on", NULL, "off" };
	int w = -1;
	UNIT_ASSERT(opts_word("t", "gpu", words, 4, "off", &w) == 0 && w == 3);
	UNIT_ASSERT(opts_word("t", "gpu", words, 4, "bpf", &w) == -EINVAL && w == 3);
}
