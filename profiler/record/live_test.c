/* live_test.c: unit tests of top's aggregation (live.c): self and total from stacks named
 * after their samples came, recursion counted once, Python frames, threads, GPU kernels. */
#include "record/live.h"

#include "base/unit.h"
#include "format/datafile.h"
#include "unwind/symbols.h"

#include <string.h>

static void name(struct live *l, uint32_t loc, const char *fn, const char *module)
{
	struct sym_frame f = { .name = fn };
	live_symbol(l, loc, &f, 1, module);
}

UNIT_TEST(live_self_total_threads)
{
	struct live *l = live_new();
	/* locs: 0 leaf_a, 1 leaf_b, 2 mid, 3 main; stack 0 = a<mid<main, 1 = b<mid<mid<main */
	uint32_t s0[] = { 0, 2, 3 }, s1[] = { 1, 2, 2, 3 };
	live_stack(l, 0, s0, 3);
	live_stack(l, 1, s1, 4);
	live_sample(l, 10, 11, 0, 3);      /* samples before the names: counted once named */
	live_sample(l, 10, 12, 1, 1);
	name(l, 0, "leaf_a", "/usr/bin/prog");
	name(l, 1, "leaf_b", "/usr/bin/prog");
	name(l, 2, "mid", "/usr/lib/libx.so");
	name(l, 3, "main", "/usr/bin/prog");
	live_sample(l, 10, 11, 1, 2);
	UNIT_ASSERT_EQ_INT(live_samples(l), 6);
	struct live_fn f[8];
	size_t n = live_functions(l, 0, LIVE_SORT_SELF, f, 8);
	UNIT_ASSERT_EQ_INT(n, 4);
	UNIT_ASSERT(!strcmp(f[0].name, "leaf_a") && f[0].self == 3 && f[0].total == 3);
	UNIT_ASSERT(!strcmp(f[1].name, "leaf_b") && f[1].self == 3 && f[1].total == 3);
	UNIT_ASSERT(!strcmp(f[1].where, "prog"));
	n = live_functions(l, 0, LIVE_SORT_TOTAL, f, 8);
	/* mid twice in stack 1: once in its total */
	UNIT_ASSERT(!strcmp(f[0].name, "main") && f[0].total == 6 && f[0].self == 0);
	UNIT_ASSERT(!strcmp(f[1].name, "mid") && f[1].total == 6 && !strcmp(f[1].where, "libx.so"));
	/* one thread */
	n = live_functions(l, 12, LIVE_SORT_SELF, f, 8);
	UNIT_ASSERT(!strcmp(f[0].name, "leaf_b") && f[0].self == 1 && f[0].total == 1);
	struct live_thread th[4];
	n = live_threads(l, th, 4);
	UNIT_ASSERT_EQ_INT(n, 2);
	UNIT_ASSERT(th[0].tid == 11 && th[0].samples == 5 && !strcmp(th[0].top, "leaf_a") && th[0].top_self == 3);
	UNIT_ASSERT(th[1].tid == 12 && th[1].samples == 1);
	/* max cuts */
	UNIT_ASSERT_EQ_INT(live_functions(l, 0, LIVE_SORT_SELF, f, 1), 1);
	live_free(l);
}

UNIT_TEST(live_python_and_inline_and_kernels)
{
	struct live *l = live_new();
	struct sym_frame chain[2] = { { .name = "inlined_leaf", .flags = PROFILE_FRAME_INLINED },
				      { .name = "outer" } };
	live_symbol(l, 0, chain, 2, "/lib/libz.so.1");
	struct sym_frame py = { .name = "train_step", .file = "/home/u/train.py", .line = 3,
				.flags = PROFILE_FRAME_PYTHON };
	live_symbol(l, 1, &py, 1, "[python]");
	live_symbol(l, 2, NULL, 0, "/lib/libq.so");
	uint32_t s[] = { 0, 1, 2 };
	live_stack(l, 0, s, 3);
	live_sample(l, 1, 1, 0, 1);
	struct live_fn f[8];
	size_t n = live_functions(l, 0, LIVE_SORT_SELF, f, 8);
	UNIT_ASSERT_EQ_INT(n, 4);
	UNIT_ASSERT(!strcmp(f[0].name, "inlined_leaf") && f[0].self == 1);
	bool saw_py = false, saw_unknown = false, saw_outer = false;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(f[i].name, "train_step"))
			saw_py = f[i].python && !strcmp(f[i].where, "train.py") && f[i].total == 1;
		if (!strcmp(f[i].name, "[unknown]"))
			saw_unknown = !strcmp(f[i].where, "libq.so");
		if (!strcmp(f[i].name, "outer"))
			saw_outer = f[i].self == 0 && f[i].total == 1;
	}
	UNIT_ASSERT(saw_py && saw_unknown && saw_outer);
	struct df_gpu_activity k = { .kind = DF_GPU_KERNEL, .start = 100, .end = 400 };
	live_gpu_activity(l, &k, "gemm");
	live_gpu_activity(l, &k, "gemm");
	k.end = 1100;
	live_gpu_activity(l, &k, "softmax");
	struct df_gpu_activity copy = { .kind = DF_GPU_MEMCPY, .start = 0, .end = 5000 };
	live_gpu_activity(l, &copy, "");
	uint64_t ns = 0;
	UNIT_ASSERT_EQ_INT(live_gpu_kernels(l, &ns), 3);
	UNIT_ASSERT_EQ_INT(ns, 1600);
	struct live_kernel kk[4];
	UNIT_ASSERT_EQ_INT(live_kernels(l, kk, 4), 2);
	UNIT_ASSERT(!strcmp(kk[0].name, "softmax") && kk[0].count == 1 && kk[0].total_ns == 1000);
	UNIT_ASSERT(!strcmp(kk[1].name, "gemm") && kk[1].count == 2 && kk[1].total_ns == 600);
	live_free(l);
}
