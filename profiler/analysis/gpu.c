/* gpu.c: sums up a profile's GPU records (kernels, copies, memsets, syncs, API spans, NVTX) into
 * the figures of gpu.h: tables, utilisation as unions of intervals, sync blame, launch-queue
 * latency, launch sites and a verdict per process. Written by hand: the figures are simple
 * sorts and interval unions over the loaded model, and no library computes them from CUPTI
 * records (CUPTI itself only delivers the records). */
#include "analysis/gpu.h"

#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "base/hash.h"
#include "base/search.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One piece of device work (kernel, memcpy, memset). */
struct gpu_item {
	uint32_t pid, device, context, stream, kind, detail;
	uint64_t start, end;
	const char *label;          /* kernel name or "[memcpy HtoD]" */
};

/* One CPU wait. */
struct gpu_wait {
	uint32_t pid, tid, context, stream;
	uint64_t start, end;
	int scope;                  /* 0 process, 1 context, 2 stream */
	bool blame;                 /* false: an API span whose sync record does the blaming */
};

struct gpu_proc {
	struct gpu_window w;        /* first: gpu_window_of finds it by pid */
	uint64_t kernels, kernel_ns;
};

struct gpu_ctx {
	const struct profile *p;
	const struct stacks_filter *filter;
	struct gpu_analysis *out;
	struct gpu_item *items; size_t nitems, items_cap;
	struct gpu_wait *waits; size_t nwaits, waits_cap;
	struct gpu_proc *procs; size_t nprocs, procs_cap;
	struct gpu_waiter *lat; size_t nlat, lat_cap;
	uint64_t *sync_corr; size_t nsync_corr, sync_corr_cap; /* (pid << 32 | corr) of syncs */
	struct { uint32_t pid; const char *name; uint64_t ns; } *blamed;
	size_t nblamed, blamed_cap;
	struct cs_map copy_labels;  /* (vendor, copy kind) -> index of its label in out->owned */
};

const char *gpu_copy_direction(const struct gpu_vendor *v, uint32_t copy_kind, char *buf,
			       size_t len)
{
	const char *name = gpu_vendor_copy_kind(v, copy_kind);
	if (name)
		return name;
	if (!copy_kind)
		return "unknown";
	snprintf(buf, len, "kind %u", copy_kind);
	return buf;
}

const char *gpu_bound_name(enum gpu_bound b)
{
	switch (b) {
	case GPU_BOUND_GPU: return "GPU-bound";
	case GPU_BOUND_SYNC: return "sync-bound";
	case GPU_BOUND_LAUNCH: return "launch-bound";
	case GPU_BOUND_INPUT: return "input-bound";
	case GPU_BOUND_OFFCPU: return "off-CPU-bound";
	default: return "none";
	}
}

static const struct profile_gpu_launch *gpu_launch(const struct profile *p,
						   const struct profile_gpu_activity *a)
{
	if (a->launch != PROFILE_GPU_NO_LAUNCH && a->launch < p->ngpu_launches)
		return &p->gpu_launches[a->launch];
	if (a->node_launch != PROFILE_GPU_NO_LAUNCH && a->node_launch < p->ngpu_launches)
		return &p->gpu_launches[a->node_launch];
	return NULL;
}

/* The thread an activity belongs to: the launching thread, else its own (API spans, NVTX). */
static uint32_t gpu_tid(const struct profile *p, const struct profile_gpu_activity *a)
{
	const struct profile_gpu_launch *l = gpu_launch(p, a);
	return l ? l->tid : a->tid;
}

static const char *gpu_comm(const struct profile *p, uint32_t pid, uint32_t tid, bool process)
{
	if (process) {
		for (size_t i = 0; i < p->nprocesses; i++)
			if (p->processes[i].pid == pid)
				return profile_str(p, p->processes[i].comm);
		return "";
	}
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].pid == pid && p->threads[i].tid == tid)
			return profile_str(p, p->threads[i].comm);
	return "";
}

static bool gpu_pass(const struct gpu_ctx *c, const struct profile_gpu_activity *a)
{
	const struct stacks_filter *f = c->filter;
	if (!f)
		return true;
	if (f->pid >= 0 && (int64_t)a->pid != f->pid)
		return false;
	uint32_t tid = gpu_tid(c->p, a);
	if (f->tid >= 0 && (int64_t)tid != f->tid)
		return false;
	if (f->comm && strcmp(gpu_comm(c->p, a->pid, tid, false), f->comm) &&
	    strcmp(gpu_comm(c->p, a->pid, 0, true), f->comm))
		return false;
	return true;
}

static struct gpu_proc *gpu_proc_of(struct gpu_ctx *c, uint32_t pid)
{
	return gpu_window_of(&c->procs, &c->nprocs, &c->procs_cap, sizeof(*c->procs), pid);
}

static bool gpu_is_sync_api(const struct profile *p, const struct profile_gpu_activity *a)
{
	const struct profile_gpu_launch *l = gpu_launch(p, a);
	return l && strstr(profile_str(p, l->api), profile_gpu_vendor(p, a->pid)->sync_api_word);
}

CS_CMP_FN(cmp_u64, uint64_t, CS_CMP(*a, *b))


/* ---- the kernel table ---- */

struct gpu_kdur { uint32_t name; uint64_t ns; };

CS_CMP_FN(cmp_kdur, struct gpu_kdur, CS_CMP(a->name, b->name))

CS_CMP_FN(cmp_kernel_stat, struct gpu_kernel_stat,
	CS_CMP(b->total_ns, a->total_ns) ?: strcmp(a->name, b->name))

static const char *gpu_own(struct gpu_analysis *a, char *s)
{
	a->owned = cs_realloc(a->owned, (a->nowned + 1) * sizeof(char *));
	a->owned[a->nowned++] = s;
	return s;
}

/* "[memcpy HtoD]": a copy's label in the tables, by its vendor's name for the copy kind
 * ("[memcpy]" when it has none); one string per vendor and kind, kept with the analysis. */
static const char *gpu_copy_label(struct gpu_ctx *c, const struct gpu_vendor *v, uint32_t kind)
{
	const char *name = gpu_vendor_copy_kind(v, kind);
	if (!name)
		return "[memcpy]";
	uint32_t *slot = cs_map_slot(&c->copy_labels, v->id, kind);
	if (*slot == CS_MAP_NONE) {
		*slot = (uint32_t)c->out->nowned;
		gpu_own(c->out, cs_asprintf("[memcpy %s]", name));
	}
	return c->out->owned[*slot];
}

static void gpu_kernel_table(struct gpu_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_analysis *o = c->out;
	size_t n = 0;
	struct gpu_kdur *d = cs_malloc((p->ngpu_activities + 1) * sizeof(*d));

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind == PROFILE_GPU_KERNEL && a->end >= a->start && gpu_pass(c, a))
			d[n++] = (struct gpu_kdur){ a->name, a->end - a->start };
	}
	cs_qsort(d, n, sizeof(*d), cmp_kdur);
	o->kernels_by_time = cs_calloc(n + 1, sizeof(*o->kernels_by_time));
	for (size_t i = 0; i < n;) {
		struct gpu_kernel_stat *k = &o->kernels_by_time[o->nkernels++];
		const char *raw = profile_str(p, d[i].name);
		k->name = *raw ? raw : "(unnamed)";
		k->min_ns = UINT64_MAX;
		char *dm = cs_demangle(raw); /* a name the recorder could not demangle */
		if (dm) {
			k->name = gpu_own(o, dm);
			k->mangled = raw;
		}
		size_t j = i;
		for (; j < n && d[j].name == d[i].name; j++) {
			k->calls++;
			k->total_ns += d[j].ns;
			if (d[j].ns < k->min_ns)
				k->min_ns = d[j].ns;
			if (d[j].ns > k->max_ns)
				k->max_ns = d[j].ns;
		}
		k->avg_ns = k->total_ns / k->calls;
		o->kernels += k->calls;
		o->kernel_ns += k->total_ns;
		i = j;
	}
	for (size_t i = 0; i < o->nkernels; i++)
		o->kernels_by_time[i].percent = o->kernel_ns ?
			100.0 * (double)o->kernels_by_time[i].total_ns / (double)o->kernel_ns : 0.0;
	cs_qsort(o->kernels_by_time, o->nkernels, sizeof(*o->kernels_by_time), cmp_kernel_stat);
	free(d);
}

/* ---- copies ---- */

CS_CMP_FN(cmp_copy, struct gpu_copy_stat,
	CS_CMP(b->total_ns, a->total_ns) ?: CS_CMP(a->kind, b->kind) ?:
	CS_CMP(a->copy_kind, b->copy_kind))

static void gpu_copy_table(struct gpu_ctx *c)
{
	struct gpu_analysis *o = c->out;
	size_t cap = 0;
	for (size_t i = 0; i < c->nitems; i++) {
		const struct gpu_item *it = &c->items[i];
		if (it->kind == PROFILE_GPU_KERNEL)
			continue;
		uint32_t ck = it->kind == PROFILE_GPU_MEMCPY ? it->detail : 0;
		size_t k = 0;
		while (k < o->ncopies && (o->copies[k].kind != it->kind || o->copies[k].copy_kind != ck))
			k++;
		if (k == o->ncopies) {
			cs_grow(&o->copies, &cap, o->ncopies + 1, sizeof(*o->copies));
			char buf[24];
			const char *dir = it->kind == PROFILE_GPU_MEMSET ? "memset" :
					  gpu_copy_direction(profile_gpu_vendor(c->p, it->pid), ck,
							     buf, sizeof(buf));
			if (dir == buf)
				dir = gpu_own(o, cs_strdup(buf));
			o->copies[o->ncopies++] = (struct gpu_copy_stat){ .kind = it->kind,
				.copy_kind = ck, .direction = dir };
		}
		struct gpu_copy_stat *s = &o->copies[k];
		s->calls++;
		s->total_ns += it->end - it->start;
	}
	/* bytes are not in gpu_item: a second pass over the profile */
	for (size_t i = 0; i < c->p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &c->p->gpu_activities[i];
		if ((a->kind != PROFILE_GPU_MEMCPY && a->kind != PROFILE_GPU_MEMSET) ||
		    a->end < a->start || !gpu_pass(c, a))
			continue;
		uint32_t ck = a->kind == PROFILE_GPU_MEMCPY ? a->detail : 0;
		for (size_t k = 0; k < o->ncopies; k++)
			if (o->copies[k].kind == a->kind && o->copies[k].copy_kind == ck)
				o->copies[k].bytes += a->bytes;
	}
	for (size_t k = 0; k < o->ncopies; k++)
		o->copies[k].gb_per_s = o->copies[k].total_ns ?
			(double)o->copies[k].bytes / (double)o->copies[k].total_ns : 0.0;
	cs_qsort(o->copies, o->ncopies, sizeof(*o->copies), cmp_copy);
}

/* ---- utilisation ---- */

CS_CMP_FN(cmp_item_stream, struct gpu_item,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->device, b->device) ?: CS_CMP(a->context, b->context) ?:
	CS_CMP(a->stream, b->stream) ?: CS_CMP(a->start, b->start))

CS_CMP_FN(cmp_item_device, struct gpu_item,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->device, b->device) ?: CS_CMP(a->start, b->start) ?: 0)

CS_CMP_FN(cmp_item_end, struct gpu_item,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->end, b->end) ?: CS_CMP(a->start, b->start))

/* The union of intervals given in order of start: its length is busy plus the open run
 * [s, e). The utilisation (busy time of a device or stream) and the time a thread was
 * blocked in synchronisation are both such a union. */
struct gpu_union { uint64_t s, e, busy; };

static void gpu_union_add(struct gpu_union *u, uint64_t start, uint64_t end)
{
	if (start > u->e) {
		u->busy += u->e - u->s;
		u->s = start;
		u->e = end;
	} else if (end > u->e) {
		u->e = end;
	}
}

static uint64_t gpu_union_ns(const struct gpu_union *u)
{
	return u->busy + (u->e - u->s);
}

/* Rows of items (sorted by `same`'s key, then start): the union of each run's intervals. */
static void gpu_util_rows(struct gpu_ctx *c, bool per_stream, struct gpu_util **rows, size_t *n)
{
	size_t cap = 0;
	for (size_t i = 0; i < c->nitems;) {
		const struct gpu_item *f = &c->items[i];
		struct gpu_util u = { .pid = f->pid, .device = f->device,
				      .context = per_stream ? f->context : 0,
				      .stream = per_stream ? f->stream : GPU_ALL_STREAMS };
		struct gpu_union un = { .s = f->start, .e = f->end };
		size_t j = i;
		for (; j < c->nitems; j++) {
			const struct gpu_item *it = &c->items[j];
			if (it->pid != f->pid || it->device != f->device ||
			    (per_stream && (it->context != f->context || it->stream != f->stream)))
				break;
			u.items++;
			u.work_ns += it->end - it->start;
			gpu_union_add(&un, it->start, it->end);
		}
		u.busy_ns = gpu_union_ns(&un);
		struct gpu_proc *pr = gpu_proc_of(c, f->pid);
		u.window_ns = gpu_window_ns(&pr->w);
		u.percent = u.window_ns ? 100.0 * (double)u.busy_ns / (double)u.window_ns : 0.0;
		cs_grow(rows, &cap, *n + 1, sizeof(**rows));
		(*rows)[(*n)++] = u;
		i = j;
	}
}

/* ---- synchronisation ---- */

CS_CMP_FN(cmp_wait_thread, struct gpu_wait,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid) ?: CS_CMP(a->start, b->start))

CS_CMP_FN(cmp_sync_thread, struct gpu_sync_thread,
	CS_CMP(b->blocked_ns, a->blocked_ns) ?: CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid))

static int cmp_blame(const void *x, const void *y)
{
	const struct gpu_blame *a = x, *b = y;
	int r = CS_CMP(b->wait_ns, a->wait_ns);
	if (r || !a->name || !b->name)
		return r ? r : a->name ? -1 : b->name ? 1 : 0;
	return strcmp(a->name, b->name);
}

/* The device work wait w waited for (see gpu.h), or NULL. c->items sorted by (pid, end). */
static const struct gpu_item *gpu_blamed(const struct gpu_ctx *c, const struct gpu_wait *w)
{
	uint64_t limit = w->end + GPU_BLAME_SLACK_NS;
	size_t lo = CS_UPPER_BOUND2(c->items, c->nitems, pid, w->pid, end, limit); /* after */
	while (lo-- > 0) {
		const struct gpu_item *it = &c->items[lo];
		if (it->pid != w->pid || it->end <= w->start)
			break;
		if (it->start >= w->end)
			continue;
		if (w->scope >= 1 && it->context != w->context)
			continue;
		if (w->scope == 2 && it->stream != w->stream)
			continue;
		return it;
	}
	return NULL;
}

static void gpu_sync(struct gpu_ctx *c)
{
	struct gpu_analysis *o = c->out;
	size_t cap = 0, bcap = 0;

	/* blocked: union per thread */
	cs_qsort(c->waits, c->nwaits, sizeof(*c->waits), cmp_wait_thread);
	for (size_t i = 0; i < c->nwaits;) {
		const struct gpu_wait *f = &c->waits[i];
		struct gpu_sync_thread t = { .pid = f->pid, .tid = f->tid };
		struct gpu_union un = { .s = f->start, .e = f->end };
		size_t j = i;
		for (; j < c->nwaits && c->waits[j].pid == f->pid && c->waits[j].tid == f->tid; j++) {
			const struct gpu_wait *w = &c->waits[j];
			t.waits++;
			gpu_union_add(&un, w->start, w->end);
		}
		t.blocked_ns = gpu_union_ns(&un);
		cs_grow(&o->sync_threads, &cap, o->nsync_threads + 1, sizeof(*o->sync_threads));
		o->sync_threads[o->nsync_threads++] = t;
		o->blocked_ns += t.blocked_ns;
		i = j;
	}
	cs_qsort(o->sync_threads, o->nsync_threads, sizeof(*o->sync_threads), cmp_sync_thread);

	/* blame: each wait that blames */
	cs_qsort(c->items, c->nitems, sizeof(*c->items), cmp_item_end);
	for (size_t i = 0; i < c->nwaits; i++) {
		const struct gpu_wait *w = &c->waits[i];
		if (!w->blame)
			continue;
		o->sync_waits++;
		const struct gpu_item *it = gpu_blamed(c, w);
		const char *name = it ? it->label : NULL;
		size_t k = 0;
		while (k < o->nblames && o->blames[k].name != name)
			k++;
		if (k == o->nblames) {
			cs_grow(&o->blames, &bcap, o->nblames + 1, sizeof(*o->blames));
			o->blames[o->nblames++] = (struct gpu_blame){ .name = name };
		}
		o->blames[k].waits++;
		o->blames[k].wait_ns += w->end - w->start;
		cs_grow(&c->blamed, &c->blamed_cap, c->nblamed + 1, sizeof(*c->blamed));
		c->blamed[c->nblamed].pid = w->pid;
		c->blamed[c->nblamed].name = name;
		c->blamed[c->nblamed++].ns = w->end - w->start;
	}
	cs_qsort(o->blames, o->nblames, sizeof(*o->blames), cmp_blame);
}

/* ---- latency ---- */

CS_CMP_FN(cmp_waiter, struct gpu_waiter,
	CS_CMP(b->latency_ns, a->latency_ns) ?: CS_CMP(a->start, b->start) ?:
	CS_CMP(a->pid, b->pid))

CS_CMP_FN(cmp_waiter_pid, struct gpu_waiter,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->latency_ns, b->latency_ns))

struct gpu_api_end { uint64_t key, end; };   /* key: pid << 32 | correlation */

CS_CMP_FN(cmp_api_end, struct gpu_api_end, CS_CMP(a->key, b->key))

/* Launch-queue latency: from the kernel's queued timestamp (CUPTI's latency timestamps, record
 * --gpu-latency), else from the end of the API call that launched it (its EXIT: the call
 * returned, the launch was queued by then), else from the call's entry. */
static void gpu_latency(struct gpu_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_latency *L = &c->out->latency;
	struct gpu_api_end *ends = NULL;
	size_t nends = 0, ends_cap = 0;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind != PROFILE_GPU_API || a->end < a->start)
			continue;
		cs_grow(&ends, &ends_cap, nends + 1, sizeof(*ends));
		ends[nends++] = (struct gpu_api_end){ (uint64_t)a->pid << 32 | a->correlation,
						      a->end };
	}
	cs_qsort(ends, nends, sizeof(*ends), cmp_api_end);
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind != PROFILE_GPU_KERNEL || a->end < a->start || !gpu_pass(c, a))
			continue;
		const struct profile_gpu_launch *l = a->launch != PROFILE_GPU_NO_LAUNCH &&
			a->launch < p->ngpu_launches ? &p->gpu_launches[a->launch] : NULL;
		struct gpu_waiter w = { .name = profile_str(p, a->name), .pid = a->pid,
					.tid = gpu_tid(p, a), .stack = l ? l->stack : UINT32_MAX,
					.start = a->start };
		struct gpu_api_end key = { (uint64_t)a->pid << 32 | a->correlation, 0 };
		const struct gpu_api_end *e = nends ? bsearch(&key, ends, nends, sizeof(*ends),
							      cmp_api_end) : NULL;
		if (a->queued && a->queued <= a->start) {
			w.latency_ns = a->start - a->queued;
			w.from_queued = true;
		} else if (e && e->end <= a->start) {
			w.latency_ns = a->start - e->end;
		} else if (l && l->time <= a->start) {
			w.latency_ns = a->start - l->time;
		} else {
			continue;
		}
		cs_grow(&c->lat, &c->lat_cap, c->nlat + 1, sizeof(*c->lat));
		c->lat[c->nlat++] = w;
	}
	free(ends);
	if (!c->nlat)
		return;
	for (size_t i = 0; i < c->nlat; i++) {
		L->count++;
		L->from_queued += c->lat[i].from_queued;
		L->total_ns += c->lat[i].latency_ns;
	}
	cs_qsort(c->lat, c->nlat, sizeof(*c->lat), cmp_waiter);
	L->max_ns = c->lat[0].latency_ns;
	L->min_ns = c->lat[c->nlat - 1].latency_ns;
	/* sorted descending: the median is the element at rank n/2 from the bottom */
	L->median_ns = c->lat[c->nlat - 1 - (c->nlat - 1) / 2].latency_ns;
	/* nearest rank: the ceil(0.95 n)-th smallest */
	size_t rank = (c->nlat * 95 + 99) / 100;
	L->p95_ns = c->lat[c->nlat - rank].latency_ns;
	for (size_t i = 0; i < c->nlat && i < GPU_TOP_WAITERS; i++)
		L->top[L->ntop++] = c->lat[i];
	for (size_t i = 0; i < L->ntop; i++) {
		const char *raw = L->top[i].name;
		if (!strncmp(raw, "_Z", 2))
			for (size_t k = 0; k < c->out->nkernels; k++)
				if (c->out->kernels_by_time[k].mangled == raw)
					L->top[i].name = c->out->kernels_by_time[k].name;
		if (!*L->top[i].name)
			L->top[i].name = "(unnamed)";
	}
	cs_qsort(c->lat, c->nlat, sizeof(*c->lat), cmp_waiter_pid); /* for the verdicts */
}

/* ---- launch sites ---- */

struct gpu_sdur { uint32_t pid, stack; uint64_t ns; };

CS_CMP_FN(cmp_sdur, struct gpu_sdur, CS_CMP(a->pid, b->pid) ?: CS_CMP(a->stack, b->stack))

CS_CMP_FN(cmp_site, struct gpu_site,
	CS_CMP(b->gpu_ns, a->gpu_ns) ?: CS_CMP(a->pid, b->pid) ?: CS_CMP(a->stack, b->stack) ?: 0)

static void gpu_sites(struct gpu_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_analysis *o = c->out;
	struct gpu_sdur *d = cs_malloc((p->ngpu_activities + 1) * sizeof(*d));
	size_t n = 0;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if ((a->kind != PROFILE_GPU_KERNEL && a->kind != PROFILE_GPU_MEMCPY &&
		     a->kind != PROFILE_GPU_MEMSET) || a->end < a->start || !gpu_pass(c, a))
			continue;
		const struct profile_gpu_launch *l = gpu_launch(p, a);
		d[n++] = (struct gpu_sdur){ a->pid, l ? l->stack : UINT32_MAX, a->end - a->start };
	}
	cs_qsort(d, n, sizeof(*d), cmp_sdur);
	o->sites = cs_calloc(n + 1, sizeof(*o->sites));
	for (size_t i = 0; i < n;) {
		struct gpu_site *s = &o->sites[o->nsites++];
		s->pid = d[i].pid;
		s->stack = d[i].stack;
		size_t j = i;
		for (; j < n && d[j].pid == d[i].pid && d[j].stack == d[i].stack; j++) {
			s->calls++;
			s->gpu_ns += d[j].ns;
		}
		s->percent = o->work_ns ? 100.0 * (double)s->gpu_ns / (double)o->work_ns : 0.0;
		i = j;
	}
	cs_qsort(o->sites, o->nsites, sizeof(*o->sites), cmp_site);
	free(d);
}

/* ---- NVTX ---- */

CS_CMP_FN(cmp_range, struct gpu_range,
	CS_CMP(b->total_ns, a->total_ns) ?: CS_CMP(b->marks, a->marks) ?: strcmp(a->name, b->name))

static void gpu_ranges(struct gpu_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_analysis *o = c->out;
	size_t cap = 0;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind != PROFILE_GPU_MARKER || !gpu_pass(c, a))
			continue;
		const char *name = profile_str(p, a->name);
		size_t k = 0;
		while (k < o->nranges && strcmp(o->ranges[k].name, name))
			k++;
		if (k == o->nranges) {
			cs_grow(&o->ranges, &cap, o->nranges + 1, sizeof(*o->ranges));
			o->ranges[o->nranges++] = (struct gpu_range){ .name = name,
								       .min_ns = UINT64_MAX };
		}
		struct gpu_range *r = &o->ranges[k];
		if (!a->end || a->end < a->start) {
			r->marks++;
			continue;
		}
		uint64_t d = a->end - a->start;
		r->count++;
		r->total_ns += d;
		if (d < r->min_ns)
			r->min_ns = d;
		if (d > r->max_ns)
			r->max_ns = d;
	}
	for (size_t k = 0; k < o->nranges; k++)
		if (!o->ranges[k].count)
			o->ranges[k].min_ns = 0;
	cs_qsort(o->ranges, o->nranges, sizeof(*o->ranges), cmp_range);
}

/* ---- verdicts ---- */

/* The function the GPU waited on, among the idle samples of pid in class cls: the most specific
 * function (the smallest share, then the nearest the leaf) whose stacks hold at least
 * GPU_IDLE_CAUSE_PCT of the class' idle ns, each function counted once per sample. Sets
 * v->cause_*: the function, its share of the process' sampled idle ns, the stack under it with
 * most idle ns and the innermost Python frame at or above it in that stack. */
struct gpu_fn_tally {
	uint32_t name;          /* string id */
	double ns, depth;       /* idle ns; sum of depth from the leaf times ns */
	bool system;            /* in the kernel or a system library */
};

/* Libraries that come with the system (libc's waits and copies, the C++ runtime, zlib): a
 * cause there is named by the program's function that called it. The list is short on purpose:
 * flamegraph/flame_classify.c has the long one for colours, which analysis/ cannot include. */
static bool gpu_system_frame(const struct profile *p, const struct profile_frame *fr)
{
	static const char *const prefixes[] = { "libc.", "libc-", "libm.", "libpthread", "ld-linux",
		"ld-", "libdl", "librt", "libstdc++", "libgcc_s", "libz.", "libzstd", "[vdso]",
		"[kernel", NULL };
	if (fr->flags & PROFILE_FRAME_KERNEL)
		return true;
	if (fr->module >= p->nmodules)
		return false;
	const char *path = profile_str(p, p->modules[fr->module].path), *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; prefixes[i]; i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

CS_CMP_FN(cmp_fn_tally, struct gpu_fn_tally, CS_CMP(a->name, b->name))

static void gpu_verdict_cause(struct gpu_ctx *c, struct gpu_verdict *v)
{
	const struct profile *p = c->p;
	const struct gpu_idle *g = &c->out->idle;
	struct gpu_fn_tally *t = NULL;
	size_t nt = 0, cap = 0;
	double class_ns = v->class_ns[v->cause_cls];

	for (size_t i = 0; i < g->nsamples; i++) {
		const struct gpu_idle_sample *is = &g->samples[i];
		const struct profile_sample *s = &p->samples[is->sample];
		if (s->pid != v->pid || is->cls != v->cause_cls || s->stack >= p->nstacks)
			continue;
		const struct profile_stack *st = &p->stacks[s->stack];
		size_t mark = nt;
		for (uint32_t k = 0; k < st->nframes; k++) {
			uint32_t fr = p->stack_frames[st->first + k];
			if (fr >= p->nframes || (p->frames[fr].flags & PROFILE_FRAME_OFFCPU))
				continue;
			uint32_t name = p->frames[fr].name;
			bool seen = false;
			for (size_t j = mark; j < nt && !seen; j++)
				seen = t[j].name == name;
			if (seen)
				continue;
			cs_grow(&t, &cap, nt + 1, sizeof(*t));
			t[nt++] = (struct gpu_fn_tally){ .name = name, .ns = is->idle_ns,
				.depth = is->idle_ns * k,
				.system = gpu_system_frame(p, &p->frames[fr]) ||
					  (p->frames[fr].flags & PROFILE_FRAME_INLINED) };
		}
	}
	cs_qsort(t, nt, sizeof(*t), cmp_fn_tally);
	/* the program's own functions first (not inlined ones: the function they are inlined into
	 * is the one users know, take_gil rather than its PyCOND_TIMEDWAIT); system libraries and
	 * inlined frames only when none qualifies */
	uint32_t best = UINT32_MAX;
	double best_ns = 0, best_depth = 0;
	for (int pass = 0; pass < 2 && best == UINT32_MAX; pass++) {
		for (size_t i = 0; i < nt;) {
			struct gpu_fn_tally sum = { .name = t[i].name, .system = t[i].system };
			size_t j = i;
			for (; j < nt && t[j].name == t[i].name; j++) {
				sum.ns += t[j].ns;
				sum.depth += t[j].depth;
			}
			i = j;
			if (sum.system && pass == 0)
				continue;
			double depth = sum.ns > 0 ? sum.depth / sum.ns : 0;
			if (sum.ns >= class_ns * GPU_IDLE_CAUSE_PCT / 100.0 &&
			    (best == UINT32_MAX || sum.ns < best_ns - 1e-6 ||
			     (sum.ns <= best_ns + 1e-6 && depth < best_depth))) {
				best = sum.name;
				best_ns = sum.ns;
				best_depth = depth;
			}
		}
	}
	free(t);
	if (best == UINT32_MAX)
		return;
	v->cause_function = profile_str(p, best);
	v->cause_pct = v->sampled_ns > 0 ? 100.0 * best_ns / v->sampled_ns : 0;
	/* g->stacks is by idle ns: the first of this process and class holding the function */
	for (size_t i = 0; i < g->nstacks; i++) {
		const struct gpu_idle_stack *gs = &g->stacks[i];
		if (gs->pid != v->pid || gs->cls != v->cause_cls || gs->stack >= p->nstacks)
			continue;
		const struct profile_stack *st = &p->stacks[gs->stack];
		bool under = false;
		for (uint32_t k = 0; k < st->nframes; k++) {
			const struct profile_frame *fr = &p->frames[p->stack_frames[st->first + k]];
			under |= fr->name == best;
			if (under && (fr->flags & PROFILE_FRAME_PYTHON)) {
				char buf[512];
				const char *file = profile_str(p, fr->file), *sl = strrchr(file, '/');
				snprintf(buf, sizeof(buf), "%s (%s:%u)", profile_str(p, fr->name),
					 sl ? sl + 1 : file, fr->line);
				v->cause_python = gpu_own(c->out, cs_strdup(buf));
				break;
			}
		}
		if (under) {
			v->cause_stack = gs->stack;
			break;
		}
	}
}

/* This process' idle samples by class, the dominant class, and the medians of its kernels and
 * idle gaps. */
static void gpu_verdict_idle(struct gpu_ctx *c, struct gpu_verdict *v)
{
	const struct profile *p = c->p;
	const struct gpu_idle *g = &c->out->idle;
	uint64_t *kdur = NULL, *gaps = NULL;
	size_t nk = 0, kcap = 0, ng = 0, gcap = 0;

	v->idle_ns = v->window_ns > v->busy_ns ? v->window_ns - v->busy_ns : 0;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct gpu_idle_sample *is = &g->samples[i];
		const struct profile_sample *s = &p->samples[is->sample];
		if (s->pid != v->pid || g->intervals[is->interval].device != v->device)
			continue;
		v->idle_weight += s->weight;
		v->class_weight[is->cls] += s->weight;
		v->class_ns[is->cls] += is->idle_ns;
		v->sampled_ns += is->idle_ns;
	}
	for (uint32_t k = 1; k < GPU_IDLE_NCLASSES; k++)
		if (v->class_ns[k] > v->class_ns[v->cause_cls])
			v->cause_cls = k;
	for (size_t i = 0; i < g->nintervals; i++)
		if (g->intervals[i].pid == v->pid && g->intervals[i].device == v->device) {
			cs_grow(&gaps, &gcap, ng + 1, sizeof(*gaps));
			gaps[ng++] = g->intervals[i].end - g->intervals[i].start;
		}
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind == PROFILE_GPU_KERNEL && a->pid == v->pid && a->end > a->start &&
		    gpu_pass(c, a)) {
			cs_grow(&kdur, &kcap, nk + 1, sizeof(*kdur));
			kdur[nk++] = a->end - a->start;
		}
	}
	cs_qsort(kdur, nk, sizeof(*kdur), cmp_u64);
	cs_qsort(gaps, ng, sizeof(*gaps), cmp_u64);
	v->median_kernel_ns = nk ? kdur[(nk - 1) / 2] : 0;
	v->median_gap_ns = ng ? gaps[(ng - 1) / 2] : 0;
	free(kdur);
	free(gaps);
	v->cause_python = "";
	v->cause_stack = UINT32_MAX;
	if (v->idle_weight)
		gpu_verdict_cause(c, v);
}

/* The rules, in order (thresholds in gpu.h):
 *   GPU-bound    the busiest device was busy >= GPU_BOUND_UTIL_PCT of the window: the GPU's
 *                work is the limit, make the kernels faster or do less of it;
 *   sync-bound   else one thread was blocked in synchronisation >= GPU_BOUND_SYNC_PCT of the
 *                window: the CPU waits for the GPU, then the GPU idles while the CPU works;
 *   with at least GPU_IDLE_MIN_SAMPLES CPU samples in the device's idle time, the class holding
 *   most of the idle time those samples explain (gpu_idle.h):
 *     input-bound    cpu: the threads ran code that launches nothing (data loading,
 *                    preprocessing, Python between steps) -- unless the kernels and the idle
 *                    gaps are both tiny (medians under GPU_TINY_KERNEL_NS, GPU_TINY_GAP_NS):
 *                    that CPU time is launch overhead, launch-bound;
 *     launch-bound   launch: inside launch, copy and other API calls;
 *     sync-bound     sync: inside synchronisation calls;
 *     off-CPU-bound  offcpu: blocked off the CPU (the GIL, a lock, I/O) outside CUDA calls;
 *   without them, launch-bound: the GPU idles and no thread waits for it. */
static void gpu_verdicts(struct gpu_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_analysis *o = c->out;

	o->verdicts = cs_calloc(c->nprocs + 1, sizeof(*o->verdicts));
	for (size_t i = 0; i < c->nprocs; i++) {
		const struct gpu_proc *pr = &c->procs[i];
		struct gpu_verdict v = { .pid = pr->w.pid, .comm = gpu_comm(p, pr->w.pid, 0, true),
					 .kernels = pr->kernels, .kernel_ns = pr->kernel_ns };
		v.window_ns = gpu_window_ns(&pr->w);
		for (size_t k = 0; k < o->ndevices; k++)
			if (o->devices[k].pid == pr->w.pid && o->devices[k].busy_ns > v.busy_ns) {
				v.busy_ns = o->devices[k].busy_ns;
				v.device = o->devices[k].device;
			}
		for (size_t k = 0; k < o->nsync_threads; k++)
			if (o->sync_threads[k].pid == pr->w.pid) { /* sorted: the first is the longest */
				v.blocked_ns = o->sync_threads[k].blocked_ns;
				v.blocked_tid = o->sync_threads[k].tid;
				break;
			}
		size_t lo = 0, n = 0;
		for (size_t k = 0; k < c->nlat; k++)
			if (c->lat[k].pid == pr->w.pid) {
				if (!n++)
					lo = k;
			}
		if (n)
			v.median_latency_ns = c->lat[lo + (n - 1) / 2].latency_ns;
		uint64_t best = 0;
		for (size_t k = 0; k < o->nblames; k++) {
			uint64_t ns = 0;
			for (size_t b = 0; b < c->nblamed; b++)
				if (c->blamed[b].pid == pr->w.pid && c->blamed[b].name == o->blames[k].name)
					ns += c->blamed[b].ns;
			if (ns > best && o->blames[k].name) {
				best = ns;
				v.top_blame = o->blames[k].name;
			}
		}
		if (v.window_ns) {
			v.util_pct = 100.0 * (double)v.busy_ns / (double)v.window_ns;
			v.sync_pct = 100.0 * (double)v.blocked_ns / (double)v.window_ns;
		}
		gpu_verdict_idle(c, &v);
		static const enum gpu_bound by_class[GPU_IDLE_NCLASSES] = {
			[GPU_IDLE_CPU] = GPU_BOUND_INPUT, [GPU_IDLE_LAUNCH] = GPU_BOUND_LAUNCH,
			[GPU_IDLE_SYNC] = GPU_BOUND_SYNC, [GPU_IDLE_OFFCPU] = GPU_BOUND_OFFCPU,
		};
		if (!v.busy_ns)
			v.bound = GPU_BOUND_NONE;
		else if (v.util_pct >= GPU_BOUND_UTIL_PCT)
			v.bound = GPU_BOUND_GPU;
		else if (v.sync_pct >= GPU_BOUND_SYNC_PCT)
			v.bound = GPU_BOUND_SYNC;
		else if (v.idle_weight >= GPU_IDLE_MIN_SAMPLES)
			v.bound = by_class[v.cause_cls];
		else
			v.bound = GPU_BOUND_LAUNCH;
		if (v.bound == GPU_BOUND_INPUT && v.median_kernel_ns &&
		    v.median_kernel_ns < GPU_TINY_KERNEL_NS && v.median_gap_ns < GPU_TINY_GAP_NS)
			v.bound = GPU_BOUND_LAUNCH;
		o->verdicts[o->nverdicts++] = v;
	}
}

CS_CMP_FN(cmp_proc, struct gpu_proc, CS_CMP(a->w.pid, b->w.pid))

/* ---- collection ---- */

static void gpu_collect(struct gpu_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_analysis *o = c->out;

	/* sync records' (pid, correlation): their API spans do not blame twice */
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind == PROFILE_GPU_SYNC) {
			cs_grow(&c->sync_corr, &c->sync_corr_cap, c->nsync_corr + 1, sizeof(uint64_t));
			c->sync_corr[c->nsync_corr++] = (uint64_t)a->pid << 32 | a->correlation;
		}
	}
	cs_qsort(c->sync_corr, c->nsync_corr, sizeof(uint64_t), cmp_u64);

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind == PROFILE_GPU_MARKER || a->end < a->start || !a->end || !gpu_pass(c, a))
			continue;
		o->activities++;
		struct gpu_proc *pr = gpu_proc_of(c, a->pid);
		gpu_window_widen(&pr->w, a->start, a->end);
		switch (a->kind) {
		case PROFILE_GPU_KERNEL:
		case PROFILE_GPU_MEMCPY:
		case PROFILE_GPU_MEMSET: {
			const char *label = a->kind == PROFILE_GPU_MEMSET ? "[memset]" :
				a->kind == PROFILE_GPU_MEMCPY ?
				gpu_copy_label(c, profile_gpu_vendor(p, a->pid), a->detail) :
				*profile_str(p, a->name) ? profile_str(p, a->name) : "(unnamed)";
			cs_grow(&c->items, &c->items_cap, c->nitems + 1, sizeof(*c->items));
			c->items[c->nitems++] = (struct gpu_item){ .pid = a->pid, .device = a->device,
				.context = a->context, .stream = a->stream, .kind = a->kind,
				.detail = a->detail, .start = a->start, .end = a->end,
				.label = label };
			o->work_ns += a->end - a->start;
			if (a->kind == PROFILE_GPU_KERNEL) {
				pr->kernels++;
				pr->kernel_ns += a->end - a->start;
			}
			break;
		}
		case PROFILE_GPU_SYNC: {
			const struct gpu_vendor *v = profile_gpu_vendor(p, a->pid);
			if (a->detail == v->sync_device_wait) /* the GPU waits, not the CPU */
				break;
			cs_grow(&c->waits, &c->waits_cap, c->nwaits + 1, sizeof(*c->waits));
			c->waits[c->nwaits++] = (struct gpu_wait){ .pid = a->pid, .tid = gpu_tid(p, a),
				.context = a->context, .stream = a->stream, .start = a->start,
				.end = a->end, .scope = a->detail == v->sync_stream ? 2 : 1,
				.blame = true };
			break;
		}
		case PROFILE_GPU_API: {
			if (!gpu_is_sync_api(p, a))
				break;
			uint64_t key = (uint64_t)a->pid << 32 | a->correlation;
			/* bsearch(NULL, 0, ...) is undefined (UBSan reports it): no syncs, no record */
			bool has_record = c->nsync_corr &&
					  bsearch(&key, c->sync_corr, c->nsync_corr, sizeof(uint64_t),
						  cmp_u64) != NULL;
			cs_grow(&c->waits, &c->waits_cap, c->nwaits + 1, sizeof(*c->waits));
			c->waits[c->nwaits++] = (struct gpu_wait){ .pid = a->pid, .tid = gpu_tid(p, a),
				.start = a->start, .end = a->end, .scope = 0, .blame = !has_record };
			break;
		}
		default:
			break;
		}
	}
	cs_qsort(c->procs, c->nprocs, sizeof(*c->procs), cmp_proc);
}

int gpu_analyze(const struct profile *p, const struct stacks_filter *filter,
		struct gpu_analysis *out)
{
	struct gpu_ctx c = { .p = p, .filter = filter, .out = out };

	memset(out, 0, sizeof(*out));
	gpu_idle_analyze(p, filter ? filter->pid : -1, &out->idle);
	gpu_collect(&c);
	bool markers = false;
	for (size_t i = 0; i < p->ngpu_activities && !markers; i++)
		markers = p->gpu_activities[i].kind == PROFILE_GPU_MARKER &&
			  gpu_pass(&c, &p->gpu_activities[i]);
	out->present = c.nitems || c.nwaits || markers;
	if (out->present) {
		gpu_kernel_table(&c);
		gpu_copy_table(&c);
		cs_qsort(c.items, c.nitems, sizeof(*c.items), cmp_item_stream);
		gpu_util_rows(&c, true, &out->streams, &out->nstreams);
		cs_qsort(c.items, c.nitems, sizeof(*c.items), cmp_item_device);
		gpu_util_rows(&c, false, &out->devices, &out->ndevices);
		gpu_sync(&c);   /* leaves items sorted by (pid, end) */
		gpu_latency(&c);
		gpu_sites(&c);
		gpu_ranges(&c);
		gpu_verdicts(&c);
	}
	CS_FREE_ALL(c.items, c.waits, c.procs, c.lat, c.sync_corr, c.blamed);
	cs_map_free(&c.copy_labels);
	return 0;
}

void gpu_analysis_free(struct gpu_analysis *a)
{
	for (size_t i = 0; i < a->nowned; i++)
		free(a->owned[i]);
	CS_FREE_ALL(a->owned, a->kernels_by_time, a->copies, a->devices, a->streams,
		    a->sync_threads, a->blames, a->sites, a->ranges, a->verdicts);
	gpu_idle_free(&a->idle);
	memset(a, 0, sizeof(*a));
}
