/* prewarm.c: the symbolizer's one-time work for a command about to be launched, done before it
 * runs (prewarm.h). Naming the first location in a file costs its symbol table, its debug file
 * and, for Debian's libc, 0.1 s of CPU decompressing DWARF sections; the first kernel frame
 * costs reading /proc/kallsyms (0.05-0.1 s). Done while the command runs, as before, that CPU was
 * taken from it: on a machine whose CPUs the command keeps busy, its run was that much slower.
 * Here two threads do it while the sampler opens (the BPF verifier, perf events), one the
 * kernel's symbols and one the files, and the command is let go once all three are done.
 *
 * The files: the command's executable (found on PATH as execvp finds it; a script's
 * interpreter, through `#!/usr/bin/env NAME` too), its dynamic loader (PT_INTERP), and each
 * library it needs (DT_NEEDED) that the recorder itself has loaded under the same name: the
 * usual libc, libm, libz. A guess about a library only costs the time before the launch:
 * samples are named by the files they were taken in, whatever was prepared. The PATH search
 * is written by hand: libc has no call that says which file execvp would run. */
#include "record/prewarm.h"

#include "base/cs.h"
#include "unwind/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct prewarm {
	struct unwind_ctx *ctx;
	pthread_t files_thread, kernel_thread;
	bool files_running, kernel_running;
	struct prewarm_files files;
};

static void prewarm_add(struct prewarm_files *l, const char *path)
{
	if (l->n == PREWARM_MAX_FILES)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->paths[i], path))
			return;
	l->paths[l->n++] = cs_strdup(path);
}

/* name as execvp finds it: itself when it holds a slash, else the first executable regular
 * file of that name on PATH. Returns a malloc'd path or NULL. */
static char *prewarm_find(const char *name)
{
	struct stat st;

	if (!*name)
		return NULL;
	if (strchr(name, '/'))
		return stat(name, &st) == 0 && S_ISREG(st.st_mode) ? cs_strdup(name) : NULL;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *dir = path;; dir++) {
		const char *end = strchrnul(dir, ':');
		char *cand = cs_asprintf("%.*s%s%s", (int)(end - dir), dir, end > dir ? "/" : "", name);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		if (!*end)
			return NULL;
		dir = end;
	}
}

/* A script's interpreter ("#!/bin/sh", "#!/usr/bin/env python3"): a malloc'd path, or NULL when
 * path is not a script. */
static char *prewarm_interpreter(const char *path)
{
	char line[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return NULL;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	char *save = NULL, *interp = strtok_r(line + 2, " \t", &save);
	char *arg = interp ? strtok_r(NULL, " \t", &save) : NULL;
	if (!interp)
		return NULL;
	const char *base = strrchr(interp, '/');
	if (arg && *arg != '-' && !strcmp(base ? base + 1 : interp, "env"))
		return prewarm_find(arg);
	return prewarm_find(interp);
}

struct prewarm_loaded {
	struct prewarm_files *l;
	const char *soname;
};

/* dl_iterate_phdr: the recorder's own library named like arg->soname, if loaded. */
static int prewarm_own_library(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct prewarm_loaded *l = arg;
	(void)size;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	if (!base || strcmp(base + 1, l->soname))
		return 0;
	prewarm_add(l->l, info->dlpi_name);
	return 1;
}

/* The dynamic loader and needed libraries of the ELF executable at path. */
static void prewarm_add_dependencies(struct prewarm_files *l, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t nph = 0;
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph))
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		char interp[512];
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_INTERP ||
		    ph.p_filesz == 0 || ph.p_filesz >= sizeof(interp) ||
		    pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			continue;
		interp[ph.p_filesz] = 0;
		if (strlen(interp) + 1 == ph.p_filesz)
			prewarm_add(l, interp);
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			const char *name = dyn.d_tag == DT_NEEDED ?
					   elf_strptr(e, sh.sh_link, dyn.d_un.d_val) : NULL;
			struct prewarm_loaded own = { l, name };
			if (name && !strchr(name, '/'))
				dl_iterate_phdr(prewarm_own_library, &own);
		}
	}
out:
	if (e)
		elf_end(e);
	close(fd);
}

bool prewarm_kernel_wanted(void)
{
	char level = '0';
	int fd = open("/proc/sys/kernel/kptr_restrict", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &level, 1) != 1)
			level = '0';
		close(fd);
	}
	return geteuid() == 0 && level < '2';
}

static void *prewarm_files_main(void *arg)
{
	struct prewarm *p = arg;
	sym_prepare_files(p->ctx, (const char *const *)p->files.paths, p->files.n);
	return NULL;
}

static void *prewarm_kernel_main(void *arg)
{
	struct prewarm *p = arg;
	sym_prepare_kernel(p->ctx);
	return NULL;
}

void prewarm_files(const char *command, struct prewarm_files *out)
{
	out->n = 0;
	char *exe = prewarm_find(command);
	char *interp = exe ? prewarm_interpreter(exe) : NULL;
	if (interp) {
		free(exe);
		exe = interp;
	}
	if (exe) {
		prewarm_add(out, exe);
		elf_version(EV_CURRENT);
		prewarm_add_dependencies(out, exe);
		free(exe);
	}
}

void prewarm_files_free(struct prewarm_files *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->paths[i]);
	l->n = 0;
}

int prewarm_start(struct prewarm **out, struct unwind_ctx *ctx, const char *command, bool kernel)
{
	struct prewarm *p = cs_calloc(1, sizeof(*p));
	p->ctx = ctx;
	prewarm_files(command, &p->files);
	/* two threads (the kernel's symbols and the files touch apart parts of ctx), every signal
	 * blocked: the recorder's handlers are for its main thread */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&p->files_thread, NULL, prewarm_files_main, p);
	p->files_running = !err;
	if (!err && kernel) {
		err = pthread_create(&p->kernel_thread, NULL, prewarm_kernel_main, p);
		p->kernel_running = !err;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*out = p;
	return -err;
}

void prewarm_finish(struct prewarm *p)
{
	if (!p)
		return;
	if (p->files_running)
		pthread_join(p->files_thread, NULL);
	if (p->kernel_running)
		pthread_join(p->kernel_thread, NULL);
	prewarm_files_free(&p->files);
	free(p);
}
