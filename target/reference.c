/* reference.c: the double-precision CPU reference of every stage: projection, per-pixel
 * front-to-back blending (each pixel visits, in depth order, the Gaussians whose tile rectangle
 * covers it — the same support test as the fast backends, without their sort or threads), the
 * blend backward, the loss and SSIM with their gradients. It renders the ground truth and is
 * the yardstick of the gradient tests; it favours plainness over speed. */
#include "splat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SM_REAL double
#define SM(name) name##_d
#include "splat_math.h"
#undef SM
#undef SM_REAL

const char *const ref_group_names[6] = { "means", "log_scales", "quats", "opacities", "sh",
					 "background" };

void ref_params_alloc(struct ref_params *p, size_t count)
{
	memset(p, 0, sizeof(*p));
	p->count = count;
	p->means = splat_calloc(3 * count, sizeof(double));
	p->log_scales = splat_calloc(3 * count, sizeof(double));
	p->quats = splat_calloc(4 * count, sizeof(double));
	p->opacity_logits = splat_calloc(count, sizeof(double));
	p->sh = splat_calloc(count * SPLAT_SH_COEFFS * 3, sizeof(double));
}

void ref_params_free(struct ref_params *p)
{
	free(p->means);
	free(p->log_scales);
	free(p->quats);
	free(p->opacity_logits);
	free(p->sh);
	memset(p, 0, sizeof(*p));
}

size_t ref_params_group_size(const struct ref_params *p, int group)
{
	static const size_t per[6] = { 3, 3, 4, 1, SPLAT_SH_COEFFS * 3, 0 };

	return group == 5 ? 3 : per[group] * p->count;
}

double *ref_params_group(struct ref_params *p, int group)
{
	double *g[6] = { p->means, p->log_scales, p->quats, p->opacity_logits, p->sh, p->background };

	return g[group];
}

void ref_params_from_float(struct ref_params *dst, const struct splat_params *src)
{
	ref_params_alloc(dst, src->count);
	for (int group = 0; group < 6; group++) {
		const float *s[6] = { src->means, src->log_scales, src->quats, src->opacity_logits,
				      src->sh, src->background };
		double *d = ref_params_group(dst, group);
		size_t n = ref_params_group_size(dst, group);
		for (size_t i = 0; i < n; i++)
			d[i] = s[group][i];
	}
}

/* Per-view state of one reference render. */
struct ref_frame {
	int w, h, tiles_x, tiles_y;
	size_t n;
	struct proj_d *proj;
	double *rgb;              /* [3N] */
	unsigned char *clamped;   /* [3N] */
	double *opacity;          /* [N] */
	size_t **tile_list;       /* per tile: Gaussians covering it, by (depth, index) */
	size_t *tile_len;
	double *t_final;          /* per pixel */
	size_t *n_contrib;        /* per pixel: list entries visited up to the last contributor */
	unsigned char *rect_near_edge; /* per Gaussian: radius or tile rectangle within rounding */
};

static __thread const struct proj_d *ref_sort_proj;

static int ref_depth_order(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	double di = ref_sort_proj[i].depth, dj = ref_sort_proj[j].depth;

	if (di != dj)
		return di < dj ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Whether x is within tol of an integer. */
static int ref_near_integer(double x, double tol)
{
	return fabs(x - floor(x + 0.5)) <= tol;
}

/* Which edges of this Gaussian's tile rectangle a float renderer may round the other way:
 * bit 0..3 = x0, y0, x1, y1 (all four when the radius itself is near its rounding point). */
static unsigned char ref_rect_near_edge(const struct proj_d *pr)
{
	double r = pr->radius, tol = 1e-5;
	unsigned char bits = 0;

	if (ref_near_integer(pr->extent, tol * pr->extent))
		return 0xf;
	bits |= ref_near_integer((pr->u - r) / SPLAT_TILE, tol) << 0;
	bits |= ref_near_integer((pr->v - r) / SPLAT_TILE, tol) << 1;
	bits |= ref_near_integer((pr->u + r + SPLAT_TILE - 1) / SPLAT_TILE, tol) << 2;
	bits |= ref_near_integer((pr->v + r + SPLAT_TILE - 1) / SPLAT_TILE, tol) << 3;
	return bits;
}

static void ref_frame_prepare(struct ref_frame *f, const struct ref_params *p,
			      const struct splat_camera *cam, int sh_degree)
{
	size_t n = p->count, *order;
	size_t n_vis = 0;

	memset(f, 0, sizeof(*f));
	f->w = cam->width;
	f->h = cam->height;
	f->tiles_x = (f->w + SPLAT_TILE - 1) / SPLAT_TILE;
	f->tiles_y = (f->h + SPLAT_TILE - 1) / SPLAT_TILE;
	f->n = n;
	f->proj = splat_calloc(n, sizeof(*f->proj));
	f->rgb = splat_calloc(3 * n, sizeof(double));
	f->clamped = splat_calloc(3 * n, 1);
	f->opacity = splat_calloc(n, sizeof(double));
	f->rect_near_edge = splat_calloc(n, 1);
	order = splat_calloc(n, sizeof(size_t));
	for (size_t i = 0; i < n; i++) {
		if (!project_d(p->means + 3 * i, p->log_scales + 3 * i, p->quats + 4 * i, cam, &f->proj[i]))
			continue;
		sh_color_d(p->means + 3 * i, p->sh + i * 48, sh_degree, cam, f->rgb + 3 * i, f->clamped + 3 * i);
		f->opacity[i] = 1.0 / (1.0 + exp(-p->opacity_logits[i]));
		f->rect_near_edge[i] = ref_rect_near_edge(&f->proj[i]);
		order[n_vis++] = i;
	}
	/* qsort is not reentrant with context in C11; the reference runs one frame per thread, so
	 * keep the sort key in a thread-local pointer. */
	ref_sort_proj = f->proj;
	qsort(order, n_vis, sizeof(size_t), ref_depth_order);
	size_t tiles = (size_t)f->tiles_x * f->tiles_y;
	f->tile_list = splat_calloc(tiles, sizeof(size_t *));
	f->tile_len = splat_calloc(tiles, sizeof(size_t));
	for (size_t k = 0; k < n_vis; k++) {
		const int *r = f->proj[order[k]].rect;
		for (int ty = r[1]; ty < r[3]; ty++)
			for (int tx = r[0]; tx < r[2]; tx++)
				f->tile_len[ty * f->tiles_x + tx]++;
	}
	for (size_t t = 0; t < tiles; t++) {
		f->tile_list[t] = splat_calloc(f->tile_len[t], sizeof(size_t));
		f->tile_len[t] = 0;
	}
	for (size_t k = 0; k < n_vis; k++) {
		const int *r = f->proj[order[k]].rect;
		for (int ty = r[1]; ty < r[3]; ty++)
			for (int tx = r[0]; tx < r[2]; tx++) {
				size_t t = ty * f->tiles_x + tx;
				f->tile_list[t][f->tile_len[t]++] = order[k];
			}
	}
	free(order);
	f->t_final = splat_calloc((size_t)f->w * f->h, sizeof(double));
	f->n_contrib = splat_calloc((size_t)f->w * f->h, sizeof(size_t));
}

static void ref_frame_free(struct ref_frame *f)
{
	size_t tiles = (size_t)f->tiles_x * f->tiles_y;

	for (size_t t = 0; t < tiles; t++)
		free(f->tile_list[t]);
	free(f->tile_list);
	free(f->tile_len);
	free(f->proj);
	free(f->rgb);
	free(f->clamped);
	free(f->opacity);
	free(f->rect_near_edge);
	free(f->t_final);
	free(f->n_contrib);
}

/* α of Gaussian g at pixel centre (px, py); 0 when skipped. */
static double ref_alpha(const struct ref_frame *f, size_t g, double px, double py, double *power_out,
			double *dx_out, double *dy_out)
{
	const struct proj_d *pr = &f->proj[g];
	double dx = pr->u - px, dy = pr->v - py;
	double power = -0.5 * (pr->conic[0] * dx * dx + pr->conic[2] * dy * dy) - pr->conic[1] * dx * dy;

	*power_out = power;
	*dx_out = dx;
	*dy_out = dy;
	/* opacity ≤ 1: below ln(1/255) ≈ -5.5413 the α test fails whatever the opacity */
	if (power > 0 || power < -5.6)
		return 0;
	double alpha = f->opacity[g] * exp(power);
	if (alpha > SPLAT_ALPHA_MAX)
		alpha = SPLAT_ALPHA_MAX;
	if (alpha < SPLAT_ALPHA_MIN)
		return 0;
	return alpha;
}

/* Blend every pixel front to back. When near_edge is not NULL, mark the pixels whose result a
 * float renderer may legitimately get differently: a discrete decision (α against 1/255,
 * T·(1-α) against 1e-4, depth order, a tile rectangle) lies within rounding of its threshold. */
static void ref_blend(struct ref_frame *f, const double bg[3], double *image, unsigned char *near_edge)
{
	size_t hw = (size_t)f->w * f->h;

	for (int y = 0; y < f->h; y++)
		for (int x = 0; x < f->w; x++) {
			size_t t = (y / SPLAT_TILE) * f->tiles_x + x / SPLAT_TILE, pix = (size_t)y * f->w + x;
			double px = x + 0.5, py = y + 0.5, T = 1, c[3] = { 0, 0, 0 }, prev_depth = -1;
			size_t last = 0;
			int edge = 0;
			for (size_t k = 0; k < f->tile_len[t]; k++) {
				double power, dx, dy;
				size_t g = f->tile_list[t][k];
				double alpha = ref_alpha(f, g, px, py, &power, &dx, &dy);
				if (near_edge && power >= -5.6 && fabs(f->opacity[g] * exp(power) / SPLAT_ALPHA_MIN - 1) < 1e-4)
					edge = 1;
				if (alpha == 0)
					continue;
				double next_t = T * (1 - alpha);
				if (near_edge && (fabs(next_t / SPLAT_T_MIN - 1) < 1e-3 ||
						  fabs(f->proj[g].depth - prev_depth) < 3e-7 * f->proj[g].depth))
					edge = 1;
				if (next_t < SPLAT_T_MIN)
					break;
				for (int ch = 0; ch < 3; ch++)
					c[ch] += alpha * T * f->rgb[3 * g + ch];
				T = next_t;
				last = k + 1;
				prev_depth = f->proj[g].depth;
			}
			f->t_final[pix] = T;
			f->n_contrib[pix] = last;
			for (int ch = 0; ch < 3; ch++)
				image[ch * hw + pix] = c[ch] + T * bg[ch];
			if (near_edge)
				near_edge[pix] = edge;
		}
	if (!near_edge)
		return;
	/* A rectangle edge that may round one tile the other way: the tile strips on both sides
	 * of that edge, where the Gaussian is visible. */
	for (size_t g = 0; g < f->n; g++) {
		if (f->proj[g].radius <= 0 || !f->rect_near_edge[g])
			continue;
		const int *r = f->proj[g].rect;
		for (int e = 0; e < 4; e++) {
			if (!(f->rect_near_edge[g] >> e & 1))
				continue;
			int along_x = e % 2 == 0, edge = r[e];
			int a0 = (edge - 1) * SPLAT_TILE, a1 = (edge + 1) * SPLAT_TILE;
			int x0 = along_x ? a0 : 0, x1 = along_x ? a1 : f->w;
			int y0 = along_x ? 0 : a0, y1 = along_x ? f->h : a1;
			for (int y = y0 < 0 ? 0 : y0; y < y1 && y < f->h; y++)
				for (int x = x0 < 0 ? 0 : x0; x < x1 && x < f->w; x++) {
					double power, dx, dy;
					if (ref_alpha(f, g, x + 0.5, y + 0.5, &power, &dx, &dy) > 0)
						near_edge[(size_t)y * f->w + x] = 1;
				}
		}
	}
}

void ref_render(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
		double *image)
{
	struct ref_frame f;

	ref_frame_prepare(&f, p, cam, sh_degree);
	ref_blend(&f, p->background, image, NULL);
	ref_frame_free(&f);
}

void ref_render_transmittance(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
			       double *image, double *t_final)
{
	struct ref_frame f;

	ref_frame_prepare(&f, p, cam, sh_degree);
	ref_blend(&f, p->background, image, NULL);
	memcpy(t_final, f.t_final, (size_t)f.w * f.h * sizeof(double));
	ref_frame_free(&f);
}

void ref_render_flagged(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
			double *image, unsigned char *near_edge)
{
	struct ref_frame f;

	ref_frame_prepare(&f, p, cam, sh_degree);
	ref_blend(&f, p->background, image, near_edge);
	ref_frame_free(&f);
}

void ref_backward(const struct ref_params *p, const struct splat_camera *cam, int sh_degree,
		  const double *dl, struct ref_params *grads)
{
	struct ref_frame f;
	size_t n = p->count, hw = (size_t)cam->width * cam->height;
	double *image = splat_calloc(3 * hw, sizeof(double));
	/* Per-Gaussian gradients of the 2-D quantities: u, v, conic[3], opacity, rgb[3]. */
	double *g2 = splat_calloc(9 * n, sizeof(double));

	ref_frame_prepare(&f, p, cam, sh_degree);
	ref_blend(&f, p->background, image, NULL);
	for (int g = 0; g < 6; g++)
		memset(ref_params_group(grads, g), 0, ref_params_group_size(grads, g) * sizeof(double));

	for (int y = 0; y < f.h; y++)
		for (int x = 0; x < f.w; x++) {
			size_t t = (y / SPLAT_TILE) * f.tiles_x + x / SPLAT_TILE, pix = (size_t)y * f.w + x;
			double px = x + 0.5, py = y + 0.5;
			double tf = f.t_final[pix], T = tf, accum[3] = { 0, 0, 0 }, gpix[3];
			for (int ch = 0; ch < 3; ch++) {
				gpix[ch] = dl[ch * hw + pix];
				grads->background[ch] += tf * gpix[ch];
			}
			for (size_t k = f.n_contrib[pix]; k-- > 0;) {
				double power, dx, dy;
				size_t g = f.tile_list[t][k];
				double alpha = ref_alpha(&f, g, px, py, &power, &dx, &dy);
				if (alpha == 0)
					continue;
				T /= 1 - alpha;
				double d_alpha = 0, bg_dot = 0;
				for (int ch = 0; ch < 3; ch++) {
					d_alpha += (f.rgb[3 * g + ch] - accum[ch]) * gpix[ch];
					bg_dot += p->background[ch] * gpix[ch];
					g2[9 * g + 6 + ch] += alpha * T * gpix[ch];
				}
				d_alpha = T * d_alpha - tf / (1 - alpha) * bg_dot;
				for (int ch = 0; ch < 3; ch++)
					accum[ch] = alpha * f.rgb[3 * g + ch] + (1 - alpha) * accum[ch];
				/* α = o·e^power unless clamped to the maximum (then no gradient). */
				if (f.opacity[g] * exp(power) > SPLAT_ALPHA_MAX)
					continue;
				double gauss = exp(power);
				g2[9 * g + 5] += gauss * d_alpha;
				double d_power = f.opacity[g] * gauss * d_alpha;
				const double *cn = f.proj[g].conic;
				g2[9 * g + 0] += d_power * -(cn[0] * dx + cn[1] * dy);
				g2[9 * g + 1] += d_power * -(cn[2] * dy + cn[1] * dx);
				g2[9 * g + 2] += d_power * -0.5 * dx * dx;
				g2[9 * g + 3] += d_power * -dx * dy;
				g2[9 * g + 4] += d_power * -0.5 * dy * dy;
			}
		}

	for (size_t g = 0; g < n; g++) {
		if (f.proj[g].radius <= 0)
			continue;
		const double *d = g2 + 9 * g;
		project_backward_d(p->means + 3 * g, p->log_scales + 3 * g, p->quats + 4 * g, cam, d[0], d[1],
				   d + 2, grads->means + 3 * g, grads->log_scales + 3 * g, grads->quats + 4 * g);
		sh_color_backward_d(p->means + 3 * g, p->sh + 48 * g, sh_degree, cam, d + 6, f.clamped + 3 * g,
				    grads->sh + 48 * g, grads->means + 3 * g);
		grads->opacity_logits[g] = d[5] * f.opacity[g] * (1 - f.opacity[g]);
	}
	ref_frame_free(&f);
	free(g2);
	free(image);
}

double ref_ssim(const double *x, const double *y, int planes, int w, int h, double *ds_dx)
{
	size_t hw = (size_t)w * h;
	double g[SPLAT_SSIM_WINDOW], total = 0;
	double *tmp = splat_malloc(hw * sizeof(double));
	double *prod = splat_malloc(hw * sizeof(double));
	double *m[5], *dm[3];

	ssim_window_d(g);
	for (int k = 0; k < 5; k++)
		m[k] = splat_malloc(hw * sizeof(double));
	for (int k = 0; k < 3; k++)
		dm[k] = splat_malloc(hw * sizeof(double));
	for (int c = 0; c < planes; c++) {
		const double *xp = x + c * hw, *yp = y + c * hw;
		/* moments m_x, m_y, m_xx, m_yy, m_xy */
		for (int k = 0; k < 5; k++) {
			for (size_t i = 0; i < hw; i++)
				prod[i] = k == 0 ? xp[i] : k == 1 ? yp[i] : k == 2 ? xp[i] * xp[i] :
					  k == 3 ? yp[i] * yp[i] : xp[i] * yp[i];
			ssim_pass_d(prod, tmp, w, h, 0, h, 0, g);
			ssim_pass_d(tmp, m[k], w, h, 0, h, 1, g);
		}
		for (size_t i = 0; i < hw; i++) {
			double a, b, cc;
			total += ssim_pixel_d(m[0][i], m[1][i], m[2][i], m[3][i], m[4][i], &a, &b, &cc);
			dm[0][i] = a;
			dm[1][i] = b;
			dm[2][i] = cc;
		}
		if (!ds_dx)
			continue;
		/* ∂S/∂x = G*∂m_x + 2x (G*∂m_xx) + y (G*∂m_xy), scaled by 1/(planes·hw) for the mean. */
		for (int k = 0; k < 3; k++) {
			ssim_pass_d(dm[k], tmp, w, h, 0, h, 0, g);
			ssim_pass_d(tmp, dm[k], w, h, 0, h, 1, g);
		}
		for (size_t i = 0; i < hw; i++)
			ds_dx[c * hw + i] = (dm[0][i] + 2 * xp[i] * dm[1][i] + yp[i] * dm[2][i]) / ((double)planes * hw);
	}
	for (int k = 0; k < 5; k++)
		free(m[k]);
	for (int k = 0; k < 3; k++)
		free(dm[k]);
	free(tmp);
	free(prod);
	return total / ((double)planes * hw);
}

double ref_loss(const double *image, const double *gt, int w, int h, double *dl_dimage)
{
	size_t n = 3 * (size_t)w * h;
	double l1 = 0, ssim;
	double wl1 = SPLAT_LOSS_L1_WEIGHT, wssim = 1 - SPLAT_LOSS_L1_WEIGHT;

	ssim = ref_ssim(image, gt, 3, w, h, dl_dimage);
	for (size_t i = 0; i < n; i++) {
		double d = image[i] - gt[i];
		l1 += fabs(d);
		if (dl_dimage)
			dl_dimage[i] = -wssim * dl_dimage[i] + wl1 * (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0) / n;
	}
	return wl1 * l1 / n + wssim * (1 - ssim);
}
