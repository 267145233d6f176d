/* flame_opts.c: the defaults of the flame engine's options and the checks of their values
 * (palettes, backgrounds, sizes). The options of `csampler flame` and `csampler diff` are
 * parsed by profiler/cmd/cmd_flame.c, whose table writes --help from these defaults. */
#include "flame.h"
#include "base/cs.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

void flame_opts_init(struct flame_opts *o)
{
	*o = flame_opts_defaults;
}

/* flamegraph.pl's type-aware palettes are what "type" does; the others map to a hue. */
int flame_opts_check(struct flame_opts *o, enum flame_mode mode)
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
	/* GPU and both views count nanoseconds; flame.js shows them as times. */
	if (o->source != FOLD_CPU && o->source != FOLD_GPU_IDLE &&
	    o->countname == flame_opts_defaults.countname)
		o->countname = "ns";
	return 0;
}
