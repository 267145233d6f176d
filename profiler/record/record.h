/* record.h: the recording engine behind `csampler record`: launch or attach, drain the
 * sampler, unwind each sample as it arrives, intern locations and stacks into the data file,
 * and symbolize every unique location once (while recording and at the end). */
#ifndef CSAMPLER_RECORD_H
#define CSAMPLER_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record/gpu_setup.h"
#include "sampler/sampler.h"

struct df_gpu_activity;
struct sym_frame;

/* A live consumer of the recording (`csampler top`): its functions are called from the
 * recorder's main thread while the data file is written, with what is written. Every pointer
 * is valid during the call only. */
struct record_live {
	void *arg;
	/* a new interned stack: its location ids, leaf first */
	void (*stack)(void *arg, uint32_t id, const uint32_t *locs, uint32_t n);
	/* a location named (every 250 ms, new locations only): its inline chain, innermost first
	 * (n may be 0: no name), and the path of its module */
	void (*symbol)(void *arg, uint32_t loc, const struct sym_frame *frames, int n,
		       const char *module);
	/* one sample (weight: sampling periods) */
	void (*sample)(void *arg, uint32_t pid, uint32_t tid, uint32_t stack, uint32_t weight);
	/* a GPU activity record (kernel, copy ...), name as written ("" when none) */
	void (*gpu_activity)(void *arg, const struct df_gpu_activity *a, const char *name);
	/* once per pass of the loop (every 100 ms at least, sooner when wake_fd is readable):
	 * returns true to end the recording (as a SIGINT sent to csampler would) */
	bool (*tick)(void *arg, uint64_t now_ns);
	int wake_fd;                 /* polled with the rest (a terminal's input); -1: none */
};

struct record_opts {
	const char *output;          /* data file path, with -o patterns (record/output.h) */
	struct sampler_opts sampler;
	char **argv;                 /* launch mode: the command; NULL in attach mode */
	pid_t *pids;                 /* attach mode */
	size_t npids;
	double duration_s;           /* attach (or launch) mode: stop after this; 0 = none */
	bool keep_raw;               /* also store raw registers + stack copies */
	bool compress;
	bool no_python;              /* --no-python: native stacks only, no CPython frame reads */
	bool no_debuginfod;          /* --no-debuginfod: no debuginfod lookups (see record.c) */
	/* GPU capture (--gpu): gpu.dir set means on. Launch mode: the command gets the
	 * variables of gpu_setup_env and gpu.dir is private (removed at the end); attach mode:
	 * gpu.dir is the per-user directory of `csampler env`, read for the session's PIDs. */
	enum gpu_mode gpu_mode;
	struct gpu_setup gpu;
	/* attach mode, --gpu on: load gpu.inject_lib into the processes that were not started
	 * with `csampler env` (record/gpu_attach.h), detach at the end; gpu.dir is the per-user
	 * directory all the same */
	bool gpu_inject;
	const char *gpu_off_reason;  /* header "gpu" when off: why */
	/* live use (csampler top): the consumer above; no status line, no summary printed */
	const struct record_live *live;
	/* launch mode: the command's standard output and error go to this file (created or
	 * truncated), its standard input is /dev/null; NULL: it shares csampler's */
	const char *child_log;
	int argc_all;                /* csampler's whole command line, for the header */
	char **argv_all;
};

/* Runs the whole recording and returns csampler's exit status: the command's status in
 * launch mode (128+N for death by signal N), 0 in attach mode, or CS_EXIT_* on failure.
 * *written (may be NULL) becomes the data file's name (o->output with its patterns expanded,
 * record/output.h; the caller frees it) when the file was completed, else stays NULL. */
int record_run(const struct record_opts *opts, char **written);

#endif
