/* offcpu.c: names for the off-CPU leaf frames of `record --idle` (offcpu.h).
 *
 * The table is written here rather than taken from libseccomp's resolver: it covers only the
 * calls a thread blocks in (waiting on a lock, a file descriptor, a timer, a child, the GPU
 * driver's ioctl), the numbers are the fixed x86-64 system call ABI (the only one the sampler
 * records), and one table does not justify a new runtime dependency. Other numbers are shown
 * as "syscall N". */
#include "unwind/offcpu.h"

#include <stdio.h>

static const struct {
	int16_t nr;
	const char *name;
} offcpu_syscalls[] = {
	{ 0, "read" },		   { 1, "write" },	       { 2, "open" },
	{ 3, "close" },		   { 7, "poll" },	       { 9, "mmap" },
	{ 11, "munmap" },	   { 16, "ioctl" },	       { 17, "pread64" },
	{ 18, "pwrite64" },	   { 19, "readv" },	       { 20, "writev" },
	{ 23, "select" },	   { 24, "sched_yield" },      { 26, "msync" },
	{ 28, "madvise" },	   { 34, "pause" },	       { 35, "nanosleep" },
	{ 40, "sendfile" },	   { 42, "connect" },	       { 43, "accept" },
	{ 44, "sendto" },	   { 45, "recvfrom" },	       { 46, "sendmsg" },
	{ 47, "recvmsg" },	   { 61, "wait4" },	       { 65, "semop" },
	{ 69, "msgsnd" },	   { 70, "msgrcv" },	       { 73, "flock" },
	{ 74, "fsync" },	   { 75, "fdatasync" },	       { 128, "rt_sigtimedwait" },
	{ 130, "rt_sigsuspend" },  { 162, "sync" },	       { 202, "futex" },
	{ 208, "io_getevents" },   { 219, "restart_syscall" }, { 220, "semtimedop" },      { 230, "clock_nanosleep" },
	{ 232, "epoll_wait" },	   { 242, "mq_timedsend" },    { 243, "mq_timedreceive" },
	{ 247, "waitid" },	   { 257, "openat" },	       { 270, "pselect6" },
	{ 271, "ppoll" },	   { 275, "splice" },	       { 281, "epoll_pwait" },
	{ 288, "accept4" },	   { 295, "preadv" },	       { 296, "pwritev" },
	{ 299, "recvmmsg" },	   { 306, "syncfs" },	       { 307, "sendmmsg" },
	{ 326, "copy_file_range" }, { 327, "preadv2" },	       { 328, "pwritev2" },
	{ 426, "io_uring_enter" }, { 441, "epoll_pwait2" },    { 449, "futex_waitv" },
};

const char *offcpu_syscall_name(int64_t nr)
{
	for (size_t i = 0; i < sizeof(offcpu_syscalls) / sizeof(offcpu_syscalls[0]); i++)
		if (offcpu_syscalls[i].nr == nr)
			return offcpu_syscalls[i].name;
	return NULL;
}

void offcpu_frame_name(uint64_t why, char *buf, size_t len)
{
	int64_t v = (int64_t)why;
	const char *name = offcpu_syscall_name(v);
	if (name)
		snprintf(buf, len, "[off-cpu: %s]", name);
	else if (v == OFFCPU_NOT_IN_SYSCALL)
		snprintf(buf, len, "[off-cpu: not in a syscall]");
	else if (v == OFFCPU_RUNNABLE)
		snprintf(buf, len, "[off-cpu: runnable]");
	else if (v == OFFCPU_STOPPED)
		snprintf(buf, len, "[off-cpu: stopped]");
	else
		snprintf(buf, len, "[off-cpu: syscall %lld]", (long long)v);
}
