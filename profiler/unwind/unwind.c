/* unwind.c: DWARF unwinding of sampled (registers, stack copy) snapshots with elfutils' libdwfl.
 *
 * Each process' address space (struct unwind_space) follows the recorder's mmap/fork/exec/exit
 * events and keeps one Dwfl whose modules are the ELF files mapped in it. The Dwfl is attached
 * once (dwfl_attach_state with our own thread callbacks, the approach of perf's
 * util/unwind-libdw.c) and reused for every sample: before each unwind, the space's `cur`
 * points at the sample, and memory_read serves the stack copy from it. Module changes are
 * reported lazily (dwfl_report_begin_add, or dwfl_report_begin when a module lost its mappings)
 * just before the next unwind. A forked child shares its parent's space until either of them
 * maps something new (copy on write), so fork-heavy workloads do not multiply Dwfls.
 *
 * ELF files are opened once per inode and shared by build-id (elfcache.h); every Dwfl gets a
 * reference-counted duplicate of the file's Elf handle, so nothing is re-opened or re-parsed per
 * sample or per process. */
#include "unwind/unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "base/cs.h"
#include "base/search.h"
#include "unwind/elfcache.h"
#include "unwind/jit.h"
#include "format/datafile.h"

/* How many frames without CFI one sample may get past (nested JIT code). */
#define UNWIND_JIT_MAX_RECOVERIES 8

/* ------------------------------------------------------------------------------------------ */
/* Address spaces and processes */

struct unwind_map {
	uint64_t start, end, pgoff;
	uint32_t prot;
	uint32_t module;
	struct elf_file *file;   /* ELF maps: the file and its load bias; else NULL */
	uint64_t bias;
	bool reported;           /* reported to the space's Dwfl */
};

struct unwind_space {
	int refs;                /* processes sharing this space (fork until a change) */
	struct unwind_ctx *ctx;
	struct unwind_map *maps; /* sorted by start, non-overlapping */
	size_t nmaps, cap_maps;
	Dwfl *dwfl;
	bool attached;
	bool needs_rebuild;      /* a reported module lost its maps: report everything again */
	bool needs_add;          /* maps not yet reported */
	bool has_jit;            /* a map of anonymous code was seen (never reset): only then can
				  * a frame need unwind_jit_* */

	/* The unwind in progress (unwind_sample). */
	const struct unwind_sample *cur;
	struct unwind_loc *locs;
	int max, n;
	bool read_failed, read_beyond; /* during the current unwind step */
	bool no_map;
	struct unwind_proc *proc;
	/* Frames without CFI (unwind_jit_*): the pass in progress starts from resume when set
	 * (else from the sample's registers), and ends early at a frame without CFI, which it
	 * leaves in stop. */
	const struct jit_caller *resume;
	bool pass_first;         /* the next frame callback is the pass' initial frame */
	bool stopped;            /* the pass ended at stop (in JIT code) */
	struct jit_frame stop;
};

struct unwind_proc {
	uint32_t pid;
	struct unwind_space *space;
	uint32_t jit_module;     /* UINT32_MAX until anonymous code is seen */
	uint64_t gen;            /* changes with its mappings (unwind_proc_generation) */
};

static bool unwind_proc_eq(const void *item, const void *key)
{
	return ((const struct unwind_proc *)item)->pid == *(const uint32_t *)key;
}

static struct unwind_proc *unwind_proc_find(struct unwind_ctx *ctx, uint32_t pid)
{
	return cs_hash_find(&ctx->procs, cs_hash_u64(pid), unwind_proc_eq, &pid);
}

static struct unwind_space *unwind_space_new(struct unwind_ctx *ctx)
{
	struct unwind_space *sp = cs_calloc(1, sizeof(*sp));

	sp->refs = 1;
	sp->ctx = ctx;
	return sp;
}

static void unwind_space_unref(struct unwind_space *sp)
{
	if (!sp || --sp->refs > 0)
		return;
	if (sp->dwfl)
		dwfl_end(sp->dwfl);
	free(sp->maps);
	free(sp);
}

static struct unwind_proc *unwind_proc_get(struct unwind_ctx *ctx, uint32_t pid)
{
	struct unwind_proc *p = unwind_proc_find(ctx, pid);

	if (!p) {
		p = cs_calloc(1, sizeof(*p));
		p->pid = pid;
		p->space = unwind_space_new(ctx);
		p->jit_module = UINT32_MAX;
		p->gen = ++ctx->maps_gen;
		cs_hash_insert(&ctx->procs, cs_hash_u64(pid), p);
	}
	return p;
}

uint64_t unwind_proc_generation(struct unwind_ctx *ctx, uint32_t pid)
{
	const struct unwind_proc *p = unwind_proc_find(ctx, pid);

	return p ? p->gen : 0;
}

/* Give p a space of its own before changing it (copy on write after fork). */
static struct unwind_space *unwind_space_own(struct unwind_proc *p)
{
	struct unwind_space *old = p->space;

	if (old->refs == 1)
		return old;
	struct unwind_space *sp = unwind_space_new(old->ctx);
	sp->maps = cs_malloc((old->nmaps ? old->nmaps : 1) * sizeof(sp->maps[0]));
	memcpy(sp->maps, old->maps, old->nmaps * sizeof(sp->maps[0]));
	sp->nmaps = sp->cap_maps = old->nmaps;
	sp->has_jit = old->has_jit;
	for (size_t i = 0; i < sp->nmaps; i++)
		sp->maps[i].reported = false;
	sp->needs_add = sp->nmaps > 0;
	old->refs--;
	p->space = sp;
	return sp;
}

/* ------------------------------------------------------------------------------------------ */
/* Modules */

struct unwind_module_key {
	enum unwind_module_kind kind;
	const char *path;
	const struct elf_file *file;
	uint32_t pid;
};

static uint64_t unwind_module_hash(const struct unwind_module_key *k)
{
	return cs_hash_bytes(k->path, strlen(k->path),
				 (uint64_t)k->kind ^ ((uint64_t)k->pid << 8) ^ (uintptr_t)k->file);
}

static bool unwind_module_eq(const void *item, const void *key)
{
	const struct unwind_module_priv *m = item;
	const struct unwind_module_key *k = key;
	return m->kind == k->kind && m->file == k->file && m->pid == k->pid &&
	       strcmp(m->path, k->path) == 0;
}

static uint32_t unwind_module_id(struct unwind_ctx *ctx, enum unwind_module_kind kind,
				 const char *path, struct elf_file *file, uint32_t pid)
{
	struct unwind_module_key key = { kind, path, file, pid };
	uint64_t hash = unwind_module_hash(&key);
	struct unwind_module_priv *m = cs_hash_find(&ctx->modules_by_key, hash, unwind_module_eq,
							 &key);
	if (m)
		return m->id;

	m = cs_calloc(1, sizeof(*m));
	m->id = (uint32_t)ctx->nmodules;
	m->kind = kind;
	m->path = cs_strdup(path);
	m->file = file;
	m->pid = pid;
	m->pub.path = m->path;
	m->pub.build_id = file ? file->build_id : "";
	/* An ELF file says what it has (its sections); every other kind is known by its kind. */
	static const uint32_t kind_flags[] = {
		[UNWIND_MOD_FILE] = PROFILE_MODULE_NO_CFI | PROFILE_MODULE_NO_SYMBOLS |
				    PROFILE_MODULE_NO_DEBUGINFO,
		[UNWIND_MOD_KERNEL] = PROFILE_MODULE_KERNEL,
		[UNWIND_MOD_JIT] = PROFILE_MODULE_JIT | PROFILE_MODULE_NO_CFI |
				   PROFILE_MODULE_NO_DEBUGINFO,
		[UNWIND_MOD_PYTHON] = PROFILE_MODULE_PYTHON,
		[UNWIND_MOD_OFFCPU] = PROFILE_MODULE_OFFCPU,
	};
	m->pub.flags = kind != UNWIND_MOD_ELF ? kind_flags[kind] :
		       file->sym_tried ? file->sym_flags : file->section_flags;  /* sym_prepare_files ran */
	*CS_PUSH(ctx->modules, ctx->nmodules, ctx->cap_modules) = m;
	cs_hash_insert(&ctx->modules_by_key, hash, m);
	return m->id;
}

size_t unwind_module_count(const struct unwind_ctx *ctx)
{
	return ctx->nmodules;
}

const struct unwind_module *unwind_module_get(const struct unwind_ctx *ctx, uint32_t id)
{
	return id < ctx->nmodules ? &ctx->modules[id]->pub : NULL;
}

uint32_t unwind_python_module(struct unwind_ctx *ctx)
{
	return unwind_module_id(ctx, UNWIND_MOD_PYTHON, "[python]", NULL, 0);
}

uint32_t unwind_offcpu_module(struct unwind_ctx *ctx)
{
	return unwind_module_id(ctx, UNWIND_MOD_OFFCPU, "[off-cpu]", NULL, 0);
}

/* The anonymous-code module of process p (JIT code named by /tmp/perf-PID.map). */
static uint32_t unwind_jit_module(struct unwind_ctx *ctx, struct unwind_proc *p)
{
	if (p->jit_module == UINT32_MAX) {
		p->jit_module = unwind_module_id(ctx, UNWIND_MOD_JIT, "//anon", NULL, p->pid);
		struct unwind_module_priv *m = ctx->modules[p->jit_module];
		if (!m->jit_map_path) {
			/* In another pid namespace the JIT writes /tmp/perf-<its own pid>.map
			 * under its own root. */
			char status[64], line[256];
			uint32_t nspid = p->pid;
			snprintf(status, sizeof(status), "/proc/%u/status", p->pid);
			FILE *fp = fopen(status, "re");
			if (fp) {
				while (fgets(line, sizeof(line), fp)) {
					if (strncmp(line, "NSpid:", 6) == 0) {
						char *last = strrchr(line, '\t');
						if (last)
							nspid = (uint32_t)strtoul(last + 1, NULL, 10);
					}
				}
				fclose(fp);
				m->jit_map_path = cs_asprintf("/proc/%u/root/tmp/perf-%u.map",
							      p->pid, nspid);
			}
		}
	}
	return p->jit_module;
}

/* ------------------------------------------------------------------------------------------ */
/* Address-space events */

/* Unwinding Dwfls look for no separate debug file: on x86-64 the CFI is in the mapped file's
 * .eh_frame (or its own .debug_frame), and a debug file loaded per process when .eh_frame
 * lacks a pc would cost a full DWARF load on the recording path. */
static int unwind_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			       Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			       GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return -1;
}

int unwind_new(struct unwind_ctx **out)
{
	static const Dwfl_Callbacks unwind_callbacks = {
		.find_elf = elfcache_find_elf,
		.find_debuginfo = unwind_no_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	/* Symbolization Dwfls (one per file) find debug files the standard way: next to the
	 * file and in .debug/ (.gnu_debuglink), and under /usr/lib/debug (also by build-id). */
	static const Dwfl_Callbacks sym_callbacks = {
		.find_elf = elfcache_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	struct unwind_ctx *ctx = cs_calloc(1, sizeof(*ctx));

	elf_version(EV_CURRENT);
	ctx->kernel_module = UINT32_MAX;
	ctx->dwfl_callbacks = &unwind_callbacks;
	ctx->sym_callbacks = &sym_callbacks;
	*out = ctx;
	return 0;
}

static void unwind_proc_free(void *item)
{
	struct unwind_proc *p = item;
	unwind_space_unref(p->space);
	free(p);
}

void unwind_free(struct unwind_ctx *ctx)
{
	if (!ctx)
		return;
	/* Dwfls first: they hold references to the files' Elf handles. */
	cs_hash_free_items(&ctx->procs, unwind_proc_free);
	if (ctx->release_python)
		ctx->release_python(ctx);
	if (ctx->release_symbols)
		ctx->release_symbols(ctx);
	for (size_t i = 0; i < ctx->nmodules; i++) {
		free(ctx->modules[i]->path);
		free(ctx->modules[i]->jit_map_path);
		free(ctx->modules[i]->jit_syms);
		free(ctx->modules[i]);
	}
	free(ctx->modules);
	cs_hash_free(&ctx->modules_by_key);
	for (size_t i = 0; i < ctx->nfiles; i++)
		elfcache_file_free(ctx->files[i]);
	free(ctx->files);
	cs_hash_free(&ctx->files_by_inode);
	cs_hash_free(&ctx->files_by_build_id);
	cs_intern_free(&ctx->strings);
	free(ctx);
}

static bool unwind_is_anon(const char *path)
{
	return !path[0] || strncmp(path, "//anon", 6) == 0 || strncmp(path, "[anon", 5) == 0 ||
	       strcmp(path, "[heap]") == 0 || strncmp(path, "[stack", 6) == 0 ||
	       strncmp(path, "/memfd:", 7) == 0 || strncmp(path, "/dev/zero", 9) == 0;
}

/* Remove [start, end) from sp's maps (a new mapping replaces whatever was there); the maps
 * stay sorted. */
static void unwind_space_punch(struct unwind_space *sp, uint64_t start, uint64_t end)
{
	size_t first = 0;

	/* Maps are sorted and disjoint: only a run of them can overlap. */
	while (first < sp->nmaps && sp->maps[first].end <= start)
		first++;
	size_t last = first;
	while (last < sp->nmaps && sp->maps[last].start < end)
		last++;
	if (first == last)
		return;

	struct unwind_map keep[2];
	size_t nkeep = 0;
	for (size_t i = first; i < last; i++) {
		const struct unwind_map *m = &sp->maps[i];
		if (m->reported)
			sp->needs_rebuild = true; /* the module may have lost its last map */
		if (m->start < start) {
			keep[nkeep] = *m;
			keep[nkeep++].end = start;
		}
		if (m->end > end) {
			keep[nkeep] = *m;
			keep[nkeep].pgoff += end - m->start;
			keep[nkeep++].start = end;
		}
	}
	/* Replace maps[first, last) by keep[0, nkeep): at most one head and one tail remain. */
	size_t removed = last - first;
	if (nkeep > removed)
		cs_grow(&sp->maps, &sp->cap_maps, sp->nmaps + nkeep - removed, sizeof(sp->maps[0]));
	memmove(sp->maps + first + nkeep, sp->maps + last, (sp->nmaps - last) * sizeof(sp->maps[0]));
	memcpy(sp->maps + first, keep, nkeep * sizeof(sp->maps[0]));
	sp->nmaps = sp->nmaps + nkeep - removed;
}

static void unwind_space_insert(struct unwind_space *sp, const struct unwind_map *m)
{
	size_t lo = CS_LOWER_BOUND(sp->maps, sp->nmaps, start, m->start);

	cs_grow(&sp->maps, &sp->cap_maps, sp->nmaps + 1, sizeof(sp->maps[0]));
	memmove(sp->maps + lo + 1, sp->maps + lo, (sp->nmaps - lo) * sizeof(sp->maps[0]));
	sp->maps[lo] = *m;
	sp->nmaps++;
}

int unwind_mmap(struct unwind_ctx *ctx, uint32_t pid, uint64_t start, uint64_t len,
		uint64_t pgoff, uint32_t prot, const char *path)
{
	struct unwind_proc *p = unwind_proc_get(ctx, pid);
	struct unwind_space *sp = unwind_space_own(p);
	struct unwind_map m = { .start = start, .end = start + len, .pgoff = pgoff, .prot = prot };

	p->gen = ++ctx->maps_gen;

	if (!len || m.end < start)
		return -EINVAL;
	if (!path)
		path = "";
	unwind_space_punch(sp, m.start, m.end);
	if (!(prot & PROT_EXEC))
		return 0; /* data mappings only matter for what they replace */

	if (strcmp(path, "[vdso]") == 0) {
		m.file = elfcache_vdso(ctx);
		if (m.file)
			m.module = unwind_module_id(ctx, UNWIND_MOD_ELF, path, m.file, 0);
		else
			m.module = unwind_module_id(ctx, UNWIND_MOD_FILE, path, NULL, 0);
	} else if (path[0] == '/') {
		m.file = elfcache_file_open(ctx, pid, m.start, m.end, path);
		if (m.file)
			m.module = unwind_module_id(ctx, UNWIND_MOD_ELF, path, m.file, 0);
		else if (unwind_is_anon(path))
			m.module = unwind_jit_module(ctx, p);
		else
			m.module = unwind_module_id(ctx, UNWIND_MOD_FILE, path, NULL, 0);
	} else if (unwind_is_anon(path)) {
		m.module = unwind_jit_module(ctx, p);
	} else {
		m.module = unwind_module_id(ctx, UNWIND_MOD_FILE, path, NULL, 0);
	}
	if (m.file) {
		m.bias = elfcache_file_bias(m.file, m.start, m.pgoff);
		sp->needs_add = true;
	}
	if (ctx->modules[m.module]->kind == UNWIND_MOD_JIT)
		sp->has_jit = true;
	unwind_space_insert(sp, &m);
	return 0;
}

int unwind_load_proc_maps(struct unwind_ctx *ctx, uint32_t pid)
{
	char path[64], line[4096 + 256];
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	FILE *fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		uint64_t start, end, off;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end,
			   perms, &off, &name_at) < 4)
			continue;
		if (perms[2] != 'x')
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = 0;
		uint32_t prot = PROT_EXEC | (perms[0] == 'r' ? PROT_READ : 0) |
				(perms[1] == 'w' ? PROT_WRITE : 0);
		err = unwind_mmap(ctx, pid, start, end - start, off, prot, name);
		if (err)
			break;
	}
	fclose(fp);
	return err;
}

int unwind_fork(struct unwind_ctx *ctx, uint32_t parent_pid, uint32_t child_pid)
{
	if (parent_pid == child_pid)
		return 0; /* a new thread */
	struct unwind_proc *parent = unwind_proc_get(ctx, parent_pid);
	struct unwind_proc *child = unwind_proc_find(ctx, child_pid);

	if (child) {
		unwind_space_unref(child->space);
	} else {
		child = cs_calloc(1, sizeof(*child));
		child->pid = child_pid;
		child->jit_module = UINT32_MAX;
		cs_hash_insert(&ctx->procs, cs_hash_u64(child_pid), child);
	}
	child->space = parent->space;
	child->space->refs++;
	child->gen = ++ctx->maps_gen;
	return 0;
}

int unwind_exec(struct unwind_ctx *ctx, uint32_t pid)
{
	struct unwind_proc *p = unwind_proc_get(ctx, pid);

	unwind_space_unref(p->space);
	p->space = unwind_space_new(ctx);
	p->jit_module = UINT32_MAX;
	p->gen = ++ctx->maps_gen;
	return 0;
}

int unwind_exit(struct unwind_ctx *ctx, uint32_t pid)
{
	struct unwind_proc *p = cs_hash_remove(&ctx->procs, cs_hash_u64(pid), unwind_proc_eq,
						   &pid);
	if (p) {
		unwind_space_unref(p->space);
		free(p);
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Unwinding */

/* perf's x86-64 register index for each DWARF register 0..16 (rax, rdx, rcx, rbx, rsi, rdi,
 * rbp, rsp, r8..r15, rip). */
static const uint8_t unwind_dwarf_to_perf[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19,
						  20, 21, 22, 23, 8 };
enum { UNWIND_PERF_SP = 7, UNWIND_PERF_IP = 8 };

static const struct unwind_map *unwind_space_lookup(const struct unwind_space *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->nmaps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < sp->maps[mid].start)
			hi = mid;
		else if (addr >= sp->maps[mid].end)
			lo = mid + 1;
		else
			return &sp->maps[mid];
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Frames without CFI: jit.c decides what their caller is; this is the glue to the address space
 * and to libdwfl.
 *
 * libdwfl has no public call to unwind one frame from given registers, and by itself it takes
 * a frame without CFI to its x86-64 frame-pointer fallback, which follows rbp unchecked (JIT
 * kernels use rbp as an ordinary register: the result is garbage, or a read far beyond the
 * stack copy reported as a short copy). So the frame callback ends the pass at such a frame
 * before libdwfl unwinds it, jit_recover() finds the caller, and a new dwfl_getthread_frames
 * pass starts from the caller's registers (set_initial_registers serves them from
 * space->resume). A pass costs a thread-state allocation, once per frame without CFI; the
 * common sample, without one, runs a single pass as before. */

enum { UNWIND_DWARF_BP = 6, UNWIND_DWARF_SP = 7 };

/* Whether m holds code without any CFI: anonymous memory, or a file without .eh_frame and
 * .debug_frame (or not ELF). Only anonymous memory (JIT code) is recovered here: in a file
 * without CFI, libdwfl's frame-pointer fallback goes on as it always did (code built with frame
 * pointers and without unwind tables, such as some Go and kernel-style builds, unwinds so), and
 * a stop there is reported as such (UNWIND_STOP_NO_CFI). */
static bool unwind_map_no_cfi(const struct unwind_space *sp, const struct unwind_map *m)
{
	const struct unwind_module_priv *mod = sp->ctx->modules[m->module];

	return mod->kind == UNWIND_MOD_JIT || mod->kind == UNWIND_MOD_FILE ||
	       (mod->kind == UNWIND_MOD_ELF && (m->file->section_flags & PROFILE_MODULE_NO_CFI));
}

static bool unwind_map_anon(const struct unwind_space *sp, const struct unwind_map *m)
{
	return sp->ctx->modules[m->module]->kind == UNWIND_MOD_JIT;
}

static const uint8_t *unwind_jit_code_before(void *arg, uint64_t addr, size_t n)
{
	struct unwind_space *sp = arg;
	const struct unwind_map *m = unwind_space_lookup(sp, addr - 1);

	if (!m || !m->file || !m->file->raw || unwind_map_no_cfi(sp, m) || addr - n < m->start)
		return NULL;
	uint64_t off = addr - m->start + m->pgoff;
	if (off < n || off > m->file->raw_size)
		return NULL;
	return m->file->raw + off - n;
}

static bool unwind_jit_has_cfi(void *arg, uint64_t pc)
{
	struct unwind_space *sp = arg;
	Dwfl_Module *mod = dwfl_addrmodule(sp->dwfl, pc);
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias;

	if (!mod)
		return false;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0) {
		free(frame);
		return true;
	}
	cfi = dwfl_module_dwarf_cfi(mod, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0) {
		free(frame);
		return true;
	}
	return false;
}

static bool unwind_jit_is_anon(void *arg, uint64_t addr)
{
	struct unwind_space *sp = arg;
	const struct unwind_map *m = unwind_space_lookup(sp, addr);

	return m && unwind_map_anon(sp, m);
}

/* The caller of sp->stop, or -errno from jit_recover (-ERANGE: the stack copy was short). */
static int unwind_jit_recover(struct unwind_space *sp, struct jit_caller *out)
{
	const struct unwind_sample *s = sp->cur;
	struct jit_memory mem = {
		.stack = s->stack, .stack_start = s->regs[UNWIND_PERF_SP],
		.stack_size = s->stack_size, .arg = sp,
		.code_before = unwind_jit_code_before, .has_cfi = unwind_jit_has_cfi,
		.is_jit = unwind_jit_is_anon,
	};
	return jit_recover(&mem, &sp->stop, out);
}

/* The initial registers of a pass that resumes at a recovered caller. Callee-saved registers
 * other than rbp after a frame-pointer step are unknown (the frame without CFI may have moved
 * them anywhere) and stay unset: CFI that needs one stops there instead of using a wrong one. */
static bool unwind_jit_set_registers(Dwfl_Thread *thread, const struct unwind_sample *s,
				     const struct jit_caller *c)
{
	Dwarf_Word v = c->sp;

	for (unsigned r = 0; c->keep_regs && r < 17; r++) {
		unsigned perf = unwind_dwarf_to_perf[r];
		Dwarf_Word w = s->regs[perf];
		if ((s->regs_mask & (1ULL << perf)) && !dwfl_thread_state_registers(thread, (int)r, 1, &w))
			return false;
	}

	if (!dwfl_thread_state_registers(thread, UNWIND_DWARF_SP, 1, &v))
		return false;
	v = c->bp;
	if (c->have_bp && !dwfl_thread_state_registers(thread, UNWIND_DWARF_BP, 1, &v))
		return false;
	/* The return address less one: libdwfl looks an initial pc up as is, and the caller's
	 * CFI row is the one of its call instruction. unwind_frame_cb adds the one back. */
	dwfl_thread_state_register_pc(thread, c->pc - 1);
	return true;
}

/* Called for each frame before libdwfl unwinds it: a frame in JIT code ends the pass, its
 * registers kept in sp->stop for unwind_jit_recover. first: the pass' initial frame (its pc
 * is exact, else a return address). */
static bool unwind_jit_stop_here(struct unwind_space *sp, Dwfl_Frame *state, uint64_t pc,
				 bool first)
{
	const struct unwind_map *m = unwind_space_lookup(sp, first ? pc : pc - 1);
	Dwarf_Word reg;

	if (!m || !unwind_map_anon(sp, m))
		return false;
	if (dwfl_frame_reg(state, UNWIND_DWARF_SP, &reg) != 0)
		return false; /* nothing to start from: libdwfl goes on as it would */
	sp->stop = (struct jit_frame){ .pc = pc, .sp = reg };
	if (dwfl_frame_reg(state, UNWIND_DWARF_BP, &reg) == 0) {
		sp->stop.bp = reg;
		sp->stop.have_bp = true;
	}
	sp->stopped = true;
	return true;
}

static pid_t unwind_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct unwind_space *sp = dwfl_arg;

	if (*thread_argp || !sp->cur)
		return 0;
	*thread_argp = sp;
	return (pid_t)sp->cur->tid;
}

static bool unwind_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct unwind_space *sp = dwfl_arg;

	*thread_argp = sp;
	return sp->cur != NULL;
}

static bool unwind_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct unwind_space *sp = dwfl_arg;
	const struct unwind_sample *s = sp->cur;
	uint64_t stack_start = s->regs[UNWIND_PERF_SP];

	if (addr >= stack_start && addr - stack_start + sizeof(*result) <= s->stack_size) {
		memcpy(result, s->stack + (addr - stack_start), sizeof(*result));
		return true;
	}
	/* Read-only file data (constants some CFI expressions load). */
	const struct unwind_map *m = unwind_space_lookup(sp, addr);
	if (m && m->file && !(m->prot & PROT_WRITE)) {
		uint64_t off = addr - m->start + m->pgoff;
		if (off + sizeof(*result) <= m->file->raw_size) {
			memcpy(result, m->file->raw + off, sizeof(*result));
			return true;
		}
	}
	sp->read_failed = true;
	/* Above the copy, within what a thread stack could be: the copy was too short. */
	if (addr >= stack_start + s->stack_size && addr - stack_start < (1ULL << 30))
		sp->read_beyond = true;
	return false;
}

static bool unwind_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct unwind_space *sp = thread_arg;
	const struct unwind_sample *s = sp->cur;

	if (sp->resume)
		return unwind_jit_set_registers(thread, s, sp->resume);
	for (unsigned r = 0; r < 17; r++) {
		unsigned perf = unwind_dwarf_to_perf[r];
		if (!(s->regs_mask & (1ULL << perf)))
			continue;
		Dwarf_Word v = s->regs[perf];
		if (!dwfl_thread_state_registers(thread, (int)r, 1, &v))
			return false;
	}
	dwfl_thread_state_register_pc(thread, s->regs[UNWIND_PERF_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks unwind_thread_callbacks = {
	.next_thread = unwind_next_thread,
	.get_thread = unwind_get_thread,
	.memory_read = unwind_memory_read,
	.set_initial_registers = unwind_set_initial_registers,
};

/* Whether map i is a second mapping of its file's code at another bias than the file's
 * largest executable mapping (the library's text): libffi 3.4+'s static trampolines map a page
 * of libffi.so's text again, below the library, for each closure table. Reported first (by
 * address, when the maps are reported again), such an alias took the module's place and the
 * library itself, clashing with it, had no CFI: ctypes callbacks' stacks stopped in
 * ffi_closure_unix64 (CPython 3.14 with Debian unstable's libffi 3.5, under ptrace). The alias
 * is not reported: the trampoline never shows as a frame (it jumps to ffi_closure_unix64,
 * whose CFI covers what it pushed). */
static bool unwind_map_is_alias(const struct unwind_space *sp, size_t i)
{
	const struct unwind_map *m = &sp->maps[i], *text = m;

	for (size_t j = 0; j < sp->nmaps; j++)
		if (sp->maps[j].file == m->file &&
		    sp->maps[j].end - sp->maps[j].start > text->end - text->start)
			text = &sp->maps[j];
	return text->bias != m->bias;
}

/* Bring sp's Dwfl up to date with its maps and attach it. Returns false if it cannot unwind. */
static bool unwind_space_sync(struct unwind_space *sp, uint32_t pid)
{
	struct unwind_ctx *ctx = sp->ctx;

	if (!sp->dwfl) {
		sp->dwfl = dwfl_begin(ctx->dwfl_callbacks);
		if (!sp->dwfl) {
			cs_warn("dwfl_begin: %s", dwfl_errmsg(-1));
			return false;
		}
		sp->needs_rebuild = true;
	}
	if (sp->needs_rebuild || sp->needs_add) {
		if (sp->needs_rebuild)
			dwfl_report_begin(sp->dwfl);
		else
			dwfl_report_begin_add(sp->dwfl);
		for (size_t i = 0; i < sp->nmaps; i++) {
			struct unwind_map *m = &sp->maps[i];
			if (!m->file || (m->reported && !sp->needs_rebuild))
				continue;
			/* Overlapping or clashing reports fail; the map then has no CFI. */
			if (!unwind_map_is_alias(sp, i))
				elfcache_report_file(sp->dwfl, ctx->modules[m->module]->path, m->file,
						     m->bias);
			m->reported = true;
		}
		dwfl_report_end(sp->dwfl, NULL, NULL);
		sp->needs_rebuild = sp->needs_add = false;
	}
	if (!sp->attached) {
		if (!dwfl_attach_state(sp->dwfl, NULL, (pid_t)pid, &unwind_thread_callbacks, sp))
			return false; /* no ELF module yet to tell the architecture: try later */
		sp->attached = true;
	}
	return true;
}

static void unwind_push(struct unwind_ctx *ctx, struct unwind_proc *p, struct unwind_space *sp,
			uint64_t pc, uint64_t frame_sp)
{
	const struct unwind_map *m = unwind_space_lookup(sp, pc);
	struct unwind_loc loc;

	loc.flags = 0;
	loc.sp = frame_sp;
	if (m && ctx->modules[m->module]->kind != UNWIND_MOD_JIT) {
		loc.module = m->module;
		loc.offset = pc - m->start + m->pgoff;
	} else {
		if (!m)
			sp->no_map = true;
		loc.module = unwind_jit_module(ctx, p);
		loc.offset = pc;
	}
	if (sp->n < sp->max)
		sp->locs[sp->n++] = loc;
}

/* The stack pointer of a frame libdwfl unwound (its callee's CFA), or 0. */
static uint64_t unwind_frame_sp(Dwfl_Frame *state)
{
	Dwarf_Word reg;

	return dwfl_frame_reg(state, UNWIND_DWARF_SP, &reg) == 0 ? reg : 0;
}

static int unwind_frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwind_space *sp = arg;
	Dwarf_Addr pc;
	bool activation;
	bool first = sp->pass_first;

	/* dwfl_frame_pc with isactivation unwinds this frame to its caller already, so the
	 * read-failure flags are reset first: afterwards they describe the step just taken. */
	sp->pass_first = false;
	sp->read_failed = sp->read_beyond = false;
	if (!sp->has_jit && !sp->resume)
		goto cfi; /* the common case: no JIT code in this process */
	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (first && sp->resume) {
		/* A caller recovered past a frame without CFI (unwind_jit_set_registers). */
		unwind_push(sp->ctx, sp->proc, sp, pc + 1, unwind_frame_sp(state));
		if (sp->n > 0)
			sp->locs[sp->n - 1].flags = sp->resume->how;
		return sp->n >= sp->max ? DWARF_CB_ABORT : DWARF_CB_OK;
	}
	if (sp->has_jit && unwind_jit_stop_here(sp, state, pc, first)) {
		/* Pushed as below: an exact pc after kernel frames gets + 1. */
		unwind_push(sp->ctx, sp->proc, sp, first && sp->n > 0 ? pc + 1 : pc,
			    unwind_frame_sp(state));
		return DWARF_CB_ABORT;
	}
cfi:
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	/* A non-leaf frame whose pc is exact (interrupted by a signal) is given as pc + 1, so
	 * that the caller-side adjustment of sym_resolve lands on it. libdwfl also calls the
	 * frame whose unwinding failed an activation; a failed read tells that case apart. */
	if (sp->n > 0 && activation && !sp->read_failed)
		pc++;
	unwind_push(sp->ctx, sp->proc, sp, pc, unwind_frame_sp(state));
	return sp->n >= sp->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* A leaf caught at its ret instruction (C3, or F3 C3) in a file's code: by the ABI its
 * return address is at sp and every callee-saved register holds its caller's value again, so
 * its caller is taken from that (*out, pc the return address, every other register the
 * sample's) rather than from its CFI, whose row there may still give a register's slot it
 * popped already: below the stack pointer, out of the copy (GCC's epilogues in Debian's 3.14
 * build, a function whose rbp is then lost: the caller's CFA, rbp + 16, was not found and the
 * stack stopped there). Returns false where that does not hold. */
static bool unwind_leaf_at_ret(struct unwind_space *sp, const struct unwind_sample *s,
			       struct jit_caller *out)
{
	uint64_t pc = s->regs[UNWIND_PERF_IP], rsp = s->regs[UNWIND_PERF_SP], ret;
	const struct unwind_map *m = unwind_space_lookup(sp, pc);

	if (!m || !m->file || !m->file->raw || !(m->prot & PROT_EXEC) || s->stack_size < 8)
		return false;
	uint64_t off = pc - m->start + m->pgoff;
	if (off + 2 > m->file->raw_size)
		return false;
	const uint8_t *code = m->file->raw + off;
	if (code[0] != 0xc3 && (code[0] != 0xf3 || code[1] != 0xc3))
		return false;
	memcpy(&ret, s->stack, sizeof(ret));
	/* a caller in JIT code (no CFI) is left to the pass that recovers past it */
	const struct unwind_map *caller = unwind_space_lookup(sp, ret - 1);
	if (!caller || unwind_map_anon(sp, caller))
		return false;
	*out = (struct jit_caller){ .pc = ret, .sp = rsp + 8, .bp = s->regs[UNWIND_REG_BP],
				    .have_bp = (s->regs_mask >> UNWIND_REG_BP) & 1, .keep_regs = true };
	return true;
}

/* Whether loc is in a file without CFI (where libdwfl's unwinding stopped). */
static bool unwind_loc_no_cfi(const struct unwind_ctx *ctx, const struct unwind_loc *loc)
{
	const struct unwind_module_priv *m = ctx->modules[loc->module];

	return m->kind == UNWIND_MOD_FILE ||
	       (m->kind == UNWIND_MOD_ELF && (m->file->section_flags & PROFILE_MODULE_NO_CFI));
}

/* The sample's kernel frames into locs[0, max): returns how many. */
static int unwind_put_kernel(struct unwind_ctx *ctx, const struct unwind_sample *s,
			     struct unwind_loc *locs, int max)
{
	int n = 0;

	for (size_t i = 0; i < s->nkernel_ips && n < max; i++) {
		if (ctx->kernel_module == UINT32_MAX)
			ctx->kernel_module = unwind_module_id(ctx, UNWIND_MOD_KERNEL, "[kernel.kallsyms]",
							      NULL, 0);
		locs[n++] = (struct unwind_loc){ ctx->kernel_module, s->kernel_ips[i], 0, 0 };
	}
	return n;
}

int unwind_sample(struct unwind_ctx *ctx, const struct unwind_sample *s, struct unwind_loc *locs,
		  int max, uint32_t *flags)
{
	*flags = 0;
	if (max <= 0)
		return -EINVAL;
	int n = unwind_put_kernel(ctx, s, locs, max);
	if (n >= max)
		return n;

	struct unwind_proc *p = unwind_proc_find(ctx, s->pid);
	if (!p) {
		/* Never seen (events lost, or attached without synthesized maps): read its
		 * maps now if it still runs. */
		unwind_load_proc_maps(ctx, s->pid);
		p = unwind_proc_get(ctx, s->pid);
	}
	struct unwind_space *sp = p->space;
	sp->cur = s;
	sp->proc = p;
	sp->locs = locs;
	sp->max = max;
	sp->n = n;
	sp->no_map = sp->read_failed = sp->read_beyond = false;

	if (s->user_ips) {
		/* -g fp: the kernel walked the frame pointers already. */
		for (size_t i = 0; i < s->nuser_ips && sp->n < max; i++)
			unwind_push(ctx, p, sp, s->user_ips[i], 0);
		if (s->nuser_ips)
			*flags |= UNWIND_COMPLETE;
		goto out;
	}
	bool have_ip = s->regs_mask & (1ULL << UNWIND_PERF_IP);
	bool have_sp = s->regs_mask & (1ULL << UNWIND_PERF_SP);
	if (!have_ip) {
		/* No user registers at all: a kernel thread, whose stack is all kernel. */
		*flags |= !s->regs_mask && s->nkernel_ips ? UNWIND_COMPLETE : UNWIND_ERROR;
		goto out;
	}
	if (!have_sp || !s->stack || !unwind_space_sync(sp, s->pid)) {
		unwind_push(ctx, p, sp, s->regs[UNWIND_PERF_IP], 0);
		*flags |= UNWIND_ERROR;
		goto out;
	}
	sp->resume = NULL;
	sp->pass_first = true;
	sp->stopped = false;
	struct jit_caller at_ret;
	if (unwind_leaf_at_ret(sp, s, &at_ret)) {
		unwind_push(ctx, p, sp, s->regs[UNWIND_PERF_IP], s->regs[UNWIND_PERF_SP]);
		sp->resume = &at_ret;
	}
	int rc = dwfl_getthread_frames(sp->dwfl, (pid_t)s->tid, unwind_frame_cb, sp);
	sp->resume = NULL;
	/* A pass that stopped at a frame without CFI resumes at its recovered caller. */
	int jit_err = 0;
	for (int i = 0; sp->stopped && sp->n < max && i < UNWIND_JIT_MAX_RECOVERIES; i++) {
		struct jit_caller caller;
		jit_err = unwind_jit_recover(sp, &caller);
		if (jit_err)
			break;
		sp->resume = &caller;
		sp->pass_first = true;
		sp->stopped = false;
		sp->read_failed = sp->read_beyond = false;
		rc = dwfl_getthread_frames(sp->dwfl, (pid_t)s->tid, unwind_frame_cb, sp);
		sp->resume = NULL;
	}
	if (sp->stopped) {
		if (sp->n >= max)
			; /* locs is full */
		else if (jit_err == -ERANGE)
			*flags |= UNWIND_STACK_END;
		else
			*flags |= UNWIND_ERROR | UNWIND_STOP_ANON;
	} else if (rc == 0 && !sp->read_failed) {
		*flags |= UNWIND_COMPLETE;
	} else if (rc == DWARF_CB_ABORT) {
		/* locs is full: neither complete nor an unwinder error. */
	} else {
		/* libdwfl takes a return address it could not read for the end of the stack,
		 * so a read failure in the last step is an error even when rc == 0. */
		*flags |= sp->read_beyond ? UNWIND_STACK_END : UNWIND_ERROR;
		if (sp->n == n) /* not even the leaf (e.g. the thread state could not be set) */
			unwind_push(ctx, p, sp, s->regs[UNWIND_PERF_IP], 0);
		else if (!sp->read_beyond && unwind_loc_no_cfi(ctx, &sp->locs[sp->n - 1]))
			*flags |= UNWIND_STOP_NO_CFI;
	}
out:
	if (sp->no_map)
		*flags |= UNWIND_NO_MAP;
	sp->cur = NULL;
	return sp->n;
}
