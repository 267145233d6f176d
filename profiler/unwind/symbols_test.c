/* symbols_test.c: unit tests of sym_resolve (symbols.c) on the test programs bin/tests/symbols
 * and bin/tests/symbols_cxx (tests/progs/), and on copies of them made here the standard ways:
 * stripped, with a separate debug file found by .gnu_debuglink, with MiniDebugInfo
 * (.gnu_debugdata), and deleted while running. Addresses come from the programs' MARK(id)
 * records (tests/progs/marks.h); expected lines from the CALLSITE comments of their source.
 * Also: /tmp/perf-PID.map names, /proc/kallsyms, libc through its build-id debug file. */
#include "unwind/unwind.h"
#include "unwind/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cs.h"
#include "analysis/profile.h"
#include "base/unit.h"

#define SYM_TEST_PID 0x7ffffff1u /* a pid no process has (pid_max is at most 2^22) */

/* $CSAMPLER_ROOT/REL, or REL next to bin/ of this runner. Returns a malloc'd path. */
static char *sym_test_path(const char *rel)
{
	const char *root = getenv("CSAMPLER_ROOT");
	if (root)
		return cs_asprintf("%s/%s", root, rel);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	UNIT_ASSERT(n > 0);
	exe[n] = 0;
	*strrchr(exe, '/') = 0; /* bin */
	*strrchr(exe, '/') = 0; /* the root */
	return cs_asprintf("%s/%s", exe, rel);
}

__attribute__((format(printf, 1, 2))) static void sym_test_sh(const char *fmt, ...)
{
	va_list ap;
	char cmd[4096];

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char *full = cs_asprintf("cd '%s' && (%s)", unit_tmpdir(), cmd);
	int rc = system(full);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	UNIT_ASSERT(rc == 0);
	free(full);
}

/* The link-time address of MARK(id) in the ELF file path. */
static uint64_t sym_test_mark(const char *path, int id)
{
	int fd = open(path, O_RDONLY);
	UNIT_ASSERT(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	uint64_t found = 0;
	UNIT_ASSERT(elf && elf_getshdrstrndx(elf, &shstrndx) == 0);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, "cs_marks") != 0)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t off = 0; off + 8 <= d->d_size; off += 8) {
			int32_t rel, mid;
			memcpy(&rel, (char *)d->d_buf + off, 4);
			memcpy(&mid, (char *)d->d_buf + off + 4, 4);
			if (mid == id)
				found = sh.sh_addr + off + (uint64_t)(int64_t)rel;
		}
	}
	elf_end(elf);
	close(fd);
	UNIT_ASSERT(found != 0);
	return found;
}

/* Map the executable segment of path into the fake process and return the location of vaddr. */
static struct unwind_loc sym_test_loc(struct unwind_ctx *ctx, uint32_t pid, const char *path,
				      uint64_t vaddr)
{
	int fd = open(path, O_RDONLY);
	UNIT_ASSERT(fd >= 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t phnum;
	struct unwind_loc loc = { .module = UINT32_MAX, .offset = 0 };
	UNIT_ASSERT(elf && elf_getphdrnum(elf, &phnum) == 0);
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		gelf_getphdr(elf, (int)i, &ph);
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		uint64_t pgoff = ph.p_offset & ~0xfffULL;
		uint64_t start = 0x500000000000ULL + (ph.p_vaddr & ~0xfffULL);
		uint64_t len = ((ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffULL) - (ph.p_vaddr & ~0xfffULL);
		UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, pid, start, len, pgoff, PROT_READ | PROT_EXEC, path),
				   0);
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
			loc.offset = vaddr - ph.p_vaddr + ph.p_offset;
	}
	elf_end(elf);
	close(fd);
	for (size_t m = 0; m < unwind_module_count(ctx); m++)
		if (strcmp(unwind_module_get(ctx, (uint32_t)m)->path, path) == 0)
			loc.module = (uint32_t)m;
	UNIT_ASSERT(loc.module != UINT32_MAX && loc.offset != 0);
	return loc;
}

/* The 1-based line of the first line of the source that contains needle. */
static uint32_t sym_test_line_of(const char *src_rel, const char *needle)
{
	char *path = sym_test_path(src_rel);
	FILE *fp = fopen(path, "r");
	char line[1024];
	uint32_t n = 0;

	UNIT_ASSERT(fp != NULL);
	while (fgets(line, sizeof(line), fp)) {
		n++;
		if (strstr(line, needle)) {
			fclose(fp);
			free(path);
			return n;
		}
	}
	UNIT_ASSERT(!"needle not found in the test program's source");
	return 0;
}

static void sym_test_print(const struct sym_frame *f, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  [%d] %s %s:%u flags %#x\n", i, f[i].name, f[i].file ? f[i].file : "-",
			f[i].line, f[i].flags);
}

/* One test's fixture: a fresh context, the test program, and the copy made of it (or NULL). */
struct sym_test {
	struct unwind_ctx *ctx;
	char *bin, *copy;
	struct unwind_loc loc;  /* the last location sym_test_resolve_mark resolved */
};

static void sym_test_open(struct sym_test *t, const char *prog, const char *copy_name)
{
	t->bin = sym_test_path(prog);
	t->copy = copy_name ? cs_asprintf("%s/%s", unit_tmpdir(), copy_name) : NULL;
	UNIT_ASSERT_EQ_INT(unwind_new(&t->ctx), 0);
}

static void sym_test_close(struct sym_test *t)
{
	unwind_free(t->ctx);
	free(t->copy);
	free(t->bin);
}

/* Resolve MARK(mark) of the test program, mapped from file (the program or its copy), into f
 * (8 frames) and print them; the number of frames. */
static int sym_test_resolve_mark(struct sym_test *t, const char *file, int mark,
				 struct sym_frame *f)
{
	t->loc = sym_test_loc(t->ctx, SYM_TEST_PID, file, sym_test_mark(t->bin, mark));
	int n = sym_resolve(t->ctx, t->loc, false, f, 8);
	sym_test_print(f, n);
	return n;
}

static bool sym_test_file_is(const struct sym_frame *f, const char *base)
{
	return f->file && strcmp(cs_basename(f->file), base) == 0;
}

UNIT_TEST(sym_inline_chain)
{
	struct sym_test t;
	struct sym_frame f[8];

	sym_test_open(&t, "bin/tests/symbols", NULL);
	/* One inlined function in its caller. */
	UNIT_ASSERT_EQ_INT(sym_test_resolve_mark(&t, t.bin, 1, f), 2);
	UNIT_ASSERT(strcmp(f[0].name, "sym_inner") == 0 && (f[0].flags & PROFILE_FRAME_INLINED));
	UNIT_ASSERT(strcmp(f[1].name, "sym_outer") == 0 && !(f[1].flags & PROFILE_FRAME_INLINED));
	UNIT_ASSERT(sym_test_file_is(&f[0], "symbols.c") && sym_test_file_is(&f[1], "symbols.c"));
	UNIT_ASSERT_EQ_INT(f[0].line, sym_test_line_of("tests/progs/symbols.c", "MARK(1)"));
	UNIT_ASSERT_EQ_INT(f[1].line, sym_test_line_of("tests/progs/symbols.c", "CALLSITE-1"));

	/* Two levels of inlining. */
	UNIT_ASSERT_EQ_INT(sym_test_resolve_mark(&t, t.bin, 3, f), 3);
	UNIT_ASSERT(strcmp(f[0].name, "sym_deepest") == 0 && (f[0].flags & PROFILE_FRAME_INLINED));
	UNIT_ASSERT(strcmp(f[1].name, "sym_middle") == 0 && (f[1].flags & PROFILE_FRAME_INLINED));
	UNIT_ASSERT(strcmp(f[2].name, "sym_top") == 0 && !(f[2].flags & PROFILE_FRAME_INLINED));
	UNIT_ASSERT_EQ_INT(f[1].line, sym_test_line_of("tests/progs/symbols.c", "CALLSITE-3b"));
	UNIT_ASSERT_EQ_INT(f[2].line, sym_test_line_of("tests/progs/symbols.c", "CALLSITE-3a"));

	/* Cached: the same strings come back; too small a buffer keeps the outermost frames. */
	struct sym_frame g[8];
	UNIT_ASSERT_EQ_INT(sym_resolve(t.ctx, t.loc, false, g, 8), 3);
	UNIT_ASSERT(g[0].name == f[0].name && g[2].file == f[2].file);
	UNIT_ASSERT_EQ_INT(sym_resolve(t.ctx, t.loc, false, g, 1), 1);
	UNIT_ASSERT(strcmp(g[0].name, "sym_top") == 0);
	const struct unwind_module *m = unwind_module_get(t.ctx, t.loc.module);
	UNIT_ASSERT(!(m->flags & (PROFILE_MODULE_NO_SYMBOLS | PROFILE_MODULE_NO_DEBUGINFO |
				  PROFILE_MODULE_NO_CFI)));
	UNIT_ASSERT(strlen(m->build_id) == 40);
	sym_test_close(&t);
}

UNIT_TEST(sym_cxx_demangled)
{
	struct sym_test t;
	struct sym_frame f[8];

	sym_test_open(&t, "bin/tests/symbols_cxx", NULL);
	UNIT_ASSERT_EQ_INT(sym_test_resolve_mark(&t, t.bin, 1, f), 1);
	UNIT_ASSERT(strcmp(f[0].name, "geo::Accumulator<double>::add(double)") == 0);
	UNIT_ASSERT(sym_test_file_is(&f[0], "symbols_cxx.cc"));
	sym_test_close(&t);
}

UNIT_TEST(sym_stripped_is_basename_offset)
{
	struct sym_test t;
	struct sym_frame f[8];

	sym_test_open(&t, "bin/tests/symbols", "prog-stripped");
	sym_test_sh("strip -o prog-stripped '%s'", t.bin);
	UNIT_ASSERT_EQ_INT(sym_test_resolve_mark(&t, t.copy, 2, f), 1);
	char want[64];
	snprintf(want, sizeof(want), "prog-stripped+0x%" PRIx64, t.loc.offset);
	UNIT_ASSERT(strcmp(f[0].name, want) == 0);
	UNIT_ASSERT(f[0].flags & PROFILE_FRAME_UNNAMED);
	/* A return address is named by its own offset too, not offset - 1. */
	int n = sym_resolve(t.ctx, t.loc, true, f, 8);
	UNIT_ASSERT(n == 1 && strcmp(f[0].name, want) == 0);
	const struct unwind_module *m = unwind_module_get(t.ctx, t.loc.module);
	UNIT_ASSERT(m->flags & PROFILE_MODULE_NO_SYMBOLS);
	UNIT_ASSERT(m->flags & PROFILE_MODULE_NO_DEBUGINFO);
	UNIT_ASSERT(!(m->flags & PROFILE_MODULE_NO_CFI));
	/* The entry point is still named _start (from e_entry and its CFI extent), so stacks
	 * of stripped programs can be seen to be complete. */
	int fd = open(t.copy, O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	UNIT_ASSERT(elf && gelf_getehdr(elf, &eh));
	elf_end(elf);
	close(fd);
	struct unwind_loc loc = sym_test_loc(t.ctx, SYM_TEST_PID, t.copy, eh.e_entry);
	UNIT_ASSERT(sym_resolve(t.ctx, loc, false, f, 8) == 1 && strcmp(f[0].name, "_start") == 0);
	loc.offset += 4;
	UNIT_ASSERT(sym_resolve(t.ctx, loc, true, f, 8) == 1 && strcmp(f[0].name, "_start") == 0);
	sym_test_close(&t);
}

UNIT_TEST(sym_debuglink)
{
	struct sym_test t;
	struct sym_frame f[8];

	sym_test_open(&t, "bin/tests/symbols", "prog-dl");
	sym_test_sh("objcopy --only-keep-debug '%s' prog-dl.debug && strip -o prog-dl '%s' && "
		    "objcopy --add-gnu-debuglink=prog-dl.debug prog-dl",
		    t.bin, t.bin);
	struct unwind_loc loc = sym_test_loc(t.ctx, SYM_TEST_PID, t.copy, sym_test_mark(t.bin, 2));
	const struct unwind_module *m = unwind_module_get(t.ctx, loc.module);
	UNIT_ASSERT(m->flags & PROFILE_MODULE_NO_SYMBOLS); /* as far as the file itself goes */
	int n = sym_resolve(t.ctx, loc, false, f, 8);
	sym_test_print(f, n);
	UNIT_ASSERT_EQ_INT(n, 1);
	UNIT_ASSERT(strcmp(f[0].name, "secret_fn") == 0 && f[0].flags == 0);
	UNIT_ASSERT(sym_test_file_is(&f[0], "symbols.c"));
	UNIT_ASSERT_EQ_INT(f[0].line, sym_test_line_of("tests/progs/symbols.c", "MARK(2)"));
	/* Inline chains come from the debug file as well. */
	UNIT_ASSERT_EQ_INT(sym_test_resolve_mark(&t, t.copy, 1, f), 2);
	UNIT_ASSERT(strcmp(f[0].name, "sym_inner") == 0);
	UNIT_ASSERT(!(m->flags & (PROFILE_MODULE_NO_SYMBOLS | PROFILE_MODULE_NO_DEBUGINFO)));
	sym_test_close(&t);
}

UNIT_TEST(sym_minidebuginfo)
{
	struct sym_test t;
	struct sym_frame f[8];

	sym_test_open(&t, "bin/tests/symbols", "prog-mini");
	/* The recipe of Fedora's find-debuginfo: function symbols that .dynsym lacks, in an
	 * xz-compressed ELF file stored in .gnu_debugdata of the stripped binary. */
	sym_test_sh("nm -D '%s' --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms && "
		    "nm '%s' --format=posix --defined-only | "
		    "awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"D\") print $1 }' | sort > funcsyms && "
		    "comm -13 dynsyms funcsyms > keep_symbols && "
		    "objcopy --only-keep-debug '%s' full.debug && "
		    "objcopy -S --remove-section .gdb_index --remove-section .comment "
		    "--keep-symbols=keep_symbols full.debug mini_debuginfo && "
		    "xz mini_debuginfo && strip -o prog-mini '%s' && "
		    "objcopy --add-section .gnu_debugdata=mini_debuginfo.xz prog-mini && rm full.debug",
		    t.bin, t.bin, t.bin, t.bin);
	UNIT_ASSERT_EQ_INT(sym_test_resolve_mark(&t, t.copy, 2, f), 1);
	UNIT_ASSERT(strcmp(f[0].name, "secret_fn") == 0 && f[0].flags == 0);
	UNIT_ASSERT(f[0].file == NULL); /* symbols only: no DWARF */
	const struct unwind_module *m = unwind_module_get(t.ctx, t.loc.module);
	UNIT_ASSERT(!(m->flags & PROFILE_MODULE_NO_SYMBOLS));
	UNIT_ASSERT(m->flags & PROFILE_MODULE_NO_DEBUGINFO);
	sym_test_close(&t);
}

/* A running program whose file is deleted: opened through /proc/PID/map_files, and still named
 * after the process exited. */
UNIT_TEST(sym_deleted_while_running)
{
	struct unwind_ctx *ctx;
	struct sym_frame f[8];
	char *bin = sym_test_path("bin/tests/symbols");
	char *copy = cs_asprintf("%s/prog-gone", unit_tmpdir());
	char maps[64], line[4096];

	sym_test_sh("cp '%s' prog-gone", bin);
	pid_t pid = fork();
	UNIT_ASSERT(pid >= 0);
	if (pid == 0) {
		execl(copy, copy, "30", (char *)NULL);
		_exit(127);
	}
	/* Wait until the program's text is mapped: /proc/PID/exe names the new file before the
	 * kernel's ELF loader has mapped its segments (a loaded machine showed that window), so
	 * look for the path in /proc/PID/maps. Up to 20 s. */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	bool mapped = false;
	for (int i = 0; i < 2000 && !mapped; i++) {
		FILE *mf = fopen(maps, "r");
		while (mf && fgets(line, sizeof(line), mf))
			if (strstr(line, copy) && strstr(line, " r-xp ")) {
				mapped = true;
				break;
			}
		if (mf)
			fclose(mf);
		if (!mapped)
			usleep(10000);
	}
	UNIT_ASSERT(mapped);
	UNIT_ASSERT(unlink(copy) == 0);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	int err = unwind_load_proc_maps(ctx, (uint32_t)pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	UNIT_ASSERT_EQ_INT(err, 0);

	char *deleted = cs_asprintf("%s (deleted)", copy);
	uint32_t module = UINT32_MAX;
	for (size_t m = 0; m < unwind_module_count(ctx); m++)
		if (strcmp(unwind_module_get(ctx, (uint32_t)m)->path, deleted) == 0)
			module = (uint32_t)m;
	UNIT_ASSERT(module != UINT32_MAX);
	/* The file offset of MARK(2): the loader maps the text at its file offset here. */
	struct unwind_ctx *probe;
	UNIT_ASSERT_EQ_INT(unwind_new(&probe), 0);
	struct unwind_loc ref = sym_test_loc(probe, SYM_TEST_PID, bin, sym_test_mark(bin, 2));
	unwind_free(probe);
	struct unwind_loc loc = { .module = module, .offset = ref.offset };
	int n = sym_resolve(ctx, loc, false, f, 8);
	sym_test_print(f, n);
	UNIT_ASSERT(n == 1 && strcmp(f[0].name, "secret_fn") == 0);
	UNIT_ASSERT(strlen(unwind_module_get(ctx, module)->build_id) == 40);
	unwind_free(ctx);
	free(deleted);
	free(copy);
	free(bin);
}

UNIT_TEST(sym_perf_map_jit)
{
	struct unwind_ctx *ctx;
	struct sym_frame f[8];
	uint32_t pid = (uint32_t)getpid();
	char *map = cs_asprintf("/tmp/perf-%u.map", pid);
	FILE *fp = fopen(map, "w");

	UNIT_ASSERT(fp != NULL);
	fprintf(fp, "7f0000001000 100 jit_alpha\n7f0000001100 80 _ZN3foo3barEv\n"
		    "0x7f0000001200 0x40 _ZN4core3fmt5write17h0123456789abcdefE\n");
	fclose(fp);
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_mmap(ctx, pid, 0x7f0000000000ULL, 0x10000, 0,
				       PROT_READ | PROT_EXEC, "//anon"), 0);
	uint64_t regs_ip = 0x7f0000001010ULL;
	struct unwind_sample s = { .pid = pid, .tid = pid, .regs_mask = 1ULL << 8 };
	s.regs[8] = regs_ip;
	struct unwind_loc locs[4];
	uint32_t flags;
	int n = unwind_sample(ctx, &s, locs, 4, &flags);
	UNIT_ASSERT(n == 1 && locs[0].offset == regs_ip);
	const struct unwind_module *m = unwind_module_get(ctx, locs[0].module);
	UNIT_ASSERT(m->flags & PROFILE_MODULE_JIT);

	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, locs[0], false, f, 8), 1);
	UNIT_ASSERT(strcmp(f[0].name, "jit_alpha") == 0 && f[0].flags == PROFILE_FRAME_JIT);
	struct unwind_loc loc = { .module = locs[0].module, .offset = 0x7f0000001120ULL };
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, loc, true, f, 8), 1);
	UNIT_ASSERT(strcmp(f[0].name, "foo::bar()") == 0);
	/* Rust's legacy mangling: demangled, without the hash. */
	loc.offset = 0x7f0000001210ULL;
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, loc, false, f, 8), 1);
	UNIT_ASSERT(strcmp(f[0].name, "core::fmt::write") == 0);
	/* The JIT appends as it compiles: a later entry is found. */
	fp = fopen(map, "a");
	fprintf(fp, "7f0000002000 40 jit_later\n");
	fclose(fp);
	loc.offset = 0x7f0000002010ULL;
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, loc, false, f, 8), 1);
	UNIT_ASSERT(strcmp(f[0].name, "jit_later") == 0);
	loc.offset = 0x7f0000005000ULL;
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, loc, false, f, 8), 1);
	UNIT_ASSERT(strcmp(f[0].name, "//anon+0x7f0000005000") == 0);
	UNIT_ASSERT(f[0].flags & PROFILE_FRAME_UNNAMED);
	unlink(map);
	free(map);
	unwind_free(ctx);
}

UNIT_TEST(sym_kallsyms)
{
	FILE *fp = fopen("/proc/kallsyms", "r");
	char line[512], name[256], prev_name[256] = "";
	uint64_t prev = 0, target = 0;

	UNIT_ASSERT(fp != NULL);
	/* A text symbol followed by one at a higher address: its address + 1 is inside it. */
	while (fgets(line, sizeof(line), fp)) {
		char type;
		uint64_t addr;
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || addr == 0)
			continue;
		if (prev && addr > prev + 1 && strcmp(prev_name, "schedule") == 0) {
			target = prev;
			break;
		}
		if (type == 'T' || type == 't') {
			prev = addr;
			snprintf(prev_name, sizeof(prev_name), "%s", name);
		} else {
			prev = 0;
		}
	}
	fclose(fp);
	if (!target) {
		printf("SKIPPED: unit/sym_kallsyms: /proc/kallsyms shows no address for schedule "
		       "(kernel.kptr_restrict; run as root)\n");
		return;
	}
	struct unwind_ctx *ctx;
	struct unwind_loc locs[4];
	struct sym_frame f[4];
	uint32_t flags;
	uint64_t kips[2] = { target + 1, target + 1 };
	struct unwind_sample s = { .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
				   .kernel_ips = kips, .nkernel_ips = 2 };
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, locs, 4, &flags), 2);
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, locs[0], false, f, 4), 1);
	UNIT_ASSERT(strcmp(f[0].name, "schedule") == 0 && f[0].flags == PROFILE_FRAME_KERNEL);
	UNIT_ASSERT_EQ_INT(sym_resolve(ctx, locs[1], true, f, 4), 1); /* target + 0: same symbol */
	UNIT_ASSERT(strcmp(f[0].name, "schedule") == 0);
	unwind_free(ctx);
}

/* libc as mapped in this process; with libc6-dbg installed its DWARF comes from
 * /usr/lib/debug/.build-id/xx/rest.debug. */
UNIT_TEST(sym_libc_build_id_debug_file)
{
	struct unwind_ctx *ctx;
	struct unwind_loc locs[4];
	struct sym_frame f[8];
	uint32_t flags;
	uint32_t pid = (uint32_t)getpid();
	struct unwind_sample s = { .pid = pid, .tid = pid, .regs_mask = 1ULL << 8 };

	s.regs[8] = (uint64_t)(uintptr_t)&getppid; /* the canonical address: libc's own */
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, pid), 0);
	UNIT_ASSERT_EQ_INT(unwind_sample(ctx, &s, locs, 4, &flags), 1);
	int n = sym_resolve(ctx, locs[0], false, f, 8);
	sym_test_print(f, n);
	UNIT_ASSERT(n >= 1 && strstr(f[n - 1].name, "getppid") != NULL);
	const struct unwind_module *m = unwind_module_get(ctx, locs[0].module);
	UNIT_ASSERT(strstr(m->path, "libc.so") != NULL && strlen(m->build_id) == 40);
	char *debug = cs_asprintf("/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id,
				  m->build_id + 2);
	if (access(debug, R_OK) == 0) {
		UNIT_ASSERT(f[n - 1].file != NULL && f[n - 1].line > 0);
		UNIT_ASSERT(!(m->flags & PROFILE_MODULE_NO_DEBUGINFO));
	} else {
		printf("SKIPPED: unit/sym_libc_build_id_debug_file: %s is absent (install libc6-dbg)\n",
		       debug);
	}
	free(debug);
	unwind_free(ctx);
}

/* Not a timing assertion: prints how fast distinct locations are named (cold caches), over
 * libc's code (with its DWARF when libc6-dbg is installed: inline chains and lines). */
UNIT_TEST(sym_bench_distinct_locations)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	char line[1024], path[512] = "";
	uint64_t start = 0, end = 0, pgoff = 0;

	UNIT_ASSERT(fp != NULL);
	while (fgets(line, sizeof(line), fp)) {
		char perms[8];
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %511s", &start, &end,
			   perms, &pgoff, path) == 5 &&
		    perms[2] == 'x' && strstr(path, "/libc.so"))
			break;
		path[0] = 0;
	}
	fclose(fp);
	UNIT_ASSERT(path[0] != 0);

	struct unwind_ctx *ctx;
	struct sym_frame f[32];
	uint32_t pid = (uint32_t)getpid();
	UNIT_ASSERT_EQ_INT(unwind_new(&ctx), 0);
	UNIT_ASSERT_EQ_INT(unwind_load_proc_maps(ctx, pid), 0);
	uint32_t module = UINT32_MAX;
	for (size_t m = 0; m < unwind_module_count(ctx); m++)
		if (strcmp(unwind_module_get(ctx, (uint32_t)m)->path, path) == 0)
			module = (uint32_t)m;
	UNIT_ASSERT(module != UINT32_MAX);

	const uint64_t step = 61; /* odd: lands anywhere in an instruction */
	size_t count = 0, frames = 0, named = 0, inlined = 0;
	uint64_t t0 = cs_monotonic_ns();
	for (uint64_t off = pgoff; off < pgoff + (end - start) && count < 20000; off += step) {
		struct unwind_loc loc = { .module = module, .offset = off };
		int n = sym_resolve(ctx, loc, true, f, 32);
		UNIT_ASSERT(n >= 1);
		count++;
		frames += (size_t)n;
		named += !(f[n - 1].flags & PROFILE_FRAME_UNNAMED);
		inlined += n > 1;
	}
	uint64_t t1 = cs_monotonic_ns();
	double us = (double)(t1 - t0) / 1e3 / (double)count;
	printf("symbolize bench: %zu distinct libc locations, %.1f us each (%.0f/s), %.2f frames each, "
	       "%zu named, %zu with inline frames\n",
	       count, us, 1e6 / us, (double)frames / (double)count, named, inlined);
	UNIT_ASSERT(named > count * 9 / 10);
	unwind_free(ctx);
}
