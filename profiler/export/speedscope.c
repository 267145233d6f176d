/* speedscope.c: `csampler export --format speedscope`, speedscope's own JSON file format
 * (https://www.speedscope.app/file-format-schema.json): the frames shared by every profile,
 * interned once, and one "sampled" profile per thread named "comm tid", whose samples are
 * in time order, each a list of frame indexes root first, weighted by the time it stands for
 * (sample weight x sampling period in nanoseconds). */
#include "export/export.h"
#include "base/cs.h"
#include "base/hash.h"
#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SPEEDSCOPE_DEFAULT_PERIOD_NS 1000000ULL /* no rate_hz header: count 1 ms a sample */

struct speedscope_ctx {
	const struct profile *p;
	uint32_t *frame_index;  /* profile frame id -> speedscope frame index + 1, 0 unused */
	uint32_t nused;
	/* (name << 32 | file, line) -> index + 1 of the written frame: what speedscope shows of a
	 * frame; profile frames that differ only in what it does not show (module, flags) share
	 * one */
	struct cs_map seen;
	struct json_writer w;   /* the output (base/json.c) */
};

/* The index + 1 of the written frame (name, file, line); *added when it is new. */
static uint32_t speedscope_intern(struct speedscope_ctx *c, uint32_t name, uint32_t file,
				  uint32_t line, bool *added)
{
	uint32_t *v = cs_map_slot(&c->seen, (uint64_t)name << 32 | file, line);
	*added = *v == CS_MAP_NONE;
	if (*added)
		*v = ++c->nused;
	return *v;
}

/* The sampling period from the header's rate_hz, or the default. */
uint64_t export_period_ns(const struct profile *p)
{
	const char *rate = profile_header(p, "rate_hz");
	double hz;

	if (rate && !cs_parse_double(rate, &hz) && hz >= 1 && hz <= 1e9)
		return (uint64_t)(1e9 / hz + 0.5);
	return SPEEDSCOPE_DEFAULT_PERIOD_NS;
}

/* Number every frame that some sample uses, in first-use order, and write them. */
static void speedscope_frames(struct speedscope_ctx *c)
{
	const struct profile *p = c->p;
	struct json_writer *w = &c->w;

	json_str(w, "$schema", "https://www.speedscope.app/file-format-schema.json");
	json_str(w, "exporter", "csampler " CSAMPLER_VERSION);
	json_object(w, "shared", JSON_INLINE);
	json_array(w, "frames", JSON_INLINE);
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->stack >= p->nstacks)
			continue;
		const struct profile_stack *st = &p->stacks[s->stack];
		for (uint32_t d = 0; d < st->nframes; d++) {
			uint32_t id = p->stack_frames[st->first + d];
			if (id >= p->nframes || c->frame_index[id])
				continue;
			const struct profile_frame *fr = &p->frames[id];
			uint32_t file = fr->file, line = fr->file ? fr->line : 0;
			if (!file && fr->module < p->nmodules)
				file = p->modules[fr->module].path;
			bool added;
			c->frame_index[id] = speedscope_intern(c, fr->name, file, line, &added);
			if (!added)
				continue;
			json_break(w);
			json_object(w, NULL, JSON_INLINE);
			json_str(w, "name", profile_str(p, fr->name));
			if (file)
				json_str(w, "file", profile_str(p, file));
			if (line)
				json_u64(w, "line", line);
			json_end(w);
		}
	}
	json_end(w);
	json_end(w);
	json_break(w);
}

/* One thread's profile: its samples (already in time order in the model). Returns false
 * when the thread has none (nothing written). */
static bool speedscope_thread(struct speedscope_ctx *c, const struct profile_thread *t,
			      uint64_t period_ns)
{
	const struct profile *p = c->p;
	struct json_writer *w = &c->w;
	const char *comm = profile_str(p, t->comm);
	char *name = *comm ? cs_asprintf("%s %" PRIu32, comm, t->tid) :
			     cs_asprintf("thread %" PRIu32, t->tid);
	uint64_t start = 0, end = 0;
	bool any = false;

	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->pid != t->pid || s->tid != t->tid || s->stack >= p->nstacks)
			continue;
		if (!any)
			start = s->time;
		end = s->time + (uint64_t)s->weight * period_ns;
		any = true;
	}
	if (!any) {
		free(name);
		return false;
	}
	json_break(w);
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "type", "sampled");
	json_str(w, "name", name);
	free(name);
	json_str(w, "unit", "nanoseconds");
	json_u64(w, "startValue", 0);
	json_u64(w, "endValue", end - start);
	json_array(w, "samples", JSON_INLINE);
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->pid != t->pid || s->tid != t->tid || s->stack >= p->nstacks)
			continue;
		const struct profile_stack *st = &p->stacks[s->stack];
		json_array(w, NULL, JSON_INLINE);
		for (uint32_t d = st->nframes; d-- > 0;) { /* root first */
			uint32_t id = p->stack_frames[st->first + d];
			if (id < p->nframes)
				json_u64(w, NULL, c->frame_index[id] - 1);
		}
		json_end(w);
	}
	json_end(w);
	json_array(w, "weights", JSON_INLINE);
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->pid != t->pid || s->tid != t->tid || s->stack >= p->nstacks)
			continue;
		json_u64(w, NULL, (uint64_t)s->weight * period_ns);
	}
	json_end(w);
	json_end(w);
	return true;
}

int export_speedscope_write(FILE *f, const struct profile *p)
{
	struct speedscope_ctx c = { .p = p };
	uint64_t period_ns = export_period_ns(p);

	json_init(&c.w, f);
	json_object(&c.w, NULL, JSON_INLINE);
	c.frame_index = cs_calloc(p->nframes + 1, sizeof(*c.frame_index));
	speedscope_frames(&c);
	json_array(&c.w, "profiles", JSON_INLINE);
	for (size_t i = 0; i < p->nthreads; i++)
		speedscope_thread(&c, &p->threads[i], period_ns);
	json_break(&c.w);
	json_end(&c.w);
	json_str(&c.w, "name", profile_header(p, "cmdline") ? profile_header(p, "cmdline") : "csampler");
	json_u64(&c.w, "activeProfileIndex", 0);
	json_end(&c.w);
	fputc('\n', f);
	free(c.frame_index);
	cs_map_free(&c.seen);
	return ferror(f) ? -EIO : 0;
}
