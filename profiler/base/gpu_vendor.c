/* gpu_vendor.c: the GPU vendor descriptors (gpu_vendor.h) and what is decided with them: the
 * names of a vendor's numbers, whether a frame is on its launch path, whether a frame is one
 * of its libraries. The CUDA numbers are CUPTI's enums (CUpti_ActivityMemcpyKind,
 * CUpti_ActivitySynchronizationType, CUpti_CallbackDomain), as the in-target library writes
 * them (inject/protocol.h). */
#include "base/gpu_vendor.h"
#include "base/cs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const cuda_domains[] = { NULL, "runtime", "driver", "resource" };
static const char *const cuda_copy_kinds[] = {
	NULL, "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
};
static const char *const cuda_sync_types[] = {
	NULL, "Event Synchronize", "Stream Wait Event", "Stream Synchronize", "Context Synchronize",
};
/* The runtime (shared), the driver, CUPTI and csampler's own in-target library. */
static const char *const cuda_launch_modules[] = {
	"libcudart.so", "libcuda.so", "libcupti.so", "libcsampler-cupti.so", NULL,
};
/* The runtime's internals when it is linked statically into the program (nvcc's default). */
static const char *const cuda_launch_prefixes[] = {
	"__cuda", "cudart::", "libcudart_static_", NULL,
};
/* The runtime, the driver and the math and communication libraries. */
static const char *const cuda_library_modules[] = {
	"libcuda.", "libcudart", "libcublas", "libcudnn", "libcufft", "libcurand", "libcusparse",
	"libcusolver", "libnvrtc", "libnvJitLink", "libcupti", "libnccl", "libnvidia-",
	"libnvToolsExt", "libnvptxcompiler", NULL,
};
static const char *const cuda_library_names[] = {
	"cuda", "__cuda", "cublas", "cudnn", "cufft", "curand", "cusparse", "cusolver", "nccl",
	"nvrtc", "cupti", "libcuda", "libcudart", NULL,
};

static const struct gpu_vendor gpu_vendor_cuda = {
	.id = GPU_VENDOR_CUDA,
	.name = "CUDA",
	.category = "cuda",
	.domains = cuda_domains, .ndomains = GPU_NELEMS(cuda_domains),
	.copy_kinds = cuda_copy_kinds, .ncopy_kinds = GPU_NELEMS(cuda_copy_kinds),
	.sync_types = cuda_sync_types, .nsync_types = GPU_NELEMS(cuda_sync_types),
	.sync_device_wait = 2,   /* CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT */
	.sync_stream = 3,        /* CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE */
	.sync_api_word = "Synchronize",
	.launch_modules = cuda_launch_modules,
	.launch_prefixes = cuda_launch_prefixes,
	.api_prefix = "cuda",
	.return_type = "cudaError ",
	.stub_prefix = "__device_stub__",
	.library_modules = cuda_library_modules,
	.library_names = cuda_library_names,
	.driver_prefix = "cu",
};

static const struct gpu_vendor *const gpu_vendors[] = { &gpu_vendor_cuda };

const struct gpu_vendor *gpu_vendor_get(uint32_t id)
{
	for (size_t i = 0; i < GPU_NELEMS(gpu_vendors); i++)
		if (gpu_vendors[i]->id == id)
			return gpu_vendors[i];
	return &gpu_vendor_cuda;
}

const struct gpu_vendor *const *gpu_vendor_all(size_t *n)
{
	*n = GPU_NELEMS(gpu_vendors);
	return gpu_vendors;
}

const char *gpu_vendor_domain(const struct gpu_vendor *v, uint32_t domain)
{
	return domain < v->ndomains ? v->domains[domain] : NULL;
}

const char *gpu_vendor_copy_kind(const struct gpu_vendor *v, uint32_t kind)
{
	return kind < v->ncopy_kinds ? v->copy_kinds[kind] : NULL;
}

const char *gpu_vendor_sync_type(const struct gpu_vendor *v, uint32_t type)
{
	return type < v->nsync_types ? v->sync_types[type] : NULL;
}

static bool gpu_has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool gpu_any_prefix(const char *s, const char *const *prefixes)
{
	for (; *prefixes; prefixes++)
		if (gpu_has_prefix(s, *prefixes))
			return true;
	return false;
}

/* prefix followed by a capital letter: cudaMalloc, cuLaunchKernel. */
static bool gpu_api_name(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return !strncmp(s, prefix, n) && s[n] >= 'A' && s[n] <= 'Z';
}

void gpu_trim_init(struct gpu_trim *t, const struct gpu_vendor *v)
{
	t->v = v;
	t->wrapper[0] = 0;
}

bool gpu_trim_module(const struct gpu_vendor *v, const char *module_path)
{
	return module_path && gpu_any_prefix(cs_basename(module_path), v->launch_modules);
}

/* The kernel named by a launch stub, s just after the stub's prefix: the demangled stub is
 * <stub><the kernel's mangled name without its '_'>(parameters), its raw name (nvcc's odd
 * mangling stays mangled) _Z<len><stub>Z<len><identifier>..., which gives the identifier. */
static void gpu_trim_stub_kernel(struct gpu_trim *t, const char *s)
{
	const char *paren = strchr(s, '(');
	if (paren && s[0] == 'Z' && (size_t)(paren - s) + 2 < sizeof(t->wrapper)) {
		char mangled[1024];
		snprintf(mangled, sizeof(mangled), "_%.*s", (int)(paren - s), s);
		char *dm = cs_demangle(mangled);
		if (dm)
			snprintf(t->wrapper, sizeof(t->wrapper), "%s", dm);
		free(dm);
	} else if (*s == 'Z') {
		char *end;
		unsigned long len = strtoul(s + 1, &end, 10);
		if (end != s + 1 && len && len < sizeof(t->wrapper) && strlen(end) >= len) {
			memcpy(t->wrapper, end, len);
			t->wrapper[len] = 0;
		}
	}
}

/* The runtime's API and internals, and the compiler's launch stub (which sets the wrapper). */
static bool gpu_trim_name(struct gpu_trim *t, const char *n)
{
	const struct gpu_vendor *v = t->v;
	if (gpu_has_prefix(n, v->return_type))
		n += strlen(v->return_type);
	if (gpu_api_name(n, v->api_prefix) || gpu_any_prefix(n, v->launch_prefixes))
		return true;
	if (n[0] == '_' && n[1] == 'Z') {
		n += 2;
		while (*n >= '0' && *n <= '9')
			n++;
	}
	if (!gpu_has_prefix(n, v->stub_prefix))
		return false;
	gpu_trim_stub_kernel(t, n + strlen(v->stub_prefix));
	return true;
}

bool gpu_trim_frame(struct gpu_trim *t, const char *module_path, const char *name)
{
	if (gpu_trim_module(t->v, module_path))
		return true;
	if (!name)
		return false;
	if (gpu_trim_name(t, name))
		return true;
	/* the host wrapper: named as the kernel (with or without its parameters), calls the stub */
	size_t wl = strlen(t->wrapper);
	if (wl && (!strcmp(name, t->wrapper) ||
		   (!strncmp(name, t->wrapper, wl) && (name[wl] == '(' || name[wl] == 0)))) {
		t->wrapper[0] = 0;
		return true;
	}
	return false;
}

bool gpu_vendor_library_module(const char *module_basename)
{
	for (size_t i = 0; i < GPU_NELEMS(gpu_vendors); i++)
		if (gpu_any_prefix(module_basename, gpu_vendors[i]->library_modules))
			return true;
	return false;
}

bool gpu_vendor_library_name(const char *name)
{
	for (size_t i = 0; i < GPU_NELEMS(gpu_vendors); i++)
		if (gpu_any_prefix(name, gpu_vendors[i]->library_names) ||
		    gpu_api_name(name, gpu_vendors[i]->driver_prefix))
			return true;
	return false;
}
