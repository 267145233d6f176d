/* python.h: Python frames in native stacks. For a sampled thread of a process running CPython,
 * read the interpreter's own frame chain from the target's memory (process_vm_readv) and put
 * the Python functions in place of the native interpreter activations that ran them: each
 * native _PyEval_EvalFrameDefault frame becomes the Python frames it was running, innermost
 * first, and the native frames above and below stay where they are.
 *
 * Python frames are locations in the "[python]" module (unwind_python_module) whose offset is a
 * frame id: one id per (function, file, line), interned for the context's lifetime, named by
 * sym_resolve through py_frame_symbol (PROFILE_FRAME_PYTHON).
 *
 * The frame chain is read when the recorder processes the sample, a little after the sample was
 * taken (the sample waits in the reader's queue: ~1-10 ms, more under load). The program may
 * have moved on: python.c checks that the number of interpreter activations in the native stack
 * matches the number of entry frames in the chain, and says so in *result when not. */
#ifndef CSAMPLER_PYTHON_H
#define CSAMPLER_PYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/symbols.h"
#include "unwind/unwind.h"

enum py_merge_result {
	PY_MERGE_NONE = 0,      /* no interpreter activation in the stack: nothing to do */
	PY_MERGE_OK,            /* Python frames put in place of every activation */
	PY_MERGE_CHANGED,       /* merged, but the chain read no longer matched the stack */
	PY_MERGE_UNREADABLE,    /* the chain could not be read: the stack stays native */
	PY_MERGE_UNSUPPORTED,   /* a CPython version csampler has no layout for: native */
};

/* The sample's copy of the thread's stack, as the kernel took it at the time of the sample. */
struct py_stack {
	const uint8_t *data;
	uint64_t addr, size;            /* the copy starts at the sampled stack pointer */
	bool complete;                  /* the native unwind reached the thread's entry point */
};

/* Turn Python frame merging on for ctx. */
void py_enable(struct unwind_ctx *ctx);

/* Merge the Python frames of thread tid of pid into locs[0, n) (leaf first, as unwind_sample
 * wrote them, with their sp), in place; at most max locations. stack (may be NULL) is the
 * sample's stack copy: each activation's frames are then found from what the interpreter had
 * in its C stack frame at the time of the sample, not from the chain as it is when read.
 * Returns the new count; *result says what was done. Never fails: without Python frames the
 * native stack is returned unchanged. */
int py_merge(struct unwind_ctx *ctx, uint32_t pid, uint32_t tid, const struct py_stack *stack,
	     struct unwind_loc *locs, int n, int max, enum py_merge_result *result);

/* The process exec'd or exited: forget what was learned about its interpreter. */
void py_forget(struct unwind_ctx *ctx, uint32_t pid);

/* Name Python frame id (the offset of a "[python]" location). Returns 0 or -ENOENT. */
int py_frame_symbol(struct unwind_ctx *ctx, uint64_t id, struct sym_frame *out);

/* Decode CPython 3.11's location table (co_linetable, Objects/locations.md): the source line of
 * code unit index `unit` of a code object starting at first_line, or 0 when the table gives
 * none (or is malformed). Exposed for the unit tests. */
uint32_t py_linetable_line_311(const uint8_t *table, size_t len, uint32_t first_line,
			       uint32_t unit);

#endif
