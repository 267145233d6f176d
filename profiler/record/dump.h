/* dump.h: the engine of `csampler dump`: one snapshot of every thread of a set of running
 * processes (a hung or slow distributed job), with the native stack and Python frames of each
 * thread, its state (running, or the system call it waits in), and the GPU kernels each
 * process launched that have not finished, with their launch stacks.
 *
 * How: the processes are read in parallel, one reader thread per process (up to
 * DUMP_MAX_READERS): each stops every thread of its process together, copies their registers
 * and stacks, reads the GPU library's in-flight table while they are stopped, and lets them go
 * (sampler/snapshot.h). Only then, in the calling thread, are the copies unwound, merged with
 * the Python frames (read from the running process: the frame chain of a thread that moved on
 * since is noticed and said, unwind/python.h) and named, with one unwinding context whose
 * per-file state (CFI, symbols) is shared by all the processes.
 *
 * GPU work in flight: a process that has libcsampler-cupti.so loaded (`csampler env`, `record
 * --gpu`, `record -p --gpu on`) keeps a table of its kernel launches (inject/protocol.h,
 * struct gpu_inflight_table). The reader finds it by its symbol in the process' mapping of the
 * library, asks the library's writer thread to flush CUPTI (one word written with
 * process_vm_writev, answered within ~20 ms) so that kernels that finished are marked so, and
 * reads the table with process_vm_readv while the process is stopped. */
#ifndef CSAMPLER_RECORD_DUMP_H
#define CSAMPLER_RECORD_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define DUMP_MAX_READERS 64
#define DUMP_DEFAULT_STACK (256u << 10)

struct dump_opts {
	const pid_t *pids;
	size_t npids;
	bool children;               /* --children: every descendant of the pids too */
	const char *cgroup;          /* --cgroup: every process of this cgroup (v2) and below */
	uint32_t stack_size;         /* bytes of each thread's stack copied */
	bool no_python;
	bool no_gpu;
	uint64_t stop_timeout_ns;    /* a thread that does not stop by then is left running */
	uint64_t gpu_flush_timeout_ns; /* wait for the library's flush this long */
};

/* One frame, named: name, and file:line when known (Python frames, debug info). */
struct dump_frame {
	char *name;
	char *file;                  /* NULL when unknown */
	uint32_t line;
	char *module;                /* the file's base name ("libc.so.6", "[python]") */
	bool python, inlined;
};

struct dump_stack {
	struct dump_frame *frames;   /* leaf first */
	size_t n;
	bool incomplete;             /* the unwinder stopped before the thread's entry */
	bool python_changed;         /* the Python frame chain no longer matched the copy */
};

struct dump_thread {
	pid_t tid;
	char comm[16];
	char state;                  /* /proc state before the stop */
	int64_t syscall;             /* the system call it waits in, -1 when none */
	int error;                   /* 0, -ESRCH (exited), -ETIMEDOUT (did not stop) */
	struct dump_stack stack;
};

struct dump_gpu_kernel {
	uint32_t correlation, tid;
	uint64_t age_ns;             /* since the launch */
	char *name;                  /* demangled kernel name */
	struct dump_stack stack;
	bool stack_overwritten;      /* the launching thread's table of stacks was reset since the
				      * launch (many distinct stacks): the stack is not known */
};

enum dump_gpu_state {
	DUMP_GPU_NONE,               /* no GPU library in the process */
	DUMP_GPU_IDLE,               /* loaded but not capturing (CUDA not initialised, detached) */
	DUMP_GPU_READ,               /* the table was read */
	DUMP_GPU_ERROR,              /* loaded, the table could not be read: gpu_note says why */
};

struct dump_process {
	pid_t pid, ppid;
	char comm[16];
	int64_t rank;                /* $RANK, $LOCAL_RANK or $OMPI_COMM_WORLD_RANK; -1: none */
	int error;                   /* 0, or -errno: nothing was read (error_text says why) */
	char *error_text;
	uint64_t stopped_ns;
	struct dump_thread *threads;
	size_t nthreads;
	enum dump_gpu_state gpu;
	char *gpu_note;              /* a line about the GPU table (flush not answered ...) */
	uint64_t gpu_launches;       /* kernels launched since the library started */
	struct dump_gpu_kernel *kernels; /* launched, not finished; oldest first */
	size_t nkernels;
};

struct dump_result {
	struct dump_process *procs;  /* by PID */
	size_t nprocs;
	uint64_t read_ns;            /* start to the last process let go */
	uint64_t total_ns;           /* start to the end (names included) */
};

/* Take the snapshot. Returns 0 with *out filled (some processes may carry an error), or
 * -errno after one line (bad cgroup path, no process to dump). */
int dump_run(const struct dump_opts *o, struct dump_result *out);
void dump_result_free(struct dump_result *r);

/* ---- output (dump_out.c) ---- */

/* Every process and thread as text, then the summary. */
void dump_print_text(FILE *f, const struct dump_result *r, bool summary_only);
/* The same as one JSON object (every name escaped). */
void dump_print_json(FILE *f, const struct dump_result *r);

/* The summary: threads grouped by identical stack (and state) across processes. */
struct dump_group {
	char *key;                   /* state + frame names, what identical means */
	const struct dump_thread *example;
	size_t nthreads;
	pid_t *pids;                 /* the processes that have it, sorted */
	size_t npids;
};
struct dump_summary {
	struct dump_group *groups;   /* most processes first, then most threads */
	size_t ngroups;
	size_t nprocs;               /* processes read */
	size_t nthreads;
};
void dump_summarize(const struct dump_result *r, struct dump_summary *s);
void dump_summary_free(struct dump_summary *s);
/* A short description of where a thread is: its state and up to four frames ("waiting in futex:
 * pthread_cond_wait < wait_for_peer < main"). */
void dump_thread_where(const struct dump_thread *t, char *buf, size_t len);

#endif
