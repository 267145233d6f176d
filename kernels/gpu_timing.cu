/* gpu_timing.cu: --time-kernels for the CUDA backend: CUDA events recorded on the backend's
 * stream around every kernel launch, every CUB call (one unit, however many kernels CUB launches
 * inside) and every phase (the NVTX ranges of gpu_backend.cuh, GPU_PHASE_BEGIN/END), summed per
 * name and printed as one table at the end of the run.
 *
 * Without --time-kernels the context has no gpu_timing (ctx->timing == NULL): no event is
 * created or recorded, and every hook is one pointer test.
 *
 * No synchronisation of its own while training: each bracket takes a slot of a ring of event
 * pairs; a slot is read back (cudaEventSynchronize on its end event, then cudaEventElapsedTime)
 * only when the ring comes round to it again, GPU_TIMING_SLOTS brackets later. The trainer waits
 * for the stream every iteration (render reads the pair count) and an iteration takes about 20
 * brackets, so those events have long completed and the read does not wait. gpu_timing_report
 * synchronises and reads the rest.
 *
 * The hold: a CUDA event is timestamped when the GPU reaches it in the stream. Recorded just
 * before a launch on an idle GPU, the start event is reached at once and the kernel only when the
 * CPU has finished launching it, so the bracket would also count that launch gap (measured on an
 * H100: 3-11 us per call, doubling the time of 5 us kernels). So before a kernel or CUB bracket a
 * one-thread kernel (gpu_timing_hold_kernel) keeps the stream busy for GPU_TIMING_HOLD_NS: the
 * start event and the kernel are then both queued by the time the GPU reaches them. Measured on
 * an H100 against CUPTI's kernel records of the same run, a bracket still exceeds its kernel by
 * 2.5-4.5 us per call (the events' own cost in the stream; gpu_preprocess_kernel: 7.8 us by
 * events, 5.3 us by CUPTI; without the hold 9.3 us): per-kernel totals agree within 2.4% for the
 * two blend kernels (85% of GPU time), not for kernels of a few microseconds. The holds are part of the phases' brackets (each phase line says
 * how many it contains) and show up in a profiler as their own kernel.
 *
 * Names: a kernel is named by its __global__ function's identifier (the demangled name without
 * the parameter list, e.g. gpu_preprocess_kernel), and its mangled symbol, which is what CUPTI's
 * kernel records carry, is printed beside it (from cudaFuncGetName, checked to demangle to that
 * identifier). A CUB call is named as called (cub::DeviceScan::InclusiveSum); its mangled column
 * is "-". Phases are named as their NVTX ranges. */
#include "gpu_backend.cuh"

#include <cxxabi.h>
#include <stdlib.h>
#include <string.h>

#define GPU_TIMING_SLOTS 4096   /* event pairs in the ring */
#define GPU_TIMING_DEPTH 16     /* brackets open at once: a phase, a nested phase, a kernel */
#define GPU_TIMING_NAMES 64     /* distinct kernels, CUB calls and phases */
#define GPU_TIMING_HOLD_NS 40000ull /* longer than launching the bracketed kernel takes */

/* Spin one thread for ns of the GPU's global timer: see "The hold" above. */
__global__ void gpu_timing_hold_kernel(unsigned long long ns)
{
	unsigned long long start, now;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

struct gpu_timer {
	const char *name;               /* static string: the kernel identifier, CUB call or phase */
	const char *mangled;            /* CUDA runtime's string, or NULL */
	enum gpu_time_kind kind;
	unsigned long long calls;       /* brackets closed */
	double total_ms;                /* of the brackets read back */
	unsigned long long holds;       /* phases: holds launched inside their brackets */
};

struct gpu_timing_slot {
	cudaEvent_t start, end;         /* created on first use */
	int timer;                      /* index into timers */
	int open, pending;              /* open: begun, not ended; pending: ended, not read back */
};

struct gpu_timing {
	cudaStream_t stream;
	struct gpu_timer timers[GPU_TIMING_NAMES];
	int n_timers;
	struct gpu_timing_slot *ring;   /* [GPU_TIMING_SLOTS] */
	size_t next;
	int stack[GPU_TIMING_DEPTH];    /* open slots, innermost last */
	int depth;
	unsigned long long unread;      /* brackets whose events could not be read back */
	const char *failed;             /* first failure; timing stops there and the table says so */
};

/* Stop timing after a failure, saying so once; training goes on untimed. A failed event call
 * may leave its error as the runtime's last error, where the next GPU_CHECK_LAUNCH would blame
 * a kernel for it: clear it here (any error before it was already checked). */
static void gpu_timing_fail(struct gpu_timing *t, const char *what, cudaError_t status)
{
	if (t->failed)
		return;
	t->failed = what;
	fprintf(stderr, "splat-train: --time-kernels: %s failed%s%s; timing stops here and the table covers "
		"what was timed before\n", what, status != cudaSuccess ? ": " : "",
		status != cudaSuccess ? cudaGetErrorString(status) : "");
	cudaGetLastError();
}

int gpu_timing_create(cudaStream_t stream, struct gpu_timing **out)
{
	struct gpu_timing *t = (struct gpu_timing *)calloc(1, sizeof(*t));

	*out = NULL;
	if (!t || !(t->ring = (struct gpu_timing_slot *)calloc(GPU_TIMING_SLOTS, sizeof(*t->ring)))) {
		free(t);
		return splat_error(ENOMEM, "--time-kernels: out of host memory for the timing ring");
	}
	t->stream = stream;
	*out = t;
	return 0;
}

void gpu_timing_destroy(struct gpu_timing *t)
{
	if (!t)
		return;
	for (size_t s = 0; s < GPU_TIMING_SLOTS; s++) {
		if (t->ring[s].start)
			cudaEventDestroy(t->ring[s].start);
		if (t->ring[s].end)
			cudaEventDestroy(t->ring[s].end);
	}
	cudaGetLastError();
	free(t->ring);
	free(t);
}

/* The timer of name (compared by pointer first: the names are string literals), added when new. */
static int gpu_timing_timer(struct gpu_timing *t, enum gpu_time_kind kind, const char *name, const void *func)
{
	for (int i = 0; i < t->n_timers; i++)
		if (t->timers[i].kind == kind && (t->timers[i].name == name || !strcmp(t->timers[i].name, name)))
			return i;
	if (t->n_timers == GPU_TIMING_NAMES) {
		gpu_timing_fail(t, "the timer table (more than 64 names)", cudaSuccess);
		return -1;
	}
	struct gpu_timer *tm = &t->timers[t->n_timers];
	tm->name = name;
	tm->kind = kind;
	if (func) {
		const char *mangled = NULL;
		if (cudaFuncGetName(&mangled, func) == cudaSuccess && mangled) {
			/* the identifier printed must be the function CUPTI will name */
			int status = -1;
			char *plain = abi::__cxa_demangle(mangled, NULL, NULL, &status);
			size_t len = strlen(name);
			const char *d = status == 0 && plain ? plain : mangled;
			if (strncmp(d, name, len) || (d[len] && d[len] != '('))
				splat_warn("--time-kernels: kernel %s is named %s by the CUDA runtime", name, d);
			free(plain);
			tm->mangled = mangled;
		} else {
			cudaGetLastError();
		}
	}
	return t->n_timers++;
}

/* Read back a closed slot's elapsed time into its timer. */
static void gpu_timing_read(struct gpu_timing *t, struct gpu_timing_slot *s)
{
	cudaError_t status;
	float ms = 0;

	s->pending = 0;
	if ((status = cudaEventSynchronize(s->end)) != cudaSuccess ||
	    (status = cudaEventElapsedTime(&ms, s->start, s->end)) != cudaSuccess) {
		t->unread++;
		gpu_timing_fail(t, "cudaEventElapsedTime", status);
		return;
	}
	t->timers[s->timer].total_ms += ms;
}

void gpu_timing_begin(struct gpu_timing *t, enum gpu_time_kind kind, const char *name, const void *func)
{
	struct gpu_timing_slot *s;
	cudaError_t status;
	int timer;

	if (t->failed)
		return;
	if (t->depth == GPU_TIMING_DEPTH) {
		gpu_timing_fail(t, "nesting (more than 16 open brackets)", cudaSuccess);
		return;
	}
	if ((timer = gpu_timing_timer(t, kind, name, func)) < 0)
		return;
	s = &t->ring[t->next];
	if (s->open) {   /* the ring came round to a bracket that is still open */
		gpu_timing_fail(t, "the event ring (a bracket open for 4096 others)", cudaSuccess);
		return;
	}
	if (s->pending)
		gpu_timing_read(t, s);
	if (!s->start && (status = cudaEventCreateWithFlags(&s->start, cudaEventDefault)) != cudaSuccess) {
		s->start = NULL;
		gpu_timing_fail(t, "cudaEventCreateWithFlags", status);
		return;
	}
	if (!s->end && (status = cudaEventCreateWithFlags(&s->end, cudaEventDefault)) != cudaSuccess) {
		s->end = NULL;
		gpu_timing_fail(t, "cudaEventCreateWithFlags", status);
		return;
	}
	if (kind != GPU_TIME_PHASE) {
		gpu_timing_hold_kernel<<<1, 1, 0, t->stream>>>(GPU_TIMING_HOLD_NS);
		if ((status = cudaGetLastError()) != cudaSuccess) {
			gpu_timing_fail(t, "gpu_timing_hold_kernel launch", status);
			return;
		}
		for (int d = 0; d < t->depth; d++)
			t->timers[t->ring[t->stack[d]].timer].holds++;
	}
	if ((status = cudaEventRecord(s->start, t->stream)) != cudaSuccess) {
		gpu_timing_fail(t, "cudaEventRecord", status);
		return;
	}
	s->timer = timer;
	s->open = 1;
	t->stack[t->depth++] = (int)t->next;
	t->next = (t->next + 1) % GPU_TIMING_SLOTS;
}

/* Close the innermost bracket. */
static void gpu_timing_close(struct gpu_timing *t)
{
	struct gpu_timing_slot *s = &t->ring[t->stack[--t->depth]];
	cudaError_t status;

	s->open = 0;
	if ((status = cudaEventRecord(s->end, t->stream)) != cudaSuccess) {
		gpu_timing_fail(t, "cudaEventRecord", status);
		return;
	}
	s->pending = 1;
	t->timers[s->timer].calls++;
}

void gpu_timing_end(struct gpu_timing *t)
{
	if (t->failed)
		return;
	if (t->depth == 0) {
		gpu_timing_fail(t, "bracketing (an end without a begin)", cudaSuccess);
		return;
	}
	gpu_timing_close(t);
}

/* Close the innermost phase. A kernel or CUB bracket still open above it was left by an error
 * path (a failed launch jumps to the phase's end): it is dropped, not counted. */
void gpu_timing_end_phase(struct gpu_timing *t)
{
	if (t->failed)
		return;
	while (t->depth > 0 && t->timers[t->ring[t->stack[t->depth - 1]].timer].kind != GPU_TIME_PHASE)
		t->ring[t->stack[--t->depth]].open = 0;
	if (t->depth == 0) {
		gpu_timing_fail(t, "bracketing (a phase end without its begin)", cudaSuccess);
		return;
	}
	gpu_timing_close(t);
}

static const char *gpu_time_kind_name(enum gpu_time_kind kind)
{
	return kind == GPU_TIME_KERNEL ? "kernel" : kind == GPU_TIME_CUB ? "cub" : "phase";
}

int gpu_timing_report(struct gpu_timing *t, FILE *out)
{
	cudaError_t status = cudaStreamSynchronize(t->stream);
	unsigned long long open = (unsigned long long)t->depth;

	if (status != cudaSuccess)
		return gpu_report("cudaStreamSynchronize (--time-kernels table)", status);
	for (size_t s = 0; s < GPU_TIMING_SLOTS; s++)
		if (t->ring[s].pending)
			gpu_timing_read(t, &t->ring[s]);
	fprintf(out, "time-kernels: GPU time between CUDA events recorded on the backend's stream "
		"before and after each launch; kernel names are the __global__ function names (demangled, without "
		"parameters), mangled as CUPTI reports them in the last column; a cub row brackets every kernel of "
		"one CUB call and, like a kernel row, starts after a %llu us hold kernel so that it measures the work, "
		"not the launch gap before it; a phase row spans its NVTX range's work on the stream, gaps and "
		"holds included\n", GPU_TIMING_HOLD_NS / 1000);
	fprintf(out, "%-6s %-34s %8s %12s %12s  %s\n", "kind", "name", "calls", "total_ms", "mean_us", "mangled");
	for (int pass = 0; pass < 3; pass++) {
		enum gpu_time_kind kind = pass == 0 ? GPU_TIME_KERNEL : pass == 1 ? GPU_TIME_CUB : GPU_TIME_PHASE;
		for (int i = 0; i < t->n_timers; i++) {
			const struct gpu_timer *tm = &t->timers[i];
			if (tm->kind != kind)
				continue;
			fprintf(out, "%-6s %-34s %8llu %12.3f %12.2f  %s\n", gpu_time_kind_name(kind), tm->name, tm->calls,
				tm->total_ms, tm->calls ? 1000.0 * tm->total_ms / (double)tm->calls : 0.0,
				tm->mangled ? tm->mangled : "-");
		}
	}
	fprintf(out, "time-kernels: holds inside phases:");
	for (int i = 0; i < t->n_timers; i++)
		if (t->timers[i].kind == GPU_TIME_PHASE)
			fprintf(out, " %s %llu", t->timers[i].name, t->timers[i].holds);
	fprintf(out, "\n");
	if (t->failed || t->unread || open)
		fprintf(out, "timing incomplete: %s%s%llu brackets unread, %llu open at exit\n",
			t->failed ? t->failed : "", t->failed ? " failed; " : "", t->unread, open);
	fflush(out);
	return 0;
}
