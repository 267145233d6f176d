/* python_test.c: unit tests of python.c's CPython 3.11 location-table decoder, on a table
 * CPython 3.11.7 wrote (co_linetable of a 56-code-unit function defined at line 1) and the
 * lines its own co_lines() gives for each code unit. */
#include "base/unit.h"
#include "unwind/python.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char py_test_table_hex[] =
	"8000d80809884189058041d80708883182758075d80c23d00c239d25a00199289c28d00c23d10c23d40c2388"
	"01dd0f12903189768c76880de00c0dd80c0df003010c0ff00001050f";
static const unsigned py_test_lines[56] = {
	1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 8, 7, 7,
};

static size_t py_test_table(uint8_t *out)
{
	size_t n = strlen(py_test_table_hex) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(py_test_table_hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

UNIT_TEST(python_linetable_311)
{
	uint8_t t[128];
	size_t n = py_test_table(t);

	for (unsigned u = 0; u < 56; u++)
		UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, n, 1, u), py_test_lines[u]);
	/* The same function defined at line 100: every line moves by 99. */
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, n, 100, 37), 104);
	/* Past the end of the table: no line. */
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, n, 1, 56), 0);
}

UNIT_TEST(python_linetable_malformed)
{
	uint8_t t[128];
	size_t n = py_test_table(t);

	/* A byte without the entry bit where an entry starts. */
	uint8_t bad[2] = { 0x05, 0x80 };
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(bad, 2, 1, 0), 0);
	/* Cut inside a long-form entry: no read past the end, no line. */
	for (size_t cut = 0; cut < n; cut++)
		UNIT_ASSERT(py_linetable_line_311(t, cut, 1, 55) == 0);
	/* An empty table. */
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, 0, 1, 0), 0);
}

/* The version dispatch: table rows for 3.11 and 3.12, 3.13 from _Py_DebugOffsets, nothing for
 * the others (their stacks stay native, never read with a wrong layout). */
UNIT_TEST(python_layout_versions)
{
	struct py_layout L;

	UNIT_ASSERT_EQ_INT(py_layout_for(0x030b07f0, NULL, 0, &L), 0);
	UNIT_ASSERT(L.frame_is_entry == 68 && L.owner_cstack == 0 && L.tstate_cframe == 56);
	UNIT_ASSERT(L.frame_read >= 70 && L.code_read >= 172 && L.str_read >= 36);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030c01f0, NULL, 0, &L), 0);
	UNIT_ASSERT(L.frame_is_entry == 0 && L.owner_cstack == 3 && L.frame_previous == 8 &&
		    L.str_ascii_data == 40);
	/* before 3.11, after 3.14, unknown: not supported; 3.14 without its debug offsets: not
	 * read */
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030a0df0, NULL, 0, &L), -ENOTSUP);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030f00a0, NULL, 0, &L), -ENOTSUP);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030e00f0, NULL, 0, &L), -EINVAL);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x02070000, NULL, 0, &L), -ENOTSUP);
	UNIT_ASSERT_EQ_INT(py_layout_for(0, NULL, 0, &L), -ENOTSUP);
	UNIT_ASSERT_EQ_INT(py_layout_debug_size(0x030b07f0), 0);
	UNIT_ASSERT_EQ_INT(py_layout_debug_size(0x030f00a0), 24); /* the header: free-threaded? */
}

static void py_test_put(uint8_t *d, size_t off, uint64_t v)
{
	memcpy(d + off, &v, 8);
}

/* _Py_DebugOffsets as 3.13.0 (x86-64) and Debian's 3.14.10 (read from its _PyRuntime's initial
 * value in the binary) have them: each field's offset in the version's layout and its value,
 * written here from the headers, apart from python.c's table. */
static const struct {
	uint16_t at13, at14;
	uint64_t v13, v14;
} py_test_dbg[] = {
	{ 40, 40, 632, 808 },     /* runtime_state.interpreters_head */
	{ 64, 64, 7264, 7272 },   /* interpreter_state.next */
	{ 72, 72, 7344, 7344 },   /* interpreter_state.threads_head */
	{ 168, 192, 8, 8 },       /* thread_state.next */
	{ 184, 208, 72, 72 },     /* thread_state.current_frame */
	{ 200, 224, 160, 160 },   /* thread_state.native_thread_id */
	{ 232, 256, 8, 8 },       /* interpreter_frame.previous */
	{ 240, 264, 0, 0 },       /* interpreter_frame.executable */
	{ 248, 272, 56, 56 },     /* interpreter_frame.instr_ptr */
	{ 256, 280, 0, 80 },      /* interpreter_frame.localsplus (3.13: left 0) */
	{ 264, 288, 70, 74 },     /* interpreter_frame.owner */
	{ 280, 320, 112, 112 },   /* code_object.filename */
	{ 296, 336, 136, 128 },   /* code_object.qualname */
	{ 304, 344, 128, 136 },   /* code_object.linetable */
	{ 312, 352, 68, 68 },     /* code_object.firstlineno */
	{ 344, 384, 200, 208 },   /* code_object.co_code_adaptive */
	{ 360, 408, 8, 8 },       /* pyobject.ob_type */
	{ 520, 600, 16, 16 },     /* bytes_object.ob_size */
	{ 528, 608, 32, 32 },     /* bytes_object.ob_sval */
	{ 544, 624, 32, 32 },     /* unicode_object.state */
	{ 552, 632, 16, 16 },     /* unicode_object.length */
	{ 560, 640, 40, 40 },     /* unicode_object.asciiobject_size */
};

/* That blob of version 0x030d00f0 or 0x030e0af0 in d; returns its size. */
static size_t py_test_debug(uint8_t *d, uint32_t version)
{
	bool v14 = (version >> 16) == 0x030e;
	size_t n = py_layout_debug_size(version);
	memset(d, 0, n);
	memcpy(d, "xdebugpy", 8);
	py_test_put(d, 8, version);
	for (size_t i = 0; i < sizeof(py_test_dbg) / sizeof(py_test_dbg[0]); i++)
		py_test_put(d, v14 ? py_test_dbg[i].at14 : py_test_dbg[i].at13,
			    v14 ? py_test_dbg[i].v14 : py_test_dbg[i].v13);
	return n;
}

static size_t py_test_debug13(uint8_t *d)
{
	return py_test_debug(d, 0x030d00f0);
}

static size_t py_test_debug14(uint8_t *d)
{
	return py_test_debug(d, 0x030e0af0);
}

/* 3.14: its own _Py_DebugOffsets layout, the tag bit of f_executable, the interpreter-owned
 * entry frame as the first shim owner; a 3.13 blob is not taken for one. */
UNIT_TEST(python_layout_debug_offsets_314)
{
	uint8_t d[1024];
	struct py_layout L;
	size_t n = py_test_debug14(d);

	UNIT_ASSERT(n >= 760 && n <= sizeof(d));
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030e0af0, d, n - 1, &L), -EINVAL);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030e0af0, d, n, &L), 0);
	UNIT_ASSERT(L.runtime_interp_head == 808 && L.interp_next == 7272 &&
		    L.interp_threads_head == 7344 && L.tstate_next == 8 &&
		    L.tstate_current_frame == 72 && L.tstate_native_tid == 160 &&
		    L.frame_previous == 8 && L.frame_code == 0 && L.frame_instr == 56 &&
		    L.frame_owner == 74 && L.code_filename == 112 && L.code_qualname == 128 &&
		    L.code_linetable == 136 && L.code_firstlineno == 68 && L.code_code == 208 &&
		    L.str_ascii_data == 40 && L.str_compact_data == 56 && L.var_size == 16 &&
		    L.bytes_data == 32);
	UNIT_ASSERT(L.owner_cstack == 3 && L.code_tag == 1 && L.frame_stacktop == 0 &&
		    L.code_firsttraceable == 192 && L.tstate_cframe == 0);
	/* 3.13's blob in a 3.14 binary: the version does not match */
	uint8_t d13[1024];
	size_t n13 = py_test_debug13(d13);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030e0af0, d13, n13 > n ? n13 : n, &L), -EINVAL);
	/* 3.13 keeps its own: no tag */
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d13, n13, &L), 0);
	UNIT_ASSERT(L.code_tag == 0 && L.frame_stacktop == 64);
}

UNIT_TEST(python_layout_debug_offsets)
{
	uint8_t d[1024];
	struct py_layout L;
	size_t n = py_test_debug13(d);

	UNIT_ASSERT(n >= 584 && n <= sizeof(d));
	/* 3.13 needs them */
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, NULL, 0, &L), -EINVAL);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n - 1, &L), -EINVAL);
	/* the layout is what they say */
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n, &L), 0);
	UNIT_ASSERT(L.runtime_interp_head == 632 && L.interp_threads_head == 7344 &&
		    L.tstate_cframe == 0 && L.tstate_current_frame == 72 &&
		    L.tstate_native_tid == 160 && L.frame_code == 0 && L.frame_owner == 70 &&
		    L.code_qualname == 136 && L.code_code == 200 && L.str_ascii_data == 40 &&
		    L.str_compact_data == 56 && L.owner_cstack == 3 && L.tstate_root_cframe == 0);
	/* another thread-state layout: taken from the target, not from a table */
	py_test_put(d, 200, 168);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d01f0, d, n, &L), 0);
	UNIT_ASSERT_EQ_INT(L.tstate_native_tid, 168);
	/* a bad cookie, another version than the binary's, an offset that is no offset */
	d[0] = 'y';
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n, &L), -EINVAL);
	py_test_debug13(d);
	py_test_put(d, 8, 0x030e00f0);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n, &L), -EINVAL);
	py_test_debug13(d);
	py_test_put(d, 72, 1ull << 40);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n, &L), -EINVAL);
	/* an object field past what csampler reads of an object */
	py_test_debug13(d);
	py_test_put(d, 296, 4000);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n, &L), -EINVAL);
	/* a free-threaded build: not supported */
	py_test_debug13(d);
	py_test_put(d, 16, 1);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, d, n, &L), -ENOTSUP);
}

/* Learning where the interpreter keeps its _PyCFrame: three activations whose _PyCFrames sit
 * 0x98 below their CFAs in a synthetic stack copy, chained to the thread's root_cframe. */
UNIT_TEST(python_cframe_offset)
{
	static uint8_t stack[4096];
	const uint64_t base = 0x7ffd00000000ull, root = 0x555500001000ull + 336, d = 0x98;
	const uint64_t cfa[3] = { base + 0x400, base + 0x900, base + 0xe00 };
	struct py_layout L;
	struct unwind_loc locs[7] = { { .sp = base } };
	int acts[3] = { 1, 3, 5 };
	struct py_stack s = { .data = stack, .addr = base, .size = sizeof(stack), .complete = true };

	UNIT_ASSERT_EQ_INT(py_layout_for(0x030b07f0, NULL, 0, &L), 0);
	memset(stack, 0, sizeof(stack));
	for (int k = 0; k < 3; k++) {
		locs[acts[k] + 1].sp = cfa[k];  /* the caller's sp is the activation's CFA */
		py_test_put(stack, cfa[k] - d - base + L.cframe_current_frame, 0x7f0000001000ull + 64 * k);
		py_test_put(stack, cfa[k] - d - base + L.cframe_previous, k < 2 ? cfa[k + 1] - d : root);
	}
	/* a local elsewhere that also holds root (the saved prev_cframe): not a chain */
	py_test_put(stack, cfa[2] - 0x200 - base + L.cframe_previous, root);
	py_test_put(stack, cfa[2] - 0x200 - base + L.cframe_current_frame, 0x7f0000002000ull);
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts, 3, root) == d);
	/* one activation only: both slots chain to root, ambiguous: nothing learned */
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts + 2, 1, root) == 0);
	/* another thread's root: nothing */
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts, 3, root + 8) == 0);
	/* a broken link between the two inner activations: nothing */
	py_test_put(stack, cfa[0] - d - base + L.cframe_previous, cfa[1] - d + 8);
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts, 3, root) == 0);
	py_test_put(stack, cfa[0] - d - base + L.cframe_previous, cfa[1] - d);
	/* an activation whose CFA is not known (its caller was not unwound): nothing */
	locs[4].sp = 0;
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts, 3, root) == 0);
	locs[4].sp = cfa[1];
	/* the stack copy ends before the outer activation's _PyCFrame: nothing */
	s.size = cfa[2] - d - base;
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts, 3, root) == 0);
	/* 3.13 has no _PyCFrame */
	s.size = sizeof(stack);
	uint8_t dbg[1024];
	size_t nd = py_test_debug13(dbg);
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, dbg, nd, &L), 0);
	UNIT_ASSERT(py_cframe_offset_find(&L, &s, locs, 7, acts, 3, root) == 0);
}

/* CSAMPLER_GPU_PYTHON (inject/protocol.h's field order): one row per table version, the
 * 3.11 offsets as the table has them. */
UNIT_TEST(python_layouts_env)
{
	char buf[1024], small[16];
	int n = py_layouts_env(buf, sizeof(buf));
	UNIT_ASSERT(n > 0 && (size_t)n == strlen(buf));
	UNIT_ASSERT(!strncmp(buf, "30b:56,8,32,48,56,68,69,1,0,184,8,0,0;30c:", 42));
	/* 3.13, 3.14: the process' debug offsets say where, by their place in _PyRuntime */
	UNIT_ASSERT(strstr(buf, ";30d:@184,0,@240,@232,@248,0,@264,1,3,@344,@360,0,1;") != NULL);
	UNIT_ASSERT(strstr(buf, ";30e:@208,0,@264,@256,@272,0,@288,1,3,@384,@408,1,1") != NULL);
	UNIT_ASSERT_EQ_INT(py_layouts_env(small, sizeof(small)), -ENOSPC);
}

/* Free-threaded builds (3.13t, 3.14t): told apart by their _Py_DebugOffsets header or the "t"
 * of their file name, never given a layout. */
UNIT_TEST(python_free_threaded_dispatch)
{
	uint8_t dbg[1024];
	size_t nd = py_test_debug13(dbg);
	struct py_layout L;

	UNIT_ASSERT(!py_is_free_threaded(0x030d00f0, dbg, nd, "/usr/bin/python3.13"));
	UNIT_ASSERT(!py_is_free_threaded(0x030b07f0, NULL, 0, "/usr/bin/python3.11"));
	UNIT_ASSERT(!py_is_free_threaded(0x030c01f0, NULL, 0, "/usr/lib/libpython3.12.so.1.0"));
	UNIT_ASSERT(!py_is_free_threaded(0x030d00f0, NULL, 0, NULL));
	UNIT_ASSERT(py_is_free_threaded(0x030d00f0, NULL, 0, "/opt/py/bin/python3.13t"));
	UNIT_ASSERT(py_is_free_threaded(0x030e00f0, NULL, 0, "/opt/py/lib/libpython3.14t.so.1.0"));
	py_test_put(dbg, 16, 1); /* free_threaded */
	UNIT_ASSERT(py_is_free_threaded(0x030d00f0, dbg, nd, "/usr/bin/python3.13"));
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, dbg, nd, &L), -ENOTSUP);
	/* 3.15's header is read (24 bytes) only to say so */
	UNIT_ASSERT_EQ_INT(py_layout_debug_size(0x030f00a0), 24);
	py_test_put(dbg, 8, 0x030f00a0);
	UNIT_ASSERT(py_is_free_threaded(0x030f00a0, dbg, 24, "/usr/bin/python3.15"));
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030f00a0, dbg, 24, &L), -ENOTSUP);
	/* a free-threaded 3.14, told by its whole debug offsets */
	uint8_t d14[1024];
	size_t n14 = py_test_debug14(d14);
	py_test_put(d14, 16, 1);
	UNIT_ASSERT(py_is_free_threaded(0x030e0af0, d14, n14, "/usr/bin/python3.14"));
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030e0af0, d14, n14, &L), -ENOTSUP);
	/* a cookie that does not check says nothing */
	dbg[0] = 'X';
	UNIT_ASSERT(!py_is_free_threaded(0x030f00a0, dbg, 24, "/usr/bin/python3.15"));
}

/* 3.13's anchor: the entry shim frame each _PyEval_EvalFrameDefault activation keeps in its C
 * stack frame (owned by the C stack, executable Py_None, previous: the outer activation's
 * frame; the outermost's 0), found at the one distance below the CFA where every activation
 * has one. */
UNIT_TEST(python_shim_offset)
{
	static uint8_t stack[0x1000];
	const uint64_t base = 0x7ffd00000000ull, none = 0x5555000a0000ull, d = 0x188;
	const uint64_t cfa[3] = { base + 0x400, base + 0x900, base + 0xe00 };
	uint8_t dbg[1024];
	size_t nd = py_test_debug13(dbg);
	struct py_layout L;
	struct unwind_loc locs[7] = { { .sp = base } };
	int acts[3] = { 1, 3, 5 };
	struct py_stack s = { .data = stack, .addr = base, .size = sizeof(stack), .complete = true };

	py_test_put(dbg, 264, 70); /* interpreter_frame.owner */
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030d00f0, dbg, nd, &L), 0);
	for (int k = 0; k < 3; k++) {
		locs[2 * k + 2].sp = cfa[k];
		uint64_t shim = cfa[k] - d - base;
		stack[shim + L.frame_owner] = L.owner_cstack;
		py_test_put(stack, shim + L.frame_code, none);
		py_test_put(stack, shim + L.frame_previous, k < 2 ? 0x7f0000001000ull + 0x100 * k : 0);
	}
	UNIT_ASSERT(py_shim_offset_find(&L, &s, locs, 7, acts, 3, none) == d);
	/* without Py_None known, the owner bytes and links alone still single it out here */
	UNIT_ASSERT(py_shim_offset_find(&L, &s, locs, 7, acts, 3, 0) == d);
	/* the outermost activation entered from a frame: not the start of a complete stack */
	py_test_put(stack, cfa[2] - d - base + L.frame_previous, 0x7f0000003000ull);
	UNIT_ASSERT(py_shim_offset_find(&L, &s, locs, 7, acts, 3, none) == 0);
	py_test_put(stack, cfa[2] - d - base + L.frame_previous, 0);
	/* one activation's slot is not a shim: nothing */
	stack[cfa[1] - d - base + L.frame_owner] = 0;
	UNIT_ASSERT(py_shim_offset_find(&L, &s, locs, 7, acts, 3, none) == 0);
	stack[cfa[1] - d - base + L.frame_owner] = L.owner_cstack;
	/* 3.11 and 3.12 anchor on their _PyCFrame instead */
	UNIT_ASSERT_EQ_INT(py_layout_for(0x030c01f0, NULL, 0, &L), 0);
	UNIT_ASSERT(py_shim_offset_find(&L, &s, locs, 7, acts, 3, none) == 0);
}

/* py_capture's walk (the ptrace stop): a chain of 60 frames of 96 bytes in one data-stack-like
 * block of pages (3.11's and 3.12's way: the thread state points to a _PyCFrame whose
 * current_frame is the innermost frame) under a generator's frame elsewhere, copied from this
 * process; changed afterwards, the copy still holds every frame as it was, and the thread
 * state's native thread id (copied with its frame pointer: off_tid); the 3.13 way (the
 * thread state points to the frame); a chain that loops ends within bounds. */
UNIT_TEST(python_capture_chain)
{
	enum { NF = 60, FSZ = 96, PREV = 8, READ = 64 };
	uint8_t *chunk = aligned_alloc(4096, 8 * 4096), *gen = calloc(1, 256);
	uint8_t *buf = malloc(PY_CAPTURE_MAX);
	uint64_t ts[4] = { 0 }, cf[4] = { 0 };
	uint32_t pid = (uint32_t)getpid();

	UNIT_ASSERT(chunk && gen && buf);
	memset(chunk, 0, 8 * 4096);
	uint8_t *frame[NF + 1];
	for (int i = 0; i < NF; i++) {
		frame[i] = chunk + 4096 + 64 + (size_t)i * FSZ; /* outermost first, growing up */
		uint64_t code = 0x1000 + 8ull * (uint64_t)i, prev = i ? (uint64_t)(uintptr_t)frame[i - 1] : 0;
		memcpy(frame[i], &code, 8);
		memcpy(frame[i] + PREV, &prev, 8);
	}
	frame[NF] = gen + 64; /* the innermost: a generator's, in its object */
	uint64_t gcode = 0x9000, gprev = (uint64_t)(uintptr_t)frame[NF - 1];
	memcpy(frame[NF], &gcode, 8);
	memcpy(frame[NF] + PREV, &gprev, 8);
	cf[2] = (uint64_t)(uintptr_t)frame[NF];
	ts[1] = (uint64_t)(uintptr_t)cf;

	ts[3] = 4242; /* its native thread id, copied with the frame pointer (off_tid) */
	struct py_capture_recipe r = { (uint64_t)(uintptr_t)ts, 8, 16, PREV, READ, 0, 0, NULL, 0, 0, 24 };
	size_t n = py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX);
	UNIT_ASSERT(n > 0 && n <= PY_CAPTURE_MAX);
	for (int i = 0; i <= NF; i++) /* the program moves on: every frame changes */
		memset(frame[i], 0xee, 16);
	ts[1] = ts[3] = 0;
	uint64_t v, f, code;
	UNIT_ASSERT(py_capture_get(buf, n, (uint64_t)(uintptr_t)ts + 24, &v, 8) && v == 4242);
	UNIT_ASSERT(py_capture_get(buf, n, (uint64_t)(uintptr_t)ts + 8, &v, 8));
	UNIT_ASSERT(v == (uint64_t)(uintptr_t)cf);
	UNIT_ASSERT(py_capture_get(buf, n, v + 16, &f, 8));
	int depth = 0;
	for (; f && depth <= NF + 1; depth++) {
		UNIT_ASSERT(py_capture_get(buf, n, f, &code, 8));
		UNIT_ASSERT(code == (depth ? 0x1000 + 8ull * (uint64_t)(NF - depth) : 0x9000));
		UNIT_ASSERT(py_capture_get(buf, n, f + PREV, &f, 8));
	}
	UNIT_ASSERT_EQ_INT(depth, NF + 1);
	/* what it did not copy is not made up */
	UNIT_ASSERT(!py_capture_get(buf, n, (uint64_t)(uintptr_t)chunk + 5 * 4096, &v, 8));

	/* 3.13: the thread state points to the innermost frame itself */
	for (int i = 0; i < NF; i++) {
		uint64_t c = 0x2000 + (uint64_t)i, prev = i ? (uint64_t)(uintptr_t)frame[i - 1] : 0;
		memcpy(frame[i], &c, 8);
		memcpy(frame[i] + PREV, &prev, 8);
	}
	ts[1] = (uint64_t)(uintptr_t)frame[NF - 1];
	r.off_cur = UINT32_MAX;
	n = py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX);
	UNIT_ASSERT(py_capture_get(buf, n, (uint64_t)(uintptr_t)frame[0], &code, 8) && code == 0x2000);

	/* a loop (memory reused while read by another walker): bounded, no hang */
	uint64_t loop = (uint64_t)(uintptr_t)frame[NF - 1];
	memcpy(frame[0] + PREV, &loop, 8);
	r.off_cur = UINT32_MAX;
	n = py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX);
	UNIT_ASSERT(n > 0);
	/* no thread state: nothing */
	r.tstate = 0;
	UNIT_ASSERT(py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX) == 0);
	free(buf);
	free(gen);
	free(chunk);
}

/* py_capture copies the header of each frame's code object once (a sample merged late checks
 * them as of the copy): ten frames running three code objects; changed afterwards, the copy
 * still holds each header as it was; a code object that cannot be read is left out, with
 * those the one read gave up at. */
UNIT_TEST(python_capture_codes)
{
	enum { NF = 10, FSZ = 64, PREV = 8, READ = 32, HDR = 48 };
	uint8_t *chunk = aligned_alloc(4096, 2 * 4096), *codes = calloc(3, HDR);
	uint8_t *buf = malloc(PY_CAPTURE_MAX), hdr[HDR];
	uint64_t ts[2] = { 0 };
	uint32_t pid = (uint32_t)getpid();

	UNIT_ASSERT(chunk && codes && buf);
	memset(chunk, 0, 2 * 4096);
	memset(codes, 0, 3 * HDR);
	for (int c = 0; c < 3; c++)
		memset(codes + c * HDR, 'a' + c, HDR);
	uint8_t *frame[NF];
	for (int i = 0; i < NF; i++) {
		frame[i] = chunk + 64 + (size_t)i * FSZ;
		uint64_t code = (uint64_t)(uintptr_t)(codes + (i % 3) * HDR);
		uint64_t prev = i ? (uint64_t)(uintptr_t)frame[i - 1] : 0;
		memcpy(frame[i], &code, 8);
		memcpy(frame[i] + PREV, &prev, 8);
	}
	ts[1] = (uint64_t)(uintptr_t)frame[NF - 1];
	struct py_capture_recipe r = { (uint64_t)(uintptr_t)ts, 8, UINT32_MAX, PREV, READ, 0, HDR, NULL, 0, 0, 0 };
	size_t n = py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX);
	memset(codes, 'z', 3 * HDR); /* the program moves on */
	for (int c = 0; c < 3; c++) {
		UNIT_ASSERT(py_capture_get(buf, n, (uint64_t)(uintptr_t)(codes + c * HDR), hdr, HDR));
		UNIT_ASSERT(hdr[0] == 'a' + c && hdr[HDR - 1] == 'a' + c);
	}
	/* the outermost frame's code object cannot be read: the others are copied still */
	uint64_t bad = 0x1000;
	memcpy(frame[0], &bad, 8);
	n = py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX);
	UNIT_ASSERT(py_capture_get(buf, n, (uint64_t)(uintptr_t)codes, hdr, HDR) && hdr[0] == 'z');
	UNIT_ASSERT(!py_capture_get(buf, n, bad, hdr, 8));
	/* without code_read: no header */
	r.code_read = 0;
	n = py_capture_chain(pid, &r, 0, NULL, 0, buf, PY_CAPTURE_MAX);
	UNIT_ASSERT(!py_capture_get(buf, n, (uint64_t)(uintptr_t)codes, hdr, HDR));
	free(buf);
	free(codes);
	free(chunk);
}
