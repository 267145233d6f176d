/* records.c: the data file's record codec (records.h): one encoder and one decoder per record
 * type, over datafile.c's chunked container. All integers little endian, at any alignment.
 * Each record's fixed fields are its struct's first bytes (records.h), so both directions copy
 * them whole: no byte offset is counted here, and the encoder and the decoder cannot disagree. */
#include "format/records.h"

#include "base/cs.h"
#include "base/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated string inside [p, p+len), or NULL. */
static const char *rdstr(const uint8_t *p, size_t len)
{
	return memchr(p, 0, len) ? (const char *)p : NULL;
}

/* Decode the first fixed bytes of d into out (out_size bytes, the rest of it zeroed): -EINVAL
 * when the record is shorter than them plus min_tail bytes. */
static int df_get_fixed(const uint8_t *d, size_t len, size_t fixed, size_t min_tail, void *out,
			size_t out_size)
{
	if (len < fixed + min_tail)
		return -EINVAL;
	memset(out, 0, out_size);
	memcpy(out, d, fixed);
	return 0;
}

/* A record of fixed fields and then one string: -EINVAL unless the string has its NUL. */
static int df_get_fixed_text(const uint8_t *d, size_t len, size_t fixed, void *out,
			     size_t out_size, const char **text)
{
	if (df_get_fixed(d, len, fixed, 1, out, out_size) < 0)
		return -EINVAL;
	*text = rdstr(d + fixed, len - fixed);
	return *text ? 0 : -EINVAL;
}

/* A count n in the fixed part, then exactly n items of item_size bytes. */
static int df_check_count(uint32_t n, size_t len, size_t fixed, size_t item_size)
{
	return n > (len - fixed) / item_size || len != fixed + (size_t)n * item_size ? -EINVAL : 0;
}

/* ---- decoding ---- */

int df_decode_header_kv(const uint8_t *d, size_t len, struct df_header_kv *out)
{
	out->key = rdstr(d, len);
	if (!out->key)
		return -EINVAL;
	size_t kl = strlen(out->key) + 1;
	out->value = rdstr(d + kl, len - kl);
	return out->value ? 0 : -EINVAL;
}

int df_decode_string(const uint8_t *d, size_t len, struct df_string *out)
{
	return df_get_fixed_text(d, len, DF_STRING_FIXED, out, sizeof(*out), &out->text);
}

int df_decode_comm(const uint8_t *d, size_t len, struct df_comm *out)
{
	return df_get_fixed_text(d, len, DF_COMM_FIXED, out, sizeof(*out), &out->name);
}

int df_decode_mmap(const uint8_t *d, size_t len, struct df_mmap *out)
{
	return df_get_fixed_text(d, len, DF_MMAP_FIXED, out, sizeof(*out), &out->path);
}

int df_decode_gpu_note(const uint8_t *d, size_t len, struct df_gpu_note *out)
{
	return df_get_fixed_text(d, len, DF_GPU_NOTE_FIXED, out, sizeof(*out), &out->text);
}

int df_decode_module(const uint8_t *d, size_t len, struct df_module *out)
{
	if (df_get_fixed_text(d, len, DF_MODULE_FIXED, out, sizeof(*out), &out->path) < 0)
		return -EINVAL;
	size_t at = DF_MODULE_FIXED + strlen(out->path) + 1;
	out->build_id = rdstr(d + at, len - at);
	return out->build_id ? 0 : -EINVAL;
}

int df_decode_stack(const uint8_t *d, size_t len, struct df_stack *out)
{
	if (df_get_fixed(d, len, DF_STACK_FIXED, 0, out, sizeof(*out)) < 0)
		return -EINVAL;
	out->locs = d + DF_STACK_FIXED;
	return df_check_count(out->n, len, DF_STACK_FIXED, 4);
}

uint32_t df_stack_loc(const struct df_stack *s, uint32_t i)
{
	return cs_rd32(s->locs + 4 * (size_t)i);
}

int df_decode_symbol(const uint8_t *d, size_t len, struct df_symbol *out)
{
	if (df_get_fixed(d, len, DF_SYMBOL_FIXED, 0, out, sizeof(*out)) < 0)
		return -EINVAL;
	out->frames = d + DF_SYMBOL_FIXED;
	return out->n ? df_check_count(out->n, len, DF_SYMBOL_FIXED, DF_SYMBOL_FRAME_SIZE) : -EINVAL;
}

struct df_symbol_frame df_symbol_at(const struct df_symbol *s, uint32_t i)
{
	struct df_symbol_frame f;
	memcpy(&f, s->frames + DF_SYMBOL_FRAME_SIZE * (size_t)i, DF_SYMBOL_FRAME_SIZE);
	return f;
}

/* The records of fixed fields alone, and the packed structs of datafile.h: at least their
 * size, a longer tail ignored. Each line defines df_decode_<name> (declared in records.h). */
#define DF_FIXED_DECODER(name, fixed)                                                       \
	int df_decode_##name(const uint8_t *d, size_t len, struct df_##name *out)           \
	{                                                                                   \
		return df_get_fixed(d, len, fixed, 0, out, sizeof(*out));                   \
	}

DF_FIXED_DECODER(task, DF_TASK_SIZE)
DF_FIXED_DECODER(lost, DF_LOST_SIZE)
DF_FIXED_DECODER(loc, DF_LOC_SIZE)
DF_FIXED_DECODER(sample, DF_SAMPLE_SIZE)
DF_FIXED_DECODER(end, DF_END_SIZE)
DF_FIXED_DECODER(gpu_launch, sizeof(struct df_gpu_launch))
DF_FIXED_DECODER(gpu_activity, sizeof(struct df_gpu_activity))
DF_FIXED_DECODER(task_label, sizeof(struct df_task_label))

/* A record written before the vendor field is shorter: vendor 0, CUDA's. */
int df_decode_gpu_info(const uint8_t *d, size_t len, struct df_gpu_info *out)
{
	return df_get_fixed(d, len, len < sizeof(*out) ? DF_GPU_INFO_V1_SIZE : sizeof(*out), 0, out,
			    sizeof(*out));
}

int df_decode_raw_sample_task(const uint8_t *d, size_t len, struct df_raw_sample *out)
{
	return df_get_fixed(d, len, DF_RAW_SAMPLE_TASK, 0, out, sizeof(*out));
}

/* ---- any record ---- */

/* df_decode_record's table: each type's name and its decoder, called on the union's member.
 * Indexed by DF_KIND_INDEX: the types from 1 and from DF_RAW_SAMPLE, packed. */
#define DF_KIND_INDEX(t) \
	((t) < DF_RAW_SAMPLE ? (size_t)(t) : (size_t)(t) - DF_RAW_SAMPLE + DF_END + 1)
#define DF_DECODE_ANY(fn, member)                                                  \
	static int fn##_any(const uint8_t *d, size_t len, union df_record *r)     \
	{                                                                          \
		return fn(d, len, &r->member);                                     \
	}
DF_DECODE_ANY(df_decode_header_kv, kv)
DF_DECODE_ANY(df_decode_string, str)
DF_DECODE_ANY(df_decode_comm, comm)
DF_DECODE_ANY(df_decode_mmap, mmap)
DF_DECODE_ANY(df_decode_task, task)
DF_DECODE_ANY(df_decode_lost, lost)
DF_DECODE_ANY(df_decode_module, module)
DF_DECODE_ANY(df_decode_loc, loc)
DF_DECODE_ANY(df_decode_stack, stack)
DF_DECODE_ANY(df_decode_sample, sample)
DF_DECODE_ANY(df_decode_symbol, sym)
DF_DECODE_ANY(df_decode_end, end)
DF_DECODE_ANY(df_decode_raw_sample_task, raw)
DF_DECODE_ANY(df_decode_gpu_launch, launch)
DF_DECODE_ANY(df_decode_gpu_activity, act)
DF_DECODE_ANY(df_decode_gpu_info, info)
DF_DECODE_ANY(df_decode_gpu_note, note)
DF_DECODE_ANY(df_decode_task_label, label)

static const struct df_record_kind {
	const char *name;
	int (*decode)(const uint8_t *d, size_t len, union df_record *r);
} df_record_kinds[] = {
	[DF_KIND_INDEX(DF_HEADER_KV)] = { "header", df_decode_header_kv_any },
	[DF_KIND_INDEX(DF_COMM)] = { "comm", df_decode_comm_any },
	[DF_KIND_INDEX(DF_MMAP)] = { "mmap", df_decode_mmap_any },
	[DF_KIND_INDEX(DF_FORK)] = { "fork", df_decode_task_any },
	[DF_KIND_INDEX(DF_EXIT)] = { "exit", df_decode_task_any },
	[DF_KIND_INDEX(DF_LOST)] = { "lost", df_decode_lost_any },
	[DF_KIND_INDEX(DF_MODULE)] = { "module", df_decode_module_any },
	[DF_KIND_INDEX(DF_LOC)] = { "location", df_decode_loc_any },
	[DF_KIND_INDEX(DF_STACK)] = { "stack", df_decode_stack_any },
	[DF_KIND_INDEX(DF_SAMPLE)] = { "sample", df_decode_sample_any },
	[DF_KIND_INDEX(DF_STRING)] = { "string", df_decode_string_any },
	[DF_KIND_INDEX(DF_SYMBOL)] = { "symbol", df_decode_symbol_any },
	[DF_KIND_INDEX(DF_END)] = { "end", df_decode_end_any },
	[DF_KIND_INDEX(DF_RAW_SAMPLE)] = { "raw sample", df_decode_raw_sample_task_any },
	[DF_KIND_INDEX(DF_GPU_LAUNCH)] = { "GPU launch", df_decode_gpu_launch_any },
	[DF_KIND_INDEX(DF_GPU_ACTIVITY)] = { "GPU activity", df_decode_gpu_activity_any },
	[DF_KIND_INDEX(DF_GPU_INFO)] = { "GPU info", df_decode_gpu_info_any },
	[DF_KIND_INDEX(DF_GPU_NOTE)] = { "GPU note", df_decode_gpu_note_any },
	[DF_KIND_INDEX(DF_TASK_LABEL)] = { "task label", df_decode_task_label_any },
};

static const struct df_record_kind *df_record_kind(uint16_t type)
{
	size_t i = DF_KIND_INDEX(type);
	if (!type || (type > DF_END && type < DF_RAW_SAMPLE) ||
	    i >= sizeof(df_record_kinds) / sizeof(df_record_kinds[0]) || !df_record_kinds[i].name)
		return NULL;
	return &df_record_kinds[i];
}

int df_decode_record(uint16_t type, const uint8_t *d, size_t len, union df_record *r)
{
	const struct df_record_kind *k = df_record_kind(type);
	return k ? k->decode(d, len, r) : -ENOENT;
}

const char *df_record_name(uint16_t type)
{
	const struct df_record_kind *k = df_record_kind(type);
	return k ? k->name : "unknown";
}

static int df_check_symbol(const struct df_symbol *sym, const struct df_ids *ids)
{
	if (sym->loc >= ids->locs)
		return -EINVAL;
	for (uint32_t i = 0; i < sym->n; i++) {
		struct df_symbol_frame f = df_symbol_at(sym, i);
		if (f.name >= ids->strings || f.file >= ids->strings)
			return -EINVAL;
	}
	return 0;
}

int df_check_record(uint16_t type, const union df_record *r, const struct df_ids *ids)
{
	bool ok = true;
	switch (type) {
	case DF_STRING:
		ok = r->str.id == ids->strings;
		break;
	case DF_MODULE:
		ok = r->module.id <= ids->modules;
		break;
	case DF_LOC:
		ok = r->loc.id == ids->locs && r->loc.module < ids->modules;
		break;
	case DF_STACK:
		ok = r->stack.id == ids->stacks;
		for (uint32_t i = 0; ok && i < r->stack.n; i++)
			ok = df_stack_loc(&r->stack, i) < ids->locs;
		break;
	case DF_SAMPLE:
		ok = r->sample.stack < ids->stacks;
		break;
	case DF_SYMBOL:
		return df_check_symbol(&r->sym, ids);
	case DF_TASK_LABEL:
		ok = r->label.host < ids->strings;
		break;
	default:
		break;
	}
	return ok ? 0 : -EINVAL;
}

/* ---- encoding ---- */

void df_encode_fixed(uint8_t *b, const void *record, size_t fixed)
{
	memcpy(b, record, fixed);
}

/* ---- writing whole records ---- */

void df_put_header_kv(struct df_writer *w, const char *key, const char *value)
{
	df_put2(w, DF_HEADER_KV, key, strlen(key) + 1, value, strlen(value) + 1);
}

void df_put_string(struct df_writer *w, uint32_t id, const char *text)
{
	df_put2(w, DF_STRING, &id, DF_STRING_FIXED, text, strlen(text) + 1);
}

void df_put_comm(struct df_writer *w, const struct df_comm *c)
{
	df_put2(w, DF_COMM, c, DF_COMM_FIXED, c->name, strlen(c->name) + 1);
}

void df_put_mmap(struct df_writer *w, const struct df_mmap *m)
{
	df_put2(w, DF_MMAP, m, DF_MMAP_FIXED, m->path, strlen(m->path) + 1);
}

void df_put_task(struct df_writer *w, uint16_t type, const struct df_task *t)
{
	df_put(w, type, t, DF_TASK_SIZE);
}

void df_put_lost(struct df_writer *w, const struct df_lost *l)
{
	df_put(w, DF_LOST, l, DF_LOST_SIZE);
}

void df_put_module(struct df_writer *w, const struct df_module *m)
{
	struct cs_buf b = { 0 };
	const char *bid = m->build_id ? m->build_id : "";
	cs_buf_put(&b, m, DF_MODULE_FIXED);
	cs_buf_put(&b, m->path, strlen(m->path) + 1);
	cs_buf_put(&b, bid, strlen(bid) + 1);
	df_put(w, DF_MODULE, b.data, b.len);
	cs_buf_free(&b);
}

void df_put_loc(struct df_writer *w, const struct df_loc *l)
{
	df_put(w, DF_LOC, l, DF_LOC_SIZE);
}

void df_put_stack(struct df_writer *w, uint32_t id, const uint32_t *locs, uint32_t n)
{
	struct df_stack s = { .id = id, .n = n };
	/* little endian in memory as in the file (cs.h) */
	df_put2(w, DF_STACK, &s, DF_STACK_FIXED, locs, (size_t)n * sizeof(uint32_t));
}

void df_put_sample(struct df_writer *w, const struct df_sample *s)
{
	df_put(w, DF_SAMPLE, s, DF_SAMPLE_SIZE);
}

void df_put_symbol(struct df_writer *w, uint32_t loc, const struct df_symbol_frame *frames,
		   uint32_t n)
{
	struct df_symbol s = { .loc = loc, .n = n };
	_Static_assert(sizeof(*frames) == DF_SYMBOL_FRAME_SIZE, "frames are written as an array");
	df_put2(w, DF_SYMBOL, &s, DF_SYMBOL_FIXED, frames, (size_t)n * DF_SYMBOL_FRAME_SIZE);
}

void df_put_end(struct df_writer *w, const struct df_end *e)
{
	df_put(w, DF_END, e, DF_END_SIZE);
}

void df_put_raw_sample(struct df_writer *w, const struct df_raw_sample *r)
{
	struct cs_buf b = { 0 };
	cs_buf_put(&b, r, DF_RAW_SAMPLE_FIXED);
	for (int i = 0; i < 64; i++)
		if (r->regs_mask & (1ull << i))
			cs_buf_put(&b, &r->regs[i], 8);
	cs_buf_put(&b, &r->nkernel, 8);
	if (r->nkernel)
		cs_buf_put(&b, r->kernel_ips, r->nkernel * 8);
	cs_buf_put(&b, &r->stack_size, 8);
	if (r->stack_size)
		cs_buf_put(&b, r->stack, r->stack_size);
	df_put(w, DF_RAW_SAMPLE, b.data, b.len);
	cs_buf_free(&b);
}

void df_put_gpu_launch(struct df_writer *w, const struct df_gpu_launch *g)
{
	df_put(w, DF_GPU_LAUNCH, g, sizeof(*g));
}

void df_put_gpu_activity(struct df_writer *w, const struct df_gpu_activity *g)
{
	df_put(w, DF_GPU_ACTIVITY, g, sizeof(*g));
}

void df_put_gpu_info(struct df_writer *w, const struct df_gpu_info *g)
{
	df_put(w, DF_GPU_INFO, g, sizeof(*g));
}

void df_put_gpu_note(struct df_writer *w, const struct df_gpu_note *n)
{
	df_put2(w, DF_GPU_NOTE, n, DF_GPU_NOTE_FIXED, n->text, strlen(n->text) + 1);
}

void df_put_task_label(struct df_writer *w, const struct df_task_label *t)
{
	df_put(w, DF_TASK_LABEL, t, sizeof(*t));
}

/* ---- string interning for writers ---- */

/* The strings written so far (base/hash.h), each with its id. */
struct df_strtab {
	struct cs_hash strings;   /* items: struct df_str, owned */
	uint32_t count;
};

struct df_str {
	uint32_t id;
	char text[];
};

static bool df_str_eq(const void *item, const void *key)
{
	return strcmp(((const struct df_str *)item)->text, key) == 0;
}

struct df_strtab *df_strtab_new(void)
{
	return cs_calloc(1, sizeof(struct df_strtab));
}

void df_strtab_free(struct df_strtab *t)
{
	if (!t)
		return;
	cs_hash_free_items(&t->strings, free);
	free(t);
}

uint32_t df_strtab_id(struct df_strtab *t, struct df_writer *w, const char *s)
{
	if (!s || !*s)
		return 0;
	size_t n = strlen(s);
	uint64_t h = cs_hash_bytes(s, n, 0);
	struct df_str *e = cs_hash_find(&t->strings, h, df_str_eq, s);
	if (e)
		return e->id;
	e = cs_malloc(sizeof(*e) + n + 1);
	e->id = ++t->count;
	memcpy(e->text, s, n + 1);
	cs_hash_insert(&t->strings, h, e);
	df_put_string(w, e->id, s);
	return e->id;
}
