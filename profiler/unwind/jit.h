/* jit.h: recovering the caller of a frame that has no CFI: code generated at run time in
 * anonymous memory by oneDNN, MKL, Triton... unwind.c stops its CFI unwinding at such a frame, asks jit_recover() for the caller's registers and resumes
 * CFI unwinding from there; this module only reasons about one frame and knows nothing of
 * libdwfl or of the address-space tables, which it reaches through struct jit_memory.
 *
 * The caller is taken by the cheapest method that is checked, as Breakpad and rust-minidump
 * rank frames by trust:
 *   1. one frame-pointer step, accepted only when it lands on a plausible frame: rbp within
 *      the stack copy at or above the frame's sp, the saved rbp above it and within the copy,
 *      and the word above it a return address (below);
 *   2. otherwise a scan of JIT_SCAN_BYTES upward from the frame's sp for the first word that is
 *      a return address.
 * A return address points into a file-backed mapping whose CFI covers it, right after an
 * indirect call instruction, or after a direct call whose target is JIT code (a direct call to
 * anything else cannot have called the frame: such words are stale return addresses of earlier
 * calls). The scan is never used for frames that have CFI: there, the first such word is the
 * true return address only about 60% of the time. */
#ifndef CSAMPLER_UNWIND_JIT_H
#define CSAMPLER_UNWIND_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How far above a JIT frame's sp its return address is looked for. oneDNN's kernels push the
 * six callee-saved registers and reserve their spill area below them: a few hundred bytes. */
#define JIT_SCAN_BYTES 512

/* The longest call instruction recognised: prefixes, REX, FF, ModRM, SIB, disp32. */
#define JIT_CALL_MAX_LEN 9

/* What recovery may read, provided by the unwinder. */
struct jit_memory {
	const uint8_t *stack;      /* the sample's stack copy, starting at stack_start */
	uint64_t stack_start, stack_size;
	void *arg;
	/* The n bytes of code just before addr when addr is in a file-backed executable mapping
	 * of a file with CFI (else NULL, also when fewer than n bytes precede it in the file;
	 * callers retry with less). */
	const uint8_t *(*code_before)(void *arg, uint64_t addr, size_t n);
	/* Whether the CFI of the file mapped at pc has a row for pc. */
	bool (*has_cfi)(void *arg, uint64_t pc);
	/* Whether addr is code in anonymous memory (a JIT region). */
	bool (*is_jit)(void *arg, uint64_t addr);
};

/* A frame without CFI: its pc, sp and (when the unwinder knows it) rbp. */
struct jit_frame {
	uint64_t pc, sp, bp;
	bool have_bp;
};

/* The recovered caller: its return address (pc), its sp (just above the return address) and,
 * after a frame-pointer step, its rbp. how is PROFILE_FRAME_FOUND_FP or _SCAN (datafile.h). */
struct jit_caller {
	uint64_t pc, sp, bp;
	bool have_bp;
	uint32_t how;
	bool keep_regs;                 /* the sample's other registers hold (unwind.c: a leaf
					 * caught at its ret has restored them all) */
};

enum jit_call_kind { JIT_CALL_NONE, JIT_CALL_DIRECT, JIT_CALL_INDIRECT };

/* Whether the n bytes of code ending at ret end with a call instruction: an indirect call
 * (FF /2 with any addressing form, REX and notrack/bnd/segment prefixes) or a direct one
 * (E8 rel32, its target in *target). A direct call is reported when its encoding matches,
 * even if an indirect one would too: the conservative reading. */
enum jit_call_kind jit_call_before(const uint8_t *code, size_t n, uint64_t ret, uint64_t *target);

/* Whether addr is a return address by the rules above. */
bool jit_is_return_address(const struct jit_memory *mem, uint64_t addr);

/* Recover the caller of f. Returns 0 (*out set), -ERANGE when the frame-pointer step or the
 * scan needed stack beyond the copy and nothing was found before it (a larger copy might
 * help), or -ENOENT. */
int jit_recover(const struct jit_memory *mem, const struct jit_frame *f, struct jit_caller *out);

#endif
