/* cpu_backend.c: the float32 CPU backend of splat-train (backend.h), multithreaded with a
 * small pthread pool. Each phase of an iteration is its own function, so a profile of the
 * trainer shows them by name: cpu_project_worker, cpu_bin_and_sort (cpu_radix_sort),
 * cpu_blend_forward_worker, cpu_ssim_*_worker (loss), cpu_blend_backward_worker,
 * cpu_project_backward_worker, cpu_adam_worker.
 *
 * Determinism: work is split statically (Gaussian ranges, tiles dealt round robin, row bands),
 * every thread accumulates the blend gradients into its own buffer, and the buffers are summed
 * in thread order; so a given thread count always gives bit-identical results. */
#include "splat.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SM_REAL float
#define SM(name) name##_f
#include "splat_math.h"
#undef SM
#undef SM_REAL

#define CPU_PHASE __attribute__((noinline))

/* One Gaussian of a tile's list, gathered contiguously in blend order so that the per-pixel
 * loops stream through memory instead of chasing indices. */
struct cpu_splat {
	float u, v, conic[3], opacity, rgb[3];
	uint32_t id;
};

struct cpu_backend;
typedef void (*cpu_job_fn)(struct cpu_backend *ctx, int thread);

/* A fixed pool: thread 0 is the caller, threads 1..n-1 wait for the next job. */
struct cpu_pool {
	pthread_t *tids;
	int started;                /* workers running (indices 1..started) */
	pthread_mutex_t mu;
	pthread_cond_t start, done;
	uint64_t generation;
	int pending, stop;
	cpu_job_fn fn;
};

struct cpu_worker {
	struct cpu_backend *ctx;
	int index;
};

struct cpu_backend {
	struct splat_backend_config cfg;
	int threads, width, height, tiles_x, tiles_y;
	size_t hw, cap;
	struct cpu_pool pool;
	struct cpu_worker *workers;

	struct splat_camera *cams;
	size_t n_views;
	float *gt;                     /* n_views × 3hw, NULL when no ground truth was given */
	float *target;                 /* [3hw] upload_target's image, NULL before the first */

	struct splat_params params, grads, adam_m, adam_v;

	/* state of the last render */
	size_t view;
	int sh_degree, rendered;
	struct proj_f *proj;           /* [cap] */
	float *rgb;                    /* [3cap] */
	unsigned char *clamped;        /* [3cap] */
	float *opacity;                /* [cap] */
	uint32_t *tiles_touched;       /* [cap] */
	uint64_t *tile_offset;         /* [cap] exclusive scan of tiles_touched */
	uint64_t *keys, *keys_tmp;     /* (tile << 32) | float_bits(depth) */
	uint32_t *vals, *vals_tmp;     /* Gaussian index */
	size_t n_keys, key_cap;
	uint32_t *tile_range;          /* [2·tiles]: [start, end) into keys */
	float *image;                  /* [3hw] */
	float *t_final;                /* [hw] */
	uint32_t *n_contrib;           /* [hw] list entries visited up to the last contributor */

	/* loss */
	float *dl_dimage;              /* [3hw] */
	float *ssim_moment[5];         /* [3hw] each: m_x, m_y, m_xx, m_yy, m_xy */
	float *ssim_tmp[5];            /* [3hw] each: horizontal-pass results */
	float *ssim_grad_tmp[3];       /* [3hw] each: horizontal pass of the SSIM partials */
	float ssim_window[SPLAT_SSIM_WINDOW];
	double *thread_l1, *thread_ssim;

	/* backward */
	float *thread_g2;              /* [threads][9·cap]: u, v, conic[3], opacity, rgb[3] */
	float *thread_bg;              /* [threads][3] */
	struct cpu_splat **splats;     /* [threads]: the tile being blended, gathered */
	size_t *splat_cap;             /* [threads] */

	/* densification statistics */
	float *ds_grad, *ds_radius;
	int32_t *ds_count;

	struct splat_adam_config adam;
};

/* ---- the pool ---- */

static void *cpu_worker_main(void *arg)
{
	struct cpu_worker *w = arg;
	struct cpu_pool *pool = &w->ctx->pool;
	uint64_t seen = 0;

	pthread_mutex_lock(&pool->mu);
	for (;;) {
		while (pool->generation == seen && !pool->stop)
			pthread_cond_wait(&pool->start, &pool->mu);
		if (pool->stop)
			break;
		seen = pool->generation;
		cpu_job_fn fn = pool->fn;
		pthread_mutex_unlock(&pool->mu);
		fn(w->ctx, w->index);
		pthread_mutex_lock(&pool->mu);
		if (--pool->pending == 0)
			pthread_cond_signal(&pool->done);
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

/* Run fn on every thread (the caller is thread 0) and wait for all of them. */
static void cpu_run(struct cpu_backend *ctx, cpu_job_fn fn)
{
	struct cpu_pool *pool = &ctx->pool;

	pthread_mutex_lock(&pool->mu);
	pool->fn = fn;
	pool->pending = pool->started;
	pool->generation++;
	pthread_cond_broadcast(&pool->start);
	pthread_mutex_unlock(&pool->mu);
	fn(ctx, 0);
	pthread_mutex_lock(&pool->mu);
	while (pool->pending > 0)
		pthread_cond_wait(&pool->done, &pool->mu);
	pthread_mutex_unlock(&pool->mu);
}

static void cpu_range(size_t n, int thread, int threads, size_t *begin, size_t *end)
{
	*begin = n * thread / threads;
	*end = n * (thread + 1) / threads;
}

/* ---- forward ---- */

static CPU_PHASE void cpu_project_worker(struct cpu_backend *ctx, int thread)
{
	const struct splat_camera *cam = &ctx->cams[ctx->view];
	const struct splat_params *p = &ctx->params;
	size_t begin, end;

	cpu_range(p->count, thread, ctx->threads, &begin, &end);
	for (size_t i = begin; i < end; i++) {
		struct proj_f *pr = &ctx->proj[i];
		ctx->tiles_touched[i] = 0;
		if (!project_f(p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, cam, pr))
			continue;
		sh_color_f(p->means + 3 * i, p->sh + 48 * i, ctx->sh_degree, cam, ctx->rgb + 3 * i,
			   ctx->clamped + 3 * i);
		ctx->opacity[i] = 1.0f / (1.0f + expf(-p->opacity_logits[i]));
		ctx->tiles_touched[i] = (uint32_t)((pr->rect[2] - pr->rect[0]) * (pr->rect[3] - pr->rect[1]));
	}
}

static CPU_PHASE void cpu_emit_keys_worker(struct cpu_backend *ctx, int thread)
{
	size_t begin, end;

	cpu_range(ctx->params.count, thread, ctx->threads, &begin, &end);
	for (size_t i = begin; i < end; i++) {
		if (!ctx->tiles_touched[i])
			continue;
		const struct proj_f *pr = &ctx->proj[i];
		uint32_t depth_bits;
		uint64_t k = ctx->tile_offset[i];
		memcpy(&depth_bits, &pr->depth, sizeof(depth_bits)); /* depth > 0: orders as uint */
		for (int ty = pr->rect[1]; ty < pr->rect[3]; ty++)
			for (int tx = pr->rect[0]; tx < pr->rect[2]; tx++, k++) {
				ctx->keys[k] = (uint64_t)(ty * ctx->tiles_x + tx) << 32 | depth_bits;
				ctx->vals[k] = (uint32_t)i;
			}
	}
}

/* LSD radix sort of (keys, vals) over the low `bits` bits, 8 bits a pass, stable. Hand-written
 * because the C library has no stable sort; the CUDA backend uses CUB's radix sort. */
static CPU_PHASE void cpu_radix_sort(struct cpu_backend *ctx, int bits)
{
	uint64_t *k_in = ctx->keys, *k_out = ctx->keys_tmp;
	uint32_t *v_in = ctx->vals, *v_out = ctx->vals_tmp;
	size_t n = ctx->n_keys;

	for (int shift = 0; shift < bits; shift += 8) {
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[((k_in[i] >> shift) & 0xff) + 1]++;
		for (int d = 0; d < 256; d++)
			count[d + 1] += count[d];
		for (size_t i = 0; i < n; i++) {
			size_t pos = count[(k_in[i] >> shift) & 0xff]++;
			k_out[pos] = k_in[i];
			v_out[pos] = v_in[i];
		}
		uint64_t *kt = k_in; k_in = k_out; k_out = kt;
		uint32_t *vt = v_in; v_in = v_out; v_out = vt;
	}
	ctx->keys = k_in;
	ctx->keys_tmp = k_out;
	ctx->vals = v_in;
	ctx->vals_tmp = v_out;
}

static CPU_PHASE void cpu_bin_and_sort(struct cpu_backend *ctx)
{
	size_t n = ctx->params.count, tiles = (size_t)ctx->tiles_x * ctx->tiles_y;
	uint64_t total = 0;
	int tile_bits = 0;

	for (size_t i = 0; i < n; i++) {
		ctx->tile_offset[i] = total;
		total += ctx->tiles_touched[i];
	}
	ctx->n_keys = total;
	if (total > ctx->key_cap) {
		size_t cap = total + total / 2;
		free(ctx->keys); free(ctx->keys_tmp); free(ctx->vals); free(ctx->vals_tmp);
		ctx->keys = splat_malloc(cap * sizeof(uint64_t));
		ctx->keys_tmp = splat_malloc(cap * sizeof(uint64_t));
		ctx->vals = splat_malloc(cap * sizeof(uint32_t));
		ctx->vals_tmp = splat_malloc(cap * sizeof(uint32_t));
		ctx->key_cap = cap;
	}
	cpu_run(ctx, cpu_emit_keys_worker);
	while ((1ull << tile_bits) < tiles)
		tile_bits++;
	cpu_radix_sort(ctx, 32 + tile_bits);
	memset(ctx->tile_range, 0, 2 * tiles * sizeof(uint32_t));
	for (size_t k = 0; k < total; k++) {
		uint32_t tile = (uint32_t)(ctx->keys[k] >> 32);
		if (k == 0 || tile != (uint32_t)(ctx->keys[k - 1] >> 32))
			ctx->tile_range[2 * tile] = (uint32_t)k;
		if (k + 1 == total || tile != (uint32_t)(ctx->keys[k + 1] >> 32))
			ctx->tile_range[2 * tile + 1] = (uint32_t)k + 1;
	}
}

/* α of a gathered Gaussian at a pixel centre; 0 when skipped. power, dx, dy out for the
 * backward pass. */
static inline float cpu_alpha(const struct cpu_splat *sp, float px, float py, float *power, float *dx, float *dy)
{
	*dx = sp->u - px;
	*dy = sp->v - py;
	*power = -0.5f * (sp->conic[0] * *dx * *dx + sp->conic[2] * *dy * *dy) - sp->conic[1] * *dx * *dy;
	/* o ≤ 1, so below ln(1/255) = -5.5413 the α test fails anyway: skip the expf (most pairs
	 * of a tile's pixels and Gaussians are this far apart). The margin keeps it exact. */
	if (*power > 0 || *power < -5.6f)
		return 0;
	float alpha = sp->opacity * expf(*power);
	if (alpha > (float)SPLAT_ALPHA_MAX)
		alpha = (float)SPLAT_ALPHA_MAX;
	return alpha < (float)SPLAT_ALPHA_MIN ? 0 : alpha;
}

/* Gather the Gaussians of tile into this thread's scratch; returns it (n entries). */
static struct cpu_splat *cpu_gather_tile(struct cpu_backend *ctx, int thread, int tile, uint32_t *n)
{
	uint32_t begin = ctx->tile_range[2 * tile], end = ctx->tile_range[2 * tile + 1];
	struct cpu_splat *sp;

	*n = end - begin;
	if (*n > ctx->splat_cap[thread]) {
		free(ctx->splats[thread]);
		ctx->splat_cap[thread] = *n + *n / 2;
		ctx->splats[thread] = splat_malloc(ctx->splat_cap[thread] * sizeof(struct cpu_splat));
	}
	sp = ctx->splats[thread];
	for (uint32_t k = 0; k < *n; k++) {
		uint32_t g = ctx->vals[begin + k];
		const struct proj_f *pr = &ctx->proj[g];
		sp[k] = (struct cpu_splat){ .u = pr->u, .v = pr->v, .conic = { pr->conic[0], pr->conic[1], pr->conic[2] },
					    .opacity = ctx->opacity[g],
					    .rgb = { ctx->rgb[3 * g], ctx->rgb[3 * g + 1], ctx->rgb[3 * g + 2] },
					    .id = g };
	}
	return sp;
}

static void cpu_blend_forward_tile(struct cpu_backend *ctx, int thread, int tile)
{
	int tx = tile % ctx->tiles_x, ty = tile / ctx->tiles_x;
	uint32_t n;
	const struct cpu_splat *sp = cpu_gather_tile(ctx, thread, tile, &n);
	const float *bg = ctx->params.background;

	for (int y = ty * SPLAT_TILE; y < (ty + 1) * SPLAT_TILE && y < ctx->height; y++)
		for (int x = tx * SPLAT_TILE; x < (tx + 1) * SPLAT_TILE && x < ctx->width; x++) {
			float px = x + 0.5f, py = y + 0.5f, T = 1, c[3] = { 0, 0, 0 };
			uint32_t last = 0;
			for (uint32_t k = 0; k < n; k++) {
				float power, dx, dy, alpha = cpu_alpha(&sp[k], px, py, &power, &dx, &dy);
				if (alpha == 0)
					continue;
				float next_t = T * (1 - alpha);
				if (next_t < (float)SPLAT_T_MIN)
					break;
				for (int ch = 0; ch < 3; ch++)
					c[ch] += alpha * T * sp[k].rgb[ch];
				T = next_t;
				last = k + 1;
			}
			size_t pix = (size_t)y * ctx->width + x;
			ctx->t_final[pix] = T;
			ctx->n_contrib[pix] = last;
			for (int ch = 0; ch < 3; ch++)
				ctx->image[ch * ctx->hw + pix] = c[ch] + T * bg[ch];
		}
}

static CPU_PHASE void cpu_blend_forward_worker(struct cpu_backend *ctx, int thread)
{
	for (int t = thread; t < ctx->tiles_x * ctx->tiles_y; t += ctx->threads)
		cpu_blend_forward_tile(ctx, thread, t);
}

static int cpu_render(void *opaque, size_t view, int sh_degree)
{
	struct cpu_backend *ctx = opaque;

	if (view >= ctx->n_views)
		return splat_error(EINVAL, "cpu backend: render of view %zu, but only %zu views were set",
				   view, ctx->n_views);
	ctx->view = view;
	ctx->sh_degree = sh_degree < 0 ? 0 : sh_degree > SPLAT_MAX_SH_DEGREE ? SPLAT_MAX_SH_DEGREE : sh_degree;
	cpu_run(ctx, cpu_project_worker);
	cpu_bin_and_sort(ctx);
	cpu_run(ctx, cpu_blend_forward_worker);
	ctx->rendered = 1;
	return 0;
}

static int cpu_get_image(void *opaque, float *rgb)
{
	struct cpu_backend *ctx = opaque;

	if (!ctx->rendered)
		return splat_error(EINVAL, "cpu backend: get_image before any render");
	memcpy(rgb, ctx->image, 3 * ctx->hw * sizeof(float));
	return 0;
}

/* ---- loss: 0.8·L1 + 0.2·(1 - SSIM) and its gradient ---- */

/* Rows [begin, end) of all three channels: products, then the horizontal window pass. */
/* The ground truth of the loss: the last upload_target's image, else the rendered view's. */
static const float *cpu_gt(const struct cpu_backend *ctx)
{
	return ctx->target ? ctx->target : ctx->gt + ctx->view * 3 * ctx->hw;
}

static CPU_PHASE void cpu_ssim_moments_worker(struct cpu_backend *ctx, int thread)
{
	const float *x = ctx->image, *y = cpu_gt(ctx);
	size_t begin, end;
	int w = ctx->width, h = ctx->height;

	cpu_range((size_t)h, thread, ctx->threads, &begin, &end);
	for (int c = 0; c < 3; c++) {
		size_t off = c * ctx->hw;
		for (size_t yy = begin; yy < end; yy++)
			for (int xx = 0; xx < w; xx++) {
				size_t i = off + yy * w + xx;
				/* ssim_moment doubles as the product buffer before the vertical pass */
				ctx->ssim_moment[0][i] = x[i];
				ctx->ssim_moment[1][i] = y[i];
				ctx->ssim_moment[2][i] = x[i] * x[i];
				ctx->ssim_moment[3][i] = y[i] * y[i];
				ctx->ssim_moment[4][i] = x[i] * y[i];
			}
		for (int k = 0; k < 5; k++)
			ssim_pass_f(ctx->ssim_moment[k] + off, ctx->ssim_tmp[k] + off, w, h, (int)begin, (int)end, 0,
				    ctx->ssim_window);
	}
}

/* Vertical pass, SSIM per pixel and its partials (scaled for the loss), the L1 sum, and the
 * horizontal pass of the partials. */
static CPU_PHASE void cpu_ssim_map_worker(struct cpu_backend *ctx, int thread)
{
	const float *x = ctx->image, *y = cpu_gt(ctx);
	size_t begin, end;
	int w = ctx->width, h = ctx->height;
	double l1 = 0, ssim = 0;
	float scale = -(float)(1 - SPLAT_LOSS_L1_WEIGHT) / (float)(3 * ctx->hw);

	cpu_range((size_t)h, thread, ctx->threads, &begin, &end);
	for (int c = 0; c < 3; c++) {
		size_t off = c * ctx->hw;
		for (int k = 0; k < 5; k++)
			ssim_pass_f(ctx->ssim_tmp[k] + off, ctx->ssim_moment[k] + off, w, h, (int)begin, (int)end, 1,
				    ctx->ssim_window);
		for (size_t i = off + begin * w; i < off + end * w; i++) {
			float d_mx, d_mxx, d_mxy;
			ssim += ssim_pixel_f(ctx->ssim_moment[0][i], ctx->ssim_moment[1][i], ctx->ssim_moment[2][i],
					     ctx->ssim_moment[3][i], ctx->ssim_moment[4][i], &d_mx, &d_mxx, &d_mxy);
			/* the partials reuse moment buffers 0..2, which this pixel no longer needs */
			ctx->ssim_moment[0][i] = scale * d_mx;
			ctx->ssim_moment[1][i] = scale * d_mxx;
			ctx->ssim_moment[2][i] = scale * d_mxy;
			l1 += fabsf(x[i] - y[i]);
		}
		/* not into ssim_tmp: other threads still read its rows next to this band */
		for (int k = 0; k < 3; k++)
			ssim_pass_f(ctx->ssim_moment[k] + off, ctx->ssim_grad_tmp[k] + off, w, h, (int)begin, (int)end,
				    0, ctx->ssim_window);
	}
	ctx->thread_l1[thread] = l1;
	ctx->thread_ssim[thread] = ssim;
}

/* Vertical pass of the partials and ∂L/∂x = G*g_x + 2x(G*g_xx) + y(G*g_xy) + L1 term. */
static CPU_PHASE void cpu_ssim_grad_worker(struct cpu_backend *ctx, int thread)
{
	const float *x = ctx->image, *y = cpu_gt(ctx);
	size_t begin, end;
	int w = ctx->width, h = ctx->height;
	float l1_scale = (float)SPLAT_LOSS_L1_WEIGHT / (float)(3 * ctx->hw);

	cpu_range((size_t)h, thread, ctx->threads, &begin, &end);
	for (int c = 0; c < 3; c++) {
		size_t off = c * ctx->hw;
		for (int k = 0; k < 3; k++)
			ssim_pass_f(ctx->ssim_grad_tmp[k] + off, ctx->ssim_moment[k] + off, w, h, (int)begin, (int)end,
				    1, ctx->ssim_window);
		for (size_t i = off + begin * w; i < off + end * w; i++) {
			float d = x[i] - y[i];
			ctx->dl_dimage[i] = ctx->ssim_moment[0][i] + 2 * x[i] * ctx->ssim_moment[1][i] +
					    y[i] * ctx->ssim_moment[2][i] + l1_scale * (d > 0 ? 1.0f : d < 0 ? -1.0f : 0.0f);
		}
	}
}

static int cpu_loss_grad(void *opaque, float *loss_out)
{
	struct cpu_backend *ctx = opaque;
	double l1 = 0, ssim = 0;

	if (!ctx->rendered)
		return splat_error(EINVAL, "cpu backend: loss_grad before any render");
	if (!ctx->gt && !ctx->target)
		return splat_error(EINVAL, "cpu backend: loss_grad needs ground-truth images (set_views or upload_target)");
	cpu_run(ctx, cpu_ssim_moments_worker);
	cpu_run(ctx, cpu_ssim_map_worker);
	cpu_run(ctx, cpu_ssim_grad_worker);
	for (int t = 0; t < ctx->threads; t++) {
		l1 += ctx->thread_l1[t];
		ssim += ctx->thread_ssim[t];
	}
	if (loss_out)
		*loss_out = (float)(SPLAT_LOSS_L1_WEIGHT * l1 / (3.0 * ctx->hw) +
				    (1 - SPLAT_LOSS_L1_WEIGHT) * (1 - ssim / (3.0 * ctx->hw)));
	return 0;
}

/* ---- backward ---- */

static void cpu_blend_backward_tile(struct cpu_backend *ctx, int thread, int tile, float *g2, float *bg_grad)
{
	int tx = tile % ctx->tiles_x, ty = tile / ctx->tiles_x;
	uint32_t n;
	const struct cpu_splat *sp = cpu_gather_tile(ctx, thread, tile, &n);
	const float *bg = ctx->params.background;

	for (int y = ty * SPLAT_TILE; y < (ty + 1) * SPLAT_TILE && y < ctx->height; y++)
		for (int x = tx * SPLAT_TILE; x < (tx + 1) * SPLAT_TILE && x < ctx->width; x++) {
			size_t pix = (size_t)y * ctx->width + x;
			float px = x + 0.5f, py = y + 0.5f, tf = ctx->t_final[pix], T = tf;
			float accum[3] = { 0, 0, 0 }, gpix[3], bg_dot = 0;
			for (int ch = 0; ch < 3; ch++) {
				gpix[ch] = ctx->dl_dimage[ch * ctx->hw + pix];
				bg_grad[ch] += tf * gpix[ch];
				bg_dot += bg[ch] * gpix[ch];
			}
			for (uint32_t k = ctx->n_contrib[pix]; k-- > 0;) {
				float power, dx, dy, alpha = cpu_alpha(&sp[k], px, py, &power, &dx, &dy);
				if (alpha == 0)
					continue;
				T /= 1 - alpha;
				const float *rgb = sp[k].rgb;
				float *gg = g2 + 9 * (size_t)sp[k].id;
				float d_alpha = 0;
				for (int ch = 0; ch < 3; ch++) {
					d_alpha += (rgb[ch] - accum[ch]) * gpix[ch];
					gg[6 + ch] += alpha * T * gpix[ch];
					accum[ch] = alpha * rgb[ch] + (1 - alpha) * accum[ch];
				}
				d_alpha = T * d_alpha - tf / (1 - alpha) * bg_dot;
				float gauss = expf(power);
				if (sp[k].opacity * gauss > (float)SPLAT_ALPHA_MAX)
					continue; /* clamped α: no gradient to opacity or shape */
				gg[5] += gauss * d_alpha;
				float d_power = sp[k].opacity * gauss * d_alpha;
				const float *cn = sp[k].conic;
				gg[0] -= d_power * (cn[0] * dx + cn[1] * dy);
				gg[1] -= d_power * (cn[2] * dy + cn[1] * dx);
				gg[2] -= d_power * 0.5f * dx * dx;
				gg[3] -= d_power * dx * dy;
				gg[4] -= d_power * 0.5f * dy * dy;
			}
		}
}

static CPU_PHASE void cpu_blend_backward_worker(struct cpu_backend *ctx, int thread)
{
	float *g2 = ctx->thread_g2 + (size_t)thread * 9 * ctx->cap;
	float *bg = ctx->thread_bg + 3 * thread;

	memset(g2, 0, 9 * ctx->params.count * sizeof(float));
	bg[0] = bg[1] = bg[2] = 0;
	for (int t = thread; t < ctx->tiles_x * ctx->tiles_y; t += ctx->threads)
		cpu_blend_backward_tile(ctx, thread, t, g2, bg);
}

/* Sum the per-thread 2-D gradients in thread order, then chain them through the projection and
 * the SH colour to the parameters; accumulate the densification statistics. */
static CPU_PHASE void cpu_project_backward_worker(struct cpu_backend *ctx, int thread)
{
	const struct splat_camera *cam = &ctx->cams[ctx->view];
	const struct splat_params *p = &ctx->params;
	struct splat_params *gr = &ctx->grads;
	size_t begin, end;

	cpu_range(p->count, thread, ctx->threads, &begin, &end);
	for (size_t i = begin; i < end; i++) {
		float d[9] = { 0 };
		memset(gr->means + 3 * i, 0, 3 * sizeof(float));
		memset(gr->log_scales + 3 * i, 0, 3 * sizeof(float));
		memset(gr->quats + 4 * i, 0, 4 * sizeof(float));
		memset(gr->sh + 48 * i, 0, 48 * sizeof(float));
		gr->opacity_logits[i] = 0;
		if (!ctx->tiles_touched[i])
			continue;
		for (int t = 0; t < ctx->threads; t++) {
			const float *src = ctx->thread_g2 + (size_t)t * 9 * ctx->cap + 9 * i;
			for (int k = 0; k < 9; k++)
				d[k] += src[k];
		}
		project_backward_f(p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, cam, d[0], d[1], d + 2,
				   gr->means + 3 * i, gr->log_scales + 3 * i, gr->quats + 4 * i);
		sh_color_backward_f(p->means + 3 * i, p->sh + 48 * i, ctx->sh_degree, cam, d + 6, ctx->clamped + 3 * i,
				    gr->sh + 48 * i, gr->means + 3 * i);
		gr->opacity_logits[i] = d[5] * ctx->opacity[i] * (1 - ctx->opacity[i]);
		float nx = d[0] * 0.5f * ctx->width, ny = d[1] * 0.5f * ctx->height;
		ctx->ds_grad[i] += sqrtf(nx * nx + ny * ny);
		ctx->ds_count[i]++;
		if (ctx->proj[i].radius > ctx->ds_radius[i])
			ctx->ds_radius[i] = ctx->proj[i].radius;
	}
}

static int cpu_backward(void *opaque, const float *dl_dimage)
{
	struct cpu_backend *ctx = opaque;

	if (!ctx->rendered)
		return splat_error(EINVAL, "cpu backend: backward before any render");
	if (dl_dimage)
		memcpy(ctx->dl_dimage, dl_dimage, 3 * ctx->hw * sizeof(float));
	cpu_run(ctx, cpu_blend_backward_worker);
	cpu_run(ctx, cpu_project_backward_worker);
	for (int ch = 0; ch < 3; ch++) {
		float s = 0;
		for (int t = 0; t < ctx->threads; t++)
			s += ctx->thread_bg[3 * t + ch];
		ctx->grads.background[ch] = s;
	}
	ctx->grads.count = ctx->params.count;
	return 0;
}

/* ---- Adam ---- */

static inline void cpu_adam_update(float *p, float *m, float *v, const float *g, size_t n, float lr,
				   float bc1, float bc2)
{
	const float b1 = (float)SPLAT_ADAM_BETA1, b2 = (float)SPLAT_ADAM_BETA2, eps = (float)SPLAT_ADAM_EPS;

	for (size_t k = 0; k < n; k++) {
		m[k] = b1 * m[k] + (1 - b1) * g[k];
		v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
		p[k] -= lr * (m[k] / bc1) / (sqrtf(v[k] / bc2) + eps);
	}
}

static CPU_PHASE void cpu_adam_worker(struct cpu_backend *ctx, int thread)
{
	const struct splat_adam_config *a = &ctx->adam;
	struct splat_params *p = &ctx->params, *m = &ctx->adam_m, *v = &ctx->adam_v, *g = &ctx->grads;
	float bc1 = (float)(1 - pow(SPLAT_ADAM_BETA1, a->step));
	float bc2 = (float)(1 - pow(SPLAT_ADAM_BETA2, a->step));
	size_t begin, end;

	cpu_range(p->count, thread, ctx->threads, &begin, &end);
	size_t n = end - begin;
	cpu_adam_update(p->means + 3 * begin, m->means + 3 * begin, v->means + 3 * begin, g->means + 3 * begin,
			3 * n, a->lr_means, bc1, bc2);
	cpu_adam_update(p->log_scales + 3 * begin, m->log_scales + 3 * begin, v->log_scales + 3 * begin,
			g->log_scales + 3 * begin, 3 * n, a->lr_log_scales, bc1, bc2);
	cpu_adam_update(p->quats + 4 * begin, m->quats + 4 * begin, v->quats + 4 * begin, g->quats + 4 * begin,
			4 * n, a->lr_quats, bc1, bc2);
	cpu_adam_update(p->opacity_logits + begin, m->opacity_logits + begin, v->opacity_logits + begin,
			g->opacity_logits + begin, n, a->lr_opacity, bc1, bc2);
	for (size_t i = begin; i < end; i++) {
		cpu_adam_update(p->sh + 48 * i, m->sh + 48 * i, v->sh + 48 * i, g->sh + 48 * i, 3, a->lr_sh_dc, bc1, bc2);
		cpu_adam_update(p->sh + 48 * i + 3, m->sh + 48 * i + 3, v->sh + 48 * i + 3, g->sh + 48 * i + 3, 45,
				a->lr_sh_rest, bc1, bc2);
	}
	if (thread == 0)
		cpu_adam_update(p->background, m->background, v->background, g->background, 3, a->lr_background,
				bc1, bc2);
}

static int cpu_adam_step(void *opaque, const struct splat_adam_config *cfg)
{
	struct cpu_backend *ctx = opaque;

	if (cfg->step < 1)
		return splat_error(EINVAL, "cpu backend: Adam step %d; steps count from 1", cfg->step);
	ctx->adam = *cfg;
	cpu_run(ctx, cpu_adam_worker);
	return 0;
}

/* ---- state transfer ---- */

static int cpu_set_views(void *opaque, const struct splat_camera *cams, size_t n_views, const float *gt)
{
	struct cpu_backend *ctx = opaque;

	for (size_t v = 0; v < n_views; v++)
		if (cams[v].width != ctx->width || cams[v].height != ctx->height)
			return splat_error(EINVAL, "cpu backend: view %zu is %dx%d, the backend was created for %dx%d",
					   v, cams[v].width, cams[v].height, ctx->width, ctx->height);
	free(ctx->cams);
	free(ctx->gt);
	ctx->cams = splat_malloc(n_views * sizeof(*cams));
	memcpy(ctx->cams, cams, n_views * sizeof(*cams));
	ctx->n_views = n_views;
	ctx->gt = NULL;
	if (gt) {
		ctx->gt = splat_malloc(n_views * 3 * ctx->hw * sizeof(float));
		memcpy(ctx->gt, gt, n_views * 3 * ctx->hw * sizeof(float));
	}
	ctx->rendered = 0;
	return 0;
}

static int cpu_set_background(void *opaque, const float bg[3])
{
	struct cpu_backend *ctx = opaque;

	memcpy(ctx->params.background, bg, 3 * sizeof(float));
	return 0;
}

/* The CPU's "device" memory is host memory: the upload is one copy, done on return. */
static int cpu_upload_target(void *opaque, const float *image, int pinned)
{
	struct cpu_backend *ctx = opaque;

	(void)pinned;
	if (!ctx->target)
		ctx->target = splat_malloc(3 * ctx->hw * sizeof(float));
	memcpy(ctx->target, image, 3 * ctx->hw * sizeof(float));
	return 0;
}

static int cpu_upload_wait(void *opaque)
{
	(void)opaque;
	return 0;
}

static int cpu_host_alloc(void *opaque, size_t bytes, void **out)
{
	(void)opaque;
	*out = aligned_alloc(64, (bytes + 63) / 64 * 64);
	if (!*out)
		return splat_error(ENOMEM, "cpu backend: aligned_alloc of %zu bytes for a data buffer failed", bytes);
	return 0;
}

static void cpu_host_free(void *opaque, void *p)
{
	(void)opaque;
	free(p);
}

static int cpu_reset_densify_stats(void *opaque)
{
	struct cpu_backend *ctx = opaque;

	memset(ctx->ds_grad, 0, ctx->cap * sizeof(float));
	memset(ctx->ds_radius, 0, ctx->cap * sizeof(float));
	memset(ctx->ds_count, 0, ctx->cap * sizeof(int32_t));
	return 0;
}

static void cpu_remap_moments(struct splat_params *mom, const int32_t *src, size_t count)
{
	struct splat_params old;

	splat_params_alloc(&old, mom->count > 0 ? mom->count : 1);
	splat_params_copy(&old, mom);
	for (size_t i = 0; i < count; i++) {
		if (src && src[i] >= 0 && (size_t)src[i] < old.count) {
			splat_params_copy_one(mom, i, &old, (size_t)src[i]);
		} else {
			memset(mom->means + 3 * i, 0, 3 * sizeof(float));
			memset(mom->log_scales + 3 * i, 0, 3 * sizeof(float));
			memset(mom->quats + 4 * i, 0, 4 * sizeof(float));
			mom->opacity_logits[i] = 0;
			memset(mom->sh + 48 * i, 0, 48 * sizeof(float));
		}
	}
	if (!src)
		memset(mom->background, 0, sizeof(mom->background));
	mom->count = count;
	splat_params_free(&old);
}

static int cpu_set_params(void *opaque, const struct splat_params *p, const int32_t *moment_source)
{
	struct cpu_backend *ctx = opaque;

	if (p->count > ctx->cap)
		return splat_error(ENOSPC, "cpu backend: %zu Gaussians, but the backend was created for %zu; "
				   "raise --max-gaussians", p->count, ctx->cap);
	splat_params_copy(&ctx->params, p);
	cpu_remap_moments(&ctx->adam_m, moment_source, p->count);
	cpu_remap_moments(&ctx->adam_v, moment_source, p->count);
	ctx->grads.count = 0;
	ctx->rendered = 0;
	return cpu_reset_densify_stats(ctx);
}

/* Copy src into the caller's out, which must have room; call names the backend call. */
static int cpu_copy_out(const char *call, const struct splat_params *src, struct splat_params *out)
{
	if (out->capacity < src->count)
		return splat_error(ENOSPC, "cpu backend: %s into room for %zu of %zu Gaussians", call,
				   out->capacity, src->count);
	splat_params_copy(out, src);
	return 0;
}

static int cpu_get_params(void *opaque, struct splat_params *out)
{
	struct cpu_backend *ctx = opaque;
	return cpu_copy_out("get_params", &ctx->params, out);
}

static int cpu_get_grads(void *opaque, struct splat_params *out)
{
	struct cpu_backend *ctx = opaque;
	return cpu_copy_out("get_grads", &ctx->grads, out);
}

static int cpu_get_densify_stats(void *opaque, struct splat_densify_stats *out)
{
	struct cpu_backend *ctx = opaque;
	size_t n = ctx->params.count;

	memcpy(out->grad_accum, ctx->ds_grad, n * sizeof(float));
	memcpy(out->count, ctx->ds_count, n * sizeof(int32_t));
	memcpy(out->max_radius, ctx->ds_radius, n * sizeof(float));
	return 0;
}

/* ---- life cycle ---- */

static void cpu_destroy(void *opaque)
{
	struct cpu_backend *ctx = opaque;

	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->pool.mu);
	ctx->pool.stop = 1;
	pthread_cond_broadcast(&ctx->pool.start);
	pthread_mutex_unlock(&ctx->pool.mu);
	for (int t = 1; t <= ctx->pool.started; t++)
		pthread_join(ctx->pool.tids[t], NULL);
	pthread_mutex_destroy(&ctx->pool.mu);
	pthread_cond_destroy(&ctx->pool.start);
	pthread_cond_destroy(&ctx->pool.done);
	free(ctx->pool.tids);
	free(ctx->workers);
	free(ctx->cams);
	free(ctx->gt);
	free(ctx->target);
	splat_params_free(&ctx->params);
	splat_params_free(&ctx->grads);
	splat_params_free(&ctx->adam_m);
	splat_params_free(&ctx->adam_v);
	free(ctx->proj);
	free(ctx->rgb);
	free(ctx->clamped);
	free(ctx->opacity);
	free(ctx->tiles_touched);
	free(ctx->tile_offset);
	free(ctx->keys);
	free(ctx->keys_tmp);
	free(ctx->vals);
	free(ctx->vals_tmp);
	free(ctx->tile_range);
	free(ctx->image);
	free(ctx->t_final);
	free(ctx->n_contrib);
	free(ctx->dl_dimage);
	for (int k = 0; k < 5; k++) {
		free(ctx->ssim_moment[k]);
		free(ctx->ssim_tmp[k]);
		if (k < 3)
			free(ctx->ssim_grad_tmp[k]);
	}
	free(ctx->thread_l1);
	free(ctx->thread_ssim);
	free(ctx->thread_g2);
	free(ctx->thread_bg);
	for (int t = 0; ctx->splats && t < ctx->threads; t++)
		free(ctx->splats[t]);
	free(ctx->splats);
	free(ctx->splat_cap);
	free(ctx->ds_grad);
	free(ctx->ds_radius);
	free(ctx->ds_count);
	free(ctx);
}

static int cpu_create(const struct splat_backend_config *cfg, void **ctxp)
{
	struct cpu_backend *ctx;
	size_t cap = cfg->max_gaussians, tiles;

	*ctxp = NULL;
	if (cfg->width < 1 || cfg->height < 1 || cfg->threads < 1 || cap < 1)
		return splat_error(EINVAL, "cpu backend: bad configuration %dx%d, %d threads, %zu Gaussians",
				   cfg->width, cfg->height, cfg->threads, cap);
	ctx = splat_calloc(1, sizeof(*ctx));
	ctx->cfg = *cfg;
	ctx->threads = cfg->threads;
	ctx->width = cfg->width;
	ctx->height = cfg->height;
	ctx->hw = (size_t)cfg->width * cfg->height;
	ctx->tiles_x = (cfg->width + SPLAT_TILE - 1) / SPLAT_TILE;
	ctx->tiles_y = (cfg->height + SPLAT_TILE - 1) / SPLAT_TILE;
	tiles = (size_t)ctx->tiles_x * ctx->tiles_y;
	ctx->cap = cap;
	splat_params_alloc(&ctx->params, cap);
	splat_params_alloc(&ctx->grads, cap);
	splat_params_alloc(&ctx->adam_m, cap);
	splat_params_alloc(&ctx->adam_v, cap);
	ctx->proj = splat_calloc(cap, sizeof(*ctx->proj));
	ctx->rgb = splat_calloc(3 * cap, sizeof(float));
	ctx->clamped = splat_calloc(3 * cap, 1);
	ctx->opacity = splat_calloc(cap, sizeof(float));
	ctx->tiles_touched = splat_calloc(cap, sizeof(uint32_t));
	ctx->tile_offset = splat_calloc(cap, sizeof(uint64_t));
	ctx->tile_range = splat_calloc(2 * tiles, sizeof(uint32_t));
	ctx->image = splat_calloc(3 * ctx->hw, sizeof(float));
	ctx->t_final = splat_calloc(ctx->hw, sizeof(float));
	ctx->n_contrib = splat_calloc(ctx->hw, sizeof(uint32_t));
	ctx->dl_dimage = splat_calloc(3 * ctx->hw, sizeof(float));
	for (int k = 0; k < 5; k++) {
		ctx->ssim_moment[k] = splat_calloc(3 * ctx->hw, sizeof(float));
		ctx->ssim_tmp[k] = splat_calloc(3 * ctx->hw, sizeof(float));
		if (k < 3)
			ctx->ssim_grad_tmp[k] = splat_calloc(3 * ctx->hw, sizeof(float));
	}
	ssim_window_f(ctx->ssim_window);
	ctx->thread_l1 = splat_calloc(ctx->threads, sizeof(double));
	ctx->thread_ssim = splat_calloc(ctx->threads, sizeof(double));
	ctx->thread_g2 = splat_calloc((size_t)ctx->threads * 9 * cap, sizeof(float));
	ctx->thread_bg = splat_calloc(3 * (size_t)ctx->threads, sizeof(float));
	ctx->splats = splat_calloc(ctx->threads, sizeof(*ctx->splats));
	ctx->splat_cap = splat_calloc(ctx->threads, sizeof(size_t));
	ctx->ds_grad = splat_calloc(cap, sizeof(float));
	ctx->ds_radius = splat_calloc(cap, sizeof(float));
	ctx->ds_count = splat_calloc(cap, sizeof(int32_t));

	pthread_mutex_init(&ctx->pool.mu, NULL);
	pthread_cond_init(&ctx->pool.start, NULL);
	pthread_cond_init(&ctx->pool.done, NULL);
	ctx->pool.tids = splat_calloc(ctx->threads, sizeof(pthread_t));
	ctx->workers = splat_calloc(ctx->threads, sizeof(*ctx->workers));
	for (int t = 1; t < ctx->threads; t++) {
		ctx->workers[t] = (struct cpu_worker){ .ctx = ctx, .index = t };
		int rc = pthread_create(&ctx->pool.tids[t], NULL, cpu_worker_main, &ctx->workers[t]);
		if (rc) {
			cpu_destroy(ctx);
			return splat_error(rc, "cpu backend: pthread_create for worker %d: %s; try fewer --threads",
					   t, strerror(rc));
		}
		ctx->pool.started = t;
	}
	*ctxp = ctx;
	return 0;
}

const struct splat_backend_ops splat_cpu_backend = {
	.name = "cpu",
	.create = cpu_create,
	.destroy = cpu_destroy,
	.set_views = cpu_set_views,
	.set_params = cpu_set_params,
	.get_params = cpu_get_params,
	.render = cpu_render,
	.get_image = cpu_get_image,
	.loss_grad = cpu_loss_grad,
	.backward = cpu_backward,
	.get_grads = cpu_get_grads,
	.adam_step = cpu_adam_step,
	.get_densify_stats = cpu_get_densify_stats,
	.reset_densify_stats = cpu_reset_densify_stats,
	.set_background = cpu_set_background,
	.upload_target = cpu_upload_target,
	.upload_wait = cpu_upload_wait,
	.host_alloc = cpu_host_alloc,
	.host_free = cpu_host_free,
};
