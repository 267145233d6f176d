/* compare.c: `csampler report --compare BASE NEW` (compare.h): the functions and threads of two
 * aggregated recordings matched, their change in share and in CPU time per second, with the
 * binomial noise floor, as text or JSON (every name escaped). Matching sorts both sides' rows
 * by key and merges them: one pass, no table. */
#include "analysis/compare.h"
#include "analysis/steps.h"
#include "analysis/report.h"
#include "analysis/fold_frame.h"
#include "base/cs.h"
#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One side's row before matching. */
struct compare_entry {
	const char *name, *library; /* library NULL for threads */
	int side;                   /* 0 base, 1 new */
	uint32_t flags;
	uint64_t count;
	char *owned;                /* thread labels: allocated here, handed over to the row */
};

static int compare_entry_cmp(const void *x, const void *y)
{
	const struct compare_entry *a = x, *b = y;
	int c = strcmp(a->name, b->name);
	if (!c && a->library && b->library)
		c = strcmp(a->library, b->library);
	return c ? c : a->side - b->side;
}

static int compare_row_cmp(const void *x, const void *y)
{
	const struct compare_row *a = x, *b = y;
	double da = fabs(a->change_pct), db = fabs(b->change_pct);
	return CS_CMP(db, da) ?: CS_CMP(b->new, a->new) ?: strcmp(a->name, b->name);
}

static double compare_pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

static double compare_seconds(const struct profile *p)
{
	return p->end_ns > p->start_ns ? (double)(p->end_ns - p->start_ns) / 1e9 : 0.0;
}

/* CPU milliseconds per second of recording that count samples stand for; NAN when the
 * sampling period or the duration is unknown. */
static double compare_ms_per_s(uint64_t count, uint64_t period_ns, double seconds)
{
	if (!period_ns || seconds <= 0)
		return NAN;
	return (double)count * (double)period_ns / 1e6 / seconds;
}

/* Twice the binomial standard error of the difference of two shares, in points. */
static double compare_noise(uint64_t a, uint64_t na, uint64_t b, uint64_t nb)
{
	double sa = na ? (double)a / (double)na : 0, sb = nb ? (double)b / (double)nb : 0;
	double var = (na ? sa * (1 - sa) / (double)na : 0) + (nb ? sb * (1 - sb) / (double)nb : 0);
	return 200.0 * sqrt(var);
}

/* Merge sorted entries into rows of c (functions or threads). */
static size_t compare_merge(struct compare_result *c, struct compare_entry *e, size_t n,
			    struct compare_row **out)
{
	struct compare_row *rows = cs_calloc(n + 1, sizeof(*rows));
	size_t nrows = 0;

	qsort(e, n, sizeof(*e), compare_entry_cmp);
	for (size_t i = 0; i < n; i++) {
		struct compare_row *row;
		if (nrows && e[i].side == 1 && i > 0 && e[i - 1].side == 0 &&
		    !strcmp(e[i - 1].name, e[i].name) &&
		    (!e[i].library || !strcmp(e[i - 1].library, e[i].library))) {
			row = &rows[nrows - 1]; /* new's half of the base row just made */
			free(e[i].owned);
		} else {
			row = &rows[nrows++];
			row->name = e[i].owned ? e[i].owned : e[i].name;
			row->library = e[i].library;
		}
		row->flags |= e[i].flags;
		if (e[i].side == 0)
			row->base = e[i].count;
		else
			row->new = e[i].count;
	}
	uint64_t nb = c->base.r->samples, nn = c->new.r->samples;
	for (size_t i = 0; i < nrows; i++) {
		struct compare_row *row = &rows[i];
		row->base_pct = compare_pct(row->base, nb);
		row->new_pct = compare_pct(row->new, nn);
		row->change_pct = row->new_pct - row->base_pct;
		row->noise_pct = compare_noise(row->base, nb, row->new, nn);
		row->base_ms = compare_ms_per_s(row->base, c->base_period_ns, c->base_s);
		row->new_ms = compare_ms_per_s(row->new, c->new_period_ns, c->new_s);
		row->change_ms = row->new_ms - row->base_ms;
	}
	qsort(rows, nrows, sizeof(*rows), compare_row_cmp);
	*out = rows;
	return nrows;
}

CS_CMP_FN(compare_thread_cmp, struct stacks_thread,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid))

/* The threads of side s as entries labelled by name (a thread never named takes its
 * process' name) and, from the second thread of that name on in (pid, tid) order, " #k". */
static size_t compare_thread_entries(const struct stacks_report *r, int side,
				     struct compare_entry *out)
{
	struct stacks_thread *t = cs_calloc(r->nthreads + 1, sizeof(*t));
	size_t n = 0;

	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].samples)
			t[n++] = r->threads[i];
	qsort(t, n, sizeof(*t), compare_thread_cmp);
	for (size_t i = 0; i < n; i++) {
		const char *comm = t[i].comm && *t[i].comm ? t[i].comm : NULL;
		for (size_t k = 0; !comm && k < r->nprocesses; k++)
			if (r->processes[k].pid == t[i].pid && r->processes[k].comm &&
			    *r->processes[k].comm)
				comm = r->processes[k].comm;
		if (!comm)
			comm = "(unnamed)";
		t[i].comm = comm;
		size_t ordinal = 1;
		for (size_t k = 0; k < i; k++)
			ordinal += !strcmp(t[k].comm, comm);
		char *label = ordinal > 1 ? cs_asprintf("%s #%zu", comm, ordinal) : cs_strdup(comm);
		out[i] = (struct compare_entry){ .name = label, .side = side, .count = t[i].samples,
						 .owned = label };
	}
	free(t);
	return n;
}

/* The step times of p's first process with steps. */
static void compare_steps_of(const struct profile *p, const char *spec, struct compare_steps *out)
{
	struct steps st;
	struct steps_table *t = NULL;
	memset(out, 0, sizeof(*out));
	if (steps_detect(p, spec, &st) < 0)
		return;
	if (st.source != STEPS_NONE && st.nprocs &&
	    !steps_measure(p, &st, NULL, fold_cpu_period_ns(p), 1, &t) && t[0].nrows) {
		out->n = t[0].nrows;
		out->p50_ns = t[0].p50_ns;
		out->p90_ns = t[0].p90_ns;
		uint64_t sum = 0;
		for (size_t i = 0; i < t[0].nrows; i++)
			sum += t[0].rows[i].wall_ns;
		out->mean_ns = sum / t[0].nrows;
		snprintf(out->source, sizeof(out->source), "%s:%s",
			 st.source == STEPS_NVTX ? "nvtx" : "function", st.name);
	}
	if (t)
		steps_tables_free(t, st.nprocs);
	steps_free(&st);
}

int compare_build(const struct compare_side *base, const struct compare_side *new,
		  enum stacks_sort basis, struct compare_result *out)
{
	struct compare_result *c = out;
	const struct compare_side *sides[2] = { base, new };

	memset(c, 0, sizeof(*c));
	if (!base->r->samples || !new->r->samples)
		return -ENODATA;
	c->base = *base;
	c->new = *new;
	c->basis = basis;
	c->base_s = compare_seconds(base->p);
	c->new_s = compare_seconds(new->p);
	c->base_period_ns = fold_cpu_period_ns(base->p);
	c->new_period_ns = fold_cpu_period_ns(new->p);

	size_t n = 0;
	struct compare_entry *e = cs_calloc(base->r->nfunctions + new->r->nfunctions + 1,
					    sizeof(*e));
	for (int s = 0; s < 2; s++) {
		const struct stacks_report *r = sides[s]->r;
		for (size_t i = 0; i < r->nfunctions; i++) {
			const struct stacks_function *fn = &r->functions[i];
			uint64_t count = basis == STACKS_SORT_TOTAL ? fn->total : fn->self;
			if (!count)
				continue;
			e[n++] = (struct compare_entry){
				.name = fn->name, .library = *fn->module ? cs_basename(fn->module) : "",
				.side = s, .flags = fn->frame_flags, .count = count };
		}
	}
	c->nfunctions = compare_merge(c, e, n, &c->functions);
	free(e);

	e = cs_calloc(base->r->nthreads + new->r->nthreads + 1, sizeof(*e));
	n = compare_thread_entries(base->r, 0, e);
	n += compare_thread_entries(new->r, 1, e + n);
	c->nthreads = compare_merge(c, e, n, &c->threads);
	free(e);
	compare_steps_of(base->p, base->step, &c->base_steps);
	compare_steps_of(new->p, new->step, &c->new_steps);
	return 0;
}

void compare_free(struct compare_result *c)
{
	for (size_t i = 0; i < c->nthreads; i++)
		free((char *)c->threads[i].name); /* thread labels are allocated */
	free(c->threads);
	free(c->functions);
	memset(c, 0, sizeof(*c));
}

/* ---- text ---- */

static double compare_change_pct(uint64_t base, uint64_t new)
{
	return base ? 100.0 * ((double)new - (double)base) / (double)base : 0;
}

static void compare_text_side(FILE *f, const char *label, const struct compare_side *s,
			      double seconds, uint64_t period_ns)
{
	fprintf(f, "# %s %s: %" PRIu64 " samples in %.3f s", label, s->input, s->r->samples,
		seconds);
	if (period_ns)
		fprintf(f, ", %.3f ms each", (double)period_ns / 1e6);
	fputc('\n', f);
}

static void compare_text_ms(FILE *f, double v, bool sign)
{
	if (isnan(v))
		fprintf(f, " %9s", "?");
	else
		fprintf(f, sign ? " %+9.1f" : " %9.1f", v);
}

static void compare_text_table(FILE *f, const char *title, const struct compare_row *rows,
			       size_t n, size_t limit, bool functions)
{
	size_t shown = limit && limit < n ? limit : n;
	int libw = 7;

	for (size_t i = 0; functions && i < shown; i++)
		if ((int)strlen(rows[i].library) > libw)
			libw = (int)strlen(rows[i].library);
	fprintf(f, "\n%s (%zu of %zu)\n", title, shown, n);
	fprintf(f, "%8s %8s %8s %6s %10s%10s%10s  ", "Base%", "New%", "Change", "Noise",
		"Base ms/s", "New ms/s", "Change");
	if (functions)
		fprintf(f, "%-*s Function\n", libw, "Library");
	else
		fprintf(f, "Thread\n");
	for (size_t i = 0; i < shown; i++) {
		const struct compare_row *r = &rows[i];
		bool noise = fabs(r->change_pct) < r->noise_pct;
		fprintf(f, "%7.2f%% %7.2f%% %+7.2f%c %6.2f ", r->base_pct, r->new_pct, r->change_pct,
			noise ? '~' : ' ', r->noise_pct);
		compare_text_ms(f, r->base_ms, false);
		compare_text_ms(f, r->new_ms, false);
		compare_text_ms(f, r->change_ms, true);
		if (functions)
			fprintf(f, "  %-*s %s %s\n", libw, *r->library ? r->library : "(unknown)",
				report_frame_marker(r->flags), r->name);
		else
			fprintf(f, "  %s\n", r->name);
	}
}

static void compare_write_text(FILE *f, const struct compare_result *c, size_t limit)
{
	const char *basis = c->basis == STACKS_SORT_TOTAL ? "total" : "self";
	uint64_t nb = c->base.r->samples, nn = c->new.r->samples;

	fprintf(f, "# csampler report --compare\n");
	compare_text_side(f, "base:", &c->base, c->base_s, c->base_period_ns);
	compare_text_side(f, "new: ", &c->new, c->new_s, c->new_period_ns);
	fprintf(f, "# change:  NEW's share minus BASE's, in points of each recording's samples (%s\n"
		"#          samples of each function), as `csampler diff` colours frames; ms/s: CPU\n"
		"#          milliseconds per second of the recording (samples x period / duration)\n",
		basis);
	fprintf(f, "# noise:   %.2f points at a 50%% share, %.2f at 10%%, %.2f at 1%% (the Noise\n"
		"#          column: twice the binomial standard error of the change, from the sample\n"
		"#          counts); '~' marks a change within it. A lower bound: samples of a periodic\n"
		"#          workload are not independent, so repeat a run to see its real spread\n",
		compare_noise(nb / 2, nb, nn / 2, nn), compare_noise(nb / 10, nb, nn / 10, nn),
		compare_noise(nb / 100, nb, nn / 100, nn));
	if (c->base_steps.n && c->new_steps.n) {
		const struct compare_steps *b = &c->base_steps, *n = &c->new_steps;
		fprintf(f, "\nStep time (%s)\n%8s %8s %11s %11s %11s\n", b->source, "", "Steps",
			"p50 ms", "p90 ms", "mean ms");
		fprintf(f, "%8s %8zu %11.3f %11.3f %11.3f\n", "base", b->n, b->p50_ns / 1e6,
			b->p90_ns / 1e6, b->mean_ns / 1e6);
		fprintf(f, "%8s %8zu %11.3f %11.3f %11.3f\n", "new", n->n, n->p50_ns / 1e6,
			n->p90_ns / 1e6, n->mean_ns / 1e6);
		fprintf(f, "%8s %8s %+10.1f%% %+10.1f%% %+10.1f%%\n", "change", "",
			compare_change_pct(b->p50_ns, n->p50_ns),
			compare_change_pct(b->p90_ns, n->p90_ns),
			compare_change_pct(b->mean_ns, n->mean_ns));
	} else if (c->base_steps.n || c->new_steps.n) {
		fprintf(f, "\n# steps: only %s has steps (give --step SPEC to find them in both)\n",
			c->base_steps.n ? "base" : "new");
	}
	compare_text_table(f, c->basis == STACKS_SORT_TOTAL ?
			   "Functions by change in total (inclusive) share" :
			   "Functions by change in self share",
			   c->functions, c->nfunctions, limit, true);
	compare_text_table(f, "Threads by change in share", c->threads, c->nthreads, limit, false);
}

/* ---- JSON (base/json.c: NaN, where a side has no samples, is written as null) ---- */

static void compare_json_side(struct json_writer *w, const char *key,
			      const struct compare_side *s, double seconds, uint64_t period_ns)
{
	json_object(w, key, JSON_INLINE);
	json_str(w, "input", s->input);
	json_u64(w, "samples", s->r->samples);
	json_double(w, "duration_s", seconds, 6);
	json_double(w, "period_ms", period_ns ? (double)period_ns / 1e6 : NAN, 6);
	json_end(w);
}

static void compare_json_rows(struct json_writer *w, const char *key,
			      const struct compare_row *rows, size_t n, size_t limit,
			      bool functions)
{
	size_t shown = limit && limit < n ? limit : n;

	json_array(w, key, JSON_ROWS | JSON_CLOSE_LINE);
	for (size_t i = 0; i < shown; i++) {
		const struct compare_row *r = &rows[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", r->name);
		if (functions) {
			json_str(w, "library", r->library);
			json_bool(w, "kernel", r->flags & PROFILE_FRAME_KERNEL);
			json_bool(w, "inlined", r->flags & PROFILE_FRAME_INLINED);
		}
		json_u64(w, "base_samples", r->base);
		json_u64(w, "new_samples", r->new);
		json_double(w, "base_pct", r->base_pct, 4);
		json_double(w, "new_pct", r->new_pct, 4);
		json_double(w, "change_pct", r->change_pct, 4);
		json_double(w, "noise_pct", r->noise_pct, 4);
		json_bool(w, "within_noise", fabs(r->change_pct) < r->noise_pct);
		json_double(w, "base_ms_per_s", r->base_ms, 3);
		json_double(w, "new_ms_per_s", r->new_ms, 3);
		json_double(w, "change_ms_per_s", r->change_ms, 3);
		json_end(w);
	}
	json_end(w);
}

static void compare_json_steps(struct json_writer *w, const struct compare_result *c)
{
	if (!c->base_steps.n && !c->new_steps.n) {
		json_null(w, "steps");
		return;
	}
	const struct compare_steps *sd[2] = { &c->base_steps, &c->new_steps };
	json_object(w, "steps", JSON_INLINE);
	for (int i = 0; i < 2; i++) {
		const char *side = i ? "new" : "base";
		if (!sd[i]->n) {
			json_null(w, side);
			continue;
		}
		json_object(w, side, JSON_INLINE);
		json_str(w, "source", sd[i]->source);
		json_u64(w, "steps", sd[i]->n);
		json_u64(w, "p50_ns", sd[i]->p50_ns);
		json_u64(w, "p90_ns", sd[i]->p90_ns);
		json_u64(w, "mean_ns", sd[i]->mean_ns);
		json_end(w);
	}
	bool both = c->base_steps.n && c->new_steps.n;
	json_double(w, "p50_change_pct",
		    both ? compare_change_pct(c->base_steps.p50_ns, c->new_steps.p50_ns) : NAN, 3);
	json_double(w, "mean_change_pct",
		    both ? compare_change_pct(c->base_steps.mean_ns, c->new_steps.mean_ns) : NAN, 3);
	json_end(w);
}

static void compare_write_json(FILE *f, const struct compare_result *c, size_t limit)
{
	struct json_writer jw, *w = &jw;
	json_init(w, f);
	json_object(w, NULL, JSON_INLINE);
	compare_json_side(w, "base", &c->base, c->base_s, c->base_period_ns);
	compare_json_side(w, "new", &c->new, c->new_s, c->new_period_ns);
	json_str(w, "basis", c->basis == STACKS_SORT_TOTAL ? "total" : "self");
	json_str(w, "change", "new_pct - base_pct, points of each recording's samples");
	json_str(w, "noise", "2 binomial standard errors of the change; a lower bound");
	json_u64(w, "nfunctions", c->nfunctions);
	json_u64(w, "nthreads", c->nthreads);
	json_break(w);
	compare_json_steps(w, c);
	json_break(w);
	compare_json_rows(w, "functions", c->functions, c->nfunctions, limit, true);
	json_break(w);
	compare_json_rows(w, "threads", c->threads, c->nthreads, limit, false);
	json_end(w);
	fputc('\n', f);
}

int compare_write(FILE *f, const struct compare_result *c, size_t limit, bool json)
{
	if (json)
		compare_write_json(f, c, limit);
	else
		compare_write_text(f, c, limit);
	return ferror(f) ? -EIO : 0;
}
