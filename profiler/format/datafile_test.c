/* datafile_test.c: unit tests of the data file (datafile.c) and of profile_load (profile.c):
 * round trips, truncation at every cut, corruption, version checks, and the model built from
 * modules, locations, stacks and symbols. */
#include "base/cs.h"
#include "format/datafile.h"
#include "format/records.h"
#include "analysis/profile.h"
#include "base/unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

static char *test_path(const char *name)
{
	return cs_asprintf("%s/%s", unit_tmpdir(), name);
}

static void put_kv(struct df_writer *w, const char *k, const char *v)
{
	df_put2(w, DF_HEADER_KV, k, strlen(k) + 1, v, strlen(v) + 1);
}

static void put_module(struct df_writer *w, uint32_t id, uint32_t flags, const char *path)
{
	struct cs_buf b = { 0 };
	uint32_t hdr[2] = { id, flags };
	cs_buf_put(&b, hdr, sizeof(hdr));
	cs_buf_put(&b, path, strlen(path) + 1);
	cs_buf_put(&b, "abcd", 5);
	df_put(w, DF_MODULE, b.data, b.len);
	cs_buf_free(&b);
}

static void put_loc(struct df_writer *w, uint32_t id, uint32_t module, uint64_t offset)
{
	struct {
		uint32_t id, module;
		uint64_t offset;
		uint32_t flags;
	} __attribute__((packed)) rec = { id, module, offset, 0 };
	df_put(w, DF_LOC, &rec, sizeof(rec));
}

static void put_comm(struct df_writer *w, uint32_t pid, uint32_t tid, const char *name)
{
	struct {
		uint32_t pid, tid;
		uint64_t time;
		uint32_t flags;
	} __attribute__((packed)) rec = { pid, tid, 1, 0 };
	df_put2(w, DF_COMM, &rec, sizeof(rec), name, strlen(name) + 1);
}

static void put_sample(struct df_writer *w, uint64_t time, uint32_t pid, uint32_t tid, uint32_t stack)
{
	struct {
		uint64_t time;
		uint32_t pid, tid, cpu, stack, flags, weight;
	} rec = { time, pid, tid, 0, stack, 0, 1 };
	df_put(w, DF_SAMPLE, &rec, sizeof(rec));
}

/* A small complete profile: two modules, three locations, two stacks, one inline chain. */
static void write_profile(const char *path, int nsamples, bool compress, bool end)
{
	struct df_writer *w;
	struct df_strtab *t = df_strtab_new();
	UNIT_ASSERT(df_writer_open(&w, path, compress) == 0);
	put_kv(w, "cmdline", "csampler record -- ./app");
	put_kv(w, "start_monotonic_ns", "1000");
	put_comm(w, 10, 10, "app");
	put_comm(w, 10, 11, "early-name");
	put_comm(w, 10, 11, "worker");
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} fork = { 20, 10, 20, 10, 2 };
	df_put(w, DF_FORK, &fork, sizeof(fork));
	put_comm(w, 20, 20, "child");
	put_module(w, 0, 0, "/usr/bin/app");
	put_module(w, 1, PROFILE_MODULE_KERNEL, "[kernel.kallsyms]");
	put_loc(w, 0, 0, 0x1000);   /* leaf: inlined helper inside compute */
	put_loc(w, 1, 0, 0x2000);   /* main, no SYMBOL record: shown as app+0x2000 */
	put_loc(w, 2, 1, 0xffff1234);
	uint32_t s0[3] = { 0, 2, 1 };
	uint32_t hdr0[2] = { 0, 2 };
	df_put2(w, DF_STACK, hdr0, sizeof(hdr0), (uint32_t[]){ 0, 1 }, 8);
	uint32_t hdr1[2] = { 1, 3 };
	df_put2(w, DF_STACK, hdr1, sizeof(hdr1), (uint32_t[]){ s0[1], s0[0], s0[2] }, 12);
	for (int i = 0; i < nsamples; i++) {
		/* out of time order on purpose: the loader sorts */
		put_sample(w, 100000 + (uint64_t)(nsamples - i), 10, i % 3 ? 11 : 10, i % 2);
		if (i % 500 == 499)
			df_flush(w);
	}
	put_sample(w, 50, 20, 20, 0);
	uint32_t sym[2 + 8] = { 0, 2, df_strtab_id(t, w, "helper"), df_strtab_id(t, w, "app.c"), 7,
				PROFILE_FRAME_INLINED, df_strtab_id(t, w, "compute"),
				df_strtab_id(t, w, "app.c"), 12, 0 };
	df_put(w, DF_SYMBOL, sym, sizeof(sym));
	uint32_t ksym[2 + 4] = { 2, 1, df_strtab_id(t, w, "do_syscall_64"), 0, 0, PROFILE_FRAME_KERNEL };
	df_put(w, DF_SYMBOL, ksym, sizeof(ksym));
	/* an optional record type this reader does not know: skipped */
	df_put(w, 200, "future", 7);
	if (end) {
		struct {
			uint64_t samples, lost, end_time;
			uint32_t flags;
		} __attribute__((packed)) e = { (uint64_t)nsamples + 1, 0, 200000, 1 };
		df_put(w, DF_END, &e, sizeof(e));
	}
	UNIT_ASSERT(df_writer_close(w) == 0);
	df_strtab_free(t);
}

static const char *frame_name(const struct profile *p, uint32_t stack, uint32_t k)
{
	const struct profile_stack *s = &p->stacks[stack];
	return profile_str(p, p->frames[p->stack_frames[s->first + k]].name);
}

/* stderr to /dev/null while the code under test warns, and back: the saved descriptor. */
static int test_quiet(void)
{
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
	UNIT_ASSERT(saved >= 0 && devnull >= 0);
	dup2(devnull, 2);
	close(devnull);
	return saved;
}

static void test_loud(int saved)
{
	dup2(saved, 2);
	close(saved);
}

/* The loader refuses path (its message not shown). */
static void expect_load_refused(const char *path)
{
	struct profile *p;
	int saved = test_quiet();
	UNIT_ASSERT(profile_load(path, &p) < 0);
	test_loud(saved);
}

UNIT_TEST(datafile_roundtrip_model)
{
	char *path = test_path("a.data");
	struct profile *p;
	struct stat st;

	write_profile(path, 1000, true, true);
	UNIT_ASSERT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	UNIT_ASSERT(profile_is_datafile(path));
	UNIT_ASSERT(profile_load(path, &p) == 0);
	UNIT_ASSERT(!p->truncated && p->finalized);
	UNIT_ASSERT_EQ_INT(p->nsamples, 1001);
	UNIT_ASSERT(!strcmp(profile_header(p, "cmdline"), "csampler record -- ./app"));
	UNIT_ASSERT_EQ_INT(p->start_ns, 1000);
	UNIT_ASSERT_EQ_INT(p->end_ns, 200000);
	/* stack 0: helper (inlined) + compute from loc 0, then the unnamed main */
	UNIT_ASSERT_EQ_INT(p->stacks[0].nframes, 3);
	UNIT_ASSERT(!strcmp(frame_name(p, 0, 0), "helper"));
	UNIT_ASSERT(p->frames[p->stack_frames[p->stacks[0].first]].flags & PROFILE_FRAME_INLINED);
	UNIT_ASSERT(!strcmp(frame_name(p, 0, 1), "compute"));
	UNIT_ASSERT(!strcmp(frame_name(p, 0, 2), "app+0x2000"));
	UNIT_ASSERT(p->frames[p->stack_frames[p->stacks[0].first + 2]].flags & PROFILE_FRAME_UNNAMED);
	/* stack 1: kernel leaf first */
	UNIT_ASSERT_EQ_INT(p->stacks[1].nframes, 4);
	UNIT_ASSERT(!strcmp(frame_name(p, 1, 0), "do_syscall_64"));
	UNIT_ASSERT(p->frames[p->stack_frames[p->stacks[1].first]].flags & PROFILE_FRAME_KERNEL);
	/* samples sorted by time; threads named by their last comm; the child's parent */
	for (size_t i = 1; i < p->nsamples_records; i++)
		UNIT_ASSERT(p->samples[i - 1].time <= p->samples[i].time);
	UNIT_ASSERT_EQ_INT(p->samples[0].pid, 20);
	UNIT_ASSERT_EQ_INT(p->nthreads, 3);
	UNIT_ASSERT_EQ_INT(p->nprocesses, 2);
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == 11)
			UNIT_ASSERT(!strcmp(profile_str(p, p->threads[i].comm), "worker"));
	for (size_t i = 0; i < p->nprocesses; i++)
		if (p->processes[i].pid == 20)
			UNIT_ASSERT(p->processes[i].ppid == 10 &&
				    !strcmp(profile_str(p, p->processes[i].comm), "child"));
	profile_free(p);
	free(path);
}

UNIT_TEST(datafile_uncompressed_equals_compressed)
{
	char *a = test_path("z.data"), *b = test_path("raw.data");
	struct profile *pa, *pb;
	write_profile(a, 3000, true, true);
	write_profile(b, 3000, false, true);
	struct stat sa, sb;
	UNIT_ASSERT(stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_size < sb.st_size);
	UNIT_ASSERT(profile_load(a, &pa) == 0 && profile_load(b, &pb) == 0);
	UNIT_ASSERT_EQ_INT(pa->nsamples, pb->nsamples);
	UNIT_ASSERT_EQ_INT(pa->nstack_frames, pb->nstack_frames);
	profile_free(pa);
	profile_free(pb);
	free(a);
	free(b);
}

/* Every prefix of a file loads (complete, truncated with fewer samples, or a clean error for a
 * cut inside the file header) and never crashes; samples recovered never decrease; from memory
 * (profile_load_mem) the same as from the file. */
UNIT_TEST(datafile_every_cut)
{
	char *path = test_path("full.data"), *cut = test_path("cut.data");
	struct stat st;
	write_profile(path, 2000, false, true);
	UNIT_ASSERT(stat(path, &st) == 0);
	char *data = cs_malloc((size_t)st.st_size);
	int fd = open(path, O_RDONLY);
	UNIT_ASSERT(read(fd, data, (size_t)st.st_size) == st.st_size);
	close(fd);
	uint64_t last = 0;
	int saved = test_quiet(); /* the loader warns on every truncated prefix */
	for (off_t n = 0, next; n <= st.st_size; n = next) {
		next = n + (n < 200 ? 1 : 97);
		if (n < st.st_size && next > st.st_size)
			next = st.st_size; /* the whole file is the last cut */
		fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		UNIT_ASSERT(write(fd, data, (size_t)n) == n);
		close(fd);
		struct profile *p, *pm;
		int ret = profile_load(cut, &p);
		/* The in-memory reader (profile_load_mem) agrees with the file reader. */
		int ret_mem = profile_load_mem(data, (size_t)n, "cut.data", &pm);
		UNIT_ASSERT_EQ_INT(ret_mem, ret);
		if (n < DF_HEADER_SIZE) {
			UNIT_ASSERT(ret < 0);
			continue;
		}
		UNIT_ASSERT(ret == 0);
		UNIT_ASSERT(p->truncated == (n < st.st_size));
		UNIT_ASSERT(p->nsamples >= last);
		UNIT_ASSERT(pm->truncated == p->truncated && pm->nsamples == p->nsamples &&
			    pm->nstack_frames == p->nstack_frames && pm->nstrings == p->nstrings);
		last = p->nsamples;
		profile_free(p);
		profile_free(pm);
	}
	test_loud(saved);
	UNIT_ASSERT_EQ_INT(last, 2001);
	free(data);
	free(path);
	free(cut);
}

static int count_records(void *arg, uint16_t type, const uint8_t *payload, size_t len)
{
	(*(int *)arg)++;
	return 0;
}

UNIT_TEST(datafile_corrupt_and_foreign)
{
	char *path = test_path("c.data");
	int n = 0;
	write_profile(path, 1500, true, true);
	UNIT_ASSERT(df_read(path, count_records, &n) == 0 && n > 1500);
	/* flip a byte in the middle of the first data chunk: CRC mismatch, an error */
	int fd = open(path, O_RDWR);
	char c;
	UNIT_ASSERT(pread(fd, &c, 1, DF_HEADER_SIZE + 200) == 1);
	c ^= 0x5a;
	UNIT_ASSERT(pwrite(fd, &c, 1, DF_HEADER_SIZE + 200) == 1);
	close(fd);
	int saved = test_quiet();
	n = 0;
	UNIT_ASSERT(df_read(path, count_records, &n) < 0);
	/* a foreign file */
	fd = open(path, O_WRONLY | O_TRUNC);
	UNIT_ASSERT(write(fd, "#!/bin/sh\necho hello\n", 21) == 21);
	close(fd);
	UNIT_ASSERT(df_read(path, count_records, &n) < 0);
	UNIT_ASSERT(!profile_is_datafile(path));
	test_loud(saved);
	free(path);
}

UNIT_TEST(datafile_versions_and_unknown_types)
{
	char *path = test_path("v.data");
	struct df_writer *w;
	struct profile *p;

	/* an unknown mandatory record type (< 128) is refused */
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	df_put(w, 99, "x", 2);
	UNIT_ASSERT(df_writer_close(w) == 0);
	expect_load_refused(path);
	/* a file that needs a newer reader is refused */
	write_profile(path, 10, false, true);
	int fd = open(path, O_RDWR);
	uint32_t v = DF_VERSION + 1;
	UNIT_ASSERT(pwrite(fd, &v, 4, 12) == 4);
	close(fd);
	expect_load_refused(path);
	/* an existing file is kept as .old */
	write_profile(path, 10, false, true);
	write_profile(path, 20, false, true);
	char *old = cs_asprintf("%s.old", path);
	UNIT_ASSERT(profile_load(old, &p) == 0 && p->nsamples == 11);
	profile_free(p);
	free(old);
	free(path);
}

/* Ids must be dense and in range: a stack naming a location that does not exist is corrupt. */
UNIT_TEST(datafile_bad_ids)
{
	char *path = test_path("ids.data");
	struct df_writer *w;
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	put_module(w, 0, 0, "/bin/x");
	put_loc(w, 0, 0, 16);
	uint32_t hdr[2] = { 0, 1 };
	df_put2(w, DF_STACK, hdr, sizeof(hdr), (uint32_t[]){ 7 }, 4);
	UNIT_ASSERT(df_writer_close(w) == 0);
	expect_load_refused(path);
	free(path);
}

static bool file_is(const char *path, const char *want)
{
	char buf[64];
	ssize_t n = cs_read_small_file(path, buf, sizeof(buf));
	return n == (ssize_t)strlen(want) && !memcmp(buf, want, (size_t)n);
}

/* df_writer_open never writes through the path: a symbolic link there (dangling or not) or at
 * .old is not followed, a non-regular file is refused, and the file is 0600 whatever the umask. */
UNIT_TEST(datafile_open_hostile_paths)
{
	char *victim = test_path("victim"), *link = test_path("link.data");
	char *dangling = test_path("dangling.data"), *made = test_path("made");
	char *path = test_path("p.data"), *old = test_path("p.data.old");
	char *dir = test_path("dir.data");
	struct df_writer *w;
	struct stat st;

	int fd = open(victim, O_WRONLY | O_CREAT, 0644);
	UNIT_ASSERT(fd >= 0 && write(fd, "victim", 6) == 6);
	close(fd);
	UNIT_ASSERT(symlink(victim, link) == 0 && symlink(made, dangling) == 0 && mkdir(dir, 0755) == 0);
	int saved = test_quiet();
	UNIT_ASSERT(df_writer_open(&w, link, false) < 0);
	UNIT_ASSERT(df_writer_open(&w, dangling, false) < 0);
	UNIT_ASSERT(df_writer_open(&w, dir, false) < 0);
	test_loud(saved);
	UNIT_ASSERT(file_is(victim, "victim"));
	UNIT_ASSERT(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	UNIT_ASSERT(access(made, F_OK) < 0);

	/* a link planted at .old is replaced by the previous file, its target untouched */
	mode_t mask = umask(0);
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	UNIT_ASSERT(df_writer_close(w) == 0);
	UNIT_ASSERT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	UNIT_ASSERT(symlink(victim, old) == 0);
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	UNIT_ASSERT(df_writer_close(w) == 0);
	umask(mask);
	UNIT_ASSERT(lstat(old, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == DF_HEADER_SIZE);
	UNIT_ASSERT(file_is(victim, "victim"));
	free(victim), free(link), free(dangling), free(made), free(path), free(old), free(dir);
}

/* A data file through a pipe (`cat f.data | csampler report -i /dev/stdin`): the reader cannot
 * seek there and skips forward by reading; the profile is the file's. */
UNIT_TEST(datafile_through_a_pipe)
{
	char *path = test_path("p.data");
	struct profile *from_file, *from_pipe;
	int fds[2];

	write_profile(path, 1000, true, true);
	UNIT_ASSERT(profile_load(path, &from_file) == 0);
	UNIT_ASSERT(pipe(fds) == 0);
	pid_t writer = fork();
	UNIT_ASSERT(writer >= 0);
	if (writer == 0) {
		close(fds[0]);
		FILE *f = fopen(path, "rb");
		char buf[4096];
		size_t n;
		while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
			if (write(fds[1], buf, n) != (ssize_t)n)
				_exit(1);
		_exit(0);
	}
	close(fds[1]);
	char name[64];
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fds[0]);
	UNIT_ASSERT(profile_load(name, &from_pipe) == 0);
	close(fds[0]);
	waitpid(writer, NULL, 0);
	UNIT_ASSERT(!from_pipe->truncated && from_pipe->finalized);
	UNIT_ASSERT_EQ_INT(from_pipe->nsamples, from_file->nsamples);
	UNIT_ASSERT_EQ_INT(from_pipe->nstacks, from_file->nstacks);
	profile_free(from_file);
	profile_free(from_pipe);
	free(path);
}

/* A frame past an entry point is dropped when loaded (a new thread sampled in ret_from_fork:
 * the walk went past clone3's frame into its fresh stack), and only then: an unnamed frame
 * past another function stays, as does one past clone3 that has a name. */
UNIT_TEST(profile_load_trims_past_entry)
{
	char *path = test_path("entry.data");
	struct df_writer *w;
	struct df_strtab *t = df_strtab_new();
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	put_kv(w, "cmdline", "csampler record -- ./app");
	put_comm(w, 10, 11, "worker");
	put_module(w, 0, 0, "/usr/lib/libc.so.6");
	put_module(w, 1, 0, "//anon");
	put_module(w, 2, PROFILE_MODULE_KERNEL, "[kernel.kallsyms]");
	put_loc(w, 0, 0, 0x100);    /* __clone3 */
	put_loc(w, 1, 1, 0x5570);   /* stale memory: no function */
	put_loc(w, 2, 2, 0xffff10); /* ret_from_fork */
	put_loc(w, 3, 0, 0x200);    /* worker_fn */
	put_loc(w, 4, 0, 0x300);    /* named_after */
	uint32_t h[2] = { 0, 3 };
	df_put2(w, DF_STACK, h, sizeof(h), (uint32_t[]){ 2, 0, 1 }, 12);
	h[0] = 1, h[1] = 2;
	df_put2(w, DF_STACK, h, sizeof(h), (uint32_t[]){ 3, 1 }, 8);
	h[0] = 2, h[1] = 2;
	df_put2(w, DF_STACK, h, sizeof(h), (uint32_t[]){ 0, 4 }, 8);
	for (uint32_t s = 0; s < 3; s++)
		put_sample(w, 100 + s, 10, 11, s);
	const char *names[] = { "__clone3", NULL, "ret_from_fork", "worker_fn", "named_after" };
	for (uint32_t i = 0; i < 5; i++) {
		if (!names[i])
			continue;
		uint32_t sym[2 + 4] = { i, 1, df_strtab_id(t, w, names[i]), 0, 0,
					i == 2 ? PROFILE_FRAME_KERNEL : 0 };
		df_put(w, DF_SYMBOL, sym, sizeof(sym));
	}
	UNIT_ASSERT(df_writer_close(w) == 0);
	df_strtab_free(t);

	struct profile *p = NULL;
	UNIT_ASSERT(profile_load(path, &p) == 0);
	UNIT_ASSERT_EQ_INT((int)p->stacks[0].nframes, 2); /* ret_from_fork, __clone3 */
	UNIT_ASSERT(!strcmp(frame_name(p, 0, 1), "__clone3"));
	UNIT_ASSERT_EQ_INT((int)p->stacks[1].nframes, 2); /* not past an entry point */
	UNIT_ASSERT_EQ_INT((int)p->stacks[2].nframes, 2); /* named: kept */
	profile_free(p);
	free(path);
}
