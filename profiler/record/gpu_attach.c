/* gpu_attach.c: loading the GPU library into a running process and calling its entry points
 * there, as a debugger's "call" does (gpu_attach.h).
 *
 * A call: seize one thread (PTRACE_SEIZE, PTRACE_INTERRUPT), save its registers and extended
 * state (PTRACE_GETREGSET NT_X86_XSTATE: x87, SSE, AVX), write the arguments' bytes on its
 * stack below the 128-byte red zone, set rdi/rsi/rdx, a 16-byte aligned rsp and a return
 * address of 0, rip = the function, orig_rax = -1 (no system call restart under our call),
 * and continue it: the function's return faults at pc 0 (SIGSEGV, never delivered), rax is the
 * result. Then the saved state goes back and the thread is let go where it was; a system call
 * the stop interrupted is restarted as the kernel would have (sampler_ptrace_restart_syscall
 * for the ones that return EINTR). A signal the thread got meanwhile is delivered to it.
 *
 * Addresses come from /proc/PID/maps and the files' own dynamic symbols (libelf): dlopen in
 * the process' libc.so.6 (glibc 2.34+; __libc_dlopen_mode before), the entry points in the
 * library once it is mapped. The thread chosen is preferably one blocked in a system call
 * that holds no lock of the program's (sleep, poll, read ...): a thread stopped inside malloc
 * or the dynamic loader would deadlock dlopen. */
#include "record/gpu_attach.h"

#include "base/cs.h"
#include "inject/attach.h"
#include "sampler/backend.h"
#include "unwind/python.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

#define GA_CALL_TIMEOUT_MS 10000   /* dlopen of CUPTI, the first subscription: seconds */
#define GA_STOP_TIMEOUT_MS 3000
#define GA_XSTATE_MAX 16384
#define GA_SAFE_TRIES 200          /* stops, 2 ms apart, looking for a safe point */
#define GA_RTLD_NOW 0x2
#define GA_RTLD_GLOBAL 0x100

__attribute__((format(printf, 3, 4)))
static void ga_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* ---- the process' mappings ---- */

struct ga_map {
	uint64_t start, end, pgoff, inode;
	dev_t dev;
	char perms[8];
	char *path;
};

struct ga_maps {
	struct ga_map *v;
	size_t n;
};

static void ga_maps_free(struct ga_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Returns 0, or -ESRCH when the process is gone (-errno otherwise). */
static int ga_maps_read(pid_t pid, struct ga_maps *m)
{
	char path[64], line[4096 + 128];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	size_t cap = 0;
	m->v = NULL;
	m->n = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, inode;
		unsigned maj, min;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
			   &min, &inode, &pos) < 7)
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (m->n == cap) {
			cap = cap ? cap * 2 : 64;
			m->v = cs_realloc(m->v, cap * sizeof(*m->v));
		}
		struct ga_map *e = &m->v[m->n++];
		*e = (struct ga_map){ start, end, off, inode, makedev(maj, min), "", cs_strdup(p) };
		snprintf(e->perms, sizeof(e->perms), "%s", perms);
	}
	fclose(f);
	if (!m->n) {
		ga_maps_free(m);
		return -ESRCH;   /* a zombie has no mappings */
	}
	return 0;
}

static const char *ga_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static const struct ga_map *ga_find_lib(const struct ga_maps *m, const char *prefix)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].path[0] == '/' && !strncmp(ga_base(m->v[i].path), prefix, strlen(prefix)))
			return &m->v[i];
	return NULL;
}

/* The process' address of a file offset of the file mapped as `like` (same device, inode). */
static uint64_t ga_addr_of(const struct ga_maps *m, const struct ga_map *like, uint64_t off)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct ga_map *e = &m->v[i];
		if (e->inode == like->inode && e->dev == like->dev && off >= e->pgoff &&
		    off < e->pgoff + (e->end - e->start))
			return e->start + (off - e->pgoff);
	}
	return 0;
}

/* ---- symbols of a file (dynamic symbol table) ---- */

/* name's definition in the dynamic symbol table of path, and where the file's segments put
 * it: the default version when several. */
struct ga_elf_def {
	uint64_t value, size;      /* st_value, st_size */
	uint64_t file_offset;      /* where value's bytes are in the file; UINT64_MAX: past them
				    * (.bss) */
	uint64_t first_load;       /* the lowest PT_LOAD address, page-aligned */
};

/* The defined dynamic symbol name of elf, the default version preferred: 0 or -ENOENT. */
static int ga_elf_dynsym(Elf *elf, const char *name, struct ga_elf_def *d)
{
	Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
	GElf_Shdr sh, dsh = { 0 };
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn, dsh = sh;
		else if (sh.sh_type == SHT_GNU_versym)
			versym = scn;
	}
	Elf_Data *data = dynsym ? elf_getdata(dynsym, NULL) : NULL;
	Elf_Data *vdata = versym ? elf_getdata(versym, NULL) : NULL;
	int found = 0;   /* 1: a hidden (non-default) version, 2: the default one */
	for (size_t i = 0; data && dsh.sh_entsize && i < dsh.sh_size / dsh.sh_entsize; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		const char *n = elf_strptr(elf, dsh.sh_link, sym.st_name);
		if (!n || strcmp(n, name))
			continue;
		GElf_Versym vs = 0;
		int rank = 2;
		if (vdata && gelf_getversym(vdata, (int)i, &vs) && (vs & 0x8000))
			rank = 1;
		if (rank > found) {
			found = rank;
			d->value = sym.st_value;
			d->size = sym.st_size;
		}
	}
	return found ? 0 : -ENOENT;
}

/* name's definition in path (struct ga_elf_def). Returns 0 or -ENOENT / -errno. */
static int ga_elf_lookup(const char *path, const char *name, struct ga_elf_def *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	*d = (struct ga_elf_def){ .file_offset = UINT64_MAX, .first_load = UINT64_MAX };
	int ret = elf ? ga_elf_dynsym(elf, name, d) : -ENOENT;
	size_t nph = 0;
	if (!ret && elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (ph.p_vaddr < d->first_load)
				d->first_load = ph.p_vaddr &
					~(uint64_t)(ph.p_align > 1 ? ph.p_align - 1 : 0);
			if (d->file_offset == UINT64_MAX && d->value >= ph.p_vaddr &&
			    d->value < ph.p_vaddr + ph.p_filesz)
				d->file_offset = d->value - ph.p_vaddr + ph.p_offset;
		}
	}
	if (!ret && d->first_load == UINT64_MAX)
		ret = -ENOENT;
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* The file offset of name's definition (the default version when several), and its size.
 * Returns 0 or -ENOENT / -errno. */
static int ga_elf_sym(const char *path, const char *name, uint64_t *off, uint64_t *size)
{
	struct ga_elf_def d;
	int ret = ga_elf_lookup(path, name, &d);
	if (!ret && d.file_offset == UINT64_MAX)
		ret = -ENOENT;
	if (!ret) {
		*off = d.file_offset;
		*size = d.size;
	}
	return ret;
}

/* The path to open a file the process mapped: through its root (another mount namespace). */
static char *ga_proc_path(pid_t pid, const char *path)
{
	char *p = cs_asprintf("/proc/%d/root%s", (int)pid, path);
	if (access(p, R_OK) == 0)
		return p;
	free(p);
	return cs_strdup(path);
}

/* The library's version string, read from the file itself. */
static int ga_file_version(const char *lib, char *buf, size_t len)
{
	uint64_t off = 0, size = 0;
	int ret = ga_elf_sym(lib, GPU_ATTACH_SYM_VERSION, &off, &size);
	if (ret)
		return ret;
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t want = size && size < len ? (size_t)size : len - 1;
	ssize_t n = pread(fd, buf, want, (off_t)off);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n < (ssize_t)len ? n : (ssize_t)len - 1] = 0;
	return 0;
}

/* ---- calls in a stopped thread ---- */

struct ga_thread {
	pid_t pid, tid;
	struct user_regs_struct saved;
	uint8_t xstate[GA_XSTATE_MAX];
	size_t xlen;                /* 0: the FP registers are in fp instead */
	struct user_fpregs_struct fp;
	int pending_sig;            /* a signal that stopped it first: delivered when let go */
	bool seized, stopped;
};

/* Wait for tid's next report, at most ms. Returns 0, -ESRCH (gone), -ETIMEDOUT. */
static int ga_wait(pid_t tid, int *status, int ms)
{
	uint64_t give_up = cs_monotonic_ns() + (uint64_t)ms * 1000000ull;
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status))
				return -ESRCH;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return errno == ECHILD ? -ESRCH : -errno;
		if (cs_monotonic_ns() > give_up)
			return -ETIMEDOUT;
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
}

/* System calls in which a thread holds no lock of the program's own making. */
static bool ga_safe_syscall(long nr)
{
	switch (nr) {
	case 0:   /* read */
	case 7:   /* poll */
	case 23:  /* select */
	case 34:  /* pause */
	case 35:  /* nanosleep */
	case 43:  /* accept */
	case 45:  /* recvfrom */
	case 47:  /* recvmsg */
	case 61:  /* wait4 */
	case 128: /* rt_sigtimedwait */
	case 230: /* clock_nanosleep */
	case 232: /* epoll_wait */
	case 247: /* waitid */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 288: /* accept4 */
	case 441: /* epoll_pwait2 */
		return true;
	default:
		return false;
	}
}

/* The thread to borrow: the main thread when it waits in a safe system call, else the first
 * thread that does, else the main thread. */
static pid_t ga_pick_thread(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	pid_t pick = 0;
	if (!d)
		return pid;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t)atoi(de->d_name);
		char spath[96], buf[256];
		snprintf(spath, sizeof(spath), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
		if (cs_read_small_file(spath, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9')
			continue;
		if (!ga_safe_syscall(strtol(buf, NULL, 10)))
			continue;
		if (tid == pid || !pick)
			pick = tid;
		if (tid == pid)
			break;
	}
	closedir(d);
	return pick ? pick : pid;
}

/* Whether the process has exited (gone, or a zombie its parent has not reaped: ptrace calls
 * it EPERM). */
static bool ga_gone(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cs_read_small_file(path, buf, sizeof(buf)) <= 0)
		return true;
	const char *paren = strrchr(buf, ')');
	return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

static const char *ga_eperm_hint(void)
{
	static char hint[320];
	long scope = cs_read_long_file("/proc/sys/kernel/yama/ptrace_scope", -1);
	if (scope >= 1)
		snprintf(hint, sizeof(hint),
			 "kernel.yama.ptrace_scope is %ld: run csampler as root (or with "
			 "CAP_SYS_PTRACE), or 'sysctl kernel.yama.ptrace_scope=0'", scope);
	else
		snprintf(hint, sizeof(hint),
			 "another tracer (gdb, strace) holds it, or it belongs to another user or is "
			 "not dumpable, which needs CAP_SYS_PTRACE (%s)",
			 scope == 0 ? "kernel.yama.ptrace_scope is 0" : "no Yama ptrace_scope here");
	return hint;
}

/* Whether a thread stopped with these registers may be borrowed: inside a system call, or
 * running code outside libc, the dynamic loader, CUDA, CUPTI and our library (whose locks
 * dlopen, CUPTI or the attach itself may need; a thread stopped holding one would wait for
 * itself). */
static bool ga_safe_point(const struct user_regs_struct *r, const struct ga_maps *m)
{
	static const char *const held[] = { "libc.so", "libc-2.", "ld-linux", "libpthread",
					    "libcuda.so", "libcupti.so", "libcsampler-cupti.so" };
	if ((long long)r->orig_rax >= 0 || !m)
		return true;
	for (size_t i = 0; i < m->n; i++) {
		const struct ga_map *e = &m->v[i];
		if (r->rip < e->start || r->rip >= e->end)
			continue;
		for (size_t k = 0; k < sizeof(held) / sizeof(held[0]); k++)
			if (!strncmp(ga_base(e->path), held[k], strlen(held[k])))
				return false;
		return true;
	}
	return true;
}

/* PTRACE_INTERRUPT the seized thread and wait for that stop. */
static int ga_interrupt(struct ga_thread *t, char *why, size_t whylen)
{
	if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0) {
		int e = errno;
		ga_why(why, whylen, e == ESRCH ? "the process exited during the attach" :
		       "ptrace(PTRACE_INTERRUPT): %s", strerror(e));
		return -e;
	}
	for (;;) {
		int st, ret = ga_wait(t->tid, &st, GA_STOP_TIMEOUT_MS);
		if (ret == -ESRCH) {
			t->seized = false;
			ga_why(why, whylen, "the process exited during the attach");
			return ret;
		}
		if (ret) {
			ga_why(why, whylen, "thread %d did not stop within %d ms (in the kernel: "
			       "uninterruptible I/O?)", (int)t->tid, GA_STOP_TIMEOUT_MS);
			return ret;
		}
		int sig = WSTOPSIG(st), event = st >> 16;
		if (event == PTRACE_EVENT_STOP) {
			if (sig == SIGTRAP)
				return 0;   /* our interrupt */
			ga_why(why, whylen, "the process is stopped (%s): continue it (kill -CONT %d) "
			       "and attach again", strsignal(sig), (int)t->pid);
			return -EAGAIN;
		}
		/* a signal on its way to the thread: delivered when we let it go. Its stop took our
		 * interrupt (the kernel clears a pending one at any trap): asked again, or we would
		 * wait for a stop that never comes */
		if (!t->pending_sig)
			t->pending_sig = sig;
		else
			syscall(SYS_tgkill, t->pid, t->tid, sig);
		ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
		ptrace(PTRACE_CONT, t->tid, NULL, NULL);
	}
}

/* Seize tid and bring it to a stop in which it can be borrowed (ga_safe_point; after
 * GA_SAFE_TRIES stops that were not, the last one is taken). */
static int ga_stop(struct ga_thread *t, const struct ga_maps *m, char *why, size_t whylen)
{
	if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0) {
		int e = errno;
		if (e == EPERM && ga_gone(t->pid))
			e = ESRCH;
		if (e == ESRCH)
			ga_why(why, whylen, "the process exited during the attach");
		else if (e == EPERM || e == EACCES)
			ga_why(why, whylen, "ptrace(PTRACE_SEIZE, %d): %s: %s", (int)t->tid,
			       strerror(e), ga_eperm_hint());
		else
			ga_why(why, whylen, "ptrace(PTRACE_SEIZE, %d): %s", (int)t->tid, strerror(e));
		return -e;
	}
	t->seized = true;
	for (int tries = 0;; tries++) {
		int ret = ga_interrupt(t, why, whylen);
		if (ret)
			return ret;
		if (ptrace(PTRACE_GETREGS, t->tid, NULL, &t->saved) < 0) {
			int e = errno;
			ga_why(why, whylen, "ptrace(PTRACE_GETREGS): %s", strerror(e));
			return -e;
		}
		if (ga_safe_point(&t->saved, m) || tries + 1 >= GA_SAFE_TRIES)
			break;
		/* inside libc or CUDA: let it run a little and stop it again */
		ptrace(PTRACE_CONT, t->tid, NULL, NULL);
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	t->stopped = true;
	struct iovec iov = { t->xstate, sizeof(t->xstate) };
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		t->xlen = iov.iov_len;
	} else if (ptrace(PTRACE_GETFPREGS, t->tid, NULL, &t->fp) < 0) {
		int e = errno;
		ga_why(why, whylen, "ptrace(PTRACE_GETFPREGS): %s", strerror(e));
		return -e;
	}
	return 0;
}

/* Put the thread back as it was and let it go. */
static void ga_release(struct ga_thread *t)
{
	if (!t->seized)
		return;
	if (t->stopped && t->saved.rsp) {
		if (t->xlen) {
			struct iovec iov = { t->xstate, t->xlen };
			ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov);
		} else {
			ptrace(PTRACE_SETFPREGS, t->tid, NULL, &t->fp);
		}
		if (!sampler_ptrace_restart_syscall(t->pid, t->tid, &t->saved))
			ptrace(PTRACE_SETREGS, t->tid, NULL, &t->saved);
	}
	ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->pending_sig);
	t->seized = t->stopped = false;
}

static int ga_write_mem(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)(uintptr_t)addr, len };
	if (process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pwrite(fd, buf, len, (off_t)addr);
	int e = errno;
	close(fd);
	return n == (ssize_t)len ? 0 : -(n < 0 ? e : EIO);
}

static int ga_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EIO;
}

/* Call fn(args...) in the stopped thread. data (len bytes) goes on its stack first; an
 * argument with bit 63 set in data_args is data's address plus its value. *data_at: where
 * data went (to read results back). Returns 0 with *ret = rax, or -errno with why. */
static int ga_call(struct ga_thread *t, uint64_t fn, const uint64_t *args, int nargs,
		   unsigned data_args, const void *data, size_t len, uint64_t *data_at,
		   uint64_t *ret, const char *what, char *why, size_t whylen)
{
	struct user_regs_struct r = t->saved;
	uint64_t at = (t->saved.rsp - 256 - len) & ~(uint64_t)15;
	if (len && ga_write_mem(t->pid, at, data, len)) {
		ga_why(why, whylen, "cannot write the arguments of %s on the stack of thread %d",
		       what, (int)t->tid);
		return -EFAULT;
	}
	uint64_t zero = 0, sp = at - 8;   /* at is 16-aligned: entry sees rsp + 8 aligned */
	if (ga_write_mem(t->pid, sp, &zero, sizeof(zero))) {
		ga_why(why, whylen, "cannot write on the stack of thread %d", (int)t->tid);
		return -EFAULT;
	}
	unsigned long long *regs_args[] = { &r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9 };
	for (int i = 0; i < nargs && i < 6; i++)
		*regs_args[i] = args[i] + ((data_args >> i) & 1 ? at : 0);
	r.rip = fn;
	r.rsp = sp;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1;   /* not in a system call: nothing to restart */
	r.eflags &= ~0x500ull;                 /* DF and TF clear, as the ABI wants */
	if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) < 0 ||
	    ptrace(PTRACE_CONT, t->tid, NULL, NULL) < 0) {
		int e = errno;
		ga_why(why, whylen, e == ESRCH ? "the process exited during the attach" :
		       "ptrace before %s: %s", what, strerror(e));
		return -e;
	}
	if (data_at)
		*data_at = at;
	for (;;) {
		int st, w = ga_wait(t->tid, &st, GA_CALL_TIMEOUT_MS);
		if (w == -ESRCH) {
			t->stopped = t->seized = false;
			ga_why(why, whylen, "the process exited during the attach (in %s)", what);
			return w;
		}
		if (w == -ETIMEDOUT) {
			/* take the thread back; the call is abandoned where it is */
			ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
			ga_wait(t->tid, &st, GA_STOP_TIMEOUT_MS);
			ga_why(why, whylen, "%s did not return within %d s in thread %d (a lock it "
			       "needs is held?): abandoned", what, GA_CALL_TIMEOUT_MS / 1000,
			       (int)t->tid);
			return w;
		}
		if (w) {
			ga_why(why, whylen, "waitpid(%d): %s", (int)t->tid, strerror(-w));
			return w;
		}
		int sig = WSTOPSIG(st), event = st >> 16;
		if (event == 0 && sig == SIGSEGV) {
			struct user_regs_struct now;
			if (ptrace(PTRACE_GETREGS, t->tid, NULL, &now) < 0) {
				ga_why(why, whylen, "ptrace(PTRACE_GETREGS): %s", strerror(errno));
				return -EIO;
			}
			if (now.rip == 0) {
				*ret = now.rax;
				return 0;
			}
			ga_why(why, whylen, "%s crashed in the process (SIGSEGV at pc %#llx): its "
			       "state may be damaged", what, now.rip);
			return -EFAULT;
		}
		/* a stop of ours or the user's, or a signal for the program: its handler runs on
		 * top of the call, as it would have on top of the program's own code */
		ptrace(PTRACE_CONT, t->tid, NULL, (void *)(long)(event == 0 ? sig : 0));
	}
}

/* The string at addr in the process (dlerror's message). */
static void ga_read_string(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	buf[0] = 0;
	if (!addr)
		return;
	for (size_t got = 0; got + 1 < len; got++) {
		if (ga_read_mem(pid, addr + got, buf + got, 1)) {
			buf[got] = 0;
			return;
		}
		if (!buf[got])
			return;
	}
	buf[len - 1] = 0;
}

/* ---- attach and detach ---- */

char *gpu_attach_config(const char *dir)
{
	char layouts[1024];
	if (py_layouts_env(layouts, sizeof(layouts)) < 0)
		layouts[0] = 0;
	char *cfg = cs_asprintf("CSAMPLER_GPU_ATTACH_VERSION=%s\nCSAMPLER_GPU_DIR=%s\n"
				"CSAMPLER_GPU_PYTHON=%s\n", GPU_ATTACH_VERSION, dir, layouts);
	static const char *const pass[] = { "CSAMPLER_GPU_STACK", "CSAMPLER_GPU_FLUSH_MS",
					    "CSAMPLER_GPU_DISABLE" };
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		const char *v = getenv(pass[i]);
		if (v && *v && !strchr(v, '\n')) {
			char *more = cs_asprintf("%s%s=%s\n", cfg, pass[i], v);
			free(cfg);
			cfg = more;
		}
	}
	return cfg;
}

bool gpu_attach_started_with_env(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	static char buf[1 << 20];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n;) {
		const char *e = buf + i;
		size_t l = strnlen(e, (size_t)(n - i));
		if (!strncmp(e, "CUDA_INJECTION64_PATH=", 22) && strstr(e, "libcsampler-cupti"))
			return true;
		i += (ssize_t)l + 1;
	}
	return false;
}

/* Where name (a symbol of the library file lib) is in the process, mapped as `mapped`. */
static uint64_t ga_lib_addr(const struct ga_maps *m, const struct ga_map *mapped, const char *lib,
			    const char *name)
{
	uint64_t off = 0, size = 0;
	if (ga_elf_sym(lib, name, &off, &size))
		return 0;
	return ga_addr_of(m, mapped, off);
}

/* dlopen(path, mode) in the stopped thread; on failure why gets dlerror()'s message. */
static int ga_dlopen(struct ga_thread *t, uint64_t dlopen_at, uint64_t dlerror_at,
		     const char *path, int mode, char *why, size_t whylen)
{
	uint64_t args[2] = { 0, (uint64_t)mode }, handle = 0;
	int ret = ga_call(t, dlopen_at, args, 2, 1, path, strlen(path) + 1, NULL, &handle,
			  "dlopen", why, whylen);
	if (ret)
		return ret;
	if (handle)
		return 0;
	char msg[512] = "";
	uint64_t text = 0;
	if (dlerror_at && !ga_call(t, dlerror_at, NULL, 0, 0, NULL, 0, NULL, &text, "dlerror", why,
				   whylen))
		ga_read_string(t->pid, text, msg, sizeof(msg));
	ga_why(why, whylen, "dlopen(%s) in the process failed: %s", path,
	       msg[0] ? msg : "no message");
	return -ENOENT;
}

/* The library must be the one this csampler speaks to; *lst is its stat. 0, or -1 with why
 * said. */
static int ga_check_library(const char *lib, struct stat *lst, char *why, size_t whylen)
{
	char version[128];
	int ret = ga_file_version(lib, version, sizeof(version));

	if (ret) {
		ga_why(why, whylen, "%s exports no %s (%s): not a csampler GPU library of this "
		       "version", lib, GPU_ATTACH_SYM_VERSION, strerror(-ret));
		return -1;
	}
	if (strcmp(version, GPU_ATTACH_VERSION)) {
		ga_why(why, whylen, "%s is \"%s\", this csampler needs \"%s\": use the library of "
		       "the same build (CSAMPLER_GPU_LIB)", lib, version, GPU_ATTACH_VERSION);
		return -1;
	}
	if (stat(lib, lst) < 0) {
		ga_why(why, whylen, "%s: %s", lib, strerror(errno));
		return -1;
	}
	return 0;
}

/* Call csampler_gpu_attach(config, msg, msglen) at attach_at on the borrowed thread t, and
 * say what the library answered. */
static enum gpu_attach_outcome ga_call_attach(struct gpu_attach *a, struct ga_thread *t,
					      uint64_t attach_at, const char *config, char *why,
					      size_t whylen)
{
	/* config and msg in one block on the stack */
	size_t clen = strlen(config) + 1;
	size_t blen = clen + GPU_ATTACH_MSG_MAX;
	char *block = cs_calloc(1, blen);
	memcpy(block, config, clen);
	uint64_t args[3] = { 0, clen, GPU_ATTACH_MSG_MAX }, at = 0, result = 0;
	int ret = ga_call(t, attach_at, args, 3, 3, block, blen, &at, &result,
			  GPU_ATTACH_SYM_ATTACH, why, whylen);
	free(block);
	if (ret)
		return GPU_ATTACH_REFUSED;
	char msg[GPU_ATTACH_MSG_MAX] = "";
	ga_read_string(t->pid, at + clen, msg, sizeof(msg));
	switch ((int)result) {
	case GPU_ATTACH_OK:
		a->attached = true;
		return GPU_ATTACH_DONE;
	case GPU_ATTACH_CUPTI:
		ga_why(why, whylen, "%s", msg);
		return GPU_ATTACH_NOTED;
	case GPU_ATTACH_ACTIVE:
		ga_why(why, whylen, "%s", msg);
		return GPU_ATTACH_SHARED;
	default:
		ga_why(why, whylen, "%s", msg[0] ? msg : "the library refused the attach");
		return GPU_ATTACH_REFUSED;
	}
}

enum gpu_attach_outcome gpu_attach_start(struct gpu_attach *a, pid_t pid, const char *lib,
					 const char *cupti_lib, const char *config, char *why,
					 size_t whylen)
{
	*a = (struct gpu_attach){ .pid = pid };
	enum gpu_attach_outcome out = GPU_ATTACH_REFUSED;
	struct ga_maps m = { 0 };
	struct ga_thread *t = NULL;
	char *libc_path = NULL;
	struct stat lst;

	if (ga_check_library(lib, &lst, why, whylen))
		return out;
	int ret;

	/* What the process has mapped says whether it can be done at all. */
	ret = ga_maps_read(pid, &m);
	if (ret) {
		ga_why(why, whylen, ret == -ESRCH ? "the process exited during the attach" :
		       "cannot read /proc/%d/maps: %s", (int)pid, strerror(-ret));
		goto out;
	}
	const struct ga_map *libc = ga_find_lib(&m, "libc.so.6");
	if (!libc)
		libc = ga_find_lib(&m, "libc-2.");
	if (!libc) {
		ga_why(why, whylen, "it has no libc.so.6 mapped (statically linked?): there is no "
		       "dlopen to load %s with", ga_base(lib));
		goto out;
	}
	if (!ga_find_lib(&m, "libcuda.so") && !ga_find_lib(&m, "libcupti.so")) {
		ga_why(why, whylen, "it has no CUDA library mapped (libcuda.so, libcupti.so): it "
		       "has not initialised CUDA, nothing to capture");
		goto out;
	}
	const struct ga_map *ours = ga_find_lib(&m, "libcsampler-cupti.so");
	if (ours && (ours->inode != (uint64_t)lst.st_ino || ours->dev != lst.st_dev)) {
		ga_why(why, whylen, "it already has another libcsampler-cupti.so loaded (%s, of "
		       "another csampler build or since replaced): restart it to use this one",
		       ours->path);
		goto out;
	}
	libc_path = ga_proc_path(pid, libc->path);
	uint64_t off = 0, size = 0, dlopen_at = 0, dlerror_at = 0;
	if (!ga_elf_sym(libc_path, "dlopen", &off, &size) ||
	    !ga_elf_sym(libc_path, "__libc_dlopen_mode", &off, &size))
		dlopen_at = ga_addr_of(&m, libc, off);
	if (!ga_elf_sym(libc_path, "dlerror", &off, &size))
		dlerror_at = ga_addr_of(&m, libc, off);
	if (!dlopen_at) {
		ga_why(why, whylen, "no dlopen found in its libc (%s)", libc->path);
		goto out;
	}
	bool need_cupti = cupti_lib && !ga_find_lib(&m, "libcupti.so");

	/* Borrow a thread. */
	t = cs_calloc(1, sizeof(*t));
	t->pid = pid;
	t->tid = ga_pick_thread(pid);
	if (ga_stop(t, &m, why, whylen))
		goto out;
	/* loaded by an earlier attach: it stays loaded, no dlopen (no loader lock) this time */
	if (!ours && need_cupti && ga_dlopen(t, dlopen_at, dlerror_at, cupti_lib,
					     GA_RTLD_NOW | GA_RTLD_GLOBAL, why, whylen))
		goto out;
	if (!ours && ga_dlopen(t, dlopen_at, dlerror_at, lib, GA_RTLD_NOW, why, whylen))
		goto out;
	ga_maps_free(&m);
	ret = ga_maps_read(pid, &m);
	ours = NULL;
	for (size_t i = 0; !ret && i < m.n && !ours; i++)
		if (m.v[i].inode == (uint64_t)lst.st_ino && m.v[i].dev == lst.st_dev)
			ours = &m.v[i];
	uint64_t attach_at = ours ? ga_lib_addr(&m, ours, lib, GPU_ATTACH_SYM_ATTACH) : 0;
	a->detach_addr = ours ? ga_lib_addr(&m, ours, lib, GPU_ATTACH_SYM_DETACH) : 0;
	if (!attach_at || !a->detach_addr) {
		ga_why(why, whylen, "%s was loaded but its entry points were not found in the "
		       "process' mappings", lib);
		goto out;
	}
	out = ga_call_attach(a, t, attach_at, config, why, whylen);
out:
	if (t) {
		ga_release(t);
		free(t);
	}
	free(libc_path);
	ga_maps_free(&m);
	return out;
}

int gpu_attach_stop(struct gpu_attach *a, char *why, size_t whylen)
{
	if (!a->attached)
		return 0;
	a->attached = false;
	struct ga_thread *t = cs_calloc(1, sizeof(*t));
	t->pid = a->pid;
	t->tid = ga_pick_thread(a->pid);
	struct ga_maps m = { 0 };
	int ret = ga_maps_read(a->pid, &m);
	if (!ret)
		ret = ga_stop(t, &m, why, whylen);
	ga_maps_free(&m);
	uint64_t result = 0;
	if (!ret)
		ret = ga_call(t, a->detach_addr, NULL, 0, 0, NULL, 0, NULL, &result,
			      GPU_ATTACH_SYM_DETACH, why, whylen);
	ga_release(t);
	free(t);
	if (ret == -ESRCH)
		return 0;   /* it exited: its library wrote the rest of the file at exit */
	return ret;
}

/* ---- the library's data in a process (csampler dump) ---- */

/* A defined symbol's virtual address in the file (st_value) and the lowest PT_LOAD address,
 * for data that may lie in .bss (past the file's bytes). Returns 0 or -ENOENT / -errno. */
static int ga_elf_data_sym(const char *path, const char *name, uint64_t *value, uint64_t *size,
			   uint64_t *first_load)
{
	struct ga_elf_def d;
	int ret = ga_elf_lookup(path, name, &d);
	if (!ret) {
		*value = d.value;
		*size = d.size;
		*first_load = d.first_load;
	}
	return ret;
}

int gpu_attach_lib_symbol(pid_t pid, const char *name, uint64_t *addr, uint64_t *size)
{
	struct ga_maps m = { 0 };
	int ret = ga_maps_read(pid, &m);
	if (ret)
		return ret;
	const struct ga_map *lib = ga_find_lib(&m, "libcsampler-cupti");
	uint64_t value = 0, first_load = 0, base = 0;
	ret = -ENOENT;
	if (lib) {
		char *path = ga_proc_path(pid, lib->path);
		ret = ga_elf_data_sym(path, name, &value, size, &first_load);
		if (ret)   /* the plain path: /proc/PID/root may be refused where the file is not */
			ret = ga_elf_data_sym(lib->path, name, &value, size, &first_load);
		free(path);
	}
	/* the load base: the mapping of the file's first page is its lowest PT_LOAD */
	for (size_t i = 0; !ret && i < m.n; i++)
		if (m.v[i].inode == lib->inode && m.v[i].dev == lib->dev && m.v[i].pgoff == 0) {
			base = m.v[i].start - first_load;
			break;
		}
	if (!ret && !base)
		ret = -ENOENT;
	if (!ret)
		*addr = base + value;
	ga_maps_free(&m);
	return ret;
}
