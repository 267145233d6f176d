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
};

/* Load path into *out. On error prints one line ("csampler: FILE: not a csampler data file",
 * "... corrupt at offset N", ...) and returns -errno; a truncated file loads with
 * truncated = true after printing "FILE: truncated: N samples recovered". The caller frees
 * with profile_free(). */
int profile_load(const char *path, struct profile **out);
void profile_free(struct profile *p);

/* The header value for key, or NULL. */
const char *profile_header(const struct profile *p, const char *key);

static inline const char *profile_str(const struct profile *p, uint32_t id)
{
	return id < p->nstrings ? p->strings[id] : "";
}

/* True when path starts with the data file magic (so it is not folded text). */
bool profile_is_datafile(const char *path);

#endif
