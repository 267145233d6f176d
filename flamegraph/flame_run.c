/* flame_run.c: what `csampler flame` and `csampler diff` share once their options are parsed:
 * read the inputs into one tree, lay it out, write the SVG (or the --dump-layout text). */
#include "flame.h"
#include "base/cs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *flame_input_name(const char *path)
{
	return path ? path : "standard input";
}

static int flame_read_inputs(struct flame_tree *t, struct flame_opts *o, enum flame_mode mode)
{
	const char **paths = NULL;
	size_t n = 0;
	int err = 0;

	if (mode == FLAME_MODE_DIFF) {
		const char *before = strcmp(o->inputs[0], "-") ? o->inputs[0] : NULL;
		const char *after = strcmp(o->inputs[1], "-") ? o->inputs[1] : NULL;
		if (!before && !after)
			return cs_error(EINVAL, "diff: only one of BEFORE and AFTER can be standard "
					"input ('-')");
		struct flame_opts ob = *o, oa = *o;
		if (o->diff_ranks[0] >= 0) { /* --rank A,B */
			ob.filter.rank = o->diff_ranks[0];
			oa.filter.rank = o->diff_ranks[1];
		}
		err = flame_input_read(t, before, FLAME_SERIES_BEFORE, &ob, false);
		if (!err && !(t->total[FLAME_SERIES_BEFORE] > 0))
			err = cs_error(ENODATA, "diff: BEFORE (%s) has no samples; check that it is "
				       "the profile you meant", flame_input_name(before));
		t->path_len = 0; /* the next input's first stack shares nothing */
		if (!err)
			err = flame_input_read(t, after, FLAME_SERIES_MAIN, &oa, false);
		if (!err && !(t->total[FLAME_SERIES_MAIN] > 0))
			err = cs_error(ENODATA, "diff: AFTER (%s) has no samples; check that it is "
				       "the profile you meant", flame_input_name(after));
		return err;
	}
	flame_input_default(o, &paths, &n);
	for (size_t i = 0; i < n && !err; i++) {
		t->path_len = 0;
		err = flame_input_read(t, paths[i], FLAME_SERIES_MAIN, o, true);
	}
	if (!err && !(t->total[FLAME_SERIES_MAIN] > 0))
		err = cs_error(ENODATA, "no samples in %s%s; nothing to draw",
			       flame_input_name(paths[0]), n > 1 ? " and the other inputs" : "");
	free(paths);
	return err;
}

int flame_run(struct flame_opts *o, enum flame_mode mode)
{
	struct flame_tree t;
	struct flame_layout l = { 0 };
	FILE *out = stdout;
	int err, status = CS_EXIT_ERROR;

	flame_tree_init(&t, o->flamechart, o->reverse);
	err = flame_read_inputs(&t, o, mode);
	if (err)
		goto out;
	flame_tree_finish(&t);
	err = flame_layout_build(&t, o, &l);
	if (err) {
		cs_error(err, "no samples to draw");
		goto out;
	}
	if (o->output) {
		out = fopen(o->output, "w");
		if (!out) {
			cs_error(errno, "open %s: %s; check that its directory exists and is "
				 "writable", o->output, strerror(errno));
			out = NULL;
			goto out;
		}
	} else if (!o->dump_layout && isatty(STDOUT_FILENO)) {
		cs_error(EINVAL, "%s: will not write an SVG to a terminal; redirect it "
			 "(> flame.svg) or use -o FILE", mode == FLAME_MODE_DIFF ? "diff" : "flame");
		out = NULL;
		goto out;
	}
	errno = 0;
	err = o->dump_layout ? flame_layout_dump(out, &t, &l, o) : flame_svg_write(out, &t, &l, o);
	if (fflush(out) || err) {
		cs_error(errno ? errno : EIO, "write %s: %s; check the free space", o->output ?
			 o->output : "standard output", strerror(errno ? errno : EIO));
		goto out;
	}
	if (o->output)
		cs_info("wrote %s: %zu frames, %llu narrow frames merged into \"other\" frames",
			o->output, l.nframes, (unsigned long long)l.merged);
	status = 0;
out:
	if (out && out != stdout && fclose(out) && !status) {
		cs_error(errno, "close %s: %s; check the free space", o->output, strerror(errno));
		status = CS_EXIT_ERROR;
	}
	if (status && o->output && out != stdout && out)
		unlink(o->output);
	flame_layout_free(&l);
	flame_tree_free(&t);
	return status;
}
