/* attach-target.c: a running CUDA program for `csampler record -p PID --gpu on` on machines
 * without a GPU (t-gpu-attach.sh). Started with no csampler variable, it loads the stand-in
 * libcupti (tests/cupti/standin.c) itself, as a CUDA program has its libraries, and never calls
 * InitializeInjection: its API calls fire callbacks, and its kernels make records, only once a
 * subscriber exists (the library csampler loads into it).
 *
 *   attach-target STANDIN_LIB STEPS [STEP_US]
 *
 * Each step (STEP_US apart, default 2000), from known functions: the main thread launches
 * at_forward_kernel from at_forward under at_step, a worker thread at_worker_kernel from
 * at_worker_launch under at_worker_main; each launch queues its kernel record (real times:
 * CUPTI's clock), and the main thread has the stand-in hand the records back every step.
 * Correlation ids: step * 16 + 1 (main), step * 16 + 2 (worker). The main thread prints
 * "attached at step N" and "detached at step N" when it sees the kernel activity kind turn on
 * and off, "ready" once its loop runs, and at the end "attach-target: N steps" (exit 0). */
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
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
	standin_deliver_fn deliver;
	standin_kind_enabled_fn kind_enabled;
	CUptiResult (*get_timestamp)(uint64_t *);
} hk;
static unsigned steps, step_us;
static atomic_int done;

static uint64_t now_ns(void)
{
	uint64_t t = 0;
	hk.get_timestamp(&t);   /* CUPTI's clock: CLOCK_MONOTONIC once the library set it */
	return t;
}

static void launch(const char *kernel, uint32_t stream, uint32_t corr)
{
	struct standin_call c = { .runtime_cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
				  .driver_cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
				  .runtime_name = "cudaLaunchKernel",
				  .driver_name = "cuLaunchKernel", .symbol = kernel, .corr = corr };
	hk.call(&c);
	KEEP_FRAME();
	uint64_t start = now_ns() + 1000;
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		.registersPerThread = 32, .start = start, .end = start + 20000,
		.completed = start + 20000, .contextId = 1, .streamId = stream, .gridX = 8,
		.gridY = 1, .gridZ = 1, .blockX = 128, .blockY = 1, .blockZ = 1,
		.correlationId = corr, .name = kernel, .queued = start - 700,
		.submitted = start - 300 };
	hk.push(&k, sizeof(k));
}

/* Not inlined, not tail calls: each launch has a distinct, known call path. */
void NOIPA at_forward(unsigned step)
{
	launch("at_forward_kernel", 1, step * 16 + 1);
	KEEP_FRAME();
}

void NOIPA at_step(unsigned step)
{
	at_forward(step);
	KEEP_FRAME();
}

void NOIPA at_worker_launch(unsigned step)
{
	launch("at_worker_kernel", 2, step * 16 + 2);
	KEEP_FRAME();
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts))
		;
}

void *NOIPA at_worker_main(void *arg)
{
	for (unsigned step = 0; step < steps && !atomic_load(&done); step++) {
		at_worker_launch(step);
		KEEP_FRAME();
		sleep_us(step_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: attach-target STANDIN_LIB STEPS [STEP_US]\n");
		return 2;
	}
	steps = (unsigned)strtoul(argv[2], NULL, 10);
	step_us = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 2000;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 2;
	}
	hk.call = (standin_call_fn)dlsym(h, "standin_call");
	hk.push = (standin_push_fn)dlsym(h, "standin_push");
	hk.deliver = (standin_deliver_fn)dlsym(h, "standin_deliver");
	hk.kind_enabled = (standin_kind_enabled_fn)dlsym(h, "standin_kind_enabled");
	hk.get_timestamp = (CUptiResult (*)(uint64_t *))dlsym(h, "cuptiGetTimestamp");
	if (!hk.call || !hk.push || !hk.deliver || !hk.kind_enabled || !hk.get_timestamp) {
		fprintf(stderr, "%s is not the stand-in libcupti\n", argv[1]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_t worker;
	pthread_create(&worker, NULL, at_worker_main, NULL);
	int on = 0;
	for (unsigned step = 0; step < steps; step++) {
		int now_on = hk.kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		if (now_on != on)
			printf("%s at step %u\n", now_on ? "attached" : "detached", step);
		on = now_on;
		at_step(step);
		KEEP_FRAME();
		hk.deliver();
		if (step == 0)
			printf("ready\n");
		sleep_us(step_us);
	}
	atomic_store(&done, 1);
	pthread_join(worker, NULL);
	hk.deliver();
	printf("attach-target: %u steps\n", steps);
	return 0;
}
