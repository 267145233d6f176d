/* profile_builder.h: builds small synthetic `struct profile`s in memory for unit tests of the
 * readers (stacks, report, folded, flame), without a data file. Test-only: the code is in
 * profile_builder_test.c, linked into bin/csampler-unit alone.
 *
 * Stacks are written like folded text, root first:
 *
 *     pb_stack(&b, "_start;__libc_start_main;main;compute_[i];memcpy_[k]")
 *
 * Each frame is NAME[_[k|i|j|p|s|y]][@MODULE][=FILE:LINE]: the suffix sets PROFILE_FRAME_KERNEL,
 * _INLINED, _JIT, _FOUND_FP, _FOUND_SCAN or _PYTHON; MODULE is a module path (default
 * b->default_module, "[kernel.kallsyms]" for kernel frames, "[python]" for Python frames); FILE:LINE is the frame's source position. Equal
 * frames and strings are shared, as in a loaded profile. */
#ifndef CSAMPLER_PROFILE_BUILDER_H
#define CSAMPLER_PROFILE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"

struct pbuild {
	struct profile p;          /* the profile being built; owned by the builder */
	const char *default_module;
	size_t strings_cap, modules_cap, frames_cap, stack_frames_cap, stacks_cap, samples_cap,
		threads_cap, processes_cap, header_cap;
	uint64_t next_time;
};

void pb_init(struct pbuild *b);
void pb_free(struct pbuild *b);

uint32_t pb_str(struct pbuild *b, const char *s);
/* The module with this path (flags are or-ed into an existing one). */
uint32_t pb_module(struct pbuild *b, const char *path, uint32_t flags);
uint32_t pb_frame(struct pbuild *b, const char *name, uint32_t module, const char *file,
		  uint32_t line, uint32_t flags);
/* A stack from "root;...;leaf" (see above); "" is a stack without frames. */
uint32_t pb_stack(struct pbuild *b, const char *folded);
/* Append weight-1 samples: n of them of stack on (pid, tid), 1 ms apart. */
void pb_samples(struct pbuild *b, uint32_t pid, uint32_t tid, uint32_t stack, size_t n,
		uint32_t flags);
void pb_sample_weighted(struct pbuild *b, uint32_t pid, uint32_t tid, uint32_t stack,
			uint32_t weight, uint32_t flags);
void pb_thread(struct pbuild *b, uint32_t pid, uint32_t tid, const char *comm);
void pb_process(struct pbuild *b, uint32_t pid, uint32_t ppid, const char *comm);
/* Header entries; the builder keeps copies. */
void pb_header(struct pbuild *b, const char *key, const char *value);

#endif
