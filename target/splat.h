/* splat.h: splat-train's host-side modules: messages and allocation (util.c), the counter-based
 * random numbers every backend shares, the synthetic scene (scene.c), the double-precision
 * reference renderer (reference.c), densification (densify.c), image and PLY output
 * (image_io.c, ply.c), backend selection (backends.c), the data stage of --data disk (data.c)
 * and the trainer (train.c).
 * Module prefixes: splat_ (shared), scene_, ref_, densify_, image_, ply_, data_, train_. */
#ifndef SPLAT_SPLAT_H
#define SPLAT_SPLAT_H

#include "backend.h"

#include <stdint.h>
#include <stdio.h>

/* ---- messages and memory (util.c) ---- */

/* "splat-train: <message>" on stderr; splat_error returns -err (pass a positive errno). */
__attribute__((format(printf, 2, 3))) int splat_error(int err, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void splat_warn(const char *fmt, ...);
/* Allocation that prints "out of memory" and exits on failure (the only exits outside main).
 * The caller frees. */
void *splat_malloc(size_t n);
void *splat_calloc(size_t n, size_t size);
double splat_now_seconds(void);   /* CLOCK_MONOTONIC */
int splat_cpu_count(void);

/* Allocate the arrays of p for capacity Gaussians (zeroed; count = 0). Free with
 * splat_params_free, which leaves p zeroed. */
/* Set a camera's world→camera rotation (rows right, down, forward: camera x right, y down,
 * z forward), its centre pos and the matching translation; intrinsics are left alone. */
void splat_camera_set_pose(struct splat_camera *c, const double right[3], const double down[3],
			   const double fwd[3], const double pos[3]);
void splat_params_alloc(struct splat_params *p, size_t capacity);
void splat_params_free(struct splat_params *p);
/* Copy Gaussian src_index of src to dst_index of dst (all groups; not the background). */
void splat_params_copy_one(struct splat_params *dst, size_t dst_index,
			   const struct splat_params *src, size_t src_index);
/* Copy count and every Gaussian and the background; dst->capacity >= src->count. */
void splat_params_copy(struct splat_params *dst, const struct splat_params *src);

/* ---- random numbers: counter based, so any backend or order reproduces them ---- */

/* A 64-bit hash of (seed, stream, index) (splitmix64 finaliser over a mixed counter). */
uint64_t splat_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1) and standard normal (Box-Muller over two counters). */
double splat_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
double splat_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* ---- the synthetic scene (scene.c) ---- */

#define SCENE_VIEWS 15  /* on a ring; every 5th (0, 5, 10) is a test view */

struct splat_scene {
	uint64_t seed;
	int width, height;
	struct splat_params teacher;          /* ~4,500 Gaussians on procedural surfaces */
	struct splat_camera cams[SCENE_VIEWS];
	size_t train_views[SCENE_VIEWS], n_train;
	size_t test_views[SCENE_VIEWS], n_test;
	double extent;                        /* E = 1.1 × max camera distance from their mean */
	float *gt;                            /* SCENE_VIEWS × 3·H·W, rendered by the reference */
	float *gt_trans;                      /* SCENE_VIEWS × H·W: the background's share of each
					       * pixel of gt (final transmittance; --data disk
					       * composites its random backgrounds with it) */
};

/* Build the teacher and cameras from seed and render the ground truth with the double
 * reference on `threads` threads. Free with scene_free. */
int scene_generate(struct splat_scene *s, uint64_t seed, int width, int height, int threads);
void scene_free(struct splat_scene *s);
/* Fill out (capacity >= count) with the student: count teacher centres jittered by half their
 * nearest-neighbour distance, noisy colours, opacity 0.1, isotropic scale = mean distance to
 * the 3 nearest neighbours, identity rotation, grey background. */
void scene_init_student(const struct splat_scene *s, size_t count, struct splat_params *out);

/* ---- the double-precision reference (reference.c) ---- */

struct ref_params {
	size_t count;
	double *means, *log_scales, *quats, *opacity_logits, *sh;
	double background[3];
};

void ref_params_alloc(struct ref_params *p, size_t count);
void ref_params_free(struct ref_params *p);
void ref_params_from_float(struct ref_params *dst, const struct splat_params *src);
/* Visit every scalar of p (Gaussian groups, then the background) — for finite differences. */
size_t ref_params_group_size(const struct ref_params *p, int group); /* groups 0..5 */
double *ref_params_group(struct ref_params *p, int group);
extern const char *const ref_group_names[6]; /* means, log_scales, quats, opacities, sh, bg */

/* Render p from cam into image (planar 3·H·W). */
void ref_render(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
		double *image);
/* ref_render, and the final transmittance of every pixel in t_final (H·W): the share of the
 * background in it (1 - alpha). */
void ref_render_transmittance(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
			       double *image, double *t_final);
/* ref_render, and near_edge (per pixel) set where a float renderer may round a discrete
 * decision (α or T threshold, depth order, tile rectangle) the other way: the only pixels where
 * a backend may differ from the reference by more than rounding. */
void ref_render_flagged(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
			double *image, unsigned char *near_edge);
/* Gradients of L (given ∂L/∂image) with respect to every parameter, written to grads
 * (allocated by the caller with p->count). */
void ref_backward(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
		  const double *dl_dimage, struct ref_params *grads);
/* Mean SSIM over planes × w × h values of x against y; ds_dx (may be NULL) receives
 * ∂(mean SSIM)/∂x. */
double ref_ssim(const double *x, const double *y, int planes, int w, int h, double *ds_dx);
/* The training loss of image against gt (3 planes) and, when dl_dimage is not NULL, its
 * gradient. */
double ref_loss(const double *image, const double *gt, int w, int h, double *dl_dimage);

/* ---- densification (densify.c) ---- */

struct densify_config {
	float grad_threshold;     /* 2e-4 */
	float clone_split_scale;  /* 0.01·E: clone at or below, split above */
	float prune_opacity;      /* 0.005 */
	float prune_radius;       /* > 0: also prune max 2D radius above this (after a reset) */
	size_t max_gaussians;     /* budget: keep the highest-gradient candidates */
	uint64_t seed, round;     /* for the split children's positions */
};

struct densify_result {
	size_t cloned, split, pruned;
};

/* Clone, split and prune params (in place; capacity >= max_gaussians) from stats.
 * moment_source (capacity entries) receives, per new Gaussian, the old index whose Adam moments
 * it keeps, or -1. */
void densify_apply(const struct densify_config *cfg, struct splat_params *params,
		   const struct splat_densify_stats *stats, int32_t *moment_source,
		   struct densify_result *res);

/* ---- output (image_io.c, ply.c) ---- */

/* Write a planar 3·H·W float image clamped to [0, 1] as 8-bit PNG (name ends in .png) or
 * binary PPM (otherwise). */
int image_write(const char *path, const float *rgb, int w, int h);
/* Write it as 8-bit RGB PNG with row filter `filter`: 0..4 (none, sub, up, average, paeth) on
 * every row, or IMAGE_FILTER_ADAPTIVE (per row, the smallest sum of magnitudes, as libpng). */
#define IMAGE_FILTER_ADAPTIVE (-1)
int image_write_png(const char *path, const float *rgb, int w, int h, int filter);
/* Write params as a standard 3DGS binary little-endian .ply. */
int ply_write(const char *path, const struct splat_params *p);

/* ---- backends (backends.c) ---- */

enum splat_backend_choice { SPLAT_BACKEND_AUTO, SPLAT_BACKEND_CPU, SPLAT_BACKEND_CUDA };
/* Resolve a choice to backend ops. AUTO falls back to the CPU and prints one line saying why.
 * Returns NULL (after one error line) when CUDA was asked for and cannot be used. */
const struct splat_backend_ops *splat_backend_select(enum splat_backend_choice choice);

/* ---- the data stage (data.c): --data disk, --loader inline|prefetch ---- */

enum data_source { DATA_MEMORY, DATA_DISK };
enum data_loader { DATA_INLINE, DATA_PREFETCH };

struct data_config {
	const char *dir;          /* NULL: a fresh mkdtemp under $TMPDIR or /tmp, removed by data_close */
	enum data_loader loader;
	uint64_t seed;            /* of the per-iteration backgrounds */
	int iters;
	const size_t *views;      /* [iters]: iteration it trains view views[it - 1]; the caller keeps
				   * the array until data_close */
};

struct data_stage;

/* Write the scene's training views as PNG files into the data directory and, for the prefetch
 * loader, start the loader thread (it begins on iteration 1 at once). ops and ctx are the
 * backend's; *out is released with data_close (also after a failure, which leaves it NULL). */
int data_open(const struct data_config *cfg, const struct splat_scene *scene,
	      const struct splat_backend_ops *ops, void *ctx, struct data_stage **out);
/* Before iteration it (1, 2, ... in order): its view loaded, decoded, on its background, and
 * uploaded as the backend's target, with the background set for its render. */
int data_next(struct data_stage *ds, int it);
/* Set the scene's own background in the backend (before evaluation). */
int data_scene_background(struct data_stage *ds);
/* Stop the loader, free the buffers, remove the directory data_open created. Before the
 * backend's destroy. NULL is a no-op. */
void data_close(struct data_stage *ds);
const char *data_dir(const struct data_stage *ds);
/* Mean time data_next took on the training thread (the time a device waits for data). */
double data_ms_per_iter(const struct data_stage *ds);

/* Decode a PNG that image_write_png wrote (8-bit RGB, not interlaced, row filters 0..4) of
 * exactly w×h pixels into rgb (interleaved, 3·w·h bytes). 0, or -EINVAL (corrupt, or not that
 * kind of PNG) after one error line naming what. */
int data_decode_png(const unsigned char *png, size_t len, int w, int h, unsigned char *rgb);
/* The random background of iteration it: a function of (seed, it) only. */
void data_background(uint64_t seed, int it, float bg[3]);

/* ---- the trainer (train.c) ---- */

struct train_options {
	const char *preset;
	int iters;
	uint64_t seed;
	int width, height;
	int densify_every;        /* 0: no densification */
	int densify_until;        /* last iteration that densifies */
	int opacity_reset_at;     /* 0: none */
	size_t student_count;
	size_t max_gaussians;
	int log_interval;         /* 0: quiet */
	int threads;
	float lr_scale;           /* multiplies every learning rate (short presets) */
	enum splat_backend_choice backend;
	const char *save_images_dir; /* NULL: none */
	const char *save_path;       /* NULL: none */
	int time_kernels;            /* --time-kernels[=event|device]: the CUDA backend's per-kernel
				      * table, SPLAT_TIME_EVENT or SPLAT_TIME_DEVICE; 0: none */
	enum data_source data;       /* --data: memory (the views stay in the backend) or disk */
	const char *data_dir;        /* --data-dir; NULL: a temporary directory */
	enum data_loader loader;     /* --loader (disk only) */
	/* For the tests (no flag): start the student at the teacher with every SH band active,
	 * and evaluate the test views every eval_every iterations (0: only at start and end). */
	int init_from_teacher;
	int eval_every;
};

struct train_result {
	double initial_test_psnr, test_psnr, train_psnr, min_test_psnr;
	double final_loss;
	size_t gaussians;
	double seconds, ms_per_iter, scene_seconds;
	double data_ms_per_iter;  /* --data disk: the training thread's share of ms_per_iter in data_next */
	const char *backend;
};

/* Fill o with the preset's values; returns -EINVAL for an unknown name. */
int train_preset(const char *name, struct train_options *o);
/* Print the preset table (for --help). */
void train_print_presets(FILE *f);
/* Run a whole training: scene, student, iterations, evaluation, outputs. */
int train_run(const struct train_options *o, struct train_result *res);
/* PSNR of a rendered image against ground truth, both clamped to [0, 1]. */
double splat_psnr(const float *img, const float *gt, size_t n);

#endif
