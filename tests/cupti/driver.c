/* driver.c: plays a CUDA program and its GPU for lib/libcsampler-cupti.so, on machines without
 * either, and checks what the library wrote.
 *
 *   driver SCENARIO LIB     fork a child that loads LIB as the CUDA driver would (dlopen,
 *                           InitializeInjection) and plays the scenario against the stand-in
 *                           libcupti (tests/cupti/standin.c, found through LD_LIBRARY_PATH);
 *                           the parent, which has the child's address layout, then decodes
 *                           $CSAMPLER_GPU_DIR/gpu-CHILD.bin (inject/protocol.h) and checks it
 *                           against script.h. Prints "ok: ..." or "FAIL ..." lines; exit 0/1.
 *      scenarios: workload syncwait busy fork noinit hang error real, and the real-time
 *      dataload tiny syncbound gpubound (t-gpu-idle.sh)
 *   driver load LIB         dlopen only: exit 0, or 2 with dlerror() (version-tag test)
 *   driver bench LIB|none RATE LAUNCHES [PATHS [BURST]]   ns per launch at RATE launches/s
 *                                         from PATHS call paths (50), BURST launches at a time
 *                                         (RATE/1000: one burst a millisecond) (bench-gpu-launch.sh)
 *   driver expect           the workload's report figures, from script.h alone (t-gpu-report.sh)
 *
 * The workload functions are noipa so that each scripted call has a distinct, known call path;
 * the checker resolves the recorded return addresses with dladdr (the driver links -rdynamic). */
#include <cupti.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject/protocol.h"
#include "script.h"
#include "standin.h"

static int env_disabled(const char *key);

#define NOIPA __attribute__((noipa))
/* after a call: keeps the compiler from turning it into a tail call (the frame must exist) */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static struct {
	standin_call_fn call;
	standin_graph_node_fn graph_node;
	standin_push_fn push;
	standin_set_dropped_fn set_dropped;
	standin_deliver_fn deliver;
	standin_kind_enabled_fn kind_enabled;
	standin_callback_enabled_fn callback_enabled;
	CUptiResult (*get_timestamp)(uint64_t *);
} hk;
static uint64_t t0;

static int load_hooks(void)
{
	void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -1;
	hk.call = (standin_call_fn)dlsym(h, "standin_call");
	hk.graph_node = (standin_graph_node_fn)dlsym(h, "standin_graph_node");
	hk.push = (standin_push_fn)dlsym(h, "standin_push");
	hk.set_dropped = (standin_set_dropped_fn)dlsym(h, "standin_set_dropped");
	hk.deliver = (standin_deliver_fn)dlsym(h, "standin_deliver");
	hk.kind_enabled = (standin_kind_enabled_fn)dlsym(h, "standin_kind_enabled");
	hk.callback_enabled = (standin_callback_enabled_fn)dlsym(h, "standin_callback_enabled");
	hk.get_timestamp = (CUptiResult (*)(uint64_t *))dlsym(h, "cuptiGetTimestamp");
	return hk.call && hk.graph_node && hk.push && hk.set_dropped && hk.deliver &&
	       hk.kind_enabled && hk.callback_enabled && hk.get_timestamp ? 0 : -1;
}

/* ---- the GPU's side: activity records for a scripted call ---- */

static void push_activity(const struct script_call *c, uint32_t corr, uint64_t node, int lost)
{
	uint64_t start = lost ? 0 : t0 + script_offset(corr);
	uint64_t end = lost ? 0 : start + script_duration(corr);
	switch (c->op) {
	case OP_KERNEL:
	case OP_GRAPH_LAUNCH: {
		CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
			.registersPerThread = 32, .start = start, .end = end, .completed = end,
			.deviceId = 0, .contextId = 1, .streamId = c->stream, .gridX = 64, .gridY = 1,
			.gridZ = 1, .blockX = 256, .blockY = 1, .blockZ = 1,
			.staticSharedMemory = 1024, .correlationId = corr, .name = c->name,
			.queued = lost ? 0 : start - 700, .submitted = lost ? 0 : start - 300,
			.graphNodeId = node, .graphId = node ? 7 : 0 };
		hk.push(&k, sizeof(k));
		break;
	}
	case OP_MEMCPY: {
		CUpti_ActivityMemcpy6 m = { .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
			.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
			.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
			.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
			.flags = c->runtime_cbid == RT(cudaMemcpyAsync_v3020) ?
				 CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0,
			.bytes = c->bytes, .start = start, .end = end, .contextId = 1,
			.streamId = c->stream, .correlationId = corr };
		hk.push(&m, sizeof(m));
		break;
	}
	case OP_MEMSET: {
		CUpti_ActivityMemset4 m = { .kind = CUPTI_ACTIVITY_KIND_MEMSET, .value = 0,
			.bytes = c->bytes, .start = start, .end = end, .contextId = 1,
			.streamId = c->stream, .correlationId = corr };
		hk.push(&m, sizeof(m));
		break;
	}
	case OP_SYNC: {
		CUpti_ActivitySynchronization2 s = { .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
			.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
			.start = start, .end = end, .correlationId = corr, .contextId = 1,
			.streamId = c->stream, .cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE };
		hk.push(&s, sizeof(s));
		break;
	}
	}
}

/* The CPU's side: one scripted API call. A macro, not a function, so that the stand-in's
 * callbacks run directly under the scripted function (pcs[0]). The library times the call
 * (its API span) with CUPTI's clock, which the stand-in makes [enter, exit]: by default
 * [offset - 5 us, offset - 1 us] from t0 (script.h), the real clock when t0 is not set. */
#define CUDA_CALL(c, corr_, driver_corr_)                                                  \
	CUDA_CALL_AT(c, corr_, driver_corr_, t0 ? t0 + script_offset(corr_) - 5000 : 0,   \
		     t0 ? t0 + script_offset(corr_) - 1000 : 0)
#define CUDA_CALL_AT(c, corr_, driver_corr_, enter_, exit_)                                \
	do {                                                                               \
		struct standin_call sc_ = { .runtime_cbid = (c)->runtime_cbid,              \
					    .driver_cbid = (c)->driver_cbid,                \
					    .runtime_name = (c)->runtime_name,              \
					    .driver_name = (c)->driver_name,                \
					    .symbol = (c)->name, .corr = (corr_),           \
					    .driver_corr = (driver_corr_),                  \
					    .enter_ns = (enter_), .exit_ns = (exit_) };     \
		hk.call(&sc_);                                                             \
		KEEP_FRAME();                                                              \
	} while (0)

/* ---- the program's side: distinct call paths ---- */

#define SCRIPTED_FN(fname, table, index)                                            \
	void NOIPA fname(unsigned thread, unsigned step)                     \
	{                                                                           \
		uint32_t corr = script_corr(thread, step, index);                   \
		CUDA_CALL(&table[index], corr, 0);                                  \
		KEEP_FRAME();                                                       \
		push_activity(&table[index], corr, 0, 0);                           \
	}
SCRIPTED_FN(launch_forward, script_main, 0)
SCRIPTED_FN(launch_backward, script_main, 1)
SCRIPTED_FN(copy_grads, script_main, 2)
SCRIPTED_FN(zero_grads, script_main, 3)
SCRIPTED_FN(sync_step, script_main, 4)
SCRIPTED_FN(worker_launch, script_worker, 0)

void NOIPA train_step(unsigned step)
{
	launch_forward(0, step);
	launch_backward(0, step);
	copy_grads(0, step);
	zero_grads(0, step);
	sync_step(0, step);
	KEEP_FRAME();
}

void *NOIPA worker_main(void *arg)
{
	unsigned thread = (unsigned)(uintptr_t)arg;
	for (unsigned step = 0; step < SCRIPT_STEPS; step++) {
		worker_launch(thread, step);
		KEEP_FRAME();
	}
	return NULL;
}

void NOIPA launch_lost(void)
{
	uint32_t corr = script_corr(0, SCRIPT_STEPS, TAIL_LOST_KERNEL);
	CUDA_CALL(&script_tail[TAIL_LOST_KERNEL], corr, 0);
	KEEP_FRAME();
	push_activity(&script_tail[TAIL_LOST_KERNEL], corr, 0, 1);
}

void NOIPA copy_weights(void)
{
	uint32_t corr = script_corr(0, SCRIPT_STEPS, TAIL_COPY_WEIGHTS);
	uint32_t dcorr = corr + SCRIPT_DRIVER_CORR_OFFSET;
	CUDA_CALL(&script_tail[TAIL_COPY_WEIGHTS], corr, dcorr);
	KEEP_FRAME();
	/* the copy is the driver call's: its correlation id */
	push_activity(&script_tail[TAIL_COPY_WEIGHTS], dcorr, 0, 0);
}

void NOIPA build_graph(void)
{
	hk.graph_node(SCRIPT_GRAPH_NODE, 0);
	KEEP_FRAME();
}

void NOIPA instantiate_graph(void)
{
	hk.graph_node(SCRIPT_GRAPH_CLONE, SCRIPT_GRAPH_NODE);
	KEEP_FRAME();
}

void NOIPA run_graph(void)
{
	uint32_t corr = script_corr(0, SCRIPT_STEPS, TAIL_GRAPH_LAUNCH);
	CUDA_CALL(&script_tail[TAIL_GRAPH_LAUNCH], corr, 0);
	KEEP_FRAME();
	push_activity(&script_tail[TAIL_GRAPH_LAUNCH], corr, SCRIPT_GRAPH_CLONE, 0);
}

void NOIPA train_tail(void)
{
	launch_lost();
	copy_weights();
	build_graph();
	instantiate_graph();
	run_graph();
	KEEP_FRAME();
}

static void push_markers(int part)
{
	if (part == 0) {
		CUpti_ActivityMarker2 m = { .kind = CUPTI_ACTIVITY_KIND_MARKER,
			.flags = CUPTI_ACTIVITY_FLAG_MARKER_START, .timestamp = t0 + 1000, .id = 1,
			.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD, .name = "train" };
		m.objectId.pt.processId = (uint32_t)getpid();
		/* as the real CUPTI: pthread_self's low bits, which the library maps back */
		m.objectId.pt.threadId = (uint32_t)pthread_self();
		hk.push(&m, sizeof(m));
		CUpti_ActivityMarkerData2 d = { .kind = CUPTI_ACTIVITY_KIND_MARKER_DATA, .id = 1,
						.color = 0xff00ff00u };
		hk.push(&d, sizeof(d));
		CUpti_ActivityMarker2 i = { .kind = CUPTI_ACTIVITY_KIND_MARKER,
			.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, .timestamp = t0 + 2000,
			.id = 2, .objectKind = CUPTI_ACTIVITY_OBJECT_THREAD, .name = "checkpoint" };
		hk.push(&i, sizeof(i));
		CUpti_ActivityOverhead3 o = { .kind = CUPTI_ACTIVITY_KIND_OVERHEAD,
			.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH,
			.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD, .start = t0 + 3000,
			.end = t0 + 4000 };
		hk.push(&o, sizeof(o));
	} else {
		CUpti_ActivityMarker2 m = { .kind = CUPTI_ACTIVITY_KIND_MARKER,
			.flags = CUPTI_ACTIVITY_FLAG_MARKER_END,
			.timestamp = t0 + 1000 + SCRIPT_RANGE_NS, .id = 1,
			.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD };
		hk.push(&m, sizeof(m));
	}
}

/* ---- the "syncwait" scenario (script.h): sync-bound, every wait on a known kernel ---- */

static void syncwait_push(unsigned k, unsigned i, uint32_t corr)
{
	const struct script_call *c = &script_syncwait[i];
	uint64_t start, end, queued;
	syncwait_times(k, i, &start, &end, &queued);
	if (c->op == OP_KERNEL) {
		CUpti_ActivityKernel10 kr = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
			.start = t0 + start, .end = t0 + end, .completed = t0 + end, .deviceId = 0,
			.contextId = 1, .streamId = c->stream, .gridX = 1, .gridY = 1, .gridZ = 1,
			.blockX = 128, .blockY = 1, .blockZ = 1, .correlationId = corr,
			.name = c->name, .queued = t0 + queued, .submitted = t0 + queued + 100 };
		hk.push(&kr, sizeof(kr));
	} else {
		CUpti_ActivitySynchronization2 sy = { .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
			.type = i == 2 ? CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE :
					 CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
			.start = t0 + start, .end = t0 + end, .correlationId = corr, .contextId = 1,
			.streamId = i == 2 ? c->stream : CUPTI_SYNCHRONIZATION_INVALID_VALUE,
			.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE };
		hk.push(&sy, sizeof(sy));
	}
}

/* The API span of record i of step k, from t0 (script.h). */
static void syncwait_api(unsigned k, unsigned i, uint64_t *a0, uint64_t *a1)
{
	uint64_t slot = syncwait_slot(k), start, end, queued;
	syncwait_times(k, i, &start, &end, &queued);
	int kernel = script_syncwait[i].op == OP_KERNEL;
	*a0 = kernel ? slot - (i ? 24000 : 30000) : start - 500;
	*a1 = kernel ? slot - (i ? 22000 : 25000) : end + 500;
}

#define SYNCWAIT_FN(fname, index)                                                   \
	void NOIPA fname(unsigned step)                                             \
	{                                                                           \
		uint32_t corr = script_corr(0, step, index);                        \
		uint64_t a0, a1;                                                    \
		syncwait_api(step, index, &a0, &a1);                                \
		CUDA_CALL_AT(&script_syncwait[index], corr, 0, t0 + a0, t0 + a1);   \
		KEEP_FRAME();                                                       \
		syncwait_push(step, index, corr);                                   \
	}
SYNCWAIT_FN(sw_launch_loss, 0)
SYNCWAIT_FN(sw_launch_aux, 1)
SYNCWAIT_FN(sw_wait_stream, 2)
SYNCWAIT_FN(sw_wait_device, 3)

void NOIPA sw_step(unsigned step)
{
	sw_launch_loss(step);
	sw_launch_aux(step);
	sw_wait_stream(step);
	sw_wait_device(step);
	KEEP_FRAME();
}

static int NOIPA syncwait(void)
{
	hk.get_timestamp(&t0);
	for (unsigned k = 0; k < SYNCWAIT_STEPS; k++) {
		sw_step(k);
		KEEP_FRAME();
	}
	hk.deliver();
	return 0;
}

/* ---- real-time scenarios (tests/cupti/t-gpu-idle.sh): GPU idle time explained by the CPU ----
 *
 * Unlike the scripted ones above, these play real time: the CPU really spends it in the named
 * NOIPA functions below while csampler samples the process, and the records pushed for the GPU
 * carry timestamps of the same clock (hk.get_timestamp: CUPTI's, which the library makes
 * CLOCK_MONOTONIC, the clock of the CPU samples). Kernels queue on stream 1 back to back: one
 * starts when its launch call returns or when the previous one ends. A synchronisation waits in
 * wait_gpu inside its API call (standin_call's `during`), so its API span covers the wait, and
 * its sync record spans [just before the call, the end of the wait].
 *   dataload   per step: load_batch -> decode_batch spins DL_DECODE_NS launching nothing; three
 *              kernels of 200, 300, 400 us; a stream sync until the last ends; an NVTX range
 *              "step" around it all. Input-bound: GPU busy ~18%, idle under decode_batch.
 *   tiny       TINY_LAUNCHES launches, each call spinning TINY_CALL_NS in launch_cost inside its
 *              API span; 1 us kernels starting at the call's return. Launch-bound.
 *   syncbound  per step: a 3.5 ms kernel, a sync on it (the span covers the wait), 2.5 ms of CPU
 *              in postprocess. Sync-bound: blocked ~58% of the window (busy as much, < 80%).
 *   gpubound   per step: prepare_batch spins 150 us, four 1 ms kernels queued behind the
 *              previous step's, a sync until the previous step's last kernel ends (one more at
 *              the end for the last); every 50 steps save_checkpoint spins 6 ms, so the GPU idles
 *              ~2 ms then. GPU-bound: busy ~99%, a CPU delay under 4 ms costs none.
 * The child prints "script: NAME steps N kernels K kernel_ns X" (the scripted GPU time); the
 * parent prints "ok: NAME: ..." with the figures report must give, recomputed from the records
 * the library wrote as csampler's analysis does (gpu.c): the window (first start to last end of
 * every kernel, copy, memset, sync and API span), busy (union of the kernels), idle = window -
 * busy, and the NVTX ranges named "step". */
static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define DL_STEPS 350
#define DL_DECODE_NS 4000000ull
#define TINY_LAUNCHES 100000
#define TINY_CALL_NS 6000ull
#define TINY_KERNEL_NS 1000ull
#define SB_STEPS 250
#define SB_KERNEL_NS 3500000ull
#define SB_POST_NS 2500000ull
#define GB_STEPS 400
#define GB_PREP_NS 150000ull
#define GB_KERNEL_NS 1000000ull
#define GB_CHECKPOINT_EVERY 50
#define GB_CHECKPOINT_NS 20000000ull
#define GB_DEPTH 4          /* steps of work queued ahead: 16 ms, more than a loaded machine's
                             * preemption of the launching thread */

static uint64_t rt_now(void)
{
	uint64_t t = 0;
	hk.get_timestamp(&t);
	return t;
}

/* Spin on the CPU until the clock reads `until`, reading it every `rounds` rounds of arithmetic:
 * inlined into the NOIPA function that uses it, so that nearly every sample's leaf is that
 * function (not the clock's code). */
static volatile uint64_t rt_sink;
#define SPIN_UNTIL(until, rounds)                                                          \
	do {                                                                               \
		uint64_t x_ = rt_sink;                                                     \
		while (rt_now() < (until))                                                 \
			for (int i_ = 0; i_ < (rounds); i_++)                              \
				x_ = x_ * 6364136223846793005ull + 1442695040888963407ull; \
		rt_sink = x_;                                                              \
	} while (0)

static struct {
	uint64_t gpu_free;     /* when stream 1 has done all that was queued */
	uint64_t wait_end;     /* when the last wait_gpu returned */
	uint32_t corr, marker;
	uint64_t kernels, kernel_ns;
} rt = { .corr = 1, .marker = 1 };

/* One API call of the runtime (and the driver call inside it), on the clock; `during` runs
 * inside its span. A macro: the stand-in's callbacks run directly under the calling function. */
#define RT_CALL(rtcb, drvcb, rtname, drvname, sym, corr_, during_, arg_)                  \
	do {                                                                               \
		struct standin_call sc_ = { .runtime_cbid = RT(rtcb), .driver_cbid = DRV(drvcb), \
					    .runtime_name = rtname, .driver_name = drvname,  \
					    .symbol = sym, .corr = (corr_),                  \
					    .during = (during_), .during_arg = (arg_) };     \
		hk.call(&sc_);                                                             \
		KEEP_FRAME();                                                              \
	} while (0)

/* The GPU's side of a launch whose call just returned: the kernel starts now or when the
 * stream's previous work ends. */
static void rt_kernel(const char *name, uint64_t ns, uint32_t corr)
{
	uint64_t now = rt_now(), start = now > rt.gpu_free ? now : rt.gpu_free;
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		.registersPerThread = 32, .start = start, .end = start + ns,
		.completed = start + ns, .deviceId = 0, .contextId = 1, .streamId = 1,
		.gridX = 64, .gridY = 1, .gridZ = 1, .blockX = 256, .blockY = 1, .blockZ = 1,
		.correlationId = corr, .name = name, .queued = now, .submitted = now };
	hk.push(&k, sizeof(k));
	rt.gpu_free = start + ns;
	rt.kernels++;
	rt.kernel_ns += ns;
}

void NOIPA rt_launch(const char *name, uint64_t ns)
{
	uint32_t corr = rt.corr++;
	RT_CALL(cudaLaunchKernel_v7000, cuLaunchKernel, "cudaLaunchKernel", "cuLaunchKernel", name,
		corr, NULL, NULL);
	rt_kernel(name, ns, corr);
}

/* Inside a synchronisation: until the GPU has done everything queued. */
void NOIPA wait_gpu(void *arg)
{
	uint64_t until = *(const uint64_t *)arg;
	SPIN_UNTIL(until, 256);
	rt.wait_end = rt_now();
}

/* A stream sync that waits until the GPU reaches `until` (the end of the work it waits for). */
void NOIPA rt_sync(uint64_t until)
{
	uint32_t corr = rt.corr++;
	uint64_t a0 = rt_now();
	RT_CALL(cudaStreamSynchronize_v3020, cuStreamSynchronize, "cudaStreamSynchronize",
		"cuStreamSynchronize", NULL, corr, wait_gpu, &until);
	CUpti_ActivitySynchronization2 s = { .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
		.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
		.start = a0, .end = rt.wait_end, .correlationId = corr, .contextId = 1,
		.streamId = 1, .cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE };
	hk.push(&s, sizeof(s));
}

/* An NVTX range on this thread: START with the name, END later (push_markers' records). */
static uint32_t rt_range_start(const char *name)
{
	CUpti_ActivityMarker2 m = { .kind = CUPTI_ACTIVITY_KIND_MARKER,
		.flags = CUPTI_ACTIVITY_FLAG_MARKER_START, .timestamp = rt_now(), .id = rt.marker,
		.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD, .name = name };
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = (uint32_t)pthread_self();   /* as the real CUPTI (push_markers) */
	hk.push(&m, sizeof(m));
	return rt.marker++;
}

static void rt_range_end(uint32_t id)
{
	CUpti_ActivityMarker2 m = { .kind = CUPTI_ACTIVITY_KIND_MARKER,
		.flags = CUPTI_ACTIVITY_FLAG_MARKER_END, .timestamp = rt_now(), .id = id,
		.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD };
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = (uint32_t)pthread_self();
	hk.push(&m, sizeof(m));
}

/* dataload */
void NOIPA decode_batch(void)
{
	uint64_t until = rt_now() + DL_DECODE_NS;
	SPIN_UNTIL(until, 4096);
}

void NOIPA load_batch(void)
{
	decode_batch();
	KEEP_FRAME();
}

void NOIPA dl_forward(void)
{
	rt_launch("embed_kernel", 200000);
	rt_launch("matmul_kernel", 300000);
	rt_launch("loss_kernel", 400000);
	KEEP_FRAME();
}

void NOIPA dl_step(void)
{
	uint32_t range = rt_range_start("step");
	load_batch();
	dl_forward();
	rt_sync(rt.gpu_free);
	rt_range_end(range);
	KEEP_FRAME();
}

/* tiny */
void NOIPA launch_cost(void *arg)
{
	(void)arg;
	uint64_t until = rt_now() + TINY_CALL_NS;
	SPIN_UNTIL(until, 1024);
}

void NOIPA tiny_launch(void)
{
	uint32_t corr = rt.corr++;
	RT_CALL(cudaLaunchKernel_v7000, cuLaunchKernel, "cudaLaunchKernel", "cuLaunchKernel",
		"tiny_kernel", corr, launch_cost, NULL);
	rt_kernel("tiny_kernel", TINY_KERNEL_NS, corr);
}

void NOIPA tiny_loop(void)
{
	for (unsigned i = 0; i < TINY_LAUNCHES; i++) {
		tiny_launch();
		if (i % 2000 == 1999)
			hk.deliver();
	}
	KEEP_FRAME();
}

/* syncbound */
void NOIPA postprocess(void)
{
	uint64_t until = rt_now() + SB_POST_NS;
	SPIN_UNTIL(until, 4096);
}

void NOIPA sb_step(void)
{
	rt_launch("long_kernel", SB_KERNEL_NS);
	rt_sync(rt.gpu_free);
	postprocess();
	KEEP_FRAME();
}

/* gpubound */
void NOIPA prepare_batch(void)
{
	uint64_t until = rt_now() + GB_PREP_NS;
	SPIN_UNTIL(until, 1024);
}

/* Earlier steps' kernels still run while this step's are queued behind them, then the sync
 * waits for the end of the step GB_DEPTH - 1 before: the GPU always has steps of work queued. */
static uint64_t gb_ends[GB_DEPTH];
static unsigned gb_next;

void NOIPA gb_step(void)
{
	prepare_batch();
	for (int i = 0; i < 4; i++)
		rt_launch("conv_kernel", GB_KERNEL_NS);
	gb_ends[gb_next++ % GB_DEPTH] = rt.gpu_free;
	rt_sync(gb_ends[gb_next % GB_DEPTH]);   /* the oldest queued step's end (0: none yet) */
	KEEP_FRAME();
}

/* Every GB_CHECKPOINT_EVERY steps: GB_CHECKPOINT_NS of CPU, longer than the queued work. */
void NOIPA save_checkpoint(void)
{
	uint64_t until = rt_now() + GB_CHECKPOINT_NS;
	SPIN_UNTIL(until, 4096);
}

static int NOIPA realtime(const char *scenario)
{
	unsigned steps = 0;
	if (!strcmp(scenario, "dataload")) {
		/* DRIVER_STEPS: a longer run, for the README's data file size of 10,000 steps */
		const char *n = getenv("DRIVER_STEPS");
		unsigned dl_steps = n && atoi(n) > 0 ? (unsigned)atoi(n) : DL_STEPS;
		for (steps = 0; steps < dl_steps; steps++) {
			dl_step();
			if (steps % 50 == 49)
				hk.deliver();
		}
	} else if (!strcmp(scenario, "tiny")) {
		tiny_loop();
		steps = TINY_LAUNCHES;
	} else if (!strcmp(scenario, "syncbound")) {
		for (steps = 0; steps < SB_STEPS; steps++) {
			sb_step();
			if (steps % 50 == 49)
				hk.deliver();
		}
	} else {
		for (steps = 0; steps < GB_STEPS; steps++) {
			gb_step();
			if (steps % GB_CHECKPOINT_EVERY == GB_CHECKPOINT_EVERY - 1) {
				save_checkpoint();
				hk.deliver();
			}
		}
		rt_sync(rt.gpu_free);
	}
	hk.deliver();
	printf("script: %s steps %u kernels %llu kernel_ns %llu\n", scenario, steps,
	       (unsigned long long)rt.kernels, (unsigned long long)rt.kernel_ns);
	return 0;
}

static int is_realtime(const char *scenario)
{
	return !strcmp(scenario, "dataload") || !strcmp(scenario, "tiny") ||
	       !strcmp(scenario, "syncbound") || !strcmp(scenario, "gpubound");
}

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The parent: the figures report must give, from the records the library wrote. */
static void check_realtime(const char *scenario, const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	if (!f || fstat(fileno(f), &sb)) {
		bad("%s: no file %s", scenario, path);
		return;
	}
	char *data = malloc((size_t)sb.st_size + 1);
	size_t size = fread(data, 1, (size_t)sb.st_size, f);
	fclose(f);
	struct gpu_file_header fh;
	if (size < sizeof(fh) || memcmp(data, GPU_FILE_MAGIC, 8)) {
		bad("%s: no file header", path);
		return;
	}
	memcpy(&fh, data, sizeof(fh));
	size_t cap = 1024, n = 0;
	uint64_t *iv = malloc(cap * 16), first = UINT64_MAX, last = 0, kernel_ns = 0;
	unsigned kernels = 0, syncs = 0, apis = 0, steps = 0, launches = 0;
	for (size_t off = fh.header_size; off + sizeof(struct gpu_rec) <= size;) {
		const struct gpu_rec *h = (const void *)(data + off);
		if (h->size < sizeof(*h) || h->size % 8 || off + h->size > size) {
			bad("%s: record at %zu: bad size %u", path, off, h->size);
			break;
		}
		off += h->size;
		const void *p = h + 1;
		uint64_t s = 0, e = 0;
		switch (h->type) {
		case GPU_REC_GRAPH_NODE:
			launches++;
			continue;
		case GPU_REC_CALL: {   /* a launch record and its API span (protocol 3) */
			const struct gpu_call *c = p;
			s = c->start;
			e = s + (c->flags & GPU_CALL_DURATION_US ? c->duration * 1000ull : c->duration);
			launches++, apis++;
			break;
		}
		case GPU_REC_KERNEL: {
			const struct gpu_kernel *k = p;
			s = k->start, e = k->end;
			kernels++;
			kernel_ns += e - s;
			if (n == cap)
				iv = realloc(iv, (cap *= 2) * 16);
			iv[2 * n] = s, iv[2 * n + 1] = e, n++;
			break;
		}
		case GPU_REC_SYNC: {
			const struct gpu_sync *y = p;
			s = y->start, e = y->end, syncs++;
			break;
		}
		case GPU_REC_MARKER: {
			const struct gpu_marker *m = p;
			steps += !strcmp((const char *)(m + 1), "step") && m->end > m->start;
			continue;
		}
		default:
			continue;
		}
		if (!e || e < s)
			continue;
		first = s < first ? s : first;
		last = e > last ? e : last;
	}
	qsort(iv, n, 16, cmp_iv);
	/* busy: the union of the kernels; idle intervals: the gaps between its pieces and the
	 * window's ends outside it */
	uint64_t busy = 0, cs = 0, ce = 0;
	unsigned pieces = 0;
	for (size_t i = 0; i < n; i++) {
		if (!i || iv[2 * i] > ce) {
			busy += i ? ce - cs : 0;
			cs = iv[2 * i], ce = iv[2 * i + 1];
			pieces++;
		} else if (iv[2 * i + 1] > ce) {
			ce = iv[2 * i + 1];
		}
	}
	busy += n ? ce - cs : 0;
	unsigned intervals = n ? pieces - 1 + (first < iv[0]) + (last > ce) : 0;
	uint64_t window = last > first ? last - first : 0;
	if (!kernels || launches < kernels || apis < kernels)
		bad("%s: %u kernels, %u launches, %u API spans", scenario, kernels, launches, apis);
	else
		printf("ok: %s: kernels %u kernel_ns %llu busy_ns %llu window_ns %llu idle_ns %llu "
		       "intervals %u syncs %u steps %u busy_pct %.1f\n", scenario, kernels,
		       (unsigned long long)kernel_ns, (unsigned long long)busy,
		       (unsigned long long)window, (unsigned long long)(window - busy), intervals,
		       syncs, steps,
		       window ? 100.0 * (double)busy / (double)window : 0.0);
	free(iv);
	free(data);
}

/* A process forked after CUDA init: it makes calls of its own and exits normally; none of it, and
 * none of the parent's unwritten records, may reach any file. */
static void fork_child_calls(void)
{
	for (unsigned i = 0; i < 4; i++) {
		uint32_t corr = 9 * SCRIPT_THREAD_CORR + i;
		CUDA_CALL(&script_main[0], corr, 0);
		push_activity(&script_main[0], corr, 0, 0);
	}
	hk.deliver();
}

static int NOIPA workload(int fork_midway)
{
	static const int needed[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
		CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MARKER,
		CUPTI_ACTIVITY_KIND_OVERHEAD };
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!hk.kind_enabled(needed[i]) &&
		    !(needed[i] == CUPTI_ACTIVITY_KIND_MEMSET && env_disabled("memset")) &&
		    !(needed[i] == CUPTI_ACTIVITY_KIND_MARKER && env_disabled("nvtx"))) {
			fprintf(stderr, "activity kind %d not enabled\n", needed[i]);
			return 3;
		}
	if ((env_disabled("memset") && hk.kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET)) ||
	    (env_disabled("nvtx") && hk.kind_enabled(CUPTI_ACTIVITY_KIND_MARKER))) {
		fprintf(stderr, "a kind left off by CSAMPLER_GPU_DISABLE is enabled\n");
		return 3;
	}
	if (hk.kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL)) {
		fprintf(stderr, "CUPTI_ACTIVITY_KIND_KERNEL enabled (it serialises kernels)\n");
		return 3;
	}
	if (hk.kind_enabled(CUPTI_ACTIVITY_KIND_RUNTIME) ||
	    hk.kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER)) {
		fprintf(stderr, "CUPTI_ACTIVITY_KIND_RUNTIME/DRIVER enabled (a record for every API "
			"call of the program: the library times its own calls' spans)\n");
		return 3;
	}
	hk.get_timestamp(&t0);
	pthread_t th[SCRIPT_WORKERS];
	for (unsigned w = 0; w < SCRIPT_WORKERS; w++)
		pthread_create(&th[w], NULL, worker_main, (void *)(uintptr_t)(w + 1));
	push_markers(0);
	for (unsigned step = 0; step < SCRIPT_STEPS; step++) {
		train_step(step);
		KEEP_FRAME();
		if (fork_midway && step == SCRIPT_STEPS / 2) {
			pid_t pid = fork();
			if (pid == 0) {
				fork_child_calls();
				exit(0);
			}
			int st;
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "forked child failed: %#x\n", st);
				return 3;
			}
		}
		if (step % SCRIPT_DELIVER_EVERY == SCRIPT_DELIVER_EVERY - 1)
			hk.deliver();
	}
	for (unsigned w = 0; w < SCRIPT_WORKERS; w++)
		pthread_join(th[w], NULL);
	train_tail();
	push_markers(1);
	hk.set_dropped(SCRIPT_DROPPED);
	/* the rest is handed back by the flush at exit */
	return 0;
}

/* ---- the checker ---- */

static int fails;
static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("FAIL ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	if (++fails > 30) {
		puts("too many failures");
		exit(1);
	}
}

/* ---- protocol 2's records: what the checks read a protocol 3 file as ----
 * (the recorder reads protocol 3 only: inject/protocol.h keeps these records' type numbers,
 * not their layouts) */
enum gpu_launch_flags {
	GPU_LAUNCH_STACK_TRUNCATED = 1 << 0, /* more than the frame limit */
	GPU_LAUNCH_GRAPH_NODE = 1 << 1,      /* graph_node_id is set: a node captured here */
};

/* Protocol 2's launch record (GPU_REC_LAUNCH), the checks' view of a call (below): one API
 * call (runtime or driver) at ENTER. A runtime call and the driver call inside it share
 * one correlation id: the library records the outermost only. */
struct gpu_launch {
	uint64_t time;             /* at ENTER */
	uint32_t tid;
	uint32_t correlation;      /* CUPTI correlationId */
	uint32_t cbid;             /* CUPTI callback id within domain */
	uint16_t domain;           /* enum gpu_api_domain */
	uint16_t nframes;          /* pcs[] that follow: return addresses, leaf (the caller of the
				    * CUDA API) first; pcs[0] is a return address too */
	uint64_t graph_node_id;    /* GPU_LAUNCH_GRAPH_NODE: the node created here */
	uint32_t flags;            /* enum gpu_launch_flags */
	uint32_t api_name_len;     /* 0, or bytes of the API name after pcs[] (NUL included) */
	uint32_t npy;              /* struct gpu_py_frame after the name (padded to 8) */
	uint32_t py_flags;         /* enum gpu_py_flags */
	/* u64 pcs[nframes]; char api_name[api_name_len]; padding to 8;
	 * struct gpu_py_frame py[npy] */
};

/* Protocol 2's API span (GPU_REC_API), the checks' view of a call's span. */
struct gpu_api {
	uint64_t start, end;
	uint32_t correlation, cbid;
	uint32_t domain;           /* enum gpu_api_domain */
	uint32_t tid;
};

/* A decoded file. Protocol 3's calls are turned back into protocol 2's view for the checks:
 * one struct gpu_launch (stack and API name after it, as protocol 2 laid them out) and one
 * GPU_REC_API span per GPU_REC_CALL, a launch with GPU_LAUNCH_GRAPH_NODE per GPU_REC_GRAPH_NODE;
 * count[] has both the file's record types and these (LAUNCH, API). */
struct decoded {
	struct gpu_file_header fh;
	unsigned count[32];
	const struct gpu_info *info;
	const struct gpu_stats *stats;       /* the last one */
	const char *notes[8];
	unsigned nnotes;
	const struct gpu_launch *launches[4096];
	unsigned nlaunches;
	const struct gpu_rec *recs[8192];
	unsigned nrecs;
	unsigned stacks_seen, names_seen, threads_seen;
	char *data;
	size_t size;
};

struct dec_stack { uint32_t id; const struct gpu_stack *s; };
struct dec_name { uint32_t cbid, domain; const char *name; };

static void dec_add(struct decoded *d, const struct gpu_rec *h)
{
	if (h->type < 32)
		d->count[h->type]++;
	if (d->nrecs < 8192)
		d->recs[d->nrecs++] = h;
}

/* A synthesised protocol-2 launch (and for a call, its span). */
static void dec_launch(struct decoded *d, uint64_t time, uint32_t tid, uint32_t corr,
		       uint32_t cbid, uint32_t domain, const struct gpu_stack *st, const char *name,
		       uint32_t flags, uint64_t node, uint64_t end)
{
	size_t nf = st ? st->nframes : 0, nl = name ? strlen(name) + 1 : 0;
	size_t size = sizeof(struct gpu_rec) + sizeof(struct gpu_launch) + nf * 8 + ((nl + 7) & ~7u);
	struct gpu_rec *h = calloc(1, size);
	*h = (struct gpu_rec){ .type = GPU_REC_LAUNCH, .size = (uint32_t)size };
	struct gpu_launch *l = (struct gpu_launch *)(h + 1);
	*l = (struct gpu_launch){ .time = time, .tid = tid, .correlation = corr, .cbid = cbid,
				  .domain = (uint16_t)domain, .nframes = (uint16_t)nf,
				  .graph_node_id = node,
				  .flags = flags | (st && (st->flags & GPU_STACK_TRUNCATED) ?
						    GPU_LAUNCH_STACK_TRUNCATED : 0),
				  .api_name_len = (uint32_t)nl };
	if (nf)
		memcpy(l + 1, st + 1, nf * 8);
	if (nl)
		memcpy((char *)(l + 1) + nf * 8, name, nl);
	dec_add(d, h);
	if (d->nlaunches < 4096)
		d->launches[d->nlaunches++] = l;
	if (flags & GPU_LAUNCH_GRAPH_NODE)
		return;
	struct gpu_rec *a = calloc(1, sizeof(*a) + sizeof(struct gpu_api));
	*a = (struct gpu_rec){ .type = GPU_REC_API, .size = sizeof(*a) + sizeof(struct gpu_api) };
	*(struct gpu_api *)(a + 1) = (struct gpu_api){ .start = time, .end = end,
		.correlation = corr, .cbid = cbid, .domain = domain, .tid = tid };
	dec_add(d, a);
}

/* A call or graph node record: protocol 2's launch (and span) for the checks, its stack and
 * name looked up among those written before it. */
static void dec_call(struct decoded *d, const struct gpu_rec *h, uint32_t tid,
		     const struct dec_stack *stacks, unsigned nstacks, const struct dec_name *names,
		     unsigned nnames)
{
	const void *p = h + 1;
	uint32_t sid = h->type == GPU_REC_CALL ? ((const struct gpu_call *)p)->stack :
		       ((const struct gpu_graph_node *)p)->stack;
	const struct gpu_stack *st = NULL;
	for (unsigned i = 0; i < nstacks && sid; i++)
		if (stacks[i].id == sid)
			st = stacks[i].s;
	if (sid && !st)
		bad("call: stack %u not written before it", sid);
	if (!tid)
		bad("call record before any thread record");
	d->count[h->type]++;
	if (h->type == GPU_REC_GRAPH_NODE) {
		const struct gpu_graph_node *g = p;
		dec_launch(d, g->time, tid, g->correlation, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
			   GPU_DOMAIN_RESOURCE, st, NULL, GPU_LAUNCH_GRAPH_NODE, g->node_id, 0);
		return;
	}
	const struct gpu_call *c = p;
	const char *name = NULL;
	for (unsigned i = 0; i < nnames; i++)
		if (names[i].cbid == c->cbid && names[i].domain == c->domain)
			name = names[i].name;
	if (!name)
		bad("call corr %u: no name for cbid %u before it", c->correlation, c->cbid);
	uint64_t dur = c->flags & GPU_CALL_DURATION_US ? c->duration * 1000ull : c->duration;
	dec_launch(d, c->start, tid, c->correlation, c->cbid, c->domain, st, name, 0, 0,
		   c->start + dur);
}

static int decode(const char *path, struct decoded *d)
{
	static struct dec_stack stacks[65536];
	static struct dec_name names[1024];
	unsigned nstacks = 0, nnames = 0;
	uint32_t tid = 0;
	memset(d, 0, sizeof(*d));
	FILE *f = fopen(path, "rb");
	if (!f) {
		bad("no file %s: %s", path, strerror(errno));
		return -1;
	}
	d->data = malloc(64 << 20);
	d->size = fread(d->data, 1, 64 << 20, f);
	fclose(f);
	if (d->size < sizeof(d->fh) || memcmp(d->data, GPU_FILE_MAGIC, 8)) {
		bad("%s: no file header", path);
		return -1;
	}
	memcpy(&d->fh, d->data, sizeof(d->fh));
	if (d->fh.version != GPU_PROTOCOL_VERSION || d->fh.header_size != sizeof(d->fh))
		bad("header: version %u size %u", d->fh.version, d->fh.header_size);
	size_t off = d->fh.header_size;
	while (off < d->size) {
		const struct gpu_rec *h = (const void *)(d->data + off);
		if (off + sizeof(*h) > d->size || h->size < sizeof(*h) || h->size % 8 ||
		    off + h->size > d->size) {
			bad("record at %zu: bad size %u (file %zu)", off, h->size, d->size);
			return -1;
		}
		const void *p = h + 1;
		off += h->size;
		switch (h->type) {
		case GPU_REC_THREAD:
			tid = ((const struct gpu_thread *)p)->tid;
			d->threads_seen++;
			continue;
		case GPU_REC_STACK: {
			const struct gpu_stack *st = p;
			for (unsigned i = 0; i < nstacks; i++)
				if (stacks[i].id == st->id)
					bad("stack id %u written twice", st->id);
			if (!st->id || nstacks == 65536)
				bad("stack id %u (%u stacks)", st->id, nstacks);
			else
				stacks[nstacks++] = (struct dec_stack){ st->id, st };
			d->stacks_seen++;
			continue;
		}
		case GPU_REC_API_NAME: {
			const struct gpu_api_name *n = p;
			if (nnames < 1024)
				names[nnames++] = (struct dec_name){ n->cbid, n->domain,
								     (const char *)(n + 1) };
			d->names_seen++;
			continue;
		}
		case GPU_REC_CALL:
		case GPU_REC_GRAPH_NODE:
			dec_call(d, h, tid, stacks, nstacks, names, nnames);
			continue;
		}
		dec_add(d, h);
		switch (h->type) {
		case GPU_REC_INFO:
			d->info = p;
			break;
		case GPU_REC_STATS:
			d->stats = p;
			break;
		case GPU_REC_NOTE:
			if (d->nnotes < 8)
				d->notes[d->nnotes++] = (const char *)p + sizeof(struct gpu_note);
			break;
		}
	}
	return 0;
}

static const char *sym_of(uint64_t pc)
{
	Dl_info di;
	if (!pc || !dladdr((void *)(uintptr_t)(pc - 1), &di) || !di.dli_sname)
		return "?";
	return di.dli_sname;
}

static const struct gpu_launch *launch_of(const struct decoded *d, uint32_t corr, int graph_node)
{
	for (unsigned i = 0; i < d->nlaunches; i++) {
		const struct gpu_launch *l = d->launches[i];
		if (graph_node ? (l->flags & GPU_LAUNCH_GRAPH_NODE) && l->graph_node_id == corr :
				 !(l->flags & GPU_LAUNCH_GRAPH_NODE) && l->correlation == corr)
			return l;
	}
	return NULL;
}

static void check_stack(const struct gpu_launch *l, const char *fn, const char *parent,
			const char *what)
{
	const uint64_t *pcs = (const uint64_t *)(l + 1);
	const char *limit = getenv("CSAMPLER_GPU_STACK");
	if (limit && !strcmp(limit, "0")) {      /* stacks off: none, and nothing else lost */
		if (l->nframes)
			bad("%s: %u frames with CSAMPLER_GPU_STACK=0", what, l->nframes);
		return;
	}
	if (l->nframes < 2) {
		bad("%s: %u frames", what, l->nframes);
		return;
	}
	if (strcmp(sym_of(pcs[0]), fn) || strcmp(sym_of(pcs[1]), parent))
		bad("%s: stack %s <- %s, expected %s <- %s", what, sym_of(pcs[0]), sym_of(pcs[1]),
		    fn, parent);
}

static void expect_count(const struct decoded *d, int type, unsigned want, const char *what)
{
	if (d->count[type] != want)
		bad("%s: %u records, script says %u", what, d->count[type], want);
}

static void check_launch_for(const struct decoded *d, uint32_t corr, const struct script_call *c,
			     const char *what)
{
	const struct gpu_launch *l = launch_of(d, corr, 0);
	if (!l) {
		bad("%s corr %u: no launch record", what, corr);
		return;
	}
	check_stack(l, c->fn, c->parent, what);
}

/* The capture settings of this run, as the library reads them (CSAMPLER_GPU_SUBSCRIBE,
 * CSAMPLER_GPU_LATENCY, CSAMPLER_GPU_DISABLE). */
static int env_disabled(const char *key)
{
	const char *s = getenv("CSAMPLER_GPU_DISABLE");
	size_t n = strlen(key);
	while (s && *s) {
		const char *e = strchrnul(s, ',');
		if ((size_t)(e - s) == n && !strncmp(s, key, n))
			return 1;
		s = *e ? e + 1 : e;
	}
	return 0;
}

static int subscribed_both(void)
{
	const char *s = getenv("CSAMPLER_GPU_SUBSCRIBE");
	return s && !strcmp(s, "both") && !env_disabled("driver-api");
}

static int latency_on(void)
{
	const char *s = getenv("CSAMPLER_GPU_LATENCY");
	return s && !strcmp(s, "1") && !env_disabled("latency");
}

/* What the checks of one workload file found beyond bad() lines. */
struct check_seen {
	unsigned kernels;
	int graph_ok, range_ok, mark_ok;
};

/* One launch record per correlation id, the outermost call's, on its scripted thread, named
 * and on the stack of the function that made it. */
static void check_launches(const struct decoded *d, pid_t main_tid, int both)
{
	for (unsigned i = 0; i < d->nlaunches; i++) {
		const struct gpu_launch *l = d->launches[i];
		if (l->flags & GPU_LAUNCH_GRAPH_NODE)
			continue;
		for (unsigned j = i + 1; j < d->nlaunches; j++)
			if (!(d->launches[j]->flags & GPU_LAUNCH_GRAPH_NODE) &&
			    d->launches[j]->correlation == l->correlation)
				bad("corr %u: two launch records", l->correlation);
		unsigned thread;
		uint32_t corr = l->correlation;
		if (corr == script_corr(0, SCRIPT_STEPS, TAIL_COPY_WEIGHTS) +
			    SCRIPT_DRIVER_CORR_OFFSET)
			corr -= SCRIPT_DRIVER_CORR_OFFSET;
		const struct script_call *c = script_lookup(corr, &thread);
		if (!c) {
			bad("launch with unscripted corr %u", l->correlation);
			continue;
		}
		int want_domain = corr != l->correlation || !both ? GPU_DOMAIN_DRIVER :
				  c->runtime_cbid ? GPU_DOMAIN_RUNTIME : GPU_DOMAIN_DRIVER;
		if (!both && c == &script_tail[TAIL_COPY_WEIGHTS] && corr == l->correlation)
			bad("corr %u: copy_weights' runtime call recorded with driver callbacks only",
			    corr);
		if (l->domain != want_domain)
			bad("corr %u: domain %u, outermost is %d", l->correlation, l->domain,
			    want_domain);
		if ((thread == 0) != (l->tid == (uint32_t)main_tid))
			bad("corr %u: tid %u (main %d, thread %u)", l->correlation, l->tid, main_tid,
			    thread);
		const char *name = (const char *)(l + 1) + l->nframes * 8;
		const char *want_name = want_domain == GPU_DOMAIN_RUNTIME ? c->runtime_name :
									    c->driver_name;
		if (!l->api_name_len || strcmp(name, want_name))
			bad("corr %u: api name '%s', expected %s", l->correlation,
			    l->api_name_len ? name : "", want_name);
		check_stack(l, c->fn, c->parent, "launch");
	}
}

/* A kernel: launch-queue timestamps, shape, and (a graph's) the node's creation stack. */
static void check_kernel(const struct decoded *d, const struct gpu_kernel *k,
			 struct check_seen *seen)
{
	uint32_t corr = k->correlation;
	uint64_t start = k->start;
	seen->kernels++;
	/* launch-queue timestamps only when asked for (else unknown: 0) */
	if (latency_on() ? k->queued != start - 700 || k->submitted != start - 300 :
			   k->queued || k->submitted)
		bad("kernel %u: queued %llu submitted %llu (start %llu, latency %s)",
		    corr, (unsigned long long)k->queued,
		    (unsigned long long)k->submitted, (unsigned long long)start,
		    latency_on() ? "on" : "off");
	if (k->grid[0] != 64 || k->block[0] != 256 || k->registers != 32)
		bad("kernel %u: grid/block/registers", corr);
	if (k->graph_node_id) {
		/* clone -> node created in build_graph -> its stack */
		uint64_t orig = 0;
		for (unsigned j = 0; j < d->nrecs; j++)
			if (d->recs[j]->type == GPU_REC_GRAPH_CLONE) {
				const struct gpu_graph_clone *g =
					(const void *)(d->recs[j] + 1);
				if (g->node_id == k->graph_node_id)
					orig = g->original_id;
			}
		const struct gpu_launch *gl = orig ? launch_of(d, (uint32_t)orig, 1) :
					      NULL;
		if (!gl)
			bad("graph kernel: node %llu has no creation record",
			    (unsigned long long)k->graph_node_id);
		else {
			check_stack(gl, "build_graph", "train_tail", "graph node");
			seen->graph_ok = 1;
		}
	}
}

/* The span of a launch record's call: same id, thread, call; ENTER..EXIT; one per call. */
static void check_api_span(const struct decoded *d, unsigned i, const struct gpu_api *x)
{
	const struct gpu_launch *l = launch_of(d, x->correlation, 0);
	if (!l)
		bad("api span corr %u: no launch record", x->correlation);
	else if (x->start != l->time || x->end - x->start != 4000 || x->tid != l->tid ||
		 x->cbid != l->cbid || x->domain != l->domain)
		bad("api span corr %u: %llu..%llu tid %u cbid %u domain %u; launch at "
		    "%llu tid %u cbid %u domain %u", x->correlation,
		    (unsigned long long)x->start, (unsigned long long)x->end, x->tid,
		    x->cbid, x->domain, (unsigned long long)l->time, l->tid, l->cbid,
		    l->domain);
	for (unsigned j = 0; j < i; j++)
		if (d->recs[j]->type == GPU_REC_API &&
		    ((const struct gpu_api *)(d->recs[j] + 1))->correlation ==
		    x->correlation)
			bad("api span corr %u: two spans", x->correlation);
}

/* The NVTX range "train" on the main thread and the mark "checkpoint". */
static void check_marker(const struct gpu_marker *m, pid_t main_tid, int all_delivered,
			 struct check_seen *seen)
{
	const char *mn = (const char *)(m + 1);
	/* without the END record (flush abandoned), a range open at exit ends then */
	if (!strcmp(mn, "train") && m->tid == (uint32_t)main_tid &&
	    (m->end - m->start == SCRIPT_RANGE_NS ||
	     (!all_delivered && m->end > m->start)))
		seen->range_ok = 1;
	else if (!strcmp(mn, "checkpoint") && m->end == 0)
		seen->mark_ok = 1;
	else
		bad("marker '%s' %llu..%llu", mn, (unsigned long long)m->start,
		    (unsigned long long)m->end);
}

/* An activity record against the script: its type, duration, stream, name, launch stack. */
static void check_scripted(const struct decoded *d, const struct gpu_rec *h, uint32_t corr,
			   uint64_t start, uint64_t end, uint32_t stream, const char *name)
{
	uint32_t scorr = corr == script_corr(0, SCRIPT_STEPS, TAIL_COPY_WEIGHTS) +
				 SCRIPT_DRIVER_CORR_OFFSET ? corr - SCRIPT_DRIVER_CORR_OFFSET :
							      corr;
	const struct script_call *c = script_lookup(scorr, NULL);
	if (!c) {
		bad("record type %u with unscripted corr %u", h->type, corr);
		return;
	}
	static const int type_of[] = { [OP_KERNEL] = GPU_REC_KERNEL,
		[OP_MEMCPY] = GPU_REC_MEMCPY, [OP_MEMSET] = GPU_REC_MEMSET,
		[OP_SYNC] = GPU_REC_SYNC, [OP_GRAPH_LAUNCH] = GPU_REC_KERNEL };
	if (type_of[c->op] != h->type)
		bad("corr %u: record type %u, script says op %d", corr, h->type, c->op);
	if (end - start != script_duration(corr) || start <= d->fh.start_ns)
		bad("corr %u: %llu..%llu, script says %llu ns after start", corr,
		    (unsigned long long)start, (unsigned long long)end,
		    (unsigned long long)script_duration(corr));
	if (stream != c->stream)
		bad("corr %u: stream %u, script says %u", corr, stream, c->stream);
	if (name && strcmp(name, c->name))
		bad("corr %u: kernel '%s', script says '%s'", corr, name, c->name);
	/* the heart of it: the record lands on the stack of the function that launched it */
	check_launch_for(d, corr, c, h->type == GPU_REC_KERNEL ? "kernel" : "activity");
}

/* Every record delivered: the counts, the graph and NVTX findings, the library's stats. */
static void check_totals(const struct decoded *d, unsigned want_launches, unsigned want_spans,
			 const struct check_seen *seen)
{
	int no_memset = env_disabled("memset"), no_nvtx = env_disabled("nvtx");
	expect_count(d, GPU_REC_KERNEL, SCRIPT_KERNELS, "kernels");
	expect_count(d, GPU_REC_MEMCPY, SCRIPT_MEMCPYS, "memcpys");
	expect_count(d, GPU_REC_MEMSET, no_memset ? 0 : SCRIPT_MEMSETS, "memsets");
	expect_count(d, GPU_REC_SYNC, SCRIPT_SYNCS, "syncs");
	expect_count(d, GPU_REC_API, want_spans, "api spans");
	expect_count(d, GPU_REC_MARKER, no_nvtx ? 0 : 2, "markers");
	expect_count(d, GPU_REC_OVERHEAD, 1, "overhead");
	expect_count(d, GPU_REC_GRAPH_CLONE, 1, "graph clones");
	if (!seen->graph_ok)
		bad("graph kernel not traced to build_graph");
	if ((!seen->range_ok || !seen->mark_ok) && !no_nvtx)
		bad("NVTX: range 'train' %s, mark 'checkpoint' %s", seen->range_ok ? "ok" : "missing",
		    seen->mark_ok ? "ok" : "missing");
	if (!d->stats)
		bad("no stats");
	else {
		const struct gpu_stats *s = d->stats;
		unsigned acts = 0;
		for (int t = GPU_REC_KERNEL; t <= GPU_REC_MARKER; t++)
			acts += t == GPU_REC_API ? 0 : d->count[t];
		acts += d->count[GPU_REC_OVERHEAD];
		if (s->dropped != SCRIPT_DROPPED || s->lost_timestamps != SCRIPT_LOST ||
		    s->launches != want_launches || s->launches_dropped ||
		    s->stacks != d->stacks_seen ||
		    s->flush_timeouts || s->write_errors || !s->buffers ||
		    s->activities != acts)
			bad("stats: dropped %llu lost %llu launches %llu/%llu timeouts %llu "
			    "errors %llu buffers %llu activities %llu (file %u)",
			    (unsigned long long)s->dropped,
			    (unsigned long long)s->lost_timestamps,
			    (unsigned long long)s->launches,
			    (unsigned long long)s->launches_dropped,
			    (unsigned long long)s->flush_timeouts,
			    (unsigned long long)s->write_errors,
			    (unsigned long long)s->buffers,
			    (unsigned long long)s->activities, acts);
	}
}

static void check_workload(const struct decoded *d, pid_t main_tid, int all_delivered)
{
	/* Driver callbacks alone (the default): one record per driver call, named by it;
	 * copy_weights' runtime call (its own correlation id) is not seen. Both domains: the
	 * outermost call of each id, and copy_weights' driver call beside it. */
	int both = subscribed_both();
	unsigned want_launches = both ? SCRIPT_LAUNCHES_BOTH : SCRIPT_LAUNCHES;
	unsigned want_spans = both ? SCRIPT_SPANS_BOTH : SCRIPT_SPANS;
	if (!d->info || d->info->status != GPU_STATUS_OK)
		bad("info: status %d", d->info ? (int)d->info->status : -1);
	else if (d->info->clock_offset_ns > 100000 || d->info->clock_offset_ns < -100000)
		bad("info: clock offset %lld ns with a CLOCK_MONOTONIC timestamp callback",
		    (long long)d->info->clock_offset_ns);
	expect_count(d, GPU_REC_LAUNCH, want_launches, "launches");
	if (d->stacks_seen > 16)
		bad("%u stacks written for %u distinct call paths", d->stacks_seen, 16);
	check_launches(d, main_tid, both);
	struct check_seen seen = { 0 };
	for (unsigned i = 0; i < d->nrecs; i++) {
		const struct gpu_rec *h = d->recs[i];
		const void *p = h + 1;
		switch (h->type) {
		case GPU_REC_KERNEL: {
			const struct gpu_kernel *k = p;
			check_kernel(d, k, &seen);
			check_scripted(d, h, k->correlation, k->start, k->end, k->stream,
				       (const char *)(k + 1));
			break;
		}
		case GPU_REC_MEMCPY: {
			const struct gpu_memcpy *m = p;
			check_scripted(d, h, m->correlation, m->start, m->end, m->stream, NULL);
			break;
		}
		case GPU_REC_MEMSET: {
			const struct gpu_memset *m = p;
			check_scripted(d, h, m->correlation, m->start, m->end, m->stream, NULL);
			break;
		}
		case GPU_REC_SYNC: {
			const struct gpu_sync *y = p;
			check_scripted(d, h, y->correlation, y->start, y->end, y->stream, NULL);
			break;
		}
		case GPU_REC_API:
			check_api_span(d, i, p);
			break;
		case GPU_REC_MARKER:
			check_marker(p, main_tid, all_delivered, &seen);
			break;
		}
	}
	if (all_delivered)
		check_totals(d, want_launches, want_spans, &seen);
	if (!fails)
		printf("ok: %u launches (%u stacks, %u names), %u kernels, every record on its "
		       "launching function's stack\n", d->nlaunches, d->stacks_seen, d->names_seen,
		       seen.kernels);
}

/* Exactly one note (containing `text`), an info with `status`, and nothing else. */
static void check_disabled(const struct decoded *d, unsigned status, const char *text)
{
	unsigned others = 0;
	for (int t = 0; t < 16; t++)
		if (t != GPU_REC_NOTE && t != GPU_REC_INFO)
			others += d->count[t];
	if (d->count[GPU_REC_NOTE] != 1 || d->count[GPU_REC_INFO] != 1 || others)
		bad("%u notes, %u infos, %u other records (want 1, 1, 0)", d->count[GPU_REC_NOTE],
		    d->count[GPU_REC_INFO], others);
	if (!d->info || d->info->status != status)
		bad("status %d, want %u", d->info ? (int)d->info->status : -1, status);
	if (d->nnotes && !strstr(d->notes[0], text))
		bad("note '%s' does not name '%s'", d->notes[0], text);
	if (!fails)
		printf("ok: status %u, note: %s\n", status, d->nnotes ? d->notes[0] : "");
}

static unsigned count_files(const char *dir)
{
	DIR *dp = opendir(dir);
	unsigned n = 0;
	struct dirent *e;
	while (dp && (e = readdir(dp)))
		if (e->d_name[0] != '.')
			n++;
	if (dp)
		closedir(dp);
	return n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The child: the CUDA program. */
static int stackreset(void);
static void check_stackreset(const struct decoded *d);

static int play(const char *scenario, const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
		return 2;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "no InitializeInjection in %s\n", lib);
		return 2;
	}
	int have_hooks = load_hooks() == 0;
	if (strcmp(scenario, "real") && !have_hooks) {
		fprintf(stderr, "the stand-in libcupti is not the one loaded (LD_LIBRARY_PATH?)\n");
		return 2;
	}
	/* noinit: a program that loads the library but never initialises CUDA */
	if (strcmp(scenario, "noinit") && init() != 1) {
		fprintf(stderr, "InitializeInjection did not return 1\n");
		return 2;
	}
	if (!strcmp(scenario, "real") || !strcmp(scenario, "error") || !strcmp(scenario, "busy") ||
	    !strcmp(scenario, "noinit")) {
		if (have_hooks) {
			hk.get_timestamp(&t0);
			train_step(0);   /* calls go on; nothing may be recorded */
			hk.deliver();
		}
		return 0;
	}
	if (!strcmp(scenario, "syncwait"))
		return syncwait();
	if (is_realtime(scenario))
		return realtime(scenario);
	if (!strcmp(scenario, "stackreset"))
		return stackreset();
	return workload(!strcmp(scenario, "fork"));
}

static int run_scenario(const char *scenario, const char *lib)
{
	const char *dir = getenv("CSAMPLER_GPU_DIR");
	if (!dir) {
		fprintf(stderr, "CSAMPLER_GPU_DIR not set\n");
		return 2;
	}
	double t_start = now_s();
	pid_t pid = fork();
	if (pid == 0) {
		fflush(stdout);
		exit(play(scenario, lib));
	}
	int st;
	waitpid(pid, &st, 0);
	double elapsed = now_s() - t_start;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		bad("%s: the program exited with status %#x", scenario, st);
		return 1;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/gpu-%d.bin", dir, (int)pid);
	if (!strcmp(scenario, "noinit")) {
		if (count_files(dir))
			bad("noinit: %u files in %s, CUDA was never initialised", count_files(dir), dir);
		else
			puts("ok: no file");
		return fails > 0;
	}
	if (is_realtime(scenario)) {
		check_realtime(scenario, path);
		return fails > 0;
	}
	struct decoded *d = calloc(1, sizeof(*d));
	if (decode(path, d))
		return 1;
	if (d->fh.pid != (uint32_t)pid)
		bad("header pid %u, child %d", d->fh.pid, (int)pid);
	if (!strcmp(scenario, "workload")) {
		check_workload(d, pid, 1);
	} else if (!strcmp(scenario, "syncwait")) {
		if (d->count[GPU_REC_KERNEL] != 2 * SYNCWAIT_STEPS ||
		    d->count[GPU_REC_SYNC] != 2 * SYNCWAIT_STEPS ||
		    d->count[GPU_REC_API] != 4 * SYNCWAIT_STEPS)
			bad("syncwait: %u kernels, %u syncs, %u API spans (want %u, %u, %u)",
			    d->count[GPU_REC_KERNEL], d->count[GPU_REC_SYNC], d->count[GPU_REC_API],
			    2 * SYNCWAIT_STEPS, 2 * SYNCWAIT_STEPS, 4 * SYNCWAIT_STEPS);
		else
			printf("ok: syncwait: %u kernels, %u syncs\n", d->count[GPU_REC_KERNEL],
			       d->count[GPU_REC_SYNC]);
	} else if (!strcmp(scenario, "fork")) {
		if (count_files(dir) != 1)
			bad("fork: %u files in %s (the forked child wrote one)", count_files(dir), dir);
		check_workload(d, pid, 1);
	} else if (!strcmp(scenario, "hang")) {
		const char *ms = getenv("CSAMPLER_GPU_FLUSH_MS");
		double limit = (ms ? atof(ms) : 3000) / 1000;
		if (elapsed < limit || elapsed > limit + 5)
			bad("hang: the program took %.2f s with a %.2f s flush watchdog", elapsed, limit);
		if (!d->stats || d->stats->flush_timeouts != 1)
			bad("hang: flush_timeouts %llu",
			    d->stats ? (unsigned long long)d->stats->flush_timeouts : 0ull);
		int noted = 0;
		for (unsigned i = 0; i < d->nnotes; i++)
			noted |= strstr(d->notes[i], "did not return") != NULL;
		if (!noted)
			bad("hang: no note about the abandoned flush");
		check_workload(d, pid, 0);  /* launches all there; activity up to the last delivery */
		if (!fails)
			printf("ok: exited after %.2f s, flush abandoned and counted\n", elapsed);
	} else if (!strcmp(scenario, "stackreset")) {
		check_stackreset(d);
	} else if (!strcmp(scenario, "busy")) {
		check_disabled(d, GPU_STATUS_OTHER_SUBSCRIBER, "Nsight Systems 2025.5");
	} else if (!strcmp(scenario, "error")) {
		check_disabled(d, GPU_STATUS_CUPTI_ERROR, "CUPTI_ERROR_NOT_INITIALIZED");
		if (d->info && d->info->cupti_error != CUPTI_ERROR_NOT_INITIALIZED)
			bad("cupti_error %d", d->info->cupti_error);
	} else if (!strcmp(scenario, "real")) {
		check_disabled(d, GPU_STATUS_CUPTI_ERROR, "failed");
		if (d->info && (!d->info->cupti_error || d->info->cupti_version < 130000))
			bad("real libcupti: error %d version %u", d->info->cupti_error,
			    d->info->cupti_version);
		if (elapsed > 20)
			bad("real libcupti: %.1f s", elapsed);
	} else {
		fprintf(stderr, "unknown scenario %s\n", scenario);
		return 2;
	}
	return fails > 0;
}

/* ---- benchmark: launch-path cost ---- */

static uint64_t ns_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The alternatives to in-process unwinding, timed the same way beside the stand-in's call
 * (no injection library): copying 32 KiB of user stack per launch into a ring written out with
 * one write(2) per MiB (what a perf-style REGS_USER+STACK_USER capture costs before any
 * unwinding), and glibc's backtrace(). */
enum bench_extra { EXTRA_NONE, EXTRA_COPY32K, EXTRA_BACKTRACE };
static enum bench_extra bench_extra;
static int bench_fd = -1;
static char bench_ring[1 << 20];
static size_t bench_ring_len;

static void NOIPA bench_capture(void)
{
	if (bench_extra == EXTRA_COPY32K) {
		const char *sp = __builtin_frame_address(0);
		if (bench_ring_len + 32768 > sizeof(bench_ring)) {
			if (write(bench_fd, bench_ring, bench_ring_len) < 0)
				abort();
			bench_ring_len = 0;
		}
		memcpy(bench_ring + bench_ring_len, sp, 32768);
		bench_ring_len += 32768;
	} else if (bench_extra == EXTRA_BACKTRACE) {
		void *pcs[64];
		backtrace(pcs, 64);
	}
}

/* The launches come from BENCH_PATHS distinct call paths of 20 to 40 frames, made of eight
 * frame functions in a fixed pseudo-random order per path (distinct return-address sequences, as
 * a framework's many launch sites are), taken in turn. Each launch is timed alone, at the leaf;
 * the GPU's kernel record is queued after it, outside the timed part (the stand-in's cost, not
 * the library's). */
#define BENCH_PATHS 50          /* the default; `driver bench ... PATHS` up to BENCH_MAX_PATHS */
#define BENCH_MAX_PATHS 4096
static unsigned bench_npaths = BENCH_PATHS;
static unsigned bench_burst_size;   /* launches per burst; 0: RATE/1000 */
#define BENCH_MAX_DEPTH 40
static uint8_t bench_path[BENCH_MAX_PATHS][BENCH_MAX_DEPTH];
static unsigned bench_depth[BENCH_MAX_PATHS];
typedef uint64_t (*bench_fn)(unsigned path, unsigned level, uint32_t corr);
static bench_fn bench_fns[8];

uint64_t NOIPA bench_leaf(uint32_t corr)
{
	uint64_t a = ns_now();
	CUDA_CALL(&script_main[0], corr, 0);
	uint64_t d = ns_now() - a;
	if (bench_extra)
		bench_capture();
	push_activity(&script_main[0], corr, 0, 0);
	return d;
}

#define BENCH_FRAME(k)                                                              \
	uint64_t NOIPA bench_frame##k(unsigned path, unsigned level, uint32_t corr)  \
	{                                                                           \
		uint64_t r = level + 1 < bench_depth[path] ?                        \
			bench_fns[bench_path[path][level + 1]](path, level + 1, corr) :  \
			bench_leaf(corr);                                           \
		KEEP_FRAME();                                                       \
		return r;                                                           \
	}
BENCH_FRAME(0) BENCH_FRAME(1) BENCH_FRAME(2) BENCH_FRAME(3)
BENCH_FRAME(4) BENCH_FRAME(5) BENCH_FRAME(6) BENCH_FRAME(7)

static void bench_paths(void)
{
	bench_fn f[8] = { bench_frame0, bench_frame1, bench_frame2, bench_frame3, bench_frame4,
			  bench_frame5, bench_frame6, bench_frame7 };
	memcpy(bench_fns, f, sizeof(f));
	uint32_t x = 2463534242u;
	for (unsigned p = 0; p < bench_npaths; p++) {
		bench_depth[p] = 20 + (p * 7) % 21;
		for (unsigned l = 0; l < BENCH_MAX_DEPTH; l++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			bench_path[p][l] = (uint8_t)(x % 8);
		}
	}
}

/* the first launch of each burst (after the sleep) apart from the others: ns, count */
static uint64_t bench_first_ns, bench_first_n;

static uint64_t bench_burst(unsigned n, uint32_t *corr, unsigned *next_path)
{
	uint64_t busy = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned p = (*next_path)++ % bench_npaths;
		uint64_t d = bench_fns[bench_path[p][0]](p, 0, (*corr)++);
		busy += d;
		if (i == 0) {
			bench_first_ns += d;
			bench_first_n++;
		}
	}
	return busy;
}

static int bench(const char *mode, long rate, long launches)
{
	if (!strcmp(mode, "copy32k") || !strcmp(mode, "backtrace")) {
		bench_extra = mode[0] == 'c' ? EXTRA_COPY32K : EXTRA_BACKTRACE;
		char path[4096];
		snprintf(path, sizeof(path), "%s/copy.bin", getenv("CSAMPLER_GPU_DIR") ?
			 getenv("CSAMPLER_GPU_DIR") : "/tmp");
		bench_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
		if (bench_fd < 0) {
			fprintf(stderr, "bench: open %s: %s\n", path, strerror(errno));
			return 2;
		}
		void *warm[4];
		backtrace(warm, 4);
		mode = "none";
	}
	if (strcmp(mode, "none")) {
		void *h = dlopen(mode, RTLD_NOW);
		int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
		if (!init || init() != 1) {
			fprintf(stderr, "bench: cannot load %s: %s\n", mode, dlerror());
			return 2;
		}
	} else if (!dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "bench: no stand-in libcupti: %s\n", dlerror());
		return 2;
	}
	if (load_hooks()) {
		fprintf(stderr, "bench: the stand-in libcupti is not loaded\n");
		return 2;
	}
	bench_paths();
	/* 64 KiB of this frame lie above the launches: room for the 32 KiB copy */
	volatile char headroom[65536];
	headroom[0] = 0;
	/* bursts every millisecond, rate/1000 launches each (or BURST launches every BURST/rate
	 * seconds); only the launches are timed; CUPTI hands a buffer back every 20 bursts */
	unsigned per_ms = rate >= 1000 ? (unsigned)(rate / 1000) : 1, path = 0;
	uint64_t period = 1000000;   /* ns between bursts */
	if (bench_burst_size) {
		per_ms = bench_burst_size;
		period = 1000000000ull * per_ms / (uint64_t)(rate > 0 ? rate : 1);
	}
	uint32_t corr = 1;
	uint64_t busy = 0, done = 0, next = ns_now();
	bench_burst(bench_npaths, &corr, &path);   /* warm: every path once */
	bench_first_ns = bench_first_n = 0;
	for (unsigned burst = 1; (long)done < launches; burst++) {
		busy += bench_burst(per_ms, &corr, &path);
		done += per_ms;
		if (burst % 20 == 0)
			hk.deliver();
		next += period;
		struct timespec ts = { .tv_sec = (time_t)(next / 1000000000ull),
				       .tv_nsec = (long)(next % 1000000000ull) };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	printf("%.1f\n", (double)busy / (double)done + headroom[0]);
	/* stderr: the first launch of a burst and the others apart (bench-gpu-launch.sh) */
	if (done > bench_first_n && bench_first_n)
		fprintf(stderr, "bench: first of a burst %.1f ns, the others %.1f ns\n",
			(double)bench_first_ns / (double)bench_first_n,
			(double)(busy - bench_first_ns) / (double)(done - bench_first_n));
	return 0;
}

/* ---- stack ids across a reset of the library's stack table ---- */

/* t-cupti.sh runs it with CSAMPLER_GPU_STACK_TABLE=8: the library's table of the thread's
 * stacks starts again every 8 new stacks, while call path 0, launched between each of the
 * others, keeps its id under the unwinder's token (the stack memo keeps 256 stacks). */
#define STACKRESET_PATHS 40
#define STACKRESET_ROUNDS 3

static int stackreset(void)
{
	bench_npaths = STACKRESET_PATHS;
	bench_paths();
	uint32_t corr = 1;
	for (unsigned r = 0; r < STACKRESET_ROUNDS; r++) {
		for (unsigned p = 1; p < STACKRESET_PATHS; p++) {
			bench_fns[bench_path[0][0]](0, 0, corr++);
			bench_fns[bench_path[p][0]](p, 0, corr++);
		}
	}
	hk.deliver();
	return 0;
}

/* Every launch was recorded, each with its whole stack (bench_leaf among its frames), and
 * the table did start again (more stack records than call paths). */
static void check_stackreset(const struct decoded *d)
{
	unsigned want = 2 * STACKRESET_ROUNDS * (STACKRESET_PATHS - 1), without = 0;
	for (unsigned i = 0; i < d->nlaunches; i++) {
		const struct gpu_launch *l = d->launches[i];
		const uint64_t *pcs = (const uint64_t *)(l + 1);
		int leaf = 0;
		for (unsigned k = 0; k < l->nframes && !leaf; k++)
			leaf = !strcmp(sym_of(pcs[k]), "bench_leaf");
		if (!leaf && without++ < 3)
			bad("stackreset: launch corr %u has %u frames, none in bench_leaf",
			    l->correlation, (unsigned)l->nframes);
	}
	if (d->nlaunches != want)
		bad("stackreset: %u launches recorded, %u made", d->nlaunches, want);
	if (d->stacks_seen <= STACKRESET_PATHS)
		bad("stackreset: %u stacks written for %u call paths: the table never started again",
		    d->stacks_seen, STACKRESET_PATHS);
	if (!fails)
		printf("ok: %u launches from %u call paths, each with its stack under bench_leaf; "
		       "%u stacks written (the table started again)\n", d->nlaunches,
		       STACKRESET_PATHS, d->stacks_seen);
}

/* driver dump FILE: a summary of any gpu-PID.bin (for runs on a real GPU): info, notes, stats,
 * record counts, and per kernel name its calls, GPU time, how many found their launch record
 * and the first frames of one launch stack (raw addresses, for addr2line). */
static int dump(const char *path)
{
	struct decoded *d = calloc(1, sizeof(*d));
	if (decode(path, d))
		return 1;
	printf("pid %u ppid %u start %llu\n", d->fh.pid, d->fh.ppid,
	       (unsigned long long)d->fh.start_ns);
	if (d->info)
		printf("info: cupti %u status %u error %d clock offset %lld ns (read in %llu ns)\n",
		       d->info->cupti_version, d->info->status, d->info->cupti_error,
		       (long long)d->info->clock_offset_ns,
		       (unsigned long long)(d->info->clock_after_ns - d->info->clock_before_ns));
	for (unsigned i = 0; i < d->nnotes; i++)
		printf("note: %s\n", d->notes[i]);
	if (d->stats)
		printf("stats: launches %llu dropped-launches %llu activities %llu dropped %llu "
		       "lost %llu buffers %llu flush-timeouts %llu write-errors %llu capture %.0f ns/launch\n",
		       (unsigned long long)d->stats->launches,
		       (unsigned long long)d->stats->launches_dropped,
		       (unsigned long long)d->stats->activities, (unsigned long long)d->stats->dropped,
		       (unsigned long long)d->stats->lost_timestamps,
		       (unsigned long long)d->stats->buffers,
		       (unsigned long long)d->stats->flush_timeouts,
		       (unsigned long long)d->stats->write_errors,
		       d->stats->launches ? (double)d->stats->capture_ns / d->stats->launches : 0.0);
	static const char *names[] = { "", "info", "launch", "kernel", "memcpy", "memset", "sync",
				       "api", "marker", "stats", "note", "overhead", "graph-clone" };
	for (int t = 1; t < 13; t++)
		printf("%s %u%s", names[t], d->count[t], t == 12 ? "\n" : ", ");
	/* launches are looked up by correlation id in a table */
	enum { H = 1 << 20 };
	const struct gpu_launch **by_corr = calloc(H, sizeof(*by_corr));
	for (unsigned i = 0; i < d->nlaunches; i++)
		if (!(d->launches[i]->flags & GPU_LAUNCH_GRAPH_NODE))
			by_corr[d->launches[i]->correlation % H] = d->launches[i];
	struct kname { const char *name; unsigned calls, found; uint64_t ns; const uint64_t *pcs;
		       unsigned nframes; } kn[256];
	unsigned nk = 0;
	size_t off = d->fh.header_size;
	while (off < d->size) {
		const struct gpu_rec *h = (const void *)(d->data + off);
		off += h->size;
		if (h->type != GPU_REC_KERNEL)
			continue;
		const struct gpu_kernel *k = (const void *)(h + 1);
		const char *name = (const char *)(k + 1);
		unsigned i;
		for (i = 0; i < nk && strcmp(kn[i].name, name); i++)
			;
		if (i == nk) {
			if (nk == 256)
				continue;
			kn[nk++] = (struct kname){ .name = name };
		}
		kn[i].calls++;
		kn[i].ns += k->end - k->start;
		const struct gpu_launch *l = by_corr[k->correlation % H];
		if (l && l->correlation == k->correlation) {
			kn[i].found++;
			kn[i].pcs = (const uint64_t *)(l + 1);
			kn[i].nframes = l->nframes;
		}
	}
	for (unsigned i = 0; i < nk; i++) {
		printf("kernel %-40.40s calls %6u gpu %10.3f ms launch found %6u stack",
		       kn[i].name, kn[i].calls, kn[i].ns / 1e6, kn[i].found);
		for (unsigned f = 0; f < kn[i].nframes && f < 6; f++)
			printf(" %#llx", (unsigned long long)kn[i].pcs[f]);
		putchar('\n');
	}
	return 0;
}

/* driver expect: the figures csampler report must give for the "workload" scenario, computed
 * from script.h alone (the records the workload pushes, replayed here): per kernel name calls,
 * total, min, max ns; busy ns per stream and for the device (unions of the copies', memsets'
 * and kernels' intervals); the window (first to last record, API spans included); the blocked
 * time of the main thread (union of its syncs and its sync API spans). Times from t0. */
struct exp_rec { int op; uint32_t stream; uint64_t start, end; const char *name; };

static int cmp_exp(const void *a, const void *b)
{
	const struct exp_rec *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static uint64_t exp_union(struct exp_rec *r, unsigned n, int (*keep)(const struct exp_rec *, long),
			  long arg)
{
	uint64_t busy = 0, cs = 0, ce = 0;
	int open = 0;
	qsort(r, n, sizeof(*r), cmp_exp);
	for (unsigned i = 0; i < n; i++) {
		if (!keep(&r[i], arg))
			continue;
		if (!open || r[i].start > ce) {
			busy += open ? ce - cs : 0;
			cs = r[i].start, ce = r[i].end, open = 1;
		} else if (r[i].end > ce) {
			ce = r[i].end;
		}
	}
	return busy + (open ? ce - cs : 0);
}

static int keep_stream(const struct exp_rec *r, long s)
{
	return r->op != OP_SYNC && r->op != 0 && (s < 0 || r->stream == (uint32_t)s);
}

static int keep_wait(const struct exp_rec *r, long unused)
{
	(void)unused;
	return r->op == OP_SYNC;
}

static int expect(void)
{
	static struct exp_rec r[4096], w[256];
	unsigned n = 0, nw = 0;
	uint64_t first = UINT64_MAX, last = 0;
	for (unsigned t = 0; t <= SCRIPT_WORKERS; t++)
		for (unsigned step = 0; step <= SCRIPT_STEPS; step++)
			for (unsigned i = 0; i < 16; i++) {
				uint32_t corr = script_corr(t, step, i);
				const struct script_call *c = script_lookup(corr, NULL);
				if (!c)
					continue;
				/* the API span of the outermost call */
				uint64_t a0 = script_offset(corr) - 5000, a1 = script_offset(corr) - 1000;
				first = a0 < first ? a0 : first;
				last = a1 > last ? a1 : last;
				if (c->op == OP_SYNC)
					w[nw++] = (struct exp_rec){ OP_SYNC, 0, a0, a1, NULL };
				if (t == 0 && step == SCRIPT_STEPS && i == TAIL_LOST_KERNEL)
					continue;   /* lost timestamps: not in the file */
				uint32_t rc = t == 0 && step == SCRIPT_STEPS && i == TAIL_COPY_WEIGHTS ?
					      corr + SCRIPT_DRIVER_CORR_OFFSET : corr;
				struct exp_rec e = { c->op == OP_GRAPH_LAUNCH ? OP_KERNEL : c->op,
						     c->stream, script_offset(rc),
						     script_offset(rc) + script_duration(rc), c->name };
				first = e.start < first ? e.start : first;
				last = e.end > last ? e.end : last;
				if (e.op == OP_SYNC)
					w[nw++] = e;
				else
					r[n++] = e;
			}
	/* kernels by name, in the order met */
	const char *names[16];
	unsigned nn = 0;
	for (unsigned i = 0; i < n; i++) {
		if (r[i].op != OP_KERNEL)
			continue;
		unsigned k = 0;
		while (k < nn && strcmp(names[k], r[i].name))
			k++;
		if (k == nn)
			names[nn++] = r[i].name;
	}
	for (unsigned k = 0; k < nn; k++) {
		uint64_t calls = 0, total = 0, mn = UINT64_MAX, mx = 0;
		for (unsigned i = 0; i < n; i++) {
			if (r[i].op != OP_KERNEL || strcmp(r[i].name, names[k]))
				continue;
			uint64_t d = r[i].end - r[i].start;
			calls++, total += d;
			mn = d < mn ? d : mn;
			mx = d > mx ? d : mx;
		}
		printf("kernel\t%s\t%llu\t%llu\t%llu\t%llu\n", names[k], (unsigned long long)calls,
		       (unsigned long long)total, (unsigned long long)mn, (unsigned long long)mx);
	}
	for (long s = 0; s <= 3; s++)
		printf("stream\t%ld\t%llu\n", s, (unsigned long long)exp_union(r, n, keep_stream, s));
	printf("device\t0\t%llu\n", (unsigned long long)exp_union(r, n, keep_stream, -1));
	printf("window\t%llu\n", (unsigned long long)(last - first));
	printf("blocked\t%llu\n", (unsigned long long)exp_union(w, nw, keep_wait, 0));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "load")) {
		if (!dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "%s\n", dlerror());
			return 2;
		}
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "expect"))
		return expect();
	if (argc == 3 && !strcmp(argv[1], "dump"))
		return dump(argv[2]);
	if (argc >= 5 && argc <= 7 && !strcmp(argv[1], "bench")) {
		if (argc == 7) {
			long burst = atol(argv[6]);
			if (burst < 1 || burst > 1000000) {
				fprintf(stderr, "driver bench: BURST must be 1 to 1000000\n");
				return 2;
			}
			bench_burst_size = (unsigned)burst;
		}
		if (argc >= 6) {
			long paths = atol(argv[5]);
			if (paths < 1 || paths > BENCH_MAX_PATHS) {
				fprintf(stderr, "driver bench: PATHS must be 1 to %d\n", BENCH_MAX_PATHS);
				return 2;
			}
			bench_npaths = (unsigned)paths;
		}
		return bench(argv[2], atol(argv[3]), atol(argv[4]));
	}
	if (argc == 3)
		return run_scenario(argv[1], argv[2]);
	fprintf(stderr, "usage: driver SCENARIO LIB | load LIB | bench LIB|none RATE LAUNCHES\n");
	return 2;
}
