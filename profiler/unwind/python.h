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
 * taken (~1 ms, more under load). The program may have moved on: python.c takes each
 * activation's frames from where the sample's stack copy says they were, checks them against
 * it, shows "[Python frames not read]" for those that no longer check, and says so in *result;
 * py_stats counts why. Under ptrace, py_capture copies the chain while the thread is stopped
 * and py_merge reads that copy (py_stack.mem): the frames are the sample's. */
#ifndef CSAMPLER_PYTHON_H
#define CSAMPLER_PYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "base/pywalk.h"
#include "unwind/symbols.h"
#include "unwind/unwind.h"

enum py_merge_result {
	PY_MERGE_NONE = 0,      /* no interpreter activation in the stack: nothing to do */
	PY_MERGE_OK,            /* Python frames put in place of every activation */
	PY_MERGE_CHANGED,       /* merged, but the chain read no longer matched the stack */
	PY_MERGE_UNREADABLE,    /* the chain could not be read: the stack stays native, or (some
				 * activations read) those not read show one frame "[Python frames
				 * not read]" in place of their own, never another function's */
	PY_MERGE_UNSUPPORTED,   /* a CPython version csampler has no layout for: native */
};

/* The sample's copy of the thread's stack, as the kernel took it at the time of the sample. */
struct py_stack {
	const uint8_t *data;
	uint64_t addr, size;            /* the copy starts at the sampled stack pointer */
	bool complete;                  /* the native unwind reached the thread's entry point */
	const uint64_t *regs;           /* the registers at the time of the sample (may be NULL) */
	int nregs;
	/* More of the thread's memory (may be NULL): what py_capture copied while the thread was
	 * stopped (ptrace: as of the sample), or soon after the sample while it ran (perf's
	 * reader, mem_age_ns later: checked as live memory is), read in place of the live
	 * memory it covers. */
	const uint8_t *mem;
	uint64_t mem_size;
	uint64_t age_ns;                /* how long after the sample it is merged (0: unknown) */
	uint64_t mem_age_ns;            /* 0: mem was copied at the stop; else how long after the
					 * sample, the thread running */
	bool torn;                      /* the sampler read the frames at the sample (bpf) and
					 * found them torn (being linked or unlinked): read later,
					 * by count, they could be of another call, so they are not
					 * read (PY_LOST_READ) */
};

/* Why the frames of an interpreter activation were not read (py_stats.lost[]). */
enum py_lost {
	PY_LOST_THREAD,         /* the thread's PyThreadState was not found (exited, not yet set) */
	PY_LOST_READ,           /* a frame or code object could not be read (freed, unmapped) */
	PY_LOST_POPPED,         /* its frames were popped and reused between sample and read */
	PY_LOST_COUNT,          /* no anchor in the stack copy and the chain had fewer runs */
	PY_LOST_UNSUPPORTED,    /* a CPython version without a layout */
	PY_LOST_LATE,           /* no copy of its frames, and merged more than PY_MAX_AGE_NS
				 * after the sample: the chain is of another time by then */
	PY_LOST_N,
};

/* What py_merge did, for the recorder's summary and the measurements in the README. */
struct py_stats {
	uint64_t samples;            /* samples with an interpreter activation */
	uint64_t samples_exact;      /* every activation's frames read, anchored in the copy */
	uint64_t samples_partial;    /* some activations read, some not (marker frame put) */
	uint64_t acts, lost[PY_LOST_N]; /* activations seen, and not read by cause */
	uint64_t gen_suspended;      /* generator frames read after they yielded (accepted) */
	uint64_t relinked;           /* innermost runs whose shim was gone (accepted, moved on) */
	uint64_t outer_checked, outer_moved; /* outer activations checked against the copy, and
				      * found running another code object than read */
	uint64_t reads, read_bytes;  /* process_vm_readv calls and bytes */
	uint64_t codes_checked, codes_read; /* code objects checked (batched), read whole */
	uint64_t captured;           /* samples whose frames were copied at the stop (ptrace) */
	uint64_t copied_running;     /* ... copied soon after the sample, the thread running (perf's
				      * reader): read in place of the live memory, checked as it */
	uint64_t returning;          /* innermost activations shown as their returning frame */
	uint64_t entering;           /* ... as their one frame, still being set up */
	uint64_t at_sample;          /* samples whose frames were read at the sample (bpf) */
	uint64_t gen_resumed;        /* ... of them, 3.11: a generator's activation being entered
				      * or left, its frame found now (py_gen_resumed) */
};

/* A sample whose frames were taken later than this after it (read live when merged, the
 * recorder having fallen behind: start-up, a loaded machine) is not read: the chain read then
 * is of another part of the program. (A sample merged late, its frames copied, keeps them;
 * python.c's PY_CODE_MAX_AGE_NS says which code objects are then trusted.) */
#define PY_MAX_AGE_NS 100000000ull

/* The most py_capture writes: blocks of pages of frame data and the small reads. */
#define PY_CAPTURE_MAX (4 * 4 * 4096 + 4096)

/* While thread tid of pid is stopped (the ptrace sampler's stop, after its stack was copied:
 * stack, got bytes from sp), or as soon after a sample as the reader gets to it (perf: stack
 * NULL), copy its Python frame chain as it is then into buf (cap bytes,
 * at most PY_CAPTURE_MAX used): the thread state's pointer to the current frame, and blocks of
 * pages around each frame not in the stack copy, walked through each frame's previous. A
 * sample carrying it (py_stack.mem) reads its frames as of the sample, not as they are later.
 * Only for threads py_merge has found the thread state of (nothing before: returns 0). Safe
 * to call from another thread than py_merge's. Returns the bytes written. */
size_t py_capture(struct unwind_ctx *ctx, uint32_t pid, uint32_t tid, uint64_t sp,
		  const uint8_t *stack, size_t got, uint8_t *buf, size_t cap);

/* What py_capture copies of one thread: the frame pointer at tstate + off_ptr (or, off_cur not
 * UINT32_MAX, a pointer there to a struct whose + off_cur is the frame), frame_read bytes of
 * each frame, each frame's previous at + off_prev; with code_read, the header (code_read bytes)
 * of each frame's code object (at + off_code) too, so that a sample merged late still checks
 * its code objects as of the copy (the known ones excepted). */
struct py_capture_recipe {
	uint64_t tstate;
	uint32_t off_ptr, off_cur, off_prev, frame_read;
	uint32_t off_code, code_read;
	/* code objects whose header is not copied (known to the merge before this sample:
	 * python.c's known_codes), nknown slots; or NULL */
	const uint64_t *known_codes;
	uint32_t nknown;
	uint32_t code_tag;             /* tag bits of the code pointer (3.14), cleared */
	/* the thread state's native thread id (0: none), copied with off_ptr's word in one
	 * read: the merge checks that the thread state is still the thread's */
	uint32_t off_tid;
};

/* py_capture's walk, exposed for the unit tests: recipe r in process pid. Returns the bytes
 * written to buf. */
size_t py_capture_chain(uint32_t pid, const struct py_capture_recipe *r, uint64_t sp,
			const uint8_t *stack, size_t got, uint8_t *buf, size_t cap);

/* len bytes at addr as py_capture's copy mem (size bytes) holds them into out; false when it
 * does not hold all of them. Exposed for the unit tests. */
bool py_capture_get(const uint8_t *mem, size_t size, uint64_t addr, void *out, size_t len);

/* The counters since py_enable (zero when disabled). */
void py_stats_get(struct unwind_ctx *ctx, struct py_stats *out);

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

/* Whether no location of locs[0, n) is in a CPython runtime (a file with the interpreter's
 * loop), nor a Python frame: py_merge and py_merge_walked leave such a stack as it is, and so
 * they would every other stack of the same locations (record's stack memo). */
bool py_stack_native(struct unwind_ctx *ctx, const struct unwind_loc *locs, int n);

/* A Python frame as the GPU library read it in the target at a launch (inject/protocol.h's
 * gpu_py_frame, which unwind/ does not include): a code object and instruction. */
struct py_ext_frame {
	uint64_t code;                  /* 0: an activation with no frame shown */
	uint32_t unit;                  /* code unit index of the instruction; UINT32_MAX: unknown */
	bool entry;                     /* the outermost frame of one native activation */
	bool generator;                 /* owned by a generator: always shown */
	uint64_t fp;                    /* its code object's PYWALK_CODE_FP when read (bpf: at the
					 * sample), checked against the one named; 0: unknown */
	uint16_t act;                   /* pywalk_frame's act (bpf, 3.14); 0: not known */
	/* code 0 (bpf, 3.14: an activation whose chain began with its entry frame at the sample,
	 * entered or returning): that entry frame's address and the frame it linked to; 0:
	 * not known */
	uint64_t entry_at, caller_at;
};

/* Merge frames[0, nframes) (innermost first, read exactly at the time of locs' stack by the
 * launching thread itself) into the native stack locs[0, n) of pid: names their code objects
 * from the process' memory (process_vm_readv, the code cache of py_merge) and puts each run
 * in place of its native activation, matched by count; outer_cut: the native stack or the
 * frames were cut at their outer end (then aligned from the leaf). Returns the new count,
 * *result as py_merge. */
int py_merge_frames(struct unwind_ctx *ctx, uint32_t pid, const struct py_ext_frame *frames,
		    int nframes, bool outer_cut, struct unwind_loc *locs, int n, int max,
		    enum py_merge_result *result);

/* Where process pid's thread states and frames are, for the BPF program that reads them at the
 * sample (sampler.h's py_where): known once a sample of pid found its interpreter (py_merge).
 * Safe to call from another thread than py_merge's. Returns 0, or -ENOENT. */
int py_where(struct unwind_ctx *ctx, uint32_t pid, struct pywalk_where *out);

/* Merge the frames fr[0, nfr) that base/pywalk.c walked from the chain as it was at the sample
 * (the BPF program read it; cut: at its outer end; first: fr[0]'s address, 0 if unknown) into
 * locs[0, n) of pid, as py_merge_frames does; fp (may be NULL): each frame's code object's PYWALK_CODE_FP then (0: unknown), which
 * the code object named now must still have (then a cached one is not read again); age_ns:
 * how long after the sample they are named (a code object without fp is trusted as py_merge
 * trusts one then). Returns the new count
 * (*result as py_merge), or -1 when pid's interpreter is not known (then py_merge reads them). */
int py_merge_walked(struct unwind_ctx *ctx, uint32_t pid, const struct pywalk_frame *fr,
		    const uint64_t *fp, int nfr, uint64_t first, bool cut, uint64_t age_ns,
		    struct unwind_loc *locs, int n, int max, enum py_merge_result *result);

/* CSAMPLER_GPU_PYTHON's value (inject/protocol.h) for the versions of the layout table, in
 * the order of fields[] there; into out (size len). Returns the length, or -ENOSPC. */
int py_layouts_env(char *out, size_t len);

/* The process exec'd or exited: forget what was learned about its interpreter. */
void py_forget(struct unwind_ctx *ctx, uint32_t pid);

/* Name Python frame id (the offset of a "[python]" location). Returns 0 or -ENOENT. */
int py_frame_symbol(struct unwind_ctx *ctx, uint64_t id, struct sym_frame *out);

/* One CPython version's structure layout: byte offsets of the fields csampler reads. From a
 * table row for 3.11 and 3.12, from the interpreter's own _Py_DebugOffsets for 3.13. An offset
 * named "0: none" is absent from that version. Exposed for the unit tests. */
struct py_layout {
	uint32_t hex_min, hex_max;     /* PY_VERSION_HEX range it applies to */
	const char *name;
	uint32_t runtime_interp_head;  /* _PyRuntimeState.interpreters.head */
	uint32_t interp_next;          /* PyInterpreterState.next */
	uint32_t interp_threads_head;  /* PyInterpreterState.threads.head */
	uint32_t tstate_next;          /* PyThreadState.next */
	uint32_t tstate_cframe;        /* PyThreadState.cframe (3.11, 3.12; 0: none) */
	uint32_t tstate_current_frame; /* PyThreadState.current_frame (3.13; with no cframe) */
	uint32_t tstate_native_tid;    /* PyThreadState.native_thread_id */
	uint32_t tstate_root_cframe;   /* PyThreadState.root_cframe (0: none, no anchoring of
					* activations in the stack copy) */
	uint32_t cframe_current_frame; /* _PyCFrame.current_frame */
	uint32_t cframe_previous;      /* _PyCFrame.previous */
	uint32_t frame_code;           /* _PyInterpreterFrame.f_code (3.13: f_executable) */
	uint32_t frame_previous;       /* _PyInterpreterFrame.previous */
	uint32_t frame_instr;          /* _PyInterpreterFrame.prev_instr (3.13: instr_ptr) */
	uint32_t frame_is_entry;       /* _PyInterpreterFrame.is_entry (bool; 3.11; 0: none) */
	uint32_t frame_owner;          /* _PyInterpreterFrame.owner (char) */
	uint32_t frame_stacktop;       /* _PyInterpreterFrame.stacktop (int; 3.12+; 0: none) */
	uint32_t frame_localsplus;     /* _PyInterpreterFrame.localsplus (3.12+) */
	uint32_t gen_iframe;           /* PyGenObject.gi_iframe: a generator's own frame (3.11+) */
	uint32_t gen_frame_state;      /* PyGenObject.gi_frame_state (int8_t; 3.11; 0: none) */
	uint8_t owner_generator;       /* FRAME_OWNED_BY_GENERATOR */
	uint8_t owner_cstack;          /* FRAME_OWNED_BY_CSTACK: the shim frame an activation
					* pushes under its first frame (3.12+; 0: none); 3.14:
					* FRAME_OWNED_BY_INTERPRETER, the first of two shim owners */
	uint8_t code_tag;              /* tag bits of frame_code, cleared (3.14: _PyStackRef) */
	uint32_t code_qualname, code_filename, code_firstlineno, code_linetable;
	uint32_t code_code;            /* co_code_adaptive: the first code unit */
	uint32_t code_framesize;       /* co_framesize (int, words; 3.13; 0: not used) */
	uint32_t code_firsttraceable;  /* _co_firsttraceable (int, code units; 0: unknown) */
	uint32_t ob_type;              /* PyObject.ob_type */
	uint32_t var_size;             /* PyVarObject.ob_size (of bytes) */
	uint32_t bytes_data;           /* PyBytesObject.ob_sval */
	uint32_t str_length, str_state;/* PyASCIIObject.length, .state */
	uint32_t str_ascii_data;       /* sizeof(PyASCIIObject): compact ASCII data */
	uint32_t str_compact_data;     /* sizeof(PyCompactUnicodeObject): other compact data */
	uint32_t (*line)(const uint8_t *table, size_t len, uint32_t first_line, uint32_t unit);
	/* derived by py_layout_for: bytes read of a frame, a code object, a str header */
	uint32_t frame_read, code_read, str_read;
};

/* The layout of CPython version (PY_VERSION_HEX) into *out: a table row (3.11, 3.12), or for
 * 3.13 the interpreter's _Py_DebugOffsets (debug: the first ndebug bytes of its _PyRuntime,
 * read from the target; the cookie "xdebugpy" and its version are checked). Returns 0;
 * -ENOTSUP for a version csampler has no layout for (before 3.11, after 3.13, a free-threaded
 * build); -EINVAL when 3.13's debug offsets are missing or do not check. */
int py_layout_for(uint32_t version, const uint8_t *debug, size_t ndebug, struct py_layout *out);

/* Where _PyEval_EvalFrameDefault keeps its _PyCFrame local (3.11, 3.12), as a distance below
 * the activation's CFA, fixed for one build of the interpreter: from a sample whose native
 * stack is complete (locs[0, n) with their sp; acts: the indexes of its interpreter
 * activations, innermost first), the one distance (a multiple of 8, within 16 KiB) at which
 * the outermost activation's _PyCFrame in the stack copy s has previous == root (the thread
 * state's root_cframe) and every inner one's previous is the next outer one's. Returns it, or
 * 0 when there is none or more than one. Exposed for the unit tests. */
uint64_t py_cframe_offset_find(const struct py_layout *L, const struct py_stack *s,
			       const struct unwind_loc *locs, int n, const int *acts, int nacts,
			       uint64_t root);

/* Where _PyEval_EvalFrameDefault keeps its entry shim frame (3.13: the local entry_frame,
 * owned by the C stack, whose previous is the frame the next outer activation was running when
 * it called in), as a distance below the activation's CFA: from a sample whose native stack is
 * complete, the one distance (a multiple of 8, within 16 KiB) at which every activation's slot
 * in the stack copy s is such a shim (owner FRAME_OWNED_BY_CSTACK; executable none, the
 * target's Py_None, when not 0), the inner ones' previous a frame, the outermost's 0. Returns
 * it, or 0 when there is none or more than one. Exposed for the unit tests. */
uint64_t py_shim_offset_find(const struct py_layout *L, const struct py_stack *s,
			     const struct unwind_loc *locs, int n, const int *acts, int nacts,
			     uint64_t none);

/* Whether the interpreter of version (PY_VERSION_HEX) is a free-threaded build (3.13t, 3.14t),
 * whose frames csampler does not read yet: from its _Py_DebugOffsets header (debug: the first
 * ndebug bytes of _PyRuntime; may be NULL) or the ABI flag in its file name (path: python3.13t,
 * libpython3.14t.so). Exposed for the unit tests. */
bool py_is_free_threaded(uint32_t version, const uint8_t *debug, size_t ndebug, const char *path);

/* How many bytes of the runtime's start py_layout_for wants for version (0: none). */
size_t py_layout_debug_size(uint32_t version);

/* Decode CPython 3.11's location table (co_linetable, Objects/locations.md): the source line of
 * code unit index `unit` of a code object starting at first_line, or 0 when the table gives
 * none (or is malformed). Exposed for the unit tests. */
uint32_t py_linetable_line_311(const uint8_t *table, size_t len, uint32_t first_line,
			       uint32_t unit);

#endif
