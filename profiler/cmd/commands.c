/* commands.c: every subcommand in one table: its entry point, the line `csampler --help` lists
 * for it, and the text its own --help prints around its option table (usage, about, footer)
 * with its parsing flags. main.c dispatches through the table; each command takes its row for
 * opts_parse through cmd_describe(), with its man page csampler-NAME. Adding a command adds
 * one row here and one line to cmds.h. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "base/search.h"
#include "cmd/opts.h"

#include <string.h>

static int cmd_version(int argc, char **argv)
{
	printf("csampler %s\n", CSAMPLER_VERSION);
	return 0;
}

/* Each row: name, entry point, summary; usage; about (or NULL); footer (or NULL); flags. */
const struct cmd_entry cmd_entries[] = {
	/* record: the first operand starts the command, as in perf record */
	{ "record", cmd_record, "run a command (or attach to PIDs) and record a sampling profile",
	  "usage: csampler record [options] -- COMMAND [ARGS...]\n"
	  "       csampler record [options] -p PID[,PID...] [--duration SEC]\n"
	  "       csampler record --mode bpf -a|--cgroup PATH [--duration SEC]\n",
	  NULL, NULL, OPTS_STOP_AT_OPERAND },
	{ "info", cmd_info, "show a data file's header and counts",
	  "usage: csampler info [-i FILE] [--format text|json] [--gpu-records]\n",
	  "Show a data file's header and counts: samples, lost samples, duration, samples\n"
	  "per thread and per process, GPU records by kind, drops and the clock check.\n",
	  NULL, 0 },
	{ "report", cmd_report, "top functions, threads, libraries and unwind quality of a profile",
	  "usage: csampler report [-i FILE] [--sort self|total] [--limit N] [--pid PID]\n"
	  "                       [--tid TID] [--comm NAME] [--rank N] [--time SPEC]\n"
	  "                       [--format text|json] [--stdio] [--python-only]\n"
	  "                       [--compare BASE] [--steps [A-B]] [--step SPEC] [--ranks]\n",
	  "Print the top functions by self and total samples, per-process, per-thread and\n"
	  "per-library breakdowns, the hottest source lines and the unwind quality; with\n"
	  "GPU records, the kernel table, copies, utilisation, synchronisation and what it\n"
	  "waited for, launch-queue latency, launch sites, NVTX ranges and a verdict.\n",
	  NULL, 0 },
	{ "folded", cmd_folded, "print a profile's stacks as folded text (FlameGraph, inferno)",
	  "usage: csampler folded [-i FILE] [--cpu|--gpu|--both|--gpu-idle] [--per-thread]\n"
	  "                       [--pid PID] [--tid TID] [--comm NAME] [--rank N] [--time SPEC]\n"
	  "                       [--python-only]\n",
	  "Print the recorded stacks as folded text, one 'root;...;leaf COUNT' line per\n"
	  "distinct stack, with the annotations _[k] (kernel), _[i] (inlined), _[j] (JIT);\n"
	  "Python frames read 'function (file.py:line)' as py-spy writes them.\n",
	  NULL, 0 },
	{ "flame", cmd_flame, "draw an interactive flame graph (SVG) from a profile or folded stacks",
	  "usage: csampler flame [OPTIONS] [FILE...] > flame.svg\n",
	  "An interactive flame graph from csampler data files or folded stacks\n"
	  "(\"root;...;leaf COUNT\" lines), given as FILEs or on standard input (default:\n"
	  "./csampler.data). Options are flamegraph.pl's, with one or two dashes.\n",
	  NULL, OPTS_ONE_DASH_LONG },
	{ "diff", cmd_diff, "draw a differential flame graph of two profiles (red grew, blue shrank)",
	  "usage: csampler diff [OPTIONS] BEFORE AFTER > diff.svg\n",
	  "A differential flame graph on AFTER's shape: red grew, blue shrank, the\n"
	  "deeper the colour the larger the change in share of the total (AFTER's\n"
	  "share minus BEFORE's, in points: the change of 'csampler report --compare').\n"
	  "BEFORE and AFTER are csampler data files or folded stacks.\n",
	  NULL, OPTS_ONE_DASH_LONG },
	{ "merge", cmd_merge, "join data files of many processes (ranks, hosts) into one",
	  "usage: csampler merge -o OUTPUT [--no-compress] INPUT...\n",
	  "Join data files (one per rank of a torchrun or MPI run, from one host or many) into\n"
	  "one: every process is kept apart and labelled with its rank and host; pids that\n"
	  "clash between inputs are renumbered from 4194304 up, the original kept beside.\n"
	  "Readers select ranks with --rank N.\n",
	  NULL, 0 },
	{ "export", cmd_export, "write a profile in another tool's format (Chrome trace timeline)",
	  "usage: csampler export [--format NAME] [-o FILE] [-i FILE] [--pid PID] [--tid TID]\n"
	  "                       [--comm NAME] [--rank N] [--time SPEC]\n",
	  "Write a profile in another tool's format.\n",
	  NULL, 0 },
	{ "top", cmd_top, "a live view of the top functions (and GPU kernels) of a command or PIDs",
	  "usage: csampler top [options] -p PID[,PID...]\n"
	  "       csampler top [options] -- COMMAND [ARGS...]\n",
	  "A live view: the top functions by self and total samples (Python frames included),\n"
	  "refreshed every second, and the GPU kernels by GPU time when GPU records flow.\n",
	  "Keys: q quit, s sort by self/total, t threads, g GPU kernels/CPU functions, p or space\n"
	  "pause. NO_COLOR=1 draws without colour.\n",
	  OPTS_STOP_AT_OPERAND },
	{ "dump", cmd_dump, "print every thread's stack, state and GPU work in flight of running processes",
	  "usage: csampler dump -p PID[,PID...] [options]\n"
	  "       csampler dump --cgroup PATH [options]\n",
	  "Stop each process for the moment its threads are read (in parallel), print every thread's\n"
	  "stack (native and Python frames) and state, the GPU kernels launched and not finished\n"
	  "(processes with csampler's GPU library), and a summary of identical stacks across processes.\n",
	  "Exit status: 0 when at least one process was read (the others are named on stderr),\n"
	  "125 when none could be.\n",
	  0 },
	{ "env", cmd_env, "run a command with GPU capture set up, for a later record -p",
	  "usage: csampler env [--print] -- COMMAND [ARGS...]\n",
	  "Run COMMAND with CUDA GPU capture set up (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH,\n"
	  "CSAMPLER_GPU_DIR), so that 'csampler record -p PID' later also records its GPU work.\n"
	  "Records go to $CSAMPLER_GPU_DIR, or /tmp/csampler-gpu-UID (made private to you).\n",
	  NULL, OPTS_STOP_AT_OPERAND },
	{ "version", cmd_version, "print csampler's version", NULL, NULL, NULL, 0 },
};

const size_t cmd_nentries = sizeof(cmd_entries) / sizeof(cmd_entries[0]);

const struct cmd_entry *cmd_find(const char *name)
{
	return CS_FIND_NAME(cmd_entries, cmd_nentries, name, name);
}

struct opts_command cmd_describe(const char *name, const struct opts_option *options)
{
	const struct cmd_entry *e = cmd_find(name);
	struct opts_command c = { .name = name, .options = options };

	if (e) {
		c.usage = e->usage;
		c.about = e->about;
		c.footer = e->footer;
		c.flags = e->flags;
	}
	return c;
}
