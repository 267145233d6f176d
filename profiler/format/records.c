/* records.c: the data file's record codec (records.h): one encoder and one decoder per record
 * type, over datafile.c's chunked container. All integers little endian, at any alignment. */
#include "format/records.h"

#include "base/cs.h"
#include "base/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A NUL-terminated string inside [p, p+len), or NULL. */
static const char *rdstr(const uint8_t *p, size_t len)
{
	return memchr(p, 0, len) ? (const char *)p : NULL;
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
	if (len < 5)
		return -EINVAL;
	out->id = cs_rd32(d);
	out->text = rdstr(d + 4, len - 4);
	return out->text ? 0 : -EINVAL;
}

int df_decode_comm(const uint8_t *d, size_t len, struct df_comm *out)
{
	if (len < DF_COMM_FIXED + 1)
		return -EINVAL;
	*out = (struct df_comm){ .pid = cs_rd32(d), .tid = cs_rd32(d + 4), .time = cs_rd64(d + 8),
				 .flags = cs_rd32(d + 16),
				 .name = rdstr(d + DF_COMM_FIXED, len - DF_COMM_FIXED) };
	return out->name ? 0 : -EINVAL;
}

int df_decode_mmap(const uint8_t *d, size_t len, struct df_mmap *out)
{
	if (len < DF_MMAP_FIXED + 1)
		return -EINVAL;
	*out = (struct df_mmap){ .pid = cs_rd32(d), .tid = cs_rd32(d + 4), .time = cs_rd64(d + 8),
				 .start = cs_rd64(d + 16), .len = cs_rd64(d + 24),
				 .pgoff = cs_rd64(d + 32), .prot = cs_rd32(d + 40),
				 .flags = cs_rd32(d + 44),
				 .path = rdstr(d + DF_MMAP_FIXED, len - DF_MMAP_FIXED) };
	return out->path ? 0 : -EINVAL;
}

int df_decode_task(const uint8_t *d, size_t len, struct df_task *out)
{
	if (len < DF_TASK_SIZE)
		return -EINVAL;
	*out = (struct df_task){ .pid = cs_rd32(d), .ppid = cs_rd32(d + 4), .tid = cs_rd32(d + 8),
				 .ptid = cs_rd32(d + 12), .time = cs_rd64(d + 16) };
	return 0;
}

int df_decode_lost(const uint8_t *d, size_t len, struct df_lost *out)
{
	if (len < DF_LOST_SIZE)
		return -EINVAL;
	*out = (struct df_lost){ .time = cs_rd64(d), .count = cs_rd64(d + 8) };
	return 0;
}

int df_decode_module(const uint8_t *d, size_t len, struct df_module *out)
{
	if (len < 10)
		return -EINVAL;
	*out = (struct df_module){ .id = cs_rd32(d), .flags = cs_rd32(d + 4),
				   .path = rdstr(d + 8, len - 8) };
	if (!out->path)
		return -EINVAL;
	size_t pl = strlen(out->path) + 1;
	out->build_id = rdstr(d + 8 + pl, len - 8 - pl);
	return out->build_id ? 0 : -EINVAL;
}

int df_decode_loc(const uint8_t *d, size_t len, struct df_loc *out)
{
	if (len < DF_LOC_SIZE)
		return -EINVAL;
	*out = (struct df_loc){ .id = cs_rd32(d), .module = cs_rd32(d + 4),
				.offset = cs_rd64(d + 8), .flags = cs_rd32(d + 16) };
	return 0;
}

int df_decode_stack(const uint8_t *d, size_t len, struct df_stack *out)
{
	if (len < 8)
		return -EINVAL;
	*out = (struct df_stack){ .id = cs_rd32(d), .n = cs_rd32(d + 4), .locs = d + 8 };
	return out->n > (len - 8) / 4 || len != 8 + (size_t)out->n * 4 ? -EINVAL : 0;
}

uint32_t df_stack_loc(const struct df_stack *s, uint32_t i)
{
	return cs_rd32(s->locs + 4 * (size_t)i);
}

int df_decode_sample(const uint8_t *d, size_t len, struct df_sample *out)
{
	if (len < DF_SAMPLE_SIZE)
		return -EINVAL;
	*out = (struct df_sample){ .time = cs_rd64(d), .pid = cs_rd32(d + 8), .tid = cs_rd32(d + 12),
				   .cpu = cs_rd32(d + 16), .stack = cs_rd32(d + 20),
				   .flags = cs_rd32(d + 24), .weight = cs_rd32(d + 28) };
	return 0;
}

int df_decode_symbol(const uint8_t *d, size_t len, struct df_symbol *out)
{
	if (len < 8)
		return -EINVAL;
	*out = (struct df_symbol){ .loc = cs_rd32(d), .n = cs_rd32(d + 4), .frames = d + 8 };
	return out->n == 0 || out->n > (len - 8) / 16 || len != 8 + (size_t)out->n * 16 ? -EINVAL
											: 0;
}

struct df_symbol_frame df_symbol_at(const struct df_symbol *s, uint32_t i)
{
	const uint8_t *f = s->frames + 16 * (size_t)i;
	return (struct df_symbol_frame){ cs_rd32(f), cs_rd32(f + 4), cs_rd32(f + 8),
					 cs_rd32(f + 12) };
}

int df_decode_end(const uint8_t *d, size_t len, struct df_end *out)
{
	if (len < DF_END_SIZE)
		return -EINVAL;
	*out = (struct df_end){ .samples = cs_rd64(d), .lost = cs_rd64(d + 8),
				.end_time = cs_rd64(d + 16), .flags = cs_rd32(d + 24) };
	return 0;
}

int df_decode_raw_sample_task(const uint8_t *d, size_t len, struct df_raw_sample *out)
{
	if (len < DF_RAW_SAMPLE_TASK)
		return -EINVAL;
	*out = (struct df_raw_sample){ .time = cs_rd64(d), .pid = cs_rd32(d + 8),
				       .tid = cs_rd32(d + 12) };
	return 0;
}

/* The packed structs of datafile.h: at least their size, a longer tail ignored. */
#define DF_DECODE_PACKED(d, len, out)                 \
	do {                                          \
		if ((len) < sizeof(*(out)))           \
			return -EINVAL;               \
		memcpy((out), (d), sizeof(*(out)));   \
		return 0;                             \
	} while (0)

int df_decode_gpu_launch(const uint8_t *d, size_t len, struct df_gpu_launch *out)
{
	DF_DECODE_PACKED(d, len, out);
}

int df_decode_gpu_activity(const uint8_t *d, size_t len, struct df_gpu_activity *out)
{
	DF_DECODE_PACKED(d, len, out);
}

/* A record written before the vendor field is shorter: vendor 0, CUDA's. */
int df_decode_gpu_info(const uint8_t *d, size_t len, struct df_gpu_info *out)
{
	if (len < DF_GPU_INFO_V1_SIZE)
		return -EINVAL;
	*out = (struct df_gpu_info){ 0 };
	memcpy(out, d, len < sizeof(*out) ? len : sizeof(*out));
	return 0;
}

int df_decode_task_label(const uint8_t *d, size_t len, struct df_task_label *out)
{
	DF_DECODE_PACKED(d, len, out);
}

int df_decode_gpu_note(const uint8_t *d, size_t len, struct df_gpu_note *out)
{
	if (len < 9)
		return -EINVAL;
	*out = (struct df_gpu_note){ .pid = cs_rd32(d), .severity = cs_rd32(d + 4),
				     .text = rdstr(d + 8, len - 8) };
	return out->text ? 0 : -EINVAL;
}

/* ---- encoding the fixed fields ---- */

void df_encode_comm(uint8_t *b, const struct df_comm *c)
{
	wr32(b, c->pid);
	wr32(b + 4, c->tid);
	wr64(b + 8, c->time);
	wr32(b + 16, c->flags);
}

void df_encode_mmap(uint8_t *b, const struct df_mmap *m)
{
	wr32(b, m->pid);
	wr32(b + 4, m->tid);
	wr64(b + 8, m->time);
	wr64(b + 16, m->start);
	wr64(b + 24, m->len);
	wr64(b + 32, m->pgoff);
	wr32(b + 40, m->prot);
	wr32(b + 44, m->flags);
}

void df_encode_task(uint8_t *b, const struct df_task *t)
{
	wr32(b, t->pid);
	wr32(b + 4, t->ppid);
	wr32(b + 8, t->tid);
	wr32(b + 12, t->ptid);
	wr64(b + 16, t->time);
}

void df_encode_lost(uint8_t *b, const struct df_lost *l)
{
	wr64(b, l->time);
	wr64(b + 8, l->count);
}

void df_encode_module_id(uint8_t *b, uint32_t id)
{
	wr32(b, id);
}

void df_encode_loc(uint8_t *b, const struct df_loc *l)
{
	wr32(b, l->id);
	wr32(b + 4, l->module);
	wr64(b + 8, l->offset);
	wr32(b + 16, l->flags);
}

void df_encode_sample(uint8_t *b, const struct df_sample *s)
{
	wr64(b, s->time);
	wr32(b + 8, s->pid);
	wr32(b + 12, s->tid);
	wr32(b + 16, s->cpu);
	wr32(b + 20, s->stack);
	wr32(b + 24, s->flags);
	wr32(b + 28, s->weight);
}

void df_encode_raw_sample_task(uint8_t *b, const struct df_raw_sample *r)
{
	wr64(b, r->time);
	wr32(b + 8, r->pid);
	wr32(b + 12, r->tid);
}

void df_encode_gpu_note_pid(uint8_t *b, uint32_t pid)
{
	wr32(b, pid);
}

void df_encode_gpu_info_pid(uint8_t *b, uint32_t pid)
{
	wr32(b, pid);
}

/* ---- writing whole records ---- */

void df_put_header_kv(struct df_writer *w, const char *key, const char *value)
{
	df_put2(w, DF_HEADER_KV, key, strlen(key) + 1, value, strlen(value) + 1);
}

void df_put_string(struct df_writer *w, uint32_t id, const char *text)
{
	uint8_t b[4];
	wr32(b, id);
	df_put2(w, DF_STRING, b, sizeof(b), text, strlen(text) + 1);
}

void df_put_comm(struct df_writer *w, const struct df_comm *c)
{
	uint8_t b[DF_COMM_FIXED];
	df_encode_comm(b, c);
	df_put2(w, DF_COMM, b, sizeof(b), c->name, strlen(c->name) + 1);
}

void df_put_mmap(struct df_writer *w, const struct df_mmap *m)
{
	uint8_t b[DF_MMAP_FIXED];
	df_encode_mmap(b, m);
	df_put2(w, DF_MMAP, b, sizeof(b), m->path, strlen(m->path) + 1);
}

void df_put_task(struct df_writer *w, uint16_t type, const struct df_task *t)
{
	uint8_t b[DF_TASK_SIZE];
	df_encode_task(b, t);
	df_put(w, type, b, sizeof(b));
}

void df_put_lost(struct df_writer *w, const struct df_lost *l)
{
	uint8_t b[DF_LOST_SIZE];
	df_encode_lost(b, l);
	df_put(w, DF_LOST, b, sizeof(b));
}

void df_put_module(struct df_writer *w, const struct df_module *m)
{
	struct cs_buf b = { 0 };
	uint8_t hdr[8];
	const char *bid = m->build_id ? m->build_id : "";
	wr32(hdr, m->id);
	wr32(hdr + 4, m->flags);
	cs_buf_put(&b, hdr, sizeof(hdr));
	cs_buf_put(&b, m->path, strlen(m->path) + 1);
	cs_buf_put(&b, bid, strlen(bid) + 1);
	df_put(w, DF_MODULE, b.data, b.len);
	cs_buf_free(&b);
}

void df_put_loc(struct df_writer *w, const struct df_loc *l)
{
	uint8_t b[DF_LOC_SIZE];
	df_encode_loc(b, l);
	df_put(w, DF_LOC, b, sizeof(b));
}

void df_put_stack(struct df_writer *w, uint32_t id, const uint32_t *locs, uint32_t n)
{
	uint8_t hdr[8];
	wr32(hdr, id);
	wr32(hdr + 4, n);
	/* little endian in memory as in the file (cs.h) */
	df_put2(w, DF_STACK, hdr, sizeof(hdr), locs, (size_t)n * sizeof(uint32_t));
}

void df_put_sample(struct df_writer *w, const struct df_sample *s)
{
	uint8_t b[DF_SAMPLE_SIZE];
	df_encode_sample(b, s);
	df_put(w, DF_SAMPLE, b, sizeof(b));
}

void df_put_symbol(struct df_writer *w, uint32_t loc, const struct df_symbol_frame *frames,
		   uint32_t n)
{
	size_t len = 8 + 16 * (size_t)n;
	uint8_t *b = cs_malloc(len);
	wr32(b, loc);
	wr32(b + 4, n);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *f = b + 8 + 16 * (size_t)i;
		wr32(f, frames[i].name);
		wr32(f + 4, frames[i].file);
		wr32(f + 8, frames[i].line);
		wr32(f + 12, frames[i].flags);
	}
	df_put(w, DF_SYMBOL, b, len);
	free(b);
}

void df_put_end(struct df_writer *w, const struct df_end *e)
{
	uint8_t b[DF_END_SIZE];
	wr64(b, e->samples);
	wr64(b + 8, e->lost);
	wr64(b + 16, e->end_time);
	wr32(b + 24, e->flags);
	df_put(w, DF_END, b, sizeof(b));
}

void df_put_raw_sample(struct df_writer *w, const struct df_raw_sample *r)
{
	struct cs_buf b = { 0 };
	uint8_t hdr[32];
	df_encode_raw_sample_task(hdr, r);
	wr32(hdr + 16, r->cpu);
	wr32(hdr + 20, r->flags);
	wr64(hdr + 24, r->regs_mask);
	cs_buf_put(&b, hdr, sizeof(hdr));
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
	uint8_t hdr[8];
	wr32(hdr, n->pid);
	wr32(hdr + 4, n->severity);
	df_put2(w, DF_GPU_NOTE, hdr, sizeof(hdr), n->text, strlen(n->text) + 1);
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
	for (size_t i = 0; i < t->strings.cap; i++)
		free(t->strings.slots[i].item);
	cs_hash_free(&t->strings);
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
