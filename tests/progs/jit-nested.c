/* jit-nested.c: JIT code calling C calling JIT code (see jit.h): an outer kernel without CFI
 * (push rbx, rbp; rbp the parameter pointer) calls jit_callback through a pointer, which calls
 * jit-kernel's kernel. Each sample in the inner kernel needs two recoveries:
 *   worker_loop;jit_caller;jit_outer_kernel;jit_callback;jit_gemm_kernel */
#define JIT_NO_MAIN_SETUP
#include "jit-kernel.c"
#undef JIT_CODE
#undef JIT_NAME
/* push rbx; push rbp; sub $0x18,rsp; mov rdi,rbp; mov 0(rbp),rbx;
 * 1: mov rbp,rdi; call *0x18(rbp); dec rbx; jne 1b;
 * add $0x18,rsp; pop rbp; pop rbx; ret */
#define JIT_CODE { \
	0x53, 0x55, 0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0xfd, 0x48, 0x8b, 0x5d, 0x00, \
	0x48, 0x89, 0xef, 0xff, 0x55, 0x18, 0x48, 0xff, 0xcb, 0x75, 0xf5, \
	0x48, 0x83, 0xc4, 0x18, 0x5d, 0x5b, 0xc3 }
#define JIT_NAME "jit_outer_kernel"
#define JIT_CODE2 JIT_GEMM_CODE
#define JIT_NAME2 "jit_gemm_kernel"
#include "jit.h"

__attribute__((noinline)) void jit_callback(struct jit_params *outer)
{
	struct jit_params p = { .iterations = 5000, .decoy = 0x5eed };

	jit_kernel2(&p);
	outer->result += p.result;
}

static void jit_setup(struct jit_params *p)
{
	p->iterations = 4; /* calls of jit_callback per outer kernel call */
	p->callback = jit_callback;
}
