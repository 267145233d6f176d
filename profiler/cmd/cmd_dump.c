/* cmd_dump.c: `csampler dump`: one snapshot of every thread of running processes (a hung or
 * slow job): native stacks with Python frames, thread states, GPU kernels in flight, and a
 * summary grouping identical stacks across processes. The engine is record/dump.h. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"
#include "record/dump.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_MAX_PIDS 65536

/* --stack-size BYTES and --timeout MS (row->number says which) into a struct dump_opts. */
static int dump_number_option(const char *cmd, const struct opts_option *row, const char *value,
			      void *target)
{
	struct dump_opts *o = target;
	uint64_t v;

	if (row->number == 0) {
		if (cs_parse_u64(value, &v) || v < 64 || v > (64u << 20))
			return cs_error(EINVAL, "invalid --stack-size '%s': give bytes from 64 to "
					"67108864", value);
		o->stack_size = (uint32_t)v;
		return 0;
	}
	if (cs_parse_u64(value, &v) || v == 0 || v > 600000)
		return cs_error(EINVAL, "invalid --timeout '%s': give milliseconds from 1 to 600000",
				value);
	o->stop_timeout_ns = v * 1000000ull;
	return 0;
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
	struct opts_pids pids = { .max = DUMP_MAX_PIDS };
	bool json = false, summary_only = false;
	const struct opts_option options[] = {
		OPTS_CALL_ROW('p', "pid", &pids, "PID[,PID]", opts_pids_call,
			      "the processes (repeatable)"),
		OPTS_FLAG_ROW(0, "children", &o.children,
			      "also every descendant of them (the ranks under a launcher)"),
		OPTS_STRING_ROW(0, "cgroup", &o.cgroup, "PATH",
				"also every process of this cgroup v2 and below (/sys/fs/cgroup/...)"),
		OPTS_CALL_ROW(0, "format", &json, "text|json", opts_json_call,
			      "output format (default text)"),
		OPTS_FLAG_ROW(0, "summary", &summary_only, "text: the summary only"),
		{ .kind = OPTS_CALL, .long_name = "stack-size", .value = &o, .arg = "BYTES",
		  .call = dump_number_option, .number = 0,
		  .help = "stack bytes copied per thread (default 262144)" },
		OPTS_FLAG_ROW(0, "no-python", &o.no_python, "native frames only"),
		OPTS_FLAG_ROW(0, "no-gpu", &o.no_gpu, "do not look for GPU work in flight"),
		{ .kind = OPTS_CALL, .long_name = "timeout", .value = &o, .arg = "MS",
		  .call = dump_number_option, .number = 1,
		  .help = "give up on a thread that does not stop within MS (default 1000)" },
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("dump", options);
	int first, ret = opts_parse(&cmd, argc, argv, &first);

	if (!ret && first < argc)
		ret = cs_error(EINVAL, "unexpected argument '%s': give the processes with -p "
			       "PID[,PID...]", argv[first]);
	if (!ret && !pids.n && !o.cgroup)
		ret = cs_error(EINVAL, "nothing to dump: give -p PID[,PID...] or --cgroup PATH");
	if (!ret) {
		o.pids = pids.pids;
		o.npids = pids.n;
		ret = dump_and_print(&o, json, summary_only);
	} else {
		ret = opts_exit_status(ret);
	}
	free(pids.pids);
	return ret;
}
