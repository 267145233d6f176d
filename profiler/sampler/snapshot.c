/* snapshot.c: stop a process' threads, copy them, let them go (snapshot.h). The stop and the
 * resume reuse what the ptrace sampler does per sample (sampler_ptrace.c): PTRACE_SEIZE without
 * options (no new thread or child is followed: a snapshot is one moment), PTRACE_INTERRUPT to
 * every thread first and the stops collected after, so the threads are stopped together and
 * their stacks are one consistent moment of the process. */
#include "sampler/snapshot.h"

#include "sampler/backend.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What one thread needs while it is held. */
struct snap_hold {
	bool seized, stopped;
	int resume_signal;        /* a signal reported during the stop: delivered at the detach */
};

static void snap_comm(pid_t pid, pid_t tid, char *out)
{
	char path[64], buf[64];
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	out[0] = 0;
	if (cs_read_small_file(path, buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = 0;
		buf[15] = 0; /* TASK_COMM_LEN */
		memcpy(out, buf, strlen(buf) + 1);
	}
}

/* The thread ids of pid, from /proc/PID/task. Returns the count or -errno. */
static int snap_list(pid_t pid, pid_t **tids)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	size_t n = 0, cap = 0;
	*tids = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		cs_grow(tids, &cap, n + 1, sizeof(pid_t));
		(*tids)[n++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return (int)n;
}

static void snap_read(struct sampler_thread_snap *t, pid_t pid, uint32_t stack_size)
{
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, t->tid, NULL, &regs) < 0) {
		t->error = -errno;
		return;
	}
	/* orig_rax >= 0: stopped inside (or on the way out of) that system call */
	t->syscall = (long long)regs.orig_rax >= 0 ? (int64_t)regs.orig_rax : -1;
	uint64_t *r = t->sample.regs;
	r[0] = regs.rax, r[1] = regs.rbx, r[2] = regs.rcx, r[3] = regs.rdx;
	r[4] = regs.rsi, r[5] = regs.rdi, r[6] = regs.rbp, r[7] = regs.rsp;
	r[8] = regs.rip;
	r[16] = regs.r8, r[17] = regs.r9, r[18] = regs.r10, r[19] = regs.r11;
	r[20] = regs.r12, r[21] = regs.r13, r[22] = regs.r14, r[23] = regs.r15;
	t->sample.regs_mask = SAMPLER_REGS_MASK;
	t->sample.pid = (uint32_t)pid;
	t->sample.tid = (uint32_t)t->tid;
	uint8_t *stack = cs_malloc(stack_size);
	t->sample.stack_size = sampler_proc_read_stack(t->tid, regs.rsp, stack, stack_size);
	t->sample.stack = stack;
	/* the stop must not show the program an EINTR it would not have had */
	sampler_ptrace_restart_syscall(pid, t->tid, &regs);
}

/* Seize and interrupt every thread of out. Returns how many were seized; *ret = -EPERM when
 * the process is out of reach. */
static int snap_seize_all(struct sampler_process_snap *out, struct snap_hold *hold, int *ret)
{
	int seized = 0;

	for (int i = 0; i < (int)out->nthreads; i++) {
		struct sampler_thread_snap *t = &out->threads[i];
		if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0) {
			t->error = -errno;
			if (errno == EPERM || errno == EACCES) {
				*ret = -EPERM;   /* the whole process is out of reach */
				break;
			}
			continue;               /* ESRCH: exited meanwhile */
		}
		hold[i].seized = true;
		seized++;
		if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0)
			t->error = -errno;
	}
	return seized;
}

/* Wait, until timeout_ns has passed, for the seized threads' stops: a stop is a group or
 * interrupt stop (PTRACE_EVENT_STOP), or a signal arriving now (kept for the detach); an exit
 * ends the thread's part. */
static void snap_collect_stops(struct sampler_process_snap *out, struct snap_hold *hold,
			       int seized, uint64_t timeout_ns)
{
	uint64_t give_up = cs_monotonic_ns() + timeout_ns;
	for (int pending = seized; pending > 0;) {
		int progressed = 0;
		for (int i = 0; i < (int)out->nthreads; i++) {
			struct sampler_thread_snap *t = &out->threads[i];
			if (!hold[i].seized || hold[i].stopped || t->error == -ESRCH)
				continue;
			int st;
			pid_t w = waitpid(t->tid, &st, __WALL | WNOHANG);
			if (w == 0)
				continue;
			progressed = 1;
			pending--;
			if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
				t->error = -ESRCH;
				hold[i].seized = false;
				continue;
			}
			hold[i].stopped = true;
			if ((st >> 16) != PTRACE_EVENT_STOP)
				hold[i].resume_signal = WSTOPSIG(st);
		}
		if (pending > 0 && !progressed) {
			if (cs_monotonic_ns() >= give_up)
				break;
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
	}
}

/* Let go: a stopped thread where it stopped (with the signal it got meanwhile); one that
 * never stopped is detached when the kernel lets this thread trace it no more (it is detached
 * by PTRACE_DETACH once it stops, or at this thread's exit). */
static void snap_let_go(struct sampler_process_snap *out, struct snap_hold *hold)
{
	for (int i = 0; i < (int)out->nthreads; i++) {
		if (!hold[i].seized)
			continue;
		if (hold[i].stopped) {
			ptrace(PTRACE_DETACH, out->threads[i].tid, NULL,
			       (void *)(long)hold[i].resume_signal);
			continue;
		}
		/* not stopped yet: wait a little more for the stop the interrupt asked for */
		int st;
		uint64_t until = cs_monotonic_ns() + 200000000ull;
		for (;;) {
			pid_t w = waitpid(out->threads[i].tid, &st, __WALL | WNOHANG);
			if (w == out->threads[i].tid && WIFSTOPPED(st)) {
				int sig = (st >> 16) != PTRACE_EVENT_STOP ? WSTOPSIG(st) : 0;
				ptrace(PTRACE_DETACH, out->threads[i].tid, NULL, (void *)(long)sig);
				break;
			}
			if (w != 0 || cs_monotonic_ns() >= until)
				break;
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	}
}

int sampler_snapshot_process(pid_t pid, uint32_t stack_size, uint64_t timeout_ns,
			     sampler_snapshot_fn while_stopped, void *arg,
			     struct sampler_process_snap *out)
{
	pid_t *tids = NULL;
	struct snap_hold *hold = NULL;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snap_comm(pid, 0, out->comm);
	int n = snap_list(pid, &tids);
	if (n <= 0) {
		ret = n < 0 ? n : -ESRCH;
		goto done;
	}
	out->threads = cs_calloc((size_t)n, sizeof(*out->threads));
	hold = cs_calloc((size_t)n, sizeof(*hold));
	out->nthreads = (size_t)n;
	/* names and states before the stop (a stopped thread reads 't') */
	for (int i = 0; i < n; i++) {
		struct sampler_thread_snap *t = &out->threads[i];
		t->tid = tids[i];
		t->syscall = -1;
		t->state = sampler_proc_thread_state(pid, t->tid, NULL);
		snap_comm(pid, t->tid, t->comm);
	}
	int alive = 0;
	for (int i = 0; i < n; i++)
		alive += out->threads[i].state && out->threads[i].state != 'Z' &&
			 out->threads[i].state != 'X';
	if (!alive) {
		ret = -ESRCH;           /* exited: a zombie not reaped yet, or gone meanwhile */
		goto done;
	}
	uint64_t t0 = cs_monotonic_ns();
	int seized = snap_seize_all(out, hold, &ret);
	if (!ret)
		snap_collect_stops(out, hold, seized, timeout_ns);
	if (!ret) {
		for (int i = 0; i < n; i++) {
			if (hold[i].stopped) {
				out->threads[i].error = 0;
				snap_read(&out->threads[i], pid, stack_size);
			} else if (hold[i].seized && !out->threads[i].error) {
				out->threads[i].error = -ETIMEDOUT;
			}
		}
		if (while_stopped)
			while_stopped(arg, pid);
	}
	snap_let_go(out, hold);
	out->stopped_ns = cs_monotonic_ns() - t0;
	if (!ret) {
		int read = 0;
		for (size_t i = 0; i < out->nthreads; i++)
			read += out->threads[i].error == 0;
		if (!read && seized == 0)
			ret = -ESRCH;
	}
done:
	out->error = ret;
	free(tids);
	free(hold);
	return ret;
}

void sampler_process_snap_free(struct sampler_process_snap *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nthreads; i++)
		free((void *)p->threads[i].sample.stack);
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
}

void sampler_snapshot_explain(int err, pid_t pid, char *buf, size_t len)
{
	if (err == -ESRCH) {
		char path[64], stat[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		const char *paren = cs_read_small_file(path, stat, sizeof(stat)) > 0 ? strrchr(stat, ')') : NULL;
		if (paren && paren[1] == ' ' && paren[2] == 'Z')
			snprintf(buf, len, "PID %d has exited: a zombie its parent has not reaped (nothing to read)",
				 (int)pid);
		else
			snprintf(buf, len, "no such process %d (it exited, or the PID is wrong: check it with ps)",
				 (int)pid);
	} else if (err == -EPERM || err == -EACCES) {
		long scope = cs_read_long_file("/proc/sys/kernel/yama/ptrace_scope", -1);
		if (scope >= 1)
			snprintf(buf, len, "PID %d: ptrace not permitted: kernel.yama.ptrace_scope is %ld; run csampler as root (or with CAP_SYS_PTRACE), or 'sysctl kernel.yama.ptrace_scope=0'",
				 (int)pid, scope);
		else
			snprintf(buf, len, "PID %d: ptrace not permitted: it belongs to another user, is not dumpable, or another tracer (gdb, strace) holds it; run csampler as its user or as root (CAP_SYS_PTRACE)",
				 (int)pid);
	} else {
		snprintf(buf, len, "PID %d: %s", (int)pid, strerror(-err));
	}
}
