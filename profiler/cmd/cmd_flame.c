/* cmd_flame.c: `csampler flame`, an interactive flame graph (SVG) from csampler data files or
 * folded stacks, a drop-in for flamegraph.pl; and `csampler diff BEFORE AFTER`, a differential
 * flame graph drawn on AFTER's shape, red where a frame's share of the samples grew and blue
 * where it shrank. Both take one table of options (flamegraph.pl's, with one or two dashes and
 * "=VALUE" or a separate argument, as its Getopt::Long reads them); the engine is in
 * flamegraph/ (flame.h). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"
#include "cmd/opts_filter.h"
#include "../flamegraph/flame.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What the options fill: the engine's options and the growing list of inputs. */
struct flame_args {
	struct flame_opts *o;
	size_t inputs_cap;
};

static void flame_add_input(struct flame_args *a, const char *path)
{
	cs_grow(&a->o->inputs, &a->inputs_cap, a->o->ninputs + 1, sizeof(*a->o->inputs));
	a->o->inputs[a->o->ninputs++] = path;
}

/* -i FILE: one more input. */
static int flame_input_option(const char *cmd, const struct opts_option *row, const char *value,
			      void *target)
{
	flame_add_input(target, value);
	return 0;
}

/* --width, --height, --fontsize, --fontwidth, --factor: a positive number. */
static int flame_number_option(const char *cmd, const struct opts_option *row,
			       const char *value, void *target)
{
	double d;
	if (cs_parse_double(value, &d) || !(d > 0))
		return cs_error(EINVAL, "--%s: '%s' is not a positive number", row->long_name, value);
	*(double *)target = d;
	return 0;
}

/* --minwidth PX or N%: target is the minwidth field of a struct flame_opts. */
static int flame_minwidth_option(const char *cmd, const struct opts_option *row,
				 const char *value, void *target)
{
	struct flame_opts *o = (void *)((char *)target - offsetof(struct flame_opts, minwidth));
	char num[64];
	size_t n = strlen(value);
	bool pct = n > 0 && value[n - 1] == '%';
	double d;

	if (n - pct >= sizeof(num))
		n = sizeof(num) - 1 + pct;
	memcpy(num, value, n - pct);
	num[n - pct] = 0;
	if (cs_parse_double(num, &d) || d < 0 || (pct && d > 100))
		return cs_error(EINVAL, "--minwidth: '%s' is neither pixels (0.1) nor a percentage of "
				"the total (0.5%%)", value);
	o->minwidth = d;
	o->minwidth_pct = pct;
	return 0;
}

/* diff --rank N, or A,B: BEFORE is rank A and AFTER rank B. */
static int flame_diff_rank_option(const char *cmd, const struct opts_option *row,
				  const char *value, void *target)
{
	struct flame_opts *o = target;
	const char *comma = strchr(value, ',');
	struct profile_filter a = PROFILE_FILTER_ALL, b = PROFILE_FILTER_ALL;
	char first[32];

	if (!comma)
		return opts_filter_set(&o->filter, cmd, "rank", value) ? -EINVAL : 0;
	snprintf(first, sizeof(first), "%.*s", (int)(comma - value), value);
	if (opts_filter_set(&a, cmd, "rank", first) || opts_filter_set(&b, cmd, "rank", comma + 1))
		return -EINVAL;
	o->diff_ranks[0] = a.rank;
	o->diff_ranks[1] = b.rank;
	return 0;
}

#define FLAME_STRING(l, field, argname, text, flag) { .kind = OPTS_STRING, .long_name = (l), \
		.value = &o->field, .arg = (argname), .help = (text), .flags = (flag) }
#define FLAME_NUMBER(l, field, argname, text) { .kind = OPTS_CALL, .long_name = (l), \
		.value = &o->field, .arg = (argname), .call = flame_number_option, \
		.help = (text), .flags = OPTS_DEFAULT_DOUBLE }

/* A row and the commands (enum flame_mode bits) that take it. */
struct flame_row {
	unsigned modes;
	struct opts_option row;
};
#define FLAME_BOTH (FLAME_MODE_FLAME | FLAME_MODE_DIFF)

/* The rows of mode, into out (room for n): flame's and diff's differ in a few. */
static void flame_rows(struct flame_args *a, enum flame_mode mode, struct opts_option *out,
		       size_t n)
{
	struct flame_opts *o = a->o;
	const struct flame_row rows[] = {
		{ FLAME_BOTH, OPTS_STRING_ROW('o', "output", &o->output, "FILE",
					      "write the SVG to FILE instead of standard output") },
		{ FLAME_MODE_FLAME, OPTS_CALL_ROW('i', "input", a, "FILE", flame_input_option,
						  "read FILE (same as naming it as an argument)") },
		{ FLAME_BOTH, FLAME_STRING("title", title, "TEXT",
			"title (default: Flame Graph, Icicle Graph, Flame Chart ...)", 0) },
		{ FLAME_BOTH, FLAME_STRING("subtitle", subtitle, "TEXT", "second title line", 0) },
		{ FLAME_BOTH, FLAME_NUMBER("width", width, "PX", "image width") },
		{ FLAME_BOTH, FLAME_NUMBER("height", frame_height, "PX", "height of a frame") },
		{ FLAME_BOTH, { .kind = OPTS_CALL, .long_name = "minwidth", .value = &o->minwidth,
				.arg = "PX|N%", .call = flame_minwidth_option,
				.flags = OPTS_DEFAULT_DOUBLE,
				.help = "merge frames narrower than PX pixels (or N% of the total) into one\n"
					"\"[N other frames]\" frame per parent" } },
		{ FLAME_BOTH, FLAME_STRING("countname", countname, "TEXT", "what the counts are",
					   OPTS_DEFAULT_STRING) },
		{ FLAME_BOTH, FLAME_STRING("nametype", nametype, "TEXT",
			"label before a frame's name in the details line", OPTS_DEFAULT_STRING) },
		{ FLAME_BOTH, FLAME_STRING("colors", colors, "PALETTE",
			"type (by frame type, with a legend), or flamegraph.pl's\n"
			"hot, mem, io, wakeup, chain, java, js, perl, red, green,\n"
			"blue, aqua, yellow, purple, orange", OPTS_DEFAULT_STRING) },
		{ FLAME_BOTH, FLAME_STRING("bgcolors", bgcolors, "COLOR",
			"background: yellow, blue, green, grey or #rrggbb", 0) },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "hash", &o->hash,
			"colour by name hash (always so: a name keeps its colour across graphs)") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "cp", &o->hash, "same as --hash") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "random", &o->random,
					    "vary colours per frame instead of per name") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "inverted", &o->inverted, "icicle graph: roots at the top") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "reverse", &o->reverse,
					    "reverse the stacks: merge from the leaves") },
		{ FLAME_MODE_FLAME, OPTS_FLAG_ROW(0, "flamechart", &o->flamechart,
			"time order, merging only neighbours (data files: sample by sample)") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "negate", &o->negate,
					    "differential colours swapped: blue grew, red shrank") },
		{ FLAME_BOTH, FLAME_STRING("fonttype", fonttype, "FONT", "font family",
					   OPTS_DEFAULT_STRING) },
		{ FLAME_BOTH, FLAME_NUMBER("fontsize", fontsize, "PX", "font size") },
		{ FLAME_BOTH, FLAME_NUMBER("fontwidth", fontwidth, "F",
			"average character width relative to the font size") },
		{ FLAME_BOTH, FLAME_NUMBER("factor", factor, "F", "multiply counts by F") },
		{ FLAME_BOTH, FLAME_STRING("notes", notes, "TEXT", "notes kept in the SVG", 0) },
		{ FLAME_BOTH, OPTS_INT_ROW(0, "cpu", &o->source, FOLD_CPU,
					   "data files: CPU samples (the default)") },
		{ FLAME_BOTH, OPTS_INT_ROW(0, "gpu", &o->source, FOLD_GPU,
			"data files: GPU time (ns) of kernels, copies, memsets and\n"
			"syncs under their CPU launch stacks and NVTX ranges") },
		{ FLAME_BOTH, OPTS_INT_ROW(0, "both", &o->source, FOLD_BOTH,
			"data files: a CPU root (samples x sampling period) and a\n"
			"GPU root, both in ns") },
		{ FLAME_BOTH, OPTS_INT_ROW(0, "gpu-idle", &o->source, FOLD_GPU_IDLE,
			"data files: only the CPU samples that fell in GPU idle\n"
			"time, in samples; tooltips give the idle ms they explain") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "per-thread", &o->per_thread,
			"data files: one root frame per thread (comm-tid)") },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "python-only", &o->python_only,
			"data files: only the Python frames of each stack, under its\n"
			"root (py-spy's look)") },
		/* before the filters' --rank N: the first exact name wins */
		{ FLAME_MODE_DIFF, OPTS_CALL_ROW(0, "rank", o, "N|A,B", flame_diff_rank_option,
			"data files: only processes of rank N (csampler merge);\n"
			"A,B: BEFORE is rank A and AFTER rank B (one merged\n"
			"file may be given once: diff --rank 0,1 all.data)") },
		{ FLAME_BOTH, OPTS_INCLUDE_ROW(opts_filter_options, &o->filter) },
		{ FLAME_BOTH, OPTS_FLAG_ROW(0, "dump-layout", &o->dump_layout,
			"print the frames' geometry as text instead of the SVG") },
	};
	size_t k = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && k + 1 < n; i++)
		if (rows[i].modes & mode)
			out[k++] = rows[i].row;
	out[k] = (struct opts_option)OPTS_END_ROW;
}

/* Parse argv into *o. Returns 0, 1 when --help was printed, or -EINVAL after one line;
 * o->inputs is allocated then (free it with free()), its strings argv's. */
static int flame_parse_args(int argc, char **argv, enum flame_mode mode, struct flame_opts *o)
{
	struct flame_args a = { .o = o };
	struct opts_option options[48];
	bool diff = mode == FLAME_MODE_DIFF;
	int first, err;

	flame_opts_init(o);
	flame_rows(&a, mode, options, sizeof(options) / sizeof(options[0]));
	const struct opts_command cmd = cmd_describe(diff ? "diff" : "flame", options);
	err = opts_parse(&cmd, argc, argv, &first);
	for (int i = first; !err && i < argc; i++)
		flame_add_input(&a, argv[i]);
	/* diff --rank A,B of one merged file: the file is both BEFORE and AFTER */
	if (!err && diff && o->diff_ranks[0] >= 0 && o->ninputs == 1)
		flame_add_input(&a, o->inputs[0]);
	if (!err)
		err = flame_opts_check(o, mode);
	if (err) {
		free(o->inputs);
		o->inputs = NULL;
	}
	return err;
}

static int flame_command(int argc, char **argv, enum flame_mode mode)
{
	struct flame_opts o;
	int err = flame_parse_args(argc, argv, mode, &o);
	if (err)
		return opts_exit_status(err);
	int status = flame_run(&o, mode);
	free(o.inputs);
	return status;
}

int cmd_flame(int argc, char **argv)
{
	return flame_command(argc, argv, FLAME_MODE_FLAME);
}

int cmd_diff(int argc, char **argv)
{
	return flame_command(argc, argv, FLAME_MODE_DIFF);
}
