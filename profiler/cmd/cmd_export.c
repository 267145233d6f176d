/* cmd_export.c: `csampler export`: load a data file and write it in another tool's format,
 * chosen from the table in export/export.h. A file is written beside its final name and
 * renamed into place, so a failed export never leaves half a file (nor replaces a good one). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/filter.h"
#include "analysis/profile.h"
#include "cmd/opts.h"
#include "cmd/opts_filter.h"
#include "export/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct export_args {
	const char *input, *output;
	const struct export_format *format;
	struct profile_filter filter;
};

/* -f NAME: one of export_formats. */
static int export_format_option(const char *cmd, const struct opts_option *row,
				const char *value, void *target)
{
	struct export_args *a = target;
	a->format = export_find(value);
	if (a->format)
		return 0;
	struct cs_buf names = { 0 };
	for (size_t i = 0; i < export_nformats; i++)
		cs_buf_printf(&names, "%s%s", i ? ", " : "", export_formats[i].name);
	cs_buf_put(&names, "", 1);
	cs_error(EINVAL, "export: unknown format '%s'; the formats are: %s", value, names.data);
	cs_buf_free(&names);
	return -EINVAL;
}

/* Parse argv. Returns 0, 1 when --help was printed, or -EINVAL after one line. */
static int export_parse_args(int argc, char **argv, struct export_args *a)
{
	const char *input = NULL;
	struct cs_buf format_help = { 0 };
	cs_buf_printf(&format_help, "output format (default chrome), one of:");
	for (size_t i = 0; i < export_nformats; i++)
		cs_buf_printf(&format_help, "\n  %-10s %s", export_formats[i].name,
			      export_formats[i].description);
	cs_buf_put(&format_help, "", 1);
	const struct opts_option options[] = {
		OPTS_CALL_ROW('f', "format", a, "NAME", export_format_option, format_help.data),
		OPTS_STRING_ROW('o', "output", &a->output, "FILE",
				"file to write (default: standard output)"),
		OPTS_STRING_ROW('i', "input", &input, "FILE",
				"data file to read (default ./csampler.data)"),
		OPTS_INCLUDE_ROW(opts_filter_options, &a->filter),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("export", options);
	int first, err = opts_parse(&cmd, argc, argv, &first);

	cs_buf_free(&format_help);
	if (!err)
		err = opts_input(&cmd, argc, argv, first, input, &a->input);
	if (err)
		return err;
	if (a->output && !*a->output)
		return cs_error(EINVAL, "export: -o needs a file name");
	return 0;
}

/* Check where the export goes before the (slow) load: not a directory, not the input.
 * *in_place is set for an existing special file (a FIFO, /dev/null), written directly. */
static int export_check_output(const struct export_args *a, bool *in_place)
{
	struct stat out, in;

	*in_place = false;
	if (stat(a->output, &out) < 0) {
		if (errno == ENOENT)
			return 0;
		return cs_error(errno, "export: stat %s: %s; check the path", a->output,
				strerror(errno));
	}
	if (S_ISDIR(out.st_mode))
		return cs_error(EISDIR, "export: %s is a directory; give a file name with -o",
				a->output);
	if (stat(a->input, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
		return cs_error(EINVAL, "export: %s is the input data file; give another name with -o",
				a->output);
	*in_place = !S_ISREG(out.st_mode);
	return 0;
}

/* Write p to a->output (through a temporary file renamed into place) or to standard output. */
static int export_write(const struct export_args *a, const struct profile *p, bool in_place)
{
	char *tmp = NULL;
	FILE *f = stdout;
	int err;

	if (a->output) {
		tmp = in_place ? cs_strdup(a->output) :
				 cs_asprintf("%s.tmp.%ld", a->output, (long)getpid());
		f = fopen(tmp, "w");
		if (!f) {
			err = cs_error(errno, "export: cannot create %s: %s; check that its directory "
				       "exists and is writable", a->output, strerror(errno));
			free(tmp);
			return err;
		}
	}
	errno = 0;
	err = a->format->write(f, p);
	if (!err && fflush(f) == EOF)
		err = -EIO;
	if (err == -EIO)
		cs_error(EIO, "export: writing %s: %s; check the free space",
			 a->output ? a->output : "standard output", strerror(errno ? errno : EIO));
	if (a->output) {
		if (fclose(f) == EOF && !err)
			err = cs_error(errno, "export: closing %s: %s; check the free space", tmp,
				       strerror(errno));
		if (!err && !in_place && rename(tmp, a->output) < 0)
			err = cs_error(errno, "export: rename %s to %s: %s", tmp, a->output,
				       strerror(errno));
		if (err && !in_place)
			unlink(tmp);
		free(tmp);
	}
	return err;
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = { .input = "csampler.data", .format = &export_formats[0],
				 .filter = PROFILE_FILTER_ALL };
	struct profile *p = NULL;
	bool in_place = false;
	int err;

	err = export_parse_args(argc, argv, &a);
	if (err)
		return opts_exit_status(err);
	if (a.output && !strcmp(a.output, "-"))
		a.output = NULL;
	if (a.output && export_check_output(&a, &in_place) < 0)
		return CS_EXIT_ERROR;
	if (profile_load_filtered(a.input, &a.filter, &p) < 0)
		return CS_EXIT_ERROR; /* profile_load printed why */
	err = export_write(&a, p, in_place);
	profile_free(p);
	if (!err && a.output)
		cs_info("export: wrote %s (%s)", a.output, a.format->name);
	return err ? CS_EXIT_ERROR : 0;
}
