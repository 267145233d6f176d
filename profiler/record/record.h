/* record.h: the recording engine behind `csampler record`: launch or attach, drain the
 * sampler, unwind each sample as it arrives, intern locations and stacks into the data file,
 * and symbolize every unique location once (while recording and at the end). */
#ifndef CSAMPLER_RECORD_H
#define CSAMPLER_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "record/gpu_setup.h"
#include "sampler/sampler.h"

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
	int argc_all;                /* csampler's whole command line, for the header */
	char **argv_all;
};

/* Runs the whole recording and returns csampler's exit status: the command's status in
 * launch mode (128+N for death by signal N), 0 in attach mode, or CS_EXIT_* on failure.
 * *written (may be NULL) becomes the data file's name (o->output with its patterns expanded,
 * record/output.h; the caller frees it) when the file was completed, else stays NULL. */
int record_run(const struct record_opts *opts, char **written);

#endif
