/* pylaunch.c: bin/tests/cupti/libpylaunch.so, a CUDA program's launch path for a Python script
 * (tests/cupti/t-python-launch.sh loads it with ctypes). pl_init loads the injection library as
 * the CUDA driver would (dlopen, InitializeInjection) against the stand-in libcupti; pl_launch
 * makes one cudaLaunchKernel (the stand-in fires the library's callbacks on the calling thread,
 * so the launch's native stack runs through the interpreter that made the ctypes call) and
 * queues the kernel record the GPU would produce; pl_launch_hung makes the launch of a kernel
 * that never finishes (no record ever: csampler dump's kernels in flight); pl_deliver hands the
 * queued records over. */
#include <cupti.h>

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "standin.h"

#define PL_EXPORT __attribute__((visibility("default")))

static struct {
	standin_call_fn call;
	standin_push_fn push;
	standin_deliver_fn deliver;
} pl;

static uint64_t pl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 0, or -1 when the library or the stand-in's hooks cannot be loaded. */
PL_EXPORT int pl_init(const char *lib)
{
	void *h = lib && *lib ? dlopen(lib, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (!init)
		return -1;
	init();
	void *c = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!c)
		return -1;
	pl.call = (standin_call_fn)dlsym(c, "standin_call");
	pl.push = (standin_push_fn)dlsym(c, "standin_push");
	pl.deliver = (standin_deliver_fn)dlsym(c, "standin_deliver");
	return pl.call && pl.push && pl.deliver ? 0 : -1;
}

/* One kernel launch named kernel, correlation id corr, from the caller's stack. */
PL_EXPORT void __attribute__((noipa)) pl_launch(const char *kernel, uint32_t corr)
{
	struct standin_call sc = { .runtime_cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
				   .driver_cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
				   .runtime_name = "cudaLaunchKernel",
				   .driver_name = "cuLaunchKernel", .symbol = kernel, .corr = corr };
	pl.call(&sc);
	__asm__ volatile("" ::: "memory");
	uint64_t start = pl_now() + 20000;
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		.registersPerThread = 32, .start = start, .end = start + 100000,
		.completed = start + 100000, .contextId = 1, .streamId = 7, .gridX = 64,
		.gridY = 1, .gridZ = 1, .blockX = 256, .blockY = 1, .blockZ = 1,
		.correlationId = corr, .name = kernel };
	pl.push(&k, sizeof(k));
}

/* A launch whose kernel never ends: the call, and no activity record. */
PL_EXPORT void __attribute__((noipa)) pl_launch_hung(const char *kernel, uint32_t corr)
{
	struct standin_call sc = { .runtime_cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
				   .driver_cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
				   .runtime_name = "cudaLaunchKernel",
				   .driver_name = "cuLaunchKernel", .symbol = kernel, .corr = corr };
	pl.call(&sc);
	__asm__ volatile("" ::: "memory");
}

PL_EXPORT void pl_deliver(void)
{
	pl.deliver();
}
