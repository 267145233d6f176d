/* densify.c: adaptive density control between iterations, on the host: clone small Gaussians
 * and split large ones where the view-space positional gradient is high, prune transparent
 * (and, after an opacity reset, oversized) ones. A budget keeps the highest-gradient candidates
 * so the Gaussian count is reproducible; new Gaussians start with zero Adam moments. */
#include "splat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DENSIFY_RNG_SPLIT = 100 };

struct densify_candidate {
	size_t index;
	float grad;
};

static int densify_by_grad(const void *a, const void *b)
{
	const struct densify_candidate *x = a, *y = b;

	if (x->grad != y->grad)
		return x->grad > y->grad ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static float densify_max_scale(const struct splat_params *p, size_t i)
{
	float m = p->log_scales[3 * i];

	for (int k = 1; k < 3; k++)
		if (p->log_scales[3 * i + k] > m)
			m = p->log_scales[3 * i + k];
	return expf(m);
}

void densify_apply(const struct densify_config *cfg, struct splat_params *params,
		   const struct splat_densify_stats *stats, int32_t *moment_source,
		   struct densify_result *res)
{
	size_t n = params->count, survivors = 0, n_cand = 0, out = 0;
	unsigned char *action = splat_calloc(n, 1); /* 0 keep, 1 prune, 2 clone, 3 split */
	struct densify_candidate *cand = splat_calloc(n, sizeof(*cand));
	struct splat_params old;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < n; i++) {
		float opacity = 1.0f / (1.0f + expf(-params->opacity_logits[i]));
		float grad = stats->count[i] > 0 ? stats->grad_accum[i] / stats->count[i] : 0;
		int huge = cfg->prune_radius > 0 && (stats->max_radius[i] > cfg->prune_radius ||
						     densify_max_scale(params, i) > 10 * cfg->clone_split_scale);
		if (opacity < cfg->prune_opacity || huge) {
			action[i] = 1;
			res->pruned++;
			continue;
		}
		survivors++;
		if (grad >= cfg->grad_threshold)
			cand[n_cand++] = (struct densify_candidate){ .index = i, .grad = grad };
	}
	size_t room = cfg->max_gaussians > survivors ? cfg->max_gaussians - survivors : 0;
	if (n_cand > room) {
		qsort(cand, n_cand, sizeof(*cand), densify_by_grad);
		n_cand = room;
	}
	for (size_t k = 0; k < n_cand; k++) {
		size_t i = cand[k].index;
		action[i] = densify_max_scale(params, i) <= cfg->clone_split_scale ? 2 : 3;
	}

	splat_params_alloc(&old, n ? n : 1);
	splat_params_copy(&old, params);
	/* survivors in their old order (split parents leave), then clones, then split children */
	for (size_t i = 0; i < n; i++) {
		if (action[i] == 1 || action[i] == 3)
			continue;
		splat_params_copy_one(params, out, &old, i);
		moment_source[out++] = (int32_t)i;
	}
	for (size_t i = 0; i < n; i++) {
		if (action[i] != 2)
			continue;
		splat_params_copy_one(params, out, &old, i);
		moment_source[out++] = -1;
		res->cloned++;
	}
	for (size_t i = 0; i < n; i++) {
		if (action[i] != 3)
			continue;
		float r[9], qn[4], norm = 0;
		for (int k = 0; k < 4; k++)
			norm += old.quats[4 * i + k] * old.quats[4 * i + k];
		norm = sqrtf(norm) > 1e-12f ? sqrtf(norm) : 1e-12f;
		for (int k = 0; k < 4; k++)
			qn[k] = old.quats[4 * i + k] / norm;
		float w = qn[0], x = qn[1], y = qn[2], z = qn[3];
		r[0] = 1 - 2 * (y * y + z * z); r[1] = 2 * (x * y - w * z); r[2] = 2 * (x * z + w * y);
		r[3] = 2 * (x * y + w * z); r[4] = 1 - 2 * (x * x + z * z); r[5] = 2 * (y * z - w * x);
		r[6] = 2 * (x * z - w * y); r[7] = 2 * (y * z + w * x); r[8] = 1 - 2 * (x * x + y * y);
		for (int child = 0; child < 2; child++) {
			float off[3];
			splat_params_copy_one(params, out, &old, i);
			for (int k = 0; k < 3; k++)
				off[k] = expf(old.log_scales[3 * i + k]) *
					 (float)splat_rng_normal(cfg->seed, DENSIFY_RNG_SPLIT + cfg->round, 6 * i + 3 * child + k);
			for (int k = 0; k < 3; k++) {
				params->means[3 * out + k] += r[3 * k] * off[0] + r[3 * k + 1] * off[1] + r[3 * k + 2] * off[2];
				params->log_scales[3 * out + k] -= logf(1.6f);
			}
			moment_source[out++] = -1;
		}
		res->split++;
	}
	params->count = out;
	splat_params_free(&old);
	free(action);
	free(cand);
}
