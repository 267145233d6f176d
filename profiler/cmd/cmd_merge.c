/* cmd_merge.c: `csampler merge -o OUT IN...`: join the data files of a distributed run (one per
 * rank, host or process) into one, every process labelled with its rank and host. The engine is
 * format/merge.c; only option parsing lives here. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "format/merge.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

static void merge_usage(FILE *f)
{
	fprintf(f,
		"usage: csampler merge -o OUTPUT [--no-compress] INPUT...\n"
		"\n"
		"Join data files (one per rank of a torchrun or MPI run, from one host or many) into\n"
		"one: every process is kept apart and labelled with its rank and host; pids that\n"
		"clash between inputs are renumbered from 4194304 up, the original kept beside.\n"
		"Readers select ranks with --rank N.\n"
		"\n"
		"  -o, --output FILE    the merged file (required; an existing one becomes FILE.old)\n"
		"      --no-compress    write uncompressed chunks\n"
		"  -h, --help           show this help\n");
}

int cmd_merge(int argc, char **argv)
{
	enum { OPT_NO_COMPRESS = 256 };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "no-compress", no_argument, NULL, OPT_NO_COMPRESS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	bool compress = true;
	int c;

	optind = 0; /* glibc: start a fresh scan */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case OPT_NO_COMPRESS:
			compress = false;
			break;
		case 'h':
			merge_usage(stdout);
			return 0;
		case ':':
			cs_error(EINVAL, "merge: option '%s' needs a value; see 'csampler merge --help'",
				 argv[optind - 1]);
			return CS_EXIT_ERROR;
		default:
			cs_error(EINVAL, "merge: unknown option '%s'; see 'csampler merge --help'",
				 argv[optind - 1]);
			return CS_EXIT_ERROR;
		}
	}
	if (!output || !*output) {
		cs_error(EINVAL, "merge: give the merged file's name with -o FILE");
		return CS_EXIT_ERROR;
	}
	if (optind >= argc) {
		cs_error(EINVAL, "merge: give the data files to merge, e.g. 'csampler merge -o all.data "
			 "prof.*.data'");
		return CS_EXIT_ERROR;
	}
	struct cs_buf cmd = { 0 };
	cs_buf_printf(&cmd, "csampler");
	for (int i = 0; i < argc; i++)
		cs_buf_printf(&cmd, " %s", argv[i]);
	int err = df_merge(output, (const char *const *)argv + optind, (size_t)(argc - optind),
			   compress, cmd.data);
	cs_buf_free(&cmd);
	if (err)
		return CS_EXIT_ERROR;
	cs_info("merge: wrote %s (%d files)", output, argc - optind);
	return 0;
}
