/* gpu_math_test.c: bin/tests/splat-gpu-math-test, a host-side test of the CUDA backend's math
 * (kernels/gpu_math.cuh, compiled here as plain C) that needs no GPU:
 *   - bit for bit against the CPU backend's float instance of target/splat_math.h: projection
 *     (every field, culling, tile rectangle), backward projection, SH colour and its backward
 *     pass for every degree, the SSIM window and pixel (gcc on x86-64 contracts no FMAs, so
 *     the two must agree exactly when gpu_math.cuh mirrors the float instance);
 *   - the sort key orders as (tile, depth), and the tile bit count;
 *   - the Adam update against the formula in double;
 *   - a host emulation of the tile renderer built from the kernels' per-pixel functions
 *     (gpu_alpha, gpu_blend_backward_step: the early stop, the last contributor, T restored
 *     back to front, the background term, the α clamp) against the double reference on a
 *     tiny scene whose size is not a multiple of the tile: image max error <= 1e-4 and
 *     per-group gradient relative error <= 1e-3, as the backends are checked.
 * What it cannot check: the kernels themselves (indexing, shared memory, atomics, CUB); those
 * need a GPU (bin/tests/splat-check backend --backend cuda, bin/tests/splat-gpu-check). */
#include "splat.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SM_REAL float
#define SM(name) name##_f
#include "splat_math.h"
#undef SM
#undef SM_REAL

#include "gpu_math.cuh"

#include "gpu_test_util.h"

/* A Gaussian anywhere from behind the camera to far off-screen, of any shape. */
static void gmt_random_gaussian(uint64_t i, float mean[3], float log_scale[3], float quat[4], float sh[48])
{
	for (int k = 0; k < 3; k++) {
		mean[k] = (float)(6 * (gmt_uniform(1, 3 * i + k) - 0.5));
		log_scale[k] = (float)(-6 + 5.5 * gmt_uniform(2, 3 * i + k));
	}
	for (int k = 0; k < 4; k++)
		quat[k] = (float)(2 * gmt_uniform(3, 4 * i + k) - 1);
	for (int k = 0; k < 48; k++)
		sh[k] = (float)((k < 3 ? 2.0 : 0.4) * (gmt_uniform(4, 48 * i + k) - 0.5));
}

static void gmt_projection(void)
{
	const size_t n = 20000;
	struct splat_camera cams[3];
	size_t visible = 0, proj_bad = 0, back_bad = 0, sh_bad = 0, clamped_rgb = 0;

	gmt_camera(&cams[0], 128, 128, 0.3, 0.4, 4, 45);
	gmt_camera(&cams[1], 200, 72, 2.0, 0.6, 3, 60);   /* sizes not multiples of the tile */
	gmt_camera(&cams[2], 37, 129, -1.0, 0.2, 2, 30);
	for (size_t i = 0; i < n; i++) {
		const struct splat_camera *cam = &cams[i % 3];
		float mean[3], ls[3], q[4], sh[48];
		struct proj_f a;
		struct gpu_proj b;
		gmt_random_gaussian(i, mean, ls, q, sh);
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		int va = project_f(mean, ls, q, cam, &a), vb = gpu_project(mean, ls, q, cam, &b);
		if (va != vb || a.radius != b.radius ||
		    (va && (!gmt_same(&a.u, &b.u, 1) || !gmt_same(&a.v, &b.v, 1) || !gmt_same(&a.depth, &b.depth, 1) ||
			    !gmt_same(a.conic, b.conic, 3) || memcmp(a.rect, b.rect, sizeof(a.rect)) != 0))) {
			if (proj_bad++ < 3)
				printf("  Gaussian %zu: cpu visible %d radius %g rect %d %d %d %d, gpu visible %d radius %g "
				       "rect %d %d %d %d\n", i, va, a.radius, a.rect[0], a.rect[1], a.rect[2], a.rect[3], vb,
				       b.radius, b.rect[0], b.rect[1], b.rect[2], b.rect[3]);
			continue;
		}
		if (!va)
			continue;
		visible++;
		float du = (float)(gmt_uniform(5, i) - 0.5), dv = (float)(gmt_uniform(6, i) - 0.5);
		float dconic[3] = { (float)(gmt_uniform(7, i) - 0.5), (float)(gmt_uniform(8, i) - 0.5),
				    (float)(gmt_uniform(9, i) - 0.5) };
		float am[3] = { 0 }, al[3] = { 0 }, aq[4] = { 0 }, bm[3] = { 0 }, bl[3] = { 0 }, bq[4] = { 0 };
		project_backward_f(mean, ls, q, cam, du, dv, dconic, am, al, aq);
		gpu_project_backward(mean, ls, q, cam, du, dv, dconic, bm, bl, bq);
		back_bad += !gmt_same(am, bm, 3) || !gmt_same(al, bl, 3) || !gmt_same(aq, bq, 4);
		for (int deg = 0; deg <= SPLAT_MAX_SH_DEGREE; deg++) {
			float ra[3], rb[3], drgb[3] = { 0.3f, -0.2f, 0.7f }, sa[48], sb[48];
			unsigned char ca[3], cb[3];
			float ma[3] = { 0 }, mb[3] = { 0 };
			sh_color_f(mean, sh, deg, cam, ra, ca);
			gpu_sh_color(mean, sh, deg, cam, rb, cb);
			sh_color_backward_f(mean, sh, deg, cam, drgb, ca, sa, ma);
			gpu_sh_color_backward(mean, sh, deg, cam, drgb, cb, sb, mb);
			sh_bad += !gmt_same(ra, rb, 3) || memcmp(ca, cb, 3) != 0 || !gmt_same(sa, sb, 48) || !gmt_same(ma, mb, 3);
			clamped_rgb += ca[0] + ca[1] + ca[2];
		}
	}
	gmt_result(proj_bad == 0 && visible > n / 10 && visible < n, "splat/gpu-math-project",
		   "%zu of %zu projections differ from project_f (%zu visible)", proj_bad, n, visible);
	gmt_result(back_bad == 0, "splat/gpu-math-project-backward", "%zu of %zu differ from project_backward_f",
		   back_bad, visible);
	gmt_result(sh_bad == 0 && clamped_rgb > 0, "splat/gpu-math-sh", "%zu of %zu (Gaussian, degree) pairs differ "
		   "from sh_color_f / sh_color_backward_f (%zu clamped channels exercised)", sh_bad, 4 * visible,
		   clamped_rgb);
}

static void gmt_ssim(void)
{
	float wa[SPLAT_SSIM_WINDOW], wb[SPLAT_SSIM_WINDOW];
	size_t bad = 0;

	ssim_window_f(wa);
	gpu_ssim_window(wb);
	for (size_t i = 0; i < 10000; i++) {
		float mx = (float)gmt_uniform(10, i), my = (float)gmt_uniform(11, i);
		float mxx = mx * mx + (float)(0.05 * gmt_uniform(12, i)), myy = my * my + (float)(0.05 * gmt_uniform(13, i));
		float mxy = mx * my + (float)(0.04 * (gmt_uniform(14, i) - 0.5));
		float a[4], b[4];
		a[0] = ssim_pixel_f(mx, my, mxx, myy, mxy, &a[1], &a[2], &a[3]);
		b[0] = gpu_ssim_pixel(mx, my, mxx, myy, mxy, &b[1], &b[2], &b[3]);
		bad += !gmt_same(a, b, 4);
	}
	gmt_result(gmt_same(wa, wb, SPLAT_SSIM_WINDOW) && bad == 0, "splat/gpu-math-ssim",
		   "window %s, %zu of 10000 SSIM pixels differ from ssim_pixel_f", gmt_same(wa, wb, SPLAT_SSIM_WINDOW) ?
		   "identical" : "DIFFERS", bad);
}

static void gmt_sort_key_and_adam(void)
{
	size_t bad = 0;

	for (size_t i = 0; i < 100000; i++) {
		float d1 = (float)(SPLAT_NEAR_Z + 100 * gmt_uniform(15, i)), d2 = (float)(SPLAT_NEAR_Z + 100 * gmt_uniform(16, i));
		uint32_t t1 = (uint32_t)(gmt_uniform(17, i) * 4096), t2 = (uint32_t)(gmt_uniform(18, i) * 4096);
		if (i % 7 == 0)
			t2 = t1;
		if (i % 11 == 0)
			d2 = d1;
		uint64_t k1 = gpu_sort_key(t1, d1), k2 = gpu_sort_key(t2, d2);
		int want = t1 != t2 ? (t1 < t2 ? -1 : 1) : d1 != d2 ? (d1 < d2 ? -1 : 1) : 0;
		int got = k1 != k2 ? (k1 < k2 ? -1 : 1) : 0;
		bad += want != got;
	}
	int bits_ok = gpu_tile_bits(1) == 0 && gpu_tile_bits(2) == 1 && gpu_tile_bits(3) == 2 && gpu_tile_bits(64) == 6 &&
		      gpu_tile_bits(65) == 7 && gpu_tile_bits(256) == 8;
	gmt_result(bad == 0 && bits_ok, "splat/gpu-math-sort-key",
		   "%zu of 100000 key pairs misordered against (tile, depth); tile bits %s", bad, bits_ok ? "ok" : "WRONG");

	/* Adam over a few steps, against the formula in double from the same float inputs. */
	double worst = 0;
	for (size_t i = 0; i < 1000; i++) {
		float p = (float)(gmt_uniform(19, i) - 0.5), m = 0, v = 0, lr = 0.01f;
		double pd = p, md = 0, vd = 0;
		for (int step = 1; step <= 5; step++) {
			float g = (float)(gmt_uniform(20 + step, i) - 0.5), bc1, bc2;
			gpu_adam_bias(step, &bc1, &bc2);
			gpu_adam_update(&p, &m, &v, g, lr, bc1, bc2);
			md = SPLAT_ADAM_BETA1 * md + (1 - SPLAT_ADAM_BETA1) * g;
			vd = SPLAT_ADAM_BETA2 * vd + (1 - SPLAT_ADAM_BETA2) * (double)g * g;
			pd -= lr * (md / (1 - pow(SPLAT_ADAM_BETA1, step))) /
			      (sqrt(vd / (1 - pow(SPLAT_ADAM_BETA2, step))) + SPLAT_ADAM_EPS);
		}
		double e = fabs(p - pd) / lr;
		if (e > worst)
			worst = e;
	}
	gmt_result(worst < 1e-4, "splat/gpu-math-adam", "largest difference %.2e learning rates after 5 steps", worst);
}

/* ---- host emulation of the tile renderer from the kernels' per-pixel functions ---- */

struct gmt_frame {
	int w, h, tiles_x, tiles_y;
	size_t n;
	struct gpu_proj *proj;
	float *rgb, *opacity;
	unsigned char *clamped;
	uint64_t *keys;           /* sorted (tile, depth) keys of the pairs */
	uint32_t *vals;           /* their Gaussians */
	uint32_t *range;          /* [2·tiles] */
	float *t_final;
	uint32_t *n_contrib;
};

static const uint64_t *gmt_sort_keys;

static int gmt_pair_order(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (gmt_sort_keys[i] != gmt_sort_keys[j])
		return gmt_sort_keys[i] < gmt_sort_keys[j] ? -1 : 1;
	return i < j ? -1 : i > j;   /* stable: pairs were emitted in Gaussian order */
}

static void gmt_render(struct gmt_frame *f, const struct splat_params *p, const struct splat_camera *cam, int deg,
		       float *image)
{
	size_t pairs = 0, tiles;

	memset(f, 0, sizeof(*f));
	f->w = cam->width;
	f->h = cam->height;
	f->tiles_x = (f->w + SPLAT_TILE - 1) / SPLAT_TILE;
	f->tiles_y = (f->h + SPLAT_TILE - 1) / SPLAT_TILE;
	tiles = (size_t)f->tiles_x * f->tiles_y;
	f->n = p->count;
	f->proj = splat_calloc(f->n, sizeof(*f->proj));
	f->rgb = splat_calloc(3 * f->n, sizeof(float));
	f->clamped = splat_calloc(3 * f->n, 1);
	f->opacity = splat_calloc(f->n, sizeof(float));
	for (size_t i = 0; i < f->n; i++) {
		if (!gpu_project(p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, cam, &f->proj[i]))
			continue;
		gpu_sh_color(p->means + 3 * i, p->sh + 48 * i, deg, cam, f->rgb + 3 * i, f->clamped + 3 * i);
		f->opacity[i] = gpu_sigmoid(p->opacity_logits[i]);
		const int *r = f->proj[i].rect;
		pairs += (size_t)(r[2] - r[0]) * (r[3] - r[1]);
	}
	uint64_t *keys = splat_calloc(pairs, sizeof(uint64_t));
	uint32_t *vals = splat_calloc(pairs, sizeof(uint32_t)), *order = splat_calloc(pairs, sizeof(uint32_t));
	size_t k = 0;
	for (size_t i = 0; i < f->n; i++) {
		const int *r = f->proj[i].rect;
		if (f->proj[i].radius <= 0)
			continue;
		for (int ty = r[1]; ty < r[3]; ty++)
			for (int tx = r[0]; tx < r[2]; tx++, k++) {
				keys[k] = gpu_sort_key((uint32_t)(ty * f->tiles_x + tx), f->proj[i].depth);
				vals[k] = (uint32_t)i;
				order[k] = (uint32_t)k;
			}
	}
	gmt_sort_keys = keys;
	qsort(order, pairs, sizeof(uint32_t), gmt_pair_order);
	f->keys = splat_calloc(pairs, sizeof(uint64_t));
	f->vals = splat_calloc(pairs, sizeof(uint32_t));
	f->range = splat_calloc(2 * tiles, sizeof(uint32_t));
	for (size_t q = 0; q < pairs; q++) {
		f->keys[q] = keys[order[q]];
		f->vals[q] = vals[order[q]];
	}
	for (size_t q = 0; q < pairs; q++) {   /* gpu_tile_ranges_kernel, one q per thread */
		uint32_t tile = (uint32_t)(f->keys[q] >> 32);
		if (q == 0 || tile != (uint32_t)(f->keys[q - 1] >> 32))
			f->range[2 * tile] = (uint32_t)q;
		if (q + 1 == pairs || tile != (uint32_t)(f->keys[q + 1] >> 32))
			f->range[2 * tile + 1] = (uint32_t)(q + 1);
	}
	free(keys);
	free(vals);
	free(order);
	f->t_final = splat_calloc((size_t)f->w * f->h, sizeof(float));
	f->n_contrib = splat_calloc((size_t)f->w * f->h, sizeof(uint32_t));

	/* gpu_blend_forward_kernel, one pixel at a time */
	size_t hw = (size_t)f->w * f->h;
	for (int y = 0; y < f->h; y++)
		for (int x = 0; x < f->w; x++) {
			int tile = (y / SPLAT_TILE) * f->tiles_x + x / SPLAT_TILE;
			uint32_t begin = f->range[2 * tile], end = f->range[2 * tile + 1], last = 0;
			float px = x + 0.5f, py = y + 0.5f, T = 1, c[3] = { 0, 0, 0 };
			for (uint32_t j = 0; j < end - begin; j++) {
				uint32_t g = f->vals[begin + j];
				const struct gpu_proj *pr = &f->proj[g];
				float power, dx, dy;
				float alpha = gpu_alpha(pr->u, pr->v, pr->conic[0], pr->conic[1], pr->conic[2], f->opacity[g], px,
							py, &power, &dx, &dy);
				if (alpha == 0)
					continue;
				float next_t = T * (1 - alpha);
				if (next_t < (float)SPLAT_T_MIN)
					break;
				for (int ch = 0; ch < 3; ch++)
					c[ch] += alpha * T * f->rgb[3 * g + ch];
				T = next_t;
				last = j + 1;
			}
			size_t pix = (size_t)y * f->w + x;
			f->t_final[pix] = T;
			f->n_contrib[pix] = last;
			for (int ch = 0; ch < 3; ch++)
				image[ch * hw + pix] = c[ch] + T * p->background[ch];
		}
}

/* gpu_blend_backward_kernel (per pixel, back to front), gpu_project_backward_kernel. */
static void gmt_backward(struct gmt_frame *f, const struct splat_params *p, const struct splat_camera *cam, int deg,
			 const float *dl, struct splat_params *grads)
{
	size_t hw = (size_t)f->w * f->h;
	float *g2 = splat_calloc(GPU_G2_N * f->n, sizeof(float));

	memset(grads->background, 0, sizeof(grads->background));
	for (int y = 0; y < f->h; y++)
		for (int x = 0; x < f->w; x++) {
			int tile = (y / SPLAT_TILE) * f->tiles_x + x / SPLAT_TILE;
			size_t pix = (size_t)y * f->w + x;
			uint32_t begin = f->range[2 * tile], last = f->n_contrib[pix];
			float px = x + 0.5f, py = y + 0.5f, tf = f->t_final[pix], T = tf, accum[3] = { 0, 0, 0 }, gpix[3];
			float bg_dot = 0;
			for (int ch = 0; ch < 3; ch++) {
				gpix[ch] = dl[ch * hw + pix];
				bg_dot += p->background[ch] * gpix[ch];
				grads->background[ch] += tf * gpix[ch];
			}
			for (uint32_t k = last; k-- > 0;) {
				uint32_t g = f->vals[begin + k];
				const struct gpu_proj *pr = &f->proj[g];
				float power, dx, dy, out[GPU_G2_N];
				float alpha = gpu_alpha(pr->u, pr->v, pr->conic[0], pr->conic[1], pr->conic[2], f->opacity[g], px,
							py, &power, &dx, &dy);
				if (alpha == 0)
					continue;
				gpu_blend_backward_step(alpha, power, dx, dy, pr->conic[0], pr->conic[1], pr->conic[2], f->opacity[g],
							f->rgb + 3 * g, gpix, tf, bg_dot, &T, accum, out);
				for (int q = 0; q < GPU_G2_N; q++)
					g2[GPU_G2_N * g + q] += out[q];
			}
		}
	for (size_t i = 0; i < f->n; i++) {
		float dm[3] = { 0 }, dls[3] = { 0 }, dq[4] = { 0 }, dop = 0, *d = g2 + GPU_G2_N * i;
		memset(grads->sh + 48 * i, 0, 48 * sizeof(float));
		if (f->proj[i].radius > 0) {
			gpu_project_backward(p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, cam, d[GPU_G2_U],
					     d[GPU_G2_V], d + GPU_G2_A, dm, dls, dq);
			gpu_sh_color_backward(p->means + 3 * i, p->sh + 48 * i, deg, cam, d + GPU_G2_R, f->clamped + 3 * i,
					      grads->sh + 48 * i, dm);
			dop = d[GPU_G2_OPACITY] * f->opacity[i] * (1 - f->opacity[i]);
		}
		memcpy(grads->means + 3 * i, dm, sizeof(dm));
		memcpy(grads->log_scales + 3 * i, dls, sizeof(dls));
		memcpy(grads->quats + 4 * i, dq, sizeof(dq));
		grads->opacity_logits[i] = dop;
	}
	grads->count = f->n;
	free(g2);
}

static void gmt_frame_free(struct gmt_frame *f)
{
	free(f->proj);
	free(f->rgb);
	free(f->opacity);
	free(f->clamped);
	free(f->keys);
	free(f->vals);
	free(f->range);
	free(f->t_final);
	free(f->n_contrib);
}

static void gmt_emulated_renderer(void)
{
	const int w = 45, h = 38;   /* 3 × 3 tiles, the last row and column partial */
	size_t hw3 = 3 * (size_t)w * h;
	struct splat_params p, grads;
	struct ref_params rp, rg;
	struct splat_camera cam;
	float *img = splat_malloc(hw3 * sizeof(float)), *wts = splat_malloc(hw3 * sizeof(float));
	double *dimg = splat_malloc(hw3 * sizeof(double)), *dwts = splat_malloc(hw3 * sizeof(double));

	gmt_tiny_scene(&p, 30);
	splat_params_alloc(&grads, p.count);
	gmt_camera(&cam, w, h, 0.5, 0.3, 3, 50);
	ref_params_from_float(&rp, &p);
	ref_params_alloc(&rg, p.count);
	for (size_t i = 0; i < hw3; i++) {
		wts[i] = (float)(gmt_uniform(35, i) - 0.5);
		dwts[i] = wts[i];
	}
	for (int deg = 0; deg <= SPLAT_MAX_SH_DEGREE; deg += 3) {
		struct gmt_frame f;
		char name[96];
		gmt_render(&f, &p, &cam, deg, img);
		ref_render(&rp, &cam, deg, dimg);
		double maxerr = 0;
		for (size_t i = 0; i < hw3; i++)
			if (fabs(img[i] - dimg[i]) > maxerr)
				maxerr = fabs(img[i] - dimg[i]);
		snprintf(name, sizeof(name), "splat/gpu-math-emulated-image-sh%d", deg);
		gmt_result(maxerr <= 1e-4, name, "max error %.2e against the double reference (%dx%d, %zu Gaussians)",
			   maxerr, w, h, p.count);
		gmt_backward(&f, &p, &cam, deg, wts, &grads);
		ref_backward(&rp, &cam, deg, dwts, &rg);
		snprintf(name, sizeof(name), "splat/gpu-math-emulated-grad-sh%d", deg);
		gmt_check_groups(name, &grads, &rg, 1e-3);
		gmt_frame_free(&f);
	}
	splat_params_free(&p);
	splat_params_free(&grads);
	ref_params_free(&rp);
	ref_params_free(&rg);
	free(img);
	free(wts);
	free(dimg);
	free(dwts);
}

int main(void)
{
	gmt_projection();
	gmt_ssim();
	gmt_sort_key_and_adam();
	gmt_emulated_renderer();
	return gmt_failures ? 1 : 0;
}
