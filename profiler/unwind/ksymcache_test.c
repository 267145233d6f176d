/* ksymcache_test.c: unit tests of the kernel symbols' cache (ksymcache.c): a round trip, the
 * entries it refuses, and, where /proc/kallsyms shows addresses (root), the same names from
 * the cache as from /proc/kallsyms for addresses across the kernel image's text, and an
 * address outside it named after /proc/kallsyms is read whole (symbols.c). */
#include "unwind/ksymcache.h"
#include "unwind/elfcache.h"

#include "base/cs.h"
#include "base/search.h"
#include "base/unit.h"
#include "unwind/symbols.h"
#include "unwind/unwind.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *ksym_test_dir(void)
{
	char *dir = strdup("/tmp/csampler-ksym-XXXXXX");
	UNIT_ASSERT(dir && mkdtemp(dir));
	return dir;
}

static void ksym_test_rmdir(char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	UNIT_ASSERT(system(cmd) == 0);
	free(dir);
}

UNIT_TEST(ksymcache_round_trip_and_refusals)
{
	char *dir = ksym_test_dir(), path[512];
	struct kallsym syms[] = {
		{ 0x1000, "before_text" }, { 0x2000, "_stext" }, { 0x2100, "alpha" },
		{ 0x2200, "beta" }, { 0x2300, "_etext" }, { 0x9000, "a_module_function" },
	};
	struct ksymcache_table t;

	UNIT_ASSERT(ksymcache_read_at(dir, "b00t", &t) < 0); /* nothing yet */
	ksymcache_write_at(dir, "b00t", syms, 6);
	UNIT_ASSERT_EQ_INT(ksymcache_read_at(dir, "b00t", &t), 0);
	/* the image's text only: [_stext, _etext) */
	UNIT_ASSERT(t.n == 3 && t.lo == 0x2000 && t.hi == 0x2300);
	UNIT_ASSERT(t.syms[0].addr == 0x2000 && !strcmp(t.syms[0].name, "_stext"));
	UNIT_ASSERT(t.syms[2].addr == 0x2200 && !strcmp(t.syms[2].name, "beta"));
	ksymcache_free(&t);
	/* another boot's entry is neither read nor kept once this boot's is written */
	UNIT_ASSERT(ksymcache_read_at(dir, "0ther", &t) < 0);
	ksymcache_write_at(dir, "0ther", syms, 6);
	snprintf(path, sizeof(path), "%s/b00t.ksym", dir);
	UNIT_ASSERT(access(path, F_OK) != 0);
	/* an entry renamed to another boot's name: its key is that of its own boot */
	char other[512];
	snprintf(other, sizeof(other), "%s/0ther.ksym", dir);
	UNIT_ASSERT(rename(other, path) == 0);
	UNIT_ASSERT(ksymcache_read_at(dir, "b00t", &t) < 0);
	/* a flipped byte: refused */
	ksymcache_write_at(dir, "b00t", syms, 6);
	int fd = open(path, O_RDWR);
	UNIT_ASSERT(fd >= 0);
	uint8_t byte;
	UNIT_ASSERT(pread(fd, &byte, 1, 70) == 1);
	byte ^= 0x40;
	UNIT_ASSERT(pwrite(fd, &byte, 1, 70) == 1);
	UNIT_ASSERT(ksymcache_read_at(dir, "b00t", &t) < 0);
	close(fd);
	/* cut short: refused */
	ksymcache_write_at(dir, "b00t", syms, 6);
	fd = open(path, O_RDWR);
	struct stat st;
	UNIT_ASSERT(fd >= 0 && fstat(fd, &st) == 0);
	UNIT_ASSERT(ftruncate(fd, st.st_size - 9) == 0);
	close(fd);
	UNIT_ASSERT(ksymcache_read_at(dir, "b00t", &t) < 0);
	/* no _stext: nothing written */
	unlink(path);
	ksymcache_write_at(dir, "b00t", syms + 2, 2);
	UNIT_ASSERT(access(path, F_OK) != 0);
	ksym_test_rmdir(dir);
}

/* /proc/kallsyms as symbols.c keeps it: text and weak symbols, sorted. */
static size_t ksym_test_read_proc(struct kallsym **out)
{
	FILE *fp = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	uint64_t addr;
	size_t n = 0, cap = 0;
	struct kallsym *syms = NULL;

	*out = NULL;
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 && addr &&
		    strchr("tTwW", type))
			*CS_PUSH(syms, n, cap) = (struct kallsym){ addr, strdup(name) };
	fclose(fp);
	for (size_t i = 1; i < n; i++) /* insertion: nearly sorted already */
		for (size_t j = i; j > 0 && syms[j - 1].addr > syms[j].addr; j--) {
			struct kallsym x = syms[j];
			syms[j] = syms[j - 1];
			syms[j - 1] = x;
		}
	*out = syms;
	return n;
}

static const char *ksym_test_name(const struct kallsym *s, size_t n, uint64_t addr)
{
	size_t lo = CS_UPPER_BOUND(s, n, addr, addr);
	return lo ? s[lo - 1].name : NULL;
}

UNIT_TEST(ksymcache_same_names_as_kallsyms)
{
	struct kallsym *all;
	size_t n = ksym_test_read_proc(&all);
	if (n < 100) {
		printf("SKIPPED: unit/ksymcache_same_names_as_kallsyms: /proc/kallsyms shows no "
		       "addresses (kernel.kptr_restrict; run as root)\n");
		for (size_t i = 0; i < n; i++)
			free((char *)all[i].name);
		free(all);
		return;
	}
	char *dir = ksym_test_dir();
	struct ksymcache_table t;
	ksymcache_write_at(dir, "b00t", all, n);
	UNIT_ASSERT_EQ_INT(ksymcache_read_at(dir, "b00t", &t), 0);
	UNIT_ASSERT(t.n > 1000 && t.lo < t.hi);
	/* 20,000 addresses across the image's text, and each cached symbol's first byte */
	size_t differ = 0;
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t a = t.lo + (t.hi - t.lo) / 20000 * i + (i * 2654435761u) % 4096;
		if (a >= t.hi)
			continue;
		const char *x = ksym_test_name(all, n, a), *y = ksym_test_name(t.syms, t.n, a);
		differ += !x || !y || strcmp(x, y);
	}
	for (size_t i = 0; i < t.n; i++) {
		const char *x = ksym_test_name(all, n, t.syms[i].addr);
		differ += !x || strcmp(x, ksym_test_name(t.syms, t.n, t.syms[i].addr));
	}
	UNIT_ASSERT_EQ_INT((int)differ, 0);

	/* through the symbolizer, with that folder as the cache: an address in the image's
	 * text named from the entry, then one outside it (the first text symbol above _etext)
	 * named after /proc/kallsyms is read whole */
	uint64_t outside = 0;
	const char *outside_name = NULL;
	for (size_t i = 0; i < n && !outside; i++)
		if (all[i].addr >= t.hi && all[i].addr < UINT64_MAX - 1)
			outside = all[i].addr, outside_name = all[i].name;
	char *saved = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
	setenv("XDG_CACHE_HOME", dir, 1);
	struct unwind_ctx *ctx;
	struct unwind_loc locs[4];
	struct sym_frame f[4];
	uint32_t flags;
	uint64_t inside = t.syms[t.n / 2].addr;
	uint64_t kips[2] = { inside + 1, outside + 1 };
	struct unwind_sample s = { .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
				   .kernel_ips = kips, .nkernel_ips = outside ? 2 : 1 };
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	sym_prepare_kernel(ctx); /* no entry in this folder for this boot: reads, then writes one */
	unwind_free(ctx);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, locs, 4, &flags), (int)s.nkernel_ips);
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, locs[0], false, f, 4), 1);
	UNIT_ASSERT(!strcmp(f[0].name, ksym_test_name(all, n, inside + 1)));
	UNIT_ASSERT(ctx->kallsyms_partial); /* (elfcache.h) named from the entry */
	if (outside) {
		UNIT_ASSERT_EQ_INT(sym_resolve(ctx, locs[1], false, f, 4), 1);
		UNIT_ASSERT(!strcmp(f[0].name, outside_name));
		UNIT_ASSERT(!ctx->kallsyms_partial && ctx->nkallsyms > t.n);
	}
	unwind_free(ctx);
	if (saved) {
		setenv("XDG_CACHE_HOME", saved, 1);
		free(saved);
	} else {
		unsetenv("XDG_CACHE_HOME");
	}
	ksymcache_free(&t);
	for (size_t i = 0; i < n; i++)
		free((char *)all[i].name);
	free(all);
	ksym_test_rmdir(dir);
}
