/* live.c: `csampler top`'s aggregation (live.h). Samples are counted per (thread, stack id),
 * so that the names, which come a little later (the recorder names new locations every
 * 250 ms), apply to every sample already counted: functions are summed from the stacks at each
 * query (once a second), a few thousand stacks at most. */
#include "record/live.h"

#include "base/cs.h"
#include "format/datafile.h"
#include "base/hash.h"
#include "unwind/symbols.h"

#include <string.h>

struct live_func {               /* a function: name and module (or Python file) */
	char *name, *where;
	bool python;
	uint64_t self, total, stamp; /* query scratch */
};

struct live_loc {
	uint32_t *funcs;             /* inline chain, innermost first (function ids) */
	uint32_t n;
};

struct live_count {              /* samples of one stack on one thread */
	uint64_t key;                /* tid << 32 | stack */
	uint64_t count;
};

struct live_kern {
	char *name;
	uint64_t count, total_ns;
};

struct live {
	struct live_func *funcs;
	size_t nfuncs, cap_funcs;
	struct cs_hash funcs_by_key;
	struct live_loc *locs;
	size_t nlocs, cap_locs;
	uint32_t **stacks;           /* by id: [n, loc ids...] */
	size_t nstacks, cap_stacks;
	struct live_count **counts;
	size_t ncounts, cap_counts;
	struct cs_hash counts_by_key;
	uint64_t samples, stamp;
	struct live_kern *kernels;
	size_t nkernels, cap_kernels;
	struct cs_hash kernels_by_name;
	uint64_t gpu_kernels, gpu_ns;
};

struct live_func_key {
	const char *name, *where;
	bool python;
};

static bool live_func_eq(const void *item, const void *key)
{
	const struct live_func *f = item;
	const struct live_func_key *k = key;
	return f->python == k->python && !strcmp(f->name, k->name) && !strcmp(f->where, k->where);
}

static bool live_count_eq(const void *item, const void *key)
{
	return ((const struct live_count *)item)->key == *(const uint64_t *)key;
}

static bool live_kern_eq(const void *item, const void *key)
{
	return !strcmp(((const struct live_kern *)item)->name, key);
}

struct live *live_new(void)
{
	return cs_calloc(1, sizeof(struct live));
}

void live_free(struct live *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nfuncs; i++)
		free(l->funcs[i].name), free(l->funcs[i].where);
	for (size_t i = 0; i < l->nlocs; i++)
		free(l->locs[i].funcs);
	for (size_t i = 0; i < l->nstacks; i++)
		free(l->stacks[i]);
	for (size_t i = 0; i < l->ncounts; i++)
		free(l->counts[i]);
	for (size_t i = 0; i < l->nkernels; i++)
		free(l->kernels[i].name);
	cs_hash_free(&l->funcs_by_key);
	cs_hash_free(&l->counts_by_key);
	cs_hash_free(&l->kernels_by_name);
	CS_FREE_ALL(l->funcs, l->locs, l->stacks, l->counts, l->kernels, l);
}

static uint32_t live_func_id(struct live *l, const char *name, const char *where, bool python)
{
	struct live_func_key k = { name, where, python };
	uint64_t h = cs_hash_bytes(name, strlen(name), python) ^ cs_hash_bytes(where, strlen(where), 7);
	struct live_func *f = cs_hash_find(&l->funcs_by_key, h, live_func_eq, &k);
	if (f)
		return (uint32_t)(f - l->funcs);
	/* funcs moves as it grows and the table keeps pointers: rebuilt after a move */
	struct live_func *old = l->funcs;
	cs_grow(&l->funcs, &l->cap_funcs, l->nfuncs + 1, sizeof(*l->funcs));
	if (old != l->funcs && l->nfuncs) {
		cs_hash_free(&l->funcs_by_key);
		memset(&l->funcs_by_key, 0, sizeof(l->funcs_by_key));
		for (size_t i = 0; i < l->nfuncs; i++) {
			struct live_func *g = &l->funcs[i];
			cs_hash_insert(&l->funcs_by_key,
					     cs_hash_bytes(g->name, strlen(g->name), g->python) ^
						     cs_hash_bytes(g->where, strlen(g->where), 7),
					     g);
		}
	}
	f = &l->funcs[l->nfuncs++];
	*f = (struct live_func){ .name = cs_strdup(name), .where = cs_strdup(where), .python = python };
	cs_hash_insert(&l->funcs_by_key, h, f);
	return (uint32_t)(l->nfuncs - 1);
}

void live_stack(struct live *l, uint32_t id, const uint32_t *locs, uint32_t n)
{
	if (id >= l->nstacks) {
		cs_grow(&l->stacks, &l->cap_stacks, (size_t)id + 1, sizeof(*l->stacks));
		memset(l->stacks + l->nstacks, 0, ((size_t)id + 1 - l->nstacks) * sizeof(*l->stacks));
		l->nstacks = (size_t)id + 1;
	}
	free(l->stacks[id]);
	l->stacks[id] = cs_malloc(((size_t)n + 1) * sizeof(uint32_t));
	l->stacks[id][0] = n;
	memcpy(l->stacks[id] + 1, locs, (size_t)n * sizeof(uint32_t));
}

void live_symbol(struct live *l, uint32_t loc, const struct sym_frame *frames, int n,
		 const char *module)
{
	if (loc >= l->nlocs) {
		cs_grow(&l->locs, &l->cap_locs, (size_t)loc + 1, sizeof(*l->locs));
		memset(l->locs + l->nlocs, 0, ((size_t)loc + 1 - l->nlocs) * sizeof(*l->locs));
		l->nlocs = (size_t)loc + 1;
	}
	struct live_loc *L = &l->locs[loc];
	free(L->funcs);
	L->funcs = cs_malloc((size_t)(n > 0 ? n : 1) * sizeof(uint32_t));
	L->n = 0;
	const char *base = cs_basename(module && *module ? module : "?");
	for (int i = 0; i < n; i++) {
		bool py = (frames[i].flags & PROFILE_FRAME_PYTHON) != 0;
		const char *where = py && frames[i].file ? cs_basename(frames[i].file) : base;
		L->funcs[L->n++] = live_func_id(l, frames[i].name ? frames[i].name : "?", where, py);
	}
	if (!n)
		L->funcs[L->n++] = live_func_id(l, "[unknown]", base, false);
}

void live_sample(struct live *l, uint32_t pid, uint32_t tid, uint32_t stack, uint32_t weight)
{
	(void)pid;
	uint64_t key = (uint64_t)tid << 32 | stack;
	uint64_t h = cs_hash_u64(key);
	struct live_count *c = cs_hash_find(&l->counts_by_key, h, live_count_eq, &key);
	if (!c) {
		c = cs_calloc(1, sizeof(*c));
		c->key = key;
		*CS_PUSH(l->counts, l->ncounts, l->cap_counts) = c;
		cs_hash_insert(&l->counts_by_key, h, c);
	}
	c->count += weight;
	l->samples += weight;
}

void live_gpu_activity(struct live *l, const struct df_gpu_activity *a, const char *name)
{
	if (a->kind != DF_GPU_KERNEL)
		return;
	const char *n = name && *name ? name : "[unnamed kernel]";
	uint64_t h = cs_hash_bytes(n, strlen(n), 0);
	struct live_kern *k = cs_hash_find(&l->kernels_by_name, h, live_kern_eq, n);
	if (!k) {
		struct live_kern *old = l->kernels;
		cs_grow(&l->kernels, &l->cap_kernels, l->nkernels + 1, sizeof(*l->kernels));
		if (old != l->kernels) {
			cs_hash_free(&l->kernels_by_name);
			memset(&l->kernels_by_name, 0, sizeof(l->kernels_by_name));
			for (size_t i = 0; i < l->nkernels; i++)
				cs_hash_insert(&l->kernels_by_name,
						     cs_hash_bytes(l->kernels[i].name,
								   strlen(l->kernels[i].name), 0),
						     &l->kernels[i]);
		}
		k = &l->kernels[l->nkernels++];
		*k = (struct live_kern){ .name = cs_strdup(n) };
		cs_hash_insert(&l->kernels_by_name, h, k);
	}
	uint64_t d = a->end > a->start ? a->end - a->start : 0;
	k->count++;
	k->total_ns += d;
	l->gpu_kernels++;
	l->gpu_ns += d;
}

uint64_t live_samples(const struct live *l)
{
	return l->samples;
}

uint64_t live_gpu_kernels(const struct live *l, uint64_t *total_ns)
{
	if (total_ns)
		*total_ns = l->gpu_ns;
	return l->gpu_kernels;
}

/* Self and total of every function over the counts of tid (0: all), into funcs[].self/total. */
static void live_sum(struct live *l, uint32_t tid)
{
	for (size_t i = 0; i < l->nfuncs; i++)
		l->funcs[i].self = l->funcs[i].total = 0;
	for (size_t i = 0; i < l->ncounts; i++) {
		const struct live_count *c = l->counts[i];
		uint32_t ctid = (uint32_t)(c->key >> 32), sid = (uint32_t)c->key;
		if (tid && ctid != tid)
			continue;
		const uint32_t *st = sid < l->nstacks ? l->stacks[sid] : NULL;
		if (!st)
			continue;
		l->stamp++;
		bool leaf = true;
		for (uint32_t k = 0; k < st[0]; k++) {
			uint32_t loc = st[1 + k];
			if (loc >= l->nlocs || !l->locs[loc].n)
				continue;   /* not named yet: counted once it is */
			const struct live_loc *L = &l->locs[loc];
			for (uint32_t j = 0; j < L->n; j++) {
				struct live_func *f = &l->funcs[L->funcs[j]];
				if (leaf && j == 0)
					f->self += c->count;
				if (f->stamp != l->stamp) {   /* once per stack (recursion) */
					f->stamp = l->stamp;
					f->total += c->count;
				}
			}
			leaf = false;
		}
	}
}

/* Sort the n entries of all (size bytes each), copy the first max of them to out and free
 * all; returns how many were copied. */
static size_t live_top(void *all, size_t n, size_t size, int (*cmp)(const void *, const void *),
		       void *out, size_t max)
{
	cs_qsort(all, n, size, cmp);
	if (n > max)
		n = max;
	if (n)
		memcpy(out, all, n * size);
	free(all);
	return n;
}

CS_CMP_FN(live_fn_cmp_self, struct live_fn,
	CS_CMP(b->self, a->self) ?: CS_CMP(b->total, a->total) ?: strcmp(a->name, b->name))

CS_CMP_FN(live_fn_cmp_total, struct live_fn,
	CS_CMP(b->total, a->total) ?: CS_CMP(b->self, a->self) ?: strcmp(a->name, b->name))

size_t live_functions(struct live *l, uint32_t tid, enum live_sort sort, struct live_fn *out,
		      size_t max)
{
	live_sum(l, tid);
	struct live_fn *all = cs_calloc(l->nfuncs ? l->nfuncs : 1, sizeof(*all));
	size_t n = 0;
	for (size_t i = 0; i < l->nfuncs; i++) {
		const struct live_func *f = &l->funcs[i];
		if (!f->total)
			continue;
		all[n++] = (struct live_fn){ f->name, f->where, f->python, f->self, f->total };
	}
	return live_top(all, n, sizeof(*all),
			sort == LIVE_SORT_TOTAL ? live_fn_cmp_total : live_fn_cmp_self, out, max);
}

CS_CMP_FN(live_thread_cmp, struct live_thread,
	CS_CMP(b->samples, a->samples) ?: CS_CMP(a->tid, b->tid))

size_t live_threads(struct live *l, struct live_thread *out, size_t max)
{
	struct live_thread *all = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < l->ncounts; i++) {
		uint32_t tid = (uint32_t)(l->counts[i]->key >> 32);
		size_t k = 0;
		while (k < n && all[k].tid != tid)
			k++;
		if (k == n) {
			*CS_PUSH(all, n, cap) = (struct live_thread){ .tid = tid };
		}
		all[k].samples += l->counts[i]->count;
	}
	n = live_top(all, n, sizeof(*all), live_thread_cmp, out, max);
	for (size_t i = 0; i < n; i++) {
		struct live_fn top;
		if (live_functions(l, out[i].tid, LIVE_SORT_SELF, &top, 1) == 1) {
			out[i].top = top.name;
			out[i].top_self = top.self;
		}
	}
	return n;
}

CS_CMP_FN(live_kernel_cmp, struct live_kernel,
	CS_CMP(b->total_ns, a->total_ns) ?: strcmp(a->name, b->name))

size_t live_kernels(struct live *l, struct live_kernel *out, size_t max)
{
	struct live_kernel *all = cs_calloc(l->nkernels ? l->nkernels : 1, sizeof(*all));
	for (size_t i = 0; i < l->nkernels; i++)
		all[i] = (struct live_kernel){ l->kernels[i].name, l->kernels[i].count,
					       l->kernels[i].total_ns };
	return live_top(all, l->nkernels, sizeof(*all), live_kernel_cmp, out, max);
}
