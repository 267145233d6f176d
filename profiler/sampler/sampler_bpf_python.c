/* sampler_bpf_python.c: the Python part of `--mode bpf`. The BPF program reads a sampled
 * thread's CPython frame chain at the sample (sampler_bpf.bpf.c) for the processes of its
 * pyprocs map; this file fills that map once the recorder knows where a process' thread states
 * and frames are (opts.py_where: python.c's layout for its version), and turns each record's
 * frames into the walk the recorder splices (base/pywalk.c over the frames the program read:
 * runs per native activation, generators, 3.12+'s shim frames), as the in-target GPU library's
 * frames are. Samples whose frames the program could not read are left to the recorder, which
 * reads them from the process as in perf mode, and are counted. */
#include "sampler/backend.h"
#include "sampler/sampler_bpf_shared.h"

#include "base/cs.h"
#include "base/hash.h"
#include "base/pywalk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pywalk's read over the frames the program read: frame i is at the address frame i - 1
 * linked to (the first at first), its fields put back at the layout's offsets. */
struct bpf_py_read {
	const struct csb_pyframe *f;
	uint32_t n, next;
	uint64_t first, next_addr;
	const struct pywalk_layout *L;
	/* 3.11, 3.12: each activation's current frame (its _PyCFrame's), innermost first */
	const uint64_t *acts;
	uint32_t nacts;
	bool past_acts;           /* the walk passed acts[nacts - 1], CSB_PY_MAX_ACTS of them */
};

/* Whether frame address a is where an outer activation's frames begin (acts[1, nacts)). */
static bool bpf_py_act_at(const struct bpf_py_read *r, uint64_t a)
{
	for (uint32_t j = 1; j < r->nacts; j++)
		if (r->acts[j] == a)
			return true;
	return false;
}

/* 3.11's is_entry of frame f (at addr), from the _PyCFrames read at the sample: the frame an
 * outer activation's frames begin at is its previous. A frame being entered has is_entry false
 * for a few instructions after its _PyCFrame is linked (then its frames would be taken for the
 * outer activation's); after the CSB_PY_MAX_ACTS-th activation, the frame's own. */
static bool bpf_py_is_entry(struct bpf_py_read *r, const struct csb_pyframe *f, uint64_t addr)
{
	if (r->nacts && addr == r->acts[r->nacts - 1] && r->nacts == CSB_PY_MAX_ACTS)
		r->past_acts = true;
	if (!r->nacts || r->past_acts)
		return (f->link & CSB_PYLINK_ENTRY) != 0;
	/* the outermost frame ends the outermost activation */
	return bpf_py_act_at(r, f->link & CSB_PYLINK_ADDR) || !(f->link & CSB_PYLINK_ADDR);
}

/* Whether every activation's current frame is in the chain the program read (a chain cut
 * short holds those it reached): a _PyCFrame whose current frame is not there was being set
 * up or torn down at the sample. */
static bool bpf_py_acts_ok(const struct bpf_py_read *r, bool cut)
{
	uint32_t j = 0;
	uint64_t a = r->first;
	for (uint32_t i = 0; i < r->n && j < r->nacts; i++) {
		if (a == r->acts[j])
			j++;
		a = r->f[i].link & CSB_PYLINK_ADDR;
	}
	return j == r->nacts || cut;
}

static void bpf_py_put64(uint8_t *buf, size_t len, uint32_t off, uint64_t v)
{
	if (off + 8 <= len)
		memcpy(buf + off, &v, 8);
}

/* The index in r->f of the frame at addr, following the chain the program read from
 * r->first, or r->n when it read none there. */
static uint32_t bpf_py_index_of(const struct bpf_py_read *r, uint64_t addr)
{
	uint64_t at = r->first;
	uint32_t i = 0;

	for (; i < r->n && at != addr; i++)
		at = r->f[i].link & CSB_PYLINK_ADDR;
	return at == addr ? i : r->n;
}

/* The previous-frame link of the frame at addr as the program read it, or 0. */
static uint64_t bpf_py_link_of(const struct bpf_py_read *r, uint64_t addr)
{
	uint32_t i = bpf_py_index_of(r, addr);

	return i < r->n ? r->f[i].link & CSB_PYLINK_ADDR : 0;
}

static bool bpf_py_frame_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct bpf_py_read *r = arg;
	const struct pywalk_layout *L = r->L;
	/* the walk asks in chain order: the index is looked up for any other order */
	uint32_t i = r->next_addr == addr ? r->next : bpf_py_index_of(r, addr);
	if (i >= r->n)
		return false;  /* past what the program read */
	const struct csb_pyframe *f = &r->f[i];
	uint8_t *b = buf;
	memset(b, 0, len);
	bpf_py_put64(b, len, L->frame_code, f->code);
	bpf_py_put64(b, len, L->frame_instr, f->instr);
	bpf_py_put64(b, len, L->frame_previous, f->link & CSB_PYLINK_ADDR);
	if (L->frame_owner < len)
		b[L->frame_owner] = (uint8_t)(f->link >> CSB_PYLINK_OWNER_SHIFT);
	if (L->frame_is_entry && L->frame_is_entry < len)
		b[L->frame_is_entry] = bpf_py_is_entry(r, f, addr);
	r->next = i + 1;
	r->next_addr = f->link & CSB_PYLINK_ADDR;
	return true;
}

int bpf_python_walk(const struct csb_sample *r, size_t size, const struct pywalk_layout *L,
		    struct pywalk_frame *out, uint64_t *fp)
{
	/* a slice record holds them before its stack, the others after user[nuser]; the
	 * activations' current frames follow */
	bool sliced = r->flags & CSB_SLICE_RECORD;
	size_t at = sliced ? offsetof(struct csb_slice_sample, py)
			   : offsetof(struct csb_sample, user) + r->nuser * 8ull;
	size_t at_acts = sliced ? offsetof(struct csb_slice_sample, py_acts)
				: at + r->npy * sizeof(struct csb_pyframe);

	if ((r->py_state != CSB_PY_END && r->py_state != CSB_PY_TRUNCATED) || r->npy > CSB_PY_MAX ||
	    r->py_nacts > CSB_PY_MAX_ACTS || size < at + r->npy * sizeof(struct csb_pyframe) ||
	    size < at_acts + r->py_nacts * 8ull)
		return -EINVAL;
	struct bpf_py_read rd = { (const struct csb_pyframe *)((const uint8_t *)r + at), r->npy, 0,
				  r->py_first, r->py_first, L,
				  (const uint64_t *)((const uint8_t *)r + at_acts), r->py_nacts, false };
	if (!bpf_py_acts_ok(&rd, r->py_state == CSB_PY_TRUNCATED))
		return -EAGAIN;
	uint64_t shims[CSB_PY_MAX];
	struct pywalk w = { .L = L, .read = bpf_py_frame_read, .arg = &rd, .out = out,
			    .max = CSB_PY_MAX, .max_depth = CSB_PY_MAX + 1, .shims = shims,
			    .max_shims = CSB_PY_MAX };
	enum pywalk_end end = pywalk_walk(&w, r->py_first);
	bool cut = r->py_state == CSB_PY_TRUNCATED && (end == PYWALK_BROKEN || end == PYWALK_TRUNCATED);
	if (end != PYWALK_CHAIN_END && !cut)
		return -EINVAL; /* a frame that is none (being set up or torn down at the sample) */
	for (int i = 0; i < w.n; i++)
		out[i].act = 0;
	/* 3.14: each run's activation is the user frame whose stack frame ([sp, CFA), the CFA
	 * being its caller's sp) holds the run's shim */
	size_t at_sps = CSB_KERNEL_AT(r->nuser, r->npy, r->py_nacts) + r->nkernel * 8ull;
	if ((r->flags & CSB_USER_SPS) && !sliced && size >= at_sps + r->nuser * 8ull) {
		const uint64_t *sps = (const uint64_t *)((const uint8_t *)r + at_sps);
		int run = 0, first = 0;
		uint32_t u = 0;
		for (int i = 0; i < w.n; i++) {
			if (!(out[i].flags & PYWALK_ENTRY) && i + 1 < w.n)
				continue;
			/* frames [first, i] are run `run`, ended by shims[run] */
			uint64_t shim = run < w.nshims && run < CSB_PY_MAX ? shims[run] : 0;
			while (shim && u + 1 < r->nuser && !(shim >= sps[u] && shim < sps[u + 1]))
				u++;
			if (shim && u + 1 < r->nuser && u + 1 <= UINT16_MAX)
				for (int k = first; k <= i; k++)
					out[k].act = (uint16_t)(u + 1);
			if (!(shim && u + 1 < r->nuser))
				u = r->nuser; /* not in the sampled stack: nor are the outer ones */
			else
				u++;
			run++;
			first = i + 1;
		}
	}
	/* the walk gives the frames the program read in their order, less the shims */
	for (uint32_t i = 0, k = 0; i < (uint32_t)w.n; i++) {
		fp[i] = 0;
		while (out[i].code && k < rd.n && rd.f[k].code != out[i].code)
			k++;
		if (out[i].code && k < rd.n)
			fp[i] = rd.f[k++].fp;
	}
	/* a run of its entry frame only (run r ends at shims[r]): that frame's address, and the
	 * frame it links to, for the recorder (backend.h) */
	for (int i = 0, run = 0; i < w.n; i++) {
		if (!out[i].code && run < w.nshims && run < CSB_PY_MAX) {
			fp[i] = shims[run];
			out[i].instr = bpf_py_link_of(&rd, shims[run]);
		}
		run += (out[i].flags & PYWALK_ENTRY) != 0 || i + 1 == w.n;
	}
	return w.n;
}

#ifdef CSAMPLER_HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* A process the program was told about (or is to be): its layout and since when. */
struct bpf_pyproc {
	uint32_t pid;
	bool written;             /* its pyprocs entry is in the map */
	uint64_t forgot_ns;       /* exec'd or exited then: an answer learned before is stale */
	struct pywalk_where where;
};

#define BPF_PY_ASK_MAX 16        /* processes asked about per batch */

struct bpf_python {
	int map_fd;               /* pyprocs */
	int (*where)(void *arg, uint32_t pid, struct pywalk_where *out);
	void *arg;
	struct cs_hash procs;     /* pid -> struct bpf_pyproc */
	uint32_t gen;
	uint32_t ask[BPF_PY_ASK_MAX];
	int nask;
	uint64_t read, cut, failed, not_read; /* samples by what the program read */
	uint64_t acts_off;        /* ... failed: an activation's current frame not in the chain */
	uint64_t returning;       /* ... read: the innermost frame found returning (CSB_PY_RETURNING) */
	/* a sample's walked frames, then their code objects' PYWALK_CODE_FP (the event's py) */
	struct pywalk_frame out[CSB_PY_MAX];
	uint64_t fp[CSB_PY_MAX];
};

static bool bpf_py_eq(const void *item, const void *key)
{
	return ((const struct bpf_pyproc *)item)->pid == *(const uint32_t *)key;
}

static struct bpf_pyproc *bpf_py_find(struct bpf_python *p, uint32_t pid)
{
	return cs_hash_find(&p->procs, cs_hash_u64(pid), bpf_py_eq, &pid);
}

int bpf_python_new(struct bpf_python **out, struct bpf_map *pyprocs, const struct sampler_opts *opts)
{
	*out = NULL;
	if (!opts->py_where)
		return 0;
	struct bpf_python *p = cs_calloc(1, sizeof(*p));
	p->map_fd = bpf_map__fd(pyprocs);
	p->where = opts->py_where;
	p->arg = opts->py_where_arg;
	*out = p;
	return 0;
}

void bpf_python_free(struct bpf_python *p)
{
	if (!p)
		return;
	cs_hash_free_items(&p->procs, free);
	free(p);
}

/* The Python part of record r (size bytes, its user frames already checked) into the sample
 * event being filled (pe; frames kept in events' arena). */
void bpf_python_sample(struct bpf_python *p, struct sampler_events *events,
		       struct sampler_pending *pe, const struct csb_sample *r, size_t size)
{
	struct sampler_event *ev = &pe->ev;
	struct bpf_pyproc *pp = p ? bpf_py_find(p, r->pid) : NULL;

	ev->sample.py_kernel = SAMPLER_PY_NOT_READ;
	if (!p)
		return;
	if (r->py_state == CSB_PY_NONE || !pp || !pp->written) {
		/* not told yet: ask the recorder after this batch (once per batch and process) */
		bool asked = false;
		for (int i = 0; i < p->nask && !asked; i++)
			asked = p->ask[i] == r->pid;
		if (!asked && p->nask < BPF_PY_ASK_MAX && (!pp || !pp->written))
			p->ask[p->nask++] = r->pid;
		p->not_read++;
		return;
	}
	int n = bpf_python_walk(r, size, &pp->where.walk, p->out, p->fp);
	if (n < 0) {
		ev->sample.py_kernel = SAMPLER_PY_FAILED;
		p->failed++;
		p->acts_off += n == -EAGAIN;
		return;
	}
	bool cut = r->py_state == CSB_PY_TRUNCATED;
	ev->sample.py_kernel = cut ? SAMPLER_PY_CUT : SAMPLER_PY_READ;
	ev->sample.npy = (uint32_t)n;
	ev->sample.py_first = r->py_first;
	if (n) {
		pe->off_e = sampler_events_keep(events, p->out, (size_t)n * sizeof(p->out[0]));
		sampler_events_keep(events, p->fp, (size_t)n * sizeof(p->fp[0]));
	}
	if (cut)
		p->cut++;
	else
		p->read++;
	p->returning += (r->flags & CSB_PY_RETURNING) != 0;
}

/* Ask the recorder about the processes this batch's samples were not read for, and give the
 * program those it knows now. */
void bpf_python_work(struct bpf_python *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nask; i++) {
		uint32_t pid = p->ask[i];
		struct pywalk_where w;
		if (p->where(p->arg, pid, &w))
			continue;
		struct bpf_pyproc *pp = bpf_py_find(p, pid);
		if (!pp) {
			pp = cs_calloc(1, sizeof(*pp));
			pp->pid = pid;
			cs_hash_insert(&p->procs, cs_hash_u64(pid), pp);
		}
		if (w.known_ns <= pp->forgot_ns)
			continue;  /* of the image before an exec: the recorder has not caught up */
		pp->where = w;
		struct csb_pyproc v = {
			.interp_head = w.interp_head, .interp_next = w.interp_next,
			.interp_threads_head = w.interp_threads_head, .tstate_next = w.tstate_next,
			.tstate_native_tid = w.tstate_native_tid, .tstate_cframe = w.tstate_cframe,
			.cframe_current_frame = w.cframe_current_frame,
			.cframe_previous = w.cframe_previous,
			.tstate_current_frame = w.tstate_current_frame,
			.frame_code = w.walk.frame_code, .frame_previous = w.walk.frame_previous,
			.frame_instr = w.walk.frame_instr, .frame_is_entry = w.walk.frame_is_entry,
			.frame_owner = w.walk.frame_owner, .frame_read = w.walk.frame_read,
			.code_qualname = w.code_qualname, .code_filename = w.code_filename,
			.gen = ++p->gen, .code_tag = w.walk.code_tag, .want_sps = w.want_sps,
			.owner_cstack = w.walk.owner_cstack };
		if (v.frame_read > CSB_PY_FRAME_READ)
			continue;  /* a layout the program cannot hold: read by the recorder */
		pp->written = bpf_map_update_elem(p->map_fd, &pid, &v, BPF_ANY) == 0;
	}
	p->nask = 0;
}

/* A process exec'd or exited: what the program knew of it is gone. */
void bpf_python_event(struct bpf_python *p, const struct sampler_event *ev)
{
	bool gone = (ev->type == SAMPLER_EV_COMM && ev->comm.exec) ||
		    (ev->type == SAMPLER_EV_EXIT && ev->pid == ev->tid);
	if (!p || !gone)
		return;
	uint32_t pid = ev->pid;
	struct bpf_pyproc *pp = bpf_py_find(p, pid);
	if (!pp) {
		pp = cs_calloc(1, sizeof(*pp));
		pp->pid = pid;
		cs_hash_insert(&p->procs, cs_hash_u64(pid), pp);
	}
	if (pp->written)
		bpf_map_delete_elem(p->map_fd, &pid);
	pp->written = false;
	pp->forgot_ns = ev->time;
}

void bpf_python_describe(struct bpf_python *p, char *buf, size_t len)
{
	if (!p || !(p->read + p->cut + p->failed)) {
		snprintf(buf, len, "%s", "");
		return;
	}
	snprintf(buf, len, "; Python frames read at the sample for %llu samples (%llu of them cut at %d frames, %llu with a callback returning), not for %llu (torn at the sample, shown not read; %llu of them with an activation being entered or left)",
		 (unsigned long long)(p->read + p->cut), (unsigned long long)p->cut, CSB_PY_MAX,
		 (unsigned long long)p->returning,
		 (unsigned long long)p->failed, (unsigned long long)p->acts_off);
}

#endif
