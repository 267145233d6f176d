/* fu-frames.c: frame kinds for fastunwind-test, built twice: FU_SUFFIX=nofp with
 * -fomit-frame-pointer (CFA from RSP, RBP a general register) and FU_SUFFIX=fp with
 * -fno-omit-frame-pointer (CFA from RBP). */
#include <alloca.h>
#include "fu-test.h"

#define NEXT(pat, n, c) ((n) ? fu_next(pat, (n) - 1, c) : fu_capture(c))

/* A frame with locals of its own. */
__attribute__((noinline)) int FU_CAT(fu_rec, FU_SUFFIX)(const char *pat, int n, struct fu_cap *c)
{
	volatile char pad[24];
	pad[0] = (char)n;
	int v = NEXT(pat, n, c);
	fu_sink += v + pad[0];
	return v;
}

/* A variable-size alloca: the CFA comes from RBP even without -fno-omit-frame-pointer. */
__attribute__((noinline)) int FU_CAT(fu_alloca, FU_SUFFIX)(const char *pat, int n, struct fu_cap *c)
{
	char *buf = alloca(16 + (unsigned)(n & 7) * 40 + (unsigned)(fu_sink & 1));
	buf[0] = (char)n;
	__asm__ volatile("" : : "r"(buf) : "memory");
	int v = NEXT(pat, n, c);
	fu_sink += v + buf[0];
	return v;
}

/* Leaf-ish: no locals, only the alignment the call needs. */
__attribute__((noinline)) int FU_CAT(fu_leaf, FU_SUFFIX)(const char *pat, int n, struct fu_cap *c)
{
	return NEXT(pat, n, c) + 1;
}

/* A large frame (CFA offset above 4 KiB). */
__attribute__((noinline)) int FU_CAT(fu_big, FU_SUFFIX)(const char *pat, int n, struct fu_cap *c)
{
	volatile char big[6000];
	big[n & 1023] = (char)n;
	int v = NEXT(pat, n, c);
	fu_sink += v + big[n & 1023];
	return v;
}
