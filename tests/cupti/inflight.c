/* inflight.c: a CUDA program stuck with GPU work in flight, for `csampler dump` on machines
 * without a GPU (tests/live/t-dump.sh). It loads the injection library as the CUDA driver would
 * (dlopen, InitializeInjection; CSAMPLER_GPU_DIR set by the test) against the stand-in libcupti
 * (LD_LIBRARY_PATH), then launches, each from its own known function:
 *   - if_done_kernel (correlation 1) from if_launch_done: its activity record is queued, as the
 *     GPU would produce it once finished, but not handed over (only a flush delivers it);
 *   - _Z14if_hung_kernelPf (correlation 2) from if_launch_hung: no record ever (it never ends);
 *   - if_worker_kernel (correlation 3) from if_worker_launch on a second thread: no record.
 * It prints "ready" and waits in if_wait_sync (nanosleep), as a program blocked in a
 * synchronisation would. `csampler dump` must show the two hung kernels with their launch
 * stacks, and not the finished one. */
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"

#define NOIPA __attribute__((noipa))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static struct {
	standin_call_fn call;
	standin_push_fn push;
} hk;

static uint64_t if_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void if_launch(const char *kernel, uint32_t corr, int finishes)
{
	struct standin_call c = { .runtime_cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
				  .driver_cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
				  .runtime_name = "cudaLaunchKernel", .driver_name = "cuLaunchKernel",
				  .symbol = kernel, .corr = corr };
	hk.call(&c);
	KEEP_FRAME();
	if (!finishes)
		return;
	uint64_t start = if_now() + 1000;
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		.registersPerThread = 32, .start = start, .end = start + 5000,
		.completed = start + 5000, .contextId = 1, .streamId = 7, .gridX = 1, .gridY = 1,
		.gridZ = 1, .blockX = 32, .blockY = 1, .blockZ = 1, .correlationId = corr,
		.name = kernel };
	hk.push(&k, sizeof(k));
}

void NOIPA if_launch_done(void)
{
	if_launch("if_done_kernel", 1, 1);
	KEEP_FRAME();
}

void NOIPA if_launch_hung(void)
{
	if_launch("_Z14if_hung_kernelPf", 2, 0);
	KEEP_FRAME();
}

void NOIPA if_worker_launch(void)
{
	if_launch("if_worker_kernel", 3, 0);
	KEEP_FRAME();
}

static void *if_worker(void *arg)
{
	if_worker_launch();
	KEEP_FRAME();
	return arg;
}

void NOIPA if_wait_sync(void)
{
	struct timespec ts = { 3600, 0 };
	for (;;)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: inflight LIB\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (!init) {
		fprintf(stderr, "inflight: cannot load %s: %s\n", argv[1], dlerror());
		return 1;
	}
	init();
	void *c = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	hk.call = c ? (standin_call_fn)dlsym(c, "standin_call") : NULL;
	hk.push = c ? (standin_push_fn)dlsym(c, "standin_push") : NULL;
	if (!hk.call || !hk.push) {
		fprintf(stderr, "inflight: the stand-in libcupti is not loaded (LD_LIBRARY_PATH)\n");
		return 1;
	}
	if_launch_done();
	if_launch_hung();
	pthread_t th;
	if (pthread_create(&th, NULL, if_worker, NULL) || pthread_join(th, NULL))
		return 1;
	printf("ready\n");
	fflush(stdout);
	if_wait_sync();
	return 0;
}
