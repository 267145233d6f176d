/* elfcache.h: the unwinding context's internals, shared by unwind.c (address spaces, DWARF
 * unwinding) and symbols.c (names, inline chains). Not a public interface: callers use
 * unwind.h.
 *
 * Ownership: the context owns every object below. ELF files are opened once per file (keyed by
 * device/inode and shared by build-id) and stay open until unwind_free, so names can be
 * resolved after the target exited or the file was rebuilt. Each opened file has one Elf handle;
 * every Dwfl that reports the file gets a reference-counted duplicate of it (elf_begin with a
 * reference Elf), so the file is mapped and its section headers parsed once. */
#ifndef CSAMPLER_ELFCACHE_H
#define CSAMPLER_ELFCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdwfl.h>

#include "unwind.h"

/* A small open-addressing hash table of items identified by a 64-bit hash and an equality
 * callback. Hand-written because glibc's hsearch_r has neither removal nor non-string keys and
 * tsearch costs a comparison call per tree level on the per-sample path. The table does not own
 * its items. */
struct unwind_hash {
	struct unwind_hash_slot {
		uint64_t hash;
		void *item;        /* NULL: empty slot */
	} *slots;
	size_t cap, count;
};
typedef bool (*unwind_hash_eq)(const void *item, const void *key);
void *unwind_hash_find(const struct unwind_hash *h, uint64_t hash, unwind_hash_eq eq,
		       const void *key);
void unwind_hash_insert(struct unwind_hash *h, uint64_t hash, void *item);
void *unwind_hash_remove(struct unwind_hash *h, uint64_t hash, unwind_hash_eq eq, const void *key);
void unwind_hash_free(struct unwind_hash *h);

struct elf_load {            /* one PT_LOAD program header */
	uint64_t offset, vaddr, filesz, memsz, align;
	uint32_t flags;          /* PF_* */
};

struct elf_file {
	int fd;                  /* owned; -1 once libelf holds the whole file in memory */
	Elf *elf;                /* ELF_C_READ_MMAP over fd; owned (Dwfls hold counted dups) */
	char *debug_name;        /* file name given to libdwfl: where debuglink lookups start */
	char build_id[2 * 64 + 1]; /* lowercase hex or "" */
	uint16_t e_type;
	struct elf_load *loads;
	size_t nloads;
	uint64_t low, high;      /* first PT_LOAD vaddr (aligned down) .. end of the last one */
	uint64_t entry;          /* e_entry of a program (it has PT_INTERP), else 0 */
	const uint8_t *raw;      /* the whole file as mapped by libelf (for read-only data reads) */
	size_t raw_size;
	dev_t dev;
	ino_t ino;
	uint32_t section_flags;  /* PROFILE_MODULE_NO_* as seen from the file's own sections */

	/* Symbolization state (symbols.c), set up on first use. */
	bool sym_tried;
	Dwfl *sym_dwfl;
	Dwfl_Module *sym_mod;
	uint32_t sym_flags;      /* PROFILE_MODULE_NO_* after looking for debug files */
	struct sym_file_index *sym_index; /* sorted functions and per-CU scope tables (symbols.c) */
};

enum unwind_module_kind {
	UNWIND_MOD_ELF,          /* an ELF file (file != NULL) */
	UNWIND_MOD_FILE,         /* a mapped file that is not ELF or could not be opened */
	UNWIND_MOD_KERNEL,       /* [kernel.kallsyms]; offsets are addresses */
	UNWIND_MOD_JIT,          /* anonymous executable memory of one process; offsets are addresses */
};

struct jit_sym {
	uint64_t start, size;
	const char *name;        /* interned */
};

struct unwind_module_priv {
	struct unwind_module pub; /* pub.path and pub.build_id point into this struct's strings */
	uint32_t id;
	enum unwind_module_kind kind;
	char *path;
	struct elf_file *file;   /* UNWIND_MOD_ELF only */
	uint32_t pid;            /* UNWIND_MOD_JIT: the process whose perf-PID.map names it */
	/* JIT symbols from /tmp/perf-PID.map (symbols.c), sorted by start. */
	char *jit_map_path;      /* preferred location (through /proc/PID/root), or NULL */
	struct jit_sym *jit_syms;
	size_t njit_syms;
	bool jit_loaded;
	int64_t jit_map_mtime_ns;
	off_t jit_map_size;
};

struct kallsym {
	uint64_t addr;
	const char *name;        /* into unwind_ctx.kallsyms_text */
};

struct sym_cache_entry {
	uint32_t module;
	bool is_caller;
	uint64_t offset;
	uint32_t first, n;       /* into ctx->sym_frames */
};

struct unwind_space;

struct unwind_ctx {
	struct unwind_module_priv **modules; /* by id; each separately allocated (stable pointers) */
	size_t nmodules, cap_modules;
	struct unwind_hash modules_by_key;
	uint32_t kernel_module;  /* UINT32_MAX until the first kernel address */

	struct elf_file **files;
	size_t nfiles, cap_files;
	struct unwind_hash files_by_inode;
	struct unwind_hash files_by_build_id;
	struct elf_file *vdso;   /* this kernel's vDSO image (same for every 64-bit process) */
	bool vdso_tried;

	struct unwind_hash procs; /* pid -> struct unwind_proc */
	const Dwfl_Callbacks *dwfl_callbacks; /* per-process unwinding Dwfls */
	const Dwfl_Callbacks *sym_callbacks;  /* per-file symbolization Dwfls */

	/* Strings interned for the context's lifetime (names, files, paths). */
	struct unwind_hash strings;

	/* symbols.c */
	struct kallsym *kallsyms;
	size_t nkallsyms;
	char *kallsyms_text;     /* /proc/kallsyms as read, NUL-separated */
	bool kallsyms_loaded;
	struct unwind_hash sym_cache;
	struct sym_cache_entry *sym_entries;
	size_t nsym_entries, cap_sym_entries;
	struct sym_frame *sym_frames;
	size_t nsym_frames, cap_sym_frames;
};

/* Intern s: the returned copy lives until unwind_free. */
const char *unwind_intern(struct unwind_ctx *ctx, const char *s);

/* The duplicate-Elf find_elf callback: modules' userdata is their struct elf_file. */
int unwind_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp);

/* Report f to dwfl at load bias bias (vaddr + bias = address); returns the module or NULL
 * (dwfl_errmsg(-1) says why). */
Dwfl_Module *unwind_report_file(Dwfl *dwfl, const char *name, struct elf_file *f, uint64_t bias);

/* File offset -> link-time vaddr through the PT_LOAD table (offset itself if none matches). */
uint64_t elf_file_offset_to_vaddr(const struct elf_file *f, uint64_t offset);

/* symbols.c: release what sym_resolve built. */
void sym_free(struct unwind_ctx *ctx);

#endif
