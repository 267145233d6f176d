/* unwind.h: turning sampled (user registers, user stack copy) snapshots into call stacks with
 * elfutils' libdwfl; symbols.h names the code locations of those stacks.
 *
 * The unwinder follows each target process' address space from the recorder's events (mmap,
 * fork, exec, exit), opens each mapped ELF file once while it is still mapped (through
 * /proc/PID/root, so container paths work) and keeps the per-file state (CFI, symbol tables,
 * DWARF) cached by build-id for the whole session: nothing is rebuilt per sample.
 *
 * A code location is (module id, file offset): the offset into the ELF file as mapped
 * (ip - map.start + map.pgoff), so it means the same on another machine. The module table is
 * owned by the context; module ids are dense, starting at 0, and never reused. */
#ifndef CSAMPLER_UNWIND_H
#define CSAMPLER_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct unwind_ctx; /* not thread-safe: one thread at a time calls into a context */

/* x86-64 user registers indexed by perf's enum perf_event_x86_regs (PERF_REG_X86_AX = 0 ...
 * PERF_REG_X86_IP = 8, PERF_REG_X86_SP = 7, PERF_REG_X86_BP = 6, R8..R15 = 16..23). */
#define UNWIND_NREGS 24
#define UNWIND_REG_BP 6
#define UNWIND_REG_SP 7
#define UNWIND_REG_IP 8

struct unwind_sample {
	uint32_t pid, tid;
	uint64_t regs[UNWIND_NREGS];
	uint64_t regs_mask;        /* which regs[] were sampled (bit i = regs[i]) */
	const uint8_t *stack;      /* copy of user memory starting at regs[SP] */
	uint64_t stack_size;       /* valid bytes in stack (perf's dyn_size) */
	const uint64_t *kernel_ips;/* kernel callchain, leaf first, without PERF_CONTEXT_* markers */
	size_t nkernel_ips;
	const uint64_t *user_ips;  /* -g fp: the kernel's user callchain, leaf first; else NULL */
	size_t nuser_ips;
};

struct unwind_loc {
	uint32_t module;           /* module id */
	uint64_t offset;           /* file offset (kernel, JIT: the absolute address) */
	uint32_t flags;            /* PROFILE_FRAME_FOUND_* (datafile.h): how the frame was found
				    * when not by CFI (its callee had none, unwind/jit.h) */
	uint64_t sp;               /* user frames unwound from a stack copy: the frame's stack
				    * pointer (its callee's CFA), so the caller's sp is this
				    * frame's CFA (python.c finds interpreter locals by it); 0
				    * when not known (kernel frames, -g fp, Python frames) */
};

enum unwind_result_flags {
	UNWIND_COMPLETE = 1 << 0,   /* the unwinder reached the outermost frame (no CFI left);
				     * -g fp: the kernel's user callchain was not empty */
	UNWIND_ERROR = 1 << 1,      /* stopped on an error (no CFI, unreadable memory, ...) */
	UNWIND_STACK_END = 1 << 2,  /* stopped because it needed memory beyond the end of the
				     * stack copy (set instead of UNWIND_ERROR): a larger
				     * --stack-size would have gone further */
	UNWIND_NO_MAP = 1 << 3,     /* an address was in no known mapping (it is then given as
				     * an address in the process' "//anon" module) */
	UNWIND_STOP_ANON = 1 << 4,  /* with UNWIND_ERROR: stopped at code without CFI in
				     * anonymous memory (JIT) whose caller was not recovered */
	UNWIND_STOP_NO_CFI = 1 << 5,/* with UNWIND_ERROR: stopped at code in a file without CFI
				     * (libdwfl's frame-pointer fallback failed there) */
};
/* None of COMPLETE, ERROR, STACK_END: locs filled up (max reached) before the end. */

/* Modules: one per (path as mapped, ELF file by build-id) for files; "[kernel.kallsyms]" for
 * kernel addresses; "//anon" (PROFILE_MODULE_JIT, one per process) for anonymous executable
 * memory and addresses in no known mapping, named from /tmp/perf-PID.map. */
struct unwind_module {
	const char *path;          /* as mapped in the target ("[kernel.kallsyms]", "[vdso]", ...) */
	const char *build_id;      /* lowercase hex, or "" */
	uint32_t flags;            /* PROFILE_MODULE_* (datafile.h): NO_CFI is known when the
				    * file is mapped; NO_SYMBOLS and NO_DEBUGINFO are first judged
				    * from the file's own sections and settled by the first
				    * sym_resolve in the module (debug files found): read them
				    * after symbolizing */
};

int unwind_new(struct unwind_ctx **out);
void unwind_free(struct unwind_ctx *ctx);

/* Address-space events, fed in time order. path is the name from the MMAP2 record; prot and
 * flags as in mmap(2). Non-executable mappings may be passed and are kept for memory reads
 * of read-only data if useful, or ignored. */
int unwind_mmap(struct unwind_ctx *ctx, uint32_t pid, uint64_t start, uint64_t len,
		uint64_t pgoff, uint32_t prot, const char *path);
int unwind_fork(struct unwind_ctx *ctx, uint32_t parent_pid, uint32_t child_pid);
int unwind_exec(struct unwind_ctx *ctx, uint32_t pid);   /* drops the old address space */
int unwind_exit(struct unwind_ctx *ctx, uint32_t pid);   /* may free per-process state */
/* Feed the executable mappings of /proc/PID/maps as unwind_mmap events (attach mode, or a
 * process whose events were lost). unwind_sample does this itself for a pid it never saw.
 * Returns 0 or -errno (the process is gone, or not readable). */
int unwind_load_proc_maps(struct unwind_ctx *ctx, uint32_t pid);
/* The generation of pid's mappings: it changes with every event above that concerns pid (a
 * new process, a mapping, an exec), so that what was derived from its addresses under one
 * generation holds while it is unchanged (record's stack memo). 0 for a pid not known (never
 * seen, or exited). */
uint64_t unwind_proc_generation(struct unwind_ctx *ctx, uint32_t pid);

/* Unwind one sample: kernel frames first (leaf first, module = the kernel module), then user
 * frames. A frame in JIT code (anonymous executable memory, no CFI) does not end the stack:
 * its caller is recovered as unwind/jit.h says and CFI unwinding resumes from there, up to
 * UNWIND_JIT_MAX_RECOVERIES times per sample; the frames found so are marked in locs[].flags. The leaf ip is reported as is; every caller's entry is its return address,
 * unadjusted (sym_resolve adjusts by one). A frame interrupted by a signal (its pc is exact,
 * not a return address) is given as pc + 1 so that the same adjustment lands on it. The user
 * ip after kernel frames is where the thread entered the kernel (a syscall's return point:
 * resolving it as a caller is right for syscalls, off by one byte for faults).
 * A pid never seen in events is read from /proc/PID/maps on its first sample.
 * Returns the number of locations written to locs (<= max) or -errno; *flags gets UNWIND_*
 * bits. */
int unwind_sample(struct unwind_ctx *ctx, const struct unwind_sample *s, struct unwind_loc *locs,
		  int max, uint32_t *flags);

/* The "[python]" module (PROFILE_MODULE_PYTHON) whose offsets are Python frame ids
 * (python.h), created on first use. */
uint32_t unwind_python_module(struct unwind_ctx *ctx);
/* The "[off-cpu]" module (PROFILE_MODULE_OFFCPU) of `record --idle`'s off-CPU leaf frames,
 * whose offsets say why the thread was not running (offcpu.h), created on first use. */
uint32_t unwind_offcpu_module(struct unwind_ctx *ctx);

/* The module table. */
size_t unwind_module_count(const struct unwind_ctx *ctx);
const struct unwind_module *unwind_module_get(const struct unwind_ctx *ctx, uint32_t id);

#endif
