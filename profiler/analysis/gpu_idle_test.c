/* gpu_idle_test.c: unit tests of gpu_idle.c and of the verdict built on it (gpu.c), on a small
 * synthetic profile with exact figures: idle intervals, the even share of an interval among its
 * samples, the four classes, the cause function, gpu_idle_between and folding --gpu-idle. */
#include "analysis/gpu.h"
#include "analysis/gpu_idle.h"
#include "analysis/fold.h"
#include "analysis/profile_builder.h"
#include "base/cs.h"
#include "base/unit.h"

#include <stdlib.h>
#include <string.h>

#define MS 1000000ull

static uint32_t idle_launch(struct pbuild *b, uint64_t time, const char *api, const char *stack)
{
	struct profile *p = &b->p;
	p->gpu_launches = cs_realloc(p->gpu_launches, (p->ngpu_launches + 1) * sizeof(*p->gpu_launches));
	p->gpu_launches[p->ngpu_launches] = (struct profile_gpu_launch){ .time = time, .pid = 7,
		.tid = 7, .correlation = (uint32_t)p->ngpu_launches + 1,
		.stack = pb_stack(b, stack), .api = pb_str(b, api) };
	return (uint32_t)p->ngpu_launches++;
}

static void idle_act(struct pbuild *b, uint32_t kind, uint64_t start, uint64_t end, uint32_t launch)
{
	struct profile *p = &b->p;
	p->gpu_activities = cs_realloc(p->gpu_activities,
				       (p->ngpu_activities + 1) * sizeof(*p->gpu_activities));
	p->gpu_activities[p->ngpu_activities++] = (struct profile_gpu_activity){ .kind = kind,
		.pid = 7, .tid = kind == PROFILE_GPU_API ? 7 : 0, .start = start, .end = end,
		.context = 1, .stream = 1, .launch = launch,
		.correlation = p->gpu_launches[launch].correlation,
		.node_launch = PROFILE_GPU_NO_LAUNCH };
}

static void idle_sample(struct pbuild *b, uint64_t time, uint32_t stack, uint32_t flags)
{
	pb_samples(b, 7, 7, stack, 1, flags);
	b->p.samples[b->p.nsamples_records - 1].time = time;
}

/* pid 7, one device. Window 0..30 ms (a launch's API span opens it, a sync span closes it);
 * kernels [10,12] and [20,21] ms: idle [0,10), [12,20), [21,30) = 27 ms. Samples: 9 in
 * main;load;decode at 1..9 ms (cpu: 10/9 ms each), one off the CPU at 15 ms (4 ms), one
 * inside a launch span at 16 ms (4 ms), one inside the sync span at 26 ms (9 ms), and one at
 * 11 ms while a kernel runs (not idle). */
static void build_idle(struct pbuild *b)
{
	pb_init(b);
	pb_process(b, 7, 1, "trainer");
	pb_thread(b, 7, 7, "trainer");
	uint32_t l0 = idle_launch(b, 0, "cudaLaunchKernel", "main;step;launch");
	uint32_t l1 = idle_launch(b, 15500000, "cudaLaunchKernel", "main;step;launch");
	uint32_t ls = idle_launch(b, 25 * MS, "cudaStreamSynchronize", "main;step;wait");
	idle_act(b, PROFILE_GPU_API, 0, MS / 2, l0);
	idle_act(b, PROFILE_GPU_KERNEL, 10 * MS, 12 * MS, l0);
	idle_act(b, PROFILE_GPU_API, 15500000, 16500000, l1);
	idle_act(b, PROFILE_GPU_KERNEL, 20 * MS, 21 * MS, l1);
	idle_act(b, PROFILE_GPU_API, 25 * MS, 30 * MS, ls);
	uint32_t decode = pb_stack(b, "main;load;decode");
	for (uint64_t t = 1; t <= 9; t++)
		idle_sample(b, t * MS, decode, 0);
	idle_sample(b, 11 * MS, pb_stack(b, "main;step;compute"), 0);
	idle_sample(b, 15 * MS, pb_stack(b, "main;step;take_gil;[off-cpu: futex]"),
		    PROFILE_SAMPLE_OFFCPU);
	idle_sample(b, 16 * MS, pb_stack(b, "main;step;launch;cudaLaunchKernel"), 0);
	idle_sample(b, 26 * MS, pb_stack(b, "main;step;wait;cudaStreamSynchronize"), 0);
	for (size_t i = 0; i < b->p.nframes; i++)   /* the builder has no suffix for a wait */
		if (!strcmp(profile_str(&b->p, b->p.frames[i].name), "[off-cpu: futex]"))
			b->p.frames[i].flags |= PROFILE_FRAME_OFFCPU;
	b->p.end_ns = 31 * MS;
}

static void free_idle(struct pbuild *b)
{
	pb_free(b);
}

UNIT_TEST(gpu_idle_intervals_classes_and_shares)
{
	struct pbuild b;
	struct gpu_idle g;
	char py[64];
	build_idle(&b);
	UNIT_ASSERT(gpu_idle_analyze(&b.p, -1, &g) == 0);
	UNIT_ASSERT_EQ_INT(g.nintervals, 3);
	UNIT_ASSERT(g.intervals[0].start == 0 && g.intervals[0].end == 10 * MS);
	UNIT_ASSERT(g.intervals[1].start == 12 * MS && g.intervals[1].end == 20 * MS);
	UNIT_ASSERT(g.intervals[2].start == 21 * MS && g.intervals[2].end == 30 * MS);
	UNIT_ASSERT(g.idle_ns == 27 * MS && g.sampled_ns == 27 * MS && g.longest_ns == 10 * MS);
	UNIT_ASSERT_EQ_INT(g.nsamples, 12);      /* not the one at 11 ms */
	UNIT_ASSERT_EQ_INT(g.weight, 12);
	UNIT_ASSERT_EQ_INT(g.class_weight[GPU_IDLE_CPU], 9);
	UNIT_ASSERT_EQ_INT(g.class_weight[GPU_IDLE_OFFCPU], 1);
	UNIT_ASSERT_EQ_INT(g.class_weight[GPU_IDLE_LAUNCH], 1);
	UNIT_ASSERT_EQ_INT(g.class_weight[GPU_IDLE_SYNC], 1);
	UNIT_ASSERT(g.class_ns[GPU_IDLE_CPU] > 10 * MS - 1 && g.class_ns[GPU_IDLE_CPU] < 10 * MS + 1);
	UNIT_ASSERT(g.class_ns[GPU_IDLE_SYNC] > 9 * MS - 1 && g.class_ns[GPU_IDLE_SYNC] < 9 * MS + 1);
	UNIT_ASSERT(g.class_ns[GPU_IDLE_OFFCPU] > 4 * MS - 1 && g.class_ns[GPU_IDLE_OFFCPU] < 4 * MS + 1);
	/* samples in time order; stacks by idle ns: decode 10 ms, then the sync 9 ms */
	for (size_t i = 1; i < g.nsamples; i++)
		UNIT_ASSERT(g.samples[i - 1].sample < g.samples[i].sample);
	UNIT_ASSERT_EQ_INT(g.nstacks, 4);
	UNIT_ASSERT(!strcmp(gpu_idle_leaf(&b.p, g.stacks[0].stack, py, sizeof(py)), "decode"));
	UNIT_ASSERT(g.stacks[0].samples == 9 && g.stacks[0].percent > 37.0 && g.stacks[0].percent < 37.1);
	UNIT_ASSERT_EQ_INT(g.stacks[1].cls, GPU_IDLE_SYNC);
	UNIT_ASSERT(!strcmp(gpu_idle_class_name(g.stacks[1].cls), "sync"));
	UNIT_ASSERT(g.intervals[0].top_stack == g.stacks[0].stack);
	/* the off-CPU leaf is skipped for the function waiting */
	uint32_t gil = b.p.samples[10].stack;
	UNIT_ASSERT(!strcmp(gpu_idle_leaf(&b.p, gil, py, sizeof(py)), "take_gil") && !*py);

	uint32_t top;
	uint64_t ns = gpu_idle_between(&b.p, &g, 7, 5 * MS, 16 * MS, &top);
	UNIT_ASSERT(ns == 9 * MS);               /* [5,10) and [12,16) */
	UNIT_ASSERT(top == g.stacks[0].stack);   /* decode 5 x 10/9 ms against the GIL's 4 */
	UNIT_ASSERT(gpu_idle_between(&b.p, &g, 8, 0, 30 * MS, &top) == 0 && top == GPU_IDLE_NO_STACK);
	UNIT_ASSERT(gpu_idle_between(&b.p, &g, -1, 12 * MS, 12 * MS, NULL) == 0);
	gpu_idle_free(&g);
	free_idle(&b);
}

UNIT_TEST(gpu_idle_verdict_names_the_cause)
{
	struct pbuild b;
	struct gpu_analysis a;
	build_idle(&b);
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &a) == 0 && a.present);
	UNIT_ASSERT_EQ_INT(a.nverdicts, 1);
	const struct gpu_verdict *v = &a.verdicts[0];
	UNIT_ASSERT_EQ_INT(v->bound, GPU_BOUND_INPUT);   /* not launch-bound: the GPU waits on decode */
	UNIT_ASSERT(!strcmp(gpu_bound_name(v->bound), "input-bound"));
	UNIT_ASSERT(v->idle_ns == 27 * MS && v->idle_weight == 12);
	UNIT_ASSERT(v->cause_function && !strcmp(v->cause_function, "decode"));
	UNIT_ASSERT(v->cause_pct > 37.0 && v->cause_pct < 37.1);   /* 10 of 27 ms */
	gpu_analysis_free(&a);

	/* the same idle time spent waiting off the CPU: off-CPU-bound, naming the waiting function */
	for (size_t i = 0; i < 9; i++) {
		b.p.samples[i].flags = PROFILE_SAMPLE_OFFCPU;
		b.p.samples[i].stack = b.p.samples[10].stack;
	}
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &a) == 0);
	UNIT_ASSERT_EQ_INT(a.verdicts[0].bound, GPU_BOUND_OFFCPU);
	UNIT_ASSERT(!strcmp(a.verdicts[0].cause_function, "take_gil"));
	gpu_analysis_free(&a);

	/* too few idle samples: the old rule, launch-bound */
	b.p.nsamples_records = 5;
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &a) == 0);
	UNIT_ASSERT_EQ_INT(a.verdicts[0].bound, GPU_BOUND_LAUNCH);
	gpu_analysis_free(&a);
	free_idle(&b);
}

struct idle_fold {
	uint64_t count, calls, lines;
};

static int idle_fold_cb(void *arg, const struct fold_frame *frames, size_t nframes,
			uint64_t count, uint64_t calls)
{
	struct idle_fold *f = arg;
	f->count += count;
	f->calls += calls;
	f->lines++;
	for (size_t i = 0; i < nframes; i++)
		UNIT_ASSERT(strcmp(frames[i].name, "compute"));   /* ran while the GPU was busy */
	return 0;
}

UNIT_TEST(gpu_idle_fold_keeps_only_idle_samples)
{
	struct pbuild b;
	struct fold_opts o = FOLD_OPTS_DEFAULT;
	struct idle_fold f = { 0 };
	build_idle(&b);
	o.source = FOLD_GPU_IDLE;
	UNIT_ASSERT(fold_profile(&b.p, &o, idle_fold_cb, &f) == 0);
	UNIT_ASSERT_EQ_INT(f.count, 12);
	UNIT_ASSERT_EQ_INT(f.lines, 4);
	UNIT_ASSERT(f.calls >= 27 * MS - 4 && f.calls <= 27 * MS + 4);  /* idle ns, rounded per stack */
	free_idle(&b);
}
