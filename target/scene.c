/* scene.c: the synthetic scene splat-train learns, generated from a seed with no files: a
 * teacher of ~4,500 flattened Gaussians on a ground disk, a sphere, a torus and a box, 15
 * cameras on a ring (every 5th a test view), ground truth rendered by the double reference, and
 * the student's SfM-like initialisation. Every random number comes from splat_rng_* by
 * (seed, stream, index), so any backend regenerates the same scene. */
#include "splat.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* RNG streams, one per use, so adding a draw never shifts another. */
enum {
	SCENE_RNG_POINT = 1,  /* surface coordinates */
	SCENE_RNG_SCALE,
	SCENE_RNG_TWIST,
	SCENE_RNG_OPACITY,
	SCENE_RNG_SH1,
	SCENE_RNG_STUDENT_PICK = 20,
	SCENE_RNG_STUDENT_JITTER,
	SCENE_RNG_STUDENT_COLOR,
};

enum scene_surface { SURF_DISK, SURF_SPHERE, SURF_TORUS, SURF_BOX, SURF_COUNT };

static const struct {
	size_t count;
	double area;
} scene_surfaces[SURF_COUNT] = {
	[SURF_DISK] = { 1700, M_PI * 1.6 * 1.6 },
	[SURF_SPHERE] = { 1000, 4 * M_PI * 0.42 * 0.42 },
	[SURF_TORUS] = { 900, 4 * M_PI * M_PI * 0.35 * 0.12 },
	[SURF_BOX] = { 900, 6 * 0.56 * 0.56 },
};

static void vec_normalize(double v[3])
{
	double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);

	for (int k = 0; k < 3; k++)
		v[k] /= n;
}

static void vec_cross(const double a[3], const double b[3], double out[3])
{
	out[0] = a[1] * b[2] - a[2] * b[1];
	out[1] = a[2] * b[0] - a[0] * b[2];
	out[2] = a[0] * b[1] - a[1] * b[0];
}

/* Quaternion (w, x, y, z) of a rotation matrix with columns c0, c1, c2 (Shepperd's method). */
static void scene_matrix_to_quat(const double m[9], float q[4])
{
	double tr = m[0] + m[4] + m[8], w, x, y, z;

	if (tr > 0) {
		double s = sqrt(tr + 1.0) * 2;
		w = 0.25 * s; x = (m[7] - m[5]) / s; y = (m[2] - m[6]) / s; z = (m[3] - m[1]) / s;
	} else if (m[0] > m[4] && m[0] > m[8]) {
		double s = sqrt(1.0 + m[0] - m[4] - m[8]) * 2;
		w = (m[7] - m[5]) / s; x = 0.25 * s; y = (m[1] + m[3]) / s; z = (m[2] + m[6]) / s;
	} else if (m[4] > m[8]) {
		double s = sqrt(1.0 + m[4] - m[0] - m[8]) * 2;
		w = (m[2] - m[6]) / s; x = (m[1] + m[3]) / s; y = 0.25 * s; z = (m[5] + m[7]) / s;
	} else {
		double s = sqrt(1.0 + m[8] - m[0] - m[4]) * 2;
		w = (m[3] - m[1]) / s; x = (m[2] + m[6]) / s; y = (m[5] + m[7]) / s; z = 0.25 * s;
	}
	q[0] = (float)w; q[1] = (float)x; q[2] = (float)y; q[3] = (float)z;
}

/* Point, outward normal and colour of sample i of a surface. */
static void scene_surface_point(enum scene_surface s, uint64_t seed, uint64_t i, double p[3],
				double n[3], double rgb[3])
{
	double a = splat_rng_uniform(seed, SCENE_RNG_POINT, 3 * i);
	double b = splat_rng_uniform(seed, SCENE_RNG_POINT, 3 * i + 1);
	double c = splat_rng_uniform(seed, SCENE_RNG_POINT, 3 * i + 2);

	switch (s) {
	case SURF_DISK: {
		double r = 1.6 * sqrt(a), th = 2 * M_PI * b;
		p[0] = r * cos(th); p[1] = r * sin(th); p[2] = 0;
		n[0] = 0; n[1] = 0; n[2] = 1;
		double check = sin(3.0 * p[0]) * cos(3.0 * p[1]);
		rgb[0] = 0.55 + 0.25 * check; rgb[1] = 0.50 + 0.15 * check; rgb[2] = 0.35 - 0.1 * check;
		break;
	}
	case SURF_SPHERE: {
		double z = 2 * a - 1, th = 2 * M_PI * b, r = sqrt(1 - z * z);
		n[0] = r * cos(th); n[1] = r * sin(th); n[2] = z;
		p[0] = -0.55 + 0.42 * n[0]; p[1] = -0.3 + 0.42 * n[1]; p[2] = 0.45 + 0.42 * n[2];
		rgb[0] = 0.85; rgb[1] = 0.35 + 0.25 * sin(5.0 * p[2] + 2.0 * n[0]); rgb[2] = 0.2 + 0.1 * n[1];
		break;
	}
	case SURF_TORUS: {
		/* Standing torus, axis along y; uniform in (u, v), so the inner side is a little
		 * denser than the outer. */
		double u = 2 * M_PI * a, v = 2 * M_PI * b;
		double R = 0.35, r = 0.12;
		double ring[3] = { cos(u), 0, sin(u) };
		n[0] = cos(v) * ring[0]; n[1] = sin(v); n[2] = cos(v) * ring[2];
		p[0] = 0.6 + R * ring[0] + r * n[0]; p[1] = -0.15 + r * n[1]; p[2] = 0.48 + R * ring[2] + r * n[2];
		rgb[0] = 0.15 + 0.1 * sin(3 * u); rgb[1] = 0.65 + 0.2 * cos(3 * u); rgb[2] = 0.45 + 0.2 * sin(v);
		break;
	}
	default: { /* SURF_BOX: a cube of side 0.56 turned 30° about z, resting on the disk */
		int face = (int)(c * 6) % 6;
		double h = 0.28, l[3], ln[3] = { 0, 0, 0 };
		int axis = face / 2;
		double sign = face % 2 ? 1 : -1;
		l[axis] = sign * h; ln[axis] = sign;
		l[(axis + 1) % 3] = (2 * a - 1) * h;
		l[(axis + 2) % 3] = (2 * b - 1) * h;
		double ca = cos(M_PI / 6), sa = sin(M_PI / 6);
		p[0] = 0.05 + ca * l[0] - sa * l[1]; p[1] = 0.65 + sa * l[0] + ca * l[1]; p[2] = 0.3 + l[2];
		n[0] = ca * ln[0] - sa * ln[1]; n[1] = sa * ln[0] + ca * ln[1]; n[2] = ln[2];
		static const double face_rgb[6][3] = { { 0.2, 0.3, 0.8 }, { 0.3, 0.2, 0.7 }, { 0.25, 0.45, 0.9 },
						       { 0.5, 0.3, 0.8 }, { 0.15, 0.25, 0.6 }, { 0.4, 0.5, 0.95 } };
		double stripe = 0.1 * sin(12.0 * (l[(axis + 1) % 3] + l[(axis + 2) % 3]));
		for (int k = 0; k < 3; k++)
			rgb[k] = face_rgb[face][k] + stripe;
		break;
	}
	}
}

static void scene_make_teacher(struct splat_scene *s)
{
	size_t total = 0, i = 0;
	uint64_t seed = s->seed;

	for (int k = 0; k < SURF_COUNT; k++)
		total += scene_surfaces[k].count;
	splat_params_alloc(&s->teacher, total);
	s->teacher.count = total;
	for (int surf = 0; surf < SURF_COUNT; surf++) {
		double spacing = sqrt(scene_surfaces[surf].area / scene_surfaces[surf].count);
		for (size_t j = 0; j < scene_surfaces[surf].count; j++, i++) {
			double p[3], n[3], rgb[3], t1[3], t2[3], m[9];
			scene_surface_point(surf, seed, i, p, n, rgb);
			vec_normalize(n);
			/* tangent frame twisted by a random angle about the normal */
			double helper[3] = { fabs(n[0]) < 0.9 ? 1 : 0, fabs(n[0]) < 0.9 ? 0 : 1, 0 }, e1[3], e2[3];
			vec_cross(n, helper, e1);
			vec_normalize(e1);
			vec_cross(n, e1, e2);
			double tw = 2 * M_PI * splat_rng_uniform(seed, SCENE_RNG_TWIST, i);
			for (int k = 0; k < 3; k++) {
				t1[k] = cos(tw) * e1[k] + sin(tw) * e2[k];
				t2[k] = -sin(tw) * e1[k] + cos(tw) * e2[k];
			}
			vec_cross(t1, t2, n); /* right-handed columns (t1, t2, n) */
			for (int r = 0; r < 3; r++) {
				m[3 * r] = t1[r]; m[3 * r + 1] = t2[r]; m[3 * r + 2] = n[r];
			}
			scene_matrix_to_quat(m, s->teacher.quats + 4 * i);
			double s1 = spacing * (0.45 + 0.55 * splat_rng_uniform(seed, SCENE_RNG_SCALE, 2 * i));
			double s2 = spacing * (0.45 + 0.55 * splat_rng_uniform(seed, SCENE_RNG_SCALE, 2 * i + 1));
			double sn = 0.15 * (s1 < s2 ? s1 : s2);
			s->teacher.log_scales[3 * i] = (float)log(s1);
			s->teacher.log_scales[3 * i + 1] = (float)log(s2);
			s->teacher.log_scales[3 * i + 2] = (float)log(sn);
			for (int k = 0; k < 3; k++)
				s->teacher.means[3 * i + k] = (float)p[k];
			double o = 0.6 + 0.35 * splat_rng_uniform(seed, SCENE_RNG_OPACITY, i);
			s->teacher.opacity_logits[i] = (float)log(o / (1 - o));
			float *sh = s->teacher.sh + 48 * i;
			for (int c = 0; c < 3; c++) {
				double col = rgb[c] < 0.02 ? 0.02 : rgb[c] > 0.98 ? 0.98 : rgb[c];
				sh[c] = (float)((col - 0.5) / 0.28209479177387814);
				for (int k = 1; k < 4; k++)
					sh[3 * k + c] = (float)(0.05 * splat_rng_normal(seed, SCENE_RNG_SH1, 9 * i + 3 * (k - 1) + c));
			}
		}
	}
	s->teacher.background[0] = 0.2f;
	s->teacher.background[1] = 0.3f;
	s->teacher.background[2] = 0.5f;
}

static void scene_make_cameras(struct splat_scene *s)
{
	const double radius = 4.0, fov = 45.0 * M_PI / 180.0, target[3] = { 0, 0, 0.25 };
	double mean[3] = { 0, 0, 0 }, maxd = 0;

	for (int i = 0; i < SCENE_VIEWS; i++) {
		struct splat_camera *c = &s->cams[i];
		double az = 2 * M_PI * i / SCENE_VIEWS;
		double el = (20.0 + 15.0 * ((i * 7) % SCENE_VIEWS) / (SCENE_VIEWS - 1)) * M_PI / 180.0;
		double pos[3] = { target[0] + radius * cos(el) * cos(az), target[1] + radius * cos(el) * sin(az),
				  target[2] + radius * sin(el) };
		double fwd[3], right[3], down[3], up[3] = { 0, 0, 1 };
		for (int k = 0; k < 3; k++)
			fwd[k] = target[k] - pos[k];
		vec_normalize(fwd);
		vec_cross(fwd, up, right);
		vec_normalize(right);
		vec_cross(fwd, right, down);
		splat_camera_set_pose(c, right, down, fwd, pos);
		c->width = s->width;
		c->height = s->height;
		c->tan_half_fov_x = (float)tan(fov / 2);
		c->tan_half_fov_y = (float)(tan(fov / 2) * s->height / s->width);
		c->fx = (float)(s->width / (2 * c->tan_half_fov_x));
		c->fy = (float)(s->height / (2 * c->tan_half_fov_y));
		c->cx = s->width / 2.0f;
		c->cy = s->height / 2.0f;
		if (i % 5 == 0)
			s->test_views[s->n_test++] = i;
		else
			s->train_views[s->n_train++] = i;
		for (int k = 0; k < 3; k++)
			mean[k] += pos[k] / SCENE_VIEWS;
	}
	for (int i = 0; i < SCENE_VIEWS; i++) {
		double d = 0;
		for (int k = 0; k < 3; k++)
			d += (s->cams[i].centre[k] - mean[k]) * (s->cams[i].centre[k] - mean[k]);
		if (sqrt(d) > maxd)
			maxd = sqrt(d);
	}
	s->extent = 1.1 * maxd;
}

struct scene_gt_job {
	struct splat_scene *scene;
	const struct ref_params *teacher;
	int thread, threads;
	pthread_t tid;
};

/* Render views thread, thread + threads, ... with the reference (each view on one thread, so
 * the result does not depend on the thread count). */
static void *scene_render_gt_thread(void *arg)
{
	struct scene_gt_job *job = arg;
	struct splat_scene *s = job->scene;
	size_t hw3 = 3 * (size_t)s->width * s->height;
	double *img = splat_malloc(hw3 * sizeof(double)), *trans = splat_malloc(hw3 / 3 * sizeof(double));

	for (int v = job->thread; v < SCENE_VIEWS; v += job->threads) {
		ref_render_transmittance(job->teacher, &s->cams[v], SPLAT_MAX_SH_DEGREE, img, trans);
		for (size_t i = 0; i < hw3; i++)
			s->gt[v * hw3 + i] = (float)img[i];
		for (size_t i = 0; i < hw3 / 3; i++)
			s->gt_trans[v * hw3 / 3 + i] = (float)trans[i];
	}
	free(img);
	free(trans);
	return NULL;
}

int scene_generate(struct splat_scene *s, uint64_t seed, int width, int height, int threads)
{
	struct ref_params teacher;
	struct scene_gt_job jobs[SCENE_VIEWS];
	int started = 0, err = 0;

	memset(s, 0, sizeof(*s));
	s->seed = seed;
	s->width = width;
	s->height = height;
	scene_make_teacher(s);
	scene_make_cameras(s);
	s->gt = splat_malloc((size_t)SCENE_VIEWS * 3 * width * height * sizeof(float));
	s->gt_trans = splat_malloc((size_t)SCENE_VIEWS * width * height * sizeof(float));
	ref_params_from_float(&teacher, &s->teacher);
	if (threads > SCENE_VIEWS)
		threads = SCENE_VIEWS;
	if (threads < 1)
		threads = 1;
	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct scene_gt_job){ .scene = s, .teacher = &teacher, .thread = t, .threads = threads };
		if (t == 0)
			continue;
		int rc = pthread_create(&jobs[t].tid, NULL, scene_render_gt_thread, &jobs[t]);
		if (rc) {
			err = splat_error(rc, "pthread_create (ground-truth renderer): %s; try --threads 1",
					  strerror(rc));
			break;
		}
		started = t;
	}
	if (!err)
		scene_render_gt_thread(&jobs[0]);
	for (int t = 1; t <= started; t++)
		pthread_join(jobs[t].tid, NULL);
	ref_params_free(&teacher);
	if (err)
		scene_free(s);
	return err;
}

void scene_free(struct splat_scene *s)
{
	splat_params_free(&s->teacher);
	free(s->gt);
	free(s->gt_trans);
	s->gt = NULL;
	s->gt_trans = NULL;
}

static double dist2(const float *a, const float *b)
{
	double d = 0;

	for (int k = 0; k < 3; k++)
		d += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
	return d;
}

void scene_init_student(const struct splat_scene *s, size_t count, struct splat_params *out)
{
	const struct splat_params *t = &s->teacher;
	size_t n = t->count;
	size_t *perm = splat_malloc(n * sizeof(size_t));

	if (count > n)
		count = n;
	if (count > out->capacity)
		count = out->capacity;
	/* Fisher-Yates over the teacher indices; the first `count` are the student's points. */
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = splat_rng_u64(s->seed, SCENE_RNG_STUDENT_PICK, i) % (i + 1), tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	out->count = count;
	memset(out->sh, 0, count * 48 * sizeof(float));
	for (size_t i = 0; i < count; i++) {
		const float *src = t->means + 3 * perm[i];
		double nn = INFINITY, dir[3];
		/* O(n²) nearest neighbour: a few million distance evaluations at this scene's size. */
		for (size_t j = 0; j < n; j++)
			if (j != perm[i] && dist2(src, t->means + 3 * j) < nn)
				nn = dist2(src, t->means + 3 * j);
		nn = sqrt(nn);
		for (int k = 0; k < 3; k++)
			dir[k] = splat_rng_normal(s->seed, SCENE_RNG_STUDENT_JITTER, 3 * i + k);
		vec_normalize(dir);
		for (int k = 0; k < 3; k++)
			out->means[3 * i + k] = (float)(src[k] + 0.5 * nn * dir[k]);
		for (int c = 0; c < 3; c++) {
			double rgb = 0.5 + 0.28209479177387814 * t->sh[48 * perm[i] + c];
			rgb += 0.1 * splat_rng_normal(s->seed, SCENE_RNG_STUDENT_COLOR, 3 * i + c);
			rgb = rgb < 0 ? 0 : rgb > 1 ? 1 : rgb;
			out->sh[48 * i + c] = (float)((rgb - 0.5) / 0.28209479177387814);
		}
		out->quats[4 * i] = 1;
		out->quats[4 * i + 1] = out->quats[4 * i + 2] = out->quats[4 * i + 3] = 0;
		out->opacity_logits[i] = (float)log(0.1 / 0.9);
	}
	/* scale: mean distance to the 3 nearest student neighbours */
	for (size_t i = 0; i < count; i++) {
		double best[3] = { INFINITY, INFINITY, INFINITY };
		for (size_t j = 0; j < count; j++) {
			if (j == i)
				continue;
			double d = dist2(out->means + 3 * i, out->means + 3 * j);
			if (d < best[2]) {
				best[2] = d;
				for (int k = 2; k > 0 && best[k] < best[k - 1]; k--) {
					double tmp = best[k];
					best[k] = best[k - 1];
					best[k - 1] = tmp;
				}
			}
		}
		double mean = (sqrt(best[0]) + sqrt(best[1]) + sqrt(best[2])) / 3;
		if (!(mean > 1e-4))
			mean = 1e-4;
		for (int k = 0; k < 3; k++)
			out->log_scales[3 * i + k] = (float)log(mean);
	}
	out->background[0] = out->background[1] = out->background[2] = 0.5f;
	free(perm);
}
