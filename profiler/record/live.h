/* live.h: what `csampler top` shows, aggregated as the recorder writes it (record.h's
 * struct record_live): samples by stack and by thread, locations named as the recorder names
 * them, GPU kernels by GPU time. Queries give the top functions by self or total samples (all
 * threads or one), the threads by samples, and the kernels by GPU time. Python frames are
 * functions like the others (their file's base name in place of a module). */
#ifndef CSAMPLER_RECORD_LIVE_H
#define CSAMPLER_RECORD_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct live;
struct sym_frame;
struct df_gpu_activity;

enum live_sort { LIVE_SORT_SELF, LIVE_SORT_TOTAL };

struct live_fn {
	const char *name;            /* owned by the live state, valid until live_free */
	const char *where;           /* module base name, or the Python file's base name */
	bool python;
	uint64_t self, total;        /* sampling periods */
};

struct live_thread {
	uint32_t pid, tid;
	uint64_t samples;
	const char *top;             /* its function with the most self samples, or NULL */
	uint64_t top_self;
};

struct live_kernel {
	const char *name;
	uint64_t count, total_ns;
};

struct live *live_new(void);
void live_free(struct live *l);

/* The recorder's events (record_live). */
void live_stack(struct live *l, uint32_t id, const uint32_t *locs, uint32_t n);
void live_symbol(struct live *l, uint32_t loc, const struct sym_frame *frames, int n,
		 const char *module);
void live_sample(struct live *l, uint32_t pid, uint32_t tid, uint32_t stack, uint32_t weight);
void live_gpu_activity(struct live *l, const struct df_gpu_activity *a, const char *name);

/* Totals: sampling periods, GPU kernels and their time. */
uint64_t live_samples(const struct live *l);
uint64_t live_gpu_kernels(const struct live *l, uint64_t *total_ns);

/* The top functions (tid 0: every thread) into out (max), sorted; returns how many. */
size_t live_functions(struct live *l, uint32_t tid, enum live_sort sort, struct live_fn *out,
		      size_t max);
/* The threads by samples. */
size_t live_threads(struct live *l, struct live_thread *out, size_t max);
/* The kernels by GPU time. */
size_t live_kernels(struct live *l, struct live_kernel *out, size_t max);

#endif
