/* sampler_bpf.bpf.c: the BPF half of `record --mode bpf`, compiled at build time with
 * clang -target bpf against the running kernel's BTF (CO-RE) and embedded in csampler as a
 * libbpf skeleton. It runs on every tick of a cpu-clock perf event per CPU:
 *   - keeps only the sampled processes (the targets map, grown by the fork tracepoint below;
 *     or every process, or those under one cgroup);
 *   - takes the kernel stack with bpf_get_stack;
 *   - walks the user stack in the kernel: per PC, the unwind row of the file it is in (rows
 *     built by the loader from .eh_frame/.debug_frame, shared by every process mapping that
 *     file), else frame pointers; one bpf_loop iteration per frame;
 *   - in a process running CPython (the pyprocs map, written by the loader once the recorder
 *     found its interpreter), reads the thread's Python frame chain as it is at the sample;
 *   - writes pid, tid, CLOCK_MONOTONIC time, CPU, both stacks and the Python frames to a ring
 *     buffer.
 * The loader (sampler_bpf.c) turns the records into the sampler's events. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "sampler/sampler_bpf_shared.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 filter_mode = CSB_FILTER_PIDS;
const volatile __u64 filter_cgroup_id;
const volatile __u32 filter_cgroup_level;
const volatile __u32 self_pid;      /* csampler itself: never sampled */
const volatile __u32 launch_pid;    /* launch mode: sampled from its exec on */
const volatile __u64 wake_bytes = CSB_RING_BYTES / 4; /* a quarter of the ring: the reader is woken */
const volatile __u64 slice_wake_bytes = CSB_RING_BYTES / 4; /* the same, of the slices' ring */
const volatile __u32 slice_bytes = 8192; /* stack sent where the walk failed without rows */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* preallocated, 65536 entries took 15 ms to create */
	__uint(max_entries, 65536);
	__type(key, __u32);             /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CSB_RING_BYTES);
} samples SEC(".maps");

/* Samples sent with a stack slice (submit_with_slice), a ring of their own: they are large
 * (up to CSB_SLICE_MAX of stack each) and come in bursts at the start (before a file's rows
 * are loaded), which a ring small enough to keep the other samples' writes cheap would not
 * hold (sampler_bpf.c, bpf_ring_bytes) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CSB_RING_BYTES);
} slices SEC(".maps");

/* A sample being built: the record, and room for its Python frames after user[nuser] */
struct sample_buf {
	struct csb_sample s;
	struct csb_pyframe tail[CSB_PY_MAX];
	__u64 tail_acts[CSB_PY_MAX_ACTS];
	__u64 tail_kernel[CSB_MAX_KERNEL + CSB_MAX_USER];
	/* the kernel frames, copied after the others at the end; then (CSB_USER_SPS) each user
	 * frame's sp, written by the walk right after them, so that one copy takes both (a copy
	 * of its own doubled the states the verifier walks) */
	__u64 kstack[CSB_MAX_KERNEL + CSB_MAX_USER + 1];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_buf);
} scratch SEC(".maps");

#define CSB_PY_SCAN_WORDS 256       /* 2 KiB of data stack looked through for a returning frame */

/* The Python frames of the sample being built (then copied after its user frames). */
struct py_buf {
	struct csb_pyframe f[CSB_PY_MAX];
	__u8 fb[CSB_PY_FRAME_READ];     /* the frame being read: its fields at the layout's offsets */
	__u64 acts[CSB_PY_MAX_ACTS];    /* each activation's current frame (3.11, 3.12) */
	__u64 win[CSB_PY_SCAN_WORDS];   /* the data stack above an outer frame (py_returning) */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_buf);
} pyscratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);             /* tgid */
	__type(value, struct csb_pyproc);
} pyprocs SEC(".maps");

/* A thread's PyThreadState, found once by walking the interpreter's thread list (so a new
 * thread's first sample has its frames: a map user space filled would miss it until the
 * recorder got to it), checked at each use by its native_thread_id. */
struct pythread {
	__u64 tstate;
	__u32 gen, pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);             /* pid_tgid */
	__type(value, struct pythread);
} pythreads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CSB_STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);  /* the loader writes rows in place */
	__uint(max_entries, CSB_MAX_ROWS);
	__type(key, __u32);
	__type(value, struct csb_row);
} rows SEC(".maps");

/* Each CPU's memo of rows found (find_row's answers), by the file's slice of rows and the pc
 * in the file: a binary search over a file's tens of thousands of rows takes some 16
 * steps a frame, the memo one lookup. A slice of rows is never rewritten nor reused for
 * another file (sampler_bpf_tables.c appends), so an answer stays true for the recording.
 * One array of CSB_ROW_MEMO_SLOTS a CPU, indexed by CPU (the loader sizes it and sets
 * row_memo_cpus): the program does not run twice at once on one CPU, so an entry is never
 * read half written. */
struct row_memo {
	__u64 key;                 /* ROW_MEMO_KEY(first, rel); 0: empty */
	struct csb_row row;
};
#define ROW_MEMO_KEY(first, rel) ((1ull << 63) | (__u64)(first) << 32 | (rel))
const volatile __u32 row_memo_cpus = 1;
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CSB_ROW_MEMO_SLOTS);
	__type(key, __u32);
	__type(value, struct row_memo);
} row_memo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 8 KiB a process: only those sampled */
	__uint(max_entries, 4096);
	__type(key, __u32);             /* tgid */
	__type(value, struct csb_proc);
} procs SEC(".maps");

/* A window of the user stack read at once: most frames' return addresses and saved rbp are read
 * from it instead of one bpf_probe_read_user each. */
#define CSB_WIN 2048
struct stack_window {
	__u64 w[CSB_WIN / 8];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_window);
} windows SEC(".maps");

/* The user memory the window holds: [lo, hi). */
struct window_range {
	__u64 lo, hi;
};

/* 8 bytes of user memory at addr, from the window, refilled from addr when outside it.
 * Returns 0 or the read's error. A global function: the verifier checks it once, not at each
 * call (inlined, it multiplied the walk's states by ten). */
__noinline long read_user8(struct window_range *wr, __u64 addr, __u64 *out)
{
	__u32 zero = 0;
	struct stack_window *win = bpf_map_lookup_elem(&windows, &zero);
	if (!wr || !out)
		return -1;
	if (!win)
		return bpf_probe_read_user(out, 8, (void *)addr);
	if (addr < wr->lo || addr + 8 > wr->hi) {
		if (bpf_probe_read_user(win->w, CSB_WIN, (void *)addr)) {
			wr->lo = wr->hi = 0; /* near the stack's top: one read */
			return bpf_probe_read_user(out, 8, (void *)addr);
		}
		wr->lo = addr;
		wr->hi = addr + CSB_WIN;
	}
	__u64 off = addr - wr->lo;
	if (off > CSB_WIN - 8 || (off & 7))
		return bpf_probe_read_user(out, 8, (void *)addr);
	*out = win->w[off / 8];
	return 0;
}

/* The walk's state between bpf_loop iterations, on the program's stack (the callback gets a
 * pointer to it). */
struct walk {
	__u64 ip, sp, bp;
	struct csb_sample *s;
	__u64 *sps;                     /* each frame's sp, after the kernel frames (sent for
					 * CSB_USER_SPS) */
	struct csb_proc *proc;
	/* the mapping of the last frame (a caller is mostly in its callee's file), and the last
	 * frame's row by its pc (recursion repeats return addresses): copies, not pointers */
	__u64 map_start, map_end, map_bias;
	__u32 map_first, map_count;
	__u64 last_pc;
	struct csb_row last_row;
	bool have_last;
	struct window_range wr;
};

static __always_inline void stat_add_n(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += n;
}

static __always_inline void stat_add(__u32 which)
{
	stat_add_n(which, 1);
}

/* The program's time for sample s, begun at t0; apart for those with Python frames read. */
static __always_inline void stat_done(struct csb_sample *s, __u64 t0)
{
	__u64 ns = bpf_ktime_get_ns() - t0;
	stat_add_n(CSB_STAT_NS, ns);
	if (s->py_state == CSB_PY_END || s->py_state == CSB_PY_TRUNCATED) {
		stat_add(CSB_STAT_PY);
		stat_add_n(CSB_STAT_PY_NS, ns);
	}
}

/* The reader drains the ring on its own timer (every few milliseconds): a sample wakes it only
 * when the ring is a quarter full, not each time (a wakeup per sample cost microseconds). The
 * ring's fill is asked (it reads the consumer's position, a line the reader writes: 0.23 us a
 * sample on this VM) once this CPU has written wake_bytes / 16 since it last asked, so the
 * wake-up comes at most that much a CPU late. bytes: the record about to be written. */
static __always_inline __u64 wakeup_flag(__u64 bytes)
{
	__u32 which = CSB_STAT_SINCE_QUERY;
	__u64 *since = bpf_map_lookup_elem(&stats, &which);
	if (since) {
		*since += bytes;
		if (*since < wake_bytes / 16)
			return BPF_RB_NO_WAKEUP;
		*since = 0;
	}
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wake_bytes
		       ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline bool wanted(__u32 tgid)
{
	if (tgid == 0 || tgid == self_pid)
		return false;
	if (filter_mode == CSB_FILTER_ALL)
		return true;
	if (filter_mode == CSB_FILTER_CGROUP)
		return bpf_get_current_ancestor_cgroup_id(filter_cgroup_level) == filter_cgroup_id;
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* Binary searches as bpf_loop callbacks: the verifier checks one step once, where a loop of
 * branches would be explored path by path (a second of verifier time at 23 steps). */
struct map_search {
	struct csb_proc *proc;
	__u64 pc;
	__u32 lo, hi;
};

static long map_step(__u32 i, void *arg)
{
	struct map_search *q = arg;
	if (q->lo >= q->hi || !q->proc)
		return 1;
	__u32 mid = (q->lo + q->hi) / 2;
	if (mid >= CSB_MAX_MAPS)
		return 1;
	if (q->proc->maps[mid].start <= q->pc)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/* The mapping of proc holding pc, or NULL. */
static __always_inline struct csb_map *find_map(struct csb_proc *proc, __u64 pc)
{
	struct map_search q = { .proc = proc, .pc = pc, .lo = 0, .hi = proc->nmaps };
	if (q.hi > CSB_MAX_MAPS)
		q.hi = CSB_MAX_MAPS;
	bpf_loop(10, map_step, &q, 0); /* 2^9 > CSB_MAX_MAPS */
	if (q.lo == 0 || q.lo > CSB_MAX_MAPS)
		return NULL;
	struct csb_map *m = &proc->maps[(q.lo - 1) & (CSB_MAX_MAPS - 1)];
	return pc < m->end ? m : NULL;
}

struct row_search {
	__u32 first, rel, lo, hi;
};

static long row_step(__u32 i, void *arg)
{
	struct row_search *q = arg;
	if (q->lo >= q->hi)
		return 1;
	__u32 mid = (q->lo + q->hi) / 2, key = q->first + mid;
	struct csb_row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return 1;
	if (r->pc <= q->rel)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/* The last row at or before rel among rows[first, first + count), or NULL. */
static __always_inline struct csb_row *find_row(__u32 first, __u32 count, __u32 rel)
{
	struct row_search q = { .first = first, .rel = rel, .lo = 0, .hi = count };
	bpf_loop(24, row_step, &q, 0); /* 2^24 > CSB_MAX_ROWS + 1 */
	if (q.lo == 0)
		return NULL;
	__u32 key = first + q.lo - 1;
	return bpf_map_lookup_elem(&rows, &key);
}

/* The row of rel among rows[first, first + count) into *out, from CPU cpu's memo, else found
 * (find_row) and remembered. Returns 0, or 1 when there is none. A global function: the
 * verifier checks it once, not in each of the walk's states (inlined, the memo took the
 * program's verification from 27,000 instructions to 42,000, some 60 ms more of start-up). */
__noinline long row_lookup(__u32 cpu, __u32 first, __u32 count, __u32 rel, struct csb_row *out)
{
	__u64 key = ROW_MEMO_KEY(first, rel);
	__u32 slot = cpu * CSB_ROW_MEMO_SLOTS +
		     ((__u32)((key * 0x9E3779B97F4A7C15ull) >> 52) & (CSB_ROW_MEMO_SLOTS - 1));
	struct row_memo *memo = cpu < row_memo_cpus ? bpf_map_lookup_elem(&row_memo, &slot) : NULL;
	if (!out)
		return 1;
	if (memo && memo->key == key) {
		*out = memo->row;
		return 0;
	}
	struct csb_row *r = find_row(first, count, rel);
	if (!r)
		return 1;
	*out = *r;
	if (memo) {
		memo->key = key;
		memo->row = *r;
	}
	return 0;
}

/* One frame: record w->ip, then find its caller. Returns 1 to stop. */
static long walk_frame(__u32 i, void *arg)
{
	struct walk *w = arg;
	struct csb_sample *s = w->s;
	if (!s)
		return 1;
	__u32 n = s->nuser;
	if (n >= CSB_MAX_USER) {
		s->flags |= CSB_USER_TRUNCATED;
		return 1;
	}
	s->user[n] = w->ip;
	s->nuser = n + 1;
	w->sps[n & 0xff] = w->sp; /* (always: a branch here would double the verifier's states) */

	/* A caller's entry is a return address: its rule is the call's, one byte before. */
	__u64 pc = n ? w->ip - 1 : w->ip, cfa, ra = 0, bp = w->bp;
	struct csb_row row = { .flags = CSB_ROW_GAP };
	if (w->have_last && pc == w->last_pc) {
		row = w->last_row;
	} else if (w->proc) {
		if (pc < w->map_start || pc >= w->map_end) {
			struct csb_map *m = find_map(w->proc, pc);
			w->map_start = m ? m->start : 0;
			w->map_end = m ? m->end : 0;
			w->map_bias = m ? m->bias : 0;
			w->map_first = m ? m->first : 0;
			w->map_count = m ? m->count : 0;
		}
		struct csb_row found;
		if (w->map_count &&
		    !row_lookup(s->cpu, w->map_first, w->map_count, (__u32)(pc - w->map_bias), &found)) {
			row = found;
			w->last_pc = pc;
			w->last_row = row;
			w->have_last = true;
		}
	}
	bool by_row = !(row.flags & CSB_ROW_GAP);
	if (by_row) {
		if (row.flags & CSB_ROW_END) {
			s->flags |= CSB_USER_COMPLETE;
			return 1;
		}
		cfa = (row.flags & CSB_ROW_CFA_BP ? w->bp : w->sp) + (__s64)row.cfa_off;
		if (read_user8(&w->wr, cfa - 8, &ra))
			goto error;
		if ((row.flags & CSB_ROW_BP_SAVED) && read_user8(&w->wr, cfa + 8 * (__s64)row.bp_off8, &bp))
			goto error;
	} else {
		/* frame pointers: [bp] is the caller's bp, [bp + 8] the return address */
		s->flags |= CSB_USER_NO_TABLE;
		if (w->bp == 0 && n > 0) {
			s->flags |= CSB_USER_FP_END; /* the outermost frame clears bp, or so it seems */
			return 1;
		}
		if (w->bp == 0)
			goto error; /* a leaf that keeps no frame pointer: nothing is known */
		if (read_user8(&w->wr, w->bp, &bp) || read_user8(&w->wr, w->bp + 8, &ra))
			goto error;
		cfa = w->bp + 16;
	}
	if (ra == 0)
		goto error;
	if (cfa <= w->sp)
		goto error; /* a caller's frame is above its callee's */
	if (!by_row && n + 1 >= CSB_FP_MASK_BITS) {
		/* fp_mask cannot mark it: the walk ends here, cut, and goes with a slice */
		s->flags |= CSB_USER_TRUNCATED;
		return 1;
	}
	if (!by_row)
		s->fp_mask[((n + 1) >> 6) & 1] |= 1ull << ((n + 1) & 63); /* the caller, by FP */
	w->ip = ra;
	w->sp = cfa;
	w->bp = bp;
	return 0;
error:
	s->flags |= CSB_USER_ERROR;
	return 1;
}

/* The registers the user's stack walk starts from: those of the tick when it hit user mode;
 * else those saved at kernel entry. The context is read in whole u64 fields only. */
static __always_inline void user_regs(struct bpf_perf_event_data *ctx, struct task_struct *task,
				      bool in_kernel, struct walk *w)
{
	if (in_kernel) {
		struct pt_regs *u = (struct pt_regs *)bpf_task_pt_regs(task);
		w->ip = BPF_CORE_READ(u, ip);
		w->sp = BPF_CORE_READ(u, sp);
		w->bp = BPF_CORE_READ(u, bp);
	} else {
		w->ip = *(volatile __u64 *)&ctx->regs.ip;
		w->sp = *(volatile __u64 *)&ctx->regs.sp;
		w->bp = *(volatile __u64 *)&ctx->regs.bp;
	}
}

/* Submit sample s with a slice of the user stack, for a walk that found no rows where it
 * failed (a file whose rows are not loaded yet, JIT code): user space's unwinder goes on from
 * the slice. Always 0, the program's answer. */
static __always_inline int submit_with_slice(struct csb_sample *s, const __u64 *kstack,
					     struct py_buf *pb, __u64 t0)
{
	/* The slice reaches up to the first page that cannot be read (the stack's top may be
	 * nearer than slice_bytes), and is read straight into the ring's record. */
	__u64 end = s->sp + slice_bytes, page = (s->sp | 4095) + 1;
	__u8 probe;
	for (int k = 0; k < CSB_SLICE_MAX / 4096 + 1 && page < end; k++, page += 4096)
		if (bpf_probe_read_user(&probe, 1, (void *)page)) {
			end = page;
			break;
		}
	__u64 size = end - s->sp;
	if (size > CSB_SLICE_MAX)
		size = CSB_SLICE_MAX;
	size &= 2 * CSB_SLICE_MAX - 1;  /* a bound the verifier sees */
	/* the ring record's size is a constant: the smallest of four that holds the slice */
	__u64 cls = size <= 4096 ? 4096 : size <= 8192 ? 8192 : size <= 16384 ? 16384 : CSB_SLICE_MAX;
	struct csb_slice_sample *r;
	const __u64 head = offsetof(struct csb_slice_sample, stack);
	if (cls == 4096)
		r = bpf_ringbuf_reserve(&slices, head + 4096, 0);
	else if (cls == 8192)
		r = bpf_ringbuf_reserve(&slices, head + 8192, 0);
	else if (cls == 16384)
		r = bpf_ringbuf_reserve(&slices, head + 16384, 0);
	else
		r = bpf_ringbuf_reserve(&slices, sizeof(*r), 0);
	if (!r) {
		stat_add(CSB_STAT_LOST);
		return 0;
	}
	s->flags |= CSB_SLICE_RECORD;
	if (size > cls)
		size = cls;
	if (size >= 64 && size <= CSB_SLICE_MAX &&
	    !bpf_probe_read_user(r->stack, size, (void *)s->sp)) {
		s->slice = size;
		s->flags |= CSB_USER_SLICE;
	}
	__u32 npy = s->npy;
	if (npy > CSB_PY_MAX)
		npy = CSB_PY_MAX;
	if (pb && npy)
		bpf_probe_read_kernel(r->py, npy * sizeof(struct csb_pyframe), pb->f);
	__u32 nacts = s->py_nacts;
	if (nacts > CSB_PY_MAX_ACTS)
		nacts = CSB_PY_MAX_ACTS;
	if (pb && nacts)
		bpf_probe_read_kernel(r->py_acts, nacts * 8, pb->acts);
	__u32 nkernel = s->nkernel;
	if (nkernel > CSB_MAX_KERNEL)
		nkernel = CSB_MAX_KERNEL;
	if (nkernel)
		bpf_probe_read_kernel(r->kernel, nkernel * 8, kstack);
	bpf_probe_read_kernel(&r->head, sizeof(r->head), s);
	/* (a slice is rare once the rows are loaded, and costly anyway: its ring's fill is asked
	 * each time) */
	bpf_ringbuf_submit(r, bpf_ringbuf_query(&slices, BPF_RB_AVAIL_DATA) > slice_wake_bytes
				      ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	stat_add(CSB_STAT_SAMPLES);
	stat_done(s, t0);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Python frames: the thread's CPython frame chain as it is at the sample (README "Python
 * frames"); user space names the code objects and splices the frames into the native stack. */

#define CSB_PY_MAX_THREADS 256      /* thread states passed looking for one thread's */
#define CSB_PY_MAX_INTERPS 8        /* interpreters passed (subinterpreters) */

static __always_inline bool read_u64(__u64 addr, __u64 *v)
{
	return addr && !(addr & 7) && bpf_probe_read_user(v, 8, (void *)addr) == 0;
}

/* The search of a thread's PyThreadState: one thread state (or the next interpreter) a step. */
struct ts_search {
	struct csb_pyproc *pp;
	__u64 interp, ts, found;
	__u32 tid, interps;
};

static long ts_step(__u32 i, void *arg)
{
	struct ts_search *q = arg;
	struct csb_pyproc *pp = q->pp;
	__u64 v;
	if (!pp)
		return 1;
	if (!q->ts) {
		/* this interpreter's threads are passed: the next interpreter's */
		if (q->interps++ >= CSB_PY_MAX_INTERPS || !read_u64(q->interp + pp->interp_next, &v) || !v)
			return 1;
		q->interp = v;
		if (!read_u64(v + pp->interp_threads_head, &q->ts))
			return 1;
		return 0;
	}
	if (!read_u64(q->ts + pp->tstate_native_tid, &v))
		return 1;
	if (v == q->tid) {
		q->found = q->ts;
		return 1;
	}
	if (!read_u64(q->ts + pp->tstate_next, &v))
		return 1;
	q->ts = v;
	return 0;
}

/* Thread tid's PyThreadState, from the cache when it still names the thread, else from the
 * interpreters' thread lists (then cached); 0 when there is none. */
static __always_inline __u64 py_thread_state(struct csb_pyproc *pp, __u64 id)
{
	__u32 tid = (__u32)id;
	__u64 native;
	struct pythread *c = bpf_map_lookup_elem(&pythreads, &id);
	if (c && c->gen == pp->gen && read_u64(c->tstate + pp->tstate_native_tid, &native) &&
	    native == tid)
		return c->tstate;
	struct ts_search q = { .pp = pp, .tid = tid };
	if (!read_u64(pp->interp_head, &q.interp) || !q.interp ||
	    !read_u64(q.interp + pp->interp_threads_head, &q.ts))
		return 0;
	bpf_loop(CSB_PY_MAX_THREADS, ts_step, &q, 0);
	if (q.found) {
		struct pythread v = { .tstate = q.found, .gen = pp->gen };
		bpf_map_update_elem(&pythreads, &id, &v, BPF_ANY);
	}
	return q.found;
}

/* The walk of the frame chain: one frame a step, into pb->f[n]. */
struct py_walk {
	struct csb_pyproc *pp;
	struct py_buf *pb;
	__u64 frame;
	__u32 n, state;
	__u64 last_code, last_fp;       /* recursion repeats a code object: read once */
};

static __always_inline __u64 fb_u64(struct py_buf *pb, __u32 off)
{
	return *(__u64 *)&pb->fb[off & (CSB_PY_FRAME_READ - 8)];
}

static long py_step(__u32 i, void *arg)
{
	struct py_walk *w = arg;
	struct csb_pyproc *pp = w->pp;
	struct py_buf *pb = w->pb;
	if (!pp || !pb)
		return 1;
	if (!w->frame) {
		w->state = CSB_PY_END;
		return 1;
	}
	if (w->n >= CSB_PY_MAX) {
		w->state = CSB_PY_TRUNCATED;
		return 1;
	}
	__u32 len = pp->frame_read;
	if (w->frame & 7 || w->frame > CSB_PYLINK_ADDR || len < 8 || len > CSB_PY_FRAME_READ ||
	    pp->frame_code > CSB_PY_FRAME_READ - 8 || pp->frame_previous > CSB_PY_FRAME_READ - 8 ||
	    pp->frame_instr > CSB_PY_FRAME_READ - 8 || pp->frame_owner >= CSB_PY_FRAME_READ ||
	    pp->frame_is_entry >= CSB_PY_FRAME_READ ||
	    bpf_probe_read_user(pb->fb, len, (void *)w->frame)) {
		w->state = CSB_PY_FAULT;
		return 1;
	}
	__u64 prev = fb_u64(pb, pp->frame_previous);
	__u64 link = (prev & CSB_PYLINK_ADDR) |
		     (__u64)pb->fb[pp->frame_owner & (CSB_PY_FRAME_READ - 1)] << CSB_PYLINK_OWNER_SHIFT;
	if (pp->frame_is_entry && pb->fb[pp->frame_is_entry & (CSB_PY_FRAME_READ - 1)])
		link |= CSB_PYLINK_ENTRY;
	struct csb_pyframe *f = &pb->f[w->n & (CSB_PY_MAX - 1)];
	__u64 code = fb_u64(pb, pp->frame_code) & ~(__u64)pp->code_tag;
	if (code != w->last_code) {
		w->last_code = code;
		/* its name and file (base/pywalk.h's PYWALK_CODE_FP: the same formula) */
		__u64 q, fn;
		w->last_fp = read_u64(code + pp->code_qualname, &q) &&
			     read_u64(code + pp->code_filename, &fn) ? q ^ (fn << 17 | fn >> 47) : 0;
	}
	f->code = code;
	f->instr = fb_u64(pb, pp->frame_instr);
	f->link = link;
	f->fp = w->last_fp;
	w->n++;
	w->frame = prev > CSB_PYLINK_ADDR ? 1 : prev; /* 1: not a frame, the next step says so */
	return 0;
}

/* 3.11, 3.12: the _PyCFrame chain, one a step: each native activation's current frame. */
struct cf_walk {
	struct csb_pyproc *pp;
	struct py_buf *pb;
	__u64 cframe;
	__u32 n;
};

static long cf_step(__u32 i, void *arg)
{
	struct cf_walk *c = arg;
	struct csb_pyproc *pp = c->pp;
	__u64 cur, prev;
	if (!pp || !c->pb || !c->cframe || c->n >= CSB_PY_MAX_ACTS ||
	    !read_u64(c->cframe + pp->cframe_current_frame, &cur) ||
	    !read_u64(c->cframe + pp->cframe_previous, &prev))
		return 1;
	/* the root _PyCFrame (in the thread state) has no frame: it ends the chain */
	if (!cur)
		return 1;
	c->pb->acts[c->n & (CSB_PY_MAX_ACTS - 1)] = cur;
	c->n++;
	c->cframe = prev;
	return 0;
}

/* The search of a returning frame's link: the first word of pb->win, from start on, that is
 * the shim's address. */
struct ret_scan {
	struct py_buf *pb;
	__u64 shim;
	__u32 start, found;
};

static long ret_step(__u32 i, void *arg)
{
	struct ret_scan *q = arg;
	if (!q->pb || i < q->start)
		return 0;
	if (q->pb->win[i & (CSB_PY_SCAN_WORDS - 1)] != q->shim)
		return 0;
	q->found = i;
	return 1;
}

/* 3.12+: the chain read begins with a shim (the innermost activation's entry frame), so that
 * activation had no frame of its own at the sample: its frame was returning, unlinked before
 * being cleared and popped (RETURN_VALUE sets the current frame to the frame's previous, the
 * shim, then clears it; its code object and link stay until the next push there). That frame
 * was pushed on the data stack after outer (the shim's previous: the frame that called into C,
 * which called back), so it is the first frame above outer that links to the shim (a C stack
 * address no Python object holds; a stale frame there with the same link is of the same call
 * path). Returns its address, 0 when none is found in the next 2 KiB. The time is spent only
 * on such samples (about 1% of a callback's). */
static __always_inline __u64 py_returning(struct csb_pyproc *pp, struct py_buf *pb, __u64 shim,
					  __u64 outer)
{
	__u32 len = CSB_PY_SCAN_WORDS * 8;
	if (!outer || outer & 7 || outer > CSB_PYLINK_ADDR || pp->frame_previous > CSB_PY_FRAME_READ - 8 ||
	    pp->frame_code > CSB_PY_FRAME_READ - 8 || pp->frame_owner >= CSB_PY_FRAME_READ)
		return 0;
	if (bpf_probe_read_user(pb->win, len, (void *)outer)) {
		/* the window passes the data stack chunk's mapping: up to the page's end */
		len = 4096 - (__u32)(outer & 4095);
		if (len > CSB_PY_SCAN_WORDS * 8)
			len = CSB_PY_SCAN_WORDS * 8;
		if (bpf_probe_read_user(pb->win, len, (void *)outer))
			return 0;
	}
	/* the frame's previous field is at frame_previous: the first frame can start at outer + 8 */
	struct ret_scan q = { .pb = pb, .shim = shim, .start = (pp->frame_previous + 8) / 8 };
	bpf_loop(len / 8, ret_step, &q, 0);
	if (!q.found)
		return 0;
	__u64 frame = outer + q.found * 8ull - pp->frame_previous, code;
	__u32 flen = pp->frame_read;
	if (flen < 8 || flen > CSB_PY_FRAME_READ || bpf_probe_read_user(pb->fb, flen, (void *)frame))
		return 0;
	code = fb_u64(pb, pp->frame_code) & ~(__u64)pp->code_tag;
	if (!code || code & 7 || code > CSB_PYLINK_ADDR ||
	    pb->fb[pp->frame_owner & (CSB_PY_FRAME_READ - 1)] >= pp->owner_cstack)
		return 0;
	return frame;
}

/* Read thread id's frame chain into pb->f; fills s->py_state, npy and py_first. */
static __always_inline void py_read(struct csb_pyproc *pp, struct py_buf *pb, __u64 id,
				    struct csb_sample *s)
{
	__u64 ts = py_thread_state(pp, id), frame = 0, cframe = 0;
	if (!ts) {
		s->py_state = CSB_PY_NO_THREAD;
		return;
	}
	bool ok = pp->tstate_cframe ? read_u64(ts + pp->tstate_cframe, &cframe) &&
					      read_u64(cframe + pp->cframe_current_frame, &frame)
				    : read_u64(ts + pp->tstate_current_frame, &frame);
	if (!ok) {
		s->py_state = CSB_PY_FAULT;
		return;
	}
	struct py_walk w = { .pp = pp, .pb = pb, .frame = frame, .state = CSB_PY_TRUNCATED };
	bpf_loop(CSB_PY_MAX + 1, py_step, &w, 0);
	__u64 returning = 0;
	if (pp->owner_cstack && w.n >= 2 && w.state != CSB_PY_FAULT &&
	    pb->f[0].link >> CSB_PYLINK_OWNER_SHIFT >= pp->owner_cstack)
		returning = py_returning(pp, pb, frame, pb->f[0].link & CSB_PYLINK_ADDR);
	if (returning) {
		/* the chain again, from the returning frame (it links to the shim) */
		frame = returning;
		w = (struct py_walk){ .pp = pp, .pb = pb, .frame = frame, .state = CSB_PY_TRUNCATED };
		bpf_loop(CSB_PY_MAX + 1, py_step, &w, 0);
		s->flags |= CSB_PY_RETURNING;
	}
	s->py_state = w.state;
	s->npy = w.n;
	s->py_first = frame;
	if (pp->tstate_cframe) {
		struct cf_walk c = { .pp = pp, .pb = pb, .cframe = cframe };
		bpf_loop(CSB_PY_MAX_ACTS, cf_step, &c, 0);
		s->py_nacts = c.n;
	}
}

SEC("perf_event")
int csb_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	if (!wanted(tgid))
		return 0;
	struct sample_buf *sb = bpf_map_lookup_elem(&scratch, &zero);
	struct walk walk = { 0 }, *w = &walk;
	if (!sb)
		return 0;
	struct csb_sample *s = &sb->s;
	__u64 t0 = bpf_ktime_get_ns();
	s->time = t0;
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = 0;
	s->nkernel = 0;
	s->nuser = 0;
	s->fp_mask[0] = s->fp_mask[1] = 0;
	s->py_state = CSB_PY_NONE;
	s->npy = 0;
	s->py_first = 0;
	s->py_nacts = 0;

	/* the context is read in whole u64 fields only */
	__u64 cs = *(volatile __u64 *)&ctx->regs.cs;
	bool in_kernel = (cs & 3) == 0;
	if (in_kernel) {
		long got = bpf_get_stack(ctx, sb->kstack, CSB_MAX_KERNEL * 8, 0);
		if (got > 0)
			s->nkernel = (__u32)got / 8;
	}
	struct task_struct *task = bpf_get_current_task_btf();
	if (!task->mm) {
		s->flags |= CSB_KERNEL_THREAD;
	} else {
		user_regs(ctx, task, in_kernel, w);
		s->ip = w->ip;
		s->sp = w->sp;
		s->bp = w->bp;
		w->s = s;
		w->sps = sb->kstack + (s->nkernel & CSB_MAX_KERNEL);
		w->proc = bpf_map_lookup_elem(&procs, &tgid);
		bpf_loop(CSB_MAX_USER + 1, walk_frame, w, 0);
	}
	s->slice = 0;
	/* A walk that took a frame-pointer step and did not end at an outermost frame's row
	 * (an error, or a zero frame pointer that may be JIT code's garbage) is uncertain. One
	 * cut at CSB_MAX_USER frames is incomplete: user space's unwinder takes up to 1024 from
	 * the slice (with 127 frames, 4.5% of the PyTorch loop's samples were cut there: Python's
	 * nested imports, 130 and more native frames deep). A slice record carries the Python
	 * frames the program read too (submit_with_slice). */
	bool slice = (((s->flags & CSB_USER_NO_TABLE) && !(s->flags & CSB_USER_COMPLETE)) ||
		      (s->flags & CSB_USER_TRUNCATED)) && slice_bytes;
	struct csb_pyproc *pp = task->mm ? bpf_map_lookup_elem(&pyprocs, &tgid) : NULL;
	struct py_buf *pb = bpf_map_lookup_elem(&pyscratch, &zero);
	if (pp && pb)
		py_read(pp, pb, id, s);
	if (slice)
		return submit_with_slice(s, sb->kstack, pb, t0);
	__u32 nuser = s->nuser & 0xff, npy = s->npy;
	if (npy > CSB_PY_MAX)
		npy = CSB_PY_MAX;
	__u64 pybytes = (__u64)npy * sizeof(struct csb_pyframe);
	__u32 nacts = s->py_nacts;
	if (nacts > CSB_PY_MAX_ACTS)
		nacts = CSB_PY_MAX_ACTS;
	__u64 actbytes = (__u64)nacts * 8;
	__u32 nkernel = s->nkernel;
	if (nkernel > CSB_MAX_KERNEL)
		nkernel = CSB_MAX_KERNEL;
	/* the kernel frames, then (a process that wants them) the user frames' sps */
	__u64 want = pp && pp->want_sps ? 1 : 0;
	__u64 kbytes = ((__u64)nkernel + nuser * want) * 8;
	s->flags |= CSB_USER_SPS * (__u32)want;
	s->npy = npy;
	s->py_nacts = nacts;
	s->nkernel = nkernel;
	/* the Python frames follow user[nuser], their activations' current frames follow them,
	 * then the kernel frames (CSB_KERNEL_AT) */
	/* (each length is bounded by its clamp above, which the verifier follows: the tails of
	 * sample_buf hold the most of each) */
	if (pb && pybytes)
		bpf_probe_read_kernel((__u8 *)s->user + nuser * 8, pybytes, pb->f);
	if (pb && actbytes)
		bpf_probe_read_kernel((__u8 *)s->user + nuser * 8 + pybytes, actbytes, pb->acts);
	if (kbytes)
		bpf_probe_read_kernel((__u8 *)s->user + nuser * 8 + pybytes + actbytes, kbytes, sb->kstack);
	__u64 size = offsetof(struct csb_sample, user) + (__u64)nuser * 8 + pybytes + actbytes + kbytes;
	if (size > sizeof(*sb))
		size = sizeof(*sb);
	if (bpf_ringbuf_output(&samples, sb, size, wakeup_flag(size)))
		stat_add(CSB_STAT_LOST);
	else
		stat_add(CSB_STAT_SAMPLES);
	stat_done(s, t0);
	return 0;
}

/* A process created by a sampled one is sampled too (threads share their tgid already). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(csb_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;
	if (filter_mode != CSB_FILTER_PIDS || ptgid == ctgid)
		return 0;
	if (bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	return 0;
}

/* Launch mode: the command is sampled from its exec on (perf mode's enable_on_exec), so no
 * sample is taken in csampler's code between the fork and the exec. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(csb_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	__u8 one = 1;
	if (launch_pid && tgid == launch_pid)
		bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY);
	return 0;
}
