/* profile_builder_test.c: the synthetic profile builder of profile_builder.h (test-only). */
#include "analysis/profile_builder.h"

#include "base/cs.h"

#include <stdlib.h>
#include <string.h>

void pb_init(struct pbuild *b)
{
	memset(b, 0, sizeof(*b));
	b->default_module = "/usr/bin/app";
	b->p.format_version = 1;
	b->p.rank = -1;
	b->p.finalized = true;
	b->p.start_ns = 1000000000ull;
	b->p.end_ns = b->p.start_ns;
	b->next_time = b->p.start_ns;
	pb_str(b, "");
}

void pb_free(struct pbuild *b)
{
	profile_release(&b->p);
	memset(b, 0, sizeof(*b));
}

uint32_t pb_str(struct pbuild *b, const char *s)
{
	/* Linear search: test profiles hold a few dozen strings. */
	for (size_t i = 0; i < b->p.nstrings; i++)
		if (!strcmp(b->p.strings[i], s))
			return (uint32_t)i;
	cs_grow(&b->p.strings, &b->strings_cap, b->p.nstrings + 1, sizeof(char *));
	b->p.strings[b->p.nstrings] = cs_strdup(s);
	return (uint32_t)b->p.nstrings++;
}

uint32_t pb_module(struct pbuild *b, const char *path, uint32_t flags)
{
	uint32_t sid = pb_str(b, path);
	for (size_t i = 0; i < b->p.nmodules; i++)
		if (b->p.modules[i].path == sid) {
			b->p.modules[i].flags |= flags;
			return (uint32_t)i;
		}
	cs_grow(&b->p.modules, &b->modules_cap, b->p.nmodules + 1, sizeof(*b->p.modules));
	b->p.modules[b->p.nmodules] = (struct profile_module){ .path = sid, .flags = flags };
	return (uint32_t)b->p.nmodules++;
}

uint32_t pb_frame(struct pbuild *b, const char *name, uint32_t module, const char *file,
		  uint32_t line, uint32_t flags)
{
	struct profile_frame f = { .name = pb_str(b, name), .module = module,
				   .file = file ? pb_str(b, file) : 0, .line = line,
				   .flags = flags };
	for (size_t i = 0; i < b->p.nframes; i++)
		if (!memcmp(&b->p.frames[i], &f, sizeof(f)))
			return (uint32_t)i;
	cs_grow(&b->p.frames, &b->frames_cap, b->p.nframes + 1, sizeof(*b->p.frames));
	b->p.frames[b->p.nframes] = f;
	return (uint32_t)b->p.nframes++;
}

/* One frame of pb_stack's syntax: NAME[_[x]][@MODULE][=FILE:LINE]. */
static uint32_t pb_parse_frame(struct pbuild *b, char *spec)
{
	uint32_t flags = 0, line = 0;
	char *file = NULL, *module = NULL;
	char *eq = strchr(spec, '=');

	if (eq) {
		*eq = 0;
		file = eq + 1;
		char *colon = strrchr(file, ':');
		if (colon) {
			*colon = 0;
			line = (uint32_t)strtoul(colon + 1, NULL, 10);
		}
	}
	char *at = strchr(spec, '@');
	if (at) {
		*at = 0;
		module = at + 1;
	}
	size_t n = strlen(spec);
	if (n > 4 && spec[n - 4] == '_' && spec[n - 3] == '[' && spec[n - 1] == ']') {
		switch (spec[n - 2]) {
		case 'k': flags = PROFILE_FRAME_KERNEL; break;
		case 'i': flags = PROFILE_FRAME_INLINED; break;
		case 'j': flags = PROFILE_FRAME_JIT; break;
		case 'p': flags = PROFILE_FRAME_FOUND_FP; break;
		case 's': flags = PROFILE_FRAME_FOUND_SCAN; break;
		case 'y': flags = PROFILE_FRAME_PYTHON; break;
		}
		if (flags)
			spec[n - 4] = 0;
	}
	if (!module)
		module = (char *)(flags & PROFILE_FRAME_KERNEL   ? "[kernel.kallsyms]"
				  : flags & PROFILE_FRAME_PYTHON ? "[python]"
								 : b->default_module);
	uint32_t mflags = flags & PROFILE_FRAME_KERNEL   ? PROFILE_MODULE_KERNEL
			  : flags & PROFILE_FRAME_PYTHON ? PROFILE_MODULE_PYTHON : 0;
	return pb_frame(b, spec, pb_module(b, module, mflags), file, line, flags);
}

uint32_t pb_stack(struct pbuild *b, const char *folded)
{
	char *copy = cs_strdup(folded);
	uint32_t *ids = NULL;
	size_t n = 0, cap = 0;

	for (char *save = NULL, *tok = strtok_r(copy, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save)) {
		cs_grow(&ids, &cap, n + 1, sizeof(*ids));
		ids[n++] = pb_parse_frame(b, tok);
	}
	/* Stored leaf first. */
	cs_grow(&b->p.stack_frames, &b->stack_frames_cap, b->p.nstack_frames + n,
		sizeof(*b->p.stack_frames));
	uint32_t first = (uint32_t)b->p.nstack_frames;
	for (size_t i = 0; i < n; i++)
		b->p.stack_frames[first + i] = ids[n - 1 - i];
	b->p.nstack_frames += n;
	cs_grow(&b->p.stacks, &b->stacks_cap, b->p.nstacks + 1, sizeof(*b->p.stacks));
	b->p.stacks[b->p.nstacks] = (struct profile_stack){ .first = first,
							    .nframes = (uint32_t)n };
	free(ids);
	free(copy);
	return (uint32_t)b->p.nstacks++;
}

void pb_sample_weighted(struct pbuild *b, uint32_t pid, uint32_t tid, uint32_t stack,
			uint32_t weight, uint32_t flags)
{
	cs_grow(&b->p.samples, &b->samples_cap, b->p.nsamples_records + 1,
		sizeof(*b->p.samples));
	b->p.samples[b->p.nsamples_records++] = (struct profile_sample){
		.time = b->next_time, .pid = pid, .tid = tid, .stack = stack, .flags = flags,
		.weight = weight };
	b->p.nsamples += weight;
	b->next_time += 1000000;
	b->p.end_ns = b->next_time;
}

void pb_samples(struct pbuild *b, uint32_t pid, uint32_t tid, uint32_t stack, size_t n,
		uint32_t flags)
{
	for (size_t i = 0; i < n; i++)
		pb_sample_weighted(b, pid, tid, stack, 1, flags);
}

void pb_thread(struct pbuild *b, uint32_t pid, uint32_t tid, const char *comm)
{
	cs_grow(&b->p.threads, &b->threads_cap, b->p.nthreads + 1, sizeof(*b->p.threads));
	b->p.threads[b->p.nthreads++] = (struct profile_thread){ .pid = pid, .tid = tid,
								 .comm = pb_str(b, comm) };
}

void pb_process(struct pbuild *b, uint32_t pid, uint32_t ppid, const char *comm)
{
	cs_grow(&b->p.processes, &b->processes_cap, b->p.nprocesses + 1,
		sizeof(*b->p.processes));
	b->p.processes[b->p.nprocesses++] = (struct profile_process){ .pid = pid, .ppid = ppid,
								      .comm = pb_str(b, comm),
								      .rank = -1, .orig_pid = pid };
}

void pb_header(struct pbuild *b, const char *key, const char *value)
{
	cs_grow(&b->p.header, &b->header_cap, b->p.nheader + 1, sizeof(*b->p.header));
	b->p.header[b->p.nheader++] = (struct profile_kv){ .key = cs_strdup(key),
							   .value = cs_strdup(value) };
	if (!strcmp(key, "rank")) /* as profile_load reads it: a number, else none */
		b->p.rank = strspn(value, "0123456789") == strlen(value) && *value ? atoi(value) : -1;
}
