/* cmd_dump.c: `csampler dump`: one snapshot of every thread of running processes (a hung or
 * slow job): native stacks with Python frames, thread states, GPU kernels in flight, and a
 * summary grouping identical stacks across processes. The engine is record/dump.h. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "record/dump.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_MAX_PIDS 65536

static const char dump_usage[] =
	"usage: csampler dump -p PID[,PID...] [options]\n"
	"       csampler dump --cgroup PATH [options]\n"
	"Stop each process for the moment its threads are read (in parallel), print every thread's\n"
	"stack (native and Python frames) and state, the GPU kernels launched and not finished\n"
	"(processes with csampler's GPU library), and a summary of identical stacks across processes.\n"
	"  -p, --pid PID[,PID]    the processes (repeatable)\n"
	"  --children             also every descendant of them (the ranks under a launcher)\n"
	"  --cgroup PATH          also every process of this cgroup v2 and below (/sys/fs/cgroup/...)\n"
	"  --format text|json     output format (default text)\n"
	"  --summary              text: the summary only\n"
	"  --stack-size BYTES     stack bytes copied per thread (default 262144)\n"
	"  --no-python            native frames only\n"
	"  --no-gpu               do not look for GPU work in flight\n"
	"  --timeout MS           give up on a thread that does not stop within MS (default 1000)\n"
	"  -h, --help             this help\n"
	"Exit status: 0 when at least one process was read (the others are named on stderr),\n"
	"125 when none could be.\n";

__attribute__((format(printf, 1, 2))) static int dump_bad(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "csampler: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return CS_EXIT_ERROR;
}

static int dump_parse_pids(const char *s, pid_t **pids, size_t *n)
{
	char *copy = cs_strdup(s), *save = NULL;
	int ret = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (cs_parse_u64(tok, &v) || v == 0 || v > 0x7fffffff)
			ret = -EINVAL;
		else if (*n >= DUMP_MAX_PIDS)
			ret = -E2BIG;
		else {
			*pids = cs_realloc(*pids, (*n + 1) * sizeof(pid_t));
			(*pids)[(*n)++] = (pid_t)v;
		}
	}
	free(copy);
	return ret ? ret : *n ? 0 : -EINVAL;
}

/* Dump the processes o names: those that could not be read, one line each on stderr; the
 * others on stdout. 0, or CS_EXIT_ERROR when none could be read. */
static int dump_and_print(const struct dump_opts *o, bool json, bool summary_only)
{
	struct dump_result res, *r = &res;
	size_t nread = 0;

	if (dump_run(o, r))
		return CS_EXIT_ERROR;

	for (size_t i = 0; i < r->nprocs; i++) {
		if (!r->procs[i].error)
			nread++;
		else
			fprintf(stderr, "csampler: %s\n", r->procs[i].error_text);
	}
	if (nread) {
		if (json)
			dump_print_json(stdout, r);
		else
			dump_print_text(stdout, r, summary_only);
	}
	fflush(stdout);
	dump_result_free(r);
	return nread ? 0 : CS_EXIT_ERROR;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts o = { .stack_size = DUMP_DEFAULT_STACK, .stop_timeout_ns = 1000000000ull,
			       .gpu_flush_timeout_ns = 500000000ull };
	pid_t *pids = NULL;
	size_t npids = 0;
	bool json = false, summary_only = false;
	enum { OPT_CHILDREN = 256, OPT_CGROUP, OPT_FORMAT, OPT_SUMMARY, OPT_STACK, OPT_NOPY,
	       OPT_NOGPU, OPT_TIMEOUT };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		{ "stack-size", required_argument, NULL, OPT_STACK },
		{ "no-python", no_argument, NULL, OPT_NOPY },
		{ "no-gpu", no_argument, NULL, OPT_NOGPU },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, ret;
	uint64_t v;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			ret = dump_parse_pids(optarg, &pids, &npids);
			if (ret) {
				free(pids);
				return ret == -E2BIG ? dump_bad("too many PIDs: at most %d", DUMP_MAX_PIDS)
						     : dump_bad("invalid PID list '%s': give -p PID[,PID...]", optarg);
			}
			break;
		case OPT_CHILDREN:
			o.children = true;
			break;
		case OPT_CGROUP:
			o.cgroup = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "json"))
				json = true;
			else if (strcmp(optarg, "text")) {
				free(pids);
				return dump_bad("invalid --format '%s': give text or json", optarg);
			}
			break;
		case OPT_SUMMARY:
			summary_only = true;
			break;
		case OPT_STACK:
			if (cs_parse_u64(optarg, &v) || v < 64 || v > (64u << 20)) {
				free(pids);
				return dump_bad("invalid --stack-size '%s': give bytes from 64 to 67108864", optarg);
			}
			o.stack_size = (uint32_t)v;
			break;
		case OPT_NOPY:
			o.no_python = true;
			break;
		case OPT_NOGPU:
			o.no_gpu = true;
			break;
		case OPT_TIMEOUT:
			if (cs_parse_u64(optarg, &v) || v == 0 || v > 600000) {
				free(pids);
				return dump_bad("invalid --timeout '%s': give milliseconds from 1 to 600000", optarg);
			}
			o.stop_timeout_ns = v * 1000000ull;
			break;
		case 'h':
			fputs(dump_usage, stdout);
			free(pids);
			return 0;
		default:
			free(pids);
			if (optopt && optopt < 256)
				return dump_bad("unknown option '-%c'; see 'csampler dump --help'", optopt);
			return dump_bad("unknown option '%s'; see 'csampler dump --help'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		free(pids);
		return dump_bad("unexpected argument '%s': give the processes with -p PID[,PID...]", argv[optind]);
	}
	if (!npids && !o.cgroup)
		return dump_bad("nothing to dump: give -p PID[,PID...] or --cgroup PATH");
	o.pids = pids;
	o.npids = npids;

	ret = dump_and_print(&o, json, summary_only);
	free(pids);
	return ret;
}
