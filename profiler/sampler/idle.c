/* idle.c: --idle's sampling of one blocked thread from /proc, shared by both backends (perf's
 * poller thread, ptrace's tracer). At each tick a thread that is off the CPU is read without
 * being stopped: /proc/PID/task/TID/syscall gives the system call, SP and PC, the stack is
 * copied from SP, and the file read again so that a thread that moved meanwhile is not taken.
 * A thread that stays blocked at the same place without running between ticks (same call, SP,
 * PC and schedstat run time) is not copied again: its pending sample weighs one more period per
 * tick and is delivered when the thread moves, or every SAMPLER_IDLE_FLUSH_NS, so a program
 * with many idle threads (a PyTorch process has dozens) costs one small read per thread and
 * tick, not a stack copy and an unwind.
 *
 * A tick stands for every period since the previous one, so a poller that slept through some (a
 * busy machine) does not lose them. Where the thread stayed blocked at the same place without
 * running, those periods are exactly its. Where it moved, the change happened somewhere in the
 * gap: the state seen last gets the gap's first half and the state found now the rest, the
 * expected share of each. Giving the whole gap to the state found now moved a late poller's
 * gaps from each phase to the next (tests/record/t-idle.sh, 100 to 450 ms of a 3 s run under
 * load). */
#include "sampler/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAMPLER_IDLE_FLUSH_NS 100000000ull /* a long wait is delivered in 100 ms pieces */
#define SAMPLER_NR_RESTART_SYSCALL 219     /* x86-64 */

/* restart_syscall continuing a call seen at the same SP and PC is that call; a real call seen
 * is remembered for that. */
static long sampler_idle_call(struct sampler_idle_thread *th, long nr, uint64_t sp, uint64_t pc)
{
	if (nr == SAMPLER_NR_RESTART_SYSCALL) {
		if (th->restart_nr > 0 && th->restart_sp == sp && th->restart_pc == pc)
			return th->restart_nr;
		return nr;
	}
	if (nr >= 0) {
		th->restart_nr = nr;
		th->restart_sp = sp;
		th->restart_pc = pc;
	}
	return nr;
}

/* /proc/PID/task/TID/name opened for reading, or -1 with errno set. */
static int sampler_idle_open_task_file(pid_t pid, pid_t tid, const char *name)
{
	char file[80];
	snprintf(file, sizeof(file), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	return open(file, O_RDONLY | O_CLOEXEC);
}

int sampler_idle_thread_open(struct sampler_idle_thread *th, pid_t pid, pid_t tid)
{
	/* Everything starts afresh but the restart_syscall call ptrace noted before the open. */
	*th = (struct sampler_idle_thread){ .pid = pid, .tid = tid, .restart_nr = th->restart_nr,
					    .restart_sp = th->restart_sp,
					    .restart_pc = th->restart_pc };
	th->syscall_fd = sampler_idle_open_task_file(pid, tid, "syscall");
	if (th->syscall_fd < 0)
		return -errno; /* gone, or not permitted (-EACCES): not sampled */
	th->schedstat_fd = sampler_idle_open_task_file(pid, tid, "schedstat");
	return 0;
}

static uint64_t sampler_idle_runtime(const struct sampler_idle_thread *th)
{
	char buf[128];
	ssize_t n = th->schedstat_fd >= 0 ? pread(th->schedstat_fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

void sampler_idle_flush(struct sampler_idle_thread *th, struct sampler_idle_sink *sink)
{
	if (!th->weight)
		return;
	struct sampler_event ev;
	sampler_proc_offcpu_event(th->pid, th->tid, th->state, th->nr, th->sp, th->pc, th->got,
				  sink->stack_size, &ev);
	ev.time = th->time;
	ev.sample.weight = th->weight;
	th->weight = 0;
	pthread_mutex_lock(sink->lock);
	if (sink->events->arena.len > SAMPLER_IDLE_MAX_PENDING) {
		(*sink->lost)++;
	} else {
		struct sampler_pending *pe = sampler_events_push(sink->events, SAMPLER_EV_SAMPLE);
		pe->ev = ev;
		if (th->got)
			pe->off_a = sampler_events_keep(sink->events, th->stack, th->got);
	}
	pthread_mutex_unlock(sink->lock);
}

/* the first half of a tick's gap, the state seen last's expected share where the thread moved */
static uint32_t sampler_idle_gap_before(uint32_t periods)
{
	return periods > 1 ? (periods - 1) / 2 : 0;
}

void sampler_idle_flush_late(struct sampler_idle_thread *th, struct sampler_idle_sink *sink,
			     uint32_t periods)
{
	if (th->weight)
		th->weight += sampler_idle_gap_before(periods);
	sampler_idle_flush(th, sink);
}

void sampler_idle_thread_close(struct sampler_idle_thread *th, struct sampler_idle_sink *sink)
{
	sampler_idle_flush(th, sink);
	if (th->syscall_fd >= 0)
		close(th->syscall_fd);
	if (th->schedstat_fd >= 0)
		close(th->schedstat_fd);
	free(th->stack);
	th->stack = NULL;
	th->syscall_fd = th->schedstat_fd = -1;
}

void sampler_idle_sample(struct sampler_idle_thread *th, struct sampler_idle_sink *sink,
			 uint64_t now, uint32_t periods)
{
	long nr, nr2;
	uint64_t sp, pc, sp2, pc2;
	int ret = sampler_proc_syscall_fd(th->syscall_fd, &nr, &sp, &pc);
	if (ret) {
		sampler_idle_flush_late(th, sink, periods); /* running (sampled on the CPU), or gone */
		th->armed = false;
		return;
	}
	uint64_t runtime = sampler_idle_runtime(th);
	if (th->armed && nr == th->raw_nr && sp == th->sp && pc == th->pc && runtime != UINT64_MAX &&
	    runtime == th->runtime) {
		/* still blocked where it was, and it did not run since: the same stack */
		if (!th->weight)
			th->time = now;
		th->weight += periods;
		sink->taken++;
		if (now - th->time >= SAMPLER_IDLE_FLUSH_NS)
			sampler_idle_flush(th, sink); /* the copy stays armed for the next piece */
		return;
	}
	sampler_idle_flush_late(th, sink, periods);
	th->armed = false;
	char state = sampler_proc_thread_state(th->pid, th->tid, NULL);
	if (!state || state == 'R' || state == 'Z' || state == 'X')
		return; /* woke up meanwhile, or gone */
	if (!th->stack)
		th->stack = cs_malloc(sink->stack_size ? sink->stack_size : 1);
	size_t got = sampler_proc_read_stack(th->tid, sp, th->stack, sink->stack_size);
	/* the thread may have run between the reads: then the copy belongs to no one state */
	if (sampler_proc_syscall_fd(th->syscall_fd, &nr2, &sp2, &pc2) || nr2 != nr || sp2 != sp ||
	    pc2 != pc) {
		sink->missed++;
		return;
	}
	sink->taken++;
	sink->copies++;
	th->armed = true;
	th->weight = periods - sampler_idle_gap_before(periods);
	th->state = state;
	th->raw_nr = nr;
	th->nr = sampler_idle_call(th, nr, sp, pc);
	th->sp = sp;
	th->pc = pc;
	th->runtime = runtime;
	th->time = now;
	th->got = got;
}
