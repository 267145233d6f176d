/* gpu_check.c: bin/tests/splat-gpu-check, checks of splat-train's CUDA backend on a GPU that
 * complement `splat-check backend --backend cuda` (tests/splat/t-gpu.sh: 64×64 teacher views
 * against the double reference, and the micro run):
 *   gpu-odd-*     a 45×38 view (partial edge tiles for the blend and the SSIM halos), SH
 *                 degrees 0..3: image, projection gradients, loss and loss gradients against
 *                 the double reference (image max error <= 1e-4, per-group relative error
 *                 <= 1e-3);
 *   gpu-growth-*  large Gaussians at 256×256, so the tile-Gaussian pairs outgrow the first
 *                 sort buffers: image against the reference; two renders bit-identical;
 *   gpu-empty-*   no Gaussians: the background alone, and its gradient;
 *   gpu-vs-cpu-*  the trainer's micro scene and student on the CUDA and CPU backends: images,
 *                 loss, gradients, densification statistics;
 *   gpu-adam-*    two Adam steps against the update computed on the host, with set_params
 *                 re-mapping the moments in between (a reversed order, fresh Gaussians, fewer
 *                 Gaussians), and set_params / get_params round trips.
 * Without a usable device it prints "SKIPPED: splat/gpu-check: no CUDA device (<why>)". */
#include "splat.h"
#include "gpu_test_util.h"

#define GCK_THREADS 2

/* A backend context with one set of views and parameters. */
struct gck_run {
	const struct splat_backend_ops *ops;
	void *ctx;
};

static int gck_open(struct gck_run *r, const struct splat_backend_ops *ops, int w, int h, size_t cap,
		    const struct splat_camera *cams, size_t n_views, const float *gt, const struct splat_params *p)
{
	struct splat_backend_config cfg = { .width = w, .height = h, .threads = GCK_THREADS, .max_gaussians = cap };
	int err;

	r->ops = ops;
	r->ctx = NULL;
	if ((err = ops->create(&cfg, &r->ctx)) || (err = ops->set_views(r->ctx, cams, n_views, gt)) ||
	    (err = ops->set_params(r->ctx, p, NULL)))
		gmt_result(0, "splat/gpu-check-setup", "%s backend: create/set_views/set_params failed (%d)", ops->name, err);
	return err;
}

static void gck_close(struct gck_run *r)
{
	if (r->ctx)
		r->ops->destroy(r->ctx);
	r->ctx = NULL;
}

static double gck_max_error(const float *a, const double *b, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		if (fabs(a[i] - b[i]) > m)
			m = fabs(a[i] - b[i]);
	return m;
}

/* Random weights in [-0.5, 0.5): the projection L = Σ w·image. */
static void gck_weights(float *wf, double *wd, size_t n, uint64_t stream)
{
	for (size_t i = 0; i < n; i++) {
		wf[i] = (float)(gmt_uniform(stream, i) - 0.5);
		wd[i] = wf[i];
	}
}

static void gck_odd_size(void)
{
	const int w = 45, h = 38;
	size_t hw3 = 3 * (size_t)w * h;
	struct splat_params p, target, grads;
	struct ref_params rp, rt, rg;
	struct splat_camera cam;
	struct gck_run run;
	float *img = splat_malloc(hw3 * sizeof(float)), *wf = splat_malloc(hw3 * sizeof(float));
	float *gt = splat_malloc(hw3 * sizeof(float)), loss = 0;
	double *dimg = splat_malloc(hw3 * sizeof(double)), *wd = splat_malloc(hw3 * sizeof(double));
	double *dgt = splat_malloc(hw3 * sizeof(double));
	char name[96];
	int err = 0;

	gmt_tiny_scene(&p, 30);
	splat_params_alloc(&grads, p.count);
	gmt_camera(&cam, w, h, 0.5, 0.3, 3, 50);
	ref_params_from_float(&rp, &p);
	ref_params_alloc(&rg, p.count);
	/* ground truth: the scene with every mean moved a little, rendered by the reference */
	splat_params_alloc(&target, p.count);
	splat_params_copy(&target, &p);
	for (size_t i = 0; i < 3 * p.count; i++)
		target.means[i] += (float)(0.03 * (gmt_uniform(40, i) - 0.5));
	ref_params_from_float(&rt, &target);
	ref_render(&rt, &cam, 3, dgt);
	for (size_t i = 0; i < hw3; i++)
		gt[i] = (float)dgt[i];
	gck_weights(wf, wd, hw3, 41);
	if (gck_open(&run, &splat_cuda_backend, w, h, p.count, &cam, 1, gt, &p))
		goto out;
	for (int deg = 0; deg <= SPLAT_MAX_SH_DEGREE; deg++) {
		if ((err = run.ops->render(run.ctx, 0, deg)) || (err = run.ops->get_image(run.ctx, img)) ||
		    (err = run.ops->backward(run.ctx, wf)) || (err = run.ops->get_grads(run.ctx, &grads)))
			goto out;
		ref_render(&rp, &cam, deg, dimg);
		snprintf(name, sizeof(name), "splat/gpu-odd-image-sh%d", deg);
		double e = gck_max_error(img, dimg, hw3);
		gmt_result(e <= 1e-4, name, "max error %.2e against the double reference (%dx%d)", e, w, h);
		ref_backward(&rp, &cam, deg, wd, &rg);
		snprintf(name, sizeof(name), "splat/gpu-odd-projection-grad-sh%d", deg);
		gmt_check_groups(name, &grads, &rg, 1e-3);
	}
	/* the training loss against the ground truth */
	if ((err = run.ops->render(run.ctx, 0, 3)) || (err = run.ops->loss_grad(run.ctx, &loss)) ||
	    (err = run.ops->backward(run.ctx, NULL)) || (err = run.ops->get_grads(run.ctx, &grads)))
		goto out;
	ref_render(&rp, &cam, 3, dimg);
	double dloss = ref_loss(dimg, dgt, w, h, wd);
	gmt_result(fabs(loss - dloss) <= 1e-4 * fabs(dloss), "splat/gpu-odd-loss", "loss %.7f, reference %.7f", loss,
		   dloss);
	ref_backward(&rp, &cam, 3, wd, &rg);
	gmt_check_groups("splat/gpu-odd-loss-grad", &grads, &rg, 1e-3);
out:
	if (err)
		gmt_result(0, "splat/gpu-odd", "a backend call failed (%d)", err);
	gck_close(&run);
	splat_params_free(&p);
	splat_params_free(&target);
	splat_params_free(&grads);
	ref_params_free(&rp);
	ref_params_free(&rt);
	ref_params_free(&rg);
	free(img);
	free(wf);
	free(gt);
	free(dimg);
	free(wd);
	free(dgt);
}

static void gck_growth(void)
{
	const int w = 256, h = 256;
	const size_t n = 300;
	size_t hw3 = 3 * (size_t)w * h, hw = (size_t)w * h, flagged = 0, differ = 0;
	struct splat_params p;
	struct ref_params rp;
	struct splat_camera cam;
	struct gck_run run;
	float *img = splat_malloc(hw3 * sizeof(float)), *img2 = splat_malloc(hw3 * sizeof(float));
	double *dimg = splat_malloc(hw3 * sizeof(double)), maxerr = 0;
	unsigned char *edge = splat_calloc(hw, 1);
	int err = 0;

	gmt_tiny_scene(&p, n);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 3; k++) {
			p.means[3 * i + k] *= 2;
			p.log_scales[3 * i + k] = (float)log(0.25 + 0.25 * gmt_uniform(42, 3 * i + k));
		}
		/* faint, so T rarely nears its stopping threshold under hundreds of layers */
		double o = 0.04 + 0.08 * gmt_uniform(43, i);
		p.opacity_logits[i] = (float)log(o / (1 - o));
	}
	gmt_camera(&cam, w, h, 1.0, 0.4, 4, 60);
	ref_params_from_float(&rp, &p);
	if (gck_open(&run, &splat_cuda_backend, w, h, n, &cam, 1, NULL, &p))
		goto out;
	if ((err = run.ops->render(run.ctx, 0, 2)) || (err = run.ops->get_image(run.ctx, img)) ||
	    (err = run.ops->render(run.ctx, 0, 2)) || (err = run.ops->get_image(run.ctx, img2)))
		goto out;
	ref_render_flagged(&rp, &cam, 2, dimg, edge);
	for (size_t i = 0; i < hw3; i++) {
		if (!edge[i % hw] && fabs(img[i] - dimg[i]) > maxerr)
			maxerr = fabs(img[i] - dimg[i]);
		differ += memcmp(&img[i], &img2[i], sizeof(float)) != 0;
	}
	for (size_t i = 0; i < hw; i++)
		flagged += edge[i];
	gmt_result(maxerr <= 1e-4 && flagged * 200 <= hw, "splat/gpu-growth-image",
		   "max error %.2e against the double reference with %zu Gaussians covering many of %d tiles "
		   "(%zu of %zu pixels with thresholds within rounding left out)", maxerr, n, (w / 16) * (h / 16), flagged, hw);
	gmt_result(differ == 0, "splat/gpu-growth-deterministic", "%zu of %zu values differ between two renders", differ,
		   hw3);
out:
	if (err)
		gmt_result(0, "splat/gpu-growth", "a backend call failed (%d)", err);
	gck_close(&run);
	splat_params_free(&p);
	ref_params_free(&rp);
	free(img);
	free(img2);
	free(dimg);
	free(edge);
}

static void gck_empty(void)
{
	const int w = 40, h = 24;
	size_t hw3 = 3 * (size_t)w * h, hw = (size_t)w * h, wrong = 0;
	struct splat_params p, grads;
	struct splat_camera cam;
	struct gck_run run;
	float *img = splat_malloc(hw3 * sizeof(float)), *wf = splat_malloc(hw3 * sizeof(float));
	double *wd = splat_malloc(hw3 * sizeof(double)), want[3] = { 0, 0, 0 }, worst = 0;
	int err = 0;

	splat_params_alloc(&p, 4);
	splat_params_alloc(&grads, 4);
	p.count = 0;
	p.background[0] = 0.25f;
	p.background[1] = 0.5f;
	p.background[2] = 0.75f;
	gmt_camera(&cam, w, h, 0, 0.3, 3, 50);
	gck_weights(wf, wd, hw3, 44);
	if (gck_open(&run, &splat_cuda_backend, w, h, 4, &cam, 1, NULL, &p))
		goto out;
	if ((err = run.ops->render(run.ctx, 0, 0)) || (err = run.ops->get_image(run.ctx, img)) ||
	    (err = run.ops->backward(run.ctx, wf)) || (err = run.ops->get_grads(run.ctx, &grads)))
		goto out;
	for (size_t i = 0; i < hw3; i++)
		wrong += img[i] != p.background[i / hw];
	for (size_t i = 0; i < hw3; i++)
		want[i / hw] += wd[i];
	for (int c = 0; c < 3; c++)
		if (fabs(grads.background[c] - want[c]) > worst)
			worst = fabs(grads.background[c] - want[c]);
	gmt_result(wrong == 0 && grads.count == 0 && worst <= 1e-4, "splat/gpu-empty",
		   "%zu of %zu values differ from the background; ∂L/∂background off by %.2e; %zu gradients", wrong, hw3,
		   worst, grads.count);
out:
	if (err)
		gmt_result(0, "splat/gpu-empty", "a backend call failed (%d)", err);
	gck_close(&run);
	splat_params_free(&p);
	splat_params_free(&grads);
	free(img);
	free(wf);
	free(wd);
}

/* Densification statistics of a backend into freshly allocated arrays. */
static int gck_stats(struct gck_run *r, size_t n, struct splat_densify_stats *s)
{
	s->grad_accum = splat_calloc(n, sizeof(float));
	s->count = splat_calloc(n, sizeof(int32_t));
	s->max_radius = splat_calloc(n, sizeof(float));
	return r->ops->get_densify_stats(r->ctx, s);
}

static void gck_stats_free(struct splat_densify_stats *s)
{
	free(s->grad_accum);
	free(s->count);
	free(s->max_radius);
}

/* The host's Adam step over every scalar of p (moments m, v; gradients g), in double. */
static void gck_host_adam(struct splat_params *p, struct splat_params *m, struct splat_params *v,
			  const struct splat_params *g, const struct splat_adam_config *a)
{
	float *ps[6] = { p->means, p->log_scales, p->quats, p->opacity_logits, p->sh, p->background };
	float *ms[6] = { m->means, m->log_scales, m->quats, m->opacity_logits, m->sh, m->background };
	float *vs[6] = { v->means, v->log_scales, v->quats, v->opacity_logits, v->sh, v->background };
	const float *gs[6] = { g->means, g->log_scales, g->quats, g->opacity_logits, g->sh, g->background };
	const size_t width[6] = { 3, 3, 4, 1, 48, 0 };
	const float lr[6] = { a->lr_means, a->lr_log_scales, a->lr_quats, a->lr_opacity, a->lr_sh_rest, a->lr_background };
	double bc1 = 1 - pow(SPLAT_ADAM_BETA1, a->step), bc2 = 1 - pow(SPLAT_ADAM_BETA2, a->step);

	for (int grp = 0; grp < 6; grp++) {
		size_t n = grp == 5 ? 3 : width[grp] * p->count;
		for (size_t k = 0; k < n; k++) {
			double rate = grp == 4 && k % 48 < 3 ? a->lr_sh_dc : lr[grp], gk = gs[grp][k];
			double mk = SPLAT_ADAM_BETA1 * ms[grp][k] + (1 - SPLAT_ADAM_BETA1) * gk;
			double vk = SPLAT_ADAM_BETA2 * vs[grp][k] + (1 - SPLAT_ADAM_BETA2) * gk * gk;
			ms[grp][k] = (float)mk;
			vs[grp][k] = (float)vk;
			ps[grp][k] = (float)(ps[grp][k] - rate * (mk / bc1) / (sqrt(vk / bc2) + SPLAT_ADAM_EPS));
		}
	}
}

/* Largest |a - b| over every scalar, in units of (1e-3·rate + 1e-6·|b|): <= 1 passes. */
static double gck_param_error(const struct splat_params *a, const struct splat_params *b, float rate)
{
	const float *as[6] = { a->means, a->log_scales, a->quats, a->opacity_logits, a->sh, a->background };
	const float *bs[6] = { b->means, b->log_scales, b->quats, b->opacity_logits, b->sh, b->background };
	const size_t width[6] = { 3, 3, 4, 1, 48, 0 };
	double worst = 0;

	for (int grp = 0; grp < 6; grp++) {
		size_t n = grp == 5 ? 3 : width[grp] * b->count;
		for (size_t k = 0; k < n; k++) {
			double e = fabs(as[grp][k] - bs[grp][k]) / (1e-3 * rate + 1e-6 * fabs(bs[grp][k]));
			if (e > worst)
				worst = e;
		}
	}
	return worst;
}

/* Bitwise equality of the first b->count Gaussians and the background. */
static int gck_params_identical(const struct splat_params *a, const struct splat_params *b)
{
	size_t n = b->count;

	return a->count == n && gmt_same(a->means, b->means, 3 * n) && gmt_same(a->log_scales, b->log_scales, 3 * n) &&
	       gmt_same(a->quats, b->quats, 4 * n) && gmt_same(a->opacity_logits, b->opacity_logits, n) &&
	       gmt_same(a->sh, b->sh, 48 * n) && gmt_same(a->background, b->background, 3);
}

#define GCK_VCA_W   128    /* the micro scene's image size */
#define GCK_VCA_H   128
#define GCK_VCA_N0  3000   /* the student's Gaussians */
#define GCK_VCA_CAP 3200   /* the backends' capacity */

/* gpu-vs-cpu-* and gpu-adam-*: the micro scene's student on both backends, then the CUDA
 * backend's Adam steps against the host's. */
struct gck_vca {
	struct splat_scene scene;
	struct splat_params student;
	struct splat_params grads[2];     /* [0] cuda, [1] cpu */
	struct splat_params params_gpu;   /* the CUDA backend's parameters after a step */
	struct splat_params host_p, host_m, host_v;   /* the host's parameters and Adam moments */
	struct splat_params remapped;     /* the parameters set after step 1, re-mapped by src */
	struct gck_run gpu, cpu;
	struct splat_densify_stats st[2];
	struct ref_params ref_grads;
	float *img[2], loss[2];
	int32_t *src;                     /* the re-map: the old index of each Gaussian, -1 fresh */
	size_t n1;                        /* Gaussians after the re-map */
	struct splat_adam_config adam;
};

/* The student, given a shape and an orientation, and every buffer of c. */
static void gck_vca_alloc(struct gck_vca *c)
{
	size_t hw3 = 3 * (size_t)GCK_VCA_W * GCK_VCA_H;

	splat_params_alloc(&c->student, GCK_VCA_CAP);
	scene_init_student(&c->scene, GCK_VCA_N0, &c->student);
	/* the student starts isotropic with identity rotations, where ∂L/∂q is rounding noise:
	 * give every Gaussian a shape and an orientation so each group has a real gradient */
	for (size_t i = 0; i < GCK_VCA_N0; i++) {
		for (int k = 0; k < 4; k++)
			c->student.quats[4 * i + k] += (float)(0.3 * (gmt_uniform(45, 4 * i + k) - 0.5));
		for (int k = 0; k < 3; k++)
			c->student.log_scales[3 * i + k] += (float)(0.6 * (gmt_uniform(46, 3 * i + k) - 0.5));
	}
	for (int b = 0; b < 2; b++) {
		splat_params_alloc(&c->grads[b], GCK_VCA_CAP);
		c->img[b] = splat_malloc(hw3 * sizeof(float));
	}
	splat_params_alloc(&c->params_gpu, GCK_VCA_CAP);
	splat_params_alloc(&c->host_p, GCK_VCA_CAP);
	splat_params_alloc(&c->host_m, GCK_VCA_CAP);
	splat_params_alloc(&c->host_v, GCK_VCA_CAP);
	splat_params_alloc(&c->remapped, GCK_VCA_CAP);
	memset(&c->ref_grads, 0, sizeof(c->ref_grads));
}

static void gck_vca_free(struct gck_vca *c)
{
	gck_close(&c->gpu);
	gck_close(&c->cpu);
	gck_stats_free(&c->st[0]);
	gck_stats_free(&c->st[1]);
	scene_free(&c->scene);
	splat_params_free(&c->student);
	for (int b = 0; b < 2; b++) {
		splat_params_free(&c->grads[b]);
		free(c->img[b]);
	}
	splat_params_free(&c->params_gpu);
	splat_params_free(&c->host_p);
	splat_params_free(&c->host_m);
	splat_params_free(&c->host_v);
	splat_params_free(&c->remapped);
	ref_params_free(&c->ref_grads);
	free(c->src);
}

/* Two training views at SH degree 1 on both backends: image, loss, gradients. */
static int gck_vca_views(struct gck_vca *c)
{
	size_t hw3 = 3 * (size_t)GCK_VCA_W * GCK_VCA_H;
	struct gck_run *runs[2] = { &c->gpu, &c->cpu };
	char name[96];
	int err;

	for (int k = 0; k < 2; k++) {
		size_t view = c->scene.train_views[k];
		for (int b = 0; b < 2; b++)
			if ((err = runs[b]->ops->render(runs[b]->ctx, view, 1)) ||
			    (err = runs[b]->ops->get_image(runs[b]->ctx, c->img[b])) ||
			    (err = runs[b]->ops->loss_grad(runs[b]->ctx, &c->loss[b])) ||
			    (err = runs[b]->ops->backward(runs[b]->ctx, NULL)) ||
			    (err = runs[b]->ops->get_grads(runs[b]->ctx, &c->grads[b])))
				return err;
		double maxd = 0;
		size_t over = 0;
		for (size_t i = 0; i < hw3; i++) {
			double d = fabs(c->img[0][i] - c->img[1][i]);
			maxd = d > maxd ? d : maxd;
			over += d > 1e-4;
		}
		/* a float threshold (α >= 1/255, T >= 1e-4) decided the other way, when fused
		 * multiply-adds move a value across it, changes a pixel by up to ~1/255: rare */
		snprintf(name, sizeof(name), "splat/gpu-vs-cpu-image-view%zu", view);
		gmt_result(over * 1000 <= hw3 && maxd <= 1e-2, name, "max difference %.2e, %zu of %zu values above 1e-4",
			   maxd, over, hw3);
		snprintf(name, sizeof(name), "splat/gpu-vs-cpu-loss-view%zu", view);
		gmt_result(fabs(c->loss[0] - c->loss[1]) <= 1e-4 * fabs(c->loss[1]), name, "cuda %.7f, cpu %.7f",
			   c->loss[0], c->loss[1]);
		ref_params_free(&c->ref_grads);
		ref_params_from_float(&c->ref_grads, &c->grads[1]);
		snprintf(name, sizeof(name), "splat/gpu-vs-cpu-grad-view%zu", view);
		gmt_check_groups(name, &c->grads[0], &c->ref_grads, 1e-3);
	}
	return 0;
}

/* The densification statistics of both backends after those views. */
static int gck_vca_stats(struct gck_vca *c)
{
	const size_t n0 = GCK_VCA_N0;
	size_t count_bad = 0, radius_bad = 0, seen = 0;
	const struct splat_densify_stats *st = c->st;
	double num = 0, den = 0;
	int err;

	if ((err = gck_stats(&c->gpu, n0, &c->st[0])) || (err = gck_stats(&c->cpu, n0, &c->st[1])))
		return err;
	for (size_t i = 0; i < n0; i++) {
		count_bad += st[0].count[i] != st[1].count[i];
		radius_bad += st[0].max_radius[i] != st[1].max_radius[i];
		seen += st[1].count[i] > 0;
		num += (st[0].grad_accum[i] - st[1].grad_accum[i]) * (double)(st[0].grad_accum[i] - st[1].grad_accum[i]);
		den += (double)st[1].grad_accum[i] * st[1].grad_accum[i];
	}
	double rel = sqrt(num / (den > 0 ? den : 1e-300));
	gmt_result(count_bad * 1000 <= n0 && radius_bad * 1000 <= n0 && rel <= 1e-3 && seen > 0,
		   "splat/gpu-vs-cpu-densify-stats", "counts differ for %zu, max radii for %zu of %zu Gaussians "
		   "(%zu seen); accumulated gradient relative difference %.2e", count_bad, radius_bad, n0, seen, rel);
	return 0;
}

/* Adam step 1 on the CUDA gradients of the last backward, against the host. */
static int gck_vca_adam_step1(struct gck_vca *c)
{
	const struct splat_backend_ops *ops = c->gpu.ops;
	void *ctx = c->gpu.ctx;
	int err;

	c->adam = (struct splat_adam_config){ .lr_means = 1e-3f, .lr_log_scales = 5e-3f, .lr_quats = 1e-3f,
					      .lr_opacity = 0.05f, .lr_sh_dc = 2.5e-3f, .lr_sh_rest = 1.25e-4f,
					      .lr_background = 2.5e-3f, .step = 1 };
	if ((err = ops->get_params(ctx, &c->host_p)) || (err = ops->adam_step(ctx, &c->adam)) ||
	    (err = ops->get_params(ctx, &c->params_gpu)))
		return err;
	c->host_m.count = c->host_v.count = GCK_VCA_N0;
	gck_host_adam(&c->host_p, &c->host_m, &c->host_v, &c->grads[0], &c->adam);
	double e1 = gck_param_error(&c->params_gpu, &c->host_p, 1.25e-4f);
	gmt_result(e1 <= 1, "splat/gpu-adam-step1", "largest difference %.2f × (1e-3·rate + 1e-6·|p|) from the host's step",
		   e1);
	return 0;
}

/* Re-map: reversed order, every 5th Gaussian fresh (zero moments), 7 fewer; then the round
 * trip of set_params / get_params and the densification statistics it clears. */
static int gck_vca_remap(struct gck_vca *c)
{
	const size_t n0 = GCK_VCA_N0, n1 = c->n1 = n0 - 7;
	int err;

	c->src = splat_calloc(n1, sizeof(int32_t));
	c->remapped.count = n1;
	for (size_t i = 0; i < n1; i++) {
		size_t from = n0 - 1 - i;
		c->src[i] = i % 5 == 0 ? -1 : (int32_t)from;
		splat_params_copy_one(&c->remapped, i, &c->params_gpu, from);
	}
	memcpy(c->remapped.background, c->params_gpu.background, sizeof(c->remapped.background));
	if ((err = c->gpu.ops->set_params(c->gpu.ctx, &c->remapped, c->src)) ||
	    (err = c->gpu.ops->get_params(c->gpu.ctx, &c->host_p)))
		return err;
	gmt_result(gck_params_identical(&c->host_p, &c->remapped), "splat/gpu-params-roundtrip",
		   "set_params then get_params returns the %zu Gaussians and background bit for bit", n1);
	gck_stats_free(&c->st[0]);
	if ((err = gck_stats(&c->gpu, n1, &c->st[0])))
		return err;
	size_t nonzero = 0;
	for (size_t i = 0; i < n1; i++)
		nonzero += c->st[0].count[i] != 0 || c->st[0].grad_accum[i] != 0 || c->st[0].max_radius[i] != 0;
	gmt_result(nonzero == 0, "splat/gpu-densify-reset", "%zu of %zu Gaussians keep statistics after set_params",
		   nonzero, n1);
	return 0;
}

/* Gaussian i of p, every group but the background, set to zero. */
static void gck_zero_one(struct splat_params *p, size_t i)
{
	memset(p->means + 3 * i, 0, 3 * sizeof(float));
	memset(p->log_scales + 3 * i, 0, 3 * sizeof(float));
	memset(p->quats + 4 * i, 0, 4 * sizeof(float));
	p->opacity_logits[i] = 0;
	memset(p->sh + 48 * i, 0, 48 * sizeof(float));
}

/* The host's moments, re-mapped as set_params re-maps the backend's: src[i] >= 0 moves that
 * Gaussian's moments to i, -1 starts Gaussian i at zero. */
static void gck_remap_moments(struct splat_params *m, struct splat_params *v, const int32_t *src, size_t n1)
{
	struct splat_params old_m, old_v;

	splat_params_alloc(&old_m, GCK_VCA_CAP);
	splat_params_alloc(&old_v, GCK_VCA_CAP);
	splat_params_copy(&old_m, m);
	splat_params_copy(&old_v, v);
	for (size_t i = 0; i < n1; i++) {
		if (src[i] >= 0) {
			splat_params_copy_one(m, i, &old_m, (size_t)src[i]);
			splat_params_copy_one(v, i, &old_v, (size_t)src[i]);
		} else {
			gck_zero_one(m, i);
			gck_zero_one(v, i);
		}
	}
	m->count = v->count = n1;
	splat_params_free(&old_m);
	splat_params_free(&old_v);
}

/* Adam step 2 after the re-map, against the host's step with its moments re-mapped the same way. */
static int gck_vca_adam_step2(struct gck_vca *c)
{
	const struct splat_backend_ops *ops = c->gpu.ops;
	void *ctx = c->gpu.ctx;
	int err;

	gck_remap_moments(&c->host_m, &c->host_v, c->src, c->n1);
	c->adam.step = 2;
	if ((err = ops->render(ctx, c->scene.train_views[2], 2)) || (err = ops->loss_grad(ctx, NULL)) ||
	    (err = ops->backward(ctx, NULL)) || (err = ops->get_grads(ctx, &c->grads[0])) ||
	    (err = ops->adam_step(ctx, &c->adam)) || (err = ops->get_params(ctx, &c->params_gpu)))
		return err;
	gck_host_adam(&c->host_p, &c->host_m, &c->host_v, &c->grads[0], &c->adam);
	double e2 = gck_param_error(&c->params_gpu, &c->host_p, 1.25e-4f);
	gmt_result(e2 <= 1 && c->grads[0].count == c->n1, "splat/gpu-adam-step2-remapped",
		   "largest difference %.2f × (1e-3·rate + 1e-6·|p|) from the host's step with re-mapped moments", e2);
	return 0;
}

static void gck_vs_cpu_and_adam(void)
{
	struct gck_vca c = { 0 };
	int err;

	if (scene_generate(&c.scene, 1, GCK_VCA_W, GCK_VCA_H, GCK_THREADS)) {
		gmt_result(0, "splat/gpu-vs-cpu", "scene_generate failed");
		return;
	}
	gck_vca_alloc(&c);
	if (gck_open(&c.gpu, &splat_cuda_backend, GCK_VCA_W, GCK_VCA_H, GCK_VCA_CAP, c.scene.cams, SCENE_VIEWS,
		     c.scene.gt, &c.student) ||
	    gck_open(&c.cpu, &splat_cpu_backend, GCK_VCA_W, GCK_VCA_H, GCK_VCA_CAP, c.scene.cams, SCENE_VIEWS,
		     c.scene.gt, &c.student))
		goto out;   /* gck_open has said which */
	if ((err = gck_vca_views(&c)) || (err = gck_vca_stats(&c)) || (err = gck_vca_adam_step1(&c)) ||
	    (err = gck_vca_remap(&c)) || (err = gck_vca_adam_step2(&c)))
		gmt_result(0, "splat/gpu-vs-cpu", "a backend call failed (%d)", err);
out:
	gck_vca_free(&c);
}

int main(void)
{
	char why[256] = "";

	if (splat_cuda_probe(why, sizeof(why)) != 0) {
		printf("SKIPPED: splat/gpu-check: no CUDA device (%s)\n", why);
		return 0;
	}
	printf("device: %s\n", why);
	gck_odd_size();
	gck_growth();
	gck_empty();
	gck_vs_cpu_and_adam();
	return gmt_failures ? 1 : 0;
}
