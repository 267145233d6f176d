/* report_json.c: `csampler report --format json`: the aggregated profile (stacks.c), the GPU
 * tables (gpu.c) and the steps (report_steps.c) written through base/json.c's writer, which
 * places the commas and escapes every name. Computes nothing; report_text.c is its text twin. */
#include "analysis/report_common.h"
#include "analysis/report_steps.h"
#include "analysis/filter.h"

#include "base/cs.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

/* Arrays of one object a line: "[\n  {...},\n  {...}\n]", "[\n]" when empty. */
#define REPORT_JSON_TABLE (JSON_ROWS | JSON_CLOSE_LINE | JSON_EMPTY_LINE)

static void report_json_library(struct json_writer *w, const struct stacks_library *l)
{
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "path", l->path);
	json_str(w, "name", report_library_name(l->path));
	json_u64(w, "self", l->self);
	json_u64(w, "total", l->total);
	json_bool(w, "no_cfi", l->flags & PROFILE_MODULE_NO_CFI);
	json_bool(w, "no_symbols", l->flags & PROFILE_MODULE_NO_SYMBOLS);
	json_bool(w, "no_debuginfo", l->flags & PROFILE_MODULE_NO_DEBUGINFO);
	json_end(w);
}

static void report_json_line(struct json_writer *w, uint32_t line)
{
	if (line)
		json_u64(w, "line", line);
	else
		json_null(w, "line");
}

static void report_json_functions(struct json_writer *w, const struct stacks_report *r,
				  const struct report_opts *o)
{
	size_t rows = report_rows(r->nfunctions, o);

	json_array(w, "functions", REPORT_JSON_TABLE);
	for (size_t i = 0; i < rows; i++) {
		const struct stacks_function *fn = &r->functions[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", fn->name);
		json_str(w, "library", fn->module);
		json_u64(w, "self", fn->self);
		json_u64(w, "total", fn->total);
		json_double(w, "self_pct", report_pct(fn->self, r->samples), 2);
		json_double(w, "total_pct", report_pct(fn->total, r->samples), 2);
		json_bool(w, "kernel", fn->frame_flags & PROFILE_FRAME_KERNEL);
		json_bool(w, "inlined", fn->frame_flags & PROFILE_FRAME_INLINED);
		json_bool(w, "jit", fn->frame_flags & PROFILE_FRAME_JIT);
		json_str(w, "file", fn->hot_file);
		report_json_line(w, fn->hot_line);
		json_u64(w, "line_samples", fn->hot_samples);
		json_end(w);
	}
	json_end(w);
	json_break(w);
}

/* "python": the Python function table (see report_text_python), null without Python frames. */
static void report_json_python(struct json_writer *w, const struct stacks_report *r,
			       const struct report_opts *o)
{
	if (!r->python_samples) {
		json_null(w, "python");
		json_break(w);
		return;
	}
	struct stacks_function *fns;
	size_t n = stacks_python_functions(r, o->sort, &fns);
	size_t rows = report_rows(n, o);
	json_object(w, "python", JSON_INLINE);
	json_u64(w, "samples", r->python_samples);
	json_array(w, "functions", REPORT_JSON_TABLE);
	for (size_t i = 0; i < rows; i++) {
		const struct stacks_function *fn = &fns[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", fn->name);
		json_str(w, "file", fn->hot_file);
		report_json_line(w, fn->hot_line);
		json_u64(w, "self", fn->python_self);
		json_u64(w, "total", fn->total);
		json_double(w, "self_pct", report_pct(fn->python_self, r->samples), 2);
		json_double(w, "total_pct", report_pct(fn->total, r->samples), 2);
		json_u64(w, "line_samples", fn->hot_samples);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	json_break(w);
	free(fns);
}

static void report_json_breakdowns(struct json_writer *w, const struct profile *p,
				   const struct stacks_report *r)
{
	json_array(w, "processes", REPORT_JSON_TABLE);
	for (size_t i = 0; i < r->nprocesses; i++) {
		const struct stacks_process *pr = &r->processes[i];
		const struct profile_process *pp = profile_process_of(p, pr->pid);
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", pr->pid);
		json_str(w, "comm", pr->comm);
		json_u64(w, "samples", pr->samples);
		if (pp && pp->rank >= 0) /* the recording's rank (merged files: per process) */
			json_i64(w, "rank", pp->rank);
		else
			json_null(w, "rank");
		json_str(w, "host", pp && pp->host ? profile_str(p, pp->host) : NULL);
		json_u64(w, "orig_pid", pp ? pp->orig_pid : pr->pid);
		json_end(w);
	}
	json_end(w);
	json_break(w);

	json_array(w, "threads", REPORT_JSON_TABLE);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct stacks_thread *t = &r->threads[i];
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", t->pid);
		json_u64(w, "tid", t->tid);
		json_str(w, "comm", t->comm);
		json_u64(w, "samples", t->samples);
		json_end(w);
	}
	json_end(w);
	json_break(w);

	json_array(w, "libraries", REPORT_JSON_TABLE);
	for (size_t i = 0; i < r->nlibraries; i++)
		report_json_library(w, &r->libraries[i]);
	json_end(w);
	json_break(w);
}

/* A number, or null when it is 0 (unknown). */
static void report_json_u64_or_null(struct json_writer *w, const char *key, uint64_t v)
{
	if (v)
		json_u64(w, key, v);
	else
		json_null(w, key);
}

static void report_json_unwind(struct json_writer *w, const struct stacks_report *r)
{
	const struct stacks_unwind *u = &r->unwind;

	json_object(w, "unwind", JSON_INLINE);
	json_double(w, "complete_pct", u->complete_pct, 2);
	json_u64(w, "complete", u->complete);
	json_u64(w, "empty", u->empty);
	json_u64(w, "unwind_errors", u->unwind_errors);
	json_u64(w, "stack_full", u->stack_full);
	json_u64(w, "python_unread", u->python_unread);
	json_u64(w, "python_changed", u->python_changed);
	report_json_u64_or_null(w, "stack_size", u->stack_size);
	report_json_u64_or_null(w, "suggested_stack_size", u->suggested_stack_size);
	json_break(w);
	const struct stacks_stop_causes *c = &u->causes;
	json_object(w, "causes", JSON_INLINE);
	json_u64(w, "stack_short", c->stack_short);
	json_u64(w, "anon_no_cfi", c->anon_no_cfi);
	json_u64(w, "file_no_cfi", c->file_no_cfi);
	json_u64(w, "no_map", c->no_map);
	json_u64(w, "error", c->error);
	json_u64(w, "other", c->other);
	json_end(w);
	json_break(w);
	if (u->frames_known) {
		json_object(w, "frames", JSON_INLINE);
		json_u64(w, "cfi", u->frames_cfi);
		json_u64(w, "fp", u->frames_fp);
		json_u64(w, "scan", u->frames_scan);
		json_end(w);
	} else {
		json_null(w, "frames");
	}
	json_break(w);
	json_array(w, "lacking", JSON_ROWS);
	for (size_t i = 0; i < u->nlacking; i++)
		report_json_library(w, &u->lacking[i]);
	json_end(w);
	json_break(w);
	json_array(w, "stops", JSON_ROWS);
	for (size_t i = 0; i < u->nstops; i++) {
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", u->stops[i].name);
		json_str(w, "library", u->stops[i].module);
		json_u64(w, "samples", u->stops[i].samples);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	json_break(w);
}

/* The call path as a JSON array of frame names, leaf first; null without a launch record. */
static void report_json_path(struct json_writer *w, const char *key, const struct profile *p,
			     uint32_t stack)
{
	if (stack >= p->nstacks) {
		json_null(w, key);
		return;
	}
	const struct profile_stack *st = &p->stacks[stack];
	json_array(w, key, JSON_INLINE);
	for (uint32_t i = 0; i < st->nframes; i++) {
		uint32_t fr = p->stack_frames[st->first + i];
		json_str(w, NULL, fr < p->nframes ? profile_str(p, p->frames[fr].name) : "?");
	}
	json_end(w);
}

static void report_json_utils(struct json_writer *w, const char *key, const struct gpu_util *u,
			      size_t n)
{
	json_array(w, key, REPORT_JSON_TABLE);
	for (size_t i = 0; i < n; i++, u++) {
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", u->pid);
		json_u64(w, "device", u->device);
		if (u->stream != GPU_ALL_STREAMS) {
			json_u64(w, "context", u->context);
			json_u64(w, "stream", u->stream);
		}
		json_u64(w, "busy_ns", u->busy_ns);
		json_u64(w, "work_ns", u->work_ns);
		json_u64(w, "window_ns", u->window_ns);
		json_u64(w, "items", u->items);
		json_double(w, "percent", u->percent, 4);
		json_end(w);
	}
	json_end(w);
	json_break(w);
}

static void report_json_gpu_idle(struct json_writer *w, const struct profile *p,
				 const struct gpu_analysis *g, const struct report_opts *o)
{
	const struct gpu_idle *d = &g->idle;
	char py[256];
	json_object(w, "idle", JSON_INLINE);
	json_u64(w, "idle_ns", d->idle_ns);
	json_u64(w, "sampled_ns", d->sampled_ns);
	json_u64(w, "intervals", d->nintervals);
	json_u64(w, "samples", d->weight);
	json_object(w, "classes", JSON_INLINE);
	for (uint32_t k = 0; k < GPU_IDLE_NCLASSES; k++) {
		json_object(w, gpu_idle_class_name(k), JSON_INLINE);
		json_u64(w, "samples", d->class_weight[k]);
		json_double(w, "idle_ns", d->class_ns[k], 0);
		json_end(w);
	}
	json_end(w);
	json_break(w);
	json_array(w, "stacks", JSON_ROWS);
	size_t rows = report_rows(d->nstacks, o);
	for (size_t i = 0; i < rows; i++) {
		const struct gpu_idle_stack *st = &d->stacks[i];
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", st->pid);
		json_str(w, "class", gpu_idle_class_name(st->cls));
		json_u64(w, "samples", st->samples);
		json_double(w, "idle_ns", st->idle_ns, 0);
		json_double(w, "percent", st->percent, 4);
		json_str(w, "leaf", gpu_idle_leaf(p, st->stack, py, sizeof(py)));
		json_str(w, "python", py);
		report_json_path(w, "stack", p, st->stack);
		json_end(w);
	}
	json_end(w);
	json_end(w);
}

static void report_json_gpu_tables(struct json_writer *w, const struct gpu_analysis *g,
				   const struct report_opts *o)
{
	size_t rows = report_rows(g->nkernels, o);
	json_array(w, "kernels", REPORT_JSON_TABLE);
	for (size_t i = 0; i < rows; i++) {
		const struct gpu_kernel_stat *k = &g->kernels_by_time[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", k->name);
		json_str(w, "mangled", k->mangled);
		json_u64(w, "calls", k->calls);
		json_u64(w, "total_ns", k->total_ns);
		json_u64(w, "avg_ns", k->avg_ns);
		json_u64(w, "min_ns", k->min_ns);
		json_u64(w, "max_ns", k->max_ns);
		json_double(w, "percent", k->percent, 4);
		json_end(w);
	}
	json_end(w);
	json_break(w);
	json_array(w, "copies", REPORT_JSON_TABLE);
	for (size_t i = 0; i < g->ncopies; i++) {
		const struct gpu_copy_stat *c = &g->copies[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "kind", profile_gpu_kind_name(c->kind));
		json_str(w, "direction", c->direction);
		json_u64(w, "calls", c->calls);
		json_u64(w, "bytes", c->bytes);
		json_u64(w, "total_ns", c->total_ns);
		json_double(w, "gb_per_s", c->gb_per_s, 6);
		json_end(w);
	}
	json_end(w);
	json_break(w);
	report_json_utils(w, "devices", g->devices, g->ndevices);
	report_json_utils(w, "streams", g->streams, g->nstreams);
}

static void report_json_gpu_sync(struct json_writer *w, const struct gpu_analysis *g)
{
	json_object(w, "sync", JSON_INLINE);
	json_u64(w, "blocked_ns", g->blocked_ns);
	json_u64(w, "waits", g->sync_waits);
	json_array(w, "threads", JSON_ROWS);
	for (size_t i = 0; i < g->nsync_threads; i++) {
		const struct gpu_sync_thread *t = &g->sync_threads[i];
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", t->pid);
		json_u64(w, "tid", t->tid);
		json_u64(w, "waits", t->waits);
		json_u64(w, "blocked_ns", t->blocked_ns);
		json_end(w);
	}
	json_end(w);
	json_break(w);
	json_array(w, "waited_for", JSON_ROWS);
	for (size_t i = 0; i < g->nblames; i++) {
		const struct gpu_blame *b = &g->blames[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", b->name);
		json_u64(w, "waits", b->waits);
		json_u64(w, "wait_ns", b->wait_ns);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	json_break(w);
}

static void report_json_gpu_latency(struct json_writer *w, const struct profile *p,
				    const struct gpu_analysis *g)
{
	const struct gpu_latency *L = &g->latency;
	json_object(w, "latency", JSON_INLINE);
	json_u64(w, "count", L->count);
	json_u64(w, "from_queued", L->from_queued);
	json_u64(w, "total_ns", L->total_ns);
	json_u64(w, "avg_ns", L->count ? L->total_ns / L->count : 0);
	json_u64(w, "min_ns", L->min_ns);
	json_u64(w, "median_ns", L->median_ns);
	json_u64(w, "p95_ns", L->p95_ns);
	json_u64(w, "max_ns", L->max_ns);
	json_array(w, "longest", JSON_ROWS);
	for (size_t i = 0; i < L->ntop; i++) {
		const struct gpu_waiter *wt = &L->top[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", wt->name);
		json_u64(w, "pid", wt->pid);
		json_u64(w, "tid", wt->tid);
		json_u64(w, "latency_ns", wt->latency_ns);
		json_bool(w, "from_queued", wt->from_queued);
		report_json_path(w, "stack", p, wt->stack);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	json_break(w);
}

static void report_json_gpu_sites(struct json_writer *w, const struct profile *p,
				  const struct gpu_analysis *g, const struct report_opts *o)
{
	size_t rows = report_rows(g->nsites, o);
	json_array(w, "launch_sites", JSON_ROWS);
	for (size_t i = 0; i < rows; i++) {
		const struct gpu_site *s = &g->sites[i];
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", s->pid);
		json_u64(w, "calls", s->calls);
		json_u64(w, "gpu_ns", s->gpu_ns);
		json_double(w, "percent", s->percent, 4);
		report_json_path(w, "stack", p, s->stack);
		json_end(w);
	}
	json_end(w);
	json_break(w);

	json_array(w, "nvtx", JSON_ROWS);
	for (size_t i = 0; i < g->nranges; i++) {
		const struct gpu_range *r = &g->ranges[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", r->name);
		json_u64(w, "count", r->count);
		json_u64(w, "total_ns", r->total_ns);
		json_u64(w, "min_ns", r->min_ns);
		json_u64(w, "max_ns", r->max_ns);
		json_u64(w, "marks", r->marks);
		json_end(w);
	}
	json_end(w);
	json_break(w);
}

static void report_json_gpu_cause(struct json_writer *w, const struct profile *p,
				  const struct gpu_verdict *v)
{
	if (!v->idle_weight) {
		json_null(w, "cause");
		return;
	}
	json_object(w, "cause", JSON_INLINE);
	json_str(w, "class", gpu_idle_class_name(v->cause_cls));
	json_double(w, "class_pct", v->sampled_ns > 0 ?
		    100.0 * v->class_ns[v->cause_cls] / v->sampled_ns : 0, 4);
	json_str(w, "leaf", v->cause_function);
	json_str(w, "python", v->cause_python);
	json_double(w, "percent", v->cause_pct, 4);
	json_u64(w, "samples", v->idle_weight);
	report_json_path(w, "stack", p, v->cause_stack);
	json_end(w);
}

static void report_json_gpu_verdicts(struct json_writer *w, const struct profile *p,
				     const struct gpu_analysis *g)
{
	json_array(w, "verdicts", JSON_ROWS);
	for (size_t i = 0; i < g->nverdicts; i++) {
		const struct gpu_verdict *v = &g->verdicts[i];
		json_object(w, NULL, JSON_INLINE);
		json_u64(w, "pid", v->pid);
		json_str(w, "comm", v->comm);
		json_str(w, "bound", gpu_bound_name(v->bound));
		json_u64(w, "window_ns", v->window_ns);
		json_u64(w, "device", v->device);
		json_u64(w, "busy_ns", v->busy_ns);
		json_double(w, "util_pct", v->util_pct, 4);
		json_u64(w, "blocked_tid", v->blocked_tid);
		json_u64(w, "blocked_ns", v->blocked_ns);
		json_double(w, "sync_pct", v->sync_pct, 4);
		json_u64(w, "kernels", v->kernels);
		json_u64(w, "kernel_ns", v->kernel_ns);
		json_u64(w, "median_latency_ns", v->median_latency_ns);
		json_str(w, "waited_mostly_for", v->top_blame);
		json_u64(w, "idle_ns", v->idle_ns);
		report_json_gpu_cause(w, p, v);
		json_object(w, "thresholds", JSON_INLINE);
		json_double(w, "util_pct", GPU_BOUND_UTIL_PCT, 1);
		json_double(w, "sync_pct", GPU_BOUND_SYNC_PCT, 1);
		json_i64(w, "idle_min_samples", GPU_IDLE_MIN_SAMPLES);
		json_double(w, "cause_pct", GPU_IDLE_CAUSE_PCT, 1);
		json_end(w);
		json_end(w);
	}
	json_end(w);
	json_break(w);
}

static void report_json_gpu(struct json_writer *w, const struct profile *p,
			    const struct gpu_analysis *g, const struct report_opts *o)
{
	json_object(w, "gpu", JSON_INLINE);
	json_u64(w, "kernel_ns", g->kernel_ns);
	json_u64(w, "work_ns", g->work_ns);
	json_u64(w, "launches", g->kernels);
	json_break(w);
	report_json_gpu_tables(w, g, o);
	report_json_gpu_sync(w, g);
	report_json_gpu_latency(w, p, g);
	report_json_gpu_sites(w, p, g, o);
	report_json_gpu_verdicts(w, p, g);
	report_json_gpu_idle(w, p, g, o);
	json_end(w);
	json_break(w);
}

/* "filter": the readers' filters (filter.h) were applied at load; o->filter is applied here. */
static void report_json_filter(struct json_writer *w, const struct profile *p,
			       const struct report_opts *o)
{
	const struct stacks_filter *flt = &o->filter;
	const struct profile_filtered *pf = p->filtered.text ? &p->filtered : NULL;
	const int64_t ids[3] = { pf && pf->pid >= 0 ? pf->pid : flt->pid,
				 pf && pf->tid >= 0 ? pf->tid : flt->tid, pf ? pf->rank : -1 };
	static const char *const id_keys[3] = { "pid", "tid", "rank" };
	json_object(w, "filter", JSON_INLINE);
	for (int i = 0; i < 3; i++) {
		if (ids[i] >= 0)
			json_i64(w, id_keys[i], ids[i]);
		else
			json_null(w, id_keys[i]);
	}
	json_str(w, "comm", pf && pf->comm ? pf->comm : flt->comm);
	json_str(w, "time", pf ? pf->time : NULL);
	json_str(w, "idle", pf && pf->idle == PROFILE_FILTER_IDLE_OFFCPU  ? "off-cpu"
			    : pf && pf->idle == PROFILE_FILTER_IDLE_ONCPU ? "on-cpu"
									  : "all");
	json_end(w);
	json_break(w);
}

void report_write_json(FILE *f, const struct profile *p, const struct stacks_report *r,
		       const struct report_opts *o)
{
	struct json_writer jw, *w = &jw;
	double rate = report_rate_hz(p);

	json_init(w, f);
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "file", o->input);
	json_str(w, "command", report_command(p));
	json_str(w, "cmdline", profile_header(p, "cmdline"));
	json_break(w);
	json_u64(w, "samples", r->samples);
	json_u64(w, "samples_unfiltered", p->filtered.text ? p->filtered.nsamples : p->nsamples);
	json_bool(w, "idle_recorded", report_idle_recorded(p) || r->offcpu_samples);
	json_u64(w, "offcpu_samples", r->offcpu_samples);
	json_u64(w, "lost", p->lost);
	json_double(w, "duration_s", report_duration_s(p), 6);
	if (rate > 0)
		json_g(w, "rate_hz", rate);
	else
		json_null(w, "rate_hz");
	json_bool(w, "truncated", p->truncated);
	json_bool(w, "finalized", p->finalized);
	json_break(w);
	json_str(w, "sort", o->sort == STACKS_SORT_TOTAL ? "total" : "self");
	json_bool(w, "python_only", o->python_only);
	report_json_filter(w, p, o);
	report_json_functions(w, r, o);
	report_json_python(w, r, o);
	report_json_breakdowns(w, p, r);
	if (o->gpu && o->gpu->present)
		report_json_gpu(w, p, o->gpu, o);
	report_steps_section_json(w, p, o);
	report_json_unwind(w, r);
	json_end(w);
	fputc('\n', f);
}
