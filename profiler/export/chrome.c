/* chrome.c: a profile as a Chrome trace-event JSON timeline (the format of chrome://tracing,
 * Perfetto and the PyTorch profiler), CPU and GPU together:
 *
 *   - one process per recorded process, one track per thread (process_name/thread_name
 *     metadata). A thread's track holds its NVTX ranges, CUDA API calls and synchronisation
 *     waits (exact, from CUPTI) and, around them, its CPU samples as a flame chart: a frame
 *     that stays on the stack over consecutive samples is one slice, its callees nested in it.
 *   - one pseudo-process "GPU <device> (pid P)" per recorded process and device, with one track
 *     per stream (tid = the stream id) holding its kernels, copies and memsets as "X" events.
 *   - on each GPU pseudo-process, a track "idle: what the CPU did" (tid CHROME_IDLE_TID) with
 *     one "X" event per idle interval of the device (gpu_idle.h), named "GPU idle", its args
 *     the CPU stack with most idle time inside ("top_stack", leaf first) and the samples.
 *   - a flow arrow ("s" on the CPU thread at the launching API call, "f" bound to the GPU
 *     slice, id = correlation id) from each launch to what it ran.
 *
 * Why slices and not "samples"/"stackFrames": speedscope's importer, when a file has those,
 * reads the samples only and drops every other event (the GPU tracks); Perfetto's JSON importer
 * ignores them. Slices are read by both, by chrome://tracing and by Kineto users' tools.
 *
 * Why "B"/"E" pairs on CPU threads (and "X" on GPU streams): on a thread, slices nest and a
 * child often ends exactly when its parent does. An "E" event repeats the same decimal
 * timestamp, so every reader sees equal ends as equal; with "X" each reader computes ts + dur in
 * floating point and may put a child's end one ulp after its parent's (speedscope then unnests
 * the rest of the thread). A GPU stream's slices do not nest, so "X" is exact there.
 * Arguments go on the "E" event (Chrome and Perfetto merge them into the slice): speedscope
 * names a frame by its "B" event's name and arguments, and where one slice ends and an equal
 * one begins at the same time it opens the new one first unless the two events differ, so
 * every "E" carries arguments and no "B" does. Empty CPU slices are left out for the same
 * reason (speedscope cannot pair a "B" and "E" at one time).
 *
 * Times are microseconds from the recording's start with three decimals (nanoseconds), printed
 * from integers so that no precision is lost (json_raw). The JSON goes through base/json.c's
 * writer: the events are a flat list of small objects, which needs no library. */
#include "export/export.h"
#include "analysis/gpu_idle.h"
#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "base/search.h"
#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* GPU pseudo-processes get pids from here up: above any Linux pid (at most 2^22). */
#define CHROME_GPU_PID_BASE 0x40000000u
#define CHROME_DEFAULT_PERIOD_NS 1000000u

enum chrome_slice_kind { SL_NVTX, SL_API, SL_SYNC, SL_FRAME };

/* A slice on a CPU thread's track: an exact span from CUPTI or a run of a sampled frame. */
struct chrome_slice {
	uint64_t start, end;
	uint32_t kind;     /* enum chrome_slice_kind */
	uint32_t depth;    /* frames: depth from the root; spans: 0 */
	uint32_t ref;      /* SL_FRAME: frame id; else activity index */
	uint32_t pid, tid; /* the thread (spans, while they are gathered) */
};

/* A (process, device) pair with GPU work: one pseudo-process. */
struct chrome_gpu {
	uint32_t pid, device;
};

struct chrome_ctx {
	struct json_writer w;    /* the output */
	const struct profile *p;
	uint64_t period_ns;      /* one sample stands for this much time */
	uint64_t *flow_start;    /* launch index -> where its flow arrow leaves its CPU thread */
	struct chrome_gpu *gpus;
	size_t ngpus;
	uint64_t *boundaries;    /* a thread's span starts and ends, sorted unique */
	size_t nboundaries, cap_boundaries;
	struct chrome_slice *slices; /* a thread's slices */
	size_t nslices, cap_slices;
};

/* ---- output helpers ---------------------------------------------------------------------- */

/* Microseconds with three decimals, exactly, from a signed nanosecond count. */
static void chrome_us(struct chrome_ctx *c, const char *key, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)-(ns + 1) + 1 : (uint64_t)ns;
	char text[32];
	snprintf(text, sizeof(text), "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000,
		 (unsigned)(a % 1000));
	json_raw(&c->w, key, text);
}

static int64_t chrome_rel(const struct chrome_ctx *c, uint64_t t)
{
	return (int64_t)(t - c->p->start_ns);
}

/* Start an event object on a line of its own: {"ph":"X","pid":..,"tid":..,"ts":.. (the caller
 * adds the rest and ends it with json_end). */
static void chrome_begin(struct chrome_ctx *c, char ph, uint32_t pid, uint32_t tid, uint64_t t)
{
	char phase[2] = { ph, 0 };
	json_break(&c->w);
	json_object(&c->w, NULL, JSON_INLINE);
	json_str(&c->w, "ph", phase);
	json_u64(&c->w, "pid", pid);
	json_u64(&c->w, "tid", tid);
	chrome_us(c, "ts", chrome_rel(c, t));
}

static void chrome_meta(struct chrome_ctx *c, const char *what, uint32_t pid, uint32_t tid,
			const char *key, const char *name, int64_t number)
{
	struct json_writer *w = &c->w;
	json_break(w);
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "ph", "M");
	json_u64(w, "pid", pid);
	json_u64(w, "tid", tid);
	json_str(w, "name", what);
	json_object(w, "args", JSON_INLINE);
	if (name)
		json_str(w, key, name);
	else
		json_i64(w, key, number);
	json_end(w);
	json_end(w);
}

/* ---- names -------------------------------------------------------------------------------- */

static const struct profile_thread *chrome_thread(const struct profile *p, uint32_t pid,
						  uint32_t tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].pid == pid && p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

/* The process' comm, else its main thread's, else its parent's (a forked child that has not
 * exec'd has its parent's name); NULL when none is known. */
static const char *chrome_process_comm(const struct profile *p, uint32_t pid)
{
	for (int hops = 0; hops < 8 && pid; hops++) {
		uint32_t ppid = 0;
		for (size_t i = 0; i < p->nprocesses; i++)
			if (p->processes[i].pid == pid) {
				if (*profile_str(p, p->processes[i].comm))
					return profile_str(p, p->processes[i].comm);
				ppid = p->processes[i].ppid;
			}
		const struct profile_thread *t = chrome_thread(p, pid, pid);
		if (t && *profile_str(p, t->comm))
			return profile_str(p, t->comm);
		pid = ppid;
	}
	return NULL;
}

static char *chrome_process_name(const struct profile *p, uint32_t pid)
{
	const char *comm = chrome_process_comm(p, pid);
	return comm ? cs_strdup(comm) : cs_asprintf("pid %" PRIu32, pid);
}

/* The thread's name: its comm, else "<process name> thread" for the main thread, else
 * "thread N". Every thread that has events gets a name, so viewers never show a bare id. */
static char *chrome_thread_name(const struct profile *p, uint32_t pid, uint32_t tid)
{
	const struct profile_thread *t = chrome_thread(p, pid, tid);
	if (t && *profile_str(p, t->comm))
		return cs_strdup(profile_str(p, t->comm));
	if (tid == pid) {
		char *pn = chrome_process_name(p, pid), *n = cs_asprintf("%s main thread", pn);
		free(pn);
		return n;
	}
	return cs_asprintf("thread %" PRIu32, tid);
}

/* A copy's name as Nsight Systems writes it ("Memcpy HtoD"), by its vendor's copy kinds. */
static void chrome_memcpy_name(const struct profile *p, const struct profile_gpu_activity *a,
			       char *buf, size_t len)
{
	const char *kind = gpu_vendor_copy_kind(profile_gpu_vendor(p, a->pid), a->detail);
	snprintf(buf, len, kind ? "Memcpy %s" : "Memcpy", kind);
}

static const char *chrome_sync_name(const struct profile *p, const struct profile_gpu_activity *a)
{
	const char *name = gpu_vendor_sync_type(profile_gpu_vendor(p, a->pid), a->detail);
	return name ? name : "Synchronize";
}

/* The API span's name: the launch record's API function, else "CUDA API cbid N". */
static char *chrome_api_name(const struct profile *p, const struct profile_gpu_activity *a)
{
	if (a->launch != PROFILE_GPU_NO_LAUNCH && *profile_str(p, p->gpu_launches[a->launch].api))
		return cs_strdup(profile_str(p, p->gpu_launches[a->launch].api));
	return cs_asprintf("%s API cbid %" PRIu32, profile_gpu_vendor(p, a->pid)->name, a->detail);
}

/* A span's category: the vendor's, then the API domain ("cuda_runtime", "cuda_driver") or
 * what it is ("cuda_sync"). */
static void chrome_category(const struct profile *p, const struct profile_gpu_activity *a,
			    char *buf, size_t len)
{
	const struct gpu_vendor *v = profile_gpu_vendor(p, a->pid);
	const char *what = a->kind == PROFILE_GPU_SYNC ? "sync" : gpu_vendor_domain(v, a->detail2);
	snprintf(buf, len, "%s_%s", v->category, what ? what : gpu_vendor_domain(v, 1));
}

/* ---- CPU threads -------------------------------------------------------------------------- */

/* The CPU thread a span belongs to: the activity's own thread, else its launch's. False when
 * the activity is not a span of a CPU thread or its thread is unknown. */
static bool chrome_span_thread(const struct profile *p, const struct profile_gpu_activity *a,
			       uint32_t *tid)
{
	if (a->kind != PROFILE_GPU_API && a->kind != PROFILE_GPU_SYNC && a->kind != PROFILE_GPU_MARKER)
		return false;
	if (!a->start || (a->end && a->end < a->start))
		return false;
	*tid = a->tid;
	if (!*tid && a->launch != PROFILE_GPU_NO_LAUNCH)
		*tid = p->gpu_launches[a->launch].tid;
	if (!*tid && a->kind == PROFILE_GPU_MARKER)
		*tid = a->pid; /* a range not tied to a thread: on the main thread */
	return *tid != 0;
}

CS_CMP_FN(cmp_slice_thread, struct chrome_slice,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid) ?: CS_CMP(a->start, b->start) ?:
	CS_CMP(b->end, a->end) ?: CS_CMP(a->kind, b->kind) ?: CS_CMP(a->ref, b->ref))

/* Order of emission on a track: by start, the enclosing (longer, outer) slice first. */
CS_CMP_FN(cmp_slice_time, struct chrome_slice,
	CS_CMP(a->start, b->start) ?: CS_CMP(b->end, a->end) ?: CS_CMP(a->kind, b->kind) ?:
	CS_CMP(a->depth, b->depth))

CS_CMP_FN(cmp_u32, uint32_t, CS_CMP(*a, *b))

CS_CMP_FN(cmp_u64, uint64_t, CS_CMP(*a, *b))

/* Indexes of samples or launches ordered by (pid, tid, time), then index (qsort_r's arg: the
 * profile). */
#define CHROME_CMP_THREAD_TIME(a, b, x, y)                                                      \
	return CS_CMP((a)->pid, (b)->pid) ?: CS_CMP((a)->tid, (b)->tid) ?:                      \
	       CS_CMP((a)->time, (b)->time) ?: CS_CMP(*(const uint32_t *)(x), *(const uint32_t *)(y))

static int cmp_sample_thread(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	CHROME_CMP_THREAD_TIME(&p->samples[*(const uint32_t *)x], &p->samples[*(const uint32_t *)y],
			       x, y);
}

static void chrome_add_slice(struct chrome_ctx *c, struct chrome_slice s)
{
	*CS_PUSH(c->slices, c->nslices, c->cap_slices) = s;
}

/* The frames of a stack, root first, are stack_frames[first + n - 1 - d] for d = 0 .. n-1. */
static uint32_t chrome_frame_at(const struct profile *p, const struct profile_stack *st, uint32_t d)
{
	return p->stack_frames[st->first + st->nframes - 1 - d];
}

static bool chrome_same_frame(const struct profile *p, uint32_t a, uint32_t b)
{
	return a == b || (p->frames[a].name == p->frames[b].name &&
			  ((p->frames[a].flags ^ p->frames[b].flags) & PROFILE_FRAME_INLINED) == 0);
}

/* The frame runs of one thread's samples (sample indexes idx[0 .. n)), cut at the boundaries
 * of the thread's spans, appended to c->slices. A sample covers [time, next sample) when the
 * next one comes within two periods, else one period. Consecutive pieces of the same segment
 * between two boundaries share the slices of their common stack prefix. */
static void chrome_frame_runs(struct chrome_ctx *c, const uint32_t *idx, size_t n)
{
	const struct profile *p = c->p;
	struct open_frame { uint32_t frame; uint64_t start; } *open = NULL;
	size_t nopen = 0, cap_open = 0, seg_prev = SIZE_MAX;
	uint64_t prev_end = 0;

	for (size_t i = 0; i < n; i++) {
		const struct profile_sample *s = &p->samples[idx[i]];
		uint64_t end = s->time + c->period_ns;
		if (i + 1 < n) {
			uint64_t next = p->samples[idx[i + 1]].time;
			if (next - s->time <= 2 * c->period_ns) /* sorted: next >= time */
				end = next;
		}
		const struct profile_stack *st = s->stack < p->nstacks ? &p->stacks[s->stack] : NULL;
		uint32_t nfr = st ? st->nframes : 0;
		/* The first boundary after s->time: pieces are [start, min(end, boundary)). */
		size_t lo = cs_upper_bound_u64(c->boundaries, c->nboundaries, s->time);
		for (uint64_t start = s->time; start < end;) {
			bool at_boundary = lo < c->nboundaries && c->boundaries[lo] < end;
			uint64_t stop = at_boundary ? c->boundaries[lo] : end;
			uint32_t keep = 0;
			if (start == prev_end && lo == seg_prev)  /* lo: boundaries <= start */
				while (keep < nopen && keep < nfr &&
				       chrome_same_frame(p, open[keep].frame, chrome_frame_at(p, st, keep)))
					keep++;
			for (size_t d = nopen; d-- > keep;)
				chrome_add_slice(c, (struct chrome_slice){ .start = open[d].start,
					.end = prev_end, .kind = SL_FRAME, .depth = (uint32_t)d,
					.ref = open[d].frame });
			cs_grow(&open, &cap_open, nfr, sizeof(*open));
			for (uint32_t d = keep; d < nfr; d++)
				open[d] = (struct open_frame){ chrome_frame_at(p, st, d), start };
			nopen = nfr;
			prev_end = stop;
			seg_prev = lo;
			start = stop;
			if (at_boundary)
				lo++;
		}
	}
	for (size_t d = nopen; d-- > 0;)
		chrome_add_slice(c, (struct chrome_slice){ .start = open[d].start, .end = prev_end,
			.kind = SL_FRAME, .depth = (uint32_t)d, .ref = open[d].frame });
	free(open);
}

/* Name, category and (on the "E" event) arguments of a CPU slice; ends the event. */
static void chrome_slice_fields(struct chrome_ctx *c, const struct chrome_slice *s, bool end)
{
	const struct profile *p = c->p;
	const struct profile_gpu_activity *a = s->kind == SL_FRAME ? NULL :
					       &p->gpu_activities[s->ref];
	struct json_writer *w = &c->w;
	char *api, cat[64];

	switch (s->kind) {
	case SL_FRAME: {
		const char *name = profile_str(p, p->frames[s->ref].name);
		json_str(w, "cat", "cpu");
		json_str(w, "name", *name ? name : "[unknown]");
		if (end) {
			uint32_t m = p->frames[s->ref].module;
			json_object(w, "args", JSON_INLINE);
			json_str(w, "module", m < p->nmodules ?
				 cs_basename(profile_str(p, p->modules[m].path)) : "");
			json_end(w);
		}
		break;
	}
	case SL_NVTX:
		json_str(w, "cat", "nvtx");
		json_str(w, "name", profile_str(p, a->name));
		if (end) {
			json_object(w, "args", JSON_INLINE);
			json_u64(w, "domain", a->detail2);
			json_end(w);
		}
		break;
	case SL_API:
		api = chrome_api_name(p, a);
		chrome_category(p, a, cat, sizeof(cat));
		json_str(w, "cat", cat);
		json_str(w, "name", api);
		free(api);
		if (end) {
			json_object(w, "args", JSON_INLINE);
			json_u64(w, "correlation", a->correlation);
			json_u64(w, "cbid", a->detail);
			json_end(w);
		}
		break;
	case SL_SYNC:
		chrome_category(p, a, cat, sizeof(cat));
		json_str(w, "cat", cat);
		json_str(w, "name", chrome_sync_name(p, a));
		if (end) {
			json_object(w, "args", JSON_INLINE);
			json_u64(w, "correlation", a->correlation);
			json_u64(w, "stream", a->stream);
			json_u64(w, "device", a->device);
			json_end(w);
		}
		break;
	}
	json_end(w);
}

/* One thread: its spans (spans[0 .. nspans), sorted) and samples (idx[0 .. nidx)) as
 * properly nested "B"/"E" slices, and its instant NVTX markers. */
static void chrome_write_thread(struct chrome_ctx *c, uint32_t pid, uint32_t tid,
				const struct chrome_slice *spans, size_t nspans,
				const uint32_t *idx, size_t nidx)
{
	const struct profile *p = c->p;
	char *name = chrome_thread_name(p, pid, tid);
	chrome_meta(c, "thread_name", pid, tid, "name", name, 0);
	chrome_meta(c, "thread_sort_index", pid, tid, "sort_index", NULL, tid == pid ? 0 : tid);
	free(name);

	/* Spans, forced to nest: one that outlives its parent ends with it. */
	c->nslices = 0;
	c->nboundaries = 0;
	size_t *stack = cs_calloc(nspans + 1, sizeof(*stack)), depth = 0;
	for (size_t i = 0; i < nspans; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[spans[i].ref];
		if (a->kind == PROFILE_GPU_MARKER && !a->end) {   /* an instant marker */
			chrome_begin(c, 'i', pid, tid, a->start);
			json_str(&c->w, "s", "t");
			json_str(&c->w, "cat", "nvtx");
			json_str(&c->w, "name", profile_str(p, a->name));
			json_end(&c->w);
			continue;
		}
		struct chrome_slice s = spans[i];
		while (depth && c->slices[stack[depth - 1]].end <= s.start)
			depth--;
		if (depth && s.end > c->slices[stack[depth - 1]].end)
			s.end = c->slices[stack[depth - 1]].end;
		if (s.end == s.start)
			continue;   /* nothing to draw, and readers pair empty B/E events badly */
		chrome_add_slice(c, s);
		stack[depth++] = c->nslices - 1;
	}
	free(stack);
	cs_grow(&c->boundaries, &c->cap_boundaries, 2 * c->nslices + 1, sizeof(*c->boundaries));
	for (size_t i = 0; i < c->nslices; i++) {
		c->boundaries[c->nboundaries++] = c->slices[i].start;
		c->boundaries[c->nboundaries++] = c->slices[i].end;
	}
	cs_qsort(c->boundaries, c->nboundaries, sizeof(*c->boundaries), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < c->nboundaries; i++)
		if (!u || c->boundaries[u - 1] != c->boundaries[i])
			c->boundaries[u++] = c->boundaries[i];
	c->nboundaries = u;

	chrome_frame_runs(c, idx, nidx);
	cs_qsort(c->slices, c->nslices, sizeof(*c->slices), cmp_slice_time);

	/* Emit: close every open slice that ends before the next one starts. */
	size_t *open = cs_calloc(c->nslices + 1, sizeof(*open)), nopen = 0;
	for (size_t i = 0; i <= c->nslices; i++) {
		while (nopen && (i == c->nslices || c->slices[open[nopen - 1]].end <= c->slices[i].start)) {
			const struct chrome_slice *e = &c->slices[open[--nopen]];
			chrome_begin(c, 'E', pid, tid, e->end);
			chrome_slice_fields(c, e, true);
		}
		if (i == c->nslices)
			break;
		chrome_begin(c, 'B', pid, tid, c->slices[i].start);
		chrome_slice_fields(c, &c->slices[i], false);
		open[nopen++] = i;
	}
	free(open);
}

static void chrome_write_threads(struct chrome_ctx *c)
{
	const struct profile *p = c->p;
	struct chrome_slice *spans = NULL;
	size_t nspans = 0, cap = 0;
	uint32_t tid;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (!chrome_span_thread(p, a, &tid))
			continue;
		*CS_PUSH(spans, nspans, cap) = (struct chrome_slice){ .start = a->start,
			.end = a->end ? a->end : a->start, .ref = (uint32_t)i, .pid = a->pid, .tid = tid,
			.kind = a->kind == PROFILE_GPU_MARKER ? SL_NVTX :
				a->kind == PROFILE_GPU_API ? SL_API : SL_SYNC };
	}
	cs_qsort(spans, nspans, sizeof(*spans), cmp_slice_thread);

	uint32_t *idx = cs_calloc(p->nsamples_records + 1, sizeof(*idx));
	for (size_t i = 0; i < p->nsamples_records; i++)
		idx[i] = (uint32_t)i;
	cs_qsort_r(idx, p->nsamples_records, sizeof(*idx), cmp_sample_thread, (void *)p);

	/* Walk both lists thread by thread, in (pid, tid) order. */
	size_t si = 0, ai = 0;
	while (si < nspans || ai < p->nsamples_records) {
		uint64_t ks = si < nspans ? (uint64_t)spans[si].pid << 32 | spans[si].tid : UINT64_MAX;
		uint64_t ka = ai < p->nsamples_records ?
			(uint64_t)p->samples[idx[ai]].pid << 32 | p->samples[idx[ai]].tid : UINT64_MAX;
		uint64_t key = ks < ka ? ks : ka;
		size_t s0 = si, a0 = ai;
		while (si < nspans && ((uint64_t)spans[si].pid << 32 | spans[si].tid) == key)
			si++;
		while (ai < p->nsamples_records &&
		       ((uint64_t)p->samples[idx[ai]].pid << 32 | p->samples[idx[ai]].tid) == key)
			ai++;
		chrome_write_thread(c, (uint32_t)(key >> 32), (uint32_t)key, spans + s0, si - s0,
				    idx + a0, ai - a0);
	}
	free(idx);
	free(spans);
}

/* ---- GPU ---------------------------------------------------------------------------------- */

static bool chrome_is_gpu_work(const struct profile_gpu_activity *a)
{
	return (a->kind == PROFILE_GPU_KERNEL || a->kind == PROFILE_GPU_MEMCPY ||
		a->kind == PROFILE_GPU_MEMSET) && a->start && a->end >= a->start;
}

static uint32_t chrome_gpu_pid(struct chrome_ctx *c, uint32_t pid, uint32_t device)
{
	for (size_t i = 0; i < c->ngpus; i++)
		if (c->gpus[i].pid == pid && c->gpus[i].device == device)
			return CHROME_GPU_PID_BASE + (uint32_t)i;
	return 0;
}

CS_CMP_FN(cmp_gpu, struct chrome_gpu, CS_CMP(a->pid, b->pid) ?: CS_CMP(a->device, b->device))

/* The launch that made activity a (its graph node's, for a graph kernel without one). */
static uint32_t chrome_launch_of(const struct profile_gpu_activity *a)
{
	return a->launch != PROFILE_GPU_NO_LAUNCH ? a->launch : a->node_launch;
}

/* Flow ids: the correlation id; a second process' ids are moved past 2^32 so that two
 * processes' equal correlation ids never join. */
static uint64_t chrome_flow_id(const struct chrome_ctx *c, uint32_t pid, uint32_t corr)
{
	uint64_t rank = 0;
	for (size_t i = 0; i < c->ngpus && c->gpus[i].pid != pid; i++)
		if (!i || c->gpus[i - 1].pid != c->gpus[i].pid)
			rank++;
	return rank << 32 | corr;
}

static void chrome_write_gpu(struct chrome_ctx *c)
{
	const struct profile *p = c->p;
	struct json_writer *w = &c->w;
	uint64_t *tracks = NULL; /* (gpu index << 32 | stream), sorted unique */
	size_t ntracks = 0, cap_tracks = 0, cap_gpus = 0;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (!chrome_is_gpu_work(a))
			continue;
		if (!chrome_gpu_pid(c, a->pid, a->device)) {
			*CS_PUSH(c->gpus, c->ngpus, cap_gpus) =
				(struct chrome_gpu){ a->pid, a->device };
			cs_qsort(c->gpus, c->ngpus, sizeof(*c->gpus), cmp_gpu);
		}
	}
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (!chrome_is_gpu_work(a))
			continue;
		uint64_t gpu = chrome_gpu_pid(c, a->pid, a->device) - CHROME_GPU_PID_BASE;
		*CS_PUSH(tracks, ntracks, cap_tracks) = gpu << 32 | a->stream;
	}
	cs_qsort(tracks, ntracks, sizeof(*tracks), cmp_u64);
	for (size_t i = 0; i < c->ngpus; i++) {
		const char *comm = chrome_process_comm(p, c->gpus[i].pid);
		char *n = cs_asprintf("GPU %" PRIu32 " (%s%spid %" PRIu32 ")", c->gpus[i].device,
				      comm ? comm : "", comm ? ", " : "", c->gpus[i].pid);
		chrome_meta(c, "process_name", CHROME_GPU_PID_BASE + (uint32_t)i, 0, "name", n, 0);
		chrome_meta(c, "process_sort_index", CHROME_GPU_PID_BASE + (uint32_t)i, 0,
			    "sort_index", NULL, (int64_t)CHROME_GPU_PID_BASE + (int64_t)i);
		free(n);
	}
	for (size_t i = 0; i < ntracks; i++) {
		if (i && tracks[i] == tracks[i - 1])
			continue;
		uint32_t gpid = CHROME_GPU_PID_BASE + (uint32_t)(tracks[i] >> 32),
			 stream = (uint32_t)tracks[i];
		char *n = cs_asprintf("stream %" PRIu32, stream);
		chrome_meta(c, "thread_name", gpid, stream, "name", n, 0);
		chrome_meta(c, "thread_sort_index", gpid, stream, "sort_index", NULL, stream);
		free(n);
	}
	free(tracks);

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (!chrome_is_gpu_work(a))
			continue;
		uint32_t gpid = chrome_gpu_pid(c, a->pid, a->device);
		chrome_begin(c, 'X', gpid, a->stream, a->start);
		chrome_us(c, "dur", (int64_t)(a->end - a->start));
		if (a->kind == PROFILE_GPU_KERNEL) {
			json_str(w, "cat", "kernel");
			json_str(w, "name",
				 *profile_str(p, a->name) ? profile_str(p, a->name) : "[kernel]");
			json_object(w, "args", JSON_INLINE);
			json_array(w, "grid", JSON_INLINE);
			for (int k = 0; k < 3; k++)
				json_u64(w, NULL, a->grid[k]);
			json_end(w);
			json_array(w, "block", JSON_INLINE);
			for (int k = 0; k < 3; k++)
				json_u64(w, NULL, a->block[k]);
			json_end(w);
			json_u64(w, "registers per thread", a->detail);
			json_u64(w, "shared memory", a->detail2);
			if (a->queued && a->queued <= a->start)
				chrome_us(c, "queued us", (int64_t)(a->start - a->queued));
		} else {
			bool copy = a->kind == PROFILE_GPU_MEMCPY;
			char name[64] = "Memset";
			if (copy)
				chrome_memcpy_name(c->p, a, name, sizeof(name));
			json_str(w, "cat", copy ? "gpu_memcpy" : "gpu_memset");
			json_str(w, "name", name);
			json_object(w, "args", JSON_INLINE);
			json_u64(w, "bytes", a->bytes);
			if (a->end > a->start)
				json_double(w, "bandwidth GB/s",
					    (double)a->bytes / (double)(a->end - a->start), 3);
			if (!copy)
				json_u64(w, "value", a->detail);
		}
		json_u64(w, "correlation", a->correlation);
		json_u64(w, "device", a->device);
		json_u64(w, "context", a->context);
		json_u64(w, "stream", a->stream);
		json_end(w);
		json_end(w);
	}
}

/* The idle track of each GPU pseudo-process: its device's idle intervals with the CPU stack
 * that explains most of each. */
#define CHROME_IDLE_TID 1000000000u

static void chrome_write_idle(struct chrome_ctx *c)
{
	const struct profile *p = c->p;
	struct json_writer *w = &c->w;
	struct gpu_idle g;
	char py[256];

	gpu_idle_analyze(p, -1, &g);
	for (size_t i = 0; i < c->ngpus && g.nintervals; i++) {
		uint32_t gpid = CHROME_GPU_PID_BASE + (uint32_t)i;
		chrome_meta(c, "thread_name", gpid, CHROME_IDLE_TID, "name",
			    "idle: what the CPU did", 0);
		chrome_meta(c, "thread_sort_index", gpid, CHROME_IDLE_TID, "sort_index", NULL, -1);
	}
	for (size_t i = 0; i < g.nintervals; i++) {
		const struct gpu_idle_interval *iv = &g.intervals[i];
		uint32_t gpid = chrome_gpu_pid(c, iv->pid, iv->device);
		if (!gpid)
			continue;
		chrome_begin(c, 'X', gpid, CHROME_IDLE_TID, iv->start);
		chrome_us(c, "dur", (int64_t)(iv->end - iv->start));
		json_str(w, "cat", "gpu-idle");
		json_str(w, "name", "GPU idle");
		json_object(w, "args", JSON_INLINE);
		json_u64(w, "samples", iv->samples);
		if (iv->top_stack < p->nstacks) {
			const struct profile_stack *st = &p->stacks[iv->top_stack];
			struct cs_buf path = { 0 };
			for (uint32_t k = 0; k < st->nframes; k++) {
				uint32_t fr = p->stack_frames[st->first + k];
				const char *name = fr < p->nframes ? profile_str(p, p->frames[fr].name) : "?";
				cs_buf_printf(&path, "%s%s", k ? ";" : "", name);
			}
			cs_buf_put(&path, "", 1);
			json_str(w, "top_stack", path.data);
			cs_buf_free(&path);
			json_str(w, "leaf", gpu_idle_leaf(p, iv->top_stack, py, sizeof(py)));
			if (*py)
				json_str(w, "python", py);
		} else {
			json_null(w, "top_stack");
		}
		json_end(w);
		json_end(w);
	}
	gpu_idle_free(&g);
}

/* A flow from the launching call on its CPU thread to each kernel, copy and memset. The
 * arrow leaves the launch's API span at its start. A launch without a span of its own (the
 * driver call that a runtime call makes, which CUPTI's API records leave out) leaves the span
 * of the call it is nested in: the last launch before it on its thread that has a span. */
static int cmp_launch_thread(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	CHROME_CMP_THREAD_TIME(&p->gpu_launches[*(const uint32_t *)x],
			       &p->gpu_launches[*(const uint32_t *)y], x, y);
}

static void chrome_flow_starts(struct chrome_ctx *c)
{
	const struct profile *p = c->p;
	uint32_t *api = cs_calloc(p->ngpu_launches + 1, sizeof(*api));
	uint32_t *order = cs_calloc(p->ngpu_launches + 1, sizeof(*order));

	memset(api, 0xff, (p->ngpu_launches + 1) * sizeof(*api));
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind == PROFILE_GPU_API && a->start && a->launch < p->ngpu_launches &&
		    api[a->launch] == UINT32_MAX)
			api[a->launch] = (uint32_t)i;
	}
	for (size_t i = 0; i < p->ngpu_launches; i++)
		order[i] = (uint32_t)i;
	cs_qsort_r(order, p->ngpu_launches, sizeof(*order), cmp_launch_thread, (void *)p);
	c->flow_start = cs_calloc(p->ngpu_launches + 1, sizeof(*c->flow_start));
	uint64_t outer = 0;
	for (size_t k = 0; k < p->ngpu_launches; k++) {
		const struct profile_gpu_launch *g = &p->gpu_launches[order[k]];
		if (k && (g->pid != p->gpu_launches[order[k - 1]].pid ||
			  g->tid != p->gpu_launches[order[k - 1]].tid))
			outer = 0;
		if (api[order[k]] != UINT32_MAX)
			outer = c->flow_start[order[k]] = p->gpu_activities[api[order[k]]].start;
		else
			c->flow_start[order[k]] = outer ? outer : g->time;
	}
	free(order);
	free(api);
}

static void chrome_write_flows(struct chrome_ctx *c)
{
	const struct profile *p = c->p;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		uint32_t l = chrome_launch_of(a);
		if (!chrome_is_gpu_work(a) || l == PROFILE_GPU_NO_LAUNCH || l >= p->ngpu_launches)
			continue;
		const struct profile_gpu_launch *g = &p->gpu_launches[l];
		uint64_t t = c->flow_start[l];
		uint64_t id = chrome_flow_id(c, a->pid, g->correlation);
		chrome_begin(c, 's', g->pid, g->tid, t);
		json_str(&c->w, "cat", "ac2g");
		json_str(&c->w, "name", "launch");
		json_u64(&c->w, "id", id);
		json_end(&c->w);
		chrome_begin(c, 'f', chrome_gpu_pid(c, a->pid, a->device), a->stream, a->start);
		json_str(&c->w, "bp", "e");
		json_str(&c->w, "cat", "ac2g");
		json_str(&c->w, "name", "launch");
		json_u64(&c->w, "id", id);
		json_end(&c->w);
	}
}

/* ---- the file ----------------------------------------------------------------------------- */

int export_chrome_write(FILE *f, const struct profile *p)
{
	struct chrome_ctx c = { .p = p, .period_ns = CHROME_DEFAULT_PERIOD_NS };
	struct json_writer *w = &c.w;
	const char *rate = profile_header(p, "rate_hz");
	double hz;

	if (rate && !cs_parse_double(rate, &hz) && hz >= 1 && hz <= 1e9)
		c.period_ns = (uint64_t)(1e9 / hz + 0.5);
	chrome_flow_starts(&c);
	json_init(w, f);
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "displayTimeUnit", "ns");
	json_object(w, "otherData", JSON_INLINE);
	json_str(w, "producer", "csampler " CSAMPLER_VERSION);
	json_str(w, "cmdline", profile_header(p, "cmdline") ? profile_header(p, "cmdline") : "");
	json_u64(w, "start_monotonic_ns", p->start_ns);
	json_u64(w, "sample_period_ns", c.period_ns);
	json_end(w);
	json_array(w, "traceEvents", JSON_INLINE);

	/* Processes that have samples or GPU records, named. */
	uint32_t *pids = cs_calloc(p->nprocesses + p->nthreads + p->ngpu_activities + 1,
				   sizeof(*pids));
	size_t npids = 0;
	for (size_t i = 0; i < p->nprocesses; i++)
		pids[npids++] = p->processes[i].pid;
	for (size_t i = 0; i < p->nthreads; i++)
		pids[npids++] = p->threads[i].pid;
	for (size_t i = 0; i < p->ngpu_activities; i++)
		pids[npids++] = p->gpu_activities[i].pid;
	cs_qsort(pids, npids, sizeof(*pids), cmp_u32);
	for (size_t i = 0; i < npids; i++) {
		if (i && pids[i] == pids[i - 1])
			continue;
		char *n = chrome_process_name(p, pids[i]);
		chrome_meta(&c, "process_name", pids[i], 0, "name", n, 0);
		chrome_meta(&c, "process_sort_index", pids[i], 0, "sort_index", NULL, pids[i]);
		free(n);
	}
	free(pids);

	chrome_write_gpu(&c);      /* first: names the GPU pseudo-processes for the flows */
	chrome_write_idle(&c);
	chrome_write_threads(&c);
	chrome_write_flows(&c);
	json_break(w);
	json_end(w);
	json_end(w);
	fputc('\n', f);

	free(c.flow_start);
	free(c.gpus);
	free(c.boundaries);
	free(c.slices);
	return ferror(f) ? -EIO : 0;
}
