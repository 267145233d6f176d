/* stacks_test.c: unit tests of the aggregation engine and the folded-stack stream (stacks.c)
 * over synthetic profiles from profile_builder.h. */
#include "analysis/fold.h"
#include "analysis/fixtures.h"
#include "analysis/stacks.h"
#include "base/unit.h"

#include "base/cs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


/* The profile most tests share: process "app" (pid 100) with its main thread and a worker
 * thread (tid 101, "worker"):
 *   60 main-thread samples in work_a (50 on a.c:10, 10 on a.c:12) under compute
 *   10 main-thread samples in leaf_c under a three-deep recursion of rec
 *   30 worker samples in work_b, inlined into worker_main, below start_thread and clone3
 *    5 worker samples in a library without CFI, whose stacks stop there (incomplete)
 * = 105 samples, 100 of them complete. */
static void build_app(struct pbuild *b)
{
	pb_init(b);
	static const struct fx_run runs[] = {
		{ 0, 100, 25, 0 }, { 2, 101, 30, 0 }, { 0, 100, 25, 0 }, { 1, 100, 10, 0 },
		{ 3, 100, 10, 0 }, { 4, 101, 5, 0 },
	};
	uint32_t s[5];
	fx_app(b, "leaf_c", s);
	fx_app_runs(b, s, runs, sizeof(runs) / sizeof(runs[0]));
}

/* The prologue of most tests: build's profile into b, aggregated without a filter into r. */
static void aggregated(void (*build)(struct pbuild *), struct pbuild *b, struct stacks_report *r)
{
	build(b);
	UNIT_ASSERT(stacks_aggregate(&b->p, NULL, r) == 0);
}

static const struct stacks_function *find_func(const struct stacks_report *r, const char *name)
{
	for (size_t i = 0; i < r->nfunctions; i++)
		if (!strcmp(r->functions[i].name, name))
			return &r->functions[i];
	return NULL;
}

UNIT_TEST(stacks_self_total)
{
	struct pbuild b;
	struct stacks_report r;
	aggregated(build_app, &b, &r);
	UNIT_ASSERT_EQ_INT(r.samples, 105);

	const struct stacks_function *f = find_func(&r, "work_a");
	UNIT_ASSERT(f);
	UNIT_ASSERT_EQ_INT(f->self, 60);
	UNIT_ASSERT_EQ_INT(f->total, 60);
	UNIT_ASSERT(!strcmp(f->module, "/usr/bin/app"));
	/* Sorted by self: work_a, then work_b, leaf_c, libfoo's leaf. */
	UNIT_ASSERT(!strcmp(r.functions[0].name, "work_a"));
	UNIT_ASSERT(!strcmp(r.functions[1].name, "work_b"));
	UNIT_ASSERT(r.functions[1].frame_flags & PROFILE_FRAME_INLINED);
	UNIT_ASSERT(!strcmp(r.functions[2].name, "leaf_c"));

	f = find_func(&r, "main");
	UNIT_ASSERT(f && f->self == 0 && f->total == 70);
	f = find_func(&r, "compute");
	UNIT_ASSERT(f && f->self == 0 && f->total == 60);
	/* Recursion counts once per sample. */
	f = find_func(&r, "rec");
	UNIT_ASSERT(f && f->self == 0);
	UNIT_ASSERT_EQ_INT(f->total, 10);
	f = find_func(&r, "_start");
	UNIT_ASSERT(f && f->total == 70);
	/* Sum of self over functions = samples with frames. */
	uint64_t self = 0;
	for (size_t i = 0; i < r.nfunctions; i++)
		self += r.functions[i].self;
	UNIT_ASSERT_EQ_INT(self, 105);

	stacks_sort_functions(&r, STACKS_SORT_TOTAL);
	UNIT_ASSERT(!strcmp(r.functions[0].name, "__libc_start_main"));
	UNIT_ASSERT_EQ_INT(r.functions[0].total, 70);
	UNIT_ASSERT(!strcmp(r.functions[1].name, "_start")); /* same counts: by name */
	UNIT_ASSERT(!strcmp(r.functions[2].name, "main"));
	stacks_report_free(&r);
	pb_free(&b);
}

UNIT_TEST(stacks_hot_lines)
{
	struct pbuild b;
	struct stacks_report r;
	aggregated(build_app, &b, &r);
	const struct stacks_function *f = find_func(&r, "work_a");
	UNIT_ASSERT(f && f->hot_file && !strcmp(f->hot_file, "a.c"));
	UNIT_ASSERT_EQ_INT(f->hot_line, 10);
	UNIT_ASSERT_EQ_INT(f->hot_samples, 50);
	/* main has no self samples: its hottest line is the call site seen most. */
	f = find_func(&r, "main");
	UNIT_ASSERT(f && f->hot_file && !strcmp(f->hot_file, "app.c"));
	UNIT_ASSERT_EQ_INT(f->hot_line, 40);
	UNIT_ASSERT_EQ_INT(f->hot_samples, 60);
	f = find_func(&r, "compute");
	UNIT_ASSERT(f && !f->hot_file && !f->hot_line);
	stacks_report_free(&r);
	pb_free(&b);
}

UNIT_TEST(stacks_breakdowns)
{
	struct pbuild b;
	struct stacks_report r;
	aggregated(build_app, &b, &r);
	UNIT_ASSERT_EQ_INT(r.nprocesses, 1);
	UNIT_ASSERT(r.processes[0].pid == 100 && !strcmp(r.processes[0].comm, "app"));
	UNIT_ASSERT_EQ_INT(r.processes[0].samples, 105);
	UNIT_ASSERT_EQ_INT(r.nthreads, 2);
	UNIT_ASSERT(r.threads[0].tid == 100 && !strcmp(r.threads[0].comm, "app"));
	UNIT_ASSERT_EQ_INT(r.threads[0].samples, 70);
	UNIT_ASSERT(r.threads[1].tid == 101 && !strcmp(r.threads[1].comm, "worker"));
	UNIT_ASSERT_EQ_INT(r.threads[1].samples, 35);

	/* Libraries: app (self 100: work_a 60, work_b 30, leaf_c 10), libc (total 100),
	 * libfoo (self 5). */
	UNIT_ASSERT_EQ_INT(r.nlibraries, 3);
	UNIT_ASSERT(!strcmp(r.libraries[0].path, "/usr/bin/app"));
	UNIT_ASSERT_EQ_INT(r.libraries[0].self, 100);
	UNIT_ASSERT_EQ_INT(r.libraries[0].total, 100);
	UNIT_ASSERT(!strcmp(r.libraries[1].path, "/opt/libfoo.so"));
	UNIT_ASSERT_EQ_INT(r.libraries[1].self, 5);
	UNIT_ASSERT(!strcmp(r.libraries[2].path, FX_LIBC));
	UNIT_ASSERT_EQ_INT(r.libraries[2].self, 0);
	UNIT_ASSERT_EQ_INT(r.libraries[2].total, 100);
	stacks_report_free(&r);
	pb_free(&b);
}

UNIT_TEST(stacks_unwind_quality)
{
	struct pbuild b;
	struct stacks_report r;
	aggregated(build_app, &b, &r);
	UNIT_ASSERT_EQ_INT(r.unwind.complete, 100);
	UNIT_ASSERT(r.unwind.complete_pct > 95.23 && r.unwind.complete_pct < 95.24);
	UNIT_ASSERT_EQ_INT(r.unwind.nstops, 1);
	UNIT_ASSERT(!strcmp(r.unwind.stops[0].name, "libfoo.so+0x1234"));
	UNIT_ASSERT_EQ_INT(r.unwind.stops[0].samples, 5);
	UNIT_ASSERT_EQ_INT(r.unwind.nlacking, 1);
	UNIT_ASSERT(!strcmp(r.unwind.lacking[0].path, "/opt/libfoo.so"));
	UNIT_ASSERT_EQ_INT(r.unwind.lacking[0].total, 5);
	UNIT_ASSERT(r.unwind.lacking[0].flags & PROFILE_MODULE_NO_CFI);
	UNIT_ASSERT_EQ_INT(r.unwind.stack_full, 0);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 0);
	stacks_report_free(&r);
	pb_free(&b);
}

/* A stack is complete only when its root fits the kind of thread it was sampled on. */
UNIT_TEST(stacks_completeness_rules)
{
	UNIT_ASSERT(profile_root_is_entry("_start", true));
	UNIT_ASSERT(profile_root_is_entry("__libc_start_main", true));
	UNIT_ASSERT(profile_root_is_entry("__libc_start_main@@GLIBC_2.34", true));
	UNIT_ASSERT(profile_root_is_entry("__libc_start_call_main", true));
	UNIT_ASSERT(profile_root_is_entry("clone3", false));
	UNIT_ASSERT(profile_root_is_entry("__GI___clone3", false));
	UNIT_ASSERT(profile_root_is_entry("start_thread", false));
	UNIT_ASSERT(profile_root_is_entry("clone", false));
	UNIT_ASSERT(!profile_root_is_entry("clone3", true));
	UNIT_ASSERT(!profile_root_is_entry("_start", false));
	UNIT_ASSERT(!profile_root_is_entry("main", true));
	UNIT_ASSERT(!profile_root_is_entry("_start_x", true));
	UNIT_ASSERT(!profile_root_is_entry("", true));

	struct pbuild b;
	struct stacks_report r;
	pb_init(&b);
	uint32_t main_root = pb_stack(&b, "_start;main;f");
	uint32_t thread_root = pb_stack(&b, "clone;start_thread;g");
	uint32_t cut = pb_stack(&b, "main;f");
	uint32_t empty = pb_stack(&b, "");
	pb_samples(&b, 7, 7, main_root, 4, 0);    /* complete */
	pb_samples(&b, 7, 8, main_root, 1, 0);    /* _start on a non-main thread: not */
	pb_samples(&b, 7, 8, thread_root, 3, 0);  /* complete */
	pb_samples(&b, 7, 7, thread_root, 1, 0);  /* clone on the main thread: not */
	pb_samples(&b, 7, 7, cut, 1, PROFILE_SAMPLE_UNWIND_ERROR);
	pb_samples(&b, 7, 7, empty, 2, 0);
	pb_samples(&b, 7, 7, 999, 1, 0);          /* a stack id beyond the table: no frames */
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 13);
	UNIT_ASSERT_EQ_INT(r.unwind.complete, 7);
	UNIT_ASSERT_EQ_INT(r.unwind.empty, 3);
	UNIT_ASSERT_EQ_INT(r.unwind.unwind_errors, 1);
	UNIT_ASSERT(r.unwind.complete_pct > 53.84 && r.unwind.complete_pct < 53.85);
	/* Stops: _start (1), clone (1), main (1), sorted by name on ties. */
	UNIT_ASSERT_EQ_INT(r.unwind.nstops, 3);
	UNIT_ASSERT(!strcmp(r.unwind.stops[0].name, "_start"));
	UNIT_ASSERT(!strcmp(r.unwind.stops[1].name, "clone"));
	UNIT_ASSERT(!strcmp(r.unwind.stops[2].name, "main"));
	/* Process and thread names nobody recorded come out empty, not made up. */
	UNIT_ASSERT_EQ_INT(r.nthreads, 2);
	UNIT_ASSERT(!strcmp(r.threads[0].comm, ""));
	stacks_report_free(&r);
	pb_free(&b);
}

UNIT_TEST(stacks_filters)
{
	struct pbuild b;
	struct stacks_report r;
	build_app(&b);
	pb_process(&b, 200, 1, "other");
	pb_thread(&b, 200, 200, "other");
	pb_samples(&b, 200, 200, pb_stack(&b, "_start;main;spin@/usr/bin/other"), 20, 0);

	struct stacks_filter by_tid = { .pid = -1, .tid = 101, .comm = NULL };
	UNIT_ASSERT(stacks_aggregate(&b.p, &by_tid, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 35);
	UNIT_ASSERT_EQ_INT(r.nthreads, 1);
	UNIT_ASSERT(find_func(&r, "work_b") && !find_func(&r, "work_a"));
	UNIT_ASSERT_EQ_INT(r.unwind.complete, 30);
	stacks_report_free(&r);

	struct stacks_filter by_pid = { .pid = 200, .tid = -1, .comm = NULL };
	UNIT_ASSERT(stacks_aggregate(&b.p, &by_pid, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 20);
	UNIT_ASSERT(r.nfunctions == 3 && !strcmp(r.functions[0].name, "spin"));
	UNIT_ASSERT(r.unwind.complete_pct == 100.0);
	stacks_report_free(&r);

	/* --comm matches a thread's own name ... */
	struct stacks_filter by_thread_name = { .pid = -1, .tid = -1, .comm = "worker" };
	UNIT_ASSERT(stacks_aggregate(&b.p, &by_thread_name, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 35);
	stacks_report_free(&r);
	/* ... or its process' name. */
	struct stacks_filter by_process_name = { .pid = -1, .tid = -1, .comm = "app" };
	UNIT_ASSERT(stacks_aggregate(&b.p, &by_process_name, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 105);
	UNIT_ASSERT_EQ_INT(r.nprocesses, 1);
	stacks_report_free(&r);

	struct stacks_filter both = { .pid = 100, .tid = 200, .comm = NULL };
	UNIT_ASSERT(stacks_aggregate(&b.p, &both, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 0);
	UNIT_ASSERT_EQ_INT(r.nfunctions, 0);
	UNIT_ASSERT(r.unwind.complete_pct == 0.0);
	stacks_report_free(&r);

	struct stacks_filter bad = { .pid = (int64_t)1 << 40, .tid = -1, .comm = NULL };
	UNIT_ASSERT(stacks_aggregate(&b.p, &bad, &r) < 0);
	stacks_report_free(&r);
	pb_free(&b);
}

UNIT_TEST(stacks_weights_and_duplicate_strings)
{
	struct pbuild b;
	struct stacks_report r;
	pb_init(&b);
	uint32_t s = pb_stack(&b, "_start;main;hot");
	pb_sample_weighted(&b, 1, 1, s, 7, 0);
	/* The same name stored as a second string id (a writer that did not intern) is still
	 * the same function. */
	cs_grow(&b.p.strings, &b.strings_cap, b.p.nstrings + 1, sizeof(char *));
	b.p.strings[b.p.nstrings] = cs_strdup("hot");
	uint32_t dup = (uint32_t)b.p.nstrings++;
	uint32_t fr = pb_frame(&b, "x", 0, NULL, 0, 0);
	b.p.frames[fr].name = dup;
	b.p.frames[fr].module = b.p.frames[b.p.stack_frames[b.p.stacks[s].first]].module;
	uint32_t s2 = pb_stack(&b, "_start;main");
	/* Append the duplicate-named leaf by hand: stack s2 + [fr]. */
	uint32_t ids[3] = { fr, b.p.stack_frames[b.p.stacks[s2].first],
			    b.p.stack_frames[b.p.stacks[s2].first + 1] };
	cs_grow(&b.p.stack_frames, &b.stack_frames_cap, b.p.nstack_frames + 3, sizeof(uint32_t));
	memcpy(b.p.stack_frames + b.p.nstack_frames, ids, sizeof(ids));
	b.p.stacks[s2] = (struct profile_stack){ .first = (uint32_t)b.p.nstack_frames,
						 .nframes = 3 };
	b.p.nstack_frames += 3;
	pb_sample_weighted(&b, 1, 1, s2, 3, PROFILE_SAMPLE_STACK_FULL);

	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 10);
	const struct stacks_function *f = find_func(&r, "hot");
	UNIT_ASSERT(f);
	UNIT_ASSERT_EQ_INT(f->self, 10);
	UNIT_ASSERT_EQ_INT(r.nfunctions, 3);
	UNIT_ASSERT_EQ_INT(r.unwind.stack_full, 3);
	stacks_report_free(&r);
	pb_free(&b);
}

/* Incomplete stacks by cause (one each, by precedence) and frames by how they were found. */
UNIT_TEST(stacks_unwind_causes_and_methods)
{
	struct pbuild b;
	struct stacks_report r;
	pb_init(&b);
	uint32_t scanned = pb_stack(&b, "_start;main;worker_loop_[s];kernel_[j]");
	uint32_t stepped = pb_stack(&b, "_start;main;worker_loop_[p];inl_[i];kernel_[j]");
	uint32_t cut = pb_stack(&b, "kernel_[j]");
	pb_samples(&b, 1, 1, scanned, 3, 0);
	pb_samples(&b, 1, 1, stepped, 2, 0);
	pb_samples(&b, 1, 1, cut, 4, PROFILE_SAMPLE_UNWIND_ERROR | PROFILE_SAMPLE_STOP_ANON);
	pb_samples(&b, 1, 1, cut, 1, PROFILE_SAMPLE_UNWIND_ERROR | PROFILE_SAMPLE_STOP_NO_CFI);
	pb_samples(&b, 1, 1, cut, 1, PROFILE_SAMPLE_STACK_FULL | PROFILE_SAMPLE_STOP_ANON);
	pb_samples(&b, 1, 1, cut, 1, PROFILE_SAMPLE_UNWIND_ERROR | PROFILE_SAMPLE_NO_MAP);
	pb_samples(&b, 1, 1, cut, 2, PROFILE_SAMPLE_UNWIND_ERROR);
	pb_samples(&b, 1, 1, cut, 1, 0);
	pb_samples(&b, 1, 1, scanned, 1, PROFILE_SAMPLE_STACK_FULL); /* complete: no cause */
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	const struct stacks_stop_causes *c = &r.unwind.causes;
	UNIT_ASSERT_EQ_INT(r.unwind.complete, 6);
	UNIT_ASSERT_EQ_INT(c->stack_short, 1);
	UNIT_ASSERT_EQ_INT(c->anon_no_cfi, 4);
	UNIT_ASSERT_EQ_INT(c->file_no_cfi, 1);
	UNIT_ASSERT_EQ_INT(c->no_map, 1);
	UNIT_ASSERT_EQ_INT(c->error, 2);
	UNIT_ASSERT_EQ_INT(c->other, 1);
	UNIT_ASSERT(r.unwind.frames_known);
	/* scanned: 4 samples x (3 CFI + 1 scan); stepped: 2 x (3 CFI + 1 FP), the inlined frame
	 * not counted; cut: 10 x 1 CFI. */
	UNIT_ASSERT_EQ_INT(r.unwind.frames_scan, 4);
	UNIT_ASSERT_EQ_INT(r.unwind.frames_fp, 2);
	UNIT_ASSERT_EQ_INT(r.unwind.frames_cfi, 4 * 3 + 2 * 3 + 10);
	stacks_report_free(&r);

	pb_header(&b, "callgraph", "fp"); /* the kernel walked the frames: methods unknown */
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT(!r.unwind.frames_known);
	UNIT_ASSERT_EQ_INT(r.unwind.frames_cfi + r.unwind.frames_fp + r.unwind.frames_scan, 0);
	stacks_report_free(&r);
	pb_free(&b);
}

UNIT_TEST(stacks_stack_size_suggestion)
{
	struct pbuild b;
	struct stacks_report r;
	pb_init(&b);
	pb_header(&b, "stack_size", "8192");
	uint32_t s = pb_stack(&b, "_start;main;deep");
	uint32_t cut = pb_stack(&b, "main;deep");
	pb_samples(&b, 1, 1, s, 9, 0);
	/* A complete stack that needed more copy (older files flagged full copies) is no reason
	 * to copy more. */
	pb_samples(&b, 1, 1, s, 1, PROFILE_SAMPLE_STACK_FULL);
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.unwind.stack_full, 1);
	UNIT_ASSERT_EQ_INT(r.unwind.causes.stack_short, 0);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 0);
	stacks_report_free(&r);

	pb_samples(&b, 1, 1, cut, 1, PROFILE_SAMPLE_STACK_FULL);
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.unwind.stack_size, 8192);
	UNIT_ASSERT_EQ_INT(r.unwind.causes.stack_short, 1);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 16384); /* 1 of 11 cut: double */
	stacks_report_free(&r);

	pb_samples(&b, 1, 1, cut, 3, PROFILE_SAMPLE_STACK_FULL);
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 32768); /* 4 of 14 cut: x4 */
	stacks_report_free(&r);

	free((char *)b.p.header[0].value);
	b.p.header[0].value = cs_strdup("4096");
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.unwind.stack_size, 4096);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 16384);
	stacks_report_free(&r);
	pb_free(&b);

	pb_init(&b);
	pb_header(&b, "stack_size", "65528");
	s = pb_stack(&b, "main;deep");
	pb_samples(&b, 1, 1, s, 1, PROFILE_SAMPLE_STACK_FULL);
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 0);
	UNIT_ASSERT(r.unwind.stack_size_at_max);
	stacks_report_free(&r);
	pb_free(&b);

	/* Unknown size: from perf's default of 8192. */
	pb_init(&b);
	s = pb_stack(&b, "main;deep");
	pb_samples(&b, 1, 1, s, 1, PROFILE_SAMPLE_STACK_FULL);
	pb_samples(&b, 1, 1, s, 9, 0);
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.unwind.stack_size, 0);
	UNIT_ASSERT_EQ_INT(r.unwind.suggested_stack_size, 16384);
	stacks_report_free(&r);
	pb_free(&b);
}

/* ---- folded ---- */

UNIT_TEST(stacks_folded_merged)
{
	struct pbuild b;
	build_app(&b);
	/* The two work_a stacks differ only in the line: one folded line. */
	fx_expect_folded(&b.p, NULL,
		    "app;_start;__libc_start_main;main;compute;work_a 60\n"
		    "app;_start;__libc_start_main;main;rec;rec;rec;leaf_c 10\n"
		    "app;clone3;start_thread;worker_main;work_b_[i] 30\n"
		    "app;libfoo.so+0x1234;foo_leaf 5\n");

	struct fold_opts o = FOLD_OPTS_DEFAULT;
	o.per_thread = 1;
	fx_expect_folded(&b.p, &o,
		    "app-100;_start;__libc_start_main;main;compute;work_a 60\n"
		    "app-100;_start;__libc_start_main;main;rec;rec;rec;leaf_c 10\n"
		    "worker-101;clone3;start_thread;worker_main;work_b_[i] 30\n"
		    "worker-101;libfoo.so+0x1234;foo_leaf 5\n");

	o.tid = 101;
	o.per_thread = 0;
	fx_expect_folded(&b.p, &o,
		    "app;clone3;start_thread;worker_main;work_b_[i] 30\n"
		    "app;libfoo.so+0x1234;foo_leaf 5\n");
	pb_free(&b);
}

UNIT_TEST(stacks_folded_annotations)
{
	struct pbuild b;
	pb_init(&b);
	pb_process(&b, 5, 1, "java");
	pb_thread(&b, 5, 5, "java");
	pb_thread(&b, 5, 6, "C2 Compiler");
	/* No thread entry for tid 9: its root falls back to the process name. */
	uint32_t k = pb_stack(&b, "_start;main;read;entry_SYSCALL_64_[k];ksys_read_[k]");
	uint32_t j = pb_stack(&b, "clone3;start_thread;Interpreter_[j];LFoo::bar_[j]");
	uint32_t i = pb_stack(&b, "_start;main;std::vector<int>::push_back_[i]");
	uint32_t odd = pb_stack(&b, "_start;main;a;b");
	/* A name with ';' and a newline must not break the format. */
	b.p.frames[b.p.stack_frames[b.p.stacks[odd].first]].name = pb_str(&b, "x;y\nz");
	pb_samples(&b, 5, 5, k, 3, 0);
	pb_samples(&b, 5, 6, j, 2, 0);
	pb_samples(&b, 5, 9, i, 4, 0);
	pb_samples(&b, 5, 5, odd, 1, 0);
	pb_samples(&b, 5, 5, pb_stack(&b, ""), 2, 0);

	fx_expect_folded(&b.p, NULL,
		    "java 2\n"
		    "java;_start;main;a;x:y?z 1\n"
		    "java;_start;main;read;entry_SYSCALL_64_[k];ksys_read_[k] 3\n"
		    "java;_start;main;std::vector<int>::push_back_[i] 4\n"
		    "java;clone3;start_thread;Interpreter_[j];LFoo::bar_[j] 2\n");

	struct fold_opts o = FOLD_OPTS_DEFAULT;
	o.per_thread = 1;
	fx_expect_folded(&b.p, &o,
		    "C2 Compiler-6;clone3;start_thread;Interpreter_[j];LFoo::bar_[j] 2\n"
		    "java-5 2\n"
		    "java-5;_start;main;a;x:y?z 1\n"
		    "java-5;_start;main;read;entry_SYSCALL_64_[k];ksys_read_[k] 3\n"
		    "java-9;_start;main;std::vector<int>::push_back_[i] 4\n");

	o.per_thread = 0;
	o.comm = "C2 Compiler";
	fx_expect_folded(&b.p, &o, "java;clone3;start_thread;Interpreter_[j];LFoo::bar_[j] 2\n");
	pb_free(&b);
}

UNIT_TEST(stacks_fold_frames_and_order)
{
	struct cs_buf buf = { 0 };
	struct fold_frame fr = { .name = "f", .flags = PROFILE_FRAME_KERNEL };
	fold_format_frame(&buf, &fr);
	fr.flags = PROFILE_FRAME_INLINED;
	fold_format_frame(&buf, &fr);
	fr.flags = PROFILE_FRAME_JIT;
	fold_format_frame(&buf, &fr);
	fr.flags = PROFILE_FRAME_UNNAMED;
	fold_format_frame(&buf, &fr);
	UNIT_ASSERT(!strcmp(buf.data, "f_[k]f_[i]f_[j]f"));
	cs_buf_free(&buf);
}

struct fold_record {
	char lines[16][128];
	int n;
	const char *module_of_leaf;
	uint32_t line_of_leaf;
};

static int record_fold(void *arg, const struct fold_frame *frames, size_t nframes,
		       uint64_t count, uint64_t calls)
{
	struct fold_record *rec = arg;
	struct cs_buf b = { 0 };
	fold_format_stack(&b, frames, nframes);
	cs_buf_printf(&b, " %llu", (unsigned long long)count);
	if (rec->n < 16)
		snprintf(rec->lines[rec->n++], sizeof(rec->lines[0]), "%s", b.data);
	rec->module_of_leaf = frames[nframes - 1].module;
	rec->line_of_leaf = frames[nframes - 1].line;
	cs_buf_free(&b);
	return rec->n == 3 ? -EINTR : 0;
}

UNIT_TEST(stacks_fold_time_order)
{
	struct pbuild b;
	pb_init(&b);
	pb_process(&b, 1, 0, "p");
	uint32_t a = pb_stack(&b, "main;a=a.c:5");
	uint32_t c = pb_stack(&b, "main;c@/lib/libc.so.6");
	pb_samples(&b, 1, 1, a, 1, 0);
	pb_samples(&b, 1, 1, c, 1, 0);
	pb_sample_weighted(&b, 1, 1, a, 4, 0);

	struct fold_opts o = FOLD_OPTS_DEFAULT;
	o.time_order = 1;
	struct fold_record rec = { 0 };
	UNIT_ASSERT(fold_profile(&b.p, &o, record_fold, &rec) == -EINTR); /* stops at 3 */
	UNIT_ASSERT_EQ_INT(rec.n, 3);
	UNIT_ASSERT(!strcmp(rec.lines[0], "p;main;a 1"));
	UNIT_ASSERT(!strcmp(rec.lines[1], "p;main;c 1"));
	UNIT_ASSERT(!strcmp(rec.lines[2], "p;main;a 4"));
	UNIT_ASSERT(rec.module_of_leaf && !strcmp(rec.module_of_leaf, "app"));
	UNIT_ASSERT_EQ_INT(rec.line_of_leaf, 5);

	/* Merged: a's samples together, in name order. */
	memset(&rec, 0, sizeof(rec));
	UNIT_ASSERT(fold_profile(&b.p, NULL, record_fold, &rec) == 0);
	UNIT_ASSERT_EQ_INT(rec.n, 2);
	UNIT_ASSERT(!strcmp(rec.lines[0], "p;main;a 5"));
	UNIT_ASSERT(!strcmp(rec.lines[1], "p;main;c 1"));
	UNIT_ASSERT(rec.module_of_leaf && !strcmp(rec.module_of_leaf, "libc.so.6"));
	pb_free(&b);
}

UNIT_TEST(stacks_summary)
{
	struct pbuild b;
	char *text = NULL;
	size_t len = 0;
	build_app(&b);
	FILE *f = open_memstream(&text, &len);
	stacks_print_summary(&b.p, f, 2);
	fclose(f);
	fx_expect_text(text,
		    "csampler: 105 samples, 95.2% of stacks complete; top functions by self:\n"
		    "   57.14%  work_a  [app]\n"
		    "   28.57%  work_b  [app]\n"
		    "csampler: 'csampler report' shows the rest\n");
	free(text);
	pb_free(&b);
}

/* ---- Python frames ---- */

/* A Python process (pid 200): frames leaf first in the profile, root first here.
 *   10 samples in f, the interpreter's native code under it
 *    5 samples in zlib's deflate under a three-deep recursion of rec (lines 9, 10, 10)
 *    3 samples without Python frames */
static void build_python(struct pbuild *b)
{
	pb_init(b);
	pb_process(b, 200, 1, "py");
	pb_thread(b, 200, 200, "py");
	uint32_t s1 = pb_stack(b, "_start;main;_PyEval_EvalFrameDefault;<module>_[y]=m.py:1;"
				  "f_[y]=m.py:5;_PyEval_EvalFrameDefault;PyLong_Add");
	uint32_t s2 = pb_stack(b, "_start;main;<module>_[y]=m.py:1;rec_[y]=m.py:9;"
				  "rec_[y]=m.py:10;rec_[y]=m.py:10;compress@/lib/libz.so;"
				  "deflate@/lib/libz.so");
	uint32_t s3 = pb_stack(b, "_start;main;idle");
	pb_samples(b, 200, 200, s1, 10, 0);
	pb_samples(b, 200, 200, s2, 5, 0);
	pb_samples(b, 200, 200, s3, 3, 0);
}

UNIT_TEST(stacks_python_self_total)
{
	struct pbuild b;
	struct stacks_report r;
	aggregated(build_python, &b, &r);
	UNIT_ASSERT_EQ_INT(r.samples, 18);
	UNIT_ASSERT_EQ_INT(r.python_samples, 15);
	const struct stacks_function *f = find_func(&r, "f"), *rec = find_func(&r, "rec"),
				     *mod = find_func(&r, "<module>"), *defl = find_func(&r, "deflate");
	UNIT_ASSERT(f && rec && mod && defl);
	/* self: the innermost Python frame, the native frames under it counted for it */
	UNIT_ASSERT_EQ_INT(f->python_self, 10);
	UNIT_ASSERT_EQ_INT(f->self, 0);
	UNIT_ASSERT_EQ_INT(rec->python_self, 5);
	UNIT_ASSERT_EQ_INT(mod->python_self, 0);
	UNIT_ASSERT_EQ_INT(defl->python_self, 0); /* native: not a Python function */
	UNIT_ASSERT_EQ_INT(defl->self, 5);
	/* total: once per sample, however deep the recursion */
	UNIT_ASSERT_EQ_INT(rec->total, 5);
	UNIT_ASSERT_EQ_INT(mod->total, 15);
	/* the hottest line of rec is the innermost activation's (10), not its caller's (9) */
	UNIT_ASSERT_EQ_INT(rec->hot_line, 10);
	UNIT_ASSERT_EQ_INT(rec->hot_samples, 5);
	UNIT_ASSERT(!strcmp(rec->hot_file, "m.py"));

	struct stacks_function *py;
	size_t n = stacks_python_functions(&r, STACKS_SORT_SELF, &py);
	UNIT_ASSERT_EQ_INT(n, 3);
	UNIT_ASSERT(!strcmp(py[0].name, "f") && !strcmp(py[1].name, "rec") &&
		    !strcmp(py[2].name, "<module>"));
	free(py);
	n = stacks_python_functions(&r, STACKS_SORT_TOTAL, &py);
	UNIT_ASSERT_EQ_INT(n, 3);
	UNIT_ASSERT(!strcmp(py[0].name, "<module>") && !strcmp(py[1].name, "f") &&
		    !strcmp(py[2].name, "rec"));
	free(py);
	stacks_report_free(&r);

	/* no Python frames: no Python samples, no Python functions */
	struct pbuild nb;
	build_app(&nb);
	UNIT_ASSERT(stacks_aggregate(&nb.p, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.python_samples, 0);
	UNIT_ASSERT_EQ_INT(stacks_python_functions(&r, STACKS_SORT_SELF, &py), 0);
	free(py);
	stacks_report_free(&r);
	pb_free(&nb);
	pb_free(&b);
}

UNIT_TEST(stacks_python_view)
{
	struct pbuild b;
	struct profile view;
	struct stacks_report r;
	build_python(&b);
	stacks_python_view(&b.p, &view);
	char *text = fx_folded(&view, NULL);
	/* only Python frames under the root; the sample without any keeps its root */
	fx_expect_text(text,
		    "py 3\n"
		    "py;<module> (m.py:1);f (m.py:5) 10\n"
		    "py;<module> (m.py:1);rec (m.py:9);rec (m.py:10);rec (m.py:10) 5\n");
	free(text);
	UNIT_ASSERT(stacks_aggregate(&view, NULL, &r) == 0);
	UNIT_ASSERT_EQ_INT(r.samples, 18);
	UNIT_ASSERT_EQ_INT(r.python_samples, 15);
	UNIT_ASSERT(!find_func(&r, "deflate") && !find_func(&r, "main"));
	UNIT_ASSERT_EQ_INT(find_func(&r, "f")->self, 10); /* now the leaf */
	UNIT_ASSERT_EQ_INT(find_func(&r, "f")->python_self, 10);
	stacks_report_free(&r);
	/* the profile itself is unchanged */
	text = fx_folded(&b.p, NULL);
	UNIT_ASSERT(strstr(text, "deflate") != NULL);
	free(text);
	stacks_python_view_free(&view);
	pb_free(&b);
}

/* A Python function is its name in its file: every module's code is "<module>", and the
 * imports' <module> rows must not add up into the program's. */
UNIT_TEST(stacks_python_module_per_file)
{
	struct pbuild b;
	struct stacks_report r;
	pb_init(&b);
	pb_process(&b, 300, 1, "py");
	pb_thread(&b, 300, 300, "py");
	uint32_t s1 = pb_stack(&b, "_start;<module>_[y]=main.py:3;work_[y]=main.py:8");
	uint32_t s2 = pb_stack(&b, "_start;<module>_[y]=main.py:1;<module>_[y]=lib.py:4");
	pb_samples(&b, 300, 300, s1, 7, 0);
	pb_samples(&b, 300, 300, s2, 2, 0);
	UNIT_ASSERT(stacks_aggregate(&b.p, NULL, &r) == 0);
	struct stacks_function *py;
	size_t n = stacks_python_functions(&r, STACKS_SORT_TOTAL, &py);
	UNIT_ASSERT_EQ_INT(n, 3);
	/* main.py's <module>: in all 9 samples, never innermost; lib.py's: 2, innermost */
	UNIT_ASSERT(!strcmp(py[0].name, "<module>") && py[0].total == 9 && py[0].python_self == 0 &&
		    py[0].hot_file && !strcmp(py[0].hot_file, "main.py"));
	UNIT_ASSERT(!strcmp(py[1].name, "work") && py[1].total == 7);
	UNIT_ASSERT(!strcmp(py[2].name, "<module>") && py[2].total == 2 && py[2].python_self == 2 &&
		    py[2].hot_file && !strcmp(py[2].hot_file, "lib.py"));
	free(py);
	stacks_report_free(&r);
	pb_free(&b);
}
