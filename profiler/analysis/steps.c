/* steps.c: training steps from NVTX ranges or from a function's calls on the main thread, and
 * per-step figures (see steps.h). Written by hand over the loaded profile: sorts once, then one
 * binary search per step and array, never a scan of all records per step. */
#include "analysis/steps.h"

#include "base/cs.h"
#include "base/search.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS_CMP(a, b) do { if ((a) != (b)) return (a) < (b) ? -1 : 1; } while (0)

/* A (pid, time[, end]) record: an NVTX range, a main-thread event, a device interval. */
struct steps_ev {
	uint32_t pid;
	uint32_t in;                 /* events: the function is on the stack */
	uint64_t t, end;
};

static int cmp_ev(const void *x, const void *y)
{
	const struct steps_ev *a = x, *b = y;
	STEPS_CMP(a->pid, b->pid);
	STEPS_CMP(a->t, b->t);
	STEPS_CMP(a->end, b->end);
	return 0;
}

static void steps_push(struct steps_ev **v, size_t *n, size_t *cap, struct steps_ev e)
{
	cs_grow(v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = e;
}

bool steps_auto_name(const char *name)
{
	static const char *const words[] = { "step", "iteration" };
	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(words[i]);
		if (strncasecmp(name, words[i], n))
			continue;
		char c = name[n];
		if (!c || c == ' ' || c == '_' || c == '#' || isdigit((unsigned char)c))
			return true;
	}
	return false;
}

int steps_parse_range(const char *text, uint32_t *first, uint32_t *last)
{
	char a[32], *end;
	const char *dash = strchr(text, '-');
	size_t al = dash ? (size_t)(dash - text) : strlen(text);
	unsigned long long v;

	if (!al || al >= sizeof(a) || !isdigit((unsigned char)text[0]))
		return -EINVAL;
	memcpy(a, text, al);
	a[al] = 0;
	errno = 0;
	v = strtoull(a, &end, 10);
	if (errno || *end || v == 0 || v >= UINT32_MAX)
		return -EINVAL;
	*first = (uint32_t)v;
	if (!dash) {
		*last = *first;
		return 0;
	}
	if (!dash[1]) {
		*last = UINT32_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)dash[1]))
		return -EINVAL;
	errno = 0;
	v = strtoull(dash + 1, &end, 10);
	if (errno || *end || v == 0 || v >= UINT32_MAX || v < *first)
		return -EINVAL;
	*last = (uint32_t)v;
	return 0;
}

/* ---- detection ---- */

/* Group sorted ranges or steps (by pid, start) into out. */
static void steps_group(struct steps *out, const struct steps_ev *v, size_t n)
{
	size_t cap = 0, pcap = 0;
	for (size_t i = 0; i < n; i++) {
		if (!out->nprocs || out->procs[out->nprocs - 1].pid != v[i].pid) {
			cs_grow(&out->procs, &pcap, out->nprocs + 1, sizeof(*out->procs));
			out->procs[out->nprocs++] = (struct steps_proc){ .pid = v[i].pid,
									 .first = out->nsteps };
		}
		cs_grow(&out->steps, &cap, out->nsteps + 1, sizeof(*out->steps));
		out->steps[out->nsteps++] = (struct steps_step){ v[i].t, v[i].end };
		out->procs[out->nprocs - 1].n++;
	}
}

static bool steps_marker(const struct profile_gpu_activity *a)
{
	return a->kind == PROFILE_GPU_MARKER && a->end > a->start;
}

/* NVTX ranges named spec (NULL: the automatic names). Returns how many were found. */
static size_t steps_nvtx(const struct profile *p, const char *spec, struct steps *out)
{
	struct steps_ev *v = NULL;
	size_t n = 0, cap = 0;
	const char *first = NULL;
	bool differ = false;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (!steps_marker(a))
			continue;
		const char *name = profile_str(p, a->name);
		if (spec ? strcmp(name, spec) : !steps_auto_name(name))
			continue;
		if (!first)
			first = name;
		else if (strcmp(first, name))
			differ = true;
		steps_push(&v, &n, &cap, (struct steps_ev){ .pid = a->pid, .t = a->start,
							    .end = a->end });
	}
	if (n) {
		cs_qsort(v, n, sizeof(*v), cmp_ev);
		steps_group(out, v, n);
		out->source = STEPS_NVTX;
		if (differ) {
			/* numbered names: the word they share */
			size_t w = strncasecmp(first, "step", 4) ? 9 : 4;
			snprintf(out->name, sizeof(out->name), "%.*s*", (int)w, first);
		} else {
			snprintf(out->name, sizeof(out->name), "%s", first);
		}
	}
	free(v);
	return n;
}

/* Whether frame name matches the --step function: the name itself, or a Python frame's
 * function name after the last '.' (a qualified "module.Class.fn"). */
static bool steps_frame_match(const struct profile *p, const struct profile_frame *f,
			      const char *spec)
{
	const char *name = profile_str(p, f->name);
	if (!strcmp(name, spec))
		return true;
	if (f->flags & PROFILE_FRAME_PYTHON) {
		const char *dot = strrchr(name, '.');
		return dot && !strcmp(dot + 1, spec);
	}
	return false;
}

struct steps_fn {
	const struct profile *p;
	uint8_t *frame;  /* 0 unknown, 1 no, 2 yes */
	uint8_t *stack;
	const char *spec;
};

static bool steps_stack_in(struct steps_fn *c, uint32_t stack)
{
	const struct profile *p = c->p;
	if (stack >= p->nstacks)
		return false;
	if (!c->stack[stack]) {
		const struct profile_stack *st = &p->stacks[stack];
		bool in = false;
		for (uint32_t i = 0; i < st->nframes && !in; i++) {
			uint32_t id = p->stack_frames[st->first + i];
			if (id >= p->nframes)
				continue;
			if (!c->frame[id])
				c->frame[id] = steps_frame_match(p, &p->frames[id], c->spec) ? 2 : 1;
			in = c->frame[id] == 2;
		}
		c->stack[stack] = in ? 2 : 1;
	}
	return c->stack[stack] == 2;
}

/* The last GPU activity end of each pid: sorted (pid, end) pairs, one per pid. */
static size_t steps_activity_ends(const struct profile *p, struct steps_ev **out)
{
	struct steps_ev *v = NULL;
	size_t n = 0, cap = 0, m = 0;
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->end > a->start)
			steps_push(&v, &n, &cap, (struct steps_ev){ .pid = a->pid, .t = a->end });
	}
	if (n)
		cs_qsort(v, n, sizeof(*v), cmp_ev);
	for (size_t i = 0; i < n; i++) {
		if (m && v[m - 1].pid == v[i].pid)
			v[m - 1].t = v[i].t; /* sorted: the last is the largest */
		else
			v[m++] = v[i];
	}
	*out = v;
	return m;
}

static uint64_t steps_activity_end(const struct steps_ev *v, size_t n, uint32_t pid)
{
	size_t lo = CS_LOWER_BOUND(v, n, pid, pid);
	return lo < n && v[lo].pid == pid ? v[lo].t : 0;
}

/* Steps delimited by calls of function spec on each process' main thread. */
static size_t steps_function(const struct profile *p, const char *spec, struct steps *out)
{
	struct steps_fn c = { .p = p, .spec = spec, .frame = cs_calloc(p->nframes + 1, 1),
			      .stack = cs_calloc(p->nstacks + 1, 1) };
	struct steps_ev *ev = NULL, *st = NULL, *ends = NULL;
	size_t nev = 0, cap = 0, nst = 0, stcap = 0, nends;

	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->tid == s->pid)
			steps_push(&ev, &nev, &cap, (struct steps_ev){ .pid = s->pid, .t = s->time,
				.in = steps_stack_in(&c, s->stack) });
	}
	for (size_t i = 0; i < p->ngpu_launches; i++) {
		const struct profile_gpu_launch *l = &p->gpu_launches[i];
		if (l->tid == l->pid)
			steps_push(&ev, &nev, &cap, (struct steps_ev){ .pid = l->pid, .t = l->time,
				.in = steps_stack_in(&c, l->stack) });
	}
	if (nev)
		cs_qsort(ev, nev, sizeof(*ev), cmp_ev);
	nends = steps_activity_ends(p, &ends);
	for (size_t i = 0; i < nev;) {
		uint32_t pid = ev[i].pid;
		size_t j = i, from = nst;
		bool was_in = false;
		for (; j < nev && ev[j].pid == pid; j++) {
			if (ev[j].in && !was_in) {
				if (nst > from)
					st[nst - 1].end = ev[j].t;
				steps_push(&st, &nst, &stcap, (struct steps_ev){ .pid = pid,
									 .t = ev[j].t });
			}
			was_in = ev[j].in;
		}
		if (nst > from) {
			uint64_t last = ev[j - 1].t + 1, gend = steps_activity_end(ends, nends, pid);
			st[nst - 1].end = gend > last ? gend : last;
			/* cut by --steps: the last step kept ends where the next one began */
			for (size_t w = 0; w < p->filtered.nstep_windows; w++)
				if (p->filtered.step_windows[w].pid == pid &&
				    p->filtered.step_windows[w].hi > st[nst - 1].end)
					st[nst - 1].end = p->filtered.step_windows[w].hi;
		}
		i = j;
	}
	if (nst) {
		steps_group(out, st, nst);
		out->source = STEPS_FUNCTION;
		snprintf(out->name, sizeof(out->name), "%s", spec);
	}
	CS_FREE_ALL(c.frame, c.stack, ev, st, ends);
	return nst;
}

int steps_detect(const struct profile *p, const char *spec, struct steps *out)
{
	memset(out, 0, sizeof(*out));
	if (steps_nvtx(p, spec, out))
		return 0;
	if (spec && *spec)
		steps_function(p, spec, out);
	return 0;
}

void steps_free(struct steps *s)
{
	if (!s)
		return;
	free(s->steps);
	free(s->procs);
	memset(s, 0, sizeof(*s));
}

const struct steps_proc *steps_of(const struct steps *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* ---- measuring ---- */

CS_CMP_FN(cmp_u64, uint64_t, CS_CMP(*a, *b))

uint64_t steps_percentile(uint64_t *v, size_t n, double q)
{
	if (!n)
		return 0;
	cs_qsort(v, n, sizeof(*v), cmp_u64);
	double r = q / 100.0 * (double)n;
	size_t k = (size_t)r;
	if ((double)k < r)
		k++;               /* ceil */
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

size_t steps_flag_warmup(struct steps_row *rows, size_t n)
{
	size_t k = 0;
	if (n < 3)
		return 0;
	uint64_t *v = cs_malloc(n * sizeof(*v));
	while (k < n / 2) {
		size_t m = n - k - 1;
		for (size_t i = 0; i < m; i++)
			v[i] = rows[k + 1 + i].wall_ns;
		uint64_t med = steps_percentile(v, m, 50);
		if (!((double)rows[k].wall_ns > 1.5 * (double)med))
			break;
		rows[k++].warmup = true;
	}
	free(v);
	return k;
}

/* Samples of one process, time-sorted, with prefix sums of python, native and off-CPU weight
 * (index i: the sums of samples before i). */
struct steps_cpu {
	uint32_t pid;
	size_t first, n;             /* into the shared arrays */
};

struct steps_mctx {
	const struct profile *p;
	uint8_t *cls;                /* per stack: 0 unknown, 1 python, 2 native */
	uint64_t *times;             /* sample times grouped by pid */
	uint64_t (*sum)[3];          /* prefix sums, one more per group */
	struct steps_cpu *cpu; size_t ncpu;
	struct steps_ev *busy; size_t nbusy;  /* disjoint device-work unions, by (pid, start) */
	uint64_t *busy_sum;          /* prefix sums of their lengths (nbusy + 1) */
	struct steps_ev *launches; size_t nlaunches; /* by (pid, time) */
};

static bool steps_interp_module(const struct profile *p, uint32_t module)
{
	if (module >= p->nmodules)
		return false;
	const char *path = profile_str(p, p->modules[module].path), *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

/* 1 python, 2 native: by the innermost frame outside the interpreter. */
static uint8_t steps_class(struct steps_mctx *c, uint32_t stack)
{
	const struct profile *p = c->p;
	if (stack >= p->nstacks)
		return 2;
	if (!c->cls[stack]) {
		const struct profile_stack *st = &p->stacks[stack];
		uint8_t k = 2;
		for (uint32_t i = 0; i < st->nframes; i++) {
			uint32_t id = p->stack_frames[st->first + i];
			if (id >= p->nframes)
				continue;
			const struct profile_frame *f = &p->frames[id];
			if (!(f->flags & PROFILE_FRAME_PYTHON) && steps_interp_module(p, f->module))
				continue;
			k = (f->flags & PROFILE_FRAME_PYTHON) ? 1 : 2;
			break;
		}
		c->cls[stack] = k;
	}
	return c->cls[stack];
}

struct steps_idx {
	uint32_t pid;
	uint32_t i;
};

static int cmp_idx(const void *x, const void *y)
{
	const struct steps_idx *a = x, *b = y;
	STEPS_CMP(a->pid, b->pid);
	STEPS_CMP(a->i, b->i);
	return 0;
}

static void steps_prepare_cpu(struct steps_mctx *c)
{
	const struct profile *p = c->p;
	size_t n = p->nsamples_records, ngroups = 0, gcap = 0;
	struct steps_idx *ix = cs_malloc((n + 1) * sizeof(*ix));

	for (size_t i = 0; i < n; i++)
		ix[i] = (struct steps_idx){ p->samples[i].pid, (uint32_t)i };
	cs_qsort(ix, n, sizeof(*ix), cmp_idx);
	/* one extra slot per group for the prefix sums: at most n + groups <= 2n */
	c->times = cs_calloc(2 * n + 2, sizeof(*c->times));
	c->sum = cs_calloc(2 * n + 2, sizeof(*c->sum));
	size_t sumpos = 0;
	for (size_t i = 0; i < n;) {
		uint32_t pid = ix[i].pid;
		size_t j = i;
		cs_grow(&c->cpu, &gcap, ngroups + 1, sizeof(*c->cpu));
		c->cpu[ngroups] = (struct steps_cpu){ .pid = pid, .first = sumpos, .n = 0 };
		uint64_t acc[3] = { 0, 0, 0 };
		for (; j < n && ix[j].pid == pid; j++) {
			const struct profile_sample *s = &p->samples[ix[j].i];
			memcpy(c->sum[sumpos + (j - i)], acc, sizeof(acc));
			c->times[sumpos + (j - i)] = s->time;
			int k = (s->flags & PROFILE_SAMPLE_OFFCPU) ? 2 : steps_class(c, s->stack) - 1;
			acc[k] += s->weight;
		}
		memcpy(c->sum[sumpos + (j - i)], acc, sizeof(acc));
		c->cpu[ngroups].n = j - i;
		sumpos += j - i + 1;
		ngroups++;
		i = j;
	}
	c->ncpu = ngroups;
	free(ix);
}

static void steps_prepare_gpu(struct steps_mctx *c)
{
	const struct profile *p = c->p;
	struct steps_ev *v = NULL;
	size_t n = 0, cap = 0, lcap = 0;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if ((a->kind == PROFILE_GPU_KERNEL || a->kind == PROFILE_GPU_MEMCPY ||
		     a->kind == PROFILE_GPU_MEMSET) && a->end > a->start)
			steps_push(&v, &n, &cap, (struct steps_ev){ .pid = a->pid, .t = a->start,
								    .end = a->end });
	}
	if (n)
		cs_qsort(v, n, sizeof(*v), cmp_ev);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && v[m - 1].pid == v[i].pid && v[i].t <= v[m - 1].end) {
			if (v[i].end > v[m - 1].end)
				v[m - 1].end = v[i].end;
		} else {
			v[m++] = v[i];
		}
	}
	c->busy = v;
	c->nbusy = m;
	c->busy_sum = cs_malloc((m + 1) * sizeof(*c->busy_sum));
	c->busy_sum[0] = 0;
	for (size_t i = 0; i < m; i++)
		c->busy_sum[i + 1] = c->busy_sum[i] + (v[i].end - v[i].t);

	for (size_t i = 0; i < p->ngpu_launches; i++)
		steps_push(&c->launches, &c->nlaunches, &lcap,
			   (struct steps_ev){ .pid = p->gpu_launches[i].pid,
					      .t = p->gpu_launches[i].time });
	if (c->nlaunches)
		cs_qsort(c->launches, c->nlaunches, sizeof(*c->launches), cmp_ev);
}

/* First index in v[0..n) sorted by (pid, t) at or after (pid, t). */
static size_t steps_lower(const struct steps_ev *v, size_t n, uint32_t pid, uint64_t t)
{
	return CS_LOWER_BOUND2(v, n, pid, pid, t, t);
}

/* First index of the sorted times[0..n) at or after t. */
static size_t steps_lower_time(const uint64_t *times, size_t n, uint64_t t)
{
	return cs_lower_bound_u64(times, n, t);
}

static uint64_t steps_busy_between(const struct steps_mctx *c, uint32_t pid, uint64_t t0,
				   uint64_t t1)
{
	/* the unions of pid are disjoint and sorted, so their ends are sorted too */
	size_t lo = steps_lower(c->busy, c->nbusy, pid, t0);
	if (lo > 0 && c->busy[lo - 1].pid == pid && c->busy[lo - 1].end > t0)
		lo--;
	size_t hi = steps_lower(c->busy, c->nbusy, pid, t1);
	if (hi <= lo)
		return 0;
	uint64_t ns = c->busy_sum[hi] - c->busy_sum[lo];
	if (c->busy[lo].t < t0)
		ns -= t0 - c->busy[lo].t;
	if (c->busy[hi - 1].end > t1)
		ns -= c->busy[hi - 1].end - t1;
	return ns;
}

static void steps_measure_proc(struct steps_mctx *c, const struct steps *s,
			       const struct steps_proc *sp, const struct gpu_idle *g,
			       uint64_t period_ns, uint32_t number_from, struct steps_table *t)
{
	const struct steps_cpu *cpu = NULL;
	for (size_t i = 0; i < c->ncpu; i++)
		if (c->cpu[i].pid == sp->pid)
			cpu = &c->cpu[i];
	t->pid = sp->pid;
	t->nrows = sp->n;
	t->rows = cs_calloc(sp->n + 1, sizeof(*t->rows));
	size_t b0 = steps_lower(c->busy, c->nbusy, sp->pid, 0);
	t->gpu = b0 < c->nbusy && c->busy[b0].pid == sp->pid;
	for (size_t k = 0; k < sp->n; k++) {
		const struct steps_step *st = &s->steps[sp->first + k];
		struct steps_row *r = &t->rows[k];
		r->step = number_from + (uint32_t)k;
		r->start = st->start;
		r->wall_ns = st->end > st->start ? st->end - st->start : 0;
		r->busy_ns = steps_busy_between(c, sp->pid, st->start, st->end);
		r->gpu_busy_pct = r->wall_ns ? 100.0 * (double)r->busy_ns / (double)r->wall_ns : 0;
		r->idle_stack = GPU_IDLE_NO_STACK;
		if (g)
			r->gpu_idle_ns = gpu_idle_between(c->p, g, sp->pid, st->start, st->end,
							  &r->idle_stack);
		if (cpu) {
			const uint64_t *times = c->times + cpu->first;
			size_t a = steps_lower_time(times, cpu->n, st->start);
			size_t b = steps_lower_time(times, cpu->n, st->end);
			const uint64_t *sa = c->sum[cpu->first + a], *sb = c->sum[cpu->first + b];
			r->python_ns = (sb[0] - sa[0]) * period_ns;
			r->native_ns = (sb[1] - sa[1]) * period_ns;
			r->offcpu_ns = (sb[2] - sa[2]) * period_ns;
			r->cpu_ns = r->python_ns + r->native_ns;
		}
		r->launches = steps_lower(c->launches, c->nlaunches, sp->pid, st->end) -
			      steps_lower(c->launches, c->nlaunches, sp->pid, st->start);
	}
	uint64_t *v = cs_malloc((sp->n + 1) * sizeof(*v));
	for (size_t k = 0; k < sp->n; k++)
		v[k] = t->rows[k].wall_ns;
	t->p50_ns = steps_percentile(v, sp->n, 50);
	t->p90_ns = steps_percentile(v, sp->n, 90);
	t->max_ns = sp->n ? v[sp->n - 1] : 0;
	free(v);
	t->nwarmup = steps_flag_warmup(t->rows, t->nrows);
	/* the slowest three outside warm-up (all rows when every one is warm-up) */
	for (size_t k = 0; k < t->nrows; k++) {
		const struct steps_row *r = &t->rows[k];
		if (r->warmup && t->nwarmup < t->nrows)
			continue;
		size_t pos = t->nslowest;
		while (pos > 0 && t->rows[t->slowest[pos - 1] - number_from].wall_ns < r->wall_ns)
			pos--;
		if (pos >= 3)
			continue;
		size_t end = t->nslowest < 3 ? t->nslowest : 2;
		memmove(&t->slowest[pos + 1], &t->slowest[pos], (end - pos) * sizeof(t->slowest[0]));
		t->slowest[pos] = r->step;
		if (t->nslowest < 3)
			t->nslowest++;
	}
}

int steps_measure(const struct profile *p, const struct steps *s, const struct gpu_idle *g,
		  uint64_t period_ns, uint32_t number_from, struct steps_table **out)
{
	struct steps_mctx c = { .p = p, .cls = cs_calloc(p->nstacks + 1, 1) };
	struct steps_table *t = cs_calloc(s->nprocs + 1, sizeof(*t));

	if (!number_from)
		number_from = 1;
	steps_prepare_cpu(&c);
	steps_prepare_gpu(&c);
	for (size_t i = 0; i < s->nprocs; i++)
		steps_measure_proc(&c, s, &s->procs[i], g, period_ns, number_from, &t[i]);
	CS_FREE_ALL(c.cls, c.times, c.sum, c.cpu, c.busy, c.busy_sum, c.launches);
	*out = t;
	return 0;
}

void steps_tables_free(struct steps_table *t, size_t n)
{
	if (!t)
		return;
	for (size_t i = 0; i < n; i++)
		free(t[i].rows);
	free(t);
}
