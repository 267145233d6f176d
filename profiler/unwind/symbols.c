/* symbols.c: naming code locations (module, file offset) for symbols.h's sym_resolve.
 *
 * ELF files: one libdwfl module per file (shared by every process mapping it, keyed by
 * build-id), reported at its link-time addresses. libdwfl supplies the symbol tables (.symtab,
 * .dynsym, MiniDebugInfo in .gnu_debugdata) and finds separate debug files (.gnu_debuglink next
 * to the file or under /usr/lib/debug, /usr/lib/debug/.build-id/xx/rest.debug, and by build id
 * on the debuginfod servers of DEBUGINFOD_URLS through libdebuginfod; see record.c for
 * --no-debuginfod). DWARF gives
 * source lines and inline chains (dwarf_getscopes + DW_TAG_inlined_subroutine, the caller's line
 * from DW_AT_call_file/DW_AT_call_line, as eu-addr2line -i does). C++ and Rust (legacy mangling)
 * names are demangled with libstdc++'s __cxa_demangle (cs_demangle).
 *
 * Kernel addresses are named from /proc/kallsyms (read once; the kernel image's text from this
 * boot's entry in ksymcache.c where there is one), anonymous code from
 * /tmp/perf-PID.map. Results are cached per (module, offset, is_caller); a location that has no
 * name becomes "basename+0xOFFSET". */
#include "unwind/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base/cs.h"
#include "base/search.h"
#include "unwind/elfcache.h"
#include "unwind/ksymcache.h"
#include "unwind/offcpu.h"
#include "unwind/python.h"
#include "format/datafile.h"

/* ------------------------------------------------------------------------------------------ */
/* Names */

static bool sym_is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Demangle name into an interned string (the name itself when it is not mangled). */
static const char *sym_demangle(struct unwind_ctx *ctx, const char *name)
{
	char *d = cs_demangle(name);
	if (!d)
		return elfcache_intern(ctx, name);
	/* Rust's legacy mangling is Itanium-shaped and ends in a "::h<16 hex digits>" hash. */
	size_t len = strlen(d);
	if (len > 19 && memcmp(d + len - 19, "::h", 3) == 0 && sym_is_hex(d + len - 16, 16))
		d[len - 19] = 0;
	const char *out = elfcache_intern(ctx, d);
	free(d);
	return out;
}

static const char *sym_unnamed(struct unwind_ctx *ctx, const struct unwind_module_priv *m,
			       uint64_t offset)
{
	char base[512];
	const char *b = m->kind == UNWIND_MOD_JIT ? m->path : cs_basename(m->path);

	snprintf(base, sizeof(base), "%s", b);
	size_t len = strlen(base), dl = strlen(" (deleted)");
	if (len > dl && strcmp(base + len - dl, " (deleted)") == 0)
		base[len - dl] = 0;
	char *s = cs_asprintf("%s+0x%" PRIx64, base, offset);
	const char *out = elfcache_intern(ctx, s);
	free(s);
	return out;
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel: /proc/kallsyms */

CS_CMP_FN(sym_kallsym_cmp, struct kallsym, CS_CMP(a->addr, b->addr))

/* Read /proc/kallsyms whole. The text is kept (ctx->kallsyms_text) and the names point into it:
 * interning some 200k names would cost more than every lookup of a profile together. */
static void sym_read_kallsyms(struct unwind_ctx *ctx)
{
	size_t cap = 0, len = 0, size = 8u << 20;
	ssize_t n;

	ctx->kallsyms_loaded = true;
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cs_warn("open /proc/kallsyms: %s; kernel frames will show as addresses",
			strerror(errno));
		return;
	}
	/* Read straight into one buffer, its pages populated at once (5 MB here: grown by
	 * realloc from fread's chunks, its page faults made the read take 71 ms of CPU instead
	 * of 46 on this VM), in huge pages where THP allows it (the kernel's copy into it and
	 * the parse below walk 5 MB: with 4 KiB pages, a TLB miss every 4 KiB); kept whole, as
	 * the names point into it. */
	char *text = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (text != MAP_FAILED && cs_prefault(text, size))
		memset(text, 0, size);
	while (text != MAP_FAILED && (n = read(fd, text + len, size - len - 1)) > 0) {
		len += (size_t)n;
		if (size - len - 1 == 0) {
			char *grown = mremap(text, size, size * 2, MREMAP_MAYMOVE);
			if (grown == MAP_FAILED)
				break;
			text = grown;
			size *= 2;
		}
	}
	close(fd);
	if (text == MAP_FAILED) {
		cs_warn("mmap for /proc/kallsyms: %s; kernel frames will show as addresses", strerror(errno));
		return;
	}
	text[len] = 0;
	ctx->kallsyms_text = text;
	ctx->kallsyms_text_size = size;

	bool any_nonzero = false;
	for (char *line = text, *next; line && *line; line = next) {
		char *nl = strchr(line, '\n');
		next = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		/* "ADDRESS TYPE NAME[\t[MODULE]]" */
		char *end;
		uint64_t addr = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		char type = end[1], *name = end + 3;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		name[strcspn(name, " \t")] = 0;
		any_nonzero |= addr != 0;
		*CS_PUSH(ctx->kallsyms, ctx->nkallsyms, cap) = (struct kallsym){ addr, name };
	}
	if (!any_nonzero) {
		cs_warn("/proc/kallsyms shows no addresses (kernel.kptr_restrict); kernel frames "
			"will show as addresses: run as root or set /proc/sys/kernel/kptr_restrict to 0");
		ctx->nkallsyms = 0;
		return;
	}
	/* mostly in order already: sorted only where it is not */
	bool sorted = true;
	for (size_t i = 1; i < ctx->nkallsyms && sorted; i++)
		sorted = ctx->kallsyms[i - 1].addr <= ctx->kallsyms[i].addr;
	if (!sorted)
		cs_qsort(ctx->kallsyms, ctx->nkallsyms, sizeof(ctx->kallsyms[0]), sym_kallsym_cmp);
}

/* The kernel's symbols, once: the kernel image's text from this boot's cache entry (ksymcache.h:
 * reading /proc/kallsyms is a third of a bpf recording's start-up), else /proc/kallsyms whole,
 * whose image text is then kept for the next recording. */
static void sym_load_kallsyms(struct unwind_ctx *ctx)
{
	struct ksymcache_table t;

	if (ksymcache_read(&t) == 0) {
		ctx->kallsyms_loaded = ctx->kallsyms_partial = true;
		ctx->kallsyms = t.syms;
		ctx->nkallsyms = t.n;
		ctx->kallsyms_text = t.map;
		ctx->kallsyms_text_size = t.map_size;
		ctx->kallsyms_lo = t.lo;
		ctx->kallsyms_hi = t.hi;
		return;
	}
	sym_read_kallsyms(ctx);
	if (ctx->nkallsyms)
		ksymcache_write(ctx->kallsyms, ctx->nkallsyms);
}

/* The kernel symbol containing addr (the last one at or below it), or NULL. */
static const char *sym_kernel_name(struct unwind_ctx *ctx, uint64_t addr)
{
	if (!ctx->kallsyms_loaded)
		sym_load_kallsyms(ctx);
	if (ctx->kallsyms_partial && (addr < ctx->kallsyms_lo || addr >= ctx->kallsyms_hi)) {
		/* outside the image's text (a module, BPF or ftrace code): every symbol now */
		free(ctx->kallsyms);
		munmap(ctx->kallsyms_text, ctx->kallsyms_text_size);
		ctx->kallsyms = NULL;
		ctx->nkallsyms = 0;
		ctx->kallsyms_text = NULL;
		ctx->kallsyms_partial = false;
		sym_read_kallsyms(ctx);
	}
	size_t lo = CS_UPPER_BOUND(ctx->kallsyms, ctx->nkallsyms, addr, addr);
	return lo ? elfcache_intern(ctx, ctx->kallsyms[lo - 1].name) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* JIT code: /tmp/perf-PID.map ("START SIZE name" per line, hex) */

CS_CMP_FN(sym_jit_cmp, struct jit_sym, CS_CMP(a->start, b->start))

/* (Re)read the perf map of m when it changed since the last read. */
static void sym_load_jit_map(struct unwind_ctx *ctx, struct unwind_module_priv *m)
{
	char plain[64];
	const char *paths[2] = { m->jit_map_path, plain };
	FILE *fp = NULL;
	struct stat st;

	snprintf(plain, sizeof(plain), "/tmp/perf-%u.map", m->pid);
	for (int i = 0; i < 2 && !fp; i++)
		if (paths[i])
			fp = fopen(paths[i], "re");
	if (!fp)
		return;
	if (fstat(fileno(fp), &st) != 0 ||
	    (m->jit_loaded && st.st_size == m->jit_map_size &&
	     (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == m->jit_map_mtime_ns)) {
		fclose(fp);
		return;
	}
	m->jit_loaded = true;
	m->jit_map_size = st.st_size;
	m->jit_map_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	m->njit_syms = 0;
	size_t cap = 0;
	char *line = NULL;
	size_t linecap = 0;
	while (getline(&line, &linecap, fp) > 0) {
		char *p = line, *end;
		uint64_t start = strtoull(p, &end, 16);
		if (end == p)
			continue;
		p = end;
		uint64_t size = strtoull(p, &end, 16);
		if (end == p || (*end != ' ' && *end != '\t'))
			continue;
		p = end + strspn(end, " \t");
		p[strcspn(p, "\n")] = 0;
		if (!*p)
			continue;
		*CS_PUSH(m->jit_syms, m->njit_syms, cap) =
			(struct jit_sym){ start, size, sym_demangle(ctx, p) };
	}
	free(line);
	fclose(fp);
	/* Stable: a later entry for the same start (re-JIT) stays after the earlier one. */
	cs_qsort(m->jit_syms, m->njit_syms, sizeof(m->jit_syms[0]), sym_jit_cmp);
	m->pub.flags &= ~(uint32_t)PROFILE_MODULE_NO_SYMBOLS;
}

static const char *sym_jit_lookup(const struct unwind_module_priv *m, uint64_t addr)
{
	/* The last entry starting at or below addr that contains it. */
	size_t lo = CS_UPPER_BOUND(m->jit_syms, m->njit_syms, start, addr);
	for (size_t i = lo; i-- > 0;) {
		const struct jit_sym *s = &m->jit_syms[i];
		if (addr < s->start + s->size)
			return s->name;
		if (s->start + (1 << 24) < addr)
			break; /* nothing that far back is that large */
	}
	return NULL;
}

static const char *sym_jit_name(struct unwind_ctx *ctx, struct unwind_module_priv *m,
				uint64_t addr)
{
	if (!m->jit_loaded)
		sym_load_jit_map(ctx, m);
	const char *name = sym_jit_lookup(m, addr);
	if (!name && m->jit_loaded) {
		sym_load_jit_map(ctx, m); /* written since: the JIT appends as it compiles */
		name = sym_jit_lookup(m, addr);
	}
	return name;
}

/* ------------------------------------------------------------------------------------------ */
/* ELF files */

/* Function symbols of one file sorted by address, built once per file: libdwfl 0.188's
 * dwfl_module_addrinfo scans the whole symbol table on every lookup, which dominated the time
 * to symbolize large libraries. */
struct sym_func {
	uint64_t addr, size;
	const char *name;        /* in the ELF string table (lives as long as the file's Dwfl) */
	uint8_t rank;            /* among aliases: 0 global, 1 weak, 2 local, 3 entry point */
};

/* The functions and inlined instances of one compile unit with their address ranges, from one
 * walk over its DIEs: dwarf_getscopes walks the unit's DIE tree again on every call, which
 * dominated the time to symbolize code with large compile units. */
struct sym_scope {
	Dwarf_Die die;
	int32_t parent;          /* the enclosing function or inlined instance, or -1 */
	uint32_t depth;
};

struct sym_scope_range {
	uint64_t low, high;      /* DWARF addresses */
	uint32_t scope;
};

struct sym_cu_index {
	Dwarf_Off cu_offset;
	struct sym_scope *scopes;
	size_t nscopes, cap_scopes;
	struct sym_scope_range *ranges;
	size_t nranges, cap_ranges;
	Dwarf_Files *files;      /* for DW_AT_call_file */
};

struct sym_file_index {
	struct sym_func *funcs;
	size_t nfuncs;
	struct cs_hash cus;  /* compile-unit offset -> struct sym_cu_index */
};

static int sym_func_cmp(const void *a, const void *b)
{
	const struct sym_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return (y->size > 0) - (x->size > 0); /* sized before sizeless */
}

/* Collect f's function symbols (.symtab, .gnu_debugdata, the debug file's, .dynsym: whatever
 * libdwfl found) into a sorted table, one entry per address. */
static void sym_build_funcs(struct elf_file *f, struct sym_file_index *ix)
{
	int nsyms = dwfl_module_getsymtab(f->sym_mod);
	size_t cap = 0;

	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		GElf_Word shndx;
		Elf *elf;
		Dwarf_Addr bias;
		const char *name = dwfl_module_getsym_info(f->sym_mod, i, &sym, &value, &shndx, &elf,
							   &bias);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF)
			continue;
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			/* Untyped labels count when they are in code (assembly functions). */
			GElf_Shdr sh;
			Elf_Scn *scn = type == STT_NOTYPE && elf ? elf_getscn(elf, shndx) : NULL;
			if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
				continue;
		}
		*CS_PUSH(ix->funcs, ix->nfuncs, cap) = (struct sym_func){
			.addr = value,
			.size = sym.st_size,
			.name = name,
			.rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2,
		};
	}
	/* A stripped program still says where _start is: its entry point. Naming it lets reports
	 * see that a stack reached the outermost frame. Ranked last: a real symbol wins. */
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = f->entry ? dwfl_module_eh_cfi(f->sym_mod, &bias) : NULL;
	Dwarf_Frame *frame;
	if (cfi && dwarf_cfi_addrframe(cfi, f->entry - bias, &frame) == 0) {
		/* Its extent is that of the CFI entry that starts there. */
		Dwarf_Addr start, end;
		if (dwarf_frame_info(frame, &start, &end, NULL) >= 0 && start + bias == f->entry &&
		    end > start) {
			*CS_PUSH(ix->funcs, ix->nfuncs, cap) =
				(struct sym_func){ f->entry, end - start, "_start", 3 };
		}
		free(frame);
	}
	if (!ix->nfuncs)
		return;
	cs_qsort(ix->funcs, ix->nfuncs, sizeof(ix->funcs[0]), sym_func_cmp);
	size_t out = 1;
	for (size_t i = 1; i < ix->nfuncs; i++)
		if (ix->funcs[i].addr != ix->funcs[out - 1].addr)
			ix->funcs[out++] = ix->funcs[i];
	ix->nfuncs = out;
}

/* The function symbol containing addr, or NULL. A sizeless symbol counts for 4 KB after it
 * when nothing else is closer. */
static const struct sym_func *sym_func_lookup(const struct sym_file_index *ix, uint64_t addr)
{
	size_t lo = CS_UPPER_BOUND(ix->funcs, ix->nfuncs, addr, addr);

	/* A few back: a large function may enclose smaller local labels. */
	for (size_t j = lo, back = 0; j-- > 0 && back < 8; back++) {
		const struct sym_func *fn = &ix->funcs[j];
		if (fn->size ? addr < fn->addr + fn->size : (j + 1 == lo && addr - fn->addr < 4096))
			return fn;
	}
	return NULL;
}

static void sym_scope_add(struct sym_cu_index *ci, Dwarf_Die *die, int32_t parent, uint32_t depth,
			  int32_t *out)
{
	ptrdiff_t off = 0;
	Dwarf_Addr base, start, end;

	*out = -1;
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if (start >= end)
			continue;
		if (*out < 0) {
			cs_grow(&ci->scopes, &ci->cap_scopes, ci->nscopes + 1, sizeof(ci->scopes[0]));
			ci->scopes[ci->nscopes] = (struct sym_scope){ *die, parent, depth };
			*out = (int32_t)ci->nscopes++;
		}
		*CS_PUSH(ci->ranges, ci->nranges, ci->cap_ranges) =
			(struct sym_scope_range){ start, end, (uint32_t)*out };
	}
}

/* Record the functions and inlined instances under die. Types are not entered: compilers put
 * function definitions at unit or namespace level. */
static void sym_scope_walk(struct sym_cu_index *ci, Dwarf_Die *die, int32_t parent, uint32_t depth)
{
	Dwarf_Die child;

	if (dwarf_child(die, &child) != 0)
		return;
	do {
		int32_t me;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
			sym_scope_add(ci, &child, parent, depth, &me);
			if (me >= 0)
				sym_scope_walk(ci, &child, me, depth + 1);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_namespace:
		case DW_TAG_module:
			sym_scope_walk(ci, &child, parent, depth);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static bool sym_cu_eq(const void *item, const void *key)
{
	return ((const struct sym_cu_index *)item)->cu_offset == *(const Dwarf_Off *)key;
}

static struct sym_cu_index *sym_cu_index_get(struct sym_file_index *ix, Dwarf_Die *cudie)
{
	Dwarf_Off off = dwarf_dieoffset(cudie);
	uint64_t hash = cs_hash_u64(off);
	struct sym_cu_index *ci = cs_hash_find(&ix->cus, hash, sym_cu_eq, &off);

	if (!ci) {
		ci = cs_calloc(1, sizeof(*ci));
		ci->cu_offset = off;
		sym_scope_walk(ci, cudie, -1, 0);
		if (dwarf_getsrcfiles(cudie, &ci->files, NULL) != 0)
			ci->files = NULL;
		cs_hash_insert(&ix->cus, hash, ci);
	}
	return ci;
}

static void sym_cu_index_free(void *item)
{
	struct sym_cu_index *ci = item;
	free(ci->scopes);
	free(ci->ranges);
	free(ci);
}

static void sym_file_index_free(struct sym_file_index *ix)
{
	if (!ix)
		return;
	cs_hash_free_items(&ix->cus, sym_cu_index_free);
	free(ix->funcs);
	free(ix);
}

/* Set up f's symbolization module and refine what the file lacks. */
static void sym_file_setup(struct unwind_ctx *ctx, struct elf_file *f, const char *name)
{
	f->sym_tried = true;
	f->sym_flags = f->section_flags;
	f->sym_index = cs_calloc(1, sizeof(*f->sym_index));
	f->sym_dwfl = dwfl_begin(ctx->sym_callbacks);
	if (!f->sym_dwfl) {
		cs_warn("dwfl_begin: %s", dwfl_errmsg(-1));
		return;
	}
	dwfl_report_begin(f->sym_dwfl);
	f->sym_mod = elfcache_report_file(f->sym_dwfl, name, f, 0);
	dwfl_report_end(f->sym_dwfl, NULL, NULL);
	if (!f->sym_mod) {
		cs_warn("dwfl_report_module %s: %s; its frames will show as offsets", name,
			dwfl_errmsg(-1));
		return;
	}
	sym_build_funcs(f, f->sym_index);
	f->sym_flags &= ~(uint32_t)(PROFILE_MODULE_NO_SYMBOLS | PROFILE_MODULE_NO_DEBUGINFO);
	size_t real = 0;
	for (size_t i = 0; i < f->sym_index->nfuncs; i++)
		real += f->sym_index->funcs[i].rank < 3;
	if (!real)
		f->sym_flags |= PROFILE_MODULE_NO_SYMBOLS;
	Dwarf_Addr bias;
	if (!dwfl_module_getdwarf(f->sym_mod, &bias))
		f->sym_flags |= PROFILE_MODULE_NO_DEBUGINFO;
}

static const char *sym_die_name(struct unwind_ctx *ctx, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));

	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!name)
		name = dwarf_diename(die);
	return name ? sym_demangle(ctx, name) : NULL;
}

/* A symbol's name without its version ("__libc_start_main@@GLIBC_2.34"), demangled. */
static const char *sym_symbol_name(struct unwind_ctx *ctx, const char *raw)
{
	char buf[1024];
	const char *at = strchr(raw, '@');

	if (at && at > raw && (size_t)(at - raw) < sizeof(buf)) {
		memcpy(buf, raw, (size_t)(at - raw));
		buf[at - raw] = 0;
		return sym_demangle(ctx, buf);
	}
	return sym_demangle(ctx, raw);
}

static void sym_push(struct unwind_ctx *ctx, const char *name, const char *file, uint32_t line,
		     uint32_t flags)
{
	*CS_PUSH(ctx->sym_frames, ctx->nsym_frames, ctx->cap_sym_frames) = (struct sym_frame){
		.name = name,
		.file = file && *file ? elfcache_intern(ctx, file) : NULL,
		.line = line,
		.flags = flags,
	};
}

/* Append the frames of addr (a link-time vaddr) in m's file, innermost first. */
static void sym_elf_frames(struct unwind_ctx *ctx, struct unwind_module_priv *m, uint64_t addr,
			   uint64_t offset)
{
	struct elf_file *f = m->file;
	size_t first = ctx->nsym_frames;

	if (!f->sym_tried) {
		sym_file_setup(ctx, f, m->path);
		m->pub.flags = f->sym_flags;
	}
	if (!f->sym_mod) {
		sym_push(ctx, sym_unnamed(ctx, m, offset), NULL, 0, PROFILE_FRAME_UNNAMED);
		return;
	}
	const struct sym_func *fn = sym_func_lookup(f->sym_index, addr);
	const char *symname = fn ? sym_symbol_name(ctx, fn->name) : NULL;

	const char *file = NULL;
	int line = 0;
	Dwfl_Line *dl = dwfl_module_getsrc(f->sym_mod, addr);
	if (dl)
		file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);

	/* Innermost scope first, each inlined instance followed by where it was inlined. */
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(f->sym_mod, addr, &bias);
	struct sym_cu_index *ci = cudie ? sym_cu_index_get(f->sym_index, cudie) : NULL;
	int32_t scope = -1;
	if (ci) {
		uint64_t a = addr - bias;
		uint32_t best_depth = 0;
		for (size_t i = 0; i < ci->nranges; i++) {
			const struct sym_scope_range *r = &ci->ranges[i];
			if (a >= r->low && a < r->high &&
			    (scope < 0 || ci->scopes[r->scope].depth > best_depth)) {
				scope = (int32_t)r->scope;
				best_depth = ci->scopes[r->scope].depth;
			}
		}
	}
	bool done = false;
	for (; scope >= 0 && !done; scope = ci->scopes[scope].parent) {
		Dwarf_Die *die = &ci->scopes[scope].die;
		if (dwarf_tag(die) != DW_TAG_inlined_subroutine) {
			/* The out-of-line function: the symbol's name when there is one (it
			 * carries clone suffixes such as .cold the way perf shows them). */
			const char *name = symname ? symname : sym_die_name(ctx, die);
			sym_push(ctx, name ? name : sym_unnamed(ctx, m, offset), file,
				 line > 0 ? (uint32_t)line : 0, name ? 0 : PROFILE_FRAME_UNNAMED);
			done = true;
			break;
		}
		const char *name = sym_die_name(ctx, die);
		sym_push(ctx, name ? name : elfcache_intern(ctx, "(inlined)"), file,
			 line > 0 ? (uint32_t)line : 0, PROFILE_FRAME_INLINED);
		/* The caller's position is where this instance was inlined. */
		Dwarf_Attribute attr;
		Dwarf_Word val;
		file = NULL;
		line = 0;
		if (ci->files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &val) == 0)
			file = dwarf_filesrc(ci->files, val, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &val) == 0)
			line = (int)val;
	}
	if (!done)
		sym_push(ctx, symname ? symname : sym_unnamed(ctx, m, offset), file,
			 line > 0 ? (uint32_t)line : 0, symname ? 0 : PROFILE_FRAME_UNNAMED);
	/* Every frame but the outermost is inlined into the next one. */
	for (size_t i = first; i + 1 < ctx->nsym_frames; i++)
		ctx->sym_frames[i].flags |= PROFILE_FRAME_INLINED;
	ctx->sym_frames[ctx->nsym_frames - 1].flags &= ~(uint32_t)PROFILE_FRAME_INLINED;
}

/* ------------------------------------------------------------------------------------------ */
/* Resolution and cache */

struct sym_key {
	uint32_t module;
	bool is_caller;
	uint64_t offset;
	const struct sym_cache_entry *entries;
};

static bool sym_entry_eq(const void *item, const void *key)
{
	const struct sym_key *k = key;
	const struct sym_cache_entry *e = &k->entries[(uintptr_t)item - 1];
	return e->module == k->module && e->offset == k->offset && e->is_caller == k->is_caller;
}

static uint64_t sym_key_hash(const struct sym_key *k)
{
	return cs_hash_u64(k->offset * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)k->module << 1) ^
			       k->is_caller);
}

static void sym_release(struct unwind_ctx *ctx);

int sym_resolve(struct unwind_ctx *ctx, struct unwind_loc loc, bool is_caller,
		struct sym_frame *frames, int max)
{
	if (loc.module >= ctx->nmodules || max <= 0)
		return -EINVAL;
	ctx->release_symbols = sym_release;
	struct sym_key key = { loc.module, is_caller, loc.offset, ctx->sym_entries };
	uint64_t hash = sym_key_hash(&key);
	struct sym_cache_entry *e;
	/* Entries live in one growing array; the table holds indexes + 1 as pointers. */
	uintptr_t idx = (uintptr_t)cs_hash_find(&ctx->sym_cache, hash, sym_entry_eq, &key);

	if (idx) {
		e = &ctx->sym_entries[idx - 1];
	} else {
		struct unwind_module_priv *m = ctx->modules[loc.module];
		uint64_t at = loc.offset - (is_caller && loc.offset ? 1 : 0);
		uint32_t first = (uint32_t)ctx->nsym_frames;
		const char *name;

		switch (m->kind) {
		case UNWIND_MOD_KERNEL:
			name = sym_kernel_name(ctx, at);
			sym_push(ctx, name ? name : sym_unnamed(ctx, m, loc.offset), NULL, 0,
				 PROFILE_FRAME_KERNEL | (name ? 0 : PROFILE_FRAME_UNNAMED));
			if (!ctx->nkallsyms)
				m->pub.flags |= PROFILE_MODULE_NO_SYMBOLS;
			break;
		case UNWIND_MOD_JIT:
			name = sym_jit_name(ctx, m, at);
			sym_push(ctx, name ? name : sym_unnamed(ctx, m, loc.offset), NULL, 0,
				 name ? PROFILE_FRAME_JIT : PROFILE_FRAME_UNNAMED);
			if (!m->jit_loaded)
				m->pub.flags |= PROFILE_MODULE_NO_SYMBOLS;
			break;
		case UNWIND_MOD_ELF:
			sym_elf_frames(ctx, m, elf_file_offset_to_vaddr(m->file, at), loc.offset);
			break;
		case UNWIND_MOD_FILE:
			sym_push(ctx, sym_unnamed(ctx, m, loc.offset), NULL, 0, PROFILE_FRAME_UNNAMED);
			break;
		case UNWIND_MOD_PYTHON: {
			struct sym_frame pf;
			if (py_frame_symbol(ctx, loc.offset, &pf) == 0)
				sym_push(ctx, pf.name, pf.file, pf.line, pf.flags);
			else
				sym_push(ctx, sym_unnamed(ctx, m, loc.offset), NULL, 0,
					 PROFILE_FRAME_UNNAMED);
			break;
		}
		case UNWIND_MOD_OFFCPU: {
			char why[64];
			offcpu_frame_name(loc.offset, why, sizeof(why)); /* not an address: as is */
			sym_push(ctx, elfcache_intern(ctx, why), NULL, 0, PROFILE_FRAME_OFFCPU);
			break;
		}
		}
		cs_grow(&ctx->sym_entries, &ctx->cap_sym_entries, ctx->nsym_entries + 1,
			sizeof(ctx->sym_entries[0]));
		e = &ctx->sym_entries[ctx->nsym_entries++];
		*e = (struct sym_cache_entry){ loc.module, is_caller, loc.offset, first,
					       (uint32_t)ctx->nsym_frames - first };
		cs_hash_insert(&ctx->sym_cache, hash, (void *)(uintptr_t)ctx->nsym_entries);
	}
	int n = (int)e->n < max ? (int)e->n : max;
	/* Too little room: keep the outermost frames (the real function). */
	memcpy(frames, ctx->sym_frames + e->first + (e->n - (uint32_t)n), (size_t)n * sizeof(*frames));
	return n;
}

void sym_prepare_files(struct unwind_ctx *ctx, const char *const *paths, size_t npaths)
{
	__atomic_store_n(&ctx->release_symbols, sym_release, __ATOMIC_RELAXED); /* (both) */
	for (size_t i = 0; i < npaths; i++) {
		struct elf_file *f = elfcache_file_open(ctx, 0, 0, 0, paths[i]);
		if (f && !f->sym_tried)
			sym_file_setup(ctx, f, paths[i]);
	}
}

void sym_prepare_kernel(struct unwind_ctx *ctx)
{
	__atomic_store_n(&ctx->release_symbols, sym_release, __ATOMIC_RELAXED);
	if (!ctx->kallsyms_loaded)
		sym_load_kallsyms(ctx);
}

/* Installed as ctx->release_symbols: unwind_free calls it. */
static void sym_release(struct unwind_ctx *ctx)
{
	for (size_t i = 0; i < ctx->nfiles; i++) {
		struct elf_file *f = ctx->files[i];
		sym_file_index_free(f->sym_index);
		f->sym_index = NULL;
		if (f->sym_dwfl)
			dwfl_end(f->sym_dwfl);
		f->sym_dwfl = NULL;
		f->sym_mod = NULL;
	}
	free(ctx->kallsyms);
	if (ctx->kallsyms_text)
		munmap(ctx->kallsyms_text, ctx->kallsyms_text_size);
	cs_hash_free(&ctx->sym_cache);
	free(ctx->sym_entries);
	free(ctx->sym_frames);
}
