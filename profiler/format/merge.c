/* merge.c: df_merge(), the engine of `csampler merge` (merge.h). Each input is read twice:
 * once to check it whole and learn its tasks, header and clock, then, once every input has
 * passed and the ids are planned, to copy its records into the output with strings, modules,
 * locations, stacks, pids and tids renumbered and times moved onto the first input's clock. */
#include "format/merge.h"

#include "base/cs.h"
#include "base/hash.h"
#include "base/search.h"
#include "format/datafile.h"
#include "format/records.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A set of task ids: id -> 1 when the id was seen as a process id, else 0 (base/hash.h). 0 and
 * UINT32_MAX are never stored: they stay as they are, "no task" and the kernel's -1. */
static void merge_set_add(struct cs_map *s, uint32_t id, bool is_pid)
{
	if (id == 0 || id == UINT32_MAX)
		return;
	uint32_t *v = cs_map_slot(s, id, 0);
	*v = (*v == CS_MAP_NONE ? 0 : *v) | is_pid;
}

struct merge_kv {
	char *key, *value;
};

/* One task of an input: its id there, its id in the output, how it is labelled. */
struct merge_task {
	uint32_t id, new_id;
	bool is_pid;
	bool labelled;  /* the input (a merged file) has its own DF_TASK_LABEL for it */
};

struct merge_input {
	const char *path;
	size_t index;
	uint32_t version;   /* its format version (the output's is the oldest of them) */
	/* pass 1 */
	struct merge_kv *header;
	size_t nheader, cap_header;
	struct cs_map tasks;
	struct cs_map labelled;
	uint32_t nstrings, nmodules, nlocs, nstacks; /* counts, strings from 1 */
	uint64_t samples, lost, end_time;
	uint32_t end_flags;
	uint64_t bad_gpu;
	/* plan */
	const char *host;        /* header hostname, or "" */
	int64_t rank;            /* header rank, -1 when none */
	uint64_t start_mono, start_real;
	bool have_clock;
	int64_t shift;           /* added to its times */
	struct merge_task *task; /* sorted by id */
	size_t ntasks;
	/* pass 2 */
	char **strings;          /* by input string id (owned) */
	uint32_t *str_map;       /* input string id -> output id, 0 = not written yet */
	uint32_t *module_map;    /* input module id -> output module id */
	size_t cap_strings;
	uint32_t loc_base, stack_base;
	uint32_t nstacks2, nmodules2, nstrings2; /* copied so far */
};

struct merge {
	struct merge_input *in;
	size_t nin;
	size_t cur;     /* the input being copied */
	struct df_writer *w;
	struct df_strtab *strs;
	uint32_t out_modules, out_locs, out_stacks;
	uint64_t skipped_types[256]; /* optional records of unknown types, by type - 128 */
};

static int merge_corrupt(const struct merge_input *in, const char *what)
{
	return cs_error(EINVAL, "merge: %s: corrupt %s record; only complete, valid data files "
			"can be merged", in->path, what);
}

/* ---- pass 1: check an input and learn its tasks ---- */

/* The records that name tasks: each id seen, as a process or a thread id. */
/* A process and one of its threads, seen. */
static void merge_scan_task(struct merge_input *in, uint32_t pid, uint32_t tid)
{
	merge_set_add(&in->tasks, pid, true);
	merge_set_add(&in->tasks, tid, false);
}

/* Where a record of one thread (comm, mmap, sample, raw sample) holds its pid, tid and time,
 * and how many of its first bytes are fixed fields; false for another type. */
static bool merge_task_fields(uint16_t type, union df_record *r, uint32_t **pid, uint32_t **tid,
			      uint64_t **time, size_t *fixed)
{
	switch (type) {
	case DF_COMM:
		*pid = &r->comm.pid, *tid = &r->comm.tid, *time = &r->comm.time;
		*fixed = DF_COMM_FIXED;
		return true;
	case DF_MMAP:
		*pid = &r->mmap.pid, *tid = &r->mmap.tid, *time = &r->mmap.time;
		*fixed = DF_MMAP_FIXED;
		return true;
	case DF_SAMPLE:
		*pid = &r->sample.pid, *tid = &r->sample.tid, *time = &r->sample.time;
		*fixed = DF_SAMPLE_SIZE;
		return true;
	case DF_RAW_SAMPLE:
		*pid = &r->raw.pid, *tid = &r->raw.tid, *time = &r->raw.time;
		*fixed = DF_RAW_SAMPLE_TASK;
		return true;
	default:
		return false;
	}
}

static void merge_scan_tasks(struct merge_input *in, uint16_t type, union df_record *r)
{
	uint32_t *pid, *tid;
	uint64_t *time;
	size_t fixed;

	if (merge_task_fields(type, r, &pid, &tid, &time, &fixed)) {
		merge_scan_task(in, *pid, *tid);
	} else if (type == DF_FORK || type == DF_EXIT) {
		merge_set_add(&in->tasks, r->task.pid, true);
		merge_set_add(&in->tasks, r->task.ppid, true);
		merge_set_add(&in->tasks, r->task.tid, false);
		merge_set_add(&in->tasks, r->task.ptid, false);
	}
}

/* The records that define ids (strings, modules, locations, stacks): counted, as
 * df_check_record checks the next ones against them. */
static void merge_scan_ids(struct merge_input *in, uint16_t type, const union df_record *r)
{
	if (type == DF_STRING)
		in->nstrings++;
	else if (type == DF_MODULE)
		in->nmodules += r->module.id == in->nmodules;
	else if (type == DF_LOC)
		in->nlocs++;
	else if (type == DF_STACK)
		in->nstacks++;
}

/* The GPU records and task labels. A GPU record whose stack or string is missing is left out
 * (counted in bad_gpu), as profile_load() skips it. */
static void merge_scan_gpu(struct merge_input *in, uint16_t type, const union df_record *r)
{
	switch (type) {
	case DF_GPU_LAUNCH:
		if (r->launch.stack >= in->nstacks || r->launch.api >= in->nstrings)
			in->bad_gpu++;
		else
			merge_scan_task(in, r->launch.pid, r->launch.tid);
		return;
	case DF_GPU_ACTIVITY:
		if (r->act.name >= in->nstrings)
			in->bad_gpu++;
		else
			merge_scan_task(in, r->act.pid, r->act.tid);
		return;
	case DF_GPU_INFO:
	case DF_GPU_NOTE:
		merge_set_add(&in->tasks, type == DF_GPU_INFO ? r->info.pid : r->note.pid, true);
		return;
	case DF_TASK_LABEL:
		merge_set_add(&in->tasks, r->label.id, r->label.flags & DF_TASK_LABEL_PROCESS);
		merge_set_add(&in->labelled, r->label.id, false);
		return;
	default:
		return;
	}
}

/* One record of pass 1: decoded and checked through format/records.c (as the loader does). */
static int merge_scan(void *arg, uint16_t type, const uint8_t *d, size_t len)
{
	struct merge_input *in = arg;
	const struct df_ids ids = { in->nstrings, in->nmodules, in->nlocs, in->nstacks };
	union df_record r;
	int err = df_decode_record(type, d, len, &r);

	if (err == -ENOENT && type < 128)
		return cs_error(EPROTONOSUPPORT, "merge: %s: unknown record type %u: written by "
				"a newer csampler?", in->path, type);
	if (err == -ENOENT)
		return 0;
	if (err || df_check_record(type, &r, &ids))
		return merge_corrupt(in, df_record_name(type));
	switch (type) {
	case DF_HEADER_KV:
		*CS_PUSH(in->header, in->nheader, in->cap_header) =
			(struct merge_kv){ cs_strdup(r.kv.key), cs_strdup(r.kv.value) };
		break;
	case DF_END:
		in->samples = r.end.samples;
		in->lost = r.end.lost;
		in->end_time = r.end.end_time;
		in->end_flags = r.end.flags;
		break;
	default: /* each takes its own types */
		merge_scan_tasks(in, type, &r);
		merge_scan_ids(in, type, &r);
		merge_scan_gpu(in, type, &r);
		break;
	}
	return 0;
}

static const char *merge_header(const struct merge_input *in, const char *key)
{
	for (size_t i = in->nheader; i-- > 0;)
		if (!strcmp(in->header[i].key, key))
			return in->header[i].value;
	return NULL;
}

CS_CMP_FN(merge_task_cmp, struct merge_task, CS_CMP(a->id, b->id))

CS_CMP_FN(merge_u32_cmp, uint32_t, CS_CMP(*a, *b))

/* Header values, clocks, and each input's task ids in the output. */
static int merge_plan(struct merge *m)
{
	uint32_t *used = NULL;      /* ids given so far, sorted */
	size_t nused = 0, cap_used = 0;
	uint32_t next_free = DF_TASK_REMAP_BASE;

	for (size_t k = 0; k < m->nin; k++) {
		struct merge_input *in = &m->in[k];
		const char *v;
		uint64_t u;

		in->host = merge_header(in, "hostname");
		if (!in->host)
			in->host = "";
		v = merge_header(in, "rank");
		in->rank = v && cs_parse_u64(v, &u) == 0 && u <= INT32_MAX ? (int64_t)u : -1;
		const char *mono = merge_header(in, "start_monotonic_ns");
		const char *real = merge_header(in, "start_realtime_ns");
		in->have_clock = mono && real && cs_parse_u64(mono, &in->start_mono) == 0 &&
				 cs_parse_u64(real, &in->start_real) == 0;
		/* the clock: inputs of one host share the first one's offset */
		in->shift = 0;
		const struct merge_input *host_ref = NULL;
		for (size_t j = 0; j <= k && !host_ref; j++)
			if (m->in[j].have_clock && !strcmp(m->in[j].host, in->host))
				host_ref = &m->in[j];
		const struct merge_input *ref = m->in[0].have_clock ? &m->in[0] : NULL;
		if (!in->have_clock && k)
			cs_warn("merge: %s does not say when it started (start_realtime_ns, "
				"start_monotonic_ns): its times are kept as they are", in->path);
		if (host_ref && ref && strcmp(host_ref->host, ref->host))
			in->shift = ((int64_t)host_ref->start_real - (int64_t)host_ref->start_mono) -
				    ((int64_t)ref->start_real - (int64_t)ref->start_mono);

		/* tasks: keep the id unless an earlier input took it */
		in->ntasks = in->tasks.n;
		in->task = cs_calloc(in->ntasks + 1, sizeof(*in->task));
		size_t n = 0;
		for (size_t i = 0; i < in->tasks.cap; i++) {
			const struct cs_map_slot *t = &in->tasks.slots[i];
			if (t->val != CS_MAP_NONE)
				in->task[n++] = (struct merge_task){
					.id = (uint32_t)t->a, .is_pid = t->val,
					.labelled = cs_map_find(&in->labelled, t->a, 0) != CS_MAP_NONE };
		}
		cs_qsort(in->task, n, sizeof(*in->task), merge_task_cmp);
		for (size_t i = 0; i < n; i++) {
			uint32_t id = in->task[i].id;
			bool taken = nused && bsearch(&id, used, nused, sizeof(*used), merge_u32_cmp);
			if (taken) {
				do
					id = next_free++;
				while (bsearch(&id, used, nused, sizeof(*used), merge_u32_cmp));
				if (next_free == UINT32_MAX) {
					free(used);
					return cs_error(ERANGE, "merge: too many tasks to number apart");
				}
			}
			in->task[i].new_id = id;
		}
		cs_grow(&used, &cap_used, nused + n + 1, sizeof(*used));
		for (size_t i = 0; i < n; i++)
			used[nused++] = in->task[i].new_id;
		cs_qsort(used, nused, sizeof(*used), merge_u32_cmp);
	}
	free(used);
	return 0;
}

/* ---- pass 2: copy ---- */

static uint32_t merge_task_id(const struct merge_input *in, uint32_t id)
{
	if (id == 0 || id == UINT32_MAX)
		return id;
	size_t lo = CS_LOWER_BOUND(in->task, in->ntasks, id, id);
	return lo < in->ntasks && in->task[lo].id == id ? in->task[lo].new_id : id;
}

static uint64_t merge_time(const struct merge_input *in, uint64_t t)
{
	if (!t || !in->shift)
		return t;
	int64_t v = (int64_t)t + in->shift;
	return v > 0 ? (uint64_t)v : 1;
}

/* A record's task renumbered and its time moved. */
static void merge_task_time(const struct merge_input *in, uint32_t *pid, uint32_t *tid,
			    uint64_t *time)
{
	*pid = merge_task_id(in, *pid);
	*tid = merge_task_id(in, *tid);
	*time = merge_time(in, *time);
}

/* The output id of the input's string id (written to the output the first time). */
static uint32_t merge_str(struct merge *m, struct merge_input *in, uint32_t id)
{
	if (id == 0 || id >= in->nstrings2)
		return 0;
	if (!in->str_map[id])
		in->str_map[id] = df_strtab_id(m->strs, m->w, in->strings[id]);
	return in->str_map[id];
}

/* The records of tasks: ids renumbered, times moved, over a copy b of the payload (its tail,
 * if any, kept). Pass 1 checked every record. */
static void merge_copy_tasks(struct merge_input *in, uint16_t type, union df_record *r,
			     size_t len, uint8_t *b)
{
	uint32_t *pid, *tid;
	uint64_t *time;
	size_t fixed;

	if (merge_task_fields(type, r, &pid, &tid, &time, &fixed)) {
		merge_task_time(in, pid, tid, time);
		df_encode_fixed(b, r, fixed);   /* each struct is the union's start */
		return;
	}
	switch (type) {
	case DF_FORK:
	case DF_EXIT:
		r->task = (struct df_task){
			.pid = merge_task_id(in, r->task.pid), .ppid = merge_task_id(in, r->task.ppid),
			.tid = merge_task_id(in, r->task.tid), .ptid = merge_task_id(in, r->task.ptid),
			.time = merge_time(in, r->task.time) };
		df_encode_fixed(b, &r->task, DF_TASK_SIZE);
		break;
	case DF_LOST:
		r->lost.time = merge_time(in, r->lost.time);
		df_encode_fixed(b, &r->lost, DF_LOST_SIZE);
		break;
	case DF_GPU_INFO:
		r->info.pid = merge_task_id(in, r->info.pid);
		df_encode_fixed(b, &r->info, sizeof(r->info));
		break;
	case DF_GPU_NOTE:
		r->note.pid = merge_task_id(in, r->note.pid);
		df_encode_fixed(b, &r->note, DF_GPU_NOTE_FIXED);
		break;
	}
}

/* The records of ids: modules, locations, stacks and samples numbered after the earlier
 * inputs', strings through the output's table. */
static void merge_copy_ids(struct merge *m, struct merge_input *in, uint16_t type,
			   union df_record *r, size_t len, uint8_t *b)
{
	switch (type) {
	case DF_MODULE:
		if (r->module.id == in->nmodules2) {
			in->module_map = cs_realloc(in->module_map,
						    (r->module.id + 1) * sizeof(uint32_t));
			in->module_map[r->module.id] = m->out_modules++;
			in->nmodules2++;
		}
		r->module.id = in->module_map[r->module.id];
		df_encode_fixed(b, &r->module, DF_MODULE_FIXED);
		df_put(m->w, type, b, len);
		break;
	case DF_LOC:
		r->loc.id += in->loc_base;
		r->loc.module = in->module_map[r->loc.module];
		df_encode_fixed(b, &r->loc, DF_LOC_SIZE);
		m->out_locs++;
		df_put(m->w, type, b, len);
		break;
	case DF_STACK: {
		uint32_t *locs = cs_malloc(((size_t)r->stack.n + 1) * sizeof(uint32_t));
		for (uint32_t i = 0; i < r->stack.n; i++)
			locs[i] = in->loc_base + df_stack_loc(&r->stack, i);
		df_put_stack(m->w, in->stack_base + r->stack.id, locs, r->stack.n);
		free(locs);
		m->out_stacks++;
		in->nstacks2++;
		break;
	}
	case DF_SAMPLE:
		merge_task_time(in, &r->sample.pid, &r->sample.tid, &r->sample.time);
		r->sample.stack += in->stack_base;
		df_encode_fixed(b, &r->sample, DF_SAMPLE_SIZE);
		df_put(m->w, type, b, len);
		break;
	case DF_SYMBOL: {
		struct df_symbol_frame *f = cs_malloc(r->sym.n * sizeof(*f));
		for (uint32_t i = 0; i < r->sym.n; i++) {
			f[i] = df_symbol_at(&r->sym, i);
			f[i].name = merge_str(m, in, f[i].name);
			f[i].file = merge_str(m, in, f[i].file);
		}
		df_put_symbol(m->w, in->loc_base + r->sym.loc, f, r->sym.n);
		free(f);
		break;
	}
	}
}

/* The GPU records and task labels: tasks, times, stacks and strings renumbered. A record
 * longer than its struct keeps its tail. */
static void merge_copy_gpu(struct merge *m, struct merge_input *in, uint16_t type,
			   union df_record *r, size_t len, uint8_t *b)
{
	switch (type) {
	case DF_GPU_LAUNCH:
		if (r->launch.stack >= in->nstacks2 || r->launch.api >= in->nstrings2)
			return;   /* left out in pass 1's count too */
		r->launch.time = merge_time(in, r->launch.time);
		r->launch.pid = merge_task_id(in, r->launch.pid);
		r->launch.tid = merge_task_id(in, r->launch.tid);
		r->launch.stack += in->stack_base;
		r->launch.api = merge_str(m, in, r->launch.api);
		memcpy(b, &r->launch, sizeof(r->launch));
		break;
	case DF_GPU_ACTIVITY:
		if (r->act.name >= in->nstrings2)
			return;
		r->act.pid = merge_task_id(in, r->act.pid);
		r->act.tid = merge_task_id(in, r->act.tid);
		r->act.start = merge_time(in, r->act.start);
		r->act.end = merge_time(in, r->act.end);
		r->act.queued = merge_time(in, r->act.queued);
		r->act.submitted = merge_time(in, r->act.submitted);
		r->act.name = merge_str(m, in, r->act.name);
		memcpy(b, &r->act, sizeof(r->act));
		break;
	default: /* DF_TASK_LABEL: an input that was merged: its labels stay, renumbered */
		r->label.id = merge_task_id(in, r->label.id);
		r->label.host = merge_str(m, in, r->label.host);
		r->label.input = (uint32_t)in->index;
		memcpy(b, &r->label, sizeof(r->label));
		break;
	}
	df_put(m->w, type, b, len);
}

static int merge_copy(void *arg, uint16_t type, const uint8_t *d, size_t len)
{
	struct merge *m = arg;
	struct merge_input *in = &m->in[m->cur];
	uint8_t *b = cs_malloc(len + 1);
	union df_record r;

	memcpy(b, d, len);
	df_decode_record(type, d, len, &r); /* pass 1 checked it (-ENOENT: skipped below) */
	switch (type) {
	case DF_HEADER_KV:
	case DF_END:
		break;   /* written once for the whole output */
	case DF_STRING:
		cs_grow(&in->strings, &in->cap_strings, in->nstrings2 + 1, sizeof(char *));
		in->strings[in->nstrings2] = cs_strdup(r.str.text);
		in->nstrings2++;
		break;
	case DF_COMM:
	case DF_MMAP:
	case DF_FORK:
	case DF_EXIT:
	case DF_LOST:
	case DF_RAW_SAMPLE:
	case DF_GPU_INFO:
	case DF_GPU_NOTE:
		merge_copy_tasks(in, type, &r, len, b);
		df_put(m->w, type, b, len);
		break;
	case DF_MODULE:
	case DF_LOC:
	case DF_STACK:
	case DF_SAMPLE:
	case DF_SYMBOL:
		merge_copy_ids(m, in, type, &r, len, b);
		break;
	case DF_GPU_LAUNCH:
	case DF_GPU_ACTIVITY:
	case DF_TASK_LABEL:
		merge_copy_gpu(m, in, type, &r, len, b);
		break;
	default:
		m->skipped_types[type - 128 < 256 ? type - 128 : 255]++;
		break;
	}
	free(b);
	return df_writer_error(m->w);
}

static void merge_kv(struct merge *m, const char *k, const char *v)
{
	df_put_header_kv(m->w, k, v);
}

/* The output's header: the first input's keys, with the merged run's start, hosts and
 * inputs; no rank (the task labels have them). */
static void merge_write_header(struct merge *m, const char *cmdline)
{
	const struct merge_input *first = &m->in[0];
	uint64_t start = UINT64_MAX;
	struct cs_buf hosts = { 0 };
	char num[32];

	for (size_t k = 0; k < m->nin; k++) {
		const struct merge_input *in = &m->in[k];
		if (in->have_clock && merge_time(in, in->start_mono) < start)
			start = merge_time(in, in->start_mono);
		bool seen = false;
		for (size_t j = 0; j < k; j++)
			seen |= !strcmp(m->in[j].host, in->host);
		if (!seen && *in->host)
			cs_buf_printf(&hosts, "%s%s", hosts.len ? "," : "", in->host);
	}
	cs_buf_put(&hosts, "", 1);
	for (size_t i = 0; i < first->nheader; i++) {
		const char *k = first->header[i].key;
		if (!strcmp(k, "rank") || !strcmp(k, "rank_from") || !strcmp(k, "hostname") ||
		    !strcmp(k, "start_monotonic_ns") || !strcmp(k, "start_realtime_ns") ||
		    !strcmp(k, "merged") || !strncmp(k, "merge.", 6) || !strcmp(k, "merge_cmdline"))
			continue;
		merge_kv(m, k, first->header[i].value);
	}
	merge_kv(m, "hostname", hosts.data);
	if (start != UINT64_MAX && first->have_clock) {
		snprintf(num, sizeof(num), "%" PRIu64, start);
		merge_kv(m, "start_monotonic_ns", num);
		snprintf(num, sizeof(num), "%" PRIu64,
			 start + (first->start_real - first->start_mono));
		merge_kv(m, "start_realtime_ns", num);
	}
	snprintf(num, sizeof(num), "%zu", m->nin);
	merge_kv(m, "merged", num);
	merge_kv(m, "merge_cmdline", cmdline ? cmdline : "");
	for (size_t k = 0; k < m->nin; k++) {
		const struct merge_input *in = &m->in[k];
		char key[48], *v;
		snprintf(key, sizeof(key), "merge.input.%zu", k);
		if (in->rank >= 0)
			v = cs_asprintf("%s (host %s, rank %" PRId64 ")", in->path,
					*in->host ? in->host : "?", in->rank);
		else
			v = cs_asprintf("%s (host %s, no rank)", in->path, *in->host ? in->host : "?");
		merge_kv(m, key, v);
		free(v);
	}
	cs_buf_free(&hosts);
}

/* One DF_TASK_LABEL per task of input in (except those it labels itself). */
static void merge_write_labels(struct merge *m, struct merge_input *in)
{
	uint32_t host = *in->host ? df_strtab_id(m->strs, m->w, in->host) : 0;
	for (size_t i = 0; i < in->ntasks; i++) {
		const struct merge_task *t = &in->task[i];
		if (t->labelled)
			continue;
		struct df_task_label l = {
			.id = t->new_id, .orig_id = t->id, .rank = (int32_t)in->rank,
			.input = (uint32_t)in->index, .host = host,
			.flags = t->is_pid ? DF_TASK_LABEL_PROCESS : 0 };
		df_put_task_label(m->w, &l);
	}
}

static void merge_input_free(struct merge_input *in)
{
	for (size_t i = 0; i < in->nheader; i++) {
		free(in->header[i].key);
		free(in->header[i].value);
	}
	free(in->header);
	cs_map_free(&in->tasks);
	cs_map_free(&in->labelled);
	free(in->task);
	for (size_t i = 0; i < in->nstrings2; i++)
		free(in->strings[i]);
	free(in->strings);
	free(in->str_map);
	free(in->module_map);
}

int df_merge(const char *output, const char *const *inputs, size_t ninputs, bool compress,
	     const char *cmdline)
{
	struct merge m = { .nin = ninputs };
	struct stat out_st, in_st;
	bool out_exists = stat(output, &out_st) == 0;
	int ret = 0;

	m.in = cs_calloc(ninputs, sizeof(*m.in));
	for (size_t k = 0; k < ninputs && !ret; k++) {
		struct merge_input *in = &m.in[k];
		in->path = inputs[k];
		in->index = k;
		in->nstrings = 1;
		if (out_exists && stat(inputs[k], &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
		    in_st.st_ino == out_st.st_ino) {
			ret = cs_error(EINVAL, "merge: %s is also an input; give another name with -o",
				       output);
			break;
		}
		ret = df_read_version(in->path, merge_scan, in, &in->version);
		if (ret == 1)
			ret = cs_error(EINVAL, "merge: %s is truncated (its recording did not end): "
				       "only complete data files can be merged; 'csampler info %s' shows "
				       "what it holds", in->path, in->path);
		if (!ret && in->bad_gpu)
			cs_warn("merge: %s: %" PRIu64 " GPU records refer to missing stacks or strings: "
				"left out", in->path, in->bad_gpu);
	}
	if (!ret)
		ret = merge_plan(&m);
	if (ret)
		goto out;

	/* The records are copied as they are: a version 1 input's launch stacks are not trimmed
	 * yet (datafile.h), so the output says the oldest version, and its readers trim. */
	uint32_t version = DF_VERSION;
	for (size_t k = 0; k < m.nin; k++)
		version = m.in[k].version < version ? m.in[k].version : version;
	ret = df_writer_open_version(&m.w, output, compress, version);
	if (ret)
		goto out;
	m.strs = df_strtab_new();
	merge_write_header(&m, cmdline);
	uint64_t samples = 0, lost = 0, end = 0;
	uint32_t flags = 1;
	for (size_t k = 0; k < m.nin && !ret; k++) {
		struct merge_input *in = &m.in[k];
		in->str_map = cs_calloc(in->nstrings + 1, sizeof(uint32_t));
		in->strings = cs_calloc(in->nstrings + 1, sizeof(char *));
		in->cap_strings = in->nstrings + 1;
		in->strings[0] = cs_strdup("");
		in->nstrings2 = 1;
		in->loc_base = m.out_locs;
		in->stack_base = m.out_stacks;
		merge_write_labels(&m, in);
		m.cur = k;
		ret = df_read(in->path, merge_copy, &m);
		if (ret == 1)
			ret = cs_error(EIO, "merge: %s changed while it was read; merge again", in->path);
		samples += in->samples;
		lost += in->lost;
		uint64_t e = merge_time(in, in->end_time);
		end = e > end ? e : end;
		flags &= in->end_flags;
	}
	if (!ret) {
		df_put_end(m.w, &(struct df_end){ samples, lost, end, flags & 1 });
	}
	int cret = df_writer_close(m.w);
	m.w = NULL;
	if (!ret)
		ret = cret;
	if (ret) {
		/* never leave a part that could pass for the merged file; the previous file of
		 * that name (df_writer_open made it .old) gets its name back */
		unlink(output);
		if (out_exists) {
			char *old = cs_asprintf("%s.old", output);
			rename(old, output);
			free(old);
		}
		goto out;
	}
	for (size_t t = 0; t < 256; t++)
		if (m.skipped_types[t])
			cs_warn("merge: %" PRIu64 " optional records of type %zu (unknown to this "
				"csampler) left out", m.skipped_types[t], t + 128);
out:
	for (size_t k = 0; k < ninputs; k++)
		merge_input_free(&m.in[k]);
	free(m.in);
	df_strtab_free(m.strs);
	return ret < 0 ? ret : ret ? -EIO : 0;
}
