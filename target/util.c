/* util.c: splat-train's messages, allocation, clock, parameter arrays and the counter-based
 * random numbers that make the scene and densification reproducible on every backend. */
#include "splat.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int splat_error(int err, const char *fmt, ...)
{
	va_list ap;

	fputs("splat-train: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -err;
}

void splat_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("splat-train: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void *splat_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "splat-train: out of memory (malloc of %zu bytes)\n", n);
		exit(1);
	}
	return p;
}

void *splat_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "splat-train: out of memory (calloc of %zu × %zu bytes)\n", n, size);
		exit(1);
	}
	return p;
}

double splat_now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int splat_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

void splat_camera_set_pose(struct splat_camera *c, const double right[3], const double down[3],
			   const double fwd[3], const double pos[3])
{
	for (int k = 0; k < 3; k++) {
		c->rotation[k] = (float)right[k];
		c->rotation[3 + k] = (float)down[k];
		c->rotation[6 + k] = (float)fwd[k];
		c->centre[k] = (float)pos[k];
	}
	for (int r = 0; r < 3; r++)
		c->translation[r] = -(c->rotation[3 * r] * c->centre[0] + c->rotation[3 * r + 1] * c->centre[1] +
				      c->rotation[3 * r + 2] * c->centre[2]);
}

void splat_params_alloc(struct splat_params *p, size_t capacity)
{
	memset(p, 0, sizeof(*p));
	p->capacity = capacity;
	p->means = splat_calloc(3 * capacity, sizeof(float));
	p->log_scales = splat_calloc(3 * capacity, sizeof(float));
	p->quats = splat_calloc(4 * capacity, sizeof(float));
	p->opacity_logits = splat_calloc(capacity, sizeof(float));
	p->sh = splat_calloc(capacity * SPLAT_SH_COEFFS * 3, sizeof(float));
}

void splat_params_free(struct splat_params *p)
{
	free(p->means);
	free(p->log_scales);
	free(p->quats);
	free(p->opacity_logits);
	free(p->sh);
	memset(p, 0, sizeof(*p));
}

void splat_params_copy_one(struct splat_params *dst, size_t d, const struct splat_params *src,
			   size_t s)
{
	memcpy(dst->means + 3 * d, src->means + 3 * s, 3 * sizeof(float));
	memcpy(dst->log_scales + 3 * d, src->log_scales + 3 * s, 3 * sizeof(float));
	memcpy(dst->quats + 4 * d, src->quats + 4 * s, 4 * sizeof(float));
	dst->opacity_logits[d] = src->opacity_logits[s];
	memcpy(dst->sh + d * SPLAT_SH_COEFFS * 3, src->sh + s * SPLAT_SH_COEFFS * 3,
	       SPLAT_SH_COEFFS * 3 * sizeof(float));
}

void splat_params_copy(struct splat_params *dst, const struct splat_params *src)
{
	size_t n = src->count;

	memcpy(dst->means, src->means, 3 * n * sizeof(float));
	memcpy(dst->log_scales, src->log_scales, 3 * n * sizeof(float));
	memcpy(dst->quats, src->quats, 4 * n * sizeof(float));
	memcpy(dst->opacity_logits, src->opacity_logits, n * sizeof(float));
	memcpy(dst->sh, src->sh, n * SPLAT_SH_COEFFS * 3 * sizeof(float));
	memcpy(dst->background, src->background, sizeof(dst->background));
	dst->count = n;
}

/* splitmix64's finaliser; the counter mixes seed, stream and index with distinct odd constants
 * so nearby (stream, index) pairs land far apart. */
uint64_t splat_rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ (stream + 1) * 0xc2b2ae3d27d4eb4full ^
		     (index + 1) * 0x165667b19e3779f9ull;

	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double splat_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
	return (splat_rng_u64(seed, stream, index) >> 11) * (1.0 / 9007199254740992.0);
}

double splat_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
	double u1 = splat_rng_uniform(seed, stream, 2 * index);
	double u2 = splat_rng_uniform(seed, stream, 2 * index + 1);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double splat_psnr(const float *img, const float *gt, size_t n)
{
	double se = 0;

	for (size_t i = 0; i < n; i++) {
		double a = img[i] < 0 ? 0 : img[i] > 1 ? 1 : img[i];
		double b = gt[i] < 0 ? 0 : gt[i] > 1 ? 1 : gt[i];

		se += (a - b) * (a - b);
	}
	if (se <= 0)
		return 200.0; /* identical: report a finite ceiling rather than infinity */
	return 10.0 * log10((double)n / se);
}
