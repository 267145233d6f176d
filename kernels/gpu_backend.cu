/* gpu_backend.cu: splat-train's CUDA backend (backend.h): the probe that says whether a CUDA
 * device can be used, the context's life cycle (every device buffer sized from
 * cfg.max_gaussians; only the tile-Gaussian pair buffers grow, when a render needs more), the
 * host↔device transfers, and the ops table. The phases live in gpu_render.cu (forward),
 * gpu_loss.cu (loss and SSIM), gpu_backward.cu (backward and densification statistics) and
 * gpu_adam.cu (optimizer). The CUDA runtime is linked statically (kernels/build.mk), so the
 * program starts, and the probe answers, on machines without a driver. */
#include "gpu_backend.cuh"

#include <stdlib.h>
#include <string.h>

int gpu_report(const char *call, cudaError_t status)
{
	fprintf(stderr, "splat-train: %s failed: %s (rerun with --backend cpu to train without CUDA)\n", call,
		cudaGetErrorString(status));
	return -EIO;
}

extern "C" int splat_cuda_probe(char *why, size_t why_len)
{
	int count = 0, driver = 0, device = 0, major = 0, minor = 0;
	cudaDeviceProp prop;
	cudaError_t status = cudaGetDeviceCount(&count);

	if (status == cudaErrorInsufficientDriver || status == cudaErrorStubLibrary) {
		cudaGetLastError();
		if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 && status == cudaErrorInsufficientDriver)
			snprintf(why, why_len, "CUDA driver %d.%d is older than this build's runtime %d.%d", driver / 1000,
				 driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
		else
			snprintf(why, why_len, "no CUDA driver");
		cudaGetLastError();
		return -ENODEV;
	}
	if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
		cudaGetLastError();
		snprintf(why, why_len, "no CUDA device");
		return -ENODEV;
	}
	if (status != cudaSuccess) {
		cudaGetLastError();
		snprintf(why, why_len, "cudaGetDeviceCount failed: %s", cudaGetErrorString(status));
		return -EIO;
	}
	if ((status = cudaGetDevice(&device)) != cudaSuccess ||
	    (status = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
		cudaGetLastError();
		snprintf(why, why_len, "cudaGetDeviceProperties failed: %s", cudaGetErrorString(status));
		return -EIO;
	}
	major = prop.major;
	minor = prop.minor;
	/* kernels/build.mk builds sm_90 code and compute_90 PTX: older GPUs cannot run either */
	if (major < 9) {
		snprintf(why, why_len, "CUDA device %d (%s) has compute capability %d.%d; this build needs 9.0 or newer",
			 device, prop.name, major, minor);
		return -ENOTSUP;
	}
	/* create the context now, so a busy or broken device is reported here, not mid-training */
	if ((status = cudaFree(NULL)) != cudaSuccess) {
		cudaGetLastError();
		snprintf(why, why_len, "cudaFree(NULL) (creating the CUDA context on %s) failed: %s", prop.name,
			 cudaGetErrorString(status));
		return -EIO;
	}
	snprintf(why, why_len, "%s (compute capability %d.%d)", prop.name, major, minor);
	return 0;
}

/* cudaMalloc that names the buffer and what to do when memory runs out. */
static int gpu_malloc(void *ptr, size_t bytes, const char *what)
{
	cudaError_t status = cudaMalloc((void **)ptr, bytes ? bytes : 1);

	if (status == cudaSuccess)
		return 0;
	cudaGetLastError();
	fprintf(stderr, "splat-train: cudaMalloc of %zu bytes for %s failed: %s (lower --max-gaussians or the "
		"resolution, or use --backend cpu)\n", bytes, what, cudaGetErrorString(status));
	return -ENOMEM;
}

static void gpu_destroy(void *opaque)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;

	if (!ctx)
		return;
	/* a fault in work no later call waited for surfaces here: say so, then release anyway */
	cudaError_t status = ctx->stream ? cudaStreamSynchronize(ctx->stream) : cudaSuccess;
	if (status != cudaSuccess)
		splat_warn("cuda backend: cudaStreamSynchronize at release failed: %s; the last results may be wrong",
			   cudaGetErrorString(status));
	/* release everything even after an error; cudaFree(NULL) is a no-op */
	void *dev[] = { ctx->cams, ctx->gt, ctx->target, ctx->params, ctx->grads, ctx->adam_m, ctx->adam_v, ctx->adam_m_spare,
			ctx->adam_v_spare, ctx->moment_source, ctx->uv, ctx->depth, ctx->conic_opacity, ctx->radius,
			ctx->rect, ctx->rgb, ctx->clamped, ctx->tiles_touched, ctx->tile_offsets, ctx->keys[0],
			ctx->keys[1], ctx->vals[0], ctx->vals[1], ctx->cub_temp, ctx->tile_range, ctx->image,
			ctx->t_final, ctx->n_contrib, ctx->dl_dimage, ctx->ssim_partials, ctx->loss_partials, ctx->loss,
			ctx->g2, ctx->ds_grad, ctx->ds_radius, ctx->ds_count };
	for (size_t k = 0; k < sizeof(dev) / sizeof(dev[0]); k++)
		cudaFree(dev[k]);
	cudaFreeHost(ctx->host_pairs);
	cudaFreeHost(ctx->host_loss);
	if (ctx->upload_done)
		cudaEventDestroy(ctx->upload_done);
	gpu_timing_destroy(ctx->timing);   /* after the synchronisation above: its events are done */
	if (ctx->stream)
		cudaStreamDestroy(ctx->stream);
	cudaGetLastError();
	free(ctx->cams_host);
	free(ctx);
}

static int gpu_reset_densify_stats(void *opaque)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	int err = 0;

	GPU_PHASE_BEGIN(ctx, "densify");
	GPU_CHECK(cudaMemsetAsync(ctx->ds_grad, 0, ctx->cap * sizeof(float), ctx->stream));
	GPU_CHECK(cudaMemsetAsync(ctx->ds_radius, 0, ctx->cap * sizeof(float), ctx->stream));
	GPU_CHECK(cudaMemsetAsync(ctx->ds_count, 0, ctx->cap * sizeof(int32_t), ctx->stream));
out:
	GPU_PHASE_END(ctx);
	return err;
}

static int gpu_create(const struct splat_backend_config *cfg, void **ctxp)
{
	struct gpu_ctx *ctx = NULL;
	size_t cap = cfg->max_gaussians, block_bytes, scan_bytes;
	int err = 0;

	*ctxp = NULL;
	if (cfg->width < 1 || cfg->height < 1 || cap < 1 || cap > (size_t)INT32_MAX)
		return splat_error(EINVAL, "cuda backend: bad configuration %dx%d, %zu Gaussians", cfg->width,
				   cfg->height, cap);
	ctx = (struct gpu_ctx *)calloc(1, sizeof(*ctx));
	if (!ctx)
		return splat_error(ENOMEM, "cuda backend: out of host memory for the context");
	ctx->width = cfg->width;
	ctx->height = cfg->height;
	ctx->hw = (size_t)cfg->width * cfg->height;
	ctx->tiles_x = (cfg->width + SPLAT_TILE - 1) / SPLAT_TILE;
	ctx->tiles_y = (cfg->height + SPLAT_TILE - 1) / SPLAT_TILE;
	ctx->tiles = ctx->tiles_x * ctx->tiles_y;
	ctx->tile_bits = gpu_tile_bits((uint32_t)ctx->tiles);
	ctx->loss_blocks = 3 * ctx->tiles;
	ctx->cap = cap;
	gpu_ssim_window(ctx->window.g);
	block_bytes = GPU_BLOCK_FLOATS(cap) * sizeof(float);

	GPU_CHECK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
	if (cfg->time_kernels == SPLAT_TIME_EVENT && (err = gpu_timing_create(ctx->stream, &ctx->timing)))
		goto out;
	if (cfg->time_kernels == SPLAT_TIME_DEVICE) {
		if ((err = gpu_stamp_start()))
			goto out;
		ctx->stamping = 1;
	}
	if ((err = gpu_malloc(&ctx->params, block_bytes, "the parameters")) ||
	    (err = gpu_malloc(&ctx->grads, block_bytes, "the gradients")) ||
	    (err = gpu_malloc(&ctx->adam_m, block_bytes, "Adam's first moments")) ||
	    (err = gpu_malloc(&ctx->adam_v, block_bytes, "Adam's second moments")) ||
	    (err = gpu_malloc(&ctx->adam_m_spare, block_bytes, "Adam's first moments (remap)")) ||
	    (err = gpu_malloc(&ctx->adam_v_spare, block_bytes, "Adam's second moments (remap)")) ||
	    (err = gpu_malloc(&ctx->moment_source, cap * sizeof(int32_t), "the moment sources")) ||
	    (err = gpu_malloc(&ctx->uv, cap * sizeof(float2), "the projected means")) ||
	    (err = gpu_malloc(&ctx->depth, cap * sizeof(float), "the depths")) ||
	    (err = gpu_malloc(&ctx->conic_opacity, cap * sizeof(float4), "the conics")) ||
	    (err = gpu_malloc(&ctx->radius, cap * sizeof(float), "the radii")) ||
	    (err = gpu_malloc(&ctx->rect, cap * sizeof(int4), "the tile rectangles")) ||
	    (err = gpu_malloc(&ctx->rgb, 3 * cap * sizeof(float), "the colours")) ||
	    (err = gpu_malloc(&ctx->clamped, 3 * cap, "the colour clamps")) ||
	    (err = gpu_malloc(&ctx->tiles_touched, cap * sizeof(unsigned long long), "the tile counts")) ||
	    (err = gpu_malloc(&ctx->tile_offsets, cap * sizeof(unsigned long long), "the tile offsets")) ||
	    (err = gpu_malloc(&ctx->tile_range, ctx->tiles * sizeof(uint2), "the tile ranges")) ||
	    (err = gpu_malloc(&ctx->image, 3 * ctx->hw * sizeof(float), "the image")) ||
	    (err = gpu_malloc(&ctx->t_final, ctx->hw * sizeof(float), "the final transmittance")) ||
	    (err = gpu_malloc(&ctx->n_contrib, ctx->hw * sizeof(uint32_t), "the contributor counts")) ||
	    (err = gpu_malloc(&ctx->dl_dimage, 3 * ctx->hw * sizeof(float), "the image gradient")) ||
	    (err = gpu_malloc(&ctx->ssim_partials, 9 * ctx->hw * sizeof(float), "the SSIM partials")) ||
	    (err = gpu_malloc(&ctx->loss_partials, 2 * (size_t)ctx->loss_blocks * sizeof(double), "the loss sums")) ||
	    (err = gpu_malloc(&ctx->loss, sizeof(float), "the loss")) ||
	    (err = gpu_malloc(&ctx->g2, GPU_G2_N * cap * sizeof(float), "the 2-D gradients")) ||
	    (err = gpu_malloc(&ctx->ds_grad, cap * sizeof(float), "the densification gradients")) ||
	    (err = gpu_malloc(&ctx->ds_radius, cap * sizeof(float), "the densification radii")) ||
	    (err = gpu_malloc(&ctx->ds_count, cap * sizeof(int32_t), "the densification counts")))
		goto out;
	/* the pair buffers start at a few tiles per Gaussian and grow in render when needed */
	ctx->pair_cap = 4 * cap < 4096 ? 4096 : 4 * cap;
	for (int b = 0; b < 2; b++)
		if ((err = gpu_malloc(&ctx->keys[b], ctx->pair_cap * sizeof(uint64_t), "the sort keys")) ||
		    (err = gpu_malloc(&ctx->vals[b], ctx->pair_cap * sizeof(uint32_t), "the sort values")))
			goto out;
	ctx->sorted_vals = ctx->vals[0];
	scan_bytes = gpu_scan_temp_bytes(cap, &err);
	if (err)
		goto out;
	if ((err = gpu_malloc(&ctx->cub_temp, scan_bytes, "CUB's scan storage")))
		goto out;
	ctx->cub_temp_bytes = scan_bytes;   /* render grows it for the sort */
	GPU_CHECK(cudaMallocHost((void **)&ctx->host_pairs, sizeof(*ctx->host_pairs)));
	GPU_CHECK(cudaMallocHost((void **)&ctx->host_loss, sizeof(*ctx->host_loss)));
	GPU_CHECK(cudaMemsetAsync(ctx->params, 0, block_bytes, ctx->stream));
	GPU_CHECK(cudaMemsetAsync(ctx->grads, 0, block_bytes, ctx->stream));
	GPU_CHECK(cudaMemsetAsync(ctx->adam_m, 0, block_bytes, ctx->stream));
	GPU_CHECK(cudaMemsetAsync(ctx->adam_v, 0, block_bytes, ctx->stream));
	GPU_CHECK(cudaMemsetAsync(ctx->dl_dimage, 0, 3 * ctx->hw * sizeof(float), ctx->stream));
	if ((err = gpu_reset_densify_stats(ctx)))
		goto out;
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
	*ctxp = ctx;
	ctx = NULL;
out:
	gpu_destroy(ctx);
	return err;
}

static int gpu_set_views(void *opaque, const struct splat_camera *cams, size_t n_views, const float *gt)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	int err = 0;

	for (size_t v = 0; v < n_views; v++)
		if (cams[v].width != ctx->width || cams[v].height != ctx->height)
			return splat_error(EINVAL, "cuda backend: view %zu is %dx%d, the backend was created for %dx%d", v,
					   cams[v].width, cams[v].height, ctx->width, ctx->height);
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
	GPU_CHECK(cudaFree(ctx->cams));
	GPU_CHECK(cudaFree(ctx->gt));
	ctx->cams = NULL;
	ctx->gt = NULL;
	ctx->n_views = 0;
	ctx->rendered = 0;
	free(ctx->cams_host);
	ctx->cams_host = (struct splat_camera *)malloc((n_views ? n_views : 1) * sizeof(*cams));
	if (!ctx->cams_host) {
		err = splat_error(ENOMEM, "cuda backend: out of host memory for %zu cameras", n_views);
		goto out;
	}
	memcpy(ctx->cams_host, cams, n_views * sizeof(*cams));
	if ((err = gpu_malloc(&ctx->cams, n_views * sizeof(*cams), "the cameras")))
		goto out;
	GPU_CHECK(cudaMemcpyAsync(ctx->cams, cams, n_views * sizeof(*cams), cudaMemcpyHostToDevice, ctx->stream));
	if (gt) {
		if ((err = gpu_malloc(&ctx->gt, n_views * 3 * ctx->hw * sizeof(float), "the ground-truth images")))
			goto out;
		GPU_CHECK(cudaMemcpyAsync(ctx->gt, gt, n_views * 3 * ctx->hw * sizeof(float), cudaMemcpyHostToDevice,
					  ctx->stream));
	}
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
	ctx->n_views = n_views;
out:
	return err;
}

/* Copy `width` floats per Gaussian of one group between a host array and a device block. */
static cudaError_t gpu_copy_group(float *dst, const float *src, size_t count, int width, cudaMemcpyKind kind,
				  cudaStream_t stream)
{
	return cudaMemcpyAsync(dst, src, count * width * sizeof(float), kind, stream);
}

static int gpu_set_params(void *opaque, const struct splat_params *p, const int32_t *moment_source)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	struct gpu_groups d = gpu_groups_of(ctx->params, ctx->cap);
	size_t old_count = ctx->count, n = p->count;
	int err = 0;

	if (n > ctx->cap)
		return splat_error(ENOSPC, "cuda backend: %zu Gaussians, but the backend was created for %zu; "
				   "raise --max-gaussians", n, ctx->cap);
	GPU_PHASE_BEGIN(ctx, "set_params");
	GPU_CHECK(gpu_copy_group(d.means, p->means, n, 3, cudaMemcpyHostToDevice, ctx->stream));
	GPU_CHECK(gpu_copy_group(d.log_scales, p->log_scales, n, 3, cudaMemcpyHostToDevice, ctx->stream));
	GPU_CHECK(gpu_copy_group(d.quats, p->quats, n, 4, cudaMemcpyHostToDevice, ctx->stream));
	GPU_CHECK(gpu_copy_group(d.opacity_logits, p->opacity_logits, n, 1, cudaMemcpyHostToDevice, ctx->stream));
	GPU_CHECK(gpu_copy_group(d.sh, p->sh, n, 48, cudaMemcpyHostToDevice, ctx->stream));
	GPU_CHECK(gpu_copy_group(d.background, p->background, 1, 3, cudaMemcpyHostToDevice, ctx->stream));
	if ((err = gpu_remap_moments(ctx, old_count, n, moment_source)))
		goto out;
	ctx->count = n;
	ctx->grads_count = 0;
	ctx->rendered = 0;
	ctx->have_loss_grad = 0;
	if ((err = gpu_reset_densify_stats(ctx)))
		goto out;
	/* the host may reuse p and moment_source at once (pageable copies are staged by then), but
	 * report a failed copy here rather than at the next render */
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
out:
	GPU_PHASE_END(ctx);
	return err;
}

/* Copy the Gaussian groups and background of a device block into out. */
static int gpu_download(struct gpu_ctx *ctx, float *block, size_t n, struct splat_params *out, const char *what)
{
	struct gpu_groups d = gpu_groups_of(block, ctx->cap);
	int err = 0;

	if (out->capacity < n)
		return splat_error(ENOSPC, "cuda backend: %s into room for %zu of %zu Gaussians", what, out->capacity, n);
	GPU_CHECK(gpu_copy_group(out->means, d.means, n, 3, cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(gpu_copy_group(out->log_scales, d.log_scales, n, 3, cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(gpu_copy_group(out->quats, d.quats, n, 4, cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(gpu_copy_group(out->opacity_logits, d.opacity_logits, n, 1, cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(gpu_copy_group(out->sh, d.sh, n, 48, cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(gpu_copy_group(out->background, d.background, 1, 3, cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
	out->count = n;
out:
	return err;
}

static int gpu_get_params(void *opaque, struct splat_params *out)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;

	return gpu_download(ctx, ctx->params, ctx->count, out, "get_params");
}

static int gpu_get_grads(void *opaque, struct splat_params *out)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;

	return gpu_download(ctx, ctx->grads, ctx->grads_count, out, "get_grads");
}

static int gpu_render(void *opaque, size_t view, int sh_degree)
{
	return gpu_render_view((struct gpu_ctx *)opaque, view, sh_degree);
}

static int gpu_get_image(void *opaque, float *rgb)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	int err = 0;

	if (!ctx->rendered)
		return splat_error(EINVAL, "cuda backend: get_image before any render");
	GPU_CHECK(cudaMemcpyAsync(rgb, ctx->image, 3 * ctx->hw * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
out:
	return err;
}

static int gpu_loss_grad(void *opaque, float *loss_out)
{
	return gpu_loss((struct gpu_ctx *)opaque, loss_out);
}

static int gpu_backward(void *opaque, const float *dl_dimage)
{
	return gpu_backward_pass((struct gpu_ctx *)opaque, dl_dimage);
}

static int gpu_adam_step(void *opaque, const struct splat_adam_config *cfg)
{
	return gpu_adam((struct gpu_ctx *)opaque, cfg);
}

static int gpu_get_densify_stats(void *opaque, struct splat_densify_stats *out)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	size_t n = ctx->count;
	int err = 0;

	GPU_PHASE_BEGIN(ctx, "densify");
	GPU_CHECK(cudaMemcpyAsync(out->grad_accum, ctx->ds_grad, n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(cudaMemcpyAsync(out->count, ctx->ds_count, n * sizeof(int32_t), cudaMemcpyDeviceToHost, ctx->stream));
	GPU_CHECK(cudaMemcpyAsync(out->max_radius, ctx->ds_radius, n * sizeof(float), cudaMemcpyDeviceToHost,
				  ctx->stream));
	GPU_CHECK(cudaStreamSynchronize(ctx->stream));
out:
	GPU_PHASE_END(ctx);
	return err;
}

static int gpu_report_timing(void *opaque, FILE *out)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;

	if (ctx->stamping)
		return gpu_stamp_report(ctx->stream, out);
	if (!ctx->timing)
		return splat_error(EINVAL, "cuda backend: report_timing of a backend created without time_kernels");
	return gpu_timing_report(ctx->timing, out);
}

/* ---- the data stage (--data disk, target/data.c) ---- */

static int gpu_set_background(void *opaque, const float bg[3])
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	struct gpu_groups d = gpu_groups_of(ctx->params, ctx->cap);
	int err = 0;

	/* 12 bytes from pageable memory: staged by the driver before the call returns */
	GPU_CHECK(cudaMemcpyAsync(d.background, bg, 3 * sizeof(float), cudaMemcpyHostToDevice, ctx->stream));
out:
	return err;
}

/* The target image into ctx->target, on ctx->stream so that it cannot overwrite the image an
 * earlier loss still reads. pinned: asynchronous, upload_done recorded after it; otherwise the
 * training thread waits for the copy (and for the work queued before it). */
static int gpu_upload_target(void *opaque, const float *image, int pinned)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	size_t bytes = 3 * ctx->hw * sizeof(float);
	int err = 0;

	if (!ctx->target && (err = gpu_malloc(&ctx->target, bytes, "the target image")))
		return err;
	GPU_PHASE_BEGIN(ctx, "upload");
	if (!ctx->upload_done)
		GPU_CHECK(cudaEventCreateWithFlags(&ctx->upload_done, cudaEventDisableTiming));
	GPU_CHECK(cudaMemcpyAsync(ctx->target, image, bytes, cudaMemcpyHostToDevice, ctx->stream));
	if (pinned) {
		GPU_CHECK(cudaEventRecord(ctx->upload_done, ctx->stream));
		ctx->upload_pending = 1;
	} else {
		GPU_CHECK(cudaStreamSynchronize(ctx->stream));
	}
out:
	GPU_PHASE_END(ctx);
	return err;
}

static int gpu_upload_wait(void *opaque)
{
	struct gpu_ctx *ctx = (struct gpu_ctx *)opaque;
	int err = 0;

	if (ctx->upload_pending)
		GPU_CHECK(cudaEventSynchronize(ctx->upload_done));
	ctx->upload_pending = 0;
out:
	return err;
}

static int gpu_host_alloc(void *opaque, size_t bytes, void **out)
{
	int err = 0;

	(void)opaque;
	*out = NULL;
	GPU_CHECK(cudaHostAlloc(out, bytes, cudaHostAllocDefault));
out:
	return err;
}

static void gpu_host_free(void *opaque, void *p)
{
	(void)opaque;
	if (p)
		cudaFreeHost(p);
}

const struct splat_backend_ops splat_cuda_backend = {
	"cuda",                   /* name */
	gpu_create,               /* create */
	gpu_destroy,              /* destroy */
	gpu_set_views,            /* set_views */
	gpu_set_params,           /* set_params */
	gpu_get_params,           /* get_params */
	gpu_render,               /* render */
	gpu_get_image,            /* get_image */
	gpu_loss_grad,            /* loss_grad */
	gpu_backward,             /* backward */
	gpu_get_grads,            /* get_grads */
	gpu_adam_step,            /* adam_step */
	gpu_get_densify_stats,    /* get_densify_stats */
	gpu_reset_densify_stats,  /* reset_densify_stats */
	gpu_report_timing,        /* report_timing */
	gpu_set_background,       /* set_background */
	gpu_upload_target,        /* upload_target */
	gpu_upload_wait,          /* upload_wait */
	gpu_host_alloc,           /* host_alloc */
	gpu_host_free,            /* host_free */
};
