/* train.c: splat-train's trainer: presets, the training loop over a backend (render, loss,
 * backward, Adam, densification, opacity reset), learning-rate and SH-degree schedules,
 * evaluation (PSNR on the test and train views) and the outputs (.ply, images). */
#include "splat.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct train_preset {
	const char *name;
	int iters, size, densify_every;
	size_t student, max_gaussians;
	int opacity_reset;        /* 1: one reset halfway through */
	const char *notes;
} train_presets[] = {
	{ "micro", 100, 128, 25, 3000, 5000, 0, "densify every 25; 3,000 Gaussians growing to at most 5,000" },
	{ "m8-smoke", 50, 128, 0, 3000, 3000, 0, "no densification" },
	{ "m8", 500, 256, 0, 3000, 3000, 0, "no densification" },
	{ "m9", 1000, 256, 100, 3000, 8000, 0, "densify every 100" },
	{ "m10", 2000, 256, 100, 3000, 10000, 1, "densify every 100; one opacity reset" },
};

#define TRAIN_N_PRESETS (sizeof(train_presets) / sizeof(train_presets[0]))

/* Learning rates before lr_scale (splat-pipeline.md §9). The background is a single colour
 * that every uncovered pixel sees, so a rate like the DC colour's moves it well. */
#define LR_MEANS_START   1.6e-4   /* × E, decaying log-linearly to LR_MEANS_END × E */
#define LR_MEANS_END     1.6e-6
#define LR_SH_DC         2.5e-3
#define LR_SH_REST       1.25e-4
#define LR_OPACITY       0.05
#define LR_SCALE         5e-3
#define LR_ROTATION      1e-3
#define LR_BACKGROUND    2.5e-3

/* The published rates are tuned for 30,000 iterations; short presets multiply them (the
 * position rate included) so a few hundred Adam steps can move the student as far. */
static float train_lr_scale(int iters)
{
	return iters <= 150 ? 4.0f : iters <= 600 ? 2.0f : 1.0f;
}

int train_preset(const char *name, struct train_options *o)
{
	for (size_t i = 0; i < TRAIN_N_PRESETS; i++) {
		const struct train_preset *p = &train_presets[i];
		if (strcmp(p->name, name))
			continue;
		o->preset = p->name;
		o->iters = p->iters;
		o->width = o->height = p->size;
		o->densify_every = p->densify_every;
		o->densify_until = p->iters * 3 / 4;
		o->opacity_reset_at = p->opacity_reset ? p->iters / 2 : 0;
		o->student_count = p->student;
		o->max_gaussians = p->max_gaussians;
		o->log_interval = p->iters / 10 > 0 ? p->iters / 10 : 1;
		o->lr_scale = train_lr_scale(p->iters);
		return 0;
	}
	return -EINVAL;
}

void train_print_presets(FILE *f)
{
	fprintf(f, "  preset     iterations  size  notes\n");
	for (size_t i = 0; i < TRAIN_N_PRESETS; i++)
		fprintf(f, "  %-10s %10d  %4d  %s\n", train_presets[i].name, train_presets[i].iters,
			train_presets[i].size, train_presets[i].notes);
}

struct trainer {
	const struct train_options *opt;
	struct splat_scene scene;
	const struct splat_backend_ops *ops;
	void *ctx;
	struct splat_params host;        /* host copy for densification and output */
	struct splat_densify_stats stats;
	int32_t *moment_source;
	float *image;                    /* 3·H·W */
	size_t *order;                   /* training views in this epoch's order */
	struct data_stage *data;         /* --data disk; NULL for memory */
	size_t *views;                   /* --data disk: the view of every iteration, [iters] */
	size_t cap;                      /* Gaussians the buffers hold: the budget or the teacher's count */
	/* the training loop's state */
	int sh_degree;                   /* the active SH degree */
	float loss;                      /* the loss of the last logged iteration */
	size_t count;                    /* Gaussians after the last densification */
	double t_log;                    /* when the last log line was printed */
	int log_from;                    /* the first iteration since that line */
};

/* Mean PSNR over the given views at the given SH degree. */
static int train_eval(struct trainer *tr, const size_t *views, size_t n, int sh_degree, double *psnr)
{
	size_t hw3 = 3 * (size_t)tr->scene.width * tr->scene.height;
	double sum = 0;
	int err;

	/* --data disk trains on random backgrounds; the test renders use the scene's */
	if (tr->data && (err = data_scene_background(tr->data)))
		return err;
	for (size_t k = 0; k < n; k++) {
		if ((err = tr->ops->render(tr->ctx, views[k], sh_degree)) ||
		    (err = tr->ops->get_image(tr->ctx, tr->image)))
			return err;
		sum += splat_psnr(tr->image, tr->scene.gt + views[k] * hw3, hw3);
	}
	*psnr = sum / n;
	return 0;
}

static void train_adam_config(const struct trainer *tr, int it, struct splat_adam_config *a)
{
	const struct train_options *o = tr->opt;
	double e = tr->scene.extent, s = o->lr_scale;
	double t = o->iters > 1 ? (double)(it - 1) / (o->iters - 1) : 0;

	a->lr_means = (float)(s * e * exp(log(LR_MEANS_START) * (1 - t) + log(LR_MEANS_END) * t));
	a->lr_log_scales = (float)(s * LR_SCALE);
	a->lr_quats = (float)(s * LR_ROTATION);
	a->lr_opacity = (float)(s * LR_OPACITY);
	a->lr_sh_dc = (float)(s * LR_SH_DC);
	a->lr_sh_rest = (float)(s * LR_SH_REST);
	a->lr_background = (float)(s * LR_BACKGROUND);
	a->step = it;
}

/* Active SH degree: one band more every quarter of the run (the reference schedule adds one
 * per 1,000 of 30,000 iterations), all of them for a student started at the teacher. */
static int train_sh_degree(const struct train_options *o, int it)
{
	int step = o->iters / 4 > 0 ? o->iters / 4 : 1;
	int d = (it - 1) / step;

	if (o->init_from_teacher)
		return SPLAT_MAX_SH_DEGREE;
	return d > SPLAT_MAX_SH_DEGREE ? SPLAT_MAX_SH_DEGREE : d;
}

/* The training view of iteration it: each epoch visits every training view once, in an order
 * shuffled from the seed. */
static size_t train_view(struct trainer *tr, int it)
{
	size_t n = tr->scene.n_train, epoch = (size_t)(it - 1) / n, pos = (size_t)(it - 1) % n;

	if (pos == 0) {
		memcpy(tr->order, tr->scene.train_views, n * sizeof(size_t));
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = splat_rng_u64(tr->opt->seed, 300, epoch * 64 + i) % (i + 1), t = tr->order[i];
			tr->order[i] = tr->order[j];
			tr->order[j] = t;
		}
	}
	return tr->order[pos];
}

static int train_densify(struct trainer *tr, int it, int after_reset)
{
	const struct train_options *o = tr->opt;
	struct densify_config cfg = {
		.grad_threshold = 2e-4f,
		.clone_split_scale = (float)(0.01 * tr->scene.extent),
		.prune_opacity = 0.005f,
		.prune_radius = after_reset ? 20.0f : 0,
		.max_gaussians = o->max_gaussians,
		.seed = o->seed,
		.round = (uint64_t)it,
	};
	struct densify_result res;
	int err;

	if ((err = tr->ops->get_params(tr->ctx, &tr->host)) || (err = tr->ops->get_densify_stats(tr->ctx, &tr->stats)))
		return err;
	densify_apply(&cfg, &tr->host, &tr->stats, tr->moment_source, &res);
	if (o->log_interval)
		printf("densify at %d: %zu cloned, %zu split, %zu pruned -> %zu Gaussians\n", it, res.cloned,
		       res.split, res.pruned, tr->host.count);
	return tr->ops->set_params(tr->ctx, &tr->host, tr->moment_source);
}

/* α ← min(α, 0.01), keeping the Adam moments. */
static int train_reset_opacity(struct trainer *tr)
{
	const float cap = logf(0.01f / 0.99f);
	int err;

	if ((err = tr->ops->get_params(tr->ctx, &tr->host)))
		return err;
	for (size_t i = 0; i < tr->host.count; i++) {
		if (tr->host.opacity_logits[i] > cap)
			tr->host.opacity_logits[i] = cap;
		tr->moment_source[i] = (int32_t)i;
	}
	if (tr->opt->log_interval)
		printf("opacity reset: every opacity capped at 0.01\n");
	return tr->ops->set_params(tr->ctx, &tr->host, tr->moment_source);
}

/* The directory of option flag (--save-images, --data-dir): made if missing, and writable. */
static int train_check_dir(const char *flag, const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0 && mkdir(dir, 0755) != 0)
		return splat_error(errno, "%s %s: mkdir: %s", flag, dir, strerror(errno));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return splat_error(ENOTDIR, "%s %s: not a directory", flag, dir);
	if (access(dir, W_OK) != 0)
		return splat_error(errno, "%s %s: not writable: %s", flag, dir, strerror(errno));
	return 0;
}

/* Refuse an unwritable output before spending minutes training. */
static int train_check_outputs(const struct train_options *o)
{
	struct stat st;
	int err;

	if (o->save_images_dir && (err = train_check_dir("--save-images", o->save_images_dir)))
		return err;
	if (o->data == DATA_DISK && o->data_dir && (err = train_check_dir("--data-dir", o->data_dir)))
		return err;
	if (o->save_path) {
		char *copy = strdup(o->save_path);
		const char *dir = copy ? dirname(copy) : ".";
		int bad = stat(o->save_path, &st) == 0 && S_ISDIR(st.st_mode);
		err = 0;
		if (bad)
			err = splat_error(EISDIR, "--save %s: is a directory; give a file name such as out.ply",
					  o->save_path);
		else if (access(dir, W_OK) != 0)
			err = splat_error(errno, "--save %s: directory %s is not writable: %s", o->save_path, dir,
					  strerror(errno));
		free(copy);
		if (err)
			return err;
	}
	return 0;
}

static int train_write_outputs(struct trainer *tr, int sh_degree)
{
	const struct train_options *o = tr->opt;
	size_t hw3 = 3 * (size_t)tr->scene.width * tr->scene.height;
	int err = 0;

	if (o->save_images_dir) {
		for (size_t k = 0; k < tr->scene.n_test && !err; k++) {
			size_t v = tr->scene.test_views[k];
			char path[4096];
			if ((err = tr->ops->render(tr->ctx, v, sh_degree)) || (err = tr->ops->get_image(tr->ctx, tr->image)))
				break;
			snprintf(path, sizeof(path), "%s/test_%02zu_render.png", o->save_images_dir, v);
			if ((err = image_write(path, tr->image, tr->scene.width, tr->scene.height)))
				break;
			snprintf(path, sizeof(path), "%s/test_%02zu_gt.png", o->save_images_dir, v);
			err = image_write(path, tr->scene.gt + v * hw3, tr->scene.width, tr->scene.height);
		}
	}
	if (!err && o->save_path) {
		if (!(err = tr->ops->get_params(tr->ctx, &tr->host)))
			err = ply_write(o->save_path, &tr->host);
	}
	return err;
}

/* The host buffers, the backend with the views and the student, and --data disk's stage. */
static int train_setup(struct trainer *tr)
{
	const struct train_options *o = tr->opt;
	size_t hw3 = 3 * (size_t)o->width * o->height, cap;
	int err;

	cap = tr->cap = o->max_gaussians > tr->scene.teacher.count ? o->max_gaussians : tr->scene.teacher.count;
	splat_params_alloc(&tr->host, cap);
	tr->stats.grad_accum = splat_calloc(cap, sizeof(float));
	tr->stats.count = splat_calloc(cap, sizeof(int32_t));
	tr->stats.max_radius = splat_calloc(cap, sizeof(float));
	tr->moment_source = splat_calloc(cap, sizeof(int32_t));
	tr->image = splat_malloc(hw3 * sizeof(float));
	tr->order = splat_calloc(SCENE_VIEWS, sizeof(size_t));

	struct splat_backend_config cfg = { .width = o->width, .height = o->height, .threads = o->threads,
					    .max_gaussians = cap, .time_kernels = o->time_kernels };
	/* --data disk: the backend gets the cameras only; every iteration uploads its view */
	if ((err = tr->ops->create(&cfg, &tr->ctx)) ||
	    (err = tr->ops->set_views(tr->ctx, tr->scene.cams, SCENE_VIEWS, o->data == DATA_DISK ? NULL : tr->scene.gt)))
		return err;
	if (o->init_from_teacher)
		splat_params_copy(&tr->host, &tr->scene.teacher);
	else
		scene_init_student(&tr->scene, o->student_count < cap ? o->student_count : cap, &tr->host);
	if ((err = tr->ops->set_params(tr->ctx, &tr->host, NULL)))
		return err;
	if (o->data == DATA_DISK) {
		tr->views = splat_malloc((size_t)(o->iters > 0 ? o->iters : 1) * sizeof(size_t));
		for (int it = 1; it <= o->iters; it++)
			tr->views[it - 1] = train_view(tr, it);
		struct data_config dc = { .dir = o->data_dir, .loader = o->loader, .seed = o->seed,
					  .iters = o->iters, .views = tr->views };
		if ((err = data_open(&dc, &tr->scene, tr->ops, tr->ctx, &tr->data)))
			return err;
	}
	return 0;
}

/* The run's first lines: what trains on what, and the test PSNR before training. */
static void train_print_start(const struct trainer *tr, const struct train_result *res)
{
	const struct train_options *o = tr->opt;

	printf("splat-train: preset %s, %d iterations, %dx%d, %zu train / %zu test views, %zu Gaussians "
	       "(at most %zu), backend %s, %d threads, seed %llu\n",
	       o->preset, o->iters, o->width, o->height, tr->scene.n_train, tr->scene.n_test, tr->host.count,
	       o->max_gaussians, tr->ops->name, o->threads, (unsigned long long)o->seed);
	if (tr->data)
		printf("data: %zu training views as PNG in %s, loader %s, a random background per iteration\n",
		       tr->scene.n_train, data_dir(tr->data), o->loader == DATA_PREFETCH ? "prefetch" : "inline");
	printf("iteration 0: test PSNR %.2f dB (scene ready in %.2f s)\n", res->initial_test_psnr,
	       res->scene_seconds);
	fflush(stdout);
}

/* Densification, the opacity reset and the periodic test evaluation due after iteration it. */
static int train_after_step(struct trainer *tr, int it, struct train_result *res)
{
	const struct train_options *o = tr->opt;
	int err;

	if (o->densify_every > 0 && it % o->densify_every == 0 && it <= o->densify_until && it < o->iters) {
		if ((err = train_densify(tr, it, o->opacity_reset_at > 0 && it > o->opacity_reset_at)))
			return err;
		tr->count = tr->host.count;
	}
	if (o->opacity_reset_at > 0 && it == o->opacity_reset_at && (err = train_reset_opacity(tr)))
		return err;
	if (o->eval_every > 0 && it % o->eval_every == 0) {
		double p;
		if ((err = train_eval(tr, tr->scene.test_views, tr->scene.n_test, tr->sh_degree, &p)))
			return err;
		if (p < res->min_test_psnr)
			res->min_test_psnr = p;
		if (o->log_interval)
			printf("iteration %d: test PSNR %.2f dB\n", it, p);
	}
	return 0;
}

/* Iteration it: the view, render, loss, backward, Adam, what is due after, and the log line. */
static int train_iteration(struct trainer *tr, int it, struct train_result *res)
{
	const struct train_options *o = tr->opt;
	int log_now = o->log_interval && (it % o->log_interval == 0 || it == o->iters);
	struct splat_adam_config adam;
	int err;

	tr->sh_degree = train_sh_degree(o, it);
	train_adam_config(tr, it, &adam);
	if (tr->data && (err = data_next(tr->data, it)))
		return err;
	if ((err = tr->ops->render(tr->ctx, tr->views ? tr->views[it - 1] : train_view(tr, it), tr->sh_degree)) ||
	    (err = tr->ops->loss_grad(tr->ctx, log_now || it == o->iters ? &tr->loss : NULL)) ||
	    (err = tr->ops->backward(tr->ctx, NULL)) || (err = tr->ops->adam_step(tr->ctx, &adam)))
		return err;
	if ((err = train_after_step(tr, it, res)))
		return err;
	if (log_now) {
		double now = splat_now_seconds();
		printf("iter %6d  loss %.5f  gaussians %6zu  %8.2f ms/iter\n", it, tr->loss, tr->count,
		       1000.0 * (now - tr->t_log) / (it - tr->log_from + 1));
		fflush(stdout);
		tr->t_log = now;
		tr->log_from = it + 1;
	}
	return 0;
}

/* The final test and train PSNR, the outputs and the timing table. */
static int train_finish(struct trainer *tr, struct train_result *res, double t_start)
{
	const struct train_options *o = tr->opt;
	int err;

	if ((err = train_eval(tr, tr->scene.test_views, tr->scene.n_test, tr->sh_degree, &res->test_psnr)) ||
	    (err = train_eval(tr, tr->scene.train_views, tr->scene.n_train, tr->sh_degree, &res->train_psnr)))
		return err;
	if (res->test_psnr < res->min_test_psnr)
		res->min_test_psnr = res->test_psnr;
	res->gaussians = tr->count;
	err = train_write_outputs(tr, tr->sh_degree);
	res->seconds = splat_now_seconds() - t_start;
	/* after the timed work, so res->seconds does not include printing the table */
	if (!err && o->time_kernels && tr->ops->report_timing)
		err = tr->ops->report_timing(tr->ctx, stdout);
	return err;
}

static void train_free(struct trainer *tr)
{
	data_close(tr->data);   /* before destroy: its buffers may be the backend's */
	if (tr->ctx)
		tr->ops->destroy(tr->ctx);
	scene_free(&tr->scene);
	splat_params_free(&tr->host);
	free(tr->stats.grad_accum);
	free(tr->stats.count);
	free(tr->stats.max_radius);
	free(tr->moment_source);
	free(tr->image);
	free(tr->order);
	free(tr->views);
}

int train_run(const struct train_options *o, struct train_result *res)
{
	struct trainer tr = { .opt = o, .log_from = 1 };
	double t_start = splat_now_seconds(), t_iters, t_end;
	int err;

	memset(res, 0, sizeof(*res));
	if ((err = train_check_outputs(o)))
		return err;
	if (!(tr.ops = splat_backend_select(o->backend)))
		return -ENODEV;
	res->backend = tr.ops->name;
	if (o->time_kernels && !tr.ops->report_timing)
		fprintf(stderr, "splat-train: --time-kernels times the cuda backend's kernels; the %s backend has none, "
			"so no timing table is printed\n", tr.ops->name);
	if ((err = scene_generate(&tr.scene, o->seed, o->width, o->height, o->threads)))
		return err;
	if ((err = train_setup(&tr)))
		goto out;
	res->scene_seconds = splat_now_seconds() - t_start;

	tr.sh_degree = train_sh_degree(o, 1);
	if ((err = train_eval(&tr, tr.scene.test_views, tr.scene.n_test, tr.sh_degree, &res->initial_test_psnr)))
		goto out;
	res->min_test_psnr = res->initial_test_psnr;
	if (o->log_interval)
		train_print_start(&tr, res);

	tr.count = tr.host.count;
	t_iters = tr.t_log = splat_now_seconds();
	for (int it = 1; it <= o->iters; it++)
		if ((err = train_iteration(&tr, it, res)))
			goto out;
	t_end = splat_now_seconds();
	res->final_loss = tr.loss;
	res->ms_per_iter = o->iters > 0 ? 1000.0 * (t_end - t_iters) / o->iters : 0;
	res->data_ms_per_iter = tr.data ? data_ms_per_iter(tr.data) : 0;
	err = train_finish(&tr, res, t_start);
out:
	train_free(&tr);
	return err;
}
