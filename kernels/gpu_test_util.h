/* gpu_test_util.h: helpers shared by the CUDA backend's test programs (gpu_math_test.c,
 * gpu_check.c): PASS/FAIL lines, a ring camera, a tiny scene kept away from the pipeline's
 * discontinuities, deterministic random numbers and per-group error measures. Test code only;
 * each program includes it once. */
#ifndef GPU_TEST_UTIL_H
#define GPU_TEST_UTIL_H

#include "splat.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gmt_failures;   /* FAIL lines printed so far */

static void gmt_result(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void gmt_result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s: ", ok ? "PASS" : "FAIL", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	gmt_failures += !ok;
}

/* Bitwise equality of float arrays (NaN patterns included). */
static int gmt_same(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof(float)) == 0;
}

/* Uniform in [0, 1), reproducible from (stream, i). */
static double gmt_uniform(uint64_t stream, uint64_t i)
{
	return splat_rng_uniform(4242, stream, i);
}

/* A camera at distance dist on a ring (azimuth az, elevation el) looking at the origin. */
static void gmt_camera(struct splat_camera *c, int w, int h, double az, double el, double dist, double fov_deg)
{
	double pos[3] = { dist * cos(el) * sin(az), -dist * sin(el), -dist * cos(el) * cos(az) };
	double fwd[3], right[3], down[3], up[3] = { 0, -1, 0 }, n;

	for (int k = 0; k < 3; k++)
		fwd[k] = -pos[k] / dist;
	right[0] = fwd[1] * up[2] - fwd[2] * up[1];
	right[1] = fwd[2] * up[0] - fwd[0] * up[2];
	right[2] = fwd[0] * up[1] - fwd[1] * up[0];
	n = sqrt(right[0] * right[0] + right[1] * right[1] + right[2] * right[2]);
	for (int k = 0; k < 3; k++)
		right[k] /= -n;
	down[0] = fwd[1] * right[2] - fwd[2] * right[1];
	down[1] = fwd[2] * right[0] - fwd[0] * right[2];
	down[2] = fwd[0] * right[1] - fwd[1] * right[0];
	memset(c, 0, sizeof(*c));
	splat_camera_set_pose(c, right, down, fwd, pos);
	c->width = w;
	c->height = h;
	c->tan_half_fov_x = (float)tan(fov_deg / 2 * M_PI / 180);
	c->tan_half_fov_y = c->tan_half_fov_x * h / w;
	c->fx = w / (2 * c->tan_half_fov_x);
	c->fy = h / (2 * c->tan_half_fov_y);
	c->cx = w / 2.0f;
	c->cy = h / 2.0f;
}



/* A small scene away from the discontinuities (opacity 0.2-0.8, in view, colours off the clamp). */
static void gmt_tiny_scene(struct splat_params *p, size_t n)
{
	splat_params_alloc(p, n);
	p->count = n;
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 3; k++) {
			p->means[3 * i + k] = (float)(0.9 * (gmt_uniform(30, 3 * i + k) - 0.5));
			p->log_scales[3 * i + k] = (float)log(0.08 + 0.12 * gmt_uniform(31, 3 * i + k));
		}
		for (int k = 0; k < 4; k++)
			p->quats[4 * i + k] = (float)(2 * gmt_uniform(32, 4 * i + k) - 1);
		double o = 0.2 + 0.6 * gmt_uniform(33, i);
		p->opacity_logits[i] = (float)log(o / (1 - o));
		for (int k = 0; k < 48; k++)
			p->sh[48 * i + k] = (float)((k < 3 ? 0.8 : 0.1) * (gmt_uniform(34, 48 * i + k) - 0.5));
	}
	p->background[0] = 0.2f;
	p->background[1] = 0.35f;
	p->background[2] = 0.6f;
}



/* ‖a - b‖/‖b‖ over one parameter group (0..5, as ref_params_group) of float values a against
 * double values b; *norm receives ‖b‖. */
static double gmt_group_error(const struct splat_params *a, struct ref_params *b, int group, double *norm)
{
	struct ref_params ad;
	double num = 0, den = 0;

	ref_params_from_float(&ad, a);
	double *x = ref_params_group(&ad, group), *y = ref_params_group(b, group);
	size_t n = ref_params_group_size(b, group);
	for (size_t i = 0; i < n; i++) {
		num += (x[i] - y[i]) * (x[i] - y[i]);
		den += y[i] * y[i];
	}
	ref_params_free(&ad);
	*norm = sqrt(den);
	return sqrt(num / (den > 0 ? den : 1e-300));
}

/* One PASS/FAIL line per group: relative error of gradients a against b within bound. */
static void gmt_check_groups(const char *prefix, const struct splat_params *a, struct ref_params *b, double bound)
{
	for (int group = 0; group < 6; group++) {
		char name[128];
		double norm, rel = gmt_group_error(a, b, group, &norm);
		snprintf(name, sizeof(name), "%s-%s", prefix, ref_group_names[group]);
		gmt_result(rel <= bound && norm > 0, name, "relative error %.2e (|grad| %.3g, bound %.0e)", rel, norm, bound);
	}
}

#endif
