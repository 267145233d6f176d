/* search.h: binary search over sorted arrays, the one copy of "the last entry <= key" and
 * "the first record at or after t" that analysis, unwind, format and export share (as C++'s
 * lower_bound and upper_bound). Header-only and inline, so that the keys and widths, known at
 * each call, fold into a plain loop.
 *
 *   i = CS_LOWER_BOUND(v, n, start, t);    first v[i] with v[i].start >= t (n when none)
 *   i = CS_UPPER_BOUND(v, n, start, addr); first v[i] with v[i].start > addr, so v[i - 1] is
 *                                          the last entry <= addr when i > 0
 *   CS_LOWER_BOUND2(v, n, pid, p, t, t0)   the same on (pid, t) pairs sorted lexicographically
 *
 * The key fields must be unsigned integers (a signed one fails to compile). */
#ifndef CSAMPLER_SEARCH_H
#define CSAMPLER_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The element of v[0..n) (size bytes each) whose const char * at offset equals name, or NULL:
 * the lookup of the small tables by name (subcommands, export formats). Through
 *   e = CS_FIND_NAME(table, n, name_field, name); */
static inline const void *cs_find_name(const void *v, size_t n, size_t size, size_t offset,
				       const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *e = (const char *)v + i * size, *s;
		memcpy(&s, e + offset, sizeof(s));
		if (s && !strcmp(s, name))
			return e;
	}
	return NULL;
}
#define CS_FIND_NAME(v, n, field, name)                                                    \
	((__typeof__(&(v)[0]))cs_find_name((v), (n), sizeof((v)[0]),                      \
					   offsetof(__typeof__((v)[0]), field), (name)))

/* One key of a lexicographic comparison: an unsigned field of width bytes at offset. */
struct cs_key {
	size_t offset, width;
	uint64_t value;
};

static inline uint64_t cs_key_field(const char *elem, const struct cs_key *k)
{
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;
	switch (k->width) {
	case 8: memcpy(&v64, elem + k->offset, 8); return v64;
	case 4: memcpy(&v32, elem + k->offset, 4); return v32;
	case 2: memcpy(&v16, elem + k->offset, 2); return v16;
	default: return (uint8_t)elem[k->offset];
	}
}

/* The first index of base[0..n) (elements of size bytes, sorted by keys[0..nkeys)) whose keys
 * are >= the values (upper: > the values); n when there is none. */
static inline size_t cs_bound(const void *base, size_t n, size_t size, const struct cs_key *keys,
			      size_t nkeys, bool upper)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *elem = (const char *)base + mid * size;
		int cmp = 0; /* elem's keys against the values */
		for (size_t k = 0; k < nkeys && !cmp; k++) {
			uint64_t v = cs_key_field(elem, &keys[k]);
			cmp = v < keys[k].value ? -1 : v > keys[k].value;
		}
		if (cmp < 0 || (upper && cmp == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first index i of [0, n) where before(i, arg) is false, for a before() that holds on a
 * prefix of [0, n): for orders no field expresses (an index array into another array). */
static inline size_t cs_partition_point(size_t n, bool (*before)(size_t i, const void *arg),
					const void *arg)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(mid, arg))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A key on field f of the elements of arr; a signed field makes the array size negative. */
#define CS_KEY(arr, f, v)                                                                  \
	((struct cs_key){ offsetof(__typeof__(*(arr)), f) +                                \
				  0 * sizeof(char[((__typeof__((arr)->f))-1 > 0) ? 1 : -1]), \
			  sizeof((arr)->f), (uint64_t)(v) })

#define CS_BOUND_(arr, n, upper, ...)                                                      \
	cs_bound((arr), (n), sizeof(*(arr)), (const struct cs_key[]){ __VA_ARGS__ },         \
		 sizeof((const struct cs_key[]){ __VA_ARGS__ }) / sizeof(struct cs_key), (upper))

#define CS_LOWER_BOUND(arr, n, f, v) CS_BOUND_(arr, n, false, CS_KEY(arr, f, v))
#define CS_UPPER_BOUND(arr, n, f, v) CS_BOUND_(arr, n, true, CS_KEY(arr, f, v))
#define CS_LOWER_BOUND2(arr, n, f1, v1, f2, v2)                                             \
	CS_BOUND_(arr, n, false, CS_KEY(arr, f1, v1), CS_KEY(arr, f2, v2))
#define CS_UPPER_BOUND2(arr, n, f1, v1, f2, v2)                                             \
	CS_BOUND_(arr, n, true, CS_KEY(arr, f1, v1), CS_KEY(arr, f2, v2))
#define CS_UPPER_BOUND3(arr, n, f1, v1, f2, v2, f3, v3)                                     \
	CS_BOUND_(arr, n, true, CS_KEY(arr, f1, v1), CS_KEY(arr, f2, v2), CS_KEY(arr, f3, v3))

/* Plain sorted arrays of integers. */
static inline size_t cs_lower_bound_u64(const uint64_t *v, size_t n, uint64_t key)
{
	return cs_bound(v, n, sizeof(*v), &(struct cs_key){ 0, sizeof(*v), key }, 1, false);
}

static inline size_t cs_upper_bound_u64(const uint64_t *v, size_t n, uint64_t key)
{
	return cs_bound(v, n, sizeof(*v), &(struct cs_key){ 0, sizeof(*v), key }, 1, true);
}

#endif
