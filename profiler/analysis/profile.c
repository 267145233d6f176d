/* profile.c: profile_load(): reads a data file (datafile.c) into the in-memory model of
 * profile.h, validating every id, and expands each stack's locations into named frames. */
#include "analysis/profile.h"

#include "base/cs.h"
#include "base/hash.h"
#include "base/search.h"
#include "format/datafile.h"
#include "format/records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct load_loc {
	uint32_t module, flags;
	uint64_t offset;
	uint32_t sym_first, sym_n;   /* into load.syms, sym_n == 0: not symbolized */
	uint32_t frame_first, frame_n;
};

struct load_sym {
	uint32_t name, file, line, flags;
};

struct load_comm {
	uint32_t pid, tid, str;  /* str: interned in load_finish */
	uint64_t seq;            /* arrival order: the last name of a tid wins */
	char *name;              /* owned until interned */
};

struct load_fork {
	uint32_t pid, ppid;
};

struct load {
	const char *path;
	struct profile *p;
	size_t cap_strings, cap_modules, cap_samples, cap_header, cap_stack_frames, cap_stacks;
	struct load_loc *locs;
	size_t nlocs, cap_locs;
	uint32_t *stack_locs;         /* raw loc ids of every stack, leaf first */
	size_t nstack_locs, cap_stack_locs;
	struct load_sym *syms;
	size_t nsyms, cap_syms;
	struct load_comm *comms;
	size_t ncomms, cap_comms;
	struct load_fork *forks;
	size_t nforks, cap_forks;
	char **module_names;          /* by module id: path, build-id (owned until interned) */
	size_t cap_module_names;
	/* synthesized-string lookup, built after reading: string id as a pointer (base/hash.h) */
	struct cs_hash string_ids;
	bool symbolized;
	uint64_t end_time;
	/* GPU */
	size_t cap_gpu_launches, cap_gpu_activities, cap_gpu_processes, cap_gpu_notes;
	char **gpu_note_texts;        /* owned until interned, by note index */
	size_t nnote_texts, cap_note_texts;
	uint64_t gpu_bad;             /* GPU records with ids out of range: skipped */
	size_t cap_labels;
};

static int load_corrupt(struct load *l, const char *what)
{
	return cs_error(EINVAL, "%s: corrupt %s record", l->path, what);
}

/* The handlers below take a record df_decode_record decoded and df_check_record found in
 * order (load_record). */

static void load_header_kv(struct load *l, const union df_record *r)
{
	*CS_PUSH(l->p->header, l->p->nheader, l->cap_header) =
		(struct profile_kv){ cs_strdup(r->kv.key), cs_strdup(r->kv.value) };
}

static void load_string(struct load *l, const union df_record *r)
{
	*CS_PUSH(l->p->strings, l->p->nstrings, l->cap_strings) = cs_strdup(r->str.text);
}

static void load_comm(struct load *l, const union df_record *r)
{
	const struct df_comm *c = &r->comm;
	cs_grow(&l->comms, &l->cap_comms, l->ncomms + 1, sizeof(*l->comms));
	l->comms[l->ncomms] = (struct load_comm){ .pid = c->pid, .tid = c->tid, .seq = l->ncomms,
						   .name = cs_strdup(c->name) };
	l->ncomms++;
}

/* DF_FORK of a new process: pid == tid != ppid. */
static void load_fork(struct load *l, const union df_record *r)
{
	if (r->task.pid == r->task.tid && r->task.pid != r->task.ppid)
		*CS_PUSH(l->forks, l->nforks, l->cap_forks) =
			(struct load_fork){ r->task.pid, r->task.ppid };
}

static void load_lost(struct load *l, const union df_record *r)
{
	l->p->lost += r->lost.count;
}

static void load_module(struct load *l, const union df_record *r)
{
	struct profile *p = l->p;
	struct df_module m = r->module;
	if (m.id == p->nmodules) {
		cs_grow(&p->modules, &l->cap_modules, p->nmodules + 1, sizeof(*p->modules));
		cs_grow(&l->module_names, &l->cap_module_names, 2 * (p->nmodules + 1),
			sizeof(char *));
		l->module_names[2 * m.id] = l->module_names[2 * m.id + 1] = NULL;
		p->nmodules++;
	}
	/* The names are interned after reading, outside the file's string ids. */
	free(l->module_names[2 * m.id]);
	free(l->module_names[2 * m.id + 1]);
	l->module_names[2 * m.id] = cs_strdup(m.path);
	l->module_names[2 * m.id + 1] = cs_strdup(m.build_id);
	p->modules[m.id].flags = m.flags;
}

static void load_loc(struct load *l, const union df_record *r)
{
	*CS_PUSH(l->locs, l->nlocs, l->cap_locs) = (struct load_loc){
		.module = r->loc.module, .offset = r->loc.offset, .flags = r->loc.flags };
}

static void load_stack(struct load *l, const union df_record *rec)
{
	const struct df_stack *st = &rec->stack;
	struct profile *p = l->p;
	cs_grow(&l->stack_locs, &l->cap_stack_locs, l->nstack_locs + st->n, sizeof(uint32_t));
	for (uint32_t i = 0; i < st->n; i++)
		l->stack_locs[l->nstack_locs + i] = df_stack_loc(st, i);
	*CS_PUSH(p->stacks, p->nstacks, l->cap_stacks) =
		(struct profile_stack){ (uint32_t)l->nstack_locs, st->n };
	l->nstack_locs += st->n;
}

static void load_sample(struct load *l, const union df_record *rec)
{
	const struct df_sample *r = &rec->sample;
	struct profile *p = l->p;
	struct profile_sample s = { .time = r->time, .pid = r->pid, .tid = r->tid, .cpu = r->cpu,
				    .stack = r->stack, .flags = r->flags, .weight = r->weight };
	*CS_PUSH(p->samples, p->nsamples_records, l->cap_samples) = s;
	p->nsamples += s.weight;
}

static void load_symbol(struct load *l, const union df_record *r)
{
	const struct df_symbol *sym = &r->sym;
	cs_grow(&l->syms, &l->cap_syms, l->nsyms + sym->n, sizeof(*l->syms));
	for (uint32_t i = 0; i < sym->n; i++) {
		struct df_symbol_frame f = df_symbol_at(sym, i);
		l->syms[l->nsyms + i] = (struct load_sym){ f.name, f.file, f.line, f.flags };
	}
	l->locs[sym->loc].sym_first = (uint32_t)l->nsyms;
	l->locs[sym->loc].sym_n = sym->n;
	l->nsyms += sym->n;
}

/* The GPU records are optional: one that does not fit is skipped, the CPU profile loads. */
static void load_gpu_launch(struct load *l, const union df_record *r)
{
	struct profile *p = l->p;
	const struct df_gpu_launch g = r->launch;
	if (g.stack >= p->nstacks || g.api >= p->nstrings) {
		l->gpu_bad++;
		return;
	}
	struct profile_gpu_launch *out =
		CS_PUSH(p->gpu_launches, p->ngpu_launches, l->cap_gpu_launches);
	*out = (struct profile_gpu_launch){
		.time = g.time, .pid = g.pid, .tid = g.tid, .correlation = g.correlation,
		.stack = g.stack, .api = g.api, .cbid = g.cbid, .domain = g.domain,
		.flags = g.flags, .graph_node_id = g.graph_node_id };
}

static void load_gpu_activity(struct load *l, const union df_record *r)
{
	struct profile *p = l->p;
	const struct df_gpu_activity g = r->act;
	if (g.kind == 0 || g.kind >= PROFILE_GPU_NKINDS)
		return; /* a kind of a newer csampler */
	if (g.name >= p->nstrings) {
		l->gpu_bad++;
		return;
	}
	cs_grow(&p->gpu_activities, &l->cap_gpu_activities, p->ngpu_activities + 1,
		sizeof(*p->gpu_activities));
	struct profile_gpu_activity *a = &p->gpu_activities[p->ngpu_activities++];
	*a = (struct profile_gpu_activity){
		.kind = g.kind, .pid = g.pid, .tid = g.tid, .correlation = g.correlation,
		.start = g.start, .end = g.end, .queued = g.queued, .submitted = g.submitted,
		.bytes = g.bytes, .graph_node_id = g.graph_node_id, .device = g.device,
		.context = g.context, .stream = g.stream, .name = g.name, .flags = g.flags,
		.detail = g.detail, .detail2 = g.detail2, .graph_id = g.graph_id,
		.launch = PROFILE_GPU_NO_LAUNCH, .node_launch = PROFILE_GPU_NO_LAUNCH };
	memcpy(a->grid, g.grid, sizeof(a->grid));
	memcpy(a->block, g.block, sizeof(a->block));
}

static void load_gpu_info(struct load *l, const union df_record *r)
{
	struct profile *p = l->p;
	const struct df_gpu_info g = r->info;
	struct profile_gpu_process *out =
		CS_PUSH(p->gpu_processes, p->ngpu_processes, l->cap_gpu_processes);
	*out = (struct profile_gpu_process){
		.pid = g.pid, .cupti_version = g.cupti_version, .status = g.status,
		.cupti_error = g.cupti_error, .clock_offset_ns = g.clock_offset_ns,
		.launches = g.launches, .launches_dropped = g.launches_dropped,
		.activities = g.activities, .dropped = g.dropped,
		.lost_timestamps = g.lost_timestamps, .buffers = g.buffers,
		.flush_timeouts = g.flush_timeouts, .write_errors = g.write_errors,
		.capture_ns = g.capture_ns, .flags = g.flags, .bad_records = g.bad_records,
		.vendor = g.vendor };
}

static void load_gpu_note(struct load *l, const union df_record *r)
{
	const struct df_gpu_note *n = &r->note;
	struct profile *p = l->p;
	cs_grow(&p->gpu_notes, &l->cap_gpu_notes, p->ngpu_notes + 1, sizeof(*p->gpu_notes));
	*CS_PUSH(l->gpu_note_texts, l->nnote_texts, l->cap_note_texts) = cs_strdup(n->text);
	p->gpu_notes[p->ngpu_notes++] = (struct profile_gpu_note){ n->pid, n->severity, 0 };
}

static void load_task_label(struct load *l, const union df_record *r)
{
	const struct df_task_label *t = &r->label;
	struct profile *p = l->p;
	*CS_PUSH(p->labels, p->nlabels, l->cap_labels) = (struct profile_label){
		.id = t->id, .orig_id = t->orig_id, .rank = t->rank < 0 ? -1 : t->rank,
		.input = t->input, .host = t->host, .flags = t->flags };
}

static void load_end(struct load *l, const union df_record *r)
{
	l->end_time = r->end.end_time;
	l->symbolized = r->end.flags & 1;
}

/* What keeps each record type (by type; DF_MMAP and DF_EXIT are read to check them, nothing
 * kept; DF_RAW_SAMPLE is counted by load_record). */
static void (*const load_apply[DF_TASK_LABEL + 1])(struct load *, const union df_record *) = {
	[DF_HEADER_KV] = load_header_kv, [DF_STRING] = load_string, [DF_COMM] = load_comm,
	[DF_FORK] = load_fork, [DF_LOST] = load_lost, [DF_MODULE] = load_module,
	[DF_LOC] = load_loc, [DF_STACK] = load_stack, [DF_SAMPLE] = load_sample,
	[DF_SYMBOL] = load_symbol, [DF_END] = load_end, [DF_GPU_LAUNCH] = load_gpu_launch,
	[DF_GPU_ACTIVITY] = load_gpu_activity, [DF_GPU_INFO] = load_gpu_info,
	[DF_GPU_NOTE] = load_gpu_note, [DF_TASK_LABEL] = load_task_label,
};

/* One record: decoded and checked through format/records.c (as merge does), then kept. */
static int load_record(void *arg, uint16_t type, const uint8_t *d, size_t len)
{
	struct load *l = arg;
	const struct df_ids ids = { (uint32_t)l->p->nstrings, (uint32_t)l->p->nmodules,
				    (uint32_t)l->nlocs, (uint32_t)l->p->nstacks };
	union df_record r;
	int err;

	if (type == DF_RAW_SAMPLE) {
		l->p->nraw_samples++; /* counted so info can say the file holds stack memory */
		return 0;
	}
	err = df_decode_record(type, d, len, &r);
	if (err == -ENOENT && type < 128)
		return cs_error(EPROTONOSUPPORT,
				"%s: unknown record type %u: written by a newer csampler?", l->path,
				type);
	if (err == -ENOENT)
		return 0; /* optional record: skip */
	if (err || df_check_record(type, &r, &ids))
		return load_corrupt(l, df_record_name(type));
	if (type < sizeof(load_apply) / sizeof(load_apply[0]) && load_apply[type])
		load_apply[type](l, &r);
	return 0;
}

/* ---- string lookup for names the loader makes up ---- */

struct load_str_key {
	const struct profile *p;
	const char *s;
};

static bool load_str_eq(const void *item, const void *key)
{
	const struct load_str_key *k = key;
	return strcmp(k->p->strings[(uintptr_t)item], k->s) == 0;
}

/* Every string of the file, in id order: among equal strings the lowest id is found first
 * (cs_hash keeps the order of equal hashes). */
static void load_hash_build(struct load *l)
{
	cs_hash_free(&l->string_ids);
	for (uint32_t i = 1; i < l->p->nstrings; i++) {
		const char *s = l->p->strings[i];
		cs_hash_insert(&l->string_ids, cs_hash_bytes(s, strlen(s), 0), (void *)(uintptr_t)i);
	}
}

/* The id of s, adding it to the string table when new. Takes ownership of s. */
static uint32_t load_intern(struct load *l, char *s)
{
	struct profile *p = l->p;
	if (!*s) {
		free(s);
		return 0;
	}
	uint64_t h = cs_hash_bytes(s, strlen(s), 0);
	struct load_str_key key = { p, s };
	uintptr_t id = (uintptr_t)cs_hash_find(&l->string_ids, h, load_str_eq, &key);
	if (id) {
		free(s);
		return (uint32_t)id;
	}
	cs_grow(&p->strings, &l->cap_strings, p->nstrings + 1, sizeof(char *));
	p->strings[p->nstrings] = s;
	cs_hash_insert(&l->string_ids, h, (void *)(uintptr_t)p->nstrings);
	return (uint32_t)p->nstrings++;
}

CS_CMP_FN(cmp_comm, struct load_comm, CS_CMP(a->tid, b->tid) ?: CS_CMP(a->seq, b->seq))

CS_CMP_FN(cmp_sample_time, struct profile_sample,
	CS_CMP(a->time, b->time) ?: CS_CMP(a->tid, b->tid))

struct tid_key {
	uint32_t pid, tid;
	uint64_t samples;
};

CS_CMP_FN(cmp_tid, struct tid_key, CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid))

static uint32_t load_comm_of(const struct load *l, uint32_t tid)
{
	/* comms are sorted by (tid, arrival); take the last one of tid */
	size_t lo = CS_UPPER_BOUND(l->comms, l->ncomms, tid, tid);
	if (lo > 0 && l->comms[lo - 1].tid == tid)
		return l->comms[lo - 1].str;
	return 0;
}

CS_CMP_FN(cmp_label, struct profile_label, CS_CMP(a->id, b->id))

/* Labels sorted by id (merge writes one per id; of duplicates one is kept), the header's rank
 * and host, and every process' rank, host and original pid. */
static void load_labels(struct load *l)
{
	struct profile *p = l->p;
	size_t n = 0;

	cs_qsort(p->labels, p->nlabels, sizeof(*p->labels), cmp_label);
	for (size_t i = 0; i < p->nlabels; i++) {
		if (n && p->labels[n - 1].id == p->labels[i].id)
			n--;
		p->labels[n++] = p->labels[i];
	}
	p->nlabels = n;
	const char *rank = profile_header(p, "rank"), *host = profile_header(p, "hostname");
	uint64_t v;
	p->rank = rank && cs_parse_u64(rank, &v) == 0 && v <= INT32_MAX ? (int32_t)v : -1;
	p->host = host ? load_intern(l, cs_strdup(host)) : 0;
	for (size_t i = 0; i < p->nprocesses; i++) {
		struct profile_process *pr = &p->processes[i];
		const struct profile_label *lb = profile_label_of(p, pr->pid);
		pr->rank = lb ? lb->rank : p->rank;
		pr->host = lb ? lb->host : p->host;
		pr->orig_pid = lb ? lb->orig_id : pr->pid;
	}
}

const struct profile_label *profile_label_of(const struct profile *p, uint32_t id)
{
	size_t lo = CS_LOWER_BOUND(p->labels, p->nlabels, id, id);
	return lo < p->nlabels && p->labels[lo].id == id ? &p->labels[lo] : NULL;
}

const struct profile_process *profile_process_of(const struct profile *p, uint32_t pid)
{
	size_t lo = CS_LOWER_BOUND(p->processes, p->nprocesses, pid, pid);
	return lo < p->nprocesses && p->processes[lo].pid == pid ? &p->processes[lo] : NULL;
}

int32_t profile_rank_of(const struct profile *p, uint32_t pid)
{
	const struct profile_label *lb = profile_label_of(p, pid);
	return lb ? lb->rank : p->rank;
}

CS_CMP_FN(cmp_gpu_launch, struct profile_gpu_launch,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->correlation, b->correlation) ?:
	CS_CMP(a->time, b->time))

CS_CMP_FN(cmp_gpu_activity, struct profile_gpu_activity,
	CS_CMP(a->start, b->start) ?: CS_CMP(a->pid, b->pid) ?:
	CS_CMP(a->correlation, b->correlation))

struct gpu_node_key {
	uint32_t pid, launch;
	uint64_t node;
};

CS_CMP_FN(cmp_gpu_node, struct gpu_node_key,
	CS_CMP(a->pid, b->pid) ?: CS_CMP(a->node, b->node) ?: CS_CMP(a->launch, b->launch))

static size_t gpu_launch_lower(const struct profile *p, uint32_t pid, uint32_t correlation)
{
	return CS_LOWER_BOUND2(p->gpu_launches, p->ngpu_launches, pid, pid, correlation,
			       correlation);
}

const struct profile_gpu_launch *profile_gpu_launch_of(const struct profile *p, uint32_t pid,
						       uint32_t correlation)
{
	size_t i = gpu_launch_lower(p, pid, correlation);
	if (i < p->ngpu_launches && p->gpu_launches[i].pid == pid &&
	    p->gpu_launches[i].correlation == correlation)
		return &p->gpu_launches[i];
	return NULL;
}

const char *profile_gpu_kind_name(uint32_t kind)
{
	static const char *const names[PROFILE_GPU_NKINDS] = { "?", "kernel", "memcpy", "memset",
							       "sync", "nvtx", "api" };
	return kind < PROFILE_GPU_NKINDS ? names[kind] : "?";
}

const struct gpu_vendor *profile_gpu_vendor(const struct profile *p, uint32_t pid)
{
	for (size_t i = 0; i < p->ngpu_processes; i++)
		if (p->gpu_processes[i].pid == pid)
			return gpu_vendor_get(p->gpu_processes[i].vendor);
	return gpu_vendor_get(GPU_VENDOR_UNKNOWN);
}

/* How many leaf frames of stack st are its vendor's launch path (gpu_vendor.h), by module
 * and by name; a stack made only of them is kept whole. */
static uint32_t load_gpu_launch_path(const struct profile *p, const struct gpu_vendor *v,
				     const struct profile_stack *st)
{
	struct gpu_trim t;
	gpu_trim_init(&t, v);
	uint32_t skip = 0;
	while (skip < st->nframes) {
		const struct profile_frame *f = &p->frames[p->stack_frames[st->first + skip]];
		if (!gpu_trim_frame(&t, profile_str(p, p->modules[f->module].path),
				    profile_str(p, f->name)))
			break;
		skip++;
	}
	return skip < st->nframes ? skip : 0;
}

/* Files of format version 1 keep launch stacks as recorded: starting inside the GPU runtime
 * (cudaLaunchKernel and what it calls) and the compiler's launch stub; the call site that
 * matters is the program's. Each such launch stack gets a second stack without those leaf
 * frames (a sub-range of stack_frames, nothing copied). The recorder of version 2 trims them
 * itself (record.c), and nothing is trimmed by name here. */
static void load_gpu_trim_stacks(struct load *l)
{
	struct profile *p = l->p;
	struct cs_map trimmed = { 0 };   /* (stack, vendor) -> the trimmed stack */

	if (p->format_version >= 2)
		return;
	for (size_t i = 0; i < p->ngpu_launches; i++) {
		struct profile_gpu_launch *g = &p->gpu_launches[i];
		const struct gpu_vendor *v = profile_gpu_vendor(p, g->pid);
		uint32_t *id = cs_map_slot(&trimmed, g->stack, v->id);
		if (*id == CS_MAP_NONE) {
			const struct profile_stack st = p->stacks[g->stack];
			uint32_t skip = load_gpu_launch_path(p, v, &st);
			uint32_t new_id = g->stack;
			if (skip) {
				cs_grow(&p->stacks, &l->cap_stacks, p->nstacks + 1, sizeof(*p->stacks));
				p->stacks[p->nstacks] = (struct profile_stack){ st.first + skip,
										st.nframes - skip };
				new_id = (uint32_t)p->nstacks++;
			}
			id = cs_map_slot(&trimmed, g->stack, v->id);
			*id = new_id;
		}
		g->stack = *id;
	}
	cs_map_free(&trimmed);
}

/* nvcc's host wrapper of a kernel (a function with the kernel's own name, which calls the stub
 * or, the stub inlined, cudaLaunchKernel) left as a launch stack's leaf: the kernel launched
 * there names it; the caller is the call site. Run after the join. */
static void load_gpu_trim_wrappers(struct load *l)
{
	struct profile *p = l->p;
	size_t nstacks = p->nstacks;
	uint32_t *trimmed = NULL;

	for (size_t i = 0; i < p->ngpu_activities; i++) {
		const struct profile_gpu_activity *a = &p->gpu_activities[i];
		if (a->kind != DF_GPU_KERNEL || a->launch == PROFILE_GPU_NO_LAUNCH || !a->name)
			continue;
		struct profile_gpu_launch *g = &p->gpu_launches[a->launch];
		if (g->stack >= nstacks)
			continue;   /* trimmed here already */
		const struct profile_stack st = p->stacks[g->stack];
		if (st.nframes < 2 ||
		    strcmp(profile_str(p, p->frames[p->stack_frames[st.first]].name),
			   profile_str(p, a->name)))
			continue;
		if (!trimmed) {
			trimmed = cs_malloc(nstacks * sizeof(*trimmed));
			for (size_t k = 0; k < nstacks; k++)
				trimmed[k] = UINT32_MAX;
		}
		if (trimmed[g->stack] == UINT32_MAX) {
			cs_grow(&p->stacks, &l->cap_stacks, p->nstacks + 1, sizeof(*p->stacks));
			p->stacks[p->nstacks] = (struct profile_stack){ st.first + 1, st.nframes - 1 };
			trimmed[g->stack] = (uint32_t)p->nstacks++;
		}
		g->stack = trimmed[g->stack];
	}
	free(trimmed);
}

/* Sort the GPU arrays, intern the notes, trim the launch stacks to the program's frames and
 * join every activity to its launch. */
static void load_gpu_finish(struct load *l)
{
	struct profile *p = l->p;

	load_gpu_trim_stacks(l);

	for (size_t i = 0; i < p->ngpu_notes; i++) {
		p->gpu_notes[i].text = load_intern(l, l->gpu_note_texts[i]);
		l->gpu_note_texts[i] = NULL;
	}
	if (l->gpu_bad)
		cs_warn("%s: %llu GPU records refer to missing stacks or strings: skipped", l->path,
			(unsigned long long)l->gpu_bad);
	if (p->ngpu_launches)
		qsort(p->gpu_launches, p->ngpu_launches, sizeof(*p->gpu_launches), cmp_gpu_launch);
	if (p->ngpu_activities)
		qsort(p->gpu_activities, p->ngpu_activities, sizeof(*p->gpu_activities),
		      cmp_gpu_activity);
	struct gpu_node_key *nodes = NULL;
	size_t nnodes = 0;
	for (size_t i = 0; i < p->ngpu_launches; i++)
		nnodes += (p->gpu_launches[i].flags & PROFILE_GPU_LAUNCH_GRAPH_NODE) != 0;
	if (nnodes) {
		nodes = cs_malloc(nnodes * sizeof(*nodes));
		nnodes = 0;
		for (size_t i = 0; i < p->ngpu_launches; i++)
			if (p->gpu_launches[i].flags & PROFILE_GPU_LAUNCH_GRAPH_NODE)
				nodes[nnodes++] = (struct gpu_node_key){
					p->gpu_launches[i].pid, (uint32_t)i, p->gpu_launches[i].graph_node_id };
		qsort(nodes, nnodes, sizeof(*nodes), cmp_gpu_node);
	}
	for (size_t i = 0; i < p->ngpu_activities; i++) {
		struct profile_gpu_activity *a = &p->gpu_activities[i];
		const struct profile_gpu_launch *g = a->correlation
			? profile_gpu_launch_of(p, a->pid, a->correlation) : NULL;
		if (g)
			a->launch = (uint32_t)(g - p->gpu_launches);
		if (a->graph_node_id && nnodes) {
			size_t lo = CS_LOWER_BOUND2(nodes, nnodes, pid, a->pid, node,
						    a->graph_node_id);
			if (lo < nnodes && nodes[lo].pid == a->pid && nodes[lo].node == a->graph_node_id)
				a->node_launch = nodes[lo].launch;
		}
	}
	free(nodes);
	load_gpu_trim_wrappers(l);
}

/* The most frames all stacks together may expand to (1 GiB of frame ids). A stack is a list
 * of locations and each location expands to its inline chain, so a few kilobytes of zstd
 * records naming the same deep location over and over once grew to 16 GB and two minutes in
 * `csampler info`, and past 2^32 frames the uint32_t indexes of profile_stack wrap (found by
 * review alongside tests/fuzz/fuzz_datafile). `record` writes at most 1024 locations per stack
 * and 64 frames per location; real profiles stay orders of magnitude below this. */
#define PROFILE_MAX_STACK_FRAMES (1u << 28)

/* Every location gets its frames: its symbol chain, or a made-up "file+0xOFF" name. */
static void load_frames(struct load *l)
{
	struct profile *p = l->p;

	for (size_t i = 0; i < l->nlocs; i++) {
		struct load_loc *loc = &l->locs[i];
		const struct profile_module *m = &p->modules[loc->module];
		uint32_t kernel = (m->flags & PROFILE_MODULE_KERNEL) ? PROFILE_FRAME_KERNEL : 0;
		loc->frame_first = (uint32_t)p->nframes;
		if (loc->sym_n) {
			cs_grow(&p->frames, &l->cap_stack_frames, p->nframes + loc->sym_n,
				sizeof(*p->frames));
			for (uint32_t k = 0; k < loc->sym_n; k++) {
				const struct load_sym *s = &l->syms[loc->sym_first + k];
				p->frames[p->nframes++] = (struct profile_frame){
					s->name, loc->module, s->file, s->line,
					s->flags | kernel | (loc->flags & DF_LOC_FOUND_MASK) };
			}
			loc->frame_n = loc->sym_n;
		} else {
			cs_grow(&p->frames, &l->cap_stack_frames, p->nframes + 1, sizeof(*p->frames));
			char *name = cs_asprintf("%s+0x%llx", cs_basename(profile_str(p, m->path)),
						 (unsigned long long)loc->offset);
			uint32_t id = load_intern(l, name);
			p->frames[p->nframes++] = (struct profile_frame){
				id, loc->module, 0, 0,
				PROFILE_FRAME_UNNAMED | kernel | (loc->flags & DF_LOC_FOUND_MASK) };
			loc->frame_n = 1;
		}
	}
}

bool profile_root_is_entry(const char *root, bool main_thread)
{
	/* glibc's entry points under every name its symbol tables give them (the .dynsym alias,
	 * the debug file's internal names), as they end a fully unwound stack. */
	static const char *const main_roots[] = {
		"_start", "__libc_start_main", "__libc_start_main_impl",
		"__libc_start_main_alias_1", "__libc_start_main_alias_2", "__libc_start_call_main",
	};
	static const char *const thread_roots[] = {
		"clone", "__clone", "__GI___clone", "clone3", "__clone3", "__GI___clone3",
		"start_thread",
	};
	const char *const *names = main_thread ? main_roots : thread_roots;
	size_t n = main_thread ? sizeof(main_roots) / sizeof(main_roots[0])
			       : sizeof(thread_roots) / sizeof(thread_roots[0]);
	size_t len = strcspn(root, "@"); /* "__libc_start_main@@GLIBC_2.34" */

	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(names[i], root, len))
			return true;
	return false;
}

/* The frames of a stack (fr, leaf first, n of them) past an entry point are dropped: a thread
 * sampled before it first ran in user space (in the kernel's ret_from_fork, at clone's return)
 * has only clone's frame, and a walk past it reads a return address from its fresh stack,
 * an unnamed frame of no function. Returns the frames kept. */
static uint32_t load_trim_past_entry(const struct profile *p, const uint32_t *fr, uint32_t n)
{
	while (n >= 2) {
		const struct profile_frame *outer = &p->frames[fr[n - 1]], *entry = &p->frames[fr[n - 2]];
		const char *name = profile_str(p, entry->name);
		if (!(outer->flags & PROFILE_FRAME_UNNAMED) || (outer->flags & PROFILE_FRAME_KERNEL) ||
		    (entry->flags & PROFILE_FRAME_KERNEL) ||
		    !(profile_root_is_entry(name, true) || profile_root_is_entry(name, false)))
			break;
		n--;
	}
	return n;
}

/* Stacks: locations expanded into frames, leaf first; first counted, to refuse a file that
 * expands beyond PROFILE_MAX_STACK_FRAMES before allocating. */
static int load_expand_stacks(struct load *l)
{
	struct profile *p = l->p;
	uint64_t total = 0;
	size_t cap = 0;

	for (size_t i = 0; i < l->nstack_locs; i++)
		total += l->locs[l->stack_locs[i]].frame_n;
	if (total > PROFILE_MAX_STACK_FRAMES)
		return cs_error(EFBIG, "%s: corrupt: its %zu stacks expand to %llu frames "
				"(csampler loads at most %u); check where the file came from",
				l->path, p->nstacks, (unsigned long long)total,
				PROFILE_MAX_STACK_FRAMES);
	for (size_t s = 0; s < p->nstacks; s++) {
		struct profile_stack *st = &p->stacks[s];
		uint32_t first = (uint32_t)p->nstack_frames, n = 0;
		for (uint32_t k = 0; k < st->nframes; k++) {
			const struct load_loc *loc = &l->locs[l->stack_locs[st->first + k]];
			cs_grow(&p->stack_frames, &cap, p->nstack_frames + loc->frame_n,
				sizeof(uint32_t));
			for (uint32_t f = 0; f < loc->frame_n; f++)
				p->stack_frames[p->nstack_frames++] = loc->frame_first + f;
			n += loc->frame_n;
		}
		st->first = first;
		st->nframes = load_trim_past_entry(p, p->stack_frames + first, n);
	}
	return 0;
}

/* Threads (by pid, tid) and processes, with their samples, names and parents. The samples
 * are sorted by time already. */
static void load_tasks(struct load *l)
{
	struct profile *p = l->p;
	struct tid_key *keys = cs_malloc((p->nsamples_records + l->ncomms + 1) * sizeof(*keys));
	size_t nkeys = 0, tcap = 0, pcap = 0;

	for (size_t i = 0; i < p->nsamples_records; i++)
		keys[nkeys++] = (struct tid_key){ p->samples[i].pid, p->samples[i].tid,
						  p->samples[i].weight };
	cs_qsort(keys, nkeys, sizeof(*keys), cmp_tid);
	for (size_t i = 0; i < nkeys;) {
		size_t j = i;
		uint64_t n = 0;
		while (j < nkeys && keys[j].pid == keys[i].pid && keys[j].tid == keys[i].tid)
			n += keys[j++].samples;
		*CS_PUSH(p->threads, p->nthreads, tcap) = (struct profile_thread){
			keys[i].pid, keys[i].tid, load_comm_of(l, keys[i].tid), n };
		i = j;
	}
	for (size_t i = 0; i < p->nthreads;) {
		size_t j = i;
		uint64_t n = 0;
		uint32_t pid = p->threads[i].pid, comm = load_comm_of(l, pid), ppid = 0;
		while (j < p->nthreads && p->threads[j].pid == pid)
			n += p->threads[j++].samples;
		if (!comm)
			comm = p->threads[i].comm;
		for (size_t f = 0; f < l->nforks; f++)
			if (l->forks[f].pid == pid)
				ppid = l->forks[f].ppid;
		*CS_PUSH(p->processes, p->nprocesses, pcap) =
			(struct profile_process){ pid, ppid, comm, n, -1, 0, pid };
		i = j;
	}
	free(keys);
}

/* The recording's span: the header's start (else the first sample) to DF_END's time (else
 * the last sample). */
static void load_span(struct load *l)
{
	struct profile *p = l->p;
	const char *start = profile_header(p, "start_monotonic_ns");
	uint64_t v;

	if (start && cs_parse_u64(start, &v) == 0)
		p->start_ns = v;
	else if (p->nsamples_records)
		p->start_ns = p->samples[0].time;
	p->end_ns = l->end_time;
	if (!p->end_ns && p->nsamples_records)
		p->end_ns = p->samples[p->nsamples_records - 1].time;
	if (p->end_ns < p->start_ns)
		p->end_ns = p->start_ns;
}

static int load_finish(struct load *l)
{
	struct profile *p = l->p;
	int err;

	load_hash_build(l);
	for (size_t i = 0; i < p->nmodules; i++) {
		p->modules[i].path = load_intern(l, l->module_names[2 * i]);
		p->modules[i].build_id = load_intern(l, l->module_names[2 * i + 1]);
		l->module_names[2 * i] = l->module_names[2 * i + 1] = NULL;
	}
	/* comm names: intern, then sort by (tid, arrival order) */
	for (size_t i = 0; i < l->ncomms; i++) {
		l->comms[i].str = load_intern(l, l->comms[i].name);
		l->comms[i].name = NULL;
	}
	cs_qsort(l->comms, l->ncomms, sizeof(*l->comms), cmp_comm);
	load_frames(l);
	err = load_expand_stacks(l);
	if (err)
		return err;
	cs_qsort(p->samples, p->nsamples_records, sizeof(*p->samples), cmp_sample_time);
	load_tasks(l);
	load_span(l);
	p->finalized = l->symbolized;
	load_labels(l);
	load_gpu_finish(l);
	return 0;
}

/* profile_load and profile_load_mem: buf NULL reads the file path, else buf[0..len) named
 * path in messages. */
static int profile_load_from(const char *path, const void *buf, size_t len,
			     struct profile **out)
{
	struct load l = { .path = path };
	int ret;

	l.p = cs_calloc(1, sizeof(*l.p));
	l.p->format_version = DF_VERSION;
	l.p->rank = -1;
	cs_grow(&l.p->strings, &l.cap_strings, 1, sizeof(char *));
	l.p->strings[l.p->nstrings++] = cs_strdup("");
	ret = buf ? df_read_mem_version(buf, len, path, load_record, &l, &l.p->format_version) :
		    df_read_version(path, load_record, &l, &l.p->format_version);
	if (ret < 0)
		goto out;
	if (ret == 1) {
		l.p->truncated = true;
		cs_warn("%s: truncated: %llu samples recovered", path,
			(unsigned long long)l.p->nsamples);
	}
	ret = load_finish(&l);
	if (ret < 0)
		goto out;
	*out = l.p;
	l.p = NULL;
	ret = 0;
out:
	for (size_t i = 0; i < l.ncomms; i++)
		free(l.comms[i].name);
	for (size_t i = 0; l.p && i < 2 * l.p->nmodules; i++)
		free(l.module_names[i]);
	free(l.module_names);
	profile_free(l.p);
	CS_FREE_ALL(l.locs, l.stack_locs, l.syms, l.comms, l.forks);
	cs_hash_free(&l.string_ids);
	for (size_t i = 0; i < l.nnote_texts; i++)
		free(l.gpu_note_texts[i]);
	free(l.gpu_note_texts);
	return ret;
}

int profile_load(const char *path, struct profile **out)
{
	return profile_load_from(path, NULL, 0, out);
}

int profile_load_mem(const void *buf, size_t len, const char *name, struct profile **out)
{
	return profile_load_from(name, buf ? buf : "", len, out);
}

void profile_release(struct profile *p)
{
	for (size_t i = 0; i < p->nheader; i++) {
		free((char *)p->header[i].key);
		free((char *)p->header[i].value);
	}
	for (size_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	CS_FREE_ALL(p->header, p->strings, p->modules, p->frames, p->stack_frames, p->stacks,
		    p->samples, p->threads, p->processes, p->gpu_launches, p->gpu_activities,
		    p->gpu_processes, p->gpu_notes, p->labels, p->filtered.text, p->filtered.comm,
		    p->filtered.time, p->filtered.step, p->filtered.steps,
		    p->filtered.step_windows);
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	profile_release(p);
	free(p);
}

const uint32_t *profile_stack_frames(const struct profile *p, uint32_t stack, size_t *n)
{
	*n = 0;
	if (stack >= p->nstacks)
		return NULL;
	const struct profile_stack *st = &p->stacks[stack];
	if (st->first > p->nstack_frames || st->nframes > p->nstack_frames - st->first)
		return NULL;
	*n = st->nframes;
	return p->stack_frames + st->first;
}

const struct profile_frame *profile_frame_at(const struct profile *p, uint32_t id)
{
	static const struct profile_frame missing = { .module = UINT32_MAX };
	return id < p->nframes ? &p->frames[id] : &missing;
}

const char *profile_header(const struct profile *p, const char *key)
{
	for (size_t i = p->nheader; i-- > 0;)
		if (!strcmp(p->header[i].key, key))
			return p->header[i].value;
	return NULL;
}

bool profile_is_datafile(const char *path)
{
	char magic[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, magic, sizeof(magic));
	close(fd);
	return n == (ssize_t)sizeof(magic) && !memcmp(magic, DF_MAGIC, 8);
}
