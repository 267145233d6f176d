/* unwind_test.c: unit tests of unwind.c on snapshots of this test process' own stack: the
 * registers are captured with inline assembly at a known call depth, 64 KB of stack are copied
 * from the captured stack pointer (as the kernel does for a perf sample), and /proc/self/maps is
 * fed as mmap events. Also measures the per-sample unwinding cost. */
#include "unwind/unwind.h"
#include "unwind/symbols.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/cs.h"
#include "analysis/profile.h"
#include "base/unit.h"

struct unwind_test_snap {
	uint64_t regs[UNWIND_NREGS];
	uint8_t *stack;
	uint64_t stack_size;
};

/* The end of the mapping that holds addr (so the copy stays inside the stack). */
static uint64_t unwind_test_mapping_end(uint64_t addr)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t end = addr;

	UNIT_ASSERT(fp != NULL);
	while (fgets(line, sizeof(line), fp)) {
		uint64_t s, e;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2 && addr >= s && addr < e)
			end = e;
	}
	fclose(fp);
	return end;
}

/* Capture the registers at this point and copy the stack above them. The asm statement holds
 * both the pc (the lea) and the register values, so the CFI row of that pc describes them. */
static __attribute__((noinline, noclone)) void unwind_test_capture(struct unwind_test_snap *s,
								   uint64_t want)
{
	uint64_t *r = s->regs;

	__asm__ volatile("movq %%rax, 0(%0)\n\t"
			 "movq %%rbx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rdx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "movq %%r8, 128(%0)\n\t"
			 "movq %%r9, 136(%0)\n\t"
			 "movq %%r10, 144(%0)\n\t"
			 "movq %%r11, 152(%0)\n\t"
			 "movq %%r12, 160(%0)\n\t"
			 "movq %%r13, 168(%0)\n\t"
			 "movq %%r14, 176(%0)\n\t"
			 "movq %%r15, 184(%0)\n\t"
			 "leaq 0(%%rip), %%rax\n\t"
			 "movq %%rax, 64(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	uint64_t sp = r[7];
	uint64_t end = unwind_test_mapping_end(sp);
	s->stack_size = end - sp < want ? end - sp : want;
	s->stack = malloc(s->stack_size);
	memcpy(s->stack, (const void *)(uintptr_t)sp, s->stack_size);
}

static __attribute__((noinline, noclone)) int unwind_test_level3(struct unwind_test_snap *s, int x)
{
	volatile char pad[200];
	pad[0] = (char)x;
	unwind_test_capture(s, 65536);
	return pad[0] * 3 + 1;
}

static __attribute__((noinline, noclone)) int unwind_test_level2(struct unwind_test_snap *s, int x)
{
	volatile int keep = unwind_test_level3(s, x + 1);
	return keep * 5 + 2;
}

static __attribute__((noinline, noclone)) int unwind_test_level1(struct unwind_test_snap *s, int x)
{
	volatile int keep = unwind_test_level2(s, x + 1);
	return keep * 7 + 3;
}

/* depth more frames of 256+ bytes each, then capture. */
static __attribute__((noinline, noclone)) int unwind_test_recurse(struct unwind_test_snap *s,
								  int depth)
{
	volatile char pad[256];
	pad[depth & 255] = (char)depth;
	if (depth == 0)
		unwind_test_capture(s, 65536);
	else
		pad[1] = (char)unwind_test_recurse(s, depth - 1);
	return pad[depth & 255] + pad[1];
}

static int unwind_test_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	UNIT_ASSERT(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static bool unwind_test_same(const struct unwind_loc *a, const struct unwind_loc *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i].module != b[i].module || a[i].offset != b[i].offset)
			return false;
	return true;
}

static struct unwind_sample unwind_test_sample(const struct unwind_test_snap *snap)
{
	struct unwind_sample s = {
		.pid = (uint32_t)getpid(),
		.tid = (uint32_t)getpid(),
		.regs_mask = 0xff01ff, /* AX..IP, R8..R15 */
		.stack = snap->stack,
		.stack_size = snap->stack_size,
	};
	memcpy(s.regs, snap->regs, sizeof(s.regs));
	return s;
}

/* Names of locs[0..n) (innermost name of each location). */
static void unwind_test_names(struct unwind_ctx *ctx, const struct unwind_loc *locs, int n,
			      const char **names)
{
	for (int i = 0; i < n; i++) {
		struct sym_frame frames[16];
		int nf = sym_resolve(ctx, locs[i], i > 0, frames, 16);
		UNIT_ASSERT(nf >= 1);
		names[i] = frames[nf - 1].name;
	}
}

UNIT_TEST(unwind_self_complete)
{
	struct unwind_test_snap snap = { 0 };
	struct unwind_ctx *ctx;
	struct unwind_loc locs[128];
	const char *names[128];
	uint32_t flags;

	unwind_test_level1(&snap, 1);
	int fds_before = unwind_test_count_fds();
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, (uint32_t)getpid()), 0);
	struct unwind_sample s = unwind_test_sample(&snap);
	int n = unwind_sample(ctx, &s, locs, 128, &flags);
	/* The mapped files stay open as mappings, not as descriptors. */
	UNIT_ASSERT(unwind_test_count_fds() <= fds_before);
	unwind_test_names(ctx, locs, n, names);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  #%d %s\n", i, names[i]);
	UNIT_ASSERT(n >= 8);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);
	UNIT_ASSERT(!(flags & (UNWIND_ERROR | UNWIND_STACK_END | UNWIND_NO_MAP)));
	UNIT_ASSERT(strcmp(names[0], "unwind_test_capture") == 0);
	UNIT_ASSERT(strcmp(names[1], "unwind_test_level3") == 0);
	UNIT_ASSERT(strcmp(names[2], "unwind_test_level2") == 0);
	UNIT_ASSERT(strcmp(names[3], "unwind_test_level1") == 0);
	UNIT_ASSERT(strcmp(names[4], "unit_test_unwind_self_complete") == 0);
	UNIT_ASSERT(strcmp(names[5], "main") == 0);
	UNIT_ASSERT(strcmp(names[n - 1], "_start") == 0);
	bool libc_start = false;
	for (int i = 6; i < n - 1; i++)
		libc_start |= strncmp(names[i], "__libc_start", 12) == 0;
	UNIT_ASSERT(libc_start);
	/* Every user location but the leaf lies in this test binary or libc: a real module. */
	for (int i = 0; i < n; i++) {
		const struct unwind_module *m = unwind_module_get(ctx, locs[i].module);
		UNIT_ASSERT(m != NULL && m->path[0] == '/');
		UNIT_ASSERT(!(m->flags & PROFILE_MODULE_NO_CFI));
	}
	/* Same answer the second time (the Dwfl is reused, not rebuilt). */
	struct unwind_loc again[128];
	uint32_t flags2;
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, again, 128, &flags2), n);
	UNIT_ASSERT(unwind_test_same(again, locs, n) && flags2 == flags);
	unwind_free(ctx);
	free(snap.stack);
}

UNIT_TEST(unwind_truncated_copy_is_stack_end)
{
	struct unwind_test_snap snap = { 0 };
	struct unwind_ctx *ctx;
	struct unwind_loc locs[128];
	uint32_t flags;

	unwind_test_recurse(&snap, 20);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, (uint32_t)getpid()), 0);
	struct unwind_sample s = unwind_test_sample(&snap);
	UNIT_ASSERT(unwind_sample(ctx, &s, locs, 128, &flags) > 22);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);

	s.stack_size = 2048; /* about 6 of the 20 frames fit */
	int n = unwind_sample(ctx, &s, locs, 128, &flags);
	fprintf(stderr, "truncated: %d frames, flags %#x\n", n, flags);
	{
		const char *nm[128];
		unwind_test_names(ctx, locs, n, nm);
		for (int i = 0; i < n; i++)
			fprintf(stderr, "  #%d %s %#lx\n", i, nm[i], (unsigned long)locs[i].offset);
	}
	UNIT_ASSERT(n >= 3 && n < 20);
	UNIT_ASSERT(flags & UNWIND_STACK_END);
	UNIT_ASSERT(!(flags & UNWIND_COMPLETE));

	/* A full but small max: the locations it holds, no completeness claimed. */
	s.stack_size = snap.stack_size;
	n = unwind_sample(ctx, &s, locs, 4, &flags);
	UNIT_ASSERT_EQ_INT(n, 4);
	UNIT_ASSERT(!(flags & UNWIND_COMPLETE));
	unwind_free(ctx);
	free(snap.stack);
}

/* A leaf caught at its ret whose CFI row there is stale: it still has the CFA 16 above the
 * stack pointer, as before its pop (GCC's epilogues in Debian's 3.14 left a popped register's
 * slot in the row; here the CFA too, so that trusting the row reads a wrong return address). */
__asm__(".text\n"
	".globl unwind_test_stale_ret\n"
	".type unwind_test_stale_ret, @function\n"
	"unwind_test_stale_ret:\n"
	"\t.cfi_startproc\n"
	"\tpushq %rbp\n"
	"\t.cfi_def_cfa_offset 16\n"
	"\t.cfi_offset %rbp, -16\n"
	"\tpopq %rbp\n"
	".globl unwind_test_stale_ret_at\n"
	"unwind_test_stale_ret_at:\n"
	"\tret\n"
	"\t.cfi_endproc\n"
	".size unwind_test_stale_ret, .-unwind_test_stale_ret\n");
extern const char unwind_test_stale_ret_at[];

/* A snapshot as if unwind_test_capture had called unwind_test_stale_ret and the sample caught
 * it at its ret: the return address pushed under the captured stack pointer, the registers
 * the caller's (the ABI's state at a ret). Its caller comes from that state, not from the
 * row: the frames above are the capture's. */
UNIT_TEST(unwind_leaf_at_ret_uses_the_abi)
{
	struct unwind_test_snap snap = { 0 };
	struct unwind_ctx *ctx;
	struct unwind_loc locs[128];
	const char *names[128];
	uint32_t flags;

	unwind_test_level1(&snap, 1);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, (uint32_t)getpid()), 0);
	uint8_t *stack = malloc(snap.stack_size + 8);
	UNIT_ASSERT(stack != NULL);
	uint64_t ret = snap.regs[8]; /* in the capture, after its registers were taken */
	memcpy(stack, &ret, 8);
	memcpy(stack + 8, snap.stack, snap.stack_size);
	struct unwind_sample s = unwind_test_sample(&snap);
	s.stack = stack;
	s.stack_size = snap.stack_size + 8;
	s.regs[7] = snap.regs[7] - 8;
	s.regs[8] = (uint64_t)(uintptr_t)unwind_test_stale_ret_at;
	int n = unwind_sample(ctx, &s, locs, 128, &flags);
	UNIT_ASSERT(n >= 6);
	unwind_test_names(ctx, locs, n, names);
	for (int i = 0; i < 6; i++)
		fprintf(stderr, "  #%d %s\n", i, names[i]);
	UNIT_ASSERT(strncmp(names[0], "unwind_test_stale_ret", 21) == 0);
	UNIT_ASSERT(strcmp(names[1], "unwind_test_capture") == 0);
	UNIT_ASSERT(strcmp(names[2], "unwind_test_level3") == 0);
	UNIT_ASSERT(strcmp(names[3], "unwind_test_level2") == 0);
	UNIT_ASSERT(strcmp(names[4], "unwind_test_level1") == 0);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);
	unwind_free(ctx);
	free(stack);
	free(snap.stack);
}

UNIT_TEST(unwind_kernel_and_fp_chains)
{
	struct unwind_ctx *ctx;
	struct unwind_loc locs[16];
	const char *names[16];
	uint32_t flags;
	/* A user fp callchain: return addresses inside two known functions. */
	uint64_t user_ips[2] = { (uint64_t)(uintptr_t)&unwind_test_level2 + 4,
				 (uint64_t)(uintptr_t)&unwind_test_level1 + 4 };
	uint64_t kernel_ips[1] = { 0xffffffff81000010ULL };
	struct unwind_sample s = {
		.pid = (uint32_t)getpid(),
		.tid = (uint32_t)getpid(),
		.kernel_ips = kernel_ips,
		.nkernel_ips = 1,
		.user_ips = user_ips,
		.nuser_ips = 2,
	};

	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	/* No mmap events: the process is read from /proc on its first sample. */
	int n = unwind_sample(ctx, &s, locs, 16, &flags);
	UNIT_ASSERT_EQ_INT(n, 3);
	const struct unwind_module *k = unwind_module_get(ctx, locs[0].module);
	UNIT_ASSERT(strcmp(k->path, "[kernel.kallsyms]") == 0 && (k->flags & PROFILE_MODULE_KERNEL));
	UNIT_ASSERT(locs[0].offset == kernel_ips[0]);
	unwind_test_names(ctx, locs + 1, 2, names);
	UNIT_ASSERT(strcmp(names[0], "unwind_test_level2") == 0);
	UNIT_ASSERT(strcmp(names[1], "unwind_test_level1") == 0);
	unwind_free(ctx);
}

UNIT_TEST(unwind_fork_exec_exit)
{
	struct unwind_test_snap snap = { 0 };
	struct unwind_ctx *ctx;
	struct unwind_loc locs[128], child_locs[128];
	uint32_t flags;
	uint32_t me = (uint32_t)getpid(), child = 0x7ffffff0u;

	unwind_test_level1(&snap, 1);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, me), 0);
	struct unwind_sample s = unwind_test_sample(&snap);
	int n = unwind_sample(ctx, &s, locs, 128, &flags);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);
	/* A forked child unwinds with its parent's maps... */
	UNIT_ASSERT_EQ_INT(unwind_fork(ctx, me, child), 0);
	s.pid = s.tid = child;
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, child_locs, 128, &flags), n);
	UNIT_ASSERT(unwind_test_same(locs, child_locs, n));
	/* ...also after it maps something of its own (its space is copied then). */
	UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, child, 0x10000, 0x1000, 0, PROT_READ, "/dev/null"), 0);
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, child_locs, 128, &flags), n);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);
	/* After exec the old maps are gone: the leaf is in no known mapping. */
	UNIT_ASSERT_EQ_INT(unwind_exec(ctx, child), 0);
	n = unwind_sample(ctx, &s, child_locs, 128, &flags);
	UNIT_ASSERT(n >= 1 && (flags & UNWIND_NO_MAP) && !(flags & UNWIND_COMPLETE));
	UNIT_ASSERT_EQ_INT(unwind_exit(ctx, child), 0);
	/* The parent is untouched. */
	s.pid = s.tid = me;
	unwind_sample(ctx, &s, child_locs, 128, &flags);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);
	unwind_free(ctx);
	free(snap.stack);
}

/* Each process' mappings have a generation that every event concerning it changes, and no
 * event concerning another (record's stack memo keys on it). */
UNIT_TEST(unwind_proc_generation_follows_events)
{
	struct unwind_ctx *ctx;
	uint32_t a = 0x7ffffff0u, b = 0x7ffffff1u, c = 0x7ffffff2u;

	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT(unwind_proc_generation(ctx, a) == 0); /* never seen */
	UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, a, 0x10000, 0x1000, 0, PROT_READ | PROT_EXEC, "//anon"), 0);
	uint64_t ga = unwind_proc_generation(ctx, a);
	UNIT_ASSERT(ga != 0);
	UNIT_ASSERT_EQ_INT(unwind_fork(ctx, a, b), 0);
	uint64_t gb = unwind_proc_generation(ctx, b);
	UNIT_ASSERT(gb != 0 && gb != ga);
	UNIT_ASSERT(unwind_proc_generation(ctx, a) == ga);
	UNIT_ASSERT_EQ_INT(unwind_fork(ctx, a, a), 0);    /* a thread: nothing changes */
	UNIT_ASSERT(unwind_proc_generation(ctx, a) == ga);
	/* even a data mapping (it may replace code) */
	UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, b, 0x20000, 0x1000, 0, PROT_READ, "/dev/null"), 0);
	UNIT_ASSERT(unwind_proc_generation(ctx, b) != gb);
	UNIT_ASSERT(unwind_proc_generation(ctx, a) == ga);
	gb = unwind_proc_generation(ctx, b);
	UNIT_ASSERT_EQ_INT(unwind_exec(ctx, b), 0);
	UNIT_ASSERT(unwind_proc_generation(ctx, b) != gb);
	UNIT_ASSERT_EQ_INT(unwind_exit(ctx, b), 0);
	UNIT_ASSERT(unwind_proc_generation(ctx, b) == 0);
	/* a pid used again is a new process: never a generation seen before */
	UNIT_ASSERT_EQ_INT(unwind_fork(ctx, a, b), 0);
	UNIT_ASSERT(unwind_proc_generation(ctx, b) > gb);
	UNIT_ASSERT(unwind_proc_generation(ctx, c) == 0);
	unwind_free(ctx);
}

/* Not a timing assertion: prints the cost of one unwind of a 30-frame stack for the record. */
UNIT_TEST(unwind_bench_per_sample)
{
	struct unwind_test_snap snap = { 0 };
	struct unwind_ctx *ctx;
	struct unwind_loc locs[256];
	uint32_t flags;
	const int iterations = 20000;

	unwind_test_recurse(&snap, 30);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, (uint32_t)getpid()), 0);
	struct unwind_sample s = unwind_test_sample(&snap);
	int n = unwind_sample(ctx, &s, locs, 256, &flags);
	UNIT_ASSERT(flags & UNWIND_COMPLETE);
	uint64_t t0 = cs_monotonic_ns();
	for (int i = 0; i < iterations; i++) {
		UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, locs, 256, &flags), n);
		UNIT_ASSERT(flags & UNWIND_COMPLETE);
	}
	uint64_t t1 = cs_monotonic_ns();
	double us = (double)(t1 - t0) / 1e3 / iterations;
	printf("unwind bench: %d frames, %.1f us/sample (%.2f us/frame), %.0f samples/s\n", n, us,
	       us / n, 1e6 / us);
	unwind_free(ctx);
	free(snap.stack);
}

/* Mappings replace what they overlap: the rest of a split mapping keeps its file offsets. */
UNIT_TEST(unwind_maps_overlap)
{
	struct unwind_ctx *ctx;
	struct unwind_loc locs[4];
	uint32_t flags, pid = 0x7ffffff2u;
	uint64_t ips[3] = { 0x12000, 0x16000, 0x14800 };
	struct unwind_sample s = { .pid = pid, .tid = pid, .user_ips = ips, .nuser_ips = 3 };

	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, pid, 0x10000, 0x10000, 0x1000, PROT_READ | PROT_EXEC,
				       "/usr/bin/true"), 0);
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, locs, 4, &flags), 3);
	UNIT_ASSERT(locs[0].offset == 0x3000 && locs[1].offset == 0x7000 && locs[2].offset == 0x5800);
	uint32_t file_module = locs[0].module;
	UNIT_ASSERT(strcmp(unwind_module_get(ctx, file_module)->path, "/usr/bin/true") == 0);

	UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, pid, 0x14000, 0x1000, 0, PROT_READ, "//anon"), 0);
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, locs, 4, &flags), 3);
	UNIT_ASSERT(locs[0].module == file_module && locs[0].offset == 0x3000);
	UNIT_ASSERT(locs[1].module == file_module && locs[1].offset == 0x7000);
	UNIT_ASSERT(locs[2].module != file_module && locs[2].offset == 0x14800);
	UNIT_ASSERT(flags & UNWIND_NO_MAP);
	UNIT_ASSERT(unwind_module_get(ctx, locs[2].module)->flags & PROFILE_MODULE_JIT);
	unwind_free(ctx);
}
