/* main.c: csampler's entry point: the global options, and the dispatch to a subcommand.
 * The subcommands are the rows of cmd_entries (cmd/commands.c). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"

#include <errno.h>
#include <string.h>

/* --version: print it, and stop with status 0. */
static int csampler_version_option(const char *cmd, const struct opts_option *row,
				   const char *value, void *target)
{
	cmd_find("version")->run(0, NULL);
	return 1;
}

int main(int argc, char **argv)
{
	struct cs_buf commands = { 0 };
	const struct opts_option options[] = {
		OPTS_INT_ROW('q', "quiet", &cs_quiet, 1, "print no summary or progress on standard error"),
		OPTS_CALL_ROW(0, "version", NULL, NULL, csampler_version_option,
			      "print csampler's version"),
		OPTS_END_ROW,
	};
	cs_buf_printf(&commands, "commands:\n");
	for (size_t i = 0; i < cmd_nentries; i++)
		cs_buf_printf(&commands, "  %-8s %s\n", cmd_entries[i].name, cmd_entries[i].summary);
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
	const struct cmd_entry *e = status < 0 ? cmd_find(argv[i]) : NULL;
	if (e)
		status = e->run(argc - i, argv + i);
	if (status < 0) {
		cs_error(EINVAL, "unknown command '%s'; see 'csampler --help'", argv[i]);
		status = CS_EXIT_ERROR;
	}
	cs_buf_free(&commands);
	return status;
}
