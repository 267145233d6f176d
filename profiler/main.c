/* main.c: csampler's entry point: the subcommand table and the global options.
 * Adding a subcommand touches one row of csampler_commands and one line of cmds.h. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"

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

#define CSAMPLER_NCOMMANDS (sizeof(csampler_commands) / sizeof(csampler_commands[0]))

/* --version: print it, and stop with status 0. */
static int csampler_version_option(const char *cmd, const struct opts_option *row,
				   const char *value, void *target)
{
	cmd_version(0, NULL);
	return 1;
}

int main(int argc, char **argv)
{
	struct cs_buf commands = { 0 };
	const struct opts_option options[] = {
		OPTS_INT_ROW('q', "quiet", &cs_quiet, 1, "print no summary or progress on standard error"),
		OPTS_CALL_ROW(0, "version", NULL, NULL, csampler_version_option,
			      "print csampler's version"),
		OPTS_HELP_ROW,
		OPTS_END_ROW,
	};
	cs_buf_printf(&commands, "commands:\n");
	for (size_t i = 0; i < CSAMPLER_NCOMMANDS; i++)
		cs_buf_printf(&commands, "  %-8s %s\n", csampler_commands[i].name,
			      csampler_commands[i].help);
	cs_buf_printf(&commands, "\n'csampler COMMAND --help' describes a command.\n");
	cs_buf_put(&commands, "", 1);
	const struct opts_command cmd = {
		.name = "",
		.usage = "usage: csampler [-q] [--version] COMMAND [ARGS]\n",
		.about = commands.data,
		.man = "csampler",
		.options = options,
		.flags = OPTS_STOP_AT_OPERAND,
	};
	int i, status = -1, err = opts_parse(&cmd, argc, argv, &i);

	if (err) {
		status = opts_exit_status(err);
	} else if (i >= argc) {
		opts_usage(&cmd, stderr);
		status = CS_EXIT_ERROR;
	}
	for (size_t c = 0; status < 0 && c < CSAMPLER_NCOMMANDS; c++)
		if (!strcmp(argv[i], csampler_commands[c].name))
			status = csampler_commands[c].run(argc - i, argv + i);
	if (status < 0) {
		cs_error(EINVAL, "unknown command '%s'; see 'csampler --help'", argv[i]);
		status = CS_EXIT_ERROR;
	}
	cs_buf_free(&commands);
	return status;
}
