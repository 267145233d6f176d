/* jit_test.c: unit tests of unwind/jit.c: the call-instruction check on encodings gcc, clang
 * and JITs emit, and jit_recover() on a made-up address space (a "file" with call sites, a JIT
 * region, a stack copy) for the frame-pointer step, the scan, the decoys both must skip, and
 * the short-copy result. */
#include "unwind/jit.h"

#include <errno.h>
#include <string.h>

#include "format/datafile.h"
#include "base/unit.h"

static enum jit_call_kind jit_test_decode(const uint8_t *insn, size_t len, uint64_t *target)
{
	uint8_t code[32];

	memset(code, 0x90, sizeof(code)); /* nops before the instruction */
	memcpy(code + sizeof(code) - len, insn, len);
	return jit_call_before(code, sizeof(code), 0x1000, target);
}

UNIT_TEST(jit_call_encodings)
{
	static const struct {
		uint8_t bytes[10];
		size_t len;
		enum jit_call_kind kind;
	} cases[] = {
		{ { 0xff, 0xd0 }, 2, JIT_CALL_INDIRECT },                   /* call *%rax */
		{ { 0x41, 0xff, 0xd4 }, 3, JIT_CALL_INDIRECT },             /* call *%r12 */
		{ { 0xff, 0x10 }, 2, JIT_CALL_INDIRECT },                   /* call *(%rax) */
		{ { 0xff, 0x15, 0x75, 0x2c, 0, 0 }, 6, JIT_CALL_INDIRECT }, /* call *X(%rip) */
		{ { 0xff, 0x50, 0x08 }, 3, JIT_CALL_INDIRECT },             /* call *8(%rax) */
		{ { 0xff, 0x54, 0x24, 0x08 }, 4, JIT_CALL_INDIRECT },       /* call *8(%rsp) */
		{ { 0xff, 0x94, 0x24, 0, 1, 0, 0 }, 7, JIT_CALL_INDIRECT }, /* call *0x100(%rsp) */
		{ { 0xff, 0x14, 0x25, 0, 0x10, 0, 0 }, 7, JIT_CALL_INDIRECT }, /* call *0x1000 */
		{ { 0x3e, 0xff, 0xd0 }, 3, JIT_CALL_INDIRECT },             /* notrack call *%rax */
		{ { 0x41, 0xff, 0x54, 0x24, 0x10 }, 5, JIT_CALL_INDIRECT }, /* call *0x10(%r12) */
		{ { 0xff, 0xe0 }, 2, JIT_CALL_NONE },                       /* jmp *%rax */
		{ { 0x48, 0x89, 0xc7 }, 3, JIT_CALL_NONE },                 /* mov %rax,%rdi */
		{ { 0x48, 0x83, 0xc4, 0x08 }, 4, JIT_CALL_NONE },           /* add $8,%rsp */
		{ { 0xff, 0x54, 0x24 }, 3, JIT_CALL_NONE },                 /* cut short */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t target = 0;
		enum jit_call_kind k = jit_test_decode(cases[i].bytes, cases[i].len, &target);
		if (k != cases[i].kind)
			fprintf(stderr, "case %zu: kind %d, expected %d\n", i, k, cases[i].kind);
		UNIT_ASSERT_EQ_INT(k, cases[i].kind);
	}
	/* call rel32: the target is relative to the return address */
	static const uint8_t direct[] = { 0xe8, 0xf0, 0xff, 0xff, 0xff }; /* call .-11 */
	uint64_t target = 0;
	UNIT_ASSERT_EQ_INT(jit_test_decode(direct, sizeof(direct), &target), JIT_CALL_DIRECT);
	UNIT_ASSERT_EQ_INT(target, 0x1000 - 0x10);
}

/* The made-up process: code of a file with CFI at FILE_BASE (a hole without CFI in it), JIT
 * code at JIT_BASE, the stack copy at STACK_BASE. */
#define FILE_BASE 0x400000ull
#define FILE_SIZE 0x100
#define NOCFI_AT 0x80        /* [NOCFI_AT, NOCFI_AT + 0x20): no CFI row */
#define JIT_BASE 0x70000000ull
#define STACK_BASE 0x7ffd0000ull

struct jit_test_space {
	uint8_t file[FILE_SIZE];
	uint64_t stack[128];
	size_t stack_words;
};

static const uint8_t *jit_test_code_before(void *arg, uint64_t addr, size_t n)
{
	struct jit_test_space *s = arg;
	if (addr < FILE_BASE + n || addr > FILE_BASE + FILE_SIZE)
		return NULL;
	return s->file + (addr - FILE_BASE) - n;
}

static bool jit_test_has_cfi(void *arg, uint64_t pc)
{
	return pc >= FILE_BASE && pc < FILE_BASE + FILE_SIZE &&
	       !(pc >= FILE_BASE + NOCFI_AT && pc < FILE_BASE + NOCFI_AT + 0x20);
}

static bool jit_test_is_jit(void *arg, uint64_t addr)
{
	return addr >= JIT_BASE && addr < JIT_BASE + 0x1000;
}

/* Places a call instruction ending at file offset end; returns its return address. */
static uint64_t jit_test_call(struct jit_test_space *s, size_t end, const uint8_t *insn, size_t len)
{
	memcpy(s->file + end - len, insn, len);
	return FILE_BASE + end;
}

static uint64_t jit_test_direct(struct jit_test_space *s, size_t end, uint64_t target)
{
	uint8_t insn[5] = { 0xe8 };
	int32_t rel = (int32_t)(target - (FILE_BASE + end));
	memcpy(insn + 1, &rel, 4);
	return jit_test_call(s, end, insn, 5);
}

static struct jit_memory jit_test_memory(struct jit_test_space *s)
{
	return (struct jit_memory){ .stack = (const uint8_t *)s->stack, .stack_start = STACK_BASE,
				    .stack_size = s->stack_words * 8, .arg = s,
				    .code_before = jit_test_code_before,
				    .has_cfi = jit_test_has_cfi, .is_jit = jit_test_is_jit };
}

UNIT_TEST(jit_recover_scan_and_fp)
{
	static struct jit_test_space s;
	static const uint8_t call_rax[] = { 0xff, 0xd0 };
	memset(s.file, 0x90, sizeof(s.file));
	uint64_t ret_indirect = jit_test_call(&s, 0x20, call_rax, 2);
	uint64_t ret_stale = jit_test_direct(&s, 0x40, FILE_BASE + 0x10); /* file -> file */
	uint64_t ret_to_jit = jit_test_direct(&s, 0x60, JIT_BASE + 0x100);  /* file -> JIT */
	uint64_t ret_no_cfi = jit_test_call(&s, NOCFI_AT + 0x10, call_rax, 2);
	s.stack_words = 128;
	struct jit_memory mem = jit_test_memory(&s);
	struct jit_caller c;

	UNIT_ASSERT(jit_is_return_address(&mem, ret_indirect));
	UNIT_ASSERT(!jit_is_return_address(&mem, ret_stale));
	UNIT_ASSERT(jit_is_return_address(&mem, ret_to_jit));
	UNIT_ASSERT(!jit_is_return_address(&mem, ret_no_cfi));
	UNIT_ASSERT(!jit_is_return_address(&mem, FILE_BASE + 0x30)); /* after nops */
	UNIT_ASSERT(!jit_is_return_address(&mem, JIT_BASE + 0x10));  /* not in a file */

	/* A oneDNN-like frame: spills (data, a decoy, a word without CFI), saved registers, then
	 * the return address; rbp holds a pointer to data in the caller's frame. */
	memset(s.stack, 0, sizeof(s.stack));
	s.stack[0] = 12345;
	s.stack[1] = ret_stale;
	s.stack[2] = ret_no_cfi;
	s.stack[3] = FILE_BASE + 0x30;
	s.stack[4] = STACK_BASE + 0x200;
	s.stack[9] = ret_indirect;
	s.stack[12] = 77;
	s.stack[13] = 88; /* rbp points at (77, 88): data, not a frame */
	struct jit_frame f = { .pc = JIT_BASE + 0x40, .sp = STACK_BASE, .bp = STACK_BASE + 12 * 8,
			       .have_bp = true };
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), 0);
	UNIT_ASSERT_EQ_INT(c.how, PROFILE_FRAME_FOUND_SCAN);
	UNIT_ASSERT_EQ_INT(c.pc, ret_indirect);
	UNIT_ASSERT_EQ_INT(c.sp, STACK_BASE + 10 * 8);
	UNIT_ASSERT(!c.have_bp);

	/* The same frame keeping a frame pointer: rbp -> (saved rbp above it, return address).
	 * The step wins over the scan, even over an earlier return address. */
	s.stack[20] = STACK_BASE + 40 * 8;
	s.stack[21] = ret_to_jit;
	f.bp = STACK_BASE + 20 * 8;
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), 0);
	UNIT_ASSERT_EQ_INT(c.how, PROFILE_FRAME_FOUND_FP);
	UNIT_ASSERT_EQ_INT(c.pc, ret_to_jit);
	UNIT_ASSERT_EQ_INT(c.sp, STACK_BASE + 22 * 8);
	UNIT_ASSERT(c.have_bp);
	UNIT_ASSERT_EQ_INT(c.bp, STACK_BASE + 40 * 8);

	/* Implausible steps fall back to the scan: a saved rbp below rbp, a saved rbp beyond
	 * the copy, rbp below sp, a return address without a call before it. */
	s.stack[20] = STACK_BASE + 8;
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), 0);
	UNIT_ASSERT_EQ_INT(c.how, PROFILE_FRAME_FOUND_SCAN);
	s.stack[20] = STACK_BASE + 4096;
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), 0);
	UNIT_ASSERT_EQ_INT(c.how, PROFILE_FRAME_FOUND_SCAN);
	s.stack[20] = STACK_BASE + 40 * 8;
	f.sp = STACK_BASE + 21 * 8;
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), 0);
	UNIT_ASSERT_EQ_INT(c.how, PROFILE_FRAME_FOUND_SCAN); /* finds stack[21] itself */
	UNIT_ASSERT_EQ_INT(c.sp, STACK_BASE + 22 * 8);
	f.sp = STACK_BASE;
	s.stack[21] = ret_stale;
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), 0);
	UNIT_ASSERT_EQ_INT(c.how, PROFILE_FRAME_FOUND_SCAN);
	UNIT_ASSERT_EQ_INT(c.pc, ret_indirect);
	f.have_bp = false;

	/* Nothing within JIT_SCAN_BYTES: -ENOENT; the copy ends first: -ERANGE. */
	s.stack[9] = 0;
	s.stack[21] = 0;
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), -ENOENT);
	s.stack_words = 30;
	mem = jit_test_memory(&s);
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), -ERANGE);
	/* a return address beyond JIT_SCAN_BYTES is not looked for */
	s.stack_words = 128;
	s.stack[JIT_SCAN_BYTES / 8 + 2] = ret_indirect;
	mem = jit_test_memory(&s);
	UNIT_ASSERT_EQ_INT(jit_recover(&mem, &f, &c), -ENOENT);
}
