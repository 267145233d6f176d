/* flame_test.c: unit tests of the flamegraph engine: the folded-text reader (counts,
 * annotations, shared prefixes), escaping, frame kinds, the tree and the layout (merging of
 * narrow frames, flame charts, diffs). Run by bin/csampler-unit. */
#include "flame.h"
#include "base/cs.h"
#include "base/unit.h"

#include <errno.h>
#include <string.h>

struct flame_test_rec {
	char text[1024];    /* "frames|same|counts" per stack, one a line */
	size_t len;
	int seen_calls;
};

static int flame_test_stack(void *arg, const struct fold_frame *frames, size_t n,
			    size_t same_prefix, const uint64_t hash[2], const double *counts,
			    int ncounts)
{
	struct flame_test_rec *r = arg;
	char *p = r->text + r->len;
	size_t room = sizeof(r->text) - r->len;
	int w = 0;
	for (size_t i = 0; i < n; i++)
		w += snprintf(p + w, room - w, "%s%s%s", i ? ";" : "", frames[i].name,
			      frames[i].flags == PROFILE_FRAME_KERNEL ? "/k" :
			      frames[i].flags == PROFILE_FRAME_INLINED ? "/i" :
			      frames[i].flags == PROFILE_FRAME_JIT ? "/j" : "");
	w += snprintf(p + w, room - w, "|%zu|%g", same_prefix, counts[0]);
	if (ncounts == 2)
		w += snprintf(p + w, room - w, ",%g", counts[1]);
	w += snprintf(p + w, room - w, "\n");
	r->len += w;
	return 0;
}

static int flame_test_seen(void *arg, const uint64_t hash[2], const double *counts, int ncounts)
{
	((struct flame_test_rec *)arg)->seen_calls++;
	return -ENOENT;
}

static void flame_test_read(const char *in, struct flame_test_rec *r,
			    struct flame_folded_stats *st)
{
	static const struct flame_folded_ops ops = {
		.seen = flame_test_seen, .stack = flame_test_stack,
	};
	FILE *f = fmemopen((void *)in, strlen(in), "r");
	UNIT_ASSERT(f);
	memset(r, 0, sizeof(*r));
	memset(st, 0, sizeof(*st));
	UNIT_ASSERT_EQ_INT(flame_folded_read(f, "test", &ops, r, st), 0);
	fclose(f);
}

UNIT_TEST(flame_folded_counts_and_annotations)
{
	struct flame_test_rec r;
	struct flame_folded_stats st;
	flame_test_read("a;b_[k];c_[i] 3\n"
			"a;b_[k];d_[j] 2.5\r\n"
			"no count here\n"
			"\n"
			"a;;e 1 4\n"
			"x y z 7\n"
			"a;b_[x] 9x\n", &r, &st);
	UNIT_ASSERT(!strcmp(r.text,
			    "a;b/k;c/i|0|3\n"
			    "a;b/k;d/j|2|2.5\n"
			    "a;e|1|1,4\n"
			    "x y z|0|7\n"));
	UNIT_ASSERT_EQ_INT(st.lines, 7);
	UNIT_ASSERT_EQ_INT(st.stacks, 4);
	UNIT_ASSERT_EQ_INT(st.ignored, 2);
	UNIT_ASSERT_EQ_INT(st.first_ignored, 3);
	UNIT_ASSERT_EQ_INT(st.two_counts, 1);
	UNIT_ASSERT_EQ_INT(r.seen_calls, 4);
}

/* The shared-prefix hint counts whole frames only: "ab" is not "a" followed by more. */
UNIT_TEST(flame_folded_same_prefix)
{
	struct flame_test_rec r;
	struct flame_folded_stats st;
	flame_test_read("m;ab;c 1\nm;ab;c;d 1\nm;a;c 1\nm;ab 1\nm;ab 1\nq 1\n", &r, &st);
	UNIT_ASSERT(!strcmp(r.text, "m;ab;c|0|1\nm;ab;c;d|3|1\nm;a;c|1|1\nm;ab|1|1\nm;ab|2|1\n"
				    "q|0|1\n"));
}

UNIT_TEST(flame_escape_xml_and_json)
{
	struct cs_buf b = { 0 };
	flame_escape(&b, "<a&b>\"'", false);
	UNIT_ASSERT(!strcmp(b.data, "&lt;a&amp;b&gt;&quot;&#39;"));
	b.len = 0;
	flame_escape(&b, "<s>&\"\\]]>", true);
	UNIT_ASSERT(!strcmp(b.data, "\\u003cs\\u003e\\u0026\\\"\\\\]]\\u003e"));
	b.len = 0;
	/* Bad UTF-8, an overlong form, a surrogate and a control character become U+FFFD;
	 * valid multi-byte characters stay. */
	flame_escape(&b, "\xff" "caf\xc3\xa9" "\xc0\xaf" "\xed\xa0\x80" "\x01" "\xf0\x9f\x94\xa5", false);
	UNIT_ASSERT(!strcmp(b.data, "\xef\xbf\xbd" "caf\xc3\xa9" "\xef\xbf\xbd\xef\xbf\xbd"
				    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "\xef\xbf\xbd"
				    "\xf0\x9f\x94\xa5"));
	cs_buf_free(&b);
}

UNIT_TEST(flame_classify_kinds)
{
	UNIT_ASSERT_EQ_INT(flame_classify("foo", "libc.so.6", 0), FLAME_KIND_SYSTEM);
	UNIT_ASSERT_EQ_INT(flame_classify("foo", "/usr/lib/x86_64-linux-gnu/libcudart.so.13", 0),
			   FLAME_KIND_CUDA);
	UNIT_ASSERT_EQ_INT(flame_classify("foo", "splat-train", 0), FLAME_KIND_OWN);
	UNIT_ASSERT_EQ_INT(flame_classify("foo", "[kernel.kallsyms]", 0), FLAME_KIND_KERNEL);
	UNIT_ASSERT_EQ_INT(flame_classify("foo", NULL, PROFILE_FRAME_KERNEL), FLAME_KIND_KERNEL);
	UNIT_ASSERT_EQ_INT(flame_classify("k", "x", PROFILE_FRAME_GPU_KERNEL), FLAME_KIND_GPU_KERNEL);
	UNIT_ASSERT_EQ_INT(flame_classify("k", NULL, PROFILE_FRAME_GPU_COPY), FLAME_KIND_GPU_COPY);
	UNIT_ASSERT_EQ_INT(flame_classify("k", NULL, PROFILE_FRAME_GPU_SYNC), FLAME_KIND_GPU_SYNC);
	UNIT_ASSERT_EQ_INT(flame_classify("k", NULL, PROFILE_FRAME_JIT), FLAME_KIND_JIT);
	UNIT_ASSERT_EQ_INT(flame_classify("cuLaunchKernel", NULL, 0), FLAME_KIND_CUDA);
	UNIT_ASSERT_EQ_INT(flame_classify("cudaMemcpy", NULL, 0), FLAME_KIND_CUDA);
	UNIT_ASSERT_EQ_INT(flame_classify("cumulative_sum", NULL, 0), FLAME_KIND_OWN);
	UNIT_ASSERT_EQ_INT(flame_classify("[libc.so.6]", NULL, 0), FLAME_KIND_SYSTEM);
	UNIT_ASSERT_EQ_INT(flame_classify("libcublas.so.12+0x1f", NULL, 0), FLAME_KIND_CUDA);
	UNIT_ASSERT_EQ_INT(flame_classify("libc.so.1`malloc", NULL, 0), FLAME_KIND_SYSTEM);
	UNIT_ASSERT_EQ_INT(flame_classify("malloc", NULL, 0), FLAME_KIND_SYSTEM);
	UNIT_ASSERT_EQ_INT(flame_classify("[unknown]", NULL, 0), FLAME_KIND_OWN);
	UNIT_ASSERT_EQ_INT(flame_classify("main", NULL, 0), FLAME_KIND_OWN);
	/* The GPU view's frames, from data files and from its folded text alike. */
	UNIT_ASSERT_EQ_INT(flame_classify("[gpu] void k<int>(int*)", NULL, 0), FLAME_KIND_GPU_KERNEL);
	UNIT_ASSERT_EQ_INT(flame_classify("[memcpy HtoD]", NULL, 0), FLAME_KIND_GPU_COPY);
	UNIT_ASSERT_EQ_INT(flame_classify("[memset]", NULL, 0), FLAME_KIND_GPU_COPY);
	UNIT_ASSERT_EQ_INT(flame_classify("[sync]", NULL, 0), FLAME_KIND_GPU_SYNC);
	UNIT_ASSERT_EQ_INT(flame_classify("[nvtx] forward", NULL, 0), FLAME_KIND_NVTX);
	UNIT_ASSERT_EQ_INT(flame_classify("[no launch stack]", NULL, 0), FLAME_KIND_OWN);
	UNIT_ASSERT_EQ_INT(flame_classify("[gpu] x", "libc.so.6", 0), FLAME_KIND_SYSTEM);
	/* record --idle's off-CPU leaves: by flag (data files) and by name (folded text) */
	UNIT_ASSERT_EQ_INT(flame_classify("[off-cpu: futex]", "[off-cpu]", PROFILE_FRAME_OFFCPU),
			   FLAME_KIND_OFFCPU);
	UNIT_ASSERT_EQ_INT(flame_classify("[off-cpu: read]", NULL, 0), FLAME_KIND_OFFCPU);
}

static void flame_test_add(struct flame_tree *t, const char *stack, int series, double count)
{
	struct fold_frame frames[16];
	char buf[256];
	size_t n = 0;
	snprintf(buf, sizeof(buf), "%s", stack);
	for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok && n < 16;
	     tok = strtok_r(NULL, ";", &save))
		frames[n++] = (struct fold_frame){ .name = tok };
	flame_tree_add(t, frames, n, 0, series, count);
}

/* "name:count" of each frame in layout order, depth as leading dots. */
static void flame_test_layout(const struct flame_tree *t, const struct flame_layout *l,
			      char *out, size_t size)
{
	size_t len = 0;
	char buf[64];
	out[0] = 0;
	for (size_t i = 0; i < l->nframes && len < size; i++) {
		const struct flame_frame *f = &l->frames[i];
		len += snprintf(out + len, size - len, "%.*s%s:%g%s", (int)f->depth,
				"..........", flame_okey_name(t, &l->okeys[f->okey], buf, sizeof(buf)),
				f->count, i + 1 < l->nframes ? " " : "");
	}
}

static struct flame_opts flame_test_opts(void)
{
	struct flame_opts o;
	flame_opts_init(&o);
	return o;
}

UNIT_TEST(flame_layout_merges_narrow_frames)
{
	struct flame_tree t;
	struct flame_layout l;
	struct flame_opts o = flame_test_opts();
	char out[512];

	o.minwidth = 10;
	o.minwidth_pct = true;
	flame_tree_init(&t, false, false);
	flame_test_add(&t, "m;z", 0, 50);
	flame_test_add(&t, "m;a", 0, 30);
	flame_test_add(&t, "m;s1", 0, 5);
	flame_test_add(&t, "m;s2;deep", 0, 5);
	flame_test_add(&t, "m", 0, 10);
	flame_tree_finish(&t);
	UNIT_ASSERT_EQ_INT(flame_layout_build(&t, &o, &l), 0);
	flame_test_layout(&t, &l, out, sizeof(out));
	UNIT_ASSERT(!strcmp(out, "all:100 .m:100 ..a:30 ..z:50 ..[2 other frames]:10"));
	UNIT_ASSERT_EQ_INT(l.merged, 2);
	UNIT_ASSERT_EQ_INT(l.max_depth, 2);
	flame_layout_free(&l);
	flame_tree_free(&t);
	free(o.inputs);
}

/* GPU calls ride along the counts: summed up the tree, into "other" frames, and absent
 * (NULL) when no input has any. */
UNIT_TEST(flame_tree_calls)
{
	struct flame_tree t;
	struct flame_layout l;
	struct flame_opts o = flame_test_opts();
	struct fold_frame k1[] = { { .name = "p" }, { .name = "f" }, { .name = "[gpu] k1" } };
	struct fold_frame k2[] = { { .name = "p" }, { .name = "f" }, { .name = "[gpu] k2" } };
	struct fold_frame tiny[] = { { .name = "p" }, { .name = "[sync]" } };

	flame_tree_init(&t, false, false);
	flame_test_add(&t, "p;cpu", 0, 100);
	UNIT_ASSERT(t.calls == NULL);
	flame_tree_add_calls(&t, flame_tree_add(&t, k1, 3, 0, 0, 500), 4);
	flame_tree_add_calls(&t, flame_tree_add(&t, k2, 3, 0, 0, 400), 3);
	flame_tree_add_calls(&t, flame_tree_add(&t, tiny, 2, 0, 0, 0.5), 2);
	flame_tree_finish(&t);
	UNIT_ASSERT_EQ_INT(t.calls[0], 9);
	o.minwidth = 1;
	o.minwidth_pct = true;
	UNIT_ASSERT_EQ_INT(flame_layout_build(&t, &o, &l), 0);
	char out[512];
	flame_test_layout(&t, &l, out, sizeof(out));
	UNIT_ASSERT(!strcmp(out, "all:1000.5 .p:1000.5 ..cpu:100 ..f:900 ...[gpu] k1:500 "
			    "...[gpu] k2:400 ..[1 other frame]:0.5"));
	double want[] = { 9, 9, 0, 7, 4, 3, 2 };
	for (size_t i = 0; i < l.nframes; i++)
		UNIT_ASSERT_EQ_INT(l.frames[i].calls, want[i]);
	flame_layout_free(&l);
	flame_tree_free(&t);
	free(o.inputs);
}

UNIT_TEST(flame_layout_flamechart_keeps_order)
{
	struct flame_tree t;
	struct flame_layout l;
	struct flame_opts o = flame_test_opts();
	char out[512];

	flame_tree_init(&t, true, false);
	flame_test_add(&t, "m;b", 0, 1);
	flame_test_add(&t, "m;a", 0, 1);
	flame_test_add(&t, "m;a;x", 0, 1);
	flame_test_add(&t, "m;b", 0, 1);
	flame_tree_finish(&t);
	UNIT_ASSERT_EQ_INT(flame_layout_build(&t, &o, &l), 0);
	flame_test_layout(&t, &l, out, sizeof(out));
	UNIT_ASSERT(!strcmp(out, "all:4 .m:4 ..b:1 ..a:2 ...x:1 ..b:1"));
	flame_layout_free(&l);
	flame_tree_free(&t);
	free(o.inputs);
}

UNIT_TEST(flame_layout_diff_and_reverse)
{
	struct flame_tree t;
	struct flame_layout l;
	struct flame_opts o = flame_test_opts();
	char out[512];

	flame_tree_init(&t, false, true);
	flame_test_add(&t, "m;a;leaf", FLAME_SERIES_BEFORE, 4);
	flame_test_add(&t, "m;gone", FLAME_SERIES_BEFORE, 6);
	flame_test_add(&t, "m;a;leaf", FLAME_SERIES_MAIN, 9);
	flame_test_add(&t, "m;b;leaf", FLAME_SERIES_MAIN, 1);
	flame_tree_finish(&t);
	UNIT_ASSERT_EQ_INT(flame_layout_build(&t, &o, &l), 0);
	flame_test_layout(&t, &l, out, sizeof(out));
	UNIT_ASSERT(!strcmp(out, "all:10 .leaf:10 ..a:9 ...m:9 ..b:1 ...m:1"));
	UNIT_ASSERT(l.diff);
	UNIT_ASSERT(l.total_before == 10 && l.gone_before == 6);
	UNIT_ASSERT(l.frames[2].before == 4); /* leaf;a */
	flame_layout_free(&l);
	flame_tree_free(&t);
	free(o.inputs);
}

/* A frame from a data file (flagged: found by a scan, without a symbol) and the same frame from
 * folded text (no such flags) are one frame; a kernel frame of the same name is another. */
UNIT_TEST(flame_tree_identity_ignores_how_found)
{
	struct flame_tree t;
	struct flame_layout l;
	struct flame_opts o = flame_test_opts();
	char out[512];
	struct fold_frame from_data[] = { { .name = "m" },
					  { .name = "//anon+0x7f00", .flags = PROFILE_FRAME_UNNAMED |
									       PROFILE_FRAME_FOUND_SCAN } };
	struct fold_frame from_text[] = { { .name = "m" }, { .name = "//anon+0x7f00" } };
	struct fold_frame kernel[] = { { .name = "m" }, { .name = "//anon+0x7f00", .flags = PROFILE_FRAME_KERNEL } };

	flame_tree_init(&t, false, false);
	flame_tree_add(&t, from_data, 2, 0, FLAME_SERIES_BEFORE, 2);
	flame_tree_add(&t, from_text, 2, 0, FLAME_SERIES_MAIN, 3);
	flame_tree_add(&t, kernel, 2, 0, FLAME_SERIES_MAIN, 1);
	flame_tree_finish(&t);
	UNIT_ASSERT_EQ_INT(flame_layout_build(&t, &o, &l), 0);
	flame_test_layout(&t, &l, out, sizeof(out));
	UNIT_ASSERT(!strcmp(out, "all:4 .m:4 ..//anon+0x7f00:3 ..//anon+0x7f00:1"));
	UNIT_ASSERT(l.frames[2].before == 2);
	flame_layout_free(&l);
	flame_tree_free(&t);
	free(o.inputs);
}

UNIT_TEST(flame_tree_stack_cache)
{
	struct flame_tree t;
	uint64_t h1[2], h2[2];
	flame_hash128("m;a;b", 5, h1);
	flame_hash128("m;a;c", 5, h2);
	UNIT_ASSERT(h1[0] != h2[0] || h1[1] != h2[1]);
	flame_tree_init(&t, false, false);
	UNIT_ASSERT(flame_tree_stack_find(&t, h1) == NULL);
	struct fold_frame f[2] = { { .name = "m" }, { .name = "a" } };
	uint32_t leaf = flame_tree_add(&t, f, 2, 0, FLAME_SERIES_MAIN, 0);
	flame_tree_count(&t, flame_tree_stack_remember(&t, h1, leaf), FLAME_SERIES_MAIN, 3);
	for (int i = 0; i < 5000; i++) { /* grow the map past its first size */
		uint64_t h[2] = { (uint64_t)i * 2654435761u + 7, (uint64_t)i };
		flame_tree_stack_remember(&t, h, leaf);
	}
	double *c = flame_tree_stack_find(&t, h1);
	UNIT_ASSERT(c && c[FLAME_SERIES_MAIN] == 3);
	flame_tree_count(&t, c, FLAME_SERIES_MAIN, 2);
	UNIT_ASSERT(flame_tree_stack_find(&t, h2) == NULL);
	flame_tree_finish(&t);
	UNIT_ASSERT(t.count[FLAME_SERIES_MAIN][0] == 5 && t.count[FLAME_SERIES_MAIN][leaf] == 5);
	flame_tree_free(&t);
}
