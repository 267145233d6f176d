/* gpu_vendor.h: what csampler knows of one GPU vendor's runtime, in one descriptor: the names
 * of its API domains, copy kinds and synchronisation types (the numbers its tracer puts in
 * the data file's GPU records), the libraries and functions of its launch path (runtime,
 * driver, tracer, the compiler's launch stub), which the recorder trims from a launch stack
 * when it interns it, and its libraries for the flame graph's colours. CUDA (CUPTI) is the one
 * vendor now; a second (ROCm's rocprofiler-sdk) is one more descriptor here and its own
 * in-target library, and the readers name its records through the GPU info record's vendor.
 * In base/ because the recorder, the readers and the flame graph all use it (libc only). */
#ifndef CSAMPLER_GPU_VENDOR_H
#define CSAMPLER_GPU_VENDOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The values of the GPU info record's vendor field (csampler-data(5) DF_GPU_INFO). */
enum gpu_vendor_id {
	GPU_VENDOR_UNKNOWN = 0,   /* a file written before the field: its records are CUDA's */
	GPU_VENDOR_CUDA = 1,
};

struct gpu_vendor {
	uint32_t id;                       /* enum gpu_vendor_id */
	const char *name;                  /* "CUDA": "CUDA API cbid N", the report's words */
	const char *category;              /* trace categories: "cuda" -> cuda_runtime, cuda_sync */
	const char *const *domains;        /* API domain names by domain number ("runtime") */
	size_t ndomains;
	const char *const *copy_kinds;     /* copy kind names by copy kind ("HtoD"); NULL: none */
	size_t ncopy_kinds;
	const char *const *sync_types;     /* synchronisation names by type ("Stream Synchronize") */
	size_t nsync_types;
	uint32_t sync_device_wait;         /* the sync type in which the device waits (an event
					    * made a stream wait), not the CPU */
	uint32_t sync_stream;              /* the sync type that waits for one stream (the rest
					    * wait for an event or the whole context) */
	const char *sync_api_word;         /* in an API call's name: the call blocks the CPU */
	/* The launch path, trimmed from launch stacks (leaf first, up to the program's first
	 * frame): modules by basename prefix; functions by name prefix, by the API's prefix
	 * followed by a capital (cudaLaunchKernel), after an optional return type
	 * ("cudaError cudaLaunchKernel<char>(...)"); the compiler's launch stub, whose caller is
	 * then the host wrapper named as the kernel (trimmed too). */
	const char *const *launch_modules; /* NULL-terminated */
	const char *const *launch_prefixes;/* NULL-terminated */
	const char *api_prefix;            /* "cuda" */
	const char *return_type;           /* "cudaError " */
	const char *stub_prefix;           /* "__device_stub__" */
	/* The flame graph's vendor colour: modules and function names by prefix (math and
	 * communication libraries too), and the driver API (its prefix and a capital). */
	const char *const *library_modules;/* NULL-terminated */
	const char *const *library_names;  /* NULL-terminated */
	const char *driver_prefix;         /* "cu" */
};

/* The descriptor of vendor id; GPU_VENDOR_UNKNOWN and ids this csampler does not know give
 * CUDA's (every file written before the vendor field holds CUDA records). */
const struct gpu_vendor *gpu_vendor_get(uint32_t id);
/* Every descriptor, for what does not know the vendor (folded text: names only). */
const struct gpu_vendor *const *gpu_vendor_all(size_t *n);

/* Names by number, or NULL when the vendor has none for it (the caller's fallback says so). */
const char *gpu_vendor_domain(const struct gpu_vendor *v, uint32_t domain);
const char *gpu_vendor_copy_kind(const struct gpu_vendor *v, uint32_t kind);
const char *gpu_vendor_sync_type(const struct gpu_vendor *v, uint32_t type);

/* Trimming a launch stack, leaf first: gpu_trim_frame says whether a frame (its module's path,
 * or NULL, and its symbol name, or NULL when it has none) is on the vendor's launch path;
 * the caller stops at the first that is not. The state remembers a launch stub's kernel, so
 * that the host wrapper above the stub (a function with the kernel's name) goes too. */
struct gpu_trim {
	const struct gpu_vendor *v;
	char wrapper[1024];                /* the kernel whose host wrapper comes next, or "" */
};
void gpu_trim_init(struct gpu_trim *t, const struct gpu_vendor *v);
bool gpu_trim_module(const struct gpu_vendor *v, const char *module_path);
bool gpu_trim_frame(struct gpu_trim *t, const char *module_path, const char *name);

/* A frame of any vendor's libraries, by module basename or (no module known) by name. */
bool gpu_vendor_library_module(const char *module_basename);
bool gpu_vendor_library_name(const char *name);

#endif
