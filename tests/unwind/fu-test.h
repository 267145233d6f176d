/* fu-test.h: the pieces of bin/tests/unwind/fastunwind-test (fastunwind-test.c, fu-frames.c
 * built with and without frame pointers, fu-lib.c as a linked and a dlopen'd library). */
#ifndef FU_TEST_H
#define FU_TEST_H
#include <stdint.h>

enum { FU_CAP_MAX = 256 };

/* One stack three ways, all from fu_capture: libunwind's unw_backtrace, an unw_step loop,
 * fu_backtrace (or fu_backtrace_token). */
struct fu_cap {
	int max;
	int with_token;       /* fu_backtrace_token instead of fu_backtrace, into token */
	uint64_t token;
	int nu, ns, nf;
	uintptr_t u[FU_CAP_MAX], s[FU_CAP_MAX], f[FU_CAP_MAX];
};

extern volatile int fu_sink;
int fu_capture(struct fu_cap *c);
/* Call the frame kind pat[n % strlen(pat)] with n (it recurses through fu_next down to 0). */
int fu_next(const char *pat, int n, struct fu_cap *c);

#define FU_CAT2(a, b) a##_##b
#define FU_CAT(a, b) FU_CAT2(a, b)
int fu_rec_nofp(const char *pat, int n, struct fu_cap *c);
int fu_alloca_nofp(const char *pat, int n, struct fu_cap *c);
int fu_leaf_nofp(const char *pat, int n, struct fu_cap *c);
int fu_big_nofp(const char *pat, int n, struct fu_cap *c);
int fu_rec_fp(const char *pat, int n, struct fu_cap *c);
int fu_alloca_fp(const char *pat, int n, struct fu_cap *c);
int fu_leaf_fp(const char *pat, int n, struct fu_cap *c);
int fu_big_fp(const char *pat, int n, struct fu_cap *c);
int fu_lib(const char *pat, int n, struct fu_cap *c);
#endif
