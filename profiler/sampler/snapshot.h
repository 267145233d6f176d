/* snapshot.h: one look at every thread of a running process, for `csampler dump`: the
 * process' threads are stopped together with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT, as py-spy
 * and the ptrace sampler do), each one's registers and the top of its stack are copied (the
 * same unwind_sample layout the samplers deliver), a caller's function runs while they are all
 * stopped, and every thread is let go where it was. A system call the stop aborted with EINTR
 * that the kernel would not restart is restarted (sampler_ptrace_restart_syscall), a signal that
 * arrived during the stop is delivered at the detach, and a thread a user had stopped stays
 * stopped. The process is stopped only for the copies: unwinding happens afterwards.
 *
 * All ptrace calls of one process are made by the calling thread (the kernel ties tracees to
 * the thread that seized them): several processes are read in parallel from several threads. */
#ifndef CSAMPLER_SAMPLER_SNAPSHOT_H
#define CSAMPLER_SAMPLER_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind.h"

struct sampler_thread_snap {
	pid_t tid;
	char comm[16];
	char state;               /* /proc state just before the stop: 'R', 'S', 'D', 'T', ... */
	int64_t syscall;          /* the system call it was in when stopped, -1 when none */
	int error;                /* 0: sample holds its registers and stack; -ESRCH: it exited
				   * before it could be read; -ETIMEDOUT: it did not stop in time
				   * (uninterruptible sleep), state and syscall come from /proc */
	struct unwind_sample sample; /* pid, tid, regs, stack (owned: freed with the snapshot) */
};

struct sampler_process_snap {
	pid_t pid;
	char comm[16];
	int error;                /* 0, or -ESRCH (gone), -EPERM (not permitted), -errno: no
				   * thread was read */
	struct sampler_thread_snap *threads;
	size_t nthreads;
	uint64_t stopped_ns;      /* from the first stop request to the last thread let go */
};

/* Called while every thread of pid that could be stopped is stopped. */
typedef void (*sampler_snapshot_fn)(void *arg, pid_t pid);

/* Stop every thread of pid, copy its registers and up to stack_size bytes of its stack, call
 * while_stopped (may be NULL), let them go. A thread that does not stop within timeout_ns is
 * left running (error -ETIMEDOUT). Fills *out (the caller frees it with
 * sampler_process_snap_free) and returns 0, or -errno as out->error when nothing was read
 * (the one line for the user is the caller's, with sampler_snapshot_explain). */
int sampler_snapshot_process(pid_t pid, uint32_t stack_size, uint64_t timeout_ns,
			     sampler_snapshot_fn while_stopped, void *arg,
			     struct sampler_process_snap *out);
void sampler_process_snap_free(struct sampler_process_snap *p);
/* A phrase saying why pid could not be read and what to do (no prefix, no newline). */
void sampler_snapshot_explain(int err, pid_t pid, char *buf, size_t len);

#endif
