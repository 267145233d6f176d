/* flame_svg.c: writes the flamegraph as one self-contained SVG file. To stay small on big
 * profiles, frames are not written as <rect>/<text> markup: the file carries the frame list
 * as compact JSON (depth, name index, count per frame, pre-order) and flame.js (embedded, as
 * is flame.css) draws it, so that nothing is fetched: the file opens from disk.
 *
 * Every string from the profile or the command line is escaped here: XML text for the title
 * and subtitle, JSON with < > & as \u escapes inside the data, which therefore can neither
 * open a tag nor end the element it lives in. flame.js puts names in the page as text only. */
#include "flame.h"
#include "base/cs.h"
#include "base/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

struct flame_out {
	FILE *f;
	struct cs_buf b;
};

/* Append a string literal (its length known at compile time). */
#define FLAME_PUT(out, lit) cs_buf_put(&(out)->b, lit, sizeof(lit) - 1)

static void flame_out_flush(struct flame_out *o)
{
	if (o->b.len)
		fwrite(o->b.data, 1, o->b.len, o->f);
	o->b.len = 0;
}

static void flame_out_check(struct flame_out *o)
{
	if (o->b.len >= (1 << 16))
		flame_out_flush(o);
}

static void flame_out_str(struct flame_out *o, const char *s)
{
	cs_buf_put(&o->b, s, strlen(s));
	flame_out_check(o);
}

/* The length of the valid UTF-8 sequence at s that XML allows, or 0: json.h's check, less the
 * control characters (but tab) and the two noncharacters XML 1.0 forbids. */
static size_t flame_utf8_len(const unsigned char *s)
{
	size_t n = json_utf8_len(s);
	if (n == 1 && s[0] < 0x20 && s[0] != '\t')
		return 0;
	if (n == 3 && s[0] == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
		return 0;
	return n;
}

void flame_escape(struct cs_buf *b, const char *s, bool json)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = flame_utf8_len(p);
		if (!n) {
			/* Not valid UTF-8 or not allowed in XML: U+FFFD. */
			cs_buf_put(b, "\xef\xbf\xbd", 3);
			p++;
			continue;
		}
		if (n > 1) {
			cs_buf_put(b, p, n);
			p += n;
			continue;
		}
		char c = (char)*p++;
		if (json) {
			switch (c) {
			case '"': cs_buf_put(b, "\\\"", 2); break;
			case '\\': cs_buf_put(b, "\\\\", 2); break;
			case '\t': cs_buf_put(b, "\\t", 2); break;
			case '<': cs_buf_put(b, "\\u003c", 6); break;
			case '>': cs_buf_put(b, "\\u003e", 6); break;
			case '&': cs_buf_put(b, "\\u0026", 6); break;
			default: cs_buf_put(b, &c, 1);
			}
		} else {
			char one[2] = { c, 0 };
			cs_buf_xml_escape(b, one);
		}
	}
}

static void flame_out_xml(struct flame_out *o, const char *s)
{
	flame_escape(&o->b, s, false);
	flame_out_check(o);
}

static void flame_out_json_str(struct flame_out *o, const char *s)
{
	FLAME_PUT(o, "\"");
	flame_escape(&o->b, s ? s : "", true);
	FLAME_PUT(o, "\"");
	flame_out_check(o);
}

/* A count: integers as integers (the common case, without printf), others with %.10g. */
static void flame_out_num(struct flame_out *o, double v)
{
	if (v >= 0 && v < 9e15 && v == floor(v)) {
		char tmp[24];
		size_t n = 0;
		uint64_t u = (uint64_t)v;
		do {
			tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		cs_buf_put(&o->b, tmp + sizeof(tmp) - n, n);
	} else {
		cs_buf_printf(&o->b, "%.10g", v);
	}
}

static const char *flame_default_title(const struct flame_layout *l, const struct flame_opts *o)
{
	if (o->title)
		return o->title;
	if (o->source == FOLD_GPU && !o->flamechart)
		return l->diff ? "Differential GPU Flame Graph" : "GPU Flame Graph";
	if (o->source == FOLD_BOTH && !o->flamechart)
		return l->diff ? "Differential CPU and GPU Flame Graph" : "CPU and GPU Flame Graph";
	if (o->source == FOLD_GPU_IDLE && !o->flamechart)
		return l->diff ? "Differential Flame Graph of the CPU while the GPU idled" :
				 "CPU while the GPU idled";
	if (o->flamechart)
		return "Flame Chart";
	if (l->diff)
		return o->inverted ? "Differential Icicle Graph" : "Differential Flame Graph";
	return o->inverted ? "Icicle Graph" : "Flame Graph";
}

/* The background gradient (flamegraph.pl's choices) or a flat "#rrggbb". */
static void flame_out_background(struct flame_out *o, const struct flame_layout *l,
				 const struct flame_opts *opts)
{
	const char *bg = opts->bgcolors, *top = "#eeeeee", *bottom = "#eeeeb0";
	if (!bg)
		bg = l->diff ? "grey" : (!strcmp(opts->colors, "mem") ? "green" :
			(!strcmp(opts->colors, "io") || !strcmp(opts->colors, "wakeup") ||
			 !strcmp(opts->colors, "chain")) ? "blue" : "yellow");
	if (bg[0] == '#') {
		top = bottom = bg; /* validated by flame_opts_check */
	} else if (!strcmp(bg, "blue")) {
		bottom = "#e0e0ff";
	} else if (!strcmp(bg, "green")) {
		top = "#eef2ee";
		bottom = "#e0ffe0";
	} else if (!strcmp(bg, "grey")) {
		top = "#f8f8f8";
		bottom = "#e8e8e8";
	}
	cs_buf_printf(&o->b, "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" "
		      "x2=\"0\"><stop stop-color=\"%s\" offset=\"5%%\"/><stop stop-color=\"%s\" "
		      "offset=\"95%%\"/></linearGradient></defs>\n", top, bottom);
	cs_buf_printf(&o->b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
		      "fill=\"url(#background)\"/>\n", l->geo.width, l->geo.height);
}

/* One number a frame, in pre-order: the double at offset off of each struct flame_frame. */
static void flame_out_series(struct flame_out *o, const struct flame_layout *l, const char *open,
			     size_t off)
{
	cs_buf_put(&o->b, open, strlen(open));
	for (size_t i = 0; i < l->nframes; i++) {
		double v;
		memcpy(&v, (const char *)&l->frames[i] + off, sizeof(v));
		if (i)
			FLAME_PUT(o, ",");
		flame_out_num(o, v);
		flame_out_check(o);
	}
	FLAME_PUT(o, "]");
}

/* The output keys' names and kinds, then their modules and source lines where any has one. */
static void flame_out_names(struct flame_out *o, const struct flame_tree *t,
			    const struct flame_layout *l)
{
	char buf[64];
	bool any_module = false, any_src = false;

	FLAME_PUT(o, ",\n\"names\":[");
	for (size_t i = 0; i < l->nokeys; i++) {
		const struct flame_okey *k = &l->okeys[i];
		if (i)
			FLAME_PUT(o, ",");
		flame_out_json_str(o, flame_okey_name(t, k, buf, sizeof(buf)));
		if (k->key != FLAME_NONE) {
			any_module |= t->keys[k->key].module != 0;
			any_src |= t->keys[k->key].file != 0;
		}
	}
	FLAME_PUT(o, "],\n\"kinds\":[");
	for (size_t i = 0; i < l->nokeys; i++) {
		cs_buf_printf(&o->b, i ? ",%u" : "%u", l->okeys[i].kind);
		flame_out_check(o);
	}
	FLAME_PUT(o, "]");
	if (any_module) {
		/* Module names by string id (modn), then one id per output key (mods). */
		FLAME_PUT(o, ",\n\"modn\":[");
		for (size_t i = 0; i < t->nstrs; i++) {
			if (i)
				FLAME_PUT(o, ",");
			flame_out_json_str(o, t->strs[i]);
		}
		FLAME_PUT(o, "],\"mods\":[");
		for (size_t i = 0; i < l->nokeys; i++) {
			uint32_t k = l->okeys[i].key;
			cs_buf_printf(&o->b, i ? ",%u" : "%u", k == FLAME_NONE ? 0 : t->keys[k].module);
			flame_out_check(o);
		}
		FLAME_PUT(o, "]");
	}
	if (any_src) {
		FLAME_PUT(o, ",\n\"src\":[");
		for (size_t i = 0; i < l->nokeys; i++) {
			uint32_t k = l->okeys[i].key;
			char *s = NULL;
			if (k != FLAME_NONE && t->keys[k].file)
				s = t->keys[k].line ? cs_asprintf("%s:%u", t->strs[t->keys[k].file],
								  t->keys[k].line)
						    : cs_strdup(t->strs[t->keys[k].file]);
			if (i)
				FLAME_PUT(o, ",");
			flame_out_json_str(o, s ? s : "");
			free(s);
		}
		FLAME_PUT(o, "]");
	}
}

/* The frame data flame.js draws. See flame.js for how it reads each field. */
static void flame_out_data(struct flame_out *o, const struct flame_tree *t,
			   const struct flame_layout *l, const struct flame_opts *opts)
{
	const struct flame_geometry *g = &l->geo;
	cs_buf_printf(&o->b, "{\"v\":1,\"W\":%.0f,\"H\":%.0f,\"fh\":%.10g,\"fs\":%.10g,"
		      "\"fw\":%.10g,\"xpad\":%.10g,\"ypad1\":%.10g,\"ypad2\":%.10g,\"legendY\":%.10g,"
		      "\"minpx\":%.10g,\"inverted\":%d,\"diff\":%d,\"negate\":%d,\"random\":%d,"
		      "\"maxDepth\":%u,\"total\":",
		      g->width, g->height, g->frame_height, g->fontsize, opts->fontwidth, g->xpad,
		      g->ypad1, g->ypad2, g->legend_y, l->mincount * g->scale, opts->inverted, l->diff, opts->negate, opts->random,
		      l->max_depth);
	flame_out_num(o, l->total);
	FLAME_PUT(o, ",\"totalBefore\":");
	flame_out_num(o, l->total_before);
	FLAME_PUT(o, ",\"palette\":");
	flame_out_json_str(o, opts->colors);
	FLAME_PUT(o, ",\"countname\":");
	flame_out_json_str(o, opts->countname);
	FLAME_PUT(o, ",\"nametype\":");
	flame_out_json_str(o, opts->nametype);
	if (opts->source == FOLD_BOTH)
		FLAME_PUT(o, ",\"both\":1");
	if (opts->source == FOLD_GPU_IDLE)   /* calls: the GPU idle ns under each frame */
		FLAME_PUT(o, ",\"callsname\":\"idle_ns\"");

	flame_out_names(o, t, l);

	/* depth, name index, count: three numbers a frame, in pre-order. */
	FLAME_PUT(o, ",\n\"frames\":[");
	for (size_t i = 0; i < l->nframes; i++) {
		const struct flame_frame *f = &l->frames[i];
		if (i)
			FLAME_PUT(o, ",");
		flame_out_num(o, f->depth);
		FLAME_PUT(o, ",");
		flame_out_num(o, f->okey);
		FLAME_PUT(o, ",");
		flame_out_num(o, f->count);
		flame_out_check(o);
	}
	FLAME_PUT(o, "]");
	if (l->diff)
		flame_out_series(o, l, ",\n\"before\":[", offsetof(struct flame_frame, before));
	if (t->calls)   /* GPU activities merged into each frame, for the tooltips */
		flame_out_series(o, l, ",\n\"calls\":[", offsetof(struct flame_frame, calls));
	FLAME_PUT(o, "}");
}

static void flame_out_diff_subtitle(struct flame_out *o, const struct flame_layout *l,
				    const struct flame_opts *opts)
{
	cs_buf_printf(&o->b, "BEFORE %.10g %s, AFTER %.10g %s, both scaled to the same total. ",
		      l->total_before, opts->countname, l->total, opts->countname);
	if (l->total_before > 0)
		cs_buf_printf(&o->b, "%.2f%% of BEFORE is in stacks that AFTER lacks.",
			      100 * l->gone_before / l->total_before);
	flame_out_check(o);
}

int flame_svg_write(FILE *f, const struct flame_tree *t, const struct flame_layout *l,
		    const struct flame_opts *opts)
{
	struct flame_out o = { .f = f };
	const struct flame_geometry *g = &l->geo;
	double bottom = g->height - g->ypad2 / 2;

	cs_buf_printf(&o.b, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		      "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		      "xmlns=\"http://www.w3.org/2000/svg\" font-size=\"%.10g\" font-family=\"",
		      g->width, g->height, g->width, g->height, g->fontsize);
	flame_out_xml(&o, opts->fonttype);
	flame_out_str(&o, ", sans-serif\">\n<!-- Flame graph drawn by csampler flame " CSAMPLER_VERSION
		      ". Its frames are in #flamedata; flame.js below draws them. -->\n");
	if (opts->notes) {
		flame_out_str(&o, "<desc id=\"notes\">");
		flame_out_xml(&o, opts->notes);
		flame_out_str(&o, "</desc>\n");
	}
	flame_out_str(&o, "<style type=\"text/css\"><![CDATA[\n");
	flame_out_str(&o, flame_css);
	flame_out_str(&o, "]]></style>\n");
	flame_out_background(&o, l, opts);

	cs_buf_printf(&o.b, "<text id=\"title\" x=\"%.10g\" y=\"%.10g\" text-anchor=\"middle\">",
		      g->width / 2, g->fontsize * 2);
	flame_out_xml(&o, flame_default_title(l, opts));
	flame_out_str(&o, "</text>\n");
	if (opts->subtitle || l->diff) {
		cs_buf_printf(&o.b, "<text id=\"subtitle\" x=\"%.10g\" y=\"%.10g\" "
			      "text-anchor=\"middle\">", g->width / 2, g->fontsize * 4);
		if (opts->subtitle)
			flame_out_xml(&o, opts->subtitle);
		else
			flame_out_diff_subtitle(&o, l, opts);
		flame_out_str(&o, "</text>\n");
	}
	cs_buf_printf(&o.b, "<g id=\"legend\"></g>\n"
		      "<text id=\"unzoom\" class=\"button hide\" x=\"%.10g\" y=\"%.10g\">Reset Zoom</text>\n"
		      "<text id=\"search\" class=\"button\" x=\"%.10g\" y=\"%.10g\">Search</text>\n"
		      "<text id=\"ignorecase\" class=\"button\" x=\"%.10g\" y=\"%.10g\">ic</text>\n"
		      "<text id=\"details\" x=\"%.10g\" y=\"%.10g\"> </text>\n"
		      "<text id=\"matched\" x=\"%.10g\" y=\"%.10g\" text-anchor=\"end\"> </text>\n"
		      "<g id=\"frames\"></g>\n"
		      "<text id=\"nojs\" x=\"%.10g\" y=\"%.10g\" text-anchor=\"middle\">This flame "
		      "graph draws itself with JavaScript: open it in a web browser.</text>\n"
		      "<g id=\"tip\" class=\"hide\"><rect rx=\"3\" ry=\"3\"/><text></text></g>\n",
		      g->xpad, g->fontsize * 2, g->width - g->xpad - 110, g->fontsize * 2,
		      g->width - g->xpad - 16, g->fontsize * 2, g->xpad, bottom,
		      g->width - g->xpad, bottom, g->width / 2, (g->ypad1 + g->height) / 2);
	flame_out_str(&o, "<script type=\"application/json\" id=\"flamedata\">");
	flame_out_data(&o, t, l, opts);
	flame_out_str(&o, "</script>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	flame_out_str(&o, flame_js);
	flame_out_str(&o, "]]></script>\n</svg>\n");
	flame_out_flush(&o);
	cs_buf_free(&o.b);
	return ferror(f) ? -EIO : 0;
}
