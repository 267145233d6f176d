/* cfitable_test.c: the flat unwind rows built from the unit runner's own .eh_frame, checked at
 * the entry of a function (CFA = rsp + 8), after a frame-pointer prologue (CFA = rbp + 16, rbp
 * saved at CFA - 16) and at _start (the outermost frame), through the load bias of its mapping;
 * and the on-disk cache of rows (cfitable_cache.c). */
#include "base/unit.h"
#include "unwind/cfitable.h"

#include <fcntl.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A frame-pointer function with its CFI written out, so that the rows expected are known
 * whatever the compiler's flags. */
void cfitable_probe_fp(void);
__asm__(".text\n.globl cfitable_probe_fp\n.type cfitable_probe_fp,@function\n"
	"cfitable_probe_fp:\n.cfi_startproc\n"
	"push %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp,-16\n"
	"mov %rsp,%rbp\n.cfi_def_cfa_register %rbp\n"
	"nop\n"
	"pop %rbp\n.cfi_def_cfa %rsp,8\n"
	"ret\n.cfi_endproc\n.size cfitable_probe_fp,.-cfitable_probe_fp\n");

/* The row in effect at vaddr, or NULL. */
static const struct cfitable_row *row_at(const struct cfitable *t, uint64_t vaddr)
{
	const struct cfitable_row *found = NULL;
	for (size_t i = 0; i < t->nrows && t->rows[i].pc <= vaddr; i++)
		found = &t->rows[i];
	return found;
}

/* The bias of the runner's executable mapping holding addr (from /proc/self/maps). */
static int self_bias(const struct cfitable *t, uint64_t addr, uint64_t *bias)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ret = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		if (sscanf(line, "%llx-%llx %7s %llx", &lo, &hi, perms, &off) == 4 && addr >= lo &&
		    addr < hi && perms[2] == 'x') {
			ret = cfitable_bias(t, lo, off, bias);
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

extern char _start[];

UNIT_TEST(cfitable_self)
{
	struct cfitable t;
	int fd = open("/proc/self/exe", O_RDONLY);
	UNIT_ASSERT(fd >= 0);
	UNIT_ASSERT(cfitable_build(fd, &t) == 0);
	close(fd);
	UNIT_ASSERT(t.nrows > 100);
	for (size_t i = 1; i < t.nrows; i++)
		UNIT_ASSERT(t.rows[i].pc > t.rows[i - 1].pc);

	uint64_t bias, entry = (uint64_t)(uintptr_t)cfitable_probe_fp;
	UNIT_ASSERT(self_bias(&t, entry, &bias) == 0);
	const struct cfitable_row *r = row_at(&t, entry - bias);
	UNIT_ASSERT(r && !(r->flags & CFITABLE_GAP));
	UNIT_ASSERT(r->cfa_reg == CFITABLE_REG_SP && r->cfa_off == 8);
	/* past push %rbp; mov %rsp,%rbp: some row of the function has CFA = rbp + 16 */
	bool fp_row = false;
	for (uint64_t pc = entry - bias; pc < entry - bias + 6; pc++) {
		r = row_at(&t, pc);
		if (r && r->cfa_reg == CFITABLE_REG_BP && r->cfa_off == 16 &&
		    (r->flags & CFITABLE_BP_SAVED) && r->bp_off == -16)
			fp_row = true;
	}
	UNIT_ASSERT(fp_row);
	r = row_at(&t, (uint64_t)(uintptr_t)_start - bias);
	UNIT_ASSERT(r && (r->flags & CFITABLE_END));
	cfitable_free(&t);
}

UNIT_TEST(cfitable_not_elf)
{
	struct cfitable t;
	int fd = open("/proc/self/cmdline", O_RDONLY);
	UNIT_ASSERT(fd >= 0);
	UNIT_ASSERT(cfitable_build(fd, &t) < 0);
	close(fd);
}

/* The on-disk cache: a first build stores the rows, a second reads the same rows back, and a
 * damaged entry (a flipped byte, a cut-off file) is ignored and built again. */
UNIT_TEST(cfitable_cache)
{
	char dir[] = "/tmp/csampler-cfi-test.XXXXXX", cmd[256];
	struct cfitable a, b, c;
	bool hit;
	UNIT_ASSERT(mkdtemp(dir) != NULL);
	setenv("XDG_CACHE_HOME", dir, 1);
	int fd = open("/proc/self/exe", O_RDONLY);
	UNIT_ASSERT(fd >= 0);
	UNIT_ASSERT(cfitable_build_cached(fd, &a, &hit) == 0 && !hit);
	UNIT_ASSERT(cfitable_build_cached(fd, &b, &hit) == 0 && hit);
	UNIT_ASSERT(a.nrows == b.nrows && a.nsegs == b.nsegs && a.unsupported == b.unsupported);
	bool same = true;
	for (size_t i = 0; i < a.nrows; i++)
		same = same && a.rows[i].pc == b.rows[i].pc && a.rows[i].cfa_off == b.rows[i].cfa_off &&
		       a.rows[i].flags == b.rows[i].flags && a.rows[i].bp_off == b.rows[i].bp_off;
	UNIT_ASSERT(same && memcmp(a.segs, b.segs, a.nsegs * sizeof(*a.segs)) == 0);
	/* a byte in the middle flipped: the checksum refuses it */
	snprintf(cmd, sizeof(cmd), "f=$(ls %s/csampler/cfi-v1/*.rows) && printf '\\377' | dd of=$f bs=1 seek=200 conv=notrunc 2>/dev/null", dir);
	UNIT_ASSERT(system(cmd) == 0);
	UNIT_ASSERT(cfitable_build_cached(fd, &c, &hit) == 0 && !hit && c.nrows == a.nrows);
	cfitable_free(&c);
	/* rewritten whole by that build; now cut short */
	UNIT_ASSERT(cfitable_build_cached(fd, &c, &hit) == 0 && hit);
	cfitable_free(&c);
	snprintf(cmd, sizeof(cmd), "f=$(ls %s/csampler/cfi-v1/*.rows) && truncate -s 100 $f", dir);
	UNIT_ASSERT(system(cmd) == 0);
	UNIT_ASSERT(cfitable_build_cached(fd, &c, &hit) == 0 && !hit && c.nrows == a.nrows);
	cfitable_free(&c);
	/* CSAMPLER_CFI_CACHE=0: not read */
	setenv("CSAMPLER_CFI_CACHE", "0", 1);
	UNIT_ASSERT(cfitable_build_cached(fd, &c, &hit) == 0 && !hit);
	unsetenv("CSAMPLER_CFI_CACHE");
	unsetenv("XDG_CACHE_HOME");
	close(fd);
	cfitable_free(&a);
	cfitable_free(&b);
	cfitable_free(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	UNIT_ASSERT(system(cmd) == 0);
}
