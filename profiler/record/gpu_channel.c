/* gpu_channel.c: reads the GPU library's gpu-PID.bin files (gpu_channel.h, inject/protocol.h).
 * A file is read incrementally while the program runs: bytes are appended whole records at a
 * time, so whatever follows the last complete record is kept for the next poll. Every length
 * and count is checked against the record's size before use. A framing error (a size that is
 * not a multiple of 8, too small, too large, an unknown header) stops that file with one line;
 * a record whose own fields do not fit its size is skipped and counted. The parser is written
 * by hand because the format is ours (protocol.h); there is no library for it. */
#include "record/gpu_channel.h"

#include "base/cs.h"
#include "base/gpu_vendor.h"
#include "inject/protocol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GPU_REC_MAX (64u << 10)      /* no valid record comes near this (protocol.h limits) */
#define GPU_HEADER_MAX 4096u
#define GPU_READ_STEP (1u << 20)
#define GPU_POLL_MAX (16u << 20)     /* bytes read per file per poll while recording */
#define GPU_STACK_IDS (1u << 24)     /* stack ids are dense from 1: no file comes near this */
#define GPU_CBIDS 1024

/* A stack the library wrote once (GPU_REC_STACK), referred to by id by the calls after it. */
struct gpu_stack_ent {
	uint16_t nframes, flags;
	uint32_t npy, py_flags;
	uint64_t pcs[];              /* then struct gpu_py_frame py[npy] */
};

/* One stream of records: a file, or a buffer handed to gpu_channel_buffer. */
struct gpu_stream {
	const struct gpu_sink *sink;
	void *arg;
	const char *name;            /* for messages: "gpu-PID.bin" */
	uint32_t pid;
	uint64_t min_time, max_time;
	uint64_t offset;             /* stream offset of the next unparsed byte */
	bool header_done, stopped, reported;
	struct gpu_stats base, last; /* counters of earlier images (exec) and of the current one */
	uint64_t lost_seen;          /* activities with lost timestamps that reached us */
	uint64_t launches, activities;
	struct df_gpu_info info;
	/* protocol 3: the current thread, the stacks and API names written so far */
	uint32_t tid;
	struct gpu_stack_ent **stacks;  /* by id */
	size_t cap_stacks;
	char *names[4][GPU_CBIDS];      /* [domain][cbid] */
};

struct gpu_file {
	struct gpu_stream s;
	char *path;
	int fd;
	uint8_t *buf;                /* bytes read, not parsed yet */
	size_t len, cap;
	bool eof_seen;
};

struct gpu_channel {
	char *dir;
	bool every_file;
	uint64_t min_time, max_time;
	const struct gpu_sink *sink;
	void *arg;
	struct gpu_file **files;
	size_t nfiles, cap_files;
	uint32_t *pids;              /* attach mode: the session's processes */
	size_t npids, cap_pids;
};

/* ---- parsing ---- */

static void gpu_stop(struct gpu_stream *s, uint32_t flag, const char *what)
{
	s->stopped = true;
	s->info.flags |= flag;
	cs_warn("GPU records of PID %u (%s): %s at offset %llu: the rest of the file is skipped; the CPU profile is not affected",
		s->pid, s->name, what, (unsigned long long)s->offset);
}

/* A string of n bytes at p (NUL-terminated or not) into out (size outsz), terminated. */
static void gpu_copy_str(char *out, size_t outsz, const uint8_t *p, size_t n)
{
	size_t k = n < outsz - 1 ? n : outsz - 1;
	memcpy(out, p, k);
	out[k] = 0;
	out[strnlen(out, k)] = 0;
}

/* Copy a record's fixed part (size bytes) into fixed; false when the record is shorter. */
static bool gpu_take(const uint8_t *p, size_t n, void *fixed, size_t size)
{
	if (n < size)
		return false;
	memcpy(fixed, p, size);
	return true;
}

/* Copy the len-byte string that follows a fixed part of size bytes (n >= size) into out;
 * false when it runs past the record. */
static bool gpu_take_str(char *out, size_t outsz, const uint8_t *p, size_t n, size_t size,
			 uint32_t len)
{
	if (len > n - size)
		return false;
	gpu_copy_str(out, outsz, p + size, len);
	return true;
}

static void gpu_update_stats(struct gpu_stream *s)
{
	struct df_gpu_info *i = &s->info;
	i->launches = s->base.launches + s->last.launches;
	i->launches_dropped = s->base.launches_dropped + s->last.launches_dropped;
	i->activities = s->base.activities + s->last.activities;
	i->dropped = s->base.dropped + s->last.dropped;
	i->lost_timestamps = s->base.lost_timestamps + s->last.lost_timestamps + s->lost_seen;
	i->buffers = s->base.buffers + s->last.buffers;
	i->flush_timeouts = s->base.flush_timeouts + s->last.flush_timeouts;
	i->write_errors = s->base.write_errors + s->last.write_errors;
	i->capture_ns = s->base.capture_ns + s->last.capture_ns;
}

static void gpu_add_stats(struct gpu_stats *a, const struct gpu_stats *b)
{
	a->launches += b->launches;
	a->launches_dropped += b->launches_dropped;
	a->activities += b->activities;
	a->dropped += b->dropped;
	a->lost_timestamps += b->lost_timestamps;
	a->buffers += b->buffers;
	a->flush_timeouts += b->flush_timeouts;
	a->write_errors += b->write_errors;
	a->capture_ns += b->capture_ns;
}

static void gpu_bad(struct gpu_stream *s)
{
	s->info.bad_records++;
}

static void gpu_emit(struct gpu_stream *s, struct df_gpu_activity *a, const char *name);

/* The stacks and names of one image (a new header starts afresh: ids restart at exec). */
static void gpu_stream_tables_free(struct gpu_stream *s)
{
	for (size_t i = 0; i < s->cap_stacks; i++)
		free(s->stacks[i]);
	free(s->stacks);
	s->stacks = NULL;
	s->cap_stacks = 0;
	for (int d = 0; d < 4; d++)
		for (int c = 0; c < GPU_CBIDS; c++) {
			free(s->names[d][c]);
			s->names[d][c] = NULL;
		}
	s->tid = 0;
}

static void gpu_stack_record(struct gpu_stream *s, const uint8_t *p, size_t n)
{
	struct gpu_stack st;
	if (!gpu_take(p, n, &st, sizeof(st)))
		return gpu_bad(s);
	size_t pcs = (size_t)st.nframes * 8, py = (size_t)st.npy * sizeof(struct gpu_py_frame);
	if (!st.id || st.id >= GPU_STACK_IDS || st.npy > GPU_MAX_PY_FRAMES ||
	    pcs > n - sizeof(st) || py > n - sizeof(st) - pcs)
		return gpu_bad(s);
	if (st.id >= s->cap_stacks) {
		size_t cap = s->cap_stacks;
		cs_grow(&s->stacks, &s->cap_stacks, (size_t)st.id + 1, sizeof(*s->stacks));
		memset(s->stacks + cap, 0, (s->cap_stacks - cap) * sizeof(*s->stacks));
	}
	struct gpu_stack_ent *e = cs_malloc(sizeof(*e) + pcs + py);
	e->nframes = st.nframes;
	e->flags = st.flags;
	e->npy = st.npy;
	e->py_flags = st.py_flags;
	memcpy(e->pcs, p + sizeof(st), pcs + py);
	free(s->stacks[st.id]);
	s->stacks[st.id] = e;
}

static void gpu_name_record(struct gpu_stream *s, const uint8_t *p, size_t n)
{
	struct gpu_api_name an;
	if (!gpu_take(p, n, &an, sizeof(an)))
		return gpu_bad(s);
	if (an.domain >= 4 || an.cbid >= GPU_CBIDS || an.len > n - sizeof(an))
		return;   /* a callback id beyond what this reader keeps: the call stays unnamed */
	char name[GPU_NAME_MAX + 1];
	gpu_copy_str(name, sizeof(name), p + sizeof(an), an.len);
	free(s->names[an.domain][an.cbid]);
	s->names[an.domain][an.cbid] = cs_strdup(name);
}

/* A call or graph node: the launch (with its stack) for the sink; a call's span too. */
static void gpu_call_record(struct gpu_stream *s, uint16_t type, const uint8_t *p, size_t n)
{
	uint64_t time, node = 0, end = 0;
	uint32_t corr, stack, cbid, domain, flags = 0;
	if (type == GPU_REC_CALL) {
		struct gpu_call c;
		if (!gpu_take(p, n, &c, sizeof(c)))
			return gpu_bad(s);
		time = c.start;
		end = c.start + (c.flags & GPU_CALL_DURATION_US ? c.duration * 1000ull : c.duration);
		corr = c.correlation, stack = c.stack, cbid = c.cbid, domain = c.domain;
	} else {
		struct gpu_graph_node g;
		if (!gpu_take(p, n, &g, sizeof(g)))
			return gpu_bad(s);
		time = g.time, node = g.node_id, corr = g.correlation, stack = g.stack;
		cbid = GPU_CBID_GRAPHNODE_CREATED, domain = GPU_DOMAIN_RESOURCE;
		flags = DF_GPU_LAUNCH_GRAPH_NODE;
	}
	const struct gpu_stack_ent *e = stack < s->cap_stacks ? s->stacks[stack] : NULL;
	if (stack && !e)
		return gpu_bad(s);   /* a stack id never written */
	if (time >= s->min_time && time <= s->max_time) {
		uint64_t pcs[GPU_MAX_FRAMES];
		size_t np = e ? (e->nframes < GPU_MAX_FRAMES ? e->nframes : GPU_MAX_FRAMES) : 0;
		if (np)
			memcpy(pcs, e->pcs, np * 8);
		if (e && (np < e->nframes || (e->flags & GPU_STACK_TRUNCATED)))
			flags |= DF_GPU_LAUNCH_STACK_TRUNCATED;
		const char *name = domain < 4 && cbid < GPU_CBIDS && s->names[domain][cbid] ?
				   s->names[domain][cbid] : "";
		const struct gpu_py_frame *py = e ? (const void *)(e->pcs + e->nframes) : NULL;
		s->launches++;
		struct gpu_channel_launch l = {
			.rec = { .time = time, .pid = s->pid, .tid = s->tid, .correlation = corr,
				 .cbid = cbid, .domain = domain, .flags = flags,
				 .graph_node_id = node },
			.vendor = s->info.vendor, .api = name, .pcs = pcs, .npcs = np, .py = py,
			.npy = e ? e->npy : 0, .py_flags = e ? e->py_flags : 0 };
		if (s->sink->launch)
			s->sink->launch(s->arg, &l);
	}
	if (type == GPU_REC_CALL) {
		struct df_gpu_activity a = { .kind = DF_GPU_API, .start = time, .end = end,
					     .correlation = corr, .tid = s->tid, .detail = cbid,
					     .detail2 = domain };
		gpu_emit(s, &a, "");
	}
}

/* Hand an activity on unless its timestamps were lost or it ended before min_time. */
static void gpu_emit(struct gpu_stream *s, struct df_gpu_activity *a, const char *name)
{
	a->pid = s->pid;
	if (a->kind != DF_GPU_MARKER && a->start == 0 && a->end == 0) {
		s->lost_seen++;
		gpu_update_stats(s);
		return;
	}
	if (a->end && a->end < a->start) {
		gpu_bad(s);
		return;
	}
	if ((a->end ? a->end : a->start) < s->min_time || a->start > s->max_time)
		return;
	s->activities++;
	if (s->sink->activity)
		s->sink->activity(s->arg, a, name);
}

static void gpu_kernel_name(const char *raw, void (*fn)(struct gpu_stream *, struct df_gpu_activity *,
							 const char *),
			    struct gpu_stream *s, struct df_gpu_activity *a)
{
	char *dm = cs_demangle(raw);
	fn(s, a, dm ? dm : raw);
	free(dm);
}

/* One complete record of size bytes at d (header included). */
static void gpu_info_record(struct gpu_stream *s, const uint8_t *p, size_t n)
{
	struct gpu_info gi;
	if (!gpu_take(p, n, &gi, sizeof(gi)))
		return gpu_bad(s);
	s->info.cupti_version = gi.cupti_version;
	s->info.status = gi.status;
	s->info.cupti_error = gi.cupti_error;
	s->info.clock_before_ns = gi.clock_before_ns;
	s->info.cupti_ns = gi.cupti_ns;
	s->info.clock_after_ns = gi.clock_after_ns;
	s->info.clock_offset_ns = gi.clock_offset_ns;
	s->info.flags |= DF_GPU_INFO_HAVE_INFO;
}

/* The named activities: kernels (their names demangled) and NVTX markers. */
static void gpu_named_record(struct gpu_stream *s, uint16_t type, const uint8_t *p, size_t n)
{
	char name[GPU_NAME_MAX + 1];
	struct df_gpu_activity a = { 0 };
	union {
		struct gpu_kernel k;
		struct gpu_marker m;
	} r;
	bool kernel = type == GPU_REC_KERNEL;
	size_t need = kernel ? sizeof(r.k) : sizeof(r.m);

	if (!gpu_take(p, n, &r, need) ||
	    !gpu_take_str(name, sizeof(name), p, n, need, kernel ? r.k.name_len : r.m.name_len))
		return gpu_bad(s);
	if (!kernel) {
		a.kind = DF_GPU_MARKER;
		a.start = r.m.start, a.end = r.m.end, a.tid = r.m.tid;
		a.detail = r.m.id, a.detail2 = r.m.domain;
		a.flags = r.m.end ? 0 : DF_GPU_ACT_INSTANT;
		return gpu_emit(s, &a, name);
	}
	a.kind = DF_GPU_KERNEL;
	a.start = r.k.start, a.end = r.k.end, a.queued = r.k.queued, a.submitted = r.k.submitted;
	a.correlation = r.k.correlation;
	a.device = r.k.device, a.context = r.k.context, a.stream = r.k.stream;
	memcpy(a.grid, r.k.grid, sizeof(a.grid));
	memcpy(a.block, r.k.block, sizeof(a.block));
	a.graph_id = r.k.graph_id, a.graph_node_id = r.k.graph_node_id;
	a.detail = r.k.registers, a.detail2 = r.k.shared_bytes;
	gpu_kernel_name(name, gpu_emit, s, &a);
}

/* The activities without a name: copies, memsets and synchronisations. */
static void gpu_unnamed_record(struct gpu_stream *s, uint16_t type, const uint8_t *p, size_t n)
{
	struct df_gpu_activity a = { 0 };
	union {
		struct gpu_memcpy c;
		struct gpu_memset m;
		struct gpu_sync y;
	} r;
	size_t need = type == GPU_REC_MEMCPY ? sizeof(r.c)
		      : type == GPU_REC_MEMSET ? sizeof(r.m) : sizeof(r.y);

	if (!gpu_take(p, n, &r, need))
		return gpu_bad(s);
	if (type == GPU_REC_MEMCPY) {
		a.kind = DF_GPU_MEMCPY;
		a.start = r.c.start, a.end = r.c.end, a.bytes = r.c.bytes;
		a.correlation = r.c.correlation;
		a.device = r.c.device, a.context = r.c.context, a.stream = r.c.stream;
		a.detail = r.c.copy_kind, a.detail2 = r.c.src_kind | (uint32_t)r.c.dst_kind << 8;
		a.flags = r.c.async ? DF_GPU_ACT_ASYNC : 0;
		a.graph_node_id = r.c.graph_node_id;
	} else if (type == GPU_REC_MEMSET) {
		a.kind = DF_GPU_MEMSET;
		a.start = r.m.start, a.end = r.m.end, a.bytes = r.m.bytes;
		a.correlation = r.m.correlation;
		a.device = r.m.device, a.context = r.m.context, a.stream = r.m.stream;
		a.detail = r.m.value, a.graph_node_id = r.m.graph_node_id;
	} else {
		a.kind = DF_GPU_SYNC;
		a.start = r.y.start, a.end = r.y.end, a.correlation = r.y.correlation;
		a.context = r.y.context, a.stream = r.y.stream;
		a.detail = r.y.type, a.detail2 = r.y.event;
	}
	gpu_emit(s, &a, "");
}

static void gpu_note_record(struct gpu_stream *s, const uint8_t *p, size_t n)
{
	char text[GPU_NAME_MAX + 1];
	struct gpu_note t;

	if (!gpu_take(p, n, &t, sizeof(t)) ||
	    !gpu_take_str(text, sizeof(text), p, n, sizeof(t), t.len))
		return gpu_bad(s);
	if (text[0] && s->sink->note)
		s->sink->note(s->arg, s->pid, t.severity ? 1 : 0, text);
}

static void gpu_record(struct gpu_stream *s, uint16_t type, uint16_t rflags, const uint8_t *d,
		       uint32_t size)
{
	const uint8_t *p = d + sizeof(struct gpu_rec);
	size_t n = size - sizeof(struct gpu_rec);

	switch (type) {
	case GPU_REC_INFO:
		gpu_info_record(s, p, n);
		break;
	case GPU_REC_THREAD: {
		struct gpu_thread th;
		if (!gpu_take(p, n, &th, sizeof(th)))
			return gpu_bad(s);
		s->tid = th.tid;
		break;
	}
	case GPU_REC_STACK:
		gpu_stack_record(s, p, n);
		break;
	case GPU_REC_API_NAME:
		gpu_name_record(s, p, n);
		break;
	case GPU_REC_CALL:
	case GPU_REC_GRAPH_NODE:
		gpu_call_record(s, type, p, n);
		break;
	case GPU_REC_KERNEL:
	case GPU_REC_MARKER:
		gpu_named_record(s, type, p, n);
		break;
	case GPU_REC_MEMCPY:
	case GPU_REC_MEMSET:
	case GPU_REC_SYNC:
		gpu_unnamed_record(s, type, p, n);
		break;
	case GPU_REC_STATS:
		if (!gpu_take(p, n, &s->last, sizeof(s->last)))
			return gpu_bad(s);
		s->info.flags |= DF_GPU_INFO_HAVE_STATS;
		gpu_update_stats(s);
		break;
	case GPU_REC_NOTE:
		gpu_note_record(s, p, n);
		break;
	default:
		break; /* a newer library's record: skipped by size */
	}
	(void)rflags;
}

/* Parse complete records from d[0..len); returns the bytes consumed (the rest waits for more
 * data, or at_end is a cut). */
static size_t gpu_parse(struct gpu_stream *s, const uint8_t *d, size_t len, uint64_t time_limit,
			bool at_end)
{
	size_t pos = 0;

	while (!s->stopped && pos < len) {
		size_t left = len - pos;
		/* A file header: at the start, and again where the same PID appended after an
		 * exec (or after PID reuse). */
		if (!s->header_done || (left >= 8 && !memcmp(d + pos, GPU_FILE_MAGIC, 8))) {
			struct gpu_file_header h;
			if (left < 8 || (!s->header_done && left < sizeof(h))) {
				if (memcmp(d + pos, GPU_FILE_MAGIC, left < 8 ? left : 8)) {
					gpu_stop(s, DF_GPU_INFO_CORRUPT, "not a csampler GPU file (bad magic)");
					return pos;
				}
				break;
			}
			if (left < sizeof(h))
				break;
			memcpy(&h, d + pos, sizeof(h));
			if (memcmp(h.magic, GPU_FILE_MAGIC, 8)) {
				gpu_stop(s, DF_GPU_INFO_CORRUPT, "not a csampler GPU file (bad magic)");
				return pos;
			}
			if (h.version != GPU_PROTOCOL_VERSION) {
				char what[160];
				snprintf(what, sizeof(what), "protocol version %u, this csampler reads %u "
					 "(lib/libcsampler-cupti.so of another csampler version?)",
					 h.version, GPU_PROTOCOL_VERSION);
				gpu_stop(s, DF_GPU_INFO_CORRUPT, what);
				return pos;
			}
			if (h.header_size < sizeof(h) || h.header_size > GPU_HEADER_MAX ||
			    h.header_size % 8) {
				gpu_stop(s, DF_GPU_INFO_CORRUPT, "corrupt file header");
				return pos;
			}
			if (left < h.header_size)
				break;
			if (s->header_done) { /* a new image: keep the old one's counters */
				gpu_add_stats(&s->base, &s->last);
				memset(&s->last, 0, sizeof(s->last));
				gpu_stream_tables_free(s);
			}
			s->header_done = true;
			pos += h.header_size;
			s->offset += h.header_size;
			continue;
		}
		if (left < sizeof(struct gpu_rec))
			break;
		struct gpu_rec rec;
		memcpy(&rec, d + pos, sizeof(rec));
		if (rec.size < sizeof(rec) || rec.size % 8 || rec.size > GPU_REC_MAX) {
			gpu_stop(s, DF_GPU_INFO_CORRUPT, "corrupt record");
			return pos;
		}
		if (left < rec.size)
			break;
		if ((rec.type == GPU_REC_CALL || rec.type == GPU_REC_GRAPH_NODE) && !at_end &&
		    rec.size >= sizeof(rec) + 8) {
			uint64_t t;
			memcpy(&t, d + pos + sizeof(rec), 8);
			if (t > time_limit)
				break; /* the process' mappings are not known that far yet */
		}
		gpu_record(s, rec.type, rec.flags, d + pos, rec.size);
		pos += rec.size;
		s->offset += rec.size;
	}
	if (at_end && !s->stopped && pos < len && !s->reported) {
		s->reported = true;
		s->info.flags |= DF_GPU_INFO_CUT;
		cs_warn("GPU records of PID %u (%s): the file ends in a partial record at offset %llu (%zu bytes ignored: the process was killed?)",
			s->pid, s->name, (unsigned long long)s->offset, len - pos);
	}
	return pos;
}

static void gpu_stream_init(struct gpu_stream *s, const char *name, uint32_t pid, uint64_t min_time,
			    const struct gpu_sink *sink, void *arg)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->pid = pid;
	s->min_time = min_time;
	s->max_time = UINT64_MAX;
	s->sink = sink;
	s->arg = arg;
	s->info.pid = pid;
	s->info.vendor = GPU_VENDOR_CUDA;   /* the files of the CUPTI library (inject/cupti.c) */
}

static void gpu_stream_end(struct gpu_stream *s)
{
	if (s->info.bad_records)
		cs_warn("GPU records of PID %u (%s): %u malformed records skipped",
			s->pid, s->name, s->info.bad_records);
}

void gpu_channel_buffer(const void *data, size_t len, uint32_t pid, const struct gpu_sink *sink,
			void *arg, struct df_gpu_info *info)
{
	struct gpu_stream s;
	char name[32];
	snprintf(name, sizeof(name), "gpu-%u.bin", pid);
	gpu_stream_init(&s, name, pid, 0, sink, arg);
	if (len == 0) {
		s.stopped = true;
	} else {
		gpu_parse(&s, data, len, UINT64_MAX, true);
		gpu_stream_end(&s);
		gpu_stream_tables_free(&s);
	}
	if (info)
		*info = s.info;
}

/* ---- files ---- */

static bool gpu_pid_wanted(const struct gpu_channel *m, uint32_t pid)
{
	if (m->every_file)
		return true;
	for (size_t i = 0; i < m->npids; i++)
		if (m->pids[i] == pid)
			return true;
	return false;
}

static struct gpu_file *gpu_file_find(struct gpu_channel *m, uint32_t pid)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i]->s.pid == pid)
			return m->files[i];
	return NULL;
}

/* Start following gpu-PID.bin if it exists (NULL when it does not, or cannot be read). */
static struct gpu_file *gpu_file_open(struct gpu_channel *m, uint32_t pid)
{
	char *path = cs_asprintf("%s/gpu-%u.bin", m->dir, pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;

	if (fd < 0) {
		if (errno != ENOENT)
			cs_warn("GPU records of PID %u: open %s: %s: skipped", pid, path, strerror(errno));
		free(path);
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		cs_warn("GPU records of PID %u: %s is not a regular file: skipped", pid, path);
		close(fd);
		free(path);
		return NULL;
	}
	struct gpu_file *f = cs_calloc(1, sizeof(*f));
	f->path = path;
	f->fd = fd;
	gpu_stream_init(&f->s, cs_basename(path), pid, m->min_time, m->sink, m->arg);
	f->s.max_time = m->max_time;
	cs_grow(&m->files, &m->cap_files, m->nfiles + 1, sizeof(*m->files));
	m->files[m->nfiles++] = f;
	return f;
}

/* "gpu-123.bin" -> 123; 0 when the name is anything else. */
static uint32_t gpu_file_pid(const char *name)
{
	if (strncmp(name, "gpu-", 4))
		return 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(name + 4, &end, 10);
	if (errno || end == name + 4 || name[4] < '1' || name[4] > '9' || strcmp(end, ".bin") ||
	    v > 0x7fffffff)
		return 0;
	return (uint32_t)v;
}

static void gpu_scan(struct gpu_channel *m)
{
	DIR *dir = opendir(m->dir);
	struct dirent *e;
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		uint32_t pid = gpu_file_pid(e->d_name);
		if (pid && gpu_pid_wanted(m, pid) && !gpu_file_find(m, pid))
			gpu_file_open(m, pid);
	}
	closedir(dir);
}

static void gpu_file_poll(struct gpu_file *f, uint64_t time_limit, bool at_end)
{
	size_t got_total = 0;

	while (!f->s.stopped) {
		if (!at_end && f->len >= GPU_POLL_MAX)
			break; /* held back (time_limit): do not buffer the whole file */
		if (f->len + GPU_READ_STEP > f->cap) {
			f->cap = f->len + GPU_READ_STEP;
			f->buf = cs_realloc(f->buf, f->cap);
		}
		ssize_t got = read(f->fd, f->buf + f->len, f->cap - f->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			cs_warn("GPU records of PID %u: read %s: %s: the rest is skipped", f->s.pid,
				f->path, strerror(errno));
			f->s.stopped = true;
			break;
		}
		f->len += (size_t)got;
		size_t used = gpu_parse(&f->s, f->buf, f->len, time_limit, at_end && got == 0);
		memmove(f->buf, f->buf + used, f->len - used);
		f->len -= used;
		got_total += (size_t)got;
		/* while recording, a bounded amount per poll; a process' last drain (no time
		 * limit: it exited) and the end read everything */
		if (got == 0 || (!at_end && time_limit != UINT64_MAX && got_total > GPU_POLL_MAX))
			break;
		if (!at_end && used == 0 && f->len >= GPU_REC_MAX + GPU_HEADER_MAX)
			break; /* held back by time_limit: wait for the sampler */
	}
	if (at_end && f->len == 0 && !f->s.header_done && !f->s.stopped && !f->s.reported) {
		f->s.reported = true;
		f->s.info.flags |= DF_GPU_INFO_CUT;
		cs_warn("GPU records of PID %u (%s): the file is empty or has no complete header: skipped",
			f->s.pid, f->s.name);
	}
}

struct gpu_channel *gpu_channel_new(const char *dir, bool every_file, uint64_t min_time,
				    const struct gpu_sink *sink, void *arg)
{
	struct gpu_channel *m = cs_calloc(1, sizeof(*m));
	m->dir = cs_strdup(dir);
	m->every_file = every_file;
	m->min_time = min_time;
	m->max_time = UINT64_MAX;
	m->sink = sink;
	m->arg = arg;
	return m;
}

void gpu_channel_set_max_time(struct gpu_channel *m, uint64_t max_time)
{
	if (!m)
		return;
	m->max_time = max_time;
	for (size_t i = 0; i < m->nfiles; i++)
		m->files[i]->s.max_time = max_time;
}

void gpu_channel_add_pid(struct gpu_channel *m, uint32_t pid)
{
	if (!pid || gpu_pid_wanted(m, pid))
		return;
	cs_grow(&m->pids, &m->cap_pids, m->npids + 1, sizeof(uint32_t));
	m->pids[m->npids++] = pid;
}

void gpu_channel_poll(struct gpu_channel *m, uint32_t pid, uint64_t time_limit, bool at_end)
{
	if (!m)
		return;
	if (pid == 0) {
		gpu_scan(m);
		for (size_t i = 0; i < m->nfiles; i++)
			gpu_file_poll(m->files[i], time_limit, at_end);
		if (at_end)
			for (size_t i = 0; i < m->nfiles; i++)
				gpu_stream_end(&m->files[i]->s);
		return;
	}
	if (!gpu_pid_wanted(m, pid))
		return;
	struct gpu_file *f = gpu_file_find(m, pid);
	if (!f)
		f = gpu_file_open(m, pid);
	if (f)
		gpu_file_poll(f, time_limit, at_end);
}

size_t gpu_channel_nprocesses(const struct gpu_channel *m)
{
	size_t n = 0;
	for (size_t i = 0; m && i < m->nfiles; i++)
		n += m->files[i]->s.header_done || m->files[i]->s.info.flags;
	return n;
}

const struct df_gpu_info *gpu_channel_process(const struct gpu_channel *m, size_t i,
					      uint64_t *delivered)
{
	for (size_t k = 0; m && k < m->nfiles; k++) {
		const struct gpu_stream *s = &m->files[k]->s;
		if (!(s->header_done || s->info.flags))
			continue;
		if (i-- == 0) {
			if (delivered)
				*delivered = s->launches + s->activities;
			return &s->info;
		}
	}
	return NULL;
}

uint64_t gpu_channel_launches(const struct gpu_channel *m)
{
	uint64_t n = 0;
	for (size_t i = 0; m && i < m->nfiles; i++)
		n += m->files[i]->s.launches;
	return n;
}

uint64_t gpu_channel_activities(const struct gpu_channel *m)
{
	uint64_t n = 0;
	for (size_t i = 0; m && i < m->nfiles; i++)
		n += m->files[i]->s.activities;
	return n;
}

void gpu_channel_free(struct gpu_channel *m, bool remove_files)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfiles; i++) {
		struct gpu_file *f = m->files[i];
		gpu_stream_tables_free(&f->s);
		close(f->fd);
		if (remove_files)
			unlink(f->path);
		free(f->path);
		free(f->buf);
		free(f);
	}
	if (remove_files) {
		/* files of processes that were not of interest, then the directory */
		DIR *dir = opendir(m->dir);
		struct dirent *e;
		while (dir && (e = readdir(dir)))
			if (gpu_file_pid(e->d_name)) {
				char *p = cs_asprintf("%s/%s", m->dir, e->d_name);
				unlink(p);
				free(p);
			}
		if (dir)
			closedir(dir);
		rmdir(m->dir);
	}
	free(m->files);
	free(m->pids);
	free(m->dir);
	free(m);
}

int gpu_channel_merge_python(struct unwind_ctx *u, uint32_t pid, const struct gpu_py_frame *py,
			     size_t npy, bool cut, struct unwind_loc *locs, int n, int max,
			     enum py_merge_result *result)
{
	struct py_ext_frame f[GPU_MAX_PY_FRAMES];
	if (npy > GPU_MAX_PY_FRAMES)
		npy = GPU_MAX_PY_FRAMES;
	for (size_t i = 0; i < npy; i++)
		f[i] = (struct py_ext_frame){ py[i].code, py[i].unit,
					      (py[i].flags & GPU_PYF_ENTRY) != 0,
					      (py[i].flags & GPU_PYF_GENERATOR) != 0, 0, py[i].act,
					      0, 0 };
	return py_merge_frames(u, pid, f, (int)npy, cut, locs, n, max, result);
}
