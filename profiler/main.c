/* main.c: csampler's entry point: the subcommand table and the global options.
 * Adding a subcommand touches one row of csampler_commands and one line of cmds.h. */
#include "cmd/cmds.h"
#include "base/cs.h"

#include <errno.h>
#include <string.h>

static int cmd_version(int argc, char **argv)
{
	printf("csampler %s\n", CSAMPLER_VERSION);
	return 0;
}

struct csampler_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
};

static const struct csampler_command csampler_commands[] = {
	{ "record", cmd_record, "run a command (or attach to PIDs) and record a sampling profile" },
	{ "info", cmd_info, "show a data file's header and counts" },
	{ "report", cmd_report, "top functions, threads, libraries and unwind quality of a profile" },
	{ "folded", cmd_folded, "print a profile's stacks as folded text (FlameGraph, inferno)" },
	{ "flame", cmd_flame, "draw an interactive flame graph (SVG) from a profile or folded stacks" },
	{ "diff", cmd_diff, "draw a differential flame graph of two profiles (red grew, blue shrank)" },
	{ "merge", cmd_merge, "join data files of many processes (ranks, hosts) into one" },
	{ "export", cmd_export, "write a profile in another tool's format (Chrome trace timeline)" },
	{ "top", cmd_top, "a live view of the top functions (and GPU kernels) of a command or PIDs" },
	{ "dump", cmd_dump, "print every thread's stack, state and GPU work in flight of running processes" },
	{ "env", cmd_env, "run a command with GPU capture set up, for a later record -p" },
	{ "version", cmd_version, "print csampler's version" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: csampler [-q] [--version] COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(csampler_commands) / sizeof(csampler_commands[0]); i++)
		fprintf(f, "  %-8s %s\n", csampler_commands[i].name, csampler_commands[i].help);
	fprintf(f, "\n'csampler COMMAND --help' describes a command; man csampler has the details.\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			cs_quiet = 1;
		} else if (!strcmp(argv[i], "--version")) {
			printf("csampler %s\n", CSAMPLER_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			cs_error(EINVAL, "unknown option '%s'; see 'csampler --help'", argv[i]);
			return CS_EXIT_ERROR;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return CS_EXIT_ERROR;
	}
	for (size_t c = 0; c < sizeof(csampler_commands) / sizeof(csampler_commands[0]); c++)
		if (!strcmp(argv[i], csampler_commands[c].name))
			return csampler_commands[c].run(argc - i, argv + i);
	cs_error(EINVAL, "unknown command '%s'; see 'csampler --help'", argv[i]);
	return CS_EXIT_ERROR;
}
