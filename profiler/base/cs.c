/* cs.c: messages, checked allocation, buffers, escaping and parsing shared by all modules. */
#include "base/cs.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

int cs_quiet;

static void cs_vmsg(const char *prefix, const char *fmt, va_list ap)
{
	char line[4096];
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "csampler: %s%s\n", prefix, line);
}

int cs_error(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cs_vmsg("", fmt, ap);
	va_end(ap);
	return err > 0 ? -err : (err < 0 ? err : -EINVAL);
}

void cs_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cs_vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void cs_info(const char *fmt, ...)
{
	va_list ap;
	if (cs_quiet)
		return;
	va_start(ap, fmt);
	cs_vmsg("", fmt, ap);
	va_end(ap);
}

static void cs_oom(size_t n)
{
	fprintf(stderr, "csampler: out of memory allocating %zu bytes\n", n);
	exit(CS_EXIT_ERROR);
}

void *cs_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		cs_oom(n);
	return p;
}

void *cs_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		cs_oom(n * size);
	return p;
}

void *cs_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		cs_oom(n);
	return q;
}

char *cs_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(cs_malloc(n), s, n);
}

char *cs_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		cs_oom(strlen(fmt));
	return s;
}

void cs_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	void **a = arr;
	size_t c = *cap;
	if (need <= c)
		return;
	if (c < 16)
		c = 16;
	while (c < need)
		c *= 2;
	*a = cs_realloc(*a, c * elem);
	*cap = c;
}

void cs_buf_put(struct cs_buf *b, const void *p, size_t n)
{
	cs_grow(&b->data, &b->cap, b->len + n + 1, 1);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void cs_buf_printf(struct cs_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[512];
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		cs_buf_put(b, small, n);
		return;
	}
	cs_grow(&b->data, &b->cap, b->len + n + 1, 1);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

void cs_buf_free(struct cs_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void cs_buf_xml_escape(struct cs_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': cs_buf_put(b, "&amp;", 5); break;
		case '<': cs_buf_put(b, "&lt;", 4); break;
		case '>': cs_buf_put(b, "&gt;", 4); break;
		case '"': cs_buf_put(b, "&quot;", 6); break;
		case '\'': cs_buf_put(b, "&#39;", 5); break;
		default:
			/* Control characters are not allowed in XML 1.0: replace them. */
			if ((unsigned char)*s < 0x20 && *s != '\t')
				cs_buf_put(b, "?", 1);
			else
				cs_buf_put(b, s, 1);
		}
	}
}

static uint64_t cs_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cs_monotonic_ns(void)
{
	return cs_clock_ns(CLOCK_MONOTONIC);
}

uint64_t cs_realtime_ns(void)
{
	return cs_clock_ns(CLOCK_REALTIME);
}

uint64_t cs_process_cpu_ns(void)
{
	return cs_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

uint64_t cs_thread_cpu_ns(void)
{
	return cs_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Why: each first touch of an anonymous page is a page fault, and record touches 35-40 MB once
 * (libbpf reads and indexes the kernel's 5.5 MB BTF, /proc/kallsyms is read and sorted, libelf
 * decompresses debug sections), most of it through glibc's mmap of each big block, unmapped
 * at its free, so the next block faults again: 9,200 faults a `record -a --duration 0.2`. On
 * a VM with shadow page tables a fault costs about 16 us (this project's 2-CPU VM): 0.1 s of
 * the run's 0.4 s of CPU. MADV_POPULATE_WRITE (Linux 5.14) faults a range in one call at
 * about 0.7 us a page there; in huge pages (THP "madvise", Debian's default) the big copies
 * into them (the BTF read, then copied; kallsyms) cost a third of what they cost in 4 KiB
 * pages. Measured (`record -a --duration 0.2`, 9 interleaved runs, 8 busy processes): own
 * CPU 0.39-0.44 s -> 0.30-0.32 s (medians), 0.21-0.24 s with huge pages. */
#define CS_HEAP_MMAP_THRESHOLD (32u << 20) /* glibc's largest */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int cs_prefault(void *p, size_t n)
{
	uintptr_t page = (uintptr_t)getpagesize();
	uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1), to = ((uintptr_t)p + n) & ~(page - 1);
	if (to <= from)
		return 0;
	(void)madvise((void *)from, to - from, MADV_HUGEPAGE); /* THP off: EINVAL, 4 KiB pages */
	return madvise((void *)from, to - from, MADV_POPULATE_WRITE) ? -errno : 0;
}

void cs_heap_prepare(size_t prefault_bytes)
{
	mallopt(M_MMAP_THRESHOLD, CS_HEAP_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if (!prefault_bytes || prefault_bytes >= CS_HEAP_MMAP_THRESHOLD)
		return;
	char *block = malloc(prefault_bytes); /* from the heap's top: freed, it stays there */
	if (!block)
		return;
	(void)cs_prefault(block, prefault_bytes);
	free(block);
}

int cs_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int cs_parse_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end || v != v)
		return -EINVAL;
	*out = v;
	return 0;
}

/* libstdc++'s demangler (the Itanium C++ ABI; -lstdc++ is linked): the one declaration. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

char *cs_demangle(const char *name)
{
	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	int status = -1;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (d && status == 0)
		return d;
	free(d);
	return NULL;
}

const char *cs_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

ssize_t cs_read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = 0;
	return n;
}

long cs_proc_status_number(int pid, const char *key)
{
	char path[64], buf[1024], line[64];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	snprintf(line, sizeof(line), "\n%s:", key);
	if (cs_read_small_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	const char *p = strstr(buf, line);
	return p ? atol(p + strlen(line)) : 0;
}

long cs_read_long_file(const char *path, long dflt)
{
	char buf[64];
	if (cs_read_small_file(path, buf, sizeof(buf)) <= 0)
		return dflt;
	return strtol(buf, NULL, 10);
}

uint64_t cs_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, n, seed);
}

int cs_cache_dir(const char *sub, const char *off_env, char *buf, size_t len)
{
	const char *off = getenv(off_env), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;
	if (off && !strcmp(off, "0"))
		return -ENOENT;
	if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/csampler", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/csampler", home);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n + strlen(sub) + 16 >= len)
		return -ENAMETOOLONG;
	/* the parents as well: ~/.cache may not exist yet */
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(buf, 0700);
			*p = '/';
		}
	mkdir(buf, 0700);
	strcat(buf, "/");
	strcat(buf, sub);
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
