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

/* The rows' members, in the order each object lists them (base/json.h); what is computed
 * per row (a share, a name looked up) is written between two tables. */
static const struct json_field report_json_library_counts[] = {
	JSON_FIELD(struct stacks_library, self), JSON_FIELD(struct stacks_library, total),
	JSON_FIELD_FLAG(struct stacks_library, flags, "no_cfi", PROFILE_MODULE_NO_CFI),
	JSON_FIELD_FLAG(struct stacks_library, flags, "no_symbols", PROFILE_MODULE_NO_SYMBOLS),
	JSON_FIELD_FLAG(struct stacks_library, flags, "no_debuginfo", PROFILE_MODULE_NO_DEBUGINFO),
};

static void report_json_library(struct json_writer *w, const void *row, const void *arg)
{
	const struct stacks_library *l = row;
	json_str(w, "path", l->path);
	json_str(w, "name", report_library_name(l->path));
	JSON_FIELDS(w, l, report_json_library_counts);
}

static void report_json_line(struct json_writer *w, uint32_t line)
{
	if (line)
		json_u64(w, "line", line);
	else
		json_null(w, "line");
}

static const struct json_field report_json_function_names[] = {
	JSON_FIELD(struct stacks_function, name),
	JSON_FIELD_AS(struct stacks_function, module, "library"),
	JSON_FIELD(struct stacks_function, self), JSON_FIELD(struct stacks_function, total),
};

static const struct json_field report_json_function_kinds[] = {
	JSON_FIELD_FLAG(struct stacks_function, frame_flags, "kernel", PROFILE_FRAME_KERNEL),
	JSON_FIELD_FLAG(struct stacks_function, frame_flags, "inlined", PROFILE_FRAME_INLINED),
	JSON_FIELD_FLAG(struct stacks_function, frame_flags, "jit", PROFILE_FRAME_JIT),
	JSON_FIELD_AS(struct stacks_function, hot_file, "file"),
};

/* A function's self and total as percentages of the samples. */
static void report_json_shares(struct json_writer *w, uint64_t self, uint64_t total,
			       uint64_t samples)
{
	json_double(w, "self_pct", report_pct(self, samples), 2);
	json_double(w, "total_pct", report_pct(total, samples), 2);
}

/* A row of the function table; arg: the report. */
static void report_json_function(struct json_writer *w, const void *row, const void *arg)
{
	const struct stacks_function *fn = row;
	const struct stacks_report *r = arg;
	JSON_FIELDS(w, fn, report_json_function_names);
	report_json_shares(w, fn->self, fn->total, r->samples);
	JSON_FIELDS(w, fn, report_json_function_kinds);
	report_json_line(w, fn->hot_line);
	json_u64(w, "line_samples", fn->hot_samples);
}

/* A row of the Python function table; arg: the report. */
static void report_json_python_function(struct json_writer *w, const void *row, const void *arg)
{
	const struct stacks_function *fn = row;
	const struct stacks_report *r = arg;
	json_str(w, "name", fn->name);
	json_str(w, "file", fn->hot_file);
	report_json_line(w, fn->hot_line);
	json_u64(w, "self", fn->python_self);
	json_u64(w, "total", fn->total);
	report_json_shares(w, fn->python_self, fn->total, r->samples);
	json_u64(w, "line_samples", fn->hot_samples);
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
	json_object(w, "python", JSON_INLINE);
	json_u64(w, "samples", r->python_samples);
	JSON_ROWS_EACH(w, "functions", REPORT_JSON_TABLE, fns, report_rows(n, o),
		       report_json_python_function, r);
	json_end(w);
	json_break(w);
	free(fns);
}

static const struct json_field report_json_thread_fields[] = {
	JSON_FIELD(struct stacks_thread, pid), JSON_FIELD(struct stacks_thread, tid),
	JSON_FIELD(struct stacks_thread, comm), JSON_FIELD(struct stacks_thread, samples),
};

/* A row of the process table; arg: the profile. */
static void report_json_process(struct json_writer *w, const void *row, const void *arg)
{
	const struct stacks_process *pr = row;
	const struct profile *p = arg;
	const struct profile_process *pp = profile_process_of(p, pr->pid);
	json_u64(w, "pid", pr->pid);
	json_str(w, "comm", pr->comm);
	json_u64(w, "samples", pr->samples);
	if (pp && pp->rank >= 0) /* the recording's rank (merged files: per process) */
		json_i64(w, "rank", pp->rank);
	else
		json_null(w, "rank");
	json_str(w, "host", pp && pp->host ? profile_str(p, pp->host) : NULL);
	json_u64(w, "orig_pid", pp ? pp->orig_pid : pr->pid);
}

static void report_json_breakdowns(struct json_writer *w, const struct profile *p,
				   const struct stacks_report *r)
{
	JSON_ROWS_EACH(w, "processes", REPORT_JSON_TABLE, r->processes, r->nprocesses,
		       report_json_process, p);
	json_break(w);
	JSON_ROWS_OF(w, "threads", REPORT_JSON_TABLE, r->threads, r->nthreads,
		     report_json_thread_fields);
	json_break(w);
	JSON_ROWS_EACH(w, "libraries", REPORT_JSON_TABLE, r->libraries, r->nlibraries,
		       report_json_library, NULL);
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

static const struct json_field report_json_unwind_counts[] = {
	JSON_FIELD_DOUBLE(struct stacks_unwind, complete_pct, 2),
	JSON_FIELD(struct stacks_unwind, complete), JSON_FIELD(struct stacks_unwind, empty),
	JSON_FIELD(struct stacks_unwind, unwind_errors),
	JSON_FIELD(struct stacks_unwind, stack_full),
	JSON_FIELD(struct stacks_unwind, python_unread),
	JSON_FIELD(struct stacks_unwind, python_changed),
};

static const struct json_field report_json_stop_causes[] = {
	JSON_FIELD(struct stacks_stop_causes, stack_short),
	JSON_FIELD(struct stacks_stop_causes, anon_no_cfi),
	JSON_FIELD(struct stacks_stop_causes, file_no_cfi),
	JSON_FIELD(struct stacks_stop_causes, no_map), JSON_FIELD(struct stacks_stop_causes, error),
	JSON_FIELD(struct stacks_stop_causes, other),
};

static const struct json_field report_json_unwind_frames[] = {
	JSON_FIELD_AS(struct stacks_unwind, frames_cfi, "cfi"),
	JSON_FIELD_AS(struct stacks_unwind, frames_fp, "fp"),
	JSON_FIELD_AS(struct stacks_unwind, frames_scan, "scan"),
};

static const struct json_field report_json_stop_fields[] = {
	JSON_FIELD(struct stacks_stop, name), JSON_FIELD_AS(struct stacks_stop, module, "library"),
	JSON_FIELD(struct stacks_stop, samples),
};

static void report_json_unwind(struct json_writer *w, const struct stacks_report *r)
{
	const struct stacks_unwind *u = &r->unwind;

	json_object(w, "unwind", JSON_INLINE);
	JSON_FIELDS(w, u, report_json_unwind_counts);
	report_json_u64_or_null(w, "stack_size", u->stack_size);
	report_json_u64_or_null(w, "suggested_stack_size", u->suggested_stack_size);
	json_break(w);
	json_object(w, "causes", JSON_INLINE);
	JSON_FIELDS(w, &u->causes, report_json_stop_causes);
	json_end(w);
	json_break(w);
	if (u->frames_known) {
		json_object(w, "frames", JSON_INLINE);
		JSON_FIELDS(w, u, report_json_unwind_frames);
		json_end(w);
	} else {
		json_null(w, "frames");
	}
	json_break(w);
	JSON_ROWS_EACH(w, "lacking", JSON_ROWS, u->lacking, u->nlacking, report_json_library, NULL);
	json_break(w);
	JSON_ROWS_OF(w, "stops", JSON_ROWS, u->stops, u->nstops, report_json_stop_fields);
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

static const struct json_field report_json_util_times[] = {
	JSON_FIELD(struct gpu_util, busy_ns), JSON_FIELD(struct gpu_util, work_ns),
	JSON_FIELD(struct gpu_util, window_ns), JSON_FIELD(struct gpu_util, items),
	JSON_FIELD_DOUBLE(struct gpu_util, percent, 4),
};

/* A row of the device or stream utilisation table (a device's row has no stream). */
static void report_json_util(struct json_writer *w, const void *row, const void *arg)
{
	const struct gpu_util *u = row;
	json_u64(w, "pid", u->pid);
	json_u64(w, "device", u->device);
	if (u->stream != GPU_ALL_STREAMS) {
		json_u64(w, "context", u->context);
		json_u64(w, "stream", u->stream);
	}
	JSON_FIELDS(w, u, report_json_util_times);
}

static const struct json_field report_json_idle_totals[] = {
	JSON_FIELD(struct gpu_idle, idle_ns), JSON_FIELD(struct gpu_idle, sampled_ns),
	JSON_FIELD_AS(struct gpu_idle, nintervals, "intervals"),
	JSON_FIELD_AS(struct gpu_idle, weight, "samples"),
};

static const struct json_field report_json_idle_stack_shares[] = {
	JSON_FIELD(struct gpu_idle_stack, samples),
	JSON_FIELD_DOUBLE(struct gpu_idle_stack, idle_ns, 0),
	JSON_FIELD_DOUBLE(struct gpu_idle_stack, percent, 4),
};

/* A row of the idle stacks; arg: the profile. */
static void report_json_idle_stack(struct json_writer *w, const void *row, const void *arg)
{
	const struct gpu_idle_stack *st = row;
	const struct profile *p = arg;
	char py[256];
	json_u64(w, "pid", st->pid);
	json_str(w, "class", gpu_idle_class_name(st->cls));
	JSON_FIELDS(w, st, report_json_idle_stack_shares);
	json_str(w, "leaf", gpu_idle_leaf(p, st->stack, py, sizeof(py)));
	json_str(w, "python", py);
	report_json_path(w, "stack", p, st->stack);
}

static void report_json_gpu_idle(struct json_writer *w, const struct profile *p,
				 const struct gpu_analysis *g, const struct report_opts *o)
{
	const struct gpu_idle *d = &g->idle;
	json_object(w, "idle", JSON_INLINE);
	JSON_FIELDS(w, d, report_json_idle_totals);
	json_object(w, "classes", JSON_INLINE);
	for (uint32_t k = 0; k < GPU_IDLE_NCLASSES; k++) {
		json_object(w, gpu_idle_class_name(k), JSON_INLINE);
		json_u64(w, "samples", d->class_weight[k]);
		json_double(w, "idle_ns", d->class_ns[k], 0);
		json_end(w);
	}
	json_end(w);
	json_break(w);
	JSON_ROWS_EACH(w, "stacks", JSON_ROWS, d->stacks, report_rows(d->nstacks, o),
		       report_json_idle_stack, p);
	json_end(w);
}

static const struct json_field report_json_kernel_fields[] = {
	JSON_FIELD(struct gpu_kernel_stat, name), JSON_FIELD(struct gpu_kernel_stat, mangled),
	JSON_FIELD(struct gpu_kernel_stat, calls), JSON_FIELD(struct gpu_kernel_stat, total_ns),
	JSON_FIELD(struct gpu_kernel_stat, avg_ns), JSON_FIELD(struct gpu_kernel_stat, min_ns),
	JSON_FIELD(struct gpu_kernel_stat, max_ns),
	JSON_FIELD_DOUBLE(struct gpu_kernel_stat, percent, 4),
};

static const struct json_field report_json_copy_fields[] = {
	JSON_FIELD(struct gpu_copy_stat, direction), JSON_FIELD(struct gpu_copy_stat, calls),
	JSON_FIELD(struct gpu_copy_stat, bytes), JSON_FIELD(struct gpu_copy_stat, total_ns),
	JSON_FIELD_DOUBLE(struct gpu_copy_stat, gb_per_s, 6),
};

static void report_json_copy(struct json_writer *w, const void *row, const void *arg)
{
	const struct gpu_copy_stat *c = row;
	json_str(w, "kind", profile_gpu_kind_name(c->kind));
	JSON_FIELDS(w, c, report_json_copy_fields);
}

static void report_json_gpu_tables(struct json_writer *w, const struct gpu_analysis *g,
				   const struct report_opts *o)
{
	size_t rows = report_rows(g->nkernels, o);
	JSON_ROWS_OF(w, "kernels", REPORT_JSON_TABLE, g->kernels_by_time, rows,
		     report_json_kernel_fields);
	json_break(w);
	JSON_ROWS_EACH(w, "copies", REPORT_JSON_TABLE, g->copies, g->ncopies, report_json_copy,
		       NULL);
	json_break(w);
	JSON_ROWS_EACH(w, "devices", REPORT_JSON_TABLE, g->devices, g->ndevices, report_json_util,
		       NULL);
	json_break(w);
	JSON_ROWS_EACH(w, "streams", REPORT_JSON_TABLE, g->streams, g->nstreams, report_json_util,
		       NULL);
	json_break(w);
}

static const struct json_field report_json_sync_thread_fields[] = {
	JSON_FIELD(struct gpu_sync_thread, pid), JSON_FIELD(struct gpu_sync_thread, tid),
	JSON_FIELD(struct gpu_sync_thread, waits), JSON_FIELD(struct gpu_sync_thread, blocked_ns),
};

static const struct json_field report_json_blame_fields[] = {
	JSON_FIELD(struct gpu_blame, name), JSON_FIELD(struct gpu_blame, waits),
	JSON_FIELD(struct gpu_blame, wait_ns),
};

static void report_json_gpu_sync(struct json_writer *w, const struct gpu_analysis *g)
{
	json_object(w, "sync", JSON_INLINE);
	json_u64(w, "blocked_ns", g->blocked_ns);
	json_u64(w, "waits", g->sync_waits);
	JSON_ROWS_OF(w, "threads", JSON_ROWS, g->sync_threads, g->nsync_threads,
		     report_json_sync_thread_fields);
	json_break(w);
	JSON_ROWS_OF(w, "waited_for", JSON_ROWS, g->blames, g->nblames, report_json_blame_fields);
	json_end(w);
	json_break(w);
}

static const struct json_field report_json_latency_totals[] = {
	JSON_FIELD(struct gpu_latency, count), JSON_FIELD(struct gpu_latency, from_queued),
	JSON_FIELD(struct gpu_latency, total_ns),
};

static const struct json_field report_json_latency_spread[] = {
	JSON_FIELD(struct gpu_latency, min_ns), JSON_FIELD(struct gpu_latency, median_ns),
	JSON_FIELD(struct gpu_latency, p95_ns), JSON_FIELD(struct gpu_latency, max_ns),
};

static const struct json_field report_json_waiter_fields[] = {
	JSON_FIELD(struct gpu_waiter, name), JSON_FIELD(struct gpu_waiter, pid),
	JSON_FIELD(struct gpu_waiter, tid), JSON_FIELD(struct gpu_waiter, latency_ns),
	JSON_FIELD(struct gpu_waiter, from_queued),
};

/* A row of the longest launch-queue waits; arg: the profile. */
static void report_json_waiter(struct json_writer *w, const void *row, const void *arg)
{
	const struct gpu_waiter *wt = row;
	JSON_FIELDS(w, wt, report_json_waiter_fields);
	report_json_path(w, "stack", arg, wt->stack);
}

static void report_json_gpu_latency(struct json_writer *w, const struct profile *p,
				    const struct gpu_analysis *g)
{
	const struct gpu_latency *L = &g->latency;
	json_object(w, "latency", JSON_INLINE);
	JSON_FIELDS(w, L, report_json_latency_totals);
	json_u64(w, "avg_ns", L->count ? L->total_ns / L->count : 0);
	JSON_FIELDS(w, L, report_json_latency_spread);
	JSON_ROWS_EACH(w, "longest", JSON_ROWS, L->top, L->ntop, report_json_waiter, p);
	json_end(w);
	json_break(w);
}

static const struct json_field report_json_site_fields[] = {
	JSON_FIELD(struct gpu_site, pid), JSON_FIELD(struct gpu_site, calls),
	JSON_FIELD(struct gpu_site, gpu_ns), JSON_FIELD_DOUBLE(struct gpu_site, percent, 4),
};

static const struct json_field report_json_range_fields[] = {
	JSON_FIELD(struct gpu_range, name), JSON_FIELD(struct gpu_range, count),
	JSON_FIELD(struct gpu_range, total_ns), JSON_FIELD(struct gpu_range, min_ns),
	JSON_FIELD(struct gpu_range, max_ns), JSON_FIELD(struct gpu_range, marks),
};

/* A row of the launch sites; arg: the profile. */
static void report_json_site(struct json_writer *w, const void *row, const void *arg)
{
	const struct gpu_site *s = row;
	JSON_FIELDS(w, s, report_json_site_fields);
	report_json_path(w, "stack", arg, s->stack);
}

static void report_json_gpu_sites(struct json_writer *w, const struct profile *p,
				  const struct gpu_analysis *g, const struct report_opts *o)
{
	JSON_ROWS_EACH(w, "launch_sites", JSON_ROWS, g->sites, report_rows(g->nsites, o),
		       report_json_site, p);
	json_break(w);

	JSON_ROWS_OF(w, "nvtx", JSON_ROWS, g->ranges, g->nranges, report_json_range_fields);
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

static const struct json_field report_json_verdict_fields[] = {
	JSON_FIELD(struct gpu_verdict, window_ns), JSON_FIELD(struct gpu_verdict, device),
	JSON_FIELD(struct gpu_verdict, busy_ns), JSON_FIELD_DOUBLE(struct gpu_verdict, util_pct, 4),
	JSON_FIELD(struct gpu_verdict, blocked_tid), JSON_FIELD(struct gpu_verdict, blocked_ns),
	JSON_FIELD_DOUBLE(struct gpu_verdict, sync_pct, 4), JSON_FIELD(struct gpu_verdict, kernels),
	JSON_FIELD(struct gpu_verdict, kernel_ns), JSON_FIELD(struct gpu_verdict, median_latency_ns),
	JSON_FIELD_AS(struct gpu_verdict, top_blame, "waited_mostly_for"),
	JSON_FIELD(struct gpu_verdict, idle_ns),
};

/* A row of the verdicts, one a process; arg: the profile. */
static void report_json_verdict(struct json_writer *w, const void *row, const void *arg)
{
	const struct gpu_verdict *v = row;
	json_u64(w, "pid", v->pid);
	json_str(w, "comm", v->comm);
	json_str(w, "bound", gpu_bound_name(v->bound));
	JSON_FIELDS(w, v, report_json_verdict_fields);
	report_json_gpu_cause(w, arg, v);
	json_object(w, "thresholds", JSON_INLINE);
	json_double(w, "util_pct", GPU_BOUND_UTIL_PCT, 1);
	json_double(w, "sync_pct", GPU_BOUND_SYNC_PCT, 1);
	json_i64(w, "idle_min_samples", GPU_IDLE_MIN_SAMPLES);
	json_double(w, "cause_pct", GPU_IDLE_CAUSE_PCT, 1);
	json_end(w);
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
	JSON_ROWS_EACH(w, "verdicts", JSON_ROWS, g->verdicts, g->nverdicts, report_json_verdict, p);
	json_break(w);
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
	JSON_ROWS_EACH(w, "functions", REPORT_JSON_TABLE, r->functions,
		       report_rows(r->nfunctions, o), report_json_function, r);
	json_break(w);
	report_json_python(w, r, o);
	report_json_breakdowns(w, p, r);
	if (o->gpu && o->gpu->present)
		report_json_gpu(w, p, o->gpu, o);
	report_steps_section_json(w, p, o);
	report_json_unwind(w, r);
	json_end(w);
	fputc('\n', f);
}
