/* sampler_bpf.bpf.c: the BPF half of `record --mode bpf`, compiled at build time with
 * clang -target bpf against the running kernel's BTF (CO-RE) and embedded in csampler as a
 * libbpf skeleton. It runs on every tick of a cpu-clock perf event per CPU:
 *   - keeps only the sampled processes (the targets map, grown by the fork tracepoint below;
 *     or every process, or those under one cgroup);
 *   - takes the kernel stack with bpf_get_stack;
 *   - walks the user stack in the kernel: per PC, the unwind row of the file it is in (rows
 *     built by the loader from .eh_frame/.debug_frame, shared by every process mapping that
 *     file), else frame pointers; one bpf_loop iteration per frame;
 *   - writes pid, tid, CLOCK_MONOTONIC time, CPU and both stacks to a ring buffer.
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
const volatile __u32 slice_bytes = 8192; /* stack sent where the walk failed without rows */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);             /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CSB_RING_BYTES);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct csb_sample);
} scratch SEC(".maps");

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
	__u8 b[CSB_WIN];
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
		if (bpf_probe_read_user(win->b, CSB_WIN, (void *)addr)) {
			wr->lo = wr->hi = 0; /* near the stack's top: one read */
			return bpf_probe_read_user(out, 8, (void *)addr);
		}
		wr->lo = addr;
		wr->hi = addr + CSB_WIN;
	}
	__u64 off = addr - wr->lo;
	if (off > CSB_WIN - 8)
		return bpf_probe_read_user(out, 8, (void *)addr);
	*out = *(__u64 *)&win->b[off];
	return 0;
}

/* The walk's state between bpf_loop iterations, on the program's stack (the callback gets a
 * pointer to it). */
struct walk {
	__u64 ip, sp, bp;
	struct csb_sample *s;
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

/* The reader drains the ring on its own timer (every few milliseconds): a sample wakes it only
 * when the ring is a quarter full, not each time (a wakeup per sample cost microseconds). */
static __always_inline __u64 wakeup_flag(void)
{
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > CSB_RING_BYTES / 4
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
		struct csb_row *r = NULL;
		if (w->map_count)
			r = find_row(w->map_first, w->map_count, (__u32)(pc - w->map_bias));
		if (r) {
			row = *r;
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
static __always_inline int submit_with_slice(struct csb_sample *s, __u64 t0)
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
	if (cls == 4096)
		r = bpf_ringbuf_reserve(&samples, sizeof(struct csb_sample) + 4096, 0);
	else if (cls == 8192)
		r = bpf_ringbuf_reserve(&samples, sizeof(struct csb_sample) + 8192, 0);
	else if (cls == 16384)
		r = bpf_ringbuf_reserve(&samples, sizeof(struct csb_sample) + 16384, 0);
	else
		r = bpf_ringbuf_reserve(&samples, sizeof(*r), 0);
	if (!r) {
		stat_add(CSB_STAT_LOST);
		return 0;
	}
	if (size > cls)
		size = cls;
	if (size >= 64 && size <= CSB_SLICE_MAX &&
	    !bpf_probe_read_user(r->stack, size, (void *)s->sp)) {
		s->slice = size;
		s->flags |= CSB_USER_SLICE;
	}
	bpf_probe_read_kernel(&r->head, sizeof(r->head), s);
	bpf_ringbuf_submit(r, wakeup_flag());
	stat_add(CSB_STAT_SAMPLES);
	stat_add_n(CSB_STAT_NS, bpf_ktime_get_ns() - t0);
	return 0;
}

SEC("perf_event")
int csb_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	if (!wanted(tgid))
		return 0;
	struct csb_sample *s = bpf_map_lookup_elem(&scratch, &zero);
	struct walk walk = { 0 }, *w = &walk;
	if (!s)
		return 0;
	__u64 t0 = bpf_ktime_get_ns();
	s->time = t0;
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = 0;
	s->nkernel = 0;
	s->nuser = 0;
	s->fp_mask[0] = s->fp_mask[1] = 0;

	/* the context is read in whole u64 fields only */
	__u64 cs = *(volatile __u64 *)&ctx->regs.cs;
	bool in_kernel = (cs & 3) == 0;
	if (in_kernel) {
		long got = bpf_get_stack(ctx, s->kernel, sizeof(s->kernel), 0);
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
		w->proc = bpf_map_lookup_elem(&procs, &tgid);
		bpf_loop(CSB_MAX_USER + 1, walk_frame, w, 0);
	}
	s->slice = 0;
	/* A walk that took a frame-pointer step and did not end at an outermost frame's row
	 * (an error, or a zero frame pointer that may be JIT code's garbage) is uncertain. One
	 * cut at CSB_MAX_USER frames is incomplete: user space's unwinder takes up to 1024 from
	 * the slice (with 127 frames, 4.5% of the PyTorch loop's samples were cut there: Python's
	 * nested imports, 130 and more native frames deep). */
	if ((((s->flags & CSB_USER_NO_TABLE) && !(s->flags & CSB_USER_COMPLETE)) ||
	     (s->flags & CSB_USER_TRUNCATED)) && slice_bytes)
		return submit_with_slice(s, t0);
	__u64 size = offsetof(struct csb_sample, user) + (__u64)(s->nuser & 0xff) * 8;
	if (size > sizeof(*s))
		size = sizeof(*s);
	if (bpf_ringbuf_output(&samples, s, size, wakeup_flag()))
		stat_add(CSB_STAT_LOST);
	else
		stat_add(CSB_STAT_SAMPLES);
	stat_add_n(CSB_STAT_NS, bpf_ktime_get_ns() - t0);
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
