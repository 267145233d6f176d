/* gpu_loss.cu: the CUDA loss of splat-train, L = 0.8·mean|I - GT| + 0.2·(1 - SSIM), and
 * ∂L/∂I. Two kernels over 16×16 pixel tiles of each channel, each staging its tile plus a
 * 5-pixel zero-padded halo in shared memory and applying the 11×11 Gaussian window as two
 * separable 1-D passes (horizontal, then vertical, as the CPU backend's ssim_pass does):
 *   gpu_ssim_forward_kernel:  moments m_x, m_y, m_xx, m_yy, m_xy → SSIM and its partials
 *                             ∂S/∂m_x, ∂S/∂m_xx, ∂S/∂m_xy (pre-scaled by -0.2/(3HW)), plus
 *                             per-block sums of |x - y| and SSIM for the loss value;
 *   gpu_ssim_backward_kernel: the window over the partials (the symmetric window is its own
 *                             adjoint) → ∂L/∂x = G*p_x + 2x(G*p_xx) + y(G*p_xy) + L1 term.
 * The loss value is reduced (in double, in a fixed order) only when the caller asks for it. */
#include "gpu_backend.cuh"

GPU_STAMP_FILE(loss)

#define GPU_SSIM_HALF (SPLAT_SSIM_WINDOW / 2)
#define GPU_SSIM_SPAN (SPLAT_TILE + 2 * GPU_SSIM_HALF)   /* tile plus halo, per side */
#define GPU_SSIM_THREADS (SPLAT_TILE * SPLAT_TILE)
#define GPU_LOSS_REDUCE_THREADS 256

/* Sum v over the block (GPU_SSIM_THREADS threads) in a fixed order; the result is valid in
 * thread 0. scratch holds one double per warp. */
static __device__ double gpu_block_sum(double v, double *scratch)
{
	int tid = threadIdx.y * blockDim.x + threadIdx.x, lane = tid & 31, warp = tid >> 5;

	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, off);
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	if (tid == 0)
		for (int w = 1; w < GPU_SSIM_THREADS / 32; w++)
			v += scratch[w];
	return v;
}

/* Stage planes[0..n_planes) (each w×h, channel offset applied by the caller) for this block's
 * tile plus halo, zero outside the image. */
static __device__ void gpu_stage_halo(const float *const *planes, int n_planes, float (*dst)[GPU_SSIM_SPAN][GPU_SSIM_SPAN],
				      int width, int height)
{
	int tid = threadIdx.y * SPLAT_TILE + threadIdx.x;
	int x0 = blockIdx.x * SPLAT_TILE - GPU_SSIM_HALF, y0 = blockIdx.y * SPLAT_TILE - GPU_SSIM_HALF;

	for (int i = tid; i < GPU_SSIM_SPAN * GPU_SSIM_SPAN; i += GPU_SSIM_THREADS) {
		int r = i / GPU_SSIM_SPAN, col = i % GPU_SSIM_SPAN, gx = x0 + col, gy = y0 + r;
		int in = gx >= 0 && gx < width && gy >= 0 && gy < height;
		for (int q = 0; q < n_planes; q++)
			dst[q][r][col] = in ? planes[q][(size_t)gy * width + gx] : 0.0f;
	}
}

__global__ void __launch_bounds__(GPU_SSIM_THREADS)
gpu_ssim_forward_kernel(const float *__restrict__ image, const float *__restrict__ gt, int width, int height,
			struct gpu_window win, float partial_scale, float *ssim_partials, double *loss_partials)
{
	GPU_STAMP_KERNEL(gpu_ssim_forward_kernel);
	__shared__ float s_in[2][GPU_SSIM_SPAN][GPU_SSIM_SPAN];      /* x, y with halo */
	__shared__ float s_h[5][GPU_SSIM_SPAN][SPLAT_TILE];          /* horizontal pass of the 5 moments */
	__shared__ double s_red[GPU_SSIM_THREADS / 32];

	size_t hw = (size_t)width * height, off = blockIdx.z * hw;
	const float *planes[2] = { image + off, gt + off };
	int tid = threadIdx.y * SPLAT_TILE + threadIdx.x;

	gpu_stage_halo(planes, 2, s_in, width, height);
	__syncthreads();
	for (int i = tid; i < GPU_SSIM_SPAN * SPLAT_TILE; i += GPU_SSIM_THREADS) {
		int r = i / SPLAT_TILE, col = i % SPLAT_TILE;
		float m[5] = { 0, 0, 0, 0, 0 };
		for (int k = 0; k < SPLAT_SSIM_WINDOW; k++) {
			float xv = s_in[0][r][col + k], yv = s_in[1][r][col + k], g = win.g[k];
			m[0] += g * xv;
			m[1] += g * yv;
			m[2] += g * (xv * xv);
			m[3] += g * (yv * yv);
			m[4] += g * (xv * yv);
		}
		for (int q = 0; q < 5; q++)
			s_h[q][r][col] = m[q];
	}
	__syncthreads();

	float m[5] = { 0, 0, 0, 0, 0 };
	for (int k = 0; k < SPLAT_SSIM_WINDOW; k++)
		for (int q = 0; q < 5; q++)
			m[q] += win.g[k] * s_h[q][threadIdx.y + k][threadIdx.x];
	int x = blockIdx.x * SPLAT_TILE + threadIdx.x, y = blockIdx.y * SPLAT_TILE + threadIdx.y;
	double l1 = 0, ssim = 0;
	if (x < width && y < height) {
		size_t i = off + (size_t)y * width + x;
		float d_mx, d_mxx, d_mxy;
		ssim = gpu_ssim_pixel(m[0], m[1], m[2], m[3], m[4], &d_mx, &d_mxx, &d_mxy);
		ssim_partials[i] = partial_scale * d_mx;
		ssim_partials[3 * hw + i] = partial_scale * d_mxx;
		ssim_partials[6 * hw + i] = partial_scale * d_mxy;
		l1 = fabsf(image[i] - gt[i]);
	}
	int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	l1 = gpu_block_sum(l1, s_red);
	__syncthreads();   /* s_red is reused */
	ssim = gpu_block_sum(ssim, s_red);
	if (tid == 0) {
		loss_partials[2 * block] = l1;
		loss_partials[2 * block + 1] = ssim;
	}
}

__global__ void __launch_bounds__(GPU_SSIM_THREADS)
gpu_ssim_backward_kernel(const float *__restrict__ ssim_partials, const float *__restrict__ image,
			 const float *__restrict__ gt, int width, int height, struct gpu_window win, float l1_scale,
			 float *dl_dimage)
{
	GPU_STAMP_KERNEL(gpu_ssim_backward_kernel);
	__shared__ float s_in[3][GPU_SSIM_SPAN][GPU_SSIM_SPAN];
	__shared__ float s_h[3][GPU_SSIM_SPAN][SPLAT_TILE];

	size_t hw = (size_t)width * height, off = blockIdx.z * hw;
	const float *planes[3] = { ssim_partials + off, ssim_partials + 3 * hw + off, ssim_partials + 6 * hw + off };
	int tid = threadIdx.y * SPLAT_TILE + threadIdx.x;

	gpu_stage_halo(planes, 3, s_in, width, height);
	__syncthreads();
	for (int i = tid; i < GPU_SSIM_SPAN * SPLAT_TILE; i += GPU_SSIM_THREADS) {
		int r = i / SPLAT_TILE, col = i % SPLAT_TILE;
		for (int q = 0; q < 3; q++) {
			float s = 0;
			for (int k = 0; k < SPLAT_SSIM_WINDOW; k++)
				s += win.g[k] * s_in[q][r][col + k];
			s_h[q][r][col] = s;
		}
	}
	__syncthreads();
	int x = blockIdx.x * SPLAT_TILE + threadIdx.x, y = blockIdx.y * SPLAT_TILE + threadIdx.y;
	if (x >= width || y >= height)
		return;
	float G[3] = { 0, 0, 0 };
	for (int q = 0; q < 3; q++)
		for (int k = 0; k < SPLAT_SSIM_WINDOW; k++)
			G[q] += win.g[k] * s_h[q][threadIdx.y + k][threadIdx.x];
	size_t i = off + (size_t)y * width + x;
	float xv = image[i], yv = gt[i], d = xv - yv;
	dl_dimage[i] = G[0] + 2 * xv * G[1] + yv * G[2] + l1_scale * (d > 0 ? 1.0f : d < 0 ? -1.0f : 0.0f);
}

/* One block: the loss from the per-block sums, in a fixed order (deterministic). */
__global__ void __launch_bounds__(GPU_LOSS_REDUCE_THREADS)
gpu_loss_reduce_kernel(const double *__restrict__ loss_partials, int blocks, double values, float *loss)
{
	GPU_STAMP_KERNEL(gpu_loss_reduce_kernel);
	__shared__ double s_l1[GPU_LOSS_REDUCE_THREADS], s_ssim[GPU_LOSS_REDUCE_THREADS];
	double l1 = 0, ssim = 0;

	for (int b = threadIdx.x; b < blocks; b += GPU_LOSS_REDUCE_THREADS) {
		l1 += loss_partials[2 * b];
		ssim += loss_partials[2 * b + 1];
	}
	s_l1[threadIdx.x] = l1;
	s_ssim[threadIdx.x] = ssim;
	__syncthreads();
	for (int half = GPU_LOSS_REDUCE_THREADS / 2; half > 0; half >>= 1) {
		if ((int)threadIdx.x < half) {
			s_l1[threadIdx.x] += s_l1[threadIdx.x + half];
			s_ssim[threadIdx.x] += s_ssim[threadIdx.x + half];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*loss = (float)(SPLAT_LOSS_L1_WEIGHT * s_l1[0] / values +
				(1 - SPLAT_LOSS_L1_WEIGHT) * (1 - s_ssim[0] / values));
}

int gpu_loss(struct gpu_ctx *ctx, float *loss_out)
{
	int err = 0;
	dim3 grid((unsigned)ctx->tiles_x, (unsigned)ctx->tiles_y, 3), block(SPLAT_TILE, SPLAT_TILE);
	/* the CPU backend's scale factors, rounded the same way */
	float partial_scale = -(float)(1 - SPLAT_LOSS_L1_WEIGHT) / (float)(3 * ctx->hw);
	float l1_scale = (float)SPLAT_LOSS_L1_WEIGHT / (float)(3 * ctx->hw);
	const float *gt;

	GPU_PHASE_BEGIN(ctx, "loss");
	if (!ctx->rendered) {
		err = splat_error(EINVAL, "cuda backend: loss_grad before any render");
		goto out;
	}
	if (!ctx->gt && !ctx->target) {
		err = splat_error(EINVAL, "cuda backend: loss_grad needs ground-truth images (set_views or upload_target)");
		goto out;
	}
	gt = ctx->target ? ctx->target : ctx->gt + ctx->view * 3 * ctx->hw;
	GPU_TIME_KERNEL_BEGIN(ctx, gpu_ssim_forward_kernel);
	gpu_ssim_forward_kernel<<<grid, block, 0, ctx->stream>>>(ctx->image, gt, ctx->width, ctx->height, ctx->window,
								  partial_scale, ctx->ssim_partials, ctx->loss_partials);
	GPU_TIME_END(ctx);
	GPU_CHECK_LAUNCH("gpu_ssim_forward_kernel");
	GPU_TIME_KERNEL_BEGIN(ctx, gpu_ssim_backward_kernel);
	gpu_ssim_backward_kernel<<<grid, block, 0, ctx->stream>>>(ctx->ssim_partials, ctx->image, gt, ctx->width,
								   ctx->height, ctx->window, l1_scale, ctx->dl_dimage);
	GPU_TIME_END(ctx);
	GPU_CHECK_LAUNCH("gpu_ssim_backward_kernel");
	ctx->have_loss_grad = 1;
	if (loss_out) {
		GPU_TIME_KERNEL_BEGIN(ctx, gpu_loss_reduce_kernel);
		gpu_loss_reduce_kernel<<<1, GPU_LOSS_REDUCE_THREADS, 0, ctx->stream>>>(
			ctx->loss_partials, ctx->loss_blocks, 3.0 * (double)ctx->hw, ctx->loss);
		GPU_TIME_END(ctx);
		GPU_CHECK_LAUNCH("gpu_loss_reduce_kernel");
		GPU_CHECK(cudaMemcpyAsync(ctx->host_loss, ctx->loss, sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
		GPU_CHECK(cudaStreamSynchronize(ctx->stream));
		*loss_out = *ctx->host_loss;
	}
out:
	GPU_PHASE_END(ctx);
	return err;
}
