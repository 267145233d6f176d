/* cmd_merge.c: `csampler merge -o OUT IN...`: join the data files of a distributed run (one per
 * rank, host or process) into one, every process labelled with its rank and host. The engine is
 * format/merge.c; only option parsing lives here. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"
#include "format/merge.h"

#include <errno.h>
#include <string.h>

int cmd_merge(int argc, char **argv)
{
	const char *output = NULL;
	bool no_compress = false;
	const struct opts_option options[] = {
		OPTS_STRING_ROW('o', "output", &output, "FILE",
				"the merged file (required; an existing one becomes FILE.old)"),
		OPTS_FLAG_ROW(0, "no-compress", &no_compress, "write uncompressed chunks"),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("merge", options);
	int optind, err = opts_parse(&cmd, argc, argv, &optind);

	if (err)
		return opts_exit_status(err);
	if (!output || !*output) {
		cs_error(EINVAL, "merge: give the merged file's name with -o FILE");
		return CS_EXIT_ERROR;
	}
	if (optind >= argc) {
		cs_error(EINVAL, "merge: give the data files to merge, e.g. 'csampler merge -o all.data "
			 "prof.*.data'");
		return CS_EXIT_ERROR;
	}
	struct cs_buf line = { 0 };
	cs_buf_printf(&line, "csampler");
	for (int i = 0; i < argc; i++)
		cs_buf_printf(&line, " %s", argv[i]);
	err = df_merge(output, (const char *const *)argv + optind, (size_t)(argc - optind),
		       !no_compress, line.data);
	cs_buf_free(&line);
	if (err)
		return CS_EXIT_ERROR;
	cs_info("merge: wrote %s (%d files)", output, argc - optind);
	return 0;
}
