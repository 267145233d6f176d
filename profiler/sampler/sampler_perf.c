/* sampler_perf.c: the perf_event_open sampling backend: software cpu-clock events, one ring
 * buffer per CPU, samples with user registers + user stack copy (dwarf) or the kernel's
 * callchain (fp), timestamps on CLOCK_MONOTONIC, and the MMAP2/COMM/FORK/EXIT/LOST side-band
 * records. Records are copied out of the rings in batches and sorted by time before delivery,
 * so a fork or mmap on one CPU is seen before the samples that depend on it on another.
 *
 * --idle: cpu-clock only fires while a thread runs, and the context-switch event that would
 * give a stack at switch-out is refused to unprivileged users at perf_event_paranoid 2 (with
 * exclude_kernel it never fires). So a poller thread wakes at the sampling rate on the wall
 * clock, reads the state of every thread of the sampled processes from /proc and samples each
 * one that is not running from /proc without stopping it (proc.c). Each off-CPU sample weighs
 * the sampling periods since the poller's previous tick (1 when it keeps pace), the same
 * period a cpu-clock sample stands for, so on-CPU and off-CPU shares are shares of wall-clock
 * time. Its samples go into a side set under a mutex that collect merges. */
#include "sampler/backend.h"

#include "base/cs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct perf_ring {
	int fd;
	int cpu;
	uint8_t *base;            /* the mmap: control page then data */
	size_t data_size;         /* power of two */
};

static void perf_close(struct sampler *base);

#define PERF_IDLE_RESCAN_NS 10000000ull     /* threads and child processes: every 10 ms */
/* --idle: a thread of a sampled process, as the poller sees it (idle.c samples it). */
struct perf_idle_thread {
	struct sampler_idle_thread th;
	bool seen;                /* found by the last rescan */
};

/* --idle: the poller thread's state. Only the poller touches the fields above lock; lock
 * guards those below it, which collect (the reader thread) and the poller share. */
struct perf_idle {
	pthread_t thread;
	bool running;
	volatile int stop;
	pid_t launch_child;       /* launch mode: off-CPU sampling starts at its exec */
	bool started;
	pid_t *pids;              /* processes whose threads are polled */
	size_t npids, cap_pids;
	struct perf_idle_thread *threads;
	size_t nthreads, cap_threads;
	uint64_t period_ns, rescan_ns;
	uint64_t ticks, late_ticks; /* ticks taken; periods the poller slept through */
	struct sampler_idle_sink sink; /* into events, under lock */
	pthread_mutex_t lock;
	struct sampler_events events; /* off-CPU samples not collected yet */
	pid_t *new_pids;          /* processes created (FORK records), for the poller */
	size_t nnew_pids, cap_new_pids;
	uint64_t lost;            /* dropped while events was over SAMPLER_IDLE_MAX_PENDING */
};

struct perf_sampler {
	struct sampler base;      /* base.opts: the options */
	struct perf_event_attr attr;
	int *cpus;
	int ncpus;
	struct perf_ring *rings;  /* one per CPU */
	int *fds;                 /* every event fd (attach: one per thread and CPU) */
	size_t nfds, cap_fds;
	bool kernel;
	struct sampler_events events; /* the batch being collected */
	uint8_t *wrapbuf;         /* a record that wraps around the end of a ring */
	size_t wrapcap;
	/* attach mode: the state that existed before attaching, delivered by the first drain */
	pid_t *synth_pids;
	size_t nsynth, cap_synth;
	uint64_t attach_time;
	struct perf_idle *idle;   /* --idle, NULL otherwise */
	/* the side-band half of the BPF backend (sampler_perf_open_sideband): counting events,
	 * no samples; system-wide (cpu-wide events, no inherit) for record -a and --cgroup */
	bool sideband, cpu_wide;
	int cgroup_fd;            /* --cgroup: the cgroup's directory, else -1 */
	uint8_t *copy;            /* opts.stop_copy's buffer, opts.stop_copy_cap bytes */
	bool copying;             /* stop_copy copied something: the rings, which wake the reader
				   * at every sample, are polled from then on (pollfds) */
};

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,6"). */
static int sampler_online_cpus(struct perf_sampler *s)
{
	char buf[1024];
	ssize_t n = cs_read_small_file("/sys/devices/system/cpu/online", buf, sizeof(buf));
	s->cpus = cs_calloc(1024, sizeof(int));
	if (n <= 0) {
		long cnt = sysconf(_SC_NPROCESSORS_ONLN);
		for (long i = 0; i < cnt && i < 1024; i++)
			s->cpus[s->ncpus++] = (int)i;
		return s->ncpus ? 0 : -ENODEV;
	}
	for (char *p = buf; *p && *p != '\n';) {
		long a = strtol(p, &p, 10), b = a;
		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (long c = a; c <= b && s->ncpus < 1024; c++)
			s->cpus[s->ncpus++] = (int)c;
		if (*p == ',')
			p++;
		else
			break;
	}
	return s->ncpus ? 0 : -ENODEV;
}

static void sampler_init_attr(struct perf_sampler *s, bool kernel)
{
	struct perf_event_attr *a = &s->attr;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = s->base.opts.freq_hz;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
	if (s->base.opts.callgraph == SAMPLER_CALLGRAPH_DWARF) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = SAMPLER_REGS_MASK;
		a->sample_stack_user = s->base.opts.stack_size;
		a->exclude_callchain_user = 1; /* the user part comes from DWARF */
	}
	a->sample_max_stack = 127;
	if (s->sideband) {
		/* counting only: its records are MMAP2, COMM, FORK, EXIT (with sample_id_all) */
		a->freq = 0;
		a->sample_freq = 0;
		a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
		a->sample_max_stack = 0;
	}
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_kernel = !kernel;
	a->exclude_callchain_kernel = !kernel;
	a->exclude_hv = 1;
	a->inherit = !s->cpu_wide;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(s->base.opts.mmap_pages * (size_t)getpagesize() / 4);
	if (s->copy) {
		/* every sample wakes the reader, which copies its Python frames (stop_copy) as
		 * soon after it as it can: a median of 0.1 ms, against 0.6 ms polled each 1 ms */
		a->watermark = 0;
		a->wakeup_events = 1;
	}
	if (s->sideband) {
		/* every record wakes the reader: the BPF backend loads a file's unwind rows when
		 * its mapping is read, and samples until then are walked without them */
		a->watermark = 0;
		a->wakeup_events = 1;
	}
}

/* One line for a perf_event_open failure, naming the cause and the fix. */
static int perf_open_error(int err, pid_t pid, bool attach)
{
	long paranoid = cs_read_long_file("/proc/sys/kernel/perf_event_paranoid", 0);
	switch (err) {
	case EACCES:
	case EPERM:
		if (attach) {
			struct stat st;
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d", (int)pid);
			if (stat(path, &st) == 0 && st.st_uid != geteuid())
				return cs_error(err,
						"perf_event_open: not permitted to profile PID %d (owned by uid %u): run csampler as that user or as root",
						(int)pid, (unsigned)st.st_uid);
		}
		return cs_error(err,
				"perf_event_open: %s (/proc/sys/kernel/perf_event_paranoid is %ld): run as root or with CAP_PERFMON, or lower it with 'sysctl kernel.perf_event_paranoid=1'",
				strerror(err), paranoid);
	case ESRCH:
		return cs_error(err, "perf_event_open: no such process %d", (int)pid);
	case EMFILE:
	case ENFILE:
		return cs_error(err, "perf_event_open: too many open files: raise the limit with 'ulimit -n'");
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		return cs_error(err, "perf_event_open: the cpu-clock software event is not supported here (%s)",
				strerror(err));
	case ENOSYS:
		return cs_error(err, "perf_event_open: not available in this kernel or sandbox (%s)",
				strerror(err));
	default:
		return cs_error(err,
				"perf_event_open: %s: the kernel rejected the event settings (rate -F, --stack-size, -m)",
				strerror(err));
	}
}

/* Open one event for (pid, cpu): the first on a CPU gets the ring buffer, the others are
 * redirected into it. Kernel sampling is dropped once, at the first EACCES. */
static int sampler_open_one(struct perf_sampler *s, pid_t pid, int cpu_index, bool attach)
{
	struct perf_ring *r = &s->rings[cpu_index];
	int fd;

	for (;;) {
		unsigned long flags = PERF_FLAG_FD_CLOEXEC;
		if (s->cgroup_fd >= 0)
			pid = s->cgroup_fd, flags |= PERF_FLAG_PID_CGROUP;
		fd = (int)perf_event_open(&s->attr, pid, s->cpus[cpu_index], -1, flags);
		if (fd >= 0)
			break;
		int err = errno;
		if ((err == EACCES || err == EPERM) && s->kernel && !getenv("CSAMPLER_TEST_NO_RETRY")) {
			s->kernel = false;
			sampler_init_attr(s, false);
			if (!attach)
				s->attr.disabled = 1, s->attr.enable_on_exec = 1;
			continue;
		}
		return -err;
	}
	*CS_PUSH(s->fds, s->nfds, s->cap_fds) = fd;
	if (r->fd < 0) {
		size_t len = (size_t)(s->base.opts.mmap_pages + 1) * (size_t)getpagesize();
		void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (base == MAP_FAILED) {
			int err = errno;
			return SAMPLER_SAID(cs_error(err,
					"mmap of the perf ring buffer (%u pages): %s; use a smaller -m or raise /proc/sys/kernel/perf_event_mlock_kb",
					s->base.opts.mmap_pages, strerror(err)));
		}
		r->fd = fd;
		r->cpu = s->cpus[cpu_index];
		r->base = base;
		r->data_size = (size_t)s->base.opts.mmap_pages * (size_t)getpagesize();
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0) {
		int err = errno;
		return SAMPLER_SAID(cs_error(err, "ioctl(PERF_EVENT_IOC_SET_OUTPUT): %s", strerror(err)));
	}
	return 0;
}

static int sampler_new(struct perf_sampler **out, const struct sampler_opts *opts)
{
	struct perf_sampler *s = cs_calloc(1, sizeof(*s));
	s->base.ops = &sampler_perf_ops;
	s->cgroup_fd = -1;
	int ret;

	s->base.opts = *opts;
	ret = sampler_online_cpus(s);
	if (ret) {
		free(s->cpus);
		free(s);
		return cs_error(-ret, "cannot read the list of online CPUs");
	}
	s->rings = cs_calloc(s->ncpus, sizeof(*s->rings));
	for (int i = 0; i < s->ncpus; i++)
		s->rings[i].fd = -1;
	s->kernel = true;
	/* not with frame pointers: no registers nor stack copy to read the frames against */
	if (opts->stop_copy && opts->stop_copy_cap && opts->callgraph != SAMPLER_CALLGRAPH_FP)
		s->copy = cs_malloc(opts->stop_copy_cap);
	sampler_init_attr(s, true);
	*out = s;
	return 0;
}

/* ---- --idle: the off-CPU poller ---- */

static void perf_idle_add_pid(struct perf_idle *idle, pid_t pid)
{
	for (size_t i = 0; i < idle->npids; i++)
		if (idle->pids[i] == pid)
			return;
	*CS_PUSH(idle->pids, idle->npids, idle->cap_pids) = pid;
}

/* Children of one thread ("/proc/PID/task/TID/children": space-separated pids). */
static void perf_idle_children(struct perf_idle *idle, pid_t pid, pid_t tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tid);
	if (cs_read_small_file(path, buf, sizeof(buf)) <= 0)
		return;
	for (char *p = buf, *end;; p = end) {
		long child = strtol(p, &end, 10);
		if (end == p)
			break;
		if (child > 0)
			perf_idle_add_pid(idle, (pid_t)child);
	}
}

static void perf_idle_thread_free(struct perf_sampler *s, struct perf_idle_thread *th);

/* Bring the thread list up to date: new processes from FORK records and from the children
 * files, every thread of every process; threads and processes that are gone are dropped. */
static void perf_idle_rescan(struct perf_sampler *s)
{
	struct perf_idle *idle = s->idle;
	pthread_mutex_lock(&idle->lock);
	for (size_t i = 0; i < idle->nnew_pids; i++)
		perf_idle_add_pid(idle, idle->new_pids[i]);
	idle->nnew_pids = 0;
	pthread_mutex_unlock(&idle->lock);

	for (size_t t = 0; t < idle->nthreads; t++)
		idle->threads[t].seen = false;
	for (size_t i = 0; i < idle->npids; i++) { /* npids grows as children are found */
		pid_t pid = idle->pids[i];
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		DIR *d = opendir(path);
		if (!d) {
			idle->pids[i--] = idle->pids[--idle->npids]; /* exited */
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			pid_t tid = (pid_t)atoi(de->d_name);
			struct perf_idle_thread *th = NULL;
			for (size_t t = 0; t < idle->nthreads && !th; t++)
				if (idle->threads[t].th.tid == tid && idle->threads[t].th.pid == pid)
					th = &idle->threads[t];
			if (!th) {
				struct perf_idle_thread fresh = { 0 };
				if (sampler_idle_thread_open(&fresh.th, pid, tid) < 0)
					continue; /* gone, or not permitted (-EACCES): not sampled */
				cs_grow(&idle->threads, &idle->cap_threads, idle->nthreads + 1,
					sizeof(*idle->threads));
				th = &idle->threads[idle->nthreads++];
				*th = fresh;
			}
			th->seen = true;
			perf_idle_children(idle, pid, tid);
		}
		closedir(d);
	}
	for (size_t t = 0; t < idle->nthreads; t++) {
		if (idle->threads[t].seen)
			continue;
		perf_idle_thread_free(s, &idle->threads[t]);
		idle->threads[t--] = idle->threads[--idle->nthreads];
	}
}

/* Launch mode: whether the command has exec'd (its events, enabled on exec, count time). */
static bool perf_idle_exec_seen(struct perf_sampler *s)
{
	uint64_t v;
	for (size_t i = 0; i < s->nfds; i++)
		if (read(s->fds[i], &v, sizeof(v)) == (ssize_t)sizeof(v) && v)
			return true;
	return false;
}

/* The thread's CPU time so far (the first field of schedstat), or UINT64_MAX when unknown. */
static void perf_idle_thread_free(struct perf_sampler *s, struct perf_idle_thread *th)
{
	sampler_idle_thread_close(&th->th, &s->idle->sink);
}

static void perf_idle_tick(struct perf_sampler *s, uint64_t now, uint32_t periods)
{
	struct perf_idle *idle = s->idle;
	for (size_t t = 0; t < idle->nthreads; t++)
		sampler_idle_sample(&idle->threads[t].th, &idle->sink, now, periods);
}

static void *perf_idle_main(void *arg)
{
	struct perf_sampler *s = arg;
	struct perf_idle *idle = s->idle;
	uint64_t next = cs_monotonic_ns(), last_rescan = 0;

	while (!idle->stop) {
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		if (idle->stop)
			break;
		/* Each tick stands for the periods since the previous one: a poller that slept
		 * through some (a busy machine) weighs its next samples more, not less. */
		uint64_t now = cs_monotonic_ns();
		uint32_t periods = 0;
		while (next <= now && periods < 1000000)
			next += idle->period_ns, periods++;
		if (!periods)
			continue;
		if (!idle->started) {
			if (!perf_idle_exec_seen(s))
				continue;
			idle->started = true;
			periods = 1; /* nothing before the exec counts */
		}
		idle->ticks++;
		idle->late_ticks += periods - 1;
		if (now - last_rescan >= idle->rescan_ns) {
			perf_idle_rescan(s);
			last_rescan = now;
		}
		perf_idle_tick(s, now, periods);
	}
	for (size_t t = 0; t < idle->nthreads; t++)
		sampler_idle_flush(&idle->threads[t].th, &idle->sink); /* before the last collect */
	return NULL;
}

/* Start the poller for pids (launch mode: the command, once it has exec'd). */
static int perf_idle_start(struct perf_sampler *s, const pid_t *pids, size_t npids, bool launch)
{
	struct perf_idle *idle = cs_calloc(1, sizeof(*idle));
	s->idle = idle;
	pthread_mutex_init(&idle->lock, NULL);
	idle->sink = (struct sampler_idle_sink){ .lock = &idle->lock, .events = &idle->events,
						 .lost = &idle->lost,
						 .stack_size = s->base.opts.stack_size };
	idle->period_ns = 1000000000ull / (s->base.opts.freq_hz ? s->base.opts.freq_hz : 1);
	idle->rescan_ns = idle->period_ns > PERF_IDLE_RESCAN_NS ? 0 : PERF_IDLE_RESCAN_NS;
	idle->started = !launch;
	for (size_t i = 0; i < npids; i++)
		perf_idle_add_pid(idle, pids[i]);
	int err = pthread_create(&idle->thread, NULL, perf_idle_main, s);
	if (err)
		return SAMPLER_SAID(cs_error(err, "pthread_create (the --idle poller): %s", strerror(err)));
	idle->running = true;
	return 0;
}

static void perf_idle_stop(struct perf_sampler *s)
{
	struct perf_idle *idle = s->idle;
	if (!idle || !idle->running)
		return;
	idle->stop = 1;
	pthread_join(idle->thread, NULL);
	idle->running = false;
}

static void perf_idle_free(struct perf_sampler *s)
{
	struct perf_idle *idle = s->idle;
	if (!idle)
		return;
	perf_idle_stop(s);
	for (size_t t = 0; t < idle->nthreads; t++)
		perf_idle_thread_free(s, &idle->threads[t]);
	free(idle->threads);
	free(idle->pids);
	free(idle->new_pids);
	sampler_events_free(&idle->events);
	pthread_mutex_destroy(&idle->lock);
	free(idle);
	s->idle = NULL;
}

/* collect: move the poller's samples into the batch being collected (the reader thread). */
static void perf_idle_merge(struct perf_sampler *s)
{
	struct perf_idle *idle = s->idle;
	struct sampler_events side;
	uint64_t lost;
	pthread_mutex_lock(&idle->lock);
	side = idle->events;
	memset(&idle->events, 0, sizeof(idle->events));
	lost = idle->lost;
	idle->lost = 0;
	pthread_mutex_unlock(&idle->lock);
	for (size_t i = 0; i < side.npend; i++) {
		struct sampler_pending *from = &side.pend[i];
		struct sampler_pending *pe = sampler_events_push(&s->events, SAMPLER_EV_SAMPLE);
		pe->ev = from->ev;
		if (from->off_a != SIZE_MAX)
			pe->off_a = sampler_events_keep(&s->events, side.arena.data + from->off_a,
							from->ev.sample.snap.stack_size);
	}
	if (lost) {
		struct sampler_pending *pe = sampler_events_push(&s->events, SAMPLER_EV_LOST);
		pe->ev.time = cs_monotonic_ns();
		pe->ev.lost.count = lost;
	}
	sampler_events_free(&side);
}

/* A FORK record of a new process (collect, the reader thread): the poller follows it. */
static void perf_idle_note_fork(struct perf_sampler *s, pid_t pid)
{
	struct perf_idle *idle = s->idle;
	pthread_mutex_lock(&idle->lock);
	*CS_PUSH(idle->new_pids, idle->nnew_pids, idle->cap_new_pids) = pid;
	pthread_mutex_unlock(&idle->lock);
}

static void perf_describe(struct sampler *base, char *buf, size_t len)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	struct perf_idle *idle = s->idle;
	if (!idle || !len)
		return;
	/* after sampler_disable: the poller has stopped */
	snprintf(buf, len,
		 "--idle: %llu ticks found a thread off the CPU, %llu stack copies read from /proc, %llu skipped (the thread moved while read); %llu ticks, late for %llu periods",
		 (unsigned long long)idle->sink.taken, (unsigned long long)idle->sink.copies,
		 (unsigned long long)idle->sink.missed, (unsigned long long)idle->ticks,
		 (unsigned long long)idle->late_ticks);
}

static int perf_open_launch(struct sampler **out, const struct sampler_opts *opts, pid_t child)
{
	struct perf_sampler *s;
	int ret = sampler_new(&s, opts);
	if (ret)
		return SAMPLER_SAID(ret);
	s->attr.disabled = 1;
	s->attr.enable_on_exec = 1;
	for (int c = 0; c < s->ncpus; c++) {
		ret = sampler_open_one(s, child, c, false);
		if (ret) {
			perf_close(&s->base);
			return ret;
		}
	}
	if (opts->idle && (ret = perf_idle_start(s, &child, 1, true))) {
		perf_close(&s->base);
		return ret;
	}
	*out = &s->base;
	return 0;
}

/* Open events for every thread of pid not opened yet; returns how many were new. */
static int sampler_attach_threads(struct perf_sampler *s, pid_t pid, pid_t **seen, size_t *nseen,
				  size_t *capseen)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	int added = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t)atoi(de->d_name);
		bool known = false;
		for (size_t i = 0; i < *nseen && !known; i++)
			known = (*seen)[i] == tid;
		if (known)
			continue;
		for (int c = 0; c < s->ncpus; c++) {
			int ret = sampler_open_one(s, tid, c, true);
			if (ret == -ESRCH && tid != pid)
				break; /* the thread exited meanwhile */
			if (ret) {
				closedir(d);
				return ret;
			}
		}
		cs_grow(seen, capseen, *nseen + 1, sizeof(pid_t));
		(*seen)[(*nseen)++] = tid;
		added++;
	}
	closedir(d);
	return added;
}

static int perf_open_attach(struct sampler **out, const struct sampler_opts *opts, const pid_t *pids,
			    size_t npids)
{
	struct perf_sampler *s;
	pid_t *seen = NULL;
	size_t nseen = 0, capseen = 0;
	int ret = sampler_new(&s, opts);
	if (ret)
		return SAMPLER_SAID(ret);
	s->attach_time = cs_monotonic_ns();
	for (size_t i = 0; i < npids; i++) {
		/* Rescan until no new thread shows up: threads created while we open events
		 * are either inherited or found by the next scan. */
		for (int round = 0; round < 20; round++) {
			ret = sampler_attach_threads(s, pids[i], &seen, &nseen, &capseen);
			if (ret < 0) {
				free(seen);
				perf_close(&s->base);
				return ret == -ENOENT ? -ESRCH : ret;
			}
			if (ret == 0)
				break;
		}
	}
	free(seen);
	s->synth_pids = cs_malloc(npids * sizeof(pid_t));
	memcpy(s->synth_pids, pids, npids * sizeof(pid_t));
	s->nsynth = npids;
	if (opts->idle && (ret = perf_idle_start(s, pids, npids, false))) {
		perf_close(&s->base);
		return ret;
	}
	*out = &s->base;
	return 0;
}

static int perf_pollfds(struct sampler *base, struct pollfd *fds, int max)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	int n = 0;
	/* Each sample wakes a reader polling the rings when stop_copy is set: only worth it once
	 * it copied Python frames (a program without Python pays no wake-up a sample: its
	 * reader collects on its timeout, every 5 ms) */
	if (s->copy && !s->copying)
		return 0;
	for (int c = 0; c < s->ncpus && n < max; c++)
		if (s->rings[c].fd >= 0)
			fds[n++] = (struct pollfd){ .fd = s->rings[c].fd, .events = POLLIN };
	return n;
}

/* Once it copies Python frames, each sample wakes the reader (wakeup_events 1, perf_pollfds). */
static bool perf_wakes_each_sample(const struct sampler *base)
{
	const struct perf_sampler *s = (const struct perf_sampler *)base;
	return s->copy && s->copying;
}

static bool perf_has_kernel(const struct sampler *base)
{
	const struct perf_sampler *s = (const struct perf_sampler *)base;
	return s->kernel;
}

static void perf_disable(struct sampler *base)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	perf_idle_stop(s);
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

static uint64_t perf_task_clock_ns(struct sampler *base)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	uint64_t total = 0, v;
	/* read_format is 0: each read gives the u64 count, nanoseconds for cpu-clock */
	for (size_t i = 0; s && i < s->nfds; i++)
		if (read(s->fds[i], &v, sizeof(v)) == (ssize_t)sizeof(v))
			total += v;
	return total;
}

static void perf_close(struct sampler *base)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	if (!s)
		return;
	if (s->cgroup_fd >= 0)
		close(s->cgroup_fd);
	perf_idle_free(s); /* before the fds it reads */
	for (int c = 0; c < s->ncpus; c++)
		if (s->rings[c].base)
			munmap(s->rings[c].base,
			       s->rings[c].data_size + (size_t)getpagesize());
	for (size_t i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->fds);
	free(s->rings);
	free(s->cpus);
	sampler_events_free(&s->events);
	free(s->wrapbuf);
	free(s->copy);
	free(s->synth_pids);
	free(s);
}

/* ---- parsing the ring records ---- */

/* The sample_id_all trailer of a side-band record: pid, tid, time, cpu (24 bytes). */
static void sampler_trailer(const uint8_t *rec, size_t size, struct sampler_event *ev)
{
	if (size < 8 + 24)
		return;
	const uint8_t *t = rec + size - 24;
	ev->pid = cs_rd32(t);
	ev->tid = cs_rd32(t + 4);
	ev->time = cs_rd64(t + 8);
	ev->cpu = cs_rd32(t + 16);
}

static void sampler_parse_sample(struct perf_sampler *s, const uint8_t *rec, size_t size)
{
	const uint8_t *p = rec + 8, *end = rec + size;
	struct sampler_pending *pe;
	struct sampler_event *ev;
	uint64_t nr, kern[128], user[128];
	size_t nk = 0, nu = 0;

	if (end - p < 40)
		return;
	pe = sampler_events_push(&s->events, SAMPLER_EV_SAMPLE);
	ev = &pe->ev;
	ev->type = SAMPLER_EV_SAMPLE;
	p += 8; /* ip: the callchain or the registers have it */
	ev->pid = cs_rd32(p);
	ev->tid = cs_rd32(p + 4);
	ev->time = cs_rd64(p + 8);
	ev->cpu = cs_rd32(p + 16);
	p += 32; /* tid, time, cpu, period */
	nr = cs_rd64(p);
	p += 8;
	if (nr > (uint64_t)(end - p) / 8) {
		s->events.npend--;
		return;
	}
	enum { CTX_NONE, CTX_KERNEL, CTX_USER } ctx = CTX_NONE;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = cs_rd64(p + 8 * i);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? CTX_KERNEL
			      : ip == (uint64_t)PERF_CONTEXT_USER ? CTX_USER
								  : CTX_NONE;
			continue;
		}
		if (ctx == CTX_KERNEL && nk < 128)
			kern[nk++] = ip;
		else if (ctx == CTX_USER && nu < 128)
			user[nu++] = ip;
	}
	p += 8 * nr;
	ev->sample.snap.pid = ev->pid;
	ev->sample.snap.tid = ev->tid;
	if (nk)
		pe->off_b = sampler_events_keep(&s->events, kern, nk * 8);
	ev->sample.snap.nkernel_ips = nk;
	if (s->base.opts.callgraph == SAMPLER_CALLGRAPH_FP) {
		if (nu)
			pe->off_c = sampler_events_keep(&s->events, user, nu * 8);
		ev->sample.snap.nuser_ips = nu;
		return;
	}
	if (end - p < 8)
		return;
	uint64_t abi = cs_rd64(p);
	p += 8;
	if (abi) {
		int nregs = __builtin_popcountll(SAMPLER_REGS_MASK);
		if (end - p < 8 * nregs)
			return;
		for (int bit = 0, k = 0; bit < UNWIND_NREGS; bit++)
			if (SAMPLER_REGS_MASK & (1ull << bit))
				ev->sample.snap.regs[bit] = cs_rd64(p + 8 * k++);
		ev->sample.snap.regs_mask = SAMPLER_REGS_MASK;
		p += 8 * nregs;
	}
	if (end - p < 8)
		return;
	uint64_t ssize = cs_rd64(p);
	p += 8;
	if (ssize && (uint64_t)(end - p) >= ssize + 8) {
		uint64_t dyn = cs_rd64(p + ssize);
		if (dyn > ssize)
			dyn = ssize;
		pe->off_a = sampler_events_keep(&s->events, p, dyn);
		ev->sample.snap.stack_size = dyn;
		ev->sample.stack_cap = ssize;
	}
	/* The Python frame chain (opts.stop_copy), copied now: a sample's frames change as soon
	 * as its thread runs on, and the reader gets here microseconds after the sample, the
	 * main thread (which reads them) later, when the machine is loaded much later. */
	if (s->copy) {
		size_t ncopy = s->base.opts.stop_copy(s->base.opts.stop_copy_arg, ev->pid, ev->tid,
						      ev->sample.snap.regs[UNWIND_REG_SP], NULL, 0,
						      s->copy, s->base.opts.stop_copy_cap);
		if (ncopy) {
			uint64_t now = cs_monotonic_ns();
			s->copying = true;
			pe->off_d = sampler_events_keep(&s->events, s->copy, ncopy);
			ev->sample.mem_size = ncopy;
			ev->sample.mem_age_ns = now > ev->time ? now - ev->time : 1;
		}
	}
}

/* A pending event of type from a record whose sample_id_all trailer gives its task and time. */
static struct sampler_pending *perf_push_event(struct perf_sampler *s, enum sampler_event_type type,
					       const uint8_t *rec, size_t size)
{
	struct sampler_pending *pe = sampler_events_push(&s->events, SAMPLER_EV_SAMPLE);
	pe->ev.type = type;
	sampler_trailer(rec, size, &pe->ev);
	return pe;
}

/* A record's string (at most maxlen bytes) kept NUL-terminated in the arena, at pe->off_a. */
static void perf_keep_string(struct perf_sampler *s, struct sampler_pending *pe,
			     const uint8_t *str, size_t maxlen)
{
	pe->off_a = sampler_events_keep(&s->events, str, strnlen((const char *)str, maxlen));
	cs_buf_put(&s->events.arena, "", 1);
}

static void sampler_parse(struct perf_sampler *s, const uint8_t *rec, size_t size, int cpu)
{
	const struct perf_event_header *h = (const void *)rec;
	struct sampler_pending *pe;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		sampler_parse_sample(s, rec, size);
		return;
	case PERF_RECORD_MMAP2: {
		if (size < 8 + 64 + 24)
			return;
		pe = perf_push_event(s, SAMPLER_EV_MMAP, rec, size);
		const uint8_t *p = rec + 8;
		pe->ev.mmap.start = cs_rd64(p + 8);
		pe->ev.mmap.len = cs_rd64(p + 16);
		pe->ev.mmap.pgoff = cs_rd64(p + 24);
		pe->ev.mmap.prot = cs_rd32(p + 56);
		pe->ev.mmap.flags = cs_rd32(p + 60);
		perf_keep_string(s, pe, p + 64, size - 8 - 64 - 24);
		pe->ev.pid = cs_rd32(p);
		pe->ev.tid = cs_rd32(p + 4);
		return;
	}
	case PERF_RECORD_COMM: {
		if (size < 8 + 8 + 24)
			return;
		pe = perf_push_event(s, SAMPLER_EV_COMM, rec, size);
		pe->ev.pid = cs_rd32(rec + 8);
		pe->ev.tid = cs_rd32(rec + 12);
		pe->ev.comm.exec = !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
		perf_keep_string(s, pe, rec + 16, size - 16 - 24);
		return;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (size < 8 + 24)
			return;
		pe = sampler_events_push(&s->events, SAMPLER_EV_SAMPLE);
		pe->ev.type = h->type == PERF_RECORD_FORK ? SAMPLER_EV_FORK : SAMPLER_EV_EXIT;
		pe->ev.pid = cs_rd32(rec + 8);
		pe->ev.task.ppid = cs_rd32(rec + 12);
		pe->ev.tid = cs_rd32(rec + 16);
		pe->ev.task.ptid = cs_rd32(rec + 20);
		pe->ev.time = cs_rd64(rec + 24);
		pe->ev.cpu = (uint32_t)cpu;
		if (s->idle && h->type == PERF_RECORD_FORK && pe->ev.pid != pe->ev.task.ppid)
			perf_idle_note_fork(s, (pid_t)pe->ev.pid);
		return;
	case PERF_RECORD_LOST:          /* id, then the count */
	case PERF_RECORD_LOST_SAMPLES: { /* the count */
		size_t at = h->type == PERF_RECORD_LOST ? 16 : 8;
		if (size < at + 8)
			return;
		pe = perf_push_event(s, SAMPLER_EV_LOST, rec, size);
		pe->ev.lost.count = cs_rd64(rec + at);
		return;
	}
	default:
		return; /* throttling and other records carry nothing csampler keeps */
	}
}

static void sampler_read_ring(struct perf_sampler *s, struct perf_ring *r)
{
	struct perf_event_mmap_page *meta = (void *)r->base;
	uint8_t *data = r->base + getpagesize();
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	uint64_t mask = r->data_size - 1;

	while (tail < head) {
		struct perf_event_header h;
		size_t off = tail & mask;
		if (off + sizeof(h) <= r->data_size) {
			memcpy(&h, data + off, sizeof(h));
		} else {
			size_t first = r->data_size - off;
			memcpy(&h, data + off, first);
			memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail)
			break; /* cannot happen with a sane kernel; do not spin */
		const uint8_t *rec = data + off;
		if (off + h.size > r->data_size) {
			size_t first = r->data_size - off;
			cs_grow(&s->wrapbuf, &s->wrapcap, h.size, 1);
			memcpy(s->wrapbuf, data + off, first);
			memcpy(s->wrapbuf + first, data, h.size - first);
			rec = s->wrapbuf;
		}
		sampler_parse(s, rec, h.size, r->cpu);
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void perf_synthesize(struct perf_sampler *s)
{
	for (size_t i = 0; i < s->nsynth; i++) {
		sampler_proc_comms(&s->events, s->synth_pids[i], s->attach_time);
		sampler_proc_maps(&s->events, s->synth_pids[i], s->attach_time, NULL, NULL);
	}
	s->nsynth = 0;
}

struct sampler_events *sampler_perf_fill(struct sampler *base)
{
	struct perf_sampler *s = (struct perf_sampler *)base;
	if (s->nsynth)
		perf_synthesize(s);
	/* the poller's samples first: ring records older than them are all read below */
	if (s->idle)
		perf_idle_merge(s);
	for (int c = 0; c < s->ncpus; c++)
		if (s->rings[c].base)
			sampler_read_ring(s, &s->rings[c]);
	return &s->events;
}

static struct sampler_batch *perf_collect(struct sampler *base)
{
	return sampler_events_take(sampler_perf_fill(base));
}

/* Every process (-a) or those under one cgroup: one counting event per CPU, and the state of
 * the processes that exist now for the first drain (all of them, or the cgroup's). */
static int perf_open_cpu_wide(struct perf_sampler *s, const char *cgroup)
{
	if (cgroup) {
		s->cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->cgroup_fd < 0)
			return SAMPLER_SAID(cs_error(errno, "open(%s): %s: give the cgroup's directory, e.g. /sys/fs/cgroup/system.slice/job.service",
						     cgroup, strerror(errno)));
	}
	for (int c = 0; c < s->ncpus; c++) {
		int ret = sampler_open_one(s, -1, c, true);
		if (ret)
			return ret;
	}
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid == getpid() || (cgroup && !sampler_proc_in_cgroup(pid, cgroup)))
			continue;
		*CS_PUSH(s->synth_pids, s->nsynth, s->cap_synth) = pid;
	}
	if (d)
		closedir(d);
	return 0;
}

int sampler_perf_open_sideband(struct sampler **out, const struct sampler_opts *opts, pid_t child,
			       const pid_t *pids, size_t npids)
{
	struct perf_sampler *s;
	int ret = sampler_new(&s, opts);
	if (ret)
		return SAMPLER_SAID(ret);
	s->sideband = true;
	free(s->copy); /* counting only: no samples to copy frames for */
	s->copy = NULL;
	s->cpu_wide = opts->all || opts->cgroup;
	sampler_init_attr(s, true);
	s->attach_time = cs_monotonic_ns();
	if (s->cpu_wide) {
		ret = perf_open_cpu_wide(s, opts->cgroup);
	} else if (!pids) {
		s->attr.disabled = 1;
		s->attr.enable_on_exec = 1;
		for (int c = 0; c < s->ncpus && !ret; c++)
			ret = sampler_open_one(s, child, c, false);
	} else {
		pid_t *seen = NULL;
		size_t nseen = 0, capseen = 0;
		for (size_t i = 0; i < npids && ret >= 0; i++)
			for (int round = 0; round < 20; round++)
				if ((ret = sampler_attach_threads(s, pids[i], &seen, &nseen, &capseen)) <= 0)
					break;
		free(seen);
		if (ret == -ENOENT)
			ret = -ESRCH;
		if (ret > 0)
			ret = 0;
		if (!ret) {
			s->synth_pids = cs_malloc(npids * sizeof(pid_t));
			memcpy(s->synth_pids, pids, npids * sizeof(pid_t));
			s->nsynth = npids;
		}
	}
	/* --idle: the same off-CPU poller as perf mode, its samples merged by sampler_perf_fill */
	if (!ret && opts->idle && !s->cpu_wide)
		ret = pids ? perf_idle_start(s, pids, npids, false) : perf_idle_start(s, &child, 1, true);
	if (ret) {
		perf_close(&s->base);
		return ret;
	}
	*out = &s->base;
	return 0;
}

uint64_t sampler_perf_max_rate(void)
{
	long v = cs_read_long_file("/proc/sys/kernel/perf_event_max_sample_rate", 100000);
	return v > 0 ? (uint64_t)v : 100000;
}

const struct sampler_ops sampler_perf_ops = {
	.name = "perf_event_open",
	.mode = SAMPLER_MODE_PERF,
	.max_rate = sampler_perf_max_rate,
	.open_launch = perf_open_launch,
	.open_attach = perf_open_attach,
	.explain_open_error = perf_open_error,
	.pollfds = perf_pollfds,
	.collect = perf_collect,
	.disable = perf_disable,
	.task_clock_ns = perf_task_clock_ns,
	.has_kernel = perf_has_kernel,
	.describe = perf_describe,
	.wakes_each_sample = perf_wakes_each_sample,
	.close = perf_close,
};
