/* sampler_bpf_tables.c: the BPF backend's unwind tables in the kernel's maps. Each executable
 * file gets its rows (unwind/cfitable.h) once, into a slice of the rows array, and only when a
 * sample's walk stopped in it for want of rows (a machine maps hundreds of files that no sample
 * is ever taken in); every process mapping the same file (same device and inode) shares the
 * slice, and the rows come from the on-disk cache when an earlier run built them
 * (cfitable_build_cached). Each process' entry of the procs map lists its file mappings (start,
 * end, bias, slice), kept in step with the MMAP2, exec, FORK and EXIT events of each batch before
 * it is delivered; mappings of files not built yet wait in the process' pending list. Files are
 * built by a builder thread, so that the rings are drained meanwhile (bpf_tables_work). Samples taken before
 * their file's rows are loaded are walked by frame pointers, and where that is uncertain they
 * carry a stack slice that user space unwinds (sampler_bpf.c). */
#include "sampler/backend.h"
#include "sampler/sampler_bpf_shared.h"

#include "unwind/cfitable.h"

#include "base/cs.h"
#include "base/hash.h"

#ifdef CSAMPLER_HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BPF_LATE_HITS 8192 /* pcs of processes not known yet kept for bpf_tables_work */
#define BPF_SLICE_SCANS 16 /* slices of a process bpf_tables_hit_slice looks at */
#define BPF_SLICE_WORDS 1024 /* words of a slice it looks at */

/* A file's rows: not built until a sample stops in one of its mappings for want of rows. */
struct bpf_table_file {
	dev_t dev;
	ino_t ino;
	char *path;                /* as the first mapping named it (in that process' root) */
	bool built, wanted, queued; /* queued: with the builder thread */
	bool cache_checked;        /* bpf_tables_preload looked for its rows in the cache */
	uint32_t first, count;     /* count 0: no table (no .eh_frame_hdr, or the rows are full) */
	struct cfitable_segment *segs;
	size_t nsegs;
};

/* A mapping of a file whose rows are not built yet: applied when they are. */
struct bpf_pending_map {
	uint64_t start, end, pgoff;
	uint32_t file;
};

struct bpf_table_proc {
	uint32_t pid;
	struct csb_proc p;         /* as in the procs map */
	struct bpf_pending_map *pending;
	size_t npending, cap_pending;
	uint32_t slices_scanned;   /* bpf_tables_hit_slice's */
};

/* A file for the builder thread: opened by the main thread (through a process' root), built or
 * read from the cache there, its rows copied into the map by the main thread. */
struct bpf_build_job {
	uint32_t file;
	int fd, ret;
	bool from_cache;
	uint64_t ns;
	struct cfitable ct;
};

struct bpf_tables {
	/* the builder thread: libdw takes up to seconds on a large file, and the rings must be
	 * drained meanwhile (a build on the draining thread lost samples under record -a) */
	pthread_t builder;
	bool builder_started, builder_stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* written by the builder thread when it finished a file: the reader, polling it, loads
	 * the rows at once rather than at its next collection (up to 50 ms later) */
	int done_fd;
	struct bpf_build_job *todo, *done;   /* under mu */
	size_t ntodo, cap_todo, ndone, cap_done;
	int rows_fd, procs_fd;
	struct csb_row *rows;      /* the rows array, mapped (BPF_F_MMAPABLE) */
	uint32_t nrows;            /* used */
	struct bpf_table_file *files;
	size_t nfiles, cap_files;
	struct cs_map file_index;  /* (dev, ino) -> files[] */
	struct bpf_table_proc *procs;
	size_t nprocs, cap_procs;
	size_t nwanted;            /* files wanted and not built */
	/* hits of processes whose mappings this batch has not delivered yet (a process attached
	 * or forked in the batch being read: its samples are read before its events), tried
	 * again by bpf_tables_work */
	struct bpf_late_hit { uint32_t pid; uint64_t pc; } *late;
	size_t nlate, cap_late;
	uint64_t build_ns, unsupported, full, cached, hits;
	uint64_t preloaded;        /* files whose cached rows bpf_tables_preload took */
	bool debug;
};

int bpf_tables_new(struct bpf_tables **out, struct bpf_map *rows, struct bpf_map *procs)
{
	struct bpf_tables *t = cs_calloc(1, sizeof(*t));
	t->rows_fd = bpf_map__fd(rows);
	t->procs_fd = bpf_map__fd(procs);
	t->debug = getenv("CSAMPLER_BPF_DEBUG") != NULL;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* -1: loaded at the next collection */
	t->rows = mmap(NULL, (size_t)CSB_MAX_ROWS * sizeof(struct csb_row), PROT_READ | PROT_WRITE,
		       MAP_SHARED, t->rows_fd, 0);
	if (t->rows == MAP_FAILED) {
		int err = errno;
		if (t->done_fd >= 0)
			close(t->done_fd);
		free(t);
		return SAMPLER_SAID(cs_error(err, "mmap of the BPF unwind rows map: %s", strerror(err)));
	}
	*out = t;
	return 0;
}

void bpf_tables_free(struct bpf_tables *t)
{
	if (!t)
		return;
	if (t->builder_started) {
		pthread_mutex_lock(&t->mu);
		t->builder_stop = true;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->builder, NULL);
	}
	for (size_t i = 0; i < t->ntodo; i++)
		close(t->todo[i].fd);
	for (size_t i = 0; i < t->ndone; i++)
		cfitable_free(&t->done[i].ct);
	free(t->todo);
	free(t->done);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	if (t->done_fd >= 0)
		close(t->done_fd);
	munmap(t->rows, (size_t)CSB_MAX_ROWS * sizeof(struct csb_row));
	for (size_t i = 0; i < t->nfiles; i++) {
		free(t->files[i].segs);
		free(t->files[i].path);
	}
	free(t->files);
	cs_map_free(&t->file_index);
	for (size_t i = 0; i < t->nprocs; i++)
		free(t->procs[i].pending);
	free(t->procs);
	free(t->late);
	free(t);
}

/* The file a mapping names, found by device and inode (one stat per mapping), added unbuilt on
 * first sight; NULL when it cannot be opened. */
static struct bpf_table_file *bpf_tables_file(struct bpf_tables *t, uint32_t pid, const char *path)
{
	char full[4200];
	struct stat st;
	snprintf(full, sizeof(full), "/proc/%u/root%s", pid, path);
	if (stat(full, &st) < 0)
		return NULL;
	uint32_t *slot = cs_map_slot(&t->file_index, st.st_dev, st.st_ino);
	if (*slot != CS_MAP_NONE)
		return &t->files[*slot];
	*slot = (uint32_t)t->nfiles;
	cs_grow(&t->files, &t->cap_files, t->nfiles + 1, sizeof(*t->files));
	struct bpf_table_file *f = &t->files[t->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->path = cs_strdup(path);
	return f;
}

/* f opened for building through the root of process pid: the fd, or -1 (then f is done, with
 * no rows: the program walks it by frame pointers). */
static int bpf_tables_open(struct bpf_table_file *f, uint32_t pid)
{
	char full[4200];
	struct stat st;
	snprintf(full, sizeof(full), "/proc/%u/root%s", pid, f->path);
	int fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != f->dev || st.st_ino != f->ino)) {
		close(fd);  /* replaced since it was mapped */
		fd = -1;
	}
	if (fd < 0)
		f->built = true;
	return fd;
}

/* A row in the map's 8-byte form (sampler_bpf_shared.h); a rule it cannot hold becomes a gap
 * (the walk takes a frame-pointer step there, and goes with a slice if that is uncertain). */
static struct csb_row bpf_tables_row(const struct cfitable_row *r)
{
	struct csb_row c = { .pc = (uint32_t)r->pc, .cfa_off = (int16_t)r->cfa_off,
			     .flags = (uint8_t)((r->flags & CFITABLE_BP_SAVED ? CSB_ROW_BP_SAVED : 0) |
						(r->flags & CFITABLE_END ? CSB_ROW_END : 0) |
						(r->flags & CFITABLE_GAP ? CSB_ROW_GAP : 0) |
						(r->cfa_reg == CFITABLE_REG_BP ? CSB_ROW_CFA_BP : 0)) };
	if (r->flags & CFITABLE_BP_SAVED) {
		if (r->bp_off % 8 || r->bp_off / 8 < INT8_MIN || r->bp_off / 8 > INT8_MAX)
			c.flags = CSB_ROW_GAP;
		else
			c.bp_off8 = (int8_t)(r->bp_off / 8);
	}
	if (r->cfa_off != (int16_t)r->cfa_off)  /* cfitable.c keeps them so; checked all the same */
		c.flags = CSB_ROW_GAP;
	return c;
}

/* A finished job's rows into the rows map (the main thread). */
static void bpf_tables_load(struct bpf_tables *t, struct bpf_table_file *f, struct bpf_build_job *job)
{
	struct cfitable *ct = &job->ct;
	f->built = true;
	t->build_ns += job->ns;
	if (t->debug)
		fprintf(stderr, "csampler: bpf debug: rows of %s: %d, %zu rows, %s, %.1f ms\n", f->path,
			job->ret, ct->nrows, job->from_cache ? "from the cache" : "built",
			(double)job->ns / 1e6);
	if (job->ret)
		return;
	t->cached += job->from_cache;
	f->segs = ct->segs;
	f->nsegs = ct->nsegs;
	ct->segs = NULL;
	t->unsupported += ct->unsupported;
	bool fits = ct->nrows <= CSB_MAX_ROWS - t->nrows;
	for (size_t i = 0; fits && i < ct->nrows; i++)
		fits = ct->rows[i].pc <= UINT32_MAX;
	if (!fits) {
		t->full++;
		return;
	}
	f->first = t->nrows;
	f->count = (uint32_t)ct->nrows;
	for (size_t i = 0; i < ct->nrows; i++)
		t->rows[t->nrows++] = bpf_tables_row(&ct->rows[i]);
}

static void bpf_tables_run_job(struct bpf_build_job *job)
{
	uint64_t t0 = cs_monotonic_ns();
	job->ret = cfitable_build_cached(job->fd, &job->ct, &job->from_cache);
	job->ns = cs_monotonic_ns() - t0;
	close(job->fd);
}

static void *bpf_tables_builder(void *arg)
{
	struct bpf_tables *t = arg;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->ntodo && !t->builder_stop)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->builder_stop)
			break;
		struct bpf_build_job job = t->todo[0];
		memmove(t->todo, t->todo + 1, --t->ntodo * sizeof(*t->todo));
		pthread_mutex_unlock(&t->mu);
		bpf_tables_run_job(&job);
		pthread_mutex_lock(&t->mu);
		cs_grow(&t->done, &t->cap_done, t->ndone + 1, sizeof(*t->done));
		t->done[t->ndone++] = job;
		if (t->done_fd >= 0 && write(t->done_fd, &(uint64_t){ 1 }, 8) < 0) {
			/* the counter is full: the reader has a wake-up pending anyway */
		}
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static struct bpf_table_proc *bpf_tables_proc(struct bpf_tables *t, uint32_t pid, bool create)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	if (!create)
		return NULL;
	cs_grow(&t->procs, &t->cap_procs, t->nprocs + 1, sizeof(*t->procs));
	struct bpf_table_proc *p = &t->procs[t->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

static void bpf_tables_store(struct bpf_tables *t, struct bpf_table_proc *p)
{
	bpf_map_update_elem(t->procs_fd, &p->pid, &p->p, BPF_ANY);
}

static void bpf_tables_drop(struct bpf_tables *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid) {
			if (t->procs[i].p.nmaps)
				bpf_map_delete_elem(t->procs_fd, &pid);
			free(t->procs[i].pending);
			t->procs[i] = t->procs[--t->nprocs];
			return;
		}
}

/* Remove what overlaps [start, end) from p's pending mappings. */
static void bpf_tables_unpend(struct bpf_table_proc *p, uint64_t start, uint64_t end)
{
	size_t n = 0;
	for (size_t i = 0; i < p->npending; i++)
		if (p->pending[i].end <= start || p->pending[i].start >= end)
			p->pending[n++] = p->pending[i];
	p->npending = n;
}

/* A mapping of built file f into p's table entry: replaces what it overlaps, kept sorted by
 * start. Returns whether the entry changed (the caller stores it). */
static bool bpf_tables_apply(struct bpf_tables *t, struct bpf_table_proc *p,
			     const struct bpf_table_file *f, uint64_t start, uint64_t end, uint64_t pgoff)
{
	uint64_t bias = 0;
	struct cfitable segs = { .segs = f->segs, .nsegs = f->nsegs };
	if (!f->count || cfitable_bias(&segs, start, pgoff, &bias))
		return false; /* the program walks it by frame pointers */
	struct csb_map m = { start, end, bias, f->first, f->count };
	uint32_t n = 0;
	struct csb_map *maps = p->p.maps;
	for (uint32_t i = 0; i < p->p.nmaps; i++)
		if (maps[i].end <= m.start || maps[i].start >= m.end)
			maps[n++] = maps[i];
	if (n == CSB_MAX_MAPS)
		return false;
	uint32_t at = n;
	while (at > 0 && maps[at - 1].start > m.start)
		at--;
	memmove(&maps[at + 1], &maps[at], (n - at) * sizeof(*maps));
	maps[at] = m;
	p->p.nmaps = n + 1;
	if (t->debug)
		fprintf(stderr, "csampler: bpf debug: pid %u maps %s %#llx-%#llx bias %#llx rows %u+%u\n",
			p->pid, f->path, (unsigned long long)m.start, (unsigned long long)m.end,
			(unsigned long long)m.bias, m.first, m.count);
	return true;
}

/* A new executable file mapping: applied now when its file's rows are built, else kept pending
 * until a sample needs them. Either way it replaces what it overlaps. */
static void bpf_tables_mmap(struct bpf_tables *t, const struct sampler_event *ev)
{
	const char *path = ev->mmap.path;
	if (!(ev->mmap.prot & 4 /* PROT_EXEC */) || path[0] != '/')
		return;
	struct bpf_table_file *f = bpf_tables_file(t, ev->pid, path);
	uint64_t start = ev->mmap.start, end = ev->mmap.start + ev->mmap.len;
	struct bpf_table_proc *p = bpf_tables_proc(t, ev->pid, f != NULL);
	if (!p)
		return;
	bpf_tables_unpend(p, start, end);
	if (f && f->built) {
		if (bpf_tables_apply(t, p, f, start, end, ev->mmap.pgoff))
			bpf_tables_store(t, p);
		return;
	}
	/* an older mapping of [start, end) with rows no longer holds */
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->p.nmaps; i++)
		if (p->p.maps[i].end <= start || p->p.maps[i].start >= end)
			p->p.maps[n++] = p->p.maps[i];
	if (n != p->p.nmaps) {
		p->p.nmaps = n;
		bpf_tables_store(t, p);
	}
	if (!f)
		return;
	cs_grow(&p->pending, &p->cap_pending, p->npending + 1, sizeof(*p->pending));
	p->pending[p->npending++] = (struct bpf_pending_map){ start, end, ev->mmap.pgoff,
							       (uint32_t)(f - t->files) };
}

int bpf_tables_pollfd(const struct bpf_tables *t)
{
	return t->done_fd;
}

void bpf_tables_hit(struct bpf_tables *t, uint32_t pid, const uint64_t *pcs, size_t n)
{
	struct bpf_table_proc *p = bpf_tables_proc(t, pid, false);
	if (!p) {
		for (size_t i = 0; i < n && t->nlate < BPF_LATE_HITS; i++) {
			cs_grow(&t->late, &t->cap_late, t->nlate + 1, sizeof(*t->late));
			t->late[t->nlate++] = (struct bpf_late_hit){ pid, pcs[i] };
		}
		return;
	}
	if (!p->npending)
		return;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p->npending; j++) {
			struct bpf_table_file *f = &t->files[p->pending[j].file];
			if (pcs[i] >= p->pending[j].start && pcs[i] < p->pending[j].end && !f->wanted) {
				f->wanted = true;
				t->nwanted++;
				t->hits++;
			}
		}
}

void bpf_tables_hit_slice(struct bpf_tables *t, uint32_t pid, const uint64_t *words, size_t n)
{
	struct bpf_table_proc *p = bpf_tables_proc(t, pid, false);

	if (p && p->slices_scanned++ >= BPF_SLICE_SCANS)
		return;
	bpf_tables_hit(t, pid, words, n < BPF_SLICE_WORDS ? n : BPF_SLICE_WORDS);
}

/* Every pending mapping of file index fi, in every process, applied. */
static void bpf_tables_apply_file(struct bpf_tables *t, uint32_t fi)
{
	for (size_t i = 0; i < t->nprocs; i++) {
		struct bpf_table_proc *p = &t->procs[i];
		bool changed = false;
		size_t n = 0;
		for (size_t j = 0; j < p->npending; j++) {
			struct bpf_pending_map m = p->pending[j];
			if (m.file == fi)
				changed |= bpf_tables_apply(t, p, &t->files[fi], m.start, m.end, m.pgoff);
			else
				p->pending[n++] = m;
		}
		p->npending = n;
		if (changed)
			bpf_tables_store(t, p);
	}
}

/* A process that maps file fi (a pending mapping of it), whose root opens it; 0: none. */
static uint32_t bpf_tables_mapper(const struct bpf_tables *t, uint32_t fi)
{
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t j = 0; j < t->procs[i].npending; j++)
			if (t->procs[i].pending[j].file == fi)
				return t->procs[i].pid;
	return 0;
}

/* A job's rows into the map, and every pending mapping of its file applied. */
static void bpf_tables_finish(struct bpf_tables *t, struct bpf_build_job *job)
{
	bpf_tables_load(t, &t->files[job->file], job);
	cfitable_free(&job->ct);
	bpf_tables_apply_file(t, job->file);
}

void bpf_tables_preload(struct bpf_tables *t, bool now)
{
	for (uint32_t fi = 0; fi < t->nfiles; fi++) {
		struct bpf_table_file *f = &t->files[fi];
		if (f->cache_checked || f->built || f->wanted || f->queued)
			continue;
		/* looked at once, on the collect path: a file no process maps any more is not
		 * searched for again at every collection */
		f->cache_checked = true;
		uint32_t pid = bpf_tables_mapper(t, fi);
		int fd = pid ? bpf_tables_open(f, pid) : -1;
		if (fd < 0)
			continue;
		bool cached = cfitable_cached(fd);
		if (!cached || !now) {
			close(fd);
			if (cached) { /* the builder thread reads it: the reader drains meanwhile */
				f->wanted = true;
				t->nwanted++;
				t->preloaded++;
			}
			continue; /* not cached: built when a sample wants it */
		}
		struct bpf_build_job job = { .file = fi, .fd = fd };
		bpf_tables_run_job(&job);
		bpf_tables_finish(t, &job);
		t->preloaded++;
	}
}

/* Hand the wanted files to the builder thread (started at the first; signals blocked there:
 * they are the main thread's), and load what it finished. */
void bpf_tables_work(struct bpf_tables *t)
{
	/* The builder's wake-up, read first and always: a job it finished after the last read
	 * can be taken below with nothing left wanted, and an eventfd left readable would make the
	 * reader's poll return at once, again and again (a reader thread spinning for the whole
	 * recording, seen in 4 of 20 launches once it polled every 5 ms at the start) */
	uint64_t wakeups;
	if (t->done_fd >= 0 && read(t->done_fd, &wakeups, 8) < 0) {
		/* nothing finished since the last read */
	}
	size_t nlate = t->nlate;
	t->nlate = 0; /* those of processes still unknown are dropped: their samples come again */
	for (size_t i = 0; i < nlate; i++)
		if (bpf_tables_proc(t, t->late[i].pid, false))
			bpf_tables_hit(t, t->late[i].pid, &t->late[i].pc, 1);
	if (!t->nwanted)
		return;
	for (uint32_t fi = 0; fi < t->nfiles; fi++) {
		struct bpf_table_file *f = &t->files[fi];
		if (!f->wanted || f->built || f->queued)
			continue;
		uint32_t pid = bpf_tables_mapper(t, fi);
		int fd = pid ? bpf_tables_open(f, pid) : -1;
		if (fd < 0) {
			t->nwanted--;
			f->wanted = pid != 0; /* none maps it now: built when mapped and hit again */
			f->built = pid != 0;
			continue;
		}
		struct bpf_build_job job = { .file = fi, .fd = fd };
		if (!t->builder_started) {
			sigset_t all, old;
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			t->builder_started = pthread_create(&t->builder, NULL, bpf_tables_builder, t) == 0;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		}
		f->queued = true;
		if (!t->builder_started) {
			bpf_tables_run_job(&job); /* no thread: built here */
			pthread_mutex_lock(&t->mu);
			cs_grow(&t->done, &t->cap_done, t->ndone + 1, sizeof(*t->done));
			t->done[t->ndone++] = job;
			pthread_mutex_unlock(&t->mu);
			continue;
		}
		pthread_mutex_lock(&t->mu);
		cs_grow(&t->todo, &t->cap_todo, t->ntodo + 1, sizeof(*t->todo));
		t->todo[t->ntodo++] = job;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
	}
	pthread_mutex_lock(&t->mu);
	struct bpf_build_job *done = t->done;
	size_t ndone = t->ndone;
	t->done = NULL;
	t->ndone = t->cap_done = 0;
	pthread_mutex_unlock(&t->mu);
	for (size_t i = 0; i < ndone; i++) {
		bpf_tables_finish(t, &done[i]);
		t->nwanted--;
	}
	free(done);
}

void bpf_tables_event(struct bpf_tables *t, const struct sampler_event *ev)
{
	struct bpf_table_proc *p;
	switch (ev->type) {
	case SAMPLER_EV_MMAP:
		bpf_tables_mmap(t, ev);
		break;
	case SAMPLER_EV_COMM:
		if (ev->comm.exec && (p = bpf_tables_proc(t, ev->pid, false))) {
			p->npending = 0; /* a new address space */
			p->slices_scanned = 0;
			if (p->p.nmaps) {
				p->p.nmaps = 0;
				bpf_tables_store(t, p);
			}
		}
		break;
	case SAMPLER_EV_FORK:
		if (ev->pid != ev->task.ppid && (p = bpf_tables_proc(t, ev->task.ppid, false))) {
			size_t at = (size_t)(p - t->procs);
			struct bpf_table_proc *c = bpf_tables_proc(t, ev->pid, true);
			p = &t->procs[at]; /* the array may have moved */
			c->p = p->p;
			c->npending = 0;
			cs_grow(&c->pending, &c->cap_pending, p->npending + 1, sizeof(*c->pending));
			memcpy(c->pending, p->pending, p->npending * sizeof(*p->pending));
			c->npending = p->npending;
			if (c->p.nmaps)
				bpf_tables_store(t, c);
		}
		break;
	case SAMPLER_EV_EXIT:
		if (ev->pid == ev->tid)
			bpf_tables_drop(t, ev->pid);
		break;
	default:
		break;
	}
}

void bpf_tables_describe(struct bpf_tables *t, char *buf, size_t len)
{
	size_t with = 0, built = 0;
	for (size_t i = 0; i < t->nfiles; i++) {
		with += t->files[i].count != 0;
		built += t->files[i].built;
	}
	snprintf(buf, len, "unwind tables: rows for %zu of %zu mapped files (those samples needed or the cache held, %llu from the cache, %llu of them without waiting for a sample), %u rows (%.1f MB), built in %.0f ms%s%s",
		 with, t->nfiles, (unsigned long long)t->cached, (unsigned long long)t->preloaded, t->nrows,
		 (double)t->nrows * sizeof(struct csb_row) / 1e6, (double)t->build_ns / 1e6,
		 t->full ? ", some files did not fit" : "", t->nwanted ? ", some files still waiting" : "");
}

#endif
