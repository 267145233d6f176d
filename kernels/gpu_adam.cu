/* gpu_adam.cu: the CUDA optimizer of splat-train: one Adam step over every parameter group in
 * a single launch (one thread per scalar, the group and its learning rate found from the
 * scalar's index), and the re-mapping of the Adam moments when set_params replaces the
 * Gaussians (densification keeps a parent's moments for the Gaussian that continues it).
 * Mirrors cpu_adam_worker and cpu_remap_moments of target/cpu_backend.c. */
#include "gpu_backend.cuh"

GPU_STAMP_FILE(adam)

/* Groups in block order: means, log_scales, quats, opacity_logits, sh, then the background. */
#define GPU_GROUPS 5
#define GPU_GROUP_SH 4
#define GPU_GROUP_BACKGROUND 5

/* Locate scalar e of the first n Gaussians' parameters (group after group, then the 3
 * background values) inside a block of capacity cap: returns the group, the Gaussian i and
 * the index j within its group entry, and the block offset of the scalar. */
static __device__ __forceinline__ int gpu_locate(size_t e, size_t n, size_t cap, size_t *i, int *j, size_t *at)
{
	const int width[GPU_GROUPS] = { 3, 3, 4, 1, 48 };
	const int base[GPU_GROUPS] = { 0, 3, 6, 10, 11 };   /* × cap */
	size_t start = 0;

	for (int grp = 0; grp < GPU_GROUPS; grp++) {
		size_t len = (size_t)width[grp] * n;
		if (e < start + len) {
			size_t local = e - start;
			*i = local / width[grp];
			*j = (int)(local % width[grp]);
			*at = (size_t)base[grp] * cap + local;
			return grp;
		}
		start += len;
	}
	*i = 0;
	*j = (int)(e - start);
	*at = 59 * cap + (size_t)*j;
	return GPU_GROUP_BACKGROUND;
}

struct gpu_adam_rates {
	float group[GPU_GROUPS + 1];   /* means, log_scales, quats, opacity, sh rest, background */
	float sh_dc;
};

__global__ void gpu_adam_kernel(size_t n, size_t cap, struct gpu_adam_rates lr, float bc1, float bc2,
				float *params, float *m, float *v, const float *__restrict__ grads)
{
	GPU_STAMP_KERNEL(gpu_adam_kernel);
	size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x, i, at;
	int j;

	if (e >= GPU_FLOATS_PER_GAUSSIAN * n + 3)
		return;
	int grp = gpu_locate(e, n, cap, &i, &j, &at);
	float rate = grp == GPU_GROUP_SH && j < 3 ? lr.sh_dc : lr.group[grp];
	float p = params[at], mm = m[at], vv = v[at];
	gpu_adam_update(&p, &mm, &vv, grads[at], rate, bc1, bc2);
	params[at] = p;
	m[at] = mm;
	v[at] = vv;
}

/* New moments of Gaussian i: those of old Gaussian src[i] when that exists, else zero. */
__global__ void gpu_remap_moments_kernel(size_t n, size_t old_count, size_t cap, const int32_t *__restrict__ src,
					 const float *__restrict__ m_old, const float *__restrict__ v_old, float *m_new,
					 float *v_new)
{
	GPU_STAMP_KERNEL(gpu_remap_moments_kernel);
	const int width[GPU_GROUPS] = { 3, 3, 4, 1, 48 };
	size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x, i, at;
	int j;

	if (e >= GPU_FLOATS_PER_GAUSSIAN * n)
		return;
	int grp = gpu_locate(e, n, cap, &i, &j, &at);
	int32_t s = src[i];
	if (s >= 0 && (size_t)s < old_count) {
		size_t from = at - i * width[grp] + (size_t)s * width[grp];   /* same entry of Gaussian s */
		m_new[at] = m_old[from];
		v_new[at] = v_old[from];
	} else {
		m_new[at] = 0;
		v_new[at] = 0;
	}
}

int gpu_adam(struct gpu_ctx *ctx, const struct splat_adam_config *cfg)
{
	int err = 0;
	size_t scalars = GPU_FLOATS_PER_GAUSSIAN * ctx->count + 3;
	struct gpu_adam_rates lr;
	float bc1, bc2;

	GPU_PHASE_BEGIN(ctx, "optimizer");
	if (cfg->step < 1) {
		err = splat_error(EINVAL, "cuda backend: Adam step %d; steps count from 1", cfg->step);
		goto out;
	}
	if (ctx->grads_count != ctx->count) {
		err = splat_error(EINVAL, "cuda backend: adam_step without the gradients of the current Gaussians "
				  "(call backward first)");
		goto out;
	}
	lr.group[0] = cfg->lr_means;
	lr.group[1] = cfg->lr_log_scales;
	lr.group[2] = cfg->lr_quats;
	lr.group[3] = cfg->lr_opacity;
	lr.group[GPU_GROUP_SH] = cfg->lr_sh_rest;
	lr.group[GPU_GROUP_BACKGROUND] = cfg->lr_background;
	lr.sh_dc = cfg->lr_sh_dc;
	gpu_adam_bias(cfg->step, &bc1, &bc2);
	GPU_TIME_KERNEL_BEGIN(ctx, gpu_adam_kernel);
	gpu_adam_kernel<<<gpu_blocks(scalars, 256), 256, 0, ctx->stream>>>(ctx->count, ctx->cap, lr, bc1, bc2, ctx->params,
									   ctx->adam_m, ctx->adam_v, ctx->grads);
	GPU_TIME_END(ctx);
	GPU_CHECK_LAUNCH("gpu_adam_kernel");
out:
	GPU_PHASE_END(ctx);
	return err;
}

int gpu_remap_moments(struct gpu_ctx *ctx, size_t old_count, size_t new_count, const int32_t *moment_source)
{
	int err = 0;
	size_t bytes = GPU_BLOCK_FLOATS(ctx->cap) * sizeof(float), scalars = GPU_FLOATS_PER_GAUSSIAN * new_count;
	size_t bg = 59 * ctx->cap;
	float *t;

	if (!moment_source) {
		GPU_CHECK(cudaMemsetAsync(ctx->adam_m, 0, bytes, ctx->stream));
		GPU_CHECK(cudaMemsetAsync(ctx->adam_v, 0, bytes, ctx->stream));
		goto out;
	}
	if (new_count > 0) {
		GPU_CHECK(cudaMemcpyAsync(ctx->moment_source, moment_source, new_count * sizeof(int32_t),
					  cudaMemcpyHostToDevice, ctx->stream));
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_remap_moments_kernel);
		gpu_remap_moments_kernel<<<gpu_blocks(scalars, 256), 256, 0, ctx->stream>>>(
			new_count, old_count, ctx->cap, ctx->moment_source, ctx->adam_m, ctx->adam_v, ctx->adam_m_spare,
			ctx->adam_v_spare);
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_remap_moments_kernel");
	}
	/* the background keeps its moments */
	GPU_CHECK(cudaMemcpyAsync(ctx->adam_m_spare + bg, ctx->adam_m + bg, 3 * sizeof(float), cudaMemcpyDeviceToDevice,
				  ctx->stream));
	GPU_CHECK(cudaMemcpyAsync(ctx->adam_v_spare + bg, ctx->adam_v + bg, 3 * sizeof(float), cudaMemcpyDeviceToDevice,
				  ctx->stream));
	t = ctx->adam_m;
	ctx->adam_m = ctx->adam_m_spare;
	ctx->adam_m_spare = t;
	t = ctx->adam_v;
	ctx->adam_v = ctx->adam_v_spare;
	ctx->adam_v_spare = t;
out:
	return err;
}
