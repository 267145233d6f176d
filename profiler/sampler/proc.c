/* proc.c: what the samplers read from /proc: the threads' names and the executable mappings of
 * a process that existed before sampling started (or that ptrace cannot see being mapped), and
 * the state of one thread, with the system call it is blocked in and its stack, for --idle.
 * perf_event_open and ptrace give none of these for a thread that is not running. */
#include "sampler/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- /proc: what existed before sampling started ---- */

void sampler_proc_comm(struct sampler_events *e, pid_t pid, pid_t tid, uint64_t time, bool fork)
{
	char path[64], name[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	if (cs_read_small_file(path, name, sizeof(name)) <= 0)
		return;
	name[strcspn(name, "\n")] = 0;
	struct sampler_pending *pe = sampler_events_push(e, SAMPLER_EV_COMM);
	pe->ev.time = time;
	pe->ev.pid = (uint32_t)pid;
	pe->ev.tid = (uint32_t)tid;
	pe->off_a = sampler_events_keep(e, name, strlen(name) + 1);
	if (fork && tid != pid) {
		pe = sampler_events_push(e, SAMPLER_EV_FORK);
		pe->ev.time = time;
		pe->ev.pid = (uint32_t)pid;
		pe->ev.tid = (uint32_t)tid;
		pe->ev.task.ppid = (uint32_t)pid;
		pe->ev.task.ptid = (uint32_t)pid;
	}
}

void sampler_proc_comms(struct sampler_events *e, pid_t pid, uint64_t time)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	sampler_proc_comm(e, pid, pid, time, true);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' && atoi(de->d_name) != pid)
			sampler_proc_comm(e, pid, (pid_t)atoi(de->d_name), time, true);
	if (d)
		closedir(d);
}

void sampler_proc_maps(struct sampler_events *e, pid_t pid, uint64_t time, sampler_map_fn keep,
		       void *arg)
{
	char path[64], line[4352];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
			   &name_at) < 4 || perms[2] != 'x')
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = 0;
		if (keep && !keep(arg, start, end, pgoff, name))
			continue;
		struct sampler_pending *pe = sampler_events_push(e, SAMPLER_EV_MMAP);
		pe->ev.time = time;
		pe->ev.pid = (uint32_t)pid;
		pe->ev.tid = (uint32_t)pid;
		pe->ev.mmap.start = start;
		pe->ev.mmap.len = end - start;
		pe->ev.mmap.pgoff = pgoff;
		pe->ev.mmap.prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) | 4;
		pe->ev.mmap.flags = perms[3] == 'p' ? 2 /* MAP_PRIVATE */ : 1 /* MAP_SHARED */;
		pe->off_a = sampler_events_keep(e, name, strlen(name) + 1);
	}
	fclose(f);
}

char sampler_proc_thread_state(pid_t pid, pid_t tid, uint32_t *cpu)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	ssize_t n = cs_read_small_file(path, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	return sampler_proc_parse_state(buf, cpu);
}

char sampler_proc_stat_fd_state(int fd, uint32_t *cpu)
{
	char buf[1024];
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return sampler_proc_parse_state(buf, cpu);
}

char sampler_proc_parse_state(const char *buf, uint32_t *cpu)
{
	/* the name (field 2) may hold spaces and parentheses: fields count from the last ')' */
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return 0;
	char state = p[2];
	if (cpu) {
		/* field 39, "processor": 36 fields after the state (field 3) */
		const char *q = p + 2;
		for (int field = 3; field < 39 && q; field++) {
			q = strchr(q, ' ');
			if (q)
				q++;
		}
		if (q)
			*cpu = (uint32_t)strtoul(q, NULL, 10);
	}
	return state;
}

size_t sampler_proc_read_stack(pid_t tid, uint64_t addr, uint8_t *buf, size_t size)
{
	/* process_vm_readv never splits one iovec element: one element per page, so that a copy
	 * running past the top of the stack returns the pages before it. */
	struct iovec local[17], remote[17];
	size_t n = 0, done = 0;
	uint64_t at = addr;
	while (done < size && n < 17) {
		size_t in_page = 4096 - (size_t)(at & 4095);
		size_t len = size - done < in_page ? size - done : in_page;
		local[n] = (struct iovec){ buf + done, len };
		remote[n] = (struct iovec){ (void *)(uintptr_t)at, len };
		n++;
		done += len;
		at += len;
	}
	ssize_t got = process_vm_readv(tid, local, n, remote, n, 0);
	return got > 0 ? (size_t)got : 0;
}

/* "/proc/PID/task/TID/syscall": "NR a1 .. a6 SP PC" (blocked in a system call), "-1 SP PC"
 * (blocked outside one) or "running". */
static int proc_syscall_text(const char *buf, long *nr, uint64_t *sp, uint64_t *pc);

int sampler_proc_syscall_fd(int fd, long *nr, uint64_t *sp, uint64_t *pc)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = 0;
	return proc_syscall_text(buf, nr, sp, pc);
}

static int proc_syscall_text(const char *buf, long *nr, uint64_t *sp, uint64_t *pc)
{
	if (!strncmp(buf, "running", 7))
		return -EBUSY;
	const char *p = buf;
	char *end;
	*nr = strtol(p, &end, 10);
	if (end == p)
		return -EINVAL;
	unsigned long long v[8];
	int nv = 0;
	for (p = end; nv < 8; p = end) {
		v[nv] = strtoull(p, &end, 16);
		if (end == p)
			break;
		nv++;
	}
	if (nv < 2)
		return -EINVAL;
	*sp = v[nv - 2];
	*pc = v[nv - 1];
	return 0;
}

void sampler_proc_offcpu_event(pid_t pid, pid_t tid, char state, long nr, uint64_t sp, uint64_t pc,
			       size_t got, size_t cap, struct sampler_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = SAMPLER_EV_SAMPLE;
	ev->pid = (uint32_t)pid;
	ev->tid = (uint32_t)tid;
	ev->sample.snap.pid = (uint32_t)pid;
	ev->sample.snap.tid = (uint32_t)tid;
	ev->sample.snap.regs[UNWIND_REG_SP] = sp;
	ev->sample.snap.regs[UNWIND_REG_IP] = pc;
	ev->sample.snap.regs_mask = 1ull << UNWIND_REG_SP | 1ull << UNWIND_REG_IP;
	ev->sample.snap.stack_size = got;
	ev->sample.stack_cap = cap;
	ev->sample.offcpu = true;
	ev->sample.offcpu_syscall = state == 'T' || state == 't' ? OFFCPU_STOPPED
				    : nr >= 0			 ? (int32_t)nr
								 : OFFCPU_NOT_IN_SYSCALL;
	ev->sample.weight = 1;
}

int sampler_cgroup2_root(char *buf, size_t len)
{
	/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPER" */
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int ret = -ENOENT;
	while (f && fgets(line, sizeof(line), f)) {
		char root[1024], point[1024];
		const char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8) ||
		    sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 || strcmp(root, "/"))
			continue;
		snprintf(buf, len, "%s", point);
		ret = 0;
		break;
	}
	if (f)
		fclose(f);
	return ret;
}

bool sampler_proc_in_cgroup(pid_t pid, const char *path)
{
	/* cgroup v2: "0::/a/b" names the pid's cgroup under the hierarchy's root (where cgroup2
	 * is mounted); a cgroup's descendants are in it too. */
	char real[4096], file[64], buf[4096], root[1024];
	if (sampler_cgroup2_root(root, sizeof(root)) || !realpath(path, real) ||
	    strncmp(real, root, strlen(root)))
		return false;
	const char *want = real + strlen(root);
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	if (cs_read_small_file(file, buf, sizeof(buf)) <= 0)
		return false;
	char *line = strstr(buf, "0::");
	if (!line)
		return false;
	line += 3;
	line[strcspn(line, "\n")] = 0;
	size_t n = strlen(want);
	return !strncmp(line, want, n) && (line[n] == 0 || line[n] == '/' || n == 0);
}
