/* filter.c: the readers' shared filters (filter.h): the --time and --steps spec parsers, and
 * profile_filter_apply(), which narrows a loaded profile in place. The options that fill a
 * struct profile_filter are the commands' (cmd/opts_filter.c). */
#include "analysis/filter.h"
#include "analysis/steps.h"

#include "base/cs.h"
#include "base/search.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A number of seconds or percent: finite, not negative. */
static int filter_parse_num(const char *s, size_t len, double *out)
{
	char buf[64];
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (buf[0] == '+' || buf[0] == '-' || cs_parse_double(buf, out) < 0 || !isfinite(*out) ||
	    *out < 0)
		return -EINVAL;
	return 0;
}

/* One comma-separated percent item: "P%/N" or "A%-B%". */
static int filter_parse_pct(const char *s, size_t len, struct profile_time_range *r)
{
	const char *slash = memchr(s, '/', len), *dash = memchr(s, '-', len);
	double a, b;

	*r = (struct profile_time_range){ .pct = true, .lo_set = true, .hi_set = true };
	if (slash) {
		uint64_t n;
		char num[32];
		size_t nl = len - (size_t)(slash + 1 - s);
		if (slash == s || slash[-1] != '%' || filter_parse_num(s, (size_t)(slash - 1 - s), &a) ||
		    !nl || nl >= sizeof(num))
			return -EINVAL;
		memcpy(num, slash + 1, nl);
		num[nl] = 0;
		if (cs_parse_u64(num, &n) < 0 || n == 0 || !(a > 0) || a * (double)n > 100 + 1e-9)
			return -EINVAL;
		r->lo = a * (double)(n - 1);
		r->hi = a * (double)n;
		return 0;
	}
	if (dash) {
		size_t al = (size_t)(dash - s), bl = len - al - 1;
		if (al < 2 || bl < 2 || s[al - 1] != '%' || dash[bl] != '%' ||
		    filter_parse_num(s, al - 1, &a) || filter_parse_num(dash + 1, bl - 1, &b) ||
		    a > b || b > 100)
			return -EINVAL;
		r->lo = a;
		r->hi = b;
		return 0;
	}
	return -EINVAL;
}

int profile_filter_parse_time(struct profile_filter *f, const char *cmd, const char *value)
{
	size_t n = 0;

	if (strchr(value, '%')) {
		for (const char *s = value;;) {
			const char *comma = strchr(s, ',');
			size_t len = comma ? (size_t)(comma - s) : strlen(s);
			if (n == PROFILE_FILTER_MAX_RANGES)
				return cs_error(EINVAL, "%s: --time '%s': at most %d percent slices", cmd,
						value, PROFILE_FILTER_MAX_RANGES);
			if (filter_parse_pct(s, len, &f->ranges[n]) < 0)
				return cs_error(EINVAL, "%s: --time '%s': '%.*s' is neither a slice P%%/N "
						"(10%%/2: the 2nd tenth) nor a range A%%-B%% (0%%-10%%) "
						"within 100%%", cmd, value, (int)len, s);
			n++;
			if (!comma)
				break;
			s = comma + 1;
		}
	} else {
		const char *comma = strchr(value, ',');
		size_t al = comma ? (size_t)(comma - value) : strlen(value);
		struct profile_time_range *r = &f->ranges[n++];
		*r = (struct profile_time_range){ 0 };
		if ((comma && strchr(comma + 1, ',')) ||
		    (al && filter_parse_num(value, al, &r->lo) < 0) ||
		    (comma && comma[1] && filter_parse_num(comma + 1, strlen(comma + 1), &r->hi) < 0) ||
		    (!al && !comma))
			return cs_error(EINVAL, "%s: --time '%s': give START,END in seconds from the start "
					"of the recording (2.5,4 or 2.5, or ,4), or percent slices "
					"(10%%/2, 0%%-10%%)", cmd, value);
		r->lo_set = al > 0;
		r->hi_set = comma && comma[1];
		if (r->lo_set && r->hi_set && r->lo > r->hi)
			return cs_error(EINVAL, "%s: --time '%s': the start is after the end", cmd, value);
	}
	f->nranges = n;
	f->time = value;
	return 0;
}

int profile_filter_parse_steps(struct profile_filter *f, const char *cmd, const char *value)
{
	if (steps_parse_range(value, &f->steps_first, &f->steps_last) < 0)
		return cs_error(EINVAL, "%s: --steps '%s': give steps A-B, A or A- (1-based, as "
				"'report --steps' numbers them: 10-12, 5, 100-)", cmd, value);
	f->steps = value;
	return 0;
}

bool profile_filter_active(const struct profile_filter *f)
{
	return f && (f->pid >= 0 || f->tid >= 0 || f->rank >= 0 || f->comm || f->nranges ||
		     f->idle || f->steps);
}

/* ---- applying ---- */

struct filter_window {
	uint64_t lo, hi;    /* CLOCK_MONOTONIC ns */
	bool hi_open;       /* [lo, hi) rather than [lo, hi] */
};

#define filter_step_window profile_step_window /* --steps: one process' window [lo, hi) */

struct filter_ctx {
	struct profile *p;
	const struct profile_filter *f;
	struct filter_window w[PROFILE_FILTER_MAX_RANGES];
	size_t nw;
	struct filter_step_window *sw; /* by pid; NULL without --steps */
	size_t nsw;
	uint8_t *thread_pass;   /* by index into p->threads */
};

static uint64_t filter_at(uint64_t start, double ns)
{
	if (!(ns > 0))
		return start;
	if (ns >= (double)(UINT64_MAX - start))
		return UINT64_MAX;
	return start + (uint64_t)(ns + 0.5);
}

static void filter_windows(struct filter_ctx *c)
{
	const struct profile *p = c->p;
	double span = (double)(p->end_ns - p->start_ns);

	for (size_t i = 0; i < c->f->nranges; i++) {
		const struct profile_time_range *r = &c->f->ranges[i];
		struct filter_window *w = &c->w[c->nw++];
		if (r->pct) {
			w->lo = filter_at(p->start_ns, span * r->lo / 100);
			w->hi = r->hi >= 100 ? UINT64_MAX : filter_at(p->start_ns, span * r->hi / 100);
			w->hi_open = r->hi < 100;
		} else {
			w->lo = r->lo_set ? filter_at(p->start_ns, r->lo * 1e9) : 0;
			w->hi = r->hi_set ? filter_at(p->start_ns, r->hi * 1e9) : UINT64_MAX;
			w->hi_open = false;
		}
	}
}

static bool filter_step_time(const struct filter_ctx *c, uint32_t pid, uint64_t t)
{
	size_t lo = CS_LOWER_BOUND(c->sw, c->nsw, pid, pid);
	return lo < c->nsw && c->sw[lo].pid == pid && t >= c->sw[lo].lo && t < c->sw[lo].hi;
}

static bool filter_time(const struct filter_ctx *c, uint32_t pid, uint64_t t)
{
	if (c->f->steps && !filter_step_time(c, pid, t))
		return false;
	if (!c->nw)
		return true;
	for (size_t i = 0; i < c->nw; i++)
		if (t >= c->w[i].lo && (c->w[i].hi_open ? t < c->w[i].hi : t <= c->w[i].hi))
			return true;
	return false;
}

/* Index of thread (pid, tid) in p->threads (sorted by pid, tid), or -1. */
static ssize_t filter_thread(const struct profile *p, uint32_t pid, uint32_t tid)
{
	size_t lo = CS_LOWER_BOUND2(p->threads, p->nthreads, pid, pid, tid, tid);
	return lo < p->nthreads && p->threads[lo].pid == pid && p->threads[lo].tid == tid
		? (ssize_t)lo : -1;
}

/* Whether task (pid, tid) passes the identity filters (pid, tid, rank, comm). A thread unknown
 * to p->threads (GPU records of a thread without samples) is named by its process. */
static bool filter_task(const struct filter_ctx *c, uint32_t pid, uint32_t tid)
{
	const struct profile_filter *f = c->f;
	const struct profile *p = c->p;

	if (f->pid >= 0 && (int64_t)pid != f->pid)
		return false;
	if (f->tid >= 0 && (int64_t)tid != f->tid)
		return false;
	if (f->rank >= 0 && profile_rank_of(p, pid) != f->rank)
		return false;
	if (f->comm) {
		const struct profile_process *pr = profile_process_of(p, pid);
		ssize_t t = filter_thread(p, pid, tid);
		bool named = (pr && !strcmp(profile_str(p, pr->comm), f->comm)) ||
			     (t >= 0 && !strcmp(profile_str(p, p->threads[t].comm), f->comm));
		if (!named)
			return false;
	}
	return true;
}

/* Like filter_task for a whole process (GPU info and notes): any of its threads may pass. */
static bool filter_pid(const struct filter_ctx *c, uint32_t pid)
{
	const struct profile_filter *f = c->f;
	if (f->tid < 0 && !f->comm)
		return filter_task(c, pid, pid);
	for (size_t i = 0; i < c->p->nthreads; i++)
		if (c->p->threads[i].pid == pid && c->thread_pass[i])
			return true;
	return f->tid < 0 && filter_task(c, pid, pid);
}

static void filter_samples(struct filter_ctx *c)
{
	struct profile *p = c->p;
	size_t n = 0;

	p->nsamples = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		p->threads[i].samples = 0;
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		ssize_t t = filter_thread(p, s->pid, s->tid);
		bool pass = t >= 0 ? c->thread_pass[t] : filter_task(c, s->pid, s->tid);
		if (!pass || !filter_time(c, s->pid, s->time))
			continue;
		if (c->f->idle && (c->f->idle == PROFILE_FILTER_IDLE_OFFCPU) !=
				      !!(s->flags & PROFILE_SAMPLE_OFFCPU))
			continue;
		if (t >= 0)
			p->threads[t].samples += s->weight;
		p->nsamples += s->weight;
		p->samples[n++] = *s;
	}
	p->nsamples_records = n;

	/* threads and processes that fail the identity filters go; those that pass stay, with
	 * the samples of the window (GPU records may name them) */
	size_t nt = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		if (c->thread_pass[i])
			p->threads[nt++] = p->threads[i];
	p->nthreads = nt;
	size_t np = 0;
	for (size_t i = 0; i < p->nprocesses; i++) {
		struct profile_process pr = p->processes[i];
		bool keep = false;
		pr.samples = 0;
		for (size_t k = 0; k < p->nthreads; k++)
			if (p->threads[k].pid == pr.pid) {
				pr.samples += p->threads[k].samples;
				keep = true;
			}
		if (keep)
			p->processes[np++] = pr;
	}
	p->nprocesses = np;
}

static uint32_t filter_gpu_tid(const struct profile *p, const struct profile_gpu_activity *a)
{
	if (a->tid)
		return a->tid;
	if (a->launch != PROFILE_GPU_NO_LAUNCH)
		return p->gpu_launches[a->launch].tid;
	return a->pid;
}

static void filter_gpu(struct filter_ctx *c)
{
	struct profile *p = c->p;
	uint32_t *remap = p->ngpu_launches ? cs_malloc(p->ngpu_launches * sizeof(*remap)) : NULL;
	uint8_t *keep = p->ngpu_launches ? cs_calloc(p->ngpu_launches, 1) : NULL;
	size_t n;

	/* activities first: they decide which launches stay besides those that pass themselves */
	n = 0;
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (!filter_task(c, a->pid, filter_gpu_tid(p, a)) || !filter_time(c, a->pid, a->start))
			continue;
		if (a->launch != PROFILE_GPU_NO_LAUNCH)
			keep[a->launch] = 1;
		if (a->node_launch != PROFILE_GPU_NO_LAUNCH)
			keep[a->node_launch] = 1;
		p->gpu_activities[n++] = *a;
	}
	p->ngpu_activities = n;
	n = 0;
	for (size_t i = 0; i < p->ngpu_launches; i++) {
		const struct profile_gpu_launch *g = &p->gpu_launches[i];
		if (!keep[i] && (!filter_task(c, g->pid, g->tid) || !filter_time(c, g->pid, g->time))) {
			remap[i] = PROFILE_GPU_NO_LAUNCH;
			continue;
		}
		remap[i] = (uint32_t)n;
		p->gpu_launches[n++] = *g;
	}
	p->ngpu_launches = n;
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->launch != PROFILE_GPU_NO_LAUNCH)
			a->launch = remap[a->launch];
		if (a->node_launch != PROFILE_GPU_NO_LAUNCH)
			a->node_launch = remap[a->node_launch];
	}
	free(remap);
	free(keep);

	n = 0;
	for (size_t i = 0; i < p->ngpu_processes; i++)
		if (filter_pid(c, p->gpu_processes[i].pid))
			p->gpu_processes[n++] = p->gpu_processes[i];
	p->ngpu_processes = n;
	n = 0;
	for (size_t i = 0; i < p->ngpu_notes; i++)
		if (filter_pid(c, p->gpu_notes[i].pid))
			p->gpu_notes[n++] = p->gpu_notes[i];
	p->ngpu_notes = n;
}

static char *filter_describe(const struct profile_filter *f)
{
	struct cs_buf b = { 0 };
	if (f->pid >= 0)
		cs_buf_printf(&b, "%spid %" PRId64, b.len ? ", " : "", f->pid);
	if (f->tid >= 0)
		cs_buf_printf(&b, "%stid %" PRId64, b.len ? ", " : "", f->tid);
	if (f->comm)
		cs_buf_printf(&b, "%scomm '%s'", b.len ? ", " : "", f->comm);
	if (f->rank >= 0)
		cs_buf_printf(&b, "%srank %" PRId64, b.len ? ", " : "", f->rank);
	if (f->nranges)
		cs_buf_printf(&b, "%stime %s", b.len ? ", " : "", f->time ? f->time : "?");
	if (f->steps)
		cs_buf_printf(&b, "%ssteps %s", b.len ? ", " : "", f->steps);
	if (f->idle)
		cs_buf_printf(&b, "%s%s", b.len ? ", " : "",
			      f->idle == PROFILE_FILTER_IDLE_OFFCPU ? "off-CPU only (--idle)"
								    : "on-CPU only (--no-idle)");
	cs_buf_put(&b, "", 1);
	return b.data;
}

/* A process' step window: its own steps, else its nearest ancestor's (a DataLoader worker
 * takes its trainer's), else those of the only process with steps. */
static const struct steps_proc *filter_steps_of(const struct profile *p, const struct steps *s,
						uint32_t pid)
{
	for (int depth = 0; depth < 64; depth++) {
		const struct steps_proc *sp = steps_of(s, pid);
		if (sp)
			return sp;
		const struct profile_process *pr = profile_process_of(p, pid);
		if (!pr || !pr->ppid || pr->ppid == pid)
			break;
		pid = pr->ppid;
	}
	return s->nprocs == 1 ? &s->procs[0] : NULL;
}

static void filter_add_step_window(struct filter_ctx *c, size_t *cap, uint32_t pid,
				   const struct steps *s, const struct steps_proc *sp)
{
	const struct profile_filter *f = c->f;
	if (!sp || f->steps_first > sp->n)
		return;
	size_t last = f->steps_last > sp->n ? sp->n : f->steps_last;
	for (size_t i = 0; i < c->nsw; i++)
		if (c->sw[i].pid == pid)
			return;
	cs_grow(&c->sw, cap, c->nsw + 1, sizeof(*c->sw));
	c->sw[c->nsw++] = (struct filter_step_window){ .pid = pid,
		.lo = s->steps[sp->first + f->steps_first - 1].start,
		.hi = s->steps[sp->first + last - 1].end };
}

CS_CMP_FN(cmp_step_window, struct filter_step_window, a->pid < b->pid ? -1 : a->pid > b->pid)

/* --steps: find the steps (on the whole file) and each process' window. */
static int filter_steps(struct filter_ctx *c, const char *name)
{
	const struct profile_filter *f = c->f;
	struct profile *p = c->p;
	struct steps s;
	size_t cap = 0, most = 0;

	steps_detect(p, f->step, &s);
	if (s.source == STEPS_NONE) {
		steps_free(&s);
		if (f->step)
			return cs_error(EINVAL, "%s: --steps %s: no steps: no NVTX range named '%s', and "
					"no call of a function '%s' on a main thread", name, f->steps,
					f->step, f->step);
		return cs_error(EINVAL, "%s: --steps %s: no steps: the file has no NVTX range named "
				"step or iteration; give --step FUNCTION or --step RANGE", name,
				f->steps);
	}
	for (size_t i = 0; i < s.nprocs; i++)
		most = s.procs[i].n > most ? s.procs[i].n : most;
	if (f->steps_first > most || (f->steps_last != UINT32_MAX && f->steps_last > most)) {
		cs_error(EINVAL, "%s: --steps %s: out of range: the file has %zu step%s (1 to %zu, "
			 "from %s %s)", name, f->steps, most, most == 1 ? "" : "s", most,
			 s.source == STEPS_NVTX ? "NVTX ranges" : "function", s.name);
		steps_free(&s);
		return -EINVAL;
	}
	for (size_t i = 0; i < s.nprocs; i++)
		filter_add_step_window(c, &cap, s.procs[i].pid, &s, &s.procs[i]);
	for (size_t i = 0; i < p->nprocesses; i++)
		filter_add_step_window(c, &cap, p->processes[i].pid, &s,
				       filter_steps_of(p, &s, p->processes[i].pid));
	/* GPU records of pids without a process entry */
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		uint32_t pid = p->gpu_activities[i].pid;
		if (i && pid == p->gpu_activities[i - 1].pid)
			continue;
		filter_add_step_window(c, &cap, pid, &s, filter_steps_of(p, &s, pid));
	}
	if (c->nsw)
		cs_qsort(c->sw, c->nsw, sizeof(*c->sw), cmp_step_window);
	steps_free(&s);
	return 0;
}

int profile_filter_apply(struct profile *p, const struct profile_filter *f, const char *name)
{
	struct filter_ctx c = { .p = p, .f = f };
	uint64_t before = p->nsamples;
	size_t gpu_before = p->ngpu_activities;

	if (f && f->step && !p->filtered.step)
		p->filtered.step = cs_strdup(f->step);
	if (!profile_filter_active(f))
		return 0;
	if (f->steps) {
		int err = filter_steps(&c, name);
		if (err < 0)
			return err;
	}
	filter_windows(&c);
	c.thread_pass = cs_malloc(p->nthreads + 1);
	for (size_t i = 0; i < p->nthreads; i++)
		c.thread_pass[i] = filter_task(&c, p->threads[i].pid, p->threads[i].tid);
	/* GPU first: it looks threads up by index before the samples' pass drops some */
	filter_gpu(&c);
	filter_samples(&c);
	free(c.thread_pass);

	/* the window within the recording becomes the profile's span (rates, utilisation) */
	if (c.nw) {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (size_t i = 0; i < c.nw; i++) {
			lo = c.w[i].lo < lo ? c.w[i].lo : lo;
			hi = c.w[i].hi > hi ? c.w[i].hi : hi;
		}
		if (lo > p->start_ns && lo <= p->end_ns)
			p->start_ns = lo;
		else if (lo > p->end_ns)
			p->start_ns = p->end_ns;
		if (hi < p->end_ns)
			p->end_ns = hi < p->start_ns ? p->start_ns : hi;
	}
	if (c.nsw) {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (size_t i = 0; i < c.nsw; i++) {
			lo = c.sw[i].lo < lo ? c.sw[i].lo : lo;
			hi = c.sw[i].hi > hi ? c.sw[i].hi : hi;
		}
		if (lo > p->start_ns)
			p->start_ns = lo < p->end_ns ? lo : p->end_ns;
		if (hi < p->end_ns)
			p->end_ns = hi < p->start_ns ? p->start_ns : hi;
	}
	char *step = p->filtered.step;
	p->filtered.step = NULL;
	struct profile_filtered *d = &p->filtered;
	free(d->text);
	free(d->comm);
	free(d->time);
	free(d->steps);
	free(d->step_windows);
	*d = (struct profile_filtered){
		.text = filter_describe(f), .pid = f->pid, .tid = f->tid, .rank = f->rank,
		.comm = f->comm ? cs_strdup(f->comm) : NULL,
		.time = f->nranges && f->time ? cs_strdup(f->time) : NULL, .nsamples = before,
		.idle = f->idle, .step = step, .steps = f->steps ? cs_strdup(f->steps) : NULL,
		.step_first = f->steps ? f->steps_first : 0, .step_windows = c.sw,
		.nstep_windows = c.nsw };
	if ((before || gpu_before) && !p->nsamples && !p->ngpu_activities)
		cs_warn("%s: nothing passes the filter (%s): %llu samples, %zu GPU activities in the "
			"file", name, d->text, (unsigned long long)before, gpu_before);
	return 0;
}

int profile_load_filtered(const char *path, const struct profile_filter *f,
			  struct profile **out)
{
	int err = profile_load(path, out);
	if (err < 0)
		return err;
	err = profile_filter_apply(*out, f, path);
	if (err < 0) {
		profile_free(*out);
		*out = NULL;
	}
	return err;
}
