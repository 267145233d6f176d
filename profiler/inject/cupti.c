/* cupti.c: lib/libcsampler-cupti.so, the in-target half of csampler's GPU capture.
 *
 * The CUDA driver loads this library into an unmodified program through CUDA_INJECTION64_PATH
 * and calls InitializeInjection() at cuInit. From then on it records, into
 * CSAMPLER_GPU_DIR/gpu-PID.bin (format: inject/protocol.h):
 *   - every launch, copy, memset, sync, malloc/free and graph launch API call, one callback
 *     level per call (the driver's by default: CSAMPLER_GPU_SUBSCRIBE), as one fixed 32-byte
 *     GPU_REC_CALL written at its EXIT: correlation id, callback id, ENTER time (one vDSO clock
 *     read) and duration (one more at EXIT), and the id of the CPU stack that made it;
 *   - each distinct stack once per thread (GPU_REC_STACK): fastunwind.c's unwinder at the
 *     ENTER; a stack its memo gives whole has its id beside it (fu_token_data), any other is
 *     hashed with the thread's Python frames and looked up in a per-thread table (full
 *     compare), so a launch from a known call path writes nothing but its call record; the
 *     API's name once per thread (GPU_REC_API_NAME). Spans are timed here, not with CUPTI's
 *     RUNTIME/DRIVER activity kinds, which record every API call the program makes (on an H100,
 *     splat-train made 388k such records for 96k launches);
 *   - CUPTI's activity records (kernels, copies, memsets, syncs, NVTX, overhead), translated
 *     into protocol records by the writer thread;
 *   - with each new stack, the launching thread's Python frames when it runs CPython
 *     (inj_py_walk): code object and instruction of each, read in place, named by the recorder;
 *   - info, notes (why GPU capture is off) and counters.
 *
 * It runs inside someone else's program: it never exits, never prints, never takes a lock or
 * makes a system call on the launch path, and turns itself off (one GPU_REC_NOTE) when CUPTI
 * cannot be used. Application threads append to their own rings; one writer thread, started at
 * init, drains them and the CUPTI buffers that the completion callback hands over, and does
 * every write(2). CUPTI buffers come from a pool reserved at start. The final flush runs under a
 * watchdog so a hung CUPTI cannot hang the exit, then the exit drains everything left.
 *
 * Why unwinding in place (fastunwind.c, libunwind where it cannot) and not a copy of registers
 * and stack: measured with scripts/bench-gpu-launch.sh, unwinding return addresses in place
 * with libunwind's per-thread cache cost a few hundred ns for
 * 20-40 frames; copying 32 KiB of stack per launch cost 6-49 us (3 GB/s to write at 100k/s, and
 * still to be unwound later), and glibc's backtrace() 4-8 us. */
#define UNW_LOCAL_ONLY
#include <cupti.h>   /* only this one: its runtime-API meta header has no include guard */
#include <libunwind.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/pywalk.h"
#include "inject/attach.h"
#include "inject/fastunwind.h"
#include "inject/protocol.h"

#define INJ_EXPORT __attribute__((visibility("default")))

/* The CUDA 13 record layouts this file reads, pinned: a header that moves a field breaks the
 * build here instead of producing wrong profiles (cupti.md lists the same figures). */
_Static_assert(sizeof(CUpti_ActivityKernel10) == 216, "CUpti_ActivityKernel10 size");
_Static_assert(offsetof(CUpti_ActivityKernel10, start) == 16, "Kernel10.start");
_Static_assert(offsetof(CUpti_ActivityKernel10, end) == 24, "Kernel10.end");
_Static_assert(offsetof(CUpti_ActivityKernel10, streamId) == 48, "Kernel10.streamId");
_Static_assert(offsetof(CUpti_ActivityKernel10, correlationId) == 92, "Kernel10.correlationId");
_Static_assert(offsetof(CUpti_ActivityKernel10, name) == 104, "Kernel10.name");
_Static_assert(offsetof(CUpti_ActivityKernel10, queued) == 120, "Kernel10.queued");
_Static_assert(offsetof(CUpti_ActivityKernel10, submitted) == 128, "Kernel10.submitted");
_Static_assert(offsetof(CUpti_ActivityKernel10, graphNodeId) == 144, "Kernel10.graphNodeId");
_Static_assert(offsetof(CUpti_ActivityKernel10, graphId) == 156, "Kernel10.graphId");
_Static_assert(sizeof(CUpti_ActivityMemcpy6) == 96, "CUpti_ActivityMemcpy6 size");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, bytes) == 8, "Memcpy6.bytes");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, correlationId) == 44, "Memcpy6.correlationId");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, graphNodeId) == 64, "Memcpy6.graphNodeId");
_Static_assert(sizeof(CUpti_ActivityMemset4) == 88, "CUpti_ActivityMemset4 size");
_Static_assert(offsetof(CUpti_ActivityMemset4, correlationId) == 44, "Memset4.correlationId");
_Static_assert(offsetof(CUpti_ActivityMemset4, graphNodeId) == 64, "Memset4.graphNodeId");
_Static_assert(sizeof(CUpti_ActivitySynchronization2) == 56, "Synchronization2 size");
_Static_assert(offsetof(CUpti_ActivitySynchronization2, correlationId) == 24, "Sync2.corr");
_Static_assert(sizeof(CUpti_ActivityMarker2) == 56, "CUpti_ActivityMarker2 size");
_Static_assert(offsetof(CUpti_ActivityMarker2, name) == 40, "Marker2.name");
_Static_assert(sizeof(CUpti_ActivityOverhead3) == 56, "CUpti_ActivityOverhead3 size");
_Static_assert(sizeof(CUpti_CallbackData) == 72, "CUpti_CallbackData size");
_Static_assert(offsetof(CUpti_CallbackData, correlationId) == 64, "CallbackData.correlationId");

enum {
	INJ_RING = 1 << 20,           /* a thread's ring of records (32k calls), drained by the writer */
	INJ_THREAD_SLOTS = 64,        /* thread states reserved at start (more are mapped later) */
	INJ_POOL_BUFFERS = 16,        /* CUPTI activity buffers reserved at start */
	INJ_POOL_BUFFER_SIZE = 4 << 20,
	INJ_BUFFER_TAIL = 64,         /* the end of each buffer: its hand-off node (inj_done) */
	INJ_OUT_CHUNK = 32 << 10,     /* activity records translated per write(2) */
	INJ_SKIP_FRAMES = 24,         /* room for our own, libcupti's and libcuda's frames */
	INJ_MAX_SKIP_RANGES = 16,
	INJ_API_NAME_MAX = 64,
	INJ_MARKER_SLOTS = 1024,      /* NVTX ranges open at once (START seen, END not yet) */
	INJ_MARKER_NAME = 256,
	INJ_SPAN_DEPTH = 8,           /* nested subscribed API calls whose spans are timed */
	INJ_STACK_SLOTS = 4096,       /* a thread's stack table (power of 2), reset when 3/4 full */
	INJ_STACK_ARENA = 4 << 20,    /* its frames */
	INJ_CBIDS = 1024,             /* callback ids whose names are remembered as written */
};
#define INJ_WRITER_MIN_NS 2000000ull   /* the writer's sleep: 2 ms after finding work ... */
#define INJ_WRITER_MAX_NS 20000000ull  /* ... doubling to 20 ms while idle */

enum inj_state { INJ_OFF = 0, INJ_ACTIVE = 1, INJ_INERT = 2 };
enum inj_floor { INJ_FLOOR_NONE, INJ_FLOOR_EMPTY, INJ_FLOOR_ACTIVITY, INJ_FLOOR_BOTH };

/* A stack already written by this thread: its hash, id and frames (in the thread's arena). */
struct inj_stack_ent {
	uint64_t hash;
	uint32_t id;                     /* 0: free slot */
	uint32_t off;                    /* bytes into the arena */
	uint16_t nframes, npy;
	uint32_t flags;
};

/* What the in-flight table (protocol.h) points at for a launch: a stack in its thread's table. */
struct inj_stack_ref {
	uint64_t frames;                 /* its frames in the thread's arena; 0: no stack */
	uint16_t nframes, npy;
	uint32_t flags;
};

/* A stack id kept beside the unwinder's remembered stack (fu_token_data): a stack the memo
 * gives whole needs no hash and no compare, and its id is on the line the walk just read. */
struct inj_token_id {
	uint64_t token;
	uint32_t id, gen;                /* gen: stab_gen when ref was taken */
	struct inj_stack_ref ref;
};
_Static_assert(sizeof(struct inj_token_id) <= FU_TOKEN_DATA, "inj_token_id fits fu_token_data");

/* One thread's ring of records and API nesting. Only its owner appends (and publishes `head`
 * after whole records); only the writer thread (or the exit drain, after it stopped) consumes
 * (and publishes `tail`). No lock, no system call on the owner's side. */
struct inj_thread {
	/* The owner's line, read and written at every API call (the writer only reads head). */
	_Atomic uint64_t head __attribute__((aligned(64)));
	uint64_t tail_seen;              /* tail as last read: room is known without reading the
					  * writer's line (inj_ring_room) */
	int depth;                       /* subscribed API calls open on this thread */
	uint32_t stab_gen;               /* bumped at each reset of the table (protocol.h's
					  * in-flight slots point into the arena) */
	uint32_t tid;
	_Atomic uint64_t launches;
	/* the open calls' spans, by nesting depth: written as GPU_REC_CALL at their EXIT (the
	 * outermost's in the owner's line; its correlation id and stack are those of the
	 * outermost call, which nested calls compare with and inherit) */
	struct inj_span {
		uint64_t start;
		uint32_t correlation, stack;
		uint16_t cbid, domain, recorded;
	} spans[INJ_SPAN_DEPTH];
	uint32_t npy, py_flags;          /* the Python frames of the last capture (py[] below) */
	/* the writer's line: it publishes tail after each drain (the owner reads it only when
	 * tail_seen says the ring is full) */
	_Atomic uint64_t tail __attribute__((aligned(64)));
	_Atomic int in_use;              /* a live thread owns this slot */
	struct inj_thread *next;         /* global list, push-only */
	_Atomic uint32_t pthread_low;    /* pthread_self()'s low 32 bits: see inj_marker_tid */
	_Atomic uint64_t launches_dropped, capture_ns, stacks;
	/* stacks written by this thread (inj_stack_id), mapped at its first launch */
	struct inj_stack_ent *stab;
	uint8_t *arena;
	uint32_t stab_used, arena_used;
	uint8_t name_written[2][INJ_CBIDS / 8];   /* [runtime, driver][cbid]: name record made */
	uint64_t pcs[GPU_MAX_FRAMES + INJ_SKIP_FRAMES];
	/* the Python frames of the last capture (npy, py_flags above) */
	struct gpu_py_frame py[GPU_MAX_PY_FRAMES];
	uint8_t ring[INJ_RING] __attribute__((aligned(64)));
};

_Static_assert(offsetof(struct inj_thread, spans[1]) <= 64,
	       "inj_thread: what every API call reads and writes in one cache line");

struct inj_range { uintptr_t lo, hi; };

struct inj_marker {
	uint32_t id;                     /* 0: free */
	uint32_t tid, domain;
	uint64_t start;
	char name[INJ_MARKER_NAME];
};

/* A completed CUPTI buffer on its way to the writer: kept in the buffer's last bytes. */
struct inj_done {
	struct inj_done *next;
	uint8_t *buffer;
	size_t valid;
};

struct inj_ctx {
	/* What every API call reads, in one cache line that nothing writes while capture runs
	 * (state changes at start and stop only). */
	_Atomic int state;               /* enum inj_state */
	int floor;                       /* enum inj_floor */
	int max_frames;
	int fd;
	int py_active;                   /* CPython's layout is known here (py below) */
	/* the API call clock: CLOCK_MONOTONIC, or the stand-in's scripted clock while the int this
	 * points at is set (inj_clock_init; test_clock is beside the pool below) */
	const int *test_clock_on;
	unsigned flush_ms;
	uint32_t cupti_version;
	CUpti_SubscriberHandle subscriber;
	pthread_key_t thread_key;
	struct inj_thread *slots;        /* INJ_THREAD_SLOTS reserved (lazily touched) */
	/* written when a thread or a stack is new */
	_Atomic(struct inj_thread *) threads __attribute__((aligned(64)));
	_Atomic unsigned next_slot;
	_Atomic uint32_t next_stack_id;
	struct inj_range skip[INJ_MAX_SKIP_RANGES];
	int nskip;
	uint32_t stack_limit;            /* stacks a thread's table takes before it starts again */
	uint64_t (*test_clock)(void);
	/* CUPTI buffer pool: bit i set = buffer i free */
	uint8_t *pool;
	_Atomic uint32_t pool_free;
	/* completed buffers waiting for the writer (pushed by CUPTI's thread, LIFO) */
	_Atomic(struct inj_done *) done;
	/* the writer thread; drain_lock makes the writer and the exit drain take turns */
	pthread_t writer;
	int writer_running;
	pthread_mutex_t drain_lock, writer_lock;
	pthread_cond_t writer_cond;
	int writer_stop;
	/* counters (launch counters live per thread) */
	_Atomic uint64_t activities, dropped, lost_timestamps, buffers, flush_timeouts, write_errors;
	_Atomic int write_broken;        /* a short write: stop writing, never emit a cut record */
	/* final flush */
	_Atomic int flushing, flush_stuck;
	pthread_mutex_t flush_lock;
	pthread_cond_t flush_cond;
	int flush_done;
	/* NVTX ranges waiting for their END record (writer only, or the exit drain) */
	pthread_mutex_t marker_lock;
	struct inj_marker markers[INJ_MARKER_SLOTS];
	_Atomic int initialised;
	/* done once per process, kept across attach/detach (record -p, see the attach section) */
	int clock_set, setup_done, hooks_set;
	/* CPython in this process (inj_py_init): its layout, from CSAMPLER_GPU_PYTHON */
	struct {
		uint32_t off[GPU_PY_NFIELDS];
		struct pywalk_layout walk;   /* the frame fields of off[] */
		void *(*this_tstate)(void);  /* PyGILState_GetThisThreadState */
		uintptr_t code_type;         /* &PyCode_Type */
	} py;
};

_Static_assert(offsetof(struct inj_ctx, threads) == 64, "inj_ctx: what every API call reads in one cache line");

static struct inj_ctx inj = { .fd = -1, .stack_limit = INJ_STACK_SLOTS * 3 / 4,
	.flush_lock = PTHREAD_MUTEX_INITIALIZER, .marker_lock = PTHREAD_MUTEX_INITIALIZER,
	.drain_lock = PTHREAD_MUTEX_INITIALIZER, .writer_lock = PTHREAD_MUTEX_INITIALIZER };
static __thread struct inj_thread *inj_self;

/* Kernels launched and not known to be finished, for `csampler dump` (protocol.h). In .bss:
 * its header is written at start (a table without its magic is a library not started). */
INJ_EXPORT struct gpu_inflight_table csampler_gpu_inflight;

static void inj_set_state(int state)
{
	atomic_store(&inj.state, state);
	__atomic_store_n(&csampler_gpu_inflight.active, state == INJ_ACTIVE, __ATOMIC_RELEASE);
}

static uint64_t inj_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CUPTI's clock: the same CLOCK_MONOTONIC as perf's samples (attr.clockid). */
static uint64_t CUPTIAPI inj_timestamp(void)
{
	return inj_now();
}

/* An API call's ENTER and EXIT times: one vDSO clock read each (the clock CUPTI's records use:
 * inj_timestamp). cuptiGetTimestamp only serves the start-up clock check. A test stand-in may
 * export standin_clock and standin_clock_scripted (looked up once, inj_clock_init): once the
 * flag is set, the scripted time when not 0. Until then (the launch benchmark) a call costs a
 * load here, not a call into the stand-in that the real CUPTI would not have. */
static inline uint64_t inj_api_now(void)
{
	if (__builtin_expect(inj.test_clock_on != NULL, 0) && *inj.test_clock_on) {
		uint64_t t = inj.test_clock();
		if (t)
			return t;
	}
	return inj_now();
}

static void inj_clock_init(void)
{
	void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		*(void **)&inj.test_clock = dlsym(h, "standin_clock");
		const int *on = dlsym(h, "standin_clock_scripted");
		if (inj.test_clock && on)
			inj.test_clock_on = on;
		dlclose(h);
	}
}

static size_t inj_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* One write(2) (or writev) of whole records. A short write would leave a cut record in the
 * middle of the file, so after one nothing more is written; failures are counted, never
 * reported inline. */
static void inj_writev(struct iovec *iov, int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (!len || inj.fd < 0 || atomic_load_explicit(&inj.write_broken, memory_order_relaxed))
		return;
	ssize_t w;
	do
		w = writev(inj.fd, iov, n);
	while (w < 0 && errno == EINTR);
	if (w == (ssize_t)len)
		return;
	atomic_fetch_add_explicit(&inj.write_errors, 1, memory_order_relaxed);
	if (w >= 0)
		atomic_store(&inj.write_broken, 1);
}

static void inj_write(const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	inj_writev(&iov, 1);
}

static void inj_note(uint32_t severity, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void inj_note(uint32_t severity, const char *fmt, ...)
{
	char rec[512] __attribute__((aligned(8)));
	struct gpu_rec *h = (struct gpu_rec *)rec;
	struct gpu_note *n = (struct gpu_note *)(h + 1);
	char *text = (char *)(n + 1);
	size_t room = sizeof(rec) - (size_t)(text - rec);
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(text, room, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= room)
		len = (int)room - 1;
	size_t size = inj_align8((size_t)(text - rec) + (size_t)len + 1);
	memset(text + len, 0, size - (size_t)(text - rec) - (size_t)len);
	*h = (struct gpu_rec){ .type = GPU_REC_NOTE, .size = (uint32_t)size };
	*n = (struct gpu_note){ .len = (uint32_t)len + 1, .severity = severity };
	inj_write(rec, size);
}

static const char *inj_result_name(CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

static void inj_write_info(uint32_t status, CUptiResult err)
{
	struct {
		struct gpu_rec h;
		struct gpu_info i;
	} r = { .h = { .type = GPU_REC_INFO, .size = sizeof(r) } };
	_Static_assert(sizeof(r) % 8 == 0, "gpu_info record padded");
	r.i.cupti_version = inj.cupti_version;
	r.i.status = status;
	r.i.cupti_error = (int32_t)err;
	/* CUPTI's clock against CLOCK_MONOTONIC: the reading between two of ours whose window is
	 * the narrowest of a few (a thread preempted or interrupted between them, a profiler
	 * sampling it at 20 kHz on a loaded machine, widened one window past 100 us), as NTP
	 * keeps its tightest exchange; at once under 2 us. */
	CUptiResult tr = CUPTI_ERROR_UNKNOWN;
	for (int attempt = 0; attempt < 5; attempt++) {
		uint64_t cupti_ns = 0, before = inj_now();
		CUptiResult got = cuptiGetTimestamp(&cupti_ns);
		uint64_t after = inj_now();
		if (got != CUPTI_SUCCESS) {
			if (tr != CUPTI_SUCCESS)
				r.i.clock_before_ns = before, r.i.clock_after_ns = after;
			break;
		}
		if (tr != CUPTI_SUCCESS ||
		    after - before < r.i.clock_after_ns - r.i.clock_before_ns) {
			tr = CUPTI_SUCCESS;
			r.i.clock_before_ns = before;
			r.i.clock_after_ns = after;
			r.i.cupti_ns = cupti_ns;
			r.i.clock_offset_ns = (int64_t)(cupti_ns - (before + (after - before) / 2));
		}
		if (after - before < 2000)
			break;
	}
	inj_write(&r, sizeof(r));
}

static void inj_write_stats(void)
{
	struct {
		struct gpu_rec h;
		struct gpu_stats s;
	} r = { .h = { .type = GPU_REC_STATS, .size = sizeof(r) } };
	_Static_assert(sizeof(r) % 8 == 0, "gpu_stats record padded");
	for (struct inj_thread *t = atomic_load(&inj.threads); t; t = t->next) {
		r.s.launches += atomic_load_explicit(&t->launches, memory_order_relaxed);
		r.s.launches_dropped += atomic_load_explicit(&t->launches_dropped,
							   memory_order_relaxed);
		r.s.capture_ns += atomic_load_explicit(&t->capture_ns, memory_order_relaxed);
		r.s.stacks += atomic_load_explicit(&t->stacks, memory_order_relaxed);
	}
	r.s.activities = atomic_load(&inj.activities);
	r.s.dropped = atomic_load(&inj.dropped);
	r.s.lost_timestamps = atomic_load(&inj.lost_timestamps);
	r.s.buffers = atomic_load(&inj.buffers);
	r.s.flush_timeouts = atomic_load(&inj.flush_timeouts);
	r.s.write_errors = atomic_load(&inj.write_errors);
	inj_write(&r, sizeof(r));
}

static void inj_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* ---- per-thread rings ---- */

/* Room for len more bytes in t's ring (the owner only): a pointer to copy into with
 * inj_ring_put, or -1 when the writer is that far behind. */
static inline int inj_ring_room(struct inj_thread *t, size_t len)
{
	uint64_t head = atomic_load_explicit(&t->head, memory_order_relaxed);
	if (__builtin_expect(head - t->tail_seen + len <= INJ_RING, 1))
		return 0;
	t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
	return head - t->tail_seen + len <= INJ_RING ? 0 : -1;
}

/* Copy len bytes at the ring's head (unpublished until inj_ring_publish). */
static inline void inj_ring_put(struct inj_thread *t, uint64_t *at, const void *src, size_t len)
{
	size_t off = (size_t)(*at % INJ_RING), first = INJ_RING - off;
	if (len <= first) {
		memcpy(t->ring + off, src, len);
	} else {
		memcpy(t->ring + off, src, first);
		memcpy(t->ring, (const uint8_t *)src + first, len - first);
	}
	*at += len;
}

static inline void inj_ring_publish(struct inj_thread *t, uint64_t at)
{
	atomic_store_explicit(&t->head, at, memory_order_release);
}

static void inj_thread_exit(void *arg)
{
	struct inj_thread *t = arg;
	/* Its ring is drained by the writer before the slot can be reused (inj_thread_get). */
	atomic_store_explicit(&t->in_use, 0, memory_order_release);
}

static struct inj_thread *inj_thread_get(void)
{
	struct inj_thread *t = inj_self;
	if (t)
		return t;
	/* First API call of this thread: reuse a slot of a finished thread whose ring the writer
	 * emptied, else take a reserved one, else map one (the only allocation, once per
	 * thread). */
	for (t = atomic_load(&inj.threads); t; t = t->next) {
		int expected = 0;
		if (atomic_load(&t->head) == atomic_load(&t->tail) &&
		    atomic_compare_exchange_strong(&t->in_use, &expected, 1)) {
			if (atomic_load(&t->head) == atomic_load(&t->tail))
				break;
			atomic_store(&t->in_use, 0);   /* filled in between: not this one */
		}
	}
	if (!t) {
		unsigned i = atomic_fetch_add(&inj.next_slot, 1);
		if (inj.slots && i < INJ_THREAD_SLOTS) {
			t = &inj.slots[i];
		} else {
			void *p = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p == MAP_FAILED)
				return NULL;
			t = p;
		}
		atomic_store(&t->in_use, 1);
		struct inj_thread *head = atomic_load(&inj.threads);
		do
			t->next = head;
		while (!atomic_compare_exchange_weak(&inj.threads, &head, t));
	}
	t->tid = (uint32_t)gettid();
	atomic_store_explicit(&t->pthread_low, (uint32_t)pthread_self(), memory_order_release);
	t->depth = 0;
	/* a new thread: its own stack ids and names (the old owner's records are all written) */
	if (t->stab)
		memset(t->stab, 0, sizeof(*t->stab) * INJ_STACK_SLOTS);
	t->stab_used = t->arena_used = 0;
	__atomic_store_n(&t->stab_gen, t->stab_gen + 1, __ATOMIC_RELEASE);
	memset(t->name_written, 0, sizeof(t->name_written));
	inj_self = t;
	pthread_setspecific(inj.thread_key, t);
	return t;
}

/* Is pc in our own, libcupti's or libcuda's code? Those leading frames are not the caller. */
static int inj_skipped_pc(uintptr_t pc)
{
	for (int i = 0; i < inj.nskip; i++)
		if (pc >= inj.skip[i].lo && pc < inj.skip[i].hi)
			return 1;
	return 0;
}

static uintptr_t inj_py_ptr(uintptr_t addr)
{
	uintptr_t v;
	memcpy(&v, (const void *)addr, sizeof(v));
	return v;
}

/* pywalk's read: the thread's own memory, in place */
static bool inj_py_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return true;
}

/* pywalk's check: a frame whose code object is not one (by its type) ends the walk before its
 * previous is followed */
static enum pywalk_check inj_py_check(void *arg, uint64_t addr, uint8_t *fb, bool in_run)
{
	const struct pywalk_layout *L = &inj.py.walk;
	uintptr_t code;

	(void)arg, (void)addr, (void)in_run;
	if (pywalk_is_shim(L, fb[L->frame_owner]))
		return PYWALK_TAKE;
	memcpy(&code, fb + L->frame_code, sizeof(code));
	code &= ~(uintptr_t)L->code_tag;
	return code && !(code & 7) && inj_py_ptr(code + inj.py.off[GPU_PY_OB_TYPE]) == inj.py.code_type
		       ? PYWALK_TAKE : PYWALK_FAIL;
}

/* 3.14 (whose interpreter loop may have no symbol): the native frame of pcs[0, n) that holds
 * each entry frame (shim), found without the frames' stack pointers: scanning up the stack from
 * the shim, the first return address met is the one the frame holding it pushed when it called
 * in (the frames' return addresses lie in order on the stack, each at the top of its callee's
 * frame), so that frame is the one before it. Returns 1 + its index in pcs, or 0: not found
 * within its window or the thread's stack. from: the index to start looking at. */
static uint16_t inj_py_act_of(uintptr_t shim, const uint64_t *pcs, int n, int *from,
			      uintptr_t stack_hi)
{
	enum { WINDOW = 4096, CANDIDATES = 64 };   /* the interpreter loop's frame is under 1 KiB */
	uintptr_t end = shim + WINDOW < stack_hi ? shim + WINDOW : stack_hi;
	/* the candidates' range first: most words of the window are no return address, and are
	 * passed with two compares instead of up to 64 (a launch's hot path) */
	int last = n < *from + CANDIDATES ? n : *from + CANDIDATES;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int j = *from; j < last; j++) {
		lo = pcs[j] < lo ? pcs[j] : lo;
		hi = pcs[j] > hi ? pcs[j] : hi;
	}
	for (uintptr_t a = (shim + 7) & ~(uintptr_t)7; a + 8 <= end; a += 8) {
		uintptr_t v = inj_py_ptr(a);
		if (v < lo || v > hi)
			continue;
		for (int j = *from; j < last; j++)
			if (v == pcs[j]) {
				*from = j + 1;
				return j >= 1 && j <= UINT16_MAX ? (uint16_t)j : 0;
			}
	}
	return 0;
}

/* The calling thread's Python frames into t->py, innermost first (protocol.h). The thread's
 * own chain, read in place while the thread is inside this call: nothing else changes it.
 * Only pointers are read (no Python API but PyGILState_GetThisThreadState, which reads a
 * thread-specific key and needs no GIL); the walk (base/pywalk.c, the recorder's too) is
 * bounded, every code object is checked against PyCode_Type before its frame's previous is
 * followed, and the layout is the one of the running version (inj_py_init). CPython has no
 * API to read its frames without the GIL, and the launching thread need not hold it (ctypes,
 * PyTorch's GIL-free paths). */
static void inj_py_walk(struct inj_thread *t, int npcs)
{
	const uint32_t *o = inj.py.off;
	struct pywalk_frame fr[GPU_MAX_PY_FRAMES];
	uintptr_t shims[GPU_MAX_PY_FRAMES];

	if (!inj.py_active)
		return;   /* npy stays 0: set once at start, never unset */
	t->npy = 0;
	t->py_flags = 0;
	uintptr_t ts = (uintptr_t)inj.py.this_tstate();
	if (!ts || ts & 7)
		return;
	/* 3.11, 3.12: the frame is the thread's _PyCFrame's; 3.13+: the thread state's own */
	uintptr_t cframe = inj_py_ptr(ts + o[GPU_PY_TSTATE_CFRAME]);
	if (!cframe || cframe & 7)
		return;
	uintptr_t frame = o[GPU_PY_DIRECT] ? cframe : inj_py_ptr(cframe + o[GPU_PY_CFRAME_CURRENT_FRAME]);
	_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "shim addresses");
	struct pywalk w = { .L = &inj.py.walk, .read = inj_py_read, .check = inj_py_check,
			    .out = fr, .max = GPU_MAX_PY_FRAMES, .max_depth = 4 * GPU_MAX_PY_FRAMES,
			    .shims = (uint64_t *)shims, .max_shims = GPU_MAX_PY_FRAMES };
	enum pywalk_end end = pywalk_walk(&w, frame);
	/* 3.14: each run's activation by where its shim is (the recorder cannot tell its native
	 * frame by name when the loop has no symbol) */
	uintptr_t stack_lo, stack_hi;
	bool acts = inj.py.walk.code_tag && fu_stack_bounds(&stack_lo, &stack_hi) == 0;
	int run = 0, from = 1;
	uint16_t act = 0;
	for (int i = 0; i < w.n; i++) {
		uintptr_t code0 = fr[i].code + o[GPU_PY_CODE_CODE], instr = fr[i].instr;
		uint32_t unit = fr[i].code && instr >= code0 && (instr - code0) / 2 < UINT32_MAX ?
				(uint32_t)((instr - code0) / 2) : UINT32_MAX;
		uint16_t fl = (fr[i].flags & PYWALK_ENTRY ? GPU_PYF_ENTRY : 0) |
			      (fr[i].flags & PYWALK_GENERATOR ? GPU_PYF_GENERATOR : 0);
		if (acts && (i == 0 || (fr[i - 1].flags & PYWALK_ENTRY))) {
			/* the first frame of run `run`: its shim is shims[run] */
			uintptr_t sh = run < w.nshims && run < GPU_MAX_PY_FRAMES ? shims[run] : 0;
			act = sh >= stack_lo && sh < stack_hi ?
			      inj_py_act_of(sh, t->pcs, npcs, &from, stack_hi) : 0;
			run++;
		}
		t->py[i] = (struct gpu_py_frame){ fr[i].code, unit, fl, act };
	}
	t->npy = (uint32_t)w.n;
	t->py_flags = end == PYWALK_TRUNCATED ? GPU_PY_TRUNCATED : end == PYWALK_BROKEN ? GPU_PY_BROKEN : 0;
}

/* Unwind this thread's stack into t->pcs: returns the index of the first frame outside the
 * CUDA/CUPTI/our libraries and the frame count from there, flags truncation. *token: the
 * unwinder's (fu_backtrace_token), 0 if none or with Python frames. */
static int __attribute__((noinline)) inj_capture(struct inj_thread *t, int *first,
						  uint16_t *flags, uint64_t *token)
{
	int want = inj.max_frames + INJ_SKIP_FRAMES;
	_Static_assert(sizeof(uintptr_t) == sizeof(t->pcs[0]), "pcs are addresses");
	int n = fu_backtrace_token((uintptr_t *)t->pcs, want, token);
	inj_py_walk(t, n);
	if (t->npy) {
		*token = 0;   /* the id depends on the Python frames too */
	} else if (*token) {
		const struct inj_token_id *c = fu_token_data(*token);
		if (c && c->token == *token && c->gen == t->stab_gen)
			return 0;     /* the caller has the id: nothing else needed */
	}
	int i = 0;
	while (i < n && i < INJ_SKIP_FRAMES && inj_skipped_pc((uintptr_t)t->pcs[i]))
		i++;
	*first = i;
	/* the activations' indexes, in the frames the record keeps (from the first on) */
	for (uint32_t k = 0; k < t->npy; k++)
		t->py[k].act = t->py[k].act > i ? (uint16_t)(t->py[k].act - i) : 0;
	int count = n - i;
	if (count > inj.max_frames)
		count = inj.max_frames;
	if (n == want || count == inj.max_frames)
		*flags |= GPU_STACK_TRUNCATED;
	return count;
}

/* The id of the stack inj_capture just took (token, first, n, flags as it gave them). */
static uint32_t inj_stack_id(struct inj_thread *t, int first, int n, uint16_t flags,
			     uint64_t *at, const struct inj_stack_ent **found);

/* The same, through the id kept under the token first; *ref: where the in-flight table finds
 * the stack (zero when the table could not be mapped). A kept id is only used while the table
 * it points into has not been reset (stab_gen); the attach reset and a new thread in the slot
 * bump stab_gen too. */
static inline uint32_t inj_captured_id(struct inj_thread *t, uint64_t token, int first, int n,
				       uint16_t flags, uint64_t *at, struct inj_stack_ref *ref)
{
	struct inj_token_id *c = fu_token_data(token);
	if (c && c->token == token && c->gen == t->stab_gen) {
		*ref = c->ref;
		return c->id;
	}
	const struct inj_stack_ent *e;
	uint32_t id = inj_stack_id(t, first, n, flags, at, &e);
	*ref = e ? (struct inj_stack_ref){ (uint64_t)(uintptr_t)(t->arena + e->off), e->nframes,
					   e->npy, e->flags } : (struct inj_stack_ref){ 0 };
	if (c && id && e)
		*c = (struct inj_token_id){ token, id, t->stab_gen, *ref };
	return id;
}

/* The stack hash: two rotate-xor lanes (2 cycles a frame, no multiply chain), mixed once at
 * the end. Its quality only spreads the table: every hit is confirmed by a full compare. */
static inline uint64_t inj_rotl(uint64_t v, int r)
{
	return v << r | v >> (64 - r);
}

static inline uint64_t inj_fmix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* Map this thread's stack table and arena (first launch with a stack). */
static int inj_stack_table(struct inj_thread *t)
{
	if (t->stab)
		return 0;
	size_t tab = sizeof(*t->stab) * INJ_STACK_SLOTS;
	/* small pages: a known stack's id and frames come from fu_token_data, so this table is
	 * read for new stacks and Python ones only, and a huge page's 2 MiB zeroing at the first
	 * write landed in a launch (the gpu-idle tests sampled it there) */
	void *p = mmap(NULL, tab + INJ_STACK_ARENA, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	t->stab = p;
	t->arena = (uint8_t *)p + tab;
	return 0;
}

/* The id of the stack in t->pcs[first..first+n) with t's Python frames: looked up in t's table
 * (hash, then a full compare); a new one is given an id and put in the ring as GPU_REC_STACK
 * (unpublished: the caller publishes it with its call). 0 when the ring has no room. */
static uint32_t inj_stack_id(struct inj_thread *t, int first, int n, uint16_t flags,
			     uint64_t *at, const struct inj_stack_ent **found)
{
	*found = NULL;
	const uint64_t *pcs = t->pcs + first;
	uint32_t npy = n ? t->npy : 0;
	uint64_t a = (uint64_t)n << 32 | npy, b = flags;
	int i = 0;
	for (; i + 1 < n; i += 2) {
		a = inj_rotl(a, 5) ^ pcs[i];
		b = inj_rotl(b, 7) ^ pcs[i + 1];
	}
	if (i < n)
		a = inj_rotl(a, 5) ^ pcs[i];
	for (uint32_t k = 0; k < npy; k++) {
		a = inj_rotl(a, 5) ^ t->py[k].code;
		b = inj_rotl(b, 7) ^ ((uint64_t)t->py[k].unit << 16 | t->py[k].flags);
	}
	uint64_t h = inj_fmix(a ^ inj_rotl(b, 32));
	size_t pcs_bytes = (size_t)n * 8, py_bytes = (size_t)npy * sizeof(struct gpu_py_frame);
	struct inj_stack_ent *e = NULL;
	if (!inj_stack_table(t)) {
		uint32_t mask = INJ_STACK_SLOTS - 1;
		for (uint32_t k = (uint32_t)h & mask;; k = (k + 1) & mask) {
			e = &t->stab[k];
			if (!e->id)
				break;
			if (e->hash == h && e->nframes == n && e->npy == npy && e->flags == flags &&
			    !memcmp(t->arena + e->off, pcs, pcs_bytes) &&
			    !memcmp(t->arena + e->off + pcs_bytes, t->py, py_bytes)) {
				*found = e;
				return e->id;
			}
		}
		/* full tables start again (their ids stay valid in the file) */
		if (t->stab_used + 1 > inj.stack_limit ||
		    t->arena_used + pcs_bytes + py_bytes > INJ_STACK_ARENA) {
			memset(t->stab, 0, sizeof(*t->stab) * INJ_STACK_SLOTS);
			t->stab_used = t->arena_used = 0;
			__atomic_store_n(&t->stab_gen, t->stab_gen + 1, __ATOMIC_RELEASE);
			e = &t->stab[(uint32_t)h & mask];
		}
	}
	struct {
		struct gpu_rec h;
		struct gpu_stack s;
	} r = { .h = { .type = GPU_REC_STACK,
		       .size = (uint32_t)(sizeof(r) + pcs_bytes + py_bytes) },
		.s = { .nframes = (uint16_t)n, .flags = flags, .npy = npy,
		       .py_flags = npy ? t->py_flags : 0 } };
	_Static_assert(sizeof(r) % 8 == 0 && sizeof(struct gpu_py_frame) % 8 == 0,
		       "gpu_stack record padded");
	if (inj_ring_room(t, (size_t)(*at - atomic_load_explicit(&t->head, memory_order_relaxed)) +
			  r.h.size + sizeof(struct gpu_rec) + sizeof(struct gpu_call)))
		return 0;
	r.s.id = atomic_fetch_add_explicit(&inj.next_stack_id, 1, memory_order_relaxed) + 1;
	inj_ring_put(t, at, &r, sizeof(r));
	inj_ring_put(t, at, pcs, pcs_bytes);
	inj_ring_put(t, at, t->py, py_bytes);
	inj_count(&t->stacks, 1);
	if (e) {
		*e = (struct inj_stack_ent){ .hash = h, .id = r.s.id, .off = t->arena_used,
					     .nframes = (uint16_t)n, .npy = (uint16_t)npy,
					     .flags = flags };
		memcpy(t->arena + t->arena_used, pcs, pcs_bytes);
		memcpy(t->arena + t->arena_used + pcs_bytes, t->py, py_bytes);
		t->arena_used += (uint32_t)(pcs_bytes + py_bytes);
		t->stab_used++;
		*found = e;
	}
	return r.s.id;
}

static void inj_flush(const char *why);

/* ---- API callbacks ---- */

static int inj_is_flush_point(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 ||
		       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2;
}

/* The API's name, once per thread and callback id, into the ring (unpublished). */
static void inj_api_name(struct inj_thread *t, uint16_t domain, uint32_t cbid, const char *name,
			 uint64_t *at)
{
	int d = domain == GPU_DOMAIN_DRIVER;
	if (cbid >= INJ_CBIDS || !name || (t->name_written[d][cbid / 8] & (1u << (cbid % 8))))
		return;
	size_t len = strnlen(name, INJ_API_NAME_MAX - 1) + 1;
	struct {
		struct gpu_rec h;
		struct gpu_api_name n;
		char name[INJ_API_NAME_MAX];
	} r = { .h = { .type = GPU_REC_API_NAME,
		       .size = (uint32_t)inj_align8(sizeof(r.h) + sizeof(r.n) + len) },
		.n = { .cbid = cbid, .domain = domain, .len = (uint16_t)len } };
	memcpy(r.name, name, len - 1);
	if (inj_ring_room(t, (size_t)(*at - atomic_load_explicit(&t->head, memory_order_relaxed)) +
			  r.h.size))
		return;
	inj_ring_put(t, at, &r, r.h.size);
	t->name_written[d][cbid / 8] |= (uint8_t)(1u << (cbid % 8));
}

/* The EXIT of a recorded call: its GPU_REC_CALL, published with the stack and name records
 * its ENTER may have left in the ring. */
static void inj_append_call(struct inj_thread *t, const struct inj_span *sp, uint64_t end,
			    uint64_t at)
{
	uint64_t d = end > sp->start ? end - sp->start : 0;
	struct {
		struct gpu_rec h;
		struct gpu_call c;
	} r = { .h = { .type = GPU_REC_CALL, .size = sizeof(r) },
		.c = { .start = sp->start, .duration = (uint32_t)d, .correlation = sp->correlation,
		       .stack = sp->stack, .cbid = sp->cbid, .domain = (uint8_t)sp->domain } };
	_Static_assert(sizeof(r) == 32, "gpu_call record: 32 bytes");
	if (d > UINT32_MAX) {
		r.c.duration = (uint32_t)(d / 1000 > UINT32_MAX ? UINT32_MAX : d / 1000);
		r.c.flags = GPU_CALL_DURATION_US;
	}
	if (inj_ring_room(t, (size_t)(at - atomic_load_explicit(&t->head, memory_order_relaxed)) +
			  sizeof(r))) {
		inj_count(&t->launches_dropped, 1);
		inj_ring_publish(t, at);   /* what fitted (stack, name) stays valid */
		return;
	}
	inj_ring_put(t, &at, &r, sizeof(r));
	inj_ring_publish(t, at);
	inj_count(&t->launches, 1);
	/* the ring's next line, for writing, while the program runs until its next call: the
	 * ring comes round every 32k calls, so each of its lines left the caches since */
	__builtin_prefetch(t->ring + (size_t)((at + 64) % INJ_RING), 1);
}

/* A kernel launch enters the in-flight table (protocol.h): one cache line, by correlation id,
 * marked odd while it is written so that a dump that stopped this thread in the middle passes
 * it over. No lock, no locked instruction, no system call; the stack is pointed at, in this
 * thread's table (e; frames 0 when it has none), not copied. The line is only written: seq
 * comes from the correlation id (2c + 1 while written, 2c + 2 after), not from its last value,
 * so no load waits for the line (the writer thread wrote it last, on the other CPU); the stores
 * wait in the store buffer instead. */
static void inj_inflight_enter(struct inj_thread *t, const CUpti_CallbackData *cb, uint64_t start,
			       const struct inj_stack_ref *e)
{
	struct gpu_inflight_table *ft = &csampler_gpu_inflight;
	struct gpu_inflight_slot *sl = &ft->slots[cb->correlationId % GPU_INFLIGHT_SLOTS];
	uint32_t seq = cb->correlationId * 2 + 1;
	__atomic_store_n(&sl->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	/* the writer thread reads correlation and writes state (inj_kernel): atomic, relaxed */
	__atomic_store_n(&sl->correlation, cb->correlationId, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->state, GPU_INFLIGHT_LAUNCHED, __ATOMIC_RELAXED);
	sl->tid = t->tid;
	sl->start = start;
	sl->name = (uint64_t)(uintptr_t)cb->symbolName;
	sl->frames = e->frames;
	sl->generation_at = (uint64_t)(uintptr_t)&t->stab_gen;
	sl->generation = t->stab_gen;
	sl->nframes = e->nframes;
	sl->npy = e->npy;
	sl->flags = (uint16_t)e->flags;
	sl->py_flags = e->npy ? (uint16_t)t->py_flags : 0;
	__atomic_store_n(&sl->seq, seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ft->launches, __atomic_load_n(&ft->launches, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

static void inj_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		    const CUpti_CallbackData *cb)
{
	struct inj_thread *t = inj_self;
	if (__builtin_expect(!t, 0)) {
		if (inj_is_flush_point(domain, cbid)) {
			if (cb->callbackSite == CUPTI_API_ENTER)
				inj_flush(cb->functionName);
			return;
		}
		if (!(t = inj_thread_get()))
			return;
	}
	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (t->depth <= 0)
			return;
		int d = --t->depth;
		if (d >= INJ_SPAN_DEPTH || !t->spans[d].recorded)
			return;
		t->spans[d].recorded = 0;
		uint64_t end = inj_api_now();
		inj_append_call(t, &t->spans[d], end,
				atomic_load_explicit(&t->head, memory_order_relaxed));
		return;
	}
	int d = t->depth++;
	/* Nested in a recorded call with the same correlation id (cudaLaunchKernel ->
	 * cuLaunchKernel, with both domains subscribed): nothing to add. */
	if (d > 0 && cb->correlationId == t->spans[0].correlation) {
		if (d < INJ_SPAN_DEPTH)
			t->spans[d].recorded = 0;
		return;
	}
	if (inj_is_flush_point(domain, cbid)) {
		if (d < INJ_SPAN_DEPTH)
			t->spans[d].recorded = 0;
		inj_flush(cb->functionName);
		return;
	}
	uint64_t start = inj_api_now();
	uint16_t dom = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? GPU_DOMAIN_RUNTIME :
							       GPU_DOMAIN_DRIVER;
	uint64_t at = atomic_load_explicit(&t->head, memory_order_relaxed);
	uint32_t stack = 0;
	struct inj_stack_ref ref = { 0 };
	if (d > 0) {
		/* A call with its own correlation id inside an outer one: the outer call's stack,
		 * so that activity keyed on this id still finds its launch. */
		stack = t->spans[0].stack;
	} else if (inj.max_frames > 0) {
		int first = 0;
		uint16_t flags = 0;
		uint64_t token = 0;
		int n = inj_capture(t, &first, &flags, &token);
		stack = inj_captured_id(t, token, first, n, flags, &at, &ref);
	}
	if (d == 0 && cb->symbolName)
		inj_inflight_enter(t, cb, start, &ref);
	inj_api_name(t, dom, cbid, cb->functionName, &at);
	if (at != atomic_load_explicit(&t->head, memory_order_relaxed))
		inj_ring_publish(t, at);   /* the stack and name, before the call that uses them */
	if (d < INJ_SPAN_DEPTH)
		t->spans[d] = (struct inj_span){ start, cb->correlationId, stack, (uint16_t)cbid,
						 dom, 1 };
	/* the ENTER's own time, from one call in 64 (a clock read is a tenth of the budget): the
	 * calls recorded so far count them */
	if (!(atomic_load_explicit(&t->launches, memory_order_relaxed) & 63))
		inj_count(&t->capture_ns, 64 * (inj_now() - start));
}

/* A graph node created (stream capture, cudaGraphAdd*Node): its creation stack is the one its
 * kernels belong to. A clone (cudaGraphInstantiate) maps the executed node back to it. */
static void inj_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	const CUpti_GraphData *g = rd ? rd->resourceDescriptor : NULL;
	if (!g || !g->node)
		return;
	uint64_t node_id = 0;
	if (cuptiGetGraphNodeId(g->node, &node_id) != CUPTI_SUCCESS)
		return;
	struct inj_thread *t = inj_thread_get();
	if (!t)
		return;
	uint64_t at = atomic_load_explicit(&t->head, memory_order_relaxed);
	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
		uint64_t orig = 0;
		if (!g->originalNode || cuptiGetGraphNodeId(g->originalNode, &orig) != CUPTI_SUCCESS)
			return;
		struct {
			struct gpu_rec h;
			struct gpu_graph_clone c;
		} r = { .h = { .type = GPU_REC_GRAPH_CLONE, .size = sizeof(r) },
			.c = { .node_id = node_id, .original_id = orig } };
		if (inj_ring_room(t, sizeof(r))) {
			inj_count(&t->launches_dropped, 1);
			return;
		}
		inj_ring_put(t, &at, &r, sizeof(r));
		inj_ring_publish(t, at);
		return;
	}
	uint64_t start = inj_now();
	uint32_t stack = 0;
	if (inj.max_frames > 0) {
		int first = 0;
		uint16_t flags = 0;
		uint64_t token = 0;
		int n = inj_capture(t, &first, &flags, &token);
		struct inj_stack_ref unused;
		stack = inj_captured_id(t, token, first, n, flags, &at, &unused);
	}
	/* The correlation id of the API call that created it (cudaLaunchKernel under capture,
	 * cudaGraphAddKernelNode) when one is open on this thread. */
	struct {
		struct gpu_rec h;
		struct gpu_graph_node n;
	} r = { .h = { .type = GPU_REC_GRAPH_NODE, .size = sizeof(r) },
		.n = { .time = start, .node_id = node_id,
		       .correlation = t->depth > 0 ? t->spans[0].correlation : 0,
		       .stack = stack } };
	_Static_assert(sizeof(r) % 8 == 0, "gpu_graph_node record padded");
	if (inj_ring_room(t, (size_t)(at - atomic_load_explicit(&t->head, memory_order_relaxed)) +
			  sizeof(r))) {
		inj_count(&t->launches_dropped, 1);
		inj_ring_publish(t, at);
		return;
	}
	inj_ring_put(t, &at, &r, sizeof(r));
	inj_ring_publish(t, at);
	inj_count(&t->launches, 1);
	inj_count(&t->capture_ns, inj_now() - start);
}

static void CUPTIAPI inj_callback(void *userdata, CUpti_CallbackDomain domain,
				  CUpti_CallbackId cbid, const void *cbdata)
{
	if (atomic_load_explicit(&inj.state, memory_order_acquire) != INJ_ACTIVE || !cbdata ||
	    inj.floor)
		return;
	int saved_errno = errno;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
		inj_api(domain, cbid, cbdata);
	else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
		inj_resource(cbid, cbdata);
	errno = saved_errno;
}

/* ---- activity buffers ---- */

static void CUPTIAPI inj_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	uint32_t m = atomic_load(&inj.pool_free);
	while (m) {
		int i = __builtin_ctz(m);
		if (atomic_compare_exchange_weak(&inj.pool_free, &m, m & ~(1u << i))) {
			*buffer = inj.pool + (size_t)i * INJ_POOL_BUFFER_SIZE;
			*size = INJ_POOL_BUFFER_SIZE - INJ_BUFFER_TAIL;
			return;
		}
	}
	/* Pool exhausted (many threads with buffers in flight): one more, unmapped when done. */
	void *p = mmap(NULL, INJ_POOL_BUFFER_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		*buffer = NULL;  /* CUPTI drops the records and counts them */
		*size = 0;
		return;
	}
	*buffer = p;
	*size = INJ_POOL_BUFFER_SIZE - INJ_BUFFER_TAIL;
}

static void inj_buffer_release(uint8_t *buffer)
{
	if (inj.pool && buffer >= inj.pool &&
	    buffer < inj.pool + (size_t)INJ_POOL_BUFFERS * INJ_POOL_BUFFER_SIZE) {
		size_t i = (size_t)(buffer - inj.pool) / INJ_POOL_BUFFER_SIZE;
		atomic_fetch_or(&inj.pool_free, 1u << i);
	} else if (buffer) {
		munmap(buffer, INJ_POOL_BUFFER_SIZE);
	}
}

struct inj_out {
	size_t len;
	char buf[INJ_OUT_CHUNK] __attribute__((aligned(8)));
};

static void *inj_out_reserve(struct inj_out *o, uint16_t type, size_t payload)
{
	size_t size = inj_align8(sizeof(struct gpu_rec) + payload);
	if (o->len + size > sizeof(o->buf)) {
		inj_write(o->buf, o->len);
		o->len = 0;
	}
	char *p = o->buf + o->len;
	memset(p, 0, size);
	*(struct gpu_rec *)p = (struct gpu_rec){ .type = type, .size = (uint32_t)size };
	o->len += size;
	atomic_fetch_add_explicit(&inj.activities, 1, memory_order_relaxed);
	return p + sizeof(struct gpu_rec);
}

/* A record with GPU times: reserved as inj_out_reserve does, or NULL (counted) when CUPTI lost
 * both times. */
static void *inj_out_timed(struct inj_out *o, uint16_t type, size_t payload, uint64_t start,
			   uint64_t end)
{
	if (start == 0 && end == 0) {
		atomic_fetch_add_explicit(&inj.lost_timestamps, 1, memory_order_relaxed);
		return NULL;
	}
	return inj_out_reserve(o, type, payload);
}

static size_t inj_name_len(const char *name, size_t max)
{
	return name ? strnlen(name, max - 1) + 1 : 1;
}

static void inj_copy_name(char *dst, const char *name, size_t len)
{
	if (name)
		memcpy(dst, name, len - 1);
	dst[len - 1] = 0;
}

static void inj_kernel(struct inj_out *o, const void *rec)
{
	const CUpti_ActivityKernel10 *k = rec;
	size_t nl = inj_name_len(k->name, GPU_NAME_MAX);
	struct gpu_kernel *g = inj_out_timed(o, GPU_REC_KERNEL, sizeof(*g) + nl, k->start, k->end);
	if (!g)
		return;
	struct gpu_inflight_slot *sl =
		&csampler_gpu_inflight.slots[k->correlationId % GPU_INFLIGHT_SLOTS];
	if (__atomic_load_n(&sl->correlation, __ATOMIC_RELAXED) == k->correlationId)
		__atomic_store_n(&sl->state, GPU_INFLIGHT_FINISHED, __ATOMIC_RELAXED);
	*g = (struct gpu_kernel){
		.start = k->start, .end = k->end, .queued = k->queued, .submitted = k->submitted,
		.correlation = k->correlationId, .device = k->deviceId, .context = k->contextId,
		.stream = k->streamId,
		.grid = { (uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ },
		.block = { (uint32_t)k->blockX, (uint32_t)k->blockY, (uint32_t)k->blockZ },
		.graph_id = k->graphId, .name_len = (uint32_t)nl, .graph_node_id = k->graphNodeId,
		.registers = k->registersPerThread,
		.shared_bytes = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory) };
	/* queued/submitted are CUPTI_TIMESTAMP_UNKNOWN when latency timestamps are off */
	if (g->queued == CUPTI_TIMESTAMP_UNKNOWN)
		g->queued = 0;
	if (g->submitted == CUPTI_TIMESTAMP_UNKNOWN)
		g->submitted = 0;
	inj_copy_name((char *)(g + 1), k->name, nl);
}

static void inj_memcpy(struct inj_out *o, const void *rec)
{
	const CUpti_ActivityMemcpy6 *m = rec;
	struct gpu_memcpy *g = inj_out_timed(o, GPU_REC_MEMCPY, sizeof(*g), m->start, m->end);
	if (!g)
		return;
	*g = (struct gpu_memcpy){
		.start = m->start, .end = m->end, .bytes = m->bytes,
		.correlation = m->correlationId, .device = m->deviceId, .context = m->contextId,
		.stream = m->streamId, .copy_kind = m->copyKind, .src_kind = m->srcKind,
		.dst_kind = m->dstKind, .async = !!(m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC),
		.graph_node_id = m->graphNodeId };
}

static void inj_memset(struct inj_out *o, const void *rec)
{
	const CUpti_ActivityMemset4 *m = rec;
	struct gpu_memset *g = inj_out_timed(o, GPU_REC_MEMSET, sizeof(*g), m->start, m->end);
	if (!g)
		return;
	*g = (struct gpu_memset){
		.start = m->start, .end = m->end, .bytes = m->bytes,
		.correlation = m->correlationId, .device = m->deviceId, .context = m->contextId,
		.stream = m->streamId, .value = m->value, .graph_node_id = m->graphNodeId };
}

static void inj_sync(struct inj_out *o, const void *rec)
{
	const CUpti_ActivitySynchronization2 *s = rec;
	struct gpu_sync *g = inj_out_reserve(o, GPU_REC_SYNC, sizeof(*g));
	*g = (struct gpu_sync){ .start = s->start, .end = s->end, .correlation = s->correlationId,
				.type = s->type, .context = s->contextId, .stream = s->streamId,
				.event = s->cudaEventId };
}

static void inj_overhead(struct inj_out *o, const void *rec)
{
	const CUpti_ActivityOverhead3 *a = rec;
	struct gpu_overhead *g = inj_out_reserve(o, GPU_REC_OVERHEAD, sizeof(*g));
	*g = (struct gpu_overhead){ .start = a->start, .end = a->end, .kind = a->overheadKind,
				    .object_kind = a->objectKind,
				    .correlation = a->correlationId };
	memcpy(g->object_id, &a->objectId, sizeof(g->object_id));
}

/* FNV-1a of an NVTX domain's name: 0 stays the default domain. */
static uint32_t inj_domain_id(const char *domain)
{
	if (!domain || !*domain)
		return 0;
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)domain; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h ? h : 1;
}

static void inj_marker_emit(struct inj_out *o, uint64_t start, uint64_t end, uint32_t id,
			    uint32_t tid, uint32_t domain, const char *name)
{
	size_t nl = inj_name_len(name, GPU_NAME_MAX);
	struct gpu_marker *g = inj_out_reserve(o, GPU_REC_MARKER, sizeof(*g) + nl);
	*g = (struct gpu_marker){ .start = start, .end = end, .id = id, .tid = tid,
				  .domain = domain, .name_len = (uint32_t)nl };
	inj_copy_name((char *)(g + 1), name, nl);
}

/* The OS thread id of a marker's thread. A real CUPTI 13 (seen on an H100) gives NVTX markers a
 * threadId that is no OS thread id: the low 32 bits of pthread_self(), as other CUPTI tools also
 * assume. Every thread that made a captured CUDA call registered both ids (inj_thread_get), so
 * map it back; an id that already is one of those OS thread ids (the stand-in's) stays. */
static uint32_t inj_marker_tid(uint32_t cupti_tid)
{
	for (struct inj_thread *t = atomic_load(&inj.threads); t; t = t->next)
		if (atomic_load_explicit(&t->in_use, memory_order_acquire) && t->tid == cupti_tid)
			return cupti_tid;
	for (struct inj_thread *t = atomic_load(&inj.threads); t; t = t->next)
		if (atomic_load_explicit(&t->in_use, memory_order_acquire) &&
		    atomic_load_explicit(&t->pthread_low, memory_order_acquire) == cupti_tid)
			return t->tid;
	return cupti_tid;
}

/* CUPTI gives an NVTX range as a START record (with the name) and an END record, possibly in
 * different buffers: pair them by id here, so the file holds whole ranges. */
static void inj_marker(struct inj_out *o, const void *rec)
{
	const CUpti_ActivityMarker2 *m = rec;
	uint32_t tid = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ?
		inj_marker_tid(m->objectId.pt.threadId) : 0;
	uint32_t domain = inj_domain_id(m->domain);
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
		inj_marker_emit(o, m->timestamp, 0, m->id, tid, domain, m->name);
		return;
	}
	uint32_t h = (m->id * 2654435761u) % INJ_MARKER_SLOTS;
	pthread_mutex_lock(&inj.marker_lock);
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		for (uint32_t i = 0; i < INJ_MARKER_SLOTS; i++) {
			struct inj_marker *s = &inj.markers[(h + i) % INJ_MARKER_SLOTS];
			if (s->id == 0) {
				s->id = m->id ? m->id : UINT32_MAX;
				s->tid = tid;
				s->domain = domain;
				s->start = m->timestamp;
				snprintf(s->name, sizeof(s->name), "%s", m->name ? m->name : "");
				pthread_mutex_unlock(&inj.marker_lock);
				return;
			}
		}
		pthread_mutex_unlock(&inj.marker_lock);
		/* Table full: keep the range as a mark at its start rather than lose it. */
		inj_marker_emit(o, m->timestamp, 0, m->id, tid, domain, m->name);
		return;
	}
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		for (uint32_t i = 0; i < INJ_MARKER_SLOTS; i++) {
			struct inj_marker *s = &inj.markers[(h + i) % INJ_MARKER_SLOTS];
			if (s->id == (m->id ? m->id : UINT32_MAX)) {
				struct inj_marker copy = *s;
				s->id = 0;
				pthread_mutex_unlock(&inj.marker_lock);
				inj_marker_emit(o, copy.start, m->timestamp, m->id, copy.tid,
						copy.domain, copy.name);
				return;
			}
		}
	}
	pthread_mutex_unlock(&inj.marker_lock);
}

/* Ranges still open at exit: they lasted at least until now. */
static void inj_markers_close(struct inj_out *o)
{
	uint64_t now = inj_now();
	pthread_mutex_lock(&inj.marker_lock);
	for (uint32_t i = 0; i < INJ_MARKER_SLOTS; i++) {
		struct inj_marker *s = &inj.markers[i];
		if (s->id) {
			inj_marker_emit(o, s->start, now, s->id == UINT32_MAX ? 0 : s->id,
					s->tid, s->domain, s->name);
			s->id = 0;
		}
	}
	pthread_mutex_unlock(&inj.marker_lock);
}


/* The activity kinds translated, and how (kinds not enabled by us, marker data ..., are
 * passed over). */
static const struct inj_kind {
	CUpti_ActivityKind kind;
	void (*translate)(struct inj_out *o, const void *rec);
} inj_kinds[] = {
	{ CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, inj_kernel },
	{ CUPTI_ACTIVITY_KIND_KERNEL, inj_kernel },
	{ CUPTI_ACTIVITY_KIND_MEMCPY, inj_memcpy },
	{ CUPTI_ACTIVITY_KIND_MEMSET, inj_memset },
	{ CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, inj_sync },
	{ CUPTI_ACTIVITY_KIND_MARKER, inj_marker },
	{ CUPTI_ACTIVITY_KIND_OVERHEAD, inj_overhead },
};

/* Translate one completed CUPTI buffer into protocol records (writer thread or exit drain). */
static void inj_translate(struct inj_out *o, uint8_t *buffer, size_t valid)
{
	CUpti_Activity *rec = NULL;
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		for (size_t i = 0; i < sizeof(inj_kinds) / sizeof(inj_kinds[0]); i++) {
			if (inj_kinds[i].kind == rec->kind) {
				inj_kinds[i].translate(o, rec);
				break;
			}
		}
	}
	inj_write(o->buf, o->len);
	o->len = 0;
}

/* CUPTI hands a buffer back (on its own thread, or inside an application's API call): count
 * its drops and queue it for the writer, no translation, no write(2) here. */
static void CUPTIAPI inj_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
					  size_t size, size_t valid)
{
	if (!buffer)
		return;
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add(&inj.dropped, dropped);
	if (atomic_load(&inj.state) != INJ_ACTIVE || inj.floor || valid > size) {
		inj_buffer_release(buffer);
		return;
	}
	struct inj_done *d = (struct inj_done *)(buffer + INJ_POOL_BUFFER_SIZE - INJ_BUFFER_TAIL);
	_Static_assert(sizeof(struct inj_done) <= INJ_BUFFER_TAIL, "hand-off node fits");
	d->buffer = buffer;
	d->valid = valid;
	d->next = atomic_load(&inj.done);
	while (!atomic_compare_exchange_weak(&inj.done, &d->next, d))
		;
	atomic_fetch_add(&inj.buffers, 1);
}

/* Everything waiting: every thread's published records (one writev per thread, opened by its
 * GPU_REC_THREAD), then the completed CUPTI buffers in the order they came. Returns whether
 * anything was written. Under drain_lock: the writer thread, or the exit drain. */
static int inj_drain(void)
{
	static struct inj_out out;   /* under drain_lock */
	int any = 0;
	pthread_mutex_lock(&inj.drain_lock);
	for (struct inj_thread *t = atomic_load(&inj.threads); t; t = t->next) {
		uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
		uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
		if (head == tail)
			continue;
		struct {
			struct gpu_rec h;
			struct gpu_thread th;
		} r = { .h = { .type = GPU_REC_THREAD, .size = sizeof(r) },
			.th = { .tid = t->tid } };
		struct iovec iov[3] = { { &r, sizeof(r) } };
		int n = 1;
		size_t off = (size_t)(tail % INJ_RING), len = (size_t)(head - tail);
		size_t first = len < INJ_RING - off ? len : INJ_RING - off;
		iov[n++] = (struct iovec){ t->ring + off, first };
		if (len > first)
			iov[n++] = (struct iovec){ t->ring, len - first };
		inj_writev(iov, n);
		atomic_store_explicit(&t->tail, head, memory_order_release);
		any = 1;
	}
	struct inj_done *d = atomic_exchange(&inj.done, NULL), *fifo = NULL;
	while (d) {              /* LIFO to FIFO */
		struct inj_done *next = d->next;
		d->next = fifo;
		fifo = d;
		d = next;
	}
	for (d = fifo; d;) {
		struct inj_done *next = d->next;
		uint8_t *buffer = d->buffer;
		inj_translate(&out, buffer, d->valid);
		inj_buffer_release(buffer);
		d = next;
		any = 1;
	}
	pthread_mutex_unlock(&inj.drain_lock);
	return any;
}

/* `csampler dump` asked for a flush (protocol.h): CUPTI's buffers (under the watchdog), their
 * records translated (kernels that finished leave the in-flight table), then the answer. */
static void inj_inflight_serve(void)
{
	struct gpu_inflight_table *ft = &csampler_gpu_inflight;
	uint32_t req = __atomic_load_n(&ft->flush_request, __ATOMIC_ACQUIRE);
	if (req == __atomic_load_n(&ft->flush_done, __ATOMIC_RELAXED))
		return;
	inj_flush("csampler dump");
	inj_drain();
	ft->flush_ns = inj_now();
	__atomic_store_n(&ft->flush_done, req, __ATOMIC_RELEASE);
}

/* The writer thread: drains every few ms (sooner while there is work), until told to stop. */
static void *inj_writer_main(void *arg)
{
	uint64_t sleep_ns = INJ_WRITER_MIN_NS;
	pthread_mutex_lock(&inj.writer_lock);
	while (!inj.writer_stop) {
		pthread_mutex_unlock(&inj.writer_lock);
		inj_inflight_serve();
		sleep_ns = inj_drain() ? INJ_WRITER_MIN_NS :
			   sleep_ns * 2 > INJ_WRITER_MAX_NS ? INJ_WRITER_MAX_NS : sleep_ns * 2;
		struct timespec deadline;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		uint64_t ns = (uint64_t)deadline.tv_nsec + sleep_ns;
		deadline.tv_sec += (time_t)(ns / 1000000000ull);
		deadline.tv_nsec = (long)(ns % 1000000000ull);
		pthread_mutex_lock(&inj.writer_lock);
		if (!inj.writer_stop)
			pthread_cond_timedwait(&inj.writer_cond, &inj.writer_lock, &deadline);
	}
	pthread_mutex_unlock(&inj.writer_lock);
	return NULL;
}

/* Started at init (and at each attach: a detach stops it), with every signal blocked (the
 * program's signals are not for it). */
static int inj_writer_start(void)
{
	static int cond_done;
	if (inj.writer_running)
		return 0;
	if (!cond_done) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&inj.writer_cond, &ca);
		pthread_condattr_destroy(&ca);
		cond_done = 1;
	}
	inj.writer_stop = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&inj.writer, NULL, inj_writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return err;
	pthread_setname_np(inj.writer, "csampler-gpu");
	inj.writer_running = 1;
	return 0;
}

static void inj_writer_stop(void)
{
	if (!inj.writer_running)
		return;
	pthread_mutex_lock(&inj.writer_lock);
	inj.writer_stop = 1;
	pthread_cond_signal(&inj.writer_cond);
	pthread_mutex_unlock(&inj.writer_lock);
	pthread_join(inj.writer, NULL);
	inj.writer_running = 0;
}

/* ---- flush under a watchdog ---- */

static void *inj_flush_thread(void *arg)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&inj.flush_lock);
	inj.flush_done = 1;
	pthread_cond_broadcast(&inj.flush_cond);
	pthread_mutex_unlock(&inj.flush_lock);
	return NULL;
}

/* cuptiActivityFlushAll(FORCED) on a helper thread; wait CSAMPLER_GPU_FLUSH_MS for it. A flush
 * that does not come back is abandoned (counted, one note) and never tried again. The buffers
 * it completes go to the writer like any other. */
static void inj_flush(const char *why)
{
	if (atomic_load(&inj.flush_stuck) || atomic_exchange(&inj.flushing, 1))
		return;
	pthread_attr_t attr;
	pthread_t th;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&inj.flush_lock);
	inj.flush_done = 0;
	int err = pthread_create(&th, &attr, inj_flush_thread, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_mutex_unlock(&inj.flush_lock);
		inj_note(1, "no thread for the final CUPTI flush (pthread_create: %s): "
			 "GPU records still in CUPTI's buffers are lost", strerror(err));
		atomic_store(&inj.flushing, 0);
		return;
	}
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += inj.flush_ms / 1000;
	deadline.tv_nsec += (long)(inj.flush_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!inj.flush_done) {
		if (pthread_cond_timedwait(&inj.flush_cond, &inj.flush_lock, &deadline) == ETIMEDOUT)
			break;
	}
	int done = inj.flush_done;
	pthread_mutex_unlock(&inj.flush_lock);
	if (!done) {
		atomic_store(&inj.flush_stuck, 1);
		atomic_fetch_add(&inj.flush_timeouts, 1);
		inj_note(1, "cuptiActivityFlushAll (at %s) did not return within %u ms "
			 "(CSAMPLER_GPU_FLUSH_MS): abandoned, GPU records not yet delivered are lost",
			 why, inj.flush_ms);
	}
	atomic_store(&inj.flushing, 0);
}

static void inj_atexit(void)
{
	if (atomic_load(&inj.state) != INJ_ACTIVE)
		return;
	/* CUPTI's buffers first (under the watchdog), then the writer stops and this thread
	 * drains what is left: every published record of every thread, every completed buffer.
	 * A thread still making calls now loses what it appends after this drain. */
	inj_flush("exit");
	inj_writer_stop();
	inj_drain();
	pthread_mutex_lock(&inj.drain_lock);
	struct inj_out *o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o != MAP_FAILED) {
		o->len = 0;
		inj_markers_close(o);
		inj_write(o->buf, o->len);
		munmap(o, sizeof(*o));
	}
	inj_write_stats();
	inj_set_state(INJ_INERT);
	pthread_mutex_unlock(&inj.drain_lock);
}

/* A child forked after CUDA init has a copy of the parent's unwritten rings and a CUDA it
 * cannot use, and no writer thread (threads do not survive fork): it writes nothing, flushes
 * nothing, waits for no writer. */
static void inj_atfork_child(void)
{
	inj_set_state(INJ_INERT);
	inj.writer_running = 0;
	if (inj.fd >= 0)
		close(inj.fd);
	inj.fd = -1;
}
/* ---- start ---- */

static int inj_collect_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t self = (uintptr_t)arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	int match = strstr(name, "libcupti.so") || strstr(name, "libcuda.so");
	for (int i = 0; i < info->dlpi_phnum && !match; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz)
			match = 1;
	}
	if (!match)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || inj.nskip >= INJ_MAX_SKIP_RANGES)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		inj.skip[inj.nskip++] = (struct inj_range){ lo, lo + ph->p_memsz };
	}
	return 0;
}

static const char *inj_var(const char *name);

static long inj_env_long(const char *name, long def, long lo, long hi)
{
	const char *s = inj_var(name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo)
		return def;
	return v > hi ? hi : v;
}

/* CSAMPLER_GPU_DISABLE: a comma list of captures to leave off, to measure what each costs on a
 * real GPU side by side with a run without it: kernel, memcpy, memset, sync, nvtx, overhead
 * (activity kinds), latency (queued/submitted timestamps, already off unless
 * CSAMPLER_GPU_LATENCY=1), driver-api (its callbacks). Measured
 * on an H100 (splat-train micro, 3000 iterations, ~32 launches per 0.64 ms iteration, medians
 * of 4 interleaved rounds): everything on +11% ms/iteration; latency off +8%; callbacks and
 * kernel records alone, no stacks, +4%; callbacks alone +5%: CUPTI's own per-call cost. */
static int inj_disabled(const char *key)
{
	const char *s = inj_var("CSAMPLER_GPU_DISABLE");
	size_t n = strlen(key);
	while (s && *s) {
		const char *e = strchrnul(s, ',');
		if ((size_t)(e - s) == n && !strncmp(s, key, n))
			return 1;
		s = *e ? e + 1 : e;
	}
	return 0;
}

static const CUpti_CallbackId inj_runtime_cbids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
	CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
	CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020,     /* flush points */
	CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
};

static const CUpti_CallbackId inj_driver_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
	CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,              /* flush points */
	CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
};

/* CUPTI refused a call GPU capture cannot do without: one note, the status, nothing else. The
 * program runs on untouched (the recorder keeps its CPU profile). */
static int inj_give_up(const char *call, CUptiResult r)
{
	const char *hint = r == CUPTI_ERROR_NOT_INITIALIZED ?
		" (a CUPTI newer than the CUDA driver? update the driver)" :
		r == CUPTI_ERROR_UNKNOWN ? " (no usable CUDA driver or GPU?)" : "";
	inj_note(1, "%s failed: %s%s; GPU capture off, CPU profile only", call,
		 inj_result_name(r), hint);
	if (inj.subscriber) {
		cuptiUnsubscribe(inj.subscriber);
		inj.subscriber = NULL;
	}
	inj_write_info(GPU_STATUS_CUPTI_ERROR, r);
	inj_set_state(INJ_INERT);
	return 1;
}

/* Python frames for launch stacks: only in a process that runs a CPython whose minor version
 * has a layout in CSAMPLER_GPU_PYTHON (protocol.h), looked up in the process' own symbols.
 * Anything missing leaves the walk off: the library stays inert for programs without Python. */
static void inj_py_init(void)
{
	const char *s = inj_var("CSAMPLER_GPU_PYTHON");
	const void *ver = dlsym(RTLD_DEFAULT, "Py_Version");
	void *tstate = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	/* 3.13+: the interpreter's own _Py_DebugOffsets, at the start of _PyRuntime */
	const uint8_t *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	if (!s || !ver || !tstate || !code_type)
		return;
	uint32_t version;
	memcpy(&version, ver, sizeof(version));   /* PY_VERSION_HEX, little-endian */
	bool dbg_ok = pywalk_debug_header(runtime, PYWALK_DEBUG_HEADER, version) == 0;
	while (*s) {
		char *end;
		unsigned long v = strtoul(s, &end, 16);
		int ok = *end == ':';
		uint32_t off[GPU_PY_NFIELDS];
		for (int i = 0; i < GPU_PY_NFIELDS && ok; i++) {
			s = end + 1;
			bool at = *s == '@';
			unsigned long x = strtoul(s + at, &end, 10);
			ok = end != s + at && (i + 1 < GPU_PY_NFIELDS ? *end == ',' :
					       (*end == ';' || !*end));
			if (ok && at && v == version >> 16) {
				/* where the process' debug offsets hold it: read there (only for
				 * this process' version, whose debug offsets were checked) */
				uint64_t y = 0;
				ok = dbg_ok && x + 8 <= 4096;
				if (ok)
					memcpy(&y, runtime + x, 8);
				x = ok ? (unsigned long)y : 4096;
			}
			ok = ok && x < 4096;
			off[i] = (uint32_t)x;
		}
		if (!ok)
			return;   /* not the recorder's format: no Python frames */
		if (v == version >> 16) {
			memcpy(inj.py.off, off, sizeof(off));
			inj.py.walk = (struct pywalk_layout){
				.frame_code = off[GPU_PY_FRAME_CODE],
				.frame_previous = off[GPU_PY_FRAME_PREVIOUS],
				.frame_instr = off[GPU_PY_FRAME_INSTR],
				.frame_is_entry = off[GPU_PY_FRAME_IS_ENTRY],
				.frame_owner = off[GPU_PY_FRAME_OWNER],
				.owner_generator = (uint8_t)off[GPU_PY_OWNER_GENERATOR],
				.owner_cstack = (uint8_t)off[GPU_PY_OWNER_CSTACK],
				.code_tag = (uint8_t)off[GPU_PY_CODE_TAG] };
			inj.py.walk.frame_read = pywalk_frame_read(&inj.py.walk);
			*(void **)&inj.py.this_tstate = tstate;
			inj.py.code_type = (uintptr_t)code_type;
			inj.py_active = 1;
			return;
		}
		s = *end ? end + 1 : end;
	}
}

/* The API callbacks to subscribe: CSAMPLER_GPU_SUBSCRIBE (driver, runtime, both). */
enum { INJ_SUB_RUNTIME = 1, INJ_SUB_DRIVER = 2 };

/* The launch path's settings (issue 20): which callback domains (default the driver's alone:
 * every runtime launch, copy and sync runs a driver call with its correlation id inside it, so
 * one callback level per call, and direct driver calls, such as Triton's cuLaunchKernel, too),
 * launch-queue timestamps (opt-in: about 1.5 points of slowdown on the H100), and the floor
 * switches of scripts/bench-gpu-launch.sh. */
static int inj_launch_config(int *subscribe, int *latency)
{
	const char *s = inj_var("CSAMPLER_GPU_SUBSCRIBE");
	*subscribe = !s || !*s || !strcmp(s, "driver") ? INJ_SUB_DRIVER :
		     !strcmp(s, "runtime") ? INJ_SUB_RUNTIME :
		     !strcmp(s, "both") ? INJ_SUB_RUNTIME | INJ_SUB_DRIVER : INJ_SUB_DRIVER;
	if (inj_disabled("driver-api"))
		*subscribe = INJ_SUB_RUNTIME;
	const char *l = inj_var("CSAMPLER_GPU_LATENCY");
	*latency = l && !strcmp(l, "1") && !inj_disabled("latency");
	const char *f = inj_var("CSAMPLER_GPU_FLOOR");
	return !f || !*f ? INJ_FLOOR_NONE : !strcmp(f, "empty") ? INJ_FLOOR_EMPTY :
	       !strcmp(f, "activity") ? INJ_FLOOR_ACTIVITY :
	       !strcmp(f, "both") ? INJ_FLOOR_BOTH : INJ_FLOOR_NONE;
}

/* The record file gpu-PID.bin in dir and its header. -1 when there is nowhere to write (the
 * recorder reports the missing file). */
static int inj_open_output(const char *dir)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/gpu-%d.bin", dir, (int)getpid()) >= (int)sizeof(path))
		return -1;
	inj.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (inj.fd < 0)
		return -1;
	struct gpu_file_header fh = { .version = GPU_PROTOCOL_VERSION, .pid = (uint32_t)getpid(),
				      .ppid = (uint32_t)getppid(), .header_size = sizeof(fh),
				      .start_ns = inj_now() };
	memcpy(fh.magic, GPU_FILE_MAGIC, sizeof(fh.magic));
	inj_write(&fh, sizeof(fh));
	return 0;
}

/* Steps 1 and 2 of inj_start: the clock callback (first and once: a re-attach keeps it, as
 * re-registering corrupts kernel timestamps) and the one subscriber slot. -1 when capture is
 * off (said and written). */
static int inj_subscribe(void)
{
	CUptiResult r = CUPTI_SUCCESS;
	if (!inj.clock_set) {
		r = cuptiActivityRegisterTimestampCallback(inj_timestamp);
		if (r != CUPTI_SUCCESS)
			return inj_give_up("cuptiActivityRegisterTimestampCallback", r), -1;
		inj.clock_set = 1;
	}
	char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
	CUpti_SubscriberParams sp = { .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
				      .subscriberName = "csampler",
				      .oldSubscriberName = other,
				      .oldSubscriberSize = sizeof(other) };
	r = cuptiSubscribe_v2(&inj.subscriber, inj_callback, NULL, &sp);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		other[sizeof(other) - 1] = 0;
		inj.subscriber = NULL;
		inj_note(1, "CUPTI is already used by %s (one CUPTI client per process); "
			 "GPU capture off, CPU profile only", other[0] ? other : "another tool");
		inj_write_info(GPU_STATUS_OTHER_SUBSCRIBER, r);
		inj_set_state(INJ_INERT);
		return -1;
	}
	if (r != CUPTI_SUCCESS) {
		inj.subscriber = NULL;
		return inj_give_up("cuptiSubscribe_v2", r), -1;
	}
	return 0;
}

/* Everything the callbacks touch, made before the first one can fire (once: a re-attach finds
 * it in place): the thread key and slots, the buffer pool, the flush condition, the module
 * ranges, a warmed unwinder, and dump's in-flight table. -1 when capture is off. */
static int inj_setup_once(void)
{
	if (!inj.setup_done) {
		if (pthread_key_create(&inj.thread_key, inj_thread_exit))
			return inj_give_up("pthread_key_create", CUPTI_ERROR_OUT_OF_MEMORY), -1;
		inj.slots = fu_map_huge(sizeof(struct inj_thread) * INJ_THREAD_SLOTS);
		/* the first thread's state page made here (a huge page is zeroed whole at the first
		 * write), not in that thread's first launch; the warm-up below does the same for
		 * this thread's stack memo */
		if (inj.slots)
			atomic_store(&inj.slots[0].in_use, 0);
		void *pool = mmap(NULL, (size_t)INJ_POOL_BUFFERS * INJ_POOL_BUFFER_SIZE,
				  PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);
		if (pool != MAP_FAILED) {
			inj.pool = pool;
			atomic_store(&inj.pool_free, INJ_POOL_BUFFERS >= 32 ? UINT32_MAX :
				     (1u << INJ_POOL_BUFFERS) - 1);
		}
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&inj.flush_cond, &ca);
		pthread_condattr_destroy(&ca);
		dl_iterate_phdr(inj_collect_range, (void *)(uintptr_t)inj_collect_range);
		/* Warm the unwinder off the launch path (its first call loads and allocates). */
		unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
		if (inj.max_frames > 0) {
			void *warm[8];
			unw_backtrace(warm, 8);
			fu_backtrace((uintptr_t *)warm, 8);
		}
		inj.setup_done = 1;
	}
	if (!csampler_gpu_inflight.magic[0]) {
		struct gpu_inflight_table *ft = &csampler_gpu_inflight;
		ft->version = GPU_PROTOCOL_VERSION;
		ft->nslots = GPU_INFLIGHT_SLOTS;
		ft->slot_size = sizeof(struct gpu_inflight_slot);
		__atomic_store_n(&ft->flush_done, __atomic_load_n(&ft->flush_request, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		memcpy(ft->magic, GPU_INFLIGHT_MAGIC, sizeof(ft->magic));
	}
	return 0;
}

/* Step 3: API and resource callbacks (none for the "activity only" floor). -1 when capture is
 * off. */
static int inj_enable_callbacks(int subscribe)
{
	CUptiResult r;
	int callbacks = inj.floor != INJ_FLOOR_ACTIVITY;
	for (size_t i = 0; i < sizeof(inj_runtime_cbids) / sizeof(inj_runtime_cbids[0]) &&
			   callbacks && (subscribe & INJ_SUB_RUNTIME); i++)
		if ((r = cuptiEnableCallback(1, inj.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
					     inj_runtime_cbids[i])) != CUPTI_SUCCESS)
			return inj_give_up("cuptiEnableCallback(runtime)", r), -1;
	for (size_t i = 0; i < sizeof(inj_driver_cbids) / sizeof(inj_driver_cbids[0]) &&
			   callbacks && (subscribe & INJ_SUB_DRIVER); i++)
		if ((r = cuptiEnableCallback(1, inj.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
					     inj_driver_cbids[i])) != CUPTI_SUCCESS)
			return inj_give_up("cuptiEnableCallback(driver)", r), -1;
	if (callbacks &&
	    ((r = cuptiEnableCallback(1, inj.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
				      CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)) != CUPTI_SUCCESS ||
	     (r = cuptiEnableCallback(1, inj.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
				      CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)) != CUPTI_SUCCESS))
		return inj_give_up("cuptiEnableCallback(resource)", r), -1;
	return 0;
}

/* Step 4: activity. Not RUNTIME/DRIVER: those kinds make CUPTI time and record every API call
 * of the program (cudaGetLastError, cudaEventRecord ... as well as launches), the larger part
 * of the in-target cost; the spans of the calls captured above are timed in inj_api instead.
 * -1 when capture is off. */
static int inj_enable_activity(int latency)
{
	CUptiResult r;
	if ((r = cuptiActivityRegisterCallbacks(inj_buffer_requested, inj_buffer_completed)) !=
	    CUPTI_SUCCESS)
		return inj_give_up("cuptiActivityRegisterCallbacks", r), -1;
	static const struct { CUpti_ActivityKind kind; const char *name, *key; int needed; }
	kinds[] = {
		{ CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", "kernel", 1 },
		{ CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", "memcpy", 1 },
		{ CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", "memset", 1 },
		{ CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", "sync", 0 },
		{ CUPTI_ACTIVITY_KIND_MARKER, "MARKER", "nvtx", 0 },
		{ CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", "overhead", 0 },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (inj_disabled(kinds[i].key) || inj.floor == INJ_FLOOR_EMPTY)
			continue;
		r = cuptiActivityEnable(kinds[i].kind);
		if (r == CUPTI_SUCCESS)
			continue;
		if (kinds[i].needed) {
			char call[64];
			snprintf(call, sizeof(call), "cuptiActivityEnable(%s)", kinds[i].name);
			return inj_give_up(call, r), -1;
		}
		inj_note(0, "cuptiActivityEnable(%s) failed: %s; those records are missing",
			 kinds[i].name, inj_result_name(r));
	}
	if (latency && (r = cuptiActivityEnableLatencyTimestamps(1)) != CUPTI_SUCCESS)
		inj_note(0, "cuptiActivityEnableLatencyTimestamps failed: %s; no launch-queue "
			 "latency", inj_result_name(r));

	return 0;
}

static int inj_start(void)
{
	const char *dir = inj_var("CSAMPLER_GPU_DIR");
	if (!dir || !*dir)
		return 1;   /* nobody asked for GPU records: stay out of the way */
	inj.max_frames = (int)inj_env_long("CSAMPLER_GPU_STACK", 64, 0, GPU_MAX_FRAMES);
	/* the unwinder's stack memo (fastunwind.c), on unless CSAMPLER_GPU_STACK_MEMO=0
	 * (scripts/bench-gpu-launch.sh compares): the stacks are the same either way */
	fu_set_stack_memo(inj_env_long("CSAMPLER_GPU_STACK_MEMO", 1, 0, 1) != 0);
	/* a smaller stack table for tests (t-cupti.sh's stackreset: ids across its resets) */
	inj.stack_limit = (uint32_t)inj_env_long("CSAMPLER_GPU_STACK_TABLE", INJ_STACK_SLOTS * 3 / 4,
						  1, INJ_STACK_SLOTS * 3 / 4);
	inj.flush_ms = (unsigned)inj_env_long("CSAMPLER_GPU_FLUSH_MS", 3000, 1, 600000);
	if (inj.max_frames > 0)
		inj_py_init();
	if (inj_open_output(dir))
		return 1;   /* nowhere to say anything: the recorder reports the missing file */

	cuptiGetVersion(&inj.cupti_version);
	int subscribe, latency;
	inj.floor = inj_launch_config(&subscribe, &latency);
	inj_clock_init();
	if (inj_subscribe() || inj_setup_once())
		return 1;
	/* The writer thread: every write(2) after this one happens there (or at exit). */
	int werr = inj_writer_start();
	if (werr)
		inj_note(1, "no writer thread (pthread_create: %s): GPU records are written at exit "
			 "only, and a thread's records beyond %u KiB are lost", strerror(werr),
			 INJ_RING >> 10);
	inj_set_state(INJ_ACTIVE);
	if (inj_enable_callbacks(subscribe) || inj_enable_activity(latency))
		return 1;

	inj_write_info(GPU_STATUS_OK, CUPTI_SUCCESS);
	if (!inj.hooks_set) {
		pthread_atfork(NULL, NULL, inj_atfork_child);
		atexit(inj_atexit);
		inj.hooks_set = 1;
	}
	return 1;
}

/* Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library. */
INJ_EXPORT int InitializeInjection(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&inj.initialised, &expected, 1))
		return 1;
	int saved_errno = errno;
	int ret = inj_start();
	errno = saved_errno;
	return ret;
}

/* ---- attach to a running process (record -p PID --gpu on; inject/attach.h) ----
 *
 * The recorder stops one thread of a program started without csampler, makes it dlopen this
 * library and call csampler_gpu_attach(config), and at the end of its recording
 * csampler_gpu_detach(). The settings come in config instead of the environment, read by the
 * same code (inj_var); start is inj_start, as at cuInit. Detach unsubscribes, turns the
 * activity kinds off, writes what is left (inj_atexit: launch buffers, forced flush under the
 * watchdog, open NVTX ranges, counters) and leaves the library loaded and idle: CUPTI keeps
 * the timestamp callback, so it is never unloaded, and a later attach starts it again. */

INJ_EXPORT const char csampler_gpu_attach_version[] = GPU_ATTACH_VERSION;

static struct {
	int active;                       /* inj_var reads buf, not the environment */
	int attached;                     /* started by csampler_gpu_attach, not yet detached */
	int old_fd;                       /* the last session's descriptor, now /dev/null */
	char buf[GPU_ATTACH_CONFIG_MAX + 1]; /* NAME=VALUE entries, each NUL-terminated */
} inj_cfg = { .old_fd = -1 };

/* A setting: from the attach config when attached, else from the environment (launch). */
static const char *inj_var(const char *name)
{
	if (!inj_cfg.active)
		return getenv(name);
	size_t n = strlen(name);
	for (const char *p = inj_cfg.buf; *p; p += strlen(p) + 1)
		if (!strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}

static int inj_attach_fail(char *msg, size_t msglen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int inj_attach_fail(char *msg, size_t msglen, int ret, const char *fmt, ...)
{
	if (msg && msglen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, msglen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* A new session: counters and buffers of the last one are gone with its file. No callback
 * runs now (no subscriber), so every thread's state may be reset, including the nesting depth
 * of a call that was open when the last session unsubscribed (its EXIT never came). */
static void inj_attach_reset(void)
{
	for (struct inj_thread *t = atomic_load(&inj.threads); t; t = t->next) {
		/* what was appended after the last session's final drain is dropped; the new
		 * file gets every stack and name again */
		atomic_store(&t->tail, atomic_load(&t->head));
		t->depth = 0;
		if (t->stab)
			memset(t->stab, 0, sizeof(*t->stab) * INJ_STACK_SLOTS);
		t->stab_used = t->arena_used = 0;
		__atomic_store_n(&t->stab_gen, t->stab_gen + 1, __ATOMIC_RELEASE);
		memset(t->name_written, 0, sizeof(t->name_written));
		atomic_store(&t->launches, 0);
		atomic_store(&t->launches_dropped, 0);
		atomic_store(&t->capture_ns, 0);
		atomic_store(&t->stacks, 0);
	}
	/* buffers completed after the last drain go back to the pool unread */
	for (struct inj_done *d = atomic_exchange(&inj.done, NULL), *next; d; d = next) {
		next = d->next;
		inj_buffer_release(d->buffer);
	}
	atomic_store(&inj.activities, 0);
	atomic_store(&inj.dropped, 0);
	atomic_store(&inj.lost_timestamps, 0);
	atomic_store(&inj.buffers, 0);
	atomic_store(&inj.flush_timeouts, 0);
	atomic_store(&inj.write_errors, 0);
	atomic_store(&inj.write_broken, 0);
}

static int inj_attach(const char *config, char *msg, size_t msglen)
{
	size_t len = config ? strnlen(config, GPU_ATTACH_CONFIG_MAX) : GPU_ATTACH_CONFIG_MAX;
	if (len >= GPU_ATTACH_CONFIG_MAX)
		return inj_attach_fail(msg, msglen, GPU_ATTACH_BAD_CONFIG,
				       "no config, or one longer than %d bytes",
				       GPU_ATTACH_CONFIG_MAX - 1);
	if (atomic_load(&inj.state) == INJ_ACTIVE)
		return inj_attach_fail(msg, msglen, GPU_ATTACH_ACTIVE,
				       "GPU capture is already on in this process (started by "
				       "'csampler env', or another 'csampler record -p' is attached)");
	if (atomic_load(&inj.flush_stuck))
		return inj_attach_fail(msg, msglen, GPU_ATTACH_HUNG,
				       "a CUPTI flush hung in an earlier recording of this process: "
				       "CUPTI is not used again in it");
	memset(inj_cfg.buf, 0, sizeof(inj_cfg.buf));
	for (size_t i = 0; i < len; i++)
		inj_cfg.buf[i] = config[i] == '\n' ? 0 : config[i];
	inj_cfg.active = 1;
	const char *v = inj_var("CSAMPLER_GPU_ATTACH_VERSION");
	if (!v || strcmp(v, GPU_ATTACH_VERSION)) {
		int ret = inj_attach_fail(msg, msglen, GPU_ATTACH_BAD_VERSION,
					  "the library is %s, csampler asked for %s",
					  GPU_ATTACH_VERSION, v ? v : "no version");
		inj_cfg.active = 0;
		return ret;
	}
	const char *dir = inj_var("CSAMPLER_GPU_DIR");
	char path[PATH_MAX];
	if (!dir || !*dir || snprintf(path, sizeof(path), "%s/gpu-%d.bin", dir,
				      (int)getpid()) >= (int)sizeof(path))
		return inj_attach_fail(msg, msglen, GPU_ATTACH_BAD_CONFIG,
				       "no CSAMPLER_GPU_DIR in the config, or a path too long");
	if (access(dir, W_OK | X_OK) < 0)
		return inj_attach_fail(msg, msglen, GPU_ATTACH_BAD_CONFIG,
				       "the process cannot write into %s: %s", dir, strerror(errno));
	/* A file of that name is a stale one (a process of the same PID, or a recorder killed
	 * before its detach): nobody writes it now, this session starts it afresh. */
	unlink(path);
	inj_attach_reset();
	atomic_store(&inj.initialised, 1);   /* InitializeInjection is not to start it again */
	inj_start();
	if (inj.fd < 0)
		return inj_attach_fail(msg, msglen, GPU_ATTACH_BAD_CONFIG, "cannot create %s: %s",
				       path, strerror(errno));
	if (atomic_load(&inj.state) != INJ_ACTIVE)
		return inj_attach_fail(msg, msglen, GPU_ATTACH_CUPTI,
				       "CUPTI refused (the process' GPU file says why)");
	if (inj_cfg.old_fd >= 0)
		close(inj_cfg.old_fd);   /* a writer of the last session is long gone */
	inj_cfg.old_fd = -1;
	inj_cfg.attached = 1;
	return GPU_ATTACH_OK;
}

/* Called by `csampler record -p PID --gpu on` in a thread of the running program. */
INJ_EXPORT int csampler_gpu_attach(const char *config, char *msg, size_t msglen)
{
	int saved_errno = errno;
	int ret = inj_attach(config, msg, msglen);
	errno = saved_errno;
	return ret;
}

/* Called at the end of that recording: the program goes on as if never attached. */
INJ_EXPORT int csampler_gpu_detach(void)
{
	static const CUpti_ActivityKind kinds[] = {
		CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
		CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
		CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_OVERHEAD,
	};
	int saved_errno = errno;
	if (!inj_cfg.attached || atomic_load(&inj.state) != INJ_ACTIVE) {
		errno = saved_errno;
		return GPU_DETACH_NOT_ATTACHED;
	}
	/* No new callbacks and no new records; then what CUPTI and the threads still hold. */
	if (inj.subscriber)
		cuptiUnsubscribe(inj.subscriber);
	inj.subscriber = NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cuptiActivityDisable(kinds[i]);
	cuptiActivityEnableLatencyTimestamps(0);
	inj_atexit();
	inj_set_state(INJ_OFF);
	/* The writer thread is stopped (inj_atexit); still, nothing written late may land in a
	 * descriptor the program reuses: the number stays ours, on /dev/null, until the next
	 * attach. */
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (nul >= 0 && dup3(nul, inj.fd, O_CLOEXEC) >= 0) {
		inj_cfg.old_fd = inj.fd;
	} else {
		close(inj.fd);
	}
	if (nul >= 0)
		close(nul);
	inj.fd = -1;
	inj_cfg.attached = 0;
	errno = saved_errno;
	return GPU_DETACH_OK;
}
