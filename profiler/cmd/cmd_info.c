/* cmd_info.c: `csampler info`: a data file's header and counts (samples, lost, duration,
 * samples per thread and per process, GPU records by kind, drops and clock check), as text or
 * JSON; --gpu-records lists every GPU record with its launch stack (for tests and debugging). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "base/json.h"
#include "analysis/profile.h"

#include <getopt.h>
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

static void info_gpu_json(const struct profile *p)
{
	struct info_gpu_kind k[PROFILE_GPU_NKINDS];

	info_gpu_totals(p, k);
	printf(",\"gpu\":{\"launches\":%zu,\"activities\":%zu,\"kinds\":{", p->ngpu_launches,
	       p->ngpu_activities);
	for (uint32_t i = 1; i < PROFILE_GPU_NKINDS; i++)
		printf("%s\"%s\":{\"count\":%llu,\"total_ns\":%llu,\"bytes\":%llu}", i > 1 ? "," : "",
		       profile_gpu_kind_name(i), (unsigned long long)k[i].count,
		       (unsigned long long)k[i].total_ns, (unsigned long long)k[i].bytes);
	printf("},\"processes\":[");
	for (size_t i = 0; i < p->ngpu_processes; i++) {
		const struct profile_gpu_process *g = &p->gpu_processes[i];
		printf("%s{\"pid\":%u,\"cupti_version\":%u,\"status\":", i ? "," : "", g->pid,
		       g->cupti_version);
		json_fputs(stdout, info_gpu_status(g->status));
		printf(",\"cupti_error\":%d,\"clock_checked\":%s,\"clock_offset_ns\":%lld,"
		       "\"launches\":%llu,\"launches_dropped\":%llu,\"activities\":%llu,"
		       "\"dropped\":%llu,\"lost_timestamps\":%llu,\"buffers\":%llu,"
		       "\"flush_timeouts\":%llu,\"write_errors\":%llu,\"capture_ns\":%llu,"
		       "\"malformed_records\":%u,\"cut\":%s,\"corrupt\":%s}",
		       g->cupti_error, (g->flags & 1) ? "true" : "false", (long long)g->clock_offset_ns,
		       (unsigned long long)g->launches, (unsigned long long)g->launches_dropped,
		       (unsigned long long)g->activities, (unsigned long long)g->dropped,
		       (unsigned long long)g->lost_timestamps, (unsigned long long)g->buffers,
		       (unsigned long long)g->flush_timeouts, (unsigned long long)g->write_errors,
		       (unsigned long long)g->capture_ns, g->bad_records,
		       (g->flags & 4) ? "true" : "false", (g->flags & 8) ? "true" : "false");
	}
	printf("],\"notes\":[");
	for (size_t i = 0; i < p->ngpu_notes; i++) {
		printf("%s{\"pid\":%u,\"severity\":%u,\"text\":", i ? "," : "", p->gpu_notes[i].pid,
		       p->gpu_notes[i].severity);
		json_fputs(stdout, profile_str(p, p->gpu_notes[i].text));
		printf("}");
	}
	printf("]}");
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

static void info_json(const struct profile *p, const char *path)
{
	printf("{\"file\":");
	json_fputs(stdout, path);
	printf(",\"format_version\":%u,\"truncated\":%s,\"symbolized\":%s,\"header\":{",
	       p->format_version, p->truncated ? "true" : "false", p->finalized ? "true" : "false");
	for (size_t i = 0; i < p->nheader; i++) {
		printf("%s", i ? "," : "");
		json_fputs(stdout, p->header[i].key);
		printf(":");
		json_fputs(stdout, p->header[i].value);
	}
	printf("},\"samples\":%llu,\"lost\":%llu,\"raw_stacks\":%llu,\"duration_s\":%.6f,\"stacks\":%zu,\"processes\":[",
	       (unsigned long long)p->nsamples, (unsigned long long)p->lost,
	       (unsigned long long)p->nraw_samples,
	       (double)(p->end_ns - p->start_ns) / 1e9, p->nstacks);
	for (size_t i = 0; i < p->nprocesses; i++) {
		printf("%s{\"pid\":%u,\"ppid\":%u,\"comm\":", i ? "," : "", p->processes[i].pid,
		       p->processes[i].ppid);
		json_fputs(stdout, profile_str(p, p->processes[i].comm));
		printf(",\"samples\":%llu,\"rank\":", (unsigned long long)p->processes[i].samples);
		if (p->processes[i].rank >= 0)
			printf("%d", (int)p->processes[i].rank);
		else
			printf("null");
		printf(",\"host\":");
		if (p->processes[i].host)
			json_fputs(stdout, profile_str(p, p->processes[i].host));
		else
			printf("null");
		printf(",\"orig_pid\":%u}", p->processes[i].orig_pid);
	}
	printf("],\"threads\":[");
	for (size_t i = 0; i < p->nthreads; i++) {
		printf("%s{\"tid\":%u,\"pid\":%u,\"comm\":", i ? "," : "", p->threads[i].tid,
		       p->threads[i].pid);
		json_fputs(stdout, profile_str(p, p->threads[i].comm));
		printf(",\"samples\":%llu}", (unsigned long long)p->threads[i].samples);
	}
	printf("]");
	info_gpu_json(p);
	printf("}\n");
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "gpu-records", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = "csampler.data";
	bool json = false, gpu_records = false;
	struct profile *p;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "json"))
				json = true;
			else if (!strcmp(optarg, "text"))
				json = false;
			else {
				fprintf(stderr, "csampler: info: unknown format '%s': use text or json\n", optarg);
				return CS_EXIT_ERROR;
			}
			break;
		case 'G':
			gpu_records = true;
			break;
		case 'h':
			printf("usage: csampler info [-i FILE] [--format text|json] [--gpu-records]\n");
			return 0;
		default:
			fprintf(stderr, "csampler: info: unknown option '%s' or missing value; see 'csampler info --help'\n",
				argv[optind - 1]);
			return CS_EXIT_ERROR;
		}
	}
	if (optind < argc)
		path = argv[optind];
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
