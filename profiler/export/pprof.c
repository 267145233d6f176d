/* pprof.c: `csampler export --format pprof`, the profile.proto message of
 * github.com/google/pprof (proto/profile.proto) compressed with gzip (zlib), the file that
 * go tool pprof, Pyroscope, Parca and Grafana read. Sample types "samples/count" and
 * "cpu/nanoseconds"; one sample per distinct call stack with location ids leaf first; one
 * location per physical frame, its inlined frames as extra lines (innermost first, as pprof
 * wants); one function per (name, source file); one mapping per module with its build id.
 *
 * The protobuf wire format is written by hand (varints and length-delimited fields, the few
 * helpers below): it is one message type with eight field kinds, and protobuf-c would add a
 * build dependency, a generated .pb-c.c kept in sync with profile.proto and a copy of every
 * string into its structs, for what is about fifty lines of encoding. */
#include "export/export.h"
#include "base/cs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- the wire format ---------------------------------------------------------------------- */

enum { PB_VARINT = 0, PB_LEN = 2 };

static void pb_varint(struct cs_buf *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	cs_buf_put(b, out, n);
}

static void pb_uint(struct cs_buf *b, uint32_t field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | PB_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct cs_buf *b, uint32_t field, const void *data, size_t len)
{
	pb_varint(b, (uint64_t)field << 3 | PB_LEN);
	pb_varint(b, len);
	cs_buf_put(b, data, len);
}

/* A nested message built in sub, appended as field of b; sub is emptied for reuse. */
static void pb_message(struct cs_buf *b, uint32_t field, struct cs_buf *sub)
{
	pb_bytes(b, field, sub->data, sub->len);
	sub->len = 0;
}

/* ---- profile.proto field numbers ---------------------------------------------------------- */

enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

/* ---- interning ---------------------------------------------------------------------------- */

/* An open-addressing table from a run of frame ids (a location: a physical frame and the
 * frames inlined into it) or a (name, file) pair (a function) to an id from 1. */
struct pprof_key {
	uint32_t off, len;  /* run keys[off .. off+len) of pprof_ctx.keys */
	uint32_t id;        /* 0: empty slot */
};

struct pprof_table {
	struct pprof_key *slots;
	size_t cap, n;
};

struct pprof_ctx {
	const struct profile *p;
	uint32_t *keys;          /* the runs of every key, appended */
	size_t nkeys, keys_cap;
	struct pprof_table locations, functions;
	struct cs_buf out, sub, line;
	uint32_t *stack_locations; /* scratch: one stack's location ids, leaf first */
};

static uint32_t pprof_intern(struct pprof_ctx *c, struct pprof_table *t, const uint32_t *run,
			     uint32_t len, bool *added)
{
	*added = false;
	if ((t->n + 1) * 2 > t->cap) {
		struct pprof_table grown = { .cap = t->cap ? t->cap * 2 : 1024, .n = t->n };
		grown.slots = cs_calloc(grown.cap, sizeof(*grown.slots));
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->slots[i].id)
				continue;
			uint64_t h = cs_hash_bytes(c->keys + t->slots[i].off, t->slots[i].len * 4, 0);
			size_t j = h & (grown.cap - 1);
			while (grown.slots[j].id)
				j = (j + 1) & (grown.cap - 1);
			grown.slots[j] = t->slots[i];
		}
		free(t->slots);
		*t = grown;
	}
	uint64_t h = cs_hash_bytes(run, len * 4, 0);
	size_t j = h & (t->cap - 1);
	for (; t->slots[j].id; j = (j + 1) & (t->cap - 1))
		if (t->slots[j].len == len && !memcmp(c->keys + t->slots[j].off, run, len * 4))
			return t->slots[j].id;
	cs_grow(&c->keys, &c->keys_cap, c->nkeys + len, sizeof(*c->keys));
	memcpy(c->keys + c->nkeys, run, len * 4);
	t->slots[j] = (struct pprof_key){ .off = (uint32_t)c->nkeys, .len = len,
					  .id = (uint32_t)++t->n };
	c->nkeys += len;
	*added = true;
	return t->slots[j].id;
}

/* The function id of frame fr, writing the Function message the first time. */
static uint32_t pprof_function(struct pprof_ctx *c, const struct profile_frame *fr)
{
	uint32_t key[2] = { fr->name, fr->file };
	bool added;
	uint32_t id = pprof_intern(c, &c->functions, key, 2, &added);

	if (added) {
		pb_uint(&c->sub, FUNCTION_ID, id);
		pb_uint(&c->sub, FUNCTION_NAME, fr->name);
		pb_uint(&c->sub, FUNCTION_SYSTEM_NAME, fr->name);
		pb_uint(&c->sub, FUNCTION_FILENAME, fr->file);
		pb_message(&c->out, PROFILE_FUNCTION, &c->sub);
	}
	return id;
}

/* The location id of run[0..len) (leaf first: inlined frames, then the physical frame that
 * holds them), writing the Location message (and its functions) the first time. */
static uint32_t pprof_location(struct pprof_ctx *c, const uint32_t *run, uint32_t len)
{
	const struct profile *p = c->p;
	bool added;
	uint32_t id = pprof_intern(c, &c->locations, run, len, &added);

	if (!added)
		return id;
	uint32_t *functions = cs_calloc(len, sizeof(*functions));
	for (uint32_t i = 0; i < len; i++) /* functions first: they use c->sub */
		functions[i] = pprof_function(c, &p->frames[run[i]]);
	const struct profile_frame *physical = &p->frames[run[len - 1]];
	pb_uint(&c->sub, LOCATION_ID, id);
	if (physical->module < p->nmodules)
		pb_uint(&c->sub, LOCATION_MAPPING_ID, physical->module + 1);
	for (uint32_t i = 0; i < len; i++) {
		pb_uint(&c->line, LINE_FUNCTION_ID, functions[i]);
		pb_uint(&c->line, LINE_LINE, p->frames[run[i]].line);
		pb_message(&c->sub, LOCATION_LINE, &c->line);
	}
	pb_message(&c->out, PROFILE_LOCATION, &c->sub);
	free(functions);
	return id;
}

/* The location ids of stack st into c->stack_locations, leaf first; returns their number. */
static uint32_t pprof_stack(struct pprof_ctx *c, const struct profile_stack *st)
{
	const struct profile *p = c->p;
	uint32_t n = 0, start = 0;
	const uint32_t *frames = p->stack_frames + st->first;

	for (uint32_t d = 0; d < st->nframes; d++) {
		/* An inlined frame belongs with the frame below it: close the run at a frame that
		 * is not inlined, or at the root. */
		bool inlined = frames[d] < p->nframes &&
			       (p->frames[frames[d]].flags & PROFILE_FRAME_INLINED);
		if (inlined && d + 1 < st->nframes)
			continue;
		uint32_t len = d + 1 - start;
		bool valid = true;
		for (uint32_t i = start; i <= d; i++)
			valid = valid && frames[i] < p->nframes;
		if (valid)
			c->stack_locations[n++] = pprof_location(c, frames + start, len);
		start = d + 1;
	}
	return n;
}

static void pprof_value_type(struct pprof_ctx *c, uint32_t field, uint32_t type, uint32_t unit)
{
	pb_uint(&c->sub, VALUE_TYPE_TYPE, type);
	pb_uint(&c->sub, VALUE_TYPE_UNIT, unit);
	pb_message(&c->out, field, &c->sub);
}

/* gzip data[0..len) onto f. Returns 0, -EIO, or -ENOMEM after a message. */
static int pprof_gzip(FILE *f, const void *data, size_t len)
{
	z_stream z = { 0 };
	unsigned char chunk[65536];
	int zr;

	/* windowBits 15 + 16: a gzip header and trailer rather than zlib's. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return cs_error(ENOMEM, "export: deflateInit2 failed: %s", z.msg ? z.msg : "no memory");
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len; /* the message is far below 4 GiB; checked by the caller */
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR)
			break;
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, f) != sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	if (zr != Z_STREAM_END)
		return cs_error(EINVAL, "export: deflate failed (%d); report this as a bug", zr);
	return 0;
}

int export_pprof_write(FILE *f, const struct profile *p)
{
	struct pprof_ctx c = { .p = p };
	uint64_t period_ns = export_period_ns(p);
	uint32_t max_frames = 1;
	int err;

	/* The string table is the profile's own (index 0 is ""), then the value-type names. */
	uint32_t s_samples = (uint32_t)p->nstrings, s_count = s_samples + 1, s_cpu = s_samples + 2,
		 s_nanoseconds = s_samples + 3;
	pprof_value_type(&c, PROFILE_SAMPLE_TYPE, s_samples, s_count);
	pprof_value_type(&c, PROFILE_SAMPLE_TYPE, s_cpu, s_nanoseconds);

	/* One sample per stack: its samples and their time. */
	uint64_t *weights = cs_calloc(p->nstacks + 1, sizeof(*weights));
	for (size_t i = 0; i < p->nsamples_records; i++)
		if (p->samples[i].stack < p->nstacks)
			weights[p->samples[i].stack] += p->samples[i].weight;
	for (size_t s = 0; s < p->nstacks; s++)
		if (p->stacks[s].nframes > max_frames)
			max_frames = p->stacks[s].nframes;
	c.stack_locations = cs_calloc(max_frames, sizeof(*c.stack_locations));
	struct cs_buf sample = { 0 }, packed = { 0 };
	for (size_t s = 0; s < p->nstacks; s++) {
		if (!weights[s])
			continue;
		uint32_t n = pprof_stack(&c, &p->stacks[s]);
		for (uint32_t i = 0; i < n; i++)
			pb_varint(&packed, c.stack_locations[i]);
		pb_bytes(&sample, SAMPLE_LOCATION_ID, packed.data, packed.len);
		packed.len = 0;
		pb_varint(&packed, weights[s]);
		pb_varint(&packed, weights[s] * period_ns);
		pb_bytes(&sample, SAMPLE_VALUE, packed.data, packed.len);
		packed.len = 0;
		pb_bytes(&c.out, PROFILE_SAMPLE, sample.data, sample.len);
		sample.len = 0;
	}
	cs_buf_free(&sample);
	cs_buf_free(&packed);
	free(weights);

	for (size_t m = 0; m < p->nmodules; m++) {
		pb_uint(&c.sub, MAPPING_ID, m + 1);
		pb_uint(&c.sub, MAPPING_FILENAME, p->modules[m].path);
		pb_uint(&c.sub, MAPPING_BUILD_ID, p->modules[m].build_id);
		pb_uint(&c.sub, MAPPING_HAS_FUNCTIONS, 1);
		pb_message(&c.out, PROFILE_MAPPING, &c.sub);
	}
	for (size_t i = 0; i < p->nstrings; i++)
		pb_bytes(&c.out, PROFILE_STRING_TABLE, p->strings[i], strlen(p->strings[i]));
	static const char *const extra[] = { "samples", "count", "cpu", "nanoseconds" };
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		pb_bytes(&c.out, PROFILE_STRING_TABLE, extra[i], strlen(extra[i]));

	const char *realtime = profile_header(p, "start_realtime_ns");
	uint64_t time_nanos = 0;
	if (realtime && !cs_parse_u64(realtime, &time_nanos))
		pb_uint(&c.out, PROFILE_TIME_NANOS, time_nanos);
	if (p->end_ns > p->start_ns)
		pb_uint(&c.out, PROFILE_DURATION_NANOS, p->end_ns - p->start_ns);
	pprof_value_type(&c, PROFILE_PERIOD_TYPE, s_cpu, s_nanoseconds);
	pb_uint(&c.out, PROFILE_PERIOD, period_ns);

	if (c.out.len > UINT32_MAX)
		err = cs_error(EFBIG, "export: the pprof message is over 4 GiB; export a shorter "
			       "recording");
	else
		err = pprof_gzip(f, c.out.data, c.out.len);
	if (!err && ferror(f))
		err = -EIO;
	free(c.stack_locations);
	free(c.keys);
	free(c.locations.slots);
	free(c.functions.slots);
	cs_buf_free(&c.out);
	cs_buf_free(&c.sub);
	cs_buf_free(&c.line);
	return err;
}
