/* flame_layout.c: turns the merged tree into the frame list the SVG carries: pre-order,
 * children sorted by name (flamegraph.pl's order; insertion order for flame charts), and the
 * children narrower than --minwidth of each parent merged into one "[N other frames]" frame
 * placed after its siblings, so that the widths still add up. Also the page geometry, shared
 * by the SVG writer, the text dump and (through the SVG's data) flame.js. */
#include "flame.h"
#include "base/cs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A pending frame of the pre-order walk: a tree node, or an "other" frame (node FLAME_NONE). */
struct flame_walk {
	uint32_t node;
	uint32_t depth;
	uint32_t nmerged;
	double count, before, calls;
};

struct flame_layout_ctx {
	const struct flame_tree *t;
	struct flame_layout *l;
	uint32_t *key_okey;     /* tree key -> output key, FLAME_NONE until used */
	uint32_t *other_okey;   /* nmerged -> output key of its "other" frame */
	size_t other_cap;
	size_t frames_cap, okeys_cap;
};

static int flame_child_cmp(const void *a, const void *b, void *arg)
{
	const struct flame_tree *t = arg;
	const struct flame_key *ka = &t->keys[t->nodes[*(const uint32_t *)a].key];
	const struct flame_key *kb = &t->keys[t->nodes[*(const uint32_t *)b].key];
	int c = strcmp(t->names + ka->name, t->names + kb->name);
	if (c)
		return c;
	return ka->flags < kb->flags ? -1 : ka->flags > kb->flags;
}

static uint32_t flame_okey_new(struct flame_layout_ctx *c, uint32_t key, uint32_t nmerged,
			       uint32_t kind)
{
	struct flame_layout *l = c->l;
	cs_grow(&l->okeys, &c->okeys_cap, l->nokeys + 1, sizeof(*l->okeys));
	l->okeys[l->nokeys] = (struct flame_okey){ .key = key, .nmerged = nmerged, .kind = kind };
	return l->nokeys++;
}

static uint32_t flame_okey_of(struct flame_layout_ctx *c, const struct flame_walk *w)
{
	const struct flame_tree *t = c->t;
	if (w->node == 0)
		return 0; /* the root's output key is created first */
	if (w->node == FLAME_NONE) {
		if (w->nmerged >= c->other_cap) {
			size_t old = c->other_cap;
			cs_grow(&c->other_okey, &c->other_cap, w->nmerged + 1,
				sizeof(*c->other_okey));
			memset(c->other_okey + old, 0xff, (c->other_cap - old) * sizeof(uint32_t));
		}
		if (c->other_okey[w->nmerged] == FLAME_NONE)
			c->other_okey[w->nmerged] =
				flame_okey_new(c, FLAME_NONE, w->nmerged, FLAME_KIND_OTHER);
		return c->other_okey[w->nmerged];
	}
	uint32_t key = t->nodes[w->node].key;
	if (c->key_okey[key] == FLAME_NONE) {
		const struct flame_key *k = &t->keys[key];
		bool one_module = k->module && k->module != t->several_modules;
		uint32_t kind = flame_classify(t->names + k->name,
					       one_module ? t->strs[k->module] : NULL, k->flags);
		if (k->flags & PROFILE_FRAME_INLINED)
			kind |= FLAME_KIND_INLINED;
		c->key_okey[key] = flame_okey_new(c, key, 0, kind);
	}
	return c->key_okey[key];
}

static void flame_geometry(struct flame_layout *l, const struct flame_opts *o)
{
	struct flame_geometry *g = &l->geo;
	bool legend = l->diff || !strcmp(o->colors, "type");
	double y = o->fontsize * 2; /* the title's baseline */

	g->width = o->width;
	g->xpad = 10;
	g->fontsize = o->fontsize;
	g->frame_height = o->frame_height;
	if (o->subtitle || l->diff)
		y += o->fontsize * 2;
	g->legend_y = 0;
	if (legend) {
		y += o->fontsize * 1.75;
		g->legend_y = y;
	}
	g->ypad1 = (o->subtitle || l->diff || legend) ? y + o->fontsize : o->fontsize * 3;
	g->ypad2 = o->fontsize * 2 + 10;
	g->height = (l->max_depth + 1) * o->frame_height + g->ypad1 + g->ypad2;
	g->scale = (o->width - 2 * g->xpad) / l->total;
}

int flame_layout_build(const struct flame_tree *t, const struct flame_opts *o,
		       struct flame_layout *l)
{
	struct flame_layout_ctx c = { .t = t, .l = l };
	struct flame_walk *stack = NULL, w;
	size_t nstack = 0, stack_cap = 0, kids_cap = 0;
	uint32_t *kids = NULL;
	const double *main_count = t->count[FLAME_SERIES_MAIN];
	const double *before = t->count[FLAME_SERIES_BEFORE];
	const double *calls = t->calls;

	memset(l, 0, sizeof(*l));
	l->total = main_count[0];
	l->total_before = before ? before[0] : 0;
	l->diff = before != NULL;
	if (!(l->total > 0))
		return -ENODATA;
	double avail = o->width - 20; /* xpad on both sides, see flame_geometry */
	l->mincount = o->minwidth_pct ? l->total * o->minwidth / 100
				      : o->minwidth * l->total / avail;

	c.key_okey = cs_malloc((t->nkeys ? t->nkeys : 1) * sizeof(*c.key_okey));
	memset(c.key_okey, 0xff, (t->nkeys ? t->nkeys : 1) * sizeof(*c.key_okey));
	flame_okey_new(&c, FLAME_NONE, 0, FLAME_KIND_ROOT);

	cs_grow(&stack, &stack_cap, 1, sizeof(*stack));
	stack[nstack++] = (struct flame_walk){ .node = 0, .count = l->total,
					       .before = l->total_before,
					       .calls = calls ? calls[0] : 0 };
	while (nstack) {
		w = stack[--nstack];
		cs_grow(&l->frames, &c.frames_cap, l->nframes + 1, sizeof(*l->frames));
		l->frames[l->nframes++] = (struct flame_frame){
			.depth = w.depth, .okey = flame_okey_of(&c, &w),
			.count = w.count, .before = w.before, .calls = w.calls,
		};
		if (w.depth > l->max_depth)
			l->max_depth = w.depth;
		if (w.node == FLAME_NONE)
			continue;

		/* Children wide enough to draw, and the rest summed into one "other" frame. */
		struct flame_walk other = { .node = FLAME_NONE, .depth = w.depth + 1 };
		size_t nkids = 0;
		for (uint32_t ch = t->nodes[w.node].first_child; ch != FLAME_NONE;
		     ch = t->nodes[ch].next_sibling) {
			double cnt = main_count[ch];
			if (!(cnt > 0)) {
				if (before)
					l->gone_before += before[ch];
				continue;
			}
			if (cnt < l->mincount) {
				other.count += cnt;
				other.before += before ? before[ch] : 0;
				other.calls += calls ? calls[ch] : 0;
				other.nmerged++;
				continue;
			}
			cs_grow(&kids, &kids_cap, nkids + 1, sizeof(*kids));
			kids[nkids++] = ch;
		}
		l->merged += other.nmerged;
		if (!t->flamechart && nkids > 1)
			qsort_r(kids, nkids, sizeof(*kids), flame_child_cmp, (void *)t);
		/* Pushed in reverse so that they pop left to right, "other" last. */
		cs_grow(&stack, &stack_cap, nstack + nkids + 1, sizeof(*stack));
		if (other.nmerged)
			stack[nstack++] = other;
		for (size_t i = nkids; i-- > 0;)
			stack[nstack++] = (struct flame_walk){
				.node = kids[i], .depth = w.depth + 1, .count = main_count[kids[i]],
				.before = before ? before[kids[i]] : 0,
				.calls = calls ? calls[kids[i]] : 0,
			};
	}
	flame_geometry(l, o);
	free(stack);
	free(kids);
	free(c.key_okey);
	free(c.other_okey);
	return 0;
}

void flame_layout_free(struct flame_layout *l)
{
	free(l->frames);
	free(l->okeys);
	memset(l, 0, sizeof(*l));
}

const char *flame_okey_name(const struct flame_tree *t, const struct flame_okey *k, char *buf,
			    size_t bufsize)
{
	if (k->key != FLAME_NONE)
		return flame_key_name(t, k->key);
	if (!k->nmerged)
		return "all";
	snprintf(buf, bufsize, "[%u other frame%s]", k->nmerged, k->nmerged == 1 ? "" : "s");
	return buf;
}

static const char *const flame_kind_names[FLAME_KIND_COUNT] = {
	"root", "own", "system", "kernel", "cuda", "gpu-kernel", "gpu-copy", "gpu-sync", "jit",
	"other", "python", "nvtx", "off-cpu",
};

int flame_layout_dump(FILE *f, const struct flame_tree *t, const struct flame_layout *l,
		      const struct flame_opts *o)
{
	const struct flame_geometry *g = &l->geo;
	double *next_x = cs_calloc(l->max_depth + 2, sizeof(double));
	char buf[64];

	fprintf(f, "# frames %zu total %.10g mincount %.10g merged %llu width %.0f height %.0f\n",
		l->nframes, l->total, l->mincount, (unsigned long long)l->merged, g->width,
		g->height);
	fprintf(f, "# depth x width y count%s kind name\n", l->diff ? " before" : "");
	for (size_t i = 0; i < l->nframes; i++) {
		const struct flame_frame *fr = &l->frames[i];
		const struct flame_okey *k = &l->okeys[fr->okey];
		double x0 = next_x[fr->depth];
		next_x[fr->depth] = x0 + fr->count;
		next_x[fr->depth + 1] = x0;
		double y = o->inverted ? g->ypad1 + fr->depth * g->frame_height
				       : g->height - g->ypad2 - (fr->depth + 1) * g->frame_height + 1;
		fprintf(f, "%u %.2f %.2f %.0f %.10g", fr->depth, g->xpad + x0 * g->scale,
			fr->count * g->scale, y, fr->count);
		if (l->diff)
			fprintf(f, " %.10g", fr->before);
		fprintf(f, " %s%s %s\n", flame_kind_names[k->kind & 0xff],
			(k->kind & FLAME_KIND_INLINED) ? "+inlined" : "",
			flame_okey_name(t, k, buf, sizeof(buf)));
	}
	free(next_x);
	return ferror(f) ? -EIO : 0;
}
