/* sampler_ptrace.c: the sampling backend for where perf events are refused (containers without
 * CAP_PERFMON, perf_event_paranoid 3, gVisor). It needs only ptrace, as py-spy does.
 *
 * One tracer thread owns every ptrace call (the kernel ties tracees to the thread that seized
 * them). It seizes the launched command before its exec (or every thread of the attached
 * processes) with TRACECLONE, TRACEFORK, TRACEVFORK and TRACEEXEC, so that every thread and
 * child created later is followed, and then loops: a POSIX timer aimed at the tracer thread
 * interrupts its waitpid at the sampling rate; at each tick every thread that /proc says is
 * running gets a PTRACE_INTERRUPT, and when its stop is reported the tracer reads its registers,
 * copies the top of its stack (process_vm_readv) into the same snapshot layout the perf backend
 * delivers, and resumes it at once. A thread that is not running is never stopped (stopping a
 * thread blocked in epoll_wait would make it return EINTR): with --idle it is sampled from
 * /proc without a stop (proc.c). Signals the target receives are delivered unchanged, group
 * stops (SIGSTOP/SIGCONT from a user) are kept with PTRACE_LISTEN, and detaching leaves every
 * thread running, or stopped if a user stopped it.
 *
 * ptrace reports no mmap and no thread renaming: /proc/PID/maps is read at exec and attach,
 * again when a sample's pc falls outside every known executable mapping, and every 500 ms;
 * names are read when a thread is first sampled and every second. */
#include "sampler/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PT_MAPS_REFRESH_NS 500000000ull /* the longest interval between two reads */
#define PT_MAPS_FIRST_NS 1000000ull     /* the first, after an exec; it doubles each time */
#define PT_MAPS_MISS_NS 20000000ull     /* at most one re-read per 20 ms on a pc miss */
#define PT_COMM_REFRESH_NS 1000000000ull
#define PT_MAX_PENDING_BYTES (256u << 20) /* beyond this, samples are dropped (LOST) */
#define PT_DETACH_WAIT_NS 2000000000ull
#define PT_CREDIT_KEEP_NS 20000000ull /* CPU time of a thread that blocked is sampled where it
					 * runs next within this (pt_tick) */
#define PT_INTERRUPT_AGAIN_NS 200000000ull /* a PTRACE_INTERRUPT whose stop is not reported
					    * by then is sent again (pt_tick) */

struct pt_map {
	uint64_t start, end, pgoff, path_hash;
};

struct pt_process {
	pid_t pid;
	bool sampling;            /* launch: from the command's exec on */
	bool exited;
	struct pt_map *maps;      /* executable mappings already delivered */
	size_t nmaps, capmaps;
	uint64_t maps_read_ns;
	uint64_t maps_interval_ns; /* until the next periodic read: short after an exec, when
				    * the dynamic loader maps libraries, then up to 500 ms */
};

struct pt_thread {
	pid_t tid, pid;
	int stat_fd;              /* /proc/PID/task/TID/stat, kept open: read at every tick */
	int sched_fd;             /* /proc/PID/task/TID/schedstat: CPU time in ns */
	bool run_known;
	uint64_t run_ns_first, run_ns_last;
	uint64_t credit_ns;       /* CPU time run and not sampled yet */
	uint64_t credit_idle_ns;  /* when it was first seen blocked holding credit (0: not) */
	uint32_t weight;          /* periods the pending interrupt's sample stands for */
	struct sampler_idle_thread idle; /* --idle: its off-CPU sampling (idle.c), once opened */
	bool idle_open;
	bool interrupt_pending;   /* PTRACE_INTERRUPT sent, its stop not reported yet */
	bool listening;           /* in a group stop (SIGSTOP from a user), PTRACE_LISTEN */
	bool comm_sent;
	char comm[16];
	uint64_t comm_check_ns;
	uint64_t interrupt_ns;
	uint32_t cpu;
	uint64_t cpu_ticks_first, cpu_ticks_last; /* utime + stime, clock ticks */
	bool cpu_ticks_known;
};

struct ptrace_sampler {
	struct sampler base;
	pthread_t tracer;
	bool tracer_running;
	pthread_mutex_t lock;     /* guards everything below up to "tracer thread only" */
	pthread_cond_t cond;
	struct sampler_events events;
	uint64_t lost;            /* samples dropped while the queue was full */
	int wake_fd;              /* eventfd: events are waiting (sampler_pollfds) */
	int open_result;          /* 1 while opening; then 0 or -errno */
	bool child_reaped;
	int child_status;
	volatile int stop;
	/* what to trace */
	pid_t launch_child;
	pid_t *attach_pids;
	size_t nattach;
	uint64_t start_ns;
	/* tracer thread only */
	struct pt_thread *threads;
	size_t nthreads, capthreads;
	struct pt_process *procs;
	size_t nprocs, capprocs;
	timer_t timer;
	bool timer_made;
	uint64_t period_ns, next_tick;
	uint8_t *stack;           /* stack copy buffer, opts.stack_size bytes */
	uint8_t *copy;            /* opts.stop_copy's buffer, opts.stop_copy_cap bytes */
	uint64_t copies, copy_bytes; /* samples that carried stop_copy bytes, and how many */
	uint64_t cpu_ticks_gone;  /* CPU time of threads that exited, clock ticks */
	uint64_t run_ns_gone;     /* the same from schedstat, ns */
	/* cost of the stops, for the end-of-run line */
	uint64_t nstops, stop_ns_total, stop_ns_max; /* from the stop's report to the resume */
	uint64_t reach_ns_total;  /* from PTRACE_INTERRUPT to the stop's report */
	uint64_t interrupts_again; /* PTRACE_INTERRUPTs sent again (PT_INTERRUPT_AGAIN_NS) */
	uint64_t interrupts_consumed; /* pending interrupts another trap took (pt_handle) */
	struct sampler_idle_sink idle_sink; /* --idle: off-CPU samples into events */
	uint64_t syscalls_restarted; /* aborted by a stop with EINTR, restarted */
};

/* The timer's signal only interrupts the tracer's waitpid: the handler has nothing to do. */
static int pt_tick_signal(void)
{
	return SIGRTMIN + 4;
}

static void pt_on_tick(int sig)
{
	(void)sig;
}

/* ---- threads and processes ---- */

static struct pt_process *pt_process(struct ptrace_sampler *s, pid_t pid, bool create)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid && !s->procs[i].exited)
			return &s->procs[i];
	if (!create)
		return NULL;
	cs_grow(&s->procs, &s->capprocs, s->nprocs + 1, sizeof(*s->procs));
	struct pt_process *p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

static struct pt_thread *pt_thread(struct ptrace_sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

/* (Re)open the thread's stat and schedstat files (after an exec the leader's are new). */
static void pt_thread_open(struct pt_thread *t)
{
	char path[64];
	if (t->stat_fd >= 0)
		close(t->stat_fd);
	if (t->sched_fd >= 0)
		close(t->sched_fd);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)t->pid, (int)t->tid);
	t->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)t->pid, (int)t->tid);
	t->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
}

static struct pt_thread *pt_add_thread(struct ptrace_sampler *s, pid_t pid, pid_t tid)
{
	struct pt_thread *t = pt_thread(s, tid);
	if (t)
		return t;
	cs_grow(&s->threads, &s->capthreads, s->nthreads + 1, sizeof(*s->threads));
	t = &s->threads[s->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	t->stat_fd = t->sched_fd = -1;
	pt_thread_open(t);
	return t;
}

static void pt_remove_thread(struct ptrace_sampler *s, struct pt_thread *t)
{
	if (t->cpu_ticks_known)
		s->cpu_ticks_gone += t->cpu_ticks_last - t->cpu_ticks_first;
	if (t->run_known)
		s->run_ns_gone += t->run_ns_last - t->run_ns_first;
	if (t->stat_fd >= 0)
		close(t->stat_fd);
	if (t->sched_fd >= 0)
		close(t->sched_fd);
	if (t->idle_open)
		sampler_idle_thread_close(&t->idle, &s->idle_sink);
	*t = s->threads[--s->nthreads];
}

/* The thread's state from its stat file, and its CPU and CPU time on the way. */
static char pt_thread_state(struct pt_thread *t)
{
	char buf[1024];
	ssize_t n = t->stat_fd >= 0 ? pread(t->stat_fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return 0;
	char state = p[2];
	/* fields after the state (field 3): utime 14, stime 15, processor 39 */
	const char *q = p + 2;
	unsigned long long utime = 0, stime = 0;
	for (int field = 3; q && field <= 39; field++) {
		if (field == 14)
			utime = strtoull(q, NULL, 10);
		else if (field == 15)
			stime = strtoull(q, NULL, 10);
		else if (field == 39)
			t->cpu = (uint32_t)strtoul(q, NULL, 10);
		q = strchr(q, ' ');
		if (q)
			q++;
	}
	if (!t->cpu_ticks_known) {
		t->cpu_ticks_first = utime + stime;
		t->cpu_ticks_known = true;
	}
	t->cpu_ticks_last = utime + stime;
	return state;
}

/* The thread's CPU time so far from schedstat (ns, exact, unlike stat's clock ticks); false
 * where the kernel has no schedstat. */
static bool pt_thread_runtime(struct pt_thread *t, uint64_t *ns)
{
	char buf[128];
	ssize_t n = t->sched_fd >= 0 ? pread(t->sched_fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *end;
	*ns = strtoull(buf, &end, 10);
	return end != buf;
}

/* ---- events (under the lock: the reader thread takes them as batches) ---- */

static void pt_wake(struct ptrace_sampler *s)
{
	uint64_t one = 1;
	ssize_t w = write(s->wake_fd, &one, sizeof(one));
	(void)w;
}

static void pt_task_event(struct ptrace_sampler *s, enum sampler_event_type type, pid_t pid,
			  pid_t tid, pid_t ppid, pid_t ptid)
{
	pthread_mutex_lock(&s->lock);
	struct sampler_pending *pe = sampler_events_push(&s->events, type);
	pe->ev.time = cs_monotonic_ns();
	pe->ev.pid = (uint32_t)pid;
	pe->ev.tid = (uint32_t)tid;
	pe->ev.task.ppid = (uint32_t)ppid;
	pe->ev.task.ptid = (uint32_t)ptid;
	pthread_mutex_unlock(&s->lock);
}

static void pt_comm(struct ptrace_sampler *s, struct pt_thread *t, bool exec, uint64_t now)
{
	char path[64], name[64];
	t->comm_check_ns = now;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)t->pid, (int)t->tid);
	if (cs_read_small_file(path, name, sizeof(name)) <= 0)
		return;
	name[strcspn(name, "\n")] = 0;
	if (t->comm_sent && !exec && !strncmp(name, t->comm, sizeof(t->comm) - 1))
		return;
	snprintf(t->comm, sizeof(t->comm), "%.15s", name);
	t->comm_sent = true;
	pthread_mutex_lock(&s->lock);
	struct sampler_pending *pe = sampler_events_push(&s->events, SAMPLER_EV_COMM);
	pe->ev.time = now;
	pe->ev.pid = (uint32_t)t->pid;
	pe->ev.tid = (uint32_t)t->tid;
	pe->ev.comm.exec = exec;
	pe->off_a = sampler_events_keep(&s->events, name, strlen(name) + 1);
	pthread_mutex_unlock(&s->lock);
}

static uint64_t pt_hash(const char *str)
{
	uint64_t h = 1469598103934665603ull;
	for (; *str; str++)
		h = (h ^ (uint8_t)*str) * 1099511628211ull;
	return h;
}

struct pt_maps_read {
	struct pt_process *p;
	struct pt_map *now;       /* every executable mapping of this read */
	size_t n, cap;
};

/* A mapping is delivered unless the last read had it already (same range, offset, path). */
static bool pt_map_is_new(void *arg, uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	struct pt_maps_read *rd = arg;
	struct pt_map m = { start, end, pgoff, pt_hash(path) };
	*CS_PUSH(rd->now, rd->n, rd->cap) = m;
	for (size_t i = 0; i < rd->p->nmaps; i++)
		if (!memcmp(&rd->p->maps[i], &m, sizeof(m)))
			return false;
	return true;
}

/* Re-read the process' executable mappings and deliver those not delivered yet (all of them
 * after an exec: known is cleared then). */
static void pt_refresh_maps(struct ptrace_sampler *s, struct pt_process *p, uint64_t now)
{
	struct pt_maps_read rd = { .p = p };
	p->maps_read_ns = now;
	pthread_mutex_lock(&s->lock);
	sampler_proc_maps(&s->events, p->pid, now, pt_map_is_new, &rd);
	pthread_mutex_unlock(&s->lock);
	if (!rd.n && p->nmaps)
		return; /* unreadable (the process is exiting): keep what was known */
	free(p->maps);
	p->maps = rd.now;
	p->nmaps = rd.n;
	p->capmaps = rd.cap;
}

static bool pt_pc_known(const struct pt_process *p, uint64_t pc)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (pc >= p->maps[i].start && pc < p->maps[i].end)
			return true;
	return false;
}

/* -g fp: the frame-pointer chain, read from the stack copy where it reaches and from the
 * target's memory beyond it (the kernel's user callchain does the same walk). */
static size_t pt_fp_chain(pid_t tid, const struct user_regs_struct *regs, const uint8_t *stack,
			  size_t got, uint64_t *ips, size_t max)
{
	size_t n = 0;
	uint64_t bp = regs->rbp, sp = regs->rsp;
	ips[n++] = regs->rip;
	while (n < max && bp >= sp && !(bp & 7)) {
		uint64_t frame[2];
		if (bp + 16 <= sp + got)
			memcpy(frame, stack + (bp - sp), 16);
		else if (sampler_proc_read_stack(tid, bp, (uint8_t *)frame, 16) != 16)
			break;
		if (!frame[1])
			break;
		ips[n++] = frame[1];
		if (frame[0] <= bp)
			break;
		bp = frame[0];
	}
	return n;
}

/* Whether the thread has a signal of its own waiting (pending for it or for its process, and
 * not blocked), from /proc/PID/task/TID/status. */
static bool pt_signal_pending(pid_t pid, pid_t tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (cs_read_small_file(path, buf, sizeof(buf)) <= 0)
		return true; /* cannot tell: leave the call's result alone */
	const char *pnd = strstr(buf, "\nSigPnd:"), *shd = strstr(buf, "\nShdPnd:");
	const char *blk = strstr(buf, "\nSigBlk:");
	if (!pnd || !shd || !blk)
		return true;
	uint64_t pending = strtoull(pnd + 8, NULL, 16) | strtoull(shd + 8, NULL, 16);
	return (pending & ~strtoull(blk + 8, NULL, 16)) != 0;
}

/* The stop aborted a system call that the kernel does not restart by itself (epoll_wait,
 * semop, sigtimedwait: they return EINTR after any stop, see signal(7)): restart it the way the
 * kernel restarts the others (the call again, from its syscall instruction), so that sampling
 * never shows the target an EINTR. Not when a signal of the target's own is waiting: then EINTR
 * is what it would have seen without csampler. A restarted call with a timeout waits its whole
 * timeout again. Returns whether it restarted the call (backend.h). */
bool sampler_ptrace_restart_syscall(pid_t pid, pid_t tid, const struct user_regs_struct *regs)
{
	if ((long long)regs->orig_rax < 0 || (long long)regs->rax != -EINTR)
		return false;
	uint8_t insn[2];
	if (sampler_proc_read_stack(tid, regs->rip - 2, insn, 2) != 2 || insn[0] != 0x0f ||
	    insn[1] != 0x05 || pt_signal_pending(pid, tid))
		return false;
	struct user_regs_struct again = *regs;
	again.rax = again.orig_rax;
	again.rip -= 2;
	return ptrace(PTRACE_SETREGS, tid, NULL, &again) == 0;
}

/* The thread is in the stop its PTRACE_INTERRUPT asked for: take its sample. */
static void pt_take_sample(struct ptrace_sampler *s, struct pt_thread *t, struct pt_process *p,
			   uint64_t now)
{
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, t->tid, NULL, &regs) < 0)
		return;
	if (sampler_ptrace_restart_syscall(t->pid, t->tid, &regs))
		s->syscalls_restarted++;
	/* A wait with a timeout this stop interrupted goes on as restart_syscall (the kernel's
	 * ERESTART_RESTARTBLOCK, -516): --idle names it after the call it continues. */
	if (s->base.opts.idle && (long long)regs.orig_rax >= 0 && (long long)regs.rax == -516) {
		t->idle.restart_nr = (long)regs.orig_rax;
		t->idle.restart_sp = regs.rsp;
		t->idle.restart_pc = regs.rip;
	}
	if (!pt_pc_known(p, regs.rip) && now - p->maps_read_ns > PT_MAPS_MISS_NS)
		pt_refresh_maps(s, p, now); /* a library mapped since the last read */
	if (!t->comm_sent || now - t->comm_check_ns > PT_COMM_REFRESH_NS)
		pt_comm(s, t, false, now);
	size_t got = sampler_proc_read_stack(t->tid, regs.rsp, s->stack, s->base.opts.stack_size);
	uint64_t ips[128];
	size_t nips = 0;
	bool fp = s->base.opts.callgraph == SAMPLER_CALLGRAPH_FP;
	if (fp)
		nips = pt_fp_chain(t->tid, &regs, s->stack, got, ips, 128);
	/* More of the thread's memory as it is now, while it is stopped (record: the Python frame
	 * chain, which the thread changes as soon as it runs again) */
	size_t ncopy = 0;
	if (!fp && s->copy)
		ncopy = s->base.opts.stop_copy(s->base.opts.stop_copy_arg, (uint32_t)t->pid,
					       (uint32_t)t->tid, regs.rsp, s->stack, got, s->copy,
					       s->base.opts.stop_copy_cap);

	pthread_mutex_lock(&s->lock);
	if (s->events.arena.len > PT_MAX_PENDING_BYTES) {
		s->lost++;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	struct sampler_pending *pe = sampler_events_push(&s->events, SAMPLER_EV_SAMPLE);
	struct sampler_event *ev = &pe->ev;
	ev->time = now;
	ev->pid = (uint32_t)t->pid;
	ev->tid = (uint32_t)t->tid;
	ev->cpu = t->cpu;
	ev->sample.snap.pid = (uint32_t)t->pid;
	ev->sample.snap.tid = (uint32_t)t->tid;
	ev->sample.weight = t->weight ? t->weight : 1;
	if (fp) {
		pe->off_c = sampler_events_keep(&s->events, ips, nips * 8);
		ev->sample.snap.nuser_ips = nips;
	} else {
		uint64_t *r = ev->sample.snap.regs;
		r[0] = regs.rax, r[1] = regs.rbx, r[2] = regs.rcx, r[3] = regs.rdx;
		r[4] = regs.rsi, r[5] = regs.rdi, r[6] = regs.rbp, r[7] = regs.rsp;
		r[8] = regs.rip;
		r[16] = regs.r8, r[17] = regs.r9, r[18] = regs.r10, r[19] = regs.r11;
		r[20] = regs.r12, r[21] = regs.r13, r[22] = regs.r14, r[23] = regs.r15;
		ev->sample.snap.regs_mask = SAMPLER_REGS_MASK;
		if (got)
			pe->off_a = sampler_events_keep(&s->events, s->stack, got);
		if (ncopy) {
			pe->off_d = sampler_events_keep(&s->events, s->copy, ncopy);
			ev->sample.mem_size = ncopy;
			s->copies++;
			s->copy_bytes += ncopy;
		}
		ev->sample.snap.stack_size = got;
		ev->sample.stack_cap = s->base.opts.stack_size;
	}
	pthread_mutex_unlock(&s->lock);
}

/* --idle: a thread off the CPU, sampled from /proc without stopping it. */
/* --idle: a thread off the CPU, sampled from /proc without stopping it (idle.c: a thread still
 * blocked where it was is not copied again). */
static void pt_take_offcpu(struct ptrace_sampler *s, struct pt_thread *t, struct pt_process *p,
			   uint64_t now, uint32_t periods)
{
	if (!t->idle_open) {
		if (sampler_idle_thread_open(&t->idle, t->pid, t->tid) < 0)
			return;
		t->idle_open = true;
	}
	sampler_idle_sample(&t->idle, &s->idle_sink, now, periods);
	if (!t->idle.armed)
		return;
	if (!pt_pc_known(p, t->idle.pc) && now - p->maps_read_ns > PT_MAPS_MISS_NS)
		pt_refresh_maps(s, p, now);
	if (!t->comm_sent || now - t->comm_check_ns > PT_COMM_REFRESH_NS)
		pt_comm(s, t, false, now);
}

/* ---- the tick ---- */

/* wall_periods: the sampling periods of wall time this tick stands for (more than 1 when the tracer
 * was late and timer ticks were missed), the weight of its off-CPU samples, so that --idle
 * shares stay shares of wall-clock time on a busy machine. */
static void pt_tick(struct ptrace_sampler *s, uint64_t now, uint32_t wall_periods)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		struct pt_thread *t = &s->threads[i];
		struct pt_process *p = pt_process(s, t->pid, false);
		if (!p || !p->sampling || t->listening)
			continue;
		/* An interrupt whose stop never came (another trap took it: pt_handle) would
		 * leave the thread unsampled for the rest of the run; as a backstop, one not
		 * answered within PT_INTERRUPT_AGAIN_NS is sent again (a second interrupt of one
		 * still on its way asks for the same stop). */
		if (t->interrupt_pending) {
			if (now - t->interrupt_ns > PT_INTERRUPT_AGAIN_NS &&
			    ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) == 0) {
				t->interrupt_ns = now;
				s->interrupts_again++;
			}
			continue;
		}
		/* Like perf's cpu-clock, a thread is sampled once per period of CPU time it used:
		 * schedstat tells exactly how much it ran since the last tick, so a thread that was
		 * only runnable (more threads than CPUs) is not stopped, and a sample taken after
		 * missed ticks weighs the periods it stands for. */
		uint64_t run, ran_ns = 0;
		bool have_run = pt_thread_runtime(t, &run);
		if (have_run) {
			if (!t->run_known || run < t->run_ns_last) {
				t->run_known = true;
				t->run_ns_first = t->run_ns_last = run;
			}
			ran_ns = run - t->run_ns_last;
			t->credit_ns += ran_ns;
			t->run_ns_last = run;
		}
		bool ran = !have_run || t->credit_ns >= s->period_ns;
		char state = pt_thread_state(t);
		/* (credit kept from before a wait, below, is no sign that the wait ended) */
		if (t->idle_open && (state == 'R' || (ran && (!have_run || ran_ns))))
			sampler_idle_flush_late(&t->idle, &s->idle_sink,
						wall_periods); /* it ran: its wait ended */
		if (ran && state == 'R') {
			t->credit_idle_ns = 0;
			if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) == 0) {
				t->interrupt_pending = true;
				t->interrupt_ns = now;
				uint64_t periods = have_run ? t->credit_ns / s->period_ns : 1;
				t->weight = (uint32_t)(periods > 1000 ? 1000 : periods);
				t->credit_ns = have_run ? t->credit_ns - periods * s->period_ns : 0;
			}
			continue;
		}
		/* It ran, then blocked: the stack it ran on is gone. Its CPU time is sampled where
		 * it runs next, when that is soon: threads that take turns (a lock, Python's GIL:
		 * one holds it 5 ms, the others wait) are mostly blocked at a tick, and dropping
		 * their time took 11% of four Python threads' samples, and more from those that
		 * wait more (deep.py's four threads read 24.3/24.3/24.1/27.3: the one in C
		 * without the GIL most, against perf's 25 each; 25.0 each now). After a longer
		 * wait the time is dropped: its next stack may be anywhere. */
		if (ran && !t->credit_idle_ns)
			t->credit_idle_ns = now;
		else if (ran && now - t->credit_idle_ns > PT_CREDIT_KEEP_NS)
			t->credit_ns = 0, t->credit_idle_ns = 0;
		if (s->base.opts.idle && state && state != 'R' && state != 'Z' && state != 'X')
			pt_take_offcpu(s, t, p, now, wall_periods);
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		struct pt_process *p = &s->procs[i];
		if (!p->sampling || p->exited || now - p->maps_read_ns < p->maps_interval_ns)
			continue;
		pt_refresh_maps(s, p, now);
		p->maps_interval_ns = p->maps_interval_ns * 2 > PT_MAPS_REFRESH_NS
					      ? PT_MAPS_REFRESH_NS
					      : p->maps_interval_ns * 2;
	}
}

/* ---- stops ---- */

static pid_t pt_tgid_of(pid_t tid)
{
	return (pid_t)cs_proc_status_number(tid, "Tgid");
}

static void pt_new_task(struct ptrace_sampler *s, struct pt_thread *parent, int event)
{
	unsigned long msg = 0;
	if (ptrace(PTRACE_GETEVENTMSG, parent->tid, NULL, &msg) < 0 || !msg)
		return;
	pid_t tid = (pid_t)msg;
	pid_t pid = event == PTRACE_EVENT_CLONE ? pt_tgid_of(tid) : tid;
	if (!pid)
		pid = tid; /* gone already: its exit comes next */
	struct pt_thread *t = pt_thread(s, tid);
	if (t && t->pid != pid) {
		/* its first stop came before this event and guessed the process */
		t->pid = pid;
	}
	bool process = pid == tid;
	pid_t parent_pid = parent->pid, parent_tid = parent->tid;
	struct pt_process *pp = pt_process(s, parent_pid, false);
	bool sampling = pp && pp->sampling;
	t = pt_add_thread(s, pid, tid);
	struct pt_process *np = pt_process(s, pid, true);
	pt_task_event(s, SAMPLER_EV_FORK, pid, tid, process ? parent_pid : pid, parent_tid);
	/* a new thread often follows a dlopen: read the mappings again at the next tick */
	if (!process)
		np->maps_interval_ns = PT_MAPS_FIRST_NS;
	if (process && sampling && !np->sampling) {
		np->sampling = true;
		/* a forked child has its parent's mappings: the recorder copies them at FORK */
		pp = pt_process(s, parent_pid, false);
		if (pp) {
			np->maps = cs_malloc((pp->nmaps ? pp->nmaps : 1) * sizeof(*np->maps));
			memcpy(np->maps, pp->maps, pp->nmaps * sizeof(*np->maps));
			np->nmaps = np->capmaps = pp->nmaps;
			np->maps_read_ns = pp->maps_read_ns;
			np->maps_interval_ns = PT_MAPS_FIRST_NS;
		}
	} else if (!process) {
		np->sampling = sampling;
	}
}

/* The exec stop is reported under the leader's tid whichever thread called exec: the other
 * threads are gone (their exits are reported, except the exec'ing one's old tid). */
static void pt_exec(struct ptrace_sampler *s, pid_t pid, uint64_t now)
{
	for (size_t i = 0; i < s->nthreads;) {
		struct pt_thread *o = &s->threads[i];
		if (o->pid == pid && o->tid != pid) {
			pt_task_event(s, SAMPLER_EV_EXIT, pid, o->tid, pid, pid);
			pt_remove_thread(s, o);
			continue;
		}
		i++;
	}
	struct pt_thread *t = pt_add_thread(s, pid, pid);
	if (t->run_known)
		s->run_ns_gone += t->run_ns_last - t->run_ns_first;
	t->run_known = false; /* the exec'ing thread may be another task than the old leader */
	t->credit_ns = 0;
	t->credit_idle_ns = 0;
	if (t->idle_open) { /* its /proc files are the old task's: reopened at its next wait */
		sampler_idle_thread_close(&t->idle, &s->idle_sink);
		t->idle_open = false;
	}
	pt_thread_open(t);
	t->interrupt_pending = false;
	struct pt_process *p = pt_process(s, pid, true);
	p->sampling = true;
	free(p->maps);
	p->maps = NULL;
	p->nmaps = p->capmaps = 0;
	pt_comm(s, t, true, now);
	pt_refresh_maps(s, p, now);
	p->maps_interval_ns = PT_MAPS_FIRST_NS;
}

static void pt_exited(struct ptrace_sampler *s, pid_t tid, int status)
{
	struct pt_thread *t = pt_thread(s, tid);
	pid_t pid = t ? t->pid : tid;
	if (t)
		pt_remove_thread(s, t);
	pt_task_event(s, SAMPLER_EV_EXIT, pid, tid, pid, pid);
	if (tid == pid) {
		struct pt_process *p = pt_process(s, pid, false);
		if (p) {
			p->exited = true;
			free(p->maps);
			p->maps = NULL;
			p->nmaps = p->capmaps = 0;
		}
	}
	if (tid == s->launch_child) {
		pthread_mutex_lock(&s->lock);
		s->child_reaped = true;
		s->child_status = status;
		pthread_mutex_unlock(&s->lock);
	}
}

/* The thread a waitpid status says stopped, added when unknown (an auto-attached child whose
 * clone event has not been seen yet); NULL when the status was an exit (accounted here) or
 * not a stop. */
static struct pt_thread *pt_stopped_thread(struct ptrace_sampler *s, pid_t tid, int status)
{
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		pt_exited(s, tid, status);
		return NULL;
	}
	if (!WIFSTOPPED(status))
		return NULL;
	struct pt_thread *t = pt_thread(s, tid);
	if (!t) {
		pid_t pid = pt_tgid_of(tid);
		t = pt_add_thread(s, pid ? pid : tid, tid);
	}
	return t;
}

/* One status from waitpid: account for it and resume the thread as it expects. */
static void pt_handle(struct ptrace_sampler *s, pid_t tid, int status)
{
	uint64_t now = cs_monotonic_ns();
	struct pt_thread *t = pt_stopped_thread(s, tid, status);
	if (!t)
		return;
	int sig = WSTOPSIG(status), event = status >> 16;
	/* Any other trap clears a pending PTRACE_INTERRUPT (the kernel's ptrace_stop: "any trap
	 * clears pending STOP trap"): an interrupt sent just before a clone event or a signal's
	 * delivery gets no stop of its own. Left pending, the thread was never sampled again
	 * (a PyTorch run under ptrace lost every sample after torch's import, once in about ten
	 * here and in CI: torch's import creates threads). */
	if (event != PTRACE_EVENT_STOP && t->interrupt_pending) {
		/* the thread is stopped all the same: its sample is taken in this stop (a clone's
		 * or a signal's: its registers are the thread's own), so that the periods it was
		 * due for are not lost; not at an exec (the old image is gone) */
		struct pt_process *p = pt_process(s, t->pid, false);
		if (event != PTRACE_EVENT_EXEC && p && p->sampling && !t->listening)
			pt_take_sample(s, t, p, now);
		t->interrupt_pending = false;
		s->interrupts_consumed++;
	}
	switch (event) {
	case PTRACE_EVENT_STOP:
		if (sig == SIGTRAP) {
			/* our interrupt, a new thread's first stop, or the end of a group stop */
			struct pt_process *p = pt_process(s, t->pid, false);
			bool was_listening = t->listening;
			t->listening = false;
			if (t->interrupt_pending && !was_listening && p && p->sampling) {
				pt_take_sample(s, t, p, now);
				uint64_t held = cs_monotonic_ns() - now;
				s->nstops++;
				s->stop_ns_total += held;
				s->reach_ns_total += now - t->interrupt_ns;
				if (held > s->stop_ns_max)
					s->stop_ns_max = held;
			}
			t->interrupt_pending = false;
			ptrace(PTRACE_CONT, tid, NULL, NULL);
		} else {
			/* a group stop: the thread stays stopped until SIGCONT, as without us */
			t->interrupt_pending = false;
			t->listening = true;
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);
		}
		return;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		pt_new_task(s, t, event);
		t = pt_thread(s, tid); /* the array may have moved */
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	case PTRACE_EVENT_EXEC:
		pt_exec(s, t->pid, now);
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	case 0:
		/* a signal for the target: delivered unchanged (a stop signal then group-stops
		 * it, reported as PTRACE_EVENT_STOP above) */
		ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
		return;
	default:
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
}

/* ---- attaching and detaching ---- */

static long pt_seize_options(void)
{
	return PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC;
}

/* Seize every thread of pid not seized yet; returns how many were new, or -errno. */
static int pt_seize_threads(struct ptrace_sampler *s, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	struct dirent *de;
	int added = 0, ret = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t)atoi(de->d_name);
		if (pt_thread(s, tid))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)pt_seize_options()) < 0) {
			if (errno == ESRCH && tid != pid)
				continue; /* exited meanwhile */
			ret = -errno;
			break;
		}
		pt_add_thread(s, pid, tid);
		added++;
	}
	closedir(d);
	return ret ? ret : added;
}

static int pt_attach_all(struct ptrace_sampler *s)
{
	uint64_t now = cs_monotonic_ns();
	for (size_t i = 0; i < s->nattach; i++) {
		pid_t pid = s->attach_pids[i];
		struct pt_process *p = pt_process(s, pid, true);
		p->sampling = true;
		for (int round = 0; round < 20; round++) {
			int ret = pt_seize_threads(s, pid);
			if (ret < 0)
				return ret;
			if (ret == 0)
				break;
		}
		pthread_mutex_lock(&s->lock);
		sampler_proc_comms(&s->events, pid, now);
		pthread_mutex_unlock(&s->lock);
		for (size_t k = 0; k < s->nthreads; k++)
			if (s->threads[k].pid == pid) {
				s->threads[k].comm_sent = true;
				s->threads[k].comm_check_ns = now;
				char cpath[64];
				snprintf(cpath, sizeof(cpath), "/proc/%d/task/%d/comm", (int)pid,
					 (int)s->threads[k].tid);
				if (cs_read_small_file(cpath, s->threads[k].comm, sizeof(s->threads[k].comm)) > 0)
					s->threads[k].comm[strcspn(s->threads[k].comm, "\n")] = 0;
			}
		pt_refresh_maps(s, p, now);
		p->maps_interval_ns = PT_MAPS_REFRESH_NS;
	}
	return 0;
}

/* Stop every thread once more and detach it where it stopped: a signal it was about to get
 * is delivered by the detach, a group-stopped thread stays stopped, the others run on. */
static void pt_detach_all(struct ptrace_sampler *s)
{
	uint64_t give_up = cs_monotonic_ns() + PT_DETACH_WAIT_NS;
	for (size_t i = 0; i < s->nthreads; i++)
		if (ptrace(PTRACE_INTERRUPT, s->threads[i].tid, NULL, NULL) < 0 && errno == ESRCH)
			s->threads[i].interrupt_pending = false;
	while (s->nthreads && cs_monotonic_ns() < give_up) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid < 0 && errno == ECHILD)
			break;
		if (tid <= 0) {
			struct timespec ts = { 0, 200000 };
			nanosleep(&ts, NULL);
			continue;
		}
		struct pt_thread *t = pt_stopped_thread(s, tid, status);
		if (!t)
			continue;
		int sig = WSTOPSIG(status), event = status >> 16;
		if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
			/* the new task was auto-attached: it must be let go as well */
			unsigned long msg = 0;
			if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0 && msg && !pt_thread(s, (pid_t)msg)) {
				pid_t ntid = (pid_t)msg;
				pt_add_thread(s, pt_tgid_of(ntid) ? pt_tgid_of(ntid) : ntid, ntid);
				t = pt_thread(s, tid);   /* the array may have moved */
			}
		}
		ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)(event == 0 ? sig : 0));
		pt_remove_thread(s, t);
	}
	/* whatever is left (a thread stuck in the kernel) is detached when this thread exits */
}

/* ---- the tracer thread ---- */

static int pt_start_timer(struct ptrace_sampler *s)
{
	struct sigevent sev = { 0 };
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = pt_tick_signal();
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &s->timer) < 0)
		return -errno;
	s->timer_made = true;
	s->period_ns = 1000000000ull / s->base.opts.freq_hz;
	if (!s->period_ns)
		s->period_ns = 1;
	struct itimerspec its = {
		.it_interval = { (time_t)(s->period_ns / 1000000000ull), (long)(s->period_ns % 1000000000ull) },
		.it_value = { (time_t)(s->period_ns / 1000000000ull), (long)(s->period_ns % 1000000000ull) },
	};
	if (timer_settime(s->timer, 0, &its, NULL) < 0)
		return -errno;
	s->next_tick = cs_monotonic_ns() + s->period_ns;
	return 0;
}

static void *pt_tracer(void *arg)
{
	struct ptrace_sampler *s = arg;
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, pt_tick_signal());
	pthread_sigmask(SIG_SETMASK, &all, NULL);

	int ret = 0;
	if (s->launch_child) {
		if (ptrace(PTRACE_SEIZE, s->launch_child, NULL, (void *)pt_seize_options()) < 0)
			ret = -errno;
		else
			pt_add_thread(s, s->launch_child, s->launch_child), pt_process(s, s->launch_child, true);
	} else {
		ret = pt_attach_all(s);
	}
	if (!ret)
		ret = pt_start_timer(s);
	pthread_mutex_lock(&s->lock);
	s->open_result = ret;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (ret) {
		for (size_t i = 0; i < s->nthreads; i++)
			ptrace(PTRACE_DETACH, s->threads[i].tid, NULL, NULL);
		return NULL;
	}
	pt_wake(s);

	while (!s->stop) {
		uint64_t now = cs_monotonic_ns();
		if (now >= s->next_tick) {
			/* ticks missed: not caught up, but this one's off-CPU samples weigh them */
			uint64_t missed = (now - s->next_tick) / s->period_ns;
			pt_tick(s, now, missed < 1000000 ? (uint32_t)missed + 1 : 1000000);
			s->next_tick += (missed + 1) * s->period_ns;
			pt_wake(s);
		}
		int status;
		pid_t tid = waitpid(-1, &status, __WALL);
		if (tid > 0) {
			pt_handle(s, tid, status);
			/* handle every status already waiting before the next tick check */
			while (!s->stop && (tid = waitpid(-1, &status, __WALL | WNOHANG)) > 0)
				pt_handle(s, tid, status);
			pt_wake(s);
		} else if (errno == ECHILD) {
			/* nothing traced any more: wait for the end, woken by the ticks */
			struct timespec ts = { 0, (long)s->period_ns };
			nanosleep(&ts, NULL);
		}
	}
	timer_delete(s->timer);
	s->timer_made = false;
	pt_detach_all(s);
	pt_wake(s);
	return NULL;
}

static int pt_open(struct sampler **out, const struct sampler_opts *opts, pid_t child,
		   const pid_t *pids, size_t npids)
{
	struct ptrace_sampler *s = cs_calloc(1, sizeof(*s));
	int ret;
	s->base.ops = &sampler_ptrace_ops;
	s->base.opts = *opts;
	s->launch_child = child;
	if (npids) {
		s->attach_pids = cs_malloc(npids * sizeof(pid_t));
		memcpy(s->attach_pids, pids, npids * sizeof(pid_t));
		s->nattach = npids;
	}
	s->stack = cs_malloc(opts->stack_size ? opts->stack_size : 8);
	if (opts->stop_copy && opts->stop_copy_cap)
		s->copy = cs_malloc(opts->stop_copy_cap);
	s->open_result = 1;
	s->start_ns = cs_monotonic_ns();
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->idle_sink = (struct sampler_idle_sink){ .lock = &s->lock, .events = &s->events,
						   .lost = &s->lost, .stack_size = opts->stack_size };
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		ret = SAMPLER_SAID(cs_error(errno, "eventfd: %s", strerror(errno)));
		goto fail;
	}
	struct sigaction sa = { 0 };
	sa.sa_handler = pt_on_tick;
	sigemptyset(&sa.sa_mask); /* no SA_RESTART: the tick must interrupt waitpid */
	sigaction(pt_tick_signal(), &sa, NULL);
	/* the other threads never take the tick (it is aimed at the tracer, but be sure) */
	int err = pthread_create(&s->tracer, NULL, pt_tracer, s);
	if (err) {
		ret = SAMPLER_SAID(cs_error(err, "pthread_create: %s", strerror(err)));
		goto fail;
	}
	s->tracer_running = true;
	pthread_mutex_lock(&s->lock);
	while (s->open_result == 1)
		pthread_cond_wait(&s->cond, &s->lock);
	ret = s->open_result;
	pthread_mutex_unlock(&s->lock);
	if (ret) {
		pthread_join(s->tracer, NULL);
		s->tracer_running = false;
		goto fail;
	}
	*out = &s->base;
	return 0;
fail:
	sampler_ptrace_ops.close(&s->base);
	return ret;
}

static int pt_open_launch(struct sampler **out, const struct sampler_opts *opts, pid_t child)
{
	return pt_open(out, opts, child, NULL, 0);
}

static int pt_open_attach(struct sampler **out, const struct sampler_opts *opts, const pid_t *pids,
			  size_t npids)
{
	return pt_open(out, opts, 0, pids, npids);
}

static int pt_open_error(int err, pid_t pid, bool attach)
{
	switch (err) {
	case EPERM:
	case EACCES: {
		long scope = cs_read_long_file("/proc/sys/kernel/yama/ptrace_scope", -1);
		if (attach && scope >= 1)
			return cs_error(err,
					"ptrace(PTRACE_SEIZE, %d): %s: kernel.yama.ptrace_scope is %ld; run as root, or lower it with 'sysctl kernel.yama.ptrace_scope=0'",
					(int)pid, strerror(err), scope);
		return cs_error(err,
				"ptrace(PTRACE_SEIZE, %d): %s: another tracer (gdb, strace) is attached, the process belongs to another user, or a seccomp filter forbids ptrace; use --mode perf where perf events are allowed",
				(int)pid, strerror(err));
	}
	case ESRCH:
		return cs_error(err, "no such process %d: check the PID with ps", (int)pid);
	default:
		return cs_error(err, "ptrace(PTRACE_SEIZE, %d): %s", (int)pid, strerror(err));
	}
}

static int pt_pollfds(struct sampler *base, struct pollfd *fds, int max)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	if (max < 1)
		return 0;
	fds[0] = (struct pollfd){ .fd = s->wake_fd, .events = POLLIN };
	return 1;
}

static struct sampler_batch *pt_collect(struct sampler *base)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	uint64_t cnt;
	ssize_t r = read(s->wake_fd, &cnt, sizeof(cnt));
	(void)r;
	pthread_mutex_lock(&s->lock);
	if (s->lost) {
		struct sampler_pending *pe = sampler_events_push(&s->events, SAMPLER_EV_LOST);
		pe->ev.time = cs_monotonic_ns();
		pe->ev.lost.count = s->lost;
		s->lost = 0;
	}
	struct sampler_batch *b = sampler_events_take(&s->events);
	pthread_mutex_unlock(&s->lock);
	return b;
}

static void pt_disable(struct sampler *base)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	if (!s->tracer_running)
		return;
	s->stop = 1;
	pthread_kill(s->tracer, pt_tick_signal());
	pthread_join(s->tracer, NULL);
	s->tracer_running = false;
}

static uint64_t pt_task_clock_ns(struct sampler *base)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	if (s->tracer_running)
		return 0; /* read once the tracer is done with the thread table */
	uint64_t ns = s->run_ns_gone, ticks = s->cpu_ticks_gone;
	for (size_t i = 0; i < s->nthreads; i++) {
		if (s->threads[i].run_known)
			ns += s->threads[i].run_ns_last - s->threads[i].run_ns_first;
		if (s->threads[i].cpu_ticks_known)
			ticks += s->threads[i].cpu_ticks_last - s->threads[i].cpu_ticks_first;
	}
	if (ns)
		return ns;
	long hz = sysconf(_SC_CLK_TCK);
	return ticks * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

static bool pt_has_kernel(const struct sampler *base)
{
	(void)base;
	return false; /* ptrace sees user registers only */
}

static int pt_child_exit(struct sampler *base, pid_t child, int *status)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	bool reaped;
	pthread_mutex_lock(&s->lock);
	reaped = s->child_reaped && child == s->launch_child;
	if (reaped)
		*status = s->child_status;
	pthread_mutex_unlock(&s->lock);
	if (reaped)
		return 1;
	return s->tracer_running ? 0 : -ENOSYS;
}

static void pt_describe(struct sampler *base, char *buf, size_t len)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	double n_stops = s->nstops ? (double)s->nstops : 1.0;
	int n = snprintf(buf, len,
			 "ptrace: %llu stops, each held %.1f us on average (at most %.1f us) after %.1f us to stop",
			 (unsigned long long)s->nstops, (double)s->stop_ns_total / n_stops / 1e3,
			 (double)s->stop_ns_max / 1e3, (double)s->reach_ns_total / n_stops / 1e3);
	if (s->copies && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; %llu samples with their Python frames copied at the stop (%.1f KiB each)",
			      (unsigned long long)s->copies, (double)s->copy_bytes / (double)s->copies / 1024);
	if (s->interrupts_consumed && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; %llu interrupts taken by another stop (a clone, a signal)",
			      (unsigned long long)s->interrupts_consumed);
	if (s->interrupts_again && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; %llu interrupts sent again (no stop within %llu ms)",
			      (unsigned long long)s->interrupts_again,
			      (unsigned long long)(PT_INTERRUPT_AGAIN_NS / 1000000));
	if (s->syscalls_restarted && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; %llu system calls a stop aborted with EINTR restarted",
			      (unsigned long long)s->syscalls_restarted);
	if (s->base.opts.idle && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n,
			 "; --idle: %llu ticks found a thread off the CPU, %llu stack copies read from /proc, %llu skipped (the thread moved while read)",
			 (unsigned long long)s->idle_sink.taken, (unsigned long long)s->idle_sink.copies,
			 (unsigned long long)s->idle_sink.missed);
}

static void pt_close(struct sampler *base)
{
	struct ptrace_sampler *s = (struct ptrace_sampler *)base;
	pt_disable(base);
	if (s->timer_made)
		timer_delete(s->timer);
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].stat_fd >= 0)
			close(s->threads[i].stat_fd);
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].sched_fd >= 0)
			close(s->threads[i].sched_fd);
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].idle_open)
			sampler_idle_thread_close(&s->threads[i].idle, &s->idle_sink);
	for (size_t i = 0; i < s->nprocs; i++)
		free(s->procs[i].maps);
	CS_FREE_ALL(s->threads, s->procs, s->attach_pids, s->stack, s->copy);
	sampler_events_free(&s->events);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* No kernel cap: a timer thread stops the threads; at perf's default cap of 100 kHz the stops
 * would be most of the program's time already. */
static uint64_t pt_max_rate(void)
{
	return 100000;
}

/* The tracer thread wakes the reader after each tick (pt_wake), and copies Python frames at
 * the stop itself. */
static bool pt_wakes_each_sample(const struct sampler *base)
{
	(void)base;
	return true;
}

const struct sampler_ops sampler_ptrace_ops = {
	.name = "ptrace",
	.mode = SAMPLER_MODE_PTRACE,
	.max_rate = pt_max_rate,
	.holds_threads = true,
	.open_launch = pt_open_launch,
	.open_attach = pt_open_attach,
	.explain_open_error = pt_open_error,
	.pollfds = pt_pollfds,
	.collect = pt_collect,
	.disable = pt_disable,
	.task_clock_ns = pt_task_clock_ns,
	.has_kernel = pt_has_kernel,
	.child_exit = pt_child_exit,
	.describe = pt_describe,
	.wakes_each_sample = pt_wakes_each_sample,
	.close = pt_close,
};
