/* gpu_channel_test.c: unit tests of the GPU file reader (gpu_channel.c) and of the GPU records of
 * the data file through profile_load (profile.c): exact decoding, every cut point, random and
 * bit-flipped input (never a crash, never an out-of-range record), and the launch join. */
#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "format/datafile.h"
#include "format/merge.h"
#include "format/records.h"
#include "record/gpu_channel.h"
#include "inject/protocol.h"
#include "analysis/profile.h"
#include "base/unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct collect {
	size_t launches, activities, notes;
	uint64_t kernel_ns, pcs_sum, py_sum;
	size_t npy;
	uint32_t last_corr, nframes_max;
	char api[64], kname[128], note[128];
	uint32_t kinds[8];
};

static void c_launch(void *arg, const struct gpu_channel_launch *l)
{
	struct collect *c = arg;
	UNIT_ASSERT(l->npy <= GPU_MAX_PY_FRAMES);
	UNIT_ASSERT(l->rec.pid == 42 && l->vendor == GPU_VENDOR_CUDA);
	c->npy += l->npy;
	for (size_t i = 0; i < l->npy; i++)
		c->py_sum += l->py[i].code + l->py[i].unit + l->py[i].flags + l->py_flags;
	UNIT_ASSERT(l->npcs <= GPU_MAX_FRAMES);
	UNIT_ASSERT(strlen(l->api) <= GPU_NAME_MAX);
	c->launches++;
	c->last_corr = l->rec.correlation;
	for (size_t i = 0; i < l->npcs; i++)
		c->pcs_sum += l->pcs[i];
	if (l->npcs > c->nframes_max)
		c->nframes_max = (uint32_t)l->npcs;
	snprintf(c->api, sizeof(c->api), "%s", l->api);
}

static void c_activity(void *arg, const struct df_gpu_activity *a, const char *name)
{
	struct collect *c = arg;
	UNIT_ASSERT(a->kind >= 1 && a->kind <= DF_GPU_KIND_MAX);
	UNIT_ASSERT(!a->end || a->end >= a->start);
	UNIT_ASSERT(strlen(name) <= 4 * GPU_NAME_MAX);
	c->activities++;
	c->kinds[a->kind]++;
	if (a->kind == DF_GPU_KERNEL) {
		c->kernel_ns += a->end - a->start;
		snprintf(c->kname, sizeof(c->kname), "%s", name);
	}
}

static void c_note(void *arg, uint32_t pid, uint32_t severity, const char *text)
{
	struct collect *c = arg;
	c->notes++;
	snprintf(c->note, sizeof(c->note), "%s", text);
}

static const struct gpu_sink c_sink = { c_launch, c_activity, c_note };

static void buf_rec(struct cs_buf *b, uint16_t type, const void *fixed, size_t flen,
		    const void *tail, size_t tlen)
{
	struct gpu_rec h = { type, 0, (uint32_t)((sizeof(h) + flen + tlen + 7) & ~7ul) };
	static const char zeros[8];
	cs_buf_put(b, &h, sizeof(h));
	cs_buf_put(b, fixed, flen);
	if (tlen)
		cs_buf_put(b, tail, tlen);
	cs_buf_put(b, zeros, h.size - sizeof(h) - flen - tlen);
}

/* A file: header, info, 3 calls (2 stacks) with 2 kernels and a memcpy, a note, stats. */
static void build_file(struct cs_buf *b)
{
	struct gpu_file_header h = { .version = GPU_PROTOCOL_VERSION, .pid = 42, .header_size = sizeof(h) };
	memcpy(h.magic, GPU_FILE_MAGIC, 8);
	cs_buf_put(b, &h, sizeof(h));
	struct gpu_info i = { .cupti_version = 130001, .clock_offset_ns = -100 };
	buf_rec(b, GPU_REC_INFO, &i, sizeof(i), NULL, 0);
	/* protocol 3: the thread, two stacks (the second with Python frames), the name, then
	 * three calls naming them */
	struct gpu_thread th = { .tid = 42 };
	buf_rec(b, GPU_REC_THREAD, &th, sizeof(th), NULL, 0);
	for (uint32_t k = 1; k <= 2; k++) {
		struct {
			struct gpu_stack s;
			uint64_t pcs[3];
			struct gpu_py_frame py[2];
		} st = { .s = { .id = k, .nframes = 3, .npy = k == 2 ? 2 : 0,
				.py_flags = k == 2 ? GPU_PY_TRUNCATED : 0 },
			 .pcs = { 0x401000, 0x402000, 0x403000 },
			 .py = { { 0x7f0010, 3, 0, 0 }, { 0x7f0020, 5, GPU_PYF_ENTRY, 0 } } };
		buf_rec(b, GPU_REC_STACK, &st, sizeof(st.s) + sizeof(st.pcs) +
			st.s.npy * sizeof(st.py[0]), NULL, 0);
	}
	struct gpu_api_name an = { .cbid = 211, .domain = 1, .len = 17 };
	buf_rec(b, GPU_REC_API_NAME, &an, sizeof(an), "cudaLaunchKernel", 17);
	for (uint32_t k = 0; k < 3; k++) {
		struct gpu_call call = { .start = 1000 + k, .duration = 10, .correlation = 7 + k,
					 .stack = k == 2 ? 2 : 1, .cbid = 211, .domain = 1 };
		buf_rec(b, GPU_REC_CALL, &call, sizeof(call), NULL, 0);
	}
	const char *kn = "_Z6renderPf";
	for (uint32_t k = 0; k < 2; k++) {
		struct gpu_kernel g = { .start = 5000, .end = 5000 + 300 * (k + 1), .correlation = 7 + k,
					.name_len = (uint32_t)strlen(kn) + 1 };
		buf_rec(b, GPU_REC_KERNEL, &g, sizeof(g), kn, g.name_len);
	}
	struct gpu_memcpy m = { .start = 6000, .end = 6100, .bytes = 64, .correlation = 9, .copy_kind = 1 };
	buf_rec(b, GPU_REC_MEMCPY, &m, sizeof(m), NULL, 0);
	struct gpu_kernel lost = { .correlation = 9 };
	buf_rec(b, GPU_REC_KERNEL, &lost, sizeof(lost), NULL, 0);
	const char *text = "hello";
	struct gpu_note n = { .len = 6 };
	buf_rec(b, GPU_REC_NOTE, &n, sizeof(n), text, 6);
	buf_rec(b, 77, "future!", 8, NULL, 0); /* a newer library's record: skipped by size */
	struct gpu_stats s = { .launches = 3, .dropped = 4 };
	buf_rec(b, GPU_REC_STATS, &s, sizeof(s), NULL, 0);
}

/* Silence the reader's one-line warnings during loops over bad input. */
static int quiet_begin(void)
{
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	close(devnull);
	return saved;
}

static void quiet_end(int saved)
{
	dup2(saved, 2);
	close(saved);
}

/* What most channel tests hold: the file, what the sink collected, and the reader's counters. */
struct chan {
	struct cs_buf b;
	struct collect c;
	struct df_gpu_info info;
};

/* Write the file of build_file images times over into x->b (a process that exec'd writes a
 * second header) and read it into x->c and x->info. */
static void read_built(struct chan *x, int images)
{
	for (int i = 0; i < images; i++)
		build_file(&x->b);
	gpu_channel_buffer(x->b.data, x->b.len, 42, &c_sink, &x->c, &x->info);
}

/* Read d[0..len) afresh into c and info, the reader's warnings silenced. */
static void read_quietly(const void *d, size_t len, struct collect *c, struct df_gpu_info *info)
{
	int saved = quiet_begin();
	memset(c, 0, sizeof(*c));
	gpu_channel_buffer(d, len, 42, &c_sink, c, info);
	quiet_end(saved);
}

/* d[0..len) is refused whole: marked corrupt, not a record handed on. */
static void expect_refused(const void *d, size_t len)
{
	struct collect c;
	struct df_gpu_info info;
	read_quietly(d, len, &c, &info);
	UNIT_ASSERT(info.flags & DF_GPU_INFO_CORRUPT);
	UNIT_ASSERT_EQ_INT(c.launches + c.activities, 0);
}

UNIT_TEST(gpu_channel_decodes_exactly)
{
	struct chan x = { 0 };
	read_built(&x, 1);
	UNIT_ASSERT_EQ_INT(x.c.launches, 3);
	UNIT_ASSERT_EQ_INT(x.c.last_corr, 9);
	UNIT_ASSERT_EQ_INT(x.c.pcs_sum, 3 * (0x401000 + 0x402000 + 0x403000));
	UNIT_ASSERT(!strcmp(x.c.api, "cudaLaunchKernel"));
	UNIT_ASSERT_EQ_INT(x.c.npy, 2);
	UNIT_ASSERT_EQ_INT(x.c.py_sum, 0x7f0010 + 3 + 0x7f0020 + 5 + GPU_PYF_ENTRY + 2 * GPU_PY_TRUNCATED);
	UNIT_ASSERT_EQ_INT(x.c.activities, 6);   /* the calls' spans, 2 kernels, a copy */
	UNIT_ASSERT_EQ_INT(x.c.kinds[DF_GPU_API], 3);
	UNIT_ASSERT_EQ_INT(x.c.kinds[DF_GPU_KERNEL], 2);
	UNIT_ASSERT_EQ_INT(x.c.kinds[DF_GPU_MEMCPY], 1);
	UNIT_ASSERT_EQ_INT(x.c.kernel_ns, 900);
	UNIT_ASSERT(!strcmp(x.c.kname, "render(float*)"));
	UNIT_ASSERT(x.c.notes == 1 && !strcmp(x.c.note, "hello"));
	UNIT_ASSERT_EQ_INT(x.info.cupti_version, 130001);
	UNIT_ASSERT_EQ_INT(x.info.clock_offset_ns, -100);
	UNIT_ASSERT_EQ_INT(x.info.dropped, 4);
	UNIT_ASSERT_EQ_INT(x.info.lost_timestamps, 1);
	UNIT_ASSERT_EQ_INT(x.info.bad_records, 0);
	UNIT_ASSERT(!(x.info.flags & (DF_GPU_INFO_CUT | DF_GPU_INFO_CORRUPT)));
	UNIT_ASSERT(x.info.flags & DF_GPU_INFO_HAVE_INFO && x.info.flags & DF_GPU_INFO_HAVE_STATS);
	cs_buf_free(&x.b);
}

/* A file cut anywhere gives the complete records before the cut, and says it was cut. */
UNIT_TEST(gpu_channel_every_cut)
{
	struct cs_buf b = { 0 };
	build_file(&b);
	size_t prev = 0;
	int saved = quiet_begin();
	for (size_t n = 0; n <= b.len; n++) {
		struct collect c = { 0 };
		struct df_gpu_info info;
		gpu_channel_buffer(b.data, n, 42, &c_sink, &c, &info);
		size_t got = c.launches + c.activities + c.notes;
		UNIT_ASSERT(got >= prev);
		prev = got;
		if (n + 1 == b.len || (n > 0 && n < sizeof(struct gpu_file_header)))
			UNIT_ASSERT(info.flags & DF_GPU_INFO_CUT);
		if (n == b.len)
			UNIT_ASSERT(!(info.flags & DF_GPU_INFO_CUT));
	}
	quiet_end(saved);
	UNIT_ASSERT_EQ_INT(prev, 10);
	cs_buf_free(&b);
}

/* Random bytes after a valid header, and every single bit flipped: no crash, and what comes
 * out stays within the limits the sink asserts. */
UNIT_TEST(gpu_channel_fuzz)
{
	struct cs_buf b = { 0 };
	build_file(&b);
	int saved = quiet_begin();
	for (size_t bit = 0; bit < b.len * 8; bit++) {
		struct collect c = { 0 };
		b.data[bit / 8] ^= (char)(1 << (bit % 8));
		gpu_channel_buffer(b.data, b.len, 42, &c_sink, &c, NULL);
		b.data[bit / 8] ^= (char)(1 << (bit % 8));
	}
	srand(7);
	size_t hdr = sizeof(struct gpu_file_header);
	char *r = cs_malloc(hdr + 4096);
	memcpy(r, b.data, hdr);
	for (int round = 0; round < 2000; round++) {
		struct collect c = { 0 };
		size_t n = hdr + (size_t)(rand() % 4096);
		for (size_t i = hdr; i < n; i++)
			r[i] = (char)(rand() % 4 ? rand() : (rand() % 16)); /* small values: plausible sizes */
		gpu_channel_buffer(r, n, 42, &c_sink, &c, NULL);
	}
	quiet_end(saved);
	free(r);
	cs_buf_free(&b);
}

UNIT_TEST(gpu_channel_framing_errors)
{
	struct chan x = { 0 };
	build_file(&x.b);
	size_t good = x.b.len;
	struct gpu_rec bad = { GPU_REC_KERNEL, 0, 12 }; /* not a multiple of 8 */
	cs_buf_put(&x.b, &bad, sizeof(bad));
	cs_buf_put(&x.b, "xxxxxxxxxxxxxxxx", 16);
	read_quietly(x.b.data, x.b.len, &x.c, &x.info);
	UNIT_ASSERT(x.info.flags & DF_GPU_INFO_CORRUPT);
	UNIT_ASSERT_EQ_INT(x.c.launches, 3);
	/* a record whose name does not fit in its size: skipped, counted, reading goes on */
	x.b.len = good;
	struct gpu_marker m = { .start = 1, .end = 2, .name_len = 4000 };
	buf_rec(&x.b, GPU_REC_MARKER, &m, sizeof(m), NULL, 0);
	struct gpu_sync y = { .start = 10, .end = 20 };
	buf_rec(&x.b, GPU_REC_SYNC, &y, sizeof(y), NULL, 0);
	read_quietly(x.b.data, x.b.len, &x.c, &x.info);
	UNIT_ASSERT_EQ_INT(x.info.bad_records, 1);
	UNIT_ASSERT_EQ_INT(x.c.kinds[DF_GPU_SYNC], 1);
	UNIT_ASSERT(!(x.info.flags & DF_GPU_INFO_CORRUPT));
	/* a foreign file */
	expect_refused("CSAMPLERxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 40);
	cs_buf_free(&x.b);
}

/* Protocol 3's references: a call naming a stack never written is skipped and counted; a file
 * of another protocol version stops with one line, nothing read. */
UNIT_TEST(gpu_channel_stack_refs_and_version)
{
	struct chan x = { 0 };
	build_file(&x.b);
	struct gpu_call call = { .start = 2000, .duration = 5, .correlation = 99, .stack = 77,
				 .cbid = 211, .domain = 1 };
	buf_rec(&x.b, GPU_REC_CALL, &call, sizeof(call), NULL, 0);
	call.stack = 0;   /* no stack: a launch without frames */
	buf_rec(&x.b, GPU_REC_CALL, &call, sizeof(call), NULL, 0);
	gpu_channel_buffer(x.b.data, x.b.len, 42, &c_sink, &x.c, &x.info);
	UNIT_ASSERT_EQ_INT(x.info.bad_records, 1);
	UNIT_ASSERT_EQ_INT(x.c.launches, 4);
	UNIT_ASSERT_EQ_INT(x.c.last_corr, 99);
	((struct gpu_file_header *)x.b.data)->version = 2;
	expect_refused(x.b.data, x.b.len);
	cs_buf_free(&x.b);
}

/* A second header in the same file (the process exec'd): counters of both images add up. */
UNIT_TEST(gpu_channel_second_image)
{
	struct chan x = { 0 };
	read_built(&x, 2);
	UNIT_ASSERT_EQ_INT(x.c.launches, 6);
	UNIT_ASSERT_EQ_INT(x.info.dropped, 8);
	UNIT_ASSERT_EQ_INT(x.info.bad_records, 0);
	cs_buf_free(&x.b);
}

/* ---- the data file's GPU records through profile_load ---- */

static void put_stack(struct df_writer *w, uint32_t id, uint32_t loc)
{
	uint32_t hdr[2] = { id, 1 };
	df_put2(w, DF_STACK, hdr, sizeof(hdr), &loc, 4);
}

/* Two processes' launches under two stacks, their kernels, a graph kernel, a kind from the
 * future, a longer record, a process' info and a note. */
/* The file's end record (5000 ns, finalized), then close it and free its string table. */
static void put_end_and_close(struct df_writer *w, struct df_strtab *t)
{
	struct {
		uint64_t samples, lost, end_time;
		uint32_t flags;
	} __attribute__((packed)) e = { 0, 0, 5000, 1 };
	df_put(w, DF_END, &e, sizeof(e));
	UNIT_ASSERT(df_writer_close(w) == 0);
	df_strtab_free(t);
}

static void write_roundtrip(const char *path)
{
	struct df_writer *w;
	struct df_strtab *t = df_strtab_new();
	UNIT_ASSERT(df_writer_open(&w, path, true) == 0);
	struct {
		uint32_t id, flags;
		char path[8], bid[1];
	} __attribute__((packed)) mod = { 0, 0, "/bin/a", "" };
	df_put(w, DF_MODULE, &mod, sizeof(mod));
	for (uint32_t i = 0; i < 2; i++) {
		struct {
			uint32_t id, module;
			uint64_t offset;
			uint32_t flags;
		} __attribute__((packed)) loc = { i, 0, 0x100 * (i + 1), 1 };
		df_put(w, DF_LOC, &loc, sizeof(loc));
		put_stack(w, i, i);
		uint32_t sym[6] = { i, 1, df_strtab_id(t, w, i ? "launch_backward" : "launch_forward"), 0, 0, 0 };
		df_put(w, DF_SYMBOL, sym, sizeof(sym));
	}
	/* launches of two processes, the same correlation ids in both */
	for (uint32_t pid = 10; pid <= 11; pid++)
		for (uint32_t k = 0; k < 4; k++) {
			struct df_gpu_launch l = { .time = 100 + k, .pid = pid, .tid = pid,
						   .correlation = 50 - k, .stack = k % 2,
						   .api = df_strtab_id(t, w, "cudaLaunchKernel"),
						   .cbid = 211, .domain = 1 };
			if (pid == 11 && k == 3)
				l.flags = DF_GPU_LAUNCH_GRAPH_NODE, l.graph_node_id = 900;
			df_put(w, DF_GPU_LAUNCH, &l, sizeof(l));
		}
	for (uint32_t k = 0; k < 4; k++) {
		struct df_gpu_activity a = { .kind = DF_GPU_KERNEL, .pid = 10 + k % 2,
					     .correlation = 50 - k, .start = 1000 - k, .end = 1100,
					     .name = df_strtab_id(t, w, "render"), .grid = { 1, 2, 3 } };
		df_put(w, DF_GPU_ACTIVITY, &a, sizeof(a));
	}
	struct df_gpu_activity g = { .kind = DF_GPU_KERNEL, .pid = 11, .correlation = 1234,
				     .start = 2000, .end = 2100, .graph_node_id = 900 };
	df_put(w, DF_GPU_ACTIVITY, &g, sizeof(g));
	struct df_gpu_activity future = { .kind = 99, .pid = 10, .start = 1 };
	df_put(w, DF_GPU_ACTIVITY, &future, sizeof(future)); /* a newer kind: skipped */
	/* a longer record (fields appended by a newer writer) loads */
	struct {
		struct df_gpu_activity a;
		uint64_t extra;
	} __attribute__((packed)) longer = { { .kind = DF_GPU_MEMCPY, .pid = 10, .correlation = 49,
					       .start = 3000, .end = 3010, .bytes = 77 }, 5 };
	df_put(w, DF_GPU_ACTIVITY, &longer, sizeof(longer));
	struct df_gpu_info info = { .pid = 10, .cupti_version = 130001, .clock_offset_ns = -80,
				    .dropped = 3, .flags = DF_GPU_INFO_HAVE_INFO };
	df_put(w, DF_GPU_INFO, &info, DF_GPU_INFO_V1_SIZE); /* before the vendor field: CUDA's */
	uint32_t nh[2] = { 11, 1 };
	df_put2(w, DF_GPU_NOTE, nh, sizeof(nh), "held by Nsight", 15);
	put_end_and_close(w, t);
}

UNIT_TEST(gpu_profile_roundtrip)
{
	char *path = cs_asprintf("%s/gpu.data", unit_tmpdir());
	write_roundtrip(path);
	struct profile *p;
	UNIT_ASSERT(profile_load(path, &p) == 0);
	UNIT_ASSERT_EQ_INT(p->ngpu_launches, 8);
	UNIT_ASSERT_EQ_INT(p->ngpu_activities, 6);
	for (size_t i = 1; i < p->ngpu_activities; i++)
		UNIT_ASSERT(p->gpu_activities[i - 1].start <= p->gpu_activities[i].start);
	size_t joined = 0;
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->launch == PROFILE_GPU_NO_LAUNCH)
			continue;
		const struct profile_gpu_launch *l = &p->gpu_launches[a->launch];
		UNIT_ASSERT(l->pid == a->pid && l->correlation == a->correlation);
		/* correlation 50 - k was launched from stack k % 2 */
		const char *want = (50 - a->correlation) % 2 ? "launch_backward" : "launch_forward";
		const struct profile_stack *st = &p->stacks[l->stack];
		UNIT_ASSERT(!strcmp(profile_str(p, p->frames[p->stack_frames[st->first]].name), want));
		UNIT_ASSERT(!strcmp(profile_str(p, l->api), "cudaLaunchKernel"));
		joined++;
	}
	UNIT_ASSERT_EQ_INT(joined, 5); /* 4 kernels and the memcpy; the graph kernel has none */
	const struct profile_gpu_activity *gk = NULL;
	for (size_t i = 0; i < p->ngpu_activities; i++)
		if (p->gpu_activities[i].correlation == 1234)
			gk = &p->gpu_activities[i];
	UNIT_ASSERT(gk && gk->launch == PROFILE_GPU_NO_LAUNCH && gk->node_launch != PROFILE_GPU_NO_LAUNCH);
	UNIT_ASSERT(p->gpu_launches[gk->node_launch].graph_node_id == 900 &&
		    p->gpu_launches[gk->node_launch].pid == 11);
	UNIT_ASSERT(profile_gpu_launch_of(p, 11, 47) && !profile_gpu_launch_of(p, 12, 47));
	UNIT_ASSERT(p->gpu_activities[0].grid[1] == 2 || p->gpu_activities[0].kind != DF_GPU_KERNEL);
	UNIT_ASSERT_EQ_INT(p->ngpu_processes, 1);
	UNIT_ASSERT_EQ_INT(p->gpu_processes[0].clock_offset_ns, -80);
	UNIT_ASSERT_EQ_INT(p->gpu_processes[0].dropped, 3);
	UNIT_ASSERT_EQ_INT(p->gpu_processes[0].vendor, GPU_VENDOR_UNKNOWN);
	UNIT_ASSERT(profile_gpu_vendor(p, 10)->id == GPU_VENDOR_CUDA &&
		    profile_gpu_vendor(p, 11)->id == GPU_VENDOR_CUDA);
	UNIT_ASSERT_EQ_INT(p->ngpu_notes, 1);
	UNIT_ASSERT(!strcmp(profile_str(p, p->gpu_notes[0].text), "held by Nsight"));
	profile_free(p);
	free(path);
}

/* A GPU record that names a stack the file does not have is skipped; the rest loads. */
UNIT_TEST(gpu_profile_bad_ids_skipped)
{
	char *path = cs_asprintf("%s/bad.data", unit_tmpdir());
	struct df_writer *w;
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	struct df_gpu_launch l = { .pid = 1, .correlation = 1, .stack = 5 };
	df_put(w, DF_GPU_LAUNCH, &l, sizeof(l));
	struct df_gpu_activity a = { .kind = 1, .pid = 1, .correlation = 1, .name = 99 };
	df_put(w, DF_GPU_ACTIVITY, &a, sizeof(a));
	df_put(w, DF_GPU_LAUNCH, &l, 10); /* too short: corrupt */
	UNIT_ASSERT(df_writer_close(w) == 0);
	struct profile *p;
	int saved = quiet_begin();
	int rc = profile_load(path, &p);
	quiet_end(saved);
	UNIT_ASSERT(rc < 0); /* the short record is corruption, as for any record */
	UNIT_ASSERT(df_writer_open(&w, path, false) == 0);
	df_put(w, DF_GPU_LAUNCH, &l, sizeof(l));
	df_put(w, DF_GPU_ACTIVITY, &a, sizeof(a));
	UNIT_ASSERT(df_writer_close(w) == 0);
	saved = quiet_begin();
	rc = profile_load(path, &p);
	quiet_end(saved);
	UNIT_ASSERT(rc == 0);
	UNIT_ASSERT_EQ_INT(p->ngpu_launches + p->ngpu_activities, 0);
	profile_free(p);
	free(path);
}

static const uint32_t trim_stacks[][9] = {   /* n, then loc ids leaf first */
	{ 8, 0, 1, 2, 3, 4, 5, 6, 7 },
	{ 3, 5, 6, 7 },                 /* the wrapper's name without a stub: stays */
	{ 2, 1, 2 },                    /* only runtime frames: kept whole */
	{ 5, 2, 8, 5, 6, 7 },           /* the stub's demangled name */
	{ 4, 2, 5, 6, 7 },              /* the wrapper without a stub, its kernel known */
};
static const uint32_t trim_launch_stack[] = { 0, 1, 2, 0, 3, 4 };

/* A data file of format version `version` whose launch stacks start in the CUDA runtime (a
 * shared libcudart, or the static one's cudaLaunchKernel and libcudart_static_* internals)
 * and nvcc's stub and host wrapper, as a recorder before version 2 wrote them. */
static void write_untrimmed(const char *path, uint32_t version)
{
	struct df_writer *w;
	struct df_strtab *t = df_strtab_new();
	UNIT_ASSERT(df_writer_open_version(&w, path, true, version) == 0);
	struct {
		uint32_t id, flags;
		char path[12], bid[1];
	} __attribute__((packed)) m0 = { 0, 0, "/bin/train", "" };
	df_put(w, DF_MODULE, &m0, sizeof(m0));
	struct {
		uint32_t id, flags;
		char path[28], bid[1];
	} __attribute__((packed)) m1 = { 1, 0, "/usr/lib/libcudart.so.13.0", "" };
	df_put(w, DF_MODULE, &m1, sizeof(m1));
	static const char *const names[] = {
		NULL,                                   /* 0: in libcudart.so, no symbol */
		"libcudart_static_0123abcd",
		"cudaLaunchKernel",
		"cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, unsigned long, CUstream_st*)",
		"_Z33__device_stub__Z11blur_kernelPfiPfi",
		"blur_kernel(float*, int)",
		"blur_image",
		"main",
		"__device_stub__Z11blur_kernelPfi(float*, int)",
	};
	for (uint32_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct {
			uint32_t id, module;
			uint64_t offset;
			uint32_t flags;
		} __attribute__((packed)) loc = { i, i == 0, 0x100 * (i + 1), 1 };
		df_put(w, DF_LOC, &loc, sizeof(loc));
		if (names[i]) {
			uint32_t sym[6] = { i, 1, df_strtab_id(t, w, names[i]), 0, 0, 0 };
			df_put(w, DF_SYMBOL, sym, sizeof(sym));
		}
	}
	for (uint32_t s = 0; s < 5; s++) {
		uint32_t hdr[2] = { s, trim_stacks[s][0] };
		df_put2(w, DF_STACK, hdr, sizeof(hdr), &trim_stacks[s][1], 4 * trim_stacks[s][0]);
	}
	for (uint32_t k = 0; k < 6; k++) {
		struct df_gpu_launch l = { .time = 100 + k, .pid = 10, .tid = 10, .correlation = k + 1,
					   .stack = trim_launch_stack[k],
					   .api = df_strtab_id(t, w, "cudaLaunchKernel"),
					   .cbid = 211, .domain = 1 };
		df_put(w, DF_GPU_LAUNCH, &l, sizeof(l));
	}
	/* the kernel of launch 6: its name is the wrapper's */
	struct df_gpu_activity ka = { .kind = DF_GPU_KERNEL, .pid = 10, .correlation = 6,
				      .start = 1000, .end = 1100,
				      .name = df_strtab_id(t, w, "blur_kernel(float*, int)") };
	df_put(w, DF_GPU_ACTIVITY, &ka, sizeof(ka));
	put_end_and_close(w, t);
}

/* write_untrimmed as version, loaded: its 6 launches. */
static struct profile *load_untrimmed(const char *path, uint32_t version)
{
	write_untrimmed(path, version);
	struct profile *p;
	UNIT_ASSERT(profile_load(path, &p) == 0);
	UNIT_ASSERT_EQ_INT(p->format_version, version);
	UNIT_ASSERT_EQ_INT(p->ngpu_launches, 6);
	return p;
}

/* How many launches of p (write_untrimmed's, by correlation) have fewer frames than recorded. */
static size_t count_trimmed(const struct profile *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->ngpu_launches; i++) {
		const struct profile_gpu_launch *l = &p->gpu_launches[i];
		n += p->stacks[l->stack].nframes <
		     trim_stacks[trim_launch_stack[l->correlation - 1]][0];
	}
	return n;
}

/* A file of version 1: the loaded launch stack starts at the program's call site (the reader
 * trims by name, as it did before the recorder did); a frame named like a kernel without a
 * stub below it stays unless that kernel was launched there; a stack of runtime frames only
 * is kept whole. */
UNIT_TEST(gpu_launch_stack_of_version_1_starts_at_the_call_site)
{
	char *path = cs_asprintf("%s/trim.data", unit_tmpdir());
	struct profile *p = load_untrimmed(path, 1);
	static const char *const want[] = { "blur_image;main", "blur_kernel(float*, int);blur_image;main",
					    "libcudart_static_0123abcd;cudaLaunchKernel",
					    "blur_image;main", "blur_image;main", "blur_image;main" };
	for (size_t i = 0; i < p->ngpu_launches; i++) {
		const struct profile_gpu_launch *l = &p->gpu_launches[i];
		const struct profile_stack *st = &p->stacks[l->stack];
		char got[512] = "";
		for (uint32_t k = 0; k < st->nframes; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? ";" : "",
				 profile_str(p, p->frames[p->stack_frames[st->first + k]].name));
		if (strcmp(got, want[l->correlation - 1]))
			fprintf(stderr, "launch %u: '%s', want '%s'\n", l->correlation, got,
				want[l->correlation - 1]);
		UNIT_ASSERT(!strcmp(got, want[l->correlation - 1]));
	}
	/* launches 1 and 4 share the recorded stack: one trimmed stack for both */
	UNIT_ASSERT_EQ_INT(p->gpu_launches[0].stack, p->gpu_launches[3].stack);
	profile_free(p);
	free(path);
}

/* From version 2 the recorder trims launch stacks (record.c): the reader keeps them as the
 * file has them, whatever the frames are named. (It still drops a leaf named as the kernel
 * launched there, a join, not a name list: no leaf here is.) */
UNIT_TEST(gpu_launch_stack_of_version_2_is_kept)
{
	char *path = cs_asprintf("%s/kept.data", unit_tmpdir());
	struct profile *p = load_untrimmed(path, 2);
	UNIT_ASSERT_EQ_INT(count_trimmed(p), 0);
	profile_free(p);
	free(path);
}

/* merge copies records as they are: its output says the oldest input's version, so that a
 * version 1 input's launch stacks are still trimmed when the merged file is read. */
UNIT_TEST(gpu_merge_keeps_the_oldest_version)
{
	char *v1 = cs_asprintf("%s/m1.data", unit_tmpdir());
	char *v2 = cs_asprintf("%s/m2.data", unit_tmpdir());
	char *out = cs_asprintf("%s/m.data", unit_tmpdir());
	write_untrimmed(v1, 1);
	write_untrimmed(v2, 2);
	for (int mixed = 0; mixed < 2; mixed++) {
		const char *inputs[] = { v2, mixed ? v1 : v2 };
		int saved = quiet_begin();
		int rc = df_merge(out, inputs, 2, false, "test");
		quiet_end(saved);
		UNIT_ASSERT(rc == 0);
		struct profile *p;
		UNIT_ASSERT(profile_load(out, &p) == 0);
		UNIT_ASSERT_EQ_INT(p->format_version, mixed ? 1 : 2);
		UNIT_ASSERT_EQ_INT(p->ngpu_launches, 12);
		/* read as version 1: launches 1, 4, 5 (runtime and stub frames) and 6 (the runtime
		 * frame, then the wrapper joined to its kernel) of each input; as version 2: none */
		UNIT_ASSERT_EQ_INT(count_trimmed(p), mixed ? 8 : 0);
		profile_free(p);
	}
	free(v1);
	free(v2);
	free(out);
}
