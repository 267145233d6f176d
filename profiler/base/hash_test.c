/* hash_test.c: unit tests of the shared hash tables (hash.c) against plain arrays. */
#include "base/hash.h"
#include "base/cs.h"
#include "base/unit.h"

#include <string.h>

static bool hash_test_eq(const void *item, const void *key)
{
	return *(const uint64_t *)item == *(const uint64_t *)key;
}

/* Many colliding keys: half hash to the first slots, half to the last ones, so that probes and
 * the backward shift of removal cross the table's wrap-around. */
static uint64_t hash_test_hash(uint64_t i, uint64_t key)
{
	return i % 2 ? key % 7 : UINT64_MAX - key % 5;
}

/* Every key still in is found, every removed one is not. */
UNIT_TEST(hash_insert_find_remove)
{
	enum { N = 500 };
	static uint64_t keys[N];
	struct cs_hash h = { 0 };
	for (uint64_t i = 0; i < N; i++) {
		keys[i] = i * 1000003u;
		cs_hash_insert(&h, hash_test_hash(i, keys[i]), &keys[i]);
	}
	UNIT_ASSERT_EQ_INT(h.count, N);
	bool gone[N] = { false };
	for (uint64_t i = 0; i < N; i += 3) {
		uint64_t k = keys[i];
		UNIT_ASSERT(cs_hash_remove(&h, hash_test_hash(i, k), hash_test_eq, &k) == &keys[i]);
		gone[i] = true;
	}
	for (uint64_t i = 0; i < N; i++) {
		uint64_t k = keys[i];
		void *got = cs_hash_find(&h, hash_test_hash(i, k), hash_test_eq, &k);
		UNIT_ASSERT(gone[i] ? got == NULL : got == &keys[i]);
	}
	uint64_t absent = 12345;
	UNIT_ASSERT(!cs_hash_remove(&h, absent % 7, hash_test_eq, &absent));
	cs_hash_free(&h);
	UNIT_ASSERT(!cs_hash_find(&h, 1, hash_test_eq, &absent)); /* empty after free */
}

UNIT_TEST(hash_map_pairs)
{
	struct cs_map m = { 0 };
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t *v = cs_map_slot(&m, i / 10, i % 10);
		UNIT_ASSERT(*v == CS_MAP_NONE);
		*v = i;
	}
	for (uint32_t i = 0; i < 1000; i++)
		UNIT_ASSERT_EQ_INT(*cs_map_slot(&m, i / 10, i % 10), i);
	UNIT_ASSERT_EQ_INT(m.n, 1000);
	UNIT_ASSERT_EQ_INT(cs_map_find(&m, 7, 3), 73);
	UNIT_ASSERT(cs_map_find(&m, 5, 11) == CS_MAP_NONE);
	UNIT_ASSERT_EQ_INT(m.n, 1000);                      /* find adds nothing */
	UNIT_ASSERT(*cs_map_slot(&m, 5, 10) == CS_MAP_NONE); /* a new key */
	cs_map_free(&m);
	UNIT_ASSERT(cs_map_find(&m, 7, 3) == CS_MAP_NONE);
}

UNIT_TEST(hash_intern)
{
	struct cs_intern t = { 0 };
	char buf[32];
	const char *a = cs_intern(&t, "train_step");
	strcpy(buf, "train_step");
	UNIT_ASSERT(cs_intern(&t, buf) == a);            /* one copy, whatever the pointer */
	UNIT_ASSERT(a != buf && !strcmp(a, "train_step"));
	UNIT_ASSERT(cs_intern(&t, "load") != a);
	UNIT_ASSERT(*cs_intern(&t, "") == 0);
	cs_intern_free(&t);
}

static bool hash_test_any(const void *item, const void *key)
{
	return true;
}

/* Items of equal hash are found in the order they were added, through growth (and a run that
 * wraps around the end of the table) and removal. */
UNIT_TEST(hash_equal_hashes_keep_their_order)
{
	static int items[300];
	const uint64_t hashes[2] = { 5, UINT64_MAX };
	for (int w = 0; w < 2; w++) {
		struct cs_hash h = { 0 };
		for (int i = 0; i < 300; i++)
			cs_hash_insert(&h, hashes[w], &items[i]);
		UNIT_ASSERT(cs_hash_find(&h, hashes[w], hash_test_any, NULL) == &items[0]);
		UNIT_ASSERT(cs_hash_remove(&h, hashes[w], hash_test_any, NULL) == &items[0]);
		UNIT_ASSERT(cs_hash_find(&h, hashes[w], hash_test_any, NULL) == &items[1]);
		for (int i = 1; i < 300; i++)
			UNIT_ASSERT(cs_hash_remove(&h, hashes[w], hash_test_any, NULL) == &items[i]);
		UNIT_ASSERT_EQ_INT(h.count, 0);
		cs_hash_free(&h);
	}
}

static uint64_t hash_test_freed_sum, hash_test_freed_n;

static void hash_test_free_item(void *item)
{
	hash_test_freed_sum += *(uint64_t *)item;
	hash_test_freed_n++;
}

/* cs_hash_free_items hands each item still in the table to the callback once, and empties it. */
UNIT_TEST(hash_free_items_once_each)
{
	enum { N = 100 };
	static uint64_t keys[N];
	struct cs_hash h = { 0 };
	uint64_t want = 0;
	for (uint64_t i = 0; i < N; i++) {
		keys[i] = i + 1;
		cs_hash_insert(&h, hash_test_hash(i, keys[i]), &keys[i]);
	}
	for (uint64_t i = 0; i < N; i += 3)
		UNIT_ASSERT(cs_hash_remove(&h, hash_test_hash(i, keys[i]), hash_test_eq, &keys[i]));
	for (uint64_t i = 0; i < N; i++)
		want += i % 3 ? keys[i] : 0;
	cs_hash_free_items(&h, hash_test_free_item);
	UNIT_ASSERT_EQ_INT(hash_test_freed_n, N - (N + 2) / 3);
	UNIT_ASSERT_EQ_INT(hash_test_freed_sum, want);
	UNIT_ASSERT(!h.slots && !h.cap && !h.count);
}
