/* gpu_setup.h: what `record` and `env` need to start a program with GPU capture: find the
 * in-target library (libcsampler-cupti.so) and the toolkit's libcupti.so.13, make the directory
 * the library writes gpu-PID.bin into, and build the program's environment
 * (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH, CSAMPLER_GPU_DIR; see inject/protocol.h). */
#ifndef CSAMPLER_GPU_SETUP_H
#define CSAMPLER_GPU_SETUP_H

#include <stdbool.h>
#include <stddef.h>

enum gpu_mode {
	GPU_MODE_AUTO,  /* on when both libraries are found */
	GPU_MODE_ON,    /* on, or an error */
	GPU_MODE_OFF,
};

struct gpu_setup {
	char *inject_lib;  /* absolute path of libcsampler-cupti.so */
	char *cupti_lib;   /* absolute path of libcupti.so.13 */
	char *dir;         /* where gpu-PID.bin files go */
};

/* Find both libraries. Looked up in order:
 *   injection library: $CSAMPLER_GPU_LIB (tests, unusual installs), then beside csampler's
 *     binary: BINDIR/../lib/libcsampler-cupti.so (the build tree), and
 *     BINDIR/../lib/csampler/libcsampler-cupti.so (make install);
 *   libcupti.so.13: $CSAMPLER_CUPTI_PATH, then $CUDA_HOME, the toolkit csampler was built
 *     with, /usr/local/cuda (lib64/ and extras/CUPTI/lib64/), then the system library dirs.
 * Returns 0, or -ENOENT with why (for the user, one phrase) filled. */
int gpu_setup_find(struct gpu_setup *g, char *why, size_t whylen);

/* A new private directory (mode 0700) under $TMPDIR or /tmp for one recording. */
int gpu_setup_private_dir(struct gpu_setup *g);

/* The per-user directory shared by `csampler env` and `record -p`: $CSAMPLER_GPU_DIR when
 * set, else /tmp/csampler-gpu-UID. create: make it (0700) when missing. Refused (one line
 * printed, -EPERM) when it is a symlink, not a directory, owned by another user, or open to
 * others; -ENOENT (nothing printed) when missing and !create. */
int gpu_setup_user_dir(struct gpu_setup *g, bool create);

/* A copy of env (NULL-terminated) with the four variables set (CUDA_INJECTION64_PATH,
 * NVTX_INJECTION64_PATH, CSAMPLER_GPU_DIR from g; CSAMPLER_GPU_PYTHON, the CPython layouts)
 * as its last entries, replacing earlier values. Free with gpu_setup_free_env. */
char **gpu_setup_env(const struct gpu_setup *g, char *const *env);
void gpu_setup_free_env(char **env);

void gpu_setup_free(struct gpu_setup *g);

#endif
