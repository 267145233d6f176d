/* sampler_ptrace_test.c: the ptrace sampler's repair of a system call its stop aborted: a
 * child blocked in epoll_wait is stopped with PTRACE_INTERRUPT (as a sample whose state read
 * raced with the call would), and after the repair its epoll_wait goes on and returns the
 * event instead of EINTR. Without the repair (the control case) it returns EINTR: the test can
 * tell the two apart. */
#include "base/unit.h"
#include "sampler/backend.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Wait (up to 2 s) until the child sleeps in a call: its state reads 'S'. */
static char pt_test_wait_sleeping(pid_t child)
{
	char state = 0;
	for (int i = 0; i < 200 && state != 'S'; i++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
		state = sampler_proc_thread_state(child, child, NULL);
	}
	return state;
}

/* Seize the sleeping child and stop it with PTRACE_INTERRUPT, as a sample does; its wait
 * status. */
static int pt_test_interrupt_sleeping(pid_t child)
{
	int st;
	UNIT_ASSERT(ptrace(PTRACE_SEIZE, child, NULL, NULL) == 0);
	UNIT_ASSERT(pt_test_wait_sleeping(child) == 'S');
	UNIT_ASSERT(ptrace(PTRACE_INTERRUPT, child, NULL, NULL) == 0);
	UNIT_ASSERT(waitpid(child, &st, __WALL) == child && WIFSTOPPED(st));
	return st;
}

/* Returns what the child's epoll_wait gave: 1 (the event), or -errno. */
static int epoll_child_after_stop(bool repair, bool *restarted)
{
	int data[2], report[2];
	UNIT_ASSERT(pipe(data) == 0 && pipe(report) == 0);
	pid_t child = fork();
	UNIT_ASSERT(child >= 0);
	if (child == 0) {
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN }, out;
		epoll_ctl(ep, EPOLL_CTL_ADD, data[0], &ev);
		int r = epoll_wait(ep, &out, 1, 5000);
		int result = r < 0 ? -errno : r;
		ssize_t w = write(report[1], &result, sizeof(result));
		_exit(w == sizeof(result) ? 0 : 1);
	}
	/* stopped once it blocks in epoll_wait */
	UNIT_ASSERT((pt_test_interrupt_sleeping(child) >> 16) == PTRACE_EVENT_STOP);
	struct user_regs_struct regs;
	UNIT_ASSERT(ptrace(PTRACE_GETREGS, child, NULL, &regs) == 0);
	UNIT_ASSERT((long long)regs.rax == -EINTR); /* the stop aborted the call */
	*restarted = repair && sampler_ptrace_restart_syscall(child, child, &regs);
	UNIT_ASSERT(ptrace(PTRACE_DETACH, child, NULL, NULL) == 0);
	struct timespec ts = { 0, 50000000 };
	nanosleep(&ts, NULL);
	ssize_t w = write(data[1], "x", 1);
	UNIT_ASSERT(w == 1);
	int result = 0;
	UNIT_ASSERT(read(report[0], &result, sizeof(result)) == sizeof(result));
	waitpid(child, NULL, 0);
	close(data[0]), close(data[1]), close(report[0]), close(report[1]);
	return result;
}

UNIT_TEST(ptrace_restarts_a_call_its_stop_aborted)
{
	bool restarted = false;
	UNIT_ASSERT(epoll_child_after_stop(false, &restarted) == -EINTR);
	UNIT_ASSERT(!restarted);
	UNIT_ASSERT(epoll_child_after_stop(true, &restarted) == 1);
	UNIT_ASSERT(restarted);
}

/* A sleep that a stop interrupted goes on as restart_syscall; --idle still names it after the
 * call it continues (clock_nanosleep), from what the stop saw (-ERESTART_RESTARTBLOCK with the
 * call in orig_rax). Without that note it would read restart_syscall. */
static long idle_name_after_stop(bool noted)
{
	pid_t child = fork();
	UNIT_ASSERT(child >= 0);
	if (child == 0) {
		struct timespec ts = { 3, 0 };
		nanosleep(&ts, NULL);
		_exit(0);
	}
	pt_test_interrupt_sleeping(child);
	struct user_regs_struct regs;
	UNIT_ASSERT(ptrace(PTRACE_GETREGS, child, NULL, &regs) == 0);
	UNIT_ASSERT((long long)regs.rax == -516 && regs.orig_rax == SYS_clock_nanosleep);
	struct sampler_idle_thread th = { 0 };
	if (noted) { /* what sampler_ptrace.c notes at this stop */
		th.restart_nr = (long)regs.orig_rax;
		th.restart_sp = regs.rsp;
		th.restart_pc = regs.rip;
	}
	UNIT_ASSERT(ptrace(PTRACE_DETACH, child, NULL, NULL) == 0);
	pt_test_wait_sleeping(child);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sampler_events events = { 0 };
	uint64_t lost = 0;
	struct sampler_idle_sink sink = { .lock = &lock, .events = &events, .lost = &lost,
					  .stack_size = 4096 };
	UNIT_ASSERT(sampler_idle_thread_open(&th, child, child) == 0);
	sampler_idle_sample(&th, &sink, 1, 1);
	sampler_idle_thread_close(&th, &sink);
	UNIT_ASSERT_EQ_INT(events.npend, 1);
	long nr = events.pend[0].ev.sample.offcpu_syscall;
	sampler_events_free(&events);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return nr;
}

UNIT_TEST(idle_names_a_restarted_wait_after_its_call)
{
	UNIT_ASSERT_EQ_INT(idle_name_after_stop(false), 219); /* restart_syscall */
	UNIT_ASSERT_EQ_INT(idle_name_after_stop(true), SYS_clock_nanosleep);
}
