/* gpu_backend.cuh: the CUDA backend's context (every device buffer, sized from
 * cfg.max_gaussians), its error-checking macros and the phase functions each kernels/ .cu file
 * provides to the ops table in gpu_backend.cu. Module prefix: gpu_.
 *
 * Streams and synchronisation: everything runs on ctx->stream, in order. The host waits only
 * (1) in render, for the number of tile-Gaussian pairs (it sizes the sort), (2) in get_image,
 * loss_grad with a loss requested, and the get_* / set_* transfers between iterations.
 *
 * Determinism: projection, binning (a stable radix sort), the forward blend, the loss, Adam and
 * the densification statistics are deterministic. The backward blend sums each Gaussian's 2-D
 * gradient over pixels with float atomics (after a warp reduction), so their order, and the
 * last bits of the gradients, vary from run to run; the CPU backend is the deterministic one. */
#ifndef GPU_BACKEND_CUH
#define GPU_BACKEND_CUH

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

extern "C" {
#include "splat.h"      /* backend.h, splat_error */
}

#include "gpu_math.cuh"

/* Check a CUDA runtime call; on failure print one line and leave through `out` with -EIO.
 * The enclosing function declares `int err` and ends with the label `out:`. */
#define GPU_CHECK(call)                                                                         \
	do {                                                                                    \
		cudaError_t gpu_status_ = (call);                                              \
		if (gpu_status_ != cudaSuccess) {                                               \
			err = gpu_report(#call, gpu_status_);                                   \
			goto out;                                                               \
		}                                                                               \
	} while (0)

/* Check the launch of the kernel just queued (a bad configuration shows up here; a fault while
 * it runs shows up at the next synchronising call, which then names itself). */
#define GPU_CHECK_LAUNCH(kernel)                                                                \
	do {                                                                                    \
		cudaError_t gpu_status_ = cudaGetLastError();                                   \
		if (gpu_status_ != cudaSuccess) {                                               \
			err = gpu_report(kernel " launch", gpu_status_);                        \
			goto out;                                                               \
		}                                                                               \
	} while (0)

/* Print "splat-train: <call> failed: <error>" and what to do; returns -EIO. */
int gpu_report(const char *call, cudaError_t status);

/* Offsets of the parameter groups inside one parameter block of capacity cap (62·cap + 3
 * floats): the layout of backend.h, group after group. */
struct gpu_groups {
	float *means, *log_scales, *quats, *opacity_logits, *sh, *background;
};

static inline struct gpu_groups gpu_groups_of(float *block, size_t cap)
{
	struct gpu_groups g;

	g.means = block;
	g.log_scales = block + 3 * cap;
	g.quats = block + 6 * cap;
	g.opacity_logits = block + 10 * cap;
	g.sh = block + 11 * cap;
	g.background = block + 59 * cap;
	return g;
}

#define GPU_FLOATS_PER_GAUSSIAN 62   /* 3 + 3 + 4 + 1 + 48 */
#define GPU_BLOCK_FLOATS(cap) (GPU_FLOATS_PER_GAUSSIAN * (size_t)(cap) + 3)

/* The 11 SSIM window taps, passed to the loss kernels by value. */
struct gpu_window {
	float g[SPLAT_SSIM_WINDOW];
};

struct gpu_ctx {
	int width, height, tiles_x, tiles_y, tiles, tile_bits;
	size_t hw, cap;
	cudaStream_t stream;

	/* views */
	struct splat_camera *cams_host, *cams;   /* host copy, device copy [n_views] */
	size_t n_views;
	float *gt;                               /* device, n_views × 3hw; NULL without ground truth */
	float *target;                           /* device [3hw]: upload_target's image (--data disk),
						  * the loss's ground truth once set; NULL before */
	cudaEvent_t upload_done;                 /* recorded after an asynchronous upload_target */
	int upload_pending;                      /* upload_done recorded and not yet waited for */

	/* parameters, gradients and Adam moments: blocks of GPU_BLOCK_FLOATS(cap) floats */
	float *params, *grads, *adam_m, *adam_v, *adam_m_spare, *adam_v_spare;
	size_t count;                            /* Gaussians in use */
	size_t grads_count;                      /* Gaussians of the last backward (0 before) */
	int32_t *moment_source;                  /* [cap] device copy for set_params */

	/* the last render */
	size_t view;
	int sh_degree, rendered, have_loss_grad;
	float2 *uv;                              /* [cap] pixel position of the mean */
	float *depth;                            /* [cap] */
	float4 *conic_opacity;                   /* [cap] A, B, C, opacity */
	float *radius;                           /* [cap] 0 = invisible */
	int4 *rect;                              /* [cap] tile rectangle */
	float *rgb;                              /* [3cap] */
	unsigned char *clamped;                  /* [3cap] */
	unsigned long long *tiles_touched;       /* [cap] tiles of each Gaussian's rectangle */
	unsigned long long *tile_offsets;        /* [cap] inclusive scan of tiles_touched */
	uint64_t *keys[2];                       /* [pair_cap] each: sort double buffer */
	uint32_t *vals[2];
	const uint32_t *sorted_vals;             /* Gaussian indices in blend order */
	size_t pairs, pair_cap;
	void *cub_temp;
	size_t cub_temp_bytes;
	uint2 *tile_range;                       /* [tiles]: [start, end) into the sorted pairs */
	float *image;                            /* [3hw] */
	float *t_final;                          /* [hw] */
	uint32_t *n_contrib;                     /* [hw] entries visited up to the last contributor */

	/* loss */
	struct gpu_window window;
	float *dl_dimage;                        /* [3hw] */
	float *ssim_partials;                    /* [3 × 3hw]: scaled ∂S/∂m_x, ∂S/∂m_xx, ∂S/∂m_xy */
	double *loss_partials;                   /* [2 × loss blocks]: per block Σ|x-y|, Σ SSIM */
	int loss_blocks;
	float *loss;                             /* [1] device */

	/* backward */
	float *g2;                               /* [9cap]: u, v, A, B, C, opacity, r, g, b */

	/* densification statistics */
	float *ds_grad, *ds_radius;
	int32_t *ds_count;

	/* pinned host words for the synchronising reads */
	unsigned long long *host_pairs;
	float *host_loss;

	/* --time-kernels (=event, gpu_timing.cu); NULL without it */
	struct gpu_timing *timing;
	/* --time-kernels=device (gpu_stamp.cu): the kernels stamp themselves */
	int stamping;
};

/* Phase functions (the ops of backend.h, minus the context cast); each returns 0 or -errno. */
int gpu_render_view(struct gpu_ctx *ctx, size_t view, int sh_degree);            /* gpu_render.cu */
size_t gpu_scan_temp_bytes(size_t cap, int *err);                                 /* gpu_render.cu */
int gpu_loss(struct gpu_ctx *ctx, float *loss_out);                                /* gpu_loss.cu */
int gpu_backward_pass(struct gpu_ctx *ctx, const float *dl_dimage);               /* gpu_backward.cu */
int gpu_adam(struct gpu_ctx *ctx, const struct splat_adam_config *cfg);           /* gpu_adam.cu */
int gpu_remap_moments(struct gpu_ctx *ctx, size_t old_count, size_t new_count,
		      const int32_t *moment_source);                              /* gpu_adam.cu */

/* Blocks of `threads` covering n items. */
static inline unsigned gpu_blocks(size_t n, unsigned threads)
{
	return (unsigned)((n + threads - 1) / threads);
}

/* --time-kernels (gpu_timing.cu): CUDA events around each launch, CUB call and phase. */
enum gpu_time_kind { GPU_TIME_KERNEL, GPU_TIME_CUB, GPU_TIME_PHASE };
struct gpu_timing;
int gpu_timing_create(cudaStream_t stream, struct gpu_timing **out);
void gpu_timing_destroy(struct gpu_timing *t);
/* name: a string literal; func: the __global__ function of a kernel, else NULL */
void gpu_timing_begin(struct gpu_timing *t, enum gpu_time_kind kind, const char *name, const void *func);
void gpu_timing_end(struct gpu_timing *t);
void gpu_timing_end_phase(struct gpu_timing *t);
/* Synchronise, read every bracket back and print the table; 0 or -EIO. */
int gpu_timing_report(struct gpu_timing *t, FILE *out);

/* Bracket one kernel launch or one CUB call: GPU_TIME_KERNEL_BEGIN(ctx, k); k<<<...>>>(...);
 * GPU_TIME_END(ctx). Without --time-kernels each is a test of ctx->timing and nothing else. */
#define GPU_TIME_KERNEL_BEGIN(ctx, kernel)                                                      \
	do {                                                                                    \
		if ((ctx)->timing)                                                              \
			gpu_timing_begin((ctx)->timing, GPU_TIME_KERNEL, #kernel, (const void *)(kernel)); \
	} while (0)
#define GPU_TIME_CUB_BEGIN(ctx, call)                                                           \
	do {                                                                                    \
		if ((ctx)->timing)                                                              \
			gpu_timing_begin((ctx)->timing, GPU_TIME_CUB, call, NULL);              \
	} while (0)
#define GPU_TIME_END(ctx)                                                                       \
	do {                                                                                    \
		if ((ctx)->timing)                                                              \
			gpu_timing_end((ctx)->timing);                                          \
	} while (0)

/* Phases: an NVTX range (what a profiler's timeline shows) and, with --time-kernels, a timed
 * bracket of the same name, so the two cannot disagree. Every BEGIN has exactly one END on
 * every path (functions put the END after their `out:` label). Phases: forward, loss,
 * backward, optimizer, densify, set_params, and upload (the target image of --data disk). */
#define GPU_PHASE_BEGIN(ctx, name)                                                              \
	do {                                                                                    \
		nvtxRangePushA(name);                                                           \
		if ((ctx)->timing)                                                              \
			gpu_timing_begin((ctx)->timing, GPU_TIME_PHASE, name, NULL);            \
	} while (0)
#define GPU_PHASE_END(ctx)                                                                      \
	do {                                                                                    \
		if ((ctx)->timing)                                                              \
			gpu_timing_end_phase((ctx)->timing);                                    \
		nvtxRangePop();                                                                 \
	} while (0)

/* --time-kernels=device (gpu_stamp.cu): every kernel of ours stamps the GPU's %globaltimer at
 * the start of its first block and at the end of its last block, the same kind of clock as
 * CUPTI's kernel records, and sums end - start per kernel on the device; the host reads the sums
 * once, after the run. Each kernel body opens with GPU_STAMP_KERNEL(name): a guard object whose
 * constructor stamps the start (thread 0 of every block, atomicMin: the first block's) and whose
 * destructor, run on every return path of every thread, counts the block's threads out (in
 * shared memory); the last thread of a block counts the block out, and the last block stamps the
 * end and adds it up. Kernels run one at a time on ctx->stream, so one "current
 * launch" record per file suffices; it is reset by the block that ends the launch. Without
 * device mode the guard is one load of a __constant__ flag. The sums live per .cu file (no
 * relocatable device code): GPU_STAMP_FILE(file) defines them and the host functions
 * gpu_stamp_enable_FILE / gpu_stamp_read_FILE that gpu_stamp.cu calls. CUB's kernels (the
 * scan and the radix sort) cannot be stamped: the table lists them as not stamped. */
enum gpu_stamp_id {
	GPU_STAMP_gpu_preprocess_kernel, GPU_STAMP_gpu_duplicate_kernel, GPU_STAMP_gpu_tile_ranges_kernel,
	GPU_STAMP_gpu_blend_forward_kernel, GPU_STAMP_gpu_ssim_forward_kernel,
	GPU_STAMP_gpu_ssim_backward_kernel, GPU_STAMP_gpu_loss_reduce_kernel,
	GPU_STAMP_gpu_blend_backward_kernel, GPU_STAMP_gpu_project_backward_kernel,
	GPU_STAMP_gpu_densify_stats_kernel, GPU_STAMP_gpu_adam_kernel,
	GPU_STAMP_gpu_remap_moments_kernel, GPU_STAMP_KERNELS
};

/* One file's device state. */
struct gpu_stamp_state {
	unsigned long long ns[GPU_STAMP_KERNELS];     /* Σ (end - start) */
	unsigned long long calls[GPU_STAMP_KERNELS];
	unsigned long long start;                     /* the current launch: its first block's start
						       * (ULLONG_MAX: none yet) */
	unsigned int blocks_done;                     /* its blocks counted out */
};

/* What gpu_stamp_read_FILE gives the host. */
struct gpu_stamp_sums {
	unsigned long long ns[GPU_STAMP_KERNELS], calls[GPU_STAMP_KERNELS];
};

static __device__ __forceinline__ unsigned long long gpu_globaltimer(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Holds only constants (the flag's and the state's addresses, the kernel's id), which the
 * compiler can rematerialise: no register stays taken through the kernel. */
struct gpu_stamp_guard {
	const int *on;                /* the file's __constant__ switch */
	struct gpu_stamp_state *st;
	unsigned int *block_done;     /* the block's threads counted out (shared memory) */
	int id;

	__device__ __forceinline__ gpu_stamp_guard(const int *on_, struct gpu_stamp_state *state, unsigned int *shared,
						   int kernel)
	    : on(on_), st(state), block_done(shared), id(kernel)
	{
		if (!*on)
			return;
		if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
			*block_done = 0;
			atomicMin(&st->start, gpu_globaltimer());
		}
		__syncthreads();   /* at entry every thread of the block is here */
	}

	__device__ __forceinline__ ~gpu_stamp_guard()
	{
		if (!*on)
			return;
		/* one shared-memory atomic per thread: a warp's threads may leave at different
		 * returns, not converged, so they are not counted by warp */
		unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
		if (atomicAdd(block_done, 1u) + 1 != threads)
			return;
		/* the block's last thread: the block is done */
		__threadfence();
		unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
		if (atomicAdd(&st->blocks_done, 1u) + 1 != blocks)
			return;
		/* the launch's last block */
		unsigned long long end = gpu_globaltimer();
		unsigned long long start = atomicAdd(&st->start, 0ull);
		st->ns[id] += end > start ? end - start : 0;
		st->calls[id]++;
		st->start = ~0ull;
		st->blocks_done = 0;
		__threadfence();
	}
};

/* The file's stamp state and host accessors (once per .cu file with kernels). */
#define GPU_STAMP_FILE(file)                                                                    \
	static __constant__ int gpu_stamp_on_;                                                  \
	static __device__ struct gpu_stamp_state gpu_stamp_state_;                              \
	int gpu_stamp_enable_##file(int on)                                                     \
	{                                                                                       \
		struct gpu_stamp_state init;                                                    \
		memset(&init, 0, sizeof(init));                                                 \
		init.start = ~0ull;                                                             \
		cudaError_t s = cudaMemcpyToSymbol(gpu_stamp_state_, &init, sizeof(init));     \
		if (s == cudaSuccess)                                                           \
			s = cudaMemcpyToSymbol(gpu_stamp_on_, &on, sizeof(on));                 \
		return s == cudaSuccess ? 0 : gpu_report("cudaMemcpyToSymbol (--time-kernels=device, " #file ")", s); \
	}                                                                                       \
	int gpu_stamp_read_##file(struct gpu_stamp_sums *out)                                    \
	{                                                                                       \
		struct gpu_stamp_state st;                                                      \
		cudaError_t s = cudaMemcpyFromSymbol(&st, gpu_stamp_state_, sizeof(st));        \
		if (s != cudaSuccess)                                                           \
			return gpu_report("cudaMemcpyFromSymbol (--time-kernels=device, " #file ")", s); \
		for (int k = 0; k < GPU_STAMP_KERNELS; k++) {                                   \
			out->ns[k] += st.ns[k];                                                 \
			out->calls[k] += st.calls[k];                                           \
		}                                                                               \
		return 0;                                                                       \
	}

/* First statement of a kernel body: stamps it in device mode (the kernel's name is its
 * __global__ identifier). */
#define GPU_STAMP_KERNEL(kernel)                                                                \
	__shared__ unsigned int gpu_stamp_block_done_;                                          \
	gpu_stamp_guard gpu_stamp_guard_(&gpu_stamp_on_, &gpu_stamp_state_, &gpu_stamp_block_done_, \
					 GPU_STAMP_##kernel)

/* gpu_stamp.cu */
int gpu_stamp_enable_render(int on);
int gpu_stamp_enable_loss(int on);
int gpu_stamp_enable_backward(int on);
int gpu_stamp_enable_adam(int on);
int gpu_stamp_read_render(struct gpu_stamp_sums *out);
int gpu_stamp_read_loss(struct gpu_stamp_sums *out);
int gpu_stamp_read_backward(struct gpu_stamp_sums *out);
int gpu_stamp_read_adam(struct gpu_stamp_sums *out);
/* Set device mode up (measure the timer's tick, zero the sums, switch stamping on); 0 or -EIO. */
int gpu_stamp_start(void);
/* Synchronise, read the sums and print the table; 0 or -EIO. */
int gpu_stamp_report(cudaStream_t stream, FILE *out);

#endif
