/* fastunwind.h: the return addresses of the calling thread's stack, fast (x86-64 Linux), for the
 * in-target libraries. See fastunwind.c for how and why. Prefix fu_. */
#ifndef CSAMPLER_FASTUNWIND_H
#define CSAMPLER_FASTUNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Fill pcs[0..max) with the return addresses of the caller's stack, innermost first, and return
 * how many: the same convention and the same addresses as libunwind's unw_backtrace (pcs[0] is the
 * return address into the function that called fu_backtrace). A stack the fast path cannot
 * unwind in full is handed to unw_backtrace whole. Thread-safe; not async-signal-safe (a cache
 * miss takes a mutex and the loader's lock). The first call on a thread reads its stack bounds. */
int fu_backtrace(uintptr_t *pcs, int max);

/* fu_backtrace, and *token: nonzero when the frames are exactly those of a stack the thread's
 * stack memo keeps (fastunwind.c): two calls on the same thread that give the same nonzero
 * token gave the same frames (and the same count), so a caller may keep what it derived from
 * them under the token. 0: no such promise. */
int fu_backtrace_token(uintptr_t *pcs, int max, uint64_t *token);

/* Room for FU_TOKEN_DATA bytes of the caller's own beside the remembered stack a token of this
 * thread names (what it derived from those frames: an id, say), on the cache line the walk that
 * gave the token read last; NULL for token 0. The room belongs to the stack's slot: when the
 * slot is reused, tokens change, so the caller keeps the token in its data and compares it
 * first. Zero until written; 8-byte aligned. */
enum { FU_TOKEN_DATA = 32 };
void *fu_token_data(uint64_t token);

struct fu_stats {
	uint64_t stacks;      /* fu_backtrace calls */
	uint64_t frames;      /* return addresses the fast path recorded */
	uint64_t fallbacks;   /* stacks handed whole to unw_backtrace (the sum of the three below) */
	uint64_t unsupported; /*   a frame whose CFI the fast path does not model (expressions,
				 *   signal frames, CFA from another register, no FDE, no module) */
	uint64_t invalid;     /*   a step failed validation (CFA off the thread's stack, SP not
				 *   increasing, address not canonical) */
	uint64_t off_stack;   /*   SP outside the thread's stack as pthread_getattr_np reports it
				 *   (sigaltstack, coroutine stacks) */
	uint64_t misses;      /* return addresses looked up in CFI (cache misses) */
	uint64_t flushes;     /* cache flushes: the set of loaded modules changed */
	uint64_t memo_hits;   /* stacks that met a remembered one (the stack memo, fastunwind.c) */
	uint64_t memo_frames; /* frames taken from remembered stacks (checked, not unwound) */
	uint64_t memo_diffs;  /* remembered stacks left where a frame differed */
	uint64_t memo_pauses; /* times recording stopped for a while: stacks did not come back */
	uint64_t memo_chained;/* tokens given without comparing frames: the walk followed stacks
			       * each recorded from the one before (fu_chain, fastunwind.c) */
};

/* Counters since the process started, summed over threads (racy reads of live threads: fine for
 * statistics). */
struct fu_stats fu_stats(void);

/* Forget every cached rule: call after dlclose if code may be unloaded and other code mapped at
 * the same addresses (a lookup that misses notices dlopen/dlclose by itself). */
void fu_flush(void);

/* The calling thread's stack, [*lo, *hi), as its first fu_backtrace read it: 0, or -1 when not
 * known (no walk on this thread yet, or not x86-64). */
int fu_stack_bounds(uintptr_t *lo, uintptr_t *hi);

/* Turn the stack memo off (0) or on (1, the default), process-wide: for tests and benchmarks
 * (CSAMPLER_GPU_STACK_MEMO=0). Stacks are the same either way. */
void fu_set_stack_memo(int on);

/* bytes of zeroed memory (address space, touched as used) aligned to 2 MiB and advised as
 * transparent huge pages, or NULL: for the tables the launch path reads at every launch (the
 * stack memo here, cupti.c's thread states), so that one TLB entry covers each
 * table where the kernel allows huge pages (madvise or always mode). When launches come in short
 * bursts after a sleep, the TLB entries of 4 KiB pages are gone and every table walked costs a
 * page walk, on cold caches (scripts/bench-gpu-launch.sh, 10k/s). Never unmapped. */
void *fu_map_huge(size_t bytes);

#endif
