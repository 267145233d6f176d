/* flame.h: csampler's flamegraph engine, under `csampler flame` and `csampler diff`.
 *
 *   input (folded text or data files) -> flame_tree (merged call tree, one or two series of
 *   counts) -> flame_layout (pruned pre-order frame list, narrow frames merged into one
 *   "other" frame per parent) -> SVG (compact frame data + flame.js, which draws it) or a text
 *   dump of the geometry (--dump-layout, for tests).
 *
 * Everything here uses the prefix flame_. Counts are doubles because folded text may carry
 * fractional counts (flamegraph.pl accepts "12.5"); integers stay exact up to 2^53. */
#ifndef CSAMPLER_FLAME_H
#define CSAMPLER_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/filter.h"
#include "analysis/fold.h"

/* ---- options (flame_opts.c) ---------------------------------------------------------- */

enum flame_mode { FLAME_MODE_FLAME = 1, FLAME_MODE_DIFF = 2 };

struct flame_opts {
	const char *title;       /* NULL: "Flame Graph", "Icicle Graph", "Flame Chart", ... */
	const char *subtitle;    /* NULL: none (diff: a summary of both totals) */
	const char *countname;   /* "samples" */
	const char *nametype;    /* "Function:" */
	const char *fonttype;    /* "Verdana" */
	const char *colors;      /* palette: "type" (by frame type), or a flamegraph.pl palette */
	const char *bgcolors;    /* "yellow", "blue", "green", "grey" or "#rrggbb" */
	const char *notes;       /* embedded in an XML comment */
	const char *output;      /* -o FILE; NULL = stdout */
	double width;            /* image width in pixels */
	double frame_height;     /* height of one frame in pixels */
	double fontsize, fontwidth;
	double minwidth;         /* pixels, or percent of the total when minwidth_pct */
	bool minwidth_pct;
	double factor;           /* counts are multiplied by this */
	bool inverted, reverse, flamechart, random, negate;
	bool hash;               /* flamegraph.pl's --hash/--cp: always what csampler does */
	bool dump_layout;        /* print the layout as text instead of the SVG */
	bool per_thread;         /* data files: root frame "comm-tid" */
	bool python_only;        /* data files: stacks keep only their Python frames under the
				  * root (stacks_python_view), py-spy's look */
	struct profile_filter filter; /* data files: --pid, --tid, --comm, --rank, --time */
	int source;              /* data files: enum fold_source (--cpu, --gpu, --both) */
	int64_t diff_ranks[2];   /* diff --rank A,B: BEFORE is rank A, AFTER rank B (of one
				  * merged file given once, or of each input); -1: unset */
	const char **inputs;     /* files named by -i or as arguments; owned by the caller */
	size_t ninputs;
};

/* Fill o with the defaults (no inputs). */
void flame_opts_init(struct flame_opts *o);
/* Check o's values once every option is in (palette, background, sizes, diff's two inputs)
 * and settle what depends on several (GPU views count ns). Returns 0, or -EINVAL after one
 * line. */
int flame_opts_check(struct flame_opts *o, enum flame_mode mode);

/* ---- frame kinds (flame_classify.c) -------------------------------------------------- */

/* What a frame is, for its colour and the legend. The order is flame.js's too. */
enum flame_kind {
	FLAME_KIND_ROOT = 0,   /* the "all" frame */
	FLAME_KIND_OWN,        /* the program's own code */
	FLAME_KIND_SYSTEM,     /* libc and other system libraries */
	FLAME_KIND_KERNEL,
	FLAME_KIND_CUDA,       /* CUDA runtime, driver and libraries (libcudart, libcuda, ...) */
	FLAME_KIND_GPU_KERNEL, /* a GPU kernel */
	FLAME_KIND_GPU_COPY,   /* a GPU memcpy/memset */
	FLAME_KIND_GPU_SYNC,   /* time blocked in a CUDA synchronisation */
	FLAME_KIND_JIT,
	FLAME_KIND_OTHER,      /* frames narrower than --minwidth, merged */
	FLAME_KIND_PYTHON,     /* a Python function (CPython frames read by record) */
	FLAME_KIND_NVTX,       /* an NVTX range around GPU launches ("[nvtx] NAME") */
	FLAME_KIND_OFFCPU,     /* why a thread was off the CPU ("[off-cpu: futex]", record --idle) */
	FLAME_KIND_COUNT
};
/* Or-ed into the kind written for the JavaScript: the frame was inlined. */
#define FLAME_KIND_INLINED 0x100

/* The kind of a frame named name in module (basename, or NULL) with PROFILE_FRAME_* flags.
 * Without a module (folded text) the name alone decides: "_[k]"-style flags, "[libc.so.6]",
 * "libfoo.so+0x12", "module`func", py-spy's "func (file.py:LINE)" and well-known libc/CUDA
 * function prefixes. The GPU view's frames (fold_gpu.c) are known by their names alone, so that
 * its folded text and data files draw alike: "[gpu] KERNEL", "[memcpy KIND]", "[memset]",
 * "[sync]", "[nvtx] RANGE"; so are record --idle's off-CPU leaves, "[off-cpu: SYSCALL]". */
enum flame_kind flame_classify(const char *name, const char *module, uint32_t flags);

/* ---- the merged call tree (flame_tree.c) --------------------------------------------- */

/* A distinct frame: name + flags (frames merge by name, as in flamegraph.pl). module, file
 * and line come from the frames merged into it: line becomes 0 when they disagree on it, and
 * module becomes flame_tree.several_modules. */
struct flame_key {
	uint32_t name;     /* offset of the NUL-terminated name in flame_tree.names */
	uint32_t module;   /* string id in flame_tree.strs, 0 = unknown */
	uint32_t file;     /* string id, 0 = unknown */
	uint32_t line;
	uint32_t flags;    /* PROFILE_FRAME_* */
	uint32_t hash;
};

struct flame_node {
	uint32_t key;
	uint32_t parent;
	/* Children in the order they were created, FLAME_NONE when absent. Flame charts link
	 * them as nodes are added (a frame merges with its parent's last child); otherwise
	 * flame_tree_finish() links them all at once, which is cheaper than at each insertion. */
	uint32_t first_child, last_child, next_sibling;
};
#define FLAME_NONE UINT32_MAX

/* Series of counts: the main one (flame; AFTER for a diff) and BEFORE (diffs only). */
enum { FLAME_SERIES_MAIN = 0, FLAME_SERIES_BEFORE = 1 };

/* An open-addressing map from 64-bit keys to 32-bit values (internal to flame_tree.c, here so
 * the tree can be embedded by value). */
struct flame_map_slot {
	uint64_t key;      /* FLAME_MAP_EMPTY when the slot is free */
	uint32_t val;
};
struct flame_map {
	struct flame_map_slot *slots; /* key and value side by side: one cache miss a probe */
	size_t cap, len;   /* cap is a power of two */
};

/* Whole stacks seen before, by a 128-bit hash of their folded text: a repeated line costs one
 * lookup instead of one per frame. (A collision needs ~2^64 distinct stacks.) */
struct flame_stackmap_slot {
	uint64_t hash[2];       /* 0,0 = empty */
	double count[2];        /* per series, added to the leaf by flame_tree_finish() */
	uint32_t leaf;
};
struct flame_stackmap {
	struct flame_stackmap_slot *slots;
	size_t cap, len;
};

struct flame_tree {
	char *names;            /* arena of frame names, NUL-terminated */
	size_t names_len, names_cap;
	struct flame_key *keys;
	size_t nkeys, keys_cap;
	uint32_t *key_slots;    /* hash slots -> key index + 1 (0 = empty) */
	size_t key_slots_cap;
	char **strs;            /* modules and files; strs[0] = "" */
	size_t nstrs, strs_cap;
	uint32_t *str_slots;    /* hash slots -> string id (0 = empty) */
	size_t str_slots_cap;
	uint32_t several_modules; /* string id of "(several modules)" */
	struct flame_node *nodes; /* nodes[0] is the root ("all"); a child's index is always
				   * larger than its parent's */
	size_t nnodes, nodes_cap;
	double *count[2];       /* per node, per series: samples of stacks ending there until
				 * flame_tree_finish(), then totals (the node and below);
				 * count[1] is NULL until a BEFORE stack is added */
	double *calls;          /* per node, like count[MAIN]: GPU activities merged into it;
				 * NULL until flame_tree_add_calls() (CPU inputs never pay) */
	struct flame_map children; /* (parent << 32 | key) -> child node; unused for flamecharts */
	struct flame_stackmap stacks;
	uint32_t *path;         /* the nodes of the last stack added, root excluded */
	size_t path_len, path_cap;
	struct fold_frame *rev; /* scratch for --reverse */
	size_t rev_cap;
	double total[2];
	bool flamechart;        /* merge a frame only with its parent's last child */
	bool reverse;           /* stacks are added leaf first */
	bool finished;
};

void flame_tree_init(struct flame_tree *t, bool flamechart, bool reverse);
void flame_tree_free(struct flame_tree *t);

/* Add count to the stack frames[0..n) (root first) in series and return its leaf node.
 * same_prefix says that the first same_prefix frames are the same as those of the previous
 * call (a hint that lets sorted folded text skip their lookups; pass 0 when unsure). Frame
 * strings are copied. */
uint32_t flame_tree_add(struct flame_tree *t, const struct fold_frame *frames, size_t n,
			size_t same_prefix, int series, double count);
/* Add count to a stack known by its leaf node (from flame_tree_add). */
void flame_tree_add_leaf(struct flame_tree *t, uint32_t leaf, int series, double count);
/* Add calls (GPU activities, main series) to a stack known by its leaf node. */
void flame_tree_add_calls(struct flame_tree *t, uint32_t leaf, uint64_t calls);
/* Stacks known by the hash of their folded text (not for flame charts, which do not merge):
 * find returns the stack's counts (double[2], by series), or NULL when unknown; remember
 * records a new stack whose leaf node is leaf and returns its zeroed counts. The pointers
 * are valid until the next remember. Add to them with flame_tree_count(). */
double *flame_tree_stack_find(const struct flame_tree *t, const uint64_t hash[2]);
double *flame_tree_stack_remember(struct flame_tree *t, const uint64_t hash[2], uint32_t leaf);
void flame_tree_count(struct flame_tree *t, double *counts, int series, double count);
/* Turn the per-stack counts into totals; call once, after the last add, before layout. */
void flame_tree_finish(struct flame_tree *t);

/* 128-bit hash of n bytes (for flame_tree_stack_find). */
void flame_hash128(const char *s, size_t n, uint64_t out[2]);

static inline const char *flame_key_name(const struct flame_tree *t, uint32_t key)
{
	return t->names + t->keys[key].name;
}

/* ---- reading inputs (flame_folded.c, flame_input.c) ---------------------------------- */

struct flame_folded_stats {
	uint64_t lines;      /* lines read */
	uint64_t stacks;     /* lines that held a stack */
	uint64_t ignored;    /* lines without a trailing count */
	uint64_t two_counts; /* lines with two counts (difffolded.pl's "stack BEFORE AFTER") */
	uint64_t first_ignored; /* line number of the first ignored line */
};

/* What flame_folded_read calls per stack line, counts[0..ncounts) as written (1 or 2).
 * seen (optional) comes first with the hash of the line's stack text: it returns 0 when it
 * knows that stack and took the counts, -ENOENT when not, or another -errno to stop. Then
 * stack gets the frames, root first, valid during the call only. Return 0 or -errno. */
struct flame_folded_ops {
	int (*seen)(void *arg, const uint64_t hash[2], const double *counts, int ncounts);
	int (*stack)(void *arg, const struct fold_frame *frames, size_t n, size_t same_prefix,
		     const uint64_t hash[2], const double *counts, int ncounts);
};

/* Stream folded text from f ("root;...;leaf COUNT" per line, or "... BEFORE AFTER"), with
 * "_[k]", "_[i]", "_[j]" annotations turned into flags. Returns 0, the callback's error, or
 * -errno of a read error (printed, naming name). */
int flame_folded_read(FILE *f, const char *name, const struct flame_folded_ops *ops, void *arg,
		      struct flame_folded_stats *st);

/* Read one input into t: a csampler data file (through profile_load and fold_profile) or
 * folded text. path NULL means standard input. series is where single counts go; two-count
 * lines go to BEFORE and MAIN when allow_two_counts, and are an error otherwise.
 * Prints one line on error and returns -errno. */
int flame_input_read(struct flame_tree *t, const char *path, int series,
		     const struct flame_opts *o, bool allow_two_counts);

/* The folded-text half of flame_input_read, from an open stream f named name in messages
 * (the fuzz harness reads from memory through fmemopen). */
int flame_input_read_folded(struct flame_tree *t, FILE *f, const char *name, int series,
			    const struct flame_opts *o, bool allow_two_counts);

/* The inputs of a flame command: o->inputs, else stdin when it is a pipe or a file, else
 * ./csampler.data. Sets *paths and *n (paths[i] NULL = stdin); free *paths with free(). */
void flame_input_default(const struct flame_opts *o, const char ***paths, size_t *n);

/* ---- layout (flame_layout.c) --------------------------------------------------------- */

struct flame_frame {
	uint32_t depth;      /* 0 = the root */
	uint32_t okey;       /* index into flame_layout.okeys */
	double count;        /* main series */
	double before;       /* BEFORE series (diffs) */
	double calls;        /* GPU activities merged into the frame (0 without calls) */
};

/* A key as written out: a real tree key, or an "other" frame merging nmerged frames. */
struct flame_okey {
	uint32_t key;        /* tree key, or FLAME_NONE for the root and "other" frames */
	uint32_t nmerged;    /* "other" frames: how many frames were merged */
	uint32_t kind;       /* enum flame_kind | FLAME_KIND_INLINED */
};

struct flame_geometry {
	double width, xpad, ypad1, ypad2, height, frame_height, fontsize;
	double legend_y;     /* baseline of the legend row, 0 = none */
	double scale;        /* pixels per count */
};

struct flame_layout {
	struct flame_frame *frames; /* pre-order: a frame's children follow it, left to right */
	size_t nframes;
	struct flame_okey *okeys;
	size_t nokeys;
	uint32_t max_depth;
	double total, total_before; /* sums of the series */
	double mincount;            /* frames below this count were merged */
	double gone_before;         /* BEFORE counts in stacks absent from the main series */
	uint64_t merged;            /* tree frames merged into "other" frames */
	bool diff;
	struct flame_geometry geo;
};

/* Lay t out for o. Returns 0, or -ENODATA when there is nothing to draw. The caller frees
 * with flame_layout_free(); the layout points into t, which must outlive it. */
int flame_layout_build(const struct flame_tree *t, const struct flame_opts *o,
		       struct flame_layout *l);
void flame_layout_free(struct flame_layout *l);

/* The name shown for an output key ("all", the function name, "[3 other frames]").
 * Returns a pointer into t or into buf (of bufsize bytes). */
const char *flame_okey_name(const struct flame_tree *t, const struct flame_okey *k, char *buf,
			    size_t bufsize);

/* Print the geometry, one frame a line: "depth x width y count name" (--dump-layout). */
int flame_layout_dump(FILE *f, const struct flame_tree *t, const struct flame_layout *l,
		      const struct flame_opts *o);

/* ---- SVG (flame_svg.c) --------------------------------------------------------------- */

/* Write the interactive SVG for l to f. Returns 0 or -EIO (the caller reports it). */
int flame_svg_write(FILE *f, const struct flame_tree *t, const struct flame_layout *l,
		    const struct flame_opts *o);

/* Make s valid for XML (bad UTF-8 and characters XML forbids become U+FFFD) and append it
 * XML-escaped (json = false) or JSON-escaped with < > & as \u escapes (json = true), so that
 * no name can open a tag, an entity or end a CDATA section. */
void flame_escape(struct cs_buf *b, const char *s, bool json);

/* flame_assets.c, generated at build time from flamegraph/flame.js and flame.css. */
extern const char flame_js[];
extern const char flame_css[];

/* ---- the commands' shared driver (flame_run.c) --------------------------------------- */

/* Build the tree from o's inputs (a diff: exactly two, BEFORE then AFTER), lay it out and
 * write the SVG (or the dump). Returns the process exit status. */
int flame_run(struct flame_opts *o, enum flame_mode mode);

#endif
