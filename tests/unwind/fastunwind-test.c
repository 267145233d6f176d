/* fastunwind-test.c: profiler/inject/fastunwind.c against libunwind, frame by frame.
 *
 *   fastunwind-test              the checks: one "PASS: fastunwind: CASE" or "FAIL: ..." each
 *   fastunwind-test bench [R]    ns per stack at depths 10/30/60: fu_backtrace, unw_backtrace and
 *                                an unw_step loop side by side, R interleaved rounds (10), medians
 *
 * Every case builds a call chain of frame kinds (fu-frames.c with and without frame pointers,
 * alloca, large frames, a shared library, a dlopen'd one, a signal handler, a thread) and, at its
 * end, takes the stack three ways from fu_capture: all three must agree on every frame (the first
 * entry of each is its own call site in fu_capture), and the fast path must not have fallen back
 * to libunwind (except where a case expects it). */
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "fastunwind.h"
#include "fu-test.h"

volatile int fu_sink;
static int (*fu_dl_fn)(const char *, int, struct fu_cap *);
static int failures;

/* unw_step from the caller's frame on: the unw_backtrace convention. */
static int __attribute__((noinline)) step_backtrace(uintptr_t *pcs, int max)
{
	unw_context_t uc;
	unw_cursor_t cur;
	unw_getcontext(&uc);
	if (unw_init_local(&cur, &uc) < 0)
		return 0;
	int n = 0;
	while (n < max && unw_step(&cur) > 0) {
		unw_word_t ip;
		unw_get_reg(&cur, UNW_REG_IP, &ip);
		pcs[n++] = ip;
	}
	return n;
}

static int bench_leaf(void);
static int bench_one(void);

/* The three stacks (max 0 and -1: the benchmark's leaves instead). */
__attribute__((noinline)) int fu_capture(struct fu_cap *c)
{
	if (!c->max)
		return bench_leaf();
	if (c->max < 0)
		return bench_one();
	c->nu = unw_backtrace((void **)c->u, c->max);
	c->ns = step_backtrace(c->s, c->max);
	c->nf = c->with_token ? fu_backtrace_token(c->f, c->max, &c->token) :
				fu_backtrace(c->f, c->max);
	return c->nu + c->ns + c->nf;
}

/* A frame that calls on from one of two call sites (fu_toggle, or bit n % 32 of fu_bits): stacks
 * that differ in this frame's return address alone, every frame inside it at the same SP (the
 * stack memo's verification must see the difference). */
static volatile int fu_toggle;
static volatile unsigned fu_bits;
__attribute__((noinline)) int fu_two_sites(const char *pat, int n, struct fu_cap *c)
{
	int v;
	if (fu_toggle || ((fu_bits >> (n % 32)) & 1)) {
		v = n ? fu_next(pat, n - 1, c) : fu_capture(c);
		fu_sink += v + 1;
	} else {
		fu_sink++;
		v = (n ? fu_next(pat, n - 1, c) : fu_capture(c)) * 3;
		fu_sink += v;
	}
	return v;
}

__attribute__((noinline)) int fu_next(const char *pat, int n, struct fu_cap *c)
{
	int (*fn)(const char *, int, struct fu_cap *);
	switch (pat[(size_t)n % strlen(pat)]) {
	case 'o': fn = fu_rec_nofp; break;
	case 'a': fn = fu_alloca_nofp; break;
	case 'l': fn = fu_leaf_nofp; break;
	case 'b': fn = fu_big_nofp; break;
	case 'f': fn = fu_rec_fp; break;
	case 'A': fn = fu_alloca_fp; break;
	case 'L': fn = fu_leaf_fp; break;
	case 'B': fn = fu_big_fp; break;
	case 's': fn = fu_lib; break;
	case 'd': fn = fu_dl_fn; break;
	case 'm': fn = fu_two_sites; break;
	default: abort();
	}
	int v = fn(pat, n, c);
	fu_sink += v;
	return v;
}

static const char *fu_name(uintptr_t pc, char *buf, size_t size)
{
	Dl_info di;
	if (dladdr((void *)pc, &di) && di.dli_sname)
		snprintf(buf, size, "%s+%#lx", di.dli_sname, (unsigned long)(pc - (uintptr_t)di.dli_saddr));
	else
		snprintf(buf, size, "%#lx", (unsigned long)pc);
	return buf;
}

static int in_capture(uintptr_t pc)
{
	Dl_info di;
	return dladdr((void *)pc, &di) && di.dli_saddr == (void *)fu_capture;
}

/* The three stacks of c agree; why not in why. */
static int agree(const struct fu_cap *c, int min_frames, char *why, size_t size)
{
	char a[128], b[128];
	if (c->nf != c->nu || c->ns != c->nu) {
		snprintf(why, size, "frames: unw_backtrace %d, unw_step %d, fu_backtrace %d", c->nu, c->ns, c->nf);
		return 0;
	}
	if (c->nf < min_frames) {
		snprintf(why, size, "%d frames, expected at least %d", c->nf, min_frames);
		return 0;
	}
	if (!in_capture(c->u[0]) || !in_capture(c->s[0]) || !in_capture(c->f[0])) {
		snprintf(why, size, "first frame not fu_capture's: %s / %s", fu_name(c->u[0], a, sizeof(a)),
			 fu_name(c->f[0], b, sizeof(b)));
		return 0;
	}
	for (int i = 1; i < c->nf; i++)
		if (c->f[i] != c->u[i] || c->s[i] != c->u[i]) {
			snprintf(why, size, "frame %d: unw_backtrace %s, fu_backtrace %s", i,
				 fu_name(c->u[i], a, sizeof(a)), fu_name(c->f[i], b, sizeof(b)));
			return 0;
		}
	return 1;
}

static void report(const char *name, int ok, const char *why)
{
	if (ok) {
		printf("PASS: fastunwind: %s\n", name);
	} else {
		printf("FAIL: fastunwind: %s: %s\n", name, why);
		failures++;
	}
}

/* Run pat to depth twice (cold cache, then warm) with max frames; fallback: whether the fast
 * path is expected to hand the stack to libunwind. */
static void check(const char *name, const char *pat, int depth, int max, int fallback)
{
	char why[512] = "";
	int ok = 1;
	for (int pass = 0; pass < 2 && ok; pass++) {
		struct fu_cap *c = calloc(1, sizeof(*c));
		c->max = max;
		uint64_t fb = fu_stats().fallbacks;
		fu_next(pat, depth, c);
		uint64_t fb2 = fu_stats().fallbacks;
		int min = depth + 2 < max ? depth + 2 : max;
		ok = agree(c, min, why, sizeof(why));
		if (ok && (fb2 != fb) != fallback) {
			snprintf(why, sizeof(why), "pass %d: %s", pass,
				 fallback ? "expected a fallback to libunwind, got none" :
				 "fell back to libunwind");
			ok = 0;
		}
		free(c);
	}
	report(name, ok, why);
}

/* Stacks remembered and checked (the stack memo): the same stack again is found from its first
 * frame; stacks that differ only in their outermost frame (two call sites of the same chain) or
 * in one middle frame (fu_two_sites), every inner frame at the same SP, must still come out as
 * libunwind gives them, the memo noticing the frame that differs. */
static int __attribute__((noinline)) memo_site(int site, const char *pat, int depth, struct fu_cap *c)
{
	int v;
	if (site) {
		v = fu_next(pat, depth, c);
		fu_sink += v;
	} else {
		fu_sink++;
		v = fu_next(pat, depth, c) * 2;
		fu_sink += v;
	}
	return v;
}

/* One try of a memo case: 0 and why when it fails; *retry when what failed is what the memo
 * finds (tokens, hits, frames taken), which a collision in its probe table can take away for one
 * layout of the stack (ASLR), and not what it gives (every stack as libunwind's, a token always
 * the same frames, no fallback). */
static int memo_case_try(const char *pat, int depth, int outer, int middle, char *why, size_t whylen,
			 int *retry)
{
	int ok = 1;
	struct fu_stats s0 = fu_stats();
	struct fu_cap *caps[8] = { NULL };
	int tokens = 0;
	*retry = 0;
	for (int i = 0; i < 8 && ok; i++) {
		struct fu_cap *c = caps[i] = calloc(1, sizeof(*c));
		c->max = FU_CAP_MAX;
		c->with_token = 1;
		fu_toggle = middle ? (i >> 1) & 1 : 0;
		memo_site(outer ? i & 1 : 0, pat, depth, c);
		ok = agree(c, depth + 2, why, whylen);
		if (!ok) {
			char w[512];
			snprintf(w, sizeof(w), "capture %d: %s", i, why);
			snprintf(why, whylen, "%s", w);
		}
		tokens += c->token != 0;
		/* the same token: the same frames */
		for (int k = 0; k < i && ok && c->token; k++)
			if (caps[k]->token == c->token &&
			    (caps[k]->nf != c->nf || memcmp(caps[k]->f, c->f, sizeof(c->f[0]) * (size_t)c->nf))) {
				snprintf(why, whylen, "captures %d and %d: the same token, other frames", k, i);
				ok = 0;
			}
	}
	for (int i = 0; i < 8; i++)
		free(caps[i]);
	struct fu_stats s1 = fu_stats();
	if (ok && s1.fallbacks != s0.fallbacks) {
		snprintf(why, whylen, "fell back to libunwind");
		ok = 0;
	}
	if (!ok)
		return 0;
	*retry = 1;
	if (tokens < 4) {
		snprintf(why, whylen, "%d of 8 stacks had a token, expected 4 or more", tokens);
		return 0;
	}
	if (s1.memo_hits - s0.memo_hits < 6) {
		snprintf(why, whylen, "%llu of 8 stacks met a remembered one, expected 6 or more",
			 (unsigned long long)(s1.memo_hits - s0.memo_hits));
		return 0;
	}
	if ((outer || middle) && s1.memo_diffs == s0.memo_diffs) {
		snprintf(why, whylen, "the memo never noticed a frame that differs");
		return 0;
	}
	if (s1.memo_frames - s0.memo_frames < (uint64_t)depth * 4) {
		snprintf(why, whylen, "only %llu frames taken from remembered stacks",
			 (unsigned long long)(s1.memo_frames - s0.memo_frames));
		return 0;
	}
	*retry = 0;
	return 1;
}

/* A try with every frame of the case below `shift` more bytes of stack: other probe slots. */
static int __attribute__((noinline)) memo_case_shifted(size_t shift, const char *pat, int depth,
							int outer, int middle, char *why, size_t whylen,
							int *retry)
{
	volatile char *pad = alloca(shift + 1);
	pad[0] = 0;
	int ok = memo_case_try(pat, depth, outer, middle, why, whylen, retry);
	fu_sink += pad[0];
	return ok;
}

/* Up to three tries, each at another depth of the stack: a try whose failure was what the memo
 * finds (*retry) is tried again (1 run in 20-40 failed one case, every time with ASLR, never
 * with `setarch -R`); three such failures are not chance. */
static void check_memo_case(const char *name, const char *pat, int depth, int outer, int middle)
{
	char why[512] = "", tries[1024] = "";
	int ok = 0, retry = 1;
	for (int try = 0; try < 3 && !ok && retry; try++) {
		ok = memo_case_shifted((size_t)try * 1064, pat, depth, outer, middle, why, sizeof(why), &retry);
		if (!ok && retry) {
			size_t len = strlen(tries);
			snprintf(tries + len, sizeof(tries) - len, "%stry %d: %s", len ? "; " : "", try + 1, why);
		}
	}
	report(name, ok, ok || !retry ? why : tries);
}

/* A token from a chain of stacks (fu_chain) while the stack a chain starts from is replaced:
 * in a thread of its own (its stack memo fresh, no pause yet), A (no 'm' frame toggled) is kept
 * in slot s, B (the frame at n = 20 toggled) branches off A into the next slot and its second
 * walk has a token from the chain A -> B; unrelated stacks take the slots after until slot s is
 * the one recorded next, then A' (n = 2 toggled: other inner frames, the same state from n = 20
 * out) takes slot s. C (both toggled) then shares its frames from n = 20 out with B and its
 * inner ones with A', so it must not get B's token (nor A''s). Every stack as libunwind gives
 * it, the same token always the same frames, and B's second walk's token from the chain
 * (fu_stats.memo_chained). White box: a token's bits 8-15 are the slot
 * of the stack it names (fu_walk_token), which tells which slot an unrelated stack took (its
 * second walk, remembered whole). */
enum { BRANCH_DEPTH = 26, BRANCH_CAPS = 7, BRANCH_MAX_OTHERS = 1000 };

struct branch_run {
	struct fu_cap *caps[BRANCH_CAPS];
	int ncaps, ok;
	int unset;            /* the scene was not set (a probe table collision, ASLR): try again */
	int shift;            /* bytes of stack below the try's frames */
	char why[512];
};

static uint64_t branch_walk(struct branch_run *b, unsigned bits)
{
	if (!b->ok || b->ncaps == BRANCH_CAPS)
		return 0;
	struct fu_cap *c = b->caps[b->ncaps] = calloc(1, sizeof(*c));
	c->max = FU_CAP_MAX;
	c->with_token = 1;
	fu_bits = bits;
	fu_next("mo", BRANCH_DEPTH, c);
	fu_bits = 0;
	b->ok = agree(c, BRANCH_DEPTH + 2, b->why, sizeof(b->why));
	for (int k = 0; k < b->ncaps && b->ok && c->token; k++)
		if (b->caps[k]->token == c->token && (b->caps[k]->nf != c->nf ||
		    memcmp(b->caps[k]->f, c->f, sizeof(c->f[0]) * (size_t)c->nf))) {
			snprintf(b->why, sizeof(b->why), "walks %d and %d (toggled %#x): the same token, "
				 "other frames", k, b->ncaps, bits);
			b->ok = 0;
		}
	b->ncaps++;
	return c->token;
}

/* An unrelated stack (the i-th), walked twice: the slot the first walk took, or -1. */
static int branch_other(struct branch_run *b, int i)
{
	/* without frame pointers, no Python: kept whole */
	static const char *const pats[] = { "o", "ol", "ob", "lo", "bo", "lb", "bl", "olb" };
	int slot = -1;
	for (int rep = 0; rep < 2 && b->ok; rep++) {
		struct fu_cap *c = calloc(1, sizeof(*c));
		c->max = FU_CAP_MAX;
		c->with_token = rep;
		int depth = 30 + i % 40;
		fu_next(pats[i / 40 % 8], depth, c);
		b->ok = agree(c, depth + 2, b->why, sizeof(b->why));
		if (rep && c->token)
			slot = (int)(c->token >> 8 & 0xff);
		free(c);
	}
	return slot;
}

/* One call site for each kind of walk: the outer frames of every walk of a path are the same,
 * so only the stacks meant to be kept take a slot. */
static void *branch_main(void *arg)
{
	struct branch_run *b = arg;
	/* each try's frames at another depth: glibc gives a joined thread's stack to the next
	 * thread, so without it every try met the same probe slots */
	volatile char *pad = alloca((size_t)b->shift + 1);
	pad[0] = 0;
	fu_sink += pad[0];
	const unsigned A = 0, B = 1u << 20, A2 = 1u << 2, C = A2 | B;
	static const unsigned walks[BRANCH_CAPS] = { A, A, B, B, A2, C, C };
	uint64_t a = 0;
	fu_toggle = 0;   /* the bits alone choose */
	for (int k = 0; k < BRANCH_CAPS && b->ok; k++) {
		uint64_t token = branch_walk(b, walks[k]);
		if (k == 1)
			a = token;
		if (k != 3)
			continue;
		int i = 0;
		while (b->ok && a && i < BRANCH_MAX_OTHERS &&
		       branch_other(b, i) != (int)((a >> 8 & 0xff) + 255) % 256)
			i++;
		if (b->ok && (!a || i == BRANCH_MAX_OTHERS)) {
			snprintf(b->why, sizeof(b->why), "%s", a ? "unrelated stacks never came round to "
				 "A's slot" : "A's second walk had no token");
			b->unset = 1;
			return NULL;
		}
	}
	return NULL;
}

/* Up to three threads: a frame of A whose probe slot a later frame of A takes (addresses vary
 * from run to run) leaves A's second walk without a token, and the scene is set again. */
static void check_memo_branches(void)
{
	struct branch_run *b = calloc(1, sizeof(*b));
	struct fu_stats s0 = fu_stats();
	for (int try = 0; try < 3 && (!try || (b->ok && b->unset)); try++) {
		for (int i = 0; i < b->ncaps; i++)
			free(b->caps[i]);
		memset(b, 0, sizeof(*b));
		b->ok = 1;
		b->shift = try * 1064;
		pthread_t th;
		if (pthread_create(&th, NULL, branch_main, b) || pthread_join(th, NULL)) {
			snprintf(b->why, sizeof(b->why), "pthread_create failed");
			b->ok = 0;
		}
	}
	if (b->ok && b->unset)
		b->ok = 0;   /* three times: not chance */
	struct fu_stats s1 = fu_stats();
	if (b->ok && s1.fallbacks != s0.fallbacks) {
		snprintf(b->why, sizeof(b->why), "fell back to libunwind");
		b->ok = 0;
	}
	if (b->ok && s1.memo_chained == s0.memo_chained) {
		snprintf(b->why, sizeof(b->why), "no token from a chain of stacks (B's second walk)");
		b->ok = 0;
	}
	report("stack memo: a chain's first stack replaced (tokens)", b->ok, b->why);
	for (int i = 0; i < b->ncaps; i++)
		free(b->caps[i]);
	free(b);
}

static void check_memo(void)
{
	check_memo_case("stack memo: the same stack again", "ofA", 40, 0, 0);
	check_memo_case("stack memo: only the outermost frame differs", "ofA", 40, 1, 0);
	check_memo_case("stack memo: one middle frame differs", "oAoAmfo", 30, 0, 1);
	check_memo_case("stack memo: outer and middle frames differ", "mlAobo", 35, 1, 1);
	check_memo_branches();
	/* More distinct stacks than the memo keeps (256): once it came round, recording pauses;
	 * every stack still exact. */
	{
		char why[512] = "";
		int ok = 1;
		struct fu_stats s0 = fu_stats();
		static const char *const pats[] = { "o", "f", "oA", "lf", "ol", "fL", "Ao", "fo" };
		for (int i = 0; i < 400 && ok; i++) {
			struct fu_cap *c = calloc(1, sizeof(*c));
			c->max = FU_CAP_MAX;
			c->with_token = 1;
			int depth = 5 + i / 8;   /* 50 depths x 8 patterns: all distinct, all kept */
			fu_next(pats[i % 8], depth, c);
			ok = agree(c, depth + 2, why, sizeof(why));
			free(c);
		}
		if (ok && fu_stats().memo_pauses == s0.memo_pauses) {
			snprintf(why, sizeof(why), "400 distinct stacks did not pause the recording");
			ok = 0;
		}
		report("stack memo: 400 distinct stacks, more than it keeps (recording pauses)", ok, why);
	}
	/* off: the same stacks, nothing taken from the memo */
	fu_set_stack_memo(0);
	struct fu_stats s0 = fu_stats();
	check("stack memo off: 40 frames", "ofA", 40, FU_CAP_MAX, 0);
	struct fu_stats s1 = fu_stats();
	report("stack memo off: not used", s1.memo_hits == s0.memo_hits, "memo hits with the memo off");
	fu_set_stack_memo(1);
}

static struct fu_cap *sig_cap;
static void on_signal(int sig)
{
	fu_next("oflA", 12, sig_cap);
}

static void *thread_main(void *arg)
{
	check("thread: 40 frames, mixed kinds", "ofalAL", 40, FU_CAP_MAX, 0);
	return NULL;
}

static void check_signal(void)
{
	/* The handler's stack passes through the kernel's signal frame (__restore_rt): the fast
	 * path does not model it and hands the stack to libunwind, which must give the same. */
	sig_cap = calloc(1, sizeof(*sig_cap));
	sig_cap->max = FU_CAP_MAX;
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGUSR1, &sa, NULL);
	uint64_t fb = fu_stats().fallbacks;
	raise(SIGUSR1);
	char why[512] = "";
	int ok = agree(sig_cap, 14, why, sizeof(why));
	if (ok && fu_stats().fallbacks == fb) {
		snprintf(why, sizeof(why), "a signal frame did not fall back to libunwind");
		ok = 0;
	}
	report("signal handler: falls back, same frames", ok, why);
	free(sig_cap);
}

static void check_dlopen(const char *self)
{
	char path[4096];
	const char *slash = strrchr(self, '/');
	snprintf(path, sizeof(path), "%.*s/libfu-dl.so", slash ? (int)(slash - self) : 1,
		 slash ? self : ".");
	uint64_t fl = fu_stats().flushes;
	void *h = dlopen(path, RTLD_NOW);
	if (!h || !(fu_dl_fn = (int (*)(const char *, int, struct fu_cap *))dlsym(h, "fu_dl"))) {
		report("dlopen'd library", 0, dlerror());
		return;
	}
	check("dlopen'd library: 30 frames", "dodf", 30, FU_CAP_MAX, 0);
	if (fu_stats().flushes == fl)
		report("dlopen noticed (cache flushed)", 0, "no flush after dlopen");
	else
		report("dlopen noticed (cache flushed)", 1, "");
	dlclose(h);
	fu_dl_fn = NULL;
	check("after dlclose: 30 frames", "os", 30, FU_CAP_MAX, 0);
}

/* ---- bench ---- */

enum { B_FU, B_UNW, B_STEP, B_METHODS, B_NONE = B_METHODS };
static const char *const b_names[B_METHODS] = { "fu_backtrace", "unw_backtrace", "unw_step loop" };
static int b_method, b_iters, b_frames;
static double b_ns;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);  /* not the time others run */
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* At the end of the chain: b_iters stacks by b_method. */
static int __attribute__((noinline)) bench_leaf(void)
{
	uintptr_t pcs[FU_CAP_MAX];
	int n = 0;
	double t0 = now_ns();
	for (int i = 0; i < b_iters; i++) {
		switch (b_method) {
		case B_FU: n = fu_backtrace(pcs, FU_CAP_MAX); break;
		case B_UNW: n = unw_backtrace((void **)pcs, FU_CAP_MAX); break;
		default: n = step_backtrace(pcs, FU_CAP_MAX); break;
		}
		__asm__ volatile("" : : "r"(pcs) : "memory");
	}
	b_ns = (now_ns() - t0) / b_iters;
	b_frames = n;
	return n;
}

/* One stack by b_method (B_NONE: none). */
static int __attribute__((noinline)) bench_one(void)
{
	static uintptr_t pcs[FU_CAP_MAX];
	switch (b_method) {
	case B_FU: b_frames = fu_backtrace(pcs, FU_CAP_MAX); break;
	case B_UNW: b_frames = unw_backtrace((void **)pcs, FU_CAP_MAX); break;
	case B_STEP: b_frames = step_backtrace(pcs, FU_CAP_MAX); break;
	default: b_frames = 0; break;
	}
	return b_frames;
}

/* ns per call chain of depth with one stack by method at its end, the chain taking one of four
 * call paths in turn (each stack differs from the one before it). */
static double bench_vary(int method, int depth, int iters)
{
	static const char *const pats[] = { "o", "f", "ol", "fL" };
	static struct fu_cap c = { .max = -1 };
	b_method = method;
	double t0 = now_ns();
	for (int i = 0; i < iters; i++)
		fu_next(pats[i & 3], depth, &c);
	return (now_ns() - t0) / iters;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int bench(int rounds)
{
	static const int depths[] = { 10, 30, 60 };
	enum { ND = sizeof(depths) / sizeof(depths[0]), NM = B_METHODS + 1 };
	/* res[same/vary][depth][method][round] */
	double *res = calloc((size_t)2 * ND * NM * rounds, sizeof(double));
#define RES(v, d, m, r) res[(((size_t)(v) * ND + (d)) * NM + (m)) * rounds + (r)]
	int frames[ND][B_METHODS] = { { 0 } };
	struct fu_cap *c = calloc(1, sizeof(*c));
	for (int r = 0; r < rounds; r++)
		for (int d = 0; d < ND; d++) {
			for (int m = 0; m < B_METHODS; m++) {
				b_method = m;
				b_iters = m == B_FU ? 200000 : 50000;
				c->max = 0;  /* fu_capture: run bench_leaf instead */
				fu_next("o", depths[d], c);
				RES(0, d, m, r) = b_ns;
				frames[d][m] = b_frames;
			}
			for (int m = 0; m < NM; m++)
				RES(1, d, m, r) = bench_vary(m, depths[d], m == B_STEP ? 5000 : 50000);
		}
	for (int v = 0; v < 2; v++) {
		printf(v ? "\nthe stack differs from the last one (4 call paths in turn):\n" :
			   "the same stack again and again (a launch loop):\n");
		printf("%-7s %7s %16s %16s %16s %9s\n", "depth", "frames", b_names[0], b_names[1],
		       b_names[2], "speedup");
		for (int d = 0; d < ND; d++) {
			double med[NM];
			for (int m = 0; m < NM; m++)
				med[m] = median(&RES(v, d, m, 0), rounds);
			if (v)  /* less the call chain alone */
				for (int m = 0; m < B_METHODS; m++)
					med[m] -= med[B_NONE];
			printf("%-7d %7d %13.0f ns %13.0f ns %13.0f ns %8.1fx\n", depths[d],
			       frames[d][B_FU], med[B_FU], med[B_UNW], med[B_STEP], med[B_UNW] / med[B_FU]);
			if (!v && (frames[d][B_FU] != frames[d][B_UNW] || frames[d][B_FU] != frames[d][B_STEP]))
				printf("  (frames differ: unw_backtrace %d, unw_step %d)\n",
				       frames[d][B_UNW], frames[d][B_STEP]);
		}
	}
#undef RES
	struct fu_stats s = fu_stats();
	printf("(ns of thread CPU time per stack, median of %d interleaved rounds; -O2 frames with and without frame "
	       "pointers; speedup: unw_backtrace / fu_backtrace; fu: %llu stacks, %llu fallbacks, "
	       "%llu misses; stack memo: %llu hits, %llu frames, %llu diffs)\n", rounds,
	       (unsigned long long)s.stacks, (unsigned long long)s.fallbacks,
	       (unsigned long long)s.misses, (unsigned long long)s.memo_hits,
	       (unsigned long long)s.memo_frames, (unsigned long long)s.memo_diffs);
	free(res);
	free(c);
	return 0;
}

int main(int argc, char **argv)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);  /* as cupti.c does */
	if (argc > 1 && !strcmp(argv[1], "bench"))
		return bench(argc > 2 ? atoi(argv[2]) : 10);

	check("-O2 without frame pointers: 60 frames", "o", 60, FU_CAP_MAX, 0);
	check("-O2 with frame pointers: 60 frames", "f", 60, FU_CAP_MAX, 0);
	check("mixed with and without frame pointers: 45 frames", "ofof", 45, FU_CAP_MAX, 0);
	check("alloca frames (CFA from RBP): 30 frames", "aA", 30, FU_CAP_MAX, 0);
	check("leaf-ish frames: 50 frames", "lLlo", 50, FU_CAP_MAX, 0);
	check("large frames: 20 frames", "bBo", 20, FU_CAP_MAX, 0);
	check("shared library: 40 frames", "osfs", 40, FU_CAP_MAX, 0);
	check("every kind: 60 frames", "oaflLbBAs", 60, FU_CAP_MAX, 0);
	check("truncated at 5 frames", "of", 30, 5, 0);
	check("truncated at 1 frame", "of", 30, 1, 0);
	/* Stacks that differ from the last one in some frames, or by frames inserted or removed
	 * (the memo of the last stack realigns). */
	check("alternating call paths 1", "oflA", 30, FU_CAP_MAX, 0);
	check("alternating call paths 2", "lLof", 30, FU_CAP_MAX, 0);
	check("alternating call paths 3", "oflA", 33, FU_CAP_MAX, 0);
	check("alternating call paths 4", "oflA", 27, FU_CAP_MAX, 0);
	check_memo();
	pthread_t th;
	pthread_create(&th, NULL, thread_main, NULL);
	pthread_join(th, NULL);
	check_signal();
	check_dlopen(argv[0]);
	struct fu_stats s = fu_stats();
	printf("fu_stats: %llu stacks, %llu frames, %llu fallbacks (%llu unsupported, %llu invalid, "
	       "%llu off stack), %llu misses, %llu flushes; memo: %llu hits, %llu frames, %llu diffs\n",
	       (unsigned long long)s.stacks, (unsigned long long)s.frames,
	       (unsigned long long)s.fallbacks, (unsigned long long)s.unsupported,
	       (unsigned long long)s.invalid, (unsigned long long)s.off_stack,
	       (unsigned long long)s.misses, (unsigned long long)s.flushes,
	       (unsigned long long)s.memo_hits, (unsigned long long)s.memo_frames,
	       (unsigned long long)s.memo_diffs);
	return failures != 0;
}
