/* sampler_bpf.c: the BPF sampling backend (`record --mode bpf`): loads sampler_bpf.bpf.c (a
 * libbpf skeleton built at build time), attaches it to a cpu-clock perf event per CPU and turns
 * its ring buffer's records into samples whose stacks are already walked: kernel frames from
 * bpf_get_stack, user frames walked in the kernel by unwind rows (sampler_bpf_tables.c) or frame
 * pointers. The targets are a pid map the fork tracepoint grows (launch, -p), every process (-a)
 * or one cgroup (--cgroup). MMAP2/COMM/FORK/EXIT records and the targets' CPU time come from
 * counting perf events beside it (sampler_perf_open_sideband), so the data file is the one perf
 * mode writes. Built without clang/libbpf/bpftool, the backend refuses in one line. */
#include "sampler/backend.h"
#include "sampler/sampler_bpf_shared.h"

#include "base/cs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef CSAMPLER_HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "sampler_bpf.skel.h"

/* Whether this process may load and attach the program: the kernel's bpf_capable() and
 * perfmon_capable(), i.e. CAP_BPF (39) or CAP_SYS_ADMIN, and CAP_PERFMON (38) or CAP_SYS_ADMIN,
 * in the effective set (capget: root normally has them all; a container's root may not).
 * Fills why when not. */
static bool bpf_permitted(char *why, size_t len)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	if (syscall(SYS_capget, &hdr, data) < 0)
		return snprintf(why, len, "needs CAP_BPF and CAP_PERFMON, and capget failed: %s",
				strerror(errno)), false;
	uint64_t eff = (uint64_t)data[1].effective << 32 | data[0].effective;
	bool admin = eff >> CAP_SYS_ADMIN & 1;
	bool bpf = admin || (eff >> 39 & 1), perfmon = admin || (eff >> 38 & 1);
	if (bpf && perfmon)
		return true;
	snprintf(why, len, "needs root, or CAP_BPF and CAP_PERFMON (this process has %s)",
		 bpf ? "CAP_BPF only" : perfmon ? "CAP_PERFMON only" : "neither");
	return false;
}

struct bpf_sampler {
	struct sampler base;
	struct sampler *side;     /* the side-band perf events */
	struct sampler_bpf *skel;
	struct ring_buffer *rb;
	int *evfds;               /* the cpu-clock event per CPU */
	struct bpf_link **links;
	int nev;
	struct sampler_events *events; /* the set being filled, while the ring is consumed */
	uint64_t lost_seen;       /* the stats map's lost count already reported */
	uint64_t nsamples, ring_bytes;
	uint64_t nslices;         /* samples sent with a stack slice (CSB_USER_SLICE) */
	uint64_t nslices_seen;    /* ... when bpf_catching_up last looked */
	struct bpf_tables *tables;
	struct bpf_python *python; /* Python frames read at the sample (sampler_bpf_python.c) */
	bool debug;               /* CSAMPLER_BPF_DEBUG: libbpf's log and some samples */
	uint64_t open_cpu_ns;     /* the opening thread's CPU time in bpf_open (verifier, maps,
				   * events; not the recorder's other threads meanwhile) */
	uint64_t tables_ns;       /* when bpf_tables_work last ran (cs_monotonic_ns) */
};

/* How often the tables' work runs while the ring is consumed: samples taken before their
 * files' rows are in the kernel carry stack slices, which make a consume slow (a tenth of a
 * millisecond each here, most of it first-touch page faults), and the rows are wanted from the
 * first such samples. Without this, the first consume of a `record -a` took 0.8-2.5 s of
 * slices before any rows were loaded. */
#define BPF_TABLES_EVERY_NS 2000000ull


static void bpf_close(struct sampler *base);

static int bpf_quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own lines (verifier logs) only when asked: errors are said in one line */
	if (!getenv("CSAMPLER_BPF_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static uint64_t bpf_stat_sum(struct bpf_sampler *s, enum csb_stat which)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return 0;
	uint64_t *v = cs_calloc((size_t)ncpu, sizeof(*v)), sum = 0;
	uint32_t key = which;
	if (!bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &key, v))
		for (int i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

/* One ring record: a sample whose stacks are walked. */
static int bpf_on_sample(void *ctx, void *data, size_t size)
{
	struct bpf_sampler *s = ctx;
	const struct csb_sample *r = data;
	size_t head = offsetof(struct csb_sample, user);
	const struct csb_slice_sample *sr = data;
	bool slice = (r->flags & CSB_USER_SLICE) && r->slice <= CSB_SLICE_MAX &&
		     size >= offsetof(struct csb_slice_sample, stack) + r->slice;
	if (size < head || r->nkernel > CSB_MAX_KERNEL || r->nuser > CSB_MAX_USER ||
	    size < head + r->nuser * 8ull)
		return 0;
	/* the kernel frames: a slice record's in its kernel[], the others' after the rest */
	bool slice_record = r->flags & CSB_SLICE_RECORD;
	size_t kernel_at = slice_record ? offsetof(struct csb_slice_sample, kernel)
			   : CSB_KERNEL_AT(r->nuser, r->npy, r->py_nacts);
	if (r->npy > CSB_PY_MAX || r->py_nacts > CSB_PY_MAX_ACTS ||
	    size < kernel_at + r->nkernel * 8ull)
		return 0;
	struct sampler_pending *pe = sampler_events_push(s->events, SAMPLER_EV_SAMPLE);
	struct sampler_event *ev = &pe->ev;
	ev->time = r->time;
	ev->pid = ev->sample.snap.pid = r->pid;
	ev->tid = ev->sample.snap.tid = r->tid;
	ev->cpu = r->cpu;
	ev->sample.weight = 1;
	if (r->nkernel)
		pe->off_b = sampler_events_keep(s->events, (const uint8_t *)data + kernel_at,
						r->nkernel * 8ull);
	ev->sample.snap.nkernel_ips = r->nkernel;
	if (slice) {
		/* the kernel's walk failed where it had no rows: user space unwinds this one from
		 * the leaf registers and the stack slice (DWARF, JIT-frame recovery) */
		ev->sample.snap.regs[UNWIND_REG_IP] = r->ip;
		ev->sample.snap.regs[UNWIND_REG_SP] = r->sp;
		ev->sample.snap.regs[UNWIND_REG_BP] = r->bp;
		ev->sample.snap.regs_mask = 1ull << UNWIND_REG_IP | 1ull << UNWIND_REG_SP | 1ull << UNWIND_REG_BP;
		pe->off_a = sampler_events_keep(s->events, sr->stack, r->slice);
		ev->sample.snap.stack_size = r->slice;
		ev->sample.stack_cap = r->slice;
		s->nslices++;
	} else {
		if (r->nuser)
			pe->off_c = sampler_events_keep(s->events, r->user, r->nuser * 8ull);
		ev->sample.snap.nuser_ips = r->nuser;
		ev->sample.user_fp_mask[0] = r->fp_mask[0];
		ev->sample.user_fp_mask[1] = r->fp_mask[1];
		if (r->flags & CSB_USER_ERROR)
			ev->sample.unwind_flags |= UNWIND_ERROR;
	}
	bpf_python_sample(s->python, s->events, pe, r, size);
	if (r->flags & (CSB_USER_NO_TABLE | CSB_USER_SLICE | CSB_USER_ERROR))
		bpf_tables_hit(s->tables, r->pid, (const uint64_t *)r->user, r->nuser);
	if (slice)
		bpf_tables_hit_slice(s->tables, r->pid, (const uint64_t *)(const void *)sr->stack,
				     r->slice / 8);
	s->nsamples++;
	s->ring_bytes += size;
	if (!(s->nsamples & 15)) {
		uint64_t now = cs_monotonic_ns();
		if (now - s->tables_ns >= BPF_TABLES_EVERY_NS) {
			s->tables_ns = now;
			bpf_tables_work(s->tables);
		}
	}
	if (s->debug && s->nsamples % 500 == 1)
		fprintf(stderr, "csampler: bpf debug: sample pid %u tid %u flags %#x, %u kernel and %u user frames, user leaf %#llx\n",
			r->pid, r->tid, r->flags, r->nkernel, r->nuser,
			r->nuser ? (unsigned long long)r->user[0] : 0ull);
	return 0;
}

static int bpf_open_events(struct bpf_sampler *s)
{
	char buf[1024];
	int cpus[1024], ncpus = 0;
	ssize_t n = cs_read_small_file("/sys/devices/system/cpu/online", buf, sizeof(buf));
	for (char *p = buf; n > 0 && *p && *p != '\n';) {
		long a = strtol(p, &p, 10), b = a;
		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (long c = a; c <= b && ncpus < 1024; c++)
			cpus[ncpus++] = (int)c;
		if (*p != ',')
			break;
		p++;
	}
	if (!ncpus)
		return SAMPLER_SAID(cs_error(ENODEV, "cannot read the online CPUs from /sys/devices/system/cpu/online"));
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* a fixed period: every sample stands for the same CPU time (weight 1) */
		.sample_period = 1000000000ull / s->base.opts.freq_hz,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};
	s->evfds = cs_calloc((size_t)ncpus, sizeof(int));
	s->links = cs_calloc((size_t)ncpus, sizeof(*s->links));
	for (int i = 0; i < ncpus; i++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return -errno;
		s->evfds[s->nev] = fd;
		s->links[s->nev++] = bpf_program__attach_perf_event(s->skel->progs.csb_sample, fd);
		if (!s->links[s->nev - 1]) {
			int err = errno;
			s->links[s->nev - 1] = NULL;
			return -err;
		}
	}
	return 0;
}

/* The cgroup's id (its directory's inode on cgroup v2) and depth below the hierarchy's root. */
static int bpf_cgroup_id(const char *path, uint64_t *id, uint32_t *level)
{
	char real[4096], root[1024];
	struct stat st;
	if (sampler_cgroup2_root(root, sizeof(root)))
		return SAMPLER_SAID(cs_error(ENOENT, "--cgroup %s: no cgroup v2 hierarchy is mounted (/proc/self/mountinfo has no cgroup2)", path));
	size_t n = strlen(root);
	if (!realpath(path, real) || stat(real, &st) < 0)
		return SAMPLER_SAID(cs_error(errno, "--cgroup %s: %s: give a cgroup v2 directory under %s",
					     path, strerror(errno), root));
	if (strncmp(real, root, n) || (real[n] && real[n] != '/') || !S_ISDIR(st.st_mode))
		return SAMPLER_SAID(cs_error(EINVAL, "--cgroup %s: not a cgroup v2 directory under %s", path, root));
	*id = st.st_ino;
	*level = 0;
	for (const char *p = real + n; *p; p++)
		*level += *p == '/';
	return 0;
}

/* The side band's process events keep the unwind tables in step, before the ring's samples
 * are read: a process' mappings are known when its first samples want rows. */
static int bpf_track_tables(void *arg, const struct sampler_event *ev)
{
	struct bpf_sampler *s = arg;
	bpf_tables_event(s->tables, ev);
	return 0;
}

/* The rings' sizes: one ring for every CPU's samples, pages a CPU, from 1 MiB to 256 MiB (1 GiB
 * when -m asks), a power of two. The ring is the program's working set: its writes go to
 * memory it has not touched since the last lap, so a smaller ring costs less a sample (on
 * this VM, deepwork over 8 processes at 999 Hz, the ring write took 1.78 us a sample with
 * 16 MiB and 4 MiB, 1.15 with 2 MiB, 0.76 with 1 MiB). So the samples' ring has
 * BPF_SAMPLE_PAGES a CPU (-m: as many as asked), and the samples sent with a stack slice
 * (33 KiB each, in bursts before a file's rows are loaded) a ring of their own, of
 * SAMPLER_DEFAULT_PAGES a CPU: when one ring of 256 pages a CPU took both, 2 of 5 cold-cache
 * `record -a` runs lost 21 and 57 samples (16 MiB: none), even with the reader collecting
 * every 5 ms while slices come (bpf_catching_up). */
#define BPF_SAMPLE_PAGES 256

static uint64_t bpf_ring_bytes(uint64_t pages, bool given)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t want = pages * (uint64_t)getpagesize() * (uint64_t)(ncpus > 0 ? ncpus : 1);
	uint64_t max = given ? 1ull << 30 : 256ull << 20, ring = 1ull << 20;
	while (ring < want && ring < max)
		ring <<= 1;
	return ring;
}

static int bpf_open(struct sampler **out, const struct sampler_opts *opts, pid_t child,
		    const pid_t *pids, size_t npids)
{
	char why[160];
	if (!bpf_permitted(why, sizeof(why)))
		return -EPERM;
	struct bpf_sampler *s = cs_calloc(1, sizeof(*s));
	s->open_cpu_ns = cs_thread_cpu_ns();
	s->base.ops = &sampler_bpf_ops;
	s->base.opts = *opts;
	s->debug = getenv("CSAMPLER_BPF_DEBUG") != NULL;
	int ret = 0;
	libbpf_set_print(bpf_quiet_print);
	/* CSAMPLER_BPF_BTF: another file of the kernel's types than /sys/kernel/btf/vmlinux (a
	 * kernel built without it, with one from BTFHub) */
	const char *btf = getenv("CSAMPLER_BPF_BTF");
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf && *btf ? btf : NULL);
	s->skel = sampler_bpf__open_opts(&oo);
	if (!s->skel) {
		ret = -errno;
		goto fail;
	}
	s->skel->rodata->self_pid = (uint32_t)getpid();
	if (!pids && !opts->all && !opts->cgroup)
		s->skel->rodata->launch_pid = (uint32_t)child; /* a target from its exec on */
	s->skel->rodata->slice_bytes = opts->stack_size < CSB_SLICE_MAX ? opts->stack_size : CSB_SLICE_MAX;
	bool given = opts->mmap_pages_given && opts->mmap_pages;
	uint64_t ring = bpf_ring_bytes(given ? opts->mmap_pages : BPF_SAMPLE_PAGES, given);
	uint64_t slice_ring = bpf_ring_bytes(SAMPLER_DEFAULT_PAGES, false);
	if ((ret = bpf_map__set_max_entries(s->skel->maps.samples, (uint32_t)ring)) ||
	    (ret = bpf_map__set_max_entries(s->skel->maps.slices, (uint32_t)slice_ring)))
		goto fail;
	int ncpus = libbpf_num_possible_cpus();
	if (ncpus > 0 && (ret = bpf_map__set_max_entries(s->skel->maps.row_memo,
							 (uint32_t)ncpus * CSB_ROW_MEMO_SLOTS)))
		goto fail;
	s->skel->rodata->row_memo_cpus = ncpus > 0 ? (uint32_t)ncpus : 1;
	s->skel->rodata->wake_bytes = ring / 4;
	s->skel->rodata->slice_wake_bytes = slice_ring / 4;
	s->skel->rodata->filter_mode = opts->all ? CSB_FILTER_ALL : opts->cgroup ? CSB_FILTER_CGROUP : CSB_FILTER_PIDS;
	if (opts->cgroup) {
		uint64_t id;
		uint32_t level;
		if ((ret = bpf_cgroup_id(opts->cgroup, &id, &level)))
			goto fail;
		s->skel->rodata->filter_cgroup_id = id;
		s->skel->rodata->filter_cgroup_level = level;
	}
	if (s->debug)
		bpf_program__set_log_level(s->skel->progs.csb_sample, 4); /* the verifier's stats */
	/* libbpf says ESRCH when it finds no usable kernel BTF: ENODATA here, so that ESRCH
	 * keeps meaning a target that is gone */
	if ((ret = sampler_bpf__load(s->skel))) {
		ret = ret == -ESRCH ? -ENODATA : ret;
		goto fail;
	}
	uint8_t one = 1;
	int tfd = bpf_map__fd(s->skel->maps.targets);
	for (size_t i = 0; i < npids; i++)
		bpf_map_update_elem(tfd, &pids[i], &one, BPF_ANY);
	if (!bpf_program__attach(s->skel->progs.csb_fork) || !bpf_program__attach(s->skel->progs.csb_exec)) {
		ret = -errno;
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), bpf_on_sample, s, NULL);
	if (!s->rb) {
		ret = -errno;
		goto fail;
	}
	if ((ret = ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.slices), bpf_on_sample, s)))
		goto fail;
	if ((ret = bpf_tables_new(&s->tables, s->skel->maps.rows, s->skel->maps.procs)) ||
	    (ret = bpf_python_new(&s->python, s->skel->maps.pyprocs, opts)))
		goto fail;
	/* the side band before the samples: a process' mappings are known before its first */
	if ((ret = sampler_perf_open_sideband(&s->side, opts, child, pids, npids)))
		goto fail;
	/* attached: the processes there are now (the side band's first fill reads them from
	 * /proc) and their files' cached rows, in the kernel before the first sample */
	if (!child) {
		sampler_events_each(sampler_perf_fill(s->side), bpf_track_tables, s);
		bpf_tables_preload(s->tables, true);
	}
	if ((ret = bpf_open_events(s)))
		goto fail;
	s->open_cpu_ns = cs_thread_cpu_ns() - s->open_cpu_ns;
	*out = &s->base;
	return 0;
fail:
	bpf_close(&s->base);
	return ret ? ret : -EINVAL;
}

static int bpf_open_launch(struct sampler **out, const struct sampler_opts *opts, pid_t child)
{
	return bpf_open(out, opts, child, NULL, 0);
}

static int bpf_open_attach(struct sampler **out, const struct sampler_opts *opts, const pid_t *pids,
			   size_t npids)
{
	return bpf_open(out, opts, 0, pids, npids);
}

static int bpf_pollfds(struct sampler *base, struct pollfd *fds, int max)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	if (max < 1)
		return 0;
	int n = 0;
	fds[n++] = (struct pollfd){ .fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN };
	if (bpf_tables_pollfd(s->tables) >= 0 && max > n)
		fds[n++] = (struct pollfd){ .fd = bpf_tables_pollfd(s->tables), .events = POLLIN };
	return n + s->side->ops->pollfds(s->side, fds + n, max - n);
}

/* Whether threads of pid other than its leader still run (a leader may exit before them). */
static bool bpf_threads_left(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	bool left = false;
	while (d && !left && (de = readdir(d)))
		left = de->d_name[0] >= '1' && de->d_name[0] <= '9' && atoi(de->d_name) != pid;
	if (d)
		closedir(d);
	return left;
}

/* A batch's process events, in order with its samples: the Python reader's state, and a
 * target that exited leaves the targets map (its pid may be reused by an unrelated process). */
static int bpf_track(void *arg, const struct sampler_event *ev)
{
	struct bpf_sampler *s = arg;
	bpf_python_event(s->python, ev);
	if (ev->type == SAMPLER_EV_EXIT && ev->pid == ev->tid && !bpf_threads_left(ev->pid))
		bpf_map_delete_elem(bpf_map__fd(s->skel->maps.targets), &ev->pid);
	return 0;
}

static struct sampler_batch *bpf_collect(struct sampler *base)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	s->events = sampler_perf_fill(s->side);
	sampler_events_each(s->events, bpf_track_tables, s);
	bpf_tables_preload(s->tables, false);
	ring_buffer__consume(s->rb);
	uint64_t lost = bpf_stat_sum(s, CSB_STAT_LOST);
	if (lost > s->lost_seen) {
		struct sampler_pending *pe = sampler_events_push(s->events, SAMPLER_EV_LOST);
		pe->ev.time = cs_monotonic_ns();
		pe->ev.lost.count = lost - s->lost_seen;
		s->lost_seen = lost;
	}
	struct sampler_batch *b = sampler_events_take(s->events);
	s->events = NULL;
	if (b)
		sampler_batch_deliver(b, bpf_track, s);
	/* rows wanted by this batch's samples go to the builder thread; those it built are loaded */
	bpf_tables_work(s->tables);
	bpf_python_work(s->python);
	return b;
}

static void bpf_disable(struct sampler *base)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	for (int i = 0; i < s->nev; i++)
		ioctl(s->evfds[i], PERF_EVENT_IOC_DISABLE, 0);
	s->side->ops->disable(s->side);
}

static uint64_t bpf_task_clock_ns(struct sampler *base)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	return s->side->ops->task_clock_ns(s->side);
}

static bool bpf_has_kernel(const struct sampler *base)
{
	return true;
}

/* The Python part of the summary: the program's time per sample with and without Python
 * frames read, and the samples whose frames it read. */
static void bpf_describe_python(struct bpf_sampler *s, char *buf, size_t len)
{
	char py[256];
	size_t n = strlen(buf);
	uint64_t walked = bpf_stat_sum(s, CSB_STAT_SAMPLES), ns = bpf_stat_sum(s, CSB_STAT_NS);
	uint64_t pyn = bpf_stat_sum(s, CSB_STAT_PY), pyns = bpf_stat_sum(s, CSB_STAT_PY_NS);
	bpf_python_describe(s->python, py, sizeof(py));
	if (!pyn || !py[0] || n >= len)
		return;
	snprintf(buf + n, len - n, "%s; program time %.1f us a sample with Python frames (%llu), %.1f us without (%llu)",
		 py, (double)pyns / 1e3 / (double)pyn, (unsigned long long)pyn,
		 walked > pyn ? (double)(ns - pyns) / 1e3 / (double)(walked - pyn) : 0.0,
		 (unsigned long long)(walked - pyn));
}

/* Samples with stack slices came since the last look: their files' rows are being built. */
static bool bpf_catching_up(struct sampler *base)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	bool soon = s->nslices != s->nslices_seen;
	s->nslices_seen = s->nslices;
	return soon;
}

static void bpf_describe(struct sampler *base, char *buf, size_t len)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	struct bpf_prog_info info = { 0 };
	uint32_t ilen = sizeof(info);
	char tables[256];
	bpf_tables_describe(s->tables, tables, sizeof(tables));
	uint64_t walked = bpf_stat_sum(s, CSB_STAT_SAMPLES), ns = bpf_stat_sum(s, CSB_STAT_NS);
	int n = snprintf(buf, len, "bpf: %llu samples walked in the kernel (%.1f us each, %.0f ring bytes), %llu of them completed from a stack slice in user space, %llu lost; start-up %.0f ms of CPU (verifier, maps, events); %s",
			 (unsigned long long)s->nsamples, walked ? (double)ns / 1e3 / (double)walked : 0.0,
			 s->nsamples ? (double)s->ring_bytes / (double)s->nsamples : 0.0,
			 (unsigned long long)s->nslices,
			 (unsigned long long)bpf_stat_sum(s, CSB_STAT_LOST), (double)s->open_cpu_ns / 1e6, tables);
	if (n < 0 || (size_t)n >= len)
		return;
	if (bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.csb_sample), &info, &ilen) == 0 &&
	    info.run_cnt)
		snprintf(buf + n, len - (size_t)n, "; program run time %.2f us per run over %llu runs",
			 (double)info.run_time_ns / 1e3 / (double)info.run_cnt,
			 (unsigned long long)info.run_cnt);
	else
		snprintf(buf + n, len - (size_t)n, "; program run time not measured ('sysctl kernel.bpf_stats_enabled=1' measures it)");
	bpf_describe_python(s, buf, len);
}

static void bpf_close(struct sampler *base)
{
	struct bpf_sampler *s = (struct bpf_sampler *)base;
	if (!s)
		return;
	for (int i = 0; i < s->nev; i++) {
		bpf_link__destroy(s->links[i]);
		close(s->evfds[i]);
	}
	free(s->links);
	free(s->evfds);
	ring_buffer__free(s->rb);
	bpf_tables_free(s->tables);
	bpf_python_free(s->python);
	sampler_bpf__destroy(s->skel);
	if (s->side)
		s->side->ops->close(s->side);
	free(s);
}

/* The cause of a failed bpf_open, from its error and what is missing here: ENODATA when
 * libbpf finds no kernel BTF (its ESRCH, renamed by bpf_open), the verifier EINVAL/E2BIG/EACCES, the memory cgroup or
 * RLIMIT_MEMLOCK (before 5.11) ENOMEM/EPERM, a full map or log ENOSPC. */
static void bpf_open_cause(int err, char *buf, size_t len)
{
	const char *btf = getenv("CSAMPLER_BPF_BTF");
	struct rlimit ml;
	char msg[128];
	if (!btf || !*btf)
		btf = "/sys/kernel/btf/vmlinux";
	if (!bpf_permitted(buf, len))
		return;
	if (access(btf, R_OK))
		snprintf(buf, len, "no kernel BTF: %s: %s (a kernel built with CONFIG_DEBUG_INFO_BTF, or CSAMPLER_BPF_BTF=FILE)",
			 btf, strerror(errno));
	else if (err == ENODATA)
		snprintf(buf, len, "libbpf found no usable kernel BTF in %s (CSAMPLER_BPF_BTF=FILE names another)", btf);
	else if (err == ESRCH)
		snprintf(buf, len, "a target is gone (no such process)");
	else if ((err == ENOMEM || err == EPERM) && !getrlimit(RLIMIT_MEMLOCK, &ml) &&
		 ml.rlim_cur != RLIM_INFINITY && ml.rlim_cur < (64u << 20))
		snprintf(buf, len, "%s: locked memory, 'ulimit -l' is %llu KiB (raise it, or the memory cgroup's limit)",
			 strerror(err), (unsigned long long)ml.rlim_cur / 1024);
	else if (err == EPERM || err == EACCES)
		snprintf(buf, len, "%s: loading or attaching the program is refused (lockdown, seccomp, or the verifier; CSAMPLER_BPF_DEBUG=1 prints libbpf's log)",
			 strerror(err));
	else if (err == ENOSPC)
		snprintf(buf, len, "%s: a map or the verifier's log did not fit (CSAMPLER_BPF_DEBUG=1 prints libbpf's log)",
			 strerror(err));
	else if (err >= __LIBBPF_ERRNO__START && !libbpf_strerror(err, msg, sizeof(msg)))
		snprintf(buf, len, "libbpf: %s (with %s; CSAMPLER_BPF_DEBUG=1 prints libbpf's log)", msg, btf);
	else
		snprintf(buf, len, "%s: the kernel refused the program (CSAMPLER_BPF_DEBUG=1 prints the verifier's log)",
			 strerror(err));
}

static int bpf_open_error(int err, pid_t pid, bool attach)
{
	char why[256];
	if (!bpf_permitted(why, sizeof(why)))
		return cs_error(err, "bpf: the BPF backend %s: run as root or give csampler CAP_BPF and CAP_PERFMON, or use --mode perf", why);
	if (err == ESRCH)
		return cs_error(err, "bpf: no such process %d: check the PID with ps", (int)pid);
	bpf_open_cause(err, why, sizeof(why));
	return cs_error(err, "bpf: loading the BPF program: %s; or use --mode perf", why);
}

bool sampler_bpf_refused(const struct sampler_opts *opts, char *why, size_t len)
{
	return !bpf_permitted(why, len);
}

#else /* !CSAMPLER_HAVE_BPF */

static int bpf_open_launch(struct sampler **out, const struct sampler_opts *opts, pid_t child)
{
	return -ENOPKG;
}

static int bpf_open_attach(struct sampler **out, const struct sampler_opts *opts, const pid_t *pids,
			   size_t npids)
{
	return -ENOPKG;
}

static int bpf_open_error(int err, pid_t pid, bool attach)
{
	return cs_error(err, "bpf: this csampler was built without the BPF backend (missing at build time: %s): install clang libbpf-dev bpftool and rebuild, or use --mode perf",
			CSAMPLER_BPF_MISSING);
}

bool sampler_bpf_refused(const struct sampler_opts *opts, char *why, size_t len)
{
	snprintf(why, len, "built without it (missing at build time: %s)", CSAMPLER_BPF_MISSING);
	return true;
}

static void bpf_open_cause(int err, char *buf, size_t len)
{
	snprintf(buf, len, "built without it");
}

static void bpf_nothing(struct sampler *base)
{
}

static int bpf_no_pollfds(struct sampler *base, struct pollfd *fds, int max)
{
	return 0;
}

static struct sampler_batch *bpf_no_collect(struct sampler *base)
{
	return NULL;
}

static uint64_t bpf_no_clock(struct sampler *base)
{
	return 0;
}

static bool bpf_has_kernel(const struct sampler *base)
{
	return false;
}

#define bpf_pollfds bpf_no_pollfds
#define bpf_collect bpf_no_collect
#define bpf_disable bpf_nothing
#define bpf_task_clock_ns bpf_no_clock
#define bpf_describe NULL
#define bpf_catching_up NULL
#define bpf_close bpf_nothing

#endif

/* What the options ask for that bpf cannot give, so that auto takes perf events: the kernel
 * walks the stacks, so there are no stack copies to keep and no perf frame-pointer callchain. */
const char *sampler_bpf_unsuited(const struct sampler_opts *opts)
{
	if (opts->keep_raw)
		return "--keep-raw keeps stack copies, and bpf takes none (the kernel walks the stacks)";
	if (opts->callgraph == SAMPLER_CALLGRAPH_FP)
		return "-g fp asks for perf events' frame-pointer callchains (bpf walks the stacks itself)";
	return NULL;
}

const struct sampler_ops sampler_bpf_ops = {
	.name = "bpf",
	.mode = SAMPLER_MODE_BPF,
	.unsuited = sampler_bpf_unsuited,
	.refused = sampler_bpf_refused,
	.auto_falls_back = true,
	.open_cause = bpf_open_cause,
	.max_rate = sampler_perf_max_rate,
	.callgraph = "bpf",
	.python_at_sample = true,
	.open_launch = bpf_open_launch,
	.open_attach = bpf_open_attach,
	.explain_open_error = bpf_open_error,
	.pollfds = bpf_pollfds,
	.collect = bpf_collect,
	.disable = bpf_disable,
	.task_clock_ns = bpf_task_clock_ns,
	.has_kernel = bpf_has_kernel,
	.describe = bpf_describe,
	.catching_up = bpf_catching_up,
	.close = bpf_close,
};
