/* script.h: the scripted CUDA workload of tests/cupti/driver.c, in one place. The child plays it
 * (API calls from known functions, then the activity records the GPU would report) and the
 * parent checks the injection library's gpu-PID.bin against the same tables and formulas.
 *
 * Correlation ids are made from the script so the checker can recompute everything:
 *   corr = (thread + 1) * SCRIPT_THREAD_CORR + step * 16 + index in that thread's table
 * thread 0 is the main thread (script_main), 1..SCRIPT_WORKERS the workers (script_worker). */
#ifndef CSAMPLER_TEST_SCRIPT_H
#define CSAMPLER_TEST_SCRIPT_H

#include <cupti.h>
#include <stdint.h>

#define SCRIPT_STEPS 40
#define SCRIPT_WORKERS 2
#define SCRIPT_THREAD_CORR 1000000u
#define SCRIPT_DELIVER_EVERY 8       /* main thread: CUPTI hands back a buffer every N steps */

enum script_op { OP_KERNEL = 1, OP_MEMCPY, OP_MEMSET, OP_SYNC, OP_GRAPH_LAUNCH };

struct script_call {
	const char *fn;          /* the driver function that makes the call: pcs[0] */
	const char *parent;      /* its caller: pcs[1] */
	enum script_op op;
	uint32_t stream;
	const char *name;        /* kernel name */
	uint32_t runtime_cbid, driver_cbid;
	const char *runtime_name, *driver_name;
	uint64_t bytes;
};

#define RT(x) CUPTI_RUNTIME_TRACE_CBID_##x
#define DRV(x) CUPTI_DRIVER_TRACE_CBID_##x

/* Every step of the main thread's training loop, in order. */
static const struct script_call script_main[] = {
	{ "launch_forward", "train_step", OP_KERNEL, 1, "forward_kernel(float*, int)",
	  RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel), "cudaLaunchKernel", "cuLaunchKernel", 0 },
	{ "launch_backward", "train_step", OP_KERNEL, 2, "backward_kernel(float*, int)",
	  RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel), "cudaLaunchKernel", "cuLaunchKernel", 0 },
	{ "copy_grads", "train_step", OP_MEMCPY, 1, NULL,
	  RT(cudaMemcpyAsync_v3020), DRV(cuMemcpyAsync), "cudaMemcpyAsync", "cuMemcpyAsync", 65536 },
	{ "zero_grads", "train_step", OP_MEMSET, 2, NULL,
	  RT(cudaMemsetAsync_v3020), DRV(cuMemsetD8Async), "cudaMemsetAsync", "cuMemsetD8Async",
	  4096 },
	{ "sync_step", "train_step", OP_SYNC, 1, NULL,
	  RT(cudaStreamSynchronize_v3020), DRV(cuStreamSynchronize), "cudaStreamSynchronize",
	  "cuStreamSynchronize", 0 },
};

/* Every step of a worker thread: a driver-API-only launch. */
static const struct script_call script_worker[] = {
	{ "worker_launch", "worker_main", OP_KERNEL, 3, "worker_kernel",
	  0, DRV(cuLaunchKernel), NULL, "cuLaunchKernel", 0 },
};

/* Once, on the main thread, after the loop (step SCRIPT_STEPS of thread 0). */
enum { TAIL_LOST_KERNEL, TAIL_COPY_WEIGHTS, TAIL_GRAPH_LAUNCH, TAIL_COUNT };
static const struct script_call script_tail[] = {
	/* a kernel whose timestamps the GPU lost (start == end == 0) */
	{ "launch_lost", "train_tail", OP_KERNEL, 1, "lost_kernel",
	  RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel), "cudaLaunchKernel", "cuLaunchKernel", 0 },
	/* a runtime call whose driver call has its own correlation id; the copy carries that one */
	{ "copy_weights", "train_tail", OP_MEMCPY, 0, NULL,
	  RT(cudaMemcpy_v3020), DRV(cuMemcpyHtoD_v2), "cudaMemcpy", "cuMemcpyHtoD_v2", 1 << 20 },
	/* a graph launch: its kernel belongs to the node created in build_graph */
	{ "run_graph", "train_tail", OP_GRAPH_LAUNCH, 1, "graph_kernel",
	  RT(cudaGraphLaunch_v10000), DRV(cuGraphLaunch), "cudaGraphLaunch", "cuGraphLaunch", 0 },
};
#define SCRIPT_NMAIN (sizeof(script_main) / sizeof(script_main[0]))
#define SCRIPT_DRIVER_CORR_OFFSET 500000u   /* copy_weights' driver call: corr + this */
#define SCRIPT_GRAPH_NODE 1001u             /* created in build_graph */
#define SCRIPT_GRAPH_CLONE 2001u            /* its clone, made in instantiate_graph */
#define SCRIPT_DROPPED 7u                   /* records CUPTI says it dropped */
#define SCRIPT_RANGE_NS 5000000u            /* the NVTX range "train" */

static inline uint32_t script_corr(unsigned thread, unsigned step, unsigned index)
{
	return (thread + 1) * SCRIPT_THREAD_CORR + step * 16 + index;
}

/* Resolve a correlation id to its scripted call; NULL if it is not one. */
static inline const struct script_call *script_lookup(uint32_t corr, unsigned *thread)
{
	unsigned t = corr / SCRIPT_THREAD_CORR - 1, step = (corr % SCRIPT_THREAD_CORR) / 16,
		 index = corr % 16;
	if (corr < SCRIPT_THREAD_CORR || t > SCRIPT_WORKERS)
		return NULL;
	if (thread)
		*thread = t;
	if (t == 0 && step == SCRIPT_STEPS)
		return index < TAIL_COUNT ? &script_tail[index] : NULL;
	if (step >= SCRIPT_STEPS)
		return NULL;
	if (t == 0)
		return index < SCRIPT_NMAIN ? &script_main[index] : NULL;
	return index < 1 ? &script_worker[index] : NULL;
}

/* GPU durations (ns) and start offsets from the script's t0, both from the correlation id. */
static inline uint64_t script_duration(uint32_t corr)
{
	return 1000 + (uint64_t)(corr * 7919u) % 50000;
}

static inline uint64_t script_offset(uint32_t corr)
{
	return 1000000 + (uint64_t)(corr % SCRIPT_THREAD_CORR) * 100000;
}

/* What the checker expects in the file of a full run. */
#define SCRIPT_KERNELS (SCRIPT_STEPS * 2 + SCRIPT_WORKERS * SCRIPT_STEPS + 1)  /* + graph */
#define SCRIPT_MEMCPYS (SCRIPT_STEPS + 1)
#define SCRIPT_MEMSETS SCRIPT_STEPS
#define SCRIPT_SYNCS SCRIPT_STEPS
#define SCRIPT_LOST 1
/* one API record per outermost call: main loop, workers, the tail */
#define SCRIPT_APIS (SCRIPT_STEPS * SCRIPT_NMAIN + SCRIPT_WORKERS * SCRIPT_STEPS + TAIL_COUNT)
/* launch records: every outermost call, copy_weights' driver call, the graph node */
#define SCRIPT_LAUNCHES (SCRIPT_APIS + 1 + 1)

#endif
