/* records.h: the one codec of the data file's records (the payload layouts that datafile.h's
 * enum df_record_type lists and man/csampler-data.5 documents). The recorder writes with the
 * df_put_* functions, the loader (analysis/profile.c) and merge (merge.c) read with the
 * df_decode_* ones, so each layout is written down once.
 *
 * A decoder checks what the record alone can tell (its length, the NUL of each string, a count
 * against the length) and returns 0 or -EINVAL; what needs the rest of the file (an id in
 * range) is the caller's to check. Strings and arrays point into the payload, which must
 * outlive the decoded struct. A record longer than its fixed fields decodes: its tail is
 * ignored, and df_encode_* writes the fixed fields over a copy of the payload, so that merge
 * keeps a tail it does not know. The GPU and task-label payloads are datafile.h's packed
 * structs themselves.
 *
 * The one description of each layout is its struct: the fixed fields are the struct's leading
 * members in file order, each 4 or 8 bytes at a multiple of its size, so the struct's first
 * *_FIXED bytes are the record's, byte for byte (the host is little endian, as the file: cs.h).
 * DF_FIXED_ENDS_AT after each struct holds it to that at compile time; the codec copies those
 * bytes and adds the strings and arrays that follow. */
#ifndef CSAMPLER_RECORDS_H
#define CSAMPLER_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "format/datafile.h"

/* The fixed fields of type end with member last, size bytes from the start. */
#define DF_FIXED_ENDS_AT(type, last, size)                                                  \
	_Static_assert(offsetof(type, last) + sizeof(((type *)0)->last) == (size),          \
		       #type ": the fixed fields are its first " #size " bytes")

struct df_header_kv {   /* DF_HEADER_KV */
	const char *key, *value;
};

struct df_string {      /* DF_STRING */
	uint32_t id;
	const char *text;
};
#define DF_STRING_FIXED 4
DF_FIXED_ENDS_AT(struct df_string, id, DF_STRING_FIXED);

struct df_comm {        /* DF_COMM */
	uint32_t pid, tid;
	uint64_t time;
	uint32_t flags;         /* 1: the name was set by exec */
	const char *name;
};
#define DF_COMM_FIXED 20
DF_FIXED_ENDS_AT(struct df_comm, flags, DF_COMM_FIXED);

struct df_mmap {        /* DF_MMAP */
	uint32_t pid, tid;
	uint64_t time, start, len, pgoff;
	uint32_t prot, flags;
	const char *path;
};
#define DF_MMAP_FIXED 48
DF_FIXED_ENDS_AT(struct df_mmap, flags, DF_MMAP_FIXED);

struct df_task {        /* DF_FORK and DF_EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};
#define DF_TASK_SIZE 24
DF_FIXED_ENDS_AT(struct df_task, time, DF_TASK_SIZE);

struct df_lost {        /* DF_LOST */
	uint64_t time, count;
};
#define DF_LOST_SIZE 16
DF_FIXED_ENDS_AT(struct df_lost, count, DF_LOST_SIZE);

struct df_module {      /* DF_MODULE */
	uint32_t id, flags;     /* PROFILE_MODULE_* */
	const char *path, *build_id; /* build_id: hex, "" when unknown */
};
#define DF_MODULE_FIXED 8
DF_FIXED_ENDS_AT(struct df_module, flags, DF_MODULE_FIXED);

struct df_loc {         /* DF_LOC */
	uint32_t id, module;
	uint64_t offset;
	uint32_t flags;         /* DF_LOC_* */
};
#define DF_LOC_SIZE 20
DF_FIXED_ENDS_AT(struct df_loc, flags, DF_LOC_SIZE);

struct df_stack {       /* DF_STACK: n location ids, leaf first (df_stack_loc) */
	uint32_t id, n;
	const uint8_t *locs;
};
#define DF_STACK_FIXED 8
DF_FIXED_ENDS_AT(struct df_stack, n, DF_STACK_FIXED);

struct df_sample {      /* DF_SAMPLE */
	uint64_t time;
	uint32_t pid, tid, cpu, stack, flags, weight;
};
#define DF_SAMPLE_SIZE 32
DF_FIXED_ENDS_AT(struct df_sample, weight, DF_SAMPLE_SIZE);

struct df_symbol_frame {
	uint32_t name, file, line, flags; /* string ids; PROFILE_FRAME_* */
};
#define DF_SYMBOL_FRAME_SIZE 16
DF_FIXED_ENDS_AT(struct df_symbol_frame, flags, DF_SYMBOL_FRAME_SIZE);

struct df_symbol {      /* DF_SYMBOL: n >= 1 frames of loc, innermost first (df_symbol_at) */
	uint32_t loc, n;
	const uint8_t *frames;
};
#define DF_SYMBOL_FIXED 8
DF_FIXED_ENDS_AT(struct df_symbol, n, DF_SYMBOL_FIXED);

struct df_end {         /* DF_END */
	uint64_t samples, lost, end_time;
	uint32_t flags;         /* 1: symbolized */
};
#define DF_END_SIZE 28
DF_FIXED_ENDS_AT(struct df_end, flags, DF_END_SIZE);

/* DF_RAW_SAMPLE (--keep-raw): the fixed fields, then regs[popcount(regs_mask)], nkernel,
 * kernel_ips[nkernel], stack_size, stack bytes. Decoding gives the time and the task alone
 * (what the readers use), from a record of at least DF_RAW_SAMPLE_TASK bytes. */
struct df_raw_sample {
	uint64_t time;
	uint32_t pid, tid, cpu, flags;
	uint64_t regs_mask;
	const uint64_t *regs;   /* by register number: regs[i] for each bit i of regs_mask */
	uint64_t nkernel;
	const uint64_t *kernel_ips;
	uint64_t stack_size;
	const void *stack;
};
#define DF_RAW_SAMPLE_TASK 16
#define DF_RAW_SAMPLE_FIXED 32
DF_FIXED_ENDS_AT(struct df_raw_sample, tid, DF_RAW_SAMPLE_TASK);
DF_FIXED_ENDS_AT(struct df_raw_sample, regs_mask, DF_RAW_SAMPLE_FIXED);

struct df_gpu_note {    /* DF_GPU_NOTE */
	uint32_t pid, severity; /* 0 info, 1 warning */
	const char *text;
};
#define DF_GPU_NOTE_FIXED 8
DF_FIXED_ENDS_AT(struct df_gpu_note, severity, DF_GPU_NOTE_FIXED);

/* Any one decoded record, for a reader that switches on the type (the loader, merge): one
 * union instead of one per switch. */
union df_record {
	struct df_header_kv kv;
	struct df_string str;
	struct df_comm comm;
	struct df_mmap mmap;
	struct df_task task;
	struct df_lost lost;
	struct df_module module;
	struct df_loc loc;
	struct df_stack stack;
	struct df_sample sample;
	struct df_symbol sym;
	struct df_end end;
	struct df_raw_sample raw;
	struct df_gpu_launch launch;
	struct df_gpu_activity act;
	struct df_gpu_info info;
	struct df_gpu_note note;
	struct df_task_label label;
};

/* ---- decoding: 0, or -EINVAL when the record is malformed ---- */
int df_decode_header_kv(const uint8_t *d, size_t len, struct df_header_kv *out);
int df_decode_string(const uint8_t *d, size_t len, struct df_string *out);
int df_decode_comm(const uint8_t *d, size_t len, struct df_comm *out);
int df_decode_mmap(const uint8_t *d, size_t len, struct df_mmap *out);
int df_decode_task(const uint8_t *d, size_t len, struct df_task *out);
int df_decode_lost(const uint8_t *d, size_t len, struct df_lost *out);
int df_decode_module(const uint8_t *d, size_t len, struct df_module *out);
int df_decode_loc(const uint8_t *d, size_t len, struct df_loc *out);
int df_decode_stack(const uint8_t *d, size_t len, struct df_stack *out);
int df_decode_sample(const uint8_t *d, size_t len, struct df_sample *out);
int df_decode_symbol(const uint8_t *d, size_t len, struct df_symbol *out);
int df_decode_end(const uint8_t *d, size_t len, struct df_end *out);
/* Only time, pid and tid are set (see struct df_raw_sample). */
int df_decode_raw_sample_task(const uint8_t *d, size_t len, struct df_raw_sample *out);
int df_decode_gpu_launch(const uint8_t *d, size_t len, struct df_gpu_launch *out);
int df_decode_gpu_activity(const uint8_t *d, size_t len, struct df_gpu_activity *out);
int df_decode_gpu_info(const uint8_t *d, size_t len, struct df_gpu_info *out);
int df_decode_gpu_note(const uint8_t *d, size_t len, struct df_gpu_note *out);
int df_decode_task_label(const uint8_t *d, size_t len, struct df_task_label *out);

/* ---- any record: one decoder and one id check for every reader (the loader, merge) ---- */
/* Decode a record of type into r (its member of that type: kv, str, comm, ... label; a raw
 * sample's time, pid and tid only). 0, -EINVAL when it is malformed, -ENOENT for a type
 * without a layout here (one of a newer csampler). */
int df_decode_record(uint16_t type, const uint8_t *d, size_t len, union df_record *r);
/* What a reader has defined so far: the ids a record may use or must define next. */
struct df_ids {
	uint32_t strings, modules, locs, stacks;
};
/* Whether decoded record r keeps the file's order of ids: a string, location or stack defines
 * the next id, a module the next or an earlier one, and a location, stack, sample, symbol or
 * task label names only ids defined before it. 0, or -EINVAL. */
int df_check_record(uint16_t type, const union df_record *r, const struct df_ids *ids);
/* The record type's name in messages ("sample", "GPU launch"), or "unknown". */
const char *df_record_name(uint16_t type);

/* Location i (< s->n) of a decoded stack; frame i (< s->n) of a decoded symbol. */
uint32_t df_stack_loc(const struct df_stack *s, uint32_t i);
struct df_symbol_frame df_symbol_at(const struct df_symbol *s, uint32_t i);

/* ---- encoding the fixed fields over a payload (merge rewrites ids in a copy) ----
 * The first fixed bytes of any decoded record struct (DF_COMM_FIXED for a struct df_comm,
 * sizeof for datafile.h's packed structs), written over b; what follows in b stays. */
void df_encode_fixed(uint8_t *b, const void *record, size_t fixed);

/* ---- writing whole records ---- */
void df_put_header_kv(struct df_writer *w, const char *key, const char *value);
void df_put_string(struct df_writer *w, uint32_t id, const char *text);
void df_put_comm(struct df_writer *w, const struct df_comm *c);
void df_put_mmap(struct df_writer *w, const struct df_mmap *m);
void df_put_task(struct df_writer *w, uint16_t type, const struct df_task *t); /* FORK, EXIT */
void df_put_lost(struct df_writer *w, const struct df_lost *l);
void df_put_module(struct df_writer *w, const struct df_module *m);
void df_put_loc(struct df_writer *w, const struct df_loc *l);
void df_put_stack(struct df_writer *w, uint32_t id, const uint32_t *locs, uint32_t n);
void df_put_sample(struct df_writer *w, const struct df_sample *s);
void df_put_symbol(struct df_writer *w, uint32_t loc, const struct df_symbol_frame *frames,
		   uint32_t n);
void df_put_end(struct df_writer *w, const struct df_end *e);
void df_put_raw_sample(struct df_writer *w, const struct df_raw_sample *r);
void df_put_gpu_launch(struct df_writer *w, const struct df_gpu_launch *g);
void df_put_gpu_activity(struct df_writer *w, const struct df_gpu_activity *g);
void df_put_gpu_info(struct df_writer *w, const struct df_gpu_info *g);
void df_put_gpu_note(struct df_writer *w, const struct df_gpu_note *n);
void df_put_task_label(struct df_writer *w, const struct df_task_label *t);

/* Growable string interning for writers: same string, same id (ids from 1). */
struct df_strtab;
struct df_strtab *df_strtab_new(void);
void df_strtab_free(struct df_strtab *t);
/* Returns the id of s, writing a DF_STRING record to w the first time s is seen. */
uint32_t df_strtab_id(struct df_strtab *t, struct df_writer *w, const char *s);

#endif
