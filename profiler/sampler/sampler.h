/* sampler.h: the interface between `record` and a sampling backend. Two backends implement it
 * behind one ops table (backend.h): sampler_perf.c with perf_event_open (per-CPU ring buffers)
 * and sampler_ptrace.c with ptrace stops (where perf events are refused: containers without
 * CAP_PERFMON, perf_event_paranoid 3, gVisor). sampler.c picks one (--mode) and falls back from
 * perf to ptrace. A backend delivers raw samples and process events (mmap, comm, fork, exit,
 * lost) in time order within each drained batch, so `record` and the data file are the same
 * whichever backend ran. */
#ifndef CSAMPLER_SAMPLER_H
#define CSAMPLER_SAMPLER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/pywalk.h"
#include "unwind/offcpu.h"
#include "unwind/unwind.h"

enum sampler_callgraph {
	SAMPLER_CALLGRAPH_DWARF,  /* user registers + a copy of the user stack */
	SAMPLER_CALLGRAPH_FP,     /* the kernel's frame-pointer callchain */
};

enum sampler_mode {
	SAMPLER_MODE_AUTO,        /* the first backend of the list that is not refused */
	SAMPLER_MODE_PERF,
	SAMPLER_MODE_PTRACE,
	SAMPLER_MODE_BPF,
};

/* Ring buffer pages per CPU when -m is not given (8 MiB a CPU); an unprivileged user gets
 * fewer (record_default_sampler). */
#define SAMPLER_DEFAULT_PAGES 2048

struct sampler_opts {
	enum sampler_mode mode;
	bool idle;                /* --idle: also sample threads off the CPU, on the wall clock */
	uint64_t freq_hz;
	enum sampler_callgraph callgraph;
	uint32_t stack_size;      /* bytes of user stack per sample (dwarf) */
	uint32_t mmap_pages;      /* ring buffer pages per CPU (power of two) */
	bool mmap_pages_given;    /* -m was given (bpf mode then allows a ring over 256 MiB) */
	bool all;                 /* record -a: every process (bpf only) */
	const char *cgroup;       /* --cgroup PATH: the processes under one cgroup (bpf only) */
	bool keep_raw;            /* record --keep-raw: the stack copies are kept (not bpf) */
	/* ptrace: called while a sampled thread is stopped, after its stack was copied (got
	 * bytes from sp into stack): may copy more of its memory as it is at the stop into buf
	 * (cap bytes), delivered with the sample (sample.mem); returns the bytes written. perf:
	 * called by the reader as soon as it reads the sample, the thread running (stack NULL);
	 * every sample then wakes the reader. record sets it to py_capture (the Python frame
	 * chain). NULL: nothing more is copied. */
	size_t (*stop_copy)(void *arg, uint32_t pid, uint32_t tid, uint64_t sp,
			    const uint8_t *stack, size_t got, uint8_t *buf, size_t cap);
	void *stop_copy_arg;
	size_t stop_copy_cap;     /* buf's size */
	/* bpf: where process pid's Python thread states and frames are (record sets it to
	 * py_where: known once the recorder found the process' interpreter); 0, or -ENOENT
	 * while not known. Called by the reader thread; NULL: Python frames are not read in
	 * the kernel. */
	int (*py_where)(void *arg, uint32_t pid, struct pywalk_where *out);
	void *py_where_arg;
};

/* sample.py_kernel: what the backend read of the thread's Python frames at the sample */
enum sampler_py_kernel {
	SAMPLER_PY_NOT_READ = 0,  /* nothing: the recorder reads them from the process */
	SAMPLER_PY_READ,          /* py[0, npy): the whole frame chain as of the sample */
	SAMPLER_PY_CUT,           /* py[0, npy): its inner part (the chain goes on) */
	SAMPLER_PY_FAILED,        /* tried and could not (a fault, a chain torn at the sample,
				   * no thread state): not read later in their place, by count
				   * (the recorder marks the activations not read) */
};

enum sampler_event_type {
	SAMPLER_EV_SAMPLE,
	SAMPLER_EV_MMAP,
	SAMPLER_EV_COMM,
	SAMPLER_EV_FORK,
	SAMPLER_EV_EXIT,
	SAMPLER_EV_LOST,
};

struct sampler_event {
	enum sampler_event_type type;
	uint64_t time;            /* CLOCK_MONOTONIC ns */
	uint32_t pid, tid, cpu;
	union {
		struct {
			struct unwind_sample snap; /* pid/tid filled; pointers valid in the callback */
			uint64_t stack_cap;        /* bytes requested; dyn size == cap means full */
			/* --idle: the thread was off the CPU (blocked) when sampled; offcpu_syscall
			 * is the system call it waits in, or an OFFCPU_* state (unwind/offcpu.h) when not in one. Its
			 * registers may hold only SP and IP (regs_mask). */
			bool offcpu;
			int32_t offcpu_syscall;
			uint32_t weight;           /* sampling periods this sample stands for (>= 1) */
			/* UNWIND_* flags of a stack the backend walked itself (bpf: user_ips from
			 * the kernel's walk), added to the unwinder's */
			uint32_t unwind_flags;
			/* bpf: bit i of user_fp_mask says user_ips[i] was found by a
			 * frame-pointer step in the kernel (PROFILE_FRAME_FOUND_FP) */
			uint64_t user_fp_mask[2];
			/* what opts.stop_copy copied (NULL, 0: nothing), mem_age_ns after the
			 * sample (0: at the stop, ptrace; perf: when the reader read it) */
			const uint8_t *mem;
			uint64_t mem_size;
			uint64_t mem_age_ns;
			/* bpf: the Python frames read at the sample (base/pywalk.c's walk of the
			 * chain the program read), innermost first */
			enum sampler_py_kernel py_kernel;
			const struct pywalk_frame *py;
			/* each py frame's code object's PYWALK_CODE_FP at the sample (0:
			 * unknown): the code object named later is checked to be the same */
			const uint64_t *py_fp;
			uint32_t npy;
			uint64_t py_first;      /* py[0]'s address at the sample (0: unknown) */
		} sample;
		struct {
			uint64_t start, len, pgoff;
			uint32_t prot, flags;
			const char *path;
		} mmap;
		struct {
			const char *comm;
			bool exec;
		} comm;
		struct {
			uint32_t ppid, ptid;      /* fork and exit */
		} task;
		struct {
			uint64_t count;
		} lost;
	};
};


/* The highest -F the backend of mode takes (auto: the highest of those it may pick), for
 * the option check. */
uint64_t sampler_max_rate(enum sampler_mode mode);
/* The --mode name of a backend ("auto", "perf", "ptrace", "bpf"). */
const char *sampler_mode_name(enum sampler_mode mode);

/* Returns 0 or -errno to stop draining. */
typedef int (*sampler_fn)(void *arg, const struct sampler_event *ev);

struct sampler;

/* Launch mode: sample child (stopped before exec, on a pipe) and everything it creates;
 * counting starts at its exec. opts->mode picks the backend; in auto mode a refusal of perf
 * events (EACCES, EPERM, ENOSYS, EOPNOTSUPP) is said in one line and ptrace is tried. */
int sampler_open_launch(struct sampler **out, const struct sampler_opts *opts, pid_t child);
/* Attach mode: sample every thread of each pid and what they create from now on. The existing
 * state (threads, names, mappings) is delivered as synthesized events by the first drain. */
int sampler_open_attach(struct sampler **out, const struct sampler_opts *opts, const pid_t *pids,
			size_t npids);
/* Fill up to max pollfds; returns how many. */
int sampler_pollfds(struct sampler *s, struct pollfd *fds, int max);
/* Copy out every pending record of every ring buffer, sort by time, deliver. */
int sampler_drain(struct sampler *s, sampler_fn fn, void *arg);

/* The same in two steps, so that one thread can keep the rings empty while another one
 * unwinds: sampler_collect copies every pending record into a new batch (sorted by time;
 * NULL when there was nothing), sampler_batch_deliver calls fn for each of its events, and
 * sampler_batch_free releases it. collect must not run in two threads at once; batches are
 * independent of the sampler and of each other. */
struct sampler_batch;
struct sampler_batch *sampler_collect(struct sampler *s);
size_t sampler_batch_bytes(const struct sampler_batch *b);
uint64_t sampler_batch_samples(const struct sampler_batch *b);
int sampler_batch_deliver(struct sampler_batch *b, sampler_fn fn, void *arg);
void sampler_batch_free(struct sampler_batch *b);
/* Stop sampling (before the last drain). */
void sampler_disable(struct sampler *s);
/* CPU time the sampled tasks ran while their events were enabled, in ns: the events' own
 * cpu-clock counts, which children fold into at exit (inherit), so it is known after the
 * targets exited, whoever reaped them. */
uint64_t sampler_task_clock_ns(struct sampler *s);
void sampler_close(struct sampler *s);
/* Whether kernel frames are being captured (false when perf_event_paranoid forbids). */
bool sampler_has_kernel(const struct sampler *s);
/* The backend ("perf_event_open", "ptrace") and what a sample measures ("cpu-clock",
 * "cpu-clock+idle", ...), for the data file's header. */
const char *sampler_name(const struct sampler *s);
/* Which backend ran and why the others did not ("auto", "auto; bpf not used: --keep-raw ...",
 * "auto; bpf refused: needs root ...; perf_event_open refused: ..."), for the header and the
 * end-of-record line. */
const char *sampler_choice(const struct sampler *s);
/* The call-graph name of a backend that walks the stacks itself ("bpf"), else NULL. */
const char *sampler_callgraph(const struct sampler *s);
/* Whether the backend holds the targets' threads stopped while open (ptrace). */
bool sampler_holds_threads(const struct sampler *s);
/* Whether the backend reads Python frames at the sample itself (bpf). */
bool sampler_python_at_sample(const struct sampler *s);
/* Whether the last collection had samples the backend could not finish alone (bpf's stack
 * slices, until their files' rows are loaded): then collect again soon. */
bool sampler_catching_up(struct sampler *s);
/* Whether each sample wakes the collecting thread through sampler_pollfds (then no timer is
 * needed to collect soon after a sample). */
bool sampler_wakes_each_sample(const struct sampler *s);
/* The line to print when kernel frames are not captured although the backend could, or NULL. */
const char *sampler_kernel_note(const struct sampler *s);
const char *sampler_event_name(const struct sampler *s);
/* A backend that waits for the traced processes itself (ptrace: while attached, a waitpid
 * from any other thread would take the tracer's stops) reaps the launched child too. Returns 1
 * with its wait status once it has, 0 while it may still (the caller must not waitpid), and
 * -ENOSYS when the caller waits for the child itself (perf; ptrace after detaching). */
int sampler_child_exit(struct sampler *s, pid_t child, int *status);
/* One line on what sampling cost the target where the backend measures it (ptrace: the
 * stops), after sampler_disable; "" when there is nothing to say. */
void sampler_describe(struct sampler *s, char *buf, size_t len);

#endif
