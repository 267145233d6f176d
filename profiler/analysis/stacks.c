/* stacks.c: walks a loaded profile (profile.h) and aggregates its samples: the engine under
 * `report` (stacks_aggregate), the record-time summary, and the folded CPU stacks that
 * `folded`, `flame` and `diff` read through fold_profile (stacks_fold, fold.h).
 *
 * Cost model: one pass over the samples doing an integer hash lookup (thread) and array
 * additions per sample, then one pass over the distinct stacks that were hit. Names are
 * compared only once per distinct frame, thread or stack, never per sample. */
#include "analysis/stacks.h"

#include "base/cs.h"
#include "base/hash.h"
#include "analysis/fold_frame.h"
#include "analysis/gpu_idle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define STACKS_NONE CS_MAP_NONE /* also the empty value of the maps (base/hash.h) */

/* ---- the walking context shared by aggregation and folding ---- */

/* A thread as the samples see it: one per (pid, tid), from profile.threads or made up for a
 * sample whose thread the profile does not list. */
struct stacks_trow {
	uint32_t pid, tid;
	uint32_t comm;       /* string id, 0 when unknown */
	uint32_t prow;       /* index into ctx.prows */
	bool match;          /* passes the filter */
	uint64_t samples;
};

struct stacks_prow {
	uint32_t pid;
	uint32_t comm;       /* string id, 0 when unknown */
	uint64_t samples;
};

struct stacks_ctx {
	const struct profile *p;
	struct stacks_filter filter;
	uint32_t *canon;             /* per string id: the first id with the same text, lazily */
	struct cs_map strings;   /* (text hash, 0) chains resolved by strcmp, see canon_str */
	struct stacks_trow *trows;
	size_t ntrows, trows_cap;
	struct cs_map tmap;      /* (pid, tid) -> trow */
	struct stacks_prow *prows;
	size_t nprows, prows_cap;
	struct cs_map pmap;      /* (pid, 0) -> prow */
	uint32_t last_pid, last_tid, last_trow; /* samples come in runs of one thread */
	uint8_t *root_class;         /* per stack id: STACKS_ROOT_* bits, 0 = not computed */
};

enum {
	STACKS_ROOT_KNOWN = 1,
	STACKS_ROOT_MAIN = 2,    /* outermost frame is a main thread's entry point */
	STACKS_ROOT_THREAD = 4,  /* outermost frame is a new thread's entry point */
	STACKS_ROOT_EMPTY = 8,   /* the stack has no frame */
};

/* The canonical id of string id: equal texts get equal ids even if the file stored a string
 * twice. Computed once per string id. */
static uint32_t stacks_canon_str(struct stacks_ctx *c, uint32_t id)
{
	if (id >= c->p->nstrings)
		return 0;
	if (c->canon[id] != STACKS_NONE)
		return c->canon[id];
	const char *s = c->p->strings[id];
	uint64_t h = cs_hash_bytes(s, strlen(s), 0);
	/* Probe (h, k) for k = 0, 1, ... until the text matches or a new slot turns up. */
	for (uint64_t k = 0;; k++) {
		uint32_t *v = cs_map_slot(&c->strings, h, k);
		if (*v == STACKS_NONE)
			*v = id;
		if (*v == id || !strcmp(c->p->strings[*v], s)) {
			c->canon[id] = *v;
			return *v;
		}
	}
}

static const char *stacks_str(const struct stacks_ctx *c, uint32_t id)
{
	return profile_str(c->p, id);
}

static uint32_t stacks_prow_of(struct stacks_ctx *c, uint32_t pid)
{
	uint32_t *v = cs_map_slot(&c->pmap, pid, 0);
	if (*v == STACKS_NONE) {
		cs_grow(&c->prows, &c->prows_cap, c->nprows + 1, sizeof(*c->prows));
		c->prows[c->nprows] = (struct stacks_prow){ .pid = pid };
		*v = (uint32_t)c->nprows++;
	}
	return *v;
}

static bool stacks_filter_match(const struct stacks_ctx *c, const struct stacks_trow *t)
{
	const struct stacks_filter *f = &c->filter;
	if (f->pid >= 0 && (int64_t)t->pid != f->pid)
		return false;
	if (f->tid >= 0 && (int64_t)t->tid != f->tid)
		return false;
	if (f->comm && strcmp(stacks_str(c, t->comm), f->comm) &&
	    strcmp(stacks_str(c, c->prows[t->prow].comm), f->comm))
		return false;
	return true;
}

static uint32_t stacks_add_trow(struct stacks_ctx *c, uint32_t pid, uint32_t tid, uint32_t comm)
{
	uint32_t *v = cs_map_slot(&c->tmap, pid, tid);
	if (*v != STACKS_NONE) {
		if (comm)
			c->trows[*v].comm = comm;
		return *v;
	}
	cs_grow(&c->trows, &c->trows_cap, c->ntrows + 1, sizeof(*c->trows));
	c->trows[c->ntrows] = (struct stacks_trow){ .pid = pid, .tid = tid, .comm = comm };
	*v = (uint32_t)c->ntrows++;
	return *v;
}

/* Fill in names and the filter verdict of trows[from..]: process names first, then threads
 * fall back to their process' name, processes to their main thread's. */
static void stacks_finish_trows(struct stacks_ctx *c, size_t from)
{
	for (size_t i = from; i < c->ntrows; i++) {
		struct stacks_trow *t = &c->trows[i];
		t->prow = stacks_prow_of(c, t->pid);
		struct stacks_prow *pr = &c->prows[t->prow];
		if (!pr->comm && t->comm && (t->tid == t->pid))
			pr->comm = t->comm;
	}
	for (size_t i = from; i < c->ntrows; i++) {
		struct stacks_trow *t = &c->trows[i];
		struct stacks_prow *pr = &c->prows[t->prow];
		if (!pr->comm && t->comm)
			pr->comm = t->comm;
		if (!t->comm)
			t->comm = pr->comm;
		t->match = stacks_filter_match(c, t);
	}
}

static int stacks_ctx_init(struct stacks_ctx *c, const struct profile *p,
			   const struct stacks_filter *filter)
{
	static const struct stacks_filter all = STACKS_FILTER_ALL;

	memset(c, 0, sizeof(*c));
	c->p = p;
	c->filter = filter ? *filter : all;
	if (c->filter.pid > UINT32_MAX || c->filter.tid > UINT32_MAX)
		return -EINVAL;
	c->canon = cs_malloc((p->nstrings ? p->nstrings : 1) * sizeof(*c->canon));
	memset(c->canon, 0xff, (p->nstrings ? p->nstrings : 1) * sizeof(*c->canon));
	c->root_class = cs_calloc(p->nstacks ? p->nstacks : 1, 1);
	for (size_t i = 0; i < p->nprocesses; i++) {
		uint32_t r = stacks_prow_of(c, p->processes[i].pid);
		if (p->processes[i].comm)
			c->prows[r].comm = p->processes[i].comm;
	}
	for (size_t i = 0; i < p->nthreads; i++)
		stacks_add_trow(c, p->threads[i].pid, p->threads[i].tid, p->threads[i].comm);
	stacks_finish_trows(c, 0);
	c->last_trow = STACKS_NONE;
	return 0;
}

static void stacks_ctx_free(struct stacks_ctx *c)
{
	free(c->canon);
	cs_map_free(&c->strings);
	free(c->trows);
	cs_map_free(&c->tmap);
	free(c->prows);
	cs_map_free(&c->pmap);
	free(c->root_class);
}

/* The thread row of a sample (one hash lookup, skipped for runs of the same thread). */
static struct stacks_trow *stacks_sample_trow(struct stacks_ctx *c, const struct profile_sample *s)
{
	if (c->last_trow != STACKS_NONE && s->pid == c->last_pid && s->tid == c->last_tid)
		return &c->trows[c->last_trow];
	size_t before = c->ntrows;
	uint32_t r = stacks_add_trow(c, s->pid, s->tid, 0);
	if (c->ntrows != before)
		stacks_finish_trows(c, before);
	c->last_pid = s->pid;
	c->last_tid = s->tid;
	c->last_trow = r;
	return &c->trows[r];
}

static uint8_t stacks_root_class(struct stacks_ctx *c, uint32_t stack)
{
	if (stack >= c->p->nstacks)
		return STACKS_ROOT_KNOWN | STACKS_ROOT_EMPTY;
	if (c->root_class[stack])
		return c->root_class[stack];
	size_t n;
	const uint32_t *fr = profile_stack_frames(c->p, stack, &n);
	uint8_t cls = STACKS_ROOT_KNOWN;
	if (!n) {
		cls |= STACKS_ROOT_EMPTY;
	} else {
		const char *root = stacks_str(c, profile_frame_at(c->p, fr[n - 1])->name);
		if (profile_root_is_entry(root, true))
			cls |= STACKS_ROOT_MAIN;
		if (profile_root_is_entry(root, false))
			cls |= STACKS_ROOT_THREAD;
	}
	c->root_class[stack] = cls;
	return cls;
}

/* ---- aggregation ---- */

struct stacks_func_acc {
	uint32_t name, lib;        /* canonical name string id, library index */
	uint32_t flags;
	uint32_t stamp;            /* last stack (+1) counted in total */
	uint64_t self, total, stop;
	uint64_t pyself;           /* as the innermost Python frame of a stack */
	uint32_t hot;              /* best line index, STACKS_NONE */
};

struct stacks_lib_acc {
	uint32_t path;             /* canonical string id */
	uint32_t flags;
	uint32_t stamp;
	uint64_t self, total;
};

struct stacks_line_acc {
	uint32_t func, file, line;
	uint32_t stamp;
	uint64_t self, total, pyself;
};

struct stacks_agg {
	struct stacks_ctx c;
	uint32_t *frame_func, *frame_line, *module_lib;
	struct stacks_func_acc *funcs;
	size_t nfuncs, funcs_cap;
	struct cs_map fmap;    /* (name, lib) -> func */
	struct stacks_lib_acc *libs;
	size_t nlibs, libs_cap;
	struct cs_map lmap;    /* (path, 0) -> lib */
	struct stacks_line_acc *lines;
	size_t nlines, lines_cap;
	struct cs_map linemap; /* (func << 32 | file, line) -> line */
	uint64_t python_samples;   /* weight of the stacks with a Python frame */
};

static uint32_t stacks_lib_of(struct stacks_agg *g, uint32_t module)
{
	const struct profile *p = g->c.p;
	if (module < p->nmodules && g->module_lib[module] != STACKS_NONE)
		return g->module_lib[module];
	uint32_t path = module < p->nmodules ? stacks_canon_str(&g->c, p->modules[module].path) : 0;
	uint32_t *v = cs_map_slot(&g->lmap, path, 0);
	if (*v == STACKS_NONE) {
		cs_grow(&g->libs, &g->libs_cap, g->nlibs + 1, sizeof(*g->libs));
		g->libs[g->nlibs] = (struct stacks_lib_acc){ .path = path };
		*v = (uint32_t)g->nlibs++;
	}
	if (module < p->nmodules) {
		g->libs[*v].flags |= p->modules[module].flags;
		g->module_lib[module] = *v;
	}
	return *v;
}

/* The function and source line of frame id fid, resolved once per frame id (a frame id beyond
 * the table resolves to a shared "missing frame" function in no library). */
static void stacks_frame_ids(struct stacks_agg *g, uint32_t fid, uint32_t *func, uint32_t *line)
{
	const struct profile *p = g->c.p;
	if (fid < p->nframes && g->frame_func[fid] != STACKS_NONE) {
		*func = g->frame_func[fid];
		*line = g->frame_line[fid];
		return;
	}
	const struct profile_frame *f = profile_frame_at(p, fid);
	uint32_t lib = stacks_lib_of(g, f->module);
	uint32_t name = stacks_canon_str(&g->c, f->name);
	/* A Python function is its name in its file: every module's code is "<module>", and
	 * all Python frames are in the one "[python]" library. */
	uint64_t where = lib;
	if (f->flags & PROFILE_FRAME_PYTHON)
		where |= (uint64_t)stacks_canon_str(&g->c, f->file) << 32;
	uint32_t *v = cs_map_slot(&g->fmap, name, where);
	if (*v == STACKS_NONE) {
		cs_grow(&g->funcs, &g->funcs_cap, g->nfuncs + 1, sizeof(*g->funcs));
		g->funcs[g->nfuncs] = (struct stacks_func_acc){ .name = name, .lib = lib,
							      .hot = STACKS_NONE };
		*v = (uint32_t)g->nfuncs++;
	}
	*func = *v;
	g->funcs[*func].flags |= f->flags;

	uint32_t file = stacks_canon_str(&g->c, f->file);
	v = cs_map_slot(&g->linemap, (uint64_t)*func << 32 | file, f->line);
	if (*v == STACKS_NONE) {
		cs_grow(&g->lines, &g->lines_cap, g->nlines + 1, sizeof(*g->lines));
		g->lines[g->nlines] = (struct stacks_line_acc){ .func = *func, .file = file,
							      .line = f->line };
		*v = (uint32_t)g->nlines++;
	}
	*line = *v;
	if (fid < p->nframes) {
		g->frame_func[fid] = *func;
		g->frame_line[fid] = *line;
	}
}

/* Add the stack's weight w to its functions, lines and libraries (each at most once). */
static void stacks_add_stack(struct stacks_agg *g, uint32_t stack, uint64_t w, uint64_t incomplete)
{
	size_t n;
	const uint32_t *fr = profile_stack_frames(g->c.p, stack, &n);
	uint32_t stamp = stack + 1;
	bool python_seen = false;

	for (size_t i = 0; i < n; i++) {
		uint32_t func, line;
		stacks_frame_ids(g, fr[i], &func, &line);
		struct stacks_func_acc *fa = &g->funcs[func];
		struct stacks_line_acc *la = &g->lines[line];
		struct stacks_lib_acc *lb = &g->libs[fa->lib];
		if (i == 0) {
			fa->self += w;
			la->self += w;
			lb->self += w;
		}
		/* Frames are leaf first: the first Python one is the innermost, whose self the
		 * native frames below it (the interpreter, a C extension) count toward. */
		if (!python_seen && (profile_frame_at(g->c.p, fr[i])->flags & PROFILE_FRAME_PYTHON)) {
			python_seen = true;
			fa->pyself += w;
			la->pyself += w;
			g->python_samples += w;
		}
		if (fa->stamp != stamp) {
			fa->stamp = stamp;
			fa->total += w;
		}
		if (la->stamp != stamp) {
			la->stamp = stamp;
			la->total += w;
		}
		if (lb->stamp != stamp) {
			lb->stamp = stamp;
			lb->total += w;
		}
		if (i == n - 1 && incomplete)
			fa->stop += incomplete;
	}
}

/* Pick each function's hottest known source line: by self samples, or by total samples for a
 * function that never was the leaf. Ties go to the lower line for a stable answer. */
static void stacks_pick_hot_lines(struct stacks_agg *g)
{
	for (size_t i = 0; i < g->nlines; i++) {
		struct stacks_line_acc *la = &g->lines[i];
		if (!la->file && !la->line)
			continue;
		struct stacks_func_acc *fa = &g->funcs[la->func];
		/* A Python function is hardly ever the leaf: its own time is pyself. */
		bool by_py = (fa->flags & PROFILE_FRAME_PYTHON) && fa->pyself > 0;
		bool by_self = !by_py && fa->self > 0;
		uint64_t v = by_py ? la->pyself : by_self ? la->self : la->total;
		if (!v)
			continue;
		if (fa->hot == STACKS_NONE) {
			fa->hot = (uint32_t)i;
			continue;
		}
		const struct stacks_line_acc *best = &g->lines[fa->hot];
		uint64_t bv = by_py ? best->pyself : by_self ? best->self : best->total;
		if (v > bv || (v == bv && la->line < best->line))
			fa->hot = (uint32_t)i;
	}
}

/* The tables' orders: the largest count first (CS_CMP(b, a): descending), then by name. */
CS_CMP_FN(stacks_cmp_process, struct stacks_process,
	CS_CMP(b->samples, a->samples) ?: CS_CMP(a->pid, b->pid))

CS_CMP_FN(stacks_cmp_thread, struct stacks_thread,
	CS_CMP(b->samples, a->samples) ?: CS_CMP(a->pid, b->pid) ?: CS_CMP(a->tid, b->tid))

CS_CMP_FN(stacks_cmp_library, struct stacks_library,
	CS_CMP(b->self, a->self) ?: CS_CMP(b->total, a->total) ?: strcmp(a->path, b->path))

CS_CMP_FN(stacks_cmp_lacking, struct stacks_library,
	CS_CMP(b->total, a->total) ?: strcmp(a->path, b->path))

CS_CMP_FN(stacks_cmp_stop, struct stacks_stop,
	CS_CMP(b->samples, a->samples) ?: strcmp(a->name, b->name) ?: strcmp(a->module, b->module))

static int stacks_cmp_func_names(const struct stacks_function *a, const struct stacks_function *b)
{
	return strcmp(a->name, b->name) ?: strcmp(a->module, b->module);
}

CS_CMP_FN(stacks_cmp_self, struct stacks_function,
	CS_CMP(b->self, a->self) ?: CS_CMP(b->total, a->total) ?: stacks_cmp_func_names(a, b))

CS_CMP_FN(stacks_cmp_total, struct stacks_function,
	CS_CMP(b->total, a->total) ?: CS_CMP(b->self, a->self) ?: stacks_cmp_func_names(a, b))

CS_CMP_FN(stacks_cmp_python_self, struct stacks_function,
	CS_CMP(b->python_self, a->python_self) ?: CS_CMP(b->total, a->total) ?:
	stacks_cmp_func_names(a, b))

CS_CMP_FN(stacks_cmp_python_total, struct stacks_function,
	CS_CMP(b->total, a->total) ?: CS_CMP(b->python_self, a->python_self) ?:
	stacks_cmp_func_names(a, b))

size_t stacks_python_functions(const struct stacks_report *r, enum stacks_sort by,
			       struct stacks_function **out)
{
	size_t n = 0;

	*out = cs_malloc(r->nfunctions * sizeof(**out) + 1);
	for (size_t i = 0; i < r->nfunctions; i++)
		if (r->functions[i].frame_flags & PROFILE_FRAME_PYTHON)
			(*out)[n++] = r->functions[i];
	cs_qsort(*out, n, sizeof(**out),
		 by == STACKS_SORT_TOTAL ? stacks_cmp_python_total : stacks_cmp_python_self);
	return n;
}

void stacks_python_view(const struct profile *p, struct profile *view)
{
	*view = *p;
	view->stacks = cs_calloc(p->nstacks ? p->nstacks : 1, sizeof(*view->stacks));
	view->stack_frames = cs_malloc((p->nstack_frames ? p->nstack_frames : 1) *
				       sizeof(*view->stack_frames));
	view->nstack_frames = 0;
	for (size_t st = 0; st < p->nstacks; st++) {
		size_t n;
		const uint32_t *fr = profile_stack_frames(p, (uint32_t)st, &n);
		view->stacks[st].first = (uint32_t)view->nstack_frames;
		for (size_t i = 0; fr && i < n; i++)
			if (profile_frame_at(p, fr[i])->flags & (PROFILE_FRAME_PYTHON | PROFILE_FRAME_OFFCPU))
				view->stack_frames[view->nstack_frames++] = fr[i];
		view->stacks[st].nframes = (uint32_t)(view->nstack_frames - view->stacks[st].first);
	}
}

void stacks_python_view_free(struct profile *view)
{
	free(view->stacks);
	free(view->stack_frames);
	memset(view, 0, sizeof(*view));
}

void stacks_sort_functions(struct stacks_report *r, enum stacks_sort by)
{
	cs_qsort(r->functions, r->nfunctions, sizeof(*r->functions),
		 by == STACKS_SORT_TOTAL ? stacks_cmp_total : stacks_cmp_self);
}

/* A --stack-size to try when incomplete stacks needed more stack than was copied: twice the current size (four times when a
 * quarter or more of the samples were cut), capped at the kernel's maximum. An unknown current
 * size is taken as perf's default of 8192 bytes. */
static void stacks_suggest_stack_size(const struct profile *p, uint64_t samples,
				      struct stacks_unwind *u)
{
	const char *hdr = profile_header(p, "stack_size");
	uint64_t cur = 0;

	if (!hdr || cs_parse_u64(hdr, &cur) < 0)
		cur = 0;
	u->stack_size = cur;
	/* Only the incomplete stacks that needed more stack: a larger copy helps those alone. */
	if (!u->causes.stack_short)
		return;
	uint64_t base = cur ? cur : 8192;
	uint64_t want = base * (u->causes.stack_short * 4 >= samples ? 4 : 2);
	want = (want + 7) & ~7ull;
	if (want > STACKS_MAX_STACK_SIZE)
		want = STACKS_MAX_STACK_SIZE;
	if (cur >= STACKS_MAX_STACK_SIZE || want <= cur)
		u->stack_size_at_max = true;
	else
		u->suggested_stack_size = want;
}

/* Build the report's arrays from the accumulators. */
static void stacks_build_report(struct stacks_agg *g, struct stacks_report *r)
{
	const struct profile *p = g->c.p;

	r->functions = cs_calloc(g->nfuncs, sizeof(*r->functions));
	size_t nstops = 0;
	for (size_t i = 0; i < g->nfuncs; i++) {
		const struct stacks_func_acc *fa = &g->funcs[i];
		nstops += fa->stop > 0;
		if (!fa->total)
			continue;
		struct stacks_function *f = &r->functions[r->nfunctions++];
		f->name = profile_str(p, fa->name);
		if (!*f->name)
			f->name = "[missing frame]";
		f->module = profile_str(p, g->libs[fa->lib].path);
		f->frame_flags = fa->flags;
		f->self = fa->self;
		f->total = fa->total;
		f->python_self = fa->pyself;
		if (fa->hot != STACKS_NONE) {
			const struct stacks_line_acc *la = &g->lines[fa->hot];
			f->hot_file = la->file ? profile_str(p, la->file) : NULL;
			f->hot_line = la->line;
			f->hot_samples = (fa->flags & PROFILE_FRAME_PYTHON) && fa->pyself ? la->pyself
					 : fa->self ? la->self : la->total;
		}
	}
	r->python_samples = g->python_samples;
	stacks_sort_functions(r, STACKS_SORT_SELF);

	r->unwind.stops = cs_calloc(nstops, sizeof(*r->unwind.stops));
	for (size_t i = 0; i < g->nfuncs; i++) {
		const struct stacks_func_acc *fa = &g->funcs[i];
		if (!fa->stop)
			continue;
		struct stacks_stop *s = &r->unwind.stops[r->unwind.nstops++];
		s->name = profile_str(p, fa->name);
		s->module = profile_str(p, g->libs[fa->lib].path);
		s->samples = fa->stop;
	}
	cs_qsort(r->unwind.stops, r->unwind.nstops, sizeof(*r->unwind.stops), stacks_cmp_stop);

	r->processes = cs_calloc(g->c.nprows, sizeof(*r->processes));
	for (size_t i = 0; i < g->c.nprows; i++) {
		const struct stacks_prow *pr = &g->c.prows[i];
		if (pr->samples)
			r->processes[r->nprocesses++] = (struct stacks_process){
				.pid = pr->pid, .comm = profile_str(p, pr->comm),
				.samples = pr->samples };
	}
	cs_qsort(r->processes, r->nprocesses, sizeof(*r->processes), stacks_cmp_process);

	r->threads = cs_calloc(g->c.ntrows, sizeof(*r->threads));
	for (size_t i = 0; i < g->c.ntrows; i++) {
		const struct stacks_trow *t = &g->c.trows[i];
		if (t->samples)
			r->threads[r->nthreads++] = (struct stacks_thread){
				.pid = t->pid, .tid = t->tid, .comm = profile_str(p, t->comm),
				.samples = t->samples };
	}
	cs_qsort(r->threads, r->nthreads, sizeof(*r->threads), stacks_cmp_thread);

	r->libraries = cs_calloc(g->nlibs, sizeof(*r->libraries));
	r->unwind.lacking = cs_calloc(g->nlibs, sizeof(*r->unwind.lacking));
	for (size_t i = 0; i < g->nlibs; i++) {
		const struct stacks_lib_acc *lb = &g->libs[i];
		if (!lb->total)
			continue;
		struct stacks_library l = { .path = profile_str(p, lb->path),
					    .flags = lb->flags, .self = lb->self,
					    .total = lb->total };
		r->libraries[r->nlibraries++] = l;
		/* Kernel and JIT code are not unwound with CFI: their flags say nothing useful. */
		if ((lb->flags & (PROFILE_MODULE_NO_CFI | PROFILE_MODULE_NO_SYMBOLS)) &&
		    !(lb->flags & (PROFILE_MODULE_KERNEL | PROFILE_MODULE_JIT)))
			r->unwind.lacking[r->unwind.nlacking++] = l;
	}
	cs_qsort(r->libraries, r->nlibraries, sizeof(*r->libraries), stacks_cmp_library);
	cs_qsort(r->unwind.lacking, r->unwind.nlacking, sizeof(*r->unwind.lacking),
		 stacks_cmp_lacking);

	r->unwind.complete_pct = r->samples ? 100.0 * (double)r->unwind.complete / (double)r->samples
					    : 0.0;
	stacks_suggest_stack_size(p, r->samples, &r->unwind);
}

static void stacks_count_cause(struct stacks_stop_causes *c, uint32_t flags, uint64_t w)
{
	if (flags & PROFILE_SAMPLE_STACK_FULL)
		c->stack_short += w;
	else if (flags & PROFILE_SAMPLE_STOP_ANON)
		c->anon_no_cfi += w;
	else if (flags & PROFILE_SAMPLE_STOP_NO_CFI)
		c->file_no_cfi += w;
	else if (flags & PROFILE_SAMPLE_NO_MAP)
		c->no_map += w;
	else if (flags & PROFILE_SAMPLE_UNWIND_ERROR)
		c->error += w;
	else
		c->other += w;
}

/* Frames per recovery method, over the stacks hit (stack_w: their weights). */
static void stacks_count_frames(const struct profile *p, const uint64_t *stack_w,
				struct stacks_unwind *u)
{
	const char *cg = profile_header(p, "callgraph");

	/* fp: the kernel's callchain, how each frame was found is not known. bpf: the kernel's
	 * walk by unwind rows (CFI) is kept only where it took no frame-pointer step, else user
	 * space unwound the sample from a stack slice and marked its frames */
	u->frames_known = !cg || strcmp(cg, "fp") != 0;
	if (!u->frames_known)
		return;
	for (size_t st = 0; st < p->nstacks; st++) {
		if (!stack_w[st])
			continue;
		size_t n;
		const uint32_t *fr = profile_stack_frames(p, (uint32_t)st, &n);
		for (size_t i = 0; fr && i < n; i++) {
			uint32_t fl = profile_frame_at(p, fr[i])->flags;
			if (fl & (PROFILE_FRAME_KERNEL | PROFILE_FRAME_INLINED | PROFILE_FRAME_PYTHON |
				  PROFILE_FRAME_OFFCPU))
				continue; /* not unwound: the kernel's, inline chains, the interpreter's,
					   * why a thread was off the CPU */
			if (fl & PROFILE_FRAME_FOUND_FP)
				u->frames_fp += stack_w[st];
			else if (fl & PROFILE_FRAME_FOUND_SCAN)
				u->frames_scan += stack_w[st];
			else
				u->frames_cfi += stack_w[st];
		}
	}
}

int stacks_aggregate(const struct profile *p, const struct stacks_filter *filter,
		     struct stacks_report *out)
{
	struct stacks_agg g;
	uint64_t *stack_w = NULL, *stack_incomplete = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	memset(&g, 0, sizeof(g));
	err = stacks_ctx_init(&g.c, p, filter);
	if (err < 0)
		goto out;
	size_t nst = p->nstacks ? p->nstacks : 1, nfr = p->nframes ? p->nframes : 1;
	stack_w = cs_calloc(nst, sizeof(*stack_w));
	stack_incomplete = cs_calloc(nst, sizeof(*stack_incomplete));
	g.frame_func = cs_malloc(nfr * sizeof(*g.frame_func));
	g.frame_line = cs_malloc(nfr * sizeof(*g.frame_line));
	memset(g.frame_func, 0xff, nfr * sizeof(*g.frame_func));
	memset(g.frame_line, 0xff, nfr * sizeof(*g.frame_line));
	g.module_lib = cs_malloc((p->nmodules ? p->nmodules : 1) * sizeof(*g.module_lib));
	memset(g.module_lib, 0xff, (p->nmodules ? p->nmodules : 1) * sizeof(*g.module_lib));

	/* Pass 1: per sample, only integer work. */
	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		struct stacks_trow *t = stacks_sample_trow(&g.c, s);
		if (!t->match)
			continue;
		uint64_t w = s->weight;
		out->samples += w;
		if (s->flags & PROFILE_SAMPLE_OFFCPU)
			out->offcpu_samples += w;
		t->samples += w;
		g.c.prows[t->prow].samples += w;
		if (s->flags & PROFILE_SAMPLE_UNWIND_ERROR)
			out->unwind.unwind_errors += w;
		if (s->flags & PROFILE_SAMPLE_STACK_FULL)
			out->unwind.stack_full += w;
		if (s->flags & PROFILE_SAMPLE_PYTHON_UNREAD)
			out->unwind.python_unread += w;
		if (s->flags & PROFILE_SAMPLE_PYTHON_CHANGED)
			out->unwind.python_changed += w;
		uint8_t cls = stacks_root_class(&g.c, s->stack);
		if (cls & STACKS_ROOT_EMPTY) {
			out->unwind.empty += w;
			continue;
		}
		stack_w[s->stack] += w;
		if (cls & (s->pid == s->tid ? STACKS_ROOT_MAIN : STACKS_ROOT_THREAD)) {
			out->unwind.complete += w;
		} else {
			stack_incomplete[s->stack] += w;
			stacks_count_cause(&out->unwind.causes, s->flags, w);
		}
	}
	stacks_count_frames(p, stack_w, &out->unwind);

	/* Pass 2: per distinct stack that was hit. */
	for (size_t st = 0; st < p->nstacks; st++)
		if (stack_w[st])
			stacks_add_stack(&g, (uint32_t)st, stack_w[st], stack_incomplete[st]);
	stacks_pick_hot_lines(&g);
	stacks_build_report(&g, out);
out:
	CS_FREE_ALL(stack_w, stack_incomplete, g.frame_func, g.frame_line, g.module_lib, g.funcs);
	cs_map_free(&g.fmap);
	free(g.libs);
	cs_map_free(&g.lmap);
	free(g.lines);
	cs_map_free(&g.linemap);
	stacks_ctx_free(&g.c);
	return err;
}

void stacks_report_free(struct stacks_report *r)
{
	CS_FREE_ALL(r->functions, r->processes, r->threads, r->libraries, r->unwind.lacking,
		    r->unwind.stops);
	memset(r, 0, sizeof(*r));
}

void stacks_print_summary(const struct profile *p, FILE *f, int top)
{
	struct stacks_report r;

	if (stacks_aggregate(p, NULL, &r) < 0)
		return;
	if (!r.samples) {
		fprintf(f, "csampler: no samples recorded\n");
		goto out;
	}
	fprintf(f, "csampler: %llu samples, %.1f%% of stacks complete; top functions by self:\n",
		(unsigned long long)r.samples, r.unwind.complete_pct);
	for (size_t i = 0; i < r.nfunctions && (int)i < top; i++) {
		const struct stacks_function *fn = &r.functions[i];
		if (!fn->self)
			break;
		fprintf(f, "  %6.2f%%  %s", 100.0 * (double)fn->self / (double)r.samples, fn->name);
		/* "[kernel.kallsyms]", "[vdso]" are bracketed already */
		if (*fn->module)
			fprintf(f, fn->module[0] == '[' ? "  %s" : "  [%s]", cs_basename(fn->module));
		fputc('\n', f);
	}
	fprintf(f, "csampler: 'csampler report' shows the rest\n");
out:
	stacks_report_free(&r);
}

/* ---- folded CPU stacks (stacks_fold, under fold.h's fold_profile) ---- */

struct stacks_fold_entry {
	uint32_t root;      /* trow (per thread) or prow index */
	uint32_t stack;     /* stack id, or STACKS_NONE for a sample without frames */
	uint64_t count;
	double idle_ns;     /* FOLD_GPU_IDLE: the GPU idle ns its samples explain */
};

struct stacks_fold {
	struct stacks_ctx c;
	const struct fold_opts *opts;
	char **root_names;          /* per trow/prow, made on first use; owned here */
	size_t nroot_names;
	struct fold_frame *frames;  /* the buffer handed to the callback */
	size_t frames_cap;
};

static const char *stacks_fold_root(struct stacks_fold *fo, uint32_t root)
{
	size_t n = fo->opts->per_thread ? fo->c.ntrows : fo->c.nprows;
	if (fo->nroot_names < n) {
		fo->root_names = cs_realloc(fo->root_names, n * sizeof(*fo->root_names));
		memset(fo->root_names + fo->nroot_names, 0,
		       (n - fo->nroot_names) * sizeof(*fo->root_names));
		fo->nroot_names = n;
	}
	if (!fo->root_names[root]) {
		if (fo->opts->per_thread) {
			const struct stacks_trow *t = &fo->c.trows[root];
			const char *comm = profile_str(fo->c.p, t->comm);
			fo->root_names[root] = *comm ? cs_asprintf("%s-%u", comm, t->tid)
						     : cs_asprintf("tid-%u", t->tid);
		} else {
			const struct stacks_prow *pr = &fo->c.prows[root];
			const char *comm = profile_str(fo->c.p, pr->comm);
			fo->root_names[root] = *comm ? cs_strdup(comm)
						     : cs_asprintf("pid-%u", pr->pid);
		}
	}
	return fo->root_names[root];
}

/* Hand one stack, root first, to the callback. */
static int stacks_fold_emit(struct stacks_fold *fo, uint32_t root, uint32_t stack, uint64_t count,
			    uint64_t calls, fold_fn fn, void *arg)
{
	size_t n = 0;
	const uint32_t *fr = stack == STACKS_NONE ? NULL : profile_stack_frames(fo->c.p, stack, &n);

	cs_grow(&fo->frames, &fo->frames_cap, n + 1, sizeof(*fo->frames));
	fo->frames[0] = (struct fold_frame){ .name = stacks_fold_root(fo, root) };
	for (size_t i = 0; i < n; i++)
		fold_frame_of(fo->c.p, fr[n - 1 - i], &fo->frames[1 + i]);
	return fn(arg, fo->frames, n + 1, count, calls);
}

/* qsort_r order of merged entries: root name, then frame names root first, then depth. */
static int stacks_fold_cmp(const void *x, const void *y, void *arg)
{
	struct stacks_fold *fo = arg;
	const struct stacks_fold_entry *a = x, *b = y;
	const struct profile *p = fo->c.p;
	int r = 0;

	if (a->root != b->root)
		r = strcmp(fo->root_names[a->root], fo->root_names[b->root]);
	if (r)
		return r;
	size_t na = 0, nb = 0;
	const uint32_t *fa = a->stack == STACKS_NONE ? NULL : profile_stack_frames(p, a->stack, &na);
	const uint32_t *fb = b->stack == STACKS_NONE ? NULL : profile_stack_frames(p, b->stack, &nb);
	for (size_t i = 0; i < na && i < nb; i++) {
		uint32_t ia = fa[na - 1 - i], ib = fb[nb - 1 - i];
		if (ia == ib)
			continue;
		struct fold_frame ffa, ffb;
		fold_frame_of(p, ia, &ffa);
		fold_frame_of(p, ib, &ffb);
		r = strcmp(ffa.name, ffb.name) ?:
		    strcmp(ffa.module ? ffa.module : "", ffb.module ? ffb.module : "") ?:
		    CS_CMP(ffa.flags, ffb.flags) ?:
		    strcmp(ffa.file ? ffa.file : "", ffb.file ? ffb.file : "") ?:
		    CS_CMP(ffa.line, ffb.line);
		if (r)
			return r;
	}
	return CS_CMP(na, nb) ?: CS_CMP(a->root, b->root) ?: CS_CMP(a->stack, b->stack);
}

int stacks_fold(const struct profile *p, const struct fold_opts *opts, fold_fn fn, void *arg)
{
	static const struct fold_opts defaults = FOLD_OPTS_DEFAULT;
	struct stacks_fold fo;
	struct stacks_fold_entry *entries = NULL;
	size_t nentries = 0, cap = 0;
	struct cs_map emap = { 0 };
	int err;

	double *idle_ns = NULL;   /* FOLD_GPU_IDLE: per sample, the idle ns it explains; < 0: none */

	if (opts && opts->source == FOLD_GPU_IDLE) {
		struct gpu_idle g;
		gpu_idle_analyze(p, opts->pid, &g);
		idle_ns = cs_malloc(p->nsamples_records * sizeof(*idle_ns) + 1);
		for (size_t i = 0; i < p->nsamples_records; i++)
			idle_ns[i] = -1;
		for (size_t i = 0; i < g.nsamples; i++) {
			double *v = &idle_ns[g.samples[i].sample];
			*v = (*v < 0 ? 0 : *v) + g.samples[i].idle_ns;
		}
		gpu_idle_free(&g);
	}
	memset(&fo, 0, sizeof(fo));
	fo.opts = opts ? opts : &defaults;
	struct stacks_filter filter = { .pid = fo.opts->pid, .tid = fo.opts->tid,
					.comm = fo.opts->comm };
	err = stacks_ctx_init(&fo.c, p, &filter);
	if (err < 0)
		goto out;

	for (size_t i = 0; i < p->nsamples_records; i++) {
		const struct profile_sample *s = &p->samples[i];
		struct stacks_trow *t = stacks_sample_trow(&fo.c, s);
		if (!t->match || (idle_ns && idle_ns[i] < 0))
			continue;
		double ns = idle_ns ? idle_ns[i] : 0;
		uint32_t root = fo.opts->per_thread ? (uint32_t)(t - fo.c.trows) : t->prow;
		uint32_t stack = (stacks_root_class(&fo.c, s->stack) & STACKS_ROOT_EMPTY)
				 ? STACKS_NONE : s->stack;
		if (fo.opts->time_order) {
			err = stacks_fold_emit(&fo, root, stack, s->weight, (uint64_t)(ns + 0.5), fn,
					       arg);
			if (err < 0)
				goto out;
			continue;
		}
		uint32_t *v = cs_map_slot(&emap, root, stack);
		if (*v == STACKS_NONE) {
			cs_grow(&entries, &cap, nentries + 1, sizeof(*entries));
			entries[nentries] = (struct stacks_fold_entry){ .root = root, .stack = stack };
			*v = (uint32_t)nentries++;
		}
		entries[*v].count += s->weight;
		entries[*v].idle_ns += ns;
	}
	if (fo.opts->time_order)
		goto out;

	for (size_t i = 0; i < nentries; i++)
		stacks_fold_root(&fo, entries[i].root);
	cs_qsort_r(entries, nentries, sizeof(*entries), stacks_fold_cmp, &fo);
	for (size_t i = 0; i < nentries; i++) {
		err = stacks_fold_emit(&fo, entries[i].root, entries[i].stack, entries[i].count,
				       (uint64_t)(entries[i].idle_ns + 0.5), fn, arg);
		if (err < 0)
			goto out;
	}
out:
	for (size_t i = 0; i < fo.nroot_names; i++)
		free(fo.root_names[i]);
	CS_FREE_ALL(fo.root_names, fo.frames, entries, idle_ns);
	cs_map_free(&emap);
	stacks_ctx_free(&fo.c);
	return err;
}

int stacks_parse_id(const char *opt, const char *value, int64_t *out)
{
	uint64_t v;

	if (cs_parse_u64(value, &v) < 0 || v > INT32_MAX)
		return cs_error(EINVAL, "%s: '%s' is not a process or thread id (a number such as "
				"1234)", opt, value);
	*out = (int64_t)v;
	return 0;
}
