/* attach.h: the contract of `csampler record -p PID --gpu on` with a program that was started
 * without csampler (record/gpu_attach.c on one side, the attach section of inject/cupti.c on the
 * other). The recorder makes one thread of the running program call, as a debugger does:
 *
 *   dlopen(LIB, RTLD_NOW)                        libc's own dlopen (glibc 2.34+), or
 *                                                __libc_dlopen_mode before 2.34
 *   int csampler_gpu_attach(const char *config, char *msg, size_t msglen)
 *                                                subscribe to CUPTI and capture from now on
 *   int csampler_gpu_detach(void)                at the end of the recording: unsubscribe, flush
 *                                                CUPTI, write the last records, close the file
 *
 * config holds the settings the launch path passes in the environment (protocol.h), one
 * NAME=VALUE a line, read by the same code: CSAMPLER_GPU_DIR (required), CSAMPLER_GPU_STACK,
 * CSAMPLER_GPU_FLUSH_MS, CSAMPLER_GPU_DISABLE, CSAMPLER_GPU_PYTHON, and
 * CSAMPLER_GPU_ATTACH_VERSION, which must equal GPU_ATTACH_VERSION. The library exports the
 * same string as csampler_gpu_attach_version, which the recorder reads from the library file
 * before it loads it into anyone. The library writes CSAMPLER_GPU_DIR/gpu-PID.bin afresh (a
 * stale file of that name is replaced) in the format of protocol.h. msg (msglen bytes, in the
 * caller's memory) receives one line when the result is not GPU_ATTACH_OK. */
#ifndef CSAMPLER_INJECT_ATTACH_H
#define CSAMPLER_INJECT_ATTACH_H

/* Changes whenever the entry points, the config or protocol.h change. */
#define GPU_ATTACH_VERSION "csampler-gpu-attach 2 (protocol 3)"

#define GPU_ATTACH_SYM_VERSION "csampler_gpu_attach_version"
#define GPU_ATTACH_SYM_ATTACH "csampler_gpu_attach"
#define GPU_ATTACH_SYM_DETACH "csampler_gpu_detach"
#define GPU_ATTACH_CONFIG_MAX 8192   /* bytes of config, NUL included */
#define GPU_ATTACH_MSG_MAX 256

enum gpu_attach_result {
	GPU_ATTACH_OK = 0,          /* capturing; the file is gpu-PID.bin */
	GPU_ATTACH_BAD_VERSION = 1, /* config of another csampler version: nothing done */
	GPU_ATTACH_BAD_CONFIG = 2,  /* no CSAMPLER_GPU_DIR, too long, or the directory refused */
	GPU_ATTACH_ACTIVE = 3,      /* capture already on (csampler env, or another record -p) */
	GPU_ATTACH_CUPTI = 4,       /* CUPTI refused (another subscriber...): the file has a note
				     * that says why, the library stays idle */
	GPU_ATTACH_HUNG = 5,        /* an earlier final flush hung: CUPTI is not used again */
};

enum gpu_detach_result {
	GPU_DETACH_OK = 0,
	GPU_DETACH_NOT_ATTACHED = 1, /* nothing to stop (never attached, or started at launch) */
};

#endif
