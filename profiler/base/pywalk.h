/* pywalk.h: the one walk of a CPython (3.11-3.14) interpreter frame chain, parameterised by how
 * a frame is read. Compiled into the recorder (unwind/python.c reads another process, or a copy
 * of its memory) and into the in-target library (inject/cupti.c reads its own thread's chain in
 * place), as uftrace compiles its utils into libmcount: libc only, nothing that prints.
 *
 * The chain: each _PyInterpreterFrame links to the frame that called it (previous); one native
 * _PyEval_EvalFrameDefault call (an activation) runs a run of them, whose outermost is marked:
 * 3.11 sets is_entry on it, 3.12+ push a shim frame owned by the C stack (FRAME_OWNED_BY_CSTACK;
 * 3.14: FRAME_OWNED_BY_INTERPRETER) under it. The walk gives each frame's code object and instruction, innermost first, with
 * PYWALK_ENTRY on the outermost of each run; an activation whose run shows no frame (its shim
 * only) gets one frame of code 0. What a code object is, is the caller's to check. */
#ifndef CSAMPLER_PYWALK_H
#define CSAMPLER_PYWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes of one frame the walk reads (frame_read). */
#define PYWALK_FRAME_MAX 512

/* Where the fields the walk reads are in a _PyInterpreterFrame (0: absent in that version). */
struct pywalk_layout {
	uint32_t frame_code, frame_previous, frame_instr;
	uint32_t frame_is_entry;        /* bool (3.11); 0: none */
	uint32_t frame_owner;           /* char */
	uint8_t owner_generator;        /* FRAME_OWNED_BY_GENERATOR */
	uint8_t owner_cstack;           /* FRAME_OWNED_BY_CSTACK (3.12, 3.13), the first owner
					 * that is no Python frame (3.14: INTERPRETER, an
					 * activation's entry frame; CSTACK after it); 0: none */
	uint8_t code_tag;               /* low bits of frame_code that are tags, cleared (3.14's
					 * _PyStackRef: 1; 0 before) */
	uint32_t frame_read;            /* bytes read of a frame: pywalk_frame_read() */
	/* 3.12+: what every shim runs (3.12: the interpreter's trampoline code object; 3.13+:
	 * None), 0 when not known. A frame running it is a shim whatever its owner byte says:
	 * one read while its activation was being entered (linked before its owner was stored:
	 * the compiler orders those stores as it likes) would else join the two activations'
	 * runs into one, the callback's frames filed under its caller's activation. */
	uint64_t trampoline;
};

/* The bytes of a frame that hold every field of L (what frame_read should be). */
uint32_t pywalk_frame_read(const struct pywalk_layout *L);

/* _Py_DebugOffsets (3.13+, at the start of _PyRuntime) begins with a header of the same layout
 * in every version: the cookie "xdebugpy", the version (PY_VERSION_HEX) and free_threaded. */
#define PYWALK_DEBUG_HEADER 24
/* Whether the n bytes at d begin debug offsets the recorder and the library may read for an
 * interpreter of this version: 0; -EINVAL with no cookie (or under PYWALK_DEBUG_HEADER bytes)
 * or another minor version than the binary's (not trusted); -ENOTSUP for a free-threaded build
 * (said first: whatever its version, its layout is not one csampler reads). */
int pywalk_debug_header(const uint8_t *d, size_t n, uint32_t version);

enum pywalk_frame_flags {
	PYWALK_ENTRY = 1 << 0,          /* the outermost frame of one native activation */
	PYWALK_GENERATOR = 1 << 1,      /* owned by a generator */
};

struct pywalk_frame {
	uint64_t code, instr;           /* code 0: an activation that shows no frame */
	uint8_t owner, flags;
	uint16_t act;                   /* set by the bpf backend for 3.14: 1 + the index of the
					 * user frame (leaf 0) whose stack frame holds the entry
					 * frame of this frame's activation; 0: not known */
};

/* Read len bytes at addr into buf; false when they cannot be. */
typedef bool (*pywalk_read_fn)(void *arg, uint64_t addr, void *buf, size_t len);

/* Optional: frame fb (frame_read bytes at addr) is about to be taken; in_run: frames of the
 * same activation were taken before it. May read it again into fb. Returns one of: */
enum pywalk_check {
	PYWALK_TAKE,                    /* take it as fb now holds it */
	PYWALK_STOP_UNKNOWN,            /* one_activation: the run ends before it, entered from a
					 * frame not known (end = PYWALK_ACT_END, entry_prev
					 * PYWALK_PREV_UNKNOWN) */
	PYWALK_FAIL,                    /* the walk fails here (PYWALK_BROKEN) */
};
typedef enum pywalk_check (*pywalk_check_fn)(void *arg, uint64_t addr, uint8_t *fb, bool in_run);

#define PYWALK_PREV_UNKNOWN (UINT64_MAX - 1)

enum pywalk_end {
	PYWALK_CHAIN_END,               /* the chain ended (a frame with no previous) */
	PYWALK_ACT_END,                 /* one_activation: its run ended (entry_prev, entry_at) */
	PYWALK_TRUNCATED,               /* max frames taken, or max_depth frames passed */
	PYWALK_BROKEN,                  /* a frame could not be read or did not check */
};

struct pywalk {
	const struct pywalk_layout *L;
	pywalk_read_fn read;
	pywalk_check_fn check;          /* may be NULL */
	void *arg;                      /* of read and check */
	bool one_activation;            /* stop at the end of the first run: its entry frame (or,
					 * 3.12+, at its shim), or a generator frame with no
					 * previous (it yielded: CPython unlinked it) */
	struct pywalk_frame *out;       /* frames [n, max) written, n advanced */
	int n, max;
	int max_depth;                  /* frames passed at the most (shims included) */
	/* one_activation, PYWALK_ACT_END: the frame the run's entry frame links to (0: none, a
	 * generator that yielded; PYWALK_PREV_UNKNOWN), and the address where the run ended (its
	 * entry frame, or its shim) */
	uint64_t entry_prev, entry_at;
	/* optional (not one_activation): where each shim the walk passed is (3.12+: a local of
	 * the native activation that ran the run it ends), outermost last; nshims counted even
	 * past max_shims */
	uint64_t *shims;
	int nshims, max_shims;
	uint64_t shim_code;             /* out: what the first shim the walk passed (by its owner
					 * byte) runs, 0 when none: for the caller to learn
					 * L->trampoline from, once checked */
	uint64_t last;                  /* out: the address of the last frame read */
};

/* Where a process' thread states and their frame chains are, for a reader outside the
 * recorder's process walk (the BPF program of `--mode bpf` reads them at the sample): from the
 * layout of its CPython version once the recorder found its _PyRuntime. */
struct pywalk_where {
	uint64_t interp_head;           /* the address of _PyRuntime.interpreters.head */
	uint32_t interp_next, interp_threads_head, tstate_next, tstate_native_tid;
	uint32_t tstate_cframe;         /* 3.11, 3.12: the frame is at cframe + cframe_current */
	uint32_t cframe_current_frame, cframe_previous;
	uint32_t tstate_current_frame;  /* 3.13 (tstate_cframe 0) */
	uint32_t code_qualname, code_filename; /* PyCodeObject.co_qualname, co_filename */
	struct pywalk_layout walk;
	bool want_sps;                  /* activations are found by where their entry frames are
					 * (3.14): the frames' stack pointers are needed */
	uint64_t known_ns;              /* when the recorder learned it (CLOCK_MONOTONIC) */
};

/* Whether a frame whose owner is owner is a shim (no Python frame of its own): owner_cstack
 * or the one after it (3.14's CSTACK), no higher (pywalk_owner_bad). */
static inline int pywalk_is_shim(const struct pywalk_layout *L, uint8_t owner)
{
	return L->owner_cstack && owner >= L->owner_cstack && owner <= L->owner_cstack + 1;
}

/* Whether owner is no frame owner at all (3.12+): memory read where a frame was, now holding
 * something else (a shim's C stack reused, read after the sample). */
static inline int pywalk_owner_bad(const struct pywalk_layout *L, uint8_t owner)
{
	return L->owner_cstack && owner > L->owner_cstack + 1;
}
/* A code object's fingerprint: its co_qualname and co_filename pointers, folded (the BPF
 * program computes the same). The strings live as long as the code object: an object at the
 * same address with the same fingerprint names the same function in the same file. */
#define PYWALK_CODE_FP(qualname, filename) \
	((uint64_t)(qualname) ^ ((uint64_t)(filename) << 17 | (uint64_t)(filename) >> 47))

/* Walk from frame (the innermost) outward. Frames taken before a BROKEN or TRUNCATED end stay
 * in out. */
enum pywalk_end pywalk_walk(struct pywalk *w, uint64_t frame);

#endif
