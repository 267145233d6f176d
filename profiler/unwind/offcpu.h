/* offcpu.h: the names of `record --idle`'s off-CPU leaf frames. An off-CPU sample's stack gets a
 * leaf in the "[off-cpu]" module (PROFILE_MODULE_OFFCPU) whose offset says why the thread was
 * not running: the number of the system call it was blocked in, or one of the states below
 * (stored as a two's-complement 64-bit offset). symbols.c names it "[off-cpu: futex]". */
#ifndef CSAMPLER_OFFCPU_H
#define CSAMPLER_OFFCPU_H

#include <stddef.h>
#include <stdint.h>

/* Why a thread was off the CPU when not in a system call: the one set of values, which the
 * sampler writes into off-CPU samples (sampler.h) and the off-CPU frames name. */
enum offcpu_state {
	OFFCPU_NOT_IN_SYSCALL = -1, /* blocked outside a system call (a page fault, ...) */
	OFFCPU_RUNNABLE = -2,       /* ready, waiting for a CPU */
	OFFCPU_STOPPED = -3,        /* stopped by a signal (SIGSTOP) or a debugger */
};

/* The x86-64 name of system call nr ("futex"), or NULL when it is not in the table. */
const char *offcpu_syscall_name(int64_t nr);
/* The leaf's name for offset why: "[off-cpu: futex]", "[off-cpu: syscall 335]",
 * "[off-cpu: not in a syscall]", "[off-cpu: runnable]", "[off-cpu: stopped]". */
void offcpu_frame_name(uint64_t why, char *buf, size_t len);

#endif
