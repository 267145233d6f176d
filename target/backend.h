/* backend.h: the interface between splat-train's host trainer (target/train.c) and a compute
 * backend: the multithreaded float32 CPU backend (target/cpu_backend.c) and the CUDA backend
 * (kernels/, optional). A backend owns the device copies of the Gaussians, their gradients and
 * Adam moments, the training views and their ground-truth images; the host drives it phase by
 * phase and reads results back only when it needs them (logging, evaluation, densification).
 *
 * The math every backend implements is in ../shared/reference/splat-pipeline.md; the conventions
 * that are choices, and that every backend must share bit for bit in meaning, are fixed here:
 *
 * - Camera: t = R·μ + translation (R row-major, world→camera), camera x right, y down, z forward.
 *   u = fx·t_x/t_z + cx, v = fy·t_y/t_z + cy, with cx = width/2, cy = height/2.
 *   Pixel (px, py) (integer indices, row py, column px) has its centre at (px + 0.5, py + 0.5).
 *   A Gaussian is culled when t_z <= SPLAT_NEAR_Z.
 * - Jacobian clamp: t_x/t_z and t_y/t_z are clamped to ±SPLAT_JACOBIAN_CLAMP·tan_half_fov for
 *   the Jacobian only; a clamped ratio gets no gradient (exact derivative of the clamped form).
 * - Conic: (A, B, C) with power = -½(A dx² + C dy²) - B dx dy, dx = u - (px + 0.5),
 *   dy = v - (py + 0.5); (A, B, C) = (c, -b, a)/det for Σ' = [[a, b], [b, c]]. Gradients with
 *   respect to the conic are the plain partial derivatives ∂L/∂A, ∂L/∂B, ∂L/∂C (B counted once).
 * - Support: radius = ceil(3·sqrt(λ_max)); a Gaussian touches the tiles
 *   [floor((u-r)/16), floor((u+r+15)/16)) × [floor((v-r)/16), floor((v+r+15)/16)), clamped to the
 *   image, and is blended only at pixels of those tiles (the double reference applies the same
 *   test, so every backend must). radius 0 or an empty rectangle means invisible in that view.
 * - Order: per tile, Gaussians are blended by increasing t_z; equal depths by increasing index
 *   (a stable radix sort of key (tile << 32 | float_bits(t_z)) over values in index order).
 * - Blend: α = min(SPLAT_ALPHA_MAX, o·e^power); skip when power > 0 or α < SPLAT_ALPHA_MIN; stop
 *   before adding a Gaussian when T·(1-α) < SPLAT_T_MIN. out = Σ α T rgb + T_final·background.
 * - Colour: rgb = max(SH(d) + 0.5, 0), d = normalize(μ - camera centre), SH bands up to the
 *   active degree only (higher coefficients get zero gradient).
 * - Loss: L = 0.8·mean|I - GT| + 0.2·(1 - SSIM), SSIM with an 11×11 Gaussian window (σ 1.5),
 *   zero padding, averaged over 3·H·W values; d|x|/dx at x = 0 is taken as 0.
 * - Densification statistics (accumulated by every backward pass, for Gaussians visible in the
 *   view): grad_accum += |(∂L/∂u · W/2, ∂L/∂v · H/2)|, count += 1, max_radius = max(, radius).
 * - Adam: β1 = 0.9, β2 = 0.999, ε = 1e-15, bias-corrected with the 1-based step:
 *   m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²; p -= lr · (m / (1-β1^t)) / (sqrt(v / (1-β2^t)) + ε).
 *   Every parameter of a group uses the group's rate; the background is one group of 3.
 *
 * Buffer layouts (host and device alike; all float32; N = number of Gaussians):
 *   means[3N]           x, y, z of Gaussian i at means[3i + 0..2]
 *   log_scales[3N]      log of the three axis scales, at [3i + 0..2]
 *   quats[4N]           unnormalised rotation quaternion (w, x, y, z) at [4i + 0..3]
 *   opacity_logits[N]   o = sigmoid(opacity_logits[i])
 *   sh[N*16*3]          SH coefficient k (0..15, band order of the reference notes) of channel
 *                       c (0 = r, 1 = g, 2 = b) at sh[(i*16 + k)*3 + c]; k = 0 is the DC term
 *   background[3]       r, g, b added with the final transmittance (trained, not activated)
 *   images              planar float [3][H][W]: channel c, row y, column x at c*H*W + y*W + x
 * Gradients use struct splat_params with the same layout.
 *
 * Error convention: every function returns 0 or a negative errno, and prints one line (on stderr,
 * prefixed "splat-train: ") naming the failing call and what the user can do. No function exits
 * the process. Functions may be called only in this order within an iteration:
 * render → [get_image] → loss_grad → backward → adam_step; set_params, get_params,
 * get_grads, get_densify_stats, reset_densify_stats and the data stage's set_background,
 * upload_target and upload_wait between iterations. */
#ifndef SPLAT_BACKEND_H
#define SPLAT_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SPLAT_SH_COEFFS      16         /* degree 3: 1 + 3 + 5 + 7 coefficients per channel */
#define SPLAT_MAX_SH_DEGREE  3
#define SPLAT_TILE           16         /* tile edge in pixels */
#define SPLAT_NEAR_Z         0.2        /* cull when t_z <= this */
#define SPLAT_JACOBIAN_CLAMP 1.3        /* × tan(fov/2), for the Jacobian only */
#define SPLAT_LOWPASS        0.3        /* added to the diagonal of Σ' */
#define SPLAT_ALPHA_MIN      (1.0 / 255.0)
#define SPLAT_ALPHA_MAX      0.99
#define SPLAT_T_MIN          1e-4
#define SPLAT_LOSS_L1_WEIGHT 0.8        /* L = 0.8·L1 + 0.2·(1 - SSIM) */
#define SPLAT_SSIM_WINDOW    11
#define SPLAT_SSIM_SIGMA     1.5
#define SPLAT_SSIM_C1        (0.01 * 0.01)
#define SPLAT_SSIM_C2        (0.03 * 0.03)
#define SPLAT_ADAM_BETA1     0.9
#define SPLAT_ADAM_BETA2     0.999
#define SPLAT_ADAM_EPS       1e-15

/* One pinhole camera. All views of a run share width and height. */
struct splat_camera {
	float rotation[9];      /* world→camera rotation, row-major */
	float translation[3];   /* t = rotation·μ + translation */
	float centre[3];        /* camera centre in world coordinates (= -rotationᵀ·translation) */
	float fx, fy;           /* focal lengths in pixels: width / (2 tan_half_fov_x), ... */
	float cx, cy;           /* principal point in pixels: width/2, height/2 */
	float tan_half_fov_x, tan_half_fov_y;
	int32_t width, height;
};

/* The trainable state, or gradients of it, in the layouts above. The owner of a splat_params
 * allocated with splat_params_alloc (target/splat.h) frees it with splat_params_free. */
struct splat_params {
	size_t count;           /* N: Gaussians in use */
	size_t capacity;        /* Gaussians the arrays have room for */
	float *means;
	float *log_scales;
	float *quats;
	float *opacity_logits;
	float *sh;
	float background[3];
};

/* Learning rates of one Adam step (already scheduled by the host) and the 1-based step count. */
struct splat_adam_config {
	float lr_means, lr_log_scales, lr_quats, lr_opacity;
	float lr_sh_dc;         /* SH coefficient 0 */
	float lr_sh_rest;       /* SH coefficients 1..15 */
	float lr_background;
	int step;
};

/* Densification statistics since the last reset_densify_stats; arrays of params count, owned
 * by the caller. */
struct splat_densify_stats {
	float *grad_accum;
	int32_t *count;
	float *max_radius;
};

/* --time-kernels: how the CUDA backend times its kernels (splat_backend_config.time_kernels) */
enum splat_time_mode { SPLAT_TIME_OFF, SPLAT_TIME_EVENT, SPLAT_TIME_DEVICE };

struct splat_backend_config {
	int width, height;      /* size of every view */
	int threads;            /* CPU worker threads (>= 1); other backends ignore it */
	size_t max_gaussians;   /* set_params never passes more; size buffers for it */
	int time_kernels;       /* SPLAT_TIME_EVENT: time every kernel launch and phase with CUDA
				 * events; SPLAT_TIME_DEVICE: every kernel stamps the GPU's clock
				 * inside itself (report_timing prints the table); 0: no timing at
				 * all. Backends without kernels ignore it */
};

struct splat_backend_ops {
	const char *name;       /* "cpu", "cuda": printed in the summary */

	/* Allocate a backend context in *ctxp. The caller releases it with destroy (also after a
	 * failed create, which leaves *ctxp NULL). */
	int (*create)(const struct splat_backend_config *cfg, void **ctxp);
	void (*destroy)(void *ctx);

	/* Copy n_views cameras and, when gt is not NULL, their ground-truth images (planar,
	 * n_views × 3·H·W floats, view v at gt + v·3·H·W). The backend keeps its own copies. */
	int (*set_views)(void *ctx, const struct splat_camera *cams, size_t n_views, const float *gt);

	/* Replace the Gaussians with p (count <= max_gaussians; background included). Adam moments:
	 * moment_source[i] is the index, in the previous parameter set, whose moments Gaussian i
	 * keeps, or -1 for zero moments; moment_source NULL zeroes every moment (background's too,
	 * otherwise the background keeps its moments). Densification statistics are reset. */
	int (*set_params)(void *ctx, const struct splat_params *p, const int32_t *moment_source);
	/* Copy the current parameters into out (out->capacity >= count; sets out->count). */
	int (*get_params)(void *ctx, struct splat_params *out);

	/* Forward pass of view `view` with SH bands 0..sh_degree active: project, bin and sort,
	 * blend. The state needed by the backward pass is kept until the next render. */
	int (*render)(void *ctx, size_t view, int sh_degree);
	/* Copy the last rendered image (planar 3·H·W floats) to the host. Synchronises. */
	int (*get_image)(void *ctx, float *rgb);

	/* Loss of the last render against its view's ground truth, and ∂L/∂image kept for
	 * backward. *loss_out receives L when loss_out is not NULL (that synchronises: the trainer
	 * passes NULL except on logging iterations). */
	int (*loss_grad)(void *ctx, float *loss_out);

	/* Backward pass of the last render: gradients of every parameter group (overwritten, not
	 * accumulated) and the densification statistics (accumulated). dl_dimage (planar 3·H·W,
	 * host memory) replaces the ∂L/∂image of loss_grad when not NULL (the gradient tests use
	 * a random-weight projection L = Σ w·image). */
	int (*backward)(void *ctx, const float *dl_dimage);
	/* Copy the gradients of the last backward into out (same layout; sets out->count). */
	int (*get_grads)(void *ctx, struct splat_params *out);

	/* One Adam step of every group with the gradients of the last backward. */
	int (*adam_step)(void *ctx, const struct splat_adam_config *cfg);

	int (*get_densify_stats)(void *ctx, struct splat_densify_stats *out);
	int (*reset_densify_stats)(void *ctx);

	/* Print the per-kernel and per-phase timing table of a backend created with time_kernels
	 * (format in splat-train(1), --time-kernels). Synchronises. NULL in a backend that has no
	 * kernels to time (cpu). */
	int (*report_timing)(void *ctx, FILE *out);

	/* The data stage of --data disk (target/data.c), which reads each iteration's ground truth
	 * from disk instead of set_views (that then passes gt NULL). */

	/* Render with background bg from the next render on. It is written into the background
	 * parameter (which Adam still steps; the data stage sets it again before every iteration,
	 * a random colour, and to the scene's background before evaluating). */
	int (*set_background)(void *ctx, const float bg[3]);
	/* Make image (planar 3·H·W floats in host memory) the ground truth of the following
	 * loss_grad calls, whatever view is rendered. pinned 0: any host memory, read before the
	 * call returns (CUDA: a copy ordered after the work already queued, waited for); pinned 1:
	 * a buffer from host_alloc that the caller leaves unchanged until upload_wait returns
	 * (CUDA: an asynchronous copy on the backend's stream). */
	int (*upload_target)(void *ctx, const float *image, int pinned);
	/* Wait until the last upload_target has read its source; then the caller may reuse it. */
	int (*upload_wait)(void *ctx);
	/* Host buffers for upload_target(…, 1) of at least bytes: page-locked where the backend
	 * copies asynchronously (cudaHostAlloc), 64-byte aligned memory otherwise. The caller frees
	 * them with host_free, before destroy. */
	int (*host_alloc)(void *ctx, size_t bytes, void **out);
	void (*host_free)(void *ctx, void *p);
};

/* The float32 multithreaded CPU backend (target/cpu_backend.c). */
extern const struct splat_backend_ops splat_cpu_backend;

#ifdef SPLAT_HAVE_CUDA
/* The CUDA backend (kernels/). Built and linked only when target/build.mk finds nvcc and
 * kernels/build.mk, which adds its objects to SPLAT_CUDA_OBJS and its link flags to
 * SPLAT_CUDA_LIBS (the CUDA runtime linked statically, so splat-train starts without a driver).
 */
extern const struct splat_backend_ops splat_cuda_backend;

/* Say whether a CUDA device can be used, without aborting or printing: 0 when usable (and a
 * short device description in why, e.g. "NVIDIA H100 80GB HBM3"), otherwise a negative errno
 * and one line in why saying what is missing ("no CUDA driver", "no CUDA device", or the
 * failing call and its error string). */
int splat_cuda_probe(char *why, size_t why_len);
#endif

#endif
