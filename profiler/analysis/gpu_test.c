/* gpu_test.c: unit tests of gpu.c on small synthetic profiles (profile_builder.h for strings
 * and stacks; the GPU records are appended here): kernel table, interval unions, sync blame,
 * latency, launch sites, NVTX totals, the verdict rules and the filter. */
#include "analysis/gpu.h"
#include "analysis/profile_builder.h"
#include "base/cs.h"
#include "base/unit.h"

#include <stdlib.h>
#include <string.h>

static uint32_t add_launch(struct pbuild *b, uint32_t pid, uint32_t tid, uint64_t time,
			   const char *api, const char *stack)
{
	struct profile *p = &b->p;
	p->gpu_launches = cs_realloc(p->gpu_launches, (p->ngpu_launches + 1) * sizeof(*p->gpu_launches));
	p->gpu_launches[p->ngpu_launches] = (struct profile_gpu_launch){ .time = time, .pid = pid,
		.tid = tid, .correlation = (uint32_t)p->ngpu_launches + 1,
		.stack = pb_stack(b, stack), .api = pb_str(b, api) };
	return (uint32_t)p->ngpu_launches++;
}

static struct profile_gpu_activity *add_act(struct pbuild *b, uint32_t kind, uint32_t pid,
					     uint64_t start, uint64_t end, uint32_t stream,
					     const char *name, uint32_t launch)
{
	struct profile *p = &b->p;
	p->gpu_activities = cs_realloc(p->gpu_activities,
				       (p->ngpu_activities + 1) * sizeof(*p->gpu_activities));
	struct profile_gpu_activity *a = &p->gpu_activities[p->ngpu_activities++];
	*a = (struct profile_gpu_activity){ .kind = kind, .pid = pid, .start = start, .end = end,
		.context = 1, .stream = stream, .name = name ? pb_str(b, name) : 0,
		.launch = launch, .node_launch = PROFILE_GPU_NO_LAUNCH };
	if (launch != PROFILE_GPU_NO_LAUNCH)
		a->correlation = p->gpu_launches[launch].correlation;
	return a;
}

static void free_gpu(struct pbuild *b)
{
	pb_free(b);
}

/* Kernels a [10,30] and b [20,40] on stream 1, c [100,110] on stream 2, all of pid 7 launched
 * from main;step;launch_X; an API span [0,1] opens the window: 0..110. */
static void build_basic(struct pbuild *b)
{
	pb_init(b);
	pb_process(b, 7, 1, "trainer");
	pb_thread(b, 7, 7, "trainer");
	uint32_t la = add_launch(b, 7, 7, 5, "cudaLaunchKernel", "main;step;launch_a");
	uint32_t lb = add_launch(b, 7, 7, 6, "cudaLaunchKernel", "main;step;launch_b");
	uint32_t lc = add_launch(b, 7, 7, 7, "cudaLaunchKernel", "main;step;launch_c");
	add_act(b, PROFILE_GPU_API, 7, 0, 1, 0, NULL, la)->tid = 7;
	add_act(b, PROFILE_GPU_KERNEL, 7, 10, 30, 1, "a", la)->queued = 8;
	add_act(b, PROFILE_GPU_KERNEL, 7, 20, 40, 1, "b", lb);  /* latency from launch: 14 */
	add_act(b, PROFILE_GPU_KERNEL, 7, 100, 110, 2, "c", lc)->queued = 60;
}

UNIT_TEST(gpu_kernel_table_and_utilisation)
{
	struct pbuild b;
	struct gpu_analysis g;
	build_basic(&b);
	add_act(&b, PROFILE_GPU_KERNEL, 7, 50, 54, 2, "a", PROFILE_GPU_NO_LAUNCH);
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &g) == 0 && g.present);
	UNIT_ASSERT_EQ_INT(g.nkernels, 3);
	UNIT_ASSERT(!strcmp(g.kernels_by_time[0].name, "a"));   /* 24 ns, then b 20, c 10 */
	UNIT_ASSERT_EQ_INT(g.kernels_by_time[0].calls, 2);
	UNIT_ASSERT_EQ_INT(g.kernels_by_time[0].total_ns, 24);
	UNIT_ASSERT_EQ_INT(g.kernels_by_time[0].min_ns, 4);
	UNIT_ASSERT_EQ_INT(g.kernels_by_time[0].max_ns, 20);
	UNIT_ASSERT_EQ_INT(g.kernels_by_time[0].avg_ns, 12);
	UNIT_ASSERT(g.kernels_by_time[0].percent > 44.4 && g.kernels_by_time[0].percent < 44.5);
	UNIT_ASSERT(!strcmp(g.kernels_by_time[1].name, "b"));
	UNIT_ASSERT_EQ_INT(g.kernel_ns, 54);
	/* device: [10,40] + [50,54] + [100,110] = 44 of the window 0..110 */
	UNIT_ASSERT_EQ_INT(g.ndevices, 1);
	UNIT_ASSERT_EQ_INT(g.devices[0].busy_ns, 44);
	UNIT_ASSERT_EQ_INT(g.devices[0].work_ns, 54);
	UNIT_ASSERT_EQ_INT(g.devices[0].window_ns, 110);
	UNIT_ASSERT_EQ_INT(g.nstreams, 2);
	UNIT_ASSERT_EQ_INT(g.streams[0].stream, 1);
	UNIT_ASSERT_EQ_INT(g.streams[0].busy_ns, 30);  /* overlap counted once */
	UNIT_ASSERT_EQ_INT(g.streams[1].busy_ns, 14);
	/* launch sites: launch_a 20, launch_b 20, launch_c 10, no launch 4 */
	UNIT_ASSERT_EQ_INT(g.nsites, 4);
	UNIT_ASSERT_EQ_INT(g.sites[0].gpu_ns, 20);
	UNIT_ASSERT_EQ_INT(g.sites[3].stack, UINT32_MAX);
	gpu_analysis_free(&g);
	free_gpu(&b);
}

UNIT_TEST(gpu_latency_queued_or_launch)
{
	struct pbuild b;
	struct gpu_analysis g;
	build_basic(&b);
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &g) == 0);
	/* a: 10-8 = 2 (queued), b: 20-6 = 14 (launch call), c: 100-60 = 40 (queued) */
	UNIT_ASSERT_EQ_INT(g.latency.count, 3);
	UNIT_ASSERT_EQ_INT(g.latency.from_queued, 2);
	UNIT_ASSERT_EQ_INT(g.latency.max_ns, 40);
	UNIT_ASSERT_EQ_INT(g.latency.min_ns, 2);
	UNIT_ASSERT_EQ_INT(g.latency.median_ns, 14);
	UNIT_ASSERT_EQ_INT(g.latency.ntop, 3);
	UNIT_ASSERT(!strcmp(g.latency.top[0].name, "c") && g.latency.top[0].from_queued);
	UNIT_ASSERT(!strcmp(g.latency.top[1].name, "b") && !g.latency.top[1].from_queued);
	UNIT_ASSERT_EQ_INT(g.latency.top[0].stack, b.p.gpu_launches[2].stack);
	gpu_analysis_free(&g);
	free_gpu(&b);
}

UNIT_TEST(gpu_sync_blame_and_sync_bound)
{
	struct pbuild b;
	struct gpu_analysis g;
	build_basic(&b);
	uint32_t ls = add_launch(&b, 7, 7, 24, "cudaStreamSynchronize", "main;step;wait");
	uint32_t ld = add_launch(&b, 7, 7, 104, "cudaDeviceSynchronize", "main;step;wait_all");
	uint32_t le = add_launch(&b, 7, 7, 50, "cudaStreamSynchronize", "main;step;wait_idle");
	/* stream 1 sync [25,41]: a and b ran; b ended last -> b (c is later, on stream 2) */
	add_act(&b, PROFILE_GPU_SYNC, 7, 25, 41, 1, NULL, ls)->detail = 3;
	add_act(&b, PROFILE_GPU_API, 7, 24, 42, 0, NULL, ls)->tid = 7;  /* encloses it */
	/* context sync [105,111]: c */
	add_act(&b, PROFILE_GPU_SYNC, 7, 105, 111, 0, NULL, ld)->detail = 4;
	/* stream 1 sync [60,70]: stream 1 was done: nothing */
	add_act(&b, PROFILE_GPU_SYNC, 7, 60, 70, 1, NULL, le)->detail = 3;
	/* stream waits for event: not a CPU wait */
	add_act(&b, PROFILE_GPU_SYNC, 7, 80, 99, 1, NULL, le)->detail = 2;
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &g) == 0);
	UNIT_ASSERT_EQ_INT(g.sync_waits, 3);
	UNIT_ASSERT_EQ_INT(g.nsync_threads, 1);
	UNIT_ASSERT_EQ_INT(g.sync_threads[0].tid, 7);
	UNIT_ASSERT_EQ_INT(g.sync_threads[0].blocked_ns, 18 + 6 + 10); /* [24,42] [105,111] [60,70] */
	UNIT_ASSERT_EQ_INT(g.nblames, 3);
	UNIT_ASSERT(g.blames[0].name && !strcmp(g.blames[0].name, "b"));
	UNIT_ASSERT_EQ_INT(g.blames[0].wait_ns, 16);
	UNIT_ASSERT(g.blames[1].name == NULL && g.blames[1].wait_ns == 10);
	UNIT_ASSERT(g.blames[2].name && !strcmp(g.blames[2].name, "c"));
	/* window 0..111, busy 40 (36%), blocked 34 (30.6%): sync-bound, waiting mostly for b */
	UNIT_ASSERT_EQ_INT(g.nverdicts, 1);
	UNIT_ASSERT_EQ_INT(g.verdicts[0].bound, GPU_BOUND_SYNC);
	UNIT_ASSERT_EQ_INT(g.verdicts[0].window_ns, 111);
	UNIT_ASSERT_EQ_INT(g.verdicts[0].blocked_ns, 34);
	UNIT_ASSERT(!strcmp(g.verdicts[0].top_blame, "b"));
	UNIT_ASSERT(!strcmp(g.verdicts[0].comm, "trainer"));
	gpu_analysis_free(&g);
	free_gpu(&b);
}

UNIT_TEST(gpu_verdict_launch_and_gpu_bound)
{
	struct pbuild b;
	struct gpu_analysis g;
	build_basic(&b);   /* busy 40 of 110, no syncs */
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &g) == 0);
	UNIT_ASSERT_EQ_INT(g.verdicts[0].bound, GPU_BOUND_LAUNCH);
	UNIT_ASSERT_EQ_INT(g.verdicts[0].median_latency_ns, 14);
	gpu_analysis_free(&g);
	add_act(&b, PROFILE_GPU_KERNEL, 7, 30, 100, 3, "fill", PROFILE_GPU_NO_LAUNCH);
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &g) == 0);   /* busy 100 of 110 */
	UNIT_ASSERT_EQ_INT(g.verdicts[0].bound, GPU_BOUND_GPU);
	UNIT_ASSERT_EQ_INT(g.verdicts[0].busy_ns, 100);
	gpu_analysis_free(&g);
	free_gpu(&b);
}

UNIT_TEST(gpu_copies_ranges_names_filter)
{
	struct pbuild b;
	struct gpu_analysis g;
	build_basic(&b);
	struct profile_gpu_activity *m = add_act(&b, PROFILE_GPU_MEMCPY, 7, 40, 60, 1, NULL,
						 PROFILE_GPU_NO_LAUNCH);
	m->detail = 2, m->bytes = 4000;   /* DtoH: 4000 bytes in 20 ns = 200 GB/s */
	m = add_act(&b, PROFILE_GPU_MEMSET, 7, 60, 70, 1, NULL, PROFILE_GPU_NO_LAUNCH);
	m->bytes = 10;
	add_act(&b, PROFILE_GPU_MARKER, 7, 0, 50, 0, "epoch", PROFILE_GPU_NO_LAUNCH);
	add_act(&b, PROFILE_GPU_MARKER, 7, 60, 70, 0, "epoch", PROFILE_GPU_NO_LAUNCH);
	add_act(&b, PROFILE_GPU_MARKER, 7, 65, 0, 0, "epoch", PROFILE_GPU_NO_LAUNCH);
	add_act(&b, PROFILE_GPU_KERNEL, 9, 10, 20, 1, "_Z6kernelPfi", PROFILE_GPU_NO_LAUNCH);
	UNIT_ASSERT(gpu_analyze(&b.p, NULL, &g) == 0);
	UNIT_ASSERT_EQ_INT(g.ncopies, 2);
	UNIT_ASSERT(!strcmp(g.copies[0].direction, "DtoH"));
	UNIT_ASSERT_EQ_INT(g.copies[0].bytes, 4000);
	UNIT_ASSERT(g.copies[0].gb_per_s > 199.9 && g.copies[0].gb_per_s < 200.1);
	UNIT_ASSERT(!strcmp(g.copies[1].direction, "memset"));
	UNIT_ASSERT_EQ_INT(g.nranges, 1);
	UNIT_ASSERT_EQ_INT(g.ranges[0].count, 2);
	UNIT_ASSERT_EQ_INT(g.ranges[0].total_ns, 60);
	UNIT_ASSERT_EQ_INT(g.ranges[0].min_ns, 10);
	UNIT_ASSERT_EQ_INT(g.ranges[0].marks, 1);
	const struct gpu_kernel_stat *k = NULL;
	for (size_t i = 0; i < g.nkernels; i++)
		if (g.kernels_by_time[i].mangled)
			k = &g.kernels_by_time[i];
	UNIT_ASSERT(k && !strcmp(k->name, "kernel(float*, int)") &&
		    !strcmp(k->mangled, "_Z6kernelPfi"));
	UNIT_ASSERT_EQ_INT(g.nverdicts, 2);
	gpu_analysis_free(&g);

	struct stacks_filter f = STACKS_FILTER_ALL;
	f.pid = 9;
	UNIT_ASSERT(gpu_analyze(&b.p, &f, &g) == 0 && g.present);
	UNIT_ASSERT_EQ_INT(g.nkernels, 1);
	UNIT_ASSERT_EQ_INT(g.nverdicts, 1);
	UNIT_ASSERT_EQ_INT(g.ncopies, 0);
	gpu_analysis_free(&g);
	f.pid = 12;
	UNIT_ASSERT(gpu_analyze(&b.p, &f, &g) == 0 && !g.present);
	gpu_analysis_free(&g);
	free_gpu(&b);
}
