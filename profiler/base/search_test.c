/* search_test.c: unit tests of the binary searches (search.h) against a linear scan. */
#include "base/search.h"
#include "base/unit.h"

#include <stdlib.h>

struct search_test_rec {
	uint32_t pid;
	uint16_t tid;
	uint64_t t;
};

UNIT_TEST(search_bounds_match_a_scan)
{
	uint64_t v[] = { 2, 2, 5, 7, 7, 7, 9 };
	size_t n = sizeof(v) / sizeof(v[0]);
	for (uint64_t key = 0; key <= 10; key++) {
		size_t lower = 0, upper = 0;
		while (lower < n && v[lower] < key)
			lower++;
		while (upper < n && v[upper] <= key)
			upper++;
		UNIT_ASSERT_EQ_INT(cs_lower_bound_u64(v, n, key), lower);
		UNIT_ASSERT_EQ_INT(cs_upper_bound_u64(v, n, key), upper);
	}
	UNIT_ASSERT_EQ_INT(cs_lower_bound_u64(NULL, 0, 3), 0);
	UNIT_ASSERT_EQ_INT(cs_upper_bound_u64(v, n, UINT64_MAX), n);
}

UNIT_TEST(search_bounds_on_fields)
{
	/* sorted by (pid, tid, t) */
	struct search_test_rec r[] = { { 1, 1, 10 }, { 1, 1, 20 }, { 1, 2, 5 }, { 3, 1, 1 },
				      { 3, 1, 1ull << 40 }, { 4, 9, 0 } };
	size_t n = sizeof(r) / sizeof(r[0]);
	UNIT_ASSERT_EQ_INT(CS_LOWER_BOUND(r, n, pid, 1), 0);
	UNIT_ASSERT_EQ_INT(CS_LOWER_BOUND(r, n, pid, 2), 3);
	UNIT_ASSERT_EQ_INT(CS_UPPER_BOUND(r, n, pid, 3), 5);
	UNIT_ASSERT_EQ_INT(CS_UPPER_BOUND(r, n, pid, 9), n);
	UNIT_ASSERT_EQ_INT(CS_LOWER_BOUND2(r, n, pid, 1, tid, 2), 2);
	UNIT_ASSERT_EQ_INT(CS_UPPER_BOUND2(r, n, pid, 3, tid, 0), 3);
	/* the last entry <= (1, 1, 15) is r[0]; (3, 1, 2^40) is found exactly */
	UNIT_ASSERT_EQ_INT(CS_UPPER_BOUND3(r, n, pid, 1, tid, 1, t, 15) - 1, 0);
	UNIT_ASSERT_EQ_INT(CS_UPPER_BOUND3(r, n, pid, 3, tid, 1, t, 1ull << 40) - 1, 4);
	UNIT_ASSERT_EQ_INT(CS_UPPER_BOUND3(r, n, pid, 0, tid, 0, t, 0), 0);
}

static bool search_test_before(size_t i, const void *arg)
{
	const uint64_t *a = arg;
	return a[i] * a[i] < 50;
}

UNIT_TEST(search_partition_point)
{
	uint64_t a[] = { 1, 3, 7, 8, 9 };
	UNIT_ASSERT_EQ_INT(cs_partition_point(5, search_test_before, a), 3); /* 1, 9, 49 < 50 */
	UNIT_ASSERT_EQ_INT(cs_partition_point(0, search_test_before, a), 0);
}
