/* elfcache.h: the unwinding context's internals, shared by unwind.c (address spaces, DWARF
 * unwinding) and symbols.c (names, inline chains); elfcache.c implements the shared part (hash
 * table, interning, the ELF file cache). Not a public interface: callers use unwind.h and
 * symbols.h.
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

#include "base/hash.h"
#include "unwind/unwind.h"

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
	UNWIND_MOD_PYTHON,       /* "[python]": Python frames (python.c); offsets are frame ids */
	UNWIND_MOD_OFFCPU,       /* "[off-cpu]": why a thread was off the CPU (offcpu.h) */
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
	struct cs_hash modules_by_key;
	uint32_t kernel_module;  /* UINT32_MAX until the first kernel address */

	struct elf_file **files;
	size_t nfiles, cap_files;
	struct cs_hash files_by_inode;
	struct cs_hash files_by_build_id;
	struct elf_file *vdso;   /* this kernel's vDSO image (same for every 64-bit process) */
	bool vdso_tried;

	struct cs_hash procs; /* pid -> struct unwind_proc */
	uint64_t maps_gen;    /* the last generation given to a process' mappings */
	const Dwfl_Callbacks *dwfl_callbacks; /* per-process unwinding Dwfls */
	const Dwfl_Callbacks *sym_callbacks;  /* per-file symbolization Dwfls */

	/* Strings interned for the context's lifetime (names, files, paths). */
	struct cs_intern strings;

	/* symbols.c. It sets release_symbols when it first builds state here, and unwind_free
	 * calls it: so the context's owner frees everything without unwind.c calling into
	 * symbols.c (the two modules only share this cache). */
	void (*release_symbols)(struct unwind_ctx *ctx);
	struct kallsym *kallsyms;
	size_t nkallsyms;
	char *kallsyms_text;     /* /proc/kallsyms as read, NUL-separated (mapped) */
	size_t kallsyms_text_size; /* its mapping's size */
	bool kallsyms_loaded;
	/* kallsyms is ksymcache's (the kernel image's text only, [kallsyms_lo, kallsyms_hi);
	 * kallsyms_text its mapped entry): another address has /proc/kallsyms read whole */
	bool kallsyms_partial;
	uint64_t kallsyms_lo, kallsyms_hi;
	struct cs_hash sym_cache;
	struct sym_cache_entry *sym_entries;
	size_t nsym_entries, cap_sym_entries;
	struct sym_frame *sym_frames;
	size_t nsym_frames, cap_sym_frames;

	/* python.c: NULL until py_enable; freed through release_python like release_symbols. */
	struct py_state *python;
	void (*release_python)(struct unwind_ctx *ctx);
};

/* Intern s: the returned copy lives until unwind_free. */
const char *elfcache_intern(struct unwind_ctx *ctx, const char *s);

/* The duplicate-Elf find_elf callback: modules' userdata is their struct elf_file. */
int elfcache_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp);

/* Report f to dwfl at load bias bias (vaddr + bias = address); returns the module or NULL
 * (dwfl_errmsg(-1) says why). */
Dwfl_Module *elfcache_report_file(Dwfl *dwfl, const char *name, struct elf_file *f, uint64_t bias);

/* File offset -> link-time vaddr through the PT_LOAD table (offset itself if none matches). */
uint64_t elf_file_offset_to_vaddr(const struct elf_file *f, uint64_t offset);

/* The ELF file cache (elfcache.c). */
/* Open the ELF file mapped at [start, end) in pid as path (cached by inode and build-id), or
 * NULL when it is not ELF or cannot be opened. */
struct elf_file *elfcache_file_open(struct unwind_ctx *ctx, uint32_t pid, uint64_t start,
				    uint64_t end, const char *path);
/* This kernel's vDSO image as a cached file, or NULL. */
struct elf_file *elfcache_vdso(struct unwind_ctx *ctx);
/* The load bias of f mapped at start from file offset pgoff. */
uint64_t elfcache_file_bias(const struct elf_file *f, uint64_t start, uint64_t pgoff);
void elfcache_file_free(struct elf_file *f);
/* The link-time address and size of the defined symbol name (function or data, .symtab then
 * .dynsym), or -ENOENT. */
int elfcache_file_symbol(const struct elf_file *f, const char *name, uint64_t *vaddr,
			 uint64_t *size);
/* Link-time vaddr -> file offset through the PT_LOAD table; UINT64_MAX when in no file-backed
 * part of a segment (.bss). */
uint64_t elfcache_vaddr_to_offset(const struct elf_file *f, uint64_t vaddr);

#endif
