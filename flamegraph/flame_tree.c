/* flame_tree.c: the merged call tree of a flamegraph. Stacks are added root first; each frame
 * is interned once as a key (name + flags, as flamegraph.pl merges by name) and each
 * (parent, key) pair is one node,
 * found through a hash map, so memory grows with the distinct stacks, not with the input.
 * A flame chart merges a frame only with its parent's last child (time order is kept).
 *
 * Hand-written hash tables: C has none in its standard library and none of csampler's
 * libraries (elfutils, zlib, zstd) exports one; glibc's hsearch allows one table a process.
 * Strings are hashed with xxHash's XXH3 (libxxhash-dev, used header-only and inlined here:
 * this is the hot path of a million-line input), integer keys with cs_hash_u64 (cs.h). */
#include "flame.h"
#include "base/cs.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define FLAME_MAP_EMPTY UINT64_MAX

/* ---- uint64 -> uint32 map ---- */

static void flame_map_init(struct flame_map *m, size_t cap)
{
	m->cap = cap;
	m->len = 0;
	m->slots = cs_malloc(cap * sizeof(*m->slots));
	for (size_t i = 0; i < cap; i++)
		m->slots[i].key = FLAME_MAP_EMPTY;
}

static void flame_map_free(struct flame_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static void flame_map_insert_nogrow(struct flame_map *m, uint64_t key, uint32_t val)
{
	size_t mask = m->cap - 1, i = cs_hash_u64(key) & mask;
	while (m->slots[i].key != FLAME_MAP_EMPTY)
		i = (i + 1) & mask;
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->len++;
}

static void flame_map_grow(struct flame_map *m)
{
	struct flame_map old = *m;
	flame_map_init(m, old.cap * 2);
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].key != FLAME_MAP_EMPTY)
			flame_map_insert_nogrow(m, old.slots[i].key, old.slots[i].val);
	flame_map_free(&old);
}

/* The value for key, or FLAME_NONE; *slot is where it is or would go. */
static uint32_t flame_map_find(const struct flame_map *m, uint64_t key, size_t *slot)
{
	size_t mask = m->cap - 1, i = cs_hash_u64(key) & mask;
	for (;;) {
		if (m->slots[i].key == key) {
			*slot = i;
			return m->slots[i].val;
		}
		if (m->slots[i].key == FLAME_MAP_EMPTY) {
			*slot = i;
			return FLAME_NONE;
		}
		i = (i + 1) & mask;
	}
}

/* ---- strings (modules, files) ---- */

static uint32_t flame_str_intern(struct flame_tree *t, const char *s)
{
	if (!s || !*s)
		return 0;
	size_t n = strlen(s);
	if ((t->nstrs + 1) * 2 > t->str_slots_cap) {
		size_t cap = t->str_slots_cap ? t->str_slots_cap * 2 : 64;
		uint32_t *slots = cs_calloc(cap, sizeof(*slots));
		for (size_t id = 1; id < t->nstrs; id++) {
			size_t i = XXH3_64bits(t->strs[id], strlen(t->strs[id])) & (cap - 1);
			while (slots[i])
				i = (i + 1) & (cap - 1);
			slots[i] = id;
		}
		free(t->str_slots);
		t->str_slots = slots;
		t->str_slots_cap = cap;
	}
	size_t mask = t->str_slots_cap - 1, i = XXH3_64bits(s, n) & mask;
	for (; t->str_slots[i]; i = (i + 1) & mask)
		if (!strcmp(t->strs[t->str_slots[i]], s))
			return t->str_slots[i];
	cs_grow(&t->strs, &t->strs_cap, t->nstrs + 1, sizeof(*t->strs));
	t->strs[t->nstrs] = cs_strdup(s);
	t->str_slots[i] = t->nstrs;
	return t->nstrs++;
}

/* ---- keys ---- */

static void flame_key_slots_rehash(struct flame_tree *t)
{
	size_t cap = t->key_slots_cap ? t->key_slots_cap * 2 : 1024;
	uint32_t *slots = cs_calloc(cap, sizeof(*slots));
	for (size_t k = 0; k < t->nkeys; k++) {
		size_t i = t->keys[k].hash & (cap - 1);
		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = k + 1;
	}
	free(t->key_slots);
	t->key_slots = slots;
	t->key_slots_cap = cap;
}

/* Frames merge by name and flags, so that folded text (without modules) and data files
 * (with them) give the same tree. The module and line are attributes: merged frames that
 * disagree on the line show the file alone; on the module, "(several modules)". */
static void flame_key_merge(struct flame_tree *t, struct flame_key *k, const struct fold_frame *f)
{
	if (k->line && f->line != k->line)
		k->line = 0;
	if (f->module && *f->module && k->module != t->several_modules &&
	    (!k->module || strcmp(t->strs[k->module], f->module)))
		k->module = k->module ? t->several_modules : flame_str_intern(t, f->module);
	if (!k->file && f->file)
		k->file = flame_str_intern(t, f->file);
}

/* The flags that tell frames apart. The others say how a frame was found or named (by a
 * frame-pointer step or a scan, without a symbol): folded text does not carry them, and the
 * same function found two ways is one frame (a diff of folded text against a data file would
 * otherwise see a frame change). */
#define FLAME_IDENTITY_FLAGS                                                                      \
	(~(uint32_t)(PROFILE_FRAME_UNNAMED | PROFILE_FRAME_FOUND_FP | PROFILE_FRAME_FOUND_SCAN))

/* Whether key is the frame f, without interning f. */
static bool flame_key_is(struct flame_tree *t, uint32_t key, const struct fold_frame *f)
{
	struct flame_key *k = &t->keys[key];
	if (k->flags != (f->flags & FLAME_IDENTITY_FLAGS) || strcmp(t->names + k->name, f->name))
		return false;
	flame_key_merge(t, k, f);
	return true;
}

static uint32_t flame_key_intern(struct flame_tree *t, const struct fold_frame *f)
{
	size_t n = strlen(f->name);
	uint32_t flags = f->flags & FLAME_IDENTITY_FLAGS;
	uint64_t h64 = XXH3_64bits(f->name, n) ^ cs_hash_u64(flags);
	uint32_t h = (uint32_t)h64 ^ (uint32_t)(h64 >> 32);

	if ((t->nkeys + 1) * 2 > t->key_slots_cap)
		flame_key_slots_rehash(t);
	size_t mask = t->key_slots_cap - 1, i = h & mask;
	for (; t->key_slots[i]; i = (i + 1) & mask) {
		struct flame_key *k = &t->keys[t->key_slots[i] - 1];
		if (k->hash == h && k->flags == flags && !strcmp(t->names + k->name, f->name)) {
			flame_key_merge(t, k, f);
			return t->key_slots[i] - 1;
		}
	}
	cs_grow(&t->names, &t->names_cap, t->names_len + n + 1, 1);
	memcpy(t->names + t->names_len, f->name, n + 1);
	cs_grow(&t->keys, &t->keys_cap, t->nkeys + 1, sizeof(*t->keys));
	t->keys[t->nkeys] = (struct flame_key){
		.name = t->names_len,
		.module = f->module ? flame_str_intern(t, f->module) : 0,
		.file = flame_str_intern(t, f->file),
		.line = f->file ? f->line : 0,
		.flags = flags,
		.hash = h,
	};
	t->names_len += n + 1;
	t->key_slots[i] = t->nkeys + 1;
	return t->nkeys++;
}

/* ---- nodes ---- */

static uint32_t flame_node_new(struct flame_tree *t, uint32_t parent, uint32_t key)
{
	if (t->nnodes + 1 > t->nodes_cap) {
		size_t old = t->nodes_cap;
		cs_grow(&t->nodes, &t->nodes_cap, t->nnodes + 1, sizeof(*t->nodes));
		for (int s = 0; s < 2; s++) {
			if (s == FLAME_SERIES_BEFORE && !t->count[s])
				continue; /* allocated by the first BEFORE stack */
			t->count[s] = cs_realloc(t->count[s], t->nodes_cap * sizeof(double));
			memset(t->count[s] + old, 0, (t->nodes_cap - old) * sizeof(double));
		}
		if (t->calls) {
			t->calls = cs_realloc(t->calls, t->nodes_cap * sizeof(double));
			memset(t->calls + old, 0, (t->nodes_cap - old) * sizeof(double));
		}
	}
	uint32_t id = t->nnodes++;
	t->nodes[id] = (struct flame_node){
		.key = key, .parent = parent,
		.first_child = FLAME_NONE, .last_child = FLAME_NONE, .next_sibling = FLAME_NONE,
	};
	if (parent != FLAME_NONE && t->flamechart) {
		struct flame_node *p = &t->nodes[parent];
		if (p->last_child == FLAME_NONE)
			p->first_child = id;
		else
			t->nodes[p->last_child].next_sibling = id;
		p->last_child = id;
	}
	return id;
}

/* The child of parent for frame f, created when missing. Flame charts look at the last
 * child only. Otherwise, while the tree is built, a node's first_child and last_child fields
 * hold its first and latest children, and only the children after the first go into the
 * hash map: deep in a stack a node mostly has one child, which is then found without a
 * hash lookup (that would miss the cache on big profiles). */
static uint32_t flame_child(struct flame_tree *t, uint32_t parent, const struct fold_frame *f)
{
	uint32_t first = t->nodes[parent].first_child, node;

	if (t->flamechart) {
		uint32_t last = t->nodes[parent].last_child;
		if (last != FLAME_NONE && flame_key_is(t, t->nodes[last].key, f))
			return last;
		return flame_node_new(t, parent, flame_key_intern(t, f));
	}
	if (first == FLAME_NONE) {
		node = flame_node_new(t, parent, flame_key_intern(t, f));
		t->nodes[parent].first_child = t->nodes[parent].last_child = node;
		return node;
	}
	if (flame_key_is(t, t->nodes[first].key, f))
		return first;
	uint32_t key = flame_key_intern(t, f);
	uint64_t mk = ((uint64_t)parent << 32) | key;
	size_t slot = 0;
	bool have_slot = t->nodes[parent].last_child != first; /* more than one child yet */
	if (have_slot) {
		node = flame_map_find(&t->children, mk, &slot);
		if (node != FLAME_NONE)
			return node;
	}
	node = flame_node_new(t, parent, key);
	t->nodes[parent].last_child = node;
	if (!have_slot || (t->children.len + 1) * 4 > t->children.cap * 3) {
		if ((t->children.len + 1) * 4 > t->children.cap * 3)
			flame_map_grow(&t->children);
		flame_map_insert_nogrow(&t->children, mk, node);
	} else {
		t->children.slots[slot].key = mk;
		t->children.slots[slot].val = node;
		t->children.len++;
	}
	return node;
}

void flame_tree_init(struct flame_tree *t, bool flamechart, bool reverse)
{
	memset(t, 0, sizeof(*t));
	t->flamechart = flamechart;
	t->reverse = reverse;
	t->strs = cs_malloc(16 * sizeof(*t->strs));
	t->strs_cap = 16;
	t->strs[0] = cs_strdup("");
	t->nstrs = 1;
	t->several_modules = flame_str_intern(t, "(several modules)");
	if (!flamechart)
		flame_map_init(&t->children, 1024);
	flame_node_new(t, FLAME_NONE, FLAME_NONE); /* the root, "all" */
}

void flame_tree_free(struct flame_tree *t)
{
	for (size_t i = 0; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->str_slots);
	free(t->names);
	free(t->keys);
	free(t->key_slots);
	free(t->nodes);
	free(t->count[0]);
	free(t->count[1]);
	free(t->calls);
	if (t->children.slots)
		flame_map_free(&t->children);
	free(t->path);
	free(t->rev);
	free(t->stacks.slots);
	memset(t, 0, sizeof(*t));
}

uint32_t flame_tree_add(struct flame_tree *t, const struct fold_frame *frames, size_t n,
			size_t same_prefix, int series, double count)
{
	if (t->reverse && n > 1) {
		cs_grow(&t->rev, &t->rev_cap, n, sizeof(*t->rev));
		for (size_t i = 0; i < n; i++)
			t->rev[i] = frames[n - 1 - i];
		frames = t->rev;
		same_prefix = 0;
	}
	if (same_prefix > t->path_len)
		same_prefix = t->path_len;
	if (same_prefix > n)
		same_prefix = n;
	cs_grow(&t->path, &t->path_cap, n, sizeof(*t->path));

	uint32_t node = same_prefix ? t->path[same_prefix - 1] : 0;
	for (size_t k = same_prefix; k < n; k++) {
		node = flame_child(t, node, &frames[k]);
		t->path[k] = node;
	}
	t->path_len = n;
	flame_tree_add_leaf(t, node, series, count);
	return node;
}

void flame_tree_add_leaf(struct flame_tree *t, uint32_t leaf, int series, double count)
{
	if (series == FLAME_SERIES_BEFORE && !t->count[FLAME_SERIES_BEFORE])
		t->count[FLAME_SERIES_BEFORE] = cs_calloc(t->nodes_cap, sizeof(double));
	t->count[series][leaf] += count;
	t->total[series] += count;
}

void flame_tree_add_calls(struct flame_tree *t, uint32_t leaf, uint64_t calls)
{
	if (!t->calls)
		t->calls = cs_calloc(t->nodes_cap, sizeof(double));
	t->calls[leaf] += (double)calls;
}

void flame_tree_finish(struct flame_tree *t)
{
	if (t->finished)
		return;
	for (size_t i = 0; i < t->stacks.cap; i++) {
		const struct flame_stackmap_slot *sl = &t->stacks.slots[i];
		for (int s = 0; s < 2; s++)
			if (t->count[s])
				t->count[s][sl->leaf] += sl->count[s];
	}
	if (!t->flamechart) {
		for (size_t i = 0; i < t->nnodes; i++) /* drop the first/latest child fields */
			t->nodes[i].first_child = t->nodes[i].last_child = FLAME_NONE;
		for (size_t i = 1; i < t->nnodes; i++) {
			struct flame_node *p = &t->nodes[t->nodes[i].parent];
			if (p->last_child == FLAME_NONE)
				p->first_child = i;
			else
				t->nodes[p->last_child].next_sibling = i;
			p->last_child = i;
		}
	}
	/* Children come after their parents, so one backward pass sums every subtree. */
	for (int s = 0; s < 3; s++) {
		double *c = s < 2 ? t->count[s] : t->calls;
		if (!c)
			continue;
		for (size_t i = t->nnodes; i-- > 1;)
			c[t->nodes[i].parent] += c[i];
	}
	t->finished = true;
}

/* ---- whole stacks ---- */

void flame_hash128(const char *s, size_t n, uint64_t out[2])
{
	XXH128_hash_t h = XXH3_128bits(s, n);
	out[0] = h.low64;
	out[1] = h.high64;
	if (!out[0] && !out[1])
		out[1] = 1; /* 0,0 marks an empty slot */
}

double *flame_tree_stack_find(const struct flame_tree *t, const uint64_t hash[2])
{
	const struct flame_stackmap *m = &t->stacks;
	if (!m->cap)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = hash[0] & mask;; i = (i + 1) & mask) {
		struct flame_stackmap_slot *sl = &m->slots[i];
		if (sl->hash[0] == hash[0] && sl->hash[1] == hash[1])
			return sl->count;
		if (!sl->hash[0] && !sl->hash[1])
			return NULL;
	}
}

/* Insert (or find) hash; the slot is returned. */
static struct flame_stackmap_slot *flame_stackmap_put(struct flame_stackmap *m,
						      const uint64_t hash[2])
{
	size_t mask = m->cap - 1, i = hash[0] & mask;
	for (;; i = (i + 1) & mask) {
		struct flame_stackmap_slot *sl = &m->slots[i];
		if (sl->hash[0] == hash[0] && sl->hash[1] == hash[1])
			return sl;
		if (!sl->hash[0] && !sl->hash[1])
			break;
	}
	m->slots[i] = (struct flame_stackmap_slot){ .hash = { hash[0], hash[1] } };
	m->len++;
	return &m->slots[i];
}

double *flame_tree_stack_remember(struct flame_tree *t, const uint64_t hash[2], uint32_t leaf)
{
	struct flame_stackmap *m = &t->stacks;
	if ((m->len + 1) * 2 > m->cap) {
		struct flame_stackmap old = *m;
		m->cap = old.cap ? old.cap * 2 : 4096;
		m->len = 0;
		m->slots = cs_calloc(m->cap, sizeof(*m->slots));
		for (size_t i = 0; i < old.cap; i++)
			if (old.slots[i].hash[0] || old.slots[i].hash[1])
				*flame_stackmap_put(m, old.slots[i].hash) = old.slots[i];
		free(old.slots);
	}
	struct flame_stackmap_slot *sl = flame_stackmap_put(m, hash);
	sl->leaf = leaf;
	return sl->count;
}

void flame_tree_count(struct flame_tree *t, double *counts, int series, double count)
{
	if (series == FLAME_SERIES_BEFORE && !t->count[FLAME_SERIES_BEFORE])
		t->count[FLAME_SERIES_BEFORE] = cs_calloc(t->nodes_cap, sizeof(double));
	counts[series] += count;
	t->total[series] += count;
}
