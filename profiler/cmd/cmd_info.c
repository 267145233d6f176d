/* cmd_info.c: `csampler info`: a data file's header and counts (samples, lost, duration,
 * samples per thread and per process, GPU records by kind, drops and clock check), as text or
 * JSON; --gpu-records lists every GPU record with its launch stack (for tests and debugging). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "base/json.h"
#include "analysis/profile.h"
#include "cmd/opts.h"

#include <stdlib.h>
#include <string.h>

struct info_gpu_kind {
	uint64_t count, total_ns, bytes;
};

static void info_gpu_totals(const struct profile *p, struct info_gpu_kind *k)
{
	memset(k, 0, sizeof(*k) * PROFILE_GPU_NKINDS);
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		struct info_gpu_kind *t = &k[a->kind < PROFILE_GPU_NKINDS ? a->kind : 0];
		t->count++;
		if (a->end > a->start)
			t->total_ns += a->end - a->start;
		t->bytes += a->bytes;
	}
}

static const char *info_gpu_status(uint32_t status)
{
	switch (status) {
	case PROFILE_GPU_OK: return "ok";
	case PROFILE_GPU_NO_CUPTI: return "no CUPTI (CPU-only)";
	case PROFILE_GPU_OTHER_SUBSCRIBER: return "CUPTI held by another tool (CPU-only)";
	case PROFILE_GPU_CUPTI_ERROR: return "CUPTI error (CPU-only)";
	default: return "unknown";
	}
}

static bool info_has_gpu(const struct profile *p)
{
	return p->ngpu_launches || p->ngpu_activities || p->ngpu_processes || p->ngpu_notes;
}

static void info_gpu_text(const struct profile *p)
{
	struct info_gpu_kind k[PROFILE_GPU_NKINDS];

	if (!info_has_gpu(p))
		return;
	info_gpu_totals(p, k);
	printf("gpu launches:   %zu\n", p->ngpu_launches);
	printf("gpu activities: %zu\n", p->ngpu_activities);
	for (uint32_t i = 1; i < PROFILE_GPU_NKINDS; i++) {
		if (!k[i].count)
			continue;
		printf("  %-8s %8llu records %12.3f ms", profile_gpu_kind_name(i),
		       (unsigned long long)k[i].count, (double)k[i].total_ns / 1e6);
		if (k[i].bytes)
			printf(" %14llu bytes", (unsigned long long)k[i].bytes);
		printf("\n");
	}
	printf("gpu processes:  %zu\n", p->ngpu_processes);
	for (size_t i = 0; i < p->ngpu_processes; i++) {
		const struct profile_gpu_process *g = &p->gpu_processes[i];
		if (g->flags & 1)
			printf("  pid %-8u CUPTI %u, %s", g->pid, g->cupti_version,
			       info_gpu_status(g->status));
		else
			printf("  pid %-8u no status record", g->pid);
		if (g->cupti_error)
			printf(" (CUptiResult %d)", g->cupti_error);
		if (g->flags & 1)
			printf(", clock offset %lld ns", (long long)g->clock_offset_ns);
		else
			printf(", clock not checked");
		printf(", dropped %llu, launches lost %llu, lost timestamps %llu",
		       (unsigned long long)g->dropped, (unsigned long long)g->launches_dropped,
		       (unsigned long long)g->lost_timestamps);
		if (g->flush_timeouts)
			printf(", flush timeouts %llu", (unsigned long long)g->flush_timeouts);
		if (g->write_errors)
			printf(", write errors %llu", (unsigned long long)g->write_errors);
		if (g->bad_records)
			printf(", malformed records %u", g->bad_records);
		if (g->flags & 4)
			printf(", file cut short");
		if (g->flags & 8)
			printf(", file corrupt");
		printf("\n");
	}
	if (p->ngpu_notes)
		printf("gpu notes:\n");
	for (size_t i = 0; i < p->ngpu_notes; i++)
		printf("  pid %-8u %s%s\n", p->gpu_notes[i].pid,
		       p->gpu_notes[i].severity ? "warning: " : "", profile_str(p, p->gpu_notes[i].text));
}

/* A GPU process' counters, after its pid, vendor, CUPTI version, status and error. */
static const struct json_field info_gpu_counters[] = {
	JSON_FIELD_FLAG(struct profile_gpu_process, flags, "clock_checked", 1),
	JSON_FIELD(struct profile_gpu_process, clock_offset_ns),
	JSON_FIELD(struct profile_gpu_process, launches),
	JSON_FIELD(struct profile_gpu_process, launches_dropped),
	JSON_FIELD(struct profile_gpu_process, activities),
	JSON_FIELD(struct profile_gpu_process, dropped),
	JSON_FIELD(struct profile_gpu_process, lost_timestamps),
	JSON_FIELD(struct profile_gpu_process, buffers),
	JSON_FIELD(struct profile_gpu_process, flush_timeouts),
	JSON_FIELD(struct profile_gpu_process, write_errors),
	JSON_FIELD(struct profile_gpu_process, capture_ns),
	JSON_FIELD_AS(struct profile_gpu_process, bad_records, "malformed_records"),
	JSON_FIELD_FLAG(struct profile_gpu_process, flags, "cut", 4),
	JSON_FIELD_FLAG(struct profile_gpu_process, flags, "corrupt", 8),
};

static void info_gpu_process_json(struct json_writer *w, const void *row, const void *arg)
{
	const struct profile_gpu_process *g = row;
	(void)arg;
	json_u64(w, "pid", g->pid);
	json_str(w, "vendor", gpu_vendor_get(g->vendor)->name);
	json_u64(w, "cupti_version", g->cupti_version);
	json_str(w, "status", info_gpu_status(g->status));
	json_i64(w, "cupti_error", g->cupti_error);
	JSON_FIELDS(w, g, info_gpu_counters);
}

/* arg: the profile, whose strings name the note's text. */
static void info_gpu_note_json(struct json_writer *w, const void *row, const void *arg)
{
	const struct profile_gpu_note *n = row;
	json_u64(w, "pid", n->pid);
	json_u64(w, "severity", n->severity);
	json_str(w, "text", profile_str(arg, n->text));
}

static void info_gpu_json(struct json_writer *w, const struct profile *p)
{
	struct info_gpu_kind k[PROFILE_GPU_NKINDS];

	info_gpu_totals(p, k);
	json_object(w, "gpu", JSON_INLINE);
	json_u64(w, "launches", p->ngpu_launches);
	json_u64(w, "activities", p->ngpu_activities);
	json_object(w, "kinds", JSON_INLINE);
	for (uint32_t i = 1; i < PROFILE_GPU_NKINDS; i++) {
		json_object(w, profile_gpu_kind_name(i), JSON_INLINE);
		json_u64(w, "count", k[i].count);
		json_u64(w, "total_ns", k[i].total_ns);
		json_u64(w, "bytes", k[i].bytes);
		json_end(w);
	}
	json_end(w);
	JSON_ROWS_EACH(w, "processes", JSON_INLINE, p->gpu_processes, p->ngpu_processes,
		       info_gpu_process_json, p);
	JSON_ROWS_EACH(w, "notes", JSON_INLINE, p->gpu_notes, p->ngpu_notes, info_gpu_note_json, p);
	json_end(w);
}

/* "root;...;leaf" of stack id, or "-" when it has no frames. */
static void info_put_stack(const struct profile *p, uint32_t stack)
{
	const struct profile_stack *st = &p->stacks[stack];
	if (!st->nframes) {
		fputs("-", stdout);
		return;
	}
	for (uint32_t k = st->nframes; k-- > 0;) {
		const struct profile_frame *f = &p->frames[p->stack_frames[st->first + k]];
		printf("%s%s", profile_str(p, f->name), k ? ";" : "");
	}
}

/* --gpu-records: every launch, then every activity with the stack of its launch. */
static void info_gpu_records(const struct profile *p)
{
	for (size_t i = 0; i < p->ngpu_launches; i++) {
		const struct profile_gpu_launch *g = &p->gpu_launches[i];
		printf("launch %s pid=%u tid=%u corr=%u cbid=%u domain=%u flags=%u stack=",
		       g->api ? profile_str(p, g->api) : "-", g->pid, g->tid, g->correlation, g->cbid,
		       g->domain, g->flags);
		info_put_stack(p, g->stack);
		printf("\n");
	}
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		printf("%s %s pid=%u corr=%u dur_ns=%llu bytes=%llu stream=%u detail=%u api=",
		       profile_gpu_kind_name(a->kind), a->name ? profile_str(p, a->name) : "-", a->pid,
		       a->correlation, (unsigned long long)(a->end > a->start ? a->end - a->start : 0),
		       (unsigned long long)a->bytes, a->stream, a->detail);
		if (a->launch != PROFILE_GPU_NO_LAUNCH) {
			const struct profile_gpu_launch *g = &p->gpu_launches[a->launch];
			printf("%s stack=", g->api ? profile_str(p, g->api) : "-");
			info_put_stack(p, g->stack);
		} else {
			printf("- stack=-");
		}
		printf("\n");
	}
}

static void info_text(const struct profile *p, const char *path)
{
	printf("file:           %s%s\n", path, p->truncated ? " (truncated)" : "");
	printf("format version: %u\n", p->format_version);
	for (size_t i = 0; i < p->nheader; i++)
		printf("%-15s %s\n", p->header[i].key, p->header[i].value);
	printf("symbolized:     %s\n", p->finalized ? "yes" : "no (recording was cut short)");
	printf("samples:        %llu\n", (unsigned long long)p->nsamples);
	printf("lost:           %llu\n", (unsigned long long)p->lost);
	if (p->nraw_samples)
		printf("raw stacks:     kept (--keep-raw): %llu samples with registers and stack memory\n",
		       (unsigned long long)p->nraw_samples);
	else
		printf("raw stacks:     none\n");
	printf("duration:       %.3f s\n", (double)(p->end_ns - p->start_ns) / 1e9);
	printf("stacks:         %zu unique\n", p->nstacks);
	printf("processes:      %zu\n", p->nprocesses);
	for (size_t i = 0; i < p->nprocesses; i++) {
		const struct profile_process *pr = &p->processes[i];
		printf("  pid %-8u ppid %-8u %-16s %llu samples", pr->pid, pr->ppid,
		       profile_str(p, pr->comm), (unsigned long long)pr->samples);
		if (pr->rank >= 0 || p->nlabels) {  /* a rank's recording, or a merged file */
			if (pr->rank >= 0)
				printf(", rank %d", (int)pr->rank);
			else
				printf(", no rank");
			if (pr->host)
				printf(", host %s", profile_str(p, pr->host));
			if (pr->orig_pid != pr->pid)
				printf(", pid %u there", pr->orig_pid);
		}
		printf("\n");
	}
	printf("threads:        %zu\n", p->nthreads);
	for (size_t i = 0; i < p->nthreads; i++)
		printf("  tid %-8u pid %-8u %-16s %llu samples\n", p->threads[i].tid, p->threads[i].pid,
		       profile_str(p, p->threads[i].comm), (unsigned long long)p->threads[i].samples);
	info_gpu_text(p);
}

/* What a process and a thread both say: two ids (the task's and its parent's or process'), the
 * name (string comm of profile p) and the samples. */
static void info_task_json(struct json_writer *w, const char *key, uint32_t id,
			   const char *parent_key, uint32_t parent, const struct profile *p,
			   uint32_t comm, uint64_t samples)
{
	json_u64(w, key, id);
	json_u64(w, parent_key, parent);
	json_str(w, "comm", profile_str(p, comm));
	json_u64(w, "samples", samples);
}

/* arg: the profile, whose strings name the process and its host. */
static void info_process_json(struct json_writer *w, const void *row, const void *arg)
{
	const struct profile_process *pr = row;
	info_task_json(w, "pid", pr->pid, "ppid", pr->ppid, arg, pr->comm, pr->samples);
	if (pr->rank >= 0)
		json_i64(w, "rank", pr->rank);
	else
		json_null(w, "rank");
	json_str(w, "host", pr->host ? profile_str(arg, pr->host) : NULL);
	json_u64(w, "orig_pid", pr->orig_pid);
}

/* arg: the profile, whose strings name the thread. */
static void info_thread_json(struct json_writer *w, const void *row, const void *arg)
{
	const struct profile_thread *t = row;
	info_task_json(w, "tid", t->tid, "pid", t->pid, arg, t->comm, t->samples);
}

static void info_json(const struct profile *p, const char *path)
{
	struct json_writer jw, *w = &jw;
	json_init(w, stdout);
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "file", path);
	json_u64(w, "format_version", p->format_version);
	json_bool(w, "truncated", p->truncated);
	json_bool(w, "symbolized", p->finalized);
	json_object(w, "header", JSON_INLINE);
	for (size_t i = 0; i < p->nheader; i++)
		json_str(w, p->header[i].key, p->header[i].value);
	json_end(w);
	json_u64(w, "samples", p->nsamples);
	json_u64(w, "lost", p->lost);
	json_u64(w, "raw_stacks", p->nraw_samples);
	json_double(w, "duration_s", (double)(p->end_ns - p->start_ns) / 1e9, 6);
	json_u64(w, "stacks", p->nstacks);
	JSON_ROWS_EACH(w, "processes", JSON_INLINE, p->processes, p->nprocesses, info_process_json,
		       p);
	JSON_ROWS_EACH(w, "threads", JSON_INLINE, p->threads, p->nthreads, info_thread_json, p);
	info_gpu_json(w, p);
	json_end(w);
	fputc('\n', stdout);
}

int cmd_info(int argc, char **argv)
{
	const char *path = "csampler.data", *input = NULL;
	bool json = false, gpu_records = false;
	const struct opts_option options[] = {
		OPTS_STRING_ROW('i', "input", &input, "FILE",
				"data file to read (default ./csampler.data)"),
		OPTS_CALL_ROW('f', "format", &json, "FMT", opts_json_call, "'text' (default) or 'json'"),
		OPTS_FLAG_ROW(0, "gpu-records", &gpu_records,
			      "list every GPU record with its launch stack"),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("info", options);
	struct profile *p;
	int first, err = opts_parse(&cmd, argc, argv, &first);

	if (!err)
		err = opts_input(&cmd, argc, argv, first, input, &path);
	if (err)
		return opts_exit_status(err);
	if (profile_load(path, &p))
		return CS_EXIT_ERROR;
	if (gpu_records)
		info_gpu_records(p);
	else if (json)
		info_json(p, path);
	else
		info_text(p, path);
	profile_free(p);
	return 0;
}
