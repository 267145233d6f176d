/* gpu_render.cu: the CUDA forward pass of splat-train: preprocess (projection, SH colour,
 * opacity, tiles touched) → inclusive scan of tiles touched (CUB) → one (tile, depth) key per
 * tile-Gaussian pair → stable radix sort of the keys (CUB) → per-tile ranges → per-tile blend,
 * one 16×16 thread block per tile, Gaussians staged through shared memory in batches.
 * Mirrors cpu_render / cpu_bin_and_sort / cpu_blend_forward_tile of target/cpu_backend.c. */
#include "gpu_backend.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

GPU_STAMP_FILE(render)

#define GPU_BLEND_THREADS (SPLAT_TILE * SPLAT_TILE)

/* One thread per Gaussian: project it; invisible ones touch no tile and get radius 0. */
__global__ void gpu_preprocess_kernel(size_t n, const float *__restrict__ means, const float *__restrict__ log_scales,
				      const float *__restrict__ quats, const float *__restrict__ opacity_logits,
				      const float *__restrict__ sh, const struct splat_camera *__restrict__ cam,
				      int sh_degree, float2 *uv, float *depth, float4 *conic_opacity, float *radius,
				      int4 *rect, float *rgb, unsigned char *clamped, unsigned long long *tiles_touched)
{
	GPU_STAMP_KERNEL(gpu_preprocess_kernel);
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	struct gpu_proj pr;

	if (i >= n)
		return;
	tiles_touched[i] = 0;
	if (!gpu_project(means + 3 * i, log_scales + 3 * i, quats + 4 * i, cam, &pr)) {
		radius[i] = 0;
		return;
	}
	float c[3];
	unsigned char cl[3];
	gpu_sh_color(means + 3 * i, sh + 48 * i, sh_degree, cam, c, cl);
	for (int ch = 0; ch < 3; ch++) {
		rgb[3 * i + ch] = c[ch];
		clamped[3 * i + ch] = cl[ch];
	}
	uv[i] = make_float2(pr.u, pr.v);
	depth[i] = pr.depth;
	conic_opacity[i] = make_float4(pr.conic[0], pr.conic[1], pr.conic[2], gpu_sigmoid(opacity_logits[i]));
	radius[i] = pr.radius;
	rect[i] = make_int4(pr.rect[0], pr.rect[1], pr.rect[2], pr.rect[3]);
	tiles_touched[i] = (unsigned long long)((pr.rect[2] - pr.rect[0]) * (pr.rect[3] - pr.rect[1]));
}

/* One thread per Gaussian: write its pairs, tile by tile in row-major order, from its
 * exclusive offset. Pairs leave in Gaussian-index order, so the stable sort keeps equal depths
 * in index order. */
__global__ void gpu_duplicate_kernel(size_t n, const unsigned long long *__restrict__ tiles_touched,
				     const unsigned long long *__restrict__ offsets, const float *__restrict__ depth,
				     const int4 *__restrict__ rect, int tiles_x, uint64_t *keys, uint32_t *vals)
{
	GPU_STAMP_KERNEL(gpu_duplicate_kernel);
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i >= n || !tiles_touched[i])
		return;
	unsigned long long k = i == 0 ? 0 : offsets[i - 1];
	int4 r = rect[i];
	float d = depth[i];
	for (int ty = r.y; ty < r.w; ty++)
		for (int tx = r.x; tx < r.z; tx++, k++) {
			keys[k] = gpu_sort_key((uint32_t)(ty * tiles_x + tx), d);
			vals[k] = (uint32_t)i;
		}
}

/* One thread per sorted pair: a tile's range starts where the tile index changes. Tiles no
 * pair names keep the [0, 0) the caller cleared. */
__global__ void gpu_tile_ranges_kernel(size_t pairs, const uint64_t *__restrict__ keys, uint2 *tile_range)
{
	GPU_STAMP_KERNEL(gpu_tile_ranges_kernel);
	size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (k >= pairs)
		return;
	uint32_t tile = (uint32_t)(keys[k] >> 32);
	if (k == 0 || tile != (uint32_t)(keys[k - 1] >> 32))
		tile_range[tile].x = (uint32_t)k;
	if (k + 1 == pairs || tile != (uint32_t)(keys[k + 1] >> 32))
		tile_range[tile].y = (uint32_t)(k + 1);
}

/* One 16×16 block per tile, one thread per pixel: front-to-back blend of the tile's list,
 * loaded 256 Gaussians at a time into shared memory. A pixel stops before the Gaussian that
 * would take T below SPLAT_T_MIN; the block stops when every pixel has. Keeps the final T and
 * the count of list entries up to the last contributor for the backward pass. */
__global__ void __launch_bounds__(GPU_BLEND_THREADS)
gpu_blend_forward_kernel(const uint2 *__restrict__ tile_range, const uint32_t *__restrict__ sorted_vals,
			 const float2 *__restrict__ uv, const float4 *__restrict__ conic_opacity,
			 const float *__restrict__ rgb, const float *__restrict__ background, int width, int height,
			 float *image, float *t_final, uint32_t *n_contrib)
{
	GPU_STAMP_KERNEL(gpu_blend_forward_kernel);
	__shared__ float2 s_uv[GPU_BLEND_THREADS];
	__shared__ float4 s_co[GPU_BLEND_THREADS];
	__shared__ float s_rgb[3 * GPU_BLEND_THREADS];

	int tile = blockIdx.y * gridDim.x + blockIdx.x;
	int tid = threadIdx.y * SPLAT_TILE + threadIdx.x;
	int x = blockIdx.x * SPLAT_TILE + threadIdx.x, y = blockIdx.y * SPLAT_TILE + threadIdx.y;
	int inside = x < width && y < height;
	uint2 range = tile_range[tile];
	int n = (int)(range.y - range.x);
	float px = x + 0.5f, py = y + 0.5f, T = 1, c[3] = { 0, 0, 0 };
	uint32_t last = 0;
	int done = !inside;

	for (int base = 0; base < n; base += GPU_BLEND_THREADS) {
		/* also the barrier before the previous batch's slots are overwritten */
		if (__syncthreads_count(done) == GPU_BLEND_THREADS)
			break;
		if (base + tid < n) {
			uint32_t g = sorted_vals[range.x + base + tid];
			s_uv[tid] = uv[g];
			s_co[tid] = conic_opacity[g];
			for (int ch = 0; ch < 3; ch++)
				s_rgb[3 * tid + ch] = rgb[3 * g + ch];
		}
		__syncthreads();
		int batch = min(GPU_BLEND_THREADS, n - base);
		for (int j = 0; !done && j < batch; j++) {
			float4 co = s_co[j];
			float power, dx, dy;
			float alpha = gpu_alpha(s_uv[j].x, s_uv[j].y, co.x, co.y, co.z, co.w, px, py, &power, &dx, &dy);
			if (alpha == 0)
				continue;
			float next_t = T * (1 - alpha);
			if (next_t < (float)SPLAT_T_MIN) {
				done = 1;
				break;
			}
			for (int ch = 0; ch < 3; ch++)
				c[ch] += alpha * T * s_rgb[3 * j + ch];
			T = next_t;
			last = (uint32_t)(base + j + 1);
		}
	}
	if (!inside)
		return;
	size_t hw = (size_t)width * height, pix = (size_t)y * width + x;
	t_final[pix] = T;
	n_contrib[pix] = last;
	for (int ch = 0; ch < 3; ch++)
		image[ch * hw + pix] = c[ch] + T * background[ch];
}

size_t gpu_scan_temp_bytes(size_t cap, int *err)
{
	size_t bytes = 0;
	cudaError_t status = cub::DeviceScan::InclusiveSum(NULL, bytes, (const unsigned long long *)NULL,
							   (unsigned long long *)NULL, (int)cap);

	*err = status == cudaSuccess ? 0 : gpu_report("cub::DeviceScan::InclusiveSum (size query)", status);
	return bytes;
}

/* Make room for `pairs` tile-Gaussian pairs (and the sort's temporary storage); grows by half
 * again, so training with a growing model reallocates a few times at most. */
static int gpu_reserve_pairs(struct gpu_ctx *ctx, size_t pairs)
{
	int err = 0;
	size_t sort_bytes = 0, cap = pairs + pairs / 2;
	cub::DoubleBuffer<uint64_t> keys(NULL, NULL);
	cub::DoubleBuffer<uint32_t> vals(NULL, NULL);

	if (pairs > ctx->pair_cap) {
		GPU_CHECK(cudaStreamSynchronize(ctx->stream));
		for (int b = 0; b < 2; b++) {
			GPU_CHECK(cudaFree(ctx->keys[b]));
			GPU_CHECK(cudaFree(ctx->vals[b]));
			ctx->keys[b] = NULL;
			ctx->vals[b] = NULL;
		}
		ctx->pair_cap = 0;
		for (int b = 0; b < 2; b++) {
			GPU_CHECK(cudaMalloc((void **)&ctx->keys[b], cap * sizeof(uint64_t)));
			GPU_CHECK(cudaMalloc((void **)&ctx->vals[b], cap * sizeof(uint32_t)));
		}
		ctx->pair_cap = cap;
	}
	GPU_CHECK(cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, keys, vals, (int)ctx->pair_cap, 0,
						  32 + ctx->tile_bits, ctx->stream));
	if (sort_bytes > ctx->cub_temp_bytes) {
		GPU_CHECK(cudaStreamSynchronize(ctx->stream));
		GPU_CHECK(cudaFree(ctx->cub_temp));
		ctx->cub_temp = NULL;
		ctx->cub_temp_bytes = 0;
		GPU_CHECK(cudaMalloc(&ctx->cub_temp, sort_bytes));
		ctx->cub_temp_bytes = sort_bytes;
	}
out:
	return err;
}

int gpu_render_view(struct gpu_ctx *ctx, size_t view, int sh_degree)
{
	int err = 0;
	size_t n = ctx->count, temp_bytes;
	struct gpu_groups p = gpu_groups_of(ctx->params, ctx->cap);
	const struct splat_camera *cam = ctx->cams + view;
	dim3 tile_grid((unsigned)ctx->tiles_x, (unsigned)ctx->tiles_y), tile_block(SPLAT_TILE, SPLAT_TILE);
	cub::DoubleBuffer<uint64_t> keys(ctx->keys[0], ctx->keys[1]);
	cub::DoubleBuffer<uint32_t> vals(ctx->vals[0], ctx->vals[1]);

	GPU_PHASE_BEGIN(ctx, "forward");
	if (view >= ctx->n_views) {
		err = splat_error(EINVAL, "cuda backend: render of view %zu, but only %zu views were set", view,
				  ctx->n_views);
		goto out;
	}
	ctx->rendered = 0;
	ctx->have_loss_grad = 0;
	ctx->view = view;
	ctx->sh_degree = sh_degree < 0 ? 0 : sh_degree > SPLAT_MAX_SH_DEGREE ? SPLAT_MAX_SH_DEGREE : sh_degree;
	ctx->pairs = 0;
	if (n > 0) {
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_preprocess_kernel);
		gpu_preprocess_kernel<<<gpu_blocks(n, 128), 128, 0, ctx->stream>>>(
			n, p.means, p.log_scales, p.quats, p.opacity_logits, p.sh, cam, ctx->sh_degree, ctx->uv,
			ctx->depth, ctx->conic_opacity, ctx->radius, ctx->rect, ctx->rgb, ctx->clamped, ctx->tiles_touched);
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_preprocess_kernel");
		temp_bytes = ctx->cub_temp_bytes;
		GPU_TIME_CUB_BEGIN(ctx, "cub::DeviceScan::InclusiveSum");
		GPU_CHECK(cub::DeviceScan::InclusiveSum(ctx->cub_temp, temp_bytes, ctx->tiles_touched, ctx->tile_offsets,
							(int)n, ctx->stream));
		GPU_TIME_END(ctx);
		/* The one synchronisation of an iteration: the pair count sizes the sort. */
		GPU_CHECK(cudaMemcpyAsync(ctx->host_pairs, ctx->tile_offsets + n - 1, sizeof(*ctx->host_pairs),
					  cudaMemcpyDeviceToHost, ctx->stream));
		GPU_CHECK(cudaStreamSynchronize(ctx->stream));
		ctx->pairs = (size_t)*ctx->host_pairs;
	}
	if (ctx->pairs > (size_t)INT32_MAX) {
		err = splat_error(E2BIG, "cuda backend: %zu tile-Gaussian pairs exceed the sort's limit of %d; "
				  "lower --max-gaussians or the resolution", ctx->pairs, INT32_MAX);
		goto out;
	}
	if ((err = gpu_reserve_pairs(ctx, ctx->pairs)))
		goto out;
	GPU_CHECK(cudaMemsetAsync(ctx->tile_range, 0, (size_t)ctx->tiles * sizeof(uint2), ctx->stream));
	if (ctx->pairs > 0) {
		keys = cub::DoubleBuffer<uint64_t>(ctx->keys[0], ctx->keys[1]);
		vals = cub::DoubleBuffer<uint32_t>(ctx->vals[0], ctx->vals[1]);
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_duplicate_kernel);
		gpu_duplicate_kernel<<<gpu_blocks(n, 128), 128, 0, ctx->stream>>>(
			n, ctx->tiles_touched, ctx->tile_offsets, ctx->depth, ctx->rect, ctx->tiles_x, keys.Current(),
			vals.Current());
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_duplicate_kernel");
		temp_bytes = ctx->cub_temp_bytes;
		/* CUB's radix sort is stable: equal (tile, depth) keys keep Gaussian-index order. */
		GPU_TIME_CUB_BEGIN(ctx, "cub::DeviceRadixSort::SortPairs");
		GPU_CHECK(cub::DeviceRadixSort::SortPairs(ctx->cub_temp, temp_bytes, keys, vals, (int)ctx->pairs, 0,
							  32 + ctx->tile_bits, ctx->stream));
		GPU_TIME_END(ctx);
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_tile_ranges_kernel);
		gpu_tile_ranges_kernel<<<gpu_blocks(ctx->pairs, 256), 256, 0, ctx->stream>>>(ctx->pairs, keys.Current(),
											    ctx->tile_range);
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_tile_ranges_kernel");
		ctx->sorted_vals = vals.Current();
	} else {
		ctx->sorted_vals = ctx->vals[0];
	}
	GPU_TIME_KERNEL_BEGIN(ctx, gpu_blend_forward_kernel);
	gpu_blend_forward_kernel<<<tile_grid, tile_block, 0, ctx->stream>>>(
		ctx->tile_range, ctx->sorted_vals, ctx->uv, ctx->conic_opacity, ctx->rgb, p.background, ctx->width,
		ctx->height, ctx->image, ctx->t_final, ctx->n_contrib);
	GPU_TIME_END(ctx);
	GPU_CHECK_LAUNCH("gpu_blend_forward_kernel");
	ctx->rendered = 1;
out:
	GPU_PHASE_END(ctx);
	return err;
}
