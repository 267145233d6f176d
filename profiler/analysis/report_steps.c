/* report_steps.c: report's step and rank tables (report_steps.h), text and JSON. The figures
 * come from steps.c and gpu_idle.c; this file only chooses rows and formats them. */
#include "analysis/report_steps.h"

#include "analysis/fold_frame.h"
#include "analysis/gpu_idle.h"
#include "analysis/steps.h"
#include "base/cs.h"
#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct rs_ctx {
	const struct profile *p;
	struct steps s;
	struct gpu_idle g;
	bool have_g;
	struct steps_table *t;       /* s.nprocs of them */
	uint64_t period_ns;
};

static void rs_init(struct rs_ctx *c, const struct profile *p)
{
	memset(c, 0, sizeof(*c));
	c->p = p;
	c->period_ns = fold_cpu_period_ns(p);
	steps_detect(p, p->filtered.step, &c->s);
	if (c->s.source == STEPS_NONE)
		return;
	if (p->ngpu_activities) {
		gpu_idle_analyze(p, -1, &c->g);
		c->have_g = true;
	}
	steps_measure(p, &c->s, c->have_g ? &c->g : NULL, c->period_ns, p->filtered.step_first,
		      &c->t);
}

static void rs_free(struct rs_ctx *c)
{
	steps_tables_free(c->t, c->s.nprocs);
	steps_free(&c->s);
	if (c->have_g)
		gpu_idle_free(&c->g);
}

static const char *rs_source_kind(const struct steps *s)
{
	return s->source == STEPS_NVTX ? "nvtx" : "function";
}

static double rs_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static const char *rs_comm(const struct profile *p, uint32_t pid)
{
	const struct profile_process *pr = profile_process_of(p, pid);
	const char *c = pr ? profile_str(p, pr->comm) : "";
	return *c ? c : "?";
}

/* "leaf" or "leaf (py: fn (file.py:12))" for a stack, "-" for none. */
static const char *rs_cause(const struct profile *p, uint32_t stack, char *buf, size_t len)
{
	char py[256];
	if (stack == GPU_IDLE_NO_STACK) {
		snprintf(buf, len, "-");
		return buf;
	}
	const char *leaf = gpu_idle_leaf(p, stack, py, sizeof(py));
	if (*py)
		snprintf(buf, len, "%s (py: %s)", leaf, py);
	else
		snprintf(buf, len, "%s", leaf);
	return buf;
}

/* ---- text ---- */

static void rs_text_summary(FILE *f, const struct steps_table *t)
{
	fprintf(f, "  wall: p50 %.3f ms, p90 %.3f ms, max %.3f ms\n", rs_ms(t->p50_ns),
		rs_ms(t->p90_ns), rs_ms(t->max_ns));
	if (t->nslowest) {
		fprintf(f, "  slowest%s:", t->nwarmup ? " (after warm-up)" : "");
		for (size_t i = 0; i < t->nslowest; i++) {
			const struct steps_row *r = &t->rows[t->slowest[i] - t->rows[0].step];
			fprintf(f, "%s step %u (%.3f ms)", i ? "," : "", r->step, rs_ms(r->wall_ns));
		}
		fputc('\n', f);
	}
	if (t->nwarmup == 1)
		fprintf(f, "  warm-up: step %u (more than 1.5x the median of the steps after it)\n",
			t->rows[0].step);
	else if (t->nwarmup)
		fprintf(f, "  warm-up: steps %u-%u (each more than 1.5x the median of the steps "
			"after it)\n", t->rows[0].step, t->rows[t->nwarmup - 1].step);
}

static void rs_text_title(FILE *f, const struct rs_ctx *c, const struct steps_table *t)
{
	fprintf(f, "\nSteps of pid %u (%s), from %s %s: %zu step%s\n", t->pid,
		rs_comm(c->p, t->pid), c->s.source == STEPS_NVTX ? "NVTX ranges" : "function",
		c->s.name, t->nrows, t->nrows == 1 ? "" : "s");
}

static void rs_text_table(FILE *f, const struct rs_ctx *c, const struct steps_table *t)
{
	const struct profile *p = c->p;
	char cause[512], busy[16], idle[24];

	rs_text_title(f, c, t);
	fprintf(f, "%6s %9s %10s %8s %9s %9s %9s %9s %9s %8s  %s\n", "Step", "Start s", "Wall ms",
		"GPU busy", "Idle ms", "CPU ms", "Python", "Native", "Off-CPU", "Launches",
		t->gpu ? "Note; GPU idle cause" : "Note");
	for (size_t i = 0; i < t->nrows; i++) {
		const struct steps_row *r = &t->rows[i];
		const char *note = r->warmup ? "warm-up" : "";
		for (size_t k = 0; k < t->nslowest; k++)
			if (t->slowest[k] == r->step)
				note = k == 0 ? "slowest" : "slow";
		if (t->gpu) {
			snprintf(busy, sizeof(busy), "%.1f%%", r->gpu_busy_pct);
			snprintf(idle, sizeof(idle), "%.3f", rs_ms(r->gpu_idle_ns));
		} else {
			snprintf(busy, sizeof(busy), "-");
			snprintf(idle, sizeof(idle), "-");
		}
		const char *why = t->gpu ? rs_cause(p, r->idle_stack, cause, sizeof(cause)) : "";
		fprintf(f, "%6u %9.3f %10.3f %8s %9s %9.3f %9.3f %9.3f %9.3f %8" PRIu64 "%s%s%s%s\n",
			r->step, r->start > p->start_ns ? (double)(r->start - p->start_ns) / 1e9 : 0.0,
			rs_ms(r->wall_ns), busy, idle, rs_ms(r->cpu_ns), rs_ms(r->python_ns),
			rs_ms(r->native_ns), rs_ms(r->offcpu_ns), r->launches,
			*note || *why ? "  " : "", note, *note && *why ? "; " : "", why);
	}
	rs_text_summary(f, t);
}

/* ---- JSON ---- */

static void rs_json_cause(struct json_writer *w, const char *key, const struct profile *p,
			  uint32_t stack)
{
	char py[256];
	if (stack == GPU_IDLE_NO_STACK) {
		json_null(w, key);
		return;
	}
	const char *leaf = gpu_idle_leaf(p, stack, py, sizeof(py));
	json_object(w, key, JSON_INLINE);
	json_str(w, "leaf", leaf);
	json_str(w, "python", *py ? py : NULL);
	json_end(w);
}

static const struct json_field rs_json_step_times[] = {
	JSON_FIELD(struct steps_row, wall_ns), JSON_FIELD_DOUBLE(struct steps_row, gpu_busy_pct, 4),
	JSON_FIELD(struct steps_row, gpu_idle_ns),
};

static const struct json_field rs_json_step_split[] = {
	JSON_FIELD(struct steps_row, cpu_ns), JSON_FIELD(struct steps_row, python_ns),
	JSON_FIELD(struct steps_row, native_ns), JSON_FIELD(struct steps_row, offcpu_ns),
	JSON_FIELD(struct steps_row, launches), JSON_FIELD(struct steps_row, warmup),
};

/* A row of a process' step table; arg: the profile. */
static void rs_json_step(struct json_writer *w, const void *row, const void *arg)
{
	const struct steps_row *r = row;
	const struct profile *p = arg;
	json_u64(w, "step", r->step);
	json_u64(w, "start_ns", r->start > p->start_ns ? r->start - p->start_ns : 0);
	JSON_FIELDS(w, r, rs_json_step_times);
	rs_json_cause(w, "idle_cause", p, r->idle_stack);
	JSON_FIELDS(w, r, rs_json_step_split);
}

static const struct json_field rs_json_table_spread[] = {
	JSON_FIELD(struct steps_table, p50_ns), JSON_FIELD(struct steps_table, p90_ns),
	JSON_FIELD(struct steps_table, max_ns),
};

static void rs_json_table(struct json_writer *w, const char *key, const struct rs_ctx *c,
			  const struct steps_table *t)
{
	const struct profile *p = c->p;
	char source[300];

	snprintf(source, sizeof(source), "%s:%s", rs_source_kind(&c->s), c->s.name);
	json_object(w, key, JSON_INLINE);
	json_str(w, "source", source);
	json_u64(w, "pid", t->pid);
	json_str(w, "comm", rs_comm(p, t->pid));
	json_bool(w, "gpu", t->gpu);
	JSON_ROWS_EACH(w, "steps", JSON_ROWS, t->rows, t->nrows, rs_json_step, p);
	JSON_FIELDS(w, t, rs_json_table_spread);
	json_array(w, "slowest", JSON_INLINE);
	for (size_t i = 0; i < t->nslowest; i++)
		json_u64(w, NULL, t->slowest[i]);
	json_end(w);
	json_array(w, "warmup", JSON_INLINE);
	for (size_t i = 0; i < t->nwarmup; i++)
		json_u64(w, NULL, t->rows[i].step);
	json_end(w);
	json_end(w);
}

/* "steps": OBJ (the first process) or null, "steps_processes": [OBJ...], each on a new line. */
static void rs_json_keys(struct json_writer *w, const struct rs_ctx *c)
{
	if (c->s.nprocs)
		rs_json_table(w, "steps", c, &c->t[0]);
	else
		json_null(w, "steps");
	json_break(w);
	json_array(w, "steps_processes", JSON_INLINE);
	for (size_t i = 0; i < c->s.nprocs; i++) {
		if (i)
			json_break(w);
		rs_json_table(w, NULL, c, &c->t[i]);
	}
	json_end(w);
	json_break(w);
}

int report_steps_write(FILE *f, const struct profile *p, const struct report_opts *o)
{
	struct rs_ctx c;
	rs_init(&c, p);
	if (c.s.source == STEPS_NONE) {
		rs_free(&c);
		return -ENOENT;
	}
	if (o->format == REPORT_JSON) {
		struct json_writer w;
		json_init(&w, f);
		json_object(&w, NULL, JSON_INLINE);
		rs_json_keys(&w, &c);
		json_str(&w, "file", o->input);
		json_end(&w);
		fputc('\n', f);
	} else {
		fprintf(f, "# csampler report --steps: %s", o->input);
		if (p->filtered.text)
			fprintf(f, " (filter: %s)", p->filtered.text);
		fputc('\n', f);
		fprintf(f, "# CPU ms: samples x %.3f ms over all threads of the process; Python: "
			"on-CPU samples whose innermost frame\n#   outside the interpreter is a Python "
			"frame; Native: the other on-CPU samples; Off-CPU: record --idle samples\n",
			rs_ms(c.period_ns));
		for (size_t i = 0; i < c.s.nprocs; i++)
			rs_text_table(f, &c, &c.t[i]);
	}
	rs_free(&c);
	return ferror(f) ? -EIO : 0;
}

void report_steps_section_text(FILE *f, const struct profile *p, const struct report_opts *o)
{
	struct rs_ctx c;
	(void)o;
	rs_init(&c, p);
	for (size_t i = 0; i < c.s.nprocs; i++) {
		rs_text_title(f, &c, &c.t[i]);
		rs_text_summary(f, &c.t[i]);
	}
	if (c.s.nprocs)
		fprintf(f, "  (csampler report --steps for the table)\n");
	rs_free(&c);
}

void report_steps_section_json(struct json_writer *w, const struct profile *p,
			       const struct report_opts *o)
{
	struct rs_ctx c;
	(void)o;
	rs_init(&c, p);
	if (c.s.nprocs)
		rs_json_keys(w, &c);
	rs_free(&c);
}

/* ---- ranks ---- */

struct rs_rank {
	int32_t rank;
	uint32_t pid;                /* its main process: the one with steps, else most samples */
	uint64_t samples;            /* weights of all its processes' samples */
	uint64_t first, last;        /* its samples' span */
	const struct steps_table *t; /* its steps, or NULL */
	uint64_t busy_ns, wall_ns, idle_ns;
	uint32_t idle_stack;
	double per;                  /* divisor of its function times: steps, or seconds */
};

CS_CMP_FN(cmp_rank, struct rs_rank, CS_CMP(a->rank, b->rank))

CS_CMP_FN(cmp_double, double, CS_CMP(*a, *b))

/* Nearest-rank median (the lower one of an even count). */
static double rs_median(double *v, size_t n)
{
	if (!n)
		return 0;
	cs_qsort(v, n, sizeof(*v), cmp_double);
	return v[(n + 1) / 2 - 1];
}

struct rs_fn {
	uint32_t name;
	double ns, median_ns, excess_ns;
};

/* What report --ranks found: the ranks, the straggler and where it spends more. */
struct rs_ranks {
	struct rs_rank *rk;
	size_t nr, cap;
	bool with_steps;           /* some rank has steps: step p50s compared, else CPU time */
	struct steps_table *wt;    /* each rank's main process measured as one step */
	struct steps whole;        /* the steps of wt */
	size_t s;                  /* the straggler's index */
	double median;             /* the median rank's step p50 (with steps) or samples */
	struct rs_fn fns[5];
	size_t nfns;
};

CS_CMP_FN(cmp_fn_excess, struct rs_fn,
	CS_CMP(b->excess_ns, a->excess_ns) ?: CS_CMP(a->name, b->name))

static size_t rs_rank_index(const struct rs_rank *r, size_t n, int32_t rank)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].rank == rank)
			return i;
	return n;
}

#define RS_CANDIDATES 32
#define RS_COVER 0.9

/* Inclusive times make every caller of a slow function as slow: main and _start always top
 * the excess. Keep the top 5 of fns[0..n) (by excess) that are not covered: a function is
 * covered by another when the other runs under it in at least RS_COVER of its own samples of
 * the straggler (w: its weights per stack) and has at least RS_COVER of its excess. */
static size_t rs_uncovered(const struct profile *p, const uint64_t *w, const struct rs_fn *fns,
			   size_t n, struct rs_fn *out)
{
	double under[RS_CANDIDATES][RS_CANDIDATES] = { { 0 } }, total[RS_CANDIDATES] = { 0 };
	int pos[RS_CANDIDATES];
	size_t nout = 0;

	for (size_t k = 0; k < p->nstacks; k++) {
		if (!w[k])
			continue;
		const struct profile_stack *st = &p->stacks[k];
		for (size_t a = 0; a < n; a++)
			pos[a] = -1;
		/* frames leaf first: the outermost occurrence is the last one seen */
		for (uint32_t j = 0; j < st->nframes; j++) {
			uint32_t id = p->stack_frames[st->first + j];
			if (id >= p->nframes)
				continue;
			for (size_t a = 0; a < n; a++)
				if (fns[a].name == p->frames[id].name)
					pos[a] = (int)(st->nframes - j); /* depth from the root */
		}
		for (size_t a = 0; a < n; a++) {
			if (pos[a] < 0)
				continue;
			total[a] += (double)w[k];
			for (size_t b = 0; b < n; b++)
				if (pos[b] >= 0 && pos[b] < pos[a])
					under[a][b] += (double)w[k]; /* a runs under b */
		}
	}
	for (size_t b = 0; b < n && nout < 5; b++) {
		bool covered = false;
		for (size_t a = 0; a < n && !covered; a++)
			covered = a != b && total[a] > 0 && under[a][b] >= RS_COVER * total[a] &&
				  fns[a].excess_ns >= RS_COVER * fns[b].excess_ns;
		if (!covered)
			out[nout++] = fns[b];
	}
	return nout;
}

/* The functions where rank s spends more inclusive CPU ns (per step, or per second) than the
 * median rank: the top 5 into out. */
struct rs_triple {
	uint32_t rank, stack;        /* rank: index into the ranks */
	uint64_t weight;
};

CS_CMP_FN(cmp_triple, struct rs_triple, CS_CMP(a->rank, b->rank) ?: CS_CMP(a->stack, b->stack))

static size_t rs_excess(const struct profile *p, const struct rs_rank *rk, size_t nr, size_t s,
			uint64_t period_ns, struct rs_fn *out)
{
	/* weights per (rank, stack): sorted and summed, so memory follows what the file holds,
	 * not ranks x stacks */
	struct rs_triple *tr = cs_malloc((p->nsamples_records + 1) * sizeof(*tr));
	size_t nt = 0;
	uint32_t last_pid = UINT32_MAX;
	size_t last_r = nr;
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *sm = &p->samples[i];
		if (sm->pid != last_pid) {
			last_pid = sm->pid;
			last_r = rs_rank_index(rk, nr, profile_rank_of(p, sm->pid));
		}
		if (last_r < nr && sm->stack < p->nstacks)
			tr[nt++] = (struct rs_triple){ (uint32_t)last_r, sm->stack, sm->weight };
	}
	if (nt)
		cs_qsort(tr, nt, sizeof(*tr), cmp_triple);
	size_t m = 0;
	for (size_t i = 0; i < nt; i++) {
		if (m && tr[m - 1].rank == tr[i].rank && tr[m - 1].stack == tr[i].stack)
			tr[m - 1].weight += tr[i].weight;
		else
			tr[m++] = tr[i];
	}
	/* functions by name: dense indexes of the names frames use */
	uint32_t *dense = cs_malloc((p->nstrings + 1) * sizeof(*dense));
	uint32_t *names = cs_malloc((p->nframes + 1) * sizeof(*names));
	size_t nn = 0;
	memset(dense, 0xff, (p->nstrings + 1) * sizeof(*dense));
	for (size_t i = 0; i < p->nframes; i++) {
		uint32_t name = p->frames[i].name;
		if (name < p->nstrings && dense[name] == UINT32_MAX) {
			dense[name] = (uint32_t)nn;
			names[nn++] = name;
		}
	}
	double *acc = cs_calloc(nr * nn + 1, sizeof(*acc));
	uint32_t *stamp = cs_calloc(nn + 1, sizeof(*stamp));
	uint64_t *ws = cs_calloc(p->nstacks + 1, sizeof(*ws)); /* the straggler's, per stack */
	double *vals = cs_malloc((nr + 1) * sizeof(*vals));
	struct rs_fn *fns = NULL;
	size_t nfns = 0, cap = 0, nout;
	uint32_t mark = 0;

	for (size_t i = 0; i < m; i++) {
		const struct profile_stack *st = &p->stacks[tr[i].stack];
		if (tr[i].rank == s)
			ws[tr[i].stack] = tr[i].weight;
		mark++;
		for (uint32_t j = 0; j < st->nframes; j++) {
			uint32_t id = p->stack_frames[st->first + j];
			if (id >= p->nframes || p->frames[id].name >= p->nstrings)
				continue;
			uint32_t d = dense[p->frames[id].name];
			if (stamp[d] == mark)
				continue;  /* once per sample, even when it recurses */
			stamp[d] = mark;
			acc[tr[i].rank * nn + d] += (double)tr[i].weight * (double)period_ns;
		}
	}
	for (size_t d = 0; d < nn; d++) {
		double mine = acc[s * nn + d] / rk[s].per;
		if (!(mine > 0) || !*profile_str(p, names[d]))
			continue;
		for (size_t r = 0; r < nr; r++)
			vals[r] = acc[r * nn + d] / rk[r].per;
		double med = rs_median(vals, nr);
		if (!(mine > med))
			continue;
		*CS_PUSH(fns, nfns, cap) = (struct rs_fn){ names[d], mine, med, mine - med };
	}
	if (nfns)
		cs_qsort(fns, nfns, sizeof(*fns), cmp_fn_excess);
	nout = rs_uncovered(p, ws, fns, nfns < RS_CANDIDATES ? nfns : RS_CANDIDATES, out);
	free(fns);
	free(tr);
	free(dense);
	free(names);
	free(acc);
	free(stamp);
	free(ws);
	free(vals);
	return nout;
}

/* report --ranks --format json: the rank table, the straggler and its excess functions. */
static void rs_ranks_json(FILE *f, const struct rs_ctx *c, const struct rs_ranks *R)
{
	const struct profile *p = c->p;
	const struct rs_rank *rk = R->rk;
	const struct rs_fn *fns = R->fns;
	size_t nr = R->nr, s = R->s, nfns = R->nfns;
	bool with_steps = R->with_steps;
	double median = R->median;
	struct json_writer jw, *w = &jw;

	json_init(w, f);
	json_object(w, NULL, JSON_INLINE);
	json_object(w, "ranks", JSON_INLINE);
	if (with_steps) {
		char source[300];
		snprintf(source, sizeof(source), "%s:%s", rs_source_kind(&c->s), c->s.name);
		json_str(w, "source", source);
	} else {
		json_null(w, "source");
	}
	json_array(w, "ranks", JSON_ROWS);
	for (size_t k = 0; k < nr; k++) {
		const struct rs_rank *r = &rk[k];
		json_object(w, NULL, JSON_INLINE);
		json_i64(w, "rank", r->rank);
		json_u64(w, "pid", r->pid);
		json_u64(w, "steps", r->t ? r->t->nrows : 0);
		if (r->t) {
			json_u64(w, "step_p50_ns", r->t->p50_ns);
			json_u64(w, "step_p90_ns", r->t->p90_ns);
		} else {
			json_null(w, "step_p50_ns");
			json_null(w, "step_p90_ns");
		}
		json_u64(w, "cpu_ns", r->samples * c->period_ns);
		json_u64(w, "wall_ns", r->wall_ns);
		json_double(w, "gpu_busy_pct",
			    r->wall_ns ? 100.0 * (double)r->busy_ns / (double)r->wall_ns : 0, 4);
		json_u64(w, "gpu_idle_ns", r->idle_ns);
		rs_json_cause(w, "idle_cause", p, r->idle_stack);
		json_end(w);
	}
	json_end(w);
	json_break(w);
	json_object(w, "straggler", JSON_INLINE);
	json_i64(w, "rank", rk[s].rank);
	json_str(w, "by", with_steps ? "step_p50" : "cpu_time");
	if (with_steps) {
		json_u64(w, "step_p50_ns", rk[s].t->p50_ns);
		json_double(w, "median_step_p50_ns", median, 0);
	} else {
		json_null(w, "step_p50_ns");
		json_null(w, "median_step_p50_ns");
		json_u64(w, "cpu_ns", rk[s].samples * c->period_ns);
		json_double(w, "median_cpu_ns", median * (double)c->period_ns, 0);
	}
	json_str(w, "basis", with_steps ? "per_step" : "per_second");
	json_array(w, "functions", JSON_ROWS);
	for (size_t i = 0; i < nfns; i++) {
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", profile_str(p, fns[i].name));
		json_double(w, "ns", fns[i].ns, 0);
		json_double(w, "median_ns", fns[i].median_ns, 0);
		json_double(w, "excess_ns", fns[i].excess_ns, 0);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	json_end(w);
	json_end(w);
	fputc('\n', f);
}

/* The ranks of p's processes, each with its main process (the one with the most samples) and
 * its samples' weight and span. Returns false when p has fewer than two ranks. */
static bool rs_ranks_gather(const struct profile *p, struct rs_ranks *R)
{
	for (size_t i = 0; i < p->nprocesses; i++) {
		const struct profile_process *pr = &p->processes[i];
		int32_t rank = profile_rank_of(p, pr->pid);
		if (rank < 0)
			continue;
		size_t k = rs_rank_index(R->rk, R->nr, rank);
		if (k == R->nr) {
			*CS_PUSH(R->rk, R->nr, R->cap) = (struct rs_rank){
				.rank = rank, .pid = pr->pid, .first = UINT64_MAX,
				.idle_stack = GPU_IDLE_NO_STACK };
		} else if (pr->samples > profile_process_of(p, R->rk[k].pid)->samples) {
			R->rk[k].pid = pr->pid;
		}
	}
	if (R->nr < 2)
		return false;
	cs_qsort(R->rk, R->nr, sizeof(*R->rk), cmp_rank);
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *sm = &p->samples[i];
		size_t k = rs_rank_index(R->rk, R->nr, profile_rank_of(p, sm->pid));
		if (k == R->nr)
			continue;
		struct rs_rank *r = &R->rk[k];
		r->samples += sm->weight;
		r->first = sm->time < r->first ? sm->time : r->first;
		r->last = sm->time > r->last ? sm->time : r->last;
	}
	return true;
}

/* Each rank's steps (its process with the most), and its main process measured as one step
 * over its steps or its samples' span: GPU busy, wall and idle time. */
static void rs_ranks_measure(const struct rs_ctx *c, struct rs_ranks *R)
{
	const struct profile *p = c->p;
	struct rs_rank *rk = R->rk;
	size_t nr = R->nr;
	for (size_t k = 0; k < nr; k++) {
		for (size_t i = 0; i < c->s.nprocs; i++)
			if (profile_rank_of(p, c->t[i].pid) == rk[k].rank &&
			    (!rk[k].t || c->t[i].nrows > rk[k].t->nrows))
				rk[k].t = &c->t[i];
		if (rk[k].t) {
			rk[k].pid = rk[k].t->pid;
			R->with_steps = true;
		}
	}
	struct steps *whole = &R->whole;
	whole->source = STEPS_FUNCTION;
	whole->steps = cs_calloc(nr + 1, sizeof(*whole->steps));
	whole->procs = cs_calloc(nr + 1, sizeof(*whole->procs));
	for (size_t k = 0; k < nr; k++) {
		const struct steps_table *t = rk[k].t;
		uint64_t a = t && t->nrows ? t->rows[0].start : rk[k].first;
		uint64_t b = t && t->nrows ? t->rows[t->nrows - 1].start + t->rows[t->nrows - 1].wall_ns
					   : rk[k].last + 1;
		if (a == UINT64_MAX)
			a = b = 0;
		whole->steps[whole->nsteps] = (struct steps_step){ a, b };
		whole->procs[whole->nprocs++] = (struct steps_proc){ rk[k].pid, whole->nsteps++, 1 };
	}
	steps_measure(p, whole, c->have_g ? &c->g : NULL, c->period_ns, 1, &R->wt);
	for (size_t k = 0; k < nr; k++) {
		const struct steps_row *r = &R->wt[k].rows[0];
		rk[k].busy_ns = r->busy_ns;
		rk[k].wall_ns = r->wall_ns;
		rk[k].idle_ns = r->gpu_idle_ns;
		rk[k].idle_stack = r->idle_stack;
		if (R->with_steps)
			rk[k].per = rk[k].t && rk[k].t->nrows ? (double)rk[k].t->nrows : 1;
		else
			rk[k].per = rk[k].last > rk[k].first ? (double)(rk[k].last - rk[k].first) / 1e9
							     : 1;
	}
}

/* The straggler: the slowest step p50 (with steps) or the most CPU time, against the median
 * rank; and the functions where it spends more than the median. */
static void rs_ranks_straggler(const struct rs_ctx *c, struct rs_ranks *R)
{
	const struct rs_rank *rk = R->rk;
	size_t s = 0, nv = 0;
	double *v = cs_malloc((R->nr + 1) * sizeof(*v));
	for (size_t k = 0; k < R->nr; k++) {
		if (R->with_steps) {
			if (!rk[k].t)
				continue;
			v[nv++] = (double)rk[k].t->p50_ns;
			if (!rk[s].t || rk[k].t->p50_ns > rk[s].t->p50_ns)
				s = k;
		} else {
			v[nv++] = (double)rk[k].samples;
			if (rk[k].samples > rk[s].samples)
				s = k;
		}
	}
	R->s = s;
	R->median = rs_median(v, nv);
	free(v);
	R->nfns = rs_excess(c->p, R->rk, R->nr, s, c->period_ns, R->fns);
}

static void rs_ranks_text(FILE *f, const struct rs_ctx *c, const struct report_opts *o,
			  const struct rs_ranks *R)
{
	const struct profile *p = c->p;
	const struct rs_rank *rk = R->rk;
	size_t s = R->s;
	double median = R->median;
	char cause[512];

	fprintf(f, "# csampler report --ranks: %s", o->input);
	if (p->filtered.text)
		fprintf(f, " (filter: %s)", p->filtered.text);
	fputc('\n', f);
	if (R->with_steps)
		fprintf(f, "\nRanks (%zu; steps from %s %s)\n", R->nr,
			c->s.source == STEPS_NVTX ? "NVTX ranges" : "function", c->s.name);
	else
		fprintf(f, "\nRanks (%zu; no steps: give --step FUNCTION or --step RANGE)\n", R->nr);
	fprintf(f, "%6s %8s %6s %12s %12s %10s %8s %10s  %s\n", "Rank", "PID", "Steps",
		"Step p50 ms", "Step p90 ms", "CPU ms", "GPU busy", "Idle ms", "GPU idle cause");
	for (size_t k = 0; k < R->nr; k++) {
		const struct rs_rank *r = &rk[k];
		bool gpu = R->wt[k].gpu;
		char p50[32] = "-", p90[32] = "-", busy[16] = "-", idle[24] = "-";
		if (r->t) {
			snprintf(p50, sizeof(p50), "%.3f", rs_ms(r->t->p50_ns));
			snprintf(p90, sizeof(p90), "%.3f", rs_ms(r->t->p90_ns));
		}
		if (gpu) {
			snprintf(busy, sizeof(busy), "%.1f%%", r->wall_ns ? 100.0 *
				 (double)r->busy_ns / (double)r->wall_ns : 0);
			snprintf(idle, sizeof(idle), "%.3f", rs_ms(r->idle_ns));
		}
		fprintf(f, "%6d %8u %6zu %12s %12s %10.3f %8s %10s%s%s\n", (int)r->rank, r->pid,
			r->t ? r->t->nrows : 0, p50, p90, rs_ms(r->samples * c->period_ns), busy,
			idle, gpu ? "  " : "", gpu ? rs_cause(p, r->idle_stack, cause, sizeof(cause)) : "");
	}
	if (R->with_steps)
		fprintf(f, "\nStraggler: rank %d, step p50 %.3f ms against a median of %.3f ms "
			"over ranks (%+.1f%%)\n", (int)rk[s].rank, rs_ms(rk[s].t->p50_ns),
			median / 1e6, median > 0 ? 100.0 * ((double)rk[s].t->p50_ns - median) /
			median : 0);
	else
		fprintf(f, "\nStraggler: rank %d, the most CPU time: %.3f ms against a median "
			"of %.3f ms over ranks\n", (int)rk[s].rank,
			rs_ms(rk[s].samples * c->period_ns), median * (double)c->period_ns / 1e6);
	fprintf(f, "Where it spends more than the median rank (inclusive CPU ms %s)\n",
		R->with_steps ? "per step" : "per second of its wall time");
	fprintf(f, "%10s %10s %10s  %s\n", "Straggler", "Median", "Excess", "Function");
	for (size_t i = 0; i < R->nfns; i++)
		fprintf(f, "%10.3f %10.3f %+10.3f  %s\n", R->fns[i].ns / 1e6,
			R->fns[i].median_ns / 1e6, R->fns[i].excess_ns / 1e6,
			profile_str(p, R->fns[i].name));
	if (!R->nfns)
		fprintf(f, "  (none)\n");
}

int report_ranks_write(FILE *f, const struct profile *p, const struct report_opts *o)
{
	struct rs_ctx c;
	struct rs_ranks R = { 0 };

	if (!rs_ranks_gather(p, &R)) {
		free(R.rk);
		return -ENOENT;
	}
	rs_init(&c, p);
	rs_ranks_measure(&c, &R);
	rs_ranks_straggler(&c, &R);
	if (o->format == REPORT_JSON)
		rs_ranks_json(f, &c, &R);
	else
		rs_ranks_text(f, &c, o, &R);
	steps_tables_free(R.wt, R.whole.nprocs);
	steps_free(&R.whole);
	rs_free(&c);
	free(R.rk);
	return ferror(f) ? -EIO : 0;
}
