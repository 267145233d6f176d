/* compare_test.c: unit tests of compare.c on hand-made aggregations: functions matched by name
 * and library basename (not path), threads by name and order, the change and its binomial
 * noise worked out by hand, the CPU time per second, and the order by size of change. */
#include "analysis/compare.h"
#include "base/unit.h"

#include <math.h>
#include <string.h>

#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

UNIT_TEST(compare_match_change_noise)
{
	struct profile_kv header[] = { { "rate_hz", "1000" } };
	struct profile pb = { .header = header, .nheader = 1, .start_ns = 0, .end_ns = 2000000000 },
		       pn = { .header = header, .nheader = 1, .start_ns = 0, .end_ns = 1000000000 };
	struct stacks_function fb[] = {
		{ .name = "hot", .module = "/old/build/prog", .self = 500 },
		{ .name = "warm", .module = "/old/build/prog", .self = 300 },
		{ .name = "gone", .module = "/old/build/prog", .self = 200 },
	}, fn[] = {
		{ .name = "warm", .module = "/new/build/prog", .self = 290 },
		{ .name = "hot", .module = "/new/build/prog", .self = 100 },
		{ .name = "hot", .module = "/lib/other.so", .self = 50 },
		{ .name = "fresh", .module = "/new/build/prog", .self = 50 },
	};
	struct stacks_thread tb[] = { { 1, 2, "worker", 400 }, { 1, 1, "prog", 400 },
				      { 1, 3, "worker", 200 } },
			     tn[] = { { 9, 12, "worker", 100 }, { 9, 9, "prog", 300 },
				      { 9, 10, "worker", 100 } };
	struct stacks_report rb = { .samples = 1000, .functions = fb, .nfunctions = 3,
				    .threads = tb, .nthreads = 3 },
			     rn = { .samples = 500, .functions = fn, .nfunctions = 4,
				    .threads = tn, .nthreads = 3 };
	struct compare_side b = { "b", &pb, &rb, NULL }, n = { "n", &pn, &rn, NULL };
	struct compare_result c;

	UNIT_ASSERT_EQ_INT(compare_build(&b, &n, STACKS_SORT_SELF, &c), 0);
	UNIT_ASSERT_EQ_INT(c.nfunctions, 5); /* hot (prog), hot (other.so), warm, gone, fresh */
	const struct compare_row *r = &c.functions[0];
	/* gone: 20% -> 0% is -20; hot: 50% -> 20% is -30, the largest */
	UNIT_ASSERT(!strcmp(r->name, "hot") && !strcmp(r->library, "prog"));
	UNIT_ASSERT(NEAR(r->base_pct, 50) && NEAR(r->new_pct, 20) && NEAR(r->change_pct, -30));
	UNIT_ASSERT(NEAR(r->noise_pct, 200 * sqrt(0.5 * 0.5 / 1000 + 0.2 * 0.8 / 500)));
	/* 500 samples of 1 ms in 2 s: 250 ms/s; 100 in 1 s: 100 ms/s */
	UNIT_ASSERT(NEAR(r->base_ms, 250) && NEAR(r->new_ms, 100) && NEAR(r->change_ms, -150));
	UNIT_ASSERT(!strcmp(c.functions[1].name, "warm") && NEAR(c.functions[1].change_pct, 28));
	UNIT_ASSERT(!strcmp(c.functions[2].name, "gone") && c.functions[2].new == 0);
	for (size_t i = 3; i < 5; i++)
		UNIT_ASSERT(NEAR(fabs(c.functions[i].change_pct), 10));
	/* threads: prog; worker (tid 2 / 10); worker #2 (tid 3 / 12) */
	UNIT_ASSERT_EQ_INT(c.nthreads, 3);
	for (size_t i = 0; i < 3; i++) {
		const struct compare_row *t = &c.threads[i];
		if (!strcmp(t->name, "prog"))
			UNIT_ASSERT(NEAR(t->change_pct, 20));
		else if (!strcmp(t->name, "worker"))
			UNIT_ASSERT(NEAR(t->change_pct, -20));
		else
			UNIT_ASSERT(!strcmp(t->name, "worker #2") && NEAR(t->change_pct, 0));
	}
	compare_free(&c);

	struct stacks_report empty = { 0 };
	struct compare_side e = { "e", &pn, &empty, NULL };
	UNIT_ASSERT(compare_build(&b, &e, STACKS_SORT_SELF, &c) < 0);
}
