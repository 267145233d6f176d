/* report_text.c: `csampler report`'s text: perf-like tables of the aggregated profile
 * (stacks.c), the GPU tables and verdicts (gpu.c) and the steps summary (report_steps.c).
 * Computes nothing; report_json.c is its JSON twin. */
#include "analysis/report_common.h"
#include "analysis/report_steps.h"
#include "analysis/filter.h"

#include "base/cs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* "no CFI, no symbols" for a library's flags, into buf. */
static const char *report_lib_notes(uint32_t flags, char *buf, size_t len)
{
	buf[0] = 0;
	if (flags & PROFILE_MODULE_NO_CFI)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sno CFI", *buf ? ", " : "");
	if (flags & PROFILE_MODULE_NO_SYMBOLS)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sno symbols", *buf ? ", " : "");
	if (flags & PROFILE_MODULE_NO_DEBUGINFO)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sno debug info",
			 *buf ? ", " : "");
	return buf;
}

static void report_text_header(FILE *f, const struct profile *p, const struct stacks_report *r,
			       const struct report_opts *o)
{
	const struct stacks_filter *flt = &o->filter;
	const char *cmd = report_command(p);
	double dur = report_duration_s(p), rate = report_rate_hz(p);
	const char *callgraph = profile_header(p, "callgraph");

	fprintf(f, "# csampler report of %s\n", o->input);
	const char *cmdline = profile_header(p, "cmdline");
	fprintf(f, "# command:   %s\n", cmd ? cmd : "(not recorded)");
	if (cmdline && *cmdline && cmd != cmdline)
		fprintf(f, "# recorded:  %s\n", cmdline);
	fprintf(f, "# duration:  %.3f s\n", dur);
	if (p->filtered.text) {        /* the readers' filters (filter.h) */
		fprintf(f, "# samples:   %" PRIu64 " of %" PRIu64 " pass the filter: %s\n",
			r->samples, p->filtered.nsamples, p->filtered.text);
	} else if (flt->pid >= 0 || flt->tid >= 0 || flt->comm) {
		fprintf(f, "# samples:   %" PRIu64 " of %" PRIu64 " pass the filter:", r->samples,
			p->nsamples);
		if (flt->pid >= 0)
			fprintf(f, " pid %" PRId64, flt->pid);
		if (flt->tid >= 0)
			fprintf(f, " tid %" PRId64, flt->tid);
		if (flt->comm)
			fprintf(f, " comm '%s'", flt->comm);
		fputc('\n', f);
	} else {
		fprintf(f, "# samples:   %" PRIu64 "\n", r->samples);
	}
	if (p->filtered.idle == PROFILE_FILTER_IDLE_ONCPU && report_idle_recorded(p))
		fprintf(f, "# off-CPU:   recorded with --idle; the samples of threads off the CPU are "
			"left out (--no-idle)\n");
	else if (r->offcpu_samples || report_idle_recorded(p))
		fprintf(f, "# off-CPU:   %" PRIu64 " samples (%.1f%%) of threads off the CPU, under "
			"[off-cpu: SYSCALL] leaves (record --idle: shares of wall-clock time)\n",
			r->offcpu_samples, report_pct(r->offcpu_samples, r->samples));
	fprintf(f, "# lost:      %" PRIu64 " (%.2f%% of all samples)\n", p->lost,
		report_pct(p->lost, p->nsamples + p->lost));
	fprintf(f, "# rate:      ");
	if (rate > 0)
		fprintf(f, "%g Hz requested, ", rate);
	fprintf(f, "%.1f samples/s recorded\n", dur > 0 ? (double)p->nsamples / dur : 0.0);
	if (callgraph && *callgraph) {
		fprintf(f, "# unwinding: %s", callgraph);
		if (r->unwind.stack_size)
			fprintf(f, ", %" PRIu64 "-byte stack copies", r->unwind.stack_size);
		fputc('\n', f);
	}
	if (o->python_only)
		fprintf(f, "# view:      --python-only: the stacks keep their Python frames only\n");
	if (p->truncated)
		fprintf(f, "# WARNING: truncated file: the recording ended early; the %" PRIu64
			" samples that were read are reported\n", p->nsamples);
	if (!p->finalized)
		fprintf(f, "# WARNING: the stacks were never symbolized (recording cut short "
			"before finalizing): names may be missing\n");
}

/* Width of the name column for the functions with a known hottest line. */
static int report_name_width(const struct stacks_function *fns, size_t rows, int cap)
{
	int w = 8;
	for (size_t i = 0; i < rows; i++) {
		int n = (int)strlen(fns[i].name);
		if ((fns[i].hot_line || fns[i].hot_file) && n > w)
			w = n;
	}
	return w > cap ? cap : w;
}

/* The rows of a table of functions ordered by `by`: up to the limit, and in a table by self
 * only the functions that have self samples. */
static size_t report_function_rows(const struct stacks_function *fns, size_t n,
				   enum stacks_sort by, const struct report_opts *o)
{
	size_t rows = report_rows(n, o);
	if (by == STACKS_SORT_SELF)
		while (rows && !fns[rows - 1].self)
			rows--;
	return rows;
}

static void report_text_functions(FILE *f, const struct stacks_function *fns, size_t n,
				  uint64_t samples, enum stacks_sort by,
				  const struct report_opts *o)
{
	size_t rows = report_function_rows(fns, n, by, o);
	int libw = 7;

	for (size_t i = 0; i < rows; i++) {
		int len = (int)strlen(report_library_name(fns[i].module));
		if (len > libw)
			libw = len;
	}
	fprintf(f, "\nTop functions by %s samples (%zu of %zu)\n",
		by == STACKS_SORT_TOTAL ? "total (inclusive)" : "self", rows, n);
	fprintf(f, "%8s %8s %8s %8s  %-*s  %s\n", "Self%", "Self", "Total%", "Total", libw,
		"Library", "Function");
	for (size_t i = 0; i < rows; i++) {
		const struct stacks_function *fn = &fns[i];
		fprintf(f, "%7.2f%% %8" PRIu64 " %7.2f%% %8" PRIu64 "  %-*s  %s %s\n",
			report_pct(fn->self, samples), fn->self, report_pct(fn->total, samples),
			fn->total, libw, report_library_name(fn->module),
			report_frame_marker(fn->frame_flags), fn->name);
	}
}

/* The Python functions (stacks_python_functions), in the --sort order. Self is the innermost
 * Python frame of each sample: the interpreter and C extension code under it count for it, as
 * py-spy counts them; total counts a function once per sample, however deep it recurses. */
static void report_text_python(FILE *f, const struct stacks_report *r,
			       const struct report_opts *o)
{
	struct stacks_function *fns;
	size_t n = stacks_python_functions(r, o->sort, &fns);
	size_t rows = report_rows(n, o);

	if (!r->python_samples) {
		free(fns);
		return;
	}
	fprintf(f, "\nPython functions by %s (%zu of %zu; %" PRIu64 " samples, %.2f%%, run Python "
		"code; self: the innermost Python frame, with the native code under it)\n",
		o->sort == STACKS_SORT_TOTAL ? "total samples" : "self samples", rows, n,
		r->python_samples, report_pct(r->python_samples, r->samples));
	int namew = 8;
	for (size_t i = 0; i < rows; i++) {
		int len = (int)strlen(fns[i].name);
		if (len > namew)
			namew = len < 40 ? len : 40;
	}
	fprintf(f, "%8s %8s %8s %8s  %-*s  %s\n", "Self%", "Self", "Total%", "Total", namew,
		"Function", "File:line (hottest)");
	for (size_t i = 0; i < rows; i++) {
		const struct stacks_function *fn = &fns[i];
		fprintf(f, "%7.2f%% %8" PRIu64 " %7.2f%% %8" PRIu64 "  %-*s  %s:%u\n",
			report_pct(fn->python_self, r->samples), fn->python_self,
			report_pct(fn->total, r->samples), fn->total, namew, fn->name,
			fn->hot_file ? fn->hot_file : "?", fn->hot_line);
	}
	free(fns);
}

/* The hottest source line of each function of the first table. */
static void report_text_lines(FILE *f, const struct stacks_report *r, const struct report_opts *o)
{
	size_t rows = report_function_rows(r->functions, r->nfunctions, o->sort, o), shown = 0;
	int namew = report_name_width(r->functions, rows, 40);

	for (size_t i = 0; i < rows; i++) {
		const struct stacks_function *fn = &r->functions[i];
		if (!fn->hot_line && !fn->hot_file)
			continue;
		if (!shown++)
			fprintf(f, "\nSource lines of the hottest functions\n%8s %8s  %-*s  %s\n",
				"Self%", "Total%", namew, "Function",
				"Hottest line (its share of the function)");
		uint64_t of = fn->self ? fn->self : fn->total;
		fprintf(f, "%7.2f%% %7.2f%%  %-*s  %s:%u (%" PRIu64 " samples, %.1f%% of its %s)\n",
			report_pct(fn->self, r->samples), report_pct(fn->total, r->samples), namew,
			fn->name, fn->hot_file ? fn->hot_file : "?", fn->hot_line, fn->hot_samples,
			report_pct(fn->hot_samples, of), fn->self ? "self" : "total");
	}
}

/* Where process pid ran, for the processes table: " (rank R, HOST[, pid ORIG])" when its
 * recording had a rank or it comes from a merged file, else "". */
static const char *report_process_where(const struct profile *p, uint32_t pid, char *buf,
					size_t len)
{
	const struct profile_process *pr = profile_process_of(p, pid);
	buf[0] = 0;
	if (!pr || (pr->rank < 0 && !p->nlabels))
		return buf;
	char rank[32] = "no rank";
	if (pr->rank >= 0)
		snprintf(rank, sizeof(rank), "rank %d", (int)pr->rank);
	snprintf(buf, len, " (%s%s%s", rank, pr->host ? ", " : "", profile_str(p, pr->host));
	if (pr->orig_pid != pr->pid)
		snprintf(buf + strlen(buf), len - strlen(buf), ", pid %u there", pr->orig_pid);
	snprintf(buf + strlen(buf), len - strlen(buf), ")");
	return buf;
}

static void report_text_breakdowns(FILE *f, const struct profile *p,
				   const struct stacks_report *r, const struct report_opts *o)
{
	char where[320];
	fprintf(f, "\nProcesses\n%8s %8s %8s  %s\n", "Samples%", "Samples", "PID", "Command");
	for (size_t i = 0; i < r->nprocesses; i++) {
		const struct stacks_process *pr = &r->processes[i];
		fprintf(f, "%7.2f%% %8" PRIu64 " %8u  %s%s\n", report_pct(pr->samples, r->samples),
			pr->samples, pr->pid, *pr->comm ? pr->comm : "?",
			report_process_where(p, pr->pid, where, sizeof(where)));
	}

	size_t rows = report_rows(r->nthreads, o);
	fprintf(f, "\nThreads (%zu of %zu)\n%8s %8s %8s %8s  %s\n", rows, r->nthreads, "Samples%",
		"Samples", "PID", "TID", "Name");
	for (size_t i = 0; i < rows; i++) {
		const struct stacks_thread *t = &r->threads[i];
		fprintf(f, "%7.2f%% %8" PRIu64 " %8u %8u  %s\n", report_pct(t->samples, r->samples),
			t->samples, t->pid, t->tid, *t->comm ? t->comm : "?");
	}

	fprintf(f, "\nLibraries\n%8s %8s %8s %8s  %s\n", "Self%", "Self", "Total%", "Total",
		"Library");
	for (size_t i = 0; i < r->nlibraries; i++) {
		const struct stacks_library *l = &r->libraries[i];
		char notes[64];
		report_lib_notes(l->flags, notes, sizeof(notes));
		fprintf(f, "%7.2f%% %8" PRIu64 " %7.2f%% %8" PRIu64 "  %s%s%s%s\n",
			report_pct(l->self, r->samples), l->self, report_pct(l->total, r->samples),
			l->total, *l->path ? l->path : "(unknown)", *notes ? " (" : "", notes,
			*notes ? ")" : "");
	}
}

static void report_text_unwind(FILE *f, const struct stacks_report *r)
{
	const struct stacks_unwind *u = &r->unwind;

	fprintf(f, "\nUnwind quality\n");
	fprintf(f, "  complete stacks: %.2f%% (%" PRIu64 " of %" PRIu64 " samples reach _start or "
		"__libc_start_main on a main thread, clone or start_thread on others)\n",
		u->complete_pct, u->complete, r->samples);
	if (u->frames_known && u->frames_cfi + u->frames_fp + u->frames_scan)
		fprintf(f, "  user frames by how they were found: %" PRIu64 " CFI (or the sampled pc), "
			"%" PRIu64 " frame-pointer step, %" PRIu64 " stack scan\n", u->frames_cfi,
			u->frames_fp, u->frames_scan);
	if (u->empty)
		fprintf(f, "  samples without any frame: %" PRIu64 "\n", u->empty);
	if (u->unwind_errors)
		fprintf(f, "  samples where the unwinder stopped on an error: %" PRIu64 "\n",
			u->unwind_errors);
	if (u->python_unread)
		fprintf(f, "  samples in Python code whose Python frames could not be read (native "
			"frames, or [Python frames not read] in their place): %" PRIu64 "\n",
			u->python_unread);
	if (u->python_changed)
		fprintf(f, "  samples whose Python frames were read after the program moved on "
			"(merged best effort): %" PRIu64 "\n", u->python_changed);
	const struct stacks_stop_causes *c = &u->causes;
	if (r->samples > u->complete + u->empty) {
		static const char *const what[] = {
			"stack copy too short (the unwinder needed stack beyond it)",
			"code without CFI in anonymous memory (JIT) whose caller was not found",
			"code in a file without CFI (no .eh_frame) whose caller was not found",
			"an address in no known mapping",
			"unwinder error (bad CFI, or memory it could not read)",
			"no error (the frame limit, or an outermost frame not known as an entry point)",
		};
		const uint64_t n[] = { c->stack_short, c->anon_no_cfi, c->file_no_cfi, c->no_map,
				       c->error, c->other };
		fprintf(f, "  incomplete stacks by cause:\n");
		for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
			if (n[i])
				fprintf(f, "%10" PRIu64 "  %s\n", n[i], what[i]);
	}
	if (c->stack_short) {
		if (u->suggested_stack_size && u->stack_size)
			fprintf(f, "  suggestion: record again with --stack-size %" PRIu64
				" (this recording used %" PRIu64 ")\n", u->suggested_stack_size,
				u->stack_size);
		else if (u->suggested_stack_size)
			fprintf(f, "  suggestion: record again with --stack-size %" PRIu64 "\n",
				u->suggested_stack_size);
		else if (u->stack_size_at_max)
			fprintf(f, "  the stack copy is already at the kernel's maximum (%u bytes): "
				"stacks deeper than that cannot be copied whole\n",
				STACKS_MAX_STACK_SIZE);
	}
	if (u->nstops) {
		fprintf(f, "  incomplete stacks stop in:\n");
		for (size_t i = 0; i < u->nstops && i < 5; i++)
			fprintf(f, "%10" PRIu64 "  %s  [%s]\n", u->stops[i].samples, u->stops[i].name,
				report_library_name(u->stops[i].module));
	}
	if (u->nlacking) {
		fprintf(f, "  libraries lacking unwind info or symbols (install their debug "
			"packages, or rebuild them with -g and unstripped):\n");
		for (size_t i = 0; i < u->nlacking; i++) {
			const struct stacks_library *l = &u->lacking[i];
			char notes[64];
			fprintf(f, "%10" PRIu64 "  %s (%s)\n", l->total,
				*l->path ? l->path : "(unknown)",
				report_lib_notes(l->flags, notes, sizeof(notes)));
		}
	}
}

static void report_write_text_cpu(FILE *f, const struct profile *p,
				  const struct stacks_report *r, const struct report_opts *o)
{
	report_text_header(f, p, r, o);
	if (!r->samples) {
		fprintf(f, "\nNo samples%s.\n", p->nsamples ? " pass the filter" : " were recorded");
		return;
	}
	/* The table in --sort order, then the same functions in the other order. */
	enum stacks_sort other = o->sort == STACKS_SORT_SELF ? STACKS_SORT_TOTAL : STACKS_SORT_SELF;
	struct stacks_report resorted = *r;
	resorted.functions = cs_malloc(r->nfunctions * sizeof(*r->functions) + 1);
	memcpy(resorted.functions, r->functions, r->nfunctions * sizeof(*r->functions));
	stacks_sort_functions(&resorted, other);
	report_text_functions(f, r->functions, r->nfunctions, r->samples, o->sort, o);
	report_text_functions(f, resorted.functions, r->nfunctions, r->samples, other, o);
	free(resorted.functions);
	report_text_python(f, r, o);
	report_text_lines(f, r, o);
	report_text_breakdowns(f, p, r, o);
	report_text_unwind(f, r);
}

/* ---- GPU (figures from gpu.c) ---- */

static double report_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static double report_us(uint64_t ns)
{
	return (double)ns / 1e3;
}

/* A call path, leaf first, up to max frames ("a <- b <- c ..."), into buf, from the first
 * frame named from (NULL: the leaf). */
static const char *report_gpu_path_from(const struct profile *p, uint32_t stack, const char *from,
					size_t max, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	if (stack >= p->nstacks) {
		snprintf(buf, len, "(no launch record)");
		return buf;
	}
	const struct profile_stack *st = &p->stacks[stack];
	uint32_t skip = 0;
	for (uint32_t i = 0; from && i < st->nframes; i++) {
		uint32_t fr = p->stack_frames[st->first + i];
		if (fr < p->nframes && !strcmp(profile_str(p, p->frames[fr].name), from)) {
			skip = i;
			break;
		}
	}
	for (uint32_t i = skip; i < st->nframes && off < len; i++) {
		if (i - skip == max) {
			snprintf(buf + off, len - off, " <- ...");
			break;
		}
		uint32_t fr = p->stack_frames[st->first + i];
		const char *name = fr < p->nframes ? profile_str(p, p->frames[fr].name) : "?";
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? " <- " : "", name);
	}
	if (!st->nframes)
		snprintf(buf, len, "(empty stack)");
	return buf;
}

/* A launch call path, leaf first, up to max frames. */
static const char *report_gpu_path(const struct profile *p, uint32_t stack, size_t max, char *buf,
				   size_t len)
{
	return report_gpu_path_from(p, stack, NULL, max, buf, len);
}

/* What the GPU waited on, in words: "decode_batch (93.1% of the idle time CPU samples explain;
 * Python: load (data.py:12)), in decode_batch <- load_batch <- train_step". */
static void report_text_gpu_cause(FILE *f, const struct profile *p, const struct gpu_verdict *v)
{
	char path[512];
	static const char *const doing[GPU_IDLE_NCLASSES] = {
		[GPU_IDLE_CPU] = "ran code that launches nothing",
		[GPU_IDLE_LAUNCH] = "was inside launch and other CUDA API calls",
		[GPU_IDLE_SYNC] = "was inside synchronisation calls",
		[GPU_IDLE_OFFCPU] = "waited off the CPU",
	};
	if (!v->idle_weight) {
		fputs("No CPU sample fell in its idle time. ", f);
		return;
	}
	fprintf(f, "While it idled the CPU mostly %s (%.1f%% of the idle time that %" PRIu64
		" samples explain)", doing[v->cause_cls],
		v->sampled_ns > 0 ? 100.0 * v->class_ns[v->cause_cls] / v->sampled_ns : 0.0,
		v->idle_weight);
	if (v->cause_function) {
		fprintf(f, ": the GPU waited on %s (%.1f%% of it", v->cause_function, v->cause_pct);
		if (*v->cause_python)
			fprintf(f, "; Python: %s", v->cause_python);
		fprintf(f, "), in %s", report_gpu_path_from(p, v->cause_stack, v->cause_function, 5,
								path, sizeof(path)));
	}
	fputs(". ", f);
}

static void report_text_gpu_verdict(FILE *f, const struct profile *p,
				    const struct gpu_analysis *g)
{
	fprintf(f, "\nGPU verdict (GPU-bound: busiest device busy >= %.0f%% of the window; else "
		"sync-bound: a thread blocked >= %.0f%%; else by what the CPU did while the GPU "
		"idled: input-bound, launch-bound, sync-bound or off-CPU-bound)\n",
		GPU_BOUND_UTIL_PCT, GPU_BOUND_SYNC_PCT);
	for (size_t i = 0; i < g->nverdicts; i++) {
		const struct gpu_verdict *v = &g->verdicts[i];
		fprintf(f, "  pid %u (%s): %s. ", v->pid, *v->comm ? v->comm : "?",
			gpu_bound_name(v->bound));
		if (v->bound == GPU_BOUND_NONE) {
			fprintf(f, "No kernels, copies or memsets ran.\n");
			continue;
		}
		fprintf(f, "Over its %.3f ms GPU window the busiest device (%u) was busy %.1f%% "
			"(%.3f ms) and ", report_ms(v->window_ns), v->device, v->util_pct,
			report_ms(v->busy_ns));
		if (v->blocked_ns)
			fprintf(f, "thread %u was blocked in synchronisation %.1f%% (%.3f ms)%s%s%s. ",
				v->blocked_tid, v->sync_pct, report_ms(v->blocked_ns),
				v->top_blame ? ", mostly waiting for " : "",
				v->top_blame ? v->top_blame : "", "");
		else
			fprintf(f, "no thread was blocked in synchronisation. ");
		fprintf(f, "%" PRIu64 " kernels took %.3f ms", v->kernels, report_ms(v->kernel_ns));
		if (v->kernels)
			fprintf(f, " (%.3f us each on average) and waited a median %.3f us in the launch "
				"queue", report_us(v->kernel_ns / v->kernels),
				report_us(v->median_latency_ns));
		fputs(". ", f);
		if (v->bound != GPU_BOUND_GPU)
			report_text_gpu_cause(f, p, v);
		const char *what = v->cause_function ? v->cause_function : "the CPU's work";
		switch (v->bound) {
		case GPU_BOUND_GPU:
			fputs("The GPU's own work is the limit: make the kernels faster or do less of "
			      "it.\n", f);
			break;
		case GPU_BOUND_SYNC:
			fputs("The CPU waits for the GPU, then the GPU idles while the CPU works: "
			      "remove or defer the synchronisations so that both overlap.\n", f);
			break;
		case GPU_BOUND_INPUT:
			fprintf(f, "The GPU waits for %s, which launches nothing: make it faster or "
				"move it off the training thread (a loader thread or process that "
				"prefetches into pinned memory) so that it overlaps the GPU's work.\n",
				what);
			break;
		case GPU_BOUND_OFFCPU:
			fprintf(f, "The GPU waits while the launching threads are blocked in %s (the "
				"GIL, a lock or I/O): find who holds it, or move the blocking work off "
				"the launching thread.\n", what);
			break;
		default:
			fputs("The GPU idles while no thread waits for it: it waits for the CPU to "
			      "launch work (fewer, larger kernels, CUDA graphs, or less CPU work "
			      "between launches).\n", f);
			break;
		}
	}
}

/* "GPU idle time by CPU stack": the idle samples' stacks by the idle ns they explain. */
static void report_text_gpu_idle(FILE *f, const struct profile *p, const struct gpu_analysis *g,
				 const struct report_opts *o)
{
	const struct gpu_idle *d = &g->idle;
	char path[512], py[256];
	if (!d->nintervals)
		return;
	fprintf(f, "\nGPU idle time by CPU stack (%.3f ms idle in %zu intervals; %" PRIu64
		" CPU samples fell in %.3f ms of it)\n", report_ms(d->idle_ns), d->nintervals,
		d->weight, report_ms(d->sampled_ns));
	if (!d->nstacks) {
		fputs("  no CPU sample fell in the GPU's idle time\n", f);
		return;
	}
	fprintf(f, "  by class:");
	for (uint32_t k = 0; k < GPU_IDLE_NCLASSES; k++)
		fprintf(f, " %s %.1f%%%s", gpu_idle_class_name(k),
			d->sampled_ns ? 100.0 * d->class_ns[k] / (double)d->sampled_ns : 0.0,
			k + 1 < GPU_IDLE_NCLASSES ? "," : "\n");
	size_t rows = report_rows(d->nstacks, o);
	fprintf(f, "%10s %7s %8s %8s %-7s  %s\n", "Idle ms", "Idle%", "Samples", "PID", "Class",
		"CPU stack (leaf first)");
	for (size_t i = 0; i < rows; i++) {
		const struct gpu_idle_stack *st = &d->stacks[i];
		gpu_idle_leaf(p, st->stack, py, sizeof(py));
		fprintf(f, "%10.3f %6.2f%% %8" PRIu64 " %8u %-7s  %s%s%s%s\n", st->idle_ns / 1e6,
			st->percent, st->samples, st->pid, gpu_idle_class_name(st->cls),
			report_gpu_path(p, st->stack, 6, path, sizeof(path)), *py ? " [Python: " : "",
			py, *py ? "]" : "");
	}
}

/* Launch-queue latency, the top launch sites and the NVTX ranges. */
static void report_text_gpu_launches(FILE *f, const struct profile *p,
				     const struct gpu_analysis *g, const struct report_opts *o)
{
	char path[512];
	const struct gpu_latency *L = &g->latency;
	if (L->count) {
		fprintf(f, "\nLaunch-queue latency (queued -> start) of %" PRIu64 " kernels (%" PRIu64
			" from CUPTI's queued time, the rest from the launch call)\n", L->count,
			L->from_queued);
		fprintf(f, "  avg %.3f us, min %.3f us, median %.3f us, p95 %.3f us, max %.3f us\n",
			report_us(L->total_ns / L->count), report_us(L->min_ns),
			report_us(L->median_ns), report_us(L->p95_ns), report_us(L->max_ns));
		fprintf(f, "%11s  %-30s  %s\n", "Latency us", "Kernel", "Launched from");
		for (size_t i = 0; i < L->ntop; i++)
			fprintf(f, "%11.3f  %-30s  %s\n", report_us(L->top[i].latency_ns),
				L->top[i].name, report_gpu_path(p, L->top[i].stack, 4, path,
								 sizeof(path)));
	}

	if (g->nsites) {
		size_t rows = report_rows(g->nsites, o);
		fprintf(f, "\nTop launch sites by GPU time (%zu of %zu)\n%10s %7s %8s %8s  %s\n", rows,
			g->nsites, "GPU ms", "GPU%", "Calls", "PID", "Launched from (leaf first)");
		for (size_t i = 0; i < rows; i++) {
			const struct gpu_site *s = &g->sites[i];
			fprintf(f, "%10.3f %6.2f%% %8" PRIu64 " %8u  %s\n", report_ms(s->gpu_ns),
				s->percent, s->calls, s->pid,
				report_gpu_path(p, s->stack, 6, path, sizeof(path)));
		}
	}

	if (g->nranges) {
		fprintf(f, "\nNVTX ranges\n%8s %11s %11s %11s %11s %6s  %s\n", "Count", "Total ms",
			"Avg ms", "Min ms", "Max ms", "Marks", "Name");
		for (size_t i = 0; i < g->nranges; i++) {
			const struct gpu_range *r = &g->ranges[i];
			fprintf(f, "%8" PRIu64 " %11.3f %11.3f %11.3f %11.3f %6" PRIu64 "  %s\n",
				r->count, report_ms(r->total_ns),
				r->count ? report_ms(r->total_ns / r->count) : 0.0,
				report_ms(r->min_ns), report_ms(r->max_ns), r->marks,
				*r->name ? r->name : "(unnamed)");
		}
	}
}

static void report_text_gpu(FILE *f, const struct profile *p, const struct gpu_analysis *g,
			    const struct report_opts *o)
{
	size_t rows = report_rows(g->nkernels, o);

	fprintf(f, "\nGPU kernels (%zu of %zu; %" PRIu64 " launches, %.3f ms of GPU time)\n", rows,
		g->nkernels, g->kernels, report_ms(g->kernel_ns));
	fprintf(f, "%11s %8s %11s %11s %11s %7s  %s\n", "Total ms", "Calls", "Avg us", "Min us",
		"Max us", "Time%", "Kernel");
	for (size_t i = 0; i < rows; i++) {
		const struct gpu_kernel_stat *k = &g->kernels_by_time[i];
		fprintf(f, "%11.3f %8" PRIu64 " %11.3f %11.3f %11.3f %6.2f%%  %s\n",
			report_ms(k->total_ns), k->calls, report_us(k->avg_ns), report_us(k->min_ns),
			report_us(k->max_ns), k->percent, k->name);
	}

	if (g->ncopies) {
		fprintf(f, "\nGPU copies and memsets\n%-10s %8s %14s %11s %9s\n", "Direction", "Calls",
			"Bytes", "Total ms", "GB/s");
		for (size_t i = 0; i < g->ncopies; i++) {
			const struct gpu_copy_stat *c = &g->copies[i];
			fprintf(f, "%-10s %8" PRIu64 " %14" PRIu64 " %11.3f %9.3f\n", c->direction,
				c->calls, c->bytes, report_ms(c->total_ns), c->gb_per_s);
		}
	}

	fprintf(f, "\nGPU utilisation (busy: union of the work's intervals; window: the process' "
		"first to last GPU record)\n%8s %6s %8s %8s %10s %10s %7s %8s\n", "PID", "Device",
		"Context", "Stream", "Busy ms", "Window ms", "Busy%", "Items");
	for (size_t i = 0; i < g->ndevices; i++) {
		const struct gpu_util *d = &g->devices[i];
		fprintf(f, "%8u %6u %8s %8s %10.3f %10.3f %6.2f%% %8" PRIu64 "\n", d->pid, d->device,
			"all", "all", report_ms(d->busy_ns), report_ms(d->window_ns), d->percent,
			d->items);
		for (size_t k = 0; k < g->nstreams; k++) {
			const struct gpu_util *s = &g->streams[k];
			if (s->pid != d->pid || s->device != d->device)
				continue;
			fprintf(f, "%8u %6u %8u %8u %10.3f %10.3f %6.2f%% %8" PRIu64 "\n", s->pid,
				s->device, s->context, s->stream, report_ms(s->busy_ns),
				report_ms(s->window_ns), s->percent, s->items);
		}
	}

	if (g->nsync_threads) {
		fprintf(f, "\nCPU blocked in synchronisation: %.3f ms in %" PRIu64 " waits\n%8s %8s "
			"%8s %11s\n", report_ms(g->blocked_ns), g->sync_waits, "PID", "TID", "Records",
			"Blocked ms");
		for (size_t i = 0; i < g->nsync_threads; i++) {
			const struct gpu_sync_thread *t = &g->sync_threads[i];
			fprintf(f, "%8u %8u %8" PRIu64 " %11.3f\n", t->pid, t->tid, t->waits,
				report_ms(t->blocked_ns));
		}
		fprintf(f, "Waited for (the work on the synced stream or context that finished last "
			"before the wait ended)\n%8s %11s  %s\n", "Waits", "Wait ms", "Work");
		for (size_t i = 0; i < g->nblames; i++) {
			const struct gpu_blame *b = &g->blames[i];
			fprintf(f, "%8" PRIu64 " %11.3f  %s\n", b->waits, report_ms(b->wait_ns),
				b->name ? b->name : "(nothing running: the work was done already)");
		}
	}

	report_text_gpu_launches(f, p, g, o);
	report_text_gpu_idle(f, p, g, o);
	report_text_gpu_verdict(f, p, g);
}

void report_write_text(FILE *f, const struct profile *p, const struct stacks_report *r,
		       const struct report_opts *o)
{
	report_write_text_cpu(f, p, r, o);
	if (o->gpu && o->gpu->present)
		report_text_gpu(f, p, o->gpu, o);
	report_steps_section_text(f, p, o);
}

