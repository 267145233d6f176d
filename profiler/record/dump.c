/* dump.c: `csampler dump`'s snapshot (dump.h): targets, parallel readers, then unwinding and
 * naming in the calling thread. */
#include "record/dump.h"

#include "base/cs.h"
#include "format/datafile.h"
#include "inject/protocol.h"
#include "record/gpu_attach.h"
#include "record/gpu_channel.h"
#include "sampler/snapshot.h"
#include "unwind/python.h"
#include "unwind/symbols.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define DUMP_MAX_LOCS 512
#define DUMP_NAME_MAX 1024

extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* A launch stack read from the library's table of stacks (protocol.h). */
struct dump_launch_stack {
	uint64_t pcs[GPU_MAX_FRAMES];
	struct gpu_py_frame py[GPU_MAX_PY_FRAMES];
	uint16_t npcs, npy;
	bool overwritten;                  /* the thread's table was reset since the launch */
};

/* What a reader hands over for one process. */
struct dump_raw {
	pid_t pid;
	struct sampler_process_snap snap;
	/* GPU */
	enum dump_gpu_state gpu;
	char *gpu_note;
	struct gpu_inflight_table *table;  /* copied while stopped, or NULL */
	char (*names)[DUMP_NAME_MAX];      /* kernel names of the launched slots, by slot */
	struct dump_launch_stack *stacks;  /* their launch stacks, by slot */
};

struct dump_ctx {
	const struct dump_opts *o;
	pid_t *pids;
	size_t npids;
	struct dump_raw *raw;
	atomic_size_t next;
};

/* ---- targets ---- */

static pid_t dump_ppid(pid_t pid)
{
	return (pid_t)cs_proc_status_number(pid, "PPid");
}

static void dump_add_pid(struct dump_ctx *c, size_t *cap, pid_t pid)
{
	for (size_t i = 0; i < c->npids; i++)
		if (c->pids[i] == pid)
			return;
	cs_grow(&c->pids, cap, c->npids + 1, sizeof(pid_t));
	c->pids[c->npids++] = pid;
}

/* Every descendant of the targets so far: one pass over /proc for the parent of each process,
 * then the closure. */
static void dump_add_children(struct dump_ctx *c, size_t *cap)
{
	DIR *d = opendir("/proc");
	if (!d)
		return;
	pid_t *all = NULL, *parent = NULL;
	size_t n = 0, acap = 0, pcap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		cs_grow(&all, &acap, n + 1, sizeof(pid_t));
		cs_grow(&parent, &pcap, n + 1, sizeof(pid_t));
		all[n] = pid;
		parent[n++] = dump_ppid(pid);
	}
	closedir(d);
	for (size_t done = 0; done < c->npids; done++)
		for (size_t i = 0; i < n; i++)
			if (parent[i] == c->pids[done])
				dump_add_pid(c, cap, all[i]);
	free(all);
	free(parent);
}

/* Every process of a cgroup (v2) and of the cgroups below it. */
static int dump_add_cgroup(struct dump_ctx *c, size_t *cap, const char *dir, int depth)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int pid;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid > 0)
			dump_add_pid(c, cap, (pid_t)pid);
	fclose(f);
	DIR *d = depth < 32 ? opendir(dir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		dump_add_cgroup(c, cap, path, depth + 1);
	}
	if (d)
		closedir(d);
	return 0;
}

static int64_t dump_rank(pid_t pid)
{
	static const char *const vars[] = { "RANK=", "LOCAL_RANK=", "OMPI_COMM_WORLD_RANK=" };
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	int64_t found[3] = { -1, -1, -1 };
	while (getdelim(&line, &cap, 0, f) > 0)
		for (int v = 0; v < 3; v++)
			if (!strncmp(line, vars[v], strlen(vars[v]))) {
				uint64_t x;
				if (!cs_parse_u64(line + strlen(vars[v]), &x))
					found[v] = (int64_t)x;
			}
	free(line);
	fclose(f);
	for (int v = 0; v < 3; v++)
		if (found[v] >= 0)
			return found[v];
	return -1;
}

/* ---- GPU: the in-flight table (inject/protocol.h) ---- */

static int dump_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

static int dump_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

struct dump_gpu_read {
	struct dump_raw *raw;
	uint64_t addr;
};

/* Before the stop: find the table, ask for a flush, wait for the answer. Returns the table's
 * address, or 0 (raw->gpu says why). */
static uint64_t dump_gpu_prepare(const struct dump_opts *o, struct dump_raw *raw)
{
	uint64_t addr = 0, size = 0;
	int ret = gpu_attach_lib_symbol(raw->pid, GPU_INFLIGHT_SYM, &addr, &size);
	if (ret == -ENOENT || ret == -ESRCH)
		return 0;                          /* no library (or no process): nothing to say */
	struct gpu_inflight_table head;
	size_t head_len = offsetof(struct gpu_inflight_table, slots);
	if (!ret && size && size < sizeof(struct gpu_inflight_table))
		ret = -EPROTO;
	if (!ret)
		ret = dump_mem_read(raw->pid, addr, &head, head_len);
	if (ret) {
		raw->gpu = DUMP_GPU_ERROR;
		raw->gpu_note = cs_asprintf("the GPU library's in-flight table could not be read (%s)",
					    ret == -EPROTO ? "another csampler version" : strerror(-ret));
		return 0;
	}
	if (memcmp(head.magic, GPU_INFLIGHT_MAGIC, sizeof(head.magic)) || !head.active) {
		raw->gpu = DUMP_GPU_IDLE;          /* loaded, not capturing (no cuInit yet) */
		return 0;
	}
	if (head.version != GPU_PROTOCOL_VERSION || head.nslots != GPU_INFLIGHT_SLOTS ||
	    head.slot_size != sizeof(struct gpu_inflight_slot)) {
		raw->gpu = DUMP_GPU_ERROR;
		raw->gpu_note = cs_strdup("the GPU library is of another csampler version: its in-flight table is not read");
		return 0;
	}
	raw->gpu = DUMP_GPU_READ;
	uint32_t want = head.flush_request + 1;
	uint64_t req_at = addr + offsetof(struct gpu_inflight_table, flush_request);
	uint64_t done_at = addr + offsetof(struct gpu_inflight_table, flush_done);
	if (dump_mem_write(raw->pid, req_at, &want, sizeof(want)) == 0) {
		uint64_t give_up = cs_monotonic_ns() + o->gpu_flush_timeout_ns;
		uint32_t done = 0;
		while (!dump_mem_read(raw->pid, done_at, &done, sizeof(done)) && done != want &&
		       cs_monotonic_ns() < give_up) {
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
		}
		if (done != want)
			raw->gpu_note = cs_asprintf("the GPU library did not answer the flush request within %llu ms (its writer thread is blocked?): kernels listed may have finished",
						    (unsigned long long)(o->gpu_flush_timeout_ns / 1000000));
	} else {
		raw->gpu_note = cs_strdup("the flush request could not be written: kernels listed may have finished");
	}
	return addr;
}

/* While the process is stopped: the table and the names of its launched kernels. */
static void dump_gpu_read_stopped(void *arg, pid_t pid)
{
	struct dump_gpu_read *g = arg;
	struct dump_raw *raw = g->raw;
	if (!g->addr)
		return;
	raw->table = cs_malloc(sizeof(*raw->table));
	int ret = dump_mem_read(pid, g->addr, raw->table, sizeof(*raw->table));
	if (ret) {
		free(raw->table);
		raw->table = NULL;
		raw->gpu = DUMP_GPU_ERROR;
		free(raw->gpu_note);
		raw->gpu_note = cs_asprintf("the GPU library's in-flight table could not be read (%s)",
					    strerror(-ret));
		return;
	}
	raw->names = cs_calloc(GPU_INFLIGHT_SLOTS, sizeof(*raw->names));
	raw->stacks = cs_calloc(GPU_INFLIGHT_SLOTS, sizeof(*raw->stacks));
	for (size_t i = 0; i < GPU_INFLIGHT_SLOTS; i++) {
		const struct gpu_inflight_slot *sl = &raw->table->slots[i];
		if (sl->state != GPU_INFLIGHT_LAUNCHED || (sl->seq & 1))
			continue;
		/* the launch stack, where the launching thread's table keeps it, unless that
		 * table was reset since (its generation moved) */
		struct dump_launch_stack *ls = &raw->stacks[i];
		uint32_t gen = 0;
		size_t npcs = sl->nframes < GPU_MAX_FRAMES ? sl->nframes : GPU_MAX_FRAMES;
		size_t npy = sl->npy < GPU_MAX_PY_FRAMES ? sl->npy : GPU_MAX_PY_FRAMES;
		if (sl->frames && (npcs || npy) &&
		    !dump_mem_read(pid, sl->generation_at, &gen, sizeof(gen))) {
			if (gen != sl->generation ||
			    dump_mem_read(pid, sl->frames, ls->pcs, npcs * 8) ||
			    (npy && dump_mem_read(pid, sl->frames + (uint64_t)sl->nframes * 8, ls->py,
						  npy * sizeof(struct gpu_py_frame)))) {
				ls->overwritten = true;
			} else {
				ls->npcs = (uint16_t)npcs;
				ls->npy = (uint16_t)npy;
			}
		}
		if (!sl->name)
			continue;
		/* a page at a time: the name may end just before an unmapped page */
		char *buf = raw->names[i];
		size_t got = 0;
		while (got < DUMP_NAME_MAX - 1) {
			uint64_t at = sl->name + got;
			size_t chunk = 4096 - (at & 4095);
			if (chunk > DUMP_NAME_MAX - 1 - got)
				chunk = DUMP_NAME_MAX - 1 - got;
			if (dump_mem_read(pid, at, buf + got, chunk))
				break;
			if (memchr(buf + got, 0, chunk))
				break;
			got += chunk;
		}
		buf[DUMP_NAME_MAX - 1] = 0;
	}
}

/* ---- the readers ---- */

static void *dump_reader(void *arg)
{
	struct dump_ctx *c = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&c->next, 1);
		if (i >= c->npids)
			return NULL;
		struct dump_raw *raw = &c->raw[i];
		raw->pid = c->pids[i];
		struct dump_gpu_read g = { raw, 0 };
		if (!c->o->no_gpu)
			g.addr = dump_gpu_prepare(c->o, raw);
		sampler_snapshot_process(raw->pid, c->o->stack_size, c->o->stop_timeout_ns,
					 dump_gpu_read_stopped, &g, &raw->snap);
	}
}

/* ---- unwinding and naming (the calling thread) ---- */

static char *dump_demangle(const char *name)
{
	int status = 0;
	char *d = name[0] == '_' && name[1] == 'Z' ? __cxa_demangle(name, NULL, NULL, &status) : NULL;
	if (d && !status)
		return d;
	free(d);
	return cs_strdup(name);
}

/* locs[0, n) into named frames (inline chains expanded), leaf first. caller_from: the index of
 * the first location that is a return address (1 for a stack unwound from registers, 0 for a
 * launch stack). */
static void dump_name(struct unwind_ctx *u, const struct unwind_loc *locs, int n, int caller_from,
		      struct dump_stack *out)
{
	size_t cap = 0;
	for (int i = 0; i < n; i++) {
		const struct unwind_module *m = unwind_module_get(u, locs[i].module);
		bool python = m && (m->flags & PROFILE_MODULE_PYTHON);
		struct sym_frame f[16];
		int nf = sym_resolve(u, locs[i], i >= caller_from && !python, f, 16);
		if (nf <= 0) {
			f[0] = (struct sym_frame){ .name = "[unknown]" };
			nf = 1;
		}
		for (int k = 0; k < nf; k++) {
			cs_grow(&out->frames, &cap, out->n + 1, sizeof(*out->frames));
			struct dump_frame *d = &out->frames[out->n++];
			*d = (struct dump_frame){
				.name = cs_strdup(f[k].name ? f[k].name : "[unknown]"),
				.file = f[k].file ? cs_strdup(f[k].file) : NULL,
				.line = f[k].line,
				.module = cs_strdup(m ? cs_basename(m->path) : "?"),
				.python = python || (f[k].flags & PROFILE_FRAME_PYTHON),
				.inlined = (f[k].flags & PROFILE_FRAME_INLINED) != 0,
			};
		}
	}
}

static void dump_thread_stack(struct unwind_ctx *u, const struct dump_opts *o,
			      const struct sampler_thread_snap *t, struct dump_stack *out)
{
	struct unwind_loc locs[DUMP_MAX_LOCS];
	uint32_t flags = 0;
	int n = unwind_sample(u, &t->sample, locs, DUMP_MAX_LOCS, &flags);
	if (n < 0)
		n = 0;
	out->incomplete = !(flags & UNWIND_COMPLETE);
	if (!o->no_python) {
		struct py_stack ps = { t->sample.stack, t->sample.regs[UNWIND_REG_SP],
				       t->sample.stack_size, (flags & UNWIND_COMPLETE) != 0, t->sample.regs, UNWIND_NREGS,
				       NULL, 0, 0, 0, false };
		enum py_merge_result res;
		n = py_merge(u, t->sample.pid, t->sample.tid, t->sample.stack_size ? &ps : NULL, locs,
			     n, DUMP_MAX_LOCS, &res);
		out->python_changed = res == PY_MERGE_CHANGED;
	}
	dump_name(u, locs, n, 1, out);
}

CS_CMP_FN(dump_kernel_cmp, struct dump_gpu_kernel,
	CS_CMP(b->age_ns, a->age_ns) ?: CS_CMP(a->correlation, b->correlation))

static void dump_gpu_kernels(struct unwind_ctx *u, const struct dump_opts *o, struct dump_raw *raw,
			     uint64_t now, struct dump_process *p)
{
	const struct gpu_inflight_table *tab = raw->table;
	size_t cap = 0;
	p->gpu_launches = tab->launches;
	for (size_t i = 0; i < GPU_INFLIGHT_SLOTS; i++) {
		const struct gpu_inflight_slot *sl = &tab->slots[i];
		if (sl->state != GPU_INFLIGHT_LAUNCHED || (sl->seq & 1))
			continue;
		cs_grow(&p->kernels, &cap, p->nkernels + 1, sizeof(*p->kernels));
		struct dump_gpu_kernel *k = &p->kernels[p->nkernels++];
		*k = (struct dump_gpu_kernel){ .correlation = sl->correlation, .tid = sl->tid,
					       .age_ns = now > sl->start ? now - sl->start : 0,
					       .name = dump_demangle(raw->names[i][0] ? raw->names[i] : "[unnamed kernel]") };
		const struct dump_launch_stack *ls = &raw->stacks[i];
		struct unwind_loc locs[DUMP_MAX_LOCS];
		uint32_t flags = 0;
		int n = 0;
		if (ls->npcs) {
			struct unwind_sample s = { .pid = (uint32_t)raw->pid, .tid = sl->tid,
						   .user_ips = ls->pcs, .nuser_ips = ls->npcs };
			n = unwind_sample(u, &s, locs, DUMP_MAX_LOCS, &flags);
			if (n < 0)
				n = 0;
		}
		if (ls->npy && n && !o->no_python) {
			enum py_merge_result res;
			bool cut = (sl->flags & GPU_STACK_TRUNCATED) ||
				   (sl->py_flags & (GPU_PY_TRUNCATED | GPU_PY_BROKEN));
			n = gpu_channel_merge_python(u, (uint32_t)raw->pid, ls->py, ls->npy, cut, locs,
						     n, DUMP_MAX_LOCS, &res);
		}
		k->stack_overwritten = ls->overwritten;
		k->stack.incomplete = (sl->flags & GPU_STACK_TRUNCATED) != 0;
		dump_name(u, locs, n, 0, &k->stack);
	}
	cs_qsort(p->kernels, p->nkernels, sizeof(*p->kernels), dump_kernel_cmp);
}

CS_CMP_FN(dump_pid_cmp, pid_t, CS_CMP(*a, *b))

CS_CMP_FN(dump_tid_cmp, struct dump_thread, CS_CMP(a->tid, b->tid))

/* The processes of cgroup path (as /proc/PID/cgroup shows it, or under /sys/fs/cgroup). 0, or
 * -errno after printing one line. */
static int dump_cgroup_pids(struct dump_ctx *c, size_t *cap, const char *path)
{
	/* the cgroup v2 root: /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid system; a
	 * path under /sys/fs/cgroup (v1 controllers too) is taken as it is */
	const char *root = access("/sys/fs/cgroup/cgroup.procs", F_OK) &&
				   !access("/sys/fs/cgroup/unified/cgroup.procs", F_OK)
			   ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
	char *dir = !strncmp(path, "/sys/fs/cgroup", 14) ? cs_strdup(path)
		    : cs_asprintf("%s%s%s", root, path[0] == '/' ? "" : "/", path);
	int ret = dump_add_cgroup(c, cap, dir, 0);
	if (ret)
		cs_error(-ret, "cannot read %s/cgroup.procs: %s; give a cgroup v2 path as /proc/PID/cgroup shows it (e.g. /system.slice/job.scope) or under /sys/fs/cgroup",
			 dir, strerror(-ret));
	free(dir);
	return ret;
}

/* Snapshot every process, by up to DUMP_MAX_READERS threads. */
static void dump_read_all(struct dump_ctx *c)
{
	size_t nreaders = c->npids < DUMP_MAX_READERS ? c->npids : DUMP_MAX_READERS;
	pthread_t *th = cs_calloc(nreaders, sizeof(*th));
	size_t started = 0;

	c->raw = cs_calloc(c->npids, sizeof(*c->raw));
	for (; started < nreaders; started++)
		if (pthread_create(&th[started], NULL, dump_reader, c))
			break;
	if (!started)
		dump_reader(c);       /* no thread to be had: read them one after the other */
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

/* One process' result from its snapshot: its threads' stacks, unwound, and its GPU state. */
static void dump_process_of(struct unwind_ctx *u, const struct dump_opts *o,
			    struct dump_raw *raw, uint64_t now, struct dump_process *p)
{
	p->pid = raw->pid;
	p->ppid = dump_ppid(raw->pid);
	p->rank = dump_rank(raw->pid);
	memcpy(p->comm, raw->snap.comm, sizeof(p->comm));
	p->error = raw->snap.error;
	p->stopped_ns = raw->snap.stopped_ns;
	if (p->error) {
		char why[512];
		sampler_snapshot_explain(p->error, p->pid, why, sizeof(why));
		p->error_text = cs_strdup(why);
	}
	p->threads = cs_calloc(raw->snap.nthreads ? raw->snap.nthreads : 1, sizeof(*p->threads));
	for (size_t k = 0; k < raw->snap.nthreads && !p->error; k++) {
		const struct sampler_thread_snap *t = &raw->snap.threads[k];
		struct dump_thread *d = &p->threads[p->nthreads++];
		*d = (struct dump_thread){ .tid = t->tid, .state = t->state,
					   .syscall = t->syscall, .error = t->error };
		memcpy(d->comm, t->comm, sizeof(d->comm));
		if (!t->error)
			dump_thread_stack(u, o, t, &d->stack);
	}
	cs_qsort(p->threads, p->nthreads, sizeof(*p->threads), dump_tid_cmp);
	p->gpu = raw->gpu;
	p->gpu_note = raw->gpu_note;
	raw->gpu_note = NULL;
	if (raw->table && !p->error)
		dump_gpu_kernels(u, o, raw, now, p);
	unwind_exit(u, (uint32_t)raw->pid);
	py_forget(u, (uint32_t)raw->pid);
}

int dump_run(const struct dump_opts *o, struct dump_result *out)
{
	struct dump_ctx c = { .o = o };
	size_t cap = 0;
	uint64_t t0 = cs_monotonic_ns();
	int ret = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < o->npids; i++)
		dump_add_pid(&c, &cap, o->pids[i]);
	if (o->cgroup && (ret = dump_cgroup_pids(&c, &cap, o->cgroup)))
		goto out;
	if (o->children)
		dump_add_children(&c, &cap);
	if (!c.npids) {
		ret = cs_error(ESRCH, "no process to dump%s", o->cgroup ? ": the cgroup is empty" : "");
		goto out;
	}
	cs_qsort(c.pids, c.npids, sizeof(pid_t), dump_pid_cmp);
	dump_read_all(&c);
	uint64_t now = cs_monotonic_ns();
	out->read_ns = now - t0;

	struct unwind_ctx *u = NULL;
	ret = unwind_new(&u);
	if (ret) {
		cs_error(-ret, "cannot initialise the unwinder: %s", strerror(-ret));
		goto out;
	}
	if (!o->no_python)
		py_enable(u);
	out->procs = cs_calloc(c.npids, sizeof(*out->procs));
	out->nprocs = c.npids;
	for (size_t i = 0; i < c.npids; i++)
		dump_process_of(u, o, &c.raw[i], now, &out->procs[i]);
	unwind_free(u);
	out->total_ns = cs_monotonic_ns() - t0;
out:
	for (size_t i = 0; c.raw && i < c.npids; i++) {
		sampler_process_snap_free(&c.raw[i].snap);
		CS_FREE_ALL(c.raw[i].gpu_note, c.raw[i].table, c.raw[i].names, c.raw[i].stacks);
	}
	free(c.raw);
	free(c.pids);
	return ret;
}

static void dump_stack_free(struct dump_stack *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->frames[i].name);
		free(s->frames[i].file);
		free(s->frames[i].module);
	}
	free(s->frames);
}

void dump_result_free(struct dump_result *r)
{
	for (size_t i = 0; r && i < r->nprocs; i++) {
		struct dump_process *p = &r->procs[i];
		for (size_t k = 0; k < p->nthreads; k++)
			dump_stack_free(&p->threads[k].stack);
		for (size_t k = 0; k < p->nkernels; k++) {
			dump_stack_free(&p->kernels[k].stack);
			free(p->kernels[k].name);
		}
		CS_FREE_ALL(p->threads, p->kernels, p->error_text, p->gpu_note);
	}
	if (r) {
		free(r->procs);
		memset(r, 0, sizeof(*r));
	}
}
