/* backend.h: what a sampling backend implements (an ops table, as elfutils' thread sources sit
 * behind Dwfl_Thread_Callbacks) and the helpers they share: the growing set of copied-out
 * events that becomes a sorted batch, and the /proc readers that describe a process attached
 * to after it started. Only sampler/ includes this file; record/ sees sampler.h. */
#ifndef CSAMPLER_SAMPLER_BACKEND_H
#define CSAMPLER_SAMPLER_BACKEND_H

#include "sampler/sampler.h"

#include "base/cs.h"

#include <pthread.h>
#include <sys/user.h>

struct sampler_ops {
	const char *name;         /* "perf_event_open", "ptrace", "bpf" */
	enum sampler_mode mode;   /* the --mode that names it */
	/* Why auto mode does not try it with these options (NULL: it does), for `info` and the
	 * end-of-record line; optional. */
	const char *(*unsuited)(const struct sampler_opts *opts);
	/* Whether auto mode goes on to the next backend after any failed start of this one (a
	 * one-line warning names the cause, open_cause), not only after a refusal. */
	bool auto_falls_back;
	/* The cause of a failed open_* (err), in words, for that warning; optional. */
	void (*open_cause)(int err, char *buf, size_t len);
	/* Whether it is refused here before trying (not built in, no privilege), and why (why,
	 * len); optional: NULL when only opening tells. */
	bool (*refused)(const struct sampler_opts *opts, char *why, size_t len);
	/* The highest -F it takes (perf events: kernel.perf_event_max_sample_rate). */
	uint64_t (*max_rate)(void);
	/* Whether it holds the targets' threads stopped while open (ptrace): an attach that
	 * loads a library into them must close it first. */
	bool holds_threads;
	/* The header's callgraph for a backend that walks the stacks itself ("bpf"), else NULL. */
	const char *callgraph;
	/* Whether it reads the Python frames at the sample itself (bpf, once told where they
	 * are): the recorder need not collect often to read them soon after the sample. */
	bool python_at_sample;
	/* Open quietly: return -errno and leave the one-line message to explain_open_error,
	 * so that a refusal in auto mode can fall back instead of failing. */
	int (*open_launch)(struct sampler **out, const struct sampler_opts *opts, pid_t child);
	int (*open_attach)(struct sampler **out, const struct sampler_opts *opts,
			   const pid_t *pids, size_t npids);
	/* Print the one line for a failure of open_*, naming the cause and the fix; returns
	 * -err. */
	int (*explain_open_error)(int err, pid_t pid, bool attach);
	int (*pollfds)(struct sampler *s, struct pollfd *fds, int max);
	struct sampler_batch *(*collect)(struct sampler *s);
	void (*disable)(struct sampler *s);
	uint64_t (*task_clock_ns)(struct sampler *s);
	bool (*has_kernel)(const struct sampler *s);
	int (*child_exit)(struct sampler *s, pid_t child, int *status); /* optional */
	void (*describe)(struct sampler *s, char *buf, size_t len);      /* optional */
	/* Whether the last collection had samples the backend could not finish alone (bpf:
	 * stack slices, sent until their files' rows are loaded): the reader then collects
	 * soon again; optional. Called by the thread that collects. */
	bool (*catching_up)(struct sampler *s);
	/* Whether each sample wakes the thread that collects, through pollfds (perf events once
	 * they copy Python frames; ptrace each tick): no timer is needed to collect soon after
	 * a sample; optional. */
	bool (*wakes_each_sample)(const struct sampler *s);
	void (*close)(struct sampler *s);
};

/* An open_* failure that was already explained in one line (an mmap, a thread): the
 * dispatcher passes it on without explaining it again. */
#define SAMPLER_SAID_BIT 0x10000
#define SAMPLER_SAID(neg_err) (-(SAMPLER_SAID_BIT | -(neg_err)))

/* The first member of every backend's state. */
struct sampler {
	const struct sampler_ops *ops;
	struct sampler_opts opts;
	char choice[384];         /* why this backend and not the others (sampler_choice) */
};

/* perf_event_max_sample_rate, the cap of the perf_event_open based backends. */
uint64_t sampler_perf_max_rate(void);

extern const struct sampler_ops sampler_perf_ops;
extern const struct sampler_ops sampler_ptrace_ops;
extern const struct sampler_ops sampler_bpf_ops;

/* The side-band half of the BPF backend, from sampler_perf.c: counting cpu-clock events that
 * give the MMAP2/COMM/FORK/EXIT records and the targets' CPU time (launch: child, from its
 * exec; attach: pids; opts->all or opts->cgroup: one event per CPU). Close it with its ops. */
int sampler_perf_open_sideband(struct sampler **out, const struct sampler_opts *opts, pid_t child,
			       const pid_t *pids, size_t npids);
/* Read its rings into its event set and return the set: the caller adds its own events and
 * takes the batch (sampler_events_take). */
struct sampler_events *sampler_perf_fill(struct sampler *perf);
/* The BPF backend's unwind tables in the kernel's maps (sampler_bpf_tables.c): rows is the
 * rows array map (mmapable), procs the per-process mappings map. */
struct bpf_map;
struct bpf_tables;
int bpf_tables_new(struct bpf_tables **out, struct bpf_map *rows, struct bpf_map *procs);
/* Keep the maps in step with one event of a batch (mmap, exec, fork, exit), before delivery. */
void bpf_tables_event(struct bpf_tables *t, const struct sampler_event *ev);
/* A sample of pid whose walk lacked rows (pcs: its user frames): the files mapped at those
 * pcs are wanted. */
void bpf_tables_hit(struct bpf_tables *t, uint32_t pid, const uint64_t *pcs, size_t n);
/* A sample of pid sent with a stack slice (words: the slice): the frames past the one the walk
 * stopped at are in it, so its words that fall in a file not built yet (return addresses,
 * mostly) want that file too, at once rather than one file per round of rows (the program's
 * own, then libc's, ...). Only a process' first BPF_SLICE_SCANS slices are looked at (a JIT
 * program sends one a sample; its files are wanted by then). */
void bpf_tables_hit_slice(struct bpf_tables *t, uint32_t pid, const uint64_t *words, size_t n);
/* Readable when the builder thread has rows for bpf_tables_work to load (-1: none). */
int bpf_tables_pollfd(const struct bpf_tables *t);
/* Hand wanted files to the builder thread; load the rows it built and apply their mappings. */
void bpf_tables_work(struct bpf_tables *t);
/* The rows of each file the known processes map whose rows are in the on-disk cache (an
 * earlier recording's samples wanted them), without waiting for a sample to want them: loaded
 * into the kernel at once when now (before the first sample), else handed to the builder
 * thread (a process mapping them since), so that their first samples are walked in the kernel
 * instead of carrying stack slices. Files without an entry wait for a sample to want them, as
 * before (building every mapped file's rows took seconds under record -a). Each file is
 * looked for once. */
void bpf_tables_preload(struct bpf_tables *t, bool now);
void bpf_tables_describe(struct bpf_tables *t, char *buf, size_t len);
void bpf_tables_free(struct bpf_tables *t);
/* The BPF backend's Python part (sampler_bpf_python.c): pyprocs is the program's map of the
 * processes whose frames it reads; NULL *out when opts has no py_where. */
struct bpf_python;
struct csb_sample;
struct sampler_pending;
int bpf_python_new(struct bpf_python **out, struct bpf_map *pyprocs, const struct sampler_opts *opts);
/* The Python part of ring record r (size bytes) into the sample pe being filled. */
void bpf_python_sample(struct bpf_python *p, struct sampler_events *events,
		       struct sampler_pending *pe, const struct csb_sample *r, size_t size);
/* The Python frames of ring record r (size bytes) as base/pywalk.c walks them (layout L) into
 * out[CSB_PY_MAX], their code objects' fingerprints into fp[]: 3.11's runs split where the
 * program's _PyCFrames say. A run that shows no frame (code 0: its entry frame only, 3.12+)
 * has that entry frame's address in fp[] and the frame it links to in instr (the recorder
 * looks there for the frame it ran: py_ext_frame's entry_at, caller_at). Returns the count;
 * -EAGAIN when an activation's current frame is not in the chain (entered or left at the
 * sample), -EINVAL when the record or a frame is not one to use. Exposed for the unit tests. */
struct pywalk_layout;
struct pywalk_frame;
int bpf_python_walk(const struct csb_sample *r, size_t size, const struct pywalk_layout *L,
		    struct pywalk_frame *out, uint64_t *fp);
/* After a batch: ask the recorder about the processes not known yet, fill the map. */
void bpf_python_work(struct bpf_python *p);
/* Keep the map in step with one event of a batch (exec, exit). */
void bpf_python_event(struct bpf_python *p, const struct sampler_event *ev);
void bpf_python_describe(struct bpf_python *p, char *buf, size_t len);
void bpf_python_free(struct bpf_python *p);
/* Whether --mode bpf is refused before trying (not built in, no privilege), and why. */
bool sampler_bpf_refused(const struct sampler_opts *opts, char *why, size_t len);
/* Why auto does not use bpf with these options (--keep-raw, -g fp), else NULL. */
const char *sampler_bpf_unsuited(const struct sampler_opts *opts);

/* Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a
 * hybrid layout): 0, or -ENOENT. */
int sampler_cgroup2_root(char *buf, size_t len);
/* Whether pid is in the cgroup whose directory is path (cgroup v2, /proc/PID/cgroup). */
bool sampler_proc_in_cgroup(pid_t pid, const char *path);

/* x86-64 user registers kept per sample, in perf's register numbering (unwind.h): AX..IP
 * (0-8) and R8..R15 (16-23); flags and segment registers are not needed for unwinding. */
#define SAMPLER_REGS_MASK 0xff01ffull

/* A copied-out event: pointers of the sampler_event are offsets into the arena until
 * delivery (the arena moves while it grows). */
struct sampler_pending {
	struct sampler_event ev;
	size_t off_a, off_b, off_c; /* stack bytes / path / comm; kernel ips; user ips */
	size_t off_d;             /* a sample's stop_copy bytes */
	size_t off_e;             /* a sample's Python frames (bpf) */
	bool seen;                /* passed to sampler_events_each's fn already */
};

struct sampler_events {
	struct cs_buf arena;
	struct sampler_pending *pend;
	size_t npend, cap_pend;
};

struct sampler_pending *sampler_events_push(struct sampler_events *e, enum sampler_event_type type);
/* Copy len bytes into the arena, 8-byte aligned; returns their offset. */
size_t sampler_events_keep(struct sampler_events *e, const void *data, size_t len);
/* Sort what was pushed by time and hand it over as a batch (NULL when nothing was); e starts
 * empty again. */
struct sampler_batch *sampler_events_take(struct sampler_events *e);
/* Sort what was pushed so far by time and call fn for each side-band event (not the samples:
 * they are only complete when the set is taken) not passed to it by an earlier call, before
 * the set is taken (a backend that keeps state in step with the side band before it reads
 * samples). */
void sampler_events_each(struct sampler_events *e, sampler_fn fn, void *arg);
void sampler_events_free(struct sampler_events *e);

/* /proc readers for a process that existed before sampling started: its threads' names
 * (COMM, and FORK for threads other than the leader) and its executable mappings (MMAP),
 * stamped with time. */
void sampler_proc_comms(struct sampler_events *e, pid_t pid, uint64_t time);
void sampler_proc_comm(struct sampler_events *e, pid_t pid, pid_t tid, uint64_t time, bool fork);
/* keep (may be NULL: all) sees each executable mapping and says whether to deliver it. */
typedef bool (*sampler_map_fn)(void *arg, uint64_t start, uint64_t end, uint64_t pgoff,
			       const char *path);
void sampler_proc_maps(struct sampler_events *e, pid_t pid, uint64_t time, sampler_map_fn keep,
		       void *arg);

/* One thread's scheduling state ('R' running or runnable, 'S', 'D', 'T', 't', 'Z', ...; 0 when
 * unreadable), from /proc/PID/task/TID/stat; *cpu (may be NULL) the CPU it last ran on. */
char sampler_proc_thread_state(pid_t pid, pid_t tid, uint32_t *cpu);
/* The same from an open /proc/PID/task/TID/stat (read again from its start), and from its
 * text (NUL-terminated). */
char sampler_proc_stat_fd_state(int fd, uint32_t *cpu);
char sampler_proc_parse_state(const char *stat_text, uint32_t *cpu);
/* Copy up to size bytes of tid's memory at addr; returns the bytes copied, a prefix that
 * stops at the first unreadable page. */
size_t sampler_proc_read_stack(pid_t tid, uint64_t addr, uint8_t *buf, size_t size);

/* --idle's reads (idle.c keeps the file open): parse an open /proc/PID/task/TID/syscall (read again from its start) into the system call
 * (-1: none), SP and PC, returning 0, -EBUSY (running) or -errno; and fill ev as an off-CPU
 * sample from those and got bytes of stack copied (of cap). */
int sampler_proc_syscall_fd(int fd, long *nr, uint64_t *sp, uint64_t *pc);
void sampler_proc_offcpu_event(pid_t pid, pid_t tid, char state, long nr, uint64_t sp, uint64_t pc,
			       size_t got, size_t cap, struct sampler_event *ev);

/* --idle (idle.c): one blocked thread, sampled from /proc without stopping it. */
#define SAMPLER_IDLE_MAX_PENDING (256u << 20) /* beyond this, off-CPU samples are dropped */

struct sampler_idle_thread {
	pid_t pid, tid;
	int syscall_fd;           /* /proc/PID/task/TID/syscall, kept open: read at every tick */
	int schedstat_fd;         /* .../schedstat: its CPU time, to see that it did not run */
	/* the last stack copy (armed: it is still the thread's) and the periods it stands for
	 * that are not delivered yet (weight) */
	bool armed;
	uint32_t weight;
	char state;
	long nr;
	uint64_t sp, pc, runtime, time;
	size_t got;
	uint8_t *stack;           /* stack_size bytes, allocated at the first copy */
	/* The call that restart_syscall continues at (restart_sp, restart_pc): a wait with a
	 * timeout (futex, nanosleep, poll) that a stop or a signal interrupted goes on as
	 * restart_syscall, at the same SP and PC; it keeps the name of the call it continues.
	 * Set by the last call seen there, or by ptrace at the stop that caused the restart. */
	long restart_nr;
	uint64_t restart_sp, restart_pc;
	long raw_nr;              /* the armed copy's call as /proc said it (nr: as named) */
};

/* Where off-CPU samples go (events, under lock; lost counts those dropped, under lock too),
 * and what the sampling of threads found (taken: ticks a blocked thread was seen; missed: it
 * moved while read; copies: stacks copied), counted by the one thread that samples. */
struct sampler_idle_sink {
	pthread_mutex_t *lock;
	struct sampler_events *events;
	uint64_t *lost;
	uint32_t stack_size;
	uint64_t taken, missed, copies;
};

/* Returns 0, or -errno when the thread's syscall file cannot be opened (gone, not permitted). */
int sampler_idle_thread_open(struct sampler_idle_thread *th, pid_t pid, pid_t tid);
/* One tick for a thread that may be off the CPU; periods: the sampling periods it stands for. */
void sampler_idle_sample(struct sampler_idle_thread *th, struct sampler_idle_sink *sink,
			 uint64_t now, uint32_t periods);
/* Deliver the thread's pending sample, if any. */
void sampler_idle_flush(struct sampler_idle_thread *th, struct sampler_idle_sink *sink);
/* The same for a thread found running or moved after a tick that stood for PERIODS: the pending
 * sample also gets the first half of the gap (its expected share of it). */
void sampler_idle_flush_late(struct sampler_idle_thread *th, struct sampler_idle_sink *sink,
			     uint32_t periods);
/* Flush, then close its files and free its copy. */
void sampler_idle_thread_close(struct sampler_idle_thread *th, struct sampler_idle_sink *sink);

/* ptrace: at a stop that aborted a system call with EINTR which the kernel would not restart
 * (epoll_wait, semop, ...), restart it, unless a signal of the target's own is pending; the
 * thread is in a ptrace stop, regs its registers there. Returns whether it did. */
bool sampler_ptrace_restart_syscall(pid_t pid, pid_t tid, const struct user_regs_struct *regs);

#endif
