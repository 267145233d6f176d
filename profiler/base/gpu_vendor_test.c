/* gpu_vendor_test.c: unit tests of the GPU vendor descriptors (gpu_vendor.c): names by number,
 * the launch path a launch stack is trimmed of, the libraries the flame graph colours. */
#include "base/gpu_vendor.h"
#include "base/unit.h"

#include <string.h>

static bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Files written before the vendor field are CUDA's; CUPTI's numbers name as CUPTI names them. */
UNIT_TEST(gpu_vendor_names_by_number)
{
	const struct gpu_vendor *v = gpu_vendor_get(GPU_VENDOR_UNKNOWN);
	UNIT_ASSERT(v == gpu_vendor_get(GPU_VENDOR_CUDA) && v->id == GPU_VENDOR_CUDA);
	UNIT_ASSERT(gpu_vendor_get(77) == v);
	size_t n;
	UNIT_ASSERT(gpu_vendor_all(&n)[0] == v && n == 1);
	UNIT_ASSERT(streq(gpu_vendor_copy_kind(v, 1), "HtoD") && streq(gpu_vendor_copy_kind(v, 10), "PtoP"));
	UNIT_ASSERT(!gpu_vendor_copy_kind(v, 0) && !gpu_vendor_copy_kind(v, 11));
	UNIT_ASSERT(streq(gpu_vendor_sync_type(v, 3), "Stream Synchronize") && !gpu_vendor_sync_type(v, 5));
	UNIT_ASSERT(streq(gpu_vendor_domain(v, 2), "driver") && !gpu_vendor_domain(v, 0) &&
		    !gpu_vendor_domain(v, 4));
	UNIT_ASSERT_EQ_INT(v->sync_device_wait, 2);
	UNIT_ASSERT(streq(gpu_vendor_sync_type(v, v->sync_stream), "Stream Synchronize"));
}

/* Trim frames leaf first until the first that is not on the launch path; return how many. */
static int trimmed(const char *const *frames, const char *const *modules, int n)
{
	struct gpu_trim t;
	gpu_trim_init(&t, gpu_vendor_get(GPU_VENDOR_CUDA));
	int k = 0;
	while (k < n && gpu_trim_frame(&t, modules ? modules[k] : NULL, frames[k]))
		k++;
	return k;
}

/* The shared runtime by module, the static runtime's API and internals by name, nvcc's stub
 * (raw or demangled) and the host wrapper above it; not a function named like a kernel without
 * a stub below it, and not the program's frames. */
UNIT_TEST(gpu_vendor_launch_path)
{
	const char *const modules[] = { "/usr/lib/libcudart.so.13.0", "/bin/train", "/bin/train",
					"/bin/train", "/bin/train", "/bin/train", "/bin/train" };
	const char *const raw[] = {
		"anything", "libcudart_static_0123abcd", "cudaLaunchKernel",
		"cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, unsigned long, CUstream_st*)",
		"_Z33__device_stub__Z11blur_kernelPfiPfi", "blur_kernel(float*, int)", "blur_image",
	};
	UNIT_ASSERT_EQ_INT(trimmed(raw, modules, 7), 6);
	const char *const demangled[] = { "cudaLaunchKernel", "__device_stub__Z11blur_kernelPfi(float*, int)",
					  "blur_kernel(float*, int)", "main" };
	UNIT_ASSERT_EQ_INT(trimmed(demangled, NULL, 4), 3);
	const char *const no_stub[] = { "cudaLaunchKernel", "blur_kernel(float*, int)", "main" };
	UNIT_ASSERT_EQ_INT(trimmed(no_stub, NULL, 3), 1);
	const char *const program[] = { "cudaish", "cuda_helper", "my_cudaLaunch" };
	UNIT_ASSERT_EQ_INT(trimmed(program, NULL, 3), 0);
	const char *const unnamed[] = { NULL, "cudaMalloc" };
	UNIT_ASSERT_EQ_INT(trimmed(unnamed, NULL, 2), 0);
	UNIT_ASSERT(gpu_trim_module(gpu_vendor_get(GPU_VENDOR_CUDA), "/opt/x/libcsampler-cupti.so"));
	UNIT_ASSERT(!gpu_trim_module(gpu_vendor_get(GPU_VENDOR_CUDA), "/usr/lib/libcublas.so.13"));
}

/* The flame graph's vendor colour: libraries by module, functions and the driver API by name. */
UNIT_TEST(gpu_vendor_libraries)
{
	UNIT_ASSERT(gpu_vendor_library_module("libcublas.so.13") && gpu_vendor_library_module("libcuda.so.1"));
	UNIT_ASSERT(!gpu_vendor_library_module("libc.so.6") && !gpu_vendor_library_module("libcudaish.so"));
	UNIT_ASSERT(gpu_vendor_library_name("cuLaunchKernel") && gpu_vendor_library_name("ncclAllReduce"));
	UNIT_ASSERT(!gpu_vendor_library_name("cull") && !gpu_vendor_library_name("main"));
}
