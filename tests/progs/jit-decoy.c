/* jit-decoy.c: jit-kernel's kernel (see jit-kernel.c and jit.h), which here stores a genuine
 * return address into its spill area, below its own return address: the one after a direct
 * call in decoy_site, a function with CFI. A stack scan that took it for the JIT frame's caller
 * would give "...;decoy_site;jit_decoy_kernel"; the unwinder must skip it (a direct call whose
 * target is not JIT code cannot have called the kernel) and find jit_caller. */
#define JIT_NO_MAIN_SETUP
#include "jit-kernel.c"
#undef JIT_NAME
#define JIT_NAME "jit_decoy_kernel"
#include "jit.h"

void decoy_callee(void);
__attribute__((noinline, used)) void decoy_callee(void)
{
	__asm__ volatile("" ::: "memory");
}

/* decoy_site: sub $8,%rsp; call decoy_callee; decoy_return: add $8,%rsp; ret (with CFI). */
__asm__(".text\n"
	".globl decoy_site\n"
	".type decoy_site, @function\n"
	"decoy_site:\n"
	".cfi_startproc\n"
	"sub $8, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"call decoy_callee\n"
	".globl decoy_return\n"
	"decoy_return:\n"
	"add $8, %rsp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size decoy_site, .-decoy_site\n");
void decoy_site(void);
extern const char decoy_return[];

static void jit_setup(struct jit_params *p)
{
	static int once;
	if (!once) {
		decoy_site(); /* it really runs: the word is a return address it left */
		once = 1;
	}
	p->decoy = (uint64_t)(uintptr_t)decoy_return;
}
