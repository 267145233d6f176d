/* cs.h: what every csampler module shares: messages, allocation that cannot fail silently,
 * exit codes, and small string helpers. Errors are returned as 0 or -errno; the function that
 * sees the failure prints one line naming the failing call and what the user can do. */
#ifndef CSAMPLER_CS_H
#define CSAMPLER_CS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#define CSAMPLER_VERSION "0.1.0"

/* Exit codes of csampler's own failures, as env(1) and timeout(1) use them. */
enum {
	CS_EXIT_ERROR = 125,     /* csampler itself failed */
	CS_EXIT_NOEXEC = 126,    /* the command was found but cannot be executed */
	CS_EXIT_NOTFOUND = 127,  /* the command was not found */
};

/* "csampler: <message>" on stderr. cs_error returns -err (pass a positive errno) for
 * `return cs_error(errno, "open %s: %s", ...)`. */
__attribute__((format(printf, 2, 3))) int cs_error(int err, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void cs_warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void cs_info(const char *fmt, ...);
extern int cs_quiet; /* set by -q: cs_info prints nothing (the only process-wide setting) */

/* -1, 0 or 1 as a is below, equal to or above b: a qsort comparator's answer for one key.
 * Keys chain with GNU C's "x ?: y" (x unless it is 0): the first key that differs decides,
 *     return CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid);
 * and CS_CMP(b->n, a->n) sorts by n descending. Each argument is evaluated twice. */
#define CS_CMP(a, b) (((a) > (b)) - ((a) < (b)))

/* CS_CMP_FN(name, type, expr) defines the qsort comparator `static int name(const void *,
 * const void *)` over elements of TYPE: EXPR sees the two as `const TYPE *a, *b` and is
 * usually a CS_CMP chain,
 *     CS_CMP_FN(cmp_thread, struct thread, CS_CMP(b->n, a->n) ?: CS_CMP(a->tid, b->tid))
 * One definition serves every table's order, so a comparator is its keys and nothing else. */
#define CS_CMP_FN(name, type, expr)                                             \
	static int name(const void *cs_cmp_x_, const void *cs_cmp_y_)          \
	{                                                                       \
		const type *a = cs_cmp_x_, *b = cs_cmp_y_;                      \
		return expr;                                                    \
	}

/* Little-endian loads from a byte buffer at any alignment (data files and perf's records are
 * little endian, as x86-64 is). */
static inline uint32_t cs_rd32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t cs_rd64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Hashing for the in-memory tables (not stored in data files, so free to change).
 * cs_hash_u64 is MurmurHash3's 64-bit finalizer: it spreads an integer key over all bits.
 * cs_hash_bytes is xxHash's XXH3 with a seed (libxxhash-dev, header-only in cs.c). */
static inline uint64_t cs_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}
uint64_t cs_hash_bytes(const void *p, size_t n, uint64_t seed);

/* Allocation: on failure print "out of memory" and exit(CS_EXIT_ERROR). The caller frees. */
void *cs_malloc(size_t n);
void *cs_calloc(size_t n, size_t size);
void *cs_realloc(void *p, size_t n);
char *cs_strdup(const char *s);
__attribute__((format(printf, 1, 2))) char *cs_asprintf(const char *fmt, ...);

/* Grow *arr (of *cap elements of size elem) to hold at least need elements. */
void cs_grow(void *arr, size_t *cap, size_t need, size_t elem);
/* Append to the growable array arr of n elements (cap allocated): grows it, counts the new
 * element and gives its address, as in *CS_PUSH(p->stacks, p->nstacks, cap) = st. */
#define CS_PUSH(arr, n, cap) (cs_grow(&(arr), &(cap), (n) + 1, sizeof(*(arr))), &(arr)[(n)++])

/* A growable byte buffer. */
struct cs_buf {
	char *data;
	size_t len, cap;
};
void cs_buf_put(struct cs_buf *b, const void *p, size_t n);
__attribute__((format(printf, 2, 3))) void cs_buf_printf(struct cs_buf *b, const char *fmt, ...);
void cs_buf_free(struct cs_buf *b);

/* Append s to b with XML escaping (&<>"'); JSON has its own writer and escaper in json.h. */
void cs_buf_xml_escape(struct cs_buf *b, const char *s);

/* Time on CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
uint64_t cs_monotonic_ns(void);
uint64_t cs_realtime_ns(void);
/* CPU time in nanoseconds: the whole process' (every thread, those ended too), or the calling
 * thread's. */
uint64_t cs_process_cpu_ns(void);
uint64_t cs_thread_cpu_ns(void);

/* Make malloc's heap cheap to touch for a process that allocates tens of MB once and frees
 * them (record's start-up and symbolization): blocks up to 32 MiB come from the heap and freed
 * memory stays in it for the next, and the heap's first prefault_bytes are faulted in with one
 * madvise(MADV_POPULATE_WRITE). Before any thread is started. */
void cs_heap_prepare(size_t prefault_bytes);
/* Fault in the pages of [p, p + n) in one call (MADV_POPULATE_WRITE, Linux 5.14), in huge pages
 * where transparent huge pages allow it. 0, or -errno where the kernel cannot (the pages then
 * fault one at a time as they are touched). */
int cs_prefault(void *p, size_t n);

/* csampler's cache folder for one kind of entry, into buf: $XDG_CACHE_HOME/csampler/SUB (else
 * ~/.cache/csampler/SUB), created with its parents (mode 0700). 0, or -errno; -ENOENT when the
 * environment variable off_env is "0" (the user turned that cache off) or there is no home. */
int cs_cache_dir(const char *sub, const char *off_env, char *buf, size_t len);

/* Parse helpers: return 0 or -EINVAL / -ERANGE. */
int cs_parse_u64(const char *s, uint64_t *out);
int cs_parse_double(const char *s, double *out);

const char *cs_basename(const char *path);

/* A C++ (Itanium ABI) name demangled, in memory the caller frees; NULL when name is not a
 * mangled one ("_Z...") or does not demangle. */
char *cs_demangle(const char *name);

/* Read a small file (a /proc or /sys entry) into buf, NUL-terminated. Returns the length or
 * -errno. */
ssize_t cs_read_small_file(const char *path, char *buf, size_t size);
/* The number of the line "key:" of /proc/PID/status ("Tgid", "PPid", ...), 0 when the file
 * cannot be read or has no such line. */
long cs_proc_status_number(int pid, const char *key);
/* The number a small file starts with, or dflt when it cannot be read. */
long cs_read_long_file(const char *path, long dflt);

/* Free each pointer of ptrs[0, n); CS_FREE_ALL(a->x, a->y, ...) frees the arrays a struct
 * owns in one statement. */
static inline void cs_free_each(void *const *ptrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ptrs[i]);
}
#define CS_FREE_ALL(...)                                                          \
	cs_free_each((void *const[]){ __VA_ARGS__ },                                \
		     sizeof((void *const[]){ __VA_ARGS__ }) / sizeof(void *))

/* qsort and qsort_r for arrays that may be empty: an array that was never grown is NULL, and
 * qsort(NULL, 0, ...) is undefined behaviour (glibc declares base nonnull; UBSan reports it,
 * found by tests/fuzz/fuzz_datafile on files without samples). */
static inline void cs_qsort(void *base, size_t n, size_t size,
			    int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static inline void cs_qsort_r(void *base, size_t n, size_t size,
			      int (*cmp)(const void *, const void *, void *), void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

#endif
