/* sampler_bpf_tables.c: the BPF backend's unwind tables in the kernel's maps. Each executable
 * file gets its rows (unwind/cfitable.h) once, into a slice of the rows array, when a sampled
 * process first maps it; every process mapping the same file (same device and inode) shares the
 * slice. Each process' entry of the procs map lists its file mappings (start, end, bias, slice),
 * kept in step with the MMAP2, exec, FORK and EXIT events of each batch before it is delivered;
 * files not built yet are built a few milliseconds at a time between drains (bpf_tables_work).
 * Samples taken before their file's rows are loaded (the first milliseconds after an exec or a
 * dlopen) are walked by frame pointers, and say so when that fails. */
#include "sampler/backend.h"
#include "sampler/sampler_bpf_shared.h"

#include "unwind/cfitable.h"

#include "base/cs.h"

#ifdef CSAMPLER_HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct bpf_table_file {
	dev_t dev;
	ino_t ino;
	uint32_t first, count;     /* count 0: no table (no .eh_frame_hdr, or the rows are full) */
	struct cfitable_segment *segs;
	size_t nsegs;
};

struct bpf_table_proc {
	uint32_t pid;
	struct csb_proc p;         /* as in the procs map */
};

/* A mapping whose file's rows are not built yet: applied by bpf_tables_work. */
struct bpf_pending_map {
	struct sampler_event ev;   /* SAMPLER_EV_MMAP; ev.mmap.path owned */
};

struct bpf_tables {
	struct bpf_pending_map *pending;
	size_t npending, cap_pending;
	int rows_fd, procs_fd;
	struct csb_row *rows;      /* the rows array, mapped (BPF_F_MMAPABLE) */
	uint32_t nrows;            /* used */
	struct bpf_table_file *files;
	size_t nfiles, cap_files;
	struct bpf_table_proc *procs;
	size_t nprocs, cap_procs;
	uint64_t build_ns, unsupported, full;
};

int bpf_tables_new(struct bpf_tables **out, struct bpf_map *rows, struct bpf_map *procs)
{
	struct bpf_tables *t = cs_calloc(1, sizeof(*t));
	t->rows_fd = bpf_map__fd(rows);
	t->procs_fd = bpf_map__fd(procs);
	t->rows = mmap(NULL, (size_t)CSB_MAX_ROWS * sizeof(struct csb_row), PROT_READ | PROT_WRITE,
		       MAP_SHARED, t->rows_fd, 0);
	if (t->rows == MAP_FAILED) {
		int err = errno;
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
	munmap(t->rows, (size_t)CSB_MAX_ROWS * sizeof(struct csb_row));
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i].segs);
	free(t->files);
	free(t->procs);
	for (size_t i = 0; i < t->npending; i++)
		free((char *)t->pending[i].ev.mmap.path);
	free(t->pending);
	free(t);
}

/* The file's rows, built and loaded at its first mapping (only when build; else NULL for a
 * file not built yet, *todo set). */
static struct bpf_table_file *bpf_tables_file(struct bpf_tables *t, uint32_t pid, const char *path,
					      bool build, bool *todo)
{
	char full[4200];
	struct stat st;
	snprintf(full, sizeof(full), "/proc/%u/root%s", pid, path);
	int fd = open(full, O_RDONLY | O_CLOEXEC);
	*todo = false;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i].dev == st.st_dev && t->files[i].ino == st.st_ino) {
			close(fd);
			return &t->files[i];
		}
	if (!build) {
		close(fd);
		*todo = true;
		return NULL;
	}
	cs_grow(&t->files, &t->cap_files, t->nfiles + 1, sizeof(*t->files));
	struct bpf_table_file *f = &t->files[t->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	struct cfitable ct;
	uint64_t t0 = cs_monotonic_ns();
	if (cfitable_build(fd, &ct) == 0) {
		f->segs = ct.segs;
		f->nsegs = ct.nsegs;
		ct.segs = NULL;
		t->unsupported += ct.unsupported;
		bool fits = ct.nrows <= CSB_MAX_ROWS - t->nrows;
		for (size_t i = 0; fits && i < ct.nrows; i++)
			fits = ct.rows[i].pc <= UINT32_MAX;
		if (fits) {
			f->first = t->nrows;
			f->count = (uint32_t)ct.nrows;
			for (size_t i = 0; i < ct.nrows; i++) {
				const struct cfitable_row *r = &ct.rows[i];
				t->rows[t->nrows++] = (struct csb_row){
					.pc = (uint32_t)r->pc, .cfa_off = (int16_t)r->cfa_off,
					.bp_off = (int16_t)r->bp_off, .cfa_reg = r->cfa_reg,
					.flags = (uint8_t)((r->flags & CFITABLE_BP_SAVED ? CSB_ROW_BP_SAVED : 0) |
							   (r->flags & CFITABLE_END ? CSB_ROW_END : 0) |
							   (r->flags & CFITABLE_GAP ? CSB_ROW_GAP : 0)),
				};
			}
		} else {
			t->full++;
		}
		cfitable_free(&ct);
	}
	t->build_ns += cs_monotonic_ns() - t0;
	close(fd);
	return f;
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
			bpf_map_delete_elem(t->procs_fd, &pid);
			t->procs[i] = t->procs[--t->nprocs];
			return;
		}
}

/* A new executable file mapping: replaces what it overlaps, kept sorted by start. Returns
 * false when the file's rows are not built and build is false (the caller keeps it pending). */
static bool bpf_tables_mmap(struct bpf_tables *t, const struct sampler_event *ev, bool build)
{
	const char *path = ev->mmap.path;
	bool todo;
	if (!(ev->mmap.prot & 4 /* PROT_EXEC */) || path[0] != '/')
		return true;
	struct bpf_table_file *f = bpf_tables_file(t, ev->pid, path, build, &todo);
	if (todo)
		return false;
	uint64_t bias = 0;
	struct cfitable segs = { .segs = f ? f->segs : NULL, .nsegs = f ? f->nsegs : 0 };
	if (!f || !f->count || cfitable_bias(&segs, ev->mmap.start, ev->mmap.pgoff, &bias))
		return true; /* the program walks it by frame pointers */
	struct bpf_table_proc *p = bpf_tables_proc(t, ev->pid, true);
	struct csb_map m = { ev->mmap.start, ev->mmap.start + ev->mmap.len, bias, f->first, f->count };
	uint32_t n = 0;
	struct csb_map *maps = p->p.maps;
	for (uint32_t i = 0; i < p->p.nmaps; i++)
		if (maps[i].end <= m.start || maps[i].start >= m.end)
			maps[n++] = maps[i];
	if (n == CSB_MAX_MAPS)
		return true;
	uint32_t at = n;
	while (at > 0 && maps[at - 1].start > m.start)
		at--;
	memmove(&maps[at + 1], &maps[at], (n - at) * sizeof(*maps));
	maps[at] = m;
	p->p.nmaps = n + 1;
	bpf_tables_store(t, p);
	if (getenv("CSAMPLER_BPF_DEBUG"))
		fprintf(stderr, "csampler: bpf debug: pid %u maps %s %#llx-%#llx bias %#llx rows %u+%u\n",
			ev->pid, path, (unsigned long long)m.start, (unsigned long long)m.end,
			(unsigned long long)m.bias, m.first, m.count);
	return true;
}

static void bpf_tables_drop_pending(struct bpf_tables *t, uint32_t pid)
{
	size_t n = 0;
	for (size_t i = 0; i < t->npending; i++) {
		if (t->pending[i].ev.pid == pid)
			free((char *)t->pending[i].ev.mmap.path);
		else
			t->pending[n++] = t->pending[i];
	}
	t->npending = n;
}

void bpf_tables_work(struct bpf_tables *t, uint64_t budget_ns)
{
	uint64_t until = cs_monotonic_ns() + budget_ns;
	size_t n = 0;
	for (size_t i = 0; i < t->npending; i++) {
		struct bpf_pending_map *p = &t->pending[i];
		if (bpf_tables_mmap(t, &p->ev, cs_monotonic_ns() < until))
			free((char *)p->ev.mmap.path);
		else
			t->pending[n++] = *p;
	}
	t->npending = n;
}

void bpf_tables_event(struct bpf_tables *t, const struct sampler_event *ev)
{
	struct bpf_table_proc *p;
	switch (ev->type) {
	case SAMPLER_EV_MMAP:
		/* a file already built is applied now; a new one waits for bpf_tables_work, so
		 * that building never holds up the draining of the rings */
		if (!bpf_tables_mmap(t, ev, false)) {
			cs_grow(&t->pending, &t->cap_pending, t->npending + 1, sizeof(*t->pending));
			t->pending[t->npending].ev = *ev;
			t->pending[t->npending++].ev.mmap.path = cs_strdup(ev->mmap.path);
		}
		break;
	case SAMPLER_EV_COMM:
		if (ev->comm.exec)
			bpf_tables_drop_pending(t, ev->pid);
		if (ev->comm.exec && (p = bpf_tables_proc(t, ev->pid, false))) {
			p->p.nmaps = 0; /* a new address space */
			bpf_tables_store(t, p);
		}
		break;
	case SAMPLER_EV_FORK:
		if (ev->pid != ev->task.ppid && (p = bpf_tables_proc(t, ev->task.ppid, false))) {
			struct csb_proc copy = p->p;
			struct bpf_table_proc *c = bpf_tables_proc(t, ev->pid, true);
			c->p = copy;
			bpf_tables_store(t, c);
		}
		break;
	case SAMPLER_EV_EXIT:
		if (ev->pid == ev->tid) {
			bpf_tables_drop(t, ev->pid);
			bpf_tables_drop_pending(t, ev->pid);
		}
		break;
	default:
		break;
	}
}

void bpf_tables_describe(struct bpf_tables *t, char *buf, size_t len)
{
	size_t with = 0;
	for (size_t i = 0; i < t->nfiles; i++)
		with += t->files[i].count != 0;
	snprintf(buf, len, "unwind tables: %zu of %zu files, %u rows (%.1f MB), built in %.0f ms%s%s",
		 with, t->nfiles, t->nrows, (double)t->nrows * sizeof(struct csb_row) / 1e6,
		 (double)t->build_ns / 1e6, t->full ? ", some files did not fit" : "",
		 t->npending ? ", some mappings still waiting" : "");
}

#endif
