/* stackmemo_test.c: unit tests of the recorder's memo of kernel-walked stacks (stackmemo.c). */
#include "record/stackmemo.h"

#include "base/unit.h"

#include <stdlib.h>
#include <string.h>

static const uint64_t no_fp[2] = { 0, 0 };

UNIT_TEST(record_stackmemo_find_put)
{
	struct stackmemo m = { 0 };
	struct stackmemo_key k, other;
	struct stackmemo_val v;
	uint64_t kernel[2] = { 0xffffffff81000010ull, 0xffffffff81000020ull };
	uint64_t user[3] = { 0x401000, 0x401100, 0x401200 };

	UNIT_ASSERT(stackmemo_key_make(&k, 42, 7, 0, no_fp, kernel, 2, user, 3));
	UNIT_ASSERT(!stackmemo_find(&m, &k, &v)); /* empty, not even allocated */
	stackmemo_put(&m, &k, (struct stackmemo_val){ 5, 9 });
	UNIT_ASSERT(stackmemo_find(&m, &k, &v));
	UNIT_ASSERT_EQ_INT(v.stack, 5);
	UNIT_ASSERT_EQ_INT(v.flags, 9);

	/* each part of the key counts: the process, its mappings' generation, the flags, the fp
	 * marks, where the kernel frames end and the user frames begin, every address */
	UNIT_ASSERT(stackmemo_key_make(&other, 43, 7, 0, no_fp, kernel, 2, user, 3));
	UNIT_ASSERT(!stackmemo_find(&m, &other, &v));
	UNIT_ASSERT(stackmemo_key_make(&other, 42, 8, 0, no_fp, kernel, 2, user, 3));
	UNIT_ASSERT(!stackmemo_find(&m, &other, &v));
	UNIT_ASSERT(stackmemo_key_make(&other, 42, 7, 1, no_fp, kernel, 2, user, 3));
	UNIT_ASSERT(!stackmemo_find(&m, &other, &v));
	uint64_t fp[2] = { 2, 0 };
	UNIT_ASSERT(stackmemo_key_make(&other, 42, 7, 0, fp, kernel, 2, user, 3));
	UNIT_ASSERT(!stackmemo_find(&m, &other, &v));
	uint64_t all[5] = { kernel[0], kernel[1], user[0], user[1], user[2] };
	UNIT_ASSERT(stackmemo_key_make(&other, 42, 7, 0, no_fp, all, 1, all + 1, 4));
	UNIT_ASSERT(!stackmemo_find(&m, &other, &v));
	user[2]++;
	UNIT_ASSERT(stackmemo_key_make(&other, 42, 7, 0, no_fp, kernel, 2, user, 3));
	UNIT_ASSERT(!stackmemo_find(&m, &other, &v));

	/* a key that takes an occupied slot replaces what it held */
	stackmemo_put(&m, &other, (struct stackmemo_val){ 6, 0 });
	UNIT_ASSERT(stackmemo_find(&m, &other, &v) && v.stack == 6);
	UNIT_ASSERT(m.hits == 2);
	stackmemo_free(&m);
}

UNIT_TEST(record_stackmemo_equal_hash_compared_in_full)
{
	struct stackmemo m = { 0 };
	struct stackmemo_key k, forged;
	struct stackmemo_val v;
	uint64_t user[2] = { 0x401000, 0x401100 };

	UNIT_ASSERT(stackmemo_key_make(&k, 1, 1, 0, no_fp, NULL, 0, user, 2));
	stackmemo_put(&m, &k, (struct stackmemo_val){ 1, 0 });
	user[1] = 0x401101;
	UNIT_ASSERT(stackmemo_key_make(&forged, 1, 1, 0, no_fp, NULL, 0, user, 2));
	forged.hash = k.hash; /* a collision: the same slot and hash, other addresses */
	UNIT_ASSERT(!stackmemo_find(&m, &forged, &v));
	stackmemo_free(&m);
}

UNIT_TEST(record_stackmemo_bounds)
{
	struct stackmemo m = { 0 };
	struct stackmemo_key *k = malloc(sizeof(*k));
	struct stackmemo_val v;
	uint64_t *user = calloc(STACKMEMO_MAX_WORDS, sizeof(*user));

	UNIT_ASSERT(k && user);
	/* too long to remember: refused, never overflowing the key */
	UNIT_ASSERT(!stackmemo_key_make(k, 1, 1, 0, no_fp, NULL, 0, user, STACKMEMO_MAX_WORDS));
	UNIT_ASSERT(!stackmemo_key_make(k, 1, 1, 0, no_fp, user, STACKMEMO_MAX_WORDS, user, 1));
	/* many long keys: the arena fills and the memo starts again, still answering right */
	for (uint32_t i = 0; i < 20000; i++) {
		user[0] = i;
		UNIT_ASSERT(stackmemo_key_make(k, 1, 1, 0, no_fp, NULL, 0, user, 400));
		stackmemo_put(&m, k, (struct stackmemo_val){ i, 0 });
		UNIT_ASSERT(stackmemo_find(&m, k, &v) && v.stack == i);
	}
	UNIT_ASSERT(m.resets > 0);
	UNIT_ASSERT(m.arena_used <= m.arena_cap);
	user[0] = 0; /* forgotten at a reset, or its slot taken since */
	UNIT_ASSERT(stackmemo_key_make(k, 1, 1, 0, no_fp, NULL, 0, user, 400));
	UNIT_ASSERT(!stackmemo_find(&m, k, &v));
	stackmemo_free(&m);
	free(k);
	free(user);
}
