/* jit.c: recovering the caller of a frame without CFI (see jit.h).
 *
 * The call-instruction check decodes only the instruction that would end at a return address,
 * by hand: it needs the length of one x86-64 instruction form (FF /2 and E8), which is a dozen
 * lines, where a disassembler library (libopcodes, capstone, elfutils' libasm) would be a new
 * dependency and decode whole instruction streams for it. */
#include "unwind/jit.h"

#include <errno.h>
#include <string.h>

#include "format/datafile.h"

/* Length of a ModRM operand (ModRM, SIB, displacement) starting at p, or 0 past end. */
static size_t jit_modrm_len(const uint8_t *p, const uint8_t *end)
{
	if (p >= end)
		return 0;
	unsigned mod = p[0] >> 6, rm = p[0] & 7;
	size_t len = 1;

	if (mod == 3)
		return 1;
	if (rm == 4) { /* SIB */
		if (p + 1 >= end)
			return 0;
		len++;
		if (mod == 0 && (p[1] & 7) == 5)
			len += 4; /* no base: disp32 */
	} else if (mod == 0 && rm == 5) {
		len += 4; /* rip + disp32 */
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len;
}

static bool jit_is_prefix(uint8_t b)
{
	/* notrack (3e), cs (2e), bnd (f2), fs/gs (64/65): the prefixes a call is seen with */
	return b == 0x3e || b == 0x2e || b == 0xf2 || b == 0x64 || b == 0x65;
}

/* Whether code[start, n) is exactly one FF /2 instruction. */
static bool jit_is_indirect_call(const uint8_t *code, size_t start, size_t n)
{
	const uint8_t *p = code + start, *end = code + n;

	for (int i = 0; i < 2 && p < end && jit_is_prefix(*p); i++)
		p++;
	if (p < end && (*p & 0xf0) == 0x40) /* REX */
		p++;
	if (p + 1 >= end || p[0] != 0xff || ((p[1] >> 3) & 7) != 2)
		return false;
	size_t len = jit_modrm_len(p + 1, end);
	return len && p + 1 + len == end;
}

enum jit_call_kind jit_call_before(const uint8_t *code, size_t n, uint64_t ret, uint64_t *target)
{
	if (n >= 5 && code[n - 5] == 0xe8) {
		int32_t rel;
		memcpy(&rel, code + n - 4, sizeof(rel));
		*target = ret + (uint64_t)(int64_t)rel;
		return JIT_CALL_DIRECT;
	}
	for (size_t len = 2; len <= n && len <= JIT_CALL_MAX_LEN; len++)
		if (jit_is_indirect_call(code, n - len, n))
			return JIT_CALL_INDIRECT;
	return JIT_CALL_NONE;
}

bool jit_is_return_address(const struct jit_memory *mem, uint64_t addr)
{
	const uint8_t *code = NULL;
	size_t n = JIT_CALL_MAX_LEN;
	uint64_t target = 0;

	if (addr < JIT_CALL_MAX_LEN)
		return false;
	/* Near the start of the file fewer bytes precede addr: take what there is. */
	while (!(code = mem->code_before(mem->arg, addr, n)) && n > 2)
		n--;
	if (!code)
		return false;
	switch (jit_call_before(code, n, addr, &target)) {
	case JIT_CALL_INDIRECT:
		break;
	case JIT_CALL_DIRECT:
		if (!mem->is_jit(mem->arg, target))
			return false;
		break;
	default:
		return false;
	}
	/* Last, as it is the dearest: the caller must be unwindable by CFI from there. */
	return mem->has_cfi(mem->arg, addr - 1);
}

/* The word at addr in the stack copy; false when it is not all inside. */
static bool jit_read(const struct jit_memory *mem, uint64_t addr, uint64_t *out)
{
	if (addr < mem->stack_start || addr - mem->stack_start > mem->stack_size ||
	    mem->stack_size - (addr - mem->stack_start) < sizeof(*out))
		return false;
	memcpy(out, mem->stack + (addr - mem->stack_start), sizeof(*out));
	return true;
}

int jit_recover(const struct jit_memory *mem, const struct jit_frame *f, struct jit_caller *out)
{
	uint64_t copy_end = mem->stack_start + mem->stack_size;
	uint64_t saved_bp, ret;
	bool beyond = false;

	/* 1. One frame-pointer step: rbp must point at a (saved rbp, return address) pair in
	 * this frame or above it, the saved rbp must lead further up the stack, and the return
	 * address must be one. */
	if (f->have_bp && !(f->bp & 7) && f->bp >= f->sp) {
		if (!jit_read(mem, f->bp, &saved_bp) || !jit_read(mem, f->bp + 8, &ret)) {
			/* Only an rbp just above the copy says the copy was short: a data
			 * pointer far away says nothing. */
			beyond = f->bp >= copy_end && f->bp - copy_end < JIT_SCAN_BYTES;
		} else if (saved_bp > f->bp && saved_bp < copy_end &&
			   jit_is_return_address(mem, ret)) {
			*out = (struct jit_caller){ .pc = ret, .sp = f->bp + 16, .bp = saved_bp,
						    .have_bp = true, .how = PROFILE_FRAME_FOUND_FP };
			return 0;
		}
	}

	/* 2. The first return address above sp. */
	uint64_t start = (f->sp + 7) & ~7ull;
	for (uint64_t a = start; a < start + JIT_SCAN_BYTES; a += 8) {
		uint64_t w;
		if (!jit_read(mem, a, &w)) {
			beyond = true;
			break;
		}
		if (jit_is_return_address(mem, w)) {
			*out = (struct jit_caller){ .pc = w, .sp = a + 8,
						    .how = PROFILE_FRAME_FOUND_SCAN };
			return 0;
		}
	}
	return beyond ? -ERANGE : -ENOENT;
}
