/* fold_gpu.c: the GPU view of a profile for `folded`, `flame` and `diff` with --gpu or --both
 * (fold.h): every kernel, copy, memset and sync weighs its duration in nanoseconds and sits on
 * the CPU call path of the API call that launched it (profile_gpu_activity.launch), under the
 * NVTX ranges that were open on the launching thread when the call was made. fold.c
 * dispatches here for FOLD_GPU and for FOLD_BOTH's GPU half.
 *
 * Cost: one pass over the activities with a few integer hash lookups and a binary search in
 * the NVTX ranges each, then one callback per distinct (root, ranges, launch stack, leaf); the
 * names of leaves and ranges are built and compared once per distinct string id. */
#include "analysis/fold_gpu.h"

#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "base/hash.h"
#include "base/search.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_GPU_NONE CS_MAP_NONE /* also the empty value of the maps (base/hash.h) */

/* ---- the walk ---- */

/* An NVTX range of one thread. Sorted by (pid, tid, start, longest first), a range's parent is
 * the range that was still open when it started: properly nested ranges (push/pop) form a tree,
 * and every range open at a time T is an ancestor of the last range started at or before T. */
struct fold_gpu_range {
	uint64_t start, end;
	uint32_t pid, tid;
	uint32_t name;     /* profile string id */
	uint32_t parent;   /* index, or FOLD_GPU_NONE */
};

struct fold_gpu_entry {
	uint32_t root, stack, chain, leaf; /* stack: profile stack id or FOLD_GPU_NONE */
	uint64_t ns, calls;
};

struct fold_gpu {
	const struct profile *p;
	const struct fold_opts *opts;
	const char *prefix;          /* "GPU" in FOLD_BOTH, else NULL */
	char **texts;                /* frame names made here (leaves, ranges, roots); owned */
	size_t ntexts, texts_cap;
	struct cs_map text_ids;   /* (hash of the text, k) -> text id */
	struct cs_map roots;      /* (pid, tid) -> text id of the root frame */
	struct cs_map root_match; /* (pid, tid) -> 1 when the filter passes, 0 when not */
	struct cs_map leaves;     /* (kind << 32 | detail, name string id) -> text id */
	struct cs_map range_names;/* (name string id, 0) -> text id of "[nvtx] NAME" */
	struct fold_gpu_range *ranges;
	size_t nranges;
	struct cs_map chains;     /* (parent chain + 1, text id) -> chain id */
	uint32_t *chain_parent, *chain_text; /* per chain id */
	size_t nchains, chain_cap;
	uint32_t open[64];           /* scratch: the ranges open at a launch, innermost first */
	struct cs_map emap;       /* (root << 32 | stack, chain << 32 | leaf) -> entry */
	struct fold_gpu_entry *entries;
	size_t nentries, entries_cap;
	struct fold_frame *frames;   /* what the callback gets */
	size_t frames_cap;
};

/* The id of text (copied on first sight); equal texts get one id. */
static uint32_t fold_gpu_text(struct fold_gpu *g, const char *text)
{
	uint64_t h = cs_hash_bytes(text, strlen(text), 0);
	for (uint64_t k = 0;; k++) {
		uint32_t *v = cs_map_slot(&g->text_ids, h, k);
		if (*v == FOLD_GPU_NONE) {
			cs_grow(&g->texts, &g->texts_cap, g->ntexts + 1, sizeof(*g->texts));
			g->texts[g->ntexts] = cs_strdup(text);
			*v = (uint32_t)g->ntexts++;
			return *v;
		}
		if (!strcmp(g->texts[*v], text))
			return *v;
	}
}

static uint32_t fold_gpu_text_printf(struct fold_gpu *g, const char *prefix, const char *s)
{
	char *t = cs_asprintf("%s%s", prefix, s);
	uint32_t id = fold_gpu_text(g, t);
	free(t);
	return id;
}

/* The name of process pid: its own, its main thread's, any thread's, or "pid-N". */
static const char *fold_gpu_process_name(const struct profile *p, uint32_t pid)
{
	const char *any = NULL;
	for (size_t i = 0; i < p->nprocesses; i++)
		if (p->processes[i].pid == pid && p->processes[i].comm)
			return profile_str(p, p->processes[i].comm);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct profile_thread *t = &p->threads[i];
		if (t->pid != pid || !t->comm)
			continue;
		if (t->tid == pid)
			return profile_str(p, t->comm);
		if (!any)
			any = profile_str(p, t->comm);
	}
	return any;
}

static const char *fold_gpu_thread_name(const struct profile *p, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].pid == pid && p->threads[i].tid == tid && p->threads[i].comm)
			return profile_str(p, p->threads[i].comm);
	return fold_gpu_process_name(p, pid);
}

/* Whether (pid, tid) passes the filter, as stacks.c decides it for samples. */
static bool fold_gpu_match(struct fold_gpu *g, uint32_t pid, uint32_t tid)
{
	const struct fold_opts *o = g->opts;
	uint32_t *v = cs_map_slot(&g->root_match, pid, tid);
	if (*v != FOLD_GPU_NONE)
		return *v;
	bool ok = (o->pid < 0 || o->pid == pid) && (o->tid < 0 || o->tid == tid);
	if (ok && o->comm) {
		const char *pn = fold_gpu_process_name(g->p, pid);
		const char *tn = fold_gpu_thread_name(g->p, pid, tid);
		ok = (pn && !strcmp(pn, o->comm)) || (tn && !strcmp(tn, o->comm));
	}
	*v = ok;
	return ok;
}

/* The root frame: the process' name, or "comm-tid" with per_thread, as stacks.c names them. */
static uint32_t fold_gpu_root(struct fold_gpu *g, uint32_t pid, uint32_t tid)
{
	bool per_thread = g->opts->per_thread;
	uint32_t *v = cs_map_slot(&g->roots, pid, per_thread ? tid : UINT32_MAX);
	if (*v != FOLD_GPU_NONE)
		return *v;
	char *name;
	if (per_thread) {
		const char *comm = fold_gpu_thread_name(g->p, pid, tid);
		name = comm && *comm ? cs_asprintf("%s-%u", comm, tid) : cs_asprintf("tid-%u", tid);
	} else {
		const char *comm = fold_gpu_process_name(g->p, pid);
		name = comm && *comm ? cs_strdup(comm) : cs_asprintf("pid-%u", pid);
	}
	uint32_t id = fold_gpu_text(g, name);
	free(name);
	v = cs_map_slot(&g->roots, pid, per_thread ? tid : UINT32_MAX); /* may have moved */
	*v = id;
	return id;
}

/* The copy kinds as the leaf names them (fold.h), by the vendor's descriptor. */
const char *fold_gpu_copy_kind(const struct profile *p, const struct profile_gpu_activity *a)
{
	const char *name = gpu_vendor_copy_kind(profile_gpu_vendor(p, a->pid), a->detail);
	return name ? name : "?";
}

/* The leaf frame's text id of activity a, or FOLD_GPU_NONE for activities that are not GPU
 * work (NVTX ranges, API spans). */
static uint32_t fold_gpu_leaf(struct fold_gpu *g, const struct profile_gpu_activity *a)
{
	uint64_t k1 = (uint64_t)a->kind << 32, k2 = 0;
	switch (a->kind) {
	case PROFILE_GPU_KERNEL:
		k2 = a->name;
		break;
	case PROFILE_GPU_MEMCPY:
		k1 |= a->detail;
		k2 = a->pid;   /* its vendor names the copy kind */
		break;
	case PROFILE_GPU_MEMSET:
	case PROFILE_GPU_SYNC:
		break;
	default:
		return FOLD_GPU_NONE;
	}
	uint32_t *v = cs_map_slot(&g->leaves, k1, k2);
	if (*v != FOLD_GPU_NONE)
		return *v;
	uint32_t id;
	if (a->kind == PROFILE_GPU_KERNEL) {
		const char *name = profile_str(g->p, a->name);
		id = fold_gpu_text_printf(g, "[gpu] ", *name ? name : "(unnamed kernel)");
	} else if (a->kind == PROFILE_GPU_MEMCPY) {
		char buf[32];
		snprintf(buf, sizeof(buf), "[memcpy %s]", fold_gpu_copy_kind(g->p, a));
		id = fold_gpu_text(g, buf);
	} else {
		id = fold_gpu_text(g, a->kind == PROFILE_GPU_MEMSET ? "[memset]" : "[sync]");
	}
	v = cs_map_slot(&g->leaves, k1, k2);
	*v = id;
	return id;
}

static int fold_gpu_range_cmp(const void *x, const void *y)
{
	const struct fold_gpu_range *a = x, *b = y;
	/* the longer (outer) one first */
	return CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid) ?: CS_CMP(a->start, b->start) ?:
	       CS_CMP(b->end, a->end);
}

/* Collect the NVTX ranges (markers with a duration) and link each to its parent. */
static void fold_gpu_ranges(struct fold_gpu *g)
{
	const struct profile *p = g->p;
	size_t cap = 0;
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind != PROFILE_GPU_MARKER || a->end <= a->start)
			continue;
		cs_grow(&g->ranges, &cap, g->nranges + 1, sizeof(*g->ranges));
		g->ranges[g->nranges++] = (struct fold_gpu_range){
			.start = a->start, .end = a->end, .pid = a->pid, .tid = a->tid,
			.name = a->name, .parent = FOLD_GPU_NONE,
		};
	}
	if (!g->nranges)
		return;
	qsort(g->ranges, g->nranges, sizeof(*g->ranges), fold_gpu_range_cmp);
	uint32_t *open = cs_malloc(g->nranges * sizeof(*open));
	size_t nopen = 0;
	for (size_t i = 0; i < g->nranges; i++) {
		struct fold_gpu_range *r = &g->ranges[i];
		while (nopen) {
			const struct fold_gpu_range *top = &g->ranges[open[nopen - 1]];
			if (top->pid == r->pid && top->tid == r->tid && top->end > r->start)
				break;
			nopen--;
		}
		r->parent = nopen ? open[nopen - 1] : FOLD_GPU_NONE;
		open[nopen++] = (uint32_t)i;
	}
	free(open);
}

/* The chain of ranges open on (pid, tid) at time t, as a chain id (FOLD_GPU_NONE: none). */
static uint32_t fold_gpu_chain(struct fold_gpu *g, uint32_t pid, uint32_t tid, uint64_t t)
{
	size_t nopen = 0;
	const size_t max_open = sizeof(g->open) / sizeof(g->open[0]);
	/* The first range after (pid, tid, t). */
	size_t lo = CS_UPPER_BOUND3(g->ranges, g->nranges, pid, pid, tid, tid, start, t);
	if (!lo || g->ranges[lo - 1].pid != pid || g->ranges[lo - 1].tid != tid)
		return FOLD_GPU_NONE;
	for (uint32_t i = (uint32_t)(lo - 1); i != FOLD_GPU_NONE; i = g->ranges[i].parent)
		if (g->ranges[i].end > t && nopen < max_open)
			g->open[nopen++] = i;
	uint32_t chain = FOLD_GPU_NONE;
	while (nopen) {
		const struct fold_gpu_range *r = &g->ranges[g->open[--nopen]];
		uint32_t *tv = cs_map_slot(&g->range_names, r->name, 0);
		if (*tv == FOLD_GPU_NONE) {
			const char *name = profile_str(g->p, r->name);
			uint32_t id = fold_gpu_text_printf(g, "[nvtx] ", *name ? name : "(unnamed)");
			tv = cs_map_slot(&g->range_names, r->name, 0);
			*tv = id;
		}
		uint32_t text = *tv;
		uint32_t *cv = cs_map_slot(&g->chains, (uint64_t)chain + 1, text);
		if (*cv == FOLD_GPU_NONE) {
			cs_grow(&g->chain_parent, &g->chain_cap, g->nchains + 1, sizeof(uint32_t));
			g->chain_text = cs_realloc(g->chain_text, g->chain_cap * sizeof(uint32_t));
			g->chain_parent[g->nchains] = chain;
			g->chain_text[g->nchains] = text;
			*cv = (uint32_t)g->nchains++;
		}
		chain = *cv;
	}
	return chain;
}

/* Hand one stack to the callback: [prefix;] root; ranges; launch stack (or "[no launch
 * stack]"); leaf. */
static int fold_gpu_emit(struct fold_gpu *g, uint32_t root, uint32_t stack, uint32_t chain,
			 uint32_t leaf, uint64_t ns, uint64_t calls, fold_fn fn, void *arg)
{
	size_t nstack = 0, nchain = 0, k = 0;
	const uint32_t *fr = stack == FOLD_GPU_NONE ? NULL : profile_stack_frames(g->p, stack, &nstack);
	for (uint32_t c = chain; c != FOLD_GPU_NONE; c = g->chain_parent[c])
		nchain++;
	cs_grow(&g->frames, &g->frames_cap, 4 + nchain + nstack, sizeof(*g->frames));
	if (g->prefix)
		g->frames[k++] = (struct fold_frame){ .name = g->prefix };
	g->frames[k++] = (struct fold_frame){ .name = g->texts[root] };
	k += nchain;
	for (uint32_t c = chain, j = (uint32_t)k; c != FOLD_GPU_NONE; c = g->chain_parent[c])
		g->frames[--j] = (struct fold_frame){ .name = g->texts[g->chain_text[c]] };
	if (!nstack)
		g->frames[k++] = (struct fold_frame){ .name = "[no launch stack]" };
	for (size_t i = 0; i < nstack; i++)
		fold_frame_of(g->p, fr[nstack - 1 - i], &g->frames[k++]);
	g->frames[k++] = (struct fold_frame){ .name = g->texts[leaf] };
	return fn(arg, g->frames, k, ns, calls);
}

static int fold_gpu_walk(struct fold_gpu *g, fold_fn fn, void *arg)
{
	const struct profile *p = g->p;
	int err = 0;

	fold_gpu_ranges(g);
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->end <= a->start) /* lost timestamps, or not GPU work: no time */
			continue;
		uint32_t leaf = fold_gpu_leaf(g, a);
		if (leaf == FOLD_GPU_NONE)
			continue;
		uint32_t li = a->launch != PROFILE_GPU_NO_LAUNCH ? a->launch : a->node_launch;
		const struct profile_gpu_launch *l = li < p->ngpu_launches ? &p->gpu_launches[li]
									   : NULL;
		uint32_t tid = l ? l->tid : a->tid;
		if (!fold_gpu_match(g, a->pid, tid))
			continue;
		uint32_t root = fold_gpu_root(g, a->pid, tid);
		uint32_t stack = FOLD_GPU_NONE, chain = FOLD_GPU_NONE;
		if (l) {
			size_t n;
			if (profile_stack_frames(p, l->stack, &n) && n)
				stack = l->stack;
			chain = g->nranges ? fold_gpu_chain(g, l->pid, l->tid, l->time) : FOLD_GPU_NONE;
		}
		uint64_t ns = a->end - a->start;
		if (g->opts->time_order) {
			err = fold_gpu_emit(g, root, stack, chain, leaf, ns, 1, fn, arg);
			if (err < 0)
				return err;
			continue;
		}
		uint32_t *v = cs_map_slot(&g->emap, (uint64_t)root << 32 | stack,
						(uint64_t)chain << 32 | leaf);
		if (*v == FOLD_GPU_NONE) {
			cs_grow(&g->entries, &g->entries_cap, g->nentries + 1, sizeof(*g->entries));
			g->entries[g->nentries] = (struct fold_gpu_entry){
				.root = root, .stack = stack, .chain = chain, .leaf = leaf,
			};
			*v = (uint32_t)g->nentries++;
		}
		g->entries[*v].ns += ns;
		g->entries[*v].calls++;
	}
	for (size_t i = 0; i < g->nentries && !err; i++) {
		const struct fold_gpu_entry *e = &g->entries[i];
		err = fold_gpu_emit(g, e->root, e->stack, e->chain, e->leaf, e->ns, e->calls, fn, arg);
	}
	return err < 0 ? err : 0;
}

static void fold_gpu_free(struct fold_gpu *g)
{
	for (size_t i = 0; i < g->ntexts; i++)
		free(g->texts[i]);
	free(g->texts);
	struct cs_map *maps[] = { &g->text_ids, &g->roots, &g->root_match, &g->leaves,
					&g->range_names, &g->chains, &g->emap };
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		cs_map_free(maps[i]);
	free(g->ranges);
	free(g->chain_parent);
	free(g->chain_text);
	free(g->entries);
	free(g->frames);
}

int fold_gpu_stacks(const struct profile *p, const struct fold_opts *opts, const char *prefix,
		    fold_fn fn, void *arg)
{
	struct fold_gpu g = { .p = p, .opts = opts, .prefix = prefix };

	if (opts->pid > UINT32_MAX || opts->tid > UINT32_MAX)
		return -EINVAL;
	int err = fold_gpu_walk(&g, fn, arg);
	fold_gpu_free(&g);
	return err;
}
