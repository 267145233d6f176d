/* fold.c: fold_profile (fold.h), the one entry to folded stacks for `folded`, `flame`, `diff`
 * and the exports: it hands each source to its fold (CPU samples to stacks.c, GPU records to
 * fold_gpu.c), composes FOLD_BOTH from the two, and writes the stream as folded text. Neither
 * fold calls back here: the shared frame helpers are below both, in fold_frame.c. */
#include "analysis/fold.h"

#include "base/cs.h"
#include "analysis/fold_gpu.h"
#include "analysis/stacks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* FOLD_BOTH's CPU half: the samples under a "CPU" root, weighing the sampling period. */
struct fold_cpu_half {
	fold_fn fn;
	void *arg;
	uint64_t period_ns;
	struct fold_frame *frames;
	size_t cap;
};

static int fold_cpu_half_stack(void *arg, const struct fold_frame *frames, size_t nframes,
			       uint64_t count, uint64_t calls)
{
	struct fold_cpu_half *c = arg;
	cs_grow(&c->frames, &c->cap, nframes + 1, sizeof(*c->frames));
	c->frames[0] = (struct fold_frame){ .name = "CPU" };
	memcpy(c->frames + 1, frames, nframes * sizeof(*frames));
	return c->fn(c->arg, c->frames, nframes + 1, count * c->period_ns, calls);
}

static int fold_both(const struct profile *p, const struct fold_opts *opts, fold_fn fn,
		     void *arg)
{
	struct fold_opts cpu_opts = *opts;
	struct fold_cpu_half c = { .fn = fn, .arg = arg, .period_ns = fold_cpu_period_ns(p) };
	int err;

	if (opts->pid > UINT32_MAX || opts->tid > UINT32_MAX)
		return -EINVAL;
	if (!c.period_ns)
		return -ENODATA;
	cpu_opts.source = FOLD_CPU;
	err = stacks_fold(p, &cpu_opts, fold_cpu_half_stack, &c);
	free(c.frames);
	if (err < 0)
		return err;
	return fold_gpu_stacks(p, opts, "GPU", fn, arg);
}

int fold_profile(const struct profile *p, const struct fold_opts *opts, fold_fn fn, void *arg)
{
	if (!opts || opts->source == FOLD_CPU || opts->source == FOLD_GPU_IDLE)
		return stacks_fold(p, opts, fn, arg);
	if (opts->source == FOLD_BOTH)
		return fold_both(p, opts, fn, arg);
	return fold_gpu_stacks(p, opts, NULL, fn, arg);
}

/* ---- folded text ---- */

struct fold_text_line {
	size_t key;         /* offset of the NUL-terminated "root;...;leaf" in the text buffer */
	uint64_t count;
};

struct fold_text {
	struct cs_buf text;
	struct fold_text_line *lines;
	size_t nlines, cap;
};

static int fold_text_collect(void *arg, const struct fold_frame *frames, size_t nframes,
			     uint64_t count, uint64_t calls)
{
	struct fold_text *sf = arg;

	cs_grow(&sf->lines, &sf->cap, sf->nlines + 1, sizeof(*sf->lines));
	sf->lines[sf->nlines++] = (struct fold_text_line){ .key = sf->text.len,
							   .count = count };
	fold_format_stack(&sf->text, frames, nframes);
	cs_buf_put(&sf->text, "", 1); /* keep the NUL inside the buffer as the separator */
	return 0;
}

static int fold_text_cmp(const void *x, const void *y, void *arg)
{
	const char *text = arg;
	const struct fold_text_line *a = x, *b = y;
	return strcmp(text + a->key, text + b->key);
}

int fold_write_folded(FILE *f, const struct profile *p, const struct fold_opts *opts)
{
	struct fold_text sf = { 0 };
	struct fold_opts merged = opts ? *opts : (struct fold_opts)FOLD_OPTS_DEFAULT;
	int err;

	merged.time_order = 0;
	err = fold_profile(p, &merged, fold_text_collect, &sf);
	if (err < 0)
		goto out;
	/* Frames that differ only in file:line print alike: sort the text and merge equal lines. */
	cs_qsort_r(sf.lines, sf.nlines, sizeof(*sf.lines), fold_text_cmp, sf.text.data);
	for (size_t i = 0; i < sf.nlines;) {
		const char *key = sf.text.data + sf.lines[i].key;
		uint64_t count = 0;
		size_t j = i;
		for (; j < sf.nlines && !strcmp(key, sf.text.data + sf.lines[j].key); j++)
			count += sf.lines[j].count;
		if (count)
			fprintf(f, "%s %" PRIu64 "\n", key, count);
		i = j;
	}
	if (ferror(f))
		err = -EIO;
out:
	cs_buf_free(&sf.text);
	free(sf.lines);
	return err;
}

