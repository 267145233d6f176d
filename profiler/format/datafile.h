/* datafile.h: csampler's versioned, chunked data file: the writer used by `record` and the
 * low-level reader under profile_load(). man/csampler-data.5 documents the layout; the short
 * version:
 *
 *   file header (64 bytes): magic "CSAMPLER", u32 version, u32 min_reader_version,
 *                           u64 features, u32 header_size, reserved
 *   chunks:  chunk header (24 bytes): u32 magic "CHNK", u32 flags (bit 0: zstd), u32 stored_len,
 *            u32 raw_len, u32 crc32 of the stored bytes, u32 nrecords; then stored_len bytes
 *            which (decompressed) are records: u16 type, u16 flags, u32 size (header included),
 *            payload.
 *
 * All integers are little endian. Records are only ever appended, and each chunk is written
 * whole with its CRC, so a file cut at any point holds a readable prefix. The last record of a
 * complete file is DF_END. Record types below 128 must be understood by a reader of
 * min_reader_version; types from 128 up are optional and skipped by readers that do not know
 * them. */
#ifndef CSAMPLER_DATAFILE_H
#define CSAMPLER_DATAFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DF_MAGIC "CSAMPLER"
/* 2: GPU launch stacks are trimmed of the vendor's launch path by the recorder (a reader
 *    trims those of version 1 files itself, base/gpu_vendor.h); DF_LOC's inline-skip bits */
#define DF_VERSION 2
#define DF_MIN_READER_VERSION 1
#define DF_HEADER_SIZE 64
#define DF_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */
#define DF_CHUNK_HEADER_SIZE 24
#define DF_CHUNK_ZSTD 1u
#define DF_CHUNK_MAX (64u << 20) /* a reader refuses larger chunks as corrupt */

/* Flag bits stored in the file (DF_MODULE, DF_SYMBOL and DF_SAMPLE flags). The profile model
 * (profile.h) and the unwinder use them as they are. */
enum profile_frame_flags {
	PROFILE_FRAME_KERNEL = 1 << 0,   /* kernel code ("_[k]" in folded text) */
	PROFILE_FRAME_INLINED = 1 << 1,  /* inlined into the frame below it ("_[i]") */
	PROFILE_FRAME_JIT = 1 << 2,      /* named from /tmp/perf-PID.map ("_[j]") */
	PROFILE_FRAME_UNNAMED = 1 << 3,  /* no symbol: name is "libfoo.so+0x1a2b" */
	PROFILE_FRAME_GPU_KERNEL = 1 << 4, /* a GPU kernel (CUPTI; later) */
	PROFILE_FRAME_GPU_COPY = 1 << 5,   /* a GPU memcpy/memset (later) */
	PROFILE_FRAME_GPU_SYNC = 1 << 6,   /* time blocked in a CUDA synchronisation (later) */
	PROFILE_FRAME_PYTHON = 1 << 7,     /* a Python function: name, file.py, line being run */
	/* How the unwinder found a frame whose callee had no CFI (unwind/jit.h); also in DF_LOC
	 * flags. Neither bit: found by CFI (or it is the sampled pc). */
	PROFILE_FRAME_FOUND_FP = 1 << 8,   /* one checked frame-pointer step */
	PROFILE_FRAME_FOUND_SCAN = 1 << 9, /* a checked scan of the frame for its return address */
	PROFILE_FRAME_OFFCPU = 1 << 10,    /* --idle: why the thread was off the CPU, the leaf
					    * "[off-cpu: futex]" of an off-CPU sample */
};

/* DF_LOC flags: bit 0 says the offset is a return address; PROFILE_FRAME_FOUND_* as above;
 * bits 24-31 (version 2): the number of innermost inline frames of the address left out of
 * its DF_SYMBOL, a launch stack trimmed inside an inline chain (the GPU runtime's inline
 * launch template in the program's function). */
enum df_loc_flags {
	DF_LOC_CALLER = 1 << 0,
	DF_LOC_FOUND_MASK = PROFILE_FRAME_FOUND_FP | PROFILE_FRAME_FOUND_SCAN,
	DF_LOC_SKIP_SHIFT = 24,
	DF_LOC_SKIP_MASK = 0xffu << DF_LOC_SKIP_SHIFT,
};

enum profile_module_flags {
	PROFILE_MODULE_KERNEL = 1 << 0,
	PROFILE_MODULE_JIT = 1 << 1,
	PROFILE_MODULE_NO_CFI = 1 << 2,      /* no .eh_frame/.debug_frame found: unwinding stops */
	PROFILE_MODULE_NO_SYMBOLS = 1 << 3,  /* no .symtab/.dynsym/.gnu_debugdata/debug file */
	PROFILE_MODULE_NO_DEBUGINFO = 1 << 4,/* no DWARF lines: no file:line, no inline frames */
	PROFILE_MODULE_PYTHON = 1 << 5,      /* "[python]": offsets are Python frame ids, each
					      * named by one DF_SYMBOL (PROFILE_FRAME_PYTHON) */
	PROFILE_MODULE_OFFCPU = 1 << 6,      /* "[off-cpu]": offsets say why a thread was off the
					      * CPU (the system call number it was blocked in, or
					      * -1 not in one, -2 runnable, -3 stopped, as a signed
					      * 64-bit value), each named by one DF_SYMBOL
					      * (PROFILE_FRAME_OFFCPU) */
};

enum profile_sample_flags {
	PROFILE_SAMPLE_UNWIND_ERROR = 1 << 0, /* the unwinder stopped on an error, not at the root */
	PROFILE_SAMPLE_STACK_FULL = 1 << 1,   /* the unwinder needed stack beyond the copy (files
					       * written before the bits 16-64 existed: the copy was full) */
	PROFILE_SAMPLE_PYTHON_UNREAD = 1 << 2,/* the stack runs Python code whose frames could not
					       * be read (all: native frames only; some: those
					       * show "[Python frames not read]") */
	PROFILE_SAMPLE_PYTHON_CHANGED = 1 << 3,/* the Python frames read did not match the native
					       * stack's interpreter activations (the program
					       * moved on before the read): merged best effort */
	/* Why an unwind stopped early (with UNWIND_ERROR), from files written since these bits
	 * exist; STACK_FULL is the fourth cause. */
	PROFILE_SAMPLE_STOP_ANON = 1 << 4,    /* at code in anonymous memory without CFI (JIT)
					       * whose caller could not be recovered */
	PROFILE_SAMPLE_STOP_NO_CFI = 1 << 5,  /* at code in a file without CFI, likewise */
	PROFILE_SAMPLE_NO_MAP = 1 << 6,       /* an address was in no known mapping */
	PROFILE_SAMPLE_OFFCPU = 1 << 7,       /* --idle: the thread was off the CPU (blocked,
					       * sleeping, stopped); its leaf is an [off-cpu] frame
					       * and its weight is in sampling periods of wall time */
};

enum df_record_type {
	DF_HEADER_KV = 1,  /* key\0 value\0 */
	DF_COMM = 2,       /* u32 pid, u32 tid, u64 time, u32 flags (1 = exec), name\0 */
	DF_MMAP = 3,       /* u32 pid, u32 tid, u64 time, u64 start, u64 len, u64 pgoff,
			    * u32 prot, u32 flags, path\0 */
	DF_FORK = 4,       /* u32 pid, u32 ppid, u32 tid, u32 ptid, u64 time */
	DF_EXIT = 5,       /* same layout as DF_FORK */
	DF_LOST = 6,       /* u64 time, u64 count */
	DF_MODULE = 7,     /* u32 id, u32 flags (PROFILE_MODULE_*), path\0 build_id_hex\0;
			    * a later record for the same id replaces the earlier one */
	DF_LOC = 8,        /* u32 id, u32 module, u64 offset, u32 flags (DF_LOC_*) */
	DF_STACK = 9,      /* u32 id, u32 n, u32 loc_ids[n] leaf first */
	DF_SAMPLE = 10,    /* u64 time, u32 pid, u32 tid, u32 cpu, u32 stack, u32 flags,
			    * u32 weight */
	DF_STRING = 11,    /* u32 id, bytes\0 (string ids start at 1; 0 is "") */
	DF_SYMBOL = 12,    /* u32 loc, u32 n, then n x {u32 name, u32 file, u32 line,
			    * u32 flags}: the loc's frames, innermost (inlined) first */
	DF_END = 13,       /* u64 samples, u64 lost, u64 end_time, u32 flags (1 = symbolized) */
	/* Optional records (readers skip what they do not know). */
	DF_RAW_SAMPLE = 128, /* u64 time, u32 pid, u32 tid, u32 cpu, u32 flags, u64 regs_mask,
			      * u64 regs[popcount], u64 nkernel, u64 kernel_ips[nkernel],
			      * u64 stack_size, bytes[stack_size]  (--keep-raw) */
	DF_GPU_LAUNCH = 129,   /* struct df_gpu_launch: a CUDA API call and its CPU stack */
	DF_GPU_ACTIVITY = 130, /* struct df_gpu_activity: what the GPU did (kernel, copy, ...) */
	DF_GPU_INFO = 131,     /* struct df_gpu_info: one per process that wrote GPU records */
	DF_GPU_NOTE = 132,     /* u32 pid, u32 severity (0 info, 1 warning), text\0 */
	DF_TASK_LABEL = 133,   /* struct df_task_label: where a pid or tid of a merged file came
				* from (csampler merge) */
};

/* The GPU records' payloads (packed, little endian). A reader takes a record longer than the
 * struct it knows (fields appended later) and ignores the tail; a shorter one is corrupt. All
 * times are CLOCK_MONOTONIC ns, the clock of DF_SAMPLE. */
struct df_gpu_launch {
	uint64_t time;            /* API call entry */
	uint32_t pid, tid;
	uint32_t correlation;     /* CUPTI correlation id, unique within pid */
	uint32_t stack;           /* stack id (DF_STACK): the launching call path, leaf first */
	uint32_t api;             /* string id: API name ("cudaLaunchKernel"), or 0 */
	uint32_t cbid;            /* CUPTI callback id within domain */
	uint32_t domain;          /* 1 runtime, 2 driver, 3 resource (graph node creation) */
	uint32_t flags;           /* DF_GPU_LAUNCH_* */
	uint64_t graph_node_id;   /* DF_GPU_LAUNCH_GRAPH_NODE: the graph node created here */
} __attribute__((packed));

enum df_gpu_launch_flags {
	DF_GPU_LAUNCH_STACK_TRUNCATED = 1 << 0, /* the library's frame limit cut the stack */
	DF_GPU_LAUNCH_GRAPH_NODE = 1 << 1,      /* a graph node captured here (graph_node_id) */
	DF_GPU_LAUNCH_NO_MAP = 1 << 16,         /* a return address was in no known mapping */
};

enum df_gpu_activity_kind {
	DF_GPU_KERNEL = 1,
	DF_GPU_MEMCPY = 2,   /* detail: copy kind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP); detail2:
			      * src kind | dst kind << 8 (CUpti_ActivityMemoryKind) */
	DF_GPU_MEMSET = 3,   /* detail: the value */
	DF_GPU_SYNC = 4,     /* detail: CUpti_ActivitySynchronizationType; detail2: event id */
	DF_GPU_MARKER = 5,   /* an NVTX range: name; detail: marker id; detail2: NVTX domain */
	DF_GPU_API = 6,      /* a runtime/driver API call's span: detail: cbid; detail2: domain */
	DF_GPU_KIND_MAX = 6,
};

struct df_gpu_activity {
	uint32_t kind;            /* enum df_gpu_activity_kind */
	uint32_t pid;             /* process that launched it: (pid, correlation) -> launch */
	uint32_t tid;             /* markers, API spans: the thread; else 0 */
	uint32_t correlation;     /* 0 when none (markers) */
	uint64_t start, end;      /* end == 0: an instantaneous marker */
	uint64_t queued, submitted; /* kernels: launch-queue timestamps, 0 when unknown */
	uint64_t bytes;           /* memcpy, memset */
	uint64_t graph_node_id;   /* the graph node this ran as, or 0 */
	uint32_t device, context, stream;
	uint32_t name;            /* string id: kernel (demangled) or NVTX range name, or 0 */
	uint32_t flags;           /* DF_GPU_ACT_* */
	uint32_t detail, detail2; /* per kind, see enum df_gpu_activity_kind */
	uint32_t graph_id;        /* kernels: the graph, or 0 */
	uint32_t grid[3], block[3]; /* kernels */
} __attribute__((packed));

enum df_gpu_activity_flags {
	DF_GPU_ACT_ASYNC = 1 << 0,    /* memcpy: an async copy */
	DF_GPU_ACT_INSTANT = 1 << 1,  /* marker: a point, not a range */
};

/* GPU capture status of one process, from the in-target library's info and counters. */
struct df_gpu_info {
	uint32_t pid;
	uint32_t cupti_version;   /* cuptiGetVersion(), 0 when unknown */
	uint32_t status;          /* 0 ok, 1 no CUPTI, 2 another subscriber, 3 CUPTI error */
	int32_t cupti_error;      /* CUptiResult of the failing call, or 0 */
	int64_t clock_offset_ns;  /* CUPTI timestamp minus CLOCK_MONOTONIC at start */
	uint64_t clock_before_ns, cupti_ns, clock_after_ns; /* the check's readings */
	uint64_t launches;        /* API calls recorded by the library */
	uint64_t launches_dropped;/* launch records the library lost */
	uint64_t activities;      /* activity records written by the library */
	uint64_t dropped;         /* CUPTI's dropped activity records */
	uint64_t lost_timestamps; /* activity records with start == end == 0 */
	uint64_t buffers;         /* CUPTI buffers completed */
	uint64_t flush_timeouts;  /* final flushes the watchdog gave up on */
	uint64_t write_errors;    /* the library's failed writes */
	uint64_t capture_ns;      /* time spent in the launch callback */
	uint32_t flags;           /* DF_GPU_INFO_* */
	uint32_t bad_records;     /* records of the file the recorder could not use */
	uint32_t vendor;          /* enum gpu_vendor_id (base/gpu_vendor.h); absent (a record
				   * of DF_GPU_INFO_V1_SIZE bytes, before version 2): CUDA */
	uint32_t reserved;
} __attribute__((packed));

#define DF_GPU_INFO_V1_SIZE 128

enum df_gpu_info_flags {
	DF_GPU_INFO_HAVE_INFO = 1 << 0,  /* cupti_version .. clock_after_ns are set */
	DF_GPU_INFO_HAVE_STATS = 1 << 1, /* launches .. capture_ns are set */
	DF_GPU_INFO_CUT = 1 << 2,        /* the file ended in a partial record */
	DF_GPU_INFO_CORRUPT = 1 << 3,    /* reading stopped at a corrupt record */
};

/* A merged file (csampler merge) holds one DF_TASK_LABEL per pid and tid of each input, written
 * before the records that use the id. id is the number in this file (what DF_SAMPLE and the
 * other records hold); orig_id the one the input recorded (they differ where the id clashed
 * with one of an earlier input: it was given a free number from DF_TASK_REMAP_BASE up). */
struct df_task_label {
	uint32_t id;              /* pid or tid in this file */
	uint32_t orig_id;         /* the same task's id in its own recording */
	int32_t rank;             /* the input's rank (header "rank"), -1 when it had none */
	uint32_t input;           /* index of the input file, 0 first (header "merge.input.N") */
	uint32_t host;            /* string id: the input's host (header "hostname"), or 0 */
	uint32_t flags;           /* DF_TASK_LABEL_* */
} __attribute__((packed));

enum df_task_label_flags {
	DF_TASK_LABEL_PROCESS = 1 << 0, /* the id is a process id (it was seen as a pid) */
};

/* Ids given to tasks whose id clashed between merged inputs start here, above Linux's largest
 * pid (PID_MAX_LIMIT, 2^22), so that a remapped id is never mistaken for a real one. */
#define DF_TASK_REMAP_BASE (1u << 22)

_Static_assert(sizeof(struct df_task_label) == 24, "DF_TASK_LABEL layout (csampler-data(5))");
_Static_assert(sizeof(struct df_gpu_launch) == 48, "DF_GPU_LAUNCH layout (csampler-data(5))");
_Static_assert(sizeof(struct df_gpu_activity) == 120, "DF_GPU_ACTIVITY layout (csampler-data(5))");
_Static_assert(sizeof(struct df_gpu_info) == 136, "DF_GPU_INFO layout (csampler-data(5))");

struct df_writer;

/* Create path with mode 0600 whatever the umask and write the file header. The file is made
 * under a temporary name beside path and renamed into place, after an existing regular file of
 * ours is renamed to path.old; path is never opened, so a symbolic link there is not followed.
 * A symbolic link, directory, FIFO or other non-regular file at path, or another user's file,
 * is refused. On any failure the previous file keeps its name. Returns 0 or -errno after
 * printing one line. */
int df_writer_open(struct df_writer **out, const char *path, bool compress);
/* The same, the header saying version (merge: the oldest of its inputs', whose records it
 * copies as they are). */
int df_writer_open_version(struct df_writer **out, const char *path, bool compress,
			   uint32_t version);
/* Append one record. Never fails by itself: a write error is kept (see df_writer_error) and
 * later records are dropped. */
void df_put(struct df_writer *w, uint16_t type, const void *payload, size_t len);
/* Append one record made of two parts (fixed fields, then a string with its NUL). */
void df_put2(struct df_writer *w, uint16_t type, const void *a, size_t alen, const void *b,
	     size_t blen);
/* Write the current chunk out now (also done automatically every 256 KiB). */
int df_flush(struct df_writer *w);
/* 0, or the first -errno a write hit (the message was printed then). */
int df_writer_error(const struct df_writer *w);
uint64_t df_bytes_written(const struct df_writer *w);
/* Flush, fsync and close. Returns the first error seen, if any. */
int df_writer_close(struct df_writer *w);

/* Reader: calls fn for every record in order. Returns 0 on a complete file, 1 when the file
 * ended early (truncated: what came before was delivered), or -errno after printing one line
 * ("FILE: not a csampler data file", "FILE: corrupt chunk at offset N: ..."). fn returns 0 or
 * -errno to stop. */
typedef int (*df_record_fn)(void *arg, uint16_t type, const uint8_t *payload, size_t len);
int df_read(const char *path, df_record_fn fn, void *arg);
/* The same over a whole file already in memory, buf[0..len); name is used in messages. */
int df_read_mem(const void *buf, size_t len, const char *name, df_record_fn fn, void *arg);
/* Both, setting *version to the format version of the file's header before the first record
 * (a file whose header could not be read leaves it as it was). */
int df_read_version(const char *path, df_record_fn fn, void *arg, uint32_t *version);
int df_read_mem_version(const void *buf, size_t len, const char *name, df_record_fn fn,
			void *arg, uint32_t *version);

#endif
