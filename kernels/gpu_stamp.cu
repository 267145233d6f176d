/* gpu_stamp.cu: --time-kernels=device for the CUDA backend: the host side of the in-kernel
 * %globaltimer stamps (gpu_backend.cuh, GPU_STAMP_KERNEL): measure the timer's tick, switch
 * stamping on in every kernel file, and at the end read each file's sums and print one table
 * (kernel name, calls, Σ(end - start) of the first block's start to the last block's end).
 *
 * Why: CUPTI's kernel records time a kernel from inside the GPU, so a kernel of a few
 * microseconds is compared fairly only with the same kind of clock; CUDA events (=event) add
 * 2.5-4.5 us per bracket. scripts/gpu-profile.sh --compare puts this table beside CUPTI's.
 *
 * The tick: %globaltimer advances in steps (1 us on some GPUs, 32 ns on others); one thread reads
 * it in a loop and keeps the smallest nonzero difference between consecutive reads, printed
 * with the table: a kernel shorter than a tick reads as 0 or 1 tick. */
#include "gpu_backend.cuh"

#define GPU_STAMP_TICK_READS 100000

/* One thread: the smallest nonzero step of %globaltimer over `reads` consecutive reads, and how
 * many distinct values it saw. */
__global__ void gpu_stamp_tick_kernel(int reads, unsigned long long *out)
{
	unsigned long long last = gpu_globaltimer(), best = ~0ull, steps = 0;
	for (int i = 0; i < reads; i++) {
		unsigned long long now = gpu_globaltimer();
		if (now != last) {
			if (now - last < best)
				best = now - last;
			steps++;
			last = now;
		}
	}
	out[0] = best;
	out[1] = steps;
}

static unsigned long long gpu_stamp_tick_ns, gpu_stamp_tick_steps;

/* The kernels no stamp can reach: CUB's (launched inside the library calls). */
static const char *const gpu_stamp_unstamped[] = {
	"cub::DeviceScan::InclusiveSum", "cub::DeviceRadixSort::SortPairs",
};

static const char *const gpu_stamp_names[GPU_STAMP_KERNELS] = {
	"gpu_preprocess_kernel", "gpu_duplicate_kernel", "gpu_tile_ranges_kernel",
	"gpu_blend_forward_kernel", "gpu_ssim_forward_kernel", "gpu_ssim_backward_kernel",
	"gpu_loss_reduce_kernel", "gpu_blend_backward_kernel", "gpu_project_backward_kernel",
	"gpu_densify_stats_kernel", "gpu_adam_kernel", "gpu_remap_moments_kernel",
};

int gpu_stamp_start(void)
{
	unsigned long long *dev = NULL, host[2] = { 0, 0 };
	cudaError_t status;
	int err = 0;

	GPU_CHECK(cudaMalloc((void **)&dev, sizeof(host)));
	gpu_stamp_tick_kernel<<<1, 1>>>(GPU_STAMP_TICK_READS, dev);
	GPU_CHECK_LAUNCH("gpu_stamp_tick_kernel");
	GPU_CHECK(cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost));
	gpu_stamp_tick_ns = host[0];
	gpu_stamp_tick_steps = host[1];
	if ((err = gpu_stamp_enable_render(1)) || (err = gpu_stamp_enable_loss(1)) ||
	    (err = gpu_stamp_enable_backward(1)) || (err = gpu_stamp_enable_adam(1)))
		goto out;
out:
	if (dev && (status = cudaFree(dev)) != cudaSuccess && !err)
		err = gpu_report("cudaFree (--time-kernels=device)", status);
	return err;
}

int gpu_stamp_report(cudaStream_t stream, FILE *out)
{
	struct gpu_stamp_sums sums;
	int err = 0;

	memset(&sums, 0, sizeof(sums));
	GPU_CHECK(cudaStreamSynchronize(stream));
	if ((err = gpu_stamp_read_render(&sums)) || (err = gpu_stamp_read_loss(&sums)) ||
	    (err = gpu_stamp_read_backward(&sums)) || (err = gpu_stamp_read_adam(&sums)))
		goto out;
	if (gpu_stamp_tick_ns == ~0ull)
		fprintf(out, "time-kernels=device: globaltimer tick: none seen in %d reads (the timer did not move)\n",
			GPU_STAMP_TICK_READS);
	else
		fprintf(out, "time-kernels=device: globaltimer tick: %llu ns (smallest step of %llu seen in %d reads)\n",
			gpu_stamp_tick_ns, gpu_stamp_tick_steps, GPU_STAMP_TICK_READS);
	fprintf(out, "time-kernels=device: %%globaltimer stamped inside each kernel, from the start of its first block "
		"to the end of its last block, summed per kernel (the __global__ function's name); CUB's kernels "
		"cannot be stamped\n");
	fprintf(out, "%-8s %-34s %8s %14s %12s\n", "kind", "name", "calls", "stamps_ms", "mean_us");
	for (int k = 0; k < GPU_STAMP_KERNELS; k++) {
		if (!sums.calls[k])
			continue;
		fprintf(out, "%-8s %-34s %8llu %14.6f %12.3f\n", "stamped", gpu_stamp_names[k], sums.calls[k],
			(double)sums.ns[k] / 1e6, (double)sums.ns[k] / 1e3 / (double)sums.calls[k]);
	}
	for (size_t i = 0; i < sizeof(gpu_stamp_unstamped) / sizeof(gpu_stamp_unstamped[0]); i++)
		fprintf(out, "%-8s %-34s %8s %14s %12s\n", "cub", gpu_stamp_unstamped[i], "-", "not stamped", "-");
	fflush(out);
out:
	return err;
}
