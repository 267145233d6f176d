/* steps_test.c: unit tests of steps.c on synthetic profiles with exact figures: steps from a
 * function's calls on the main thread (other threads ignored, a Python frame matched by its
 * function name), from NVTX ranges (the automatic names, and --step RANGE), --steps parsing
 * and the filter it drives, the per-step figures (wall, CPU split, GPU busy, launches), the
 * nearest-rank percentiles and the warm-up rule, and the rank table's straggler. */
#include "analysis/filter.h"
#include "analysis/profile_builder.h"
#include "analysis/report_steps.h"
#include "analysis/steps.h"
#include "base/cs.h"
#include "base/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define T0 1000000000ull

static void act(struct pbuild *b, uint32_t kind, uint32_t pid, const char *name, uint64_t start,
		uint64_t end)
{
	struct profile *p = &b->p;
	p->gpu_activities = cs_realloc(p->gpu_activities,
				       (p->ngpu_activities + 1) * sizeof(*p->gpu_activities));
	p->gpu_activities[p->ngpu_activities++] = (struct profile_gpu_activity){ .kind = kind,
		.pid = pid, .tid = pid, .start = start, .end = end, .name = name ? pb_str(b, name) : 0,
		.launch = PROFILE_GPU_NO_LAUNCH, .node_launch = PROFILE_GPU_NO_LAUNCH };
}

static void launch(struct pbuild *b, uint32_t pid, uint32_t tid, uint64_t time, uint32_t stack)
{
	struct profile *p = &b->p;
	p->gpu_launches = cs_realloc(p->gpu_launches, (p->ngpu_launches + 1) * sizeof(*p->gpu_launches));
	p->gpu_launches[p->ngpu_launches] = (struct profile_gpu_launch){ .time = time, .pid = pid,
		.tid = tid, .correlation = (uint32_t)p->ngpu_launches + 1, .stack = stack };
	p->ngpu_launches++;
}

/* A profile sampled at 1 kHz (1 ms a sample) with process pid "train". */
static void init_train(struct pbuild *b, uint32_t pid)
{
	pb_init(b);
	pb_header(b, "rate_hz", "1000");
	pb_process(b, pid, 1, "train");
}

/* pid 7, main thread 7, 1 ms apart from T0: setup x2, then steps:
 *   t=2..6   load x2, compute x3         step 1 [2, 7)
 *   t=7..9   load x1, compute x2         step 2 [7, 10)
 *   t=10..12 load x2 (one a Python frame of loader.load_batch), compute x1  step 3 [10, 13)
 * plus a worker thread 8 in load_batch at t=13 (ignored by the delimiting, counted as CPU),
 * and a GPU kernel ending at 20 ms: the last step ends there. */
static void build_fn(struct pbuild *b)
{
	init_train(b, 7);
	pb_thread(b, 7, 7, "train");
	pb_thread(b, 7, 8, "worker");
	uint32_t setup = pb_stack(b, "_start;main;setup");
	uint32_t load = pb_stack(b, "_start;main;load_batch;read");
	uint32_t comp = pb_stack(b, "_start;main;compute");
	uint32_t pyload = pb_stack(b, "_start;main;_PyEval_EvalFrameDefault@/usr/lib/libpython3.11.so;"
				      "loader.load_batch_[y];PyEval_Call@/usr/bin/python3.11");
	pb_samples(b, 7, 7, setup, 2, 0);
	pb_samples(b, 7, 7, load, 2, 0);
	pb_samples(b, 7, 7, comp, 3, 0);
	pb_samples(b, 7, 7, load, 1, 0);
	pb_samples(b, 7, 7, comp, 2, 0);
	pb_samples(b, 7, 7, load, 1, 0);
	pb_samples(b, 7, 7, pyload, 1, 0);
	pb_samples(b, 7, 7, comp, 1, PROFILE_SAMPLE_OFFCPU);
	pb_samples(b, 7, 8, load, 1, 0);
	act(b, PROFILE_GPU_KERNEL, 7, "k", T0 + 3 * MS, T0 + 5 * MS);      /* step 1: 2 of 5 ms */
	act(b, PROFILE_GPU_MEMCPY, 7, NULL, T0 + 4 * MS, T0 + 8 * MS);     /* 2 in step 1, 1 in 2 */
	act(b, PROFILE_GPU_KERNEL, 7, "k", T0 + 19 * MS, T0 + 20 * MS);    /* step 3 */
	launch(b, 7, 7, T0 + 3 * MS + 500000, comp);  /* compute began before its first sample */
	launch(b, 7, 7, T0 + 9 * MS + 500000, comp);
}

UNIT_TEST(steps_function_delimited)
{
	struct pbuild b;
	struct steps s;
	build_fn(&b);
	UNIT_ASSERT(steps_detect(&b.p, "load_batch", &s) == 0);
	UNIT_ASSERT(s.source == STEPS_FUNCTION && !strcmp(s.name, "load_batch"));
	UNIT_ASSERT_EQ_INT(s.nprocs, 1);
	UNIT_ASSERT_EQ_INT(s.procs[0].pid, 7);
	UNIT_ASSERT_EQ_INT(s.nsteps, 3);
	UNIT_ASSERT(s.steps[0].start == T0 + 2 * MS && s.steps[0].end == T0 + 7 * MS);
	UNIT_ASSERT(s.steps[1].start == T0 + 7 * MS && s.steps[1].end == T0 + 10 * MS);
	UNIT_ASSERT(s.steps[2].start == T0 + 10 * MS && s.steps[2].end == T0 + 20 * MS);
	steps_free(&s);

	/* compute delimits too, launch records (exact time and stack) included: the launch at
	 * 3.5 ms is in compute before its first sample at 4 ms */
	UNIT_ASSERT(steps_detect(&b.p, "compute", &s) == 0);
	UNIT_ASSERT_EQ_INT(s.nsteps, 3);
	UNIT_ASSERT(s.steps[0].start == T0 + 3 * MS + 500000 && s.steps[0].end == T0 + 8 * MS);
	UNIT_ASSERT(s.steps[1].start == T0 + 8 * MS);
	UNIT_ASSERT(s.steps[2].start == T0 + 12 * MS && s.steps[2].end == T0 + 20 * MS);
	steps_free(&s);

	/* no such function, no such range: nothing */
	UNIT_ASSERT(steps_detect(&b.p, "nothing", &s) == 0 && s.source == STEPS_NONE && !s.nsteps);
	steps_free(&s);
	UNIT_ASSERT(steps_detect(&b.p, NULL, &s) == 0 && s.source == STEPS_NONE);
	steps_free(&s);
	pb_free(&b);
}

UNIT_TEST(steps_nvtx)
{
	static const char *const yes[] = { "step", "Step", "STEP 3", "step#2", "step_10", "step7",
					   "iteration", "Iteration 12", "iteration_3" };
	static const char *const no[] = { "stepper", "steps", "my step", "iter", "", "step-1" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		UNIT_ASSERT(steps_auto_name(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		UNIT_ASSERT(!steps_auto_name(no[i]));

	struct pbuild b;
	struct steps s;
	build_fn(&b);
	act(&b, PROFILE_GPU_MARKER, 7, "step 2", T0 + 10 * MS, T0 + 14 * MS);
	act(&b, PROFILE_GPU_MARKER, 7, "step 1", T0 + 2 * MS, T0 + 9 * MS);
	act(&b, PROFILE_GPU_MARKER, 7, "stepper", T0, T0 + 1 * MS);
	act(&b, PROFILE_GPU_MARKER, 7, "step 3", T0 + 15 * MS, 0);          /* an instant */
	act(&b, PROFILE_GPU_MARKER, 7, "fwd", T0 + 3 * MS, T0 + 4 * MS);
	act(&b, PROFILE_GPU_MARKER, 9, "step 1", T0 + 1 * MS, T0 + 2 * MS); /* another process */
	UNIT_ASSERT(steps_detect(&b.p, NULL, &s) == 0);
	UNIT_ASSERT(s.source == STEPS_NVTX && !strcmp(s.name, "step*"));
	UNIT_ASSERT_EQ_INT(s.nprocs, 2);
	const struct steps_proc *sp = steps_of(&s, 7);
	UNIT_ASSERT(sp && sp->n == 2);
	UNIT_ASSERT(s.steps[sp->first].start == T0 + 2 * MS && s.steps[sp->first].end == T0 + 9 * MS);
	UNIT_ASSERT(s.steps[sp->first + 1].start == T0 + 10 * MS);
	UNIT_ASSERT(steps_of(&s, 9) && steps_of(&s, 9)->n == 1);
	steps_free(&s);

	/* --step RANGE: that name only, before any function of that name */
	UNIT_ASSERT(steps_detect(&b.p, "fwd", &s) == 0);
	UNIT_ASSERT(s.source == STEPS_NVTX && !strcmp(s.name, "fwd") && s.nsteps == 1);
	steps_free(&s);
	pb_free(&b);
}

UNIT_TEST(steps_range_syntax)
{
	uint32_t a, z;
	UNIT_ASSERT(steps_parse_range("10-12", &a, &z) == 0 && a == 10 && z == 12);
	UNIT_ASSERT(steps_parse_range("5", &a, &z) == 0 && a == 5 && z == 5);
	UNIT_ASSERT(steps_parse_range("7-", &a, &z) == 0 && a == 7 && z == UINT32_MAX);
	UNIT_ASSERT(steps_parse_range("3-3", &a, &z) == 0 && a == 3 && z == 3);
	static const char *const bad[] = { "", "0", "0-2", "3-2", "a", "-3", "1-x", "1--2", "1,2",
					   "+1", " 1", "1-0", "99999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (steps_parse_range(bad[i], &a, &z) != -EINVAL) {
			fprintf(stderr, "accepted '%s'\n", bad[i]);
			UNIT_ASSERT(0);
		}
	struct profile_filter f = PROFILE_FILTER_ALL;
	UNIT_ASSERT(profile_filter_parse_steps(&f, "test", "2-3") == 0 && f.steps_first == 2 &&
		    f.steps_last == 3 && profile_filter_active(&f));
	UNIT_ASSERT(profile_filter_parse_steps(&f, "test", "x") == -EINVAL);
}

UNIT_TEST(steps_percentiles_and_warmup)
{
	uint64_t v[10] = { 10, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	UNIT_ASSERT_EQ_INT(steps_percentile(v, 10, 50), 5);
	UNIT_ASSERT_EQ_INT(steps_percentile(v, 10, 90), 9);
	UNIT_ASSERT_EQ_INT(steps_percentile(v, 10, 100), 10);
	UNIT_ASSERT_EQ_INT(steps_percentile(v, 1, 50), 1);
	UNIT_ASSERT_EQ_INT(steps_percentile(v, 0, 50), 0);

	struct steps_row r[8] = { { .wall_ns = 30 }, { .wall_ns = 20 }, { .wall_ns = 5 },
				  { .wall_ns = 5 },  { .wall_ns = 6 },  { .wall_ns = 5 },
				  { .wall_ns = 40 }, { .wall_ns = 5 } };
	UNIT_ASSERT_EQ_INT(steps_flag_warmup(r, 8), 2);
	UNIT_ASSERT(r[0].warmup && r[1].warmup && !r[2].warmup && !r[6].warmup);
	struct steps_row q[4] = { { .wall_ns = 7 }, { .wall_ns = 5 }, { .wall_ns = 5 },
				  { .wall_ns = 5 } };
	UNIT_ASSERT_EQ_INT(steps_flag_warmup(q, 4), 0); /* 7 is not above 1.5 x 5 */
	struct steps_row two[2] = { { .wall_ns = 100 }, { .wall_ns = 1 } };
	UNIT_ASSERT_EQ_INT(steps_flag_warmup(two, 2), 0); /* too few steps to tell */
}

UNIT_TEST(steps_measure_figures)
{
	struct pbuild b;
	struct steps s;
	struct steps_table *t;
	build_fn(&b);
	UNIT_ASSERT(steps_detect(&b.p, "load_batch", &s) == 0 && s.nsteps == 3);
	UNIT_ASSERT(steps_measure(&b.p, &s, NULL, MS, 1, &t) == 0);
	UNIT_ASSERT(t[0].pid == 7 && t[0].nrows == 3 && t[0].gpu);
	const struct steps_row *r = t[0].rows;
	UNIT_ASSERT(r[0].step == 1 && r[0].wall_ns == 5 * MS && r[0].cpu_ns == 5 * MS &&
		    r[0].native_ns == 5 * MS && r[0].python_ns == 0);
	UNIT_ASSERT(r[0].busy_ns == 4 * MS && r[0].gpu_busy_pct == 80.0); /* [3, 7) */
	UNIT_ASSERT(r[0].launches == 1);
	UNIT_ASSERT(r[1].wall_ns == 3 * MS && r[1].busy_ns == 1 * MS && r[1].launches == 1);
	/* step 3: load (native), the Python load (python: the innermost frame outside the
	 * interpreter), compute off the CPU, and the worker's sample at 13 ms */
	UNIT_ASSERT(r[2].wall_ns == 10 * MS && r[2].python_ns == MS && r[2].native_ns == 2 * MS &&
		    r[2].offcpu_ns == MS && r[2].cpu_ns == 3 * MS && r[2].busy_ns == MS);
	UNIT_ASSERT(t[0].p50_ns == 5 * MS && t[0].p90_ns == 10 * MS && t[0].max_ns == 10 * MS);
	/* step 1 (5 ms) is above 1.5x the median of the steps after it (3 and 10: nearest rank,
	 * 3): warm-up, and left out of the slowest */
	UNIT_ASSERT(t[0].nwarmup == 1 && r[0].warmup && !r[1].warmup);
	UNIT_ASSERT(t[0].nslowest == 2 && t[0].slowest[0] == 3 && t[0].slowest[1] == 2);
	steps_tables_free(t, s.nprocs);

	/* numbering from a --steps filter's first step */
	UNIT_ASSERT(steps_measure(&b.p, &s, NULL, MS, 4, &t) == 0 && t[0].rows[0].step == 4);
	steps_tables_free(t, s.nprocs);
	steps_free(&s);
	pb_free(&b);
}

UNIT_TEST(steps_filter_window)
{
	struct pbuild b;
	build_fn(&b);
	struct profile_filter f = PROFILE_FILTER_ALL;
	f.step = "load_batch";
	UNIT_ASSERT(profile_filter_parse_steps(&f, "test", "2") == 0);
	UNIT_ASSERT(profile_filter_apply(&b.p, &f, "test") == 0);
	/* step 2 is [7, 10): 3 samples, the memcpy starting in step 1 is out, the launch in */
	UNIT_ASSERT_EQ_INT(b.p.nsamples, 3);
	UNIT_ASSERT(b.p.start_ns == T0 + 7 * MS && b.p.end_ns == T0 + 10 * MS);
	UNIT_ASSERT(b.p.filtered.step_first == 2 && strstr(b.p.filtered.text, "steps 2"));
	UNIT_ASSERT_EQ_INT(b.p.ngpu_activities, 0);
	UNIT_ASSERT_EQ_INT(b.p.ngpu_launches, 1);
	/* detected again on what is left, the step keeps its number and its end */
	struct steps s;
	struct steps_table *t;
	UNIT_ASSERT(steps_detect(&b.p, b.p.filtered.step, &s) == 0 && s.nsteps == 1);
	UNIT_ASSERT(steps_measure(&b.p, &s, NULL, MS, b.p.filtered.step_first, &t) == 0);
	UNIT_ASSERT(t[0].rows[0].step == 2 && t[0].rows[0].wall_ns == 3 * MS);
	steps_tables_free(t, s.nprocs);
	steps_free(&s);
	pb_free(&b);

	/* out of range, and no steps at all: refused */
	build_fn(&b);
	f = (struct profile_filter)PROFILE_FILTER_ALL;
	f.step = "load_batch";
	UNIT_ASSERT(profile_filter_parse_steps(&f, "test", "3-4") == 0);
	UNIT_ASSERT(profile_filter_apply(&b.p, &f, "test") == -EINVAL);
	f.step = NULL;
	UNIT_ASSERT(profile_filter_parse_steps(&f, "test", "1") == 0);
	UNIT_ASSERT(profile_filter_apply(&b.p, &f, "test") == -EINVAL);
	pb_free(&b);
}

/* 1,000 NVTX steps over 1,000,000 samples (4 threads), 100,000 kernels and launches: detection
 * and measuring give the exact per-step figures at this size. The time it takes is printed, not
 * asserted (a loaded CI machine took over 2 s once); scripts/bench-steps.sh measures speed. */
UNIT_TEST(steps_1000_steps_at_size)
{
	struct pbuild b;
	init_train(&b, 7);
	for (uint32_t t = 0; t < 4; t++)
		pb_thread(&b, 7, 7 + t, "train");
	uint32_t st[4] = { pb_stack(&b, "_start;main;load_batch"), pb_stack(&b, "_start;main;compute"),
			   pb_stack(&b, "_start;main;py_[y]"), pb_stack(&b, "clone;worker") };
	size_t n = 1000000;
	b.p.samples = cs_malloc(n * sizeof(*b.p.samples));
	for (size_t i = 0; i < n; i++)
		b.p.samples[i] = (struct profile_sample){ .time = T0 + i * 10000, .pid = 7,
			.tid = 7 + (uint32_t)(i % 4), .stack = st[i % 4], .weight = 1 };
	b.p.nsamples_records = n;
	b.p.nsamples = n;
	b.p.end_ns = T0 + n * 10000;
	for (size_t k = 0; k < 1000; k++)
		act(&b, PROFILE_GPU_MARKER, 7, "step", T0 + k * 10 * MS, T0 + (k + 1) * 10 * MS);
	for (size_t k = 0; k < 100000; k++) {
		launch(&b, 7, 7, T0 + k * 100000, st[1]);
		act(&b, PROFILE_GPU_KERNEL, 7, "k", T0 + k * 100000 + 10000, T0 + k * 100000 + 60000);
	}
	uint64_t t0 = cs_monotonic_ns();
	struct steps s;
	struct steps_table *t;
	UNIT_ASSERT(steps_detect(&b.p, NULL, &s) == 0 && s.nsteps == 1000);
	UNIT_ASSERT(steps_measure(&b.p, &s, NULL, MS, 1, &t) == 0);
	double sec = (double)(cs_monotonic_ns() - t0) / 1e9;
	fprintf(stderr, "steps at size: 1000 steps, %zu samples, %zu activities: %.3f s\n", n,
		b.p.ngpu_activities, sec);
	UNIT_ASSERT(t[0].rows[5].launches == 100 && t[0].rows[5].cpu_ns == 1000 * MS);
	UNIT_ASSERT(t[0].rows[5].gpu_busy_pct > 49.9 && t[0].rows[5].gpu_busy_pct < 50.1);
	steps_tables_free(t, s.nprocs);
	steps_free(&s);
	pb_free(&b);
}

/* Two ranks (task labels, as csampler merge writes them), 4 steps each from NVTX ranges; rank 1
 * spends 3 ms more of compute per step. report --ranks names rank 1 and compute (not main or
 * _start, which only contain it), with the exact excess. */
UNIT_TEST(steps_ranks_straggler)
{
	struct pbuild b;
	init_train(&b, 10);
	pb_process(&b, 20, 1, "train");
	pb_thread(&b, 10, 10, "train");
	pb_thread(&b, 20, 20, "train");
	static struct profile_label labels[2] = { { .id = 10, .orig_id = 10, .rank = 0 },
						  { .id = 20, .orig_id = 20, .rank = 1 } };
	b.p.labels = labels;
	b.p.nlabels = 2;
	uint32_t load = pb_stack(&b, "_start;main;load_batch"), comp = pb_stack(&b, "_start;main;compute");
	/* rank 0: steps of 1 load + 2 compute (3 ms); rank 1: 1 load + 5 compute (6 ms) */
	uint64_t t = T0;
	for (int k = 0; k < 4; k++) {
		act(&b, PROFILE_GPU_MARKER, 10, "step", t, t + 3 * MS);
		pb_samples(&b, 10, 10, load, 1, 0);
		pb_samples(&b, 10, 10, comp, 2, 0);
		t += 3 * MS;
	}
	for (int k = 0; k < 4; k++) {
		act(&b, PROFILE_GPU_MARKER, 20, "step", t, t + 6 * MS);
		pb_samples(&b, 20, 20, load, 1, 0);
		pb_samples(&b, 20, 20, comp, 5, 0);
		t += 6 * MS;
	}
	struct report_opts o = REPORT_OPTS_DEFAULT;
	o.format = REPORT_JSON;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	UNIT_ASSERT(report_ranks_write(f, &b.p, &o) == 0);
	fclose(f);
	const char *want[] = {
		"\"source\":\"nvtx:step\"",
		"{\"rank\":0,\"pid\":10,\"steps\":4,\"step_p50_ns\":3000000,\"step_p90_ns\":3000000,",
		"{\"rank\":1,\"pid\":20,\"steps\":4,\"step_p50_ns\":6000000,",
		"\"straggler\":{\"rank\":1,\"by\":\"step_p50\",\"step_p50_ns\":6000000,"
		"\"median_step_p50_ns\":3000000,\"basis\":\"per_step\",\"functions\":[\n  "
		"{\"name\":\"compute\",\"ns\":5000000,\"median_ns\":2000000,\"excess_ns\":3000000}]",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(buf, want[i])) {
			fprintf(stderr, "want %s in\n%s\n", want[i], buf);
			UNIT_ASSERT(0);
		}
	free(buf);

	/* the step table's JSON per process */
	f = open_memstream(&buf, &len);
	UNIT_ASSERT(report_steps_write(f, &b.p, &o) == 0);
	fclose(f);
	UNIT_ASSERT(strstr(buf, "{\"steps\":{\"source\":\"nvtx:step\",\"pid\":10,"));
	UNIT_ASSERT(strstr(buf, "\"steps_processes\":[{\"source\":\"nvtx:step\",\"pid\":10,"));
	UNIT_ASSERT(strstr(buf, "{\"source\":\"nvtx:step\",\"pid\":20,"));
	UNIT_ASSERT(strstr(buf, "{\"step\":1,\"start_ns\":12000000,\"wall_ns\":6000000,"
				"\"gpu_busy_pct\":0.0000,\"gpu_idle_ns\":0,\"idle_cause\":null,"
				"\"cpu_ns\":6000000,\"python_ns\":0,\"native_ns\":6000000,\"offcpu_ns\":0,"
				"\"launches\":0,\"warmup\":false}"));
	free(buf);

	/* one rank only: refused */
	b.p.nlabels = 1;
	labels[1].rank = 0;
	f = open_memstream(&buf, &len);
	UNIT_ASSERT(report_ranks_write(f, &b.p, &o) == -ENOENT);
	fclose(f);
	free(buf);
	b.p.labels = NULL;
	b.p.nlabels = 0;
	pb_free(&b);
}
