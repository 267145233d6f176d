/* protocol.h: the wire contract between the in-target GPU library (profiler/inject/,
 * lib/libcsampler-cupti.so, loaded into the user's CUDA program through CUDA_INJECTION64_PATH)
 * and the recorder (profiler/record/), which merges what the library wrote into the data file.
 * This header is all the two sides share: plain fixed-size structs, no functions, libc types only.
 *
 * Transport: one file per process, CSAMPLER_GPU_DIR/gpu-PID.bin (mode 0600, O_APPEND). The
 * library writes the file header once, then whole chunks with one write(2) each, all from its
 * writer thread (application threads only fill their own rings); a chunk holds complete records
 * only, so a file cut at any point (target killed) is a readable prefix.
 *
 * API calls (protocol 3): a thread's records come in runs, each opened by GPU_REC_THREAD (the
 * thread the records up to the next one belong to). A call is one fixed GPU_REC_CALL written at
 * its EXIT, naming its stack by id; the stack (return addresses and Python frames) is written
 * once before its first call as GPU_REC_STACK, and the API's name once per thread and callback
 * id as GPU_REC_API_NAME. Stack ids are unique in a process; a stack may be written again under
 * a new id (the thread's table was reset).
 *
 *   file:    struct gpu_file_header, then records
 *   record:  struct gpu_rec (type, size of the whole record, 8-byte aligned), then its payload;
 *            a reader skips types it does not know by size.
 *
 * Environment the recorder (or `csampler env`) sets for the target:
 *   CUDA_INJECTION64_PATH   absolute path of libcsampler-cupti.so
 *   NVTX_INJECTION64_PATH   absolute path of libcupti.so.13 (NVTX ranges through CUPTI)
 *   CSAMPLER_GPU_DIR        directory for gpu-PID.bin (made by the recorder, mode 0700)
 *   CSAMPLER_GPU_STACK      max frames captured per launch (default 64, 0 = no stacks)
 *   CSAMPLER_GPU_FLUSH_MS   watchdog for the final forced flush (default 3000)
 *   CSAMPLER_CUPTI_PATH     libcupti to use, when not the toolkit's (tests: the stand-in)
 *   CSAMPLER_GPU_PYTHON     CPython layouts for Python frames in launch stacks (below)
 *   CSAMPLER_GPU_DISABLE    captures left off, to measure their cost (kernel,memcpy,memset,
 *                           sync,nvtx,overhead,driver-api); default none
 *   CSAMPLER_GPU_SUBSCRIBE  API callbacks: driver (default: one callback level per call, the
 *                           driver call inside each runtime call; direct cuLaunchKernel too),
 *                           runtime, or both (the outermost call of each correlation id)
 *   CSAMPLER_GPU_LATENCY    1: launch-queue timestamps (queued/submitted); off by default
 *   CSAMPLER_GPU_FLOOR      cost measurement only: empty (callbacks return at once, no
 *                           activity), activity (no callbacks), both; nothing is recorded
 * All times are CLOCK_MONOTONIC nanoseconds (CUPTI's timestamp callback is set to that clock). */
#ifndef CSAMPLER_INJECT_PROTOCOL_H
#define CSAMPLER_INJECT_PROTOCOL_H

#include <stdint.h>

#define GPU_FILE_MAGIC "CSGPU\0\0\0"
#define GPU_PROTOCOL_VERSION 3   /* 2: Python frames in launch records (gpu_launch.npy);
				  * 3: fixed call records, stacks and API names written once */
#define GPU_MAX_FRAMES 128
#define GPU_MAX_PY_FRAMES 128
#define GPU_NAME_MAX 512      /* names longer than this are cut (demangled later by the reader) */

struct gpu_file_header {
	char magic[8];             /* GPU_FILE_MAGIC */
	uint32_t version;          /* GPU_PROTOCOL_VERSION */
	uint32_t pid, ppid;
	uint32_t header_size;      /* sizeof(struct gpu_file_header) */
	uint64_t start_ns;         /* CLOCK_MONOTONIC when the library initialised */
};

enum gpu_rec_type {
	GPU_REC_INFO = 1,      /* struct gpu_info: versions, status, clock check */
	GPU_REC_LAUNCH = 2,    /* protocol 2 only (a launch with its stack): GPU_REC_CALL */
	GPU_REC_KERNEL = 3,    /* struct gpu_kernel + name (NUL-terminated, padded) */
	GPU_REC_MEMCPY = 4,    /* struct gpu_memcpy */
	GPU_REC_MEMSET = 5,    /* struct gpu_memset */
	GPU_REC_SYNC = 6,      /* struct gpu_sync */
	GPU_REC_API = 7,       /* protocol 2 only (an API call's span): GPU_REC_CALL */
	GPU_REC_MARKER = 8,    /* struct gpu_marker + name: an NVTX range */
	GPU_REC_STATS = 9,     /* struct gpu_stats: counters, written at flush and at exit */
	GPU_REC_NOTE = 10,     /* struct gpu_note + text: one line for the user (why CPU-only...) */
	GPU_REC_OVERHEAD = 11, /* struct gpu_overhead: time CUPTI/the driver spent on itself */
	GPU_REC_GRAPH_CLONE = 12, /* struct gpu_graph_clone: a graph node cloned at instantiation */
	GPU_REC_THREAD = 13,   /* struct gpu_thread: the thread of the records that follow */
	GPU_REC_STACK = 14,    /* struct gpu_stack + pcs + Python frames: a launch stack, once */
	GPU_REC_API_NAME = 15, /* struct gpu_api_name + name: an API's name, once per thread */
	GPU_REC_CALL = 16,     /* struct gpu_call: one API call, written at its EXIT */
	GPU_REC_GRAPH_NODE = 17, /* struct gpu_graph_node: a graph node created here (its stack) */
};

struct gpu_rec {
	uint16_t type;         /* enum gpu_rec_type */
	uint16_t flags;
	uint32_t size;         /* whole record, header included, multiple of 8 */
};

enum gpu_status {
	GPU_STATUS_OK = 0,
	GPU_STATUS_NO_CUPTI = 1,          /* libcupti could not be loaded */
	GPU_STATUS_OTHER_SUBSCRIBER = 2,  /* another tool holds CUPTI: CPU-only */
	GPU_STATUS_CUPTI_ERROR = 3,       /* a CUPTI call failed (no driver, CUPTI newer than it) */
};

struct gpu_info {
	uint32_t cupti_version;    /* cuptiGetVersion() */
	uint32_t status;           /* enum gpu_status */
	int32_t cupti_error;       /* CUptiResult of the failing call, or 0 */
	uint32_t reserved;
	/* Clock check: CUPTI's timestamp (cuptiGetTimestamp) against CLOCK_MONOTONIC read just
	 * before and after it; offset = cupti - (before + after) / 2. */
	uint64_t clock_before_ns, cupti_ns, clock_after_ns;
	int64_t clock_offset_ns;
};

enum gpu_api_domain {
	GPU_DOMAIN_RUNTIME = 1,
	GPU_DOMAIN_DRIVER = 2,
	GPU_DOMAIN_RESOURCE = 3,   /* graph node creation: keeps the capture-time stack */
};

struct gpu_thread {
	uint32_t tid;              /* OS thread id */
	uint32_t reserved;
};

enum gpu_stack_flags {
	GPU_STACK_TRUNCATED = 1 << 0, /* more than the frame limit */
};

/* A launch stack: u64 pcs[nframes] (return addresses, leaf = the caller of the CUDA API first),
 * then struct gpu_py_frame py[npy] (below). Id 0 is never used: calls without a stack say 0. */
struct gpu_stack {
	uint32_t id;
	uint16_t nframes;
	uint16_t flags;            /* enum gpu_stack_flags */
	uint32_t npy;
	uint32_t py_flags;         /* enum gpu_py_flags */
	/* u64 pcs[nframes]; struct gpu_py_frame py[npy] */
};

struct gpu_api_name {
	uint32_t cbid;
	uint16_t domain;           /* enum gpu_api_domain */
	uint16_t len;              /* bytes of name after this struct, NUL included */
	/* char name[len]; padding to 8 */
};

enum gpu_call_flags {
	GPU_CALL_DURATION_US = 1 << 0, /* duration is in microseconds (a call over 4.29 s) */
};

/* One API call of the current thread (GPU_REC_THREAD): the outermost subscribed call of its
 * correlation id, from its ENTER to its EXIT (its span), under stack `stack`. */
struct gpu_call {
	uint64_t start;            /* at ENTER */
	uint32_t duration;         /* EXIT - ENTER, ns (or us: GPU_CALL_DURATION_US) */
	uint32_t correlation;      /* CUPTI correlationId */
	uint32_t stack;            /* GPU_REC_STACK id, 0: none */
	uint16_t cbid;             /* CUPTI callback id within domain */
	uint8_t domain;            /* enum gpu_api_domain */
	uint8_t flags;             /* enum gpu_call_flags */
};

#define GPU_CBID_GRAPHNODE_CREATED 13   /* CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED */

/* A CUDA graph node created on the current thread (stream capture, cudaGraphAdd*Node): its
 * kernels belong to this stack. */
struct gpu_graph_node {
	uint64_t time;
	uint64_t node_id;
	uint32_t correlation;      /* the API call open on the thread when it was created, or 0 */
	uint32_t stack;            /* GPU_REC_STACK id, 0: none */
};

/* Python frames of the launching thread (CPython 3.11 to 3.14), read by the library in place
 * at the launch: innermost first, as its interpreter frame chain links them. The recorder
 * names the code objects (reading them from the process) and puts each native activation's run
 * in place of its _PyEval_EvalFrameDefault frame.
 *
 * CSAMPLER_GPU_PYTHON gives the layouts, one per minor version, from the recorder's table
 * (unwind/python.c): "V:o1,o2,...;V:..." with V the version as hex (30b: 3.11) and the values
 * in the order of enum gpu_py_field. A value "@N" (3.13, 3.14) is the one the process' own
 * _Py_DebugOffsets holds N bytes into _PyRuntime (its cookie and version checked first). The
 * library walks only when the process' Py_Version has a row there. DIRECT: the thread state
 * holds the current frame at TSTATE_CFRAME (3.13+), not a _PyCFrame; CODE_TAG: tag bits of
 * the frame's code pointer (3.14's _PyStackRef). */
enum gpu_py_field {
	GPU_PY_TSTATE_CFRAME, GPU_PY_CFRAME_CURRENT_FRAME, GPU_PY_FRAME_CODE,
	GPU_PY_FRAME_PREVIOUS, GPU_PY_FRAME_INSTR, GPU_PY_FRAME_IS_ENTRY, GPU_PY_FRAME_OWNER,
	GPU_PY_OWNER_GENERATOR, GPU_PY_OWNER_CSTACK, GPU_PY_CODE_CODE, GPU_PY_OB_TYPE,
	GPU_PY_CODE_TAG, GPU_PY_DIRECT,
	GPU_PY_NFIELDS
};

enum gpu_py_flags {
	GPU_PY_TRUNCATED = 1 << 0,   /* the chain went on past GPU_MAX_PY_FRAMES */
	GPU_PY_BROKEN = 1 << 1,      /* the walk stopped at a frame that did not check */
};

enum gpu_py_frame_flags {
	GPU_PYF_ENTRY = 1 << 0,      /* the outermost frame of one native activation */
	GPU_PYF_GENERATOR = 1 << 1,  /* owned by a generator (always shown) */
};

struct gpu_py_frame {
	uint64_t code;             /* PyCodeObject address; 0: an activation with no frame shown */
	uint32_t unit;             /* code unit index of the instruction; UINT32_MAX: unknown */
	uint16_t flags;            /* enum gpu_py_frame_flags */
	uint16_t act;              /* 1 + the index, in the record's frames, of the native frame
				    * whose stack frame holds this frame's activation's entry frame
				    * (3.14, whose interpreter loop may have no symbol); 0: not known */
};

struct gpu_kernel {
	uint64_t start, end;       /* start == end == 0: timestamp lost (counted, not stored) */
	uint64_t queued, submitted;/* 0 when unknown */
	uint32_t correlation;
	uint32_t device, context, stream;
	uint32_t grid[3], block[3];
	uint32_t graph_id;
	uint32_t name_len;         /* bytes of name after this struct, NUL included */
	uint64_t graph_node_id;
	uint32_t registers, shared_bytes;
	/* char name[name_len]; padding to 8 */
};

enum gpu_copy_kind {           /* CUpti_ActivityMemcpyKind values, kept as they are */
	GPU_COPY_HTOD = 1, GPU_COPY_DTOH = 2, GPU_COPY_DTOD = 8, GPU_COPY_PTOP = 10,
};

struct gpu_memcpy {
	uint64_t start, end, bytes;
	uint32_t correlation, device, context, stream;
	uint8_t copy_kind, src_kind, dst_kind, async; /* CUPTI enums; async = flags & ASYNC */
	uint32_t reserved;
	uint64_t graph_node_id;
};

struct gpu_memset {
	uint64_t start, end, bytes;
	uint32_t correlation, device, context, stream;
	uint32_t value;
	uint32_t reserved;
	uint64_t graph_node_id;
};

struct gpu_sync {
	uint64_t start, end;
	uint32_t correlation;
	uint32_t type;             /* CUpti_ActivitySynchronizationType */
	uint32_t context, stream;  /* stream: CUPTI_SYNCHRONIZATION_INVALID_VALUE when none */
	uint32_t event, reserved;
};

struct gpu_marker {
	uint64_t start, end;       /* end == 0: an instantaneous mark */
	uint32_t id, tid;
	uint32_t domain;           /* 0: default NVTX domain */
	uint32_t name_len;
	/* char name[name_len]; padding to 8 */
};

struct gpu_stats {
	uint64_t launches;         /* GPU_REC_CALL and GPU_REC_GRAPH_NODE records made */
	uint64_t launches_dropped; /* call records lost (the thread's ring was full) */
	uint64_t activities;       /* activity records written (calls not included) */
	uint64_t dropped;          /* cuptiActivityGetNumDroppedRecords, summed */
	uint64_t lost_timestamps;  /* kernel/copy records with start == end == 0 */
	uint64_t buffers;          /* CUPTI buffers completed */
	uint64_t flush_timeouts;   /* forced flushes the watchdog gave up on */
	uint64_t write_errors;     /* write(2) failures (disk full ...) */
	uint64_t capture_ns;       /* time in the ENTER callbacks (stack capture included), estimated
				    * from one ENTER in 64 (a clock read is costly on that path) */
	uint64_t stacks;           /* GPU_REC_STACK records made (distinct stacks, per thread) */
};

/* CUPTI_ACTIVITY_KIND_OVERHEAD: buffer flushes, driver compilation, instrumentation ... */
struct gpu_overhead {
	uint64_t start, end;
	uint32_t kind;             /* CUpti_ActivityOverheadKind */
	uint32_t object_kind;      /* CUpti_ActivityObjectKind: 1 process, 2 thread, 3 device ... */
	uint32_t object_id[3];     /* {pid, tid} or {device, context, stream} */
	uint32_t correlation;      /* 0 when none */
};

/* Kernels of an instantiated graph carry the id of the node's clone (made by
 * cudaGraphInstantiate), not of the node created at capture time, whose GPU_REC_GRAPH_NODE
 * holds the capture stack: this maps one to the other. */
struct gpu_graph_clone {
	uint64_t node_id;          /* the clone: kernels' graph_node_id */
	uint64_t original_id;      /* the node it was cloned from */
};

struct gpu_note {
	uint32_t len;              /* bytes of text after this struct, NUL included */
	uint32_t severity;         /* 0 info, 1 warning */
	/* char text[len]; padding to 8 */
};

/* ---- the in-flight table, read by `csampler dump` (record/dump.c) ----
 *
 * Kernels launched and not known to be finished, kept in the library's own memory (not in the
 * file: a dump must see them at once, and a hung job's file can be large). The library exports
 * the table as the data symbol GPU_INFLIGHT_SYM; dump finds it in the process' mapping of the
 * library (its dynamic symbol table) and reads it with process_vm_readv while every thread of
 * the process is stopped.
 *
 * A kernel launch (an API call whose callback names a kernel symbol) fills slot
 * correlation % GPU_INFLIGHT_SLOTS (one cache line) at its ENTER, on the launching thread: seq
 * is made odd, the fields written, seq made even again (a slot read with an odd seq was being
 * written when the thread was stopped). Its launch stack is not copied (that cost the launch
 * path ~20 ns and 15 cache lines): the slot points at the stack's frames in the launching
 * thread's table of stacks, which stay where they are until that table is reset; a reset
 * changes the table's generation, so frames whose generation no longer matches are not read.
 * The writer thread marks the slot finished when the kernel's activity record comes. CUPTI
 * hands those records over only when a buffer fills or is flushed, so dump first asks for a
 * flush: it writes flush_request + 1 into flush_request (process_vm_writev, the same permission
 * as reading); the writer thread sees it within its sleep (at most 20 ms), flushes CUPTI (under
 * the watchdog of CSAMPLER_GPU_FLUSH_MS), translates what came, and sets flush_done to the
 * request it served and flush_ns to the time. A slot still "launched" after that flush was
 * launched and had not finished when the flush was made. */
#define GPU_INFLIGHT_SYM "csampler_gpu_inflight"
#define GPU_INFLIGHT_MAGIC "CSINFL2"
#define GPU_INFLIGHT_SLOTS 256

enum gpu_inflight_state {
	GPU_INFLIGHT_FREE = 0,
	GPU_INFLIGHT_LAUNCHED = 1,     /* entered, no activity record yet */
	GPU_INFLIGHT_FINISHED = 2,     /* its activity record came */
};

struct gpu_inflight_slot {
	uint32_t seq;              /* odd while the launching thread writes the slot */
	uint32_t state;            /* enum gpu_inflight_state */
	uint32_t correlation, tid;
	uint64_t start;            /* the launch's ENTER, CLOCK_MONOTONIC */
	uint64_t name;             /* address of the kernel's (mangled) name in the process */
	uint64_t frames;           /* address of the launch stack: u64 pcs[nframes] (return
				    * addresses, leaf first, as gpu_stack), then struct
				    * gpu_py_frame py[npy]; 0: none */
	uint64_t generation_at;    /* address of the thread's stack-table generation (u32) */
	uint32_t generation;       /* its value when the slot was written */
	uint16_t nframes, npy;
	uint16_t flags;            /* GPU_STACK_TRUNCATED */
	uint16_t py_flags;         /* enum gpu_py_flags */
	uint32_t reserved;
};

struct gpu_inflight_table {
	char magic[8];             /* GPU_INFLIGHT_MAGIC */
	uint32_t version;          /* GPU_PROTOCOL_VERSION */
	uint32_t nslots;           /* GPU_INFLIGHT_SLOTS */
	uint32_t slot_size;        /* sizeof(struct gpu_inflight_slot) */
	uint32_t active;           /* 1 while the library captures (0: off, detached, inert) */
	uint32_t flush_request;    /* written by dump */
	uint32_t flush_done;       /* the request the writer thread served last */
	uint64_t flush_ns;         /* when it served it */
	uint64_t launches;         /* kernel launches entered since the start (approximate:
				    * counted without a locked instruction) */
	struct gpu_inflight_slot slots[GPU_INFLIGHT_SLOTS] __attribute__((aligned(64)));
};

#endif
