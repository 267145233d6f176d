/* stacks.h: aggregation of a loaded profile's samples, the engine under `report` (and the
 * record-time summary): self and total samples per function, per process, per thread and per
 * library, the hottest source line of each function, and the quality of the unwinding (share of
 * complete stacks, libraries lacking CFI or symbols, a suggested --stack-size); and the CPU
 * fold under fold_profile() (fold.h).
 *
 * Everything is computed over ids (frames, stacks, modules, threads) with arrays and integer
 * hash tables: the cost is one hash lookup per sample plus one pass per distinct stack, with no
 * string comparison per sample. */
#ifndef CSAMPLER_STACKS_H
#define CSAMPLER_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/fold_frame.h"
#include "analysis/profile.h"

/* Which samples count. A thread matches comm when its own name or its process' name is comm. */
struct stacks_filter {
	int64_t pid, tid;     /* -1 = all */
	const char *comm;     /* NULL = all */
};
#define STACKS_FILTER_ALL { .pid = -1, .tid = -1, .comm = NULL }

/* A function: the frames sharing one name in one library (an inlined function is its own
 * function, as it is its own frame). */
struct stacks_function {
	const char *name;        /* borrowed from the profile */
	const char *module;      /* the library's path, "" when unknown; borrowed */
	uint32_t frame_flags;    /* PROFILE_FRAME_* of its frames, or-ed */
	uint64_t self;           /* samples with this function as the leaf frame */
	uint64_t total;          /* samples with this function anywhere (once per sample) */
	uint64_t python_self;    /* Python functions: samples with this function as the innermost
				  * Python frame (the native code under it, a C extension, runs on
				  * its behalf), the self of the Python function table */
	const char *hot_file;    /* source file of its hottest line, or NULL when unknown */
	uint32_t hot_line;
	uint64_t hot_samples;    /* samples on that line: self samples, or total samples when the
				  * function has no self samples (then it is its call sites); for
				  * Python functions python_self takes the place of self */
};

struct stacks_process {
	uint32_t pid;
	const char *comm;        /* borrowed */
	uint64_t samples;
};

struct stacks_thread {
	uint32_t pid, tid;
	const char *comm;        /* borrowed */
	uint64_t samples;
};

struct stacks_library {
	const char *path;        /* "" when unknown; borrowed */
	uint32_t flags;          /* PROFILE_MODULE_* */
	uint64_t self;           /* samples whose leaf frame is in this library */
	uint64_t total;          /* samples with a frame in this library (once per sample) */
};

/* Where incomplete stacks stop: their outermost frame. */
struct stacks_stop {
	const char *name, *module; /* borrowed */
	uint64_t samples;
};

struct stacks_unwind {
	uint64_t complete;       /* samples whose stack reaches the thread's entry point */
	uint64_t empty;          /* samples without any frame */
	uint64_t unwind_errors;  /* samples with PROFILE_SAMPLE_UNWIND_ERROR */
	uint64_t stack_full;     /* samples with PROFILE_SAMPLE_STACK_FULL: the unwinder needed
				  * stack beyond the copy (older files: the copy was full) */
	/* Incomplete stacks (not complete, not empty) by why the unwinder stopped, one cause
	 * each, in this order of precedence. */
	struct stacks_stop_causes {
		uint64_t stack_short;   /* it needed stack beyond the copy (STACK_FULL) */
		uint64_t anon_no_cfi;   /* at JIT code without CFI whose caller was not found */
		uint64_t file_no_cfi;   /* at code in a file without CFI, likewise */
		uint64_t no_map;        /* at an address in no known mapping */
		uint64_t error;         /* another unwinder error: bad CFI, unreadable memory */
		uint64_t other;         /* no error: the frame limit, or an outermost frame that
					 * is not known as an entry point */
	} causes;
	/* User frames of the samples' stacks (inlined frames not counted) by how the unwinder
	 * found them; frames_known is false for -g fp recordings (the kernel walked them). */
	bool frames_known;
	uint64_t frames_cfi;     /* by CFI, or the sampled pc */
	uint64_t frames_fp;      /* PROFILE_FRAME_FOUND_FP */
	uint64_t frames_scan;    /* PROFILE_FRAME_FOUND_SCAN */
	uint64_t python_unread;  /* PROFILE_SAMPLE_PYTHON_UNREAD: Python frames not read */
	uint64_t python_changed; /* PROFILE_SAMPLE_PYTHON_CHANGED: read after the stack moved on */
	double complete_pct;     /* 0..100 of the filtered samples */
	uint64_t stack_size;     /* the recording's --stack-size (header), 0 when unknown */
	uint64_t suggested_stack_size; /* 0 when no truncation was seen or none can help */
	bool stack_size_at_max;  /* truncation seen but the copy is already at the kernel's max */
	struct stacks_library *lacking; /* libraries with NO_CFI or NO_SYMBOLS that samples touch,
					 * most touched first; total = samples touching them */
	size_t nlacking;
	struct stacks_stop *stops;      /* outermost frames of incomplete stacks, most first */
	size_t nstops;
};

enum stacks_sort { STACKS_SORT_SELF, STACKS_SORT_TOTAL };

/* The result of stacks_aggregate(). Arrays are owned by the report (stacks_report_free);
 * strings are borrowed from the profile, which must outlive the report. */
struct stacks_report {
	uint64_t samples;        /* weight of the samples that passed the filter */
	uint64_t python_samples; /* of those, samples with a Python frame in their stack */
	uint64_t offcpu_samples; /* of those, samples of threads off the CPU (record --idle) */
	struct stacks_function *functions;  /* sorted by self (see stacks_sort_functions) */
	size_t nfunctions;
	struct stacks_process *processes;   /* most samples first */
	size_t nprocesses;
	struct stacks_thread *threads;      /* most samples first */
	size_t nthreads;
	struct stacks_library *libraries;   /* most self samples first */
	size_t nlibraries;
	struct stacks_unwind unwind;
};

/* The largest user stack copy perf_event_open accepts (sample_stack_user is capped by the
 * kernel to fit a 64 KiB record, 8-byte aligned). */
#define STACKS_MAX_STACK_SIZE 65528u

/* Aggregate p's samples that pass filter (NULL = all) into *out. Returns 0, or -EINVAL when
 * the filter is invalid. The caller frees *out with stacks_report_free(). */
int stacks_aggregate(const struct profile *p, const struct stacks_filter *filter,
		     struct stacks_report *out);
void stacks_report_free(struct stacks_report *r);

/* Order r->functions by self or total samples (ties: the other count, then name, library). */
void stacks_sort_functions(struct stacks_report *r, enum stacks_sort by);

/* The Python functions of r (PROFILE_FRAME_PYTHON), ordered by python_self or total (ties: the
 * other count, then name), into *out (cs_malloc'ed, the caller frees; strings borrowed from r's
 * profile). Returns their number. */
size_t stacks_python_functions(const struct stacks_report *r, enum stacks_sort by,
			       struct stacks_function **out);

/* `--python-only`: fill *view with a shallow copy of p whose stacks keep only their Python
 * frames (PROFILE_FRAME_PYTHON) and off-CPU leaves (PROFILE_FRAME_OFFCPU), innermost first as
 * in p; a stack without any becomes empty
 * (its samples keep their process and thread, as py-spy's idle samples). Everything but the
 * stacks is shared with p, which must outlive the view; free with stacks_python_view_free(). */
void stacks_python_view(const struct profile *p, struct profile *view);
void stacks_python_view_free(struct profile *view);


/* Parse the value of a --pid or --tid option (opt names it in the message) into *out.
 * Returns 0, or -EINVAL after printing one line saying what is wrong. */
int stacks_parse_id(const char *opt, const char *value, int64_t *out);

/* The CPU fold: p's samples that pass opts (NULL: FOLD_OPTS_DEFAULT), FOLD_CPU or
 * FOLD_GPU_IDLE, as fold_profile (fold.h) describes them. Returns 0, the callback's error, or
 * -EINVAL for a bad filter. */
int stacks_fold(const struct profile *p, const struct fold_opts *opts, fold_fn fn, void *arg);

/* The record-time summary: the top functions by self samples, a few lines on f. Called by
 * `record` at the end when stderr is a terminal. */
void stacks_print_summary(const struct profile *p, FILE *f, int top);

#endif
