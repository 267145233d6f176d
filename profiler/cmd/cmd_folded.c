/* cmd_folded.c: `csampler folded`: load a data file and print its stacks as folded text
 * ("root;...;leaf COUNT"), the input of FlameGraph and inferno. Folding is in stacks.c. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/filter.h"
#include "analysis/fold.h"
#include "analysis/profile.h"
#include "analysis/stacks.h"
#include "cmd/opts.h"
#include "cmd/opts_filter.h"

#include <errno.h>
#include <string.h>

/* Parse argv. Returns 0, 1 when --help was printed, or -EINVAL after one line. */
static int folded_parse_args(int argc, char **argv, const char **input, struct fold_opts *o,
			     struct profile_filter *filter, bool *python_only)
{
	const char *input_opt = NULL;
	bool per_thread = false;
	int source = o->source;
	const struct opts_option options[] = {
		OPTS_STRING_ROW('i', "input", &input_opt, "FILE",
				"data file to read (default ./csampler.data)"),
		OPTS_INT_ROW(0, "cpu", &source, FOLD_CPU, "CPU samples, counted in samples (the default)"),
		OPTS_INT_ROW(0, "gpu", &source, FOLD_GPU,
			     "GPU time in ns: each kernel, copy, memset and sync under the\n"
			     "CPU stack that launched it and the NVTX ranges around it"),
		OPTS_INT_ROW(0, "both", &source, FOLD_BOTH,
			     "a CPU root (samples times the sampling period) and a GPU\n"
			     "root, both in ns"),
		OPTS_INT_ROW(0, "gpu-idle", &source, FOLD_GPU_IDLE,
			     "only the CPU samples that fell in GPU idle time (what the\n"
			     "CPU did while its GPU had nothing to run), in samples"),
		OPTS_FLAG_ROW(0, "per-thread", &per_thread, "root frame 'comm-tid' instead of the process name"),
		OPTS_INCLUDE_ROW(opts_filter_options, filter),
		OPTS_FLAG_ROW(0, "python-only", python_only,
			      "stacks keep only their Python frames under the root, as\n"
			      "py-spy shows them (samples without any: the root alone)"),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("folded", options);
	int first, err = opts_parse(&cmd, argc, argv, &first);

	o->source = source;
	o->per_thread = per_thread;
	return err ? err : opts_input(&cmd, argc, argv, first, input_opt, input);
}

int cmd_folded(int argc, char **argv)
{
	struct fold_opts o = FOLD_OPTS_DEFAULT;
	struct profile_filter filter = PROFILE_FILTER_ALL;
	const char *input = "csampler.data";
	struct profile *p = NULL, view = { 0 };
	bool python_only = false;
	int status = CS_EXIT_ERROR;
	int err;

	err = folded_parse_args(argc, argv, &input, &o, &filter, &python_only);
	if (err)
		return opts_exit_status(err);
	if (profile_load_filtered(input, &filter, &p) < 0)
		goto out; /* profile_load printed why */
	if (o.source != FOLD_CPU && !p->ngpu_activities && p->filtered.text)
		cs_warn("folded: no GPU records of %s pass the filter (%s)", input, p->filtered.text);
	else if (o.source != FOLD_CPU && !p->ngpu_activities)
		cs_warn("folded: %s has no GPU records (record with 'csampler record --gpu on' on a "
			"CUDA program)", input);
	if (o.source == FOLD_BOTH && !fold_cpu_period_ns(p)) {
		cs_error(EINVAL, "folded: %s does not say its sampling rate (rate_hz), so CPU "
			 "samples cannot be turned into time; use --cpu or --gpu", input);
		goto out;
	}
	if (python_only)
		stacks_python_view(p, &view);
	err = fold_write_folded(stdout, python_only ? &view : p, &o);
	if (err == -EIO || (!err && fflush(stdout) == EOF)) {
		cs_error(EIO, "folded: writing to standard output: %s", strerror(errno ? errno : EIO));
		goto out;
	}
	if (err < 0) {
		cs_error(-err, "folded: folding %s failed: %s", input, strerror(-err));
		goto out;
	}
	status = 0;
out:
	if (python_only)
		stacks_python_view_free(&view);
	if (p)
		profile_free(p);
	return status;
}
