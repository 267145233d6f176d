/* elfcache.c: what unwinding (unwind.c) and symbolization (symbols.c) share: interned strings
 * and the ELF file cache (files opened once per inode, shared by build-id, each with its
 * PT_LOAD table and one Elf handle that every Dwfl duplicates); the tables are base/hash.c's.
 * Both modules build on this one; neither calls the other, which is what keeps the unwinder and
 * the symbolizer from depending on each other. */
#include "unwind/elfcache.h"

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
#include "format/datafile.h"

const char *elfcache_intern(struct unwind_ctx *ctx, const char *s)
{
	return cs_intern(&ctx->strings, s);
}

/* ------------------------------------------------------------------------------------------ */
/* ELF files */

static bool elfcache_file_inode_eq(const void *item, const void *key)
{
	const struct elf_file *f = item;
	const struct stat *st = key;
	return f->dev == st->st_dev && f->ino == st->st_ino;
}

static bool elfcache_file_build_id_eq(const void *item, const void *key)
{
	return strcmp(((const struct elf_file *)item)->build_id, key) == 0;
}

static uint64_t elfcache_inode_hash(const struct stat *st)
{
	return cs_hash_u64(((uint64_t)st->st_dev << 40) ^ (uint64_t)st->st_ino);
}

static bool elfcache_has_section(Elf *elf, size_t shstrndx, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/* Fill f from its Elf: load segments, build-id, what its sections offer. 0 or -EINVAL. */
static int elfcache_file_scan(struct elf_file *f)
{
	GElf_Ehdr eh;
	size_t phnum, shstrndx;

	if (elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh) ||
	    elf_getphdrnum(f->elf, &phnum) != 0)
		return -EINVAL;
	f->e_type = eh.e_type;
	f->loads = cs_calloc(phnum ? phnum : 1, sizeof(f->loads[0]));
	f->low = UINT64_MAX;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->loads[f->nloads++] = (struct elf_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz,
							   ph.p_memsz, ph.p_align, ph.p_flags };
		uint64_t align = ph.p_align ? ph.p_align : 1;
		if (f->low == UINT64_MAX)
			f->low = ph.p_vaddr & -align;
		if (ph.p_vaddr + ph.p_memsz > f->high)
			f->high = ph.p_vaddr + ph.p_memsz;
	}
	if (!f->nloads)
		return -EINVAL;

	const void *bid;
	ssize_t n = dwelf_elf_gnu_build_id(f->elf, &bid);
	if (n > 0 && n <= 64) {
		for (ssize_t i = 0; i < n; i++)
			snprintf(f->build_id + 2 * i, 3, "%02x", ((const uint8_t *)bid)[i]);
	}

	size_t raw_size;
	f->raw = (const uint8_t *)elf_rawfile(f->elf, &raw_size);
	f->raw_size = f->raw ? raw_size : 0;

	bool eh_frame = false, debug_frame = false, symtab = false, debuginfo = false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			eh_frame = true;
		if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			f->entry = eh.e_entry;
	}
	if (elf_getshdrstrndx(f->elf, &shstrndx) == 0) {
		eh_frame = eh_frame || elfcache_has_section(f->elf, shstrndx, ".eh_frame");
		debug_frame = elfcache_has_section(f->elf, shstrndx, ".debug_frame");
		symtab = elfcache_has_section(f->elf, shstrndx, ".symtab") ||
			 elfcache_has_section(f->elf, shstrndx, ".gnu_debugdata");
		debuginfo = elfcache_has_section(f->elf, shstrndx, ".debug_info");
	}
	if (!eh_frame && !debug_frame)
		f->section_flags |= PROFILE_MODULE_NO_CFI;
	if (!symtab)
		f->section_flags |= PROFILE_MODULE_NO_SYMBOLS;
	if (!debuginfo)
		f->section_flags |= PROFILE_MODULE_NO_DEBUGINFO;
	return 0;
}

void elfcache_file_free(struct elf_file *f)
{
	if (!f)
		return;
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->loads);
	free(f->debug_name);
	free(f);
}

/* Adopt an open fd (ownership passes here): the cached file for its inode or build-id, or a new
 * one. debug_name: where debuglink lookups start. Returns NULL when fd is not ELF. */
static struct elf_file *elfcache_file_from_fd(struct unwind_ctx *ctx, int fd, const char *debug_name)
{
	struct stat st;
	struct elf_file *f;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	f = cs_hash_find(&ctx->files_by_inode, elfcache_inode_hash(&st), elfcache_file_inode_eq, &st);
	if (f) {
		close(fd);
		return f;
	}
	f = cs_calloc(1, sizeof(*f));
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || elfcache_file_scan(f) != 0) {
		elfcache_file_free(f);
		return NULL;
	}
	/* The file is mapped whole: libelf needs the descriptor no more, and a long recording
	 * of many programs would otherwise run out of descriptors. The mapping keeps the file
	 * (even a deleted one) readable. */
	if (elf_cntl(f->elf, ELF_C_FDREAD) == 0) { /* also marks the descriptor unused */
		close(f->fd);
		f->fd = -1;
	}
	if (f->build_id[0]) {
		struct elf_file *same = cs_hash_find(&ctx->files_by_build_id,
							  cs_hash_bytes(f->build_id, strlen(f->build_id), 1),
							  elfcache_file_build_id_eq, f->build_id);
		if (same) {
			/* Another copy of a file we know (a container's, a hard link): remember
			 * this inode as an alias and keep only the first. */
			elfcache_file_free(f);
			return same;
		}
	}
	f->debug_name = cs_strdup(debug_name);
	cs_grow(&ctx->files, &ctx->cap_files, ctx->nfiles + 1, sizeof(ctx->files[0]));
	ctx->files[ctx->nfiles++] = f;
	cs_hash_insert(&ctx->files_by_inode, elfcache_inode_hash(&st), f);
	if (f->build_id[0])
		cs_hash_insert(&ctx->files_by_build_id,
				   cs_hash_bytes(f->build_id, strlen(f->build_id), 1), f);
	return f;
}

static bool elfcache_has_suffix(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);
	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* Open the ELF file mapped at [start, end) in pid as path: through /proc/PID/map_files for a
 * deleted file, /proc/PID/root for a live process (containers), else the plain path. */
struct elf_file *elfcache_file_open(struct unwind_ctx *ctx, uint32_t pid, uint64_t start,
					 uint64_t end, const char *path)
{
	char plain[4096], cand[4200];
	bool deleted = elfcache_has_suffix(path, " (deleted)");
	int fd = -1;

	snprintf(plain, sizeof(plain), "%s", path);
	if (deleted)
		plain[strlen(plain) - strlen(" (deleted)")] = 0;
	const char *debug_name = plain;

	if (deleted) {
		snprintf(cand, sizeof(cand), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
		fd = open(cand, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 && pid) {
		snprintf(cand, sizeof(cand), "/proc/%u/root%s", pid, plain);
		fd = open(cand, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			/* Keep the /proc path for debug-file lookups only when the plain path
			 * is another file (the process lives in another mount namespace). */
			struct stat a, b;
			if (fstat(fd, &a) != 0 || stat(plain, &b) != 0 || a.st_dev != b.st_dev ||
			    a.st_ino != b.st_ino)
				debug_name = cand;
		}
	}
	if (fd < 0)
		fd = open(plain, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	return elfcache_file_from_fd(ctx, fd, debug_name);
}

/* This kernel's vDSO, copied from our own process into a memfd so it is an ordinary file for
 * libelf and libdwfl. Every 64-bit process of one kernel maps the same image. */
struct elf_file *elfcache_vdso(struct unwind_ctx *ctx)
{
	if (ctx->vdso_tried)
		return ctx->vdso;
	ctx->vdso_tried = true;

	const unsigned char *image = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!image || memcmp(image, ELFMAG, SELFMAG) != 0 || image[EI_CLASS] != ELFCLASS64)
		return NULL;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;
	size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(image + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > size)
			size = ph[i].p_offset + ph[i].p_filesz;
	if (size > (1 << 20))
		return NULL;

	int fd = memfd_create("csampler-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		cs_warn("memfd_create for the vDSO image: %s; [vdso] frames will not be unwound",
			strerror(errno));
		return NULL;
	}
	if (write(fd, image, size) != (ssize_t)size) {
		cs_warn("writing the vDSO image: %s; [vdso] frames will not be unwound", strerror(errno));
		close(fd);
		return NULL;
	}
	ctx->vdso = elfcache_file_from_fd(ctx, fd, "[vdso]");
	return ctx->vdso;
}

uint64_t elf_file_offset_to_vaddr(const struct elf_file *f, uint64_t offset)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const struct elf_load *l = &f->loads[i];
		if (offset >= l->offset && offset < l->offset + l->filesz)
			return l->vaddr + (offset - l->offset);
	}
	/* Offsets in the page-aligned slack before a segment. */
	for (size_t i = 0; i < f->nloads; i++) {
		const struct elf_load *l = &f->loads[i];
		uint64_t page = l->offset & ~(uint64_t)0xfff;
		if (offset >= page && offset < l->offset)
			return l->vaddr - (l->offset - offset);
	}
	return offset;
}

/* Load bias of f mapped at start from file offset pgoff: the PT_LOAD that the mapping starts in
 * gives vaddr + bias = address. Falls back to start - pgoff (vaddr == offset layouts). */
uint64_t elfcache_file_bias(const struct elf_file *f, uint64_t start, uint64_t pgoff)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const struct elf_load *l = &f->loads[i];
		uint64_t page = l->offset & ~(uint64_t)0xfff;
		if (pgoff >= page && pgoff < l->offset + (l->filesz ? l->filesz : 1))
			return start + (l->offset - pgoff) - l->vaddr;
	}
	return start - pgoff;
}

int elfcache_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct elf_file *f = *userdata;

	if (!f)
		return -1;
	*elfp = elf_begin(f->fd, ELF_C_READ_MMAP, f->elf); /* a counted reference to f->elf */
	if (*elfp && f->debug_name)
		*file_name = strdup(f->debug_name);
	return -1;
}

Dwfl_Module *elfcache_report_file(Dwfl *dwfl, const char *name, struct elf_file *f, uint64_t bias)
{
	Dwfl_Module *mod = dwfl_report_module(dwfl, name, f->low + bias, f->high + bias);
	if (mod) {
		void **userdata;
		dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		*userdata = f;
	}
	return mod;
}

int elfcache_file_symbol(const struct elf_file *f, const char *name, uint64_t *vaddr,
			 uint64_t *size)
{
	Elf_Scn *scn = NULL;

	if (!f->elf)
		return -ENOENT;
	/* .symtab first (it holds local symbols too), then .dynsym: both are searched linearly,
	 * which is fine for the few lookups per file this serves. */
	for (int pass = 0; pass < 2; pass++) {
		Elf64_Word want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
		while ((scn = elf_nextscn(f->elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize)
				continue;
			Elf_Data *data = elf_getdata(scn, NULL);
			if (!data)
				continue;
			size_t n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 0; i < n; i++) {
				GElf_Sym sym;
				if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
				    !sym.st_value)
					continue;
				const char *s = elf_strptr(f->elf, sh.sh_link, sym.st_name);
				if (s && strcmp(s, name) == 0) {
					*vaddr = sym.st_value;
					*size = sym.st_size;
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}

uint64_t elfcache_vaddr_to_offset(const struct elf_file *f, uint64_t vaddr)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const struct elf_load *l = &f->loads[i];
		if (vaddr >= l->vaddr && vaddr < l->vaddr + l->filesz)
			return l->offset + (vaddr - l->vaddr);
	}
	return UINT64_MAX;
}
