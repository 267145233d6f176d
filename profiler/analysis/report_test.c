/* report_test.c: golden-output tests of `csampler report`'s text and JSON (report.c) over a
 * synthetic profile, and of the commands' option errors (cmd_report.c, cmd_folded.c). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/fixtures.h"
#include "analysis/report.h"
#include "analysis/stacks.h"
#include "base/unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 105 samples: work_a 60 (main thread), work_b inlined 30 (worker), copy_user in the kernel
 * under a recursion 10, and 5 in a library without CFI whose copies were full. */
static void build_report_profile(struct pbuild *b)
{
	pb_init(b);
	pb_header(b, "cmdline", "csampler record -- ./app --iters 3");
	pb_header(b, "target", "./app --iters 3");
	pb_header(b, "rate_hz", "999");
	pb_header(b, "callgraph", "dwarf");
	pb_header(b, "stack_size", "8192");
	static const struct fx_run runs[] = {
		{ 0, 100, 50, 0 }, { 2, 101, 30, 0 }, { 1, 100, 10, 0 }, { 3, 100, 10, 0 },
		{ 4, 101, 5, PROFILE_SAMPLE_STACK_FULL },
	};
	uint32_t s[5];
	fx_app(b, "leaf_c;copy_user_[k]", s);
	fx_app_runs(b, s, runs, sizeof(runs) / sizeof(runs[0]));
	b->p.lost = 2;
}

static char *render(const struct profile *p, struct report_opts *o)
{
	struct stacks_report r;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	UNIT_ASSERT(f);
	UNIT_ASSERT(stacks_aggregate(p, &o->filter, &r) == 0);
	stacks_sort_functions(&r, o->sort);
	UNIT_ASSERT(report_write(f, p, &r, o) == 0);
	fclose(f);
	stacks_report_free(&r);
	return text;
}

UNIT_TEST(report_text_golden)
{
	struct pbuild b;
	struct report_opts o = REPORT_OPTS_DEFAULT;
	build_report_profile(&b);
	b.p.truncated = true;
	o.limit = 6;
	char *text = render(&b.p, &o);
	fx_expect_text(text,
"# csampler report of csampler.data\n"
"# command:   ./app --iters 3\n"
"# recorded:  csampler record -- ./app --iters 3\n"
"# duration:  0.105 s\n"
"# samples:   105\n"
"# lost:      2 (1.87% of all samples)\n"
"# rate:      999 Hz requested, 1000.0 samples/s recorded\n"
"# unwinding: dwarf, 8192-byte stack copies\n"
"# WARNING: truncated file: the recording ended early; the 105 samples that were read are "
"reported\n"
"\n"
"Top functions by self samples (4 of 14)\n"
"   Self%     Self   Total%    Total  Library            Function\n"
"  57.14%       60   57.14%       60  app                [.] work_a\n"
"  28.57%       30   28.57%       30  app                [i] work_b\n"
"   9.52%       10    9.52%       10  [kernel.kallsyms]  [k] copy_user\n"
"   4.76%        5    4.76%        5  libfoo.so          [.] foo_leaf\n"
"\n"
"Top functions by total (inclusive) samples (6 of 14)\n"
"   Self%     Self   Total%    Total  Library    Function\n"
"   0.00%        0   66.67%       70  libc.so.6  [.] __libc_start_main\n"
"   0.00%        0   66.67%       70  app        [.] _start\n"
"   0.00%        0   66.67%       70  app        [.] main\n"
"  57.14%       60   57.14%       60  app        [.] work_a\n"
"   0.00%        0   57.14%       60  app        [.] compute\n"
"  28.57%       30   28.57%       30  app        [i] work_b\n"
"\n"
"Source lines of the hottest functions\n"
"   Self%   Total%  Function  Hottest line (its share of the function)\n"
"  57.14%   57.14%  work_a    a.c:10 (50 samples, 83.3% of its self)\n"
"  28.57%   28.57%  work_b    w.c:7 (30 samples, 100.0% of its self)\n"
"\n"
"Processes\n"
"Samples%  Samples      PID  Command\n"
" 100.00%      105      100  app\n"
"\n"
"Threads (2 of 2)\n"
"Samples%  Samples      PID      TID  Name\n"
"  66.67%       70      100      100  app\n"
"  33.33%       35      100      101  worker\n"
"\n"
"Libraries\n"
"   Self%     Self   Total%    Total  Library\n"
"  85.71%       90   95.24%      100  /usr/bin/app\n"
"   9.52%       10    9.52%       10  [kernel.kallsyms]\n"
"   4.76%        5    4.76%        5  /opt/libfoo.so (no CFI, no symbols)\n"
"   0.00%        0   95.24%      100  /lib/x86_64-linux-gnu/libc.so.6\n"
"\n"
"Unwind quality\n"
"  complete stacks: 95.24% (100 of 105 samples reach _start or __libc_start_main on a main "
"thread, clone or start_thread on others)\n"
"  user frames by how they were found: 470 CFI (or the sampled pc), 0 frame-pointer step, 0 "
"stack scan\n"
"  incomplete stacks by cause:\n"
"         5  stack copy too short (the unwinder needed stack beyond it)\n"
"  suggestion: record again with --stack-size 16384 (this recording used 8192)\n"
"  incomplete stacks stop in:\n"
"         5  libfoo.so+0x1234  [libfoo.so]\n"
"  libraries lacking unwind info or symbols (install their debug packages, or rebuild them "
"with -g and unstripped):\n"
"         5  /opt/libfoo.so (no CFI, no symbols)\n");
	free(text);
	pb_free(&b);
}

UNIT_TEST(report_text_sort_total_and_filter)
{
	struct pbuild b;
	struct report_opts o = REPORT_OPTS_DEFAULT;
	build_report_profile(&b);
	o.sort = STACKS_SORT_TOTAL;
	o.limit = 2;
	o.filter.tid = 101;
	o.input = "run1.data";
	char *text = render(&b.p, &o);
	const char *want_head =
"# csampler report of run1.data\n"
"# command:   ./app --iters 3\n"
"# recorded:  csampler record -- ./app --iters 3\n"
"# duration:  0.105 s\n"
"# samples:   35 of 105 pass the filter: tid 101\n";
	UNIT_ASSERT(!strncmp(text, want_head, strlen(want_head)));
	const char *want_tables =
"Top functions by total (inclusive) samples (2 of 6)\n"
"   Self%     Self   Total%    Total  Library    Function\n"
"  85.71%       30   85.71%       30  app        [i] work_b\n"
"   0.00%        0   85.71%       30  libc.so.6  [.] clone3\n"
"\n"
"Top functions by self samples (2 of 6)\n"
"   Self%     Self   Total%    Total  Library    Function\n"
"  85.71%       30   85.71%       30  app        [i] work_b\n"
"  14.29%        5   14.29%        5  libfoo.so  [.] foo_leaf\n"
"\n"
"Source lines of the hottest functions\n"
"   Self%   Total%  Function  Hottest line (its share of the function)\n"
"  85.71%   85.71%  work_b    w.c:7 (30 samples, 100.0% of its self)\n"
"\n"
"Processes\n";
	if (!strstr(text, want_tables)) {
		fprintf(stderr, "got:\n%s\n", text);
		UNIT_ASSERT(!"tables differ");
	}
	UNIT_ASSERT(strstr(text, "Threads (1 of 1)\n"));
	UNIT_ASSERT(strstr(text, "  complete stacks: 85.71% (30 of 35 samples"));
	free(text);

	/* A filter nothing passes. */
	o.filter.tid = 4242;
	text = render(&b.p, &o);
	UNIT_ASSERT(strstr(text, "# samples:   0 of 105 pass the filter: tid 4242\n"));
	UNIT_ASSERT(strstr(text, "\nNo samples pass the filter.\n"));
	free(text);
	pb_free(&b);
}

UNIT_TEST(report_json_golden)
{
	struct pbuild b;
	struct report_opts o = REPORT_OPTS_DEFAULT;
	build_report_profile(&b);
	o.format = REPORT_JSON;
	o.limit = 3;
	o.filter.comm = "app";
	char *text = render(&b.p, &o);
	fx_expect_text(text,
"{\"file\":\"csampler.data\",\"command\":\"./app --iters 3\","
"\"cmdline\":\"csampler record -- ./app --iters 3\",\n"
"\"samples\":105,\"samples_unfiltered\":105,\"idle_recorded\":false,\"offcpu_samples\":0,\"lost\":2,\"duration_s\":0.105000,\"rate_hz\":999,"
"\"truncated\":false,\"finalized\":true,\n"
"\"sort\":\"self\",\"python_only\":false,\"filter\":{\"pid\":null,\"tid\":null,\"rank\":null,\"comm\":\"app\","
"\"time\":null,\"idle\":\"all\"},\n"
"\"functions\":[\n"
"  {\"name\":\"work_a\",\"library\":\"/usr/bin/app\",\"self\":60,\"total\":60,\"self_pct\":57.14,"
"\"total_pct\":57.14,\"kernel\":false,\"inlined\":false,\"jit\":false,\"file\":\"a.c\","
"\"line\":10,\"line_samples\":50},\n"
"  {\"name\":\"work_b\",\"library\":\"/usr/bin/app\",\"self\":30,\"total\":30,\"self_pct\":28.57,"
"\"total_pct\":28.57,\"kernel\":false,\"inlined\":true,\"jit\":false,\"file\":\"w.c\","
"\"line\":7,\"line_samples\":30},\n"
"  {\"name\":\"copy_user\",\"library\":\"[kernel.kallsyms]\",\"self\":10,\"total\":10,"
"\"self_pct\":9.52,\"total_pct\":9.52,\"kernel\":true,\"inlined\":false,\"jit\":false,"
"\"file\":null,\"line\":null,\"line_samples\":0}\n"
"],\n"
"\"python\":null,\n"
"\"processes\":[\n"
"  {\"pid\":100,\"comm\":\"app\",\"samples\":105,\"rank\":null,\"host\":null,\"orig_pid\":100}\n"
"],\n"
"\"threads\":[\n"
"  {\"pid\":100,\"tid\":100,\"comm\":\"app\",\"samples\":70},\n"
"  {\"pid\":100,\"tid\":101,\"comm\":\"worker\",\"samples\":35}\n"
"],\n"
"\"libraries\":[\n"
"  {\"path\":\"/usr/bin/app\",\"name\":\"app\",\"self\":90,\"total\":100,\"no_cfi\":false,"
"\"no_symbols\":false,\"no_debuginfo\":false},\n"
"  {\"path\":\"[kernel.kallsyms]\",\"name\":\"[kernel.kallsyms]\",\"self\":10,\"total\":10,"
"\"no_cfi\":false,\"no_symbols\":false,\"no_debuginfo\":false},\n"
"  {\"path\":\"/opt/libfoo.so\",\"name\":\"libfoo.so\",\"self\":5,\"total\":5,\"no_cfi\":true,"
"\"no_symbols\":true,\"no_debuginfo\":false},\n"
"  {\"path\":\"/lib/x86_64-linux-gnu/libc.so.6\",\"name\":\"libc.so.6\",\"self\":0,"
"\"total\":100,\"no_cfi\":false,\"no_symbols\":false,\"no_debuginfo\":false}\n"
"],\n"
"\"unwind\":{\"complete_pct\":95.24,\"complete\":100,\"empty\":0,\"unwind_errors\":0,"
"\"stack_full\":5,\"python_unread\":0,\"python_changed\":0,\"stack_size\":8192,\"suggested_stack_size\":16384,\n"
"\"causes\":{\"stack_short\":5,\"anon_no_cfi\":0,\"file_no_cfi\":0,\"no_map\":0,\"error\":0,"
"\"other\":0},\n"
"\"frames\":{\"cfi\":470,\"fp\":0,\"scan\":0},\n"
"\"lacking\":[\n"
"  {\"path\":\"/opt/libfoo.so\",\"name\":\"libfoo.so\",\"self\":5,\"total\":5,\"no_cfi\":true,"
"\"no_symbols\":true,\"no_debuginfo\":false}],\n"
"\"stops\":[\n"
"  {\"name\":\"libfoo.so+0x1234\",\"library\":\"/opt/libfoo.so\",\"samples\":5}]}\n"
"}\n");
	free(text);
	pb_free(&b);
}

/* Names from C++ and from odd binaries reach JSON escaped; an empty profile is valid JSON. */
UNIT_TEST(report_json_escaping_and_empty)
{
	struct pbuild b;
	struct report_opts o = REPORT_OPTS_DEFAULT;
	pb_init(&b);
	pb_thread(&b, 1, 1, "we\"ird\\name");
	pb_samples(&b, 1, 1, pb_stack(&b, "_start;std::map<int, \"x\">::at=src\\a.cc:3"), 1, 0);
	b.p.frames[0].name = pb_str(&b, "tab\there\nnewline");
	o.format = REPORT_JSON;
	char *text = render(&b.p, &o);
	UNIT_ASSERT_CONTAINS_ALL(text,
		"\"name\":\"std::map<int, \\\"x\\\">::at\"",
		"\"file\":\"src\\\\a.cc\"",
		"\"name\":\"tab\\u0009here\\u000anewline\"",
		"\"comm\":\"we\\\"ird\\\\name\"",
		"\"command\":null,\"cmdline\":null",
		"\"rate_hz\":null");
	free(text);
	pb_free(&b);

	pb_init(&b);
	text = render(&b.p, &o);
	UNIT_ASSERT_CONTAINS_ALL(text,
		"\"samples\":0,",
		"\"functions\":[\n],",
		"\"complete_pct\":0.00",
		"\"stack_size\":null,\"suggested_stack_size\":null");
	free(text);
	o.format = REPORT_TEXT;
	text = render(&b.p, &o);
	UNIT_ASSERT(strstr(text, "# command:   (not recorded)\n"));
	UNIT_ASSERT(strstr(text, "\nNo samples were recorded.\n"));
	free(text);
	pb_free(&b);
}

/* Run a command with stderr captured into err; returns its exit status. */
static int run_cmd(int (*cmd)(int, char **), char **argv, char *err, size_t errlen)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	unit_stderr_begin();
	int status = cmd(argc, argv);
	unit_stderr_end(err, errlen);
	return status;
}

UNIT_TEST(report_bad_options)
{
	char err[1024];
	char *a1[] = { "report", "--sort", "bogus", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a1, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(!strcmp(err, "csampler: report: --sort takes 'self' or 'total', not 'bogus'\n"));
	char *a2[] = { "report", "--limit", "-3", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a2, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(strstr(err, "--limit takes a number"));
	char *a3[] = { "report", "--pid", "abc", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a3, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(!strcmp(err, "csampler: report: --pid: 'abc' is not a process or thread id "
				 "(a number such as 1234)\n"));
	char *a4[] = { "report", "--format", "xml", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a4, err, sizeof(err)), CS_EXIT_ERROR);
	char *a5[] = { "report", "--frobnicate", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a5, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(!strcmp(err, "csampler: report: unknown option '--frobnicate'; see "
				 "'csampler report --help'\n"));
	char *a6[] = { "report", "--sort", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a6, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(strstr(err, "option '--sort' needs a value"));
	char *a7[] = { "report", "a.data", "b.data", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_report, a7, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(strstr(err, "unexpected argument 'b.data'"));
	char *f1[] = { "folded", "--tid", "99999999999", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_folded, f1, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(strstr(err, "folded: --tid: '99999999999' is not"));
	char *f2[] = { "folded", "-x", NULL };
	UNIT_ASSERT_EQ_INT(run_cmd(cmd_folded, f2, err, sizeof(err)), CS_EXIT_ERROR);
	UNIT_ASSERT(strstr(err, "folded: unknown option '-x'"));
}
