/* fu-lib.c: a frame kind in a shared library: linked (fu_lib, libfu-lib.so) and dlopen'd
 * (fu_dl, libfu-dl.so, built with -DFU_DL). */
#include "fu-test.h"

#ifdef FU_DL
#define FU_NAME fu_dl
#else
#define FU_NAME fu_lib
#endif

__attribute__((visibility("default"))) int FU_NAME(const char *pat, int n, struct fu_cap *c)
{
	volatile int pad[6];
	pad[0] = n;
	int v = n ? fu_next(pat, n - 1, c) : fu_capture(c);
	fu_sink += v + pad[0];
	return v;
}
