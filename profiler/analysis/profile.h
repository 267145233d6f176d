/* profile.h: a recorded profile loaded in memory, the model every reader command works on
 * (info, report, folded, flame, diff, and later export). profile_load() fills it from a data
 * file (datafile.c); stacks.c walks and aggregates it.
 *
 * Ids are indexes into the arrays below. String id 0 is always "". Frames are fully
 * symbolized: an inlined function is its own frame with PROFILE_FRAME_INLINED set. */
#ifndef CSAMPLER_PROFILE_H
#define CSAMPLER_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/gpu_vendor.h"
#include "format/datafile.h" /* the PROFILE_* flag bits, as stored in the file */

struct profile_module {
	uint32_t path;      /* string id: the path as mapped in the target */
	uint32_t build_id;  /* string id: hex build-id, or 0 */
	uint32_t flags;     /* PROFILE_MODULE_* */
};

struct profile_frame {
	uint32_t name;      /* string id: demangled function name, or "libfoo.so+0x1a2b" */
	uint32_t module;    /* module id */
	uint32_t file;      /* string id: source file, or 0 */
	uint32_t line;      /* 0 when unknown */
	uint32_t flags;     /* PROFILE_FRAME_* */
};

struct profile_stack {
	uint32_t first;     /* index into profile.stack_frames of the LEAF frame */
	uint32_t nframes;   /* frames leaf first: stack_frames[first .. first+nframes) */
};

struct profile_sample {
	uint64_t time;      /* CLOCK_MONOTONIC ns */
	uint32_t pid, tid;
	uint32_t stack;     /* stack id */
	uint32_t cpu;
	uint32_t flags;     /* PROFILE_SAMPLE_* */
	uint32_t weight;    /* samples this record stands for (1 unless reweighted) */
};

struct profile_thread {
	uint32_t pid, tid;
	uint32_t comm;      /* string id: the last name the thread had */
	uint64_t samples;
};

struct profile_process {
	uint32_t pid, ppid;
	uint32_t comm;      /* string id: name of the process' main thread */
	uint64_t samples;
	int32_t rank;       /* its rank (profile_rank_of), -1 when unknown */
	uint32_t host;      /* string id: the host it ran on, or 0 */
	uint32_t orig_pid;  /* its pid in its own recording (differs in merged files where
			     * pids clashed), else pid */
};

/* Where a task (pid or tid) of a merged file came from: a DF_TASK_LABEL record. */
struct profile_label {
	uint32_t id, orig_id;
	int32_t rank;       /* -1 when unknown */
	uint32_t input;     /* index of the merged input file */
	uint32_t host;      /* string id, or 0 */
	uint32_t flags;     /* DF_TASK_LABEL_* */
};

/* GPU capture (csampler-data(5) GPU_LAUNCH, GPU_ACTIVITY, GPU_INFO, GPU_NOTE). An activity
 * joins the launch that caused it by (pid, correlation): activity.launch is that launch's
 * index, found at load. */
struct profile_gpu_launch {
	uint64_t time;      /* the API call's entry, CLOCK_MONOTONIC ns */
	uint32_t pid, tid;
	uint32_t correlation;
	uint32_t stack;     /* stack id: the CPU call path that made the call */
	uint32_t api;       /* string id: "cudaLaunchKernel", ... or 0 */
	uint32_t cbid, domain; /* CUPTI callback id, 1 runtime / 2 driver / 3 resource */
	uint32_t flags;     /* PROFILE_GPU_LAUNCH_* */
	uint64_t graph_node_id;
};

enum profile_gpu_launch_flags {   /* the values of DF_GPU_LAUNCH_* */
	PROFILE_GPU_LAUNCH_STACK_TRUNCATED = 1 << 0,
	PROFILE_GPU_LAUNCH_GRAPH_NODE = 1 << 1,  /* a graph node was captured here */
	PROFILE_GPU_LAUNCH_NO_MAP = 1 << 16,     /* an address was in no known mapping */
};

enum profile_gpu_kind {           /* the values of DF_GPU_* kinds */
	PROFILE_GPU_KERNEL = 1,
	PROFILE_GPU_MEMCPY = 2,
	PROFILE_GPU_MEMSET = 3,
	PROFILE_GPU_SYNC = 4,
	PROFILE_GPU_MARKER = 5,   /* NVTX range */
	PROFILE_GPU_API = 6,      /* runtime/driver API span */
	PROFILE_GPU_NKINDS = 7,   /* kinds are 1 .. PROFILE_GPU_NKINDS - 1 */
};

#define PROFILE_GPU_NO_LAUNCH UINT32_MAX

struct profile_gpu_activity {
	uint32_t kind;      /* enum profile_gpu_kind */
	uint32_t pid, tid;
	uint32_t correlation;
	uint64_t start, end;        /* CLOCK_MONOTONIC ns; marker end == 0: an instant */
	uint64_t queued, submitted; /* kernels, 0 when unknown */
	uint64_t bytes;
	uint64_t graph_node_id;
	uint32_t device, context, stream;
	uint32_t name;      /* string id: kernel or NVTX range name */
	uint32_t flags;     /* 1 async copy, 2 instantaneous marker */
	uint32_t detail, detail2; /* per kind, see csampler-data(5) */
	uint32_t graph_id;
	uint32_t grid[3], block[3];
	uint32_t launch;      /* index into gpu_launches by (pid, correlation), or
			       * PROFILE_GPU_NO_LAUNCH */
	uint32_t node_launch; /* graph kernels: the launch that captured their graph node (by
			       * (pid, graph_node_id)), or PROFILE_GPU_NO_LAUNCH */
};

enum profile_gpu_status {
	PROFILE_GPU_OK = 0,
	PROFILE_GPU_NO_CUPTI = 1,
	PROFILE_GPU_OTHER_SUBSCRIBER = 2,
	PROFILE_GPU_CUPTI_ERROR = 3,
};

/* One process' capture status and the in-target library's counters. */
struct profile_gpu_process {
	uint32_t pid;
	uint32_t cupti_version, status; /* enum profile_gpu_status */
	int32_t cupti_error;
	int64_t clock_offset_ns;        /* CUPTI clock minus CLOCK_MONOTONIC */
	uint64_t launches, launches_dropped, activities, dropped, lost_timestamps, buffers,
		flush_timeouts, write_errors, capture_ns;
	uint32_t flags;                 /* 1 info known, 2 counters known, 4 cut, 8 corrupt */
	uint32_t bad_records;
	uint32_t vendor;                /* enum gpu_vendor_id: whose records these are */
};

struct profile_gpu_note {
	uint32_t pid, severity;  /* 0 info, 1 warning */
	uint32_t text;           /* string id */
};

struct profile_kv {
	const char *key, *value;
};

struct profile {
	/* Header: cmdline, target, hostname, kernel, start_realtime_ns, rate_hz, callgraph,
	 * stack_size, csampler_version, ... (profile_header() looks them up). */
	struct profile_kv *header;
	size_t nheader;
	uint32_t format_version;

	uint64_t start_ns, end_ns;   /* CLOCK_MONOTONIC span of the recording */
	uint64_t nsamples;           /* sum of weights of samples[] */
	uint64_t lost;               /* samples the kernel reported lost */
	uint64_t nraw_samples;       /* DF_RAW_SAMPLE records: raw stack copies kept (--keep-raw) */
	bool truncated;              /* the file ended early: what was read is here */
	bool finalized;              /* stacks are symbolized (false: cut short before that) */

	char **strings;              /* strings[0] == "" */
	size_t nstrings;
	struct profile_module *modules;
	size_t nmodules;
	struct profile_frame *frames;
	size_t nframes;
	uint32_t *stack_frames;      /* frame ids, see profile_stack */
	size_t nstack_frames;
	struct profile_stack *stacks;
	size_t nstacks;
	struct profile_sample *samples; /* in time order */
	size_t nsamples_records;
	struct profile_thread *threads;
	size_t nthreads;
	struct profile_process *processes;
	size_t nprocesses;

	/* GPU: launches sorted by (pid, correlation, time); activities by start */
	struct profile_gpu_launch *gpu_launches;
	size_t ngpu_launches;
	struct profile_gpu_activity *gpu_activities;
	size_t ngpu_activities;
	struct profile_gpu_process *gpu_processes;
	size_t ngpu_processes;
	struct profile_gpu_note *gpu_notes;
	size_t ngpu_notes;

	/* Ranks and hosts: a merged file labels each task (sorted by id); a single recording has
	 * the header's "rank" and "hostname" for all its tasks. */
	struct profile_label *labels;
	size_t nlabels;
	int32_t rank;                /* header "rank", -1 when absent */
	uint32_t host;               /* string id of header "hostname", or 0 */

	/* Set by profile_filter_apply() (filter.h): the readers' --pid/--tid/--comm/--rank/--time */
	struct profile_filtered {
		char *text;          /* what was kept, in words ("pid 12, time 10%/2"), or NULL
				      * when the profile is whole */
		int64_t pid, tid, rank; /* -1: not filtered on */
		char *comm, *time;   /* NULL: not filtered on; time as given */
		int idle;            /* enum profile_filter_idle (filter.h) */
		char *step;          /* --step SPEC (steps.h), NULL: automatic; set even when
				      * nothing else is filtered */
		char *steps;         /* --steps as given, NULL: every step */
		uint32_t step_first; /* number of the first step --steps kept (1-based), 0 */
		struct profile_step_window {
			uint32_t pid;
			uint64_t lo, hi; /* [lo, hi): the steps --steps kept of process pid */
		} *step_windows;     /* by pid */
		size_t nstep_windows;
		uint64_t nsamples;   /* nsamples before the filter */
	} filtered;
};

/* Load path into *out. On error prints one line ("csampler: FILE: not a csampler data file",
 * "... corrupt at offset N", ...) and returns -errno; a truncated file loads with
 * truncated = true after printing "FILE: truncated: N samples recovered". The caller frees
 * with profile_free(). */
int profile_load(const char *path, struct profile **out);
/* The same over a data file already in memory, buf[0..len); name is used in messages. */
int profile_load_mem(const void *buf, size_t len, const char *name, struct profile **out);
void profile_free(struct profile *p);
/* Free what p owns, not p itself (a profile inside another struct: the tests' builder). */
void profile_release(struct profile *p);

/* The first launch of (pid, correlation), or NULL. */
const struct profile_gpu_launch *profile_gpu_launch_of(const struct profile *p, uint32_t pid,
						       uint32_t correlation);
/* "kernel", "memcpy", "memset", "sync", "nvtx", "api"; "?" for others. */
const char *profile_gpu_kind_name(uint32_t kind);
/* The GPU vendor whose records process pid wrote (its GPU info record), which names their
 * copy kinds, sync types and API domains; CUDA's when the file does not say. */
const struct gpu_vendor *profile_gpu_vendor(const struct profile *p, uint32_t pid);

/* Process pid (p->processes is sorted by pid), or NULL. */
const struct profile_process *profile_process_of(const struct profile *p, uint32_t pid);
/* The rank of process pid: its task label in a merged file, else the header's, else -1. */
int32_t profile_rank_of(const struct profile *p, uint32_t pid);
/* The task label of id (pid or tid) in a merged file, or NULL. */
const struct profile_label *profile_label_of(const struct profile *p, uint32_t id);

/* Stack id's frames (leaf first), or NULL with *n = 0 for a bad or empty stack id. */
const uint32_t *profile_stack_frames(const struct profile *p, uint32_t stack, size_t *n);
/* True when a stack whose outermost frame is named root is complete for a thread that is
 * (main_thread) or is not the process' main thread: root is one of glibc's entry points. */
bool profile_root_is_entry(const char *root, bool main_thread);
/* Frame id, or a frame with no name, module (UINT32_MAX) or flags when id is out of range. */
const struct profile_frame *profile_frame_at(const struct profile *p, uint32_t id);

/* The header value for key, or NULL. */
const char *profile_header(const struct profile *p, const char *key);

static inline const char *profile_str(const struct profile *p, uint32_t id)
{
	return id < p->nstrings ? p->strings[id] : "";
}

/* True when path starts with the data file magic (so it is not folded text). */
bool profile_is_datafile(const char *path);

#endif
