/* gpu_attach.h: GPU capture in a process that is already running and was started without
 * csampler (`record -p PID --gpu on`). As a debugger does, it stops one thread with ptrace,
 * makes it call dlopen(libcsampler-cupti.so) and the library's csampler_gpu_attach(config)
 * (inject/attach.h), and puts the thread back as it was; at the end of the recording it makes
 * it call csampler_gpu_detach() the same way. The library then writes CSAMPLER_GPU_DIR/
 * gpu-PID.bin, which the recorder reads as for `csampler env` (gpu_channel.h).
 *
 * Every refusal is one phrase in why (no "csampler:" prefix, no newline) and leaves the process
 * running as it was: not permitted (ptrace), exited, statically linked (no libc.so to call
 * dlopen in), no CUDA library mapped, a library of another csampler version, GPU capture
 * already on, CUPTI held by another tool. x86-64 only. */
#ifndef CSAMPLER_GPU_ATTACH_H
#define CSAMPLER_GPU_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum gpu_attach_outcome {
	GPU_ATTACH_DONE,        /* capturing: call gpu_attach_stop at the end */
	GPU_ATTACH_NOTED,       /* loaded, but CUPTI refused: the file holds the library's note */
	GPU_ATTACH_REFUSED,     /* nothing loaded or started: why says why */
	GPU_ATTACH_SHARED,      /* capture was already on (csampler env, another record -p): its
				 * records are there to read, it is not ours to stop; why says so */
};

struct gpu_attach {
	pid_t pid;
	bool attached;          /* GPU_ATTACH_DONE, not stopped yet */
	uint64_t detach_addr;   /* csampler_gpu_detach in the process */
};

/* The attach config (inject/attach.h) for a library writing into dir: the version, dir, the
 * CPython layouts, and the recorder's own CSAMPLER_GPU_STACK, _FLUSH_MS and _DISABLE when set.
 * The caller frees it. */
char *gpu_attach_config(const char *dir);

/* Whether pid runs with GPU capture set up at its start (CUDA_INJECTION64_PATH naming
 * libcsampler-cupti.so in its environment: `csampler env`). */
bool gpu_attach_started_with_env(pid_t pid);

/* Load lib (absolute path) into pid and start capture with config. cupti_lib (may be NULL):
 * loaded first when the process has no libcupti.so mapped. Returns the outcome; why is set
 * for GPU_ATTACH_REFUSED and GPU_ATTACH_NOTED. */
enum gpu_attach_outcome gpu_attach_start(struct gpu_attach *a, pid_t pid, const char *lib,
					 const char *cupti_lib, const char *config, char *why,
					 size_t whylen);

/* Stop the capture started by gpu_attach_start: csampler_gpu_detach() in the process, which
 * writes the rest of its file. Returns 0 (also when the process has exited: its library wrote
 * the rest at exit), or -errno with why set. */
int gpu_attach_stop(struct gpu_attach *a, char *why, size_t whylen);

/* The address and size in pid of a data symbol of libcsampler-cupti.so as the process mapped it
 * (`csampler dump` reads the in-flight table, inject/protocol.h). Returns 0, -ENOENT when the
 * library is not mapped or has no such symbol, -ESRCH when the process is gone. */
int gpu_attach_lib_symbol(pid_t pid, const char *name, uint64_t *addr, uint64_t *size);

#endif
