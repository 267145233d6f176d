/* main.c: splat-train's command line: presets, flags (one table drives parsing and --help),
 * validation, and the final summary. Exit status: 0 success, 1 a run-time failure, 2 bad usage. */
#include "splat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SPLAT_VERSION "0.1.0"

/* OPT_FLAG_VALUE: a flag that may take a value after '=' (--time-kernels[=MODE]) */
enum opt_kind { OPT_INT, OPT_U64, OPT_STRING, OPT_FLAG, OPT_FLAG_VALUE };

enum opt_id {
	O_PRESET, O_ITERS, O_SEED, O_WIDTH, O_HEIGHT, O_DOWNSAMPLE, O_DENSIFY, O_MAXG, O_LOG,
	O_THREADS, O_BACKEND, O_DATA, O_DATA_DIR, O_LOADER, O_SAVE_IMAGES, O_SAVE, O_TIME_KERNELS, O_HELP,
	O_VERSION,
};

static const struct main_option {
	enum opt_id id;
	const char *name, *arg;
	enum opt_kind kind;
	int64_t min, max;
	const char *help;
} main_options[] = {
	{ O_PRESET, "preset", "NAME", OPT_STRING, 0, 0, "micro, m8-smoke, m8, m9 or m10 (default micro)" },
	{ O_ITERS, "iters", "N", OPT_INT, 0, 1000000, "training iterations" },
	{ O_SEED, "seed", "N", OPT_U64, 0, 0, "scene, student and view-order seed (default 1)" },
	{ O_WIDTH, "width", "PX", OPT_INT, 16, 4096, "image width" },
	{ O_HEIGHT, "height", "PX", OPT_INT, 16, 4096, "image height" },
	{ O_DOWNSAMPLE, "downsample", "F", OPT_INT, 1, 16, "divide the preset's image size by F" },
	{ O_DENSIFY, "densify-every", "N", OPT_INT, 0, 1000000, "densify every N iterations (0: never)" },
	{ O_MAXG, "max-gaussians", "N", OPT_INT, 1, 10000000, "Gaussian budget of densification" },
	{ O_LOG, "log-interval", "N", OPT_INT, 0, 1000000, "log every N iterations (0: quiet)" },
	{ O_THREADS, "threads", "N", OPT_INT, 1, 1024, "CPU backend threads (default: all cores)" },
	{ O_BACKEND, "backend", "B", OPT_STRING, 0, 0, "auto (default), cpu or cuda" },
	{ O_DATA, "data", "SRC", OPT_STRING, 0, 0,
	  "memory (default) or disk: read, decode and upload each view (PNG) every iteration" },
	{ O_DATA_DIR, "data-dir", "DIR", OPT_STRING, 0, 0,
	  "--data disk: write the views here (default: a temporary directory, removed at exit)" },
	{ O_LOADER, "loader", "L", OPT_STRING, 0, 0,
	  "--data disk: inline (default, on the training thread) or prefetch (a loader thread)" },
	{ O_SAVE_IMAGES, "save-images", "DIR", OPT_STRING, 0, 0, "write test renders and ground truth (PNG)" },
	{ O_SAVE, "save", "PATH", OPT_STRING, 0, 0, "write the trained Gaussians as a 3DGS .ply" },
	{ O_TIME_KERNELS, "time-kernels", "[=event|device]", OPT_FLAG_VALUE, 0, 0,
	  "cuda backend: time each kernel and phase with CUDA events (event, the default), or have each "
	  "kernel stamp the GPU's %globaltimer inside itself (device); print a table at exit" },
	{ O_HELP, "help", NULL, OPT_FLAG, 0, 0, "this help" },
	{ O_VERSION, "version", NULL, OPT_FLAG, 0, 0, "print the version" },
};

#define MAIN_N_OPTIONS (sizeof(main_options) / sizeof(main_options[0]))

static void main_usage(FILE *f)
{
	fprintf(f, "usage: splat-train [OPTIONS]\n"
		   "Train 3D Gaussians on a synthetic scene and report test PSNR.\n\noptions:\n");
	for (size_t i = 0; i < MAIN_N_OPTIONS; i++) {
		const struct main_option *o = &main_options[i];
		char left[40];
		snprintf(left, sizeof(left), "--%s%s%s", o->name,
			 o->arg && o->kind != OPT_FLAG_VALUE ? " " : "", o->arg ? o->arg : "");
		if (o->kind == OPT_INT)
			fprintf(f, "  %-22s %s [%" PRId64 "..%" PRId64 "]\n", left, o->help, o->min, o->max);
		else
			fprintf(f, "  %-22s %s\n", left, o->help);
	}
	fprintf(f, "\npresets (flags override them):\n");
	train_print_presets(f);
	fprintf(f, "\nSee splat-train(1).\n");
}

struct main_value {
	int set;
	int64_t i;
	uint64_t u;
	const char *s;
};

static int main_parse_value(const struct main_option *o, const char *text, struct main_value *v)
{
	char *end;

	v->set = 1;
	v->s = text;
	if (o->kind == OPT_STRING)
		return 0;
	errno = 0;
	if (o->kind == OPT_U64) {
		if (text[0] == '-' || !text[0])
			goto bad;
		v->u = strtoull(text, &end, 10);
		if (errno || *end)
			goto bad;
		return 0;
	}
	long long n = strtoll(text, &end, 10);
	if (errno || *end || !text[0])
		goto bad;
	if (n < o->min || n > o->max) {
		fprintf(stderr, "splat-train: --%s %s is out of range; use %" PRId64 "..%" PRId64 "\n", o->name, text,
			o->min, o->max);
		return -ERANGE;
	}
	v->i = n;
	return 0;
bad:
	fprintf(stderr, "splat-train: --%s needs %s, not '%s'\n", o->name,
		o->kind == OPT_U64 ? "a non-negative integer" : "an integer", text);
	return -EINVAL;
}

/* The command line's values, by option, and the training options they make. */
struct main_ctx {
	struct main_value val[MAIN_N_OPTIONS];
	struct train_options opt;
};

/* The option that arg ("--name" or "--name=value") names, NULL for none; *eq: its '=' or NULL. */
static const struct main_option *main_find_option(const char *arg, const char **eq)
{
	const struct main_option *o = NULL;
	size_t len;

	*eq = strchr(arg, '=');
	len = *eq ? (size_t)(*eq - arg - 2) : strlen(arg + 2);
	for (size_t i = 0; i < MAIN_N_OPTIONS; i++)
		if (strlen(main_options[i].name) == len && !strncmp(arg + 2, main_options[i].name, len))
			o = &main_options[i];
	return o;
}

/* Fill m->val from argv; -EINVAL, having said why, for an argument that is not a valid option. */
static int main_parse_args(struct main_ctx *m, int argc, char **argv)
{
	for (int a = 1; a < argc; a++) {
		const char *arg = argv[a], *eq, *value = NULL;
		const struct main_option *o;
		struct main_value *v;
		if (strncmp(arg, "--", 2) || !arg[2]) {
			fprintf(stderr, "splat-train: unexpected argument '%s'; see 'splat-train --help'\n", arg);
			return -EINVAL;
		}
		if (!(o = main_find_option(arg, &eq))) {
			fprintf(stderr, "splat-train: unknown option '%s'; see 'splat-train --help'\n", arg);
			return -EINVAL;
		}
		v = &m->val[o - main_options];
		if (o->kind == OPT_FLAG) {
			if (eq) {
				fprintf(stderr, "splat-train: --%s takes no value\n", o->name);
				return -EINVAL;
			}
			v->set = 1;
			continue;
		}
		if (o->kind == OPT_FLAG_VALUE) {   /* a value only after '=' */
			v->set = 1;
			v->s = eq ? eq + 1 : NULL;
			continue;
		}
		if (eq)
			value = eq + 1;
		else if (a + 1 < argc)
			value = argv[++a];
		else {
			fprintf(stderr, "splat-train: --%s needs a value (%s)\n", o->name, o->arg);
			return -EINVAL;
		}
		if (main_parse_value(o, value, v))
			return -EINVAL;
	}
	return 0;
}

/* The preset, then the image size (--downsample or --width/--height) over it. */
static int main_apply_size(struct main_ctx *m)
{
	const struct main_value *val = m->val;
	const char *preset = val[O_PRESET].set ? val[O_PRESET].s : "micro";

	if (train_preset(preset, &m->opt)) {
		fprintf(stderr, "splat-train: unknown preset '%s'; use micro, m8-smoke, m8, m9 or m10\n", preset);
		return -EINVAL;
	}
	if (val[O_DOWNSAMPLE].set) {
		if (val[O_WIDTH].set || val[O_HEIGHT].set) {
			fprintf(stderr, "splat-train: give --downsample or --width/--height, not both\n");
			return -EINVAL;
		}
		m->opt.width /= (int)val[O_DOWNSAMPLE].i;
		m->opt.height /= (int)val[O_DOWNSAMPLE].i;
		if (m->opt.width < 16 || m->opt.height < 16) {
			fprintf(stderr, "splat-train: --downsample %" PRId64 " makes the images smaller than 16 pixels\n",
				val[O_DOWNSAMPLE].i);
			return -EINVAL;
		}
	}
	if (val[O_WIDTH].set)
		m->opt.width = (int)val[O_WIDTH].i;
	if (val[O_HEIGHT].set)
		m->opt.height = (int)val[O_HEIGHT].i;
	return 0;
}

/* The numeric options over the preset (already checked against their ranges). */
static void main_apply_numbers(struct main_ctx *m)
{
	const struct main_value *val = m->val;
	struct train_options *opt = &m->opt;

	if (val[O_ITERS].set) {
		opt->iters = (int)val[O_ITERS].i;
		opt->densify_until = opt->iters * 3 / 4;
		if (opt->opacity_reset_at)
			opt->opacity_reset_at = opt->iters / 2;
	}
	if (val[O_SEED].set)
		opt->seed = val[O_SEED].u;
	if (val[O_DENSIFY].set)
		opt->densify_every = (int)val[O_DENSIFY].i;
	if (val[O_MAXG].set) {
		opt->max_gaussians = (size_t)val[O_MAXG].i;
		if (opt->student_count > opt->max_gaussians)
			opt->student_count = opt->max_gaussians;
	}
	if (val[O_LOG].set)
		opt->log_interval = (int)val[O_LOG].i;
	if (val[O_THREADS].set)
		opt->threads = (int)val[O_THREADS].i;
}

/* One word an option accepts, and the value it stands for. */
struct main_choice {
	const char *word;
	int value;
};

static const struct main_choice main_backends[] = {
	{ "auto", SPLAT_BACKEND_AUTO }, { "cpu", SPLAT_BACKEND_CPU }, { "cuda", SPLAT_BACKEND_CUDA }, { NULL, 0 },
};
static const struct main_choice main_data_sources[] = {
	{ "memory", DATA_MEMORY }, { "disk", DATA_DISK }, { NULL, 0 },
};
static const struct main_choice main_loaders[] = {
	{ "inline", DATA_INLINE }, { "prefetch", DATA_PREFETCH }, { NULL, 0 },
};

/* The value of word in choices (ended by a NULL word); -EINVAL for a word not there. */
static int main_choose(const struct main_choice *choices, const char *word, int *value)
{
	for (; choices->word; choices++)
		if (!strcmp(word, choices->word)) {
			*value = choices->value;
			return 0;
		}
	return -EINVAL;
}

/* --backend, --data and --loader; -EINVAL, having said why, for an unknown word. */
static int main_apply_choices(struct main_ctx *m)
{
	const struct main_value *val = m->val;
	int v;

	if (val[O_BACKEND].set) {
		if (main_choose(main_backends, val[O_BACKEND].s, &v)) {
			fprintf(stderr, "splat-train: unknown backend '%s'; use auto, cpu or cuda\n", val[O_BACKEND].s);
			return -EINVAL;
		}
		m->opt.backend = v;
	}
	if (val[O_DATA].set) {
		if (main_choose(main_data_sources, val[O_DATA].s, &v)) {
			fprintf(stderr, "splat-train: unknown --data '%s'; use memory or disk\n", val[O_DATA].s);
			return -EINVAL;
		}
		m->opt.data = v;
	}
	if (val[O_LOADER].set) {
		if (main_choose(main_loaders, val[O_LOADER].s, &v)) {
			fprintf(stderr, "splat-train: unknown --loader '%s'; use inline or prefetch\n", val[O_LOADER].s);
			return -EINVAL;
		}
		m->opt.loader = v;
	}
	return 0;
}

/* The output paths and --time-kernels; -EINVAL, having said why, for a misfit. */
static int main_apply_outputs(struct main_ctx *m)
{
	const struct main_value *val = m->val;
	struct train_options *opt = &m->opt;

	if (opt->data != DATA_DISK && (val[O_LOADER].set || val[O_DATA_DIR].set)) {
		fprintf(stderr, "splat-train: --%s needs --data disk\n", val[O_LOADER].set ? "loader" : "data-dir");
		return -EINVAL;
	}
	if (val[O_DATA_DIR].set)
		opt->data_dir = val[O_DATA_DIR].s;
	if (val[O_SAVE_IMAGES].set)
		opt->save_images_dir = val[O_SAVE_IMAGES].s;
	if (val[O_SAVE].set)
		opt->save_path = val[O_SAVE].s;
	if (val[O_TIME_KERNELS].set) {
		const char *mode = val[O_TIME_KERNELS].s;
		if (!mode || !strcmp(mode, "event")) {
			opt->time_kernels = SPLAT_TIME_EVENT;
		} else if (!strcmp(mode, "device")) {
			opt->time_kernels = SPLAT_TIME_DEVICE;
		} else {
			fprintf(stderr, "splat-train: --time-kernels=%s: unknown mode; use event (CUDA events, the "
				"default) or device (%%globaltimer stamps inside each kernel)\n", mode);
			return -EINVAL;
		}
	}
	return 0;
}

/* Every option over the preset, checked in this order; -EINVAL, having said why, at the first misfit. */
static int main_apply(struct main_ctx *m)
{
	int err;

	if ((err = main_apply_size(m)))
		return err;
	main_apply_numbers(m);
	if ((err = main_apply_choices(m)))
		return err;
	return main_apply_outputs(m);
}

/* The summary after a run. */
static void main_print_result(const struct train_options *opt, const struct train_result *res)
{
	printf("test PSNR %.2f dB (iteration 0: %.2f dB, %+.2f dB)\n", res->test_psnr, res->initial_test_psnr,
	       res->test_psnr - res->initial_test_psnr);
	printf("train PSNR %.2f dB\n", res->train_psnr);
	printf("gaussians %zu\n", res->gaussians);
	printf("time %.2f s (%.2f ms/iter over %d iterations, scene %.2f s)\n", res->seconds, res->ms_per_iter,
	       opt->iters, res->scene_seconds);
	printf("backend %s", res->backend);
	if (!strcmp(res->backend, "cpu"))
		printf(" (%d thread%s)", opt->threads, opt->threads == 1 ? "" : "s");
	printf("\n");
	if (opt->data == DATA_DISK)
		printf("data disk (loader %s, %.3f ms/iter on the training thread)\n",
		       opt->loader == DATA_PREFETCH ? "prefetch" : "inline", res->data_ms_per_iter);
	if (opt->save_path)
		printf("saved %s\n", opt->save_path);
	if (opt->save_images_dir)
		printf("saved test images in %s\n", opt->save_images_dir);
}

int main(int argc, char **argv)
{
	struct main_ctx m = { .opt = { .seed = 1, .threads = splat_cpu_count(), .backend = SPLAT_BACKEND_AUTO } };
	struct train_result res;
	int status = 0;

	if (main_parse_args(&m, argc, argv))
		status = 2;
	else if (m.val[O_HELP].set)
		main_usage(stdout);
	else if (m.val[O_VERSION].set)
		printf("splat-train %s\n", SPLAT_VERSION);
	else if (main_apply(&m))
		status = 2;
	else if (train_run(&m.opt, &res))
		status = 1;
	else
		main_print_result(&m.opt, &res);
	return status;
}
