/* python.c: CPython frames merged into native stacks (python.h).
 *
 * How the interpreter is found: a module of the sampled stack that defines both
 * _PyEval_EvalFrameDefault and _PyRuntime (the python binary, or libpython) is the runtime. Its
 * load bias in the process (from /proc/PID/maps) turns the link-time address of _PyRuntime into
 * the address of the runtime state in the target; Py_Version (3.11+, read from the file) says
 * which structure layout applies. From there, everything is read from the target's memory with
 * process_vm_readv:
 *   _PyRuntime.interpreters.head -> PyInterpreterState (-> next) -> threads.head ->
 *   PyThreadState (-> next) with native_thread_id == the sampled tid -> cframe->current_frame
 *   (3.13: current_frame) ->
 *   _PyInterpreterFrame (-> previous): f_code (PyCodeObject: co_qualname, co_filename,
 *   co_firstlineno, co_linetable) and prev_instr (the instruction being run -> its line).
 * One native _PyEval_EvalFrameDefault call (an activation) runs a run of Python frames linked
 * by `previous`; the outermost is marked (3.11: is_entry; 3.12+: the next frame is a shim owned
 * by the C stack, FRAME_OWNED_BY_CSTACK).
 *
 * Which frames an activation ran at the time of the sample: the frames are read after the
 * sample: under ptrace copied at the stop (py_capture), in perf mode copied by the reader
 * thread as it reads the sample (~0.1 ms later, the thread running on), else read when the
 * recorder gets to the sample (about a millisecond later). The sample's copy of the C stack says
 * where each activation was: in 3.11 and 3.12 its _PyCFrame (a local at a fixed distance below
 * its CFA, learned once from a complete sample) holds its innermost frame; in 3.13 its entry
 * shim frame (likewise learned) holds the frame the next outer activation was running, and the
 * innermost activation's frames are the chain as it is now, down to its shim. The shims of
 * 3.12 and 3.13 are read from the copy. Each activation's frames are then walked and kept only
 * when they still link as they did (py_runs_anchored), when the code object its frame runs is
 * the one whose instruction pointer the copy or the registers hold (py_check_outer), or, for a
 * generator that yielded since, when its caller is found (py_gen_caller). One not kept gets
 * the frame "[Python frames not read]" (py_marker_id). Without an anchor (before it is learned)
 * the chain as it is when read is matched to the activations by count (PY_MERGE_CHANGED when
 * they differ). Frames are read in blocks of pages and the code objects checked in one batched
 * process_vm_readv per sample (py_frame_bytes, py_codes_check), so a deep stack costs as few
 * reads as a shallow one.
 *
 * Safety: the target runs while it is read. Every pointer read is bounded (a fixed number of
 * interpreters, threads and frames, lengths capped), every object is checked against its type
 * object's address (PyCode_Type, PyUnicode_Type) before its fields are trusted, and a failed
 * read only makes the sample native (PY_MERGE_UNREADABLE). Nothing here can loop forever or
 * read the recorder's own memory.
 *
 * Versions (py_layout_for): 3.11 and 3.12 are rows of a table, offsets from each version's
 * headers; 3.13 takes them from the interpreter's own _Py_DebugOffsets (cookie "xdebugpy", at
 * the start of _PyRuntime, read from the target), whose own layout is 3.13's. 3.11 is Debian's
 * and tested by every test run; 3.12 and 3.13 are tested where pyenv's builds are installed
 * (tests/python/t-python-versions.sh). Any other version, or a 3.13 whose debug offsets do not
 * check, gets one warning line and native stacks.
 *
 * Hand-written, because no library reads another process' CPython state (py-spy and austin
 * do, as programs; neither is a C library), and the location-table format is CPython's own. */
#include "unwind/python.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/cs.h"
#include "base/pywalk.h"
#include "format/datafile.h"
#include "unwind/elfcache.h"

#define PY_MAX_INTERPS 64
#define PY_MAX_THREADS 4096
#define PY_MAX_FRAMES 1024
#define PY_MAX_STRING 1024
#define PY_MAX_LINETABLE (256u << 10)
#define PY_TCACHE 64
#define PY_MAX_WALKED 256        /* frames py_merge_walked takes (the BPF program reads 128) */
#define PY_MAX_CFRAME_OFF 16384u /* the interpreter's _PyCFrame local: within this of its CFA */
#define PY_LEARN_TRIES 256       /* samples tried for learning where it is */
#define PY_MAX_OBJECT 512        /* bytes read of one frame, code object or str header */
#define PY_PAGE 4096u
#define PY_BLOCK_PAGES 4         /* pages read at once around a frame (frame data is contiguous) */
#define PY_NBLOCKS 8             /* blocks kept for one sample */
#define PY_BATCH 64              /* code objects checked in one process_vm_readv */
#define PY_CAP_CODES 64          /* code object headers py_capture copies at most */
#define PY_KNOWN_CODES 4096      /* code objects py_capture knows py_merge has cached */
#define PY_CAP_PAGES 2           /* pages py_capture copies at once around a frame: fewer
				  * than the reader's blocks, as the thread waits (measured:
				  * 8.9 KiB a stop on deep.py, 13.7 with 4) */
#define PY_RECIPES 1024          /* threads py_capture knows how to copy (by tid) */
#define PY_WHERES 256            /* processes py_where knows (by pid: a collision forgets one,
				  * whose frames are then read by py_merge only) */
#define PY_FROZEN_MAX 128        /* blocks of one sample's py_capture copy (frames, code objects) */

/* The versions whose layout is a row of this table; 3.13 is built from _Py_DebugOffsets
 * (py_layout_from_debug). Offsets from each version's headers (pycore_runtime.h,
 * pycore_interp.h, cpython/pystate.h, pycore_frame.h, cpython/code.h, cpython/unicodeobject.h)
 * for a default (not debug, not free-threaded) x86-64 build; fixed within a minor version. */
static const struct py_layout py_layouts[] = {
	{
		/* CPython 3.11: Debian's 3.11.2 and 3.11.7; tested. An entry frame has is_entry. */
		.hex_min = 0x030b0000, .hex_max = 0x030bffff, .name = "3.11",
		.runtime_interp_head = 40,
		.interp_next = 0, .interp_threads_head = 16,
		.tstate_next = 8, .tstate_cframe = 56, .tstate_native_tid = 160,
		.tstate_root_cframe = 336, .cframe_current_frame = 8, .cframe_previous = 16,
		.frame_code = 32, .frame_previous = 48, .frame_instr = 56, .frame_is_entry = 68,
		.frame_owner = 69, .owner_generator = 1,
		.frame_stacktop = 64, .frame_localsplus = 72, .gen_iframe = 80, .gen_frame_state = 75,
		.code_qualname = 128, .code_filename = 112, .code_firstlineno = 72,
		.code_linetable = 136, .code_code = 184, .code_firsttraceable = 168,
		.ob_type = 8, .var_size = 16, .bytes_data = 32,
		.str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72,
		.line = py_linetable_line_311,
	},
	{
		/* CPython 3.12 (3.12.1's headers; tested with pyenv's 3.12.1 where installed).
		 * Each activation pushes a shim frame owned by the C stack (FRAME_OWNED_BY_CSTACK)
		 * under its first frame; the location table is 3.11's format. */
		.hex_min = 0x030c0000, .hex_max = 0x030cffff, .name = "3.12",
		.runtime_interp_head = 40,
		.interp_next = 0, .interp_threads_head = 72,
		.tstate_next = 8, .tstate_cframe = 56, .tstate_native_tid = 144,
		.tstate_root_cframe = 272, .cframe_current_frame = 0, .cframe_previous = 8,
		.frame_code = 0, .frame_previous = 8, .frame_instr = 56,
		.frame_owner = 70, .owner_generator = 1, .owner_cstack = 3,
		.frame_stacktop = 64, .frame_localsplus = 72, .gen_iframe = 72,
		.code_qualname = 128, .code_filename = 112, .code_firstlineno = 68,
		.code_linetable = 136, .code_code = 192, .code_firsttraceable = 176,
		.code_framesize = 76,
		.ob_type = 8, .var_size = 16, .bytes_data = 32,
		.str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_compact_data = 56,
		.line = py_linetable_line_311,
	},
};

/* _Py_DebugOffsets: its header (cookie "xdebugpy", version, free_threaded) is the same in 3.13
 * and 3.14 (checked by base/pywalk.c's pywalk_debug_header, as the GPU library checks it);
 * the rest is read where each version lays it: 3.13's Include/internal/pycore_runtime.h, and
 * 3.14's Include/internal/pycore_debug_offsets.h (read from Debian's libpython3.14-dev
 * 3.14.10 with offsetof), whose sections grew fields (the interpreter's GIL and code
 * generation, the thread's datastack chunk, the frame's stackpointer and tlbc index, the code
 * object's co_tlbc), so that every offset past the header moved. */
enum py_dbg_version { PY_DBG_313, PY_DBG_314, PY_DBG_VERSIONS };
static const uint16_t py_dbg_size[PY_DBG_VERSIONS] = { 584, 760 };

/* The fields csampler takes from it: where each lies, by version, and which field of struct
 * py_layout it gives. */
enum py_dbg_field {
	PY_DBG_RUNTIME_INTERP_HEAD, PY_DBG_INTERP_NEXT, PY_DBG_INTERP_THREADS_HEAD,
	PY_DBG_TSTATE_NEXT, PY_DBG_TSTATE_CURRENT_FRAME, PY_DBG_TSTATE_NATIVE_TID,
	PY_DBG_FRAME_EXECUTABLE, PY_DBG_FRAME_PREVIOUS, PY_DBG_FRAME_INSTR, PY_DBG_FRAME_OWNER,
	PY_DBG_FRAME_LOCALSPLUS, PY_DBG_CODE_QUALNAME, PY_DBG_CODE_FILENAME,
	PY_DBG_CODE_FIRSTLINENO, PY_DBG_CODE_LINETABLE, PY_DBG_CODE_CODE, PY_DBG_OB_TYPE,
	PY_DBG_BYTES_SIZE, PY_DBG_BYTES_DATA, PY_DBG_STR_LENGTH, PY_DBG_STR_STATE,
	PY_DBG_STR_ASCII_SIZE, PY_DBG_NFIELDS
};
#define PY_DBG_AT(name, field, v313, v314) [name] = { offsetof(struct py_layout, field), { v313, v314 } }
static const struct {
	uint16_t field;                  /* offsetof(struct py_layout, ...) */
	uint16_t at[PY_DBG_VERSIONS];    /* its offset in _Py_DebugOffsets */
} py_dbg_fields[PY_DBG_NFIELDS] = {
	PY_DBG_AT(PY_DBG_RUNTIME_INTERP_HEAD, runtime_interp_head, 40, 40),
	PY_DBG_AT(PY_DBG_INTERP_NEXT, interp_next, 64, 64),
	PY_DBG_AT(PY_DBG_INTERP_THREADS_HEAD, interp_threads_head, 72, 72),
	PY_DBG_AT(PY_DBG_TSTATE_NEXT, tstate_next, 168, 192),
	PY_DBG_AT(PY_DBG_TSTATE_CURRENT_FRAME, tstate_current_frame, 184, 208),
	PY_DBG_AT(PY_DBG_TSTATE_NATIVE_TID, tstate_native_tid, 200, 224),
	PY_DBG_AT(PY_DBG_FRAME_EXECUTABLE, frame_code, 240, 264),
	PY_DBG_AT(PY_DBG_FRAME_PREVIOUS, frame_previous, 232, 256),
	PY_DBG_AT(PY_DBG_FRAME_INSTR, frame_instr, 248, 272),
	PY_DBG_AT(PY_DBG_FRAME_OWNER, frame_owner, 264, 288),
	PY_DBG_AT(PY_DBG_FRAME_LOCALSPLUS, frame_localsplus, 256, 280),
	PY_DBG_AT(PY_DBG_CODE_QUALNAME, code_qualname, 296, 336),
	PY_DBG_AT(PY_DBG_CODE_FILENAME, code_filename, 280, 320),
	PY_DBG_AT(PY_DBG_CODE_FIRSTLINENO, code_firstlineno, 312, 352),
	PY_DBG_AT(PY_DBG_CODE_LINETABLE, code_linetable, 304, 344),
	PY_DBG_AT(PY_DBG_CODE_CODE, code_code, 344, 384),
	PY_DBG_AT(PY_DBG_OB_TYPE, ob_type, 360, 408),
	PY_DBG_AT(PY_DBG_BYTES_SIZE, var_size, 520, 600),
	PY_DBG_AT(PY_DBG_BYTES_DATA, bytes_data, 528, 608),
	PY_DBG_AT(PY_DBG_STR_LENGTH, str_length, 552, 632),
	PY_DBG_AT(PY_DBG_STR_STATE, str_state, 544, 624),
	PY_DBG_AT(PY_DBG_STR_ASCII_SIZE, str_ascii_data, 560, 640),
};

static unsigned py_dbg_at(int v, enum py_dbg_field f)
{
	return py_dbg_fields[f].at[v];
}

/* Which layout of _Py_DebugOffsets a version has, or -1 (before 3.13, or 3.15 and later). */
static int py_dbg_version_of(uint32_t version)
{
	return (version >> 16) == 0x030d ? PY_DBG_313 : (version >> 16) == 0x030e ? PY_DBG_314 : -1;
}

static uint32_t py_max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* The bytes to read of each object: up to the last field used. */
static void py_layout_derive(struct py_layout *L)
{
	L->frame_read = py_max_u32(py_max_u32(L->frame_code, L->frame_previous), L->frame_instr) + 8;
	L->frame_read = py_max_u32(L->frame_read, py_max_u32(L->frame_owner, L->frame_is_entry) + 1);
	L->code_read = py_max_u32(py_max_u32(L->code_qualname, L->code_filename), L->code_linetable) + 8;
	L->code_read = py_max_u32(L->code_read, py_max_u32(L->code_firstlineno, L->code_firsttraceable) + 4);
	L->code_read = py_max_u32(L->code_read, L->code_framesize + 4);
	L->code_read = py_max_u32(L->code_read, L->ob_type + 8);
	L->str_read = py_max_u32(py_max_u32(L->str_length, L->ob_type) + 8, L->str_state + 4);
}

static uint64_t py_dbg_u64(const uint8_t *d, size_t off)
{
	uint64_t v;
	memcpy(&v, d + off, sizeof(v));
	return v;
}

/* 3.13 and 3.14: the layout from the interpreter's _Py_DebugOffsets. Every offset csampler
 * uses is taken from it, but a few it does not give: _co_firsttraceable (only used to hide a
 * frame still being set up; the headers: 184 in 3.13, 192 in 3.14), the owner values
 * (pycore_frame.h; 3.14's pycore_interpframe_structs.h, where an activation's entry frame is
 * owned by the interpreter, 3, and FRAME_OWNED_BY_CSTACK is 4) and 3.14's tag bit of
 * f_executable (a _PyStackRef, pycore_stackref.h's Py_TAG_BITS). 3.14's frame has a
 * stackpointer where 3.13's has stacktop: a yielded generator's caller is not looked for
 * there (frame_stacktop 0). */
static int py_layout_from_debug(uint32_t version, const uint8_t *d, size_t n, struct py_layout *L)
{
	int v = py_dbg_version_of(version);
	bool v14 = v == PY_DBG_314;
	if (v < 0 || !d || n < py_dbg_size[v])
		return -EINVAL;
	int err = pywalk_debug_header(d, n, version);
	if (err)
		return err;
	*L = (struct py_layout){
		.hex_min = version & 0xffff0000u, .hex_max = version | 0xffffu,
		.name = v14 ? "3.14" : "3.13",
		.owner_generator = 1, .owner_cstack = 3, .code_tag = v14 ? 1 : 0,
		/* not in the debug offsets: pycore_frame.h (3.14: pycore_interpframe_structs.h),
		 * pycore_genobject.h and pycore_code.h */
		.frame_stacktop = v14 ? 0 : 64, .gen_iframe = 72,
		.code_firsttraceable = v14 ? 192 : 184,
		.line = py_linetable_line_311,
	};
	for (size_t i = 0; i < PY_DBG_NFIELDS; i++) {
		uint64_t value = py_dbg_u64(d, py_dbg_fields[i].at[v]);
		/* Field offsets within a structure (the interpreter state is some KiB): a value
		 * past 1 MiB is not one. The objects read whole are bounded by py_layout_for. */
		if (value > (1u << 20))
			return -EINVAL;
		uint32_t v32 = (uint32_t)value;
		memcpy((uint8_t *)L + py_dbg_fields[i].field, &v32, sizeof(v32));
	}
	/* co_framesize follows co_firstlineno; PyCompactUnicodeObject is PyASCIIObject, then
	 * utf8_length and utf8 */
	L->code_framesize = L->code_firstlineno + 8;
	L->str_compact_data = L->str_ascii_data + 16;
	return 0;
}

size_t py_layout_debug_size(uint32_t version)
{
	/* 3.15 and later: only the header (cookie, version, free_threaded), to say why */
	int v = py_dbg_version_of(version);
	return v >= 0 ? py_dbg_size[v] : version >= 0x030f0000 ? PYWALK_DEBUG_HEADER : 0;
}

bool py_is_free_threaded(uint32_t version, const uint8_t *debug, size_t ndebug, const char *path)
{
	/* _Py_DebugOffsets (3.13+) starts with the cookie, the version and free_threaded */
	if (version >= 0x030d0000 && pywalk_debug_header(debug, ndebug, version) == -ENOTSUP)
		return true;
	/* python3.13t, libpython3.14t.so.1.0: the ABI flag "t" after the version */
	const char *b = path ? strrchr(path, '/') : NULL, *v;
	b = b ? b + 1 : path;
	unsigned major, minor;
	int end = 0;
	if (b && (v = strstr(b, "python")) && sscanf(v + 6, "%u.%u%n", &major, &minor, &end) == 2 &&
	    v[6 + end] == 't')
		return true;
	return false;
}

int py_layout_for(uint32_t version, const uint8_t *debug, size_t ndebug, struct py_layout *out)
{
	int err = -ENOTSUP;

	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++)
		if (version >= py_layouts[i].hex_min && version <= py_layouts[i].hex_max) {
			*out = py_layouts[i];
			err = 0;
		}
	if ((version >> 16) == 0x030d || (version >> 16) == 0x030e)
		err = py_layout_from_debug(version, debug, ndebug, out);
	if (!err) {
		/* Every field is read from a buffer of PY_MAX_OBJECT bytes. */
		py_layout_derive(out);
		if (out->frame_read > PY_MAX_OBJECT || out->code_read > PY_MAX_OBJECT ||
		    out->str_read > PY_MAX_OBJECT || out->str_compact_data > PY_MAX_OBJECT)
			err = -EINVAL;
	}
	return err;
}

/* 3.14 whose interpreter loop has no symbol: the call sites of it learned (the wrapper
 * _PyEval_EvalFrameDefault's, a generator's resume) */
#define PY_LOOP_CALLERS 4
#define PY_POPPED_HINTS 8   /* code objects py_code_holding tries first (a power of two) */

/* What a module of the unwinder's table is to Python (by module id). */
struct py_module_info {
	uint8_t state;                 /* 0 not looked at, 1 not a runtime, 2 a runtime */
	uint64_t eval_lo, eval_hi;     /* _PyEval_EvalFrameDefault as file offsets [lo, hi) */
	uint64_t runtime, code_type, unicode_type; /* link-time addresses */
	uint32_t version;              /* PY_VERSION_HEX, 0 when unknown */
	uint64_t cframe_off;           /* _PyEval_EvalFrameDefault's _PyCFrame local is at its
					* CFA - cframe_off; 0 while not learned */
	uint16_t learn_left;           /* samples left to learn it from */
	uint64_t none;                 /* _Py_NoneStruct (link-time): a 3.13 shim's executable */
	uint64_t shim_off;             /* 3.13, 3.14: its entry shim frame local at CFA - shim_off */
	uint64_t shim_cand;            /* 3.14: shim_off as the last samples had it, shim_seen */
	uint16_t shim_seen;            /* times in a row, learned at 8 */
	uint64_t loop_callers[PY_LOOP_CALLERS]; /* 3.14: where activations' native frames
					* were called from (their callers' offsets), as learned */
};

struct py_code {                       /* a code object seen in a process */
	uint64_t addr, qualname, filename, linetable;
	uint32_t first_line;
	int32_t first_traceable;       /* _co_firsttraceable */
	uint32_t framesize;            /* co_framesize (3.13), 0 when not used */
	uint64_t ncode;                /* code units (the object's ob_size) */
	const char *name, *file;       /* interned */
	uint8_t *table;
	size_t ntable;
	uint64_t checked;              /* the sample (py_state.stamp) that last checked it */
	uint64_t seen_ns;              /* when it was read whole (CLOCK_MONOTONIC) */
};

/* A sample merged later than this after it was taken: a code object read now but not known
 * (read whole) before the sample was taken is not trusted. Its frames may be exact (copied at
 * the stop, or by perf's reader), but the code object is read at the merge: freed since, its
 * address may hold another one (a module's code is freed after its import). Measured: start-up
 * samples merged 46-870 ms late named an imported module's code deep.py's sort_keys. */
#define PY_CODE_MAX_AGE_NS 10000000ull

enum py_proc_state { PY_PROC_READY = 1, PY_PROC_FAILED, PY_PROC_UNSUPPORTED };

/* One sample's memory: its stack copy (as of the sample) and what py_capture copied at the
 * stop (as of the sample too) or soon after the sample (perf's reader: as live memory), read
 * in place of the live memory (py_frozen_get). */
struct py_frozen {
	const struct py_stack *stack;
	bool at_stop;                  /* copied while the thread was stopped: as of the sample */
	int n;
	struct { uint64_t addr, len; const uint8_t *data; } b[PY_FROZEN_MAX];
};

/* What py_capture needs to copy one thread's frames, set by py_merge once it found the thread
 * state: the frame pointer is at tstate + off_ptr (3.13), or the _PyCFrame pointer there and
 * the frame at its + off_cur (3.11, 3.12); each frame's previous at + off_prev. */
struct py_recipe {
	uint32_t pid, tid;
	struct py_capture_recipe c;
};

struct py_proc {
	uint32_t pid;
	const struct py_frozen *frozen; /* the sample's, while py_merge reads one (or NULL) */
	enum py_proc_state state;
	const struct py_layout *layout; /* &own */
	struct py_layout own;
	struct pywalk_layout walk;     /* own's frame fields, for pywalk */
	uint64_t runtime, code_type, unicode_type; /* addresses in the target */
	uint64_t none;                 /* Py_None in the target, 0 when unknown */
	struct { uint32_t tid; uint64_t tstate; } tcache[PY_TCACHE];
	struct cs_hash codes;    /* address -> struct py_code */
	/* the code objects py_code_holding found last (hints, newest at popped_next - 1) */
	uint64_t popped_code[PY_POPPED_HINTS];
	unsigned popped_next;
	bool late;                     /* the sample being merged is older than PY_CODE_MAX_AGE_NS */
	uint64_t sample_ns;            /* ... and when it was taken (CLOCK_MONOTONIC) */
	struct py_stats *stats;        /* the context's */
};

struct py_frame_rec {
	const char *name, *file;
	uint32_t line;
};

/* One sample's activations as its stack copy anchors them (py_runs_anchored), innermost
 * first; scratch of the py_state. */
struct py_anchor {
	const struct py_stack *s;
	uint64_t ts;                   /* the thread state */
	bool shims;                    /* 3.13: anchored by entry shims, not by _PyCFrames */
	int nacts, nnow;
	uint64_t cf[PY_MAX_FRAMES];    /* its _PyCFrame (3.11, 3.12) or entry shim (3.13) */
	uint64_t cur[PY_MAX_FRAMES];   /* its innermost frame at the time of the sample (3.13's
					* innermost activation: as read) */
	uint64_t want[PY_MAX_FRAMES];  /* the frame its entry frame linked to then */
	uint64_t now_addr[PY_MAX_FRAMES], now_cur[PY_MAX_FRAMES]; /* _PyCFrames as read (nnow) */
	uint64_t frame_now;            /* 3.13: the thread's current frame as read (0: not
					* confirmed) */
};

struct py_state {
	struct py_module_info *mods;
	size_t nmods;
	struct cs_hash procs;
	struct py_frame_rec *frames;   /* by id */
	size_t nframes, cap_frames;
	struct cs_hash frame_ids;/* (name, file, line) -> id + 1 */
	uint32_t module;               /* "[python]" */
	uint32_t warned_version;       /* last unsupported version warned about */
	uint32_t marker_id;            /* "[Python frames not read]" + 1, 0 until needed */
	int64_t version_override;      /* CSAMPLER_PYTHON_VERSION (tests), or -1 */
	/* scratch for one sample */
	uint32_t *ids;                 /* Python frame ids, innermost first */
	uint8_t *entry;                /* is_entry of each */
	struct pywalk_frame *raw;      /* what the walk read of each frame (its code object and
					* instruction), named once the sample's code objects have
					* been checked together (py_name_frames) */
	struct unwind_loc *out;
	uint64_t stamp;                /* samples merged: a code object is checked once a sample */
	/* Memory of the target read for this sample: frame data in blocks of pages, so that a
	 * chain of frames in one data-stack chunk costs one process_vm_readv, not one each. */
	struct py_block { uint64_t addr, len; uint8_t data[PY_BLOCK_PAGES * PY_PAGE]; } *blocks;
	int nblocks;
	const struct py_stack *copy;   /* the sample's stack copy (may be NULL) */
	uint64_t cstack_lo, cstack_hi; /* the thread's C stack about the sample's (the copy's
					* range and PY_CSTACK_BELOW under it; 0, 0: unknown) */
	struct py_stats stats;
	uint8_t (*code_bufs)[PY_MAX_OBJECT]; /* PY_BATCH code object headers */
	struct py_frozen frozen;       /* the sample's memory as of the sample */
	struct py_anchor *anchor;      /* py_runs_anchored's */
	/* py_capture's recipes, by tid % PY_RECIPES: written by py_merge, read by the sampler's
	 * thread at each stop, under recipes_lock */
	pthread_mutex_t recipes_lock;
	struct py_recipe *recipes;
	/* The code objects py_merge has cached (py_known_key, by its hash % PY_KNOWN_CODES),
	 * written by py_merge, read by py_capture (atomic loads and stores): a sample merged
	 * late trusts those known before it, so py_capture copies only the others' headers. */
	uint64_t *known_codes;
	/* py_where's answers, by pid % PY_WHERES (pid 0: none), under recipes_lock too */
	struct py_where_slot { uint32_t pid; struct pywalk_where w; } *wheres;
};

/* ------------------------------------------------------------------------------------------ */
/* The 3.11 location table */

static bool py_varint(const uint8_t *t, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > 28)
			return false;
		b = t[(*pos)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = v;
	return true;
}

static bool py_svarint(const uint8_t *t, size_t len, size_t *pos, int32_t *out)
{
	uint32_t v;

	if (!py_varint(t, len, pos, &v))
		return false;
	*out = (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
	return true;
}

/* Entries: a first byte 1cccclll (code c, l + 1 code units), then per code: 15 no location;
 * 14 long form (svarint line delta, varint end line delta, column + 1, end column + 1);
 * 13 no column (svarint line delta); 10-12 one line (delta c - 10, two column bytes);
 * 0-9 short form (delta 0, one column byte). */
uint32_t py_linetable_line_311(const uint8_t *t, size_t len, uint32_t first_line, uint32_t unit)
{
	size_t pos = 0;
	int64_t line = first_line;
	uint64_t addr = 0;

	while (pos < len) {
		uint8_t b = t[pos++];
		if (!(b & 0x80))
			return 0;
		unsigned code = (b >> 3) & 15, length = (b & 7) + 1;
		bool has_line = true;
		int32_t delta = 0;
		uint32_t skip;
		switch (code) {
		case 15:
			has_line = false;
			break;
		case 14:
			if (!py_svarint(t, len, &pos, &delta) || !py_varint(t, len, &pos, &skip) ||
			    !py_varint(t, len, &pos, &skip) || !py_varint(t, len, &pos, &skip))
				return 0;
			break;
		case 13:
			if (!py_svarint(t, len, &pos, &delta))
				return 0;
			break;
		case 10: case 11: case 12:
			delta = (int32_t)code - 10;
			pos += 2;
			break;
		default:
			pos += 1;
			break;
		}
		line += delta;
		if (unit < addr + length)
			return has_line && line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0;
		addr += length;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading the target */

static bool py_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!addr || addr >= (1ull << 47))
		return false;
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* len bytes at addr as of the copy: from the sample's stack copy (a copy made at the stop) or
 * what py_capture copied; false when neither holds all of them. */
static bool py_frozen_get(const struct py_frozen *fz, uint64_t addr, void *buf, size_t len)
{
	/* the stack copy is of the time of the sample: the same time only for a copy made at
	 * the stop (a copy made later holds the C stack it needs as it was then) */
	const struct py_stack *s = fz->at_stop ? fz->stack : NULL;

	if (s && s->data && addr >= s->addr && addr - s->addr < s->size &&
	    s->size - (addr - s->addr) >= len) {
		memcpy(buf, s->data + (addr - s->addr), len);
		return true;
	}
	for (int i = 0; i < fz->n; i++)
		if (addr >= fz->b[i].addr && addr - fz->b[i].addr < fz->b[i].len &&
		    fz->b[i].len - (addr - fz->b[i].addr) >= len) {
			memcpy(buf, fz->b[i].data + (addr - fz->b[i].addr), len);
			return true;
		}
	return false;
}

/* Index the blocks of a sample's py_capture copy (py_stack.mem) into fz. */
static void py_frozen_set(struct py_frozen *fz, const struct py_stack *s)
{
	fz->stack = s;
	fz->at_stop = s && s->mem && !s->mem_age_ns;
	fz->n = 0;
	for (uint64_t at = 0; s && s->mem && at + 16 <= s->mem_size && fz->n < PY_FROZEN_MAX;) {
		uint64_t addr, len;
		memcpy(&addr, s->mem + at, 8);
		memcpy(&len, s->mem + at + 8, 8);
		at += 16;
		if (len > s->mem_size - at)
			break;
		fz->b[fz->n].addr = addr;
		fz->b[fz->n].len = len;
		fz->b[fz->n++].data = s->mem + at;
		at += (len + 7) & ~7ull;
	}
}

/* py_read of process p, counted in the stats; as of the sample where the sample's copies hold
 * it. */
static bool py_rd(struct py_proc *p, uint64_t addr, void *buf, size_t len)
{
	if (p->frozen && py_frozen_get(p->frozen, addr, buf, len))
		return true;
	p->stats->reads++;
	p->stats->read_bytes += len;
	return py_read(p->pid, addr, buf, len);
}

static bool py_rd_ptr(struct py_proc *p, uint64_t addr, uint64_t *out)
{
	return py_rd(p, addr, out, sizeof(*out));
}

/* The page(s) holding [addr, addr + len) (len <= PY_PAGE) and up to pages - 1 more below them
 * (a data-stack chunk grows upward: the outer frames are there), asked top first in one
 * process_vm_readv, which stops at the first page not mapped, into data (pages * PY_PAGE
 * bytes, pages <= PY_BLOCK_PAGES). Returns the bytes read, now at data's start and at *at in
 * the target; 0 when the page(s) holding the range could not be read. */
static uint64_t py_read_pages(pid_t pid, uint64_t addr, size_t len, int pages, uint8_t *data,
			      uint64_t *at)
{
	uint64_t first = addr & ~(uint64_t)(PY_PAGE - 1);
	int above = ((addr + len - 1) & ~(uint64_t)(PY_PAGE - 1)) != first;
	uint64_t below = (uint64_t)(pages - 1 - above);
	if (first / PY_PAGE < below)
		below = first / PY_PAGE;
	uint64_t lo = first - below * PY_PAGE;
	struct iovec local[PY_BLOCK_PAGES], remote[PY_BLOCK_PAGES];
	int k = 0;

	for (uint64_t pg = first; k < 1 + above; pg += PY_PAGE, k++) {
		local[k] = (struct iovec){ data + (pg - lo), PY_PAGE };
		remote[k] = (struct iovec){ (void *)(uintptr_t)pg, PY_PAGE };
	}
	for (uint64_t i = 1; i <= below; i++, k++) {
		local[k] = (struct iovec){ data + (first - i * PY_PAGE - lo), PY_PAGE };
		remote[k] = (struct iovec){ (void *)(uintptr_t)(first - i * PY_PAGE), PY_PAGE };
	}
	ssize_t got = process_vm_readv(pid, local, (unsigned long)k, remote, (unsigned long)k, 0);
	int full = got > 0 ? (int)(got / PY_PAGE) : 0;
	if (full < 1 + above)
		return 0;
	*at = first - (uint64_t)(full - 1 - above) * PY_PAGE;
	memmove(data, data + (*at - lo), (size_t)full * PY_PAGE);
	return (uint64_t)full * PY_PAGE;
}

/* len bytes of a frame at addr, from the pages read for this sample or with a block of pages
 * around it: the page holding it (and the next when it crosses into it) then the pages below,
 * where a data-stack chunk (which grows upward) keeps the outer frames. The pages are asked
 * in that order in one process_vm_readv, which stops at the first that is not mapped. */
static bool py_frame_bytes(struct py_state *st, struct py_proc *p, uint64_t addr, void *buf,
			   size_t len)
{
	const struct py_stack *s = st->copy;

	/* copied while the thread was stopped (ptrace): the frames as of the sample */
	if (p->frozen && py_frozen_get(p->frozen, addr, buf, len))
		return true;
	/* 3.12+: an activation's shim frame is a local of its C stack frame, which the sample's
	 * copy holds as it was at the time of the sample (the thread's C stack is reused as
	 * soon as the activation returns) */
	if (s && addr >= s->addr && addr - s->addr < s->size && s->size - (addr - s->addr) >= len) {
		memcpy(buf, s->data + (addr - s->addr), len);
		return true;
	}
	for (int i = 0; i < st->nblocks; i++) {
		const struct py_block *b = &st->blocks[i];
		if (addr >= b->addr && addr - b->addr <= b->len && b->len - (addr - b->addr) >= len) {
			memcpy(buf, b->data + (addr - b->addr), len);
			return true;
		}
	}
	if (!addr || addr >= (1ull << 47) || len > PY_PAGE)
		return false;
	struct py_block *b = &st->blocks[st->nblocks < PY_NBLOCKS ? st->nblocks++
								   : (int)(st->stamp % PY_NBLOCKS)];
	st->stats.reads++;
	b->len = py_read_pages((pid_t)p->pid, addr, len, PY_BLOCK_PAGES, b->data, &b->addr);
	st->stats.read_bytes += b->len;
	if (!b->len)
		return py_rd(p, addr, buf, len); /* e.g. the next page is not mapped */
	memcpy(buf, b->data + (addr - b->addr), len);
	return true;
}

static uint64_t py_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* A frame's code object pointer from its f_code/f_executable field v (3.14: untagged). */
static uint64_t py_code_ptr(const struct py_layout *L, uint64_t v)
{
	return v & ~(uint64_t)L->code_tag;
}

/* Whether a frame with this owner is a shim, no Python frame (3.12+). */
static bool py_is_shim(const struct py_layout *L, uint8_t owner)
{
	/* (as pywalk_is_shim: owner_cstack or the one after it, 3.14's CSTACK) */
	return L->owner_cstack && owner >= L->owner_cstack && owner <= L->owner_cstack + 1;
}

static uint32_t py_u32(const uint8_t *b, uint32_t off)
{
	uint32_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static void py_utf8_put(char *out, size_t *n, size_t cap, uint32_t c)
{
	if (c < 0x80 && *n + 1 < cap) {
		out[(*n)++] = (char)c;
	} else if (c < 0x800 && *n + 2 < cap) {
		out[(*n)++] = (char)(0xc0 | c >> 6);
		out[(*n)++] = (char)(0x80 | (c & 63));
	} else if (c < 0x10000 && *n + 3 < cap) {
		out[(*n)++] = (char)(0xe0 | c >> 12);
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 63));
		out[(*n)++] = (char)(0x80 | (c & 63));
	} else if (c < 0x110000 && *n + 4 < cap) {
		out[(*n)++] = (char)(0xf0 | c >> 18);
		out[(*n)++] = (char)(0x80 | ((c >> 12) & 63));
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 63));
		out[(*n)++] = (char)(0x80 | (c & 63));
	}
}

/* A str object as UTF-8 (compact strings only: every identifier and file name is one);
 * truncated to PY_MAX_STRING bytes. */
static bool py_read_str(struct py_proc *p, uint64_t addr, char *out, size_t cap)
{
	const struct py_layout *L = p->layout;
	uint8_t hdr[PY_MAX_OBJECT];

	if (!py_rd(p, addr, hdr, L->str_read) || py_u64(hdr, L->ob_type) != p->unicode_type)
		return false;
	uint64_t length = py_u64(hdr, L->str_length);
	uint32_t state = py_u32(hdr, L->str_state);
	/* 3.11 state bits: interned:2 kind:3 compact:1 ascii:1 ready:1 */
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return false;
	if (length > PY_MAX_STRING)
		length = PY_MAX_STRING;
	uint8_t raw[PY_MAX_STRING * 4];
	uint64_t data = addr + (ascii ? L->str_ascii_data : L->str_compact_data);
	if (length && !py_rd(p, data, raw, length * kind))
		return false;
	size_t n = 0;
	for (uint64_t i = 0; i < length; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | raw[2 * i + 1] << 8
							    : py_u32(raw, (uint32_t)(4 * i));
		if (!c)
			c = '?';
		py_utf8_put(out, &n, cap, c);
	}
	out[n] = 0;
	return n > 0;
}

static bool py_code_eq(const void *item, const void *key)
{
	return ((const struct py_code *)item)->addr == *(const uint64_t *)key;
}

static void py_code_free(struct py_code *c)
{
	if (c) {
		free(c->table);
		free(c);
	}
}

/* Whether cached code object c is still the object whose header buf (code_read bytes at its
 * address) holds: same type, name, file and table objects, first line. */
static bool py_code_same(const struct py_proc *p, const struct py_code *c, const uint8_t *buf)
{
	const struct py_layout *L = p->layout;
	int32_t first_traceable =
		L->code_firsttraceable ? (int32_t)py_u32(buf, L->code_firsttraceable) : 0;

	return py_u64(buf, L->ob_type) == p->code_type &&
	       c->qualname == py_u64(buf, L->code_qualname) &&
	       c->filename == py_u64(buf, L->code_filename) &&
	       c->linetable == py_u64(buf, L->code_linetable) &&
	       c->first_line == py_u32(buf, L->code_firstlineno) &&
	       c->ncode == py_u64(buf, L->var_size) &&
	       (!L->code_framesize || c->framesize == py_u32(buf, L->code_framesize)) &&
	       c->first_traceable == first_traceable;
}

/* The known_codes key of the code object at addr of process pid (never 0). */
static uint64_t py_known_key(uint32_t pid, uint64_t addr)
{
	return (addr | 1) ^ ((uint64_t)pid << 44);
}

/* Record (known) or forget the code object at addr of p as cached, for py_capture. */
static void py_known_set(struct py_state *st, const struct py_proc *p, uint64_t addr, bool known)
{
	uint64_t key = py_known_key(p->pid, addr), *slot;

	slot = &st->known_codes[cs_hash_u64(key) % PY_KNOWN_CODES];
	if (known)
		__atomic_store_n(slot, key, __ATOMIC_RELAXED);
	else if (__atomic_load_n(slot, __ATOMIC_RELAXED) == key)
		__atomic_store_n(slot, 0, __ATOMIC_RELAXED);
}

/* Whether the sample's copy holds the header of the code object at addr (py_capture copies
 * those of the frames it copies), taken within PY_CODE_MAX_AGE_NS of the sample, into buf. */
static bool py_code_copied(const struct py_proc *p, uint64_t addr, uint8_t *buf)
{
	const struct py_frozen *fz = p->frozen;

	return fz && (fz->at_stop || fz->stack->mem_age_ns <= PY_CODE_MAX_AGE_NS) &&
	       py_frozen_get(fz, addr, buf, p->layout->code_read);
}

/* The code object at addr whose header is buf (code_read bytes), found in the cache when it
 * is the same object, else read whole (name, file, line table) and cached; or NULL. A sample
 * merged late trusts only the code objects known before it, unless the header is as of the
 * sample (copied: py_code_copied). */
static struct py_code *py_code_from(struct unwind_ctx *ctx, struct py_proc *p, uint64_t addr,
				    const uint8_t *buf, bool copied)
{
	bool late = p->late && !copied;

	const struct py_layout *L = p->layout;

	if (py_u64(buf, L->ob_type) != p->code_type)
		return NULL;
	struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(addr), py_code_eq, &addr);
	if (c && py_code_same(p, c, buf))
		return late && c->seen_ns > p->sample_ns ? NULL : c;
	if (c) {
		/* Freed and reused for another code object. */
		cs_hash_remove(&p->codes, cs_hash_u64(addr), py_code_eq, &addr);
		py_code_free(c);
		py_known_set(ctx->python, p, addr, false);
	}
	if (late)
		return NULL; /* PY_CODE_MAX_AGE_NS */
	uint64_t qualname = py_u64(buf, L->code_qualname), filename = py_u64(buf, L->code_filename);
	uint64_t linetable = py_u64(buf, L->code_linetable);
	char name[PY_MAX_STRING * 4 + 8], file[PY_MAX_STRING * 4 + 8];
	if (!py_read_str(p, qualname, name, sizeof(name)) ||
	    !py_read_str(p, filename, file, sizeof(file)))
		return NULL;
	p->stats->codes_read++;
	c = cs_calloc(1, sizeof(*c));
	c->addr = addr;
	c->seen_ns = cs_monotonic_ns();
	c->qualname = qualname;
	c->filename = filename;
	c->linetable = linetable;
	c->first_line = py_u32(buf, L->code_firstlineno);
	c->framesize = L->code_framesize ? py_u32(buf, L->code_framesize) : 0;
	c->ncode = py_u64(buf, L->var_size);
	c->first_traceable = L->code_firsttraceable ? (int32_t)py_u32(buf, L->code_firsttraceable) : 0;
	c->name = elfcache_intern(ctx, name);
	c->file = elfcache_intern(ctx, file);
	uint64_t size;
	if (py_rd(p, linetable + L->var_size, &size, sizeof(size)) && size &&
	    size <= PY_MAX_LINETABLE) {
		c->table = cs_malloc(size);
		if (py_rd(p, linetable + L->bytes_data, c->table, size)) {
			c->ntable = size;
		} else {
			free(c->table);
			c->table = NULL;
		}
	}
	cs_hash_insert(&p->codes, cs_hash_u64(addr), c);
	py_known_set(ctx->python, p, addr, true);
	return c;
}

/* The code object at addr, read (or found in the cache and checked to be the same object),
 * or NULL. */
static struct py_code *py_code_get(struct unwind_ctx *ctx, struct py_proc *p, uint64_t addr)
{
	uint8_t buf[PY_MAX_OBJECT];

	if (addr & 7)
		return NULL;
	if (py_code_copied(p, addr, buf))
		return py_code_from(ctx, p, addr, buf, true);
	if (!py_rd(p, addr, buf, p->layout->code_read))
		return NULL;
	return py_code_from(ctx, p, addr, buf, false);
}

/* The code object at addr, when it is the one whose fingerprint was fp (PYWALK_CODE_FP) when
 * its frame was read (bpf: at the sample), however late: the cached one without a read when it
 * has that fingerprint (a code object freed since and its address reused has another name or
 * file), else read now and checked. */
static struct py_code *py_code_get_fp(struct unwind_ctx *ctx, struct py_proc *p, uint64_t addr,
				      uint64_t fp)
{
	struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(addr), py_code_eq, &addr);
	if (c && PYWALK_CODE_FP(c->qualname, c->filename) == fp)
		return c;
	bool late = p->late;
	p->late = false;
	c = py_code_get(ctx, p, addr);
	p->late = late;
	return c && PYWALK_CODE_FP(c->qualname, c->filename) == fp ? c : NULL;
}

/* Check the code objects of frames raw[0, n) that this sample has not checked yet: the
 * headers of those in the cache in one process_vm_readv per PY_BATCH (a code object lives as
 * long as a frame runs it, so its header rarely changes: then only what changed is read
 * again). Those that are new, or changed, are read whole (py_code_from). */
static void py_codes_check(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			   const struct pywalk_frame *raw, int n)
{
	const struct py_layout *L = p->layout;
	uint64_t addrs[PY_BATCH];
	uint8_t (*bufs)[PY_MAX_OBJECT] = st->code_bufs;
	struct iovec local[PY_BATCH], remote[PY_BATCH];
	int k = 0;

	for (int i = 0; i <= n; i++) {
		if (i < n) {
			uint64_t a = raw[i].code;
			struct py_code *c;
			if (!a || a & 7 || a >= (1ull << 47))
				continue;
			c = cs_hash_find(&p->codes, cs_hash_u64(a), py_code_eq, &a);
			if (c && c->checked == st->stamp)
				continue;
			if (py_code_copied(p, a, bufs[k])) {
				if ((c = py_code_from(ctx, p, a, bufs[k], true)))
					c->checked = st->stamp;
				continue;
			}
			bool dup = false;
			for (int j = 0; j < k && !dup; j++)
				dup = addrs[j] == a;
			if (dup)
				continue;
			addrs[k] = a;
			local[k] = (struct iovec){ bufs[k], L->code_read };
			remote[k] = (struct iovec){ (void *)(uintptr_t)a, L->code_read };
			k++;
		}
		if (k == PY_BATCH || (i == n && k)) {
			st->stats.reads++;
			ssize_t got = process_vm_readv((pid_t)p->pid, local, (unsigned long)k, remote,
						       (unsigned long)k, 0);
			int full = got > 0 ? (int)(got / L->code_read) : 0;
			st->stats.read_bytes += got > 0 ? (uint64_t)got : 0;
			st->stats.codes_checked += (uint64_t)k;
			for (int j = 0; j < k; j++) {
				/* a code object past a failed one: read alone */
				struct py_code *c = j < full ? py_code_from(ctx, p, addrs[j], bufs[j], false)
							     : py_code_get(ctx, p, addrs[j]);
				if (c)
					c->checked = st->stamp;
			}
			k = 0;
		}
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Frame ids */

struct py_frame_key {
	const struct py_state *st;
	const char *name, *file;
	uint32_t line;
};

static uint64_t py_frame_hash(const char *name, const char *file, uint32_t line)
{
	return cs_hash_u64((uintptr_t)name * 31 + (uintptr_t)file * 7 + line);
}

static bool py_frame_eq(const void *item, const void *key)
{
	const struct py_frame_key *k = key;
	const struct py_frame_rec *f = &k->st->frames[(uintptr_t)item - 1];
	return f->name == k->name && f->file == k->file && f->line == k->line;
}

static uint32_t py_frame_id(struct py_state *st, const char *name, const char *file, uint32_t line)
{
	struct py_frame_key key = { st, name, file, line };
	uint64_t h = py_frame_hash(name, file, line);
	uintptr_t idx = (uintptr_t)cs_hash_find(&st->frame_ids, h, py_frame_eq, &key);

	if (idx)
		return (uint32_t)idx - 1;
	cs_grow(&st->frames, &st->cap_frames, st->nframes + 1, sizeof(st->frames[0]));
	st->frames[st->nframes++] = (struct py_frame_rec){ name, file, line };
	cs_hash_insert(&st->frame_ids, h, (void *)(uintptr_t)st->nframes);
	return (uint32_t)st->nframes - 1;
}

int py_frame_symbol(struct unwind_ctx *ctx, uint64_t id, struct sym_frame *out)
{
	struct py_state *st = ctx->python;

	if (!st || id >= st->nframes)
		return -ENOENT;
	*out = (struct sym_frame){ st->frames[id].name, st->frames[id].file, st->frames[id].line,
				   PROFILE_FRAME_PYTHON };
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Modules and processes */

/* Look at module id once: is it a CPython runtime? */
static struct py_module_info *py_module_info(struct unwind_ctx *ctx, struct py_state *st,
					     uint32_t id)
{
	if (id >= st->nmods) {
		size_t n = ctx->nmodules > id ? ctx->nmodules : id + 1;
		st->mods = realloc(st->mods, n * sizeof(st->mods[0]));
		if (!st->mods)
			abort();
		memset(st->mods + st->nmods, 0, (n - st->nmods) * sizeof(st->mods[0]));
		st->nmods = n;
	}
	struct py_module_info *mi = &st->mods[id];
	if (mi->state)
		return mi;
	mi->state = 1;
	struct unwind_module_priv *m = id < ctx->nmodules ? ctx->modules[id] : NULL;
	if (!m || m->kind != UNWIND_MOD_ELF || !m->file || !strstr(cs_basename(m->path), "python"))
		return mi;
	const struct elf_file *f = m->file;
	uint64_t eval, eval_size, size;
	if (elfcache_file_symbol(f, "_PyEval_EvalFrameDefault", &eval, &eval_size) ||
	    elfcache_file_symbol(f, "_PyRuntime", &mi->runtime, &size) ||
	    elfcache_file_symbol(f, "PyCode_Type", &mi->code_type, &size) ||
	    elfcache_file_symbol(f, "PyUnicode_Type", &mi->unicode_type, &size))
		return mi;
	if (elfcache_file_symbol(f, "_Py_NoneStruct", &mi->none, &size))
		mi->none = 0;
	mi->eval_lo = elfcache_vaddr_to_offset(f, eval);
	if (mi->eval_lo == UINT64_MAX || !eval_size)
		return mi;
	mi->eval_hi = mi->eval_lo + eval_size;
	/* Py_Version (3.11+) is a constant in the file: no need to read the target. */
	uint64_t ver_addr, ver_off;
	if (elfcache_file_symbol(f, "Py_Version", &ver_addr, &size) == 0 &&
	    (ver_off = elfcache_vaddr_to_offset(f, ver_addr)) != UINT64_MAX &&
	    ver_off + 4 <= f->raw_size)
		memcpy(&mi->version, f->raw + ver_off, 4);
	else {
		/* Before 3.11: the version from the file name (python3.X, libpython3.X.so). */
		const char *v = strstr(cs_basename(m->path), "python");
		unsigned major, minor;
		if (v && sscanf(v + 6, "%u.%u", &major, &minor) == 2)
			mi->version = major << 24 | minor << 16;
	}
	mi->learn_left = PY_LEARN_TRIES;
	mi->state = 2;
	return mi;
}

static bool py_proc_eq(const void *item, const void *key)
{
	return ((const struct py_proc *)item)->pid == *(const uint32_t *)key;
}

static void py_proc_free(struct py_proc *p)
{
	for (size_t i = 0; i < p->codes.cap; i++)
		py_code_free(p->codes.slots[i].item);
	cs_hash_free(&p->codes);
	free(p);
}

/* The load bias of module m in pid, from /proc/PID/maps. */
static bool py_module_bias(struct unwind_module_priv *m, uint32_t pid, uint64_t *bias)
{
	char path[64], line[4096 + 256];
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	FILE *fp = fopen(path, "re");
	if (!fp)
		return false;
	while (!found && fgets(line, sizeof(line), fp)) {
		uint64_t start, end, off;
		int name_at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &start, &end,
			   &off, &name_at) < 3 || !name_at)
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = 0;
		if (strcmp(name, m->path) == 0) {
			*bias = elfcache_file_bias(m->file, start, off);
			found = true;
		}
	}
	fclose(fp);
	return found;
}

/* Tell py_where where process p's thread states and frames are (its layout is known). */
static void py_where_set(struct py_state *st, const struct py_proc *p)
{
	const struct py_layout *L = p->layout;
	struct py_where_slot v = { p->pid, {
		.interp_head = p->runtime + L->runtime_interp_head, .interp_next = L->interp_next,
		.interp_threads_head = L->interp_threads_head, .tstate_next = L->tstate_next,
		.tstate_native_tid = L->tstate_native_tid, .tstate_cframe = L->tstate_cframe,
		.cframe_current_frame = L->cframe_current_frame,
		.cframe_previous = L->cframe_previous,
		.tstate_current_frame = L->tstate_current_frame, .code_qualname = L->code_qualname,
		.code_filename = L->code_filename,
		.walk = p->walk,
		/* 3.14: activations found by their entry frames (py_merge_by_shims) */
		.want_sps = L->hex_min >= 0x030e0000,
		.known_ns = cs_monotonic_ns() } };

	pthread_mutex_lock(&st->recipes_lock);
	st->wheres[p->pid % PY_WHERES] = v;
	pthread_mutex_unlock(&st->recipes_lock);
}

int py_where(struct unwind_ctx *ctx, uint32_t pid, struct pywalk_where *out)
{
	struct py_state *st = ctx->python;
	int ret = -ENOENT;

	if (!st || !pid)
		return ret;
	pthread_mutex_lock(&st->recipes_lock);
	if (st->wheres[pid % PY_WHERES].pid == pid) {
		*out = st->wheres[pid % PY_WHERES].w;
		ret = 0;
	}
	pthread_mutex_unlock(&st->recipes_lock);
	return ret;
}

static struct py_proc *py_proc_get(struct unwind_ctx *ctx, struct py_state *st, uint32_t pid,
				   uint32_t module, const struct py_module_info *mi)
{
	struct py_proc *p = cs_hash_find(&st->procs, cs_hash_u64(pid), py_proc_eq, &pid);

	if (p)
		return p;
	p = cs_calloc(1, sizeof(*p));
	p->pid = pid;
	p->stats = &st->stats;
	cs_hash_insert(&st->procs, cs_hash_u64(pid), p);
	uint32_t version = st->version_override >= 0 ? (uint32_t)st->version_override : mi->version;
	uint64_t bias;
	if (!py_module_bias(ctx->modules[module], pid, &bias)) {
		p->state = PY_PROC_FAILED;
		return p;
	}
	/* 3.13+: the layout is the interpreter's own _Py_DebugOffsets, at the start of its
	 * _PyRuntime in the target. */
	uint8_t debug[1024];
	size_t ndebug = py_layout_debug_size(version);
	if (ndebug > sizeof(debug) || (ndebug && !py_read(pid, mi->runtime + bias, debug, ndebug)))
		ndebug = 0;
	bool free_threaded = py_is_free_threaded(version, ndebug ? debug : NULL, ndebug,
						 ctx->modules[module]->path);
	int err = free_threaded ? -ENOTSUP : py_layout_for(version, ndebug ? debug : NULL, ndebug,
							   &p->own);
	if (err) {
		p->state = PY_PROC_UNSUPPORTED;
		if (st->warned_version != version + 1) {
			st->warned_version = version + 1;
			if (free_threaded)
				cs_warn("python %u.%ut (pid %u) is a free-threaded build: csampler does "
					"not read its Python frames yet; its stacks stay native",
					version >> 24, (version >> 16) & 255, pid);
			else if (!version)
				cs_warn("python of unknown version (pid %u) is not supported (CPython "
					"3.11 to 3.14): its stacks stay native", pid);
			else if (err == -ENOTSUP)
				cs_warn("python %u.%u (pid %u) is not supported (CPython 3.11 to 3.14, "
					"not free-threaded): its stacks stay native", version >> 24,
					(version >> 16) & 255, pid);
			else
				cs_warn("python %u.%u (pid %u): its _Py_DebugOffsets could not be read "
					"or do not check: its stacks stay native", version >> 24,
					(version >> 16) & 255, pid);
		}
		return p;
	}
	p->layout = &p->own;
	p->walk = (struct pywalk_layout){
		.frame_code = p->own.frame_code, .frame_previous = p->own.frame_previous,
		.frame_instr = p->own.frame_instr, .frame_is_entry = p->own.frame_is_entry,
		.frame_owner = p->own.frame_owner, .owner_generator = p->own.owner_generator,
		.owner_cstack = p->own.owner_cstack, .code_tag = p->own.code_tag,
		.frame_read = p->own.frame_read };
	p->none = mi->none ? mi->none + bias : 0;
	/* 3.13+: a shim runs None (3.12's trampoline code object is learned: py_walk_at) */
	if (p->own.owner_cstack && p->own.hex_min >= 0x030d0000 && p->none)
		p->walk.trampoline = p->none;
	p->runtime = mi->runtime + bias;
	p->code_type = mi->code_type + bias;
	p->unicode_type = mi->unicode_type + bias;
	p->state = PY_PROC_READY;
	py_where_set(st, p);
	return p;
}

void py_forget(struct unwind_ctx *ctx, uint32_t pid)
{
	struct py_state *st = ctx->python;
	struct py_proc *p;

	if (st && (p = cs_hash_remove(&st->procs, cs_hash_u64(pid), py_proc_eq, &pid))) {
		for (size_t i = 0; i < p->codes.cap; i++)
			if (p->codes.slots[i].item)
				py_known_set(st, p, ((struct py_code *)p->codes.slots[i].item)->addr, false);
		py_proc_free(p);
	}
	if (st) {
		pthread_mutex_lock(&st->recipes_lock);
		if (st->wheres[pid % PY_WHERES].pid == pid)
			st->wheres[pid % PY_WHERES].pid = 0;
		pthread_mutex_unlock(&st->recipes_lock);
	}
}

/* The PyThreadState of OS thread tid, or 0. */
static uint64_t py_thread_state(struct py_proc *p, uint32_t tid)
{
	const struct py_layout *L = p->layout;
	size_t slot = tid % PY_TCACHE;
	uint64_t native;

	if (p->tcache[slot].tid == tid &&
	    py_rd_ptr(p, p->tcache[slot].tstate + L->tstate_native_tid, &native) &&
	    native == tid)
		return p->tcache[slot].tstate;
	uint64_t interp;
	if (!py_rd_ptr(p, p->runtime + L->runtime_interp_head, &interp))
		return 0;
	for (int i = 0; interp && i < PY_MAX_INTERPS; i++) {
		uint64_t ts;
		if (!py_rd_ptr(p, interp + L->interp_threads_head, &ts))
			return 0;
		for (int t = 0; ts && t < PY_MAX_THREADS; t++) {
			uint64_t next;
			if (!py_rd_ptr(p, ts + L->tstate_native_tid, &native) ||
			    !py_rd_ptr(p, ts + L->tstate_next, &next))
				return 0;
			if (native == tid) {
				p->tcache[slot].tid = tid;
				p->tcache[slot].tstate = ts;
				return ts;
			}
			ts = next;
		}
		if (!py_rd_ptr(p, interp + L->interp_next, &interp))
			return 0;
	}
	return 0;
}

#define PY_ID_UNREAD (UINT32_MAX - 1) /* a frame whose code object could not be read */
#define PY_PREV_UNKNOWN PYWALK_PREV_UNKNOWN /* a run whose shim is gone: entered from? */

/* pywalk's read and check for process p: frames from the blocks of pages read for the sample
 * (py_frame_bytes). */
struct py_walk_arg {
	struct unwind_ctx *ctx;
	struct py_state *st;
	struct py_proc *p;
	uint64_t inner;                /* the frame taken last, on the data stack (0: none) */
};

static bool py_walk_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct py_walk_arg *a = arg;

	return py_frame_bytes(a->st, a->p, addr, buf, len);
}

/* 3.12+: where a Python function's frame that begins at f and runs c ends on the data stack
 * (co_framesize words on), which is where its callee's frame begins; 0 when not known. */
static uint64_t py_frame_end(const struct py_code *c, uint64_t f)
{
	return c && c->framesize ? f + 8ull * c->framesize : 0;
}

#define PY_CSTACK_BELOW (64u << 10)

/* The C stack's range about the sample's stack pointer, for py_walk_check. */
static void py_cstack_set(struct py_state *st, const struct py_stack *s)
{
	st->cstack_lo = st->cstack_hi = 0;
	if (s && s->size && s->addr > PY_CSTACK_BELOW) {
		st->cstack_lo = s->addr - PY_CSTACK_BELOW;
		st->cstack_hi = s->addr + s->size;
	}
}

/* A frame in the stack copy that was no shim at the time of the sample: the shim of a later
 * activation at another depth of the C stack (a callback called again since), as the thread
 * has it now; when that is no shim either, that activation has returned too: only a shim lives
 * on the C stack, so the run ended there, entered from an unknown frame. The same holds below
 * the copy, up to PY_CSTACK_BELOW under the sampled stack pointer: the shim of a later call
 * from deeper in C (qsort's comparisons recurse), gone by the time it is read. */
static enum pywalk_check py_walk_check(void *arg, uint64_t addr, uint8_t *fb, bool in_run)
{
	struct py_walk_arg *a = arg;
	const struct py_layout *L = a->p->layout;
	const struct py_stack *s = a->st->copy;
	uint64_t inner = a->inner;

	a->inner = 0;
	/* (frames copied while the thread was stopped are of one time: not checked) */
	if (!fb[L->frame_owner] && L->code_framesize && !(a->p->frozen && a->p->frozen->at_stop)) {
		/* 3.12+: a Python function's frame is pushed on the data stack right where its
		 * caller's ends (co_framesize words on). A frame that links to one that does not
		 * end there (nearby: a new chunk may lie anywhere) is of another time: the caller's
		 * frame was popped and its memory reused since (read after the sample), and the
		 * run read so far would be filed under another function. */
		if (in_run && inner > addr && inner - addr < (1u << 20)) {
			uint64_t code = py_code_ptr(L, py_u64(fb, L->frame_code));
			struct py_code *c = cs_hash_find(&a->p->codes, cs_hash_u64(code), py_code_eq,
							 &code);
			if (!c && code && !(code & 7) && code < (1ull << 47))
				c = py_code_get(a->ctx, a->p, code); /* read now, not later to name */
			uint64_t end = py_frame_end(c, addr);
			/* a cached code object not checked for this sample may be one freed since,
			 * its address reused by another of another frame size: checked now (a walk
			 * failing here never gets to py_codes_check, so it would stay wrong for
			 * every later sample through that function) */
			if (end && end != inner && c->checked != a->st->stamp &&
			    (c = py_code_get(a->ctx, a->p, code))) {
				c->checked = a->st->stamp;
				end = py_frame_end(c, addr);
			}
			if (end && end != inner)
				return PYWALK_FAIL;
		}
		a->inner = addr;
	}
	if (!L->owner_cstack || py_is_shim(L, fb[L->frame_owner]) || addr < a->st->cstack_lo ||
	    addr >= a->st->cstack_hi)
		return PYWALK_TAKE;
	/* read live (3.13's innermost activation, py_walk_innermost_now): a frame on the C stack
	 * that is no shim is an activation's that returned while the chain was read (its shim's
	 * memory reused): the walk fails, and is tried again from the current frame */
	if (!s)
		return PYWALK_FAIL;
	if (!py_rd(a->p, addr, fb, L->frame_read))
		return PYWALK_FAIL;
	return !py_is_shim(L, fb[L->frame_owner]) && in_run ? PYWALK_STOP_UNKNOWN : PYWALK_TAKE;
}

/* Walk Python frames outward from frame (pywalk) into st->raw/st->ids/st->entry from *n (ids
 * UINT32_MAX for an activation showing no frame, 0 until named); with one_activation, stop
 * after the first entry frame (the frames one native activation runs) and give its previous
 * frame in *entry_prev (0 for a generator's frame that has yielded since: CPython unlinks it;
 * PY_PREV_UNKNOWN) and where the run ended in *entry_at. Returns false when a frame could not
 * be read or the walk did not end within bounds. Their code objects are checked and named
 * afterwards, all at once (py_name_frames). */
static bool py_walk_at(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
		       uint64_t frame, bool one_activation, int *n, uint64_t *entry_prev,
		       uint64_t *entry_at)
{
	struct py_walk_arg a = { ctx, st, p, 0 };
	struct pywalk w = { .L = &p->walk, .read = py_walk_read, .check = py_walk_check, .arg = &a,
			    .one_activation = one_activation, .out = st->raw, .n = *n,
			    .max = PY_MAX_FRAMES, .max_depth = PY_MAX_FRAMES };
	enum pywalk_end end = pywalk_walk(&w, frame);

	/* 3.12: the trampoline, once a shim's code object is read and named so */
	if (w.shim_code && !p->walk.trampoline && p->layout->hex_min < 0x030d0000) {
		struct py_code *c = py_code_get(ctx, p, w.shim_code);
		if (c && c->file && !strcmp(c->file, "<shim>"))
			p->walk.trampoline = w.shim_code;
	}
	for (int i = *n; i < w.n; i++) {
		st->ids[i] = st->raw[i].code ? 0 : UINT32_MAX;
		st->entry[i] = (st->raw[i].flags & PYWALK_ENTRY) != 0;
	}
	*n = w.n;
	if (end == PYWALK_ACT_END) {
		*entry_prev = w.entry_prev;
		*entry_at = w.entry_at;
		return true;
	}
	return end == PYWALK_CHAIN_END && !one_activation;
}

static bool py_walk(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
		    uint64_t frame, bool one_activation, int *n, uint64_t *entry_prev)
{
	uint64_t at;

	return py_walk_at(ctx, st, p, frame, one_activation, n, entry_prev, &at);
}

/* Name frames [from, to) of the walk: check their code objects (py_codes_check), then give
 * each its frame id (UINT32_MAX: not shown, a frame still being set up; PY_ID_UNREAD: its
 * code object could not be read). Returns false when one could not be read. */
static bool py_name_frames(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			   int from, int to)
{
	const struct py_layout *L = p->layout;
	bool ok = true;

	py_codes_check(ctx, st, p, st->raw + from, to - from);
	for (int i = from; i < to; i++) {
		const struct pywalk_frame *f = &st->raw[i];
		if (!f->code)
			continue;
		struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(f->code), py_code_eq,
						       &f->code);
		if (!c || c->checked != st->stamp) {
			st->ids[i] = PY_ID_UNREAD;
			ok = false;
			continue;
		}
		uint64_t code0 = f->code + L->code_code;
		int32_t first_traceable = c->first_traceable > 0 ? c->first_traceable : 0;
		/* A frame still being set up (before its RESUME) is not shown, as CPython's own
		 * tracebacks do; it still closes its native activation when it is the entry. */
		bool incomplete = f->owner != L->owner_generator &&
				  f->instr < code0 + 2 * (uint64_t)first_traceable;
		uint32_t line = c->first_line;
		if (f->instr >= code0 && c->table) {
			uint32_t l = L->line(c->table, c->ntable, c->first_line,
					     (uint32_t)((f->instr - code0) / 2));
			if (l)
				line = l;
		}
		st->ids[i] = incomplete ? UINT32_MAX : py_frame_id(st, c->name, c->file, line);
	}
	return ok;
}

/* Read thread tid's whole frame chain as it is now into st->ids/st->entry, innermost first.
 * Returns the number of frames, or -1 when it could not be read. */
static int py_read_chain(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			 uint64_t ts)
{
	const struct py_layout *L = p->layout;
	uint64_t cframe, frame;
	int n = 0;

	if (L->tstate_cframe) {
		if (!py_rd_ptr(p, ts + L->tstate_cframe, &cframe) ||
		    !py_rd_ptr(p, cframe + L->cframe_current_frame, &frame))
			return -1;
	} else if (!py_rd_ptr(p, ts + L->tstate_current_frame, &frame)) {
		return -1;
	}
	if (!py_walk(ctx, st, p, frame, false, &n, NULL) || !py_name_frames(ctx, st, p, 0, n))
		return -1;
	/* 3.12+: the outermost activation's frames end at its shim, already a run's end; a
	 * chain that ends without one (3.11: its is_entry frame) ends the last run too. */
	return n;
}

/* The thread's _PyCFrame chain as it is now (one per native activation, innermost first, on
 * the C stack; the chain ends at the thread state's root_cframe): addresses and current
 * frames. Returns the count, or -1. */
static int py_cframes_now(struct py_proc *p, uint64_t ts, uint64_t *addr, uint64_t *cur, int max)
{
	const struct py_layout *L = p->layout;
	uint64_t root = ts + L->tstate_root_cframe, cf;
	int n = 0;

	if (!L->tstate_cframe)
		return -1;
	if (!py_rd_ptr(p, ts + L->tstate_cframe, &cf))
		return -1;
	while (cf && cf != root) {
		uint8_t b[32];
		if (n >= max || cf & 7 || !py_rd(p, cf, b, L->cframe_previous + 8))
			return -1;
		addr[n] = cf;
		cur[n++] = py_u64(b, L->cframe_current_frame);
		cf = py_u64(b, L->cframe_previous);
	}
	return n;
}

/* 8 bytes of the sample's stack copy at addr; false outside it. */
static bool py_stack_u64(const struct py_stack *s, uint64_t addr, uint64_t *v)
{
	if (addr < s->addr || addr - s->addr > s->size || s->size - (addr - s->addr) < 8)
		return false;
	memcpy(v, s->data + (addr - s->addr), 8);
	return true;
}

/* The CFA of the native activation at locs[i]: its caller's stack pointer, or 0. */
static uint64_t py_act_cfa(const struct unwind_loc *locs, int n, int i)
{
	return i + 1 < n ? locs[i + 1].sp : 0;
}

/* Whether cframe offset off (cframe = CFA - off) makes the activations' cframes in the sample's
 * copy a chain: each one's previous is the next outer one's, the outermost's is root (when
 * root is not 0). */
static bool py_cframe_chain_ok(const struct py_layout *L, const struct py_stack *s,
			       const struct unwind_loc *locs, int n, const int *acts, int nacts,
			       uint64_t off, uint64_t root)
{
	for (int k = 0; k < nacts; k++) {
		uint64_t cfa = py_act_cfa(locs, n, acts[k]), prev, cur;
		if (!cfa || !py_stack_u64(s, cfa - off + L->cframe_previous, &prev) ||
		    !py_stack_u64(s, cfa - off + L->cframe_current_frame, &cur) || !cur || cur & 7)
			return false;
		uint64_t want = k + 1 < nacts ? py_act_cfa(locs, n, acts[k + 1]) - off : root;
		if (k + 1 < nacts && !py_act_cfa(locs, n, acts[k + 1]))
			return false;
		if ((k + 1 < nacts || root) && prev != want)
			return false;
	}
	return true;
}

/* Learn where _PyEval_EvalFrameDefault keeps its _PyCFrame local (py_cframe_offset_find),
 * on at most PY_LEARN_TRIES samples. */
/* A search for where _PyEval_EvalFrameDefault keeps a local (its _PyCFrame, its entry shim)
 * as a distance below its CFA, in a complete sample's stack copy: the activations, and what
 * the local's check compares with (the thread's root_cframe, the target's Py_None). */
struct py_probe {
	const struct py_layout *L;
	const struct py_stack *s;
	const struct unwind_loc *locs;
	int n, nacts;
	const int *acts;
	uint64_t key;
};

/* The one distance (a multiple of 8, within PY_MAX_CFRAME_OFF) at which ok holds, field its
 * lowest byte read; 0 when there is none or more than one. */
static uint64_t py_offset_find(const struct py_probe *q, uint32_t field,
			       bool (*ok)(const struct py_probe *q, uint64_t off))
{
	uint64_t outer = q->nacts > 0 ? py_act_cfa(q->locs, q->n, q->acts[q->nacts - 1]) : 0;
	uint64_t found = 0;
	int nfound = 0;

	for (uint64_t off = 8; outer && off <= PY_MAX_CFRAME_OFF && off < outer && nfound < 2;
	     off += 8) {
		if (outer - off + field < q->s->addr)
			break;
		if (ok(q, off)) {
			found = off;
			nfound++;
		}
	}
	return nfound == 1 ? found : 0;
}

static bool py_cframe_probe(const struct py_probe *q, uint64_t off)
{
	uint64_t outer = py_act_cfa(q->locs, q->n, q->acts[q->nacts - 1]), prev;

	return py_stack_u64(q->s, outer - off + q->L->cframe_previous, &prev) && prev == q->key &&
	       py_cframe_chain_ok(q->L, q->s, q->locs, q->n, q->acts, q->nacts, off, q->key);
}

uint64_t py_cframe_offset_find(const struct py_layout *L, const struct py_stack *s,
			       const struct unwind_loc *locs, int n, const int *acts, int nacts,
			       uint64_t root)
{
	struct py_probe q = { L, s, locs, n, nacts, acts, root };

	return L->tstate_root_cframe ? py_offset_find(&q, L->cframe_previous, py_cframe_probe) : 0;
}

static void py_learn_cframe_off(struct py_module_info *mi, const struct py_layout *L,
				const struct py_stack *s, const struct unwind_loc *locs, int n,
				const int *acts, int nacts, uint64_t root)
{
	if (!mi->learn_left)
		return;
	mi->learn_left--;
	mi->cframe_off = py_cframe_offset_find(L, s, locs, n, acts, nacts, root);
}

/* ------------------------------------------------------------------------------------------ */
/* Merging */

/* Put the frames of run r (st->ids[start[r], start[r + 1])) into st->out; returns how many. */
static int py_put_run(struct py_state *st, const int *start, int r, int *out, int max)
{
	int pushed = 0;

	for (int f = start[r]; f < start[r + 1] && *out < max; f++) {
		if (st->ids[f] == UINT32_MAX || st->ids[f] == PY_ID_UNREAD)
			continue;
		st->out[(*out)++] = (struct unwind_loc){ st->module, st->ids[f], 0, 0 };
		pushed++;
	}
	return pushed;
}

/* The frame shown in place of an activation whose frames could not be read, in a sample
 * where others were: the sample is never filed under another function's frames. */
static uint32_t py_marker_id(struct unwind_ctx *ctx, struct py_state *st)
{
	if (!st->marker_id)
		st->marker_id = py_frame_id(st, elfcache_intern(ctx, "[Python frames not read]"),
					    elfcache_intern(ctx, "?"), 0) + 1;
	return st->marker_id - 1;
}

/* Activation k (the run [start[k], start[k + 1])) shows the marker frame in place of its
 * frames, counted as not read for why. */
static void py_run_unread(struct py_state *st, const int *start, int k, uint32_t marker,
			  enum py_lost why, int *unread)
{
	st->ids[start[k]] = marker;
	st->raw[start[k]].code = 0;
	for (int f = start[k] + 1; f < start[k + 1]; f++)
		st->ids[f] = UINT32_MAX;
	st->stats.lost[why]++;
	(*unread)++;
}

/* Whether run k (st->ids[start[k], start[k + 1])) shows a frame that was read. */
static bool py_run_shown(const struct py_state *st, const int *start, int k)
{
	for (int f = start[k]; f < start[k + 1]; f++)
		if (st->ids[f] != UINT32_MAX && st->ids[f] != PY_ID_UNREAD)
			return true;
	return false;
}

/* Run k shows frame id alone: the frame its activation ran at the sample, found after the
 * program moved on (stats.relinked). */
static void py_run_take(struct py_state *st, const int *start, int k, uint32_t id)
{
	st->ids[start[k]] = id;
	for (int f = start[k] + 1; f < start[k + 1]; f++)
		st->ids[f] = UINT32_MAX;
	st->stats.relinked++;
}

/* One byte of the sample's stack copy at addr; false outside it. */
static bool py_stack_u8(const struct py_stack *s, uint64_t addr, uint8_t *v)
{
	if (addr < s->addr || addr - s->addr >= s->size)
		return false;
	*v = s->data[addr - s->addr];
	return true;
}

/* Whether shim offset off (shim = CFA - off) gives every activation an entry shim frame in the
 * copy (py_shim_offset_find); *prev (may be NULL) gets each one's previous frame. */
static bool py_shim_chain_ok(const struct py_layout *L, const struct py_stack *s,
			     const struct unwind_loc *locs, int n, const int *acts, int nacts,
			     uint64_t off, uint64_t none, bool complete, uint64_t *prevs)
{
	for (int k = 0; k < nacts; k++) {
		uint64_t cfa = py_act_cfa(locs, n, acts[k]), exe, prev;
		uint8_t owner;
		if (!cfa || cfa < off || !py_stack_u8(s, cfa - off + L->frame_owner, &owner) ||
		    !py_is_shim(L, owner) ||
		    !py_stack_u64(s, cfa - off + L->frame_previous, &prev) || prev & 7)
			return false;
		if (none && (!py_stack_u64(s, cfa - off + L->frame_code, &exe) || py_code_ptr(L, exe) != none))
			return false;
		if (k + 1 < nacts ? !prev : complete && prev)
			return false;
		if (prevs)
			prevs[k] = prev;
	}
	return true;
}

static bool py_shim_probe(const struct py_probe *q, uint64_t off)
{
	return py_shim_chain_ok(q->L, q->s, q->locs, q->n, q->acts, q->nacts, off, q->key, true,
				NULL);
}

uint64_t py_shim_offset_find(const struct py_layout *L, const struct py_stack *s,
			     const struct unwind_loc *locs, int n, const int *acts, int nacts,
			     uint64_t none)
{
	struct py_probe q = { L, s, locs, n, nacts, acts, none };

	return L->owner_cstack && !L->tstate_cframe ? py_offset_find(&q, 0, py_shim_probe) : 0;
}

/* 3.12+: generator frame g, the innermost frame of its activation at the time of the sample,
 * has yielded since, and CPython cleared its previous: who resumed it is no longer linked. Its
 * caller is the frame that holds the generator object on its value stack (a for loop's
 * iterator, an await's receiver): looked for among the frames the activation runs now, from
 * now_frame outward to the activation's shim. Returns that frame, or 0. */
static uint64_t py_gen_caller(struct py_state *st, struct py_proc *p, uint64_t g,
			      uint64_t now_frame)
{
	const struct py_layout *L = p->layout;
	uint64_t gen = g - L->gen_iframe, frame = now_frame;

	/* 3.11 runs a generator in an activation of its own: not this case */
	if (L->frame_is_entry || !L->gen_iframe || !L->frame_localsplus || g < L->gen_iframe)
		return 0;
	for (int depth = 0; frame && !(frame & 7) && depth < 64; depth++) {
		uint8_t fb[PY_MAX_OBJECT];
		if (frame == g || !py_frame_bytes(st, p, frame, fb, L->frame_read))
			return 0;
		if (py_is_shim(L, fb[L->frame_owner]))
			return 0; /* the activation's first frame passed */
		int32_t top = (int32_t)py_u32(fb, L->frame_stacktop);
		/* stacktop is kept when the frame calls; while it runs it may be stale: then the
		 * slots the loop's iterator stays in are looked at all the same */
		uint32_t nslots = top > 0 && top <= 256 ? (uint32_t)top : 64;
		uint64_t slots[256];
		/* (3.14's value stack holds tagged references, tagged as f_executable is) */
		if (py_frame_bytes(st, p, frame + L->frame_localsplus, slots, nslots * 8))
			for (uint32_t i = 0; i < nslots; i++)
				if ((slots[i] & ~(uint64_t)L->code_tag) == gen)
					return frame;
		frame = py_u64(fb, L->frame_previous);
	}
	return 0;
}

/* 3.12+: the innermost activation had no frame of its own at the time of the sample (its shim
 * was current): it was returning, its frame unlinked before being cleared and popped
 * (RETURN_VALUE; the frame keeps its code object and its link until the next push there).
 * That frame was pushed on the data stack after the frame the outer activation was running
 * (outer), and links to this activation's shim (shim, a C stack address no Python object
 * holds): the first such frame above outer is shown as the function returning (its line the
 * return). With the frames copied at the stop (ptrace) it is read as of the sample
 * (*exact); else (perf: the reader's copy, or the process now) it is that frame or a later
 * call's pushed at the same address from the same outer frame, as an innermost activation
 * that moved on is taken (py_run_verdict). Returns whether it was found. */
static bool py_returning_frame(struct py_state *st, struct py_proc *p, uint64_t outer,
			       uint64_t shim, int *nf, bool *exact)
{
	const struct py_layout *L = p->layout;

	*exact = p->frozen && p->frozen->at_stop;
	if (*nf >= PY_MAX_FRAMES)
		return false;
	for (uint64_t x = outer + 8; x < outer + PY_PAGE; x += 8) {
		uint8_t fb[PY_MAX_OBJECT];
		if (*exact ? !py_frozen_get(p->frozen, x, fb, L->frame_read)
			   : !py_frame_bytes(st, p, x, fb, L->frame_read))
			return false;
		uint64_t code = py_code_ptr(L, py_u64(fb, L->frame_code));
		if (py_u64(fb, L->frame_previous) != shim || !code || code & 7 ||
		    code >= (1ull << 47) || py_is_shim(L, fb[L->frame_owner]))
			continue;
		st->raw[*nf] = (struct pywalk_frame){ code, py_u64(fb, L->frame_instr), fb[L->frame_owner], 0, 0 };
		st->ids[*nf] = 0;
		st->entry[(*nf)++] = 0;
		return true;
	}
	return false;
}

/* Whether the sample's copy between lo and hi, or its registers, hold a value in [vlo, vhi);
 * py_copy_points_into: a pointer into code object c (an activation calling out keeps its
 * frame's instruction pointer live across the call, in a callee-saved register or its own
 * stack frame). */
static bool py_copy_holds(const struct py_stack *s, uint64_t vlo, uint64_t vhi, uint64_t lo,
			  uint64_t hi)
{
	uint64_t v;

	for (uint64_t x = (lo + 7) & ~7ull; x + 8 <= hi; x += 8)
		if (py_stack_u64(s, x, &v) && v >= vlo && v < vhi)
			return true;
	for (int r = 0; s->regs && r < s->nregs; r++)
		if (s->regs[r] >= vlo && s->regs[r] < vhi)
			return true;
	return false;
}

static bool py_copy_points_into(const struct py_stack *s, const struct py_layout *L,
				const struct py_code *c, uint64_t lo, uint64_t hi)
{
	return py_copy_holds(s, c->addr, c->addr + L->code_code + 2 * c->ncode, lo, hi);
}

/* An outer activation (blocked in the call that leads to the next inner one at the time of
 * the sample) keeps the instruction pointer of its innermost frame live across that call: in
 * a callee-saved register (then saved by a callee in the stack copy, or still in the sample's
 * registers) or in its own stack frame. So the copy, from the next inner activation's stack
 * pointer to this one's CFA, and the registers, hold a pointer into the code object that frame
 * ran at the time of the sample. So does the innermost activation (3.11), from the sampled
 * stack pointer: a program that went from one function to another called from the same place
 * (the same frame address, the same links) is caught there. When none points into the code object read now, the frame
 * was popped and another pushed at its address since (a new phase of the program calling
 * another function from the same place): this activation and every inner one get the marker
 * frame, their frames being of a later time. */
static void py_check_outer(struct py_state *st, struct py_proc *p, const struct py_stack *s,
			   const struct unwind_loc *locs, int n, const int *acts, int nacts,
			   const int *start, uint32_t marker, int *unread)
{
	const struct py_layout *L = p->layout;
	int moved = -1;

	/* The innermost activation too in 3.11, where measured to hold (in 3.12 and 3.13 it
	 * rejected one sample in ten that was right, the split said so) */
	int last = L->frame_is_entry ? 0 : 1;
	for (int k = nacts - 1; k >= last && moved < 0; k--) {
		int f = start[k];
		if (start[k + 1] == f || st->ids[f] == marker || !st->raw[f].code ||
		    st->ids[f] == PY_ID_UNREAD)
			continue;
		uint64_t code = st->raw[f].code;
		struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code);
		uint64_t lo = k ? locs[acts[k - 1]].sp : s->addr, hi = py_act_cfa(locs, n, acts[k]);
		if (!c || !c->ncode || !hi || lo < s->addr || hi <= lo)
			continue;
		st->stats.outer_checked++;
		if (!py_copy_points_into(s, L, c, lo, hi))
			moved = k;
	}
	if (moved < 0)
		return;
	st->stats.outer_moved++;
	for (int k = 0; k <= moved; k++) {
		if (start[k + 1] > start[k] && st->ids[start[k]] == marker)
			continue;
		if (start[k + 1] > start[k])
			py_run_unread(st, start, k, marker, PY_LOST_POPPED, unread);
	}
}

/* Each activation's frames from where the sample's stack copy says it was, then read now.
 * 3.11 and 3.12: each activation's _PyCFrame (cframe_off learned) says its innermost frame at
 * the time of the sample (current_frame). 3.13: each activation's entry shim frame (shim_off
 * learned) says which frame the next outer activation was running when it called in, which it
 * still was at the time of the sample; the innermost activation's frames are the chain as it
 * is now down to that activation's shim. An activation is confirmed when its frame now is the
 * one it had at the time of the sample (it was blocked in a call, or came back to the same
 * place). One that is not has moved on: its frames are kept only when their entry frame still
 * links to the frame the next outer activation was running at the time of the sample (as
 * CPython links them when it enters an activation), or is a generator's that has yielded since
 * (its previous is then cleared: the generator object still holds the frame; 3.12+ finds the
 * frame that resumed it by py_gen_caller); else the frames were popped and reused and the
 * activation gets the marker frame (py_marker_id). Returns the number of activations
 * confirmed, or -1 when the copy does not give every activation's frame (then the caller
 * matches the chain read now by count). start[] gets nacts + 1 run bounds; *unread the
 * activations not read. */
/* The anchors of the activations from the stack copy s (the offsets learned in mi) into a;
 * false when the copy does not give every activation's frame. */
static bool py_anchor_set(struct py_proc *p, const struct py_module_info *mi, uint64_t ts,
			  const struct py_stack *s, const struct unwind_loc *locs, int n,
			  const int *acts, int nacts, struct py_anchor *a)
{
	const struct py_layout *L = p->layout;
	uint64_t root = ts + L->tstate_root_cframe;

	a->s = s, a->ts = ts, a->shims = !L->tstate_cframe, a->nacts = nacts;
	a->nnow = 0, a->frame_now = 0;
	if (!s)
		return false;
	if (a->shims) {
		if (!mi->shim_off || !py_shim_chain_ok(L, s, locs, n, acts, nacts, mi->shim_off,
						       p->none, s->complete, a->want))
			return false;
		for (int k = 0; k < nacts; k++)
			a->cf[k] = py_act_cfa(locs, n, acts[k]) - mi->shim_off;
		for (int k = 1; k < nacts; k++)
			a->cur[k] = a->want[k - 1];
		if (!py_rd_ptr(p, ts + L->tstate_current_frame, &a->frame_now))
			return false;
		a->cur[0] = a->frame_now;
		return true;
	}
	if (!mi->cframe_off || !py_cframe_chain_ok(L, s, locs, n, acts, nacts, mi->cframe_off,
						   s->complete ? root : 0))
		return false;
	for (int k = 0; k < nacts; k++) {
		a->cf[k] = py_act_cfa(locs, n, acts[k]) - mi->cframe_off;
		a->cur[k] = 0;
		py_stack_u64(s, a->cf[k] + L->cframe_current_frame, &a->cur[k]); /* chain_ok */
	}
	for (int k = 0; k < nacts; k++)
		a->want[k] = k + 1 < nacts ? a->cur[k + 1] : 0;
	a->nnow = py_cframes_now(p, ts, a->now_addr, a->now_cur, PY_MAX_FRAMES);
	return true;
}

/* 3.13: the thread's current frame x is a callback's from C entered since (its one frame read,
 * its shim gone by the time the walk reached it: the callback returned): the frame that was
 * running when C was called (the sampled activation's innermost, if it still runs it) is the one
 * pushed right under x on the data stack, ending where x begins. Looked for down to 4 KiB under
 * x among frames whose code object is known already (no read of a guessed address), taken when
 * the sample's copy under the activation's shim points into its code (it was calling out then,
 * not another function since) and walked from: it must end at the sampled activation's shim. */
static bool py_walk_under_callback(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
				   const struct py_anchor *a, uint64_t x, int start, int *nf,
				   uint64_t *prev, uint64_t *at)
{
	const struct py_layout *L = p->layout;

	if (!a->s)
		return false;
	for (uint64_t y = x - 8; y + 4096 > x && y > 4096; y -= 8) {
		uint8_t fb[PY_MAX_OBJECT];
		if (!py_frame_bytes(st, p, y, fb, L->frame_read))
			return false;
		uint64_t code = py_code_ptr(L, py_u64(fb, L->frame_code));
		struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code);
		if (py_frame_end(c, y) != x || /* (x is a frame: not 0) */
		    py_is_shim(L, fb[L->frame_owner]) || fb[L->frame_owner] == L->owner_generator)
			continue;
		if (!c->ncode || !py_copy_points_into(a->s, L, c, a->s->addr, a->cf[0]))
			return false;
		*nf = start;
		return py_walk_at(ctx, st, p, y, true, nf, prev, at) && *at == a->cf[0];
	}
	return false;
}

/* 3.13's innermost activation, read as it is now, shims included (those in the copy's range
 * may be of activations entered since): activations entered since are passed over, down to
 * the shim of the one sampled (a->cf[0]). The thread runs meanwhile: a walk caught in a
 * switch of frames (a generator yielding clears its previous just before its caller becomes
 * current) is tried again from the frame current then, a few times, with the blocks read
 * before forgotten; live, as a copy taken while the thread ran (perf) was caught in it too.
 * Returns whether the run was read down to that shim. */
static bool py_walk_innermost_now(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
				  struct py_anchor *a, int start, int *nf, uint64_t *prev,
				  uint64_t *at)
{
	const struct py_frozen *fz = p->frozen;
	const struct py_stack *s = st->copy;
	bool ok;

	st->copy = NULL;
	ok = py_walk_at(ctx, st, p, a->cur[0], true, nf, prev, at);
	for (int again = 0;; again++) {
		for (int hop = 0; ok && *at != a->cf[0] && *prev && hop < 64; hop++) {
			*nf = start;
			ok = py_walk_at(ctx, st, p, *prev, true, nf, prev, at);
		}
		if ((ok && *at == a->cf[0]) || again == 2)
			break;
		if (fz && !fz->at_stop)
			p->frozen = NULL;
		if (!py_rd_ptr(p, a->ts + p->layout->tstate_current_frame, &a->frame_now))
			break;
		st->nblocks = 0;
		*nf = start;
		a->cur[0] = a->frame_now;
		ok = py_walk_at(ctx, st, p, a->frame_now, true, nf, prev, at);
	}
	/* a callback from C running now, its shim gone (py_walk_under_callback) */
	if (!ok && *nf - start == 1 && a->frame_now &&
	    py_walk_under_callback(ctx, st, p, a, a->frame_now, start, nf, prev, at)) {
		st->stats.relinked++;
		ok = true;
	}
	p->frozen = fz;
	st->copy = s;
	/* or down to a generator that yielded (its previous cleared): py_gen_inline finds the
	 * frame that resumed it, from the current frame */
	return ok && (*at == a->cf[0] ||
		      (!*prev && *nf > start && st->raw[*nf - 1].owner == p->layout->owner_generator));
}

/* Where the frame pushed right after frame f on the data stack begins (f's code object's
 * co_framesize words on: 3.12+), or 0 when f or its code object cannot be read. */
static uint64_t py_frame_above(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			       uint64_t f)
{
	const struct py_layout *L = p->layout;
	uint8_t fb[PY_MAX_OBJECT];
	uint64_t code;
	struct py_code *c;

	if (!py_frame_bytes(st, p, f, fb, L->frame_read) ||
	    !(code = py_code_ptr(L, py_u64(fb, L->frame_code))) || code & 7 ||
	    !(c = py_code_get(ctx, p, code)))
		return 0;
	return py_frame_end(c, f);
}

/* 3.13: the innermost activation returned since (a callback from C runs for microseconds).
 * Its entry frame was pushed on the data stack right after the frame the outer activation was
 * running (a->cur[1], exact), and a popped frame keeps its contents until the next push: it is
 * taken when it links to this activation's shim (then it ran there, or a later call at the
 * same place did). Only that frame: any it called are not known. */
static bool py_walk_returned(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			     struct py_anchor *a, int start, int *nf, uint64_t *prev, uint64_t *at)
{
	const struct py_layout *L = p->layout;
	uint8_t fb[PY_MAX_OBJECT];
	uint64_t x = py_frame_above(ctx, st, p, a->cur[1]);

	*nf = start;
	if (!x || !py_frame_bytes(st, p, x, fb, L->frame_read) || !py_u64(fb, L->frame_previous) ||
	    py_is_shim(L, fb[L->frame_owner]) || !py_walk_at(ctx, st, p, x, true, nf, prev, at) ||
	    !(*at == a->cf[0] || *prev == PY_PREV_UNKNOWN || *prev == a->want[0]))
		return false;
	a->frame_now = 0; /* not confirmed */
	return true;
}

/* Whether activation k, read, runs now the frame it ran at the time of the sample (it was
 * blocked in a call, or came back to the same place). */
static int py_act_confirmed(const struct py_anchor *a, int k)
{
	if (a->shims)
		return k > 0 || a->frame_now == a->cur[0];
	for (int j = 0; j < a->nnow; j++)
		if (a->now_addr[j] == a->cf[k])
			return a->now_cur[j] == a->cur[k];
	return 0;
}

/* 3.11 and 3.12 (anchored by _PyCFrames): the innermost activation, a callback from C that
 * runs for microseconds, was not read down to the frame the outer one ran at the time of the
 * sample: it returned since, and its shim (a local of its C frame) was reused, or a later call
 * pushed its frame at the same address from another depth of the C stack (qsort's comparisons
 * recurse). The frame at the address its _PyCFrame gave (exact, from the copy) is taken alone
 * when it is an activation's entry frame (linked to a shim on the C stack) and the outer
 * activation still runs the frame it ran at the time of the sample (so a frame pushed right
 * above that one was called from it, through C): that frame, or a later call's from the same
 * place, counted as read after the program moved on. */
static bool py_walk_entry_now(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			      const struct py_anchor *a, int start, int *nf, uint64_t *prev,
			      uint64_t *at)
{
	const struct py_layout *L = p->layout;
	uint8_t fb[PY_MAX_OBJECT];
	uint64_t code, link;
	bool exact;

	if (a->shims || a->nacts < 2 || !a->cur[0] || !st->cstack_lo)
		return false;
	uint64_t x = a->cur[0];
	/* Its current frame its own shim (on the C stack): the activation was leaving (its
	 * frame popped; or entering, its current frame not yet set, holding the last one's):
	 * the frame above the outer one that links to that shim, as py_returning_frame takes */
	if (x >= st->cstack_lo && x < st->cstack_hi) {
		*nf = start;
		if (py_returning_frame(st, p, a->want[0], x, nf, &exact)) {
			st->entry[*nf - 1] = 1;
			*prev = a->want[0];
			*at = x;
			if (exact)
				st->stats.returning++;
			else
				st->stats.relinked++;
			return true;
		}
		/* else the frame pushed right above the outer one (the one entered links to
		 * the last activation's shim until it is linked to its own) */
		if (!(x = py_frame_above(ctx, st, p, a->want[0])))
			return false;
	} else if (!py_act_confirmed(a, 1)) {
		return false;
	}
	if (!py_frame_bytes(st, p, x, fb, L->frame_read))
		return false;
	code = py_code_ptr(L, py_u64(fb, L->frame_code));
	link = py_u64(fb, L->frame_previous);
	if (!code || code & 7 || code >= (1ull << 47) || py_is_shim(L, fb[L->frame_owner]) ||
	    fb[L->frame_owner] == L->owner_generator || link < st->cstack_lo ||
	    link >= st->cstack_hi)
		return false;
	*nf = start;
	st->raw[*nf] = (struct pywalk_frame){ code, py_u64(fb, L->frame_instr), fb[L->frame_owner], 0, 0 };
	st->ids[*nf] = 0;
	st->entry[(*nf)++] = 1;
	*prev = PY_PREV_UNKNOWN;
	return true;
}

/* 3.12+, a copy taken while the thread ran (perf's reader): the generator's frame was the
 * current one when the copy began and had yielded when its frame was copied (its previous
 * cleared), torn between the two. Its caller's frame is read now instead, not from the copy:
 * the generator's previous when it runs again, else the thread's current frame (then the
 * caller, or one it called since: py_gen_caller walks out from there). 0 when unreadable. */
static uint64_t py_gen_torn(struct py_proc *p, uint64_t ts, uint64_t gen_frame)
{
	const struct py_layout *L = p->layout;
	uint64_t v = 0;

	/* A generator in a tight loop is resumed and yields again within the two reads (the
	 * current frame is set after its previous when resumed, before it is cleared when it
	 * yields): then the pair is read again, a few times. */
	for (int again = 0; again < 4; again++) {
		if (py_read(p->pid, gen_frame + L->frame_previous, &v, 8) && v && !(v & 7))
			return v;
		if (!py_read(p->pid, ts + (L->tstate_cframe ? L->tstate_cframe :
				L->tstate_current_frame), &v, 8) || !v)
			return 0;
		if (L->tstate_cframe && !py_read(p->pid, v + L->cframe_current_frame, &v, 8))
			return 0;
		if (v != gen_frame)
			return v;
	}
	return 0;
}

/* 3.12+: a generator run inline, in its caller's activation k, that has yielded since (3.11
 * runs each in an activation of its own, whose entry it is): its caller is found by
 * py_gen_caller and walked on from, or the run is not read. */
static enum py_lost py_gen_inline(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
				  const struct py_anchor *a, int k, bool check, int *nf,
				  uint64_t *prev, uint64_t *at)
{
	uint64_t from = a->shims && k == 0 ? a->frame_now : 0, caller;

	for (int j = 0; !from && j < a->nnow; j++)
		if (a->now_addr[j] == a->cf[k])
			from = a->now_cur[j];
	if (from == *at)
		from = py_gen_torn(p, a->ts, *at);
	caller = from ? py_gen_caller(st, p, *at, from) : 0;
	if (caller && py_walk_at(ctx, st, p, caller, true, nf, prev, at) &&
	    (!check || *prev == a->want[k])) {
		st->stats.gen_suspended++;
		return PY_LOST_N;
	}
	return PY_LOST_POPPED;
}

/* Why activation k's run [start, *nf), walked (ok; its entry frame's previous *prev, where it
 * ended *at), is not read, or PY_LOST_N when it is read (py_runs_anchored's checks). */
static enum py_lost py_run_verdict(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
				   const struct py_anchor *a, int k, int start, bool ok, int *nf,
				   uint64_t *prev, uint64_t *at)
{
	const struct py_layout *L = p->layout;
	/* The outermost activation of a complete stack was entered from no frame. */
	bool check = k + 1 < a->nacts || a->s->complete;
	bool gen_last = *nf > start && st->raw[*nf - 1].owner == L->owner_generator;

	if (!ok)
		/* the first frame unreadable: freed; a later one: the chain no longer links as
		 * it did (its frames were popped and the memory reused since) */
		return *nf > start ? PY_LOST_POPPED : PY_LOST_READ;
	if (*prev == PY_PREV_UNKNOWN) {
		/* 3.12+: the innermost activation (a callback from C, microseconds long)
		 * returned, and another since, whose entry frame was pushed at the same address
		 * of the data stack, from the same frame of the outer activation (checked by
		 * py_check_outer): its frames are taken, as read after the program moved on (a
		 * C function calling two Python callbacks from one place could have run the
		 * other) */
		if (k != 0)
			return PY_LOST_POPPED;
		st->stats.relinked++;
		return PY_LOST_N;
	}
	if (!*prev && *nf - start == 1 && gen_last && !st->entry[*nf - 1])
		return py_gen_inline(ctx, st, p, a, k, check, nf, prev, at);
	if (check && *prev != a->want[k]) {
		/* 3.11: a generator's frame is the entry of an activation of its own, unlinked
		 * when it yields: the frames around it are the other activations', anchored */
		if (!*prev && gen_last && st->entry[*nf - 1]) {
			st->stats.gen_suspended++;
			return PY_LOST_N;
		}
		return PY_LOST_POPPED; /* popped (and reused) since */
	}
	return PY_LOST_N;
}

/* An innermost activation whose one frame is still being set up (before its RESUME: a
 * callback from C being entered) runs that function: shown at its first line rather than left
 * native. With the frames copied at the stop, as of the sample; else (perf's reader) only for a
 * callback (an activation under an outer one, read as anchored), as read after the program
 * moved on: that call being entered, or a later one's pushed at the same address from the same
 * outer frame (a callback from C lasts microseconds; the read comes 0.1 ms or more after). */
static void py_show_entering(struct py_state *st, struct py_proc *p, const int *start, int nacts)
{
	bool at_stop = p->frozen && p->frozen->at_stop;
	if ((!at_stop && nacts < 2) || nacts <= 0 || start[1] - start[0] != 1 ||
	    st->ids[start[0]] != UINT32_MAX || !st->raw[start[0]].code)
		return;
	uint64_t code = st->raw[start[0]].code;
	struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code);
	if (c && c->checked == st->stamp) {
		st->ids[start[0]] = py_frame_id(st, c->name, c->file, c->first_line);
		st->stats.entering++;
	}
}

static int py_runs_anchored(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			    uint64_t ts, const struct py_module_info *mi, const struct py_stack *s,
			    const struct unwind_loc *locs, int n, const int *acts, int nacts,
			    int *start, int *unread)
{
	const struct py_layout *L = p->layout;
	struct py_anchor *a = st->anchor;
	int confirmed = 0, nf = 0;

	*unread = 0;
	if (!py_anchor_set(p, mi, ts, s, locs, n, acts, nacts, a))
		return -1;
	uint32_t marker = py_marker_id(ctx, st);
	for (int k = 0; k < nacts; k++) {
		uint64_t prev = UINT64_MAX, at = 0;
		bool ok;
		start[k] = nf;
		if (a->shims && k == 0)
			ok = py_walk_innermost_now(ctx, st, p, a, start[k], &nf, &prev, &at);
		else
			ok = py_walk_at(ctx, st, p, a->cur[k], true, &nf, &prev, &at);
		bool exact;
		if (ok && k == 0 && nf == start[k] && nacts > 1 && L->owner_cstack && prev &&
		    prev != PY_PREV_UNKNOWN && py_returning_frame(st, p, prev, at, &nf, &exact)) {
			if (exact)
				st->stats.returning++;
			else
				st->stats.relinked++;
		}
		if (a->shims && k == 0 && !ok && nacts > 1)
			ok = py_walk_returned(ctx, st, p, a, start[k], &nf, &prev, &at);
		if (!a->shims && k == 0 && nacts > 1 &&
		    (!ok || (prev != a->want[0] && prev != PY_PREV_UNKNOWN && prev)) &&
		    py_walk_entry_now(ctx, st, p, a, start[k], &nf, &prev, &at))
			ok = true;
		enum py_lost why = py_run_verdict(ctx, st, p, a, k, start[k], ok, &nf, &prev, &at);
		if (why != PY_LOST_N) {
			nf = start[k];
			st->raw[nf] = (struct pywalk_frame){ 0 };
			st->ids[nf] = marker;
			st->entry[nf++] = 1;
			st->stats.lost[why]++;
			(*unread)++;
		} else if (prev != PY_PREV_UNKNOWN) {
			confirmed += py_act_confirmed(a, k); /* else not confirmed: moved on */
		}
	}
	start[nacts] = nf;
	bool named = py_name_frames(ctx, st, p, 0, nf);
	py_show_entering(st, p, start, nacts);
	py_check_outer(st, p, s, locs, n, acts, nacts, start, marker, unread);
	/* an activation with a code object that could not be read: the marker */
	for (int k = 0; !named && k < nacts; k++)
		for (int f = start[k]; f < start[k + 1]; f++)
			if (st->ids[f] == PY_ID_UNREAD) {
				py_run_unread(st, start, k, marker, PY_LOST_READ, unread);
				break;
			}
	return confirmed;
}

/* The native interpreter activations of locs[0, n), innermost first, into acts (at most
 * PY_MAX_FRAMES); *runtime_module: the runtime they run in. Returns their count, 0 when none
 * or the stack was merged already. */
static int py_find_acts(struct unwind_ctx *ctx, struct py_state *st, const struct unwind_loc *locs,
			int n, int *acts, uint32_t *runtime_module)
{
	int nacts = 0;

	*runtime_module = UINT32_MAX;
	for (int i = 0; i < n && nacts < PY_MAX_FRAMES; i++) {
		if (locs[i].module == st->module)
			return 0; /* merged already */
		struct py_module_info *mi = py_module_info(ctx, st, locs[i].module);
		if (mi->state != 2 || locs[i].offset < mi->eval_lo || locs[i].offset > mi->eval_hi)
			continue;
		if (*runtime_module == UINT32_MAX)
			*runtime_module = locs[i].module;
		if (locs[i].module == *runtime_module)
			acts[nacts++] = i;
	}
	return nacts;
}

bool py_stack_native(struct unwind_ctx *ctx, const struct unwind_loc *locs, int n)
{
	struct py_state *st = ctx->python;

	for (int i = 0; st && i < n; i++)
		if (locs[i].module == st->module || py_module_info(ctx, st, locs[i].module)->state == 2)
			return false;
	return true;
}

/* Write locs[0, n) with run a - shift_acts + shift_runs in place of activation a (those
 * outside the runs, or whose run shows no frame, stay native). Returns the new count. */
static int py_put_runs(struct py_state *st, struct unwind_loc *locs, int n, int max,
		       const int *acts, int nacts, const int *run_start, int nruns,
		       int shift_acts, int shift_runs, int *native)
{
	int out = 0, next_act = 0;

	*native = 0;

	for (int i = 0; i < n; i++) {
		if (next_act < nacts && acts[next_act] == i) {
			int a = next_act++;
			int r = a - shift_acts + shift_runs;
			if (a >= shift_acts && r < nruns && py_put_run(st, run_start, r, &out, max))
				continue;
			(*native)++;
		}
		if (out < max)
			st->out[out++] = locs[i];
	}
	memcpy(locs, st->out, (size_t)out * sizeof(*locs));
	return out;
}

/* Tell py_capture how to copy thread tid's frames (its thread state ts) at the next stops. */
static void py_recipe_set(struct py_state *st, const struct py_proc *p, uint32_t tid, uint64_t ts)
{
	const struct py_layout *L = p->layout;
	struct py_recipe r;
	memset(&r, 0, sizeof(r)); /* compared whole, padding included */
	r.pid = p->pid, r.tid = tid, r.c.tstate = ts;
	r.c.off_ptr = L->tstate_cframe ? L->tstate_cframe : L->tstate_current_frame;
	r.c.off_cur = L->tstate_cframe ? L->cframe_current_frame : UINT32_MAX;
	r.c.off_tid = L->tstate_native_tid;
	r.c.off_prev = L->frame_previous, r.c.frame_read = L->frame_read;
	r.c.off_code = L->frame_code, r.c.code_read = L->code_read, r.c.code_tag = L->code_tag;
	r.c.known_codes = st->known_codes, r.c.nknown = PY_KNOWN_CODES;
	struct py_recipe *slot = &st->recipes[tid % PY_RECIPES];

	if (!memcmp(slot, &r, sizeof(r)))
		return;
	pthread_mutex_lock(&st->recipes_lock);
	*slot = r;
	pthread_mutex_unlock(&st->recipes_lock);
}

static int py_merge_sample(struct unwind_ctx *ctx, struct py_proc **pp, uint32_t pid,
			   uint32_t tid, const struct py_stack *stack, struct unwind_loc *locs,
			   int n, int max, enum py_merge_result *result);

int py_merge(struct unwind_ctx *ctx, uint32_t pid, uint32_t tid, const struct py_stack *stack,
	     struct unwind_loc *locs, int n, int max, enum py_merge_result *result)
{
	struct py_proc *p = NULL;

	n = py_merge_sample(ctx, &p, pid, tid, stack, locs, n, max, result);
	if (p) {
		p->frozen = NULL; /* the sample's copies are the caller's */
		p->late = false;
	}
	return n;
}

/* Process pid's state, module its runtime: NULL (*result says why) when it cannot be read. */
static struct py_proc *py_proc_ready(struct unwind_ctx *ctx, struct py_state *st, uint32_t pid,
				     uint32_t module, enum py_merge_result *result)
{
	struct py_proc *p = py_proc_get(ctx, st, pid, module, &st->mods[module]);

	if (p->state == PY_PROC_READY)
		return p;
	*result = p->state == PY_PROC_UNSUPPORTED ? PY_MERGE_UNSUPPORTED : PY_MERGE_UNREADABLE;
	return NULL;
}

/* Runs of the frames st->ids/entry[0, nf), each ending at an entry frame (or the last), into
 * run_start[0, nruns] (run r is [run_start[r], run_start[r + 1])); returns nruns. */
static int py_runs_from_entries(const struct py_state *st, int nf, int *run_start)
{
	int nruns = 0;

	run_start[0] = 0;
	for (int i = 0; i < nf; i++)
		if ((st->entry[i] || i == nf - 1) && nruns < PY_MAX_FRAMES)
			run_start[++nruns] = i + 1;
	return nruns;
}

/* Runs matched to activations by count: when they differ, aligned from the root (from_root:
 * what is shifted, *shift_runs runs or *shift_acts activations, at the leaf end) or from the
 * leaf (nothing shifted). */
static void py_runs_align(int nruns, int nacts, bool from_root, int *shift_runs, int *shift_acts)
{
	*shift_runs = nruns > nacts && from_root ? nruns - nacts : 0;
	*shift_acts = nacts > nruns && from_root ? nacts - nruns : 0;
}

/* Learn where the interpreter keeps its _PyCFrame (3.11, 3.12) or entry shim (3.13) from a
 * complete sample, within its tries. */
static void py_learn_anchors(struct py_module_info *mi, const struct py_proc *p,
			     const struct py_stack *stack, const struct unwind_loc *locs, int n,
			     const int *acts, int nacts, uint64_t ts)
{
	const struct py_layout *L = p->layout;

	if (!stack || !stack->complete)
		return;
	if (!mi->cframe_off && L->tstate_root_cframe)
		py_learn_cframe_off(mi, L, stack, locs, n, acts, nacts, ts + L->tstate_root_cframe);
	if (!mi->shim_off && !L->tstate_cframe && L->owner_cstack && mi->learn_left) {
		mi->learn_left--;
		mi->shim_off = py_shim_offset_find(L, stack, locs, n, acts, nacts, p->none);
	}
}

static bool py_gen_resumed(struct py_proc *p, uint64_t first, const struct pywalk_frame *f0,
			   struct py_ext_frame *out);

/* 3.11: a generator's activation caught being entered or left at the sample (its _PyCFrame
 * not linked yet, or no more: the chain read has one run fewer than the activations, the
 * innermost one short) is completed as bpf mode completes it: with the generator that its
 * caller's FOR_ITER or SEND resumes (py_gen_resumed), put before the chain's nf frames as a
 * run of its own, as read after the program moved on. Returns whether it was. */
static bool py_gen_prepend(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			   uint64_t ts, int *nf)
{
	const struct py_layout *L = p->layout;
	uint64_t cframe, first;
	struct py_ext_frame g;

	if (!L->frame_is_entry || !L->tstate_cframe || *nf < 1 || *nf >= PY_MAX_FRAMES ||
	    !st->raw[0].code || !py_rd_ptr(p, ts + L->tstate_cframe, &cframe) ||
	    !py_rd_ptr(p, cframe + L->cframe_current_frame, &first) ||
	    !py_gen_resumed(p, first, &st->raw[0], &g))
		return false;
	struct pywalk_frame gf = { g.code, g.code + L->code_code + 2ull * g.unit,
				   (uint8_t)L->owner_generator, PYWALK_GENERATOR | PYWALK_ENTRY, 0 };
	/* Its code object checked first (py_name_frames then names it from the cache), so that a
	 * generator that cannot be named leaves the chain as it was. */
	py_codes_check(ctx, st, p, &gf, 1);
	struct py_code *c = cs_hash_find(&p->codes, cs_hash_u64(gf.code), py_code_eq, &gf.code);
	if (!c || c->checked != st->stamp)
		return false;
	memmove(st->raw + 1, st->raw, (size_t)*nf * sizeof(st->raw[0]));
	memmove(st->ids + 1, st->ids, (size_t)*nf * sizeof(st->ids[0]));
	memmove(st->entry + 1, st->entry, (size_t)*nf);
	st->raw[0] = gf;
	st->entry[0] = 1;
	py_name_frames(ctx, st, p, 0, 1);
	(*nf)++;
	st->stats.gen_resumed++;
	return true;
}

/* No anchor in the copy: the chain as it is now, one run per activation, matched by count.
 * Normally one run per activation. If the program moved on between the sample and this read,
 * they differ: the outer frames change least, so aligned from the root when the native unwind
 * reached it, from the leaf when the stack copy ended first (its outer activations are not in
 * the sample). Returns false (*result UNREADABLE) when the chain could not be read. */
static bool py_runs_by_count(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			     uint64_t ts, const struct py_stack *stack, int nacts, int *run_start,
			     int *nruns, int *shift_runs, int *shift_acts,
			     enum py_merge_result *result)
{
	int nframes = py_read_chain(ctx, st, p, ts);

	if (nframes <= 0) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.lost[PY_LOST_READ] += (uint64_t)nacts;
		return false;
	}
	*nruns = py_runs_from_entries(st, nframes, run_start);
	bool resumed = nacts == *nruns + 1 && py_gen_prepend(ctx, st, p, ts, &nframes);
	if (resumed)
		*nruns = py_runs_from_entries(st, nframes, run_start);
	*result = *nruns == nacts && !resumed ? PY_MERGE_OK : PY_MERGE_CHANGED;
	py_runs_align(*nruns, nacts, !stack || stack->complete, shift_runs, shift_acts);
	if (nacts > *nruns)
		st->stats.lost[PY_LOST_COUNT] += (uint64_t)(nacts - *nruns);
	return true;
}

/* The sample's copies of its memory (py_stack.mem), read in place of the live memory. */
static void py_frozen_use(struct py_state *st, struct py_proc *p, const struct py_stack *stack)
{
	if (!stack || !stack->mem || !stack->mem_size)
		return;
	py_frozen_set(&st->frozen, stack);
	p->frozen = &st->frozen;
	if (st->frozen.at_stop)
		st->stats.captured++;
	else
		st->stats.copied_running++;
}

/* ------------------------------------------------------------------------------------------ */
/* 3.14 whose interpreter loop has no symbol: activations found by their entry frames */

/* Whether locs[0, n) run in a 3.14+ runtime (module *runtime_module), not merged yet. */
static bool py_find_runtime_314(struct unwind_ctx *ctx, struct py_state *st,
				const struct unwind_loc *locs, int n, uint32_t *runtime_module)
{
	for (int i = 0; i < n; i++) {
		if (locs[i].module == st->module)
			return false; /* merged already */
		struct py_module_info *mi = py_module_info(ctx, st, locs[i].module);
		if (mi->state == 2 && mi->version >= 0x030e0000) {
			*runtime_module = locs[i].module;
			return true;
		}
	}
	return false;
}

/* Write locs[0, n) with run r in place of locs[act_of_run[r]] (runs innermost first, their
 * activations ascending; -1: not placed). Returns the new count. */
static int py_put_runs_at(struct py_state *st, struct unwind_loc *locs, int n, int max,
			  const int *run_start, int nruns, const int *act_of_run)
{
	int out = 0, r = 0;

	for (int i = 0; i < n; i++) {
		while (r < nruns && act_of_run[r] < i)
			r++;
		if (r < nruns && act_of_run[r] == i && py_put_run(st, run_start, r, &out, max)) {
			r++;
			continue;
		}
		if (out < max)
			st->out[out++] = locs[i];
	}
	memcpy(locs, st->out, (size_t)out * sizeof(*locs));
	return out;
}

/* The native frame of locs[from, n) whose stack frame [sp, CFA) holds addr, or -1. Frames
 * without a stack pointer (the kernel's, first) are passed. */
static int py_frame_holding(const struct unwind_loc *locs, int n, int from, uint64_t addr)
{
	for (int i = from; i + 1 < n; i++) {
		if (!locs[i].sp)
			continue;
		if (!locs[i + 1].sp)
			return -1;
		if (addr >= locs[i].sp && addr < locs[i + 1].sp)
			return i;
	}
	return -1;
}

/* Where this sample's frames come from: its copy (ptrace's stop, perf's reader) where it has
 * them, else the process now; a sample read late trusts only code objects cached before it. */
static void py_sample_source(struct py_state *st, struct py_proc *p, const struct py_stack *stack)
{
	py_frozen_use(st, p, stack);
	p->late = stack && stack->age_ns > PY_CODE_MAX_AGE_NS;
	if (p->late)
		p->sample_ns = cs_monotonic_ns() - stack->age_ns;
}

/* How long after the sample its frames were taken: at the stop (0), by perf's reader, or now. */
static uint64_t py_sample_taken_ns(const struct py_proc *p, const struct py_stack *stack)
{
	return !stack ? 0 : !p->frozen ? stack->age_ns : p->frozen->at_stop ? 0 : stack->mem_age_ns;
}

/* 3.14: shim_off is learned from samples read sooner than this after they were taken */
#define PY_LEARN_AGE_NS 1000000ull

/* 3.14, the chain read again after a torn read (the innermost activation of the sample
 * changed since): whether the run now innermost, placed at native frame i, is as it was at the
 * sample. It is when the sample had native frames under i (the activation was calling out, so
 * not the one that changed: a callback from that call returned since, or a frame of its
 * was read being set up) and the sample's copy from its stack pointer to i's CFA, or its
 * registers, hold a pointer to where the run's innermost frame is now (its instruction, as
 * py_copy_points_into: kept live across the call), so it was in the same call then. */
static bool py_act_still_calls(struct py_state *st, struct py_proc *p, const struct py_stack *s,
			       const struct unwind_loc *locs, int n, int i, int from, int to)
{
	bool deeper = false;

	for (int j = 0; j < i && !deeper; j++)
		deeper = locs[j].sp != 0;
	if (!s || !deeper)
		return false;
	for (int f = from; f < to; f++) {
		if (st->ids[f] == UINT32_MAX)
			continue;
		uint64_t code = st->raw[f].code, instr = st->raw[f].instr, hi = py_act_cfa(locs, n, i);
		const struct py_code *c = code ? cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code) : NULL;
		if (!c || !c->ncode || !hi || st->ids[f] == PY_ID_UNREAD)
			return false;
		return py_copy_holds(s, instr > 8 ? instr - 8 : 0, instr + 24, s->addr, hi);
	}
	return false;
}

/* 3.14: the native frame at a ran a run: its caller's offset is a call site of the
 * interpreter loop (kept, up to PY_LOOP_CALLERS). */
static void py_loop_caller_learn(struct py_module_info *mi, const struct unwind_loc *locs, int n,
				 int a)
{
	if (a + 1 >= n || locs[a + 1].module != locs[a].module)
		return;
	for (int i = 0; i < PY_LOOP_CALLERS; i++) {
		if (mi->loop_callers[i] == locs[a + 1].offset)
			return;
		if (!mi->loop_callers[i]) {
			mi->loop_callers[i] = locs[a + 1].offset;
			return;
		}
	}
}

/* 3.14: native frames called from a learned call site of the interpreter loop
 * (py_loop_caller_learn) that ran no run at the sample (an activation being entered or left,
 * its entry frame not linked: no frame of its own) show the marker frame, counted: a native
 * frame of a loop without a name would not say so. A placed run that shows no frame (its
 * entry frame only) gets it too. Returns how many. */
static int py_mark_unrun_loops(struct py_state *st, const struct py_module_info *mi,
			       struct unwind_loc *locs, int n, uint32_t runtime_module,
			       const int *act_of_run, int nruns, const int *run_start,
			       uint32_t marker)
{
	int marked = 0;

	for (int j = 0, r = 0; j + 1 < n; j++) {
		while (r < nruns && act_of_run[r] < j)
			r++;
		bool placed = r < nruns && act_of_run[r] == j;
		if ((placed && py_run_shown(st, run_start, r)) || locs[j].module != runtime_module ||
		    locs[j + 1].module != runtime_module)
			continue;
		bool loop = false;
		for (int i = 0; i < PY_LOOP_CALLERS && mi->loop_callers[i] && !loop; i++)
			loop = mi->loop_callers[i] == locs[j + 1].offset;
		if (!loop)
			continue;
		locs[j] = (struct unwind_loc){ st->module, marker, 0, 0 };
		st->stats.acts++;
		st->stats.lost[PY_LOST_COUNT]++;
		marked++;
	}
	return marked;
}

/* 3.14: whether native frame j of the sample was an activation: its stack frame held, in the
 * sample's copy, an entry frame at CFA - shim_off (py_shim_chain_ok: a shim's owner, running
 * what every shim runs); *prev: the frame it linked to, its caller's innermost then. */
static bool py_copy_entry_at(const struct py_proc *p, const struct py_stack *s,
			     const struct unwind_loc *locs, int n, int j, uint64_t shim_off,
			     uint64_t *prev)
{
	return s && shim_off && p->walk.trampoline &&
	       py_shim_chain_ok(p->layout, s, locs, n, &j, 1, shim_off, p->walk.trampoline, false,
				prev);
}

/* 3.14: run r's shim (at shim, read now) is not where the sample's copy had an activation
 * (the run is of a later call: a callback from C called again since, from another depth of
 * the C code, deeper or not, the one sampled having returned). The first native frame of
 * locs[from, n) that was an activation at the sample (py_copy_entry_at) is that run's when its entry
 * frame linked to the same caller's frame as the run's shim links to now: the same call site
 * of the same caller (whose code, caller_code, the copy says it ran then), as 3.13 takes a
 * later call's frames that link as the sampled one did. Returns that frame, or -1. */
static int py_act_relink(struct py_state *st, struct py_proc *p, const struct py_stack *s,
			 const struct unwind_loc *locs, int n, int from, uint32_t runtime_module,
			 uint64_t shim_off, uint64_t shim, uint64_t caller_code)
{
	const struct py_layout *L = p->layout;
	const struct py_code *caller = cs_hash_find(&p->codes, cs_hash_u64(caller_code), py_code_eq,
						    &caller_code);
	uint64_t now, then;

	if (!caller || !caller->ncode || !py_rd_ptr(p, shim + L->frame_previous, &now) || !now)
		return -1;
	for (int j = from; j + 1 < n; j++) {
		if (locs[j].module != runtime_module ||
		    !py_copy_entry_at(p, s, locs, n, j, shim_off, &then))
			continue;
		/* the caller runs what it ran then: the copy above the entry frame points into its
		 * code (it was calling out from it) */
		uint64_t entry = py_act_cfa(locs, n, j) - shim_off;
		if (then != now || !py_copy_points_into(s, L, caller, entry, s->addr + s->size))
			return -1;
		st->stats.relinked++;
		return j;
	}
	return -1;
}

/* Whether cached code object c's instructions hold instr. */
static bool py_code_holds(const struct py_layout *L, const struct py_code *c, uint64_t instr)
{
	return c && c->ncode && instr >= c->addr + L->code_code &&
	       instr < c->addr + L->code_code + 2 * c->ncode;
}

/* The cached code object whose instructions instr points into, or NULL: for a frame cleared
 * when it was popped (3.14 clears f_executable; its instruction pointer stays). The few found
 * last are tried first (the callbacks a program pops are few: deep.py's four threads hit them
 * in all but 2 of 100 calls), then every cached one: a scan of the whole cache, which holds
 * up to thousands in a large program. */
static const struct py_code *py_code_holding(struct py_proc *p, uint64_t instr)
{
	const struct py_layout *L = p->layout;
	const struct py_code *c = NULL;

	for (unsigned h = 0; h < PY_POPPED_HINTS && !py_code_holds(L, c, instr); h++) {
		uint64_t code = p->popped_code[(p->popped_next - 1 - h) % PY_POPPED_HINTS];
		c = code ? cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code) : NULL;
	}
	if (py_code_holds(L, c, instr))
		return c;
	for (size_t i = 0; !py_code_holds(L, c, instr); i++) {
		if (i == p->codes.cap)
			return NULL;
		c = p->codes.slots[i].item;
	}
	p->popped_code[p->popped_next++ % PY_POPPED_HINTS] = c->addr;
	return c;
}

/* 3.14: the frame that native activation j ran at the sample (its entry frame at entry, in
 * the copy s, linked to caller frame prev), popped since (a callback from C that returned
 * before the read). As 3.13's py_walk_under_callback: a Python function's frame is pushed on
 * the data stack right where its caller's ends, so the callback's first frame was at the end
 * of prev's, and what is there now is it, or a later call's from the same caller through the
 * same entry frame address (linked to entry). Taken when its code object is known already (no
 * read of a guessed address) and the sample's copy under the entry frame points into its code
 * (it was running, or calling out from, that code then), and into the caller's above it, up to
 * outer_cfa. Without a copy (s NULL: bpf, which read the chain at the sample), the caller's
 * frame must still run caller_code, what the program read, and the frame link to entry.
 * Named in st->raw's spare slot k. Returns its frame id, or UINT32_MAX. */
static uint32_t py_act_popped_frame(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
				    const struct py_stack *s, uint64_t entry, uint64_t prev,
				    uint64_t outer_cfa, uint64_t caller_code, int k)
{
	const struct py_layout *L = p->layout;
	uint8_t fb[PY_MAX_OBJECT];
	uint64_t code;

	if (k >= PY_MAX_FRAMES || !prev || prev & 7 || !py_frame_bytes(st, p, prev, fb, L->frame_read))
		return UINT32_MAX;
	code = py_code_ptr(L, py_u64(fb, L->frame_code));
	const struct py_code *caller = cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code);
	uint64_t x = py_frame_end(caller, prev);
	if (!x || !caller->ncode || (caller_code && code != caller_code) ||
	    (s && !py_copy_points_into(s, L, caller, entry, outer_cfa)) ||
	    !py_frame_bytes(st, p, x, fb, L->frame_read) || py_is_shim(L, fb[L->frame_owner]) ||
	    fb[L->frame_owner] == L->owner_generator)
		return UINT32_MAX;
	code = py_code_ptr(L, py_u64(fb, L->frame_code));
	uint64_t instr = py_u64(fb, L->frame_instr), link = py_u64(fb, L->frame_previous);
	/* (or a later call's through another entry frame on the C stack, gone or not) */
	if (link != entry &&
	    (!s || link & 7 || link < st->cstack_lo || link >= st->cstack_hi))
		return UINT32_MAX;
	const struct py_code *c = code ? cs_hash_find(&p->codes, cs_hash_u64(code), py_code_eq, &code)
				       : py_code_holding(p, instr);
	if (!c || !c->ncode || (s && !py_copy_points_into(s, L, c, s->addr, entry)))
		return UINT32_MAX;
	code = c->addr;
	st->raw[k] = (struct pywalk_frame){ code, instr, 0, PYWALK_ENTRY, 0 };
	if (!py_name_frames(ctx, st, p, k, k + 1))
		return UINT32_MAX;
	return st->ids[k];
}

/* 3.14: the native frames of locs[0, n) that were activations at the sample
 * (py_copy_entry_at) and got no run (not placed: act_of_run[0, nruns)): the frame each ran,
 * popped before the read, where it is found (py_act_popped_frame; *relinked counts them),
 * else the marker frame. Spare slot k of st->raw is used. Returns how many got the marker. */
static int py_mark_unplaced(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			    const struct py_stack *s, struct unwind_loc *locs, int n,
			    uint32_t runtime_module, uint64_t shim_off, const int *act_of_run,
			    int nruns, int k, uint32_t marker)
{
	uint64_t prev;
	int marked = 0;

	for (int j = 0, r = 0; j + 1 < n; j++) {
		while (r < nruns && act_of_run[r] < j)
			r++;
		if ((r < nruns && act_of_run[r] == j) || locs[j].module != runtime_module ||
		    !py_copy_entry_at(p, s, locs, n, j, shim_off, &prev))
			continue;
		/* (act_of_run[r], past j: the next outer activation placed, whose CFA bounds the
		 * copy that says what its frame ran) */
		int outer = r < nruns ? act_of_run[r] : -1;
		st->stats.acts++;
		uint32_t id = py_act_popped_frame(ctx, st, p, s, py_act_cfa(locs, n, j) - shim_off,
						  prev, outer >= 0 ? py_act_cfa(locs, n, outer) : 0, 0,
						  k);
		if (id != UINT32_MAX) {
			locs[j] = (struct unwind_loc){ st->module, id, 0, 0 };
			st->stats.relinked++;
			continue;
		}
		locs[j] = (struct unwind_loc){ st->module, marker, 0, 0 };
		marked++;
	}
	return marked;
}

/* 3.14: a placed run with no frame to show (its shim only, or a frame being set up: a later
 * call being entered or left when read) would leave the native frame: it shows the frame the
 * activation ran at the sample where that is found (py_act_popped_frame, in spare slot k),
 * else the marker (py_run_unread, *marked). */
static void py_fill_empty_runs(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			       const struct py_stack *s, const struct unwind_loc *locs, int n,
			       const int *run_start, int nruns, const int *act_of_run,
			       uint64_t shim_off, int k, uint32_t marker, int *marked)
{
	for (int r = 0; r < nruns; r++) {
		uint64_t prev;
		int i = act_of_run[r];
		if (i < 0 || py_run_shown(st, run_start, r) || run_start[r + 1] == run_start[r])
			continue;
		int outer = r + 1 < nruns ? act_of_run[r + 1] : -1;
		uint32_t id = py_copy_entry_at(p, s, locs, n, i, shim_off, &prev)
				      ? py_act_popped_frame(ctx, st, p, s, py_act_cfa(locs, n, i) - shim_off,
							    prev, outer >= 0 ? py_act_cfa(locs, n, outer) : 0,
							    0, k)
				      : UINT32_MAX;
		if (id == UINT32_MAX) {
			py_run_unread(st, run_start, r, marker, PY_LOST_POPPED, marked);
			continue;
		}
		py_run_take(st, run_start, r, id);
	}
}

/* 3.14: walk thread state ts's chain from frame into *w (st->raw, shims), as of the sample
 * where the copy allows: a torn read (see below) is tried again, up to twice, from the frame
 * current then; *inner_unread says the innermost activation is not as of the sample. Returns
 * how the walk ended. */
static enum pywalk_end py_walk_shims(struct py_state *st, struct py_proc *p, uint64_t ts,
				     uint64_t frame, struct py_walk_arg *a, uint64_t *shims,
				     struct pywalk *out, bool *inner_unread)
{
	const struct py_layout *L = p->layout;
	struct pywalk w;
	enum pywalk_end end;

	for (int attempt = 0;; attempt++) {
		w = (struct pywalk){ .L = &p->walk, .read = py_walk_read, .check = py_walk_check,
				     .arg = a, .out = st->raw, .max = PY_MAX_FRAMES,
				     .max_depth = PY_MAX_FRAMES, .shims = shims,
				     .max_shims = PY_MAX_FRAMES };
		end = pywalk_walk(&w, frame);
		/* Torn: read while the innermost activation changed (copied by perf's reader, or
		 * read now: later than the sample), a frame being set up or cleared (its
		 * f_executable NULL), a generator that yielded in between (its previous
		 * cleared, no shim under it), or any chain that ends with no shim (the thread's
		 * first frame is one: a frame read before its previous was linked, or after
		 * it was cleared). Its frames are not as of the sample: the chain is
		 * read again as it is now, for the outer activations' shims (they still hold
		 * what they ran when they called in), and the innermost shows as not read. */
		bool torn = end != PYWALK_CHAIN_END || !w.nshims;
		if (!torn || attempt == 2 || (p->frozen && p->frozen->at_stop))
			break;
		/* A frame being pushed or cleared when read (f_executable NULL) is passed: the
		 * frames it links to are the activation's as they were read (perf mode reads
		 * after the sample in any case). */
		uint8_t fb[PY_MAX_OBJECT];
		uint64_t prev;
		if (attempt == 0 && end == PYWALK_BROKEN && !w.n &&
		    py_frame_bytes(st, p, frame, fb, L->frame_read) &&
		    !py_code_ptr(L, py_u64(fb, L->frame_code)) && !py_is_shim(L, fb[L->frame_owner]) &&
		    (prev = py_u64(fb, L->frame_previous)) && !(prev & 7)) {
			frame = prev;
			continue;
		}
		/* A generator that yielded between the copy's first read and its frame's: its
		 * frames were the thread's innermost as read, and its caller is the frame that
		 * holds it on its value stack (3.13's py_gen_inline does the same), found from the
		 * thread's current frame now: the caller's chain, read now, goes under them (once,
		 * whatever the live chain starts with). Not the current frame itself: the program
		 * may have moved on since (its generator finished, the next phase of deep.py run
		 * from the same frames' addresses), and no frame that holds it, the run is not
		 * read. */
		uint64_t now, caller;
		if (attempt == 0 && end == PYWALK_CHAIN_END && !w.nshims && w.n &&
		    (st->raw[w.n - 1].flags & PYWALK_GENERATOR) && w.n < PY_MAX_FRAMES) {
			int kept = w.n;
			p->frozen = NULL;
			st->nblocks = 0;
			/* (the generator may run again: its frame is current then, its caller
			 * the frame it links to) */
			if (!py_rd_ptr(p, ts + L->tstate_current_frame, &now))
				now = 0;
			else if (now && now == w.last)
				now = py_gen_torn(p, ts, now);
			if (now && (caller = py_gen_caller(st, p, w.last, now))) {
				struct pywalk w2 = w;
				w2.n = kept;
				w2.nshims = 0;
				enum pywalk_end e2 = pywalk_walk(&w2, caller);
				if (e2 == PYWALK_CHAIN_END && w2.nshims) {
					w = w2;
					end = e2;
					break;
				}
			}
			w.n = kept;
		}
		*inner_unread = true;
		p->frozen = NULL;
		st->nblocks = 0;
		if (!py_rd_ptr(p, ts + L->tstate_current_frame, &frame) || !frame)
			break;
	}
	*out = w;
	return end;
}

/* Where each run of the chain goes, and the counts of py_merge_by_shims. */
struct py_placement {
	int placed, unplaced, marked;
	uint64_t outer_off;            /* CFA - shim of the outermost run placed */
};

/* 3.14: act_of_run[r], the native frame of locs that run r (ending at shims[r]) goes in place
 * of (-1: none), as py_merge_by_shims says. */
static void py_place_runs(struct py_state *st, struct py_proc *p, const struct py_stack *stack,
			  const struct unwind_loc *locs, int n, uint32_t runtime_module,
			  const uint64_t *shims, int nshims, const int *run_start, int nruns,
			  uint32_t marker, int *act_of_run, struct py_placement *pl)
{
	const struct py_module_info *mi = &st->mods[runtime_module];
	int from = 0, placed = 0, unplaced = 0, marked = 0;
	uint64_t outer_off = 0;
	bool moved = false;

	for (int r = 0; r < nruns; r++) {
		act_of_run[r] = -1;
		int i = r < nshims ? py_frame_holding(locs, n, from, shims[r]) : -1;
		uint64_t cfa = i >= 0 ? py_act_cfa(locs, n, i) : 0, off = cfa ? cfa - shims[r] : 0;
		if (i < 0 || locs[i].module != runtime_module || (mi->shim_off && off != mi->shim_off)) {
			/* not where an activation was at the sample: a later call's, or gone */
			int j = r < nshims && r + 1 < nruns
					? py_act_relink(st, p, stack, locs, n, from, runtime_module,
							mi->shim_off, shims[r],
							st->raw[run_start[r + 1]].code)
					: -1;
			if (j >= 0) {
				act_of_run[r] = j;
				placed++;
				from = j + 1;
				continue;
			}
			if (i < 0)
				continue; /* not in the sampled stack */
			from = i + 1;
			unplaced++;
			moved = true;
			continue;
		}
		from = i + 1;
		act_of_run[r] = i;
		placed++;
		outer_off = off;
		if (moved && !py_act_still_calls(st, p, stack, locs, n, i, run_start[r], run_start[r + 1]))
			py_run_unread(st, run_start, r, marker, PY_LOST_POPPED, &marked);
		moved = false;
	}
	*pl = (struct py_placement){ placed, unplaced, marked, outer_off };
}

/* 3.14: the activations of the sample that got no run show the frame they ran where it is
 * found, else the marker, counted (the interpreter loop has no name: a native frame left in
 * their place would not say so): those whose entry frame the copy holds (py_mark_unplaced),
 * then those it shows none for (entered or left at the sample), told by the loop's call
 * sites (py_mark_unrun_loops, as bpf mode's), learned here from the activations whose entry
 * frame the copy holds where the interpreter keeps it (not from a run placed before
 * shim_off was learned, at a frame that only holds a later call's shim). Two passes, not
 * one: the second uses the call sites learned from this sample's own activations, and
 * must see the first's markers (a marked frame is no loop frame's caller). Spare slot k.
 * Returns how many got the marker. */
static int py_mark_unread_acts(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			       const struct py_stack *s, struct unwind_loc *locs, int n,
			       uint32_t runtime_module, const int *act_of_run,
			       const int *run_start, int nruns, int k, uint32_t marker)
{
	struct py_module_info *mi = &st->mods[runtime_module];
	uint64_t prev;
	int missing = py_mark_unplaced(ctx, st, p, s, locs, n, runtime_module, mi->shim_off,
				       act_of_run, nruns, k, marker);

	st->stats.lost[PY_LOST_POPPED] += (uint64_t)missing;
	for (int r = 0; r < nruns; r++)
		if (act_of_run[r] >= 0 &&
		    py_copy_entry_at(p, s, locs, n, act_of_run[r], mi->shim_off, &prev))
			py_loop_caller_learn(mi, locs, n, act_of_run[r]);
	return missing + py_mark_unrun_loops(st, mi, locs, n, runtime_module, act_of_run, nruns,
					     run_start, marker);
}

/* A 3.14 build whose _PyEval_EvalFrameDefault is a small wrapper around the interpreter loop,
 * which runs under a local symbol (Debian's 3.14.10, GCC 16 with LTO, stripped: the loop is an
 * LTO clone), so no native frame is an activation by its address. What still marks one is its
 * entry frame: a local of the loop's C frame, owned by the interpreter, linked into the
 * thread's chain under the run it runs. So the chain is walked first (as of the sample: at the
 * stop under ptrace, the reader's copy in perf mode, else now), and each shim it passes is
 * looked for in the native frames' stack frames ([sp, CFA)): the frame that holds it is that
 * activation, replaced by its run as _PyEval_EvalFrameDefault's frame is in 3.13. (A
 * tail-calling build, each bytecode a function of its own, would keep the running bytecode's
 * frame above the run.) Shims outside the sampled stack (an activation entered after the
 * sample, or past a truncated stack) place nothing. Returns the new count of locs; *result as
 * py_merge's. */
static int py_merge_by_shims(struct unwind_ctx *ctx, struct py_state *st, struct py_proc **pp,
			     uint32_t pid, uint32_t tid, const struct py_stack *stack,
			     struct unwind_loc *locs, int n, int max, uint32_t runtime_module,
			     enum py_merge_result *result)
{
	struct py_proc *p = py_proc_get(ctx, st, pid, runtime_module, &st->mods[runtime_module]);

	if (p->state != PY_PROC_READY)
		return n; /* py_proc_get warned once; nothing is known to be Python here */
	st->stamp++;
	st->nblocks = 0;
	st->copy = stack;
	py_cstack_set(st, stack);
	*pp = p;
	py_sample_source(st, p, stack);
	const struct py_layout *L = p->layout;
	uint64_t ts = py_thread_state(p, tid), frame;
	if (!ts || !py_rd_ptr(p, ts + L->tstate_current_frame, &frame) || !frame)
		return n; /* no Python thread state, or no Python running in it */
	py_recipe_set(st, p, tid, ts);
	uint64_t taken = py_sample_taken_ns(p, stack);
	st->stats.samples++;
	if (taken > PY_MAX_AGE_NS || (stack && stack->torn)) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.lost[stack && stack->torn ? PY_LOST_READ : PY_LOST_LATE]++;
		return n;
	}
	uint64_t shims[PY_MAX_FRAMES];
	struct py_walk_arg a = { ctx, st, p, 0 };
	struct pywalk w;
	bool inner_unread = false;
	enum pywalk_end end = py_walk_shims(st, p, ts, frame, &a, shims, &w, &inner_unread);
	for (int i = 0; i < w.n; i++) {
		st->ids[i] = st->raw[i].code ? 0 : UINT32_MAX;
		st->entry[i] = (st->raw[i].flags & PYWALK_ENTRY) != 0;
	}
	if ((end != PYWALK_CHAIN_END && !w.nshims) || !py_name_frames(ctx, st, p, 0, w.n)) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.lost[PY_LOST_READ]++;
		return n;
	}
	int run_start[PY_MAX_FRAMES + 1];
	int nruns = py_runs_from_entries(st, w.n, run_start);
	int nshims = w.nshims < PY_MAX_FRAMES ? w.nshims : PY_MAX_FRAMES;
	/* Each run (innermost first) ends at shim r: the native frame to put it in place of. The
	 * interpreter keeps its entry frame at one place of its C frame (CFA - shim_off, learned
	 * from the outermost activation of complete samples): a shim now at a sampled address
	 * that held another function's frame at the sample (another module's, or this one's at
	 * another offset: list.sort's, the chain read after deep.py went from sorted's key to
	 * qsort's callback; qsort's, called back from another depth of its recursion since) is
	 * not placed. That frame has returned since: so may have the next outer activation
	 * placed, from the call that frame was in; it gets the marker frame unless the copy
	 * says it still runs where it is now (py_act_still_calls). */
	struct py_module_info *mi = &st->mods[runtime_module];
	int act_of_run[PY_MAX_FRAMES];
	uint32_t marker = py_marker_id(ctx, st);
	struct py_placement pl;
	py_place_runs(st, p, stack, locs, n, runtime_module, shims, nshims, run_start, nruns, marker,
		      act_of_run, &pl);
	int placed = pl.placed, unplaced = pl.unplaced, marked = pl.marked;
	uint64_t outer_off = pl.outer_off;
	if (!placed && !unplaced) {
		/* no run of the chain at an activation of this stack: native code only, or
		 * activations whose runs are not in the chain (entered or left at the sample),
		 * which get the frame they ran or the marker, counted, as below (left native,
		 * uncounted, they once made the report count fewer samples not read than
		 * t-python-deep saw: 12 against 13 in a CI run) */
		uint64_t relinked = st->stats.relinked;
		marked = py_mark_unread_acts(ctx, st, p, stack, locs, n, runtime_module, act_of_run,
					     run_start, nruns, w.n, marker);
		if (marked) {
			*result = PY_MERGE_UNREADABLE;
			st->stats.samples_partial++;
		} else if (st->stats.relinked != relinked) {
			*result = PY_MERGE_OK;
			st->stats.samples_exact++;
		}
		return n;
	}
	/* (learned from samples read within 1 ms: a process' first ones, read late, have their
	 * chain of a later time, its shims anywhere) */
	if (!mi->shim_off && outer_off && stack && stack->complete && !inner_unread && !unplaced &&
	    taken < PY_LEARN_AGE_NS) {
		if (outer_off == mi->shim_cand && ++mi->shim_seen >= 8)
			mi->shim_off = outer_off;
		else if (outer_off != mi->shim_cand)
			mi->shim_cand = outer_off, mi->shim_seen = 1;
	}
	st->stats.acts += (uint64_t)(placed + unplaced);
	/* an innermost run read after its activation changed: not its frames (py_fill_empty_runs
	 * then takes the one it ran at the sample, or shows the marker) */
	if (inner_unread && act_of_run[0] >= 0 && nruns > 0 && st->ids[run_start[0]] != marker &&
	    !py_act_still_calls(st, p, stack, locs, n, act_of_run[0], run_start[0], run_start[1]))
		for (int f = run_start[0]; f < run_start[1]; f++)
			st->ids[f] = UINT32_MAX;
	if (nruns > 0 && act_of_run[0] >= 0)
		py_show_entering(st, p, run_start, nruns);
	py_fill_empty_runs(ctx, st, p, stack, locs, n, run_start, nruns, act_of_run, mi->shim_off,
			   w.n, marker, &marked);
	marked += py_mark_unread_acts(ctx, st, p, stack, locs, n, runtime_module, act_of_run,
				      run_start, nruns, w.n, marker);
	int out = py_put_runs_at(st, locs, n, max, run_start, nruns, act_of_run);
	if (unplaced || marked) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.samples_partial++;
		st->stats.lost[PY_LOST_POPPED] += (uint64_t)unplaced;
	} else {
		*result = PY_MERGE_OK;
		st->stats.samples_exact++;
	}
	return out;
}

static int py_merge_sample(struct unwind_ctx *ctx, struct py_proc **pp, uint32_t pid,
			   uint32_t tid, const struct py_stack *stack, struct unwind_loc *locs,
			   int n, int max, enum py_merge_result *result)
{
	struct py_state *st = ctx->python;
	int acts[PY_MAX_FRAMES], nacts;
	uint32_t runtime_module;

	*result = PY_MERGE_NONE;
	if (!st || n <= 0)
		return n;
	/* The native interpreter activations, innermost first. */
	nacts = py_find_acts(ctx, st, locs, n, acts, &runtime_module);
	if (!nacts) {
		if (py_find_runtime_314(ctx, st, locs, n, &runtime_module))
			return py_merge_by_shims(ctx, st, pp, pid, tid, stack, locs, n, max,
						 runtime_module, result);
		return n;
	}
	st->stamp++;
	st->nblocks = 0; /* what was read for the previous sample is stale */
	st->copy = stack;
	py_cstack_set(st, stack);
	st->stats.samples++;
	st->stats.acts += (uint64_t)nacts;
	struct py_module_info *mi = &st->mods[runtime_module];
	struct py_proc *p = py_proc_ready(ctx, st, pid, runtime_module, result);
	if (!p) {
		st->stats.lost[*result == PY_MERGE_UNSUPPORTED ? PY_LOST_UNSUPPORTED : PY_LOST_READ] +=
			(uint64_t)nacts;
		return n;
	}
	*pp = p;
	py_sample_source(st, p, stack);
	uint64_t ts = py_thread_state(p, tid);
	if (!ts) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.lost[PY_LOST_THREAD] += (uint64_t)nacts;
		return n;
	}
	py_recipe_set(st, p, tid, ts);
	uint64_t taken = py_sample_taken_ns(p, stack);
	if (taken > PY_MAX_AGE_NS || (stack && stack->torn)) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.lost[stack && stack->torn ? PY_LOST_READ : PY_LOST_LATE] += (uint64_t)nacts;
		return n;
	}
	py_learn_anchors(mi, p, stack, locs, n, acts, nacts, ts);

	int run_start[PY_MAX_FRAMES + 1], nruns = 0, shift_runs = 0, shift_acts = 0, unread = 0;
	bool anchored_all = false;
	int confirmed = py_runs_anchored(ctx, st, p, ts, mi, stack, locs, n, acts, nacts, run_start,
					 &unread);
	if (confirmed >= 0) {
		nruns = nacts;
		*result = confirmed == nacts ? PY_MERGE_OK : PY_MERGE_CHANGED;
		if (unread == nacts) {
			*result = PY_MERGE_UNREADABLE;
			return n;
		}
		anchored_all = !unread;
		if (unread) {
			/* those not read show the marker frame: counted and shown as such */
			*result = PY_MERGE_UNREADABLE;
			st->stats.samples_partial++;
		}
	} else if (!py_runs_by_count(ctx, st, p, ts, stack, nacts, run_start, &nruns, &shift_runs,
				     &shift_acts, result)) {
		return n;
	}

	int native;
	n = py_put_runs(st, locs, n, max, acts, nacts, run_start, nruns, shift_acts, shift_runs,
			&native);
	/* An activation that keeps its native frame (no run for it, or a run of frames still
	 * being set up) is counted as not read too. */
	if (native && *result != PY_MERGE_UNREADABLE) {
		*result = PY_MERGE_UNREADABLE;
		st->stats.samples_partial++;
	} else if (anchored_all) {
		st->stats.samples_exact++;
	}
	return n;
}

/* ------------------------------------------------------------------------------------------ */
/* Copying the frames while the thread is stopped (ptrace) */

/* py_capture's output: records of (u64 address, u64 length, the bytes, padded to 8), read
 * back by py_frozen_set. */
struct py_cap {
	uint8_t *buf;
	size_t cap, used;
	pid_t pid;
	const uint8_t *stack;   /* the sample's stack copy, from sp: not copied again */
	uint64_t sp;
	size_t got;
};

/* Where [addr, addr + len) is already held (the stack copy, a record), or NULL. */
static const uint8_t *py_cap_find(const struct py_cap *c, uint64_t addr, size_t len)
{
	if (addr >= c->sp && addr - c->sp < c->got && c->got - (addr - c->sp) >= len)
		return c->stack + (addr - c->sp);
	for (size_t at = 0; at + 16 <= c->used;) {
		uint64_t a, l;
		memcpy(&a, c->buf + at, 8);
		memcpy(&l, c->buf + at + 8, 8);
		if (addr >= a && addr - a < l && l - (addr - a) >= len)
			return c->buf + at + 16 + (addr - a);
		at += 16 + ((l + 7) & ~7ull);
	}
	return NULL;
}

/* Copy [addr, addr + len) into a new record; with pages, the page(s) holding it and up to
 * PY_CAP_PAGES - 1 below (a data-stack chunk grows upward: the outer frames are there),
 * asked top first in one process_vm_readv, which stops at the first page not mapped. */
static const uint8_t *py_cap_read(struct py_cap *c, uint64_t addr, size_t len, bool pages)
{
	uint8_t *rec = c->buf + c->used;

	if (!addr || addr >= (1ull << 47) || len > PY_PAGE)
		return NULL;
	if (!pages || c->cap - c->used < 16 + PY_CAP_PAGES * PY_PAGE) {
		if (c->cap - c->used < 16 + ((len + 7) & ~7ull) || !py_read((uint32_t)c->pid, addr, rec + 16, len))
			return NULL;
		uint64_t l = len;
		memcpy(rec, &addr, 8);
		memcpy(rec + 8, &l, 8);
		c->used += 16 + ((len + 7) & ~7ull);
		return rec + 16;
	}
	uint64_t a, l = py_read_pages(c->pid, addr, len, PY_CAP_PAGES, rec + 16, &a);
	if (!l)
		return py_cap_read(c, addr, len, false); /* e.g. the next page is not mapped */
	memcpy(rec, &a, 8);
	memcpy(rec + 8, &l, 8);
	c->used += 16 + l;
	return rec + 16 + (addr - a);
}

static bool py_cap_u64(struct py_cap *c, uint64_t addr, uint64_t *v)
{
	const uint8_t *b = py_cap_find(c, addr, 8);

	if (!b && !(b = py_cap_read(c, addr, 8, false)))
		return false;
	memcpy(v, b, 8);
	return true;
}

/* The headers (len bytes) of the code objects at codes[0, n) into new records, in one
 * process_vm_readv (it stops at the first that cannot be read: those after it are left out). */
static void py_cap_codes(struct py_cap *c, const uint64_t *codes, int n, size_t len)
{
	struct iovec local[PY_CAP_CODES], remote[PY_CAP_CODES];
	size_t rec = 16 + ((len + 7) & ~7ull), at = c->used;
	int k = 0;

	for (int i = 0; i < n && c->cap - at >= rec; i++, k++, at += rec) {
		memcpy(c->buf + at, &codes[i], 8);
		memcpy(c->buf + at + 8, &(uint64_t){ len }, 8);
		local[k] = (struct iovec){ c->buf + at + 16, len };
		remote[k] = (struct iovec){ (void *)(uintptr_t)codes[i], len };
	}
	ssize_t got = k ? process_vm_readv(c->pid, local, (unsigned long)k, remote, (unsigned long)k, 0) : 0;
	if (got > 0)
		c->used += rec * (size_t)((size_t)got / len);
}

size_t py_capture_chain(uint32_t pid, const struct py_capture_recipe *r, uint64_t sp,
			const uint8_t *stack, size_t got, uint8_t *buf, size_t cap)
{
	struct py_cap c = { buf, cap, 0, (pid_t)pid, stack, sp, stack ? got : 0 };
	uint64_t frame, codes[PY_CAP_CODES];
	int ncodes = 0;
	bool with_codes = r->code_read && r->code_read <= PY_MAX_OBJECT &&
			  r->off_code + 8 <= r->frame_read;

	if (!r->tstate || r->frame_read > PY_MAX_OBJECT || r->off_prev + 8 > r->frame_read)
		return 0;
	/* the thread state's frame pointer and native thread id, in one read where they are
	 * near (py_thread_state's check then reads no more) */
	if (r->off_tid) {
		uint32_t lo = r->off_tid < r->off_ptr ? r->off_tid : r->off_ptr;
		uint32_t hi = (r->off_tid > r->off_ptr ? r->off_tid : r->off_ptr) + 8;
		if (hi - lo <= PY_MAX_OBJECT)
			py_cap_read(&c, r->tstate + lo, hi - lo, false);
	}
	if (!py_cap_u64(&c, r->tstate + r->off_ptr, &frame))
		return 0;
	if (r->off_cur != UINT32_MAX && !py_cap_u64(&c, frame + r->off_cur, &frame))
		return c.used;
	/* The chain through each frame's previous, activations and generators included, as
	 * py_walk_at follows it; bounded as it is. */
	for (int depth = 0; depth < PY_MAX_FRAMES && frame && !(frame & 7); depth++) {
		const uint8_t *fb = py_cap_find(&c, frame, r->frame_read);
		if (!fb && !(fb = py_cap_read(&c, frame, r->frame_read, true)))
			break;
		uint64_t code;
		memcpy(&code, fb + r->off_code, 8);
		code &= ~(uint64_t)r->code_tag;
		bool seen = !with_codes || !code || code & 7 || code >= (1ull << 47);
		if (!seen && r->known_codes) {
			uint64_t key = py_known_key(pid, code);
			seen = __atomic_load_n(&r->known_codes[cs_hash_u64(key) % r->nknown],
					       __ATOMIC_RELAXED) == key;
		}
		for (int i = 0; i < ncodes && !seen; i++)
			seen = codes[i] == code;
		if (!seen && ncodes < PY_CAP_CODES)
			codes[ncodes++] = code;
		memcpy(&frame, fb + r->off_prev, 8);
	}
	py_cap_codes(&c, codes, ncodes, r->code_read);
	return c.used;
}

bool py_capture_get(const uint8_t *mem, size_t size, uint64_t addr, void *out, size_t len)
{
	struct py_stack s = { .mem = mem, .mem_size = size };
	struct py_frozen fz;

	py_frozen_set(&fz, &s);
	fz.stack = NULL;
	return py_frozen_get(&fz, addr, out, len);
}

size_t py_capture(struct unwind_ctx *ctx, uint32_t pid, uint32_t tid, uint64_t sp,
		  const uint8_t *stack, size_t got, uint8_t *buf, size_t cap)
{
	struct py_state *st = ctx->python;
	struct py_recipe r;

	if (!st)
		return 0;
	pthread_mutex_lock(&st->recipes_lock);
	r = st->recipes[tid % PY_RECIPES];
	pthread_mutex_unlock(&st->recipes_lock);
	if (r.pid != pid || r.tid != tid)
		return 0;
	return py_capture_chain(pid, &r.c, sp, stack, got, buf, cap);
}

void py_stats_get(struct unwind_ctx *ctx, struct py_stats *out)
{
	const struct py_state *st = ctx->python;

	*out = st ? st->stats : (struct py_stats){ 0 };
}

/* The native interpreter activations of a stack, found once (py_find_acts) and handed on. */
struct py_acts {
	int n;                         /* -1: not looked for yet */
	int at[PY_MAX_FRAMES];
	uint32_t runtime_module;
};

/* 3.14 read at the sample (bpf): a placed run of its entry frame only (an activation entered
 * or returning then: its frame popped and cleared, which the program does not take) shows the
 * frame it ran where it is found now (py_act_popped_frame, without a copy: linked to that
 * entry frame, its caller still running what the program read), as read after the program
 * moved on (stats.relinked). frames[src[i]] is the frame of st->ids[i]; spare slot k. */
static void py_fill_entry_runs(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			       const struct py_ext_frame *frames, const int *src,
			       const int *run_start, int nruns, const int *act_of_run, int k)
{
	bool fresh = false;

	for (int r = 0; r < nruns; r++) {
		const struct py_ext_frame *f = &frames[src[run_start[r]]];
		if (act_of_run[r] < 0 || run_start[r + 1] - run_start[r] != 1 || f->code ||
		    !f->entry_at || !f->caller_at || r + 1 >= nruns)
			continue;
		if (!fresh) {
			/* what is read now, not a copy: a sample of its own for the code cache */
			st->stamp++;
			st->nblocks = 0;
			st->copy = NULL;
			p->frozen = NULL;
			fresh = true;
		}
		uint32_t id = py_act_popped_frame(ctx, st, p, NULL, f->entry_at, f->caller_at, 0,
						  frames[src[run_start[r + 1]]].code, k);
		if (id != UINT32_MAX && id != PY_ID_UNREAD)
			py_run_take(st, run_start, r, id);
	}
}

/* 3.14 read at the sample (bpf): each run (of st->ids, frames[src[i]] the frame of id i) in
 * place of the user frame the program found its entry frame in (act_of: 1 + its index after
 * the kernel's frames; a run without one, past the sampled stack, is not placed), the runs of
 * an entry frame only completed (py_fill_entry_runs), activations with no run marked
 * (py_mark_unrun_loops); *native counts the activations left without their frames. Returns
 * the new count of locs, *result as py_merge's. */
static int py_put_runs_by_act(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			      const struct py_ext_frame *frames, const int *src,
			      const uint16_t *act_of, const int *run_start, int nruns, int nf,
			      struct unwind_loc *locs, int n, int max, uint32_t runtime_module,
			      enum py_merge_result *result, int *native)
{
	int nkernel = 0, act_of_run[PY_MAX_FRAMES] = { 0 }, placed = 0, last = -1;

	while (nkernel < n && locs[nkernel].module == ctx->kernel_module)
		nkernel++;
	for (int r = 0; r < nruns; r++) {
		int a = act_of[run_start[r]] ? nkernel + act_of[run_start[r]] - 1 : -1;
		bool ok = a > last && a < n && locs[a].module == runtime_module;
		act_of_run[r] = ok ? a : -1;
		if (ok) {
			placed++;
			last = a;
			py_loop_caller_learn(&st->mods[runtime_module], locs, n, a);
		} else if (a >= 0) {
			(*native)++;
		}
	}
	py_fill_entry_runs(ctx, st, p, frames, src, run_start, nruns, act_of_run, nf);
	/* (with no run placed too: the interpreter's loops the stack shows are then marked and
	 * counted, as py_merge_by_shims does, never left as native frames in nobody's count) */
	*native += py_mark_unrun_loops(st, &st->mods[runtime_module], locs, n, runtime_module,
				       act_of_run, nruns, run_start, py_marker_id(ctx, st));
	if (!placed && !*native)
		return n; /* no activation in the stack: nothing of Python's in it */
	*result = *native ? PY_MERGE_UNREADABLE : PY_MERGE_OK;
	return py_put_runs_at(st, locs, n, max, run_start, nruns, act_of_run);
}

/* py_merge_frames, and how many activations kept their native frame in *native; acts: the
 * stack's activations when the caller found them already, else NULL. */
static int py_merge_frames_n(struct unwind_ctx *ctx, uint32_t pid, const struct py_ext_frame *frames,
			     int nframes, bool outer_cut, struct unwind_loc *locs, int n, int max,
			     enum py_merge_result *result, int *native, const struct py_acts *acts);

int py_merge_frames(struct unwind_ctx *ctx, uint32_t pid, const struct py_ext_frame *frames,
		    int nframes, bool outer_cut, struct unwind_loc *locs, int n, int max,
		    enum py_merge_result *result)
{
	int native;

	return py_merge_frames_n(ctx, pid, frames, nframes, outer_cut, locs, n, max, result, &native,
				 NULL);
}

static int py_merge_frames_n(struct unwind_ctx *ctx, uint32_t pid, const struct py_ext_frame *frames,
			     int nframes, bool outer_cut, struct unwind_loc *locs, int n, int max,
			     enum py_merge_result *result, int *native, const struct py_acts *known)
{
	struct py_state *st = ctx->python;
	struct py_acts found;
	const struct py_acts *A = known;

	*result = PY_MERGE_NONE;
	*native = 0;
	if (!st || n <= 0 || nframes <= 0)
		return n;
	if (!A || A->n < 0) {
		found.n = py_find_acts(ctx, st, locs, n, found.at, &found.runtime_module);
		A = &found;
	}
	const int *acts = A->at;
	int nacts = A->n;
	uint32_t runtime_module = A->runtime_module;
	/* 3.14 whose interpreter loop has no symbol: each frame says which user frame ran it */
	bool by_act = !nacts && py_find_runtime_314(ctx, st, locs, n, &runtime_module);
	if (!nacts && !by_act)
		return n;
	struct py_proc *p = py_proc_ready(ctx, st, pid, runtime_module, result);
	if (!p)
		return n;
	const struct py_layout *L = p->layout;
	uint16_t act_of[PY_MAX_FRAMES];
	int nf = 0, src[PY_MAX_FRAMES];
	/* The same choices as py_walk, from what the library read. */
	for (int i = 0; i < nframes && nf < PY_MAX_FRAMES; i++) {
		const struct py_ext_frame *f = &frames[i];
		act_of[nf] = f->act;
		src[nf] = i;
		if (!f->code) {
			st->ids[nf] = UINT32_MAX;
			st->entry[nf++] = 1;
			continue;
		}
		struct py_code *c = f->fp ? py_code_get_fp(ctx, p, f->code, f->fp)
						: py_code_get(ctx, p, f->code);
		if (!c) {
			*result = PY_MERGE_UNREADABLE; /* freed, or the process is gone */
			return n;
		}
		/* 3.12: an activation's shim runs the interpreter's trampoline code object; one
		 * read while its activation was entered, linked before its owner was stored (the
		 * compiler orders those stores as it likes), is still a shim: it ends the run
		 * before it, and is not shown (else the two activations' frames were one run,
		 * the callback's frames filed under its caller's activation) */
		if (L->owner_cstack && c->file && !strcmp(c->file, "<shim>")) {
			if (nf > 0)
				st->entry[nf - 1] = 1;
			continue;
		}
		bool incomplete = !f->generator && f->unit != UINT32_MAX &&
				  f->unit < (uint32_t)(c->first_traceable > 0 ? c->first_traceable : 0);
		if (incomplete && !f->entry)
			continue;
		uint32_t line = c->first_line;
		if (f->unit != UINT32_MAX && c->table) {
			uint32_t l = L->line(c->table, c->ntable, c->first_line, f->unit);
			if (l)
				line = l;
		}
		st->ids[nf] = incomplete ? UINT32_MAX : py_frame_id(st, c->name, c->file, line);
		st->entry[nf++] = f->entry;
	}
	int run_start[PY_MAX_FRAMES + 1], shift_runs, shift_acts;
	int nruns = py_runs_from_entries(st, nf, run_start);
	if (by_act)
		return py_put_runs_by_act(ctx, st, p, frames, src, act_of, run_start, nruns, nf, locs,
					  n, max, runtime_module, result, native);
	/* Read at the launch by the thread itself: one run per activation, unless one side was
	 * cut at its outer end (then the inner ends match). */
	*result = nruns == nacts ? PY_MERGE_OK : PY_MERGE_CHANGED;
	py_runs_align(nruns, nacts, !outer_cut, &shift_runs, &shift_acts);
	return py_put_runs(st, locs, n, max, acts, nacts, run_start, nruns, shift_acts, shift_runs,
			   native);
}

#define PY_OP_FOR_ITER_311 93
#define PY_OP_SEND_311 123
#define PY_FRAME_SUSPENDED_311 (-1)  /* gi_frame_state */
#define PY_FRAME_EXECUTING_311 0

/* 3.11, frames read at the sample (bpf): the native stack has one interpreter activation more
 * than the chain, innermost: one being entered or left while its _PyCFrame is not linked, as
 * a generator's is at each resume and yield (the prologue and epilogue of
 * _PyEval_EvalFrameDefault). When the chain's innermost frame (first, running f0 at the
 * sample) was resuming a generator there (its instruction a FOR_ITER or a SEND, whose
 * iterator is on its value stack) and its frame still runs that code, the generator is the
 * one generator object on its value stack (stacktop is stale while the frame runs: 64 slots)
 * that is running now, resumed by it (its frame links to it), or is suspended at a yield: its
 * frame is taken, as read after the program moved on (the loop may be at a later item, a
 * later loop at the same place may iterate another generator). Two such generators, or
 * none: nothing. Returns whether *out was filled. */
static bool py_gen_resumed(struct py_proc *p, uint64_t first, const struct pywalk_frame *f0,
			   struct py_ext_frame *out)
{
	const struct py_layout *L = p->layout;
	uint8_t fb[PY_MAX_OBJECT], op;
	uint64_t slots[64], found = 0, code = 0, instr = 0;

	if (!L->frame_is_entry || !L->gen_iframe || !L->gen_frame_state || !L->frame_localsplus ||
	    !first || first & 7 || !f0->code || f0->instr < f0->code + L->code_code)
		return false;
	if (!py_rd(p, f0->instr, &op, 1) || (op != PY_OP_FOR_ITER_311 && op != PY_OP_SEND_311) ||
	    !py_rd(p, first, fb, L->frame_read) ||
	    py_code_ptr(L, py_u64(fb, L->frame_code)) != f0->code ||
	    !py_rd(p, first + L->frame_localsplus, slots, sizeof(slots)))
		return false;
	for (int i = 0; i < 64; i++) {
		uint64_t gen = slots[i], g = gen + L->gen_iframe;
		int8_t state;
		if (!gen || gen & 7 || gen >= (1ull << 47) || gen + L->gen_iframe == found ||
		    !py_rd(p, gen + L->gen_frame_state, &state, 1) ||
		    (state != PY_FRAME_EXECUTING_311 && state != PY_FRAME_SUSPENDED_311) ||
		    !py_rd(p, g, fb, L->frame_read) || fb[L->frame_owner] != L->owner_generator)
			continue;
		uint64_t prev = py_u64(fb, L->frame_previous);
		if (state == PY_FRAME_EXECUTING_311 ? prev != first : prev != 0)
			continue; /* running, resumed by another frame */
		uint64_t c = py_code_ptr(L, py_u64(fb, L->frame_code));
		if (!c || c & 7 || c >= (1ull << 47) || found)
			return false; /* two such generators: not known which */
		found = g, code = c, instr = py_u64(fb, L->frame_instr);
	}
	if (!found)
		return false;
	uint64_t code0 = code + L->code_code;
	uint32_t unit = instr < code0 ? 0 : (instr - code0) / 2 < UINT32_MAX ? (uint32_t)((instr - code0) / 2)
									  : UINT32_MAX;
	*out = (struct py_ext_frame){ code, unit, true, true, 0, 0, 0, 0 };
	return true;
}

int py_merge_walked(struct unwind_ctx *ctx, uint32_t pid, const struct pywalk_frame *fr,
		    const uint64_t *fp, int nfr, uint64_t first, bool cut, uint64_t age_ns,
		    struct unwind_loc *locs, int n, int max, enum py_merge_result *result)
{
	struct py_state *st = ctx->python;
	struct py_ext_frame f[PY_MAX_WALKED + 1];

	*result = PY_MERGE_NONE;
	struct py_proc *p = st ? cs_hash_find(&st->procs, cs_hash_u64(pid), py_proc_eq, &pid) : NULL;
	if (!p || p->state != PY_PROC_READY)
		return -1;
	if (nfr > PY_MAX_WALKED) {
		nfr = PY_MAX_WALKED;
		cut = true;
	}
	uint64_t code0_off = p->layout->code_code;
	bool any_act = false;
	for (int i = 0; i < nfr; i++) {
		uint64_t code0 = fr[i].code + code0_off, instr = fr[i].instr;
		/* before the first unit: a frame just pushed (3.11, 3.12 start at unit -1) */
		uint32_t unit = !fr[i].code ? UINT32_MAX : instr < code0 ? 0
			      : (instr - code0) / 2 < UINT32_MAX ? (uint32_t)((instr - code0) / 2) : UINT32_MAX;
		/* an activation with no frame shown: bpf_python_walk put its entry frame's address
		 * in fp, and the frame that links to in instr */
		bool none = !fr[i].code;
		f[i] = (struct py_ext_frame){ fr[i].code, unit, (fr[i].flags & PYWALK_ENTRY) != 0,
					      (fr[i].flags & PYWALK_GENERATOR) != 0,
					      fp && !none ? fp[i] : 0, fr[i].act,
					      fp && none ? fp[i] : 0, none ? instr : 0 };
		any_act |= fr[i].act != 0;
	}
	/* 3.14 (activations found by their entry frames) with no frame placed: a record without
	 * its frames' stack pointers (a stack slice, unwound here): the caller reads them as perf
	 * mode does, where the frames' stack pointers are known */
	if (p->layout->hex_min >= 0x030e0000 && nfr > 0 && !any_act)
		return -1;
	/* code objects are read now: one the sample ran may have been freed since (as py_merge
	 * does for a sample merged late, PY_CODE_MAX_AGE_NS) */
	p->late = age_ns > PY_CODE_MAX_AGE_NS;
	if (p->late)
		p->sample_ns = cs_monotonic_ns() - age_ns;
	struct py_acts acts = { .n = -1 };
	int native = 0;
	bool resumed = false;
	if (nfr > 0 && !cut && p->layout->frame_is_entry && first) {
		/* 3.11: one activation more than the chain's runs, innermost (py_gen_resumed) */
		int nruns = 1;
		for (int i = 0; i + 1 < nfr; i++)
			nruns += f[i].entry;
		acts.n = py_find_acts(ctx, st, locs, n, acts.at, &acts.runtime_module);
		if (acts.n == nruns + 1 && py_gen_resumed(p, first, &fr[0], &f[nfr])) {
			struct py_ext_frame g = f[nfr];
			memmove(f + 1, f, (size_t)nfr * sizeof(f[0]));
			f[0] = g;
			nfr++;
			resumed = true;
		}
	}
	if (nfr == 0 && py_find_acts(ctx, st, locs, n, acts.at, &acts.runtime_module) > 0)
		*result = PY_MERGE_UNREADABLE; /* activations, but no frame linked yet */
	else
		n = py_merge_frames_n(ctx, pid, f, nfr, cut, locs, n, max, result, &native, &acts);
	if (resumed && *result == PY_MERGE_OK) {
		*result = PY_MERGE_CHANGED; /* read after the program moved on */
		st->stats.gen_resumed++;
	}
	/* an activation left native (no run for it: entered or left at the sample) is counted
	 * as not read, as py_merge counts it */
	if (native && *result != PY_MERGE_NONE)
		*result = PY_MERGE_UNREADABLE;
	p->late = false;
	if (*result != PY_MERGE_NONE) {
		st->stats.samples++;
		st->stats.at_sample++;
		if (*result == PY_MERGE_OK)
			st->stats.samples_exact++;
	}
	return n;
}

int py_layouts_env(char *out, size_t len)
{
	size_t k = 0;
	int w;

	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++) {
		const struct py_layout *L = &py_layouts[i];
		/* inject/protocol.h's enum gpu_py_field order */
		w = snprintf(out + k, len - k, "%s%x:%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,0,0",
			     i ? ";" : "", L->hex_min >> 16, L->tstate_cframe,
			     L->cframe_current_frame, L->frame_code, L->frame_previous,
			     L->frame_instr, L->frame_is_entry, L->frame_owner,
			     L->owner_generator, L->owner_cstack, L->code_code, L->ob_type);
		if (w < 0 || (size_t)w >= len - k)
			return -ENOSPC;
		k += (size_t)w;
	}
	/* 3.13 and 3.14: where the process' own _Py_DebugOffsets hold each offset (@N); the
	 * owner values and 3.14's tag, which they do not hold, as py_layout_from_debug has them */
	for (int v = 0; v < PY_DBG_VERSIONS; v++) {
		w = snprintf(out + k, len - k, ";%x:@%u,0,@%u,@%u,@%u,0,@%u,1,3,@%u,@%u,%d,1",
			     v == PY_DBG_314 ? 0x30e : 0x30d, py_dbg_at(v, PY_DBG_TSTATE_CURRENT_FRAME),
			     py_dbg_at(v, PY_DBG_FRAME_EXECUTABLE), py_dbg_at(v, PY_DBG_FRAME_PREVIOUS),
			     py_dbg_at(v, PY_DBG_FRAME_INSTR), py_dbg_at(v, PY_DBG_FRAME_OWNER),
			     py_dbg_at(v, PY_DBG_CODE_CODE), py_dbg_at(v, PY_DBG_OB_TYPE),
			     v == PY_DBG_314);
		if (w < 0 || (size_t)w >= len - k)
			return -ENOSPC;
		k += (size_t)w;
	}
	return (int)k;
}

/* ------------------------------------------------------------------------------------------ */

static void py_release(struct unwind_ctx *ctx)
{
	struct py_state *st = ctx->python;

	if (!st)
		return;
	for (size_t i = 0; i < st->procs.cap; i++)
		if (st->procs.slots[i].item)
			py_proc_free(st->procs.slots[i].item);
	cs_hash_free(&st->procs);
	cs_hash_free(&st->frame_ids);
	CS_FREE_ALL(st->frames, st->mods, st->ids, st->entry, st->raw, st->blocks, st->code_bufs,
		    st->anchor, st->recipes, st->wheres, st->known_codes, st->out);
	pthread_mutex_destroy(&st->recipes_lock);
	free(st);
	ctx->python = NULL;
}

void py_enable(struct unwind_ctx *ctx)
{
	if (ctx->python)
		return;
	struct py_state *st = cs_calloc(1, sizeof(*st));
	st->module = unwind_python_module(ctx);
	st->ids = cs_malloc(PY_MAX_FRAMES * sizeof(st->ids[0]));
	st->entry = cs_malloc(PY_MAX_FRAMES);
	st->raw = cs_malloc(PY_MAX_FRAMES * sizeof(st->raw[0]));
	st->blocks = cs_malloc(PY_NBLOCKS * sizeof(st->blocks[0]));
	st->code_bufs = cs_malloc(PY_BATCH * sizeof(st->code_bufs[0]));
	st->anchor = cs_malloc(sizeof(*st->anchor));
	st->recipes = cs_calloc(PY_RECIPES, sizeof(st->recipes[0]));
	st->wheres = cs_calloc(PY_WHERES, sizeof(st->wheres[0]));
	st->known_codes = cs_calloc(PY_KNOWN_CODES, sizeof(st->known_codes[0]));
	pthread_mutex_init(&st->recipes_lock, NULL);
	/* The merged stack holds at most the native locations plus every Python frame. */
	st->out = cs_malloc(2 * (PY_MAX_FRAMES + 1024) * sizeof(st->out[0]));
	st->version_override = -1;
	const char *v = getenv("CSAMPLER_PYTHON_VERSION");
	if (v && *v)
		st->version_override = strtoll(v, NULL, 0);
	ctx->python = st;
	ctx->release_python = py_release;
}
