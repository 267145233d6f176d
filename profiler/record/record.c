/* record.c: the recording engine (record.h). Two threads: a reader thread only copies
 * records out of the per-CPU rings into a queue (so nothing the main thread does can make the
 * rings overflow); the main thread polls that queue, a signal self-pipe and the targets'
 * pidfds, unwinds each sample (tens of microseconds), writes interned locations, stacks and
 * samples in chunks, and every 250 ms symbolizes the locations that are new, so that at the
 * end little is left to name and the file no longer needs the binaries. */
#include "record/record.h"

#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "base/hash.h"
#include "format/datafile.h"
#include "format/records.h"
#include "record/gpu_attach.h"
#include "record/gpu_channel.h"
#include "record/output.h"
#include "record/prewarm.h"
#include "record/stackmemo.h"
#include "record/status.h"
#include "unwind/python.h"
#include "unwind/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define RECORD_MAX_LOCS 1024
#define RECORD_PY_DELAYS 65536
#define RECORD_NO_PIDFD (-2) /* pidfd_open is missing (kernel < 5.3, gVisor, valgrind) */
/* Copied-out records waiting for the unwinder. Past this, the reader stops draining and the
 * kernel counts what no longer fits in the rings as lost samples (reported, never silent). */
#define RECORD_QUEUE_MAX_BYTES (1ull << 30)
#define RECORD_START_NS 250000000ull /* the reader's start-up: collects every 5 ms (record_reader) */
#define RECORD_BPF_IDLE_MS 200       /* the reader's collection interval, bpf with no Python */
#define RECORD_LOOP_IDLE_MS 250      /* the main loop's poll timeout when nothing is due sooner */
#define RECORD_HEAP_PREFAULT (16u << 20) /* cs_heap_prepare: what a start-up allocates and frees */

/* Batches of records from the reader thread to the main thread (FIFO). */
struct record_queued_batch {
	struct sampler_batch *batch;
	uint64_t collect_ns;        /* when the collection began: every ring record older is in it
				     * or in an earlier batch */
};

struct record_queue {
	pthread_mutex_t lock;
	pthread_cond_t space;       /* signalled when bytes drop below the limit */
	struct record_queued_batch *items;
	size_t head, count, cap;
	size_t bytes, peak_bytes;
	int wake_fd;                /* eventfd: a batch was queued */
	int stop_fd;                /* eventfd: the reader must stop */
	volatile int stop;
	uint64_t idle_collect_ns;   /* a collection that found nothing, begun with the queue empty */
};

/* Open-addressing tables for interning; written by hand (no generic hash table in libc). */
struct loc_key {
	uint64_t offset;
	uint32_t module, flags;     /* DF_LOC_*: caller, how the frame was found */
};

struct record {
	const struct record_opts *o;
	struct sampler_opts sopts;  /* o->sampler, with the ptrace stop's Python copy hook */
	char *output;               /* the data file: o->output with its patterns expanded */
	struct record_names names;  /* rank, host and start time for the patterns and header */
	struct df_writer *w;
	struct df_strtab *strs;
	struct sampler *sampler;
	struct unwind_ctx *unwind;
	size_t modules_written;
	/* locations */
	struct loc_key *locs;       /* by id */
	size_t nlocs, cap_locs;
	struct cs_map loc_ids;      /* (offset, module << 32 | flags) -> id (base/hash.h) */
	/* stacks: ids + hash of their loc sequences */
	uint32_t *stack_data;       /* concatenated loc ids */
	size_t nstack_data, cap_stack_data;
	uint64_t *stack_pos;        /* by id: offset << 16 | n ... see record_stack_at */
	uint32_t *stack_len;
	size_t nstacks, cap_stacks;
	struct cs_hash stack_ids;   /* hash of the loc sequence -> id + 1, as a pointer */
	struct cs_map gpu_trimmed;  /* (recorded launch stack, vendor) -> the stack kept */
	struct stackmemo memo;      /* kernel-walked stacks seen: their stack and flags */
	enum { RECORD_MEMO_ON, RECORD_MEMO_OFF, RECORD_MEMO_CHECK } memo_mode; /* CSAMPLER_STACK_MEMO */
	uint64_t memo_checked, memo_mismatches; /* check: hits computed again, and differing */
	/* counts */
	uint64_t nsamples, lost, stack_full, unwind_errors;
	uint64_t offcpu_samples;    /* --idle: weight of the off-CPU samples */
	uint64_t py_merged, py_changed, py_unread; /* samples by py_merge result */
	uint32_t *py_delay_us;     /* from sample to the read of its Python frames, the last
				    * RECORD_PY_DELAYS samples with an interpreter activation */
	uint64_t npy_delay;
	int python_seen;           /* a sample ran Python code (atomic: the reader thread reads it) */
	int python_mapped;         /* a target mapped a file named python* or libpython* (atomic) */
	uint64_t gpu_py_merged, gpu_py_unread;     /* launches with Python frames: named, not */
	struct cs_map tids, pids;   /* tids/pids seen in samples: (id, 0) -> 0; .n counts them */
	uint32_t last_tid, last_pid; /* the last sample's, in tids and pids (if last_set) */
	bool last_set;
	uint64_t start_ns, last_flush_ns, last_symbolize_ns;
	size_t nsymbolized;         /* locations [0, nsymbolized) have their SYMBOL record */
	/* the reader thread */
	struct record_queue q;
	pthread_t reader;
	bool reader_running;
	/* control */
	int sigpipe[2];
	pid_t child;
	int child_pidfd;
	int child_status;           /* as a shell reports it: 128+N for death by signal N */
	int child_signal;           /* the signal the command died of, or 0 */
	bool child_exited;
	/* launch mode: csampler's CPU time when the command was let go, and when it ended (0: not
	 * yet): what the recorder took while the command ran (record_print_cost) */
	uint64_t cpu_at_go_ns, cpu_at_exit_ns;
	int *target_pidfds;         /* -1: exited; RECORD_NO_PIDFD: alive, watched through /proc */
	size_t ntargets_alive;
	uint64_t run_start_ns;      /* csampler's own start, for its CPU share of the wall time */
	int stop_signal;
	int error;                  /* csampler's own failure: exit 125 */
	/* GPU capture: the library's files, read as they grow */
	struct gpu_channel *gpu;
	char **child_env;           /* launch mode with --gpu: the command's environment */
	struct gpu_attach *attach;  /* attach mode, --gpu on: one per PID (opts.gpu_inject) */
	size_t nloaded;             /* processes the library was loaded into */
	/* Every sampler event that happened before this time has been handled (the start of the
	 * newest collection whose records are all delivered): GPU launches wait for it, so that
	 * the mappings their return addresses fall in are known. */
	uint64_t events_seen_ns;
	struct record_gpu_note *gpu_notes;
	size_t ngpu_notes, cap_gpu_notes;
	struct record_status status; /* the live line on a terminal (status.h) */
};

/* A line the GPU library left, printed once at the end however many processes gave it. */
struct record_gpu_note {
	char *text;
	uint32_t severity;
	uint32_t count;
};

static volatile sig_atomic_t record_signal_pending;
static volatile sig_atomic_t record_signal_from_user;
static int record_wake_fd = -1; /* the write end of the self-pipe, for the handler only */
static volatile sig_atomic_t record_winch; /* the terminal was resized: the status line moves */

static void record_on_winch(int sig)
{
	(void)sig;
	record_winch = 1;
}

/* Signal handler: note the signal, wake the poll loop; nothing else. */
static void record_on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	record_signal_pending = sig;
	record_signal_from_user = si && (si->si_code == SI_USER || si->si_code == SI_QUEUE);
	if (record_wake_fd >= 0) {
		char c = (char)sig;
		ssize_t n = write(record_wake_fd, &c, 1);
		(void)n;
	}
	errno = saved;
}


static void record_write_modules(struct record *r)
{
	size_t n = unwind_module_count(r->unwind);
	for (; r->modules_written < n; r->modules_written++) {
		const struct unwind_module *m = unwind_module_get(r->unwind, (uint32_t)r->modules_written);
		df_put_module(r->w, &(struct df_module){ .id = (uint32_t)r->modules_written,
							 .flags = m->flags, .path = m->path,
							 .build_id = m->build_id });
	}
}

static uint32_t record_loc(struct record *r, uint32_t module, uint64_t offset, uint32_t flags)
{
	uint32_t *v = cs_map_slot(&r->loc_ids, offset, (uint64_t)module << 32 | flags);
	if (*v != CS_MAP_NONE)
		return *v;
	uint32_t id = *v = (uint32_t)r->nlocs;
	*CS_PUSH(r->locs, r->nlocs, r->cap_locs) = (struct loc_key){ offset, module, flags };
	df_put_loc(r->w, &(struct df_loc){ id, module, offset, flags });
	return id;
}

static uint64_t stack_hash_of(const uint32_t *ids, size_t n)
{
	uint64_t h = n;
	for (size_t i = 0; i < n; i++)
		h = cs_hash_u64(h ^ ids[i]);
	return h;
}

/* A stack being looked up in r->stack_ids: its loc sequence, and where the known ones are. */
struct record_stack_key {
	const struct record *r;
	const uint32_t *ids;
	uint32_t n;
};

static bool record_stack_eq(const void *item, const void *key)
{
	const struct record_stack_key *k = key;
	uint32_t id = (uint32_t)(uintptr_t)item - 1;
	return k->r->stack_len[id] == k->n &&
	       !memcmp(k->r->stack_data + k->r->stack_pos[id], k->ids, k->n * sizeof(uint32_t));
}

static uint32_t record_stack(struct record *r, const uint32_t *ids, uint32_t n)
{
	uint64_t h = stack_hash_of(ids, n);
	struct record_stack_key key = { r, ids, n };
	uintptr_t found = (uintptr_t)cs_hash_find(&r->stack_ids, h, record_stack_eq, &key);
	if (found)
		return (uint32_t)found - 1;
	uint32_t id = (uint32_t)r->nstacks;
	size_t cap2 = r->cap_stacks;
	cs_grow(&r->stack_pos, &r->cap_stacks, r->nstacks + 1, sizeof(uint64_t));
	cs_grow(&r->stack_len, &cap2, r->nstacks + 1, sizeof(uint32_t));
	cs_grow(&r->stack_data, &r->cap_stack_data, r->nstack_data + n, sizeof(uint32_t));
	memcpy(r->stack_data + r->nstack_data, ids, n * sizeof(uint32_t));
	r->stack_pos[id] = r->nstack_data;
	r->stack_len[id] = n;
	r->nstack_data += n;
	r->nstacks++;
	cs_hash_insert(&r->stack_ids, h, (void *)((uintptr_t)id + 1));
	df_put_stack(r->w, id, ids, n);
	if (r->o->live && r->o->live->stack)
		r->o->live->stack(r->o->live->arg, id, ids, n);
	return id;
}

static void record_raw(struct record *r, const struct sampler_event *ev, uint32_t flags)
{
	const struct unwind_sample *s = &ev->sample.snap;
	df_put_raw_sample(r->w, &(struct df_raw_sample){
		.time = ev->time, .pid = ev->pid, .tid = ev->tid, .cpu = ev->cpu, .flags = flags,
		.regs_mask = s->regs_mask & ((1ull << UNWIND_NREGS) - 1), /* regs[] holds no more */
		.regs = s->regs, .nkernel = s->nkernel_ips, .kernel_ips = s->kernel_ips,
		.stack_size = s->stack_size, .stack = s->stack });
}

/* Python frames in place of the interpreter's native activations (unwind/python.h). The
 * frame chain is read now, when the main thread gets to the sample, not when it was taken. */
/* The sampler's stop_copy (ptrace: the tracer thread, at the stop; perf: the reader thread, as
 * it reads the sample): py_capture of the unwinder. */
static size_t record_py_capture(void *arg, uint32_t pid, uint32_t tid, uint64_t sp,
				const uint8_t *stack, size_t got, uint8_t *buf, size_t cap)
{
	return py_capture(arg, pid, tid, sp, stack, got, buf, cap);
}

/* The sampler's py_where (bpf: the reader thread): py_where of the unwinder. */
static int record_py_where(void *arg, uint32_t pid, struct pywalk_where *out)
{
	return py_where(arg, pid, out);
}

static int record_python(struct record *r, const struct sampler_event *ev, struct unwind_loc *locs,
			 int n, uint32_t uflags, uint32_t *flags)
{
	const struct unwind_sample *s = &ev->sample.snap;
	enum py_merge_result res;
	struct py_stack stack = { s->stack, s->regs[UNWIND_REG_SP], s->stack_size,
				  (uflags & UNWIND_COMPLETE) != 0, s->regs, UNWIND_NREGS,
				  ev->sample.mem, ev->sample.mem_size, 0, ev->sample.mem_age_ns, false };
	bool have_stack = s->stack && s->stack_size && (s->regs_mask & (1ull << UNWIND_REG_SP));

	uint64_t now = cs_monotonic_ns();
	stack.age_ns = now > ev->time ? now - ev->time : 0;
	int walked = -1;
	if (ev->sample.py_kernel == SAMPLER_PY_READ || ev->sample.py_kernel == SAMPLER_PY_CUT)
		walked = py_merge_walked(r->unwind, ev->pid, ev->sample.py, ev->sample.py_fp,
					 (int)ev->sample.npy, ev->sample.py_first,
					 ev->sample.py_kernel == SAMPLER_PY_CUT, stack.age_ns, locs, n,
					 RECORD_MAX_LOCS, &res);
	/* frames the BPF program found torn at the sample are not read later in their place */
	struct py_stack torn = { .torn = true };
	bool tried = ev->sample.py_kernel == SAMPLER_PY_FAILED;
	if (walked >= 0)
		n = walked;
	else
		n = py_merge(r->unwind, ev->pid, ev->tid, have_stack ? &stack : tried ? &torn : NULL,
			     locs, n, RECORD_MAX_LOCS, &res);
	if (res != PY_MERGE_NONE) {
		if (!__atomic_load_n(&r->python_seen, __ATOMIC_RELAXED))
			__atomic_store_n(&r->python_seen, 1, __ATOMIC_RELAXED);
		if (!r->py_delay_us)
			r->py_delay_us = cs_malloc(RECORD_PY_DELAYS * sizeof(uint32_t));
		/* when the frames were taken: the reader's copy (perf), else now */
		uint64_t us = (ev->sample.mem_size && ev->sample.mem_age_ns ? ev->sample.mem_age_ns
									     : stack.age_ns) / 1000;
		r->py_delay_us[r->npy_delay++ % RECORD_PY_DELAYS] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	}
	switch (res) {
	case PY_MERGE_NONE:
		break;
	case PY_MERGE_OK:
		r->py_merged++;
		break;
	case PY_MERGE_CHANGED:
		r->py_merged++;
		r->py_changed++;
		*flags |= PROFILE_SAMPLE_PYTHON_CHANGED;
		break;
	case PY_MERGE_UNREADABLE:
	case PY_MERGE_UNSUPPORTED:
		r->py_unread++;
		*flags |= PROFILE_SAMPLE_PYTHON_UNREAD;
		break;
	}
	return n;
}

/* Whether a mapped file looks like a CPython interpreter (python3.12, libpython3.11.so.1.0):
 * then the reader collects often from the start, for its Python frames (record_reader). */
static bool record_python_path(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	b = b ? b + 1 : path;
	return b && (!strncmp(b, "python", 6) || !strncmp(b, "libpython", 9));
}

/* A stack the kernel walked (bpf): the user frames it found by frame-pointer steps are marked
 * so, as the unwinder marks its own (one location per user ip, after the kernel's). */
static void record_mark_fp(const struct sampler_event *ev, struct unwind_loc *locs, int n)
{
	const struct unwind_sample *s = &ev->sample.snap;
	if (!s->user_ips || !(ev->sample.user_fp_mask[0] | ev->sample.user_fp_mask[1]))
		return;
	for (size_t i = 0; i < s->nuser_ips && i < 128; i++) {
		int k = (int)(s->nkernel_ips + i);
		if (k < n && (ev->sample.user_fp_mask[i >> 6] >> (i & 63) & 1))
			locs[k].flags |= PROFILE_FRAME_FOUND_FP;
	}
}

/* The sample's key in the stack memo (stackmemo.h): false when it may not be remembered. A
 * stack the kernel walked (bpf, -g fp) is a function of its addresses and the process'
 * mappings, unless Python frames (read by the program, or to be read from the process) or
 * an off-CPU leaf come into it. */
static bool record_memo_key(struct record *r, const struct sampler_event *ev,
			    struct stackmemo_key *key)
{
	const struct unwind_sample *s = &ev->sample.snap;
	if (!s->user_ips || ev->sample.offcpu || ev->sample.npy ||
	    ev->sample.py_kernel != SAMPLER_PY_NOT_READ)
		return false;
	uint64_t gen = unwind_proc_generation(r->unwind, ev->pid);
	return gen && stackmemo_key_make(key, ev->pid, gen, ev->sample.unwind_flags,
					 ev->sample.user_fp_mask, s->kernel_ips, s->nkernel_ips,
					 s->user_ips, s->nuser_ips);
}

/* A sample of stack id stack and flags into the file, and counted. */
static void record_sample_put(struct record *r, const struct sampler_event *ev, uint32_t stack,
			      uint32_t flags)
{
	if (flags & PROFILE_SAMPLE_UNWIND_ERROR)
		r->unwind_errors++;
	if (flags & PROFILE_SAMPLE_STACK_FULL)
		r->stack_full++;
	struct df_sample rec = { ev->time, ev->pid, ev->tid, ev->cpu, stack, flags,
				 ev->sample.weight ? ev->sample.weight : 1 };
	df_put_sample(r->w, &rec);
	if (r->o->live && r->o->live->sample)
		r->o->live->sample(r->o->live->arg, ev->pid, ev->tid, stack, rec.weight);
	if (r->o->keep_raw && r->o->sampler.callgraph == SAMPLER_CALLGRAPH_DWARF)
		record_raw(r, ev, flags);
	r->nsamples++;
	/* (the same thread as the last sample's, most of the time: no lookup then) */
	if (!r->last_set || ev->tid != r->last_tid || ev->pid != r->last_pid) {
		*cs_map_slot(&r->tids, ev->tid, 0) = 0;
		*cs_map_slot(&r->pids, ev->pid, 0) = 0;
		r->last_tid = ev->tid;
		r->last_pid = ev->pid;
		r->last_set = true;
	}
}

static void record_sample(struct record *r, const struct sampler_event *ev)
{
	struct unwind_loc locs[RECORD_MAX_LOCS];
	uint32_t ids[RECORD_MAX_LOCS];
	uint32_t uflags = 0, flags = 0;
	struct stackmemo_key key;
	struct stackmemo_val known;
	bool memo = r->memo_mode != RECORD_MEMO_OFF && record_memo_key(r, ev, &key);

	bool hit = memo && stackmemo_find(&r->memo, &key, &known);
	if (hit && r->memo_mode != RECORD_MEMO_CHECK) {
		record_sample_put(r, ev, known.stack, known.flags);
		return;
	}
	int n = unwind_sample(r->unwind, &ev->sample.snap, locs, RECORD_MAX_LOCS, &uflags);

	if (n < 0) {
		n = 0;
		uflags |= UNWIND_ERROR;
	}
	uflags |= ev->sample.unwind_flags;
	record_mark_fp(ev, locs, n);
	/* remembered only when Python frames cannot come into it (py_merge leaves it as is) */
	memo = memo && (r->o->no_python || py_stack_native(r->unwind, locs, n));
	if (!r->o->no_python)
		n = record_python(r, ev, locs, n, uflags, &flags);
	if (ev->sample.offcpu) {
		/* --idle: why the thread was not running becomes the leaf, "[off-cpu: futex]" */
		if (n == RECORD_MAX_LOCS)
			n--;
		memmove(locs + 1, locs, (size_t)n * sizeof(*locs));
		locs[0] = (struct unwind_loc){ .module = unwind_offcpu_module(r->unwind),
					       .offset = (uint64_t)(int64_t)ev->sample.offcpu_syscall };
		n++;
		flags |= PROFILE_SAMPLE_OFFCPU;
		r->offcpu_samples += ev->sample.weight;
	}
	record_write_modules(r);
	bool seen_user = false;
	for (int i = 0; i < n; i++) {
		const struct unwind_module *m = unwind_module_get(r->unwind, locs[i].module);
		/* the kernel's frames and the off-CPU leaf: no return addresses */
		bool kernel = m && (m->flags & (PROFILE_MODULE_KERNEL | PROFILE_MODULE_OFFCPU));
		/* The first user frame after kernel frames is where the thread entered the
		 * kernel, not a return address: it is looked up as is, like the leaf. Python
		 * frame ids are no addresses: never adjusted. */
		bool caller = i > 0 && (kernel || seen_user) && !(m && (m->flags & PROFILE_MODULE_PYTHON));
		if (!kernel)
			seen_user = true;
		ids[i] = record_loc(r, locs[i].module, locs[i].offset,
				    (caller ? DF_LOC_CALLER : 0) | (locs[i].flags & DF_LOC_FOUND_MASK));
	}
	uint32_t stack = record_stack(r, ids, (uint32_t)n);
	if (uflags & (UNWIND_ERROR | UNWIND_NO_MAP))
		flags |= PROFILE_SAMPLE_UNWIND_ERROR;
	if (uflags & UNWIND_STOP_ANON)
		flags |= PROFILE_SAMPLE_STOP_ANON;
	if (uflags & UNWIND_STOP_NO_CFI)
		flags |= PROFILE_SAMPLE_STOP_NO_CFI;
	if (uflags & UNWIND_NO_MAP)
		flags |= PROFILE_SAMPLE_NO_MAP;
	/* Only when the unwinder needed stack beyond the copy: a copy that is merely full (the
	 * thread has more stack than it holds) says nothing about why an unwind stopped. */
	if (uflags & UNWIND_STACK_END)
		flags |= PROFILE_SAMPLE_STACK_FULL;
	if (hit) {
		/* CSAMPLER_STACK_MEMO=check: what the memo gave against the whole work */
		r->memo_checked++;
		if (known.stack != stack || known.flags != flags)
			r->memo_mismatches++;
	} else if (memo) {
		stackmemo_put(&r->memo, &key, (struct stackmemo_val){ stack, flags });
	}
	record_sample_put(r, ev, stack, flags);
}

/* ---- GPU records (gpu_channel.h) ---- */

/* How many leaf locations of a launch stack are the vendor's launch path (its runtime,
 * driver, tracer, the compiler's launch stub and the host wrapper above it): each location
 * named as record_symbolize will name it, leaf first, until the first frame of the program.
 * *skip_inner: the innermost inline frames of the next location that are on the path too (the
 * runtime's inline launch template in the program's function). 0 when the whole stack is the
 * path (kept whole: nothing else to show). */
static int record_gpu_trim(struct record *r, const struct gpu_vendor *v,
			   const struct unwind_loc *locs, int n, uint32_t *skip_inner)
{
	struct sym_frame frames[64];
	struct gpu_trim t;
	gpu_trim_init(&t, v);
	*skip_inner = 0;
	for (int i = 0; i < n; i++) {
		const struct unwind_module *m = unwind_module_get(r->unwind, locs[i].module);
		if (!m || (m->flags & PROFILE_MODULE_PYTHON))
			return i;
		if (gpu_trim_module(v, m->path))
			continue;
		int nf = sym_resolve(r->unwind, locs[i], true, frames, 64), k = 0;
		while (k < nf && gpu_trim_frame(&t, m->path, frames[k].name))
			k++;
		if (nf <= 0 || k < nf) {
			*skip_inner = (uint32_t)k;
			return i;
		}
	}
	return 0;
}

/* The launch stack as the data file keeps it (format version 2): the recorded one without
 * its leaf launch path (record_gpu_trim). Trimmed once per recorded stack. */
static uint32_t record_gpu_stack(struct record *r, const struct gpu_vendor *v,
				 const struct unwind_loc *locs, const uint32_t *ids, int n)
{
	uint32_t raw = record_stack(r, ids, (uint32_t)n);
	uint32_t *done = cs_map_slot(&r->gpu_trimmed, raw, v->id);
	if (*done != CS_MAP_NONE)
		return *done;
	uint32_t skip_inner, trimmed = raw;
	int drop = record_gpu_trim(r, v, locs, n, &skip_inner);
	if (skip_inner > DF_LOC_SKIP_MASK >> DF_LOC_SKIP_SHIFT)
		skip_inner = 0;   /* more inline frames than the bits hold: the location stays whole */
	if (drop || skip_inner) {
		uint32_t cut[RECORD_MAX_LOCS];
		memcpy(cut, ids + drop, (size_t)(n - drop) * sizeof(*cut));
		if (skip_inner)
			cut[0] = record_loc(r, locs[drop].module, locs[drop].offset,
					    DF_LOC_CALLER | skip_inner << DF_LOC_SKIP_SHIFT);
		trimmed = record_stack(r, cut, (uint32_t)(n - drop));
	}
	*cs_map_slot(&r->gpu_trimmed, raw, v->id) = trimmed;
	return trimmed;
}

/* The launching thread's Python frames, read by the library at the launch: named here from
 * the process' code objects, in place of the interpreter activations. */
static int record_gpu_python(struct record *r, const struct gpu_channel_launch *l,
			     struct unwind_loc *locs, int n)
{
	enum py_merge_result res;
	bool cut = (l->rec.flags & DF_GPU_LAUNCH_STACK_TRUNCATED) ||
		   (l->py_flags & (GPU_PY_TRUNCATED | GPU_PY_BROKEN));
	n = gpu_channel_merge_python(r->unwind, l->rec.pid, l->py, l->npy, cut, locs, n,
				     RECORD_MAX_LOCS, &res);
	if (res == PY_MERGE_OK || res == PY_MERGE_CHANGED)
		r->gpu_py_merged++;
	else if (res != PY_MERGE_NONE)
		r->gpu_py_unread++;
	return n;
}

/* A launch's return addresses go through the unwinder's view of the process' mappings and the
 * same location and stack interning as sampled stacks, so they are symbolized with them. Every
 * frame is a return address (the library's pcs[0] too): all are looked up as callers. */
static void record_gpu_launch(void *arg, const struct gpu_channel_launch *l)
{
	struct record *r = arg;
	struct unwind_loc locs[RECORD_MAX_LOCS];
	uint32_t ids[RECORD_MAX_LOCS];
	uint32_t uflags = 0;
	int n = 0;

	if (l->npcs) {
		struct unwind_sample s = { .pid = l->rec.pid, .tid = l->rec.tid,
					   .user_ips = l->pcs, .nuser_ips = l->npcs };
		n = unwind_sample(r->unwind, &s, locs, RECORD_MAX_LOCS, &uflags);
		if (n < 0)
			n = 0;
	}
	if (l->npy && n && !r->o->no_python)
		n = record_gpu_python(r, l, locs, n);
	record_write_modules(r);
	for (int i = 0; i < n; i++) {
		const struct unwind_module *m = unwind_module_get(r->unwind, locs[i].module);
		bool python = m && (m->flags & PROFILE_MODULE_PYTHON);
		ids[i] = record_loc(r, locs[i].module, locs[i].offset, python ? 0 : DF_LOC_CALLER);
	}
	struct df_gpu_launch rec = l->rec;
	if (uflags & UNWIND_NO_MAP)
		rec.flags |= DF_GPU_LAUNCH_NO_MAP;
	rec.stack = record_gpu_stack(r, gpu_vendor_get(l->vendor), locs, ids, n);
	rec.api = l->api[0] ? df_strtab_id(r->strs, r->w, l->api) : 0;
	df_put_gpu_launch(r->w, &rec);
}

static void record_gpu_activity(void *arg, const struct df_gpu_activity *a, const char *name)
{
	struct record *r = arg;
	struct df_gpu_activity rec = *a;
	rec.name = name[0] ? df_strtab_id(r->strs, r->w, name) : 0;
	df_put_gpu_activity(r->w, &rec);
	if (r->o->live && r->o->live->gpu_activity)
		r->o->live->gpu_activity(r->o->live->arg, a, name);
}

static void record_gpu_note(void *arg, uint32_t pid, uint32_t severity, const char *text)
{
	struct record *r = arg;
	df_put_gpu_note(r->w, &(struct df_gpu_note){ pid, severity, text });
	for (size_t i = 0; i < r->ngpu_notes; i++) {
		if (!strcmp(r->gpu_notes[i].text, text)) {
			r->gpu_notes[i].count++;
			return;
		}
	}
	if (r->ngpu_notes >= 32)
		return; /* the file keeps them all; the terminal gets the first few kinds */
	*CS_PUSH(r->gpu_notes, r->ngpu_notes, r->cap_gpu_notes) =
		(struct record_gpu_note){ cs_strdup(text), severity, 1 };
}

static const struct gpu_sink record_gpu_sink = {
	.launch = record_gpu_launch,
	.activity = record_gpu_activity,
	.note = record_gpu_note,
};

/* Whether a process' GPU status is worth a record: something was captured or went wrong. */
static bool record_gpu_info_worth(const struct df_gpu_info *i, uint64_t delivered)
{
	return delivered || i->status || i->launches || i->activities || i->dropped ||
	       i->launches_dropped || i->lost_timestamps || i->flush_timeouts || i->write_errors ||
	       i->bad_records ||
	       (i->flags & (DF_GPU_INFO_CUT | DF_GPU_INFO_CORRUPT));
}

/* At the end: everything the files still hold, then one DF_GPU_INFO per process. */
static void record_gpu_finish(struct record *r, uint64_t end_ns)
{
	if (!r->gpu)
		return;
	if (!r->o->argv)
		gpu_channel_set_max_time(r->gpu, end_ns); /* attached programs go on */
	gpu_channel_poll(r->gpu, 0, UINT64_MAX, true);
	for (size_t i = 0; i < gpu_channel_nprocesses(r->gpu); i++) {
		uint64_t delivered = 0;
		const struct df_gpu_info *info = gpu_channel_process(r->gpu, i, &delivered);
		if (record_gpu_info_worth(info, delivered))
			df_put_gpu_info(r->w, info);
	}
}

static void record_gpu_summary(struct record *r)
{
	uint64_t launches = gpu_channel_launches(r->gpu), acts = gpu_channel_activities(r->gpu);
	uint64_t dropped = 0, lost = 0, ldrop = 0;
	size_t nproc = gpu_channel_nprocesses(r->gpu);

	if (!r->gpu)
		return;
	for (size_t i = 0; i < r->ngpu_notes; i++) {
		const struct record_gpu_note *n = &r->gpu_notes[i];
		void (*say)(const char *, ...) = n->severity ? cs_warn : cs_info;
		if (n->count > 1)
			say("GPU: %s (%u processes)", n->text, n->count);
		else
			say("GPU: %s", n->text);
	}
	for (size_t i = 0; i < nproc; i++) {
		const struct df_gpu_info *info = gpu_channel_process(r->gpu, i, NULL);
		dropped += info->dropped;
		lost += info->lost_timestamps;
		ldrop += info->launches_dropped;
	}
	if (launches || acts)
		cs_info("GPU: %llu launches, %llu activity records from %zu processes",
			(unsigned long long)launches, (unsigned long long)acts, nproc);
	else if (r->o->gpu_mode == GPU_MODE_ON && r->o->argv && !nproc)
		cs_info("--gpu on: no GPU records: the command did not initialise CUDA, or no CUDA driver loaded the injection library");
	if (r->gpu_py_unread)
		cs_info("GPU: %llu of %llu launches from Python keep native frames: their code objects could not be read (the process had exited, or freed them, before csampler read them)",
			(unsigned long long)r->gpu_py_unread,
			(unsigned long long)(r->gpu_py_unread + r->gpu_py_merged));
	if (dropped || ldrop)
		cs_warn("GPU: %llu activity records dropped by CUPTI and %llu launch records lost: GPU time is undercounted",
			(unsigned long long)dropped, (unsigned long long)ldrop);
	if (lost)
		cs_warn("GPU: %llu activity records lost their timestamps (CUPTI device buffers ran out)",
			(unsigned long long)lost);
}

/* ---- GPU capture loaded into running processes (attach mode, --gpu on) ---- */

static void record_gpu_attach(struct record *r)
{
	const struct record_opts *o = r->o;
	char *config = gpu_attach_config(o->gpu.dir);
	r->attach = cs_calloc(o->npids, sizeof(*r->attach));
	for (size_t i = 0; i < o->npids; i++) {
		char why[768] = "";
		pid_t pid = o->pids[i];
		if (gpu_attach_started_with_env(pid))
			continue;   /* its records come as for any `csampler env` process */
		enum gpu_attach_outcome out = gpu_attach_start(&r->attach[i], pid, o->gpu.inject_lib,
							       o->gpu.cupti_lib, config, why,
							       sizeof(why));
		/* GPU_ATTACH_NOTED: the library's note says why, with the summary */
		if (out == GPU_ATTACH_DONE || out == GPU_ATTACH_NOTED)
			r->nloaded++;
		else
			r->attach[i].pid = 0;   /* no file of ours to remove */
		if (out == GPU_ATTACH_REFUSED)
			cs_warn("--gpu on: PID %d: %s; GPU capture off, CPU profile only", (int)pid, why);
		else if (out == GPU_ATTACH_SHARED)
			cs_info("--gpu on: PID %d: %s: its records are read as they come", (int)pid, why);
	}
	free(config);
}

static void record_gpu_detach(struct record *r)
{
	for (size_t i = 0; r->attach && i < r->o->npids; i++) {
		char why[768] = "";
		if (r->attach[i].attached && gpu_attach_stop(&r->attach[i], why, sizeof(why)))
			cs_warn("GPU: PID %d: detaching the GPU library: %s; its last GPU records may "
				"be missing", (int)r->o->pids[i], why);
	}
}

/* The files of the processes csampler loaded the library into are this session's: gone once
 * merged (a process started with `csampler env` keeps writing its own). */
static void record_gpu_attach_free(struct record *r)
{
	for (size_t i = 0; r->attach && i < r->o->npids; i++) {
		if (!r->attach[i].pid)
			continue;
		char *path = cs_asprintf("%s/gpu-%d.bin", r->o->gpu.dir, (int)r->attach[i].pid);
		unlink(path);
		free(path);
	}
	free(r->attach);
	r->attach = NULL;
}

static int record_event(void *arg, const struct sampler_event *ev)
{
	struct record *r = arg;

	switch (ev->type) {
	case SAMPLER_EV_SAMPLE:
		record_sample(r, ev);
		break;
	case SAMPLER_EV_MMAP: {
		df_put_mmap(r->w, &(struct df_mmap){ ev->pid, ev->tid, ev->time, ev->mmap.start,
						     ev->mmap.len, ev->mmap.pgoff, ev->mmap.prot,
						     ev->mmap.flags, ev->mmap.path });
		unwind_mmap(r->unwind, ev->pid, ev->mmap.start, ev->mmap.len, ev->mmap.pgoff,
			    ev->mmap.prot, ev->mmap.path);
		if (!r->python_mapped && record_python_path(ev->mmap.path))
			__atomic_store_n(&r->python_mapped, 1, __ATOMIC_RELAXED);
		break;
	}
	case SAMPLER_EV_COMM: {
		df_put_comm(r->w, &(struct df_comm){ ev->pid, ev->tid, ev->time, ev->comm.exec,
						     ev->comm.comm });
		if (ev->comm.exec) {
			/* GPU launches of the old image, while its mappings are still known */
			gpu_channel_poll(r->gpu, ev->pid, UINT64_MAX, false);
			unwind_exec(r->unwind, ev->pid);
			py_forget(r->unwind, ev->pid);
		}
		break;
	}
	case SAMPLER_EV_FORK:
	case SAMPLER_EV_EXIT: {
		df_put_task(r->w, ev->type == SAMPLER_EV_FORK ? DF_FORK : DF_EXIT,
			    &(struct df_task){ ev->pid, ev->task.ppid, ev->tid, ev->task.ptid,
					       ev->time });
		if (ev->type == SAMPLER_EV_FORK && ev->pid != ev->task.ppid) {
			unwind_fork(r->unwind, ev->task.ppid, ev->pid);
			if (r->gpu)
				gpu_channel_add_pid(r->gpu, ev->pid);
		} else if (ev->type == SAMPLER_EV_EXIT && ev->pid == ev->tid) {
			/* the library wrote its last records before the process exited: take
			 * them before the process' mappings are forgotten */
			gpu_channel_poll(r->gpu, ev->pid, UINT64_MAX, false);
			unwind_exit(r->unwind, ev->pid);
			py_forget(r->unwind, ev->pid);
		}
		break;
	}
	case SAMPLER_EV_LOST: {
		df_put_lost(r->w, &(struct df_lost){ ev->time, ev->lost.count });
		r->lost += ev->lost.count;
		break;
	}
	}
	return 0;
}

static void record_header_kv(struct record *r, const char *k, const char *v)
{
	df_put_header_kv(r->w, k, v);
}

static void record_write_header(struct record *r)
{
	const struct record_opts *o = r->o;
	struct cs_buf cmd = { 0 }, target = { 0 };
	struct utsname u;
	char host[256] = "";
	char num[64];

	cs_buf_printf(&cmd, "csampler");
	for (int i = 0; i < o->argc_all; i++)
		cs_buf_printf(&cmd, " %s", o->argv_all[i]);
	if (o->argv) {
		for (int i = 0; o->argv[i]; i++)
			cs_buf_printf(&target, "%s%s", i ? " " : "", o->argv[i]);
	} else {
		for (size_t i = 0; i < o->npids; i++)
			cs_buf_printf(&target, "%s%d", i ? "," : "pid ", (int)o->pids[i]);
	}
	record_header_kv(r, "csampler_version", CSAMPLER_VERSION);
	record_header_kv(r, "cmdline", cmd.data ? cmd.data : "");
	record_header_kv(r, "target", target.data ? target.data : "");
	record_header_kv(r, "mode", o->argv ? "launch" : "attach");
	gethostname(host, sizeof(host) - 1);
	record_header_kv(r, "hostname", host);
	if (r->names.rank >= 0) {      /* a distributed run's process (output.h) */
		snprintf(num, sizeof(num), "%lld", (long long)r->names.rank);
		record_header_kv(r, "rank", num);
		record_header_kv(r, "rank_from", r->names.rank_from);
	}
	if (uname(&u) == 0) {
		record_header_kv(r, "kernel", u.release);
		record_header_kv(r, "arch", u.machine);
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)cs_realtime_ns());
	record_header_kv(r, "start_realtime_ns", num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)r->start_ns);
	record_header_kv(r, "start_monotonic_ns", num);
	record_header_kv(r, "clock", "CLOCK_MONOTONIC");
	record_header_kv(r, "event", sampler_event_name(r->sampler));
	snprintf(num, sizeof(num), "%llu", (unsigned long long)o->sampler.freq_hz);
	record_header_kv(r, "rate_hz", num);
	/* bpf: the kernel walked the stacks (unwind rows, else frame pointers): no stack copies */
	const char *walked = sampler_callgraph(r->sampler);
	record_header_kv(r, "callgraph", walked ? walked :
			 o->sampler.callgraph == SAMPLER_CALLGRAPH_DWARF ? "dwarf" : "fp");
	snprintf(num, sizeof(num), "%u", walked ? 0 : o->sampler.stack_size);
	record_header_kv(r, "stack_size", num);
	snprintf(num, sizeof(num), "%u", o->sampler.mmap_pages);
	record_header_kv(r, "mmap_pages", num);
	record_header_kv(r, "kernel_frames", sampler_has_kernel(r->sampler) ? "yes" : "no");
	record_header_kv(r, "sampler", sampler_name(r->sampler));
	record_header_kv(r, "sampler_choice", sampler_choice(r->sampler));
	record_header_kv(r, "idle", o->sampler.idle ? "yes" : "no");
	const char *debuginfod = getenv("DEBUGINFOD_URLS");
	if (o->no_debuginfod)
		record_header_kv(r, "debuginfod", "off (--no-debuginfod)");
	else if (debuginfod && *debuginfod)
		record_header_kv(r, "debuginfod", debuginfod);
	if (o->gpu.dir) {
		record_header_kv(r, "gpu", o->argv ? "on" :
				 r->nloaded && r->nloaded == o->npids ? "on (attach: library loaded by csampler)" :
				 r->nloaded ? "on (attach: library loaded by csampler, and records of csampler env)" :
				 "on (attach: records of csampler env)");
		if (o->gpu.inject_lib)
			record_header_kv(r, "gpu_library", o->gpu.inject_lib);
		if (o->gpu.cupti_lib && o->argv) /* attached processes may have their own */
			record_header_kv(r, "cupti_library", o->gpu.cupti_lib);
	} else {
		char *v = cs_asprintf("off%s%s%s", o->gpu_off_reason ? " (" : "",
				      o->gpu_off_reason ? o->gpu_off_reason : "",
				      o->gpu_off_reason ? ")" : "");
		record_header_kv(r, "gpu", v);
		free(v);
	}
	cs_buf_free(&cmd);
	cs_buf_free(&target);
	df_flush(r->w);
}

/* ---- launch ---- */

/* Fork the command, stopped on a pipe until the events exist. The exec's errno comes back
 * through a close-on-exec pipe: EOF means the exec succeeded. */
static int record_fork(struct record *r, int *go_fd, int *err_fd)
{
	int go[2], er[2], log_fd = -1;
	if (r->o->child_log) {
		log_fd = open(r->o->child_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (log_fd < 0)
			return cs_error(errno, "cannot create %s for the command's output: %s; give another --log FILE",
					r->o->child_log, strerror(errno));
	}
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0)
		return cs_error(errno, "pipe2: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return cs_error(errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL); /* ignored ones would stay ignored across exec */
		signal(SIGXFSZ, SIG_DFL);
		close(go[1]);
		close(er[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(CS_EXIT_ERROR); /* csampler gave up before starting us */
		if (log_fd >= 0) {
			int nul = open("/dev/null", O_RDONLY);
			if (nul >= 0)
				dup2(nul, 0);
			dup2(log_fd, 1);
			dup2(log_fd, 2);
		}
		if (r->child_env)
			execvpe(r->o->argv[0], r->o->argv, r->child_env);
		else
			execvp(r->o->argv[0], r->o->argv);
		int e = errno;
		ssize_t n = write(er[1], &e, sizeof(e));
		(void)n;
		_exit(e == ENOENT ? CS_EXIT_NOTFOUND : CS_EXIT_NOEXEC);
	}
	close(go[0]);
	close(er[1]);
	if (log_fd >= 0)
		close(log_fd);
	r->child = pid;
	*go_fd = go[1];
	*err_fd = er[0];
	return 0;
}

/* Whether pid still runs: it exists and is not a zombie (kill(pid, 0) succeeds on zombies). */
static bool record_target_alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cs_read_small_file(path, buf, sizeof(buf)) <= 0)
		return false;
	const char *paren = strrchr(buf, ')'); /* the name may contain spaces and parentheses */
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static int pidfd_open_compat(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void record_child_done(struct record *r, int st)
{
	r->child_exited = true;
	r->cpu_at_exit_ns = cs_process_cpu_ns();
	r->child_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	r->child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void record_reap_child(struct record *r)
{
	int st;
	if (r->child_exited || r->child <= 0)
		return;
	int owned = sampler_child_exit(r->sampler, r->child, &st);
	if (owned == 1)
		record_child_done(r, st);
	else if (owned < 0 && waitpid(r->child, &st, WNOHANG) == r->child)
		record_child_done(r, st);
}

/* csampler failed while the command runs: wait for the command to end on its own. A signal
 * sent to csampler alone is passed on, and the command then gets 3 s, as in record_loop. */
static void record_wait_command(struct record *r)
{
	uint64_t stop_at = 0;
	record_signal_pending = 0;
	while (!r->child_exited) {
		struct pollfd fds[2] = { { .fd = r->sigpipe[0], .events = POLLIN },
					 { .fd = r->child_pidfd, .events = POLLIN } };
		if (poll(fds, r->child_pidfd >= 0 ? 2 : 1, 100) > 0 && (fds[0].revents & POLLIN)) {
			char buf[16];
			ssize_t got = read(r->sigpipe[0], buf, sizeof(buf));
			(void)got;
		}
		if (record_signal_pending) {
			if (record_signal_from_user)
				kill(r->child, record_signal_pending);
			r->stop_signal = record_signal_pending;
			record_signal_pending = 0;
			stop_at = cs_monotonic_ns();
		}
		record_reap_child(r);
		if (stop_at && cs_monotonic_ns() - stop_at > 3000000000ull)
			break;
	}
}

/* ---- finalization ---- */

/* Name every location not named yet and write its SYMBOL record. Called while recording
 * (every 250 ms, so the one-time costs of reading kallsyms and debug files overlap the run and
 * only the last new locations are left for the end) and once more at the end with progress. */
static void record_symbolize(struct record *r, bool at_end)
{
	struct sym_frame all[64];
	bool tty = at_end && isatty(2) && !cs_quiet && !r->o->live;
	size_t first = r->nsymbolized;

	for (size_t i = first; i < r->nlocs; i++) {
		const struct loc_key *k = &r->locs[i];
		struct unwind_loc loc = { .module = k->module, .offset = k->offset };
		int n = sym_resolve(r->unwind, loc, k->flags & DF_LOC_CALLER, all, 64);
		/* a trimmed launch stack's location: its innermost inline frames left out */
		int skip = (int)((k->flags & DF_LOC_SKIP_MASK) >> DF_LOC_SKIP_SHIFT);
		const struct sym_frame *frames = all + (skip < n ? skip : 0);
		n -= skip < n ? skip : 0;
		if (n > 0) {
			struct df_symbol_frame rec[64];
			for (int f = 0; f < n; f++)
				rec[f] = (struct df_symbol_frame){
					.name = df_strtab_id(r->strs, r->w, frames[f].name),
					.file = frames[f].file ? df_strtab_id(r->strs, r->w, frames[f].file) : 0,
					.line = frames[f].line, .flags = frames[f].flags };
			df_put_symbol(r->w, (uint32_t)i, rec, (uint32_t)n);
		}
		if (r->o->live && r->o->live->symbol) {
			const struct unwind_module *m = unwind_module_get(r->unwind, k->module);
			r->o->live->symbol(r->o->live->arg, (uint32_t)i, frames, n > 0 ? n : 0,
					   m ? m->path : "");
		}
		if (tty && ((i - first) % 256 == 0 || i + 1 == r->nlocs))
			fprintf(stderr, "\rcsampler: symbolizing %zu/%zu locations", i + 1 - first,
				r->nlocs - first);
	}
	r->nsymbolized = r->nlocs;
	if (tty && r->nlocs > first)
		fprintf(stderr, "\r\033[K");
	if (at_end) {
		/* Module flags learned while symbolizing (no symbols, no debug info) replace the
		 * earlier records. */
		r->modules_written = 0;
		record_write_modules(r);
	}
}

static double tv_secs(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* The profiler's own cost: csampler's CPU time (all its threads, start to end) against the wall
 * time and the CPU time of the tasks it sampled while it did (their cpu-clock counts). */
static void record_print_cost(struct record *r)
{
	struct rusage self;
	if (getrusage(RUSAGE_SELF, &self) < 0)
		return;
	double user = tv_secs(self.ru_utime), sys = tv_secs(self.ru_stime), own = user + sys;
	double wall = (double)(cs_monotonic_ns() - r->run_start_ns) / 1e9;
	double target = (double)sampler_task_clock_ns(r->sampler) / 1e9;
	fprintf(stderr, "csampler: own CPU %.2f s (user %.2f, system %.2f): %.1f%% of the %.2f s wall time",
		own, user, sys, wall > 0 ? 100.0 * own / wall : 0.0, wall);
	if (target >= 0.01)
		fprintf(stderr, ", %.1f%% of the target's %.2f s CPU\n", 100.0 * own / target, target);
	else
		fprintf(stderr, ", the target used under 0.01 s CPU\n");
	/* Launch mode: how much of it was taken while the command ran (the rest came before,
	 * opening the sampler and preparing symbols, or after, naming the last locations) */
	if (r->cpu_at_go_ns && r->cpu_at_exit_ns >= r->cpu_at_go_ns)
		fprintf(stderr, "csampler: own CPU while the command ran: %.2f s (%.2f s before it "
			"started, %.2f s since it ended)\n",
			(double)(r->cpu_at_exit_ns - r->cpu_at_go_ns) / 1e9, (double)r->cpu_at_go_ns / 1e9,
			own - (double)r->cpu_at_exit_ns / 1e9);
	fprintf(stderr, "csampler: sampled with %s (%s)\n", sampler_name(r->sampler),
		sampler_choice(r->sampler));
	char line[1024];
	sampler_describe(r->sampler, line, sizeof(line));
	if (line[0])
		fprintf(stderr, "csampler: %s\n", line);
}

CS_CMP_FN(record_cmp_u32, uint32_t, CS_CMP(*a, *b))

/* Python frames: how many samples had every activation's frames read as of the sample, why
 * the others were not, how long after the sample they were read, and what it cost. */
static void record_print_python(struct record *r)
{
	struct py_stats ps;
	py_stats_get(r->unwind, &ps);
	if (!ps.samples)
		return;
	size_t nd = r->npy_delay < RECORD_PY_DELAYS ? r->npy_delay : RECORD_PY_DELAYS;
	double med = 0, p90 = 0, p99 = 0;
	if (nd) {
		qsort(r->py_delay_us, nd, sizeof(uint32_t), record_cmp_u32);
		med = r->py_delay_us[nd / 2] / 1e3;
		p90 = r->py_delay_us[nd * 9 / 10] / 1e3;
		p99 = r->py_delay_us[nd * 99 / 100] / 1e3;
	}
	uint64_t lost = 0;
	for (int i = 0; i < PY_LOST_N; i++)
		lost += ps.lost[i];
	cs_info("Python: %llu samples in Python code (%llu with their frames read at the sample in "
		"the kernel, %llu copied at the stop, "
		"%llu by the reader after it, %llu in a callback returning, %llu entering one, "
		"%llu with a generator resumed or left, found after it; %llu activations' frames "
		"taken from a later call from the same frame): "
		"%llu with every frame anchored in the stack copy, "
		"%llu with frames not read (%llu of %llu activations: %llu popped before the read, "
		"%llu unreadable, %llu thread not found, %llu unmatched, %llu unsupported, "
		"%llu read too late); "
		"taken %.1f ms after the sample (median; p90 %.1f, p99 %.1f); "
		"%.1f reads/sample, %llu code objects checked, %llu read; %llu outer activations "
		"checked against the copy, %llu samples found moved on",
		(unsigned long long)ps.samples, (unsigned long long)ps.at_sample,
		(unsigned long long)ps.captured,
		(unsigned long long)ps.copied_running, (unsigned long long)ps.returning, (unsigned long long)ps.entering,
		(unsigned long long)ps.gen_resumed, (unsigned long long)ps.relinked,
		(unsigned long long)ps.samples_exact, (unsigned long long)r->py_unread, (unsigned long long)lost,
		(unsigned long long)ps.acts, (unsigned long long)ps.lost[PY_LOST_POPPED],
		(unsigned long long)ps.lost[PY_LOST_READ], (unsigned long long)ps.lost[PY_LOST_THREAD],
		(unsigned long long)ps.lost[PY_LOST_COUNT],
		(unsigned long long)ps.lost[PY_LOST_UNSUPPORTED],
		(unsigned long long)ps.lost[PY_LOST_LATE], med, p90, p99,
		(double)ps.reads / (double)ps.samples, (unsigned long long)ps.codes_checked,
		(unsigned long long)ps.codes_read, (unsigned long long)ps.outer_checked,
		(unsigned long long)ps.outer_moved);
}

static void record_print_summary(struct record *r, uint64_t end_ns)
{
	struct stat st;
	uint64_t bytes = stat(r->output, &st) == 0 ? (uint64_t)st.st_size : df_bytes_written(r->w);
	double secs = (double)(end_ns - r->start_ns) / 1e9;
	fprintf(stderr,
		"csampler: %llu samples, %llu lost, %zu threads, %zu processes, %.2f s, %.1f KB written to %s (%.0f bytes/sample)\n",
		(unsigned long long)r->nsamples, (unsigned long long)r->lost, r->tids.n, r->pids.n,
		secs, (double)bytes / 1024.0, r->output,
		r->nsamples ? (double)bytes / (double)r->nsamples : 0.0);
	record_print_cost(r);
	record_print_python(r);
	if (r->memo_mode == RECORD_MEMO_CHECK)
		cs_info("stack memo check: %llu of %llu samples found in the memo, %llu of them unwound again and different",
			(unsigned long long)r->memo_checked, (unsigned long long)r->nsamples,
			(unsigned long long)r->memo_mismatches);
	if (r->o->sampler.idle)
		cs_info("--idle: %llu sampling periods off the CPU (blocked or sleeping), marked [off-cpu: SYSCALL]",
			(unsigned long long)r->offcpu_samples);
	if (r->lost)
		cs_warn("%llu samples were lost: the ring buffers overflowed; use a larger -m or a lower -F",
			(unsigned long long)r->lost);
	if (r->stack_full * 10 > r->nsamples && r->o->sampler.callgraph == SAMPLER_CALLGRAPH_DWARF) {
		if (r->o->sampler.stack_size * 2 > 65528 && r->o->sampler.stack_size >= 65528)
			cs_warn("%llu of %llu stacks needed more than the %u-byte stack copy (the kernel's maximum): they are truncated",
				(unsigned long long)r->stack_full, (unsigned long long)r->nsamples,
				r->o->sampler.stack_size);
		else
			cs_warn("%llu of %llu stacks needed more than the %u-byte stack copy and are truncated: try --stack-size %u",
				(unsigned long long)r->stack_full, (unsigned long long)r->nsamples,
				r->o->sampler.stack_size,
				r->o->sampler.stack_size * 2 > 65528 ? 65528 : r->o->sampler.stack_size * 2);
	}
}

/* ---- the reader thread: keeps the rings empty, whatever the main thread is doing ---- */

static void *record_reader(void *arg)
{
	struct record *r = arg;
	struct record_queue *q = &r->q;
	struct pollfd rings[1024], fds[1025];
	bool hup[1024] = { false };

	while (!q->stop) {
		/* A ring whose event's task exited reports POLLHUP from then on: stop polling it (it
		 * is still drained below, other tasks' events may write into it) or poll would spin. */
		int nrings = sampler_pollfds(r->sampler, rings, 1024), n = 0;
		int index[1024];
		for (int i = 0; i < nrings; i++)
			if (!hup[i])
				index[n] = i, fds[n++] = rings[i];
		int nwatched = n;
		fds[n++] = (struct pollfd){ .fd = q->stop_fd, .events = POLLIN };
		/* Python frames are read when the main thread gets to a sample: collecting often
		 * keeps that close to when the sample was taken (unwind/python.h). Every 1 ms
		 * once a sample ran Python code: a median of 0.6 ms from sample to read, against
		 * 2.5 ms every 5 ms, and a third of the samples whose frames were popped before
		 * the read (README); every 5 ms once a target mapped an interpreter, as it costs
		 * wake-ups; else every 50 ms (the rings wake the reader when a quarter full): each
		 * wake-up of the reader and the main thread cost some 30 us of CPU on a 2-vCPU VM,
		 * most of what a long bpf recording of a native program spent (README). The bpf
		 * backend reads the frames at the sample itself: only a process' first samples,
		 * before it knows where they are, and stack slices are read here, so every 20 ms
		 * (`record -a` over 4 Python loops and 4 native ones, 30 s: 0.80-0.89 s of CPU,
		 * against 0.98-1.40 every 5 ms and 2.20-2.32 every 1 ms: README). */
		bool at_sample = sampler_python_at_sample(r->sampler);
		/* bpf with no Python seen: every 200 ms. Nothing then needs a timely read (the
		 * program walks the stacks; a stack slice carries its bytes), the ring wakes the
		 * reader a quarter full, and on this VM a wake-up of the reader and of the main
		 * thread costs far more than the 30 us measured before: the steady state of
		 * `record -a` over 8 busy processes spent some 45% of csampler's CPU switching
		 * to and from sleep, 40 wake-ups a second (README, `--mode bpf`: "record -a,
		 * fifth pass"). */
		int idle_ms = at_sample ? RECORD_BPF_IDLE_MS : 50;
		bool py_seen = __atomic_load_n(&r->python_seen, __ATOMIC_RELAXED);
		bool py_mapped = __atomic_load_n(&r->python_mapped, __ATOMIC_RELAXED);
		/* (bpf: 20 ms once an interpreter is mapped too, sampled or not: with 5, `record
		 * -a` over 8 native processes woke 150 times a second for one process that maps
		 * libpython and runs no Python, perf itself. And 1 ms is for a backend whose
		 * samples do not wake the reader, perf events before they copy Python frames:
		 * where each sample wakes it, the timer only woke it for nothing while the
		 * targets slept, 1,000 times a second) */
		int wait_ms = r->o->no_python ? idle_ms
			      : at_sample ? (py_seen || py_mapped ? 20 : idle_ms)
			      : py_seen ? (sampler_wakes_each_sample(r->sampler) ? idle_ms : 1)
			      : py_mapped ? 5 : idle_ms;
		/* The first RECORD_START_NS: every 5 ms, as a launched command maps its files then
		 * and the bpf backend walks its samples by frame pointers, or sends stack slices,
		 * until the reader has handed it their rows (every 50 ms: about 120 slices in a 1 s
		 * run of deepwork, 5% of its samples; README) */
		if (wait_ms > 5 && (cs_monotonic_ns() - r->start_ns < RECORD_START_NS ||
				    sampler_catching_up(r->sampler)))
			wait_ms = 5; /* and while stack slices come: their rows are being built */
		poll(fds, (nfds_t)n, wait_ms);
		for (int i = 0; i < nwatched; i++)
			if (fds[i].revents & (POLLHUP | POLLERR))
				hup[index[i]] = true;
		if (q->stop)
			break;
		uint64_t collect_ns = cs_monotonic_ns();
		struct sampler_batch *b = sampler_collect(r->sampler);
		if (!b) {
			pthread_mutex_lock(&q->lock);
			if (!q->count)
				q->idle_collect_ns = collect_ns;
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		pthread_mutex_lock(&q->lock);
		while (q->bytes > RECORD_QUEUE_MAX_BYTES && !q->stop)
			pthread_cond_wait(&q->space, &q->lock);
		if (q->head + q->count == q->cap) {
			if (q->head) {
				memmove(q->items, q->items + q->head, q->count * sizeof(*q->items));
				q->head = 0;
			} else {
				cs_grow(&q->items, &q->cap, q->count + 1, sizeof(*q->items));
			}
		}
		q->items[q->head + q->count++] = (struct record_queued_batch){ b, collect_ns };
		q->bytes += sampler_batch_bytes(b);
		if (q->bytes > q->peak_bytes)
			q->peak_bytes = q->bytes;
		pthread_mutex_unlock(&q->lock);
		uint64_t one = 1;
		ssize_t w = write(q->wake_fd, &one, sizeof(one));
		(void)w;
	}
	return NULL;
}

/* Deliver every queued batch to the unwinder and the file. */
static void record_consume(struct record *r)
{
	struct record_queue *q = &r->q;
	for (;;) {
		struct sampler_batch *b = NULL;
		uint64_t collect_ns = 0;
		pthread_mutex_lock(&q->lock);
		if (q->count) {
			b = q->items[q->head].batch;
			collect_ns = q->items[q->head++].collect_ns;
			q->count--;
			if (!q->count)
				q->head = 0;
			q->bytes -= sampler_batch_bytes(b);
			pthread_cond_signal(&q->space);
		}
		if (!b && q->idle_collect_ns > r->events_seen_ns)
			r->events_seen_ns = q->idle_collect_ns; /* every batch before it is delivered */
		pthread_mutex_unlock(&q->lock);
		if (!b)
			return;
		sampler_batch_deliver(b, record_event, r);
		sampler_batch_free(b);
		if (collect_ns > r->events_seen_ns)
			r->events_seen_ns = collect_ns;
	}
}

static int record_start_reader(struct record *r)
{
	struct record_queue *q = &r->q;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->space, NULL);
	q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	q->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->wake_fd < 0 || q->stop_fd < 0)
		return cs_error(errno, "eventfd: %s", strerror(errno));
	int err = pthread_create(&r->reader, NULL, record_reader, r);
	if (err)
		return cs_error(err, "pthread_create: %s", strerror(err));
	r->reader_running = true;
	return 0;
}

static void record_stop_reader(struct record *r)
{
	struct record_queue *q = &r->q;
	if (!r->reader_running)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_broadcast(&q->space);
	pthread_mutex_unlock(&q->lock);
	uint64_t one = 1;
	ssize_t w = write(q->stop_fd, &one, sizeof(one));
	(void)w;
	pthread_join(r->reader, NULL);
	r->reader_running = false;
}

/* ---- main loop ---- */

/* The live status line (status.h), at most once a second. */
static void record_status_tick(struct record *r, uint64_t now)
{
	if (!r->status.on)
		return;
	struct record_status_counts c = {
		.samples = r->nsamples, .lost = r->lost, .threads = r->tids.n,
		.processes = r->pids.n, .file_bytes = df_bytes_written(r->w), .gpu = r->gpu != NULL,
	};
	if (r->gpu) {
		c.gpu_records = gpu_channel_launches(r->gpu) + gpu_channel_activities(r->gpu);
		for (size_t i = 0; i < gpu_channel_nprocesses(r->gpu); i++) {
			const struct df_gpu_info *info = gpu_channel_process(r->gpu, i, NULL);
			c.gpu_dropped += info->dropped + info->launches_dropped;
		}
	}
	record_status_update(&r->status, now, &c, false);
}

/* Where record_poll_fds put the signal pipe, the command's pidfd (-1: none) and the first
 * target's pidfd. */
struct record_poll_at {
	int sig, child, targets;
};

/* What the loop waits on: the reader's wake-up, the signal pipe, the command, the live
 * consumer, the attached targets. Returns the number of fds. */
static int record_poll_fds(struct record *r, struct pollfd *fds, struct record_poll_at *at)
{
	int n = 0;

	fds[n++] = (struct pollfd){ .fd = r->q.wake_fd, .events = POLLIN };
	at->sig = n;
	fds[n++] = (struct pollfd){ .fd = r->sigpipe[0], .events = POLLIN };
	at->child = -1;
	if (r->child_pidfd >= 0 && !r->child_exited) {
		at->child = n;
		fds[n++] = (struct pollfd){ .fd = r->child_pidfd, .events = POLLIN };
	}
	if (r->o->live && r->o->live->wake_fd >= 0)
		fds[n++] = (struct pollfd){ .fd = r->o->live->wake_fd, .events = POLLIN };
	at->targets = n;
	for (size_t i = 0; i < r->o->npids; i++)
		if (r->target_pidfds[i] >= 0)
			fds[n++] = (struct pollfd){ .fd = r->target_pidfds[i], .events = POLLIN };
	return n;
}

/* The loop's timed work: GPU records and names every 250 ms, a flush every second, the
 * status line, and the live consumer's tick. */
static void record_periodic(struct record *r, uint64_t now, bool stopping)
{
	if (now - r->last_symbolize_ns > 250000000ull) {
		/* A launch waits until the sampler's events of its time are handled (a
		 * library mapped just before it): events_seen_ns, not a guess from the
		 * clock, which a reader thread starved on a loaded machine outran (its
		 * launches then fell in no known mapping). */
		gpu_channel_poll(r->gpu, 0, r->events_seen_ns, false);
		record_symbolize(r, false);
		r->last_symbolize_ns = now;
	}
	if (now - r->last_flush_ns > 1000000000ull) {
		df_flush(r->w); /* a killed csampler leaves at most ~1 s unwritten */
		r->last_flush_ns = now;
	}
	if (record_winch) {
		record_winch = 0;
		record_status_resized(&r->status);
	}
	record_status_tick(r, now);
	if (r->o->live && r->o->live->tick && r->o->live->tick(r->o->live->arg, now) &&
	    !record_signal_pending && !stopping) {
		/* the consumer is done (top's q): as a SIGINT sent to csampler alone */
		record_signal_pending = SIGINT;
		record_signal_from_user = 1;
	}
}

/* Attach mode: the targets that exited since the last poll (their pidfds from tfds on, in
 * the order of record_poll_fds) are no longer waited for. */
static void record_targets_gone(struct record *r, const struct pollfd *tfds)
{
	for (size_t i = 0, k = 0; i < r->o->npids; i++) {
		if (r->target_pidfds[i] == RECORD_NO_PIDFD) {
			if (!record_target_alive(r->o->pids[i])) {
				r->target_pidfds[i] = -1;
				r->ntargets_alive--;
			}
			continue;
		}
		if (r->target_pidfds[i] < 0)
			continue;
		if (tfds[k++].revents & POLLIN) {
			close(r->target_pidfds[i]);
			r->target_pidfds[i] = -1;
			r->ntargets_alive--;
		}
	}
}

/* The main loop's poll timeout in ms: 100 while a status line or a live consumer shows the
 * recording, or it is stopping; else RECORD_LOOP_IDLE_MS (the reader's batches wake it, and
 * its timed work is every 250 ms), less when the --duration deadline is sooner. */
static int record_loop_timeout(const struct record *r, uint64_t deadline, bool stopping)
{
	int ms = r->status.on || r->o->live || stopping ? 100 : RECORD_LOOP_IDLE_MS;
	if (deadline) {
		uint64_t now = cs_monotonic_ns();
		uint64_t left_ms = now >= deadline ? 0 : (deadline - now) / 1000000 + 1;
		if (left_ms < (uint64_t)ms)
			ms = (int)left_ms;
	}
	return ms;
}

static int record_loop(struct record *r)
{
	struct pollfd fds[1100];
	uint64_t deadline = r->o->duration_s > 0
				    ? r->start_ns + (uint64_t)(r->o->duration_s * 1e9)
				    : 0;
	bool stopping = false;
	uint64_t stop_at = 0;

	if (record_start_reader(r)) {
		r->error = -EIO;
		return r->error;
	}
	record_status_init(&r->status, r->start_ns);
	if (r->o->live)
		r->status.on = false;   /* the consumer owns the terminal */
	for (;;) {
		struct record_poll_at at;
		int n = record_poll_fds(r, fds, &at);
		int pr = poll(fds, (nfds_t)n, record_loop_timeout(r, deadline, stopping));
		if (pr < 0 && errno != EINTR) {
			r->error = cs_error(errno, "poll: %s", strerror(errno));
			break;
		}
		if (fds[0].revents & POLLIN) {
			uint64_t cnt;
			ssize_t got = read(r->q.wake_fd, &cnt, sizeof(cnt));
			(void)got;
		}
		record_consume(r);
		uint64_t now = cs_monotonic_ns();
		record_periodic(r, now, stopping);
		if (df_writer_error(r->w)) {
			r->error = df_writer_error(r->w);
			break;
		}
		if (pr > 0 && (fds[at.sig].revents & POLLIN)) {
			char buf[16];
			ssize_t got = read(r->sigpipe[0], buf, sizeof(buf));
			(void)got;
		}
		if (record_signal_pending && !stopping) {
			int sig = record_signal_pending;
			r->stop_signal = sig;
			/* A terminal's ^C reaches the whole foreground group, the command too;
			 * a signal sent to csampler alone is passed on. */
			if (r->child > 0 && !r->child_exited && record_signal_from_user)
				kill(r->child, sig);
			stopping = true;
			stop_at = now;
			if (!r->child || r->child_exited)
				break;
		}
		if (at.child >= 0 && (fds[at.child].revents & POLLIN))
			record_reap_child(r);
		if (r->child > 0) {
			/* the pidfd says when the command ends (above): without one, and on each
			 * timeout as a safety net, ask (a waitpid a batch was a syscall a sample
			 * once Python frames are read) */
			if (r->child_pidfd < 0 || pr == 0 || stopping)
				record_reap_child(r);
			if (r->child_exited)
				break;
			/* after a signal, give the command 3 s to exit before leaving it be */
			if (stopping && now - stop_at > 3000000000ull)
				break;
		}
		record_targets_gone(r, fds + at.targets);
		/* -a and --cgroup end at the deadline or a signal only */
		if (!r->child && r->ntargets_alive == 0 && !r->o->sampler.all && !r->o->sampler.cgroup)
			break;
		if (deadline && now >= deadline)
			break;
	}
	record_status_clear(&r->status);
	sampler_disable(r->sampler);
	record_stop_reader(r);
	if (r->error)
		return r->error; /* nothing more can be written: the queue is freed unread */
	record_consume(r);
	sampler_drain(r->sampler, record_event, r);
	return r->error;
}

static int record_install_signals(struct record *r)
{
	struct sigaction sa = { 0 };
	if (pipe2(r->sigpipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return cs_error(errno, "pipe2: %s", strerror(errno));
	record_wake_fd = r->sigpipe[1];
	sa.sa_sigaction = record_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct sigaction winch = { .sa_handler = record_on_winch, .sa_flags = SA_RESTART };
	sigemptyset(&winch.sa_mask);
	sigaction(SIGWINCH, &winch, NULL);
	/* A write error (EPIPE, or EFBIG past the file size limit) is reported where it happens,
	 * not by dying of the signal. The command gets the defaults back (record_fork). */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	return 0;
}

/* Everything before the target runs: signals, descriptors, the unwinder, the output (unless
 * it is named after the launched command's pid) and the GPU channel. 0, or -1 when it failed
 * (printed). */
static int record_prepare(struct record *r, bool open_late)
{
	const struct record_opts *o = r->o;
	int ret;

	if (record_install_signals(r))
		return -1;
	/* Attach mode opens one event per thread and CPU: a big training job needs more than
	 * the usual soft limit of 1024 descriptors. Raise it to the hard limit, as perf does. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	ret = unwind_new(&r->unwind);
	if (ret) {
		cs_error(-ret, "cannot initialise the unwinder: %s", strerror(-ret));
		return -1;
	}
	r->sopts = o->sampler;
	if (!o->no_python) {
		py_enable(r->unwind);
		/* ptrace: the Python frame chain copied while the thread is stopped */
		r->sopts.stop_copy = record_py_capture;
		r->sopts.stop_copy_arg = r->unwind;
		r->sopts.stop_copy_cap = PY_CAPTURE_MAX;
		/* bpf: the frame chain read by the BPF program at the sample */
		r->sopts.py_where = record_py_where;
		r->sopts.py_where_arg = r->unwind;
	}
	record_names_init(&r->names);
	if (!open_late) {
		r->output = record_output_expand(o->output, o->npids ? o->pids[0] : getpid(),
						 &r->names);
		if (df_writer_open(&r->w, r->output, o->compress))
			return -1;
	}
	r->strs = df_strtab_new();
	if (o->gpu.dir) {
		extern char **environ;
		uint64_t gpu_from = o->argv ? 0 : cs_monotonic_ns();
		if (o->argv)
			r->child_env = gpu_setup_env(&o->gpu, environ);
		r->gpu = gpu_channel_new(o->gpu.dir, o->argv != NULL, gpu_from, &record_gpu_sink, r);
		for (size_t i = 0; i < o->npids; i++)
			gpu_channel_add_pid(r->gpu, (uint32_t)o->pids[i]);
	}
	return 0;
}

/* Launch mode: fork the command (held until record_go), open a late output, and open the
 * sampler on it. 0, or -1 (printed; the command is gone). */
static int record_start_launch(struct record *r, bool open_late, int *go_fd, int *err_fd)
{
	const struct record_opts *o = r->o;
	int ret = 0;

	if (record_fork(r, go_fd, err_fd))
		return -1;
	cs_heap_prepare(RECORD_HEAP_PREFAULT); /* after the fork: the child does not copy it */
	/* The symbolizer's one-time work for the command's files, while the sampler opens: not
	 * taken from the command's CPU once it runs (prewarm.c). */
	struct prewarm *warm = NULL;
	prewarm_start(&warm, r->unwind, o->argv[0], prewarm_kernel_wanted());
	if (open_late) {
		r->output = record_output_expand(o->output, r->child, &r->names);
		ret = df_writer_open(&r->w, r->output, o->compress);
	}
	if (!ret)
		ret = sampler_open_launch(&r->sampler, &r->sopts, r->child);
	prewarm_finish(warm);
	if (ret) {
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
		r->child = 0;
		return -1;
	}
	r->child_pidfd = pidfd_open_compat(r->child);
	return 0;
}

/* Attach mode: a pidfd per target, the sampler, and the GPU library when asked. 0, or -1
 * (printed). */
static int record_start_attach(struct record *r)
{
	const struct record_opts *o = r->o;

	cs_heap_prepare(RECORD_HEAP_PREFAULT);

	for (size_t i = 0; i < o->npids; i++) {
		r->target_pidfds[i] = pidfd_open_compat(o->pids[i]);
		if (r->target_pidfds[i] < 0 && errno != ESRCH && record_target_alive(o->pids[i])) {
			r->target_pidfds[i] = RECORD_NO_PIDFD;
		} else if (r->target_pidfds[i] < 0) {
			if (errno == ESRCH || !record_target_alive(o->pids[i]))
				cs_error(ESRCH, "no such process %d: check the PID with ps", (int)o->pids[i]);
			else
				cs_error(errno, "pidfd_open(%d): %s", (int)o->pids[i], strerror(errno));
			return -1;
		}
		r->ntargets_alive++;
	}
	if (sampler_open_attach(&r->sampler, &r->sopts, o->pids, o->npids))
		return -1;
	if (o->gpu_inject && o->gpu.dir) {
		/* After the sampler opened: a process that exits during the attach ends an
		 * ordinary recording. A ptrace sampler holds every thread, though: it lets
		 * them go while the library is loaded, and takes them again. */
		bool held = sampler_holds_threads(r->sampler);
		if (held) {
			sampler_close(r->sampler);
			r->sampler = NULL;
		}
		record_gpu_attach(r);
		if (held && sampler_open_attach(&r->sampler, &r->sopts, o->pids, o->npids))
			return -1;
	}
	return 0;
}

/* Launch mode: let the forked command exec. 0, or -1 with *status set when it could not
 * (the output is removed: it would hold nothing). */
static int record_go(struct record *r, int *go_fd, int err_fd, int *status)
{
	const struct record_opts *o = r->o;
	int e = 0;
	ssize_t got;

	r->cpu_at_go_ns = cs_process_cpu_ns();
	if (write(*go_fd, "g", 1) != 1) {
		cs_error(errno, "cannot start the command: %s", strerror(errno));
		return -1;
	}
	close(*go_fd);
	*go_fd = -1;
	do
		got = read(err_fd, &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(e))
		return 0;
	waitpid(r->child, NULL, 0);
	r->child = 0;
	if (e == ENOENT) {
		cs_error(e, "%s: command not found", o->argv[0]);
		*status = CS_EXIT_NOTFOUND;
	} else {
		cs_error(e, "cannot execute %s: %s", o->argv[0], strerror(e));
		*status = CS_EXIT_NOEXEC;
	}
	df_writer_close(r->w);
	r->w = NULL;
	unlink(r->output);
	return -1;
}

/* After the loop: the last GPU records, the names, DF_END, and the summary. */
static void record_finish_file(struct record *r, char **written)
{
	uint64_t end_ns = cs_monotonic_ns();
	int ret;

	record_gpu_detach(r);   /* the sampler has let the threads go: the last records */
	if (!r->error) {
		record_gpu_finish(r, end_ns);
		record_symbolize(r, true);
		df_put_end(r->w, &(struct df_end){ r->nsamples, r->lost, end_ns, 1 });
	}
	ret = df_writer_close(r->w);
	r->w = NULL;
	if (ret && !r->error)
		r->error = ret;
	if (!r->error) {
		if (!r->o->live) {
			record_print_summary(r, end_ns);
			record_gpu_summary(r);
		}
		if (written)
			*written = cs_strdup(r->output);
	}
}

/* csampler's exit status: the launched command's (waited for), or 0 in attach mode;
 * CS_EXIT_ERROR when recording failed. */
static int record_exit_status(struct record *r)
{
	int status = 0;

	if (r->child > 0) {
		if (!r->child_exited && r->error) {
			/* csampler failed while the command runs (a full disk): sampling stops, the
			 * command goes on unharmed, and csampler waits for it as its caller expects. */
			sampler_close(r->sampler);
			r->sampler = NULL;
			record_wait_command(r);
		} else if (!r->child_exited && !r->stop_signal) {
			int st;
			if (sampler_child_exit(r->sampler, r->child, &st) == 1 ||
			    waitpid(r->child, &st, 0) == r->child)
				record_child_done(r, st);
		}
		if (r->child_exited)
			status = r->child_status;
		else if (r->stop_signal)
			status = 128 + r->stop_signal;
		/* As a shell would say it: csampler's exit status carries it, but does not kill it. */
		if (r->child_signal && r->child_signal != r->stop_signal && r->child_signal != SIGPIPE &&
		    r->child_signal != SIGINT)
			cs_info("the command was killed by signal SIG%s (%s)%s%s", sigabbrev_np(r->child_signal),
				strsignal(r->child_signal), r->error ? "" : "; its samples up to then are in ",
				r->error ? "" : r->output);
	}
	return r->error ? CS_EXIT_ERROR : status;
}

static void record_free(struct record *r)
{
	const struct record_opts *o = r->o;

	df_writer_close(r->w);
	df_strtab_free(r->strs);
	/* the private directory of a launch goes; the per-user one of attach mode stays */
	gpu_channel_free(r->gpu, o->argv != NULL);
	record_gpu_attach_free(r);
	gpu_setup_free_env(r->child_env);
	for (size_t i = 0; i < r->ngpu_notes; i++)
		free(r->gpu_notes[i].text);
	free(r->gpu_notes);
	sampler_close(r->sampler);
	unwind_free(r->unwind);
	free(r->py_delay_us);
	if (r->child_pidfd >= 0)
		close(r->child_pidfd);
	for (size_t i = 0; i < o->npids; i++)
		if (r->target_pidfds[i] >= 0)
			close(r->target_pidfds[i]);
	record_stop_reader(r);
	for (size_t i = 0; i < r->q.count; i++) /* only after a failure: nothing to write them to */
		sampler_batch_free(r->q.items[r->q.head + i].batch);
	if (r->q.wake_fd > 0)
		close(r->q.wake_fd), close(r->q.stop_fd);
	free(r->q.items);
	record_wake_fd = -1;
	if (r->sigpipe[0] >= 0)
		close(r->sigpipe[0]), close(r->sigpipe[1]);
	free(r->target_pidfds);
	free(r->locs);
	cs_map_free(&r->loc_ids);
	cs_map_free(&r->gpu_trimmed);
	free(r->stack_data);
	free(r->stack_pos);
	free(r->stack_len);
	cs_hash_free(&r->stack_ids);
	stackmemo_free(&r->memo);
	cs_map_free(&r->tids);
	cs_map_free(&r->pids);
	free(r->output);
}

int record_run(const struct record_opts *o, char **written)
{
	struct record r = { .o = o, .child_pidfd = -1, .sigpipe = { -1, -1 } };
	int go_fd = -1, err_fd = -1, status = CS_EXIT_ERROR;

	r.run_start_ns = cs_monotonic_ns();
	const char *memo_env = getenv("CSAMPLER_STACK_MEMO");
	if (memo_env && !strcmp(memo_env, "0"))
		r.memo_mode = RECORD_MEMO_OFF;
	else if (memo_env && !strcmp(memo_env, "check"))
		r.memo_mode = RECORD_MEMO_CHECK;
	else if (memo_env && *memo_env && strcmp(memo_env, "1"))
		cs_warn("CSAMPLER_STACK_MEMO=%s: expected 0 (off), 1 (on) or check; the stack memo stays on",
			memo_env);
	r.target_pidfds = cs_calloc(o->npids + 1, sizeof(int));
	for (size_t i = 0; i < o->npids; i++)
		r.target_pidfds[i] = -1;

	/* A launch named after its pid (-o ...%p...) opens the file once the command is forked;
	 * otherwise before anything starts, so that an unwritable path costs no launch. */
	bool open_late = o->argv && record_output_needs_pid(o->output);
	if (record_prepare(&r, open_late))
		goto out;
	if (o->argv ? record_start_launch(&r, open_late, &go_fd, &err_fd)
		    : record_start_attach(&r))
		goto out;
	/* Debug files missing locally are looked up by build id on the servers of DEBUGINFOD_URLS
	 * by libdw itself: dwfl_standard_find_debuginfo, the symbolizer's callback, goes on to
	 * elfutils' libdebuginfod (which libdw loads when present) with its cache
	 * (DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client), as eu-addr2line does. Both
	 * read the variable from csampler's own environment at each lookup, so --no-debuginfod
	 * takes it out of that environment, here: after the command was forked with its own, and
	 * before the reader thread starts (the ptrace sampler's tracer never reads it). */
	if (o->no_debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	if (sampler_kernel_note(r.sampler))
		cs_info("%s", sampler_kernel_note(r.sampler));
	r.start_ns = r.last_flush_ns = r.last_symbolize_ns = cs_monotonic_ns();
	record_write_header(&r);
	if (o->argv && record_go(&r, &go_fd, err_fd, &status))
		goto out;
	record_loop(&r);
	record_finish_file(&r, written);
	status = record_exit_status(&r);
out:
	record_status_clear(&r.status);
	if (go_fd >= 0)
		close(go_fd);
	if (err_fd >= 0)
		close(err_fd);
	if (r.child > 0 && !r.child_exited && status == CS_EXIT_ERROR && r.error) {
		/* csampler failed while the command runs: leave it running, unprofiled */
		cs_info("the command (PID %d) keeps running without profiling", (int)r.child);
	}
	record_free(&r);
	return status;
}
