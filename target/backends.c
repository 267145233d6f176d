/* backends.c: choose the backend for --backend auto|cpu|cuda. CUDA support is compiled in only
 * when the build found nvcc and kernels/ (SPLAT_HAVE_CUDA); at run time splat_cuda_probe says
 * whether a device is usable, so a CUDA build still runs on a machine with no driver. */
#include "splat.h"

#include <errno.h>

const struct splat_backend_ops *splat_backend_select(enum splat_backend_choice choice)
{
	if (choice == SPLAT_BACKEND_CPU)
		return &splat_cpu_backend;
#ifdef SPLAT_HAVE_CUDA
	char why[256] = "";
	int rc = splat_cuda_probe(why, sizeof(why));

	if (rc == 0)
		return &splat_cuda_backend;
	if (choice == SPLAT_BACKEND_CUDA) {
		splat_error(-rc, "--backend cuda: %s; use --backend cpu", why[0] ? why : "CUDA unusable");
		return NULL;
	}
	fprintf(stderr, "splat-train: using the CPU backend: %s\n", why[0] ? why : "CUDA unusable");
	return &splat_cpu_backend;
#else
	if (choice == SPLAT_BACKEND_CUDA) {
		splat_error(ENOTSUP, "--backend cuda: this splat-train was built without CUDA support "
			    "(rebuild with nvcc and kernels/ present); use --backend cpu");
		return NULL;
	}
	fprintf(stderr, "splat-train: using the CPU backend: built without CUDA support\n");
	return &splat_cpu_backend;
#endif
}
