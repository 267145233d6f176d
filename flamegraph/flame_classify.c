/* flame_classify.c: which kind of code a frame is (own code, system library, kernel, CUDA,
 * GPU work, JIT), for its colour and the legend. Data files give the module; folded text
 * only the name, so well-known naming conventions stand in for it. The GPU vendors'
 * libraries are their descriptors' (base/gpu_vendor.h). */
#include "flame.h"
#include "base/cs.h"
#include "base/gpu_vendor.h"

#include <string.h>

static bool flame_has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool flame_any_prefix(const char *s, const char *const *prefixes)
{
	for (; *prefixes; prefixes++)
		if (flame_has_prefix(s, *prefixes))
			return true;
	return false;
}

/* Libraries that come with the system, not with the program. */
static const char *const flame_system_modules[] = {
	"libc.", "libc-", "libm.", "libm-", "libmvec", "libpthread", "libdl.", "libdl-", "librt.",
	"ld-linux", "ld64.", "ld-2.", "libstdc++", "libgcc_s", "libz.", "libzstd", "liblzma",
	"libbz2", "libgomp", "libdw", "libelf", "libcrypto", "libssl", "libresolv", "libnss_",
	"libffi", "libunwind", "libtinfo", "libncurses", "libreadline", "libselinux", "libsystemd",
	"libdbus", "libglib", "libpython", "libjemalloc", "libtcmalloc", "libnuma", "libgfortran",
	"libopenblas", "libblas", "liblapack", "libtbb", "libicu", "libxml2", "libexpat", "libpcre",
	"libuuid", "libcap", "libseccomp", "libatomic", "libquadmath", "[vdso]", "[vsyscall]",
	NULL,
};

/* Function names that only libc, the dynamic loader and the C++ runtime define. */
static const char *const flame_system_names[] = {
	"__libc_", "__GI_", "_IO_", "__memcpy", "__memmove", "__memset", "__memcmp", "__strlen",
	"__strcmp", "__strchr", "__nss_", "pthread_", "__pthread", "start_thread", "__clone",
	"clone3", "_dl_", "__dl_", "_int_malloc", "_int_free", "__malloc", "__libc_malloc",
	"malloc_consolidate", "__GI___", "__nptl_", "__futex", "futex_", "__lll_", "___pthread",
	"__vdso_", "_start", "__cxa_", "__gxx_", "_Unwind_", "__sigsetjmp", "__longjmp",
	"__clock_", "__nanosleep", "__poll", "__select", "__read", "__write", "__open", "__close",
	"__sched_", "__ioctl", "__mmap", "__munmap", "__madvise", "__brk", "__sbrk", "__syscall",
	NULL,
};

/* libc functions that a program calls directly, named without a prefix. */
static const char *const flame_libc_functions[] = {
	"malloc", "free", "calloc", "realloc", "memcpy", "memmove", "memset", "memcmp", "strlen",
	"strcmp", "strncmp", "strcpy", "qsort", "printf", "fprintf", "fwrite", "fread", "read",
	"write", "open", "close", "mmap", "munmap", "poll", "epoll_wait", "nanosleep", "usleep",
	"clock_gettime", "gettimeofday", "syscall", "ioctl", "sched_yield", NULL,
};

/* py-spy's (and csampler folded's) Python frame: "function (path/file.py:LINE)". */
static bool flame_python_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 8 || name[n - 1] != ')')
		return false;
	const char *open = memrchr(name, '(', n);
	if (!open || open == name || open[-1] != ' ')
		return false;
	const char *colon = memrchr(open, ':', (size_t)(name + n - open));
	if (!colon || colon - open < 4 || strncmp(colon - 3, ".py", 3) != 0 || colon + 1 == name + n - 1)
		return false;
	for (const char *d = colon + 1; d < name + n - 1; d++)
		if (*d < '0' || *d > '9')
			return false;
	return true;
}

static enum flame_kind flame_classify_module(const char *module)
{
	if (!strcmp(module, "[kernel.kallsyms]") || !strcmp(module, "vmlinux") ||
	    flame_has_prefix(module, "[kernel"))
		return FLAME_KIND_KERNEL;
	if (gpu_vendor_library_module(module))
		return FLAME_KIND_CUDA;
	if (flame_any_prefix(module, flame_system_modules))
		return FLAME_KIND_SYSTEM;
	return FLAME_KIND_OWN;
}

/* The module named inside a frame name: "[libc.so.6]" (perf's unknown symbols),
 * "libfoo.so+0x1a2b" (csampler's unnamed frames), "libc.so.1`malloc" (DTrace). Copies it into
 * buf and returns buf, or returns NULL. */
static const char *flame_module_in_name(const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);
	const char *start = NULL, *end = NULL;
	const char *plus = strstr(name, "+0x");
	const char *tick = strchr(name, '`');

	if (n > 2 && name[0] == '[' && name[n - 1] == ']') {
		start = name + 1;
		end = name + n - 1;
	} else if (tick) {
		start = name;
		end = tick;
	} else if (plus && memmem(name, plus - name, ".so", 3)) {
		start = name;
		end = plus;
	}
	if (!start || end <= start || (size_t)(end - start) >= size)
		return NULL;
	const char *slash = memrchr(start, '/', end - start);
	if (slash)
		start = slash + 1;
	memcpy(buf, start, end - start);
	buf[end - start] = 0;
	return buf;
}

enum flame_kind flame_classify(const char *name, const char *module, uint32_t flags)
{
	char buf[256];

	if (flags & PROFILE_FRAME_GPU_KERNEL)
		return FLAME_KIND_GPU_KERNEL;
	if (flags & PROFILE_FRAME_GPU_COPY)
		return FLAME_KIND_GPU_COPY;
	if (flags & PROFILE_FRAME_GPU_SYNC)
		return FLAME_KIND_GPU_SYNC;
	if (flags & PROFILE_FRAME_KERNEL)
		return FLAME_KIND_KERNEL;
	if (flags & PROFILE_FRAME_JIT)
		return FLAME_KIND_JIT;
	if ((flags & PROFILE_FRAME_OFFCPU) || !strncmp(name, "[off-cpu: ", 10))
		return FLAME_KIND_OFFCPU;
	if (name[0] == '[' && !(module && *module)) {
		/* The GPU view's frames (fold_gpu.c), before "[module]" below takes them. */
		if (!strncmp(name, "[gpu] ", 6))
			return FLAME_KIND_GPU_KERNEL;
		if (!strncmp(name, "[memcpy ", 8) || !strcmp(name, "[memset]"))
			return FLAME_KIND_GPU_COPY;
		if (!strcmp(name, "[sync]"))
			return FLAME_KIND_GPU_SYNC;
		if (!strncmp(name, "[nvtx] ", 7))
			return FLAME_KIND_NVTX;
	}
	if ((flags & PROFILE_FRAME_PYTHON) || flame_python_name(name))
		return FLAME_KIND_PYTHON;
	if (module && *module)
		return flame_classify_module(cs_basename(module));
	const char *inner = flame_module_in_name(name, buf, sizeof(buf));
	if (inner) {
		if (!strcmp(inner, "unknown"))
			return FLAME_KIND_OWN;
		return flame_classify_module(inner);
	}
	/* the vendors' libraries and driver API (cuInit, cuLaunchKernel ...): gpu_vendor.h */
	if (gpu_vendor_library_name(name))
		return FLAME_KIND_CUDA;
	if (flame_any_prefix(name, flame_system_names))
		return FLAME_KIND_SYSTEM;
	for (const char *const *f = flame_libc_functions; *f; f++)
		if (!strcmp(name, *f))
			return FLAME_KIND_SYSTEM;
	return FLAME_KIND_OWN;
}
