/* attach-exit.c: a stand-in for libcsampler-cupti.so whose loading ends the process, so that
 * t-gpu-attach.sh sees a target exit in the middle of the attach (inside the dlopen csampler
 * makes it call). It exports the real attach version, so that csampler goes that far. */
#include <unistd.h>

#include "inject/attach.h"

__attribute__((visibility("default"))) const char csampler_gpu_attach_version[] =
	GPU_ATTACH_VERSION;

__attribute__((constructor)) static void attach_exit_now(void)
{
	_exit(0);
}
