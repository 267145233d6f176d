/* merge.c: df_merge(), the engine of `csampler merge` (merge.h). Each input is read twice:
 * once to check it whole and learn its tasks, header and clock, then, once every input has
 * passed and the ids are planned, to copy its records into the output with strings, modules,
 * locations, stacks, pids and tids renumbered and times moved onto the first input's clock. */
#include "format/merge.h"

#include "base/cs.h"
#include "base/hash.h"
#include "base/search.h"
#include "format/datafile.h"

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

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static const char *rdstr(const uint8_t *p, size_t len)
{
	return memchr(p, 0, len) ? (const char *)p : NULL;
}

static int merge_corrupt(const struct merge_input *in, const char *what)
{
	return cs_error(EINVAL, "merge: %s: corrupt %s record; only complete, valid data files "
			"can be merged", in->path, what);
}

#define NEED(n, what)                                    \
	do {                                             \
		if (len < (n))                           \
			return merge_corrupt(in, what);  \
	} while (0)

/* ---- pass 1: check an input and learn its tasks ---- */

static int merge_scan(void *arg, uint16_t type, const uint8_t *d, size_t len)
{
	struct merge_input *in = arg;

	switch (type) {
	case DF_HEADER_KV: {
		const char *k = rdstr(d, len), *v;
		if (!k || !(v = rdstr(d + strlen(k) + 1, len - strlen(k) - 1)))
			return merge_corrupt(in, "header");
		cs_grow(&in->header, &in->cap_header, in->nheader + 1, sizeof(*in->header));
		in->header[in->nheader++] = (struct merge_kv){ cs_strdup(k), cs_strdup(v) };
		break;
	}
	case DF_STRING:
		NEED(5, "string");
		if (cs_rd32(d) != in->nstrings || !rdstr(d + 4, len - 4))
			return merge_corrupt(in, "string");
		in->nstrings++;
		break;
	case DF_COMM:
		NEED(21, "comm");
		if (!rdstr(d + 20, len - 20))
			return merge_corrupt(in, "comm");
		merge_set_add(&in->tasks, cs_rd32(d), true);
		merge_set_add(&in->tasks, cs_rd32(d + 4), false);
		break;
	case DF_MMAP:
		NEED(49, "mmap");
		if (!rdstr(d + 48, len - 48))
			return merge_corrupt(in, "mmap");
		merge_set_add(&in->tasks, cs_rd32(d), true);
		merge_set_add(&in->tasks, cs_rd32(d + 4), false);
		break;
	case DF_FORK:
	case DF_EXIT:
		NEED(24, "fork");
		merge_set_add(&in->tasks, cs_rd32(d), true);
		merge_set_add(&in->tasks, cs_rd32(d + 4), true);
		merge_set_add(&in->tasks, cs_rd32(d + 8), false);
		merge_set_add(&in->tasks, cs_rd32(d + 12), false);
		break;
	case DF_LOST:
		NEED(16, "lost");
		break;
	case DF_MODULE: {
		NEED(10, "module");
		uint32_t id = cs_rd32(d);
		const char *path = rdstr(d + 8, len - 8);
		if (!path || id > in->nmodules ||
		    !rdstr(d + 8 + strlen(path) + 1, len - 8 - strlen(path) - 1))
			return merge_corrupt(in, "module");
		in->nmodules += id == in->nmodules;
		break;
	}
	case DF_LOC:
		NEED(20, "location");
		if (cs_rd32(d) != in->nlocs || cs_rd32(d + 4) >= in->nmodules)
			return merge_corrupt(in, "location");
		in->nlocs++;
		break;
	case DF_STACK: {
		NEED(8, "stack");
		uint32_t n = cs_rd32(d + 4);
		if (cs_rd32(d) != in->nstacks || n > (len - 8) / 4 || len != 8 + (size_t)n * 4)
			return merge_corrupt(in, "stack");
		for (uint32_t i = 0; i < n; i++)
			if (cs_rd32(d + 8 + 4 * i) >= in->nlocs)
				return merge_corrupt(in, "stack");
		in->nstacks++;
		break;
	}
	case DF_SAMPLE:
		NEED(32, "sample");
		if (cs_rd32(d + 20) >= in->nstacks)
			return merge_corrupt(in, "sample");
		merge_set_add(&in->tasks, cs_rd32(d + 8), true);
		merge_set_add(&in->tasks, cs_rd32(d + 12), false);
		break;
	case DF_SYMBOL: {
		NEED(8, "symbol");
		uint32_t n = cs_rd32(d + 4);
		if (cs_rd32(d) >= in->nlocs || n == 0 || n > (len - 8) / 16 || len != 8 + (size_t)n * 16)
			return merge_corrupt(in, "symbol");
		for (uint32_t i = 0; i < n; i++)
			if (cs_rd32(d + 8 + 16 * i) >= in->nstrings || cs_rd32(d + 12 + 16 * i) >= in->nstrings)
				return merge_corrupt(in, "symbol");
		break;
	}
	case DF_END:
		NEED(28, "end");
		in->samples = cs_rd64(d);
		in->lost = cs_rd64(d + 8);
		in->end_time = cs_rd64(d + 16);
		in->end_flags = cs_rd32(d + 24);
		break;
	case DF_RAW_SAMPLE:
		NEED(16, "raw sample");
		merge_set_add(&in->tasks, cs_rd32(d + 8), true);
		merge_set_add(&in->tasks, cs_rd32(d + 12), false);
		break;
	case DF_GPU_LAUNCH: {
		struct df_gpu_launch g;
		NEED(sizeof(g), "GPU launch");
		memcpy(&g, d, sizeof(g));
		if (g.stack >= in->nstacks || g.api >= in->nstrings) {
			in->bad_gpu++; /* skipped, as profile_load() skips it */
			break;
		}
		merge_set_add(&in->tasks, g.pid, true);
		merge_set_add(&in->tasks, g.tid, false);
		break;
	}
	case DF_GPU_ACTIVITY: {
		struct df_gpu_activity g;
		NEED(sizeof(g), "GPU activity");
		memcpy(&g, d, sizeof(g));
		if (g.name >= in->nstrings) {
			in->bad_gpu++;
			break;
		}
		merge_set_add(&in->tasks, g.pid, true);
		merge_set_add(&in->tasks, g.tid, false);
		break;
	}
	case DF_GPU_INFO:
		NEED(sizeof(struct df_gpu_info), "GPU info");
		merge_set_add(&in->tasks, cs_rd32(d), true);
		break;
	case DF_GPU_NOTE:
		NEED(9, "GPU note");
		if (!rdstr(d + 8, len - 8))
			return merge_corrupt(in, "GPU note");
		merge_set_add(&in->tasks, cs_rd32(d), true);
		break;
	case DF_TASK_LABEL: {
		struct df_task_label t;
		NEED(sizeof(t), "task label");
		memcpy(&t, d, sizeof(t));
		if (t.host >= in->nstrings)
			return merge_corrupt(in, "task label");
		merge_set_add(&in->tasks, t.id, t.flags & DF_TASK_LABEL_PROCESS);
		merge_set_add(&in->labelled, t.id, false);
		break;
	}
	default:
		if (type < 128)
			return cs_error(EPROTONOSUPPORT, "merge: %s: unknown record type %u: written by "
					"a newer csampler?", in->path, type);
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

static int merge_task_cmp(const void *a, const void *b)
{
	const struct merge_task *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static int merge_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

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

/* The output id of the input's string id (written to the output the first time). */
static uint32_t merge_str(struct merge *m, struct merge_input *in, uint32_t id)
{
	if (id == 0 || id >= in->nstrings2)
		return 0;
	if (!in->str_map[id])
		in->str_map[id] = df_strtab_id(m->strs, m->w, in->strings[id]);
	return in->str_map[id];
}

static void merge_put_task_id(const struct merge_input *in, uint8_t *p)
{
	wr32(p, merge_task_id(in, cs_rd32(p)));
}

static void merge_put_time(const struct merge_input *in, uint8_t *p)
{
	wr64(p, merge_time(in, cs_rd64(p)));
}

static int merge_copy(void *arg, uint16_t type, const uint8_t *d, size_t len)
{
	struct merge *m = arg;
	struct merge_input *in = &m->in[m->cur];
	uint8_t *b = cs_malloc(len + 1);

	memcpy(b, d, len);
	switch (type) {
	case DF_HEADER_KV:
	case DF_END:
		break;   /* written once for the whole output */
	case DF_STRING:
		cs_grow(&in->strings, &in->cap_strings, in->nstrings2 + 1, sizeof(char *));
		in->strings[in->nstrings2] = cs_strdup((const char *)d + 4);
		in->nstrings2++;
		break;
	case DF_COMM:
	case DF_MMAP:
		merge_put_task_id(in, b);
		merge_put_task_id(in, b + 4);
		merge_put_time(in, b + 8);
		df_put(m->w, type, b, len);
		break;
	case DF_FORK:
	case DF_EXIT:
		for (int i = 0; i < 4; i++)
			merge_put_task_id(in, b + 4 * i);
		merge_put_time(in, b + 16);
		df_put(m->w, type, b, len);
		break;
	case DF_LOST:
		merge_put_time(in, b);
		df_put(m->w, type, b, len);
		break;
	case DF_MODULE: {
		uint32_t id = cs_rd32(d);
		if (id == in->nmodules2) {
			in->module_map = cs_realloc(in->module_map, (id + 1) * sizeof(uint32_t));
			in->module_map[id] = m->out_modules++;
			in->nmodules2++;
		}
		wr32(b, in->module_map[id]);
		df_put(m->w, type, b, len);
		break;
	}
	case DF_LOC:
		wr32(b, in->loc_base + cs_rd32(d));
		wr32(b + 4, in->module_map[cs_rd32(d + 4)]);
		m->out_locs++;
		df_put(m->w, type, b, len);
		break;
	case DF_STACK: {
		uint32_t n = cs_rd32(d + 4);
		wr32(b, in->stack_base + cs_rd32(d));
		for (uint32_t i = 0; i < n; i++)
			wr32(b + 8 + 4 * i, in->loc_base + cs_rd32(d + 8 + 4 * i));
		m->out_stacks++;
		in->nstacks2++;
		df_put(m->w, type, b, len);
		break;
	}
	case DF_SAMPLE:
		merge_put_time(in, b);
		merge_put_task_id(in, b + 8);
		merge_put_task_id(in, b + 12);
		wr32(b + 20, in->stack_base + cs_rd32(d + 20));
		df_put(m->w, type, b, len);
		break;
	case DF_SYMBOL: {
		uint32_t n = cs_rd32(d + 4);
		wr32(b, in->loc_base + cs_rd32(d));
		for (uint32_t i = 0; i < n; i++) {
			wr32(b + 8 + 16 * i, merge_str(m, in, cs_rd32(d + 8 + 16 * i)));
			wr32(b + 12 + 16 * i, merge_str(m, in, cs_rd32(d + 12 + 16 * i)));
		}
		df_put(m->w, type, b, len);
		break;
	}
	case DF_RAW_SAMPLE:
		merge_put_time(in, b);
		merge_put_task_id(in, b + 8);
		merge_put_task_id(in, b + 12);
		df_put(m->w, type, b, len);
		break;
	case DF_GPU_LAUNCH: {
		struct df_gpu_launch g;
		memcpy(&g, d, sizeof(g));
		if (g.stack >= in->nstacks2 || g.api >= in->nstrings2)
			break;   /* left out in pass 1's count too */
		g.time = merge_time(in, g.time);
		g.pid = merge_task_id(in, g.pid);
		g.tid = merge_task_id(in, g.tid);
		g.stack += in->stack_base;
		g.api = merge_str(m, in, g.api);
		memcpy(b, &g, sizeof(g));
		df_put(m->w, type, b, len);
		break;
	}
	case DF_GPU_ACTIVITY: {
		struct df_gpu_activity g;
		memcpy(&g, d, sizeof(g));
		if (g.name >= in->nstrings2)
			break;
		g.pid = merge_task_id(in, g.pid);
		g.tid = merge_task_id(in, g.tid);
		g.start = merge_time(in, g.start);
		g.end = merge_time(in, g.end);
		g.queued = merge_time(in, g.queued);
		g.submitted = merge_time(in, g.submitted);
		g.name = merge_str(m, in, g.name);
		memcpy(b, &g, sizeof(g));
		df_put(m->w, type, b, len);
		break;
	}
	case DF_GPU_INFO:
	case DF_GPU_NOTE:
		merge_put_task_id(in, b);
		df_put(m->w, type, b, len);
		break;
	case DF_TASK_LABEL: {    /* an input that was merged: its labels stay, renumbered */
		struct df_task_label t;
		memcpy(&t, d, sizeof(t));
		t.id = merge_task_id(in, t.id);
		t.host = merge_str(m, in, t.host);
		t.input = (uint32_t)in->index;
		memcpy(b, &t, sizeof(t));
		df_put(m->w, type, b, len);
		break;
	}
	default:
		m->skipped_types[type - 128 < 256 ? type - 128 : 255]++;
		break;
	}
	free(b);
	return df_writer_error(m->w);
}

static void merge_kv(struct merge *m, const char *k, const char *v)
{
	df_put2(m->w, DF_HEADER_KV, k, strlen(k) + 1, v, strlen(v) + 1);
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
		df_put(m->w, DF_TASK_LABEL, &l, sizeof(l));
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
		ret = df_read(in->path, merge_scan, in);
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

	ret = df_writer_open(&m.w, output, compress);
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
		struct {
			uint64_t samples, lost, end_time;
			uint32_t flags;
		} __attribute__((packed)) rec = { samples, lost, end, flags & 1 };
		df_put(m.w, DF_END, &rec, sizeof(rec));
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
