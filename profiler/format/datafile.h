/* datafile.h: csampler's versioned, chunked data file: the writer used by `record` and the
 * low-level reader under profile_load(). man/csampler-data.5 documents the layout; the short
 * version:
 *
 *   file header (64 bytes): magic "CSAMPLER", u32 version, u32 min_reader_version,
 *                           u64 features, u32 header_size, reserved
 *   chunks:  chunk header (24 bytes): u32 magic "CHNK", u32 flags (bit 0: zstd), u32 stored_len,
 *            u32 raw_len, u32 crc32 of the stored bytes, u32 nrecords; then stored_len bytes
 *            which (decompressed) are records: u16 type, u16 flags, u32 size (header included),
 *            payload.
 *
 * All integers are little endian. Records are only ever appended, and each chunk is written
 * whole with its CRC, so a file cut at any point holds a readable prefix. The last record of a
 * complete file is DF_END. Record types below 128 must be understood by a reader of
 * min_reader_version; types from 128 up are optional and skipped by readers that do not know
 * them. */
#ifndef CSAMPLER_DATAFILE_H
#define CSAMPLER_DATAFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DF_MAGIC "CSAMPLER"
#define DF_VERSION 1
#define DF_MIN_READER_VERSION 1
#define DF_HEADER_SIZE 64
#define DF_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */
#define DF_CHUNK_HEADER_SIZE 24
#define DF_CHUNK_ZSTD 1u
#define DF_CHUNK_MAX (64u << 20) /* a reader refuses larger chunks as corrupt */

/* Flag bits stored in the file (DF_MODULE, DF_SYMBOL and DF_SAMPLE flags). The profile model
 * (profile.h) and the unwinder use them as they are. */
enum profile_frame_flags {
	PROFILE_FRAME_KERNEL = 1 << 0,   /* kernel code ("_[k]" in folded text) */
	PROFILE_FRAME_INLINED = 1 << 1,  /* inlined into the frame below it ("_[i]") */
	PROFILE_FRAME_JIT = 1 << 2,      /* named from /tmp/perf-PID.map ("_[j]") */
	PROFILE_FRAME_UNNAMED = 1 << 3,  /* no symbol: name is "libfoo.so+0x1a2b" */
	PROFILE_FRAME_GPU_KERNEL = 1 << 4, /* a GPU kernel (CUPTI; later) */
	PROFILE_FRAME_GPU_COPY = 1 << 5,   /* a GPU memcpy/memset (later) */
	PROFILE_FRAME_GPU_SYNC = 1 << 6,   /* time blocked in a CUDA synchronisation (later) */
};

enum profile_module_flags {
	PROFILE_MODULE_KERNEL = 1 << 0,
	PROFILE_MODULE_JIT = 1 << 1,
	PROFILE_MODULE_NO_CFI = 1 << 2,      /* no .eh_frame/.debug_frame found: unwinding stops */
	PROFILE_MODULE_NO_SYMBOLS = 1 << 3,  /* no .symtab/.dynsym/.gnu_debugdata/debug file */
	PROFILE_MODULE_NO_DEBUGINFO = 1 << 4,/* no DWARF lines: no file:line, no inline frames */
};

enum profile_sample_flags {
	PROFILE_SAMPLE_UNWIND_ERROR = 1 << 0, /* the unwinder stopped on an error, not at the root */
	PROFILE_SAMPLE_STACK_FULL = 1 << 1,   /* the stack copy was full: likely truncated */
};

enum df_record_type {
	DF_HEADER_KV = 1,  /* key\0 value\0 */
	DF_COMM = 2,       /* u32 pid, u32 tid, u64 time, u32 flags (1 = exec), name\0 */
	DF_MMAP = 3,       /* u32 pid, u32 tid, u64 time, u64 start, u64 len, u64 pgoff,
			    * u32 prot, u32 flags, path\0 */
	DF_FORK = 4,       /* u32 pid, u32 ppid, u32 tid, u32 ptid, u64 time */
	DF_EXIT = 5,       /* same layout as DF_FORK */
	DF_LOST = 6,       /* u64 time, u64 count */
	DF_MODULE = 7,     /* u32 id, u32 flags (PROFILE_MODULE_*), path\0 build_id_hex\0;
			    * a later record for the same id replaces the earlier one */
	DF_LOC = 8,        /* u32 id, u32 module, u64 offset, u32 flags (1 = caller) */
	DF_STACK = 9,      /* u32 id, u32 n, u32 loc_ids[n] leaf first */
	DF_SAMPLE = 10,    /* u64 time, u32 pid, u32 tid, u32 cpu, u32 stack, u32 flags,
			    * u32 weight */
	DF_STRING = 11,    /* u32 id, bytes\0 (string ids start at 1; 0 is "") */
	DF_SYMBOL = 12,    /* u32 loc, u32 n, then n x {u32 name, u32 file, u32 line,
			    * u32 flags}: the loc's frames, innermost (inlined) first */
	DF_END = 13,       /* u64 samples, u64 lost, u64 end_time, u32 flags (1 = symbolized) */
	/* Optional records (readers skip what they do not know). */
	DF_RAW_SAMPLE = 128, /* u64 time, u32 pid, u32 tid, u32 cpu, u32 flags, u64 regs_mask,
			      * u64 regs[popcount], u64 nkernel, u64 kernel_ips[nkernel],
			      * u64 stack_size, bytes[stack_size]  (--keep-raw) */
	DF_GPU_LAUNCH = 129, /* u64 time, u32 pid, u32 tid, u32 correlation, u32 stack,
			      * u32 api (string id) : a CUDA API call and its CPU stack */
	DF_GPU_ACTIVITY = 130, /* u32 kind (1 kernel, 2 memcpy, 3 memset, 4 sync), u32 device,
				* u32 stream, u32 correlation, u64 start, u64 end (CLOCK_MONOTONIC),
				* u64 bytes, u32 name (string id), u32 flags */
};

struct df_writer;

/* Create path with mode 0600 whatever the umask and write the file header. The file is made
 * under a temporary name beside path and renamed into place, after an existing regular file of
 * ours is renamed to path.old; path is never opened, so a symbolic link there is not followed.
 * A symbolic link, directory, FIFO or other non-regular file at path, or another user's file,
 * is refused. On any failure the previous file keeps its name. Returns 0 or -errno after
 * printing one line. */
int df_writer_open(struct df_writer **out, const char *path, bool compress);
/* Append one record. Never fails by itself: a write error is kept (see df_writer_error) and
 * later records are dropped. */
void df_put(struct df_writer *w, uint16_t type, const void *payload, size_t len);
/* Append one record made of two parts (fixed fields, then a string with its NUL). */
void df_put2(struct df_writer *w, uint16_t type, const void *a, size_t alen, const void *b,
	     size_t blen);
/* Write the current chunk out now (also done automatically every 256 KiB). */
int df_flush(struct df_writer *w);
/* 0, or the first -errno a write hit (the message was printed then). */
int df_writer_error(const struct df_writer *w);
uint64_t df_bytes_written(const struct df_writer *w);
/* Flush, fsync and close. Returns the first error seen, if any. */
int df_writer_close(struct df_writer *w);

/* Reader: calls fn for every record in order. Returns 0 on a complete file, 1 when the file
 * ended early (truncated: what came before was delivered), or -errno after printing one line
 * ("FILE: not a csampler data file", "FILE: corrupt chunk at offset N: ..."). fn returns 0 or
 * -errno to stop. */
typedef int (*df_record_fn)(void *arg, uint16_t type, const uint8_t *payload, size_t len);
int df_read(const char *path, df_record_fn fn, void *arg);

/* Growable string interning for writers: same string, same id (ids from 1). */
struct df_strtab;
struct df_strtab *df_strtab_new(void);
void df_strtab_free(struct df_strtab *t);
/* Returns the id of s, writing a DF_STRING record to w the first time s is seen. */
uint32_t df_strtab_id(struct df_strtab *t, struct df_writer *w, const char *s);

#endif
