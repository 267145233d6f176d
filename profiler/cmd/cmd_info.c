/* cmd_info.c: `csampler info`: a data file's header and counts (samples, lost, duration,
 * samples per thread and per process), as text or JSON. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/profile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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
	for (size_t i = 0; i < p->nprocesses; i++)
		printf("  pid %-8u ppid %-8u %-16s %llu samples\n", p->processes[i].pid,
		       p->processes[i].ppid, profile_str(p, p->processes[i].comm),
		       (unsigned long long)p->processes[i].samples);
	printf("threads:        %zu\n", p->nthreads);
	for (size_t i = 0; i < p->nthreads; i++)
		printf("  tid %-8u pid %-8u %-16s %llu samples\n", p->threads[i].tid, p->threads[i].pid,
		       profile_str(p, p->threads[i].comm), (unsigned long long)p->threads[i].samples);
}

static void info_json(const struct profile *p, const char *path)
{
	printf("{\"file\":");
	cs_fputs_json(stdout, path);
	printf(",\"format_version\":%u,\"truncated\":%s,\"symbolized\":%s,\"header\":{",
	       p->format_version, p->truncated ? "true" : "false", p->finalized ? "true" : "false");
	for (size_t i = 0; i < p->nheader; i++) {
		printf("%s", i ? "," : "");
		cs_fputs_json(stdout, p->header[i].key);
		printf(":");
		cs_fputs_json(stdout, p->header[i].value);
	}
	printf("},\"samples\":%llu,\"lost\":%llu,\"raw_stacks\":%llu,\"duration_s\":%.6f,\"stacks\":%zu,\"processes\":[",
	       (unsigned long long)p->nsamples, (unsigned long long)p->lost,
	       (unsigned long long)p->nraw_samples,
	       (double)(p->end_ns - p->start_ns) / 1e9, p->nstacks);
	for (size_t i = 0; i < p->nprocesses; i++) {
		printf("%s{\"pid\":%u,\"ppid\":%u,\"comm\":", i ? "," : "", p->processes[i].pid,
		       p->processes[i].ppid);
		cs_fputs_json(stdout, profile_str(p, p->processes[i].comm));
		printf(",\"samples\":%llu}", (unsigned long long)p->processes[i].samples);
	}
	printf("],\"threads\":[");
	for (size_t i = 0; i < p->nthreads; i++) {
		printf("%s{\"tid\":%u,\"pid\":%u,\"comm\":", i ? "," : "", p->threads[i].tid,
		       p->threads[i].pid);
		cs_fputs_json(stdout, profile_str(p, p->threads[i].comm));
		printf(",\"samples\":%llu}", (unsigned long long)p->threads[i].samples);
	}
	printf("]}\n");
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = "csampler.data";
	bool json = false;
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
		case 'h':
			printf("usage: csampler info [-i FILE] [--format text|json]\n");
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
	if (json)
		info_json(p, path);
	else
		info_text(p, path);
	profile_free(p);
	return 0;
}
