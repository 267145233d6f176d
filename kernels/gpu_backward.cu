/* gpu_backward.cu: the CUDA backward pass of splat-train and the densification statistics.
 *   gpu_blend_backward_kernel:   per tile (16×16 threads, one per pixel), the sorted list walked
 *                                back to front from the block's furthest last contributor, in
 *                                shared-memory batches; each pixel restores T from its final T,
 *                                and a warp sums its 32 pixels' contributions to a Gaussian's
 *                                2-D gradient (u, v, conic, opacity, rgb) before one lane adds
 *                                them with atomics; ∂L/∂background = Σ T_final·∂L/∂pixel;
 *   gpu_project_backward_kernel: per Gaussian, the 2-D gradients through the projection (conic →
 *                                Σ' → Σ → scale, quaternion; (u, v) → μ) and the SH colour (→
 *                                coefficients, → μ through the view direction), and the
 *                                opacity sigmoid; every gradient of Gaussians 0..N-1 is written;
 *   gpu_densify_stats_kernel:    per visible Gaussian, |(∂L/∂u·W/2, ∂L/∂v·H/2)|, count, radius.
 * Mirrors cpu_blend_backward_tile and cpu_project_backward_worker of target/cpu_backend.c.
 * The atomics make the summation order, and so the last bits, vary between runs. */
#include "gpu_backend.cuh"

GPU_STAMP_FILE(backward)

#define GPU_BLEND_THREADS (SPLAT_TILE * SPLAT_TILE)
#define GPU_FULL_MASK 0xffffffffu

static __device__ __forceinline__ float gpu_warp_sum(float v)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(GPU_FULL_MASK, v, off);
	return v;   /* complete in lane 0 */
}

__global__ void __launch_bounds__(GPU_BLEND_THREADS)
gpu_blend_backward_kernel(const uint2 *__restrict__ tile_range, const uint32_t *__restrict__ sorted_vals,
			  const float2 *__restrict__ uv, const float4 *__restrict__ conic_opacity,
			  const float *__restrict__ rgb, const float *__restrict__ background, int width, int height,
			  const float *__restrict__ t_final, const uint32_t *__restrict__ n_contrib,
			  const float *__restrict__ dl_dimage, float *g2, float *bg_grad)
{
	GPU_STAMP_KERNEL(gpu_blend_backward_kernel);
	__shared__ uint32_t s_id[GPU_BLEND_THREADS];
	__shared__ float2 s_uv[GPU_BLEND_THREADS];
	__shared__ float4 s_co[GPU_BLEND_THREADS];
	__shared__ float s_rgb[3 * GPU_BLEND_THREADS];
	__shared__ float s_bg[3];
	__shared__ uint32_t s_max_last;

	int tile = blockIdx.y * gridDim.x + blockIdx.x;
	int tid = threadIdx.y * SPLAT_TILE + threadIdx.x, lane = tid & 31;
	int x = blockIdx.x * SPLAT_TILE + threadIdx.x, y = blockIdx.y * SPLAT_TILE + threadIdx.y;
	int inside = x < width && y < height;
	uint2 range = tile_range[tile];
	size_t hw = (size_t)width * height, pix = (size_t)y * width + x;
	float px = x + 0.5f, py = y + 0.5f, tf = 0, T, accum[3] = { 0, 0, 0 }, gpix[3] = { 0, 0, 0 }, bg_dot = 0;
	uint32_t last = 0;

	if (tid == 0) {
		s_max_last = 0;
		s_bg[0] = s_bg[1] = s_bg[2] = 0;
	}
	if (inside) {
		tf = t_final[pix];
		last = n_contrib[pix];
		for (int ch = 0; ch < 3; ch++) {
			gpix[ch] = dl_dimage[ch * hw + pix];
			bg_dot += background[ch] * gpix[ch];
		}
	}
	T = tf;
	__syncthreads();
	/* ∂L/∂background, and how far back this block must walk. */
	for (int ch = 0; ch < 3; ch++) {
		float v = gpu_warp_sum(tf * gpix[ch]);
		if (lane == 0)
			atomicAdd(&s_bg[ch], v);
	}
	uint32_t warp_last = __reduce_max_sync(GPU_FULL_MASK, last);
	if (lane == 0)
		atomicMax(&s_max_last, warp_last);
	__syncthreads();
	if (tid < 3)
		atomicAdd(&bg_grad[tid], s_bg[tid]);
	uint32_t max_last = s_max_last;

	for (uint32_t base = 0; base < max_last; base += GPU_BLEND_THREADS) {
		__syncthreads();   /* every thread is done with the previous batch */
		if (base + tid < max_last) {
			uint32_t g = sorted_vals[range.x + (max_last - 1 - (base + tid))];
			s_id[tid] = g;
			s_uv[tid] = uv[g];
			s_co[tid] = conic_opacity[g];
			for (int ch = 0; ch < 3; ch++)
				s_rgb[3 * tid + ch] = rgb[3 * g + ch];
		}
		__syncthreads();
		uint32_t batch = min((uint32_t)GPU_BLEND_THREADS, max_last - base);
		for (uint32_t j = 0; j < batch; j++) {
			uint32_t k = max_last - 1 - (base + j);   /* list entry, from the tile's start */
			float out[GPU_G2_N];
			int has = 0;
			if (k < last) {
				float4 co = s_co[j];
				float power, dx, dy;
				float alpha = gpu_alpha(s_uv[j].x, s_uv[j].y, co.x, co.y, co.z, co.w, px, py, &power, &dx, &dy);
				if (alpha != 0) {
					gpu_blend_backward_step(alpha, power, dx, dy, co.x, co.y, co.z, co.w, &s_rgb[3 * j], gpix,
								tf, bg_dot, &T, accum, out);
					has = 1;
				}
			}
			/* the whole warp reaches this point for every j: the shuffles see all lanes */
			if (!__any_sync(GPU_FULL_MASK, has))
				continue;
			for (int q = 0; q < GPU_G2_N; q++)
				out[q] = gpu_warp_sum(has ? out[q] : 0.0f);
			if (lane == 0) {
				float *dst = g2 + (size_t)GPU_G2_N * s_id[j];
				for (int q = 0; q < GPU_G2_N; q++)
					atomicAdd(dst + q, out[q]);
			}
		}
	}
}

__global__ void gpu_project_backward_kernel(size_t n, const float *__restrict__ means, const float *__restrict__ log_scales,
					    const float *__restrict__ quats, const float *__restrict__ sh,
					    const struct splat_camera *__restrict__ cam, int sh_degree,
					    const unsigned long long *__restrict__ tiles_touched,
					    const float4 *__restrict__ conic_opacity, const unsigned char *__restrict__ clamped,
					    const float *__restrict__ g2, float *d_means, float *d_log_scales, float *d_quats,
					    float *d_opacity_logits, float *d_sh)
{
	GPU_STAMP_KERNEL(gpu_project_backward_kernel);
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	float dm[3] = { 0, 0, 0 }, dls[3] = { 0, 0, 0 }, dq[4] = { 0, 0, 0, 0 }, dop = 0;

	if (i >= n)
		return;
	if (tiles_touched[i]) {
		float d[GPU_G2_N];
		for (int q = 0; q < GPU_G2_N; q++)
			d[q] = g2[GPU_G2_N * i + q];
		gpu_project_backward(means + 3 * i, log_scales + 3 * i, quats + 4 * i, cam, d[GPU_G2_U], d[GPU_G2_V],
				     d + GPU_G2_A, dm, dls, dq);
		gpu_sh_color_backward(means + 3 * i, sh + 48 * i, sh_degree, cam, d + GPU_G2_R, clamped + 3 * i,
				      d_sh + 48 * i, dm);
		float o = conic_opacity[i].w;
		dop = d[GPU_G2_OPACITY] * o * (1 - o);
	} else {
		for (int k = 0; k < 48; k++)
			d_sh[48 * i + k] = 0;
	}
	for (int k = 0; k < 3; k++) {
		d_means[3 * i + k] = dm[k];
		d_log_scales[3 * i + k] = dls[k];
	}
	for (int k = 0; k < 4; k++)
		d_quats[4 * i + k] = dq[k];
	d_opacity_logits[i] = dop;
}

__global__ void gpu_densify_stats_kernel(size_t n, int width, int height,
					 const unsigned long long *__restrict__ tiles_touched,
					 const float *__restrict__ radius, const float *__restrict__ g2, float *ds_grad,
					 int32_t *ds_count, float *ds_radius)
{
	GPU_STAMP_KERNEL(gpu_densify_stats_kernel);
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i >= n || !tiles_touched[i])
		return;
	float nx = g2[GPU_G2_N * i + GPU_G2_U] * 0.5f * width, ny = g2[GPU_G2_N * i + GPU_G2_V] * 0.5f * height;
	ds_grad[i] += sqrtf(nx * nx + ny * ny);
	ds_count[i]++;
	if (radius[i] > ds_radius[i])
		ds_radius[i] = radius[i];
}

int gpu_backward_pass(struct gpu_ctx *ctx, const float *dl_dimage)
{
	int err = 0;
	size_t n = ctx->count;
	struct gpu_groups p = gpu_groups_of(ctx->params, ctx->cap), g = gpu_groups_of(ctx->grads, ctx->cap);
	const struct splat_camera *cam = ctx->cams + ctx->view;
	dim3 tile_grid((unsigned)ctx->tiles_x, (unsigned)ctx->tiles_y), tile_block(SPLAT_TILE, SPLAT_TILE);

	GPU_PHASE_BEGIN(ctx, "backward");
	if (!ctx->rendered) {
		err = splat_error(EINVAL, "cuda backend: backward before any render");
		goto out;
	}
	if (dl_dimage) {
		GPU_CHECK(cudaMemcpyAsync(ctx->dl_dimage, dl_dimage, 3 * ctx->hw * sizeof(float), cudaMemcpyHostToDevice,
					  ctx->stream));
	} else if (!ctx->have_loss_grad) {
		err = splat_error(EINVAL, "cuda backend: backward without ∂L/∂image: call loss_grad first");
		goto out;
	}
	GPU_CHECK(cudaMemsetAsync(ctx->g2, 0, GPU_G2_N * n * sizeof(float), ctx->stream));
	GPU_CHECK(cudaMemsetAsync(g.background, 0, 3 * sizeof(float), ctx->stream));
	GPU_TIME_KERNEL_BEGIN(ctx, gpu_blend_backward_kernel);
	gpu_blend_backward_kernel<<<tile_grid, tile_block, 0, ctx->stream>>>(
		ctx->tile_range, ctx->sorted_vals, ctx->uv, ctx->conic_opacity, ctx->rgb, p.background, ctx->width,
		ctx->height, ctx->t_final, ctx->n_contrib, ctx->dl_dimage, ctx->g2, g.background);
	GPU_TIME_END(ctx);
	GPU_CHECK_LAUNCH("gpu_blend_backward_kernel");
	if (n > 0) {
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_project_backward_kernel);
		gpu_project_backward_kernel<<<gpu_blocks(n, 128), 128, 0, ctx->stream>>>(
			n, p.means, p.log_scales, p.quats, p.sh, cam, ctx->sh_degree, ctx->tiles_touched, ctx->conic_opacity,
			ctx->clamped, ctx->g2, g.means, g.log_scales, g.quats, g.opacity_logits, g.sh);
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_project_backward_kernel");
	}
	ctx->grads_count = n;
	GPU_PHASE_END(ctx);
	GPU_PHASE_BEGIN(ctx, "densify");
	if (n > 0) {
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_densify_stats_kernel);
		gpu_densify_stats_kernel<<<gpu_blocks(n, 256), 256, 0, ctx->stream>>>(
			n, ctx->width, ctx->height, ctx->tiles_touched, ctx->radius, ctx->g2, ctx->ds_grad, ctx->ds_count,
			ctx->ds_radius);
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_densify_stats_kernel");
	}
out:
	/* closes whichever range is open: "backward", or "densify" once the stats started */
	GPU_PHASE_END(ctx);
	return err;
}
