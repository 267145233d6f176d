/* cmd_folded.c: `csampler folded`: load a data file and print its stacks as folded text
 * ("root;...;leaf COUNT"), the input of FlameGraph and inferno. Folding is in stacks.c. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/filter.h"
#include "analysis/fold.h"
#include "analysis/profile.h"
#include "analysis/stacks.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

static void folded_usage(FILE *f)
{
	fprintf(f,
		"usage: csampler folded [-i FILE] [--cpu|--gpu|--both|--gpu-idle] [--per-thread]\n"
		"                       [--pid PID] [--tid TID] [--comm NAME] [--rank N] [--time SPEC]\n"
		"                       [--python-only]\n"
		"\n"
		"Print the recorded stacks as folded text, one 'root;...;leaf COUNT' line per\n"
		"distinct stack, with the annotations _[k] (kernel), _[i] (inlined), _[j] (JIT);\n"
		"Python frames read 'function (file.py:line)' as py-spy writes them.\n"
		"\n"
		"  -i, --input FILE     data file to read (default ./csampler.data)\n"
		"      --cpu            CPU samples, counted in samples (the default)\n"
		"      --gpu            GPU time in ns: each kernel, copy, memset and sync under the\n"
		"                       CPU stack that launched it and the NVTX ranges around it\n"
		"      --both           a CPU root (samples times the sampling period) and a GPU\n"
		"                       root, both in ns\n"
		"      --gpu-idle       only the CPU samples that fell in GPU idle time (what the\n"
		"                       CPU did while its GPU had nothing to run), in samples\n"
		"      --per-thread     root frame 'comm-tid' instead of the process name\n"
		PROFILE_FILTER_HELP
		"      --python-only    stacks keep only their Python frames under the root, as\n"
		"                       py-spy shows them (samples without any: the root alone)\n"
		"  -h, --help           show this help\n");
}

/* Parse argv. Returns 0, 1 when --help was printed, or -EINVAL after one line. */
static int folded_parse_args(int argc, char **argv, const char **input, struct fold_opts *o,
			     struct profile_filter *filter, bool *python_only)
{
	enum { OPT_PER_THREAD = 256, OPT_CPU, OPT_GPU, OPT_BOTH, OPT_GPU_IDLE, OPT_PYTHON_ONLY };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		PROFILE_FILTER_LONGOPTS,
		{ "cpu", no_argument, NULL, OPT_CPU },
		{ "gpu", no_argument, NULL, OPT_GPU },
		{ "both", no_argument, NULL, OPT_BOTH },
		{ "gpu-idle", no_argument, NULL, OPT_GPU_IDLE },
		{ "python-only", no_argument, NULL, OPT_PYTHON_ONLY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool input_given = false;
	int c, err;

	optind = 0; /* glibc: start a fresh scan */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			*input = optarg;
			input_given = true;
			break;
		case OPT_PER_THREAD:
			o->per_thread = 1;
			break;
		case OPT_CPU:
			o->source = FOLD_CPU;
			break;
		case OPT_GPU:
			o->source = FOLD_GPU;
			break;
		case OPT_BOTH:
			o->source = FOLD_BOTH;
			break;
		case OPT_GPU_IDLE:
			o->source = FOLD_GPU_IDLE;
			break;
		case OPT_PYTHON_ONLY:
			*python_only = true;
			break;
		case 'h':
			folded_usage(stdout);
			return 1;
		case ':':
			return cs_error(EINVAL, "folded: option '%s' needs a value; see 'csampler "
					"folded --help'", argv[optind - 1]);
		default:
			err = profile_filter_option(filter, "folded", c, optarg);
			if (err < 0)
				return err;
			if (err == 0)
				break;
			return cs_error(EINVAL, "folded: unknown option '%s'; see 'csampler folded "
					"--help'", argv[optind - 1]);
		}
	}
	if (optind < argc && !input_given)
		*input = argv[optind++];
	if (optind < argc)
		return cs_error(EINVAL, "folded: unexpected argument '%s'; see 'csampler folded "
				"--help'", argv[optind]);
	return 0;
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
		return err > 0 ? 0 : CS_EXIT_ERROR;
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
