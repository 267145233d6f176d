/* flame_opts.c: the options of `csampler flame` and `csampler diff`, one table that both the
 * parser and --help read, so the help cannot drift from the defaults. Long options take one or
 * two dashes and "=VALUE" or a separate argument, as flamegraph.pl's Getopt::Long does, so
 * that csampler flame drops in for flamegraph.pl. */
#include "flame.h"
#include "base/cs.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum flame_opt_type {
	FLAME_OPT_STR,      /* const char * */
	FLAME_OPT_NUM,      /* double */
	FLAME_OPT_FLAG,     /* bool, set to true */
	FLAME_OPT_MINWIDTH, /* double + "%" suffix into minwidth_pct */
	FLAME_OPT_FILTER,   /* a reader filter of analysis/filter.h, into o->filter */
	FLAME_OPT_INPUT,    /* appended to inputs */
	FLAME_OPT_SOURCE,   /* int, enum fold_source named by the option: cpu, gpu, both */
	FLAME_OPT_HELP,
};

struct flame_optdef {
	const char *name;
	char shortname;
	enum flame_opt_type type;
	size_t off;
	unsigned modes;     /* FLAME_MODE_* that take it */
	const char *arg;
	const char *help;
};

#define FLAME_BOTH (FLAME_MODE_FLAME | FLAME_MODE_DIFF)
#define FO(field) offsetof(struct flame_opts, field)

static const struct flame_optdef flame_optdefs[] = {
	{ "output", 'o', FLAME_OPT_STR, FO(output), FLAME_BOTH, "FILE",
	  "write the SVG to FILE instead of standard output" },
	{ "input", 'i', FLAME_OPT_INPUT, 0, FLAME_MODE_FLAME, "FILE",
	  "read FILE (same as naming it as an argument)" },
	{ "title", 0, FLAME_OPT_STR, FO(title), FLAME_BOTH, "TEXT",
	  "title (default: Flame Graph, Icicle Graph, Flame Chart ...)" },
	{ "subtitle", 0, FLAME_OPT_STR, FO(subtitle), FLAME_BOTH, "TEXT", "second title line" },
	{ "width", 0, FLAME_OPT_NUM, FO(width), FLAME_BOTH, "PX", "image width" },
	{ "height", 0, FLAME_OPT_NUM, FO(frame_height), FLAME_BOTH, "PX", "height of a frame" },
	{ "minwidth", 0, FLAME_OPT_MINWIDTH, FO(minwidth), FLAME_BOTH, "PX|N%",
	  "merge frames narrower than PX pixels (or N% of the total) into one\n"
	  "\"[N other frames]\" frame per parent" },
	{ "countname", 0, FLAME_OPT_STR, FO(countname), FLAME_BOTH, "TEXT",
	  "what the counts are" },
	{ "nametype", 0, FLAME_OPT_STR, FO(nametype), FLAME_BOTH, "TEXT",
	  "label before a frame's name in the details line" },
	{ "colors", 0, FLAME_OPT_STR, FO(colors), FLAME_BOTH, "PALETTE",
	  "type (by frame type, with a legend), or flamegraph.pl's\n"
	  "hot, mem, io, wakeup, chain, java, js, perl, red, green,\n"
	  "blue, aqua, yellow, purple, orange" },
	{ "bgcolors", 0, FLAME_OPT_STR, FO(bgcolors), FLAME_BOTH, "COLOR",
	  "background: yellow, blue, green, grey or #rrggbb" },
	{ "hash", 0, FLAME_OPT_FLAG, FO(hash), FLAME_BOTH, NULL,
	  "colour by name hash (always so: a name keeps its colour across graphs)" },
	{ "cp", 0, FLAME_OPT_FLAG, FO(hash), FLAME_BOTH, NULL, "same as --hash" },
	{ "random", 0, FLAME_OPT_FLAG, FO(random), FLAME_BOTH, NULL,
	  "vary colours per frame instead of per name" },
	{ "inverted", 0, FLAME_OPT_FLAG, FO(inverted), FLAME_BOTH, NULL,
	  "icicle graph: roots at the top" },
	{ "reverse", 0, FLAME_OPT_FLAG, FO(reverse), FLAME_BOTH, NULL,
	  "reverse the stacks: merge from the leaves" },
	{ "flamechart", 0, FLAME_OPT_FLAG, FO(flamechart), FLAME_MODE_FLAME, NULL,
	  "time order, merging only neighbours (data files: sample by sample)" },
	{ "negate", 0, FLAME_OPT_FLAG, FO(negate), FLAME_BOTH, NULL,
	  "differential colours swapped: blue grew, red shrank" },
	{ "fonttype", 0, FLAME_OPT_STR, FO(fonttype), FLAME_BOTH, "FONT", "font family" },
	{ "fontsize", 0, FLAME_OPT_NUM, FO(fontsize), FLAME_BOTH, "PX", "font size" },
	{ "fontwidth", 0, FLAME_OPT_NUM, FO(fontwidth), FLAME_BOTH, "F",
	  "average character width relative to the font size" },
	{ "factor", 0, FLAME_OPT_NUM, FO(factor), FLAME_BOTH, "F", "multiply counts by F" },
	{ "notes", 0, FLAME_OPT_STR, FO(notes), FLAME_BOTH, "TEXT", "notes kept in the SVG" },
	{ "cpu", 0, FLAME_OPT_SOURCE, FO(source), FLAME_BOTH, NULL,
	  "data files: CPU samples (the default)" },
	{ "gpu", 0, FLAME_OPT_SOURCE, FO(source), FLAME_BOTH, NULL,
	  "data files: GPU time (ns) of kernels, copies, memsets and\n"
	  "syncs under their CPU launch stacks and NVTX ranges" },
	{ "both", 0, FLAME_OPT_SOURCE, FO(source), FLAME_BOTH, NULL,
	  "data files: a CPU root (samples x sampling period) and a\n"
	  "GPU root, both in ns" },
	{ "gpu-idle", 0, FLAME_OPT_SOURCE, FO(source), FLAME_BOTH, NULL,
	  "data files: only the CPU samples that fell in GPU idle\n"
	  "time, in samples; tooltips give the idle ms they explain" },
	{ "per-thread", 0, FLAME_OPT_FLAG, FO(per_thread), FLAME_BOTH, NULL,
	  "data files: one root frame per thread (comm-tid)" },
	{ "python-only", 0, FLAME_OPT_FLAG, FO(python_only), FLAME_BOTH, NULL,
	  "data files: only the Python frames of each stack, under its\n"
	  "root (py-spy's look)" },
	{ "pid", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, "PID", "data files: only this process" },
	{ "tid", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, "TID", "data files: only this thread" },
	{ "comm", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, "NAME",
	  "data files: only threads (or processes) named NAME" },
	{ "rank", 0, FLAME_OPT_FILTER, 0, FLAME_MODE_FLAME, "N",
	  "data files: only processes of rank N (csampler merge)" },
	{ "rank", 0, FLAME_OPT_FILTER, 0, FLAME_MODE_DIFF, "N|A,B",
	  "data files: only processes of rank N (csampler merge);\n"
	  "A,B: BEFORE is rank A and AFTER rank B (one merged\n"
	  "file may be given once: diff --rank 0,1 all.data)" },
	{ "time", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, "SPEC",
	  "data files: only a time window: START,END in seconds\n"
	  "from the start, or percent slices 10%/2, 0%-10%" },
	{ "step", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, "SPEC",
	  "data files: where a step starts: an NVTX range name or a\n"
	  "function (default: NVTX ranges named step or iteration)" },
	{ "steps", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, "A-B",
	  "data files: only steps A to B (1-based; A, A- to the end)" },
	{ "idle", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, NULL,
	  "data files of record --idle: only threads off the CPU" },
	{ "no-idle", 0, FLAME_OPT_FILTER, 0, FLAME_BOTH, NULL,
	  "data files: only threads on the CPU" },
	{ "dump-layout", 0, FLAME_OPT_FLAG, FO(dump_layout), FLAME_BOTH, NULL,
	  "print the frames' geometry as text instead of the SVG" },
	{ "help", 'h', FLAME_OPT_HELP, 0, FLAME_BOTH, NULL, "this help" },
};

#define FLAME_NOPTS (sizeof(flame_optdefs) / sizeof(flame_optdefs[0]))

static const struct flame_opts flame_opts_defaults = {
	.countname = "samples",
	.nametype = "Function:",
	.fonttype = "Verdana",
	.colors = "type",
	.width = 1200,
	.frame_height = 16,
	.fontsize = 12,
	.fontwidth = 0.59,
	.minwidth = 0.1,
	.factor = 1,
	.filter = PROFILE_FILTER_ALL,
	.diff_ranks = { -1, -1 },
};

void flame_opts_usage(FILE *f, enum flame_mode mode)
{
	const struct flame_opts *d = &flame_opts_defaults;
	if (mode == FLAME_MODE_DIFF)
		fprintf(f, "usage: csampler diff [OPTIONS] BEFORE AFTER > diff.svg\n\n"
			"A differential flame graph on AFTER's shape: red grew, blue shrank, the\n"
			"deeper the colour the larger the change in share of the total (AFTER's\n"
			"share minus BEFORE's, in points: the change of 'csampler report --compare').\n"
			"BEFORE and AFTER are csampler data files or folded stacks.\n\noptions:\n");
	else
		fprintf(f, "usage: csampler flame [OPTIONS] [FILE...] > flame.svg\n\n"
			"An interactive flame graph from csampler data files or folded stacks\n"
			"(\"root;...;leaf COUNT\" lines), given as FILEs or on standard input (default:\n"
			"./csampler.data). Options are flamegraph.pl's, with one or two dashes.\n\n"
			"options:\n");
	for (size_t i = 0; i < FLAME_NOPTS; i++) {
		const struct flame_optdef *od = &flame_optdefs[i];
		char left[64], def[64] = "";
		if (!(od->modes & mode))
			continue;
		if (od->shortname)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", od->shortname, od->name,
				 od->arg ? " " : "", od->arg ? od->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", od->name, od->arg ? " " : "",
				 od->arg ? od->arg : "");
		const void *field = (const char *)d + od->off;
		if (od->type == FLAME_OPT_STR && *(const char *const *)field)
			snprintf(def, sizeof(def), " (default: %s)", *(const char *const *)field);
		else if (od->type == FLAME_OPT_NUM || od->type == FLAME_OPT_MINWIDTH)
			snprintf(def, sizeof(def), " (default: %g)", *(const double *)field);
		fprintf(f, "  %-26s ", left);
		for (const char *h = od->help; *h; h++) {
			fputc(*h, f);
			if (*h == '\n')
				fprintf(f, "  %-26s ", "");
		}
		fprintf(f, "%s\n", def);
	}
}

static const struct flame_optdef *flame_opt_find(const char *name, size_t len, char shortname,
						 enum flame_mode mode)
{
	for (size_t i = 0; i < FLAME_NOPTS; i++) {
		const struct flame_optdef *od = &flame_optdefs[i];
		if (!(od->modes & mode))
			continue;
		if (shortname ? od->shortname == shortname
			      : (strlen(od->name) == len && !strncmp(od->name, name, len)))
			return od;
	}
	return NULL;
}

static int flame_opt_set(struct flame_opts *o, const struct flame_optdef *od, const char *val,
			 size_t *inputs_cap, const char *cmd)
{
	void *field = (char *)o + od->off;
	double d;

	switch (od->type) {
	case FLAME_OPT_STR:
		*(const char **)field = val;
		return 0;
	case FLAME_OPT_NUM:
		if (cs_parse_double(val, &d) || !(d > 0))
			return cs_error(EINVAL, "--%s: '%s' is not a positive number", od->name, val);
		*(double *)field = d;
		return 0;
	case FLAME_OPT_MINWIDTH: {
		char num[64];
		size_t n = strlen(val);
		bool pct = n > 0 && val[n - 1] == '%';
		if (n - pct >= sizeof(num))
			n = sizeof(num) - 1 + pct;
		memcpy(num, val, n - pct);
		num[n - pct] = 0;
		if (cs_parse_double(num, &d) || d < 0 || (pct && d > 100))
			return cs_error(EINVAL, "--minwidth: '%s' is neither pixels (0.1) nor a "
					"percentage of the total (0.5%%)", val);
		o->minwidth = d;
		o->minwidth_pct = pct;
		return 0;
	}
	case FLAME_OPT_FILTER:
		if (!strcmp(cmd, "diff") && !strcmp(od->name, "rank") && strchr(val, ',')) {
			struct profile_filter a = PROFILE_FILTER_ALL, b = PROFILE_FILTER_ALL;
			char first[32];
			size_t n = (size_t)(strchr(val, ',') - val);
			if (n >= sizeof(first))
				n = sizeof(first) - 1;
			memcpy(first, val, n);
			first[n] = 0;
			if (profile_filter_set(&a, cmd, "rank", first) ||
			    profile_filter_set(&b, cmd, "rank", val + n + 1))
				return -EINVAL;
			o->diff_ranks[0] = a.rank;
			o->diff_ranks[1] = b.rank;
			return 0;
		}
		return profile_filter_set(&o->filter, cmd, od->name, val) ? -EINVAL : 0;
	case FLAME_OPT_INPUT:
		cs_grow(&o->inputs, inputs_cap, o->ninputs + 1, sizeof(*o->inputs));
		o->inputs[o->ninputs++] = val;
		return 0;
	case FLAME_OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case FLAME_OPT_SOURCE:
		*(int *)field = !strcmp(od->name, "gpu") ? FOLD_GPU :
				!strcmp(od->name, "both") ? FOLD_BOTH :
				!strcmp(od->name, "gpu-idle") ? FOLD_GPU_IDLE : FOLD_CPU;
		return 0;
	case FLAME_OPT_HELP:
		return 0;
	}
	return 0;
}

/* flamegraph.pl's type-aware palettes are what "type" does; the others map to a hue. */
static int flame_opts_check(struct flame_opts *o, enum flame_mode mode)
{
	static const char *const palettes[] = {
		"type", "hot", "mem", "io", "red", "green", "blue", "aqua", "yellow", "purple",
		"orange", NULL,
	};
	bool ok = false;

	if (!strcmp(o->colors, "java") || !strcmp(o->colors, "js") || !strcmp(o->colors, "perl"))
		o->colors = "type";
	else if (!strcmp(o->colors, "wakeup"))
		o->colors = "aqua";
	else if (!strcmp(o->colors, "chain"))
		o->colors = "blue";
	for (const char *const *p = palettes; *p; p++)
		ok |= !strcmp(*p, o->colors);
	if (!ok)
		return cs_error(EINVAL, "--colors: unknown palette '%s'; see 'csampler %s --help'",
				o->colors, mode == FLAME_MODE_DIFF ? "diff" : "flame");
	if (o->bgcolors) {
		const char *b = o->bgcolors;
		bool hex = b[0] == '#' && strlen(b) == 7 && strspn(b + 1, "0123456789abcdefABCDEF") == 6;
		if (!strcmp(b, "gray"))
			o->bgcolors = "grey";
		else if (!hex && strcmp(b, "yellow") && strcmp(b, "blue") && strcmp(b, "green") &&
			 strcmp(b, "grey"))
			return cs_error(EINVAL, "--bgcolors: '%s' is none of yellow, blue, green, grey, "
					"#rrggbb", b);
	}
	if (o->width < 100 || o->width > 1e6)
		return cs_error(EINVAL, "--width: %g is out of range (100 to 1000000 pixels)",
				o->width);
	if (o->frame_height > 1000 || o->fontsize > 1000)
		return cs_error(EINVAL, "--height/--fontsize: at most 1000 pixels");
	if (mode == FLAME_MODE_DIFF && o->ninputs != 2)
		return cs_error(EINVAL, "csampler diff takes two profiles, BEFORE and AFTER (got "
				"%zu); see 'csampler diff --help'", o->ninputs);
	return 0;
}

int flame_opts_parse(struct flame_opts *o, int argc, char **argv, enum flame_mode mode)
{
	size_t inputs_cap = 0;
	bool only_inputs = false;
	const char *cmd = mode == FLAME_MODE_DIFF ? "diff" : "flame";

	*o = flame_opts_defaults;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		const struct flame_optdef *od = NULL;

		if (only_inputs || a[0] != '-' || !a[1]) {
			cs_grow(&o->inputs, &inputs_cap, o->ninputs + 1, sizeof(*o->inputs));
			o->inputs[o->ninputs++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_inputs = true;
			continue;
		}
		const char *name = a + 1 + (a[1] == '-');
		const char *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		if (len > 1 || a[1] == '-')
			od = flame_opt_find(name, len, 0, mode);
		if (!od && a[1] != '-') {
			/* -o FILE, -oFILE, -h */
			od = flame_opt_find(NULL, 0, name[0], mode);
			if (od && name[1] && od->arg) {
				val = name + 1;
				eq = NULL;
			} else if (od && name[1]) {
				od = NULL;
			}
		}
		if (!od) {
			cs_error(EINVAL, "%s: unknown option '%s'; see 'csampler %s --help'", cmd, a,
				 cmd);
			goto fail;
		}
		if (od->type == FLAME_OPT_HELP) {
			flame_opts_usage(stdout, mode);
			free(o->inputs);
			o->inputs = NULL;
			return 1;
		}
		if (od->arg && !val) {
			if (eq)
				val = eq + 1;
			else if (i + 1 < argc)
				val = argv[++i];
			else {
				cs_error(EINVAL, "%s: option --%s needs a value (%s)", cmd, od->name,
					 od->arg);
				goto fail;
			}
		} else if (!od->arg && eq) {
			cs_error(EINVAL, "%s: option --%s takes no value", cmd, od->name);
			goto fail;
		}
		if (flame_opt_set(o, od, val, &inputs_cap, cmd))
			goto fail;
	}
	/* diff --rank A,B of one merged file: the file is both BEFORE and AFTER */
	if (mode == FLAME_MODE_DIFF && o->diff_ranks[0] >= 0 && o->ninputs == 1) {
		cs_grow(&o->inputs, &inputs_cap, 2, sizeof(*o->inputs));
		o->inputs[o->ninputs++] = o->inputs[0];
	}
	if (flame_opts_check(o, mode))
		goto fail;
	/* GPU and both views count nanoseconds; flame.js shows them as times. */
	if (o->source != FOLD_CPU && o->source != FOLD_GPU_IDLE &&
	    o->countname == flame_opts_defaults.countname)
		o->countname = "ns";
	return 0;
fail:
	free(o->inputs);
	o->inputs = NULL;
	return -EINVAL;
}
