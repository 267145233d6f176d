/* gpu_idle.c: GPU idle intervals and the CPU samples inside them (see gpu_idle.h for the
 * definitions). Written by hand: interval unions and binary searches over the loaded profile's
 * sorted arrays; no library offers them over our records.
 *
 * Cost: one pass over the activities, sorts of the device work and API spans, then per idle
 * interval a binary search into the time-ordered samples; a sample's class is found by a
 * binary search into its thread's API spans. */
#include "analysis/gpu_idle.h"

#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "base/search.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nested API spans of one call (runtime over driver) and a few levels of nesting: how far back
 * a lookup goes among a thread's spans that start before a sample. */
#define IDLE_SPAN_LOOKBACK 16

struct idle_item {        /* device work, or a window edge */
	uint32_t pid, device;
	uint64_t start, end;
};

struct idle_span {        /* an API call or a sync record of one thread */
	uint32_t pid, tid;
	uint64_t start, end;
	bool sync;
};

struct idle_ctx {
	const struct profile *p;
	int64_t pid;
	struct idle_item *items; size_t nitems, items_cap;
	struct idle_span *spans; size_t nspans, spans_cap;
	struct gpu_window *windows; size_t nwindows, windows_cap;
	struct gpu_idle *out;
	size_t intervals_cap, samples_cap;
	/* csampler's own GPU writer threads (named "csampler-gpu" by lib/libcsampler-cupti.so):
	 * they sleep off the CPU all along and never hold a launch back */
	struct { uint32_t pid, tid; } *writers;
	size_t nwriters, writers_cap;
};

static void idle_find_writers(struct idle_ctx *c)
{
	const struct profile *p = c->p;
	for (size_t i = 0; i < p->nthreads; i++) {
		const char *comm = profile_str(p, p->threads[i].comm);
		if (comm && !strcmp(comm, "csampler-gpu")) {
			cs_grow(&c->writers, &c->writers_cap, c->nwriters + 1, sizeof(*c->writers));
			c->writers[c->nwriters].pid = p->threads[i].pid;
			c->writers[c->nwriters++].tid = p->threads[i].tid;
		}
	}
}

static bool idle_counts(const struct idle_ctx *c, const struct profile_sample *s)
{
	for (size_t i = 0; i < c->nwriters; i++)
		if (c->writers[i].tid == s->tid && c->writers[i].pid == s->pid)
			return false;
	return true;
}

const char *gpu_idle_class_name(uint32_t cls)
{
	static const char *const names[GPU_IDLE_NCLASSES] = { "cpu", "launch", "sync", "offcpu" };
	return cls < GPU_IDLE_NCLASSES ? names[cls] : "?";
}

static const struct profile_gpu_launch *idle_launch(const struct profile *p,
						    const struct profile_gpu_activity *a)
{
	if (a->launch != PROFILE_GPU_NO_LAUNCH && a->launch < p->ngpu_launches)
		return &p->gpu_launches[a->launch];
	return NULL;
}

void *gpu_window_of(void *arr, size_t *n, size_t *cap, size_t elem, uint32_t pid)
{
	char **base = arr;
	for (size_t i = 0; i < *n; i++) {
		struct gpu_window *w = (struct gpu_window *)(*base + i * elem);
		if (w->pid == pid)
			return w;
	}
	cs_grow(arr, cap, *n + 1, elem);
	struct gpu_window *w = (struct gpu_window *)(*base + (*n)++ * elem);
	memset(w, 0, elem);
	w->pid = pid;
	w->first = UINT64_MAX;
	return w;
}

void gpu_window_widen(struct gpu_window *w, uint64_t start, uint64_t end)
{
	if (start < w->first)
		w->first = start;
	if (end > w->last)
		w->last = end;
}

uint64_t gpu_window_ns(const struct gpu_window *w)
{
	return w->last > w->first ? w->last - w->first : 0;
}

static struct gpu_window *idle_window_of(struct idle_ctx *c, uint32_t pid)
{
	return gpu_window_of(&c->windows, &c->nwindows, &c->windows_cap, sizeof(*c->windows), pid);
}

/* The window, device work and spans, as gpu.c's utilisation table sees them. */
static void idle_collect(struct idle_ctx *c)
{
	const struct profile *p = c->p;
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind == PROFILE_GPU_MARKER || a->end < a->start || !a->end)
			continue;
		if (c->pid >= 0 && (int64_t)a->pid != c->pid)
			continue;
		gpu_window_widen(idle_window_of(c, a->pid), a->start, a->end);
		const struct profile_gpu_launch *l = idle_launch(p, a);
		switch (a->kind) {
		case PROFILE_GPU_KERNEL:
		case PROFILE_GPU_MEMCPY:
		case PROFILE_GPU_MEMSET:
			cs_grow(&c->items, &c->items_cap, c->nitems + 1, sizeof(*c->items));
			c->items[c->nitems++] = (struct idle_item){ .pid = a->pid, .device = a->device,
				.start = a->start, .end = a->end };
			break;
		case PROFILE_GPU_SYNC:
		case PROFILE_GPU_API: {
			const struct gpu_vendor *v = profile_gpu_vendor(p, a->pid);
			bool sync = a->kind == PROFILE_GPU_SYNC ||
				    (l && strstr(profile_str(p, l->api), v->sync_api_word));
			if (a->kind == PROFILE_GPU_SYNC && a->detail == v->sync_device_wait)
				break;  /* the GPU waits for an event, not the CPU */
			cs_grow(&c->spans, &c->spans_cap, c->nspans + 1, sizeof(*c->spans));
			c->spans[c->nspans++] = (struct idle_span){ .pid = a->pid,
				.tid = l ? l->tid : a->tid, .start = a->start, .end = a->end,
				.sync = sync };
			break;
		}
		default:
			break;
		}
	}
}

CS_CMP_FN(cmp_item, struct idle_item,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->device, b->device) ?: CS_CMP(a->start, b->start) ?: 0)

CS_CMP_FN(cmp_span, struct idle_span,
	CS_CMP(a->tid, b->tid) ?: CS_CMP(a->pid, b->pid) ?: CS_CMP(a->start, b->start))

CS_CMP_FN(cmp_interval, struct gpu_idle_interval,
	CS_CMP(a->start, b->start) ?: CS_CMP(a->pid, b->pid) ?: CS_CMP(a->device, b->device) ?: 0)

static void idle_add_interval(struct idle_ctx *c, uint32_t pid, uint32_t device, uint64_t s,
			      uint64_t e)
{
	if (e <= s)
		return;
	struct gpu_idle *o = c->out;
	cs_grow(&o->intervals, &c->intervals_cap, o->nintervals + 1, sizeof(*o->intervals));
	o->intervals[o->nintervals++] = (struct gpu_idle_interval){ .pid = pid, .device = device,
		.start = s, .end = e, .top_stack = GPU_IDLE_NO_STACK };
	o->idle_ns += e - s;
	if (e - s > o->longest_ns)
		o->longest_ns = e - s;
}

/* Per (pid, device): the window minus the union of its work. */
static void idle_intervals(struct idle_ctx *c)
{
	cs_qsort(c->items, c->nitems, sizeof(*c->items), cmp_item);
	for (size_t i = 0; i < c->nitems;) {
		const struct idle_item *f = &c->items[i];
		const struct gpu_window *w = idle_window_of(c, f->pid);
		uint64_t cursor = w->first;  /* end of the busy time so far */
		size_t j = i;
		for (; j < c->nitems && c->items[j].pid == f->pid && c->items[j].device == f->device;
		     j++) {
			const struct idle_item *it = &c->items[j];
			if (it->start > cursor)
				idle_add_interval(c, f->pid, f->device, cursor, it->start);
			if (it->end > cursor)
				cursor = it->end;
		}
		idle_add_interval(c, f->pid, f->device, cursor, w->last);
		i = j;
	}
	cs_qsort(c->out->intervals, c->out->nintervals, sizeof(*c->out->intervals), cmp_interval);
}

/* The class of a sample of thread (pid, tid) at time t. */
static uint32_t idle_class(const struct idle_ctx *c, const struct profile_sample *s)
{
	/* the last span of this thread starting at or before t */
	size_t lo = CS_UPPER_BOUND3(c->spans, c->nspans, tid, s->tid, pid, s->pid, start, s->time);
	bool in_api = false, in_sync = false;
	for (size_t k = lo, n = 0; k-- > 0 && n < IDLE_SPAN_LOOKBACK; n++) {
		const struct idle_span *m = &c->spans[k];
		if (m->tid != s->tid || m->pid != s->pid)
			break;
		if (m->end >= s->time) {
			in_api = true;
			in_sync |= m->sync;
		}
	}
	if (in_sync)
		return GPU_IDLE_SYNC;
	if (in_api)
		return GPU_IDLE_LAUNCH;
	return s->flags & PROFILE_SAMPLE_OFFCPU ? GPU_IDLE_OFFCPU : GPU_IDLE_CPU;
}

/* First sample at or after t (p->samples is in time order). */
static size_t idle_sample_at(const struct profile *p, uint64_t t)
{
	return CS_LOWER_BOUND(p->samples, p->nsamples_records, time, t);
}

struct idle_tally {       /* one stack's weight within an interval or a time range */
	uint32_t stack;
	double ns;
	uint64_t weight;
};

CS_CMP_FN(cmp_tally, struct idle_tally, CS_CMP(a->stack, b->stack))

/* The stack with most idle ns among n tallies (sorted here); ties go to the lower id. */
static uint32_t idle_top_of(struct idle_tally *t, size_t n)
{
	cs_qsort(t, n, sizeof(*t), cmp_tally);
	uint32_t best = GPU_IDLE_NO_STACK;
	double best_ns = -1;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double ns = 0;
		for (; j < n && t[j].stack == t[i].stack; j++)
			ns += t[j].ns;
		if (ns > best_ns) {
			best_ns = ns;
			best = t[i].stack;
		}
		i = j;
	}
	return best;
}

static void idle_samples(struct idle_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_idle *o = c->out;
	struct idle_tally *tally = NULL;
	size_t tally_cap = 0;

	cs_qsort(c->spans, c->nspans, sizeof(*c->spans), cmp_span);
	for (size_t i = 0; i < o->nintervals; i++) {
		struct gpu_idle_interval *iv = &o->intervals[i];
		size_t first = idle_sample_at(p, iv->start), ntally = 0;
		uint64_t weight = 0;
		for (size_t k = first; k < p->nsamples_records && p->samples[k].time < iv->end; k++)
			if (p->samples[k].pid == iv->pid && idle_counts(c, &p->samples[k]))
				weight += p->samples[k].weight;
		if (!weight)
			continue;
		iv->samples = weight;
		o->sampled_ns += iv->end - iv->start;
		double per_weight = (double)(iv->end - iv->start) / (double)weight;
		for (size_t k = first; k < p->nsamples_records && p->samples[k].time < iv->end; k++) {
			const struct profile_sample *s = &p->samples[k];
			if (s->pid != iv->pid || !idle_counts(c, s))
				continue;
			struct gpu_idle_sample is = { .sample = (uint32_t)k, .interval = (uint32_t)i,
				.cls = idle_class(c, s), .idle_ns = per_weight * s->weight };
			cs_grow(&o->samples, &c->samples_cap, o->nsamples + 1, sizeof(*o->samples));
			o->samples[o->nsamples++] = is;
			o->weight += s->weight;
			o->class_weight[is.cls] += s->weight;
			o->class_ns[is.cls] += is.idle_ns;
			cs_grow(&tally, &tally_cap, ntally + 1, sizeof(*tally));
			tally[ntally++] = (struct idle_tally){ .stack = s->stack, .ns = is.idle_ns };
		}
		iv->top_stack = idle_top_of(tally, ntally);
	}
	free(tally);
}

static int cmp_sample_key(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	const struct gpu_idle_sample *a = x, *b = y;
	const struct profile_sample *sa = &p->samples[a->sample], *sb = &p->samples[b->sample];
	return CS_CMP(sa->pid, sb->pid) ?: CS_CMP(sa->stack, sb->stack) ?: CS_CMP(a->cls, b->cls) ?:
	       0;
}

CS_CMP_FN(cmp_sample_time, struct gpu_idle_sample,
	CS_CMP(a->sample, b->sample) ?: CS_CMP(a->interval, b->interval))

static int cmp_stack_ns(const void *x, const void *y)
{
	const struct gpu_idle_stack *a = x, *b = y;
	if (a->idle_ns != b->idle_ns)
		return a->idle_ns > b->idle_ns ? -1 : 1;
	return CS_CMP(a->samples, b->samples) ?: CS_CMP(a->pid, b->pid) ?:
	       CS_CMP(a->stack, b->stack);
}

/* Stacks that differ only in addresses or lines (the same function names, leaf to root) are
 * one row of the table. */
static int cmp_stack_names(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	const struct gpu_idle_stack *a = x, *b = y;
	int r = CS_CMP(a->pid, b->pid) ?: CS_CMP(a->cls, b->cls);
	if (r || a->stack == b->stack)
		return r;
	const struct profile_stack *sa = &p->stacks[a->stack], *sb = &p->stacks[b->stack];
	r = CS_CMP(sa->nframes, sb->nframes);
	for (uint32_t k = 0; !r && k < sa->nframes; k++) {
		uint32_t fa = p->stack_frames[sa->first + k], fb = p->stack_frames[sb->first + k];
		uint32_t na = fa < p->nframes ? p->frames[fa].name : 0;
		uint32_t nb = fb < p->nframes ? p->frames[fb].name : 0;
		r = CS_CMP(na, nb);
	}
	return r;
}

static void idle_merge_same_names(const struct profile *p, struct gpu_idle *o)
{
	size_t n = 0;
	for (size_t i = 0; i < o->nstacks; i++)   /* stacks without an id stay apart */
		if (o->stacks[i].stack >= p->nstacks)
			o->stacks[i].stack = GPU_IDLE_NO_STACK;
	cs_qsort_r(o->stacks, o->nstacks, sizeof(*o->stacks), cmp_stack_names, (void *)p);
	for (size_t i = 0; i < o->nstacks; i++) {
		struct gpu_idle_stack *st = &o->stacks[i];
		struct gpu_idle_stack *last = n ? &o->stacks[n - 1] : NULL;
		if (last && st->stack != GPU_IDLE_NO_STACK && last->stack != GPU_IDLE_NO_STACK &&
		    !cmp_stack_names(last, st, (void *)p)) {
			if (st->idle_ns > last->idle_ns)
				last->stack = st->stack;   /* named by its heaviest variant */
			last->samples += st->samples;
			last->idle_ns += st->idle_ns;
			last->percent += st->percent;
			continue;
		}
		o->stacks[n++] = *st;
	}
	o->nstacks = n;
}

/* Group the idle samples by (pid, stack, class), then leave them in time order. */
static void idle_stacks(struct idle_ctx *c)
{
	const struct profile *p = c->p;
	struct gpu_idle *o = c->out;
	size_t cap = 0;

	cs_qsort_r(o->samples, o->nsamples, sizeof(*o->samples), cmp_sample_key, (void *)p);
	for (size_t i = 0; i < o->nsamples;) {
		const struct profile_sample *f = &p->samples[o->samples[i].sample];
		struct gpu_idle_stack st = { .pid = f->pid, .stack = f->stack,
					     .cls = o->samples[i].cls };
		size_t j = i;
		for (; j < o->nsamples && !cmp_sample_key(&o->samples[i], &o->samples[j], (void *)p);
		     j++) {
			st.samples += p->samples[o->samples[j].sample].weight;
			st.idle_ns += o->samples[j].idle_ns;
		}
		st.percent = o->sampled_ns ? 100.0 * st.idle_ns / (double)o->sampled_ns : 0;
		cs_grow(&o->stacks, &cap, o->nstacks + 1, sizeof(*o->stacks));
		o->stacks[o->nstacks++] = st;
		i = j;
	}
	idle_merge_same_names(p, o);
	cs_qsort(o->stacks, o->nstacks, sizeof(*o->stacks), cmp_stack_ns);
	cs_qsort(o->samples, o->nsamples, sizeof(*o->samples), cmp_sample_time);
}

int gpu_idle_analyze(const struct profile *p, int64_t pid, struct gpu_idle *out)
{
	struct idle_ctx c = { .p = p, .pid = pid, .out = out };

	memset(out, 0, sizeof(*out));
	idle_find_writers(&c);
	idle_collect(&c);
	idle_intervals(&c);
	idle_samples(&c);
	idle_stacks(&c);
	CS_FREE_ALL(c.items, c.spans, c.windows, c.writers);
	return 0;
}

void gpu_idle_free(struct gpu_idle *g)
{
	if (!g)
		return;
	CS_FREE_ALL(g->intervals, g->samples, g->stacks);
	memset(g, 0, sizeof(*g));
}

const char *gpu_idle_leaf(const struct profile *p, uint32_t stack, char *python, size_t len)
{
	const char *leaf = NULL;
	if (len)
		python[0] = 0;
	if (stack >= p->nstacks)
		return "[no stack]";
	const struct profile_stack *st = &p->stacks[stack];
	for (uint32_t i = 0; i < st->nframes; i++) {
		uint32_t id = p->stack_frames[st->first + i];
		if (id >= p->nframes)
			continue;
		const struct profile_frame *fr = &p->frames[id];
		if (!leaf && !(fr->flags & PROFILE_FRAME_OFFCPU))
			leaf = profile_str(p, fr->name);
		if (fr->flags & PROFILE_FRAME_PYTHON) {
			const char *file = profile_str(p, fr->file), *slash = strrchr(file, '/');
			if (len)
				snprintf(python, len, "%s (%s:%u)", profile_str(p, fr->name),
					 slash ? slash + 1 : file, fr->line);
			break;
		}
	}
	if (!leaf && st->nframes) /* only the wait: name it */
		leaf = profile_str(p, p->frames[p->stack_frames[st->first]].name);
	return leaf ? leaf : "[no stack]";
}

/* g->samples (indexes into p->samples, in time order) before t. */
struct idle_sample_key {
	const struct profile *p;
	const struct gpu_idle *g;
	uint64_t t;
};

static bool idle_sample_before(size_t i, const void *arg)
{
	const struct idle_sample_key *k = arg;
	return k->p->samples[k->g->samples[i].sample].time < k->t;
}

uint64_t gpu_idle_between(const struct profile *p, const struct gpu_idle *g, int64_t pid,
			  uint64_t t0, uint64_t t1, uint32_t *top_stack)
{
	uint64_t ns = 0;
	if (top_stack)
		*top_stack = GPU_IDLE_NO_STACK;
	if (t1 <= t0)
		return 0;
	/* Intervals of one (pid, device) do not overlap, but those of different ones may: the
	 * first interval that may reach t0 starts at most the longest interval's length before. */
	uint64_t longest = g->longest_ns;
	uint64_t from = t0 > longest ? t0 - longest : 0;
	size_t lo = CS_LOWER_BOUND(g->intervals, g->nintervals, start, from);
	for (size_t i = lo; i < g->nintervals && g->intervals[i].start < t1; i++) {
		const struct gpu_idle_interval *iv = &g->intervals[i];
		if (pid >= 0 && (int64_t)iv->pid != pid)
			continue;
		uint64_t s = iv->start > t0 ? iv->start : t0, e = iv->end < t1 ? iv->end : t1;
		if (e > s)
			ns += e - s;
	}
	if (!top_stack)
		return ns;

	struct idle_sample_key key = { p, g, t0 };
	lo = cs_partition_point(g->nsamples, idle_sample_before, &key);
	struct idle_tally *tally = NULL;
	size_t ntally = 0, cap = 0;
	for (size_t i = lo; i < g->nsamples && p->samples[g->samples[i].sample].time < t1; i++) {
		const struct profile_sample *s = &p->samples[g->samples[i].sample];
		if (pid >= 0 && (int64_t)s->pid != pid)
			continue;
		cs_grow(&tally, &cap, ntally + 1, sizeof(*tally));
		tally[ntally++] = (struct idle_tally){ .stack = s->stack, .ns = g->samples[i].idle_ns };
	}
	*top_stack = idle_top_of(tally, ntally);
	free(tally);
	return ns;
}
