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

/* A driver call's own correlation id (corr + SCRIPT_DRIVER_CORR_OFFSET) starts in its runtime
 * call's slot, not 50 s later. */
static inline uint64_t script_offset(uint32_t corr)
{
	return 1000000 + (uint64_t)(corr % SCRIPT_THREAD_CORR % SCRIPT_DRIVER_CORR_OFFSET) * 100000;
}

/* What the checker expects in the file of a full run. */
#define SCRIPT_KERNELS (SCRIPT_STEPS * 2 + SCRIPT_WORKERS * SCRIPT_STEPS + 1)  /* + graph */
#define SCRIPT_MEMCPYS (SCRIPT_STEPS + 1)
#define SCRIPT_MEMSETS SCRIPT_STEPS
#define SCRIPT_SYNCS SCRIPT_STEPS
#define SCRIPT_LOST 1
/* one API record per outermost call: main loop, workers, the tail */
#define SCRIPT_APIS (SCRIPT_STEPS * SCRIPT_NMAIN + SCRIPT_WORKERS * SCRIPT_STEPS + TAIL_COUNT)
/* Call records with the driver's callbacks alone (the library's default): one per driver call,
 * so copy_weights' runtime call, which has its own correlation id, is not seen (its driver call
 * is), and the graph node; with both domains subscribed (CSAMPLER_GPU_SUBSCRIBE=both) the
 * outermost call of each correlation id: copy_weights' runtime call too (_BOTH). */
#define SCRIPT_LAUNCHES (SCRIPT_APIS + 1)
#define SCRIPT_LAUNCHES_BOTH (SCRIPT_LAUNCHES + 1)
/* API spans, timed by the library from ENTER to EXIT: one per call record (graph nodes have
 * none) */
#define SCRIPT_SPANS SCRIPT_APIS
#define SCRIPT_SPANS_BOTH (SCRIPT_SPANS + 1)

/* The "syncwait" scenario (driver syncwait): SYNCWAIT_STEPS steps on the main thread, made to be
 * sync-bound. Step k (its slot starts at t0 + syncwait_slot(k)), correlation script_corr(0, k, i):
 *   0 loss_kernel on stream 1: [slot, slot + 300 us + k * 10 us], queued (k + 1) * 5 us before;
 *   1 aux_kernel on stream 2: [slot + 100 us, slot + 350 us + k * 10 us], queued 1 us before;
 *   2 cudaStreamSynchronize(stream 1): [slot + 20 us, loss end + 2 us]: waits for loss_kernel
 *     (aux_kernel, still running on another stream, is not what it waits for);
 *   3 cudaDeviceSynchronize: [slot + 310 us + k * 10 us, aux end + 2 us]: waits for aux_kernel.
 * API spans: launches [slot - 30 us, slot - 25 us] and [slot - 24 us, slot - 22 us]; the syncs'
 * enclose their sync records by 0.5 us on each side. */
#define SYNCWAIT_STEPS 4
static const struct script_call script_syncwait[] = {
	{ "sw_launch_loss", "sw_step", OP_KERNEL, 1, "loss_kernel",
	  RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel), "cudaLaunchKernel", "cuLaunchKernel", 0 },
	{ "sw_launch_aux", "sw_step", OP_KERNEL, 2, "aux_kernel",
	  RT(cudaLaunchKernel_v7000), DRV(cuLaunchKernel), "cudaLaunchKernel", "cuLaunchKernel", 0 },
	{ "sw_wait_stream", "sw_step", OP_SYNC, 1, NULL,
	  RT(cudaStreamSynchronize_v3020), DRV(cuStreamSynchronize), "cudaStreamSynchronize",
	  "cuStreamSynchronize", 0 },
	{ "sw_wait_device", "sw_step", OP_SYNC, 0, NULL,
	  RT(cudaDeviceSynchronize_v3020), DRV(cuCtxSynchronize), "cudaDeviceSynchronize",
	  "cuCtxSynchronize", 0 },
};

static inline uint64_t syncwait_slot(unsigned k)
{
	return 1000000 + (uint64_t)k * 600000;
}

/* [start, end) from t0 of record i of step k (sync records: the wait), and the kernels' queued */
static inline void syncwait_times(unsigned k, unsigned i, uint64_t *start, uint64_t *end,
				  uint64_t *queued)
{
	uint64_t slot = syncwait_slot(k), loss_end = slot + 300000 + k * 10000,
		 aux_end = slot + 350000 + k * 10000;
	switch (i) {
	case 0: *start = slot, *end = loss_end, *queued = slot - (k + 1) * 5000; break;
	case 1: *start = slot + 100000, *end = aux_end, *queued = slot + 99000; break;
	case 2: *start = slot + 20000, *end = loss_end + 2000, *queued = 0; break;
	default: *start = slot + 310000 + k * 10000, *end = aux_end + 2000, *queued = 0; break;
	}
}

#endif
