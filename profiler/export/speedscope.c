/* speedscope.c: `csampler export --format speedscope`, speedscope's own JSON file format
 * (https://www.speedscope.app/file-format-schema.json): the frames shared by every profile,
 * interned once, and one "sampled" profile per thread named "comm tid", whose samples are
 * in time order, each a list of frame indexes root first, weighted by the time it stands for
 * (sample weight x sampling period in nanoseconds). */
#include "export/export.h"
#include "base/cs.h"
#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SPEEDSCOPE_DEFAULT_PERIOD_NS 1000000ULL /* no rate_hz header: count 1 ms a sample */

/* A written frame: what speedscope shows of it (name, file string ids and line). Profile
 * frames that differ only in what speedscope does not show (module, flags) share one. */
struct speedscope_frame {
	uint32_t name, file, line;
	uint32_t index1;        /* speedscope frame index + 1; 0: empty slot */
};

struct speedscope_ctx {
	FILE *f;
	const struct profile *p;
	uint32_t *frame_index;  /* profile frame id -> speedscope frame index + 1, 0 unused */
	uint32_t nused;
	struct speedscope_frame *seen; /* open addressing, cap a power of two */
	size_t seen_cap;
};

/* The index + 1 of the written frame (name, file, line); *added when it is new. */
static uint32_t speedscope_intern(struct speedscope_ctx *c, uint32_t name, uint32_t file,
				  uint32_t line, bool *added)
{
	uint64_t h = cs_hash_u64((uint64_t)name << 32 ^ (uint64_t)file << 16 ^ line);
	size_t j = h & (c->seen_cap - 1);

	*added = false;
	for (; c->seen[j].index1; j = (j + 1) & (c->seen_cap - 1))
		if (c->seen[j].name == name && c->seen[j].file == file && c->seen[j].line == line)
			return c->seen[j].index1;
	c->seen[j] = (struct speedscope_frame){ name, file, line, ++c->nused };
	*added = true;
	return c->nused;
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
	bool first = true;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"csampler " CSAMPLER_VERSION "\",\"shared\":{\"frames\":[", c->f);
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
			fputs(first ? "\n{\"name\":" : ",\n{\"name\":", c->f);
			first = false;
			json_fputs(c->f, profile_str(p, fr->name));
			if (file) {
				fputs(",\"file\":", c->f);
				json_fputs(c->f, profile_str(p, file));
			}
			if (line)
				fprintf(c->f, ",\"line\":%" PRIu32, line);
			fputc('}', c->f);
		}
	}
	fputs("]},\n\"profiles\":[", c->f);
}

/* One thread's profile: its samples (already in time order in the model). Returns false
 * when the thread has none (nothing written). */
static bool speedscope_thread(struct speedscope_ctx *c, const struct profile_thread *t,
			      uint64_t period_ns, bool first_profile)
{
	const struct profile *p = c->p;
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
	fputs(first_profile ? "\n{\"type\":\"sampled\",\"name\":" :
			      ",\n{\"type\":\"sampled\",\"name\":", c->f);
	json_fputs(c->f, name);
	free(name);
	fprintf(c->f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%" PRIu64
		",\"samples\":[", end - start);
	bool first = true;
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->pid != t->pid || s->tid != t->tid || s->stack >= p->nstacks)
			continue;
		const struct profile_stack *st = &p->stacks[s->stack];
		fputs(first ? "[" : ",[", c->f);
		first = false;
		bool first_frame = true;
		for (uint32_t d = st->nframes; d-- > 0;) { /* root first */
			uint32_t id = p->stack_frames[st->first + d];
			if (id >= p->nframes)
				continue;
			fprintf(c->f, first_frame ? "%" PRIu32 : ",%" PRIu32, c->frame_index[id] - 1);
			first_frame = false;
		}
		fputc(']', c->f);
	}
	fputs("],\"weights\":[", c->f);
	first = true;
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->pid != t->pid || s->tid != t->tid || s->stack >= p->nstacks)
			continue;
		fprintf(c->f, first ? "%" PRIu64 : ",%" PRIu64, (uint64_t)s->weight * period_ns);
		first = false;
	}
	fputs("]}", c->f);
	return true;
}

int export_speedscope_write(FILE *f, const struct profile *p)
{
	struct speedscope_ctx c = { .f = f, .p = p };
	uint64_t period_ns = export_period_ns(p);
	bool first = true;

	c.frame_index = cs_calloc(p->nframes + 1, sizeof(*c.frame_index));
	for (c.seen_cap = 64; c.seen_cap < 2 * (p->nframes + 1); c.seen_cap *= 2)
		;
	c.seen = cs_calloc(c.seen_cap, sizeof(*c.seen));
	speedscope_frames(&c);
	for (size_t i = 0; i < p->nthreads; i++) {
		if (speedscope_thread(&c, &p->threads[i], period_ns, first))
			first = false;
	}
	fputs("\n],\"name\":", f);
	json_fputs(f, profile_header(p, "cmdline") ? profile_header(p, "cmdline") : "csampler");
	fputs(",\"activeProfileIndex\":0}\n", f);
	free(c.frame_index);
	free(c.seen);
	return ferror(f) ? -EIO : 0;
}
