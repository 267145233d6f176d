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
 * Which frames an activation ran at the time of the sample: the frames are read when the
 * recorder gets to the sample, milliseconds later. In 3.11 and 3.12 each activation keeps a
 * _PyCFrame in its C stack frame, whose current_frame is its innermost Python frame, and the
 * kernel copied that stack with the sample. The _PyCFrame sits at a fixed distance below the
 * activation's CFA for a build of the interpreter: learned once from a complete sample (the
 * one distance at which the activations' _PyCFrames chain to the thread state's root_cframe),
 * then each activation's frames are walked from its current_frame as the copy holds it. An
 * activation whose frames were popped since (the walk does not end at an entry frame linked
 * to the next outer activation's frame) stays native. Without that anchor (3.13: no _PyCFrame,
 * or before it is learned) the chain as it is when read is matched to the activations by
 * count (PY_MERGE_CHANGED when they differ).
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/cs.h"
#include "format/datafile.h"
#include "unwind/elfcache.h"

#define PY_MAX_INTERPS 64
#define PY_MAX_THREADS 4096
#define PY_MAX_FRAMES 1024
#define PY_MAX_STRING 1024
#define PY_MAX_LINETABLE (256u << 10)
#define PY_TCACHE 64
#define PY_MAX_CFRAME_OFF 16384u /* the interpreter's _PyCFrame local: within this of its CFA */
#define PY_LEARN_TRIES 256       /* samples tried for learning where it is */
#define PY_MAX_OBJECT 512        /* bytes read of one frame, code object or str header */

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
		.code_qualname = 128, .code_filename = 112, .code_firstlineno = 68,
		.code_linetable = 136, .code_code = 192, .code_firsttraceable = 176,
		.ob_type = 8, .var_size = 16, .bytes_data = 32,
		.str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_compact_data = 56,
		.line = py_linetable_line_311,
	},
};

/* _Py_DebugOffsets as 3.13 lays it out (Include/internal/pycore_runtime.h): the byte offsets
 * of the fields csampler takes from it. The struct itself changes between minor versions
 * (3.14 adds fields inside its sections), so only 3.13's is read. */
enum {
	PY_DBG13_COOKIE = 0, PY_DBG13_VERSION = 8, PY_DBG13_FREE_THREADED = 16,
	PY_DBG13_RUNTIME_INTERP_HEAD = 40,
	PY_DBG13_INTERP_NEXT = 64, PY_DBG13_INTERP_THREADS_HEAD = 72,
	PY_DBG13_TSTATE_NEXT = 168, PY_DBG13_TSTATE_CURRENT_FRAME = 184,
	PY_DBG13_TSTATE_NATIVE_TID = 200,
	PY_DBG13_FRAME_PREVIOUS = 232, PY_DBG13_FRAME_EXECUTABLE = 240, PY_DBG13_FRAME_INSTR = 248,
	PY_DBG13_FRAME_OWNER = 264,
	PY_DBG13_CODE_FILENAME = 280, PY_DBG13_CODE_QUALNAME = 296, PY_DBG13_CODE_LINETABLE = 304,
	PY_DBG13_CODE_FIRSTLINENO = 312, PY_DBG13_CODE_CODE = 344,
	PY_DBG13_OB_TYPE = 360,
	PY_DBG13_BYTES_SIZE = 520, PY_DBG13_BYTES_DATA = 528,
	PY_DBG13_STR_STATE = 544, PY_DBG13_STR_LENGTH = 552, PY_DBG13_STR_ASCII_SIZE = 560,
	PY_DBG13_SIZE = 584,
};

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
	L->code_read = py_max_u32(L->code_read, L->ob_type + 8);
	L->str_read = py_max_u32(py_max_u32(L->str_length, L->ob_type) + 8, L->str_state + 4);
}

static uint64_t py_dbg_u64(const uint8_t *d, size_t off)
{
	uint64_t v;
	memcpy(&v, d + off, sizeof(v));
	return v;
}

/* 3.13: the layout from the interpreter's _Py_DebugOffsets. Every offset csampler uses is
 * taken from it, but two it does not give: _co_firsttraceable (only used to hide a frame still
 * being set up; 3.13's headers: 184) and the owner values (3.13's pycore_frame.h). */
static int py_layout_from_debug(uint32_t version, const uint8_t *d, size_t n, struct py_layout *L)
{
	if (!d || n < PY_DBG13_SIZE || memcmp(d + PY_DBG13_COOKIE, "xdebugpy", 8))
		return -EINVAL;
	uint64_t dv = py_dbg_u64(d, PY_DBG13_VERSION);
	if ((dv >> 16) != (version >> 16))
		return -EINVAL; /* not the version the binary says: not trusted */
	if (py_dbg_u64(d, PY_DBG13_FREE_THREADED))
		return -ENOTSUP;
	static const size_t fields[] = {
		PY_DBG13_RUNTIME_INTERP_HEAD, PY_DBG13_INTERP_NEXT, PY_DBG13_INTERP_THREADS_HEAD,
		PY_DBG13_TSTATE_NEXT, PY_DBG13_TSTATE_CURRENT_FRAME, PY_DBG13_TSTATE_NATIVE_TID,
		PY_DBG13_FRAME_PREVIOUS, PY_DBG13_FRAME_EXECUTABLE, PY_DBG13_FRAME_INSTR,
		PY_DBG13_FRAME_OWNER, PY_DBG13_CODE_FILENAME, PY_DBG13_CODE_QUALNAME,
		PY_DBG13_CODE_LINETABLE, PY_DBG13_CODE_FIRSTLINENO, PY_DBG13_CODE_CODE,
		PY_DBG13_OB_TYPE, PY_DBG13_BYTES_SIZE, PY_DBG13_BYTES_DATA, PY_DBG13_STR_STATE,
		PY_DBG13_STR_LENGTH, PY_DBG13_STR_ASCII_SIZE,
	};
	/* Field offsets within a structure (the interpreter state is some KiB): a value
	 * past 1 MiB is not one. The objects read whole are bounded by py_layout_for. */
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (py_dbg_u64(d, fields[i]) > (1u << 20))
			return -EINVAL;
	*L = (struct py_layout){
		.hex_min = version & 0xffff0000u, .hex_max = version | 0xffffu, .name = "3.13",
		.runtime_interp_head = (uint32_t)py_dbg_u64(d, PY_DBG13_RUNTIME_INTERP_HEAD),
		.interp_next = (uint32_t)py_dbg_u64(d, PY_DBG13_INTERP_NEXT),
		.interp_threads_head = (uint32_t)py_dbg_u64(d, PY_DBG13_INTERP_THREADS_HEAD),
		.tstate_next = (uint32_t)py_dbg_u64(d, PY_DBG13_TSTATE_NEXT),
		.tstate_current_frame = (uint32_t)py_dbg_u64(d, PY_DBG13_TSTATE_CURRENT_FRAME),
		.tstate_native_tid = (uint32_t)py_dbg_u64(d, PY_DBG13_TSTATE_NATIVE_TID),
		.frame_code = (uint32_t)py_dbg_u64(d, PY_DBG13_FRAME_EXECUTABLE),
		.frame_previous = (uint32_t)py_dbg_u64(d, PY_DBG13_FRAME_PREVIOUS),
		.frame_instr = (uint32_t)py_dbg_u64(d, PY_DBG13_FRAME_INSTR),
		.frame_owner = (uint32_t)py_dbg_u64(d, PY_DBG13_FRAME_OWNER),
		.owner_generator = 1, .owner_cstack = 3,
		.code_qualname = (uint32_t)py_dbg_u64(d, PY_DBG13_CODE_QUALNAME),
		.code_filename = (uint32_t)py_dbg_u64(d, PY_DBG13_CODE_FILENAME),
		.code_firstlineno = (uint32_t)py_dbg_u64(d, PY_DBG13_CODE_FIRSTLINENO),
		.code_linetable = (uint32_t)py_dbg_u64(d, PY_DBG13_CODE_LINETABLE),
		.code_code = (uint32_t)py_dbg_u64(d, PY_DBG13_CODE_CODE),
		.code_firsttraceable = 184,
		.ob_type = (uint32_t)py_dbg_u64(d, PY_DBG13_OB_TYPE),
		.var_size = (uint32_t)py_dbg_u64(d, PY_DBG13_BYTES_SIZE),
		.bytes_data = (uint32_t)py_dbg_u64(d, PY_DBG13_BYTES_DATA),
		.str_length = (uint32_t)py_dbg_u64(d, PY_DBG13_STR_LENGTH),
		.str_state = (uint32_t)py_dbg_u64(d, PY_DBG13_STR_STATE),
		.str_ascii_data = (uint32_t)py_dbg_u64(d, PY_DBG13_STR_ASCII_SIZE),
		/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 */
		.str_compact_data = (uint32_t)py_dbg_u64(d, PY_DBG13_STR_ASCII_SIZE) + 16,
		.line = py_linetable_line_311,
	};
	return 0;
}

size_t py_layout_debug_size(uint32_t version)
{
	return (version >> 16) == 0x030d ? PY_DBG13_SIZE : 0;
}

int py_layout_for(uint32_t version, const uint8_t *debug, size_t ndebug, struct py_layout *out)
{
	int err = -ENOTSUP;

	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++)
		if (version >= py_layouts[i].hex_min && version <= py_layouts[i].hex_max) {
			*out = py_layouts[i];
			err = 0;
		}
	if ((version >> 16) == 0x030d)
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

/* What a module of the unwinder's table is to Python (by module id). */
struct py_module_info {
	uint8_t state;                 /* 0 not looked at, 1 not a runtime, 2 a runtime */
	uint64_t eval_lo, eval_hi;     /* _PyEval_EvalFrameDefault as file offsets [lo, hi) */
	uint64_t runtime, code_type, unicode_type; /* link-time addresses */
	uint32_t version;              /* PY_VERSION_HEX, 0 when unknown */
	uint64_t cframe_off;           /* _PyEval_EvalFrameDefault's _PyCFrame local is at its
					* CFA - cframe_off; 0 while not learned */
	uint16_t learn_left;           /* samples left to learn it from */
};

struct py_code {                       /* a code object seen in a process */
	uint64_t addr, qualname, filename, linetable;
	uint32_t first_line;
	int32_t first_traceable;       /* _co_firsttraceable */
	const char *name, *file;       /* interned */
	uint8_t *table;
	size_t ntable;
};

enum py_proc_state { PY_PROC_READY = 1, PY_PROC_FAILED, PY_PROC_UNSUPPORTED };

struct py_proc {
	uint32_t pid;
	enum py_proc_state state;
	const struct py_layout *layout; /* &own */
	struct py_layout own;
	uint64_t runtime, code_type, unicode_type; /* addresses in the target */
	struct { uint32_t tid; uint64_t tstate; } tcache[PY_TCACHE];
	struct elfcache_hash codes;    /* address -> struct py_code */
};

struct py_frame_rec {
	const char *name, *file;
	uint32_t line;
};

struct py_state {
	struct py_module_info *mods;
	size_t nmods;
	struct elfcache_hash procs;
	struct py_frame_rec *frames;   /* by id */
	size_t nframes, cap_frames;
	struct elfcache_hash frame_ids;/* (name, file, line) -> id + 1 */
	uint32_t module;               /* "[python]" */
	uint32_t warned_version;       /* last unsupported version warned about */
	int64_t version_override;      /* CSAMPLER_PYTHON_VERSION (tests), or -1 */
	/* scratch for one sample */
	uint32_t *ids;                 /* Python frame ids, innermost first */
	uint8_t *entry;                /* is_entry of each */
	struct unwind_loc *out;
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

static bool py_read_ptr(uint32_t pid, uint64_t addr, uint64_t *out)
{
	return py_read(pid, addr, out, sizeof(*out));
}

static uint64_t py_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
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

	if (!py_read(p->pid, addr, hdr, L->str_read) || py_u64(hdr, L->ob_type) != p->unicode_type)
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
	if (length && !py_read(p->pid, data, raw, length * kind))
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

/* The code object at addr, read (or found in the cache and checked to be the same object:
 * same name, file and table objects), or NULL. */
static struct py_code *py_code_get(struct unwind_ctx *ctx, struct py_proc *p, uint64_t addr)
{
	const struct py_layout *L = p->layout;
	uint8_t buf[PY_MAX_OBJECT];

	if (addr & 7 || !py_read(p->pid, addr, buf, L->code_read) ||
	    py_u64(buf, L->ob_type) != p->code_type)
		return NULL;
	uint64_t qualname = py_u64(buf, L->code_qualname), filename = py_u64(buf, L->code_filename);
	uint64_t linetable = py_u64(buf, L->code_linetable);
	uint32_t first_line = py_u32(buf, L->code_firstlineno);
	int32_t first_traceable =
		L->code_firsttraceable ? (int32_t)py_u32(buf, L->code_firsttraceable) : 0;
	struct py_code *c = elfcache_hash_find(&p->codes, cs_hash_u64(addr), py_code_eq, &addr);
	if (c && c->qualname == qualname && c->filename == filename && c->linetable == linetable &&
	    c->first_line == first_line && c->first_traceable == first_traceable)
		return c;
	if (c) {
		/* Freed and reused for another code object. */
		elfcache_hash_remove(&p->codes, cs_hash_u64(addr), py_code_eq, &addr);
		py_code_free(c);
	}

	char name[PY_MAX_STRING * 4 + 8], file[PY_MAX_STRING * 4 + 8];
	if (!py_read_str(p, qualname, name, sizeof(name)) ||
	    !py_read_str(p, filename, file, sizeof(file)))
		return NULL;
	c = cs_calloc(1, sizeof(*c));
	c->addr = addr;
	c->qualname = qualname;
	c->filename = filename;
	c->linetable = linetable;
	c->first_line = first_line;
	c->first_traceable = first_traceable;
	c->name = elfcache_intern(ctx, name);
	c->file = elfcache_intern(ctx, file);
	uint64_t size;
	if (py_read(p->pid, linetable + L->var_size, &size, sizeof(size)) && size &&
	    size <= PY_MAX_LINETABLE) {
		c->table = cs_malloc(size);
		if (py_read(p->pid, linetable + L->bytes_data, c->table, size)) {
			c->ntable = size;
		} else {
			free(c->table);
			c->table = NULL;
		}
	}
	elfcache_hash_insert(&p->codes, cs_hash_u64(addr), c);
	return c;
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
	uintptr_t idx = (uintptr_t)elfcache_hash_find(&st->frame_ids, h, py_frame_eq, &key);

	if (idx)
		return (uint32_t)idx - 1;
	cs_grow(&st->frames, &st->cap_frames, st->nframes + 1, sizeof(st->frames[0]));
	st->frames[st->nframes++] = (struct py_frame_rec){ name, file, line };
	elfcache_hash_insert(&st->frame_ids, h, (void *)(uintptr_t)st->nframes);
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
	elfcache_hash_free(&p->codes);
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

static struct py_proc *py_proc_get(struct unwind_ctx *ctx, struct py_state *st, uint32_t pid,
				   uint32_t module, const struct py_module_info *mi)
{
	struct py_proc *p = elfcache_hash_find(&st->procs, cs_hash_u64(pid), py_proc_eq, &pid);

	if (p)
		return p;
	p = cs_calloc(1, sizeof(*p));
	p->pid = pid;
	elfcache_hash_insert(&st->procs, cs_hash_u64(pid), p);
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
	int err = py_layout_for(version, ndebug ? debug : NULL, ndebug, &p->own);
	if (err) {
		p->state = PY_PROC_UNSUPPORTED;
		if (st->warned_version != version + 1) {
			st->warned_version = version + 1;
			if (!version)
				cs_warn("python of unknown version (pid %u) is not supported (CPython "
					"3.11 to 3.13): its stacks stay native", pid);
			else if (err == -ENOTSUP)
				cs_warn("python %u.%u (pid %u) is not supported (CPython 3.11 to 3.13, "
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
	p->runtime = mi->runtime + bias;
	p->code_type = mi->code_type + bias;
	p->unicode_type = mi->unicode_type + bias;
	p->state = PY_PROC_READY;
	return p;
}

void py_forget(struct unwind_ctx *ctx, uint32_t pid)
{
	struct py_state *st = ctx->python;
	struct py_proc *p;

	if (st && (p = elfcache_hash_remove(&st->procs, cs_hash_u64(pid), py_proc_eq, &pid)))
		py_proc_free(p);
}

/* The PyThreadState of OS thread tid, or 0. */
static uint64_t py_thread_state(struct py_proc *p, uint32_t tid)
{
	const struct py_layout *L = p->layout;
	size_t slot = tid % PY_TCACHE;
	uint64_t native;

	if (p->tcache[slot].tid == tid &&
	    py_read_ptr(p->pid, p->tcache[slot].tstate + L->tstate_native_tid, &native) &&
	    native == tid)
		return p->tcache[slot].tstate;
	uint64_t interp;
	if (!py_read_ptr(p->pid, p->runtime + L->runtime_interp_head, &interp))
		return 0;
	for (int i = 0; interp && i < PY_MAX_INTERPS; i++) {
		uint64_t ts;
		if (!py_read_ptr(p->pid, interp + L->interp_threads_head, &ts))
			return 0;
		for (int t = 0; ts && t < PY_MAX_THREADS; t++) {
			uint64_t next;
			if (!py_read_ptr(p->pid, ts + L->tstate_native_tid, &native) ||
			    !py_read_ptr(p->pid, ts + L->tstate_next, &next))
				return 0;
			if (native == tid) {
				p->tcache[slot].tid = tid;
				p->tcache[slot].tstate = ts;
				return ts;
			}
			ts = next;
		}
		if (!py_read_ptr(p->pid, interp + L->interp_next, &interp))
			return 0;
	}
	return 0;
}

/* Walk Python frames outward from frame (via previous) into st->ids/st->entry from *n; with
 * one_activation, stop after the first entry frame (the frames one native activation runs)
 * and give its previous frame in *entry_prev. Returns false when a frame could not be read or
 * the walk did not end within bounds. */
static bool py_walk(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
		    uint64_t frame, bool one_activation, int *n, uint64_t *entry_prev)
{
	const struct py_layout *L = p->layout;
	int run_first = *n;

	for (int depth = 0; frame; depth++) {
		uint8_t fb[PY_MAX_OBJECT];
		if (depth >= PY_MAX_FRAMES || *n >= PY_MAX_FRAMES || frame & 7 ||
		    !py_read(p->pid, frame, fb, L->frame_read))
			return false;
		uint8_t owner = fb[L->frame_owner];
		if (L->owner_cstack && owner == L->owner_cstack) {
			/* 3.12+: the shim under an activation's first frame ends its run. */
			uint64_t prev = py_u64(fb, L->frame_previous);
			if (one_activation) {
				*entry_prev = prev;
				return true;
			}
			if (*n > run_first)
				st->entry[*n - 1] = 1;
			else if (*n < PY_MAX_FRAMES) {
				/* no frame shown in this activation: a run of its own */
				st->ids[*n] = UINT32_MAX;
				st->entry[(*n)++] = 1;
			}
			run_first = *n;
			frame = prev;
			continue;
		}
		uint64_t code_addr = py_u64(fb, L->frame_code);
		uint64_t instr = py_u64(fb, L->frame_instr);
		bool is_entry = L->frame_is_entry && fb[L->frame_is_entry] != 0;
		struct py_code *c = py_code_get(ctx, p, code_addr);
		if (!c)
			return false;
		uint64_t code0 = code_addr + L->code_code;
		int32_t first_traceable = c->first_traceable;
		/* A frame still being set up (before its RESUME) is not shown, as CPython's own
		 * tracebacks do; it still closes its native activation when it is the entry. */
		bool incomplete = owner != L->owner_generator &&
				  instr < code0 + 2 * (uint64_t)(first_traceable > 0 ? first_traceable : 0);
		if (!incomplete || is_entry) {
			uint32_t line = c->first_line;
			if (instr >= code0 && c->table) {
				uint32_t l = L->line(c->table, c->ntable, c->first_line,
						     (uint32_t)((instr - code0) / 2));
				if (l)
					line = l;
			}
			st->ids[*n] = incomplete ? UINT32_MAX : py_frame_id(st, c->name, c->file, line);
			st->entry[*n] = is_entry;
			(*n)++;
			if (is_entry)
				run_first = *n;
		}
		frame = py_u64(fb, L->frame_previous);
		if (is_entry && one_activation) {
			*entry_prev = frame;
			return true;
		}
	}
	return !one_activation;
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
		if (!py_read_ptr(p->pid, ts + L->tstate_cframe, &cframe) ||
		    !py_read_ptr(p->pid, cframe + L->cframe_current_frame, &frame))
			return -1;
	} else if (!py_read_ptr(p->pid, ts + L->tstate_current_frame, &frame)) {
		return -1;
	}
	if (!py_walk(ctx, st, p, frame, false, &n, NULL))
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
	if (!py_read_ptr(p->pid, ts + L->tstate_cframe, &cf))
		return -1;
	while (cf && cf != root) {
		uint8_t b[32];
		if (n >= max || cf & 7 || !py_read(p->pid, cf, b, L->cframe_previous + 8))
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
uint64_t py_cframe_offset_find(const struct py_layout *L, const struct py_stack *s,
			       const struct unwind_loc *locs, int n, const int *acts, int nacts,
			       uint64_t root)
{
	uint64_t outer = nacts > 0 ? py_act_cfa(locs, n, acts[nacts - 1]) : 0, found = 0;
	int nfound = 0;

	if (!outer || !L->tstate_root_cframe)
		return 0;
	for (uint64_t off = 8; off <= PY_MAX_CFRAME_OFF && nfound < 2; off += 8) {
		uint64_t prev;
		if (outer - off + L->cframe_previous < s->addr)
			break;
		if (!py_stack_u64(s, outer - off + L->cframe_previous, &prev) || prev != root)
			continue;
		if (py_cframe_chain_ok(L, s, locs, n, acts, nacts, off, root)) {
			found = off;
			nfound++;
		}
	}
	return nfound == 1 ? found : 0;
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
		if (st->ids[f] == UINT32_MAX)
			continue;
		st->out[(*out)++] = (struct unwind_loc){ st->module, st->ids[f], 0, 0 };
		pushed++;
	}
	return pushed;
}

/* Each activation's frames from where the sample's stack copy says it was: its _PyCFrame's
 * current_frame at the time of the sample (cframe_off learned), its frames then read now.
 * An activation is confirmed when its cframe is still in the thread's chain with the same
 * current frame (it was blocked in a call, or came back to the same place). One that is not
 * has moved on: its frames are kept only when their entry frame still links to the frame the
 * next outer activation was running at the time of the sample (as CPython links them when it
 * enters an activation), else the frames were popped and reused and the activation stays
 * native. Returns the number of activations confirmed, or -1 when the copy does not give
 * every activation's frame (then the caller matches the chain read now by count). start[]
 * gets nacts + 1 run bounds; *unread the activations that stay native. */
static int py_runs_anchored(struct unwind_ctx *ctx, struct py_state *st, struct py_proc *p,
			    uint64_t ts, const struct py_module_info *mi, const struct py_stack *s,
			    const struct unwind_loc *locs, int n, const int *acts, int nacts,
			    int *start, int *unread)
{
	const struct py_layout *L = p->layout;
	uint64_t root = ts + L->tstate_root_cframe;
	uint64_t now_addr[PY_MAX_FRAMES], now_cur[PY_MAX_FRAMES], cf[PY_MAX_FRAMES],
		cur[PY_MAX_FRAMES];
	int confirmed = 0, nf = 0;

	*unread = 0;
	if (!s || !mi->cframe_off ||
	    !py_cframe_chain_ok(L, s, locs, n, acts, nacts, mi->cframe_off, s->complete ? root : 0))
		return -1;
	for (int k = 0; k < nacts; k++) {
		cf[k] = py_act_cfa(locs, n, acts[k]) - mi->cframe_off;
		cur[k] = 0;
		py_stack_u64(s, cf[k] + L->cframe_current_frame, &cur[k]); /* checked by chain_ok */
	}
	int nnow = py_cframes_now(p, ts, now_addr, now_cur, PY_MAX_FRAMES);
	for (int k = 0; k < nacts; k++) {
		uint64_t prev = UINT64_MAX;
		start[k] = nf;
		/* The outermost activation of a complete stack was entered from no frame. */
		bool check = k + 1 < nacts || s->complete;
		uint64_t want = k + 1 < nacts ? cur[k + 1] : 0;
		if (!py_walk(ctx, st, p, cur[k], true, &nf, &prev) || (check && prev != want)) {
			nf = start[k]; /* popped (and reused) since: this activation stays native */
			(*unread)++;
			continue;
		}
		for (int j = 0; j < nnow; j++)
			if (now_addr[j] == cf[k]) {
				confirmed += now_cur[j] == cur[k];
				break;
			}
	}
	start[nacts] = nf;
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

/* Write locs[0, n) with run a - shift_acts + shift_runs in place of activation a (those
 * outside the runs, or whose run shows no frame, stay native). Returns the new count. */
static int py_put_runs(struct py_state *st, struct unwind_loc *locs, int n, int max,
		       const int *acts, int nacts, const int *run_start, int nruns,
		       int shift_acts, int shift_runs)
{
	int out = 0, next_act = 0;

	for (int i = 0; i < n; i++) {
		if (next_act < nacts && acts[next_act] == i) {
			int a = next_act++;
			int r = a - shift_acts + shift_runs;
			if (a >= shift_acts && r < nruns && py_put_run(st, run_start, r, &out, max))
				continue;
		}
		if (out < max)
			st->out[out++] = locs[i];
	}
	memcpy(locs, st->out, (size_t)out * sizeof(*locs));
	return out;
}

int py_merge(struct unwind_ctx *ctx, uint32_t pid, uint32_t tid, const struct py_stack *stack,
	     struct unwind_loc *locs, int n, int max, enum py_merge_result *result)
{
	struct py_state *st = ctx->python;
	int acts[PY_MAX_FRAMES], nacts;
	uint32_t runtime_module;

	*result = PY_MERGE_NONE;
	if (!st || n <= 0)
		return n;
	/* The native interpreter activations, innermost first. */
	nacts = py_find_acts(ctx, st, locs, n, acts, &runtime_module);
	if (!nacts)
		return n;
	struct py_module_info *mi = &st->mods[runtime_module];
	struct py_proc *p = py_proc_get(ctx, st, pid, runtime_module, mi);
	if (p->state != PY_PROC_READY) {
		*result = p->state == PY_PROC_UNSUPPORTED ? PY_MERGE_UNSUPPORTED : PY_MERGE_UNREADABLE;
		return n;
	}
	uint64_t ts = py_thread_state(p, tid);
	if (!ts) {
		*result = PY_MERGE_UNREADABLE;
		return n;
	}
	const struct py_layout *L = p->layout;
	if (stack && stack->complete && !mi->cframe_off && L->tstate_root_cframe)
		py_learn_cframe_off(mi, L, stack, locs, n, acts, nacts, ts + L->tstate_root_cframe);

	int run_start[PY_MAX_FRAMES + 1], nruns = 0, shift_runs = 0, shift_acts = 0, unread = 0;
	int confirmed = L->tstate_root_cframe ? py_runs_anchored(ctx, st, p, ts, mi, stack, locs, n,
								 acts, nacts, run_start, &unread)
					      : -1;
	if (confirmed >= 0) {
		nruns = nacts;
		*result = confirmed == nacts ? PY_MERGE_OK : PY_MERGE_CHANGED;
		if (unread == nacts) {
			*result = PY_MERGE_UNREADABLE;
			return n;
		}
	} else {
		/* No anchor in the copy: the chain as it is now, one run per activation. */
		int nframes = py_read_chain(ctx, st, p, ts);
		if (nframes <= 0) {
			*result = PY_MERGE_UNREADABLE;
			return n;
		}
		run_start[0] = 0;
		for (int i = 0; i < nframes; i++)
			if ((st->entry[i] || i == nframes - 1) && nruns < PY_MAX_FRAMES)
				run_start[++nruns] = i + 1;
		/* Normally one run per activation. If the program moved on between the sample
		 * and this read, they differ: the outer frames change least, so align from the
		 * root when the native unwind reached it, from the leaf when the stack copy
		 * ended first (its outer activations are not in the sample). */
		*result = nruns == nacts ? PY_MERGE_OK : PY_MERGE_CHANGED;
		bool from_root = !stack || stack->complete;
		if (nruns > nacts && from_root)
			shift_runs = nruns - nacts;
		else if (nacts > nruns && from_root)
			shift_acts = nacts - nruns;
	}

	return py_put_runs(st, locs, n, max, acts, nacts, run_start, nruns, shift_acts, shift_runs);
}

int py_merge_frames(struct unwind_ctx *ctx, uint32_t pid, const struct py_ext_frame *frames,
		    int nframes, bool outer_cut, struct unwind_loc *locs, int n, int max,
		    enum py_merge_result *result)
{
	struct py_state *st = ctx->python;
	int acts[PY_MAX_FRAMES], nacts;
	uint32_t runtime_module;

	*result = PY_MERGE_NONE;
	if (!st || n <= 0 || nframes <= 0)
		return n;
	nacts = py_find_acts(ctx, st, locs, n, acts, &runtime_module);
	if (!nacts)
		return n;
	struct py_module_info *mi = &st->mods[runtime_module];
	struct py_proc *p = py_proc_get(ctx, st, pid, runtime_module, mi);
	if (p->state != PY_PROC_READY) {
		*result = p->state == PY_PROC_UNSUPPORTED ? PY_MERGE_UNSUPPORTED : PY_MERGE_UNREADABLE;
		return n;
	}
	const struct py_layout *L = p->layout;
	int nf = 0;
	/* The same choices as py_walk, from what the library read. */
	for (int i = 0; i < nframes && nf < PY_MAX_FRAMES; i++) {
		const struct py_ext_frame *f = &frames[i];
		if (!f->code) {
			st->ids[nf] = UINT32_MAX;
			st->entry[nf++] = 1;
			continue;
		}
		struct py_code *c = py_code_get(ctx, p, f->code);
		if (!c) {
			*result = PY_MERGE_UNREADABLE; /* freed, or the process is gone */
			return n;
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
	int run_start[PY_MAX_FRAMES + 1], nruns = 0, shift_runs = 0, shift_acts = 0;
	run_start[0] = 0;
	for (int i = 0; i < nf; i++)
		if ((st->entry[i] || i == nf - 1) && nruns < PY_MAX_FRAMES)
			run_start[++nruns] = i + 1;
	/* Read at the launch by the thread itself: one run per activation, unless one side was
	 * cut at its outer end (then the inner ends match). */
	*result = nruns == nacts ? PY_MERGE_OK : PY_MERGE_CHANGED;
	if (nruns > nacts && !outer_cut)
		shift_runs = nruns - nacts;
	else if (nacts > nruns && !outer_cut)
		shift_acts = nacts - nruns;
	return py_put_runs(st, locs, n, max, acts, nacts, run_start, nruns, shift_acts, shift_runs);
}

int py_layouts_env(char *out, size_t len)
{
	size_t k = 0;

	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++) {
		const struct py_layout *L = &py_layouts[i];
		/* inject/protocol.h's enum gpu_py_field order */
		int w = snprintf(out + k, len - k, "%s%x:%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u",
				 i ? ";" : "", L->hex_min >> 16, L->tstate_cframe,
				 L->cframe_current_frame, L->frame_code, L->frame_previous,
				 L->frame_instr, L->frame_is_entry, L->frame_owner,
				 L->owner_generator, L->owner_cstack, L->code_code, L->ob_type);
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
	elfcache_hash_free(&st->procs);
	elfcache_hash_free(&st->frame_ids);
	free(st->frames);
	free(st->mods);
	free(st->ids);
	free(st->entry);
	free(st->out);
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
	/* The merged stack holds at most the native locations plus every Python frame. */
	st->out = cs_malloc(2 * (PY_MAX_FRAMES + 1024) * sizeof(st->out[0]));
	st->version_override = -1;
	const char *v = getenv("CSAMPLER_PYTHON_VERSION");
	if (v && *v)
		st->version_override = strtoll(v, NULL, 0);
	ctx->python = st;
	ctx->release_python = py_release;
}
