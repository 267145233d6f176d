/* flame_input.c: the inputs of `flame` and `diff`: csampler data files (read by profile_load
 * and walked by fold_profile, from profiler/) or folded text (flame_folded.c), from files or
 * standard input, told apart by profile_is_datafile(). A pipe or FIFO is copied into an
 * anonymous file first: telling the two apart reads the first bytes, which a pipe gives once. */
#include "flame.h"
#include "base/cs.h"
#include "analysis/profile.h"
#include "analysis/stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct flame_input_ctx {
	struct flame_tree *tree;
	const char *name;        /* for messages */
	int series;
	double factor;
	bool allow_two_counts;
};

/* Count a folded line's counts on its stack: slot counts from the tree's stack map, or,
 * for flame charts (slot NULL), the leaf node directly. */
static int flame_input_counts(struct flame_input_ctx *c, double *slot, uint32_t leaf,
			      const double *counts, int ncounts)
{
	struct flame_tree *t = c->tree;
	if (ncounts == 2 && !c->allow_two_counts)
		return cs_error(EINVAL, "%s has two counts per line (difffolded.pl output); give "
				"csampler diff the two profiles instead", c->name);
	for (int i = 0; i < ncounts; i++) {
		/* Two counts: BEFORE then AFTER; one: the input's series. */
		int series = ncounts == 2 ? (i ? FLAME_SERIES_MAIN : FLAME_SERIES_BEFORE) : c->series;
		if (slot)
			flame_tree_count(t, slot, series, counts[i] * c->factor);
		else
			flame_tree_add_leaf(t, leaf, series, counts[i] * c->factor);
	}
	return 0;
}

static int flame_input_seen(void *arg, const uint64_t hash[2], const double *counts,
			    int ncounts)
{
	struct flame_input_ctx *c = arg;
	double *slot = c->tree->flamechart ? NULL : flame_tree_stack_find(c->tree, hash);
	if (!slot)
		return -ENOENT;
	return flame_input_counts(c, slot, FLAME_NONE, counts, ncounts);
}

static int flame_input_stack(void *arg, const struct fold_frame *frames, size_t n,
			     size_t same_prefix, const uint64_t hash[2], const double *counts,
			     int ncounts)
{
	struct flame_input_ctx *c = arg;
	/* Build the path (count 0), then count it like a repeated line. */
	uint32_t leaf = flame_tree_add(c->tree, frames, n, same_prefix, c->series, 0);
	double *slot = c->tree->flamechart ? NULL : flame_tree_stack_remember(c->tree, hash, leaf);
	return flame_input_counts(c, slot, leaf, counts, ncounts);
}

static int flame_input_fold(void *arg, const struct fold_frame *frames, size_t nframes,
			    uint64_t count, uint64_t calls)
{
	struct flame_input_ctx *c = arg;
	uint32_t leaf = flame_tree_add(c->tree, frames, nframes, 0, c->series,
				       (double)count * c->factor);
	if (calls && c->series == FLAME_SERIES_MAIN)
		flame_tree_add_calls(c->tree, leaf, calls);
	return 0;
}

static int flame_input_datafile(struct flame_input_ctx *c, const char *path,
				const struct flame_opts *o)
{
	struct profile *p = NULL;
	struct fold_opts fo = FOLD_OPTS_DEFAULT;
	int err = profile_load_filtered(path, &o->filter, &p);
	if (err)
		return err; /* profile_load printed why */
	fo.per_thread = o->per_thread;
	fo.time_order = o->flamechart;
	fo.source = o->source;
	if (o->source != FOLD_CPU && !p->ngpu_activities && p->filtered.text)
		cs_warn("no GPU records of %s pass the filter (%s)", path, p->filtered.text);
	else if (o->source != FOLD_CPU && !p->ngpu_activities)
		cs_warn("%s has no GPU records (record with 'csampler record --gpu on' on a CUDA "
			"program)", path);
	if (o->source == FOLD_BOTH && !fold_cpu_period_ns(p)) {
		err = cs_error(EINVAL, "%s does not say its sampling rate (rate_hz), so CPU samples "
			       "cannot be turned into time; use --cpu or --gpu", path);
		profile_free(p);
		return err;
	}
	struct profile view;
	if (o->python_only)
		stacks_python_view(p, &view);
	err = fold_profile(o->python_only ? &view : p, &fo, flame_input_fold, c);
	if (err)
		cs_error(err, "fold_profile %s: %s", path, strerror(-err));
	if (o->python_only)
		stacks_python_view_free(&view);
	profile_free(p);
	return err;
}

static int flame_input_folded(struct flame_input_ctx *c, FILE *f, const struct flame_opts *o)
{
	struct flame_folded_stats st = { 0 };
	static const struct flame_folded_ops ops = {
		.seen = flame_input_seen, .stack = flame_input_stack,
	};
	if (o->python_only)
		return cs_error(EINVAL, "--python-only reads csampler data files, and %s is folded "
				"text: fold it with 'csampler folded --python-only' instead", c->name);
	int err = flame_folded_read(f, c->name, &ops, c, &st);
	if (err)
		return err;
	if (!st.stacks && st.lines)
		return cs_error(EINVAL, "%s: no 'frame;frame;... COUNT' lines: neither folded "
				"stacks nor a csampler data file", c->name);
	if (st.ignored)
		cs_warn("%s: ignored %llu line%s without a trailing sample count (first: line %llu)",
			c->name, (unsigned long long)st.ignored, st.ignored == 1 ? "" : "s",
			(unsigned long long)st.first_ignored);
	return 0;
}

int flame_input_read_folded(struct flame_tree *t, FILE *f, const char *name, int series,
			    const struct flame_opts *o, bool allow_two_counts)
{
	struct flame_input_ctx c = {
		.tree = t, .name = name, .series = series, .factor = o->factor,
		.allow_two_counts = allow_two_counts,
	};
	return flame_input_folded(&c, f, o);
}

/* Copy everything from fd into an anonymous file (memfd) and return it at offset 0, or -errno
 * after one line naming the input. */
static int flame_input_spool(int fd, const char *name)
{
	int out = memfd_create("csampler-input", MFD_CLOEXEC);
	if (out < 0)
		return cs_error(errno, "memfd_create (a copy of %s): %s", name, strerror(errno));
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(out);
			return cs_error(err, "read %s: %s", name, strerror(err));
		}
		if (n == 0)
			break;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				int err = errno;
				close(out);
				return cs_error(err, "copying %s into memory: %s", name, strerror(err));
			}
			done += w;
		}
	}
	lseek(out, 0, SEEK_SET);
	return out;
}

/* Read a regular file (a data file or folded text) at path. */
static int flame_input_file(struct flame_input_ctx *c, const char *path, const struct flame_opts *o)
{
	if (profile_is_datafile(path))
		return flame_input_datafile(c, path, o);
	FILE *f = fopen(path, "r");
	if (!f)
		return cs_error(errno, "open %s: %s; check the path and its permissions", path,
				strerror(errno));
	int err = flame_input_folded(c, f, o);
	fclose(f);
	return err;
}

int flame_input_read(struct flame_tree *t, const char *path, int series,
		     const struct flame_opts *o, bool allow_two_counts)
{
	struct flame_input_ctx c = {
		.tree = t, .name = path ? path : "standard input", .series = series,
		.factor = o->factor, .allow_two_counts = allow_two_counts,
	};
	struct stat sb;
	int fd = -1, err;

	if (!path) {
		if (!fstat(STDIN_FILENO, &sb) && S_ISREG(sb.st_mode))
			return flame_input_file(&c, "/dev/stdin", o);
		fd = flame_input_spool(STDIN_FILENO, c.name);
	} else {
		if (stat(path, &sb))
			return cs_error(errno, "stat %s: %s; check the path (csampler record writes "
					"csampler.data)", path, strerror(errno));
		if (S_ISDIR(sb.st_mode))
			return cs_error(EISDIR, "%s is a directory; give a data file or folded stacks",
					path);
		if (S_ISREG(sb.st_mode))
			return flame_input_file(&c, path, o);
		/* a pipe, a FIFO, /dev/stdin on a pipe, a process substitution */
		int in = open(path, O_RDONLY | O_CLOEXEC);
		if (in < 0)
			return cs_error(errno, "open %s: %s; check the path and its permissions", path,
					strerror(errno));
		fd = flame_input_spool(in, path);
		close(in);
	}
	if (fd < 0)
		return fd;
	char copy[64];
	snprintf(copy, sizeof(copy), "/proc/self/fd/%d", fd);
	err = flame_input_file(&c, copy, o);
	close(fd);
	return err;
}

void flame_input_default(const struct flame_opts *o, const char ***paths, size_t *n)
{
	struct stat sb;
	if (o->ninputs) {
		*paths = cs_malloc(o->ninputs * sizeof(**paths));
		for (size_t i = 0; i < o->ninputs; i++)
			(*paths)[i] = strcmp(o->inputs[i], "-") ? o->inputs[i] : NULL;
		*n = o->ninputs;
		return;
	}
	*paths = cs_malloc(sizeof(**paths));
	*n = 1;
	/* Like flamegraph.pl, read a pipe or a redirected file; from a terminal (or /dev/null)
	 * fall back to csampler's default data file. */
	if (!isatty(STDIN_FILENO) && !fstat(STDIN_FILENO, &sb) && !S_ISCHR(sb.st_mode))
		(*paths)[0] = NULL;
	else
		(*paths)[0] = "csampler.data";
}
