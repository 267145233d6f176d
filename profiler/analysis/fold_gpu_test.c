/* fold_gpu_test.c: unit tests of the GPU view (fold_gpu.c) on a synthetic profile: leaves per
 * activity kind, nested NVTX ranges on the launching thread only, activities without a launch
 * stack, lost timestamps and API spans left out, calls, filters, per-thread roots, time
 * order, and FOLD_BOTH's roots summing to the CPU time and the GPU time. */
#include "analysis/fold.h"
#include "analysis/fixtures.h"
#include "analysis/stacks.h"
#include "base/cs.h"
#include "base/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct gpu_fixture {
	struct pbuild b;
	size_t launches_cap, activities_cap;
};

static uint32_t fx_launch(struct gpu_fixture *fx, uint32_t tid, uint64_t time, uint32_t stack)
{
	struct profile *p = &fx->b.p;
	cs_grow(&p->gpu_launches, &fx->launches_cap, p->ngpu_launches + 1, sizeof(*p->gpu_launches));
	p->gpu_launches[p->ngpu_launches] = (struct profile_gpu_launch){
		.time = time, .pid = 1, .tid = tid, .correlation = (uint32_t)p->ngpu_launches + 1,
		.stack = stack,
	};
	return (uint32_t)p->ngpu_launches++;
}

static void fx_activity(struct gpu_fixture *fx, uint32_t kind, uint32_t launch, uint64_t start,
			uint64_t end, const char *name, uint32_t detail, uint32_t tid)
{
	struct profile *p = &fx->b.p;
	cs_grow(&p->gpu_activities, &fx->activities_cap, p->ngpu_activities + 1,
		sizeof(*p->gpu_activities));
	p->gpu_activities[p->ngpu_activities++] = (struct profile_gpu_activity){
		.kind = kind, .pid = 1, .tid = tid, .start = start, .end = end,
		.name = name ? pb_str(&fx->b, name) : 0, .detail = detail, .launch = launch,
		.node_launch = PROFILE_GPU_NO_LAUNCH,
	};
}

/* Thread 1 (app) launches under the ranges outer [100, 1000) and inner [200, 400); thread 2
 * (worker) under other [0, 10000). Activities are in start order, as profile_load sorts them. */
static void fx_build(struct gpu_fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	struct pbuild *b = &fx->b;
	pb_init(b);
	pb_process(b, 1, 0, "app");
	pb_thread(b, 1, 1, "app");
	pb_thread(b, 1, 2, "worker");
	pb_header(b, "rate_hz", "1000");
	uint32_t sa = pb_stack(b, "main;step;launch_a");
	uint32_t sc = pb_stack(b, "main;step;copy");
	pb_samples(b, 1, 1, sa, 3, 0);
	pb_samples(b, 1, 2, sc, 2, 0);

	uint32_t l0 = fx_launch(fx, 1, 150, sa);   /* outer */
	uint32_t l1 = fx_launch(fx, 1, 250, sa);   /* outer, inner */
	uint32_t l2 = fx_launch(fx, 1, 300, sc);   /* outer, inner */
	uint32_t l3 = fx_launch(fx, 2, 500, sa);   /* other */
	uint32_t l4 = fx_launch(fx, 1, 2000, sa);  /* none */
	uint32_t none = PROFILE_GPU_NO_LAUNCH;

	fx_activity(fx, PROFILE_GPU_MARKER, none, 0, 10000, "other", 0, 2);
	fx_activity(fx, PROFILE_GPU_MARKER, none, 100, 1000, "outer", 0, 1);
	fx_activity(fx, PROFILE_GPU_MARKER, none, 200, 400, "inner", 0, 1);
	fx_activity(fx, PROFILE_GPU_MARKER, none, 250, 0, "instant", 0, 1); /* a point: no frame */
	fx_activity(fx, PROFILE_GPU_API, l0, 150, 250, NULL, 0, 1);        /* CPU side: left out */
	fx_activity(fx, PROFILE_GPU_KERNEL, l0, 1000, 1010, "void k<int&>(int&)", 0, 0);
	fx_activity(fx, PROFILE_GPU_KERNEL, l1, 1100, 1120, "void k<int&>(int&)", 0, 0);
	fx_activity(fx, PROFILE_GPU_KERNEL, l1, 1200, 1201, "void k<int&>(int&)", 0, 0);
	fx_activity(fx, PROFILE_GPU_MEMCPY, l2, 1300, 1305, NULL, 2, 0);
	fx_activity(fx, PROFILE_GPU_KERNEL, l3, 1400, 1413, "void k<int&>(int&)", 0, 0);
	fx_activity(fx, PROFILE_GPU_KERNEL, none, 1500, 1511, "orphan", 0, 0);
	fx_activity(fx, PROFILE_GPU_MEMSET, l4, 2100, 2107, NULL, 0, 0);
	fx_activity(fx, PROFILE_GPU_SYNC, l4, 2200, 2203, NULL, 0, 1);
	fx_activity(fx, PROFILE_GPU_KERNEL, l0, 0, 0, "lost", 0, 0);       /* lost timestamps */
	/* (the lost one sorts first in a loaded profile; its place does not matter here) */
}

static void fx_free(struct gpu_fixture *fx)
{
	pb_free(&fx->b);
}

UNIT_TEST(fold_gpu_leaves_and_ranges)
{
	struct gpu_fixture fx;
	fx_build(&fx);
	struct fold_opts o = FOLD_OPTS_DEFAULT;
	o.source = FOLD_GPU;
	fx_expect_folded(&fx.b.p, &o,
		   "app;[no launch stack];[gpu] orphan 11\n"
		   "app;[nvtx] other;main;step;launch_a;[gpu] void k<int&>(int&) 13\n"
		   "app;[nvtx] outer;[nvtx] inner;main;step;copy;[memcpy DtoH] 5\n"
		   "app;[nvtx] outer;[nvtx] inner;main;step;launch_a;[gpu] void k<int&>(int&) 21\n"
		   "app;[nvtx] outer;main;step;launch_a;[gpu] void k<int&>(int&) 10\n"
		   "app;main;step;launch_a;[memset] 7\n"
		   "app;main;step;launch_a;[sync] 3\n");

	o.per_thread = 1;
	o.tid = 2;
	fx_expect_folded(&fx.b.p, &o, "worker-2;[nvtx] other;main;step;launch_a;[gpu] void k<int&>(int&) 13\n");

	o.per_thread = 0;
	o.tid = -1;
	o.comm = "worker";
	fx_expect_folded(&fx.b.p, &o, "app;[nvtx] other;main;step;launch_a;[gpu] void k<int&>(int&) 13\n");
	fx_free(&fx);
}

struct gpu_calls {
	uint64_t total_ns, calls, max_calls, nstacks;
	char first[160];
};

static int gpu_calls_fn(void *arg, const struct fold_frame *frames, size_t nframes,
			uint64_t count, uint64_t calls)
{
	struct gpu_calls *c = arg;
	struct cs_buf b = { 0 };
	fold_format_stack(&b, frames, nframes);
	cs_buf_put(&b, "", 1);
	if (!c->nstacks)
		snprintf(c->first, sizeof(c->first), "%s %llu", b.data, (unsigned long long)count);
	cs_buf_free(&b);
	c->nstacks++;
	c->total_ns += count;
	c->calls += calls;
	if (calls > c->max_calls)
		c->max_calls = calls;
	return 0;
}

UNIT_TEST(fold_gpu_calls_and_time_order)
{
	struct gpu_fixture fx;
	fx_build(&fx);
	struct fold_opts o = FOLD_OPTS_DEFAULT;
	o.source = FOLD_GPU;
	struct gpu_calls c = { 0 };
	UNIT_ASSERT(fold_profile(&fx.b.p, &o, gpu_calls_fn, &c) == 0);
	UNIT_ASSERT_EQ_INT(c.nstacks, 7);
	UNIT_ASSERT_EQ_INT(c.total_ns, 70);
	UNIT_ASSERT_EQ_INT(c.calls, 8);      /* every timed kernel, copy, memset and sync */
	UNIT_ASSERT_EQ_INT(c.max_calls, 2);  /* the two kernels of one launch, merged */

	memset(&c, 0, sizeof(c));
	o.time_order = 1;
	UNIT_ASSERT(fold_profile(&fx.b.p, &o, gpu_calls_fn, &c) == 0);
	UNIT_ASSERT_EQ_INT(c.nstacks, 8);
	UNIT_ASSERT_EQ_INT(c.max_calls, 1);
	UNIT_ASSERT(!strcmp(c.first, "app;[nvtx] outer;main;step;launch_a;[gpu] void k<int&>(int&) 10"));
	fx_free(&fx);
}

UNIT_TEST(fold_gpu_both_roots)
{
	struct gpu_fixture fx;
	fx_build(&fx);
	struct fold_opts o = FOLD_OPTS_DEFAULT;
	o.source = FOLD_BOTH;
	UNIT_ASSERT_EQ_INT(fold_cpu_period_ns(&fx.b.p), 1000000);
	char *text = fx_folded(&fx.b.p, &o);
	uint64_t cpu = 0, gpu = 0;
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n'), *sp = memrchr(line, ' ', nl - line);
		uint64_t v = strtoull(sp + 1, NULL, 10);
		if (!strncmp(line, "CPU;app;", 8))
			cpu += v;
		else if (!strncmp(line, "GPU;app;", 8))
			gpu += v;
		else
			UNIT_ASSERT(!"a line under neither the CPU nor the GPU root");
		line = nl + 1;
	}
	UNIT_ASSERT_EQ_INT(cpu, 5 * 1000000); /* 5 samples of 1 ms */
	UNIT_ASSERT_EQ_INT(gpu, 70);
	UNIT_ASSERT(strstr(text, "CPU;app;main;step;launch_a 3000000\n"));
	UNIT_ASSERT(strstr(text, "GPU;app;main;step;launch_a;[sync] 3\n"));
	free(text);

	/* Without a sampling rate CPU samples have no duration. */
	free((char *)fx.b.p.header[0].value);
	fx.b.p.header[0].value = cs_strdup("0");
	UNIT_ASSERT_EQ_INT(fold_cpu_period_ns(&fx.b.p), 0);
	struct gpu_calls c = { 0 };
	UNIT_ASSERT(fold_profile(&fx.b.p, &o, gpu_calls_fn, &c) == -ENODATA);
	fx_free(&fx);
}
