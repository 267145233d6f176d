/* pprof.c: `csampler export --format pprof`, the profile.proto message of
 * github.com/google/pprof (proto/profile.proto) compressed with gzip (zlib), the file that
 * go tool pprof, Pyroscope, Parca and Grafana read. Sample types "samples/count" (all
 * samples) and "cpu/nanoseconds" (on-CPU ones), "offcpu/nanoseconds" when the file was
 * recorded with --idle (time blocked, under the "[off-cpu: SYSCALL]" leaves), and
 * "gpu/nanoseconds" when the file has GPU activities (each kernel,
 * copy, memset and sync weighs its duration, on the CPU stack of the call that launched it
 * under a leaf "[gpu] KERNEL", "[memcpy HtoD]", "[memset]" or "[sync]", as `flame --gpu`
 * draws them). One sample per distinct (call stack, thread) with location ids leaf first and
 * the labels pid, tid (numbers), thread_name, and rank when the recording kept one; one
 * location per physical frame, its inlined frames as extra lines (innermost first, as pprof
 * wants); one function per (name, source file); one mapping per module with its build id.
 *
 * The protobuf wire format is written by hand (varints and length-delimited fields, the few
 * helpers below): it is one message type with eight field kinds, and protobuf-c would add a
 * build dependency, a generated .pb-c.c kept in sync with profile.proto and a copy of every
 * string into its structs, for what is about fifty lines of encoding. */
#include "export/export.h"
#include "base/cs.h"
#include "base/hash.h"
#include "analysis/fold_gpu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- the wire format ---------------------------------------------------------------------- */

enum { PB_VARINT = 0, PB_LEN = 2 };

static void pb_varint(struct cs_buf *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	cs_buf_put(b, out, n);
}

static void pb_uint(struct cs_buf *b, uint32_t field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | PB_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct cs_buf *b, uint32_t field, const void *data, size_t len)
{
	pb_varint(b, (uint64_t)field << 3 | PB_LEN);
	pb_varint(b, len);
	cs_buf_put(b, data, len);
}

/* A nested message built in sub, appended as field of b; sub is emptied for reuse. */
static void pb_message(struct cs_buf *b, uint32_t field, struct cs_buf *sub)
{
	pb_bytes(b, field, sub->data, sub->len);
	sub->len = 0;
}

/* ---- profile.proto field numbers ---------------------------------------------------------- */

enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

/* ---- interning ---------------------------------------------------------------------------- */

/* An open-addressing table from a run of frame ids (a location: a physical frame and the
 * frames inlined into it) or a (name, file) pair (a function) to an id from 1. */
struct pprof_key {
	uint32_t off, len;  /* run keys[off .. off+len) of pprof_ctx.keys */
};

/* Runs of u32 (a location's frames, a function's name and file, a row) -> id from 1, in the
 * order first seen (base/hash.h; items are ids as pointers). */
struct pprof_table {
	struct cs_hash ids;
	struct pprof_key *runs;  /* by id - 1 */
	size_t n, cap;
};

struct pprof_ctx {
	const struct profile *p;
	uint32_t *keys;          /* the runs of every key, appended */
	size_t nkeys, keys_cap;
	struct pprof_table locations, functions, rows; /* rows: (stack, leaf, pid, tid) */
	struct cs_buf out, sub, line;
	uint32_t *stack_locations; /* scratch: one stack's location ids, leaf first */
	/* Strings the profile lacks (value-type and label names, GPU leaves): string ids from
	 * p->nstrings on, written after the profile's own. */
	const char **extra;
	char **owned;            /* those of extra[] allocated here */
	size_t nextra, extra_cap, nowned, owned_cap;
};

/* A sample before merging: a CPU sample record or a GPU activity. */
struct pprof_row {
	uint32_t stack;          /* stack id, or UINT32_MAX for none (GPU work without launch) */
	uint32_t leaf;           /* GPU rows: the string id of the leaf's name; 0 for CPU rows */
	uint32_t pid, tid;
	uint64_t count, gpu_ns;  /* samples (weights), GPU nanoseconds */
	uint64_t offcpu;         /* --idle: samples (weights) of time off the CPU */
};

/* The string id of s, a string of the export (not of the profile); own: s was allocated and
 * is freed with the context. */
static uint32_t pprof_extra(struct pprof_ctx *c, const char *s, bool own)
{
	cs_grow(&c->extra, &c->extra_cap, c->nextra + 1, sizeof(*c->extra));
	c->extra[c->nextra] = s;
	if (own) {
		*CS_PUSH(c->owned, c->nowned, c->owned_cap) = (char *)s;
	}
	return (uint32_t)(c->p->nstrings + c->nextra++);
}

/* A run being looked up in a table. */
struct pprof_lookup {
	const struct pprof_ctx *c;
	const struct pprof_table *t;
	const uint32_t *run;
	uint32_t len;
};

static bool pprof_run_eq(const void *item, const void *key)
{
	const struct pprof_lookup *k = key;
	const struct pprof_key *r = &k->t->runs[(uintptr_t)item - 1];
	return r->len == k->len && !memcmp(k->c->keys + r->off, k->run, k->len * 4);
}

static uint32_t pprof_intern(struct pprof_ctx *c, struct pprof_table *t, const uint32_t *run,
			     uint32_t len, bool *added)
{
	struct pprof_lookup key = { c, t, run, len };
	uint64_t h = cs_hash_bytes(run, len * 4, 0);
	uintptr_t id = (uintptr_t)cs_hash_find(&t->ids, h, pprof_run_eq, &key);
	*added = !id;
	if (id)
		return (uint32_t)id;
	cs_grow(&c->keys, &c->keys_cap, c->nkeys + len, sizeof(*c->keys));
	memcpy(c->keys + c->nkeys, run, len * 4);
	cs_grow(&t->runs, &t->cap, t->n + 1, sizeof(*t->runs));
	t->runs[t->n] = (struct pprof_key){ .off = (uint32_t)c->nkeys, .len = len };
	c->nkeys += len;
	id = ++t->n;
	cs_hash_insert(&t->ids, h, (void *)id);
	return (uint32_t)id;
}

/* The function id of frame fr, writing the Function message the first time. */
static uint32_t pprof_function(struct pprof_ctx *c, const struct profile_frame *fr)
{
	uint32_t key[2] = { fr->name, fr->file };
	bool added;
	uint32_t id = pprof_intern(c, &c->functions, key, 2, &added);

	if (added) {
		pb_uint(&c->sub, FUNCTION_ID, id);
		pb_uint(&c->sub, FUNCTION_NAME, fr->name);
		pb_uint(&c->sub, FUNCTION_SYSTEM_NAME, fr->name);
		pb_uint(&c->sub, FUNCTION_FILENAME, fr->file);
		pb_message(&c->out, PROFILE_FUNCTION, &c->sub);
	}
	return id;
}

/* The location id of run[0..len) (leaf first: inlined frames, then the physical frame that
 * holds them), writing the Location message (and its functions) the first time. */
static uint32_t pprof_location(struct pprof_ctx *c, const uint32_t *run, uint32_t len)
{
	const struct profile *p = c->p;
	bool added;
	uint32_t id = pprof_intern(c, &c->locations, run, len, &added);

	if (!added)
		return id;
	if (len == 2 && run[0] == UINT32_MAX) { /* a GPU leaf: one line, no mapping */
		struct profile_frame leaf = { .name = run[1] };
		uint32_t function = pprof_function(c, &leaf);
		pb_uint(&c->sub, LOCATION_ID, id);
		pb_uint(&c->line, LINE_FUNCTION_ID, function);
		pb_message(&c->sub, LOCATION_LINE, &c->line);
		pb_message(&c->out, PROFILE_LOCATION, &c->sub);
		return id;
	}
	uint32_t *functions = cs_calloc(len, sizeof(*functions));
	for (uint32_t i = 0; i < len; i++) /* functions first: they use c->sub */
		functions[i] = pprof_function(c, &p->frames[run[i]]);
	const struct profile_frame *physical = &p->frames[run[len - 1]];
	pb_uint(&c->sub, LOCATION_ID, id);
	if (physical->module < p->nmodules)
		pb_uint(&c->sub, LOCATION_MAPPING_ID, physical->module + 1);
	for (uint32_t i = 0; i < len; i++) {
		pb_uint(&c->line, LINE_FUNCTION_ID, functions[i]);
		pb_uint(&c->line, LINE_LINE, p->frames[run[i]].line);
		pb_message(&c->sub, LOCATION_LINE, &c->line);
	}
	pb_message(&c->out, PROFILE_LOCATION, &c->sub);
	free(functions);
	return id;
}

/* The location ids of stack st into c->stack_locations from index n, leaf first; returns
 * their number with the n before. */
static uint32_t pprof_stack(struct pprof_ctx *c, const struct profile_stack *st, uint32_t n)
{
	const struct profile *p = c->p;
	uint32_t start = 0;
	const uint32_t *frames = p->stack_frames + st->first;

	for (uint32_t d = 0; d < st->nframes; d++) {
		/* An inlined frame belongs with the frame below it: close the run at a frame that
		 * is not inlined, or at the root. */
		bool inlined = frames[d] < p->nframes &&
			       (p->frames[frames[d]].flags & PROFILE_FRAME_INLINED);
		if (inlined && d + 1 < st->nframes)
			continue;
		uint32_t len = d + 1 - start;
		bool valid = true;
		for (uint32_t i = start; i <= d; i++)
			valid = valid && frames[i] < p->nframes;
		if (valid)
			c->stack_locations[n++] = pprof_location(c, frames + start, len);
		start = d + 1;
	}
	return n;
}

static void pprof_value_type(struct pprof_ctx *c, uint32_t field, uint32_t type, uint32_t unit)
{
	pb_uint(&c->sub, VALUE_TYPE_TYPE, type);
	pb_uint(&c->sub, VALUE_TYPE_UNIT, unit);
	pb_message(&c->out, field, &c->sub);
}

/* gzip data[0..len) onto f. Returns 0, -EIO, or -ENOMEM after a message. */
static int pprof_gzip(FILE *f, const void *data, size_t len)
{
	z_stream z = { 0 };
	unsigned char chunk[65536];
	int zr;

	/* windowBits 15 + 16: a gzip header and trailer rather than zlib's. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return cs_error(ENOMEM, "export: deflateInit2 failed: %s", z.msg ? z.msg : "no memory");
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len; /* the message is far below 4 GiB; checked by the caller */
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR)
			break;
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, f) != sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	if (zr != Z_STREAM_END)
		return cs_error(EINVAL, "export: deflate failed (%d); report this as a bug", zr);
	return 0;
}

CS_CMP_FN(pprof_row_cmp, struct pprof_row,
	CS_CMP(a->stack, b->stack) ?: CS_CMP(a->leaf, b->leaf) ?: CS_CMP(a->pid, b->pid) ?:
	CS_CMP(a->tid, b->tid))

CS_CMP_FN(pprof_thread_cmp, struct profile_thread, CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid))

/* The row of (stack, leaf, pid, tid) in *rows, made (zeroed) the first time: one hash lookup
 * per sample record, however many there are. */
static struct pprof_row *pprof_row_of(struct pprof_ctx *c, struct pprof_row **rows,
				      size_t *cap, uint32_t stack, uint32_t leaf, uint32_t pid,
				      uint32_t tid)
{
	uint32_t key[4] = { stack, leaf, pid, tid };
	bool added;
	uint32_t id = pprof_intern(c, &c->rows, key, 4, &added);

	if (added) {
		cs_grow(rows, cap, id, sizeof(**rows));
		(*rows)[id - 1] = (struct pprof_row){ .stack = stack, .leaf = leaf, .pid = pid,
						      .tid = tid };
	}
	return &(*rows)[id - 1];
}

/* The rows of p: the sample records and the GPU activities that are GPU work (kernels,
 * copies, memsets, syncs), summed per (stack, leaf, pid, tid) and sorted. Returns their
 * number into *out (cs_malloc'ed). */
static size_t pprof_rows(struct pprof_ctx *c, struct pprof_row **out)
{
	const struct profile *p = c->p;
	struct pprof_row *rows = NULL;
	size_t rows_cap = 0;
	uint32_t *kernel_leaf = NULL; /* profile string id of a kernel name -> its leaf's id */
	uint32_t copy_leaf[16] = { 0 }, memset_leaf = 0, sync_leaf = 0;
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (s->stack < p->nstacks && s->weight) {
			struct pprof_row *row = pprof_row_of(c, &rows, &rows_cap, s->stack, 0, s->pid, s->tid);
			if (s->flags & PROFILE_SAMPLE_OFFCPU)
				row->offcpu += s->weight;
			else
				row->count += s->weight;
		}
	}
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		uint32_t *leaf;
		if (a->end <= a->start)
			continue;
		switch (a->kind) {
		case PROFILE_GPU_KERNEL:
			if (!kernel_leaf)
				kernel_leaf = cs_calloc(p->nstrings + 1, sizeof(*kernel_leaf));
			leaf = &kernel_leaf[a->name < p->nstrings ? a->name : 0];
			if (!*leaf) {
				const char *name = profile_str(p, a->name);
				*leaf = pprof_extra(c, cs_asprintf("[gpu] %s", *name ? name :
								   "(unnamed kernel)"), true);
			}
			break;
		case PROFILE_GPU_MEMCPY:
			leaf = &copy_leaf[a->detail < 16 ? a->detail : 0];
			if (!*leaf)
				*leaf = pprof_extra(c, cs_asprintf("[memcpy %s]",
						    fold_gpu_copy_kind(p, a)), true);
			break;
		case PROFILE_GPU_MEMSET:
			leaf = &memset_leaf;
			if (!*leaf)
				*leaf = pprof_extra(c, "[memset]", false);
			break;
		case PROFILE_GPU_SYNC:
			leaf = &sync_leaf;
			if (!*leaf)
				*leaf = pprof_extra(c, "[sync]", false);
			break;
		default:
			continue; /* NVTX ranges and API spans are not GPU work */
		}
		uint32_t stack = UINT32_MAX, pid = a->pid, tid = a->tid;
		if (a->launch < p->ngpu_launches) {
			const struct profile_gpu_launch *l = &p->gpu_launches[a->launch];
			pid = l->pid;
			tid = l->tid;
			if (l->stack < p->nstacks)
				stack = l->stack;
		}
		pprof_row_of(c, &rows, &rows_cap, stack, *leaf, pid, tid)->gpu_ns +=
			a->end - a->start;
	}
	free(kernel_leaf);
	qsort(rows, c->rows.n, sizeof(*rows), pprof_row_cmp); /* a stable order */
	*out = rows;
	return c->rows.n;
}

static void pprof_label(struct cs_buf *sample, struct cs_buf *label, uint32_t key, uint32_t str,
			int64_t num)
{
	pb_uint(label, LABEL_KEY, key);
	if (str)
		pb_uint(label, LABEL_STR, str);
	else
		pb_uint(label, LABEL_NUM, (uint64_t)num);
	pb_message(sample, SAMPLE_LABEL, label);
}

/* The module of the target's executable (the first word of the header's "target"), else the
 * first that is a file (not "[kernel.kallsyms]", "[python]", ...), else 0. */
static size_t pprof_main_module(const struct profile *p)
{
	const char *target = profile_header(p, "target");
	size_t len = target ? strcspn(target, " ") : 0;

	for (size_t m = 0; len && m < p->nmodules; m++) {
		const char *path = profile_str(p, p->modules[m].path);
		if (strlen(path) == len && !strncmp(path, target, len))
			return m;
	}
	for (size_t m = 0; m < p->nmodules; m++)
		if (profile_str(p, p->modules[m].path)[0] == '/')
			return m;
	return 0;
}

/* The string ids of the value types and label keys, after the profile's own strings. */
struct pprof_keys {
	uint32_t samples, count, cpu, nanoseconds, gpu, offcpu, pid, tid, thread, rank;
	bool has_gpu, has_offcpu;
};

static void pprof_sample_types(struct pprof_ctx *c, struct pprof_keys *k)
{
	const struct profile *p = c->p;

	k->has_gpu = p->ngpu_activities > 0;
	k->has_offcpu = false;
	for (size_t i = 0; i < p->nsamples_records && !k->has_offcpu; i++)
		k->has_offcpu = p->samples[i].flags & PROFILE_SAMPLE_OFFCPU;
	k->samples = pprof_extra(c, "samples", false);
	k->count = pprof_extra(c, "count", false);
	k->cpu = pprof_extra(c, "cpu", false);
	k->nanoseconds = pprof_extra(c, "nanoseconds", false);
	k->gpu = pprof_extra(c, "gpu", false);
	k->offcpu = pprof_extra(c, "offcpu", false);
	k->pid = pprof_extra(c, "pid", false);
	k->tid = pprof_extra(c, "tid", false);
	k->thread = pprof_extra(c, "thread_name", false);
	k->rank = 0;
	pprof_value_type(c, PROFILE_SAMPLE_TYPE, k->samples, k->count);
	pprof_value_type(c, PROFILE_SAMPLE_TYPE, k->cpu, k->nanoseconds);
	if (k->has_offcpu)
		pprof_value_type(c, PROFILE_SAMPLE_TYPE, k->offcpu, k->nanoseconds);
	if (k->has_gpu)
		pprof_value_type(c, PROFILE_SAMPLE_TYPE, k->gpu, k->nanoseconds);
}

/* The rank of each process of a multi-process run (RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK;
 * per process in a merged file), when the recording kept it, as a string id by process index
 * (0: none). A string label: pprof's decoder drops a numeric label whose value is 0, rank 0's. */
static uint32_t *pprof_rank_strings(struct pprof_ctx *c, struct pprof_keys *k)
{
	const struct profile *p = c->p;
	uint32_t *rank_strs = cs_calloc(p->nprocesses + 1, sizeof(*rank_strs));

	for (size_t i = 0; i < p->nprocesses; i++) {
		int32_t rank = profile_rank_of(p, p->processes[i].pid);
		if (rank < 0)
			continue;
		if (!k->rank)
			k->rank = pprof_extra(c, "rank", false);
		char *text = cs_malloc(16);
		snprintf(text, 16, "%d", (int)rank);
		rank_strs[i] = pprof_extra(c, text, true);
	}
	return rank_strs;
}

/* One Sample message per row: its locations, values and labels. */
static void pprof_write_samples(struct pprof_ctx *c, const struct pprof_keys *k,
				const uint32_t *rank_strs, uint64_t period_ns)
{
	const struct profile *p = c->p;
	uint32_t max_frames = 1;

	/* Thread names by (pid, tid). */
	struct profile_thread *threads = cs_calloc(p->nthreads + 1, sizeof(*threads));
	if (p->nthreads)
		memcpy(threads, p->threads, p->nthreads * sizeof(*threads));
	qsort(threads, p->nthreads, sizeof(*threads), pprof_thread_cmp);

	struct pprof_row *rows;
	size_t nrows = pprof_rows(c, &rows);
	for (size_t s = 0; s < p->nstacks; s++)
		if (p->stacks[s].nframes > max_frames)
			max_frames = p->stacks[s].nframes;
	c->stack_locations = cs_calloc(max_frames + 1, sizeof(*c->stack_locations));
	struct cs_buf sample = { 0 }, packed = { 0 }, label = { 0 };
	for (size_t r = 0; r < nrows; r++) {
		const struct pprof_row *row = &rows[r];
		uint32_t n = 0;
		if (row->leaf) {
			uint32_t run[2] = { UINT32_MAX, row->leaf };
			c->stack_locations[n++] = pprof_location(c, run, 2);
		}
		if (row->stack < p->nstacks)
			n = pprof_stack(c, &p->stacks[row->stack], n);
		for (uint32_t i = 0; i < n; i++)
			pb_varint(&packed, c->stack_locations[i]);
		pb_bytes(&sample, SAMPLE_LOCATION_ID, packed.data, packed.len);
		packed.len = 0;
		pb_varint(&packed, row->count + row->offcpu);
		pb_varint(&packed, row->count * period_ns);
		if (k->has_offcpu)
			pb_varint(&packed, row->offcpu * period_ns);
		if (k->has_gpu)
			pb_varint(&packed, row->gpu_ns);
		pb_bytes(&sample, SAMPLE_VALUE, packed.data, packed.len);
		packed.len = 0;
		pprof_label(&sample, &label, k->pid, 0, row->pid);
		pprof_label(&sample, &label, k->tid, 0, row->tid);
		struct profile_thread key = { .pid = row->pid, .tid = row->tid };
		const struct profile_thread *t = bsearch(&key, threads, p->nthreads, sizeof(*threads),
							 pprof_thread_cmp);
		uint32_t comm = t ? t->comm : 0;
		for (size_t i = 0; !comm && i < p->nprocesses; i++) /* a thread never renamed */
			if (p->processes[i].pid == row->pid)
				comm = p->processes[i].comm;
		if (comm && comm < p->nstrings)
			pprof_label(&sample, &label, k->thread, comm, 0);
		const struct profile_process *proc = k->rank ? profile_process_of(p, (uint32_t)row->pid) : NULL;
		if (proc && rank_strs[proc - p->processes])
			pprof_label(&sample, &label, k->rank, rank_strs[proc - p->processes], 0);
		pb_bytes(&c->out, PROFILE_SAMPLE, sample.data, sample.len);
		sample.len = 0;
	}
	cs_buf_free(&sample);
	cs_buf_free(&packed);
	cs_buf_free(&label);
	free(rows);
	free(threads);
}

/* The mappings, the string table, the times and the period. */
static void pprof_write_tail(struct pprof_ctx *c, const struct pprof_keys *k, uint64_t period_ns)
{
	const struct profile *p = c->p;

	/* pprof names the profile after its first mapping: the target's executable first. */
	size_t main_module = pprof_main_module(p);
	for (size_t i = 0; i < p->nmodules; i++) {
		size_t m = i == 0 ? main_module : i <= main_module ? i - 1 : i;
		pb_uint(&c->sub, MAPPING_ID, m + 1);
		pb_uint(&c->sub, MAPPING_FILENAME, p->modules[m].path);
		pb_uint(&c->sub, MAPPING_BUILD_ID, p->modules[m].build_id);
		pb_uint(&c->sub, MAPPING_HAS_FUNCTIONS, 1);
		pb_message(&c->out, PROFILE_MAPPING, &c->sub);
	}
	for (size_t i = 0; i < p->nstrings; i++)
		pb_bytes(&c->out, PROFILE_STRING_TABLE, p->strings[i], strlen(p->strings[i]));
	for (size_t i = 0; i < c->nextra; i++)
		pb_bytes(&c->out, PROFILE_STRING_TABLE, c->extra[i], strlen(c->extra[i]));

	const char *realtime = profile_header(p, "start_realtime_ns");
	uint64_t time_nanos = 0;
	if (realtime && !cs_parse_u64(realtime, &time_nanos))
		pb_uint(&c->out, PROFILE_TIME_NANOS, time_nanos);
	if (p->end_ns > p->start_ns)
		pb_uint(&c->out, PROFILE_DURATION_NANOS, p->end_ns - p->start_ns);
	pprof_value_type(c, PROFILE_PERIOD_TYPE, k->cpu, k->nanoseconds);
	pb_uint(&c->out, PROFILE_PERIOD, period_ns);
	pb_uint(&c->out, PROFILE_DEFAULT_SAMPLE_TYPE, k->cpu); /* pprof's default: the last type */
}

static void pprof_ctx_free(struct pprof_ctx *c)
{
	free(c->stack_locations);
	free(c->keys);
	struct pprof_table *tables[] = { &c->locations, &c->functions, &c->rows };
	for (size_t i = 0; i < 3; i++) {
		cs_hash_free(&tables[i]->ids);
		free(tables[i]->runs);
	}
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	free(c->owned);
	free(c->extra);
	cs_buf_free(&c->out);
	cs_buf_free(&c->sub);
	cs_buf_free(&c->line);
}

int export_pprof_write(FILE *f, const struct profile *p)
{
	struct pprof_ctx c = { .p = p };
	struct pprof_keys k;
	uint64_t period_ns = export_period_ns(p);
	int err;

	pprof_sample_types(&c, &k);
	uint32_t *rank_strs = pprof_rank_strings(&c, &k);
	pprof_write_samples(&c, &k, rank_strs, period_ns);
	free(rank_strs);
	pprof_write_tail(&c, &k, period_ns);
	if (c.out.len > UINT32_MAX)
		err = cs_error(EFBIG, "export: the pprof message is over 4 GiB; export a shorter "
			       "recording");
	else
		err = pprof_gzip(f, c.out.data, c.out.len);
	if (!err && ferror(f))
		err = -EIO;
	pprof_ctx_free(&c);
	return err;
}
