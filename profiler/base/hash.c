/* hash.c: the shared hash tables (see hash.h). */
#include "base/hash.h"
#include "base/cs.h"

#include <stdlib.h>
#include <string.h>

/* ---- cs_hash: items by hash and equality callback ---- */

/* Items move in probe order, from just after an empty slot, so that no run of slots is split
 * where it wraps around: items of equal hash keep the order they were added in, and find
 * returns the first one added (the loader relies on it to give equal strings the lowest id). */
static void cs_hash_grow(struct cs_hash *h)
{
	struct cs_hash old = *h;
	size_t start = 0;

	while (start < old.cap && old.slots[start].item)
		start++;                   /* there is one: the table is never full */
	h->cap = old.cap ? old.cap * 2 : 64;
	h->slots = cs_calloc(h->cap, sizeof(h->slots[0]));
	h->count = 0;
	for (size_t k = 1; k <= old.cap; k++) {
		const struct cs_hash_slot *s = &old.slots[(start + k) & (old.cap - 1)];
		if (s->item)
			cs_hash_insert(h, s->hash, s->item);
	}
	free(old.slots);
}

void cs_hash_insert(struct cs_hash *h, uint64_t hash, void *item)
{
	if ((h->count + 1) * 4 > h->cap * 3)
		cs_hash_grow(h);
	size_t mask = h->cap - 1, i = hash & mask;
	while (h->slots[i].item)
		i = (i + 1) & mask;
	h->slots[i].hash = hash;
	h->slots[i].item = item;
	h->count++;
}

static size_t cs_hash_slot_of(const struct cs_hash *h, uint64_t hash, cs_hash_eq eq,
			      const void *key)
{
	if (!h->cap)
		return SIZE_MAX;
	size_t mask = h->cap - 1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		if (!h->slots[i].item)
			return SIZE_MAX;
		if (h->slots[i].hash == hash && eq(h->slots[i].item, key))
			return i;
	}
}

void *cs_hash_find(const struct cs_hash *h, uint64_t hash, cs_hash_eq eq, const void *key)
{
	size_t i = cs_hash_slot_of(h, hash, eq, key);
	return i == SIZE_MAX ? NULL : h->slots[i].item;
}

/* Linear probing with backward-shift deletion: no tombstones. */
void *cs_hash_remove(struct cs_hash *h, uint64_t hash, cs_hash_eq eq, const void *key)
{
	size_t i = cs_hash_slot_of(h, hash, eq, key);
	if (i == SIZE_MAX)
		return NULL;
	void *item = h->slots[i].item;
	size_t mask = h->cap - 1, j = i;
	for (;;) {
		h->slots[i].item = NULL;
		for (;;) {
			j = (j + 1) & mask;
			if (!h->slots[j].item)
				goto done;
			size_t home = h->slots[j].hash & mask;
			/* Move j back to i unless its home lies cyclically in (i, j]. */
			if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
				continue;
			h->slots[i] = h->slots[j];
			i = j;
			break;
		}
	}
done:
	h->count--;
	return item;
}

void cs_hash_free(struct cs_hash *h)
{
	free(h->slots);
	*h = (struct cs_hash){ 0 };
}

void cs_hash_free_items(struct cs_hash *h, void (*free_item)(void *item))
{
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[i].item)
			free_item(h->slots[i].item);
	cs_hash_free(h);
}

/* ---- cs_map: (a, b) -> u32 ---- */

static uint64_t cs_map_hash(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

static void cs_map_rehash(struct cs_map *m, size_t cap)
{
	struct cs_map_slot *old = m->slots;
	size_t oldcap = m->cap;

	m->slots = cs_malloc(cap * sizeof(*m->slots));
	for (size_t i = 0; i < cap; i++)
		m->slots[i].val = CS_MAP_NONE;
	m->cap = cap;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].val == CS_MAP_NONE)
			continue;
		size_t j = cs_map_hash(old[i].a, old[i].b) & (cap - 1);
		while (m->slots[j].val != CS_MAP_NONE)
			j = (j + 1) & (cap - 1);
		m->slots[j] = old[i];
	}
	free(old);
}

uint32_t *cs_map_slot(struct cs_map *m, uint64_t a, uint64_t b)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		cs_map_rehash(m, m->cap ? m->cap * 2 : 64);
	size_t j = cs_map_hash(a, b) & (m->cap - 1);
	while (m->slots[j].val != CS_MAP_NONE) {
		if (m->slots[j].a == a && m->slots[j].b == b)
			return &m->slots[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	m->slots[j].a = a;
	m->slots[j].b = b;
	m->n++;
	return &m->slots[j].val;
}

uint32_t cs_map_find(const struct cs_map *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return CS_MAP_NONE;
	size_t j = cs_map_hash(a, b) & (m->cap - 1);
	while (m->slots[j].val != CS_MAP_NONE) {
		if (m->slots[j].a == a && m->slots[j].b == b)
			return m->slots[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	return CS_MAP_NONE;
}

void cs_map_free(struct cs_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- cs_intern: one copy of each string ---- */

static bool cs_intern_eq(const void *item, const void *key)
{
	return strcmp(item, key) == 0;
}

const char *cs_intern(struct cs_intern *t, const char *s)
{
	uint64_t hash = cs_hash_bytes(s, strlen(s), 0);
	char *found = cs_hash_find(&t->strings, hash, cs_intern_eq, s);

	if (!found) {
		found = cs_strdup(s);
		cs_hash_insert(&t->strings, hash, found);
	}
	return found;
}

void cs_intern_free(struct cs_intern *t)
{
	cs_hash_free_items(&t->strings, free);
}
