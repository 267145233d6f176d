/* hash.h: the hash tables csampler's modules share, as perf has util/hashmap.c and uftrace
 * its utils: one implementation instead of one per module.
 *  - struct cs_hash: items found by a 64-bit hash and an equality callback, with removal. The
 *    table does not own its items.
 *  - struct cs_map: a pair of 64-bit keys to a 32-bit value (an id or index), find-or-insert.
 *  - struct cs_intern: the interning variant, one stable copy of each string.
 * All use open addressing with linear probing in power-of-two tables grown at 3/4 full.
 * Hand-written because glibc's hsearch_r has neither removal nor non-string keys, tsearch costs
 * a comparison call per tree level on the per-sample path, and the libraries we link (elfutils,
 * zlib, zstd) export no table. Hashing: cs_hash_u64 and cs_hash_bytes (cs.h). */
#ifndef CSAMPLER_HASH_H
#define CSAMPLER_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cs_hash {
	struct cs_hash_slot {
		uint64_t hash;
		void *item;        /* NULL: empty slot */
	} *slots;
	size_t cap, count;
};
typedef bool (*cs_hash_eq)(const void *item, const void *key);

/* The item with this hash that eq(item, key) accepts, or NULL. */
void *cs_hash_find(const struct cs_hash *h, uint64_t hash, cs_hash_eq eq, const void *key);
/* Add item (not NULL) under hash. Items of equal hash are found in the order they were added
 * (across growth and removals): an item equal to one already there is found after it. */
void cs_hash_insert(struct cs_hash *h, uint64_t hash, void *item);
/* Remove and return the item cs_hash_find would return, or NULL. */
void *cs_hash_remove(struct cs_hash *h, uint64_t hash, cs_hash_eq eq, const void *key);
/* Free the slots (not the items); the table is empty and usable again. */
void cs_hash_free(struct cs_hash *h);
/* Call free_item on every item, then cs_hash_free: for a table that owns its items. */
void cs_hash_free_items(struct cs_hash *h, void (*free_item)(void *item));

#define CS_MAP_NONE UINT32_MAX

struct cs_map {
	struct cs_map_slot {
		uint64_t a, b;
		uint32_t val;      /* CS_MAP_NONE: empty slot */
	} *slots;
	size_t cap, n;
};

/* The value of (a, b); a new key's value is CS_MAP_NONE for the caller to set (to anything
 * but CS_MAP_NONE). The pointer is good until the next cs_map_slot on the same map. */
uint32_t *cs_map_slot(struct cs_map *m, uint64_t a, uint64_t b);
/* The value of (a, b), or CS_MAP_NONE when the key is not there (nothing is added). */
uint32_t cs_map_find(const struct cs_map *m, uint64_t a, uint64_t b);
void cs_map_free(struct cs_map *m);

struct cs_intern {
	struct cs_hash strings;  /* owns its items: NUL-terminated copies */
};

/* The one copy of s, made on first sight; good until cs_intern_free. */
const char *cs_intern(struct cs_intern *t, const char *s);
void cs_intern_free(struct cs_intern *t);

#endif
