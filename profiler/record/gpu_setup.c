/* gpu_setup.c: finding the GPU capture libraries, making the record directory and the
 * target's environment (gpu_setup.h). */
#include "record/gpu_setup.h"

#include "base/cs.h"
#include "unwind/python.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CSAMPLER_CUDA_HOME
#define CSAMPLER_CUDA_HOME "/usr/local/cuda"
#endif

#define GPU_INJECT_NAME "libcsampler-cupti.so"
#define GPU_CUPTI_NAME "libcupti.so.13"

static bool gpu_is_file(const char *path)
{
	struct stat st;
	return path && path[0] == '/' && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The absolute, resolved path of path, or NULL. */
static char *gpu_real(const char *path)
{
	return gpu_is_file(path) ? realpath(path, NULL) : NULL;
}

static char *gpu_find_inject(void)
{
	const char *env = getenv("CSAMPLER_GPU_LIB");
	if (env && *env)
		return gpu_real(env);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	static const char *const rel[] = { "../lib/" GPU_INJECT_NAME, "../lib/csampler/" GPU_INJECT_NAME };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char *p = cs_asprintf("%s/%s", exe, rel[i]);
		char *r = gpu_real(p);
		free(p);
		if (r)
			return r;
	}
	return NULL;
}

static char *gpu_find_cupti(void)
{
	const char *env = getenv("CSAMPLER_CUPTI_PATH");
	if (env && *env)
		return gpu_real(env);
	const char *homes[] = { getenv("CUDA_HOME"), CSAMPLER_CUDA_HOME, "/usr/local/cuda" };
	for (size_t i = 0; i < sizeof(homes) / sizeof(homes[0]); i++) {
		if (!homes[i] || !*homes[i])
			continue;
		static const char *const sub[] = { "lib64", "extras/CUPTI/lib64", "lib" };
		for (size_t k = 0; k < sizeof(sub) / sizeof(sub[0]); k++) {
			char *p = cs_asprintf("%s/%s/%s", homes[i], sub[k], GPU_CUPTI_NAME);
			char *r = gpu_real(p);
			free(p);
			if (r)
				return r;
		}
	}
	static const char *const sys[] = { "/usr/lib/x86_64-linux-gnu/" GPU_CUPTI_NAME,
					   "/usr/lib64/" GPU_CUPTI_NAME, "/usr/lib/" GPU_CUPTI_NAME };
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
		char *r = gpu_real(sys[i]);
		if (r)
			return r;
	}
	return NULL;
}

/* Say why a library was not found: the file the variable var names is not readable, or, var
 * unset, the search for it failed (searched). Returns -ENOENT. */
static int gpu_not_found(char *why, size_t whylen, const char *var, const char *searched)
{
	const char *env = getenv(var);
	if (env && *env)
		snprintf(why, whylen, "%s=%s is not a readable file", var, env);
	else
		snprintf(why, whylen, "%s", searched);
	return -ENOENT;
}

int gpu_setup_find(struct gpu_setup *g, char *why, size_t whylen)
{
	g->inject_lib = gpu_find_inject();
	if (!g->inject_lib)
		return gpu_not_found(why, whylen, "CSAMPLER_GPU_LIB",
				     GPU_INJECT_NAME " was not found beside csampler (../lib, ../lib/csampler): build it with make in a tree with the CUDA toolkit");
	g->cupti_lib = gpu_find_cupti();
	if (!g->cupti_lib)
		return gpu_not_found(why, whylen, "CSAMPLER_CUPTI_PATH",
				     GPU_CUPTI_NAME " (CUDA toolkit's CUPTI) was not found: set CUDA_HOME or CSAMPLER_CUPTI_PATH");
	return 0;
}

int gpu_setup_private_dir(struct gpu_setup *g)
{
	const char *tmp = getenv("TMPDIR");
	char *tmpl = cs_asprintf("%s/csampler-gpu.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpl)) { /* mkdtemp makes it mode 0700 */
		int e = errno;
		cs_error(e, "mkdtemp %s: %s: set TMPDIR to a writable directory or use --gpu off",
			 tmpl, strerror(e));
		free(tmpl);
		return -e;
	}
	free(g->dir);
	g->dir = tmpl;
	return 0;
}

int gpu_setup_user_dir(struct gpu_setup *g, bool create)
{
	const char *env = getenv("CSAMPLER_GPU_DIR");
	char *dir = env && *env ? cs_strdup(env) : cs_asprintf("/tmp/csampler-gpu-%u", (unsigned)geteuid());
	struct stat st;

	if (lstat(dir, &st) < 0) {
		int e = errno;
		if (e == ENOENT && create) {
			if (mkdir(dir, 0700) == 0 || errno == EEXIST) {
				free(dir);
				return gpu_setup_user_dir(g, false);
			}
			e = errno;
			cs_error(e, "mkdir %s: %s: set CSAMPLER_GPU_DIR to a directory of yours", dir, strerror(e));
		} else if (e != ENOENT) {
			cs_error(e, "lstat %s: %s: set CSAMPLER_GPU_DIR to a directory of yours", dir, strerror(e));
		}
		free(dir);
		return -e;
	}
	const char *bad = S_ISLNK(st.st_mode)        ? "is a symbolic link"
			  : !S_ISDIR(st.st_mode)     ? "is not a directory"
			  : st.st_uid != geteuid()   ? "is owned by another user"
			  : (st.st_mode & 077)       ? "is open to other users (chmod 700 it)"
						     : NULL;
	if (bad) {
		cs_error(EPERM, "GPU record directory %s %s: refused; remove it or set CSAMPLER_GPU_DIR to a private directory",
			 dir, bad);
		free(dir);
		return -EPERM;
	}
	free(g->dir);
	g->dir = dir;
	return 0;
}

static bool gpu_env_is(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(entry, name, n) && entry[n] == '=';
}

char **gpu_setup_env(const struct gpu_setup *g, char *const *env)
{
	static const char *const names[] = { "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
					     "CSAMPLER_GPU_DIR", "CSAMPLER_GPU_PYTHON" };
	char layouts[1024];
	if (py_layouts_env(layouts, sizeof(layouts)) < 0)
		layouts[0] = 0;
	const char *values[] = { g->inject_lib, g->cupti_lib, g->dir, layouts };
	size_t n = 0, k = 0;
	while (env && env[n])
		n++;
	char **out = cs_calloc(n + 5, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		bool ours = false;
		for (size_t v = 0; v < 4; v++)
			ours |= gpu_env_is(env[i], names[v]);
		if (!ours)
			out[k++] = cs_strdup(env[i]);
	}
	for (size_t v = 0; v < 4; v++)
		out[k++] = cs_asprintf("%s=%s", names[v], values[v] ? values[v] : "");
	out[k] = NULL;
	return out;
}

void gpu_setup_free_env(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

void gpu_setup_free(struct gpu_setup *g)
{
	free(g->inject_lib);
	free(g->cupti_lib);
	free(g->dir);
	g->inject_lib = g->cupti_lib = g->dir = NULL;
}
