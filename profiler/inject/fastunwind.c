/* fastunwind.c: return addresses of the current thread's stack, in place, for the CUDA launch
 * path of libcsampler-cupti.so (65k launches/s, each one stack).
 *
 * Why hand-written (scripts/bench-unwind.sh measures it, thread CPU time per stack): libunwind's
 * generic unw_step blocks signals around its cache lock with sigprocmask, two or three system
 * calls a frame (counted with gdb on libunwind 1.6.2): ~520 ns a frame. Its unw_backtrace fast
 * trace avoids that with a per-thread hash of per-PC rules, yet still costs ~5.7 ns a frame: a
 * cursor set up per call, and per frame a hash lookup whose address waits on the return address
 * just read. Here a step is ~2.5 ns when the stack repeats (a launch loop): each thread keeps its
 * last stack's frames with their rules, so a frame's rule is at hand before its return address
 * is read (the CPU runs ahead of the stack reads), and only frames that differ go through the
 * process-wide cache (on a par with unw_backtrace's hash, ~1.3x faster on stacks that all differ).
 *
 * How: a cache miss finds the module of the address (dl_iterate_phdr, which also notices
 * dlopen/dlclose through dlpi_adds/dlpi_subs and flushes the cache), binary-searches its
 * .eh_frame_hdr table, decodes the FDE and its CIE (DW_EH_PE_* pointer encodings) and interprets
 * the CFI program up to the address once (def_cfa*, offset*, advance_loc*, remember/restore_state,
 * restore*, same_value, undefined, set_loc, GNU_args_size). The rule (CFA = RSP or RBP + offset,
 * caller's RBP and return address at CFA + offsets) is packed with the address's tag in one
 * 64-bit cache word, so readers take no lock. Rules the fast path does not model (DWARF
 * expressions, a CFA from another register, signal frames, no FDE, no module) are cached too,
 * as "unsupported".
 *
 * Whole stacks: each thread also remembers the stacks it unwound (the stack memo, below: a
 * remembered stack is re-read slot by slot instead of unwound, exactly, with a token that lets
 * the caller reuse what it derived from the same frames).
 *
 * Validation: every CFA lies above the previous SP and within the thread's stack (read once per
 * thread with pthread_getattr_np); every load is from that range; addresses must be canonical.
 * On any doubt the whole stack goes to libunwind's unw_backtrace (counted in fu_stats), so the
 * result is always what libunwind would give; tests/unwind/fastunwind-test.c compares the fast
 * path with unw_backtrace and an unw_step loop frame by frame. x86-64 only: elsewhere
 * fu_backtrace is unw_backtrace. */
#include "fastunwind.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define FU_HIDDEN __attribute__((visibility("hidden")))

/* fastunwind.h: 2 MiB-aligned, advised as huge pages (any architecture). */
void *fu_map_huge(size_t bytes)
{
	const size_t huge = 2u << 20;
	size_t len = (bytes + huge - 1) & ~(huge - 1);
	uint8_t *m = mmap(NULL, len + huge, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uint8_t *aligned = (uint8_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
	if (aligned > m)
		munmap(m, (size_t)(aligned - m));
	if (aligned + len < m + len + huge)
		munmap(aligned + len, (size_t)(m + len + huge - (aligned + len)));
	madvise(aligned, len, MADV_HUGEPAGE);   /* advice: without it, small pages */
	return aligned;
}

#if defined(__x86_64__) && defined(__linux__)

enum {
	FU_SET_BITS = 13,              /* 8192 sets of two entries (128 KiB) */
	FU_CACHE_SIZE = 2 << FU_SET_BITS,
	FU_WORD_BITS = 30,             /* a cache entry: (ra >> FU_SET_BITS) << 30 | rule word */
	FU_MAX_RULES = 1 << 16,        /* rules that need fu.rules (a FU_TABLE word's index) */
	FU_MEMO = 128,                 /* frames of the last stack remembered per thread */
	FU_STATE_DEPTH = 8,            /* DW_CFA_remember_state nesting */
	FU_FALLBACK_MAX = 512,         /* frames the libunwind fallback can return */
	FU_STACK_FRAMES = 127,         /* frames a remembered stack holds (then it is left open) */
	FU_STACKS = 256,               /* stacks remembered per thread (round robin) */
	FU_PROBE_BITS = 13,            /* the (return address, SP) -> remembered frame table */
	FU_BRANCHES = 8,               /* branches off remembered stacks kept per walk */
	FU_ALTS = 7,                   /* branches kept in the stack branched off (fu_alt) */
	FU_SEGMENTS = 16,              /* runs of remembered frames a walk can keep */
	FU_MEMO_WINDOW = 64,           /* walks per look at whether the stack memo pays */
	FU_MEMO_PAUSE = 4096,          /* walks without recording when it does not */
	FU_REG_RBP = 6,                /* DWARF register numbers, x86-64 psABI */
	FU_REG_RSP = 7,
	FU_REG_RA = 16,
};

/* How to get from one frame to its caller. */
enum fu_kind {
	FU_CFA_RSP,   /* CFA = RSP + cfa_off */
	FU_CFA_RBP,   /* CFA = RBP + cfa_off */
	FU_STOP,      /* the return address is undefined: the outermost frame */
	FU_UNSUP,     /* not modelled here: libunwind unwinds the stack */
	FU_NOMOD,     /* in no loaded module (yet): libunwind, after a check for dlopen */
	FU_TABLE,     /* (rule words only) the rule is fu.rules[word >> 3] */
};

/* A rule word (30 bits), what the cache and the memo hold: kind (3 bits), CFA offset / 8
 * (16 bits), k (8 bits): the caller's RBP at CFA - 8k, 0: unchanged; the return address at
 * CFA - 8. A rule that does not fit is FU_TABLE with its index in fu.rules. */
#define FU_WORD(kind, off8, k) ((uint32_t)(kind) | (uint32_t)(off8) << 3 | (uint32_t)(k) << 19)

struct fu_rule {               /* 8 bytes */
	int32_t cfa_off;
	int16_t fp_off;       /* caller's RBP at CFA + fp_off; 0: RBP unchanged */
	int8_t ra_off;        /* return address at CFA + ra_off */
	uint8_t kind;         /* enum fu_kind */
};

/* A frame of this thread's last stack and its rule. Launches repeat their call paths, so the
 * next frame usually has the return address that followed this one last time; then its rule is
 * at hand without a hash and a cache load that wait on the return address just read (the
 * dependency chain that bounds a step), and the CPU loads the rules of the frames ahead while it
 * reads the stack. After a frame that differs, the walk looks for its return address a few
 * frames around in the last stack and goes on from there (a different inner call path under
 * the same outer frames). */
struct fu_memo {
	uintptr_t ra;
	struct fu_rule rule;
};

/* Whole stacks remembered, to be checked instead of unwound (the stack memo).
 *
 * A walk is a function of its state (return address RA, SP, RBP) at each frame: the rule comes
 * from RA alone (while fu.gen is unchanged), the CFA, the addresses of the slots the step loads
 * (the caller's RA at CFA + ra_off, its RBP at CFA + fp_off) and the validation (CFA above SP,
 * slots within the thread's stack) from the state and the rule; the next state is (the loaded
 * RA, CFA, the loaded RBP or the same RBP). So the only inputs a step takes from outside are the
 * two loads. A remembered stack keeps, for every frame of a walk this thread completed, the
 * state and the slot addresses. When the walk reaches a state equal to frame j of a remembered
 * stack (looked up by (RA, SP) in fu_thread.probe, then RA, SP and RBP compared), it re-reads
 * the slots of frames j, j+1, ... and compares each value with the next remembered state: while
 * they agree, the walk would compute exactly the remembered frames (by induction on the frames),
 * so they are taken as they are, at one or two loads a frame instead of a rule lookup and a
 * step. The first slot that differs gives the state the walk would be in (the value just read,
 * the remembered CFA), and unwinding goes on from there as usual; so does the end of a stack
 * remembered open (cut at `max` or at FU_STACK_FRAMES). The end itself (a rule that stops, a
 * zero return address, `max`) depends only on the state and the count, so it is the same too.
 * RBP is compared only where it is live: without frame pointers it is a general register whose
 * value varies from call to call, and it matters to the frames above only if one of them takes
 * its CFA from it before a step reads RBP back from the stack; where it is dead the states
 * differ in nothing the walk uses. The walk carries the RBP it really has, and a stack recorded
 * from a remembered one keeps that RBP, not the remembered one.
 * Exact, not a guess: the memory is read now, only what cannot differ is reused. Limits: records
 * are per thread (the stack bounds are), and void when fu.gen moved (a module set change
 * noticed; a change not yet noticed affects the rule cache the same way). Walks that fell back
 * to libunwind are not remembered. */
enum fu_sframe_flags {
	FU_SF_STOP = 1,          /* the rule stopped here: no step */
	FU_SF_RESTORE = 2,       /* the step read the caller's RBP (at CFA + fp_off) */
	FU_SF_USES_FP = 4,       /* the rule takes the CFA from RBP */
	FU_SF_FP_LIVE = 8,       /* RBP matters here: used before it is read again (fu_remember) */
	FU_SF_COPIED = 16,       /* taken from another remembered stack: not findable by (RA, SP) */
	FU_SF_FP_UNKNOWN = 32,   /* (while recorded) the walk's RBP here is not known */
};

/* 16 bytes, four to a cache line: the memo is read at every launch, and the lines it takes are
 * what a launch pays for when they left the caches (launches far apart). Stack addresses are
 * offsets from the stack's base (its first SP). The slots a step read lie at the CFA, which is
 * the next frame's SP, plus the rule's offsets: f[k + 1].sp + ra_off, + fp_off. */
struct fu_sframe {
	uintptr_t ra;            /* the state at this frame, before its step: RA, SP, RBP (fp[]) */
	uint32_t sp;
	int16_t fp_off;          /* the caller's RBP at CFA + fp_off (FU_SF_RESTORE) */
	int8_t ra_off;           /* the caller's RA at CFA + ra_off */
	uint8_t flags;           /* enum fu_sframe_flags */
};
_Static_assert(sizeof(struct fu_sframe) == 16, "fu_sframe: four to a cache line");

/* A stack that branched off a remembered one (fu_remember): where the walk that recorded it
 * left the stack it followed, and where it goes on. Kept in the stack left (fu_stack.alt), so
 * that a walk that differs there finds it on a line fetched beside that stack's header instead
 * of behind a look in fu_thread.branch (one dependent cache miss less a branch when launches
 * are far apart). The 32 bits of RA are a hint: fu_entry checks the whole state. */
struct fu_alt {
	uint32_t ra_lo;          /* the return address the walk read at frame k (low 32 bits) */
	uint8_t k;               /* the frame of this stack whose state differed */
	uint8_t n;               /* the frame of stack idx with that state */
	uint8_t idx;             /* the stack that branched off (fu_thread.stacks_memo index) */
	uint8_t used;
};
_Static_assert(FU_STACKS <= 256 && FU_STACK_FRAMES < 256, "fu_alt: bytes for idx, k and n");

/* The header is one cache line with the caller's data (fu_token_data), which a walk that ends
 * in this stack has just read: what the caller keeps under the token costs no other line. The
 * next line holds the stacks that branched off this one (prefetched when it is followed). */
struct fu_stack {
	uint64_t gen;            /* fu.gen of the walk */
	uintptr_t base;          /* the walk's first SP: the frames' addresses are offsets from it */
	uint32_t version;        /* fu_remember calls into this slot: part of a walk's token */
	int n;                   /* frames (pcs); 0: empty */
	bool stopped;            /* the last frame's rule stopped (no f[n]); else f[n] is the state
				  * after the last step: RA 0 ends the stack, anything else goes on */
	/* has_parent: frames 0..parent_n are those of stack `parent` while its version is
	 * parent_version (the walk that recorded this one took them from it: fu_chain) */
	bool has_parent;
	uint8_t parent, parent_n;
	uint32_t parent_version;
	uint64_t user[FU_TOKEN_DATA / 8] __attribute__((aligned(32)));   /* fu_token_data */
	struct fu_alt alt[FU_ALTS] __attribute__((aligned(64)));
	uint32_t alt_next;       /* the entry replaced next when all are used */
	struct fu_sframe f[FU_STACK_FRAMES + 1] __attribute__((aligned(64)));
	uintptr_t fp[FU_STACK_FRAMES + 1];   /* RBP at each frame (compared where live) */
};
_Static_assert(offsetof(struct fu_stack, alt) == 64 && offsetof(struct fu_stack, f) == 128,
	       "fu_stack: the header in one cache line, the branches in the next");

/* One per thread that ever unwound, never freed (the counters outlive the thread). What every
 * walk reads and writes is in its first two cache lines (the memo of the last stack is read
 * only by walks that do not meet a remembered stack). */
struct fu_thread {
	uintptr_t lo __attribute__((aligned(64)));   /* the stack; hi == 0: unknown, every */
	uintptr_t hi;                                /* stack falls back */
	/* the stack memo (mapped at the first walk; NULL: none): stacks[next_stack] is the one
	 * being recorded */
	struct fu_stack *stacks_memo;
	uint32_t *probe;      /* hash of (RA, SP) -> 1 + stack << 8 | frame; 0: empty */
	uint32_t *branch;     /* hash of (stack, frame, RA) -> the same, for another stack that
			       * branched off there (fu_walk), when its fu_alt entries were taken */
	uint64_t gen;         /* fu.gen when memo[cur] was filled */
	int cur, nmemo;       /* memo[cur][0..nmemo): the last stack; memo[!cur]: the next one */
	int next_stack;
	/* Recording pays only if stacks come back: once FU_STACKS stacks were recorded (the ring
	 * came round: not a program's first stacks), if fewer than half of FU_MEMO_WINDOW walks
	 * were mostly remembered frames (more distinct stacks than FU_STACKS, taken in turn),
	 * recording stops for FU_MEMO_PAUSE walks (the stacks kept are still found). */
	uint32_t pause;
	_Atomic uint64_t stacks, frames, memo_hits, memo_frames, memo_diffs, memo_chained;
	uint32_t window_walks, window_good;
	_Atomic uint64_t memo_pauses;
	struct fu_thread *next;
	uint64_t remembered;  /* stacks recorded so far */
	struct fu_memo memo[2][FU_MEMO];
};
_Static_assert(offsetof(struct fu_thread, next) == 128, "fu_thread: a walk's fields in two lines");

static struct {
	pthread_mutex_t lock;                 /* miss path: rules, cache writes, threads */
	struct fu_rule rules[FU_MAX_RULES];
	uint32_t nrules;
	unsigned long long adds, subs;        /* dl_iterate_phdr's counters at the last look */
	_Atomic uint64_t gen;                 /* flushes so far: a thread's memo of another is void */
	struct fu_thread *threads;
	_Atomic uint64_t fallbacks, unsupported, invalid, off_stack, misses, flushes;
	_Atomic bool no_stack_memo;           /* fu_set_stack_memo(0): tests and benchmarks */
} fu = { .lock = PTHREAD_MUTEX_INITIALIZER };

static _Atomic uint64_t fu_cache[FU_CACHE_SIZE];
static __thread struct fu_thread *fu_self;

/* ---- DWARF reading (module memory, only under the loader's lock) ---- */

static uint64_t fu_uleb(const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	while (p < end) {
		uint8_t b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	*pp = p;
	return v;
}

static int64_t fu_sleb(const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;
	while (p < end) {
		b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*pp = p;
	return (int64_t)v;
}

/* A DW_EH_PE_* encoded pointer at *pp (absptr/udata/sdata/uleb/sleb, absolute, pcrel or
 * datarel): 0 or -1 for an encoding not handled. The indirect bit is ignored (no dereference:
 * only the personality uses it, and only to be skipped). */
static int fu_read_enc(const uint8_t **pp, const uint8_t *end, uint8_t enc, uintptr_t datarel,
		       uintptr_t *out)
{
	const uint8_t *p = *pp;
	uintptr_t base = 0;
	uint64_t v;
	if (enc == 0xff)
		return -1;
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: base = (uintptr_t)p; break;
	case 0x30: if (!datarel) return -1; base = datarel; break;
	default: return -1;
	}
	size_t size;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: size = 8; break;
	case 0x02: case 0x0a: size = 2; break;
	case 0x03: case 0x0b: size = 4; break;
	case 0x01: v = fu_uleb(&p, end); goto done;
	case 0x09: v = (uint64_t)fu_sleb(&p, end); goto done;
	default: return -1;
	}
	if ((size_t)(end - p) < size)
		return -1;
	switch (enc & 0x0f) {
	case 0x02: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
	case 0x0a: { int16_t x; memcpy(&x, p, 2); v = (uint64_t)(int64_t)x; break; }
	case 0x03: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
	case 0x0b: { int32_t x; memcpy(&x, p, 4); v = (uint64_t)(int64_t)x; break; }
	default: memcpy(&v, p, 8); break;
	}
	p += size;
done:
	*pp = p;
	*out = base + (uintptr_t)v;
	return 0;
}

struct fu_cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool aug_z, signal;
	const uint8_t *insns, *end;
};

static int fu_parse_cie(const uint8_t *cie, struct fu_cie *c)
{
	uint32_t len;
	memcpy(&len, cie, 4);
	if (len == 0 || len == 0xffffffff)
		return -1;
	const uint8_t *end = cie + 4 + len, *p = cie + 8;
	uint32_t id;
	memcpy(&id, cie + 4, 4);
	if (id != 0 || p >= end)
		return -1;
	uint8_t version = *p++;
	if (version != 1 && version != 3)
		return -1;
	const char *aug = (const char *)p;
	size_t auglen = strnlen(aug, (size_t)(end - p));
	p += auglen + 1;
	if (p > end || (aug[0] && aug[0] != 'z'))
		return -1;  /* "eh" (GCC 2) and unknown augmentations without a size */
	*c = (struct fu_cie){ .fde_enc = 0 };
	c->code_align = fu_uleb(&p, end);
	c->data_align = fu_sleb(&p, end);
	uint64_t ra = version == 1 ? (p < end ? *p++ : 0) : fu_uleb(&p, end);
	if (ra != FU_REG_RA)
		return -1;
	if (aug[0] == 'z') {
		c->aug_z = true;
		uint64_t n = fu_uleb(&p, end);
		if (n > (uint64_t)(end - p))
			return -1;
		const uint8_t *a = p, *aend = p + n;
		for (size_t i = 1; i < auglen; i++) {
			uintptr_t skip;
			switch (aug[i]) {
			case 'R': if (a >= aend) return -1; c->fde_enc = *a++; break;
			case 'L': if (a >= aend) return -1; a++; break;
			case 'P':
				if (a >= aend) return -1;
				uint8_t penc = *a++;
				if (fu_read_enc(&a, aend, penc & 0x7f, 0, &skip) < 0)
					return -1;
				break;
			case 'S': c->signal = true; break;
			case 'B': case 'G': break;
			default: i = auglen; break;  /* 'z' says how much to skip */
			}
		}
		p = aend;
	}
	c->insns = p;
	c->end = end;
	return 0;
}

/* Where a register is, in the row being built: only RBP and the return address matter. */
enum { FU_SAME, FU_AT_OFFSET, FU_UNDEF, FU_OTHER };

struct fu_row {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	uint8_t fp_how, ra_how;
	int64_t fp_off, ra_off;
};

static void fu_set(struct fu_row *r, uint64_t reg, uint8_t how, int64_t off)
{
	if (reg == FU_REG_RBP) {
		r->fp_how = how;
		r->fp_off = off;
	} else if (reg == FU_REG_RA) {
		r->ra_how = how;
		r->ra_off = off;
	}
}

static void fu_restore(struct fu_row *r, const struct fu_row *init, uint64_t reg)
{
	if (reg == FU_REG_RBP)
		fu_set(r, reg, init->fp_how, init->fp_off);
	else if (reg == FU_REG_RA)
		fu_set(r, reg, init->ra_how, init->ra_off);
}

/* An advance_loc* instruction's delta (op is its first byte, *pp past it): 1 with *delta set, 0
 * for another instruction (nothing read), -1 when cut short. */
static int fu_cfi_delta(uint8_t op, const uint8_t **pp, const uint8_t *end, uint64_t *delta)
{
	size_t size;
	if ((op & 0xc0) == 0x40) {
		*delta = op & 0x3f;
		return 1;
	}
	if (op == 0x02)        /* advance_loc1 */
		size = 1;
	else if (op == 0x03)   /* advance_loc2 */
		size = 2;
	else if (op == 0x04)   /* advance_loc4 */
		size = 4;
	else
		return 0;
	if (*pp + size > end)
		return -1;
	uint32_t d = 0;
	memcpy(&d, *pp, size);   /* little-endian: x86-64 only (the fast path's one target) */
	*pp += size;
	*delta = d;
	return 1;
}

/* A CFI instruction that changes the row: where a register is, or the CFA. 0, or -1 for one not
 * understood (then the frame is not modelled). init: the CIE's row (NULL while running the CIE). */
static int fu_cfi_row_op(uint8_t op, const uint8_t **pp, const uint8_t *end, const struct fu_cie *c,
			 struct fu_row *r, const struct fu_row *init)
{
	uint64_t reg;
	if ((op & 0xc0) == 0x80) {   /* offset */
		fu_set(r, op & 0x3f, FU_AT_OFFSET, (int64_t)fu_uleb(pp, end) * c->data_align);
		return 0;
	}
	if ((op & 0xc0) == 0xc0 || op == 0x06) {   /* restore, restore_extended */
		reg = (op & 0xc0) == 0xc0 ? op & 0x3fu : fu_uleb(pp, end);
		if (!init)
			return -1;
		fu_restore(r, init, reg);
		return 0;
	}
	switch (op) {
	case 0x00: /* nop */
	case 0x2e: /* GNU_args_size */
		if (op)
			fu_uleb(pp, end);
		return 0;
	case 0x05: /* offset_extended */
	case 0x11: /* offset_extended_sf */
	case 0x2f: /* GNU_negative_offset_extended */
		reg = fu_uleb(pp, end);
		fu_set(r, reg, FU_AT_OFFSET, (op == 0x11 ? fu_sleb(pp, end) :
					      op == 0x2f ? -(int64_t)fu_uleb(pp, end) :
							   (int64_t)fu_uleb(pp, end)) * c->data_align);
		return 0;
	case 0x07: /* undefined */
	case 0x08: /* same_value */
		fu_set(r, fu_uleb(pp, end), op == 0x07 ? FU_UNDEF : FU_SAME, 0);
		return 0;
	case 0x09: /* register */
	case 0x14: /* val_offset */
	case 0x15: /* val_offset_sf */
	case 0x10: /* expression */
	case 0x16: /* val_expression */
		reg = fu_uleb(pp, end);
		if (op == 0x15) {
			fu_sleb(pp, end);
		} else {
			uint64_t v = fu_uleb(pp, end);   /* (an expression's length) */
			if (op == 0x10 || op == 0x16)
				*pp += v;
		}
		fu_set(r, reg, FU_OTHER, 0);
		return 0;
	case 0x0c: /* def_cfa */
	case 0x12: /* def_cfa_sf */
		r->cfa_reg = fu_uleb(pp, end);
		r->cfa_off = op == 0x12 ? fu_sleb(pp, end) * c->data_align : (int64_t)fu_uleb(pp, end);
		r->cfa_expr = false;
		return 0;
	case 0x0d: /* def_cfa_register */
		r->cfa_reg = fu_uleb(pp, end);
		r->cfa_expr = false;
		return 0;
	case 0x0e: /* def_cfa_offset */
	case 0x13: /* def_cfa_offset_sf */
		r->cfa_off = op == 0x13 ? fu_sleb(pp, end) * c->data_align : (int64_t)fu_uleb(pp, end);
		return 0;
	case 0x0f: /* def_cfa_expression */
		r->cfa_expr = true;
		reg = fu_uleb(pp, end);   /* the expression's length */
		*pp += reg;
		return 0;
	default:
		return -1;
	}
}

/* Run CFI instructions [p, end) from location loc until the row for target is complete: 0, or -1
 * for an instruction not understood. init: the CIE's row (NULL while running the CIE). The
 * location moves (set_loc, advance_loc*) and the row stack (remember/restore_state) here, what
 * changes the row in fu_cfi_row_op. */
static int fu_run_cfi(const uint8_t *p, const uint8_t *end, const struct fu_cie *c,
		      uintptr_t loc, uintptr_t target, struct fu_row *r, const struct fu_row *init)
{
	struct fu_row saved[FU_STATE_DEPTH];
	int nsaved = 0;
	while (p < end) {
		uint8_t op = *p++;
		uint64_t delta = 0;
		uintptr_t newloc;
		int adv = fu_cfi_delta(op, &p, end, &delta);
		if (adv < 0)
			return -1;
		if (adv) {
			newloc = loc + delta * c->code_align;
		} else if (op == 0x01) {   /* set_loc */
			if (fu_read_enc(&p, end, c->fde_enc, 0, &newloc) < 0)
				return -1;
		} else if (op == 0x0a) {   /* remember_state */
			if (nsaved == FU_STATE_DEPTH)
				return -1;
			saved[nsaved++] = *r;
			continue;
		} else if (op == 0x0b) {   /* restore_state: the whole row, CFA included (as GCC
					    * emits it) */
			if (nsaved == 0)
				return -1;
			*r = saved[--nsaved];
			continue;
		} else {
			if (fu_cfi_row_op(op, &p, end, c, r, init))
				return -1;
			continue;
		}
		if (newloc > target)
			return 0;
		loc = newloc;
	}
	return p > end ? -1 : 0;
}

/* The rule for the frame whose return address is ra, from the module whose .eh_frame_hdr is at
 * hdr. */
static struct fu_rule fu_rule_from_cfi(const uint8_t *hdr, uintptr_t ra)
{
	const struct fu_rule unsup = { .kind = FU_UNSUP };
	uintptr_t pc = ra - 1;  /* inside the call instruction */
	if (hdr[0] != 1 || hdr[3] != 0x3b)  /* version 1; table: datarel | sdata4 */
		return unsup;
	const uint8_t *p = hdr + 4, *lim = hdr + 64;
	uintptr_t eh_frame, count;
	if (fu_read_enc(&p, lim, hdr[1], (uintptr_t)hdr, &eh_frame) < 0 ||
	    fu_read_enc(&p, lim, hdr[2], (uintptr_t)hdr, &count) < 0)
		return unsup;
	const uint8_t *tab = p;
	size_t lo = 0, hi = count;
	while (lo < hi) {  /* the last entry whose initial location is <= pc */
		size_t mid = lo + (hi - lo) / 2;
		int32_t start;
		memcpy(&start, tab + mid * 8, 4);
		if ((uintptr_t)hdr + (intptr_t)start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return unsup;
	int32_t fde_rel;
	memcpy(&fde_rel, tab + (lo - 1) * 8 + 4, 4);
	const uint8_t *fde = hdr + fde_rel;

	uint32_t len;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffff)
		return unsup;
	const uint8_t *end = fde + 4 + len;
	int32_t cie_rel;
	memcpy(&cie_rel, fde + 4, 4);
	if (cie_rel == 0)
		return unsup;
	struct fu_cie c;
	if (fu_parse_cie(fde + 4 - cie_rel, &c) < 0 || c.signal)
		return unsup;
	p = fde + 8;
	uintptr_t begin, range;
	if ((c.fde_enc & 0x80) || fu_read_enc(&p, end, c.fde_enc, 0, &begin) < 0 ||
	    fu_read_enc(&p, end, c.fde_enc & 0x0f, 0, &range) < 0)
		return unsup;
	if (pc < begin || pc - begin >= range)
		return unsup;  /* no FDE covers pc */
	if (c.aug_z) {
		uint64_t n = fu_uleb(&p, end);
		if (n > (uint64_t)(end - p))
			return unsup;
		p += n;
	}
	struct fu_row init = { .cfa_reg = ~0ull }, row;
	if (fu_run_cfi(c.insns, c.end, &c, begin, UINTPTR_MAX, &init, NULL) < 0)
		return unsup;
	row = init;
	if (fu_run_cfi(p, end, &c, begin, pc, &row, &init) < 0)
		return unsup;

	if (row.ra_how == FU_UNDEF)
		return (struct fu_rule){ .kind = FU_STOP };
	if (row.cfa_expr || (row.cfa_reg != FU_REG_RSP && row.cfa_reg != FU_REG_RBP) ||
	    row.ra_how != FU_AT_OFFSET || row.fp_how == FU_OTHER ||
	    row.cfa_off < 0 || row.cfa_off > INT32_MAX ||
	    row.ra_off < INT8_MIN || row.ra_off > INT8_MAX ||
	    row.fp_off < INT16_MIN || row.fp_off > INT16_MAX ||
	    (row.fp_how == FU_AT_OFFSET && row.fp_off == 0))
		return unsup;
	return (struct fu_rule){
		.kind = row.cfa_reg == FU_REG_RSP ? FU_CFA_RSP : FU_CFA_RBP,
		.cfa_off = (int32_t)row.cfa_off,
		.ra_off = (int8_t)row.ra_off,
		.fp_off = row.fp_how == FU_AT_OFFSET ? (int16_t)row.fp_off : 0,
	};
}

/* ---- the cache ---- */

/* The first entry of ra's set: the set and the tag (ra >> FU_SET_BITS) give back all of ra. */
static inline size_t fu_slot(uintptr_t ra)
{
	return ((ra ^ (ra >> FU_SET_BITS)) & ((1u << FU_SET_BITS) - 1)) * 2;
}

/* ra's rule word, or UINT32_MAX when not cached. ra < 2^47. */
static inline uint32_t fu_lookup(uintptr_t ra)
{
	size_t h = fu_slot(ra);
	uint64_t tag = ra >> FU_SET_BITS;
	uint64_t e = atomic_load_explicit(&fu_cache[h], memory_order_acquire);
	if (e >> FU_WORD_BITS == tag)
		return (uint32_t)e & ((1u << FU_WORD_BITS) - 1);
	e = atomic_load_explicit(&fu_cache[h + 1], memory_order_acquire);
	if (e >> FU_WORD_BITS == tag)
		return (uint32_t)e & ((1u << FU_WORD_BITS) - 1);
	return UINT32_MAX;
}

/* Under fu.lock. */
static void fu_flush_locked(void)
{
	for (size_t i = 0; i < FU_CACHE_SIZE; i++)
		atomic_store_explicit(&fu_cache[i], 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&fu.flushes, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&fu.gen, 1, memory_order_release);
}

void fu_flush(void)
{
	pthread_mutex_lock(&fu.lock);
	fu_flush_locked();
	pthread_mutex_unlock(&fu.lock);
}

void fu_set_stack_memo(int on)
{
	atomic_store_explicit(&fu.no_stack_memo, !on, memory_order_relaxed);
}

/* Under fu.lock: the index of rule r in fu.rules, added if new. */
static uint32_t fu_intern(struct fu_rule r)
{
	for (uint32_t i = 0; i < fu.nrules; i++) {
		const struct fu_rule *q = &fu.rules[i];
		if (q->kind == r.kind && q->cfa_off == r.cfa_off && q->ra_off == r.ra_off &&
		    q->fp_off == r.fp_off)
			return i;
	}
	if (fu.nrules == FU_MAX_RULES) {  /* a rule that cannot be cached: rare enough */
		r = (struct fu_rule){ .kind = FU_UNSUP };
		for (uint32_t i = 0; i < fu.nrules; i++)
			if (fu.rules[i].kind == FU_UNSUP)
				return i;
		return 0;
	}
	fu.rules[fu.nrules] = r;
	return fu.nrules++;
}

struct fu_find {
	uintptr_t pc;
	struct fu_rule rule;
	bool found, changed;
};

/* dl_iterate_phdr callback: notices a changed module set, then finds pc's module. */
static int fu_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct fu_find *f = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs) &&
	    (info->dlpi_adds != fu.adds || info->dlpi_subs != fu.subs)) {
		f->changed = fu.adds || fu.subs;
		fu.adds = info->dlpi_adds;
		fu.subs = info->dlpi_subs;
	}
	if (!f->pc)
		return 1;
	const ElfW(Phdr) *hdr = NULL;
	bool inside = false;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && f->pc >= start &&
		    f->pc - start < ph->p_memsz)
			inside = true;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = ph;
	}
	if (!inside)
		return 0;
	f->found = true;
	f->rule = hdr ? fu_rule_from_cfi((const uint8_t *)(info->dlpi_addr + hdr->p_vaddr),
					 f->pc + 1)
		      : (struct fu_rule){ .kind = FU_UNSUP };
	return 1;
}

/* Under fu.lock: the rule word of r. */
static uint32_t fu_pack(struct fu_rule r)
{
	if (r.kind != FU_CFA_RSP && r.kind != FU_CFA_RBP)
		return r.kind;
	if (r.ra_off == -8 && r.cfa_off % 8 == 0 && r.cfa_off / 8 < 0x10000 &&
	    r.fp_off <= 0 && r.fp_off % 8 == 0 && -r.fp_off / 8 < 0x100)
		return FU_WORD(r.kind, r.cfa_off / 8, -r.fp_off / 8);
	return FU_WORD(FU_TABLE, fu_intern(r), 0);
}

static inline struct fu_rule fu_unpack(uint32_t w)
{
	if ((w & 7) == FU_TABLE)
		return fu.rules[w >> 3 & 0xffff];
	return (struct fu_rule){ .kind = (uint8_t)(w & 7), .cfa_off = (int32_t)(w >> 3 & 0xffff) * 8,
				 .fp_off = (int16_t)(-(int32_t)(w >> 19 & 0xff) * 8), .ra_off = -8 };
}

/* ra's rule word, looked up in the CFI. *flushed: the module set changed and the cache was
 * emptied (the caller's earlier steps may have used stale rules). */
static uint32_t __attribute__((noinline)) fu_miss(uintptr_t ra, bool *flushed)
{
	pthread_mutex_lock(&fu.lock);
	uint32_t w = fu_lookup(ra);
	if (w != UINT32_MAX) {
		pthread_mutex_unlock(&fu.lock);
		return w;
	}
	atomic_fetch_add_explicit(&fu.misses, 1, memory_order_relaxed);
	struct fu_find f = { .pc = ra - 1, .rule = { .kind = FU_NOMOD } };
	dl_iterate_phdr(fu_find_cb, &f);
	if (f.changed) {
		fu_flush_locked();
		*flushed = true;
	}
	w = fu_pack(f.rule);
	size_t h = fu_slot(ra);
	if (atomic_load_explicit(&fu_cache[h], memory_order_relaxed))
		h++;  /* both taken: the second way is replaced */
	atomic_store_explicit(&fu_cache[h], (uint64_t)(ra >> FU_SET_BITS) << FU_WORD_BITS | w,
			      memory_order_release);
	pthread_mutex_unlock(&fu.lock);
	return w;
}

/* A module may have been loaded where an address had none: flush if the module set changed. */
static bool fu_recheck_modules(void)
{
	pthread_mutex_lock(&fu.lock);
	struct fu_find f = { .pc = 0 };
	dl_iterate_phdr(fu_find_cb, &f);
	if (f.changed)
		fu_flush_locked();
	pthread_mutex_unlock(&fu.lock);
	return f.changed;
}

/* ---- threads ---- */

static struct fu_thread *__attribute__((noinline)) fu_thread_init(void)
{
	struct fu_thread *t = aligned_alloc(64, sizeof(*t));
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			t->lo = (uintptr_t)addr;
			t->hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	/* the stack memo: without it (no memory) every stack is unwound */
	size_t bytes = sizeof(struct fu_stack) * FU_STACKS + (2 * sizeof(uint32_t) << FU_PROBE_BITS);
	void *m = fu_map_huge(bytes);
	if (m) {
		t->stacks_memo = m;
		t->probe = (uint32_t *)(t->stacks_memo + FU_STACKS);
		t->branch = t->probe + (1u << FU_PROBE_BITS);
	}
	pthread_mutex_lock(&fu.lock);
	t->next = fu.threads;
	fu.threads = t;
	pthread_mutex_unlock(&fu.lock);
	fu_self = t;
	return t;
}

/* ---- unwinding ---- */

/* The whole stack by libunwind, from the caller's return address ra0 on. */
static int __attribute__((noinline)) fu_fallback(uintptr_t *pcs, int max, uintptr_t ra0,
						  _Atomic uint64_t *why)
{
	atomic_fetch_add_explicit(why, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&fu.fallbacks, 1, memory_order_relaxed);
	void *buf[FU_FALLBACK_MAX];
	int want = max + 4 < FU_FALLBACK_MAX ? max + 4 : FU_FALLBACK_MAX;
	int n = unw_backtrace(buf, want);
	for (int i = 0; i < n && i < 4; i++) {
		if ((uintptr_t)buf[i] != ra0)
			continue;
		int k = n - i < max ? n - i : max;
		for (int j = 0; j < k; j++)
			pcs[j] = (uintptr_t)buf[i + j];
		return k;
	}
	if (max > 0) {  /* libunwind did not get past our own frames: the caller's, alone */
		pcs[0] = ra0;
		return 1;
	}
	return 0;
}

/* Where the last stack goes on after a frame with return address ra that was not last[j]: just
 * after ra if it is at most a few frames away, else one frame on. */
static int fu_realign(const struct fu_memo *last, int nlast, int j, uintptr_t ra)
{
	int lo = j > 2 ? j - 2 : 0, hi = j + 6 < nlast ? j + 6 : nlast;
	for (int k = lo; k < hi; k++)
		if (last[k].ra == ra)
			return k + 1;
	return j + 1;
}

/* A per-thread counter: only its thread writes it. */
static inline void fu_count(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

static inline size_t fu_probe_slot(uintptr_t ra, uintptr_t sp)
{
	uintptr_t h = (sp >> 3) * 0x9e3779b1u ^ ra;
	return (h ^ h >> FU_PROBE_BITS ^ h >> (2 * FU_PROBE_BITS)) & ((1u << FU_PROBE_BITS) - 1);
}

/* The remembered frame of table entry e if its state is (ra, sp, fp) in a stack other than
 * `except`, else NULL. */
static inline const struct fu_stack *fu_entry(const struct fu_thread *t, uint32_t e, uintptr_t ra,
					      uintptr_t sp, uintptr_t fp, uint64_t gen,
					      const struct fu_stack *except, int *j)
{
	if (!e)
		return NULL;
	const struct fu_stack *s = &t->stacks_memo[(e - 1) >> 8];
	int k = (int)((e - 1) & 0xff);
	if (s == except || k >= s->n || s->gen != gen || s->f[k].ra != ra ||
	    s->base + s->f[k].sp != sp || ((s->f[k].flags & FU_SF_FP_LIVE) && s->fp[k] != fp))
		return NULL;
	*j = k;
	return s;
}

/* Where stack s, followed to its frame k, branched off to return address ra in a stack
 * remembered later: the slot in fu_thread.branch. */
static inline size_t fu_branch_slot(uint32_t s, int k, uintptr_t ra)
{
	uintptr_t h = ((uintptr_t)s << 8 | (uintptr_t)k) * 0x9e3779b97f4a7c15ull ^ ra;
	return (h ^ h >> FU_PROBE_BITS ^ h >> (2 * FU_PROBE_BITS)) & ((1u << FU_PROBE_BITS) - 1);
}

/* The stack that branched off s at its frame k to return address ra, as its fu_alt says: a
 * probe/branch table entry (1 + stack << 8 | frame) for fu_entry to check, or 0. */
static inline uint32_t fu_alt_find(const struct fu_stack *s, int k, uintptr_t ra)
{
	for (int i = 0; i < FU_ALTS; i++) {
		const struct fu_alt *a = &s->alt[i];
		if (a->used && a->k == k && a->ra_lo == (uint32_t)ra)
			return 1 + ((uint32_t)a->idx << 8 | a->n);
	}
	return 0;
}

/* Keep in s that stack idx branched off it at frame k to ra, where idx has frame n: the entry
 * for the same (k, ra) if there is one, else a free one, else the oldest. */
static void fu_alt_put(struct fu_stack *s, int k, uintptr_t ra, uint32_t idx, int n)
{
	int free = -1, i;
	for (i = 0; i < FU_ALTS; i++) {
		if (!s->alt[i].used) {
			if (free < 0)
				free = i;
		} else if (s->alt[i].k == k && s->alt[i].ra_lo == (uint32_t)ra) {
			break;
		}
	}
	if (i == FU_ALTS)
		i = free >= 0 ? free : (int)(s->alt_next++ % FU_ALTS);
	s->alt[i] = (struct fu_alt){ (uint32_t)ra, (uint8_t)k, (uint8_t)n, (uint8_t)idx, 1 };
}

/* Frames n0..n1 of a walk taken from s->f[k0..]. */
struct fu_segment {
	const struct fu_stack *s;
	int k0, n0, n1;
};

/* Copy the remembered frames a walk took (segs) into its record rec (n frames; its own frames
 * and, unless stopped, the state after them are there already). RBP: a remembered frame's RBP
 * was compared where it was live in its stack; where it was dead there, the walk's real RBP is
 * the next frame's if the step did not read RBP back, else unknown (fu_remember keeps rec only
 * if no unknown RBP is live in it). */
static void __attribute__((noinline, cold)) fu_fill_segments(struct fu_stack *rec, int n, bool stopped,
			     const struct fu_segment *segs, int nseg)
{
	for (int g = nseg - 1; g >= 0; g--) {
		const struct fu_segment *sg = &segs[g];
		/* f[i + 1]'s RBP known */
		bool known = sg->n1 < n ? !(rec->f[sg->n1].flags & FU_SF_FP_UNKNOWN) : !stopped;
		uint32_t rebase = (uint32_t)(sg->s->base - rec->base);  /* the addresses above rec's */
		for (int i = sg->n1 - 1; i >= sg->n0; i--) {
			int k = sg->k0 + (i - sg->n0);
			const struct fu_sframe *src = &sg->s->f[k];
			struct fu_sframe *d = &rec->f[i];
			*d = *src;
			d->sp += rebase;
			d->flags = (uint8_t)((src->flags & ~FU_SF_FP_UNKNOWN) | FU_SF_COPIED);
			if (src->flags & FU_SF_FP_LIVE) {
				rec->fp[i] = sg->s->fp[k];
				known = true;
			} else if (known && !(src->flags & FU_SF_RESTORE)) {
				rec->fp[i] = rec->fp[i + 1];
			} else {
				known = false;
				d->flags |= FU_SF_FP_UNKNOWN;
			}
		}
	}
}

/* A remembered stack left where this walk's frame differed. */
struct fu_branch {
	uint32_t s;           /* the stack followed */
	int k;                /* its frame whose state differed */
	uintptr_t ra;         /* the return address this walk had there */
	int n;                /* this walk's frame there */
};

/* Keep the stack just recorded (n frames): it becomes findable by each of its own frames (not
 * those taken from other remembered stacks), and from the stacks it branched off (nb of them in
 * b). Not kept when an RBP the walk did not know is live in it. */
static void __attribute__((noinline, cold)) fu_remember(struct fu_thread *t, struct fu_stack *rec, int n,
							   bool stopped,
			uint64_t gen, const struct fu_branch *b, int nb)
{
	/* RBP live: the walk goes on after f[n] (it may use RBP), or a later frame uses it first */
	bool live = !stopped && rec->f[n].ra;
	if (!stopped)
		rec->f[n].flags = live ? FU_SF_FP_LIVE : 0;
	for (int i = n - 1; i >= 0; i--) {
		uint8_t fl = rec->f[i].flags;
		live = (fl & FU_SF_USES_FP) || (!(fl & FU_SF_RESTORE) && live);
		if (live && (fl & FU_SF_FP_UNKNOWN))
			return;
		rec->f[i].flags = (uint8_t)(live ? fl | FU_SF_FP_LIVE : fl & ~FU_SF_FP_LIVE);
	}
	rec->n = n;
	rec->stopped = stopped;
	rec->gen = gen;
	rec->version++;
	memset(rec->alt, 0, sizeof(rec->alt));   /* the slot's last stack's branches */
	rec->alt_next = 0;
	uint32_t idx = (uint32_t)(rec - t->stacks_memo);
	for (int i = 0; i < n; i++)
		if (!(rec->f[i].flags & FU_SF_COPIED))
			t->probe[fu_probe_slot(rec->f[i].ra, rec->base + rec->f[i].sp)] =
				1 + (idx << 8 | (uint32_t)i);
	/* in the stack branched off (found first), and in the table (when its entries are all
	 * taken by other branches) */
	for (int i = 0; i < nb; i++) {
		if (b[i].n >= n || b[i].s == idx)
			continue;
		fu_alt_put(&t->stacks_memo[b[i].s], b[i].k, b[i].ra, idx, b[i].n);
		t->branch[fu_branch_slot(b[i].s, b[i].k, b[i].ra)] = 1 + (idx << 8 | (uint32_t)b[i].n);
	}
	t->next_stack = (t->next_stack + 1) % FU_STACKS;
	t->remembered++;
}

/* The walk's state (fu_walk's registers, in and out of fu_follow). */
struct fu_state {
	int n;
	uintptr_t ra, sp, fp;
	bool stopped;
};

/* What a walk took from the stack memo. */
struct fu_memo_use {
	uint64_t frames, diffs;          /* frames taken, remembered stacks left */
	int nseg, nbranch;
	struct fu_segment segs[FU_SEGMENTS];
	struct fu_branch branches[FU_BRANCHES];
};

/* Frames k, k+1, ... of the remembered stack s, whose state at k is the walk's (w), while their
 * slots still hold what they held (the stack memo, above); from a frame that differs, the stack
 * that branched off s there before, if any. Returns true when the walk goes on unwinding from
 * w (a frame no remembered stack has, or the end of a stack remembered open), false when it
 * ends (w->stopped, a zero return address, max). Out of line: the usual walk stays small. */
static bool __attribute__((noinline)) fu_follow(struct fu_thread *t, const struct fu_stack *s,
						 int k, uint64_t gen, const struct fu_stack *slot,
						 uintptr_t *pcs, int max, struct fu_state *w,
						 struct fu_memo_use *m)
{
	int n = w->n, n0 = n, k0 = k, nh = n;
	uintptr_t ra = w->ra, fp = w->fp, sp = w->sp;
	bool goes_on = false;
	__builtin_prefetch(s->alt);   /* beside the header fu_entry read: where s branches */
	/* s's base and length in registers: the stores to pcs could alias them otherwise (two
	 * loads a frame fewer) */
	uintptr_t base = s->base;
	int sn = s->n;
	for (;;) {
		const struct fu_sframe *f = &s->f[k];
		pcs[n++] = f->ra;
		if (f->flags & FU_SF_STOP) {  /* the rule stopped here */
			w->stopped = true;
			break;
		}
		const struct fu_sframe *g = f + 1;
		uintptr_t cfa = base + g->sp;
		ra = *(const uintptr_t *)(cfa + (intptr_t)f->ra_off);
		if (f->flags & FU_SF_RESTORE)
			fp = *(const uintptr_t *)(cfa + (intptr_t)f->fp_off);
		if (__builtin_expect(ra != g->ra || ((g->flags & FU_SF_FP_LIVE) && fp != s->fp[k + 1]), 0)) {
			/* A stack that branched off s here before, else unwinding goes on from the
			 * state just read (and this walk is kept, with where it branched off). */
			m->diffs++;
			sp = cfa;
			uint32_t si = (uint32_t)(s - t->stacks_memo);
			if (m->nseg < FU_SEGMENTS)
				m->segs[m->nseg] = (struct fu_segment){ s, k0, n0, n };
			m->nseg++;
			n0 = n;
			int k2;
			const struct fu_stack *s2 = fu_entry(t, fu_alt_find(s, k + 1, ra), ra, sp, fp,
							     gen, slot, &k2);
			if (!s2)
				s2 = fu_entry(t, t->branch[fu_branch_slot(si, k + 1, ra)], ra, sp, fp,
					      gen, slot, &k2);
			if (s2) {
				__builtin_prefetch(s2->alt);
				s = s2;
				base = s->base;
				sn = s->n;
				k = k0 = k2;
				if (n >= max)
					break;
				continue;
			}
			/* Unwound from here on, not probed again: this walk's own frames make a stack
			 * the next walk finds whole through the branch (probing again could piece it
			 * together from stacks that each differ a little further on). */
			if (m->nbranch < FU_BRANCHES)
				m->branches[m->nbranch++] = (struct fu_branch){ si, k + 1, ra, n };
			goes_on = true;
			break;
		}
		if (++k == sn) {  /* remembered open: goes on from f[n] */
			goes_on = true;
			break;
		}
		if (n >= max)
			break;
	}
	if (n > n0) {
		if (!w->stopped)
			sp = s->base + s->f[k0 + (n - n0)].sp;
		if (m->nseg < FU_SEGMENTS)
			m->segs[m->nseg] = (struct fu_segment){ s, k0, n0, n };
		m->nseg++;
	}
	m->frames += (uint64_t)(n - nh);
	w->n = n;
	w->ra = ra;
	w->sp = sp;
	w->fp = fp;
	return goes_on;
}

/* A walk in progress: what fu_walk's steps share (kept in registers: the helpers are inlined). */
struct fu_walk_state {
	struct fu_thread *t;
	uintptr_t sp0, hi;
	uint64_t gen;
	const struct fu_memo *last;   /* the thread's last stack: last[j] is the frame expected next */
	struct fu_memo *next;         /* this walk's frames, for the next walk */
	int nlast, j;
	int missed;                   /* nonzero: the frame before this one was not in last[] */
	bool same;                    /* every frame so far was last[n]: next[] not written */
	bool retried;                 /* the walk started again once (module set changed) */
	bool recording;               /* this walk is recorded in slot */
	struct fu_stack *slot;        /* the stack memo's slot for this walk; NULL: no memo */
};

/* (Re)start w for a walk from sp0 (again after a flush noticed on the way). */
static inline __attribute__((always_inline)) void fu_walk_begin(struct fu_walk_state *w)
{
	struct fu_thread *t = w->t;
	w->gen = atomic_load_explicit(&fu.gen, memory_order_acquire);
	w->last = t->memo[t->cur];
	w->next = t->memo[!t->cur];
	w->nlast = t->gen == w->gen ? t->nmemo : 0;
	w->j = 0;
	w->missed = 0;
	w->same = true;
	w->slot = t->stacks_memo && w->hi - w->sp0 <= UINT32_MAX &&
		  !atomic_load_explicit(&fu.no_stack_memo, memory_order_relaxed) ?
		  &t->stacks_memo[t->next_stack] : NULL;
	w->recording = w->slot && !t->pause;
}

/* The rule of frame n (return address ra): from the thread's last stack when the frame is the
 * one expected there, else from the cache (or the CFI). Returns true when the walk must start
 * again (the module set changed under it). */
static inline __attribute__((always_inline)) bool fu_rule_of(struct fu_walk_state *w, uintptr_t ra,
							     int n, struct fu_rule *r)
{
	if (__builtin_expect(w->j < w->nlast && w->last[w->j].ra == ra, 1)) {
		*r = w->last[w->j++].rule;
		if (__builtin_expect(!w->same, 0) && n < FU_MEMO)
			w->next[n] = w->last[w->j - 1];
		return false;
	}
	uint32_t word = fu_lookup(ra);
	if (__builtin_expect(word == UINT32_MAX, 0)) {
		bool flushed = false;
		word = fu_miss(ra, &flushed);
		if (flushed && !w->retried) {
			w->retried = true;
			return true;
		}
	}
	*r = fu_unpack(word);
	/* One frame that differs: the last stack goes on after it. Two in a row: look for this one
	 * around (frames inserted or removed). */
	w->j = w->missed ? fu_realign(w->last, w->nlast, w->j, ra) : w->j + 1;
	w->missed = 2;
	if (w->same) {  /* frames 0..n-1 were last[0..n-1] */
		w->same = false;
		memcpy(w->next, w->last, (size_t)(n < FU_MEMO ? n : FU_MEMO) * sizeof(*w->next));
	}
	if (n < FU_MEMO)
		w->next[n] = (struct fu_memo){ ra, *r };
	return false;
}

enum fu_step_end {
	FU_ON,          /* the caller's frame is in (ra, sp, fp) */
	FU_END,         /* the stack ends here (a rule that stops, a zero return address) */
	FU_RESTART,     /* a module appeared where an address had none: walk again */
	FU_NOT_MODELLED,/* libunwind unwinds the stack (fu.unsupported) */
	FU_INVALID,     /* a step failed validation: libunwind too (fu.invalid) */
};

/* One step by rule r from the state (*ra, *sp, *fp) to the caller's; f: the frame's record in
 * the stack memo's slot, NULL when not recorded. CFA above the SP, within the stack; the loads
 * within [sp, hi). */
static inline __attribute__((always_inline)) enum fu_step_end
fu_step(struct fu_walk_state *w, struct fu_rule r, struct fu_sframe *f, uintptr_t *ra,
	uintptr_t *sp, uintptr_t *fp)
{
	intptr_t cfa_off = r.cfa_off, fp_off = r.fp_off, ra_off = r.ra_off;
	uintptr_t cfa;
	if (r.kind == FU_CFA_RSP) {
		cfa = *sp + (uintptr_t)cfa_off;
	} else if (r.kind == FU_CFA_RBP) {
		cfa = *fp + (uintptr_t)cfa_off;
	} else if (r.kind == FU_STOP) {
		if (f)
			f->flags |= FU_SF_STOP;
		return FU_END;
	} else if (r.kind == FU_NOMOD && !w->retried && fu_recheck_modules()) {
		w->retried = true;
		return FU_RESTART;
	} else {
		return FU_NOT_MODELLED;
	}
	uintptr_t ra_at = cfa + (uintptr_t)ra_off, hi = w->hi;
	if (__builtin_expect(cfa <= *sp || cfa > hi || ra_at < *sp || ra_at > hi - 8, 0))
		return FU_INVALID;
	if (fp_off) {
		uintptr_t fp_at = cfa + (uintptr_t)fp_off;
		if (__builtin_expect(fp_at < *sp || fp_at > hi - 8, 0))
			return FU_INVALID;
		*fp = *(const uintptr_t *)fp_at;
		if (f) {
			f->fp_off = (int16_t)fp_off;
			f->flags |= FU_SF_RESTORE;
		}
	}
	*ra = *(const uintptr_t *)ra_at;
	*sp = cfa;
	if (f)
		f->ra_off = (int8_t)ra_off;
	return *ra ? FU_ON : FU_END;
}

/* Whether the walk's frames 0..n1 of its last segment are exactly that segment's stack's
 * f[0..n1): it followed one stack from frame 0 (the root), then stacks each recorded by a walk
 * that took its frames up to there from the one before (has_parent, and that stack's version
 * unchanged since), each entered at its own frame index. Reads only the headers fu_entry read. */
static bool fu_chain(const struct fu_thread *t, const struct fu_memo_use *m)
{
	if (m->nseg <= 0 || m->nseg > FU_SEGMENTS || m->segs[0].n0 != 0 || m->segs[0].k0 != 0)
		return false;
	for (int g = 1; g < m->nseg; g++) {
		const struct fu_segment *a = &m->segs[g - 1], *b = &m->segs[g];
		const struct fu_stack *s = b->s;
		if (b->k0 != b->n0 || a->n1 != b->n0 || !s->has_parent || s->parent_n != b->n0 ||
		    &t->stacks_memo[s->parent] != a->s || s->parent_version != a->s->version)
			return false;
	}
	return true;
}

/* The end of a walk of n frames that stopped in state (ra, sp, fp) (stopped: its last rule
 * stopped): what the stack memo keeps of it, whether recording pays, the thread's last stack.
 * hit: the walk met a remembered stack; m: what it took from the memo. */
static void fu_walk_keep(struct fu_walk_state *w, int n, uintptr_t ra, uintptr_t sp, uintptr_t fp,
			 bool stopped, bool hit, const struct fu_memo_use *m)
{
	struct fu_thread *t = w->t;
	struct fu_stack *slot = w->slot;
	/* Kept: a stack with frames unwound the usual way (a stack met from its middle on, a new
	 * one) or one that branched off a remembered stack where no other had; not one made
	 * entirely of remembered frames along known branches (the same stack again), which would
	 * only push out the stacks it came from. */
	if (slot && w->recording && ((uint64_t)n > m->frames || m->nbranch) &&
	    n <= FU_STACK_FRAMES && m->nseg <= FU_SEGMENTS) {
		if (!stopped) {  /* the state after the last frame: where a later walk goes on */
			slot->f[n] = (struct fu_sframe){ .ra = ra, .sp = (uint32_t)(sp - w->sp0) };
			slot->fp[n] = fp;
		}
		slot->base = w->sp0;
		/* the frames taken from the memo were those of one chain (fu_chain): the stack
		 * keeps where they came from, so that a later walk's token needs no compare */
		slot->has_parent = m->nseg > 0 && fu_chain(t, m);
		if (slot->has_parent) {
			const struct fu_segment *sg = &m->segs[m->nseg - 1];
			slot->parent = (uint8_t)(sg->s - t->stacks_memo);
			slot->parent_n = (uint8_t)sg->n1;
			slot->parent_version = sg->s->version;
		}
		fu_fill_segments(slot, n, stopped, m->segs, m->nseg);
		fu_remember(t, slot, n, stopped, w->gen, m->branches, m->nbranch);
	}
	if (slot) {
		if (t->pause)
			t->pause--;
		t->window_good += m->frames * 2 >= (uint64_t)n;
		if (++t->window_walks == FU_MEMO_WINDOW) {
			if (t->window_good < FU_MEMO_WINDOW / 2 && !t->pause &&
			    t->remembered >= FU_STACKS) {
				t->pause = FU_MEMO_PAUSE;
				fu_count(&t->memo_pauses, 1);
			}
			t->window_walks = t->window_good = 0;
		}
	}
	if (!w->same && !hit) {
		t->cur = !t->cur;
		t->nmemo = n < FU_MEMO ? n : FU_MEMO;
		t->gen = w->gen;
	}
	if (hit) {
		fu_count(&t->memo_hits, 1);
		fu_count(&t->memo_frames, m->frames);
		fu_count(&t->memo_diffs, m->diffs);
	}
	fu_count(&t->frames, (uint64_t)n);
}

/* The token of a walk of n frames (pcs): nonzero when they are exactly the first n of a
 * remembered stack (the last one it followed, to its end, and the frames before agree), so the
 * same token means the same frames while that stack is kept (its version changes when its slot
 * is reused). */
static uint64_t fu_walk_token(struct fu_thread *t, const uintptr_t *pcs, int n,
			      const struct fu_memo_use *m)
{
	if (m->nseg <= 0 || m->nseg > FU_SEGMENTS || (uint64_t)n != m->frames)
		return 0;
	const struct fu_segment *sg = &m->segs[m->nseg - 1];
	const struct fu_stack *s = sg->s;
	if (sg->n1 != n || sg->k0 != sg->n0)
		return 0;
	if (fu_chain(t, m))    /* else compared: s's frames before the segment were not read */
		fu_count(&t->memo_chained, 1);
	else
		for (int i = 0; i < sg->n0; i++)
			if (pcs[i] != s->f[i].ra)
				return 0;
	return (uint64_t)s->version << 16 | (uint64_t)(s - t->stacks_memo) << 8 | (uint64_t)n;
}

/* fu_backtrace (below, in assembly) jumps here with the caller's return address, stack pointer
 * (after the return) and frame pointer. */
FU_HIDDEN int fu_walk(uintptr_t *pcs, int max, uintptr_t ra0, uintptr_t sp0, uintptr_t fp0,
		      uint64_t *token);

FU_HIDDEN int fu_walk(uintptr_t *pcs, int max, uintptr_t ra0, uintptr_t sp0, uintptr_t fp0,
		      uint64_t *token)
{
	if (token)
		*token = 0;
	struct fu_walk_state w = { .t = fu_self, .sp0 = sp0 };
	if (__builtin_expect(!w.t, 0) && !(w.t = fu_thread_init()))
		return fu_fallback(pcs, max, ra0, &fu.off_stack);
	struct fu_thread *t = w.t;
	fu_count(&t->stacks, 1);
	w.hi = t->hi;
	if (sp0 < t->lo || sp0 >= w.hi)
		return fu_fallback(pcs, max, ra0, &fu.off_stack);
restart:
	fu_walk_begin(&w);
	/* probing looks for a remembered state until one is found */
	bool probing = w.slot != NULL, hit = false, stopped = false;
	struct fu_memo_use m;
	m.frames = m.diffs = 0;
	m.nseg = m.nbranch = 0;
	uintptr_t ra = ra0, sp = sp0, fp = fp0;
	int n = 0;
	while (n < max) {
		if (ra >> 47)  /* not a user-space address (0 ends the stack: libunwind checks it) */
			return fu_fallback(pcs, max, ra0, &fu.invalid);
		if (probing) {
			int k;
			const struct fu_stack *s = fu_entry(t, t->probe[fu_probe_slot(ra, sp)], ra, sp,
							    fp, w.gen, w.slot, &k);
			if (__builtin_expect(s != NULL, 1)) {
				hit = true;
				probing = false;
				struct fu_state st = { .n = n, .ra = ra, .sp = sp, .fp = fp };
				bool goes_on = fu_follow(t, s, k, w.gen, w.slot, pcs, max, &st, &m);
				n = st.n;
				ra = st.ra;
				sp = st.sp;
				fp = st.fp;
				stopped = st.stopped;
				if (!goes_on || !ra)
					break;
				continue;
			}
		}
		struct fu_rule r;
		if (fu_rule_of(&w, ra, n, &r))
			goto restart;
		struct fu_sframe *f = NULL;
		if (w.recording && n < FU_STACK_FRAMES) {
			f = &w.slot->f[n];
			*f = (struct fu_sframe){ .ra = ra, .sp = (uint32_t)(sp - sp0),
						 .flags = r.kind == FU_CFA_RBP ? FU_SF_USES_FP : 0 };
			w.slot->fp[n] = fp;
		}
		pcs[n++] = ra;
		w.missed >>= 1;
		enum fu_step_end e = fu_step(&w, r, f, &ra, &sp, &fp);
		if (__builtin_expect(e == FU_ON, 1))
			continue;
		if (e == FU_END) {
			stopped = r.kind == FU_STOP;
			break;
		}
		if (e == FU_RESTART)
			goto restart;
		return fu_fallback(pcs, max, ra0, e == FU_INVALID ? &fu.invalid : &fu.unsupported);
	}
	fu_walk_keep(&w, n, ra, sp, fp, stopped, hit, &m);
	if (token)
		*token = fu_walk_token(t, pcs, n, &m);
	return n;
}

/* int fu_backtrace(uintptr_t *pcs, int max) and fu_backtrace_token(pcs, max, token): the
 * caller's return address, its stack pointer after the return and its RBP (untouched so far) go
 * to fu_walk, which returns to the caller. */
__asm__(".text\n"
	".globl fu_backtrace\n"
	".hidden fu_backtrace\n"
	".type fu_backtrace, @function\n"
	".p2align 4\n"
	"fu_backtrace:\n"
	".cfi_startproc\n"
	"	movq (%rsp), %rdx\n"
	"	leaq 8(%rsp), %rcx\n"
	"	movq %rbp, %r8\n"
	"	xorl %r9d, %r9d\n"
	"	jmp fu_walk\n"
	".cfi_endproc\n"
	".size fu_backtrace, .-fu_backtrace\n"
	".globl fu_backtrace_token\n"
	".hidden fu_backtrace_token\n"
	".type fu_backtrace_token, @function\n"
	".p2align 4\n"
	"fu_backtrace_token:\n"
	".cfi_startproc\n"
	"	movq %rdx, %r9\n"
	"	movq (%rsp), %rdx\n"
	"	leaq 8(%rsp), %rcx\n"
	"	movq %rbp, %r8\n"
	"	jmp fu_walk\n"
	".cfi_endproc\n"
	".size fu_backtrace_token, .-fu_backtrace_token\n");

void *fu_token_data(uint64_t token)
{
	struct fu_thread *t = fu_self;
	if (!token || !t || !t->stacks_memo)
		return NULL;
	return t->stacks_memo[token >> 8 & 0xff].user;
}

struct fu_stats fu_stats(void)
{
	struct fu_stats s = {
		.fallbacks = atomic_load(&fu.fallbacks), .unsupported = atomic_load(&fu.unsupported),
		.invalid = atomic_load(&fu.invalid), .off_stack = atomic_load(&fu.off_stack),
		.misses = atomic_load(&fu.misses), .flushes = atomic_load(&fu.flushes),
	};
	pthread_mutex_lock(&fu.lock);
	for (const struct fu_thread *t = fu.threads; t; t = t->next) {
		s.stacks += atomic_load_explicit(&t->stacks, memory_order_relaxed);
		s.frames += atomic_load_explicit(&t->frames, memory_order_relaxed);
		s.memo_hits += atomic_load_explicit(&t->memo_hits, memory_order_relaxed);
		s.memo_frames += atomic_load_explicit(&t->memo_frames, memory_order_relaxed);
		s.memo_diffs += atomic_load_explicit(&t->memo_diffs, memory_order_relaxed);
		s.memo_pauses += atomic_load_explicit(&t->memo_pauses, memory_order_relaxed);
		s.memo_chained += atomic_load_explicit(&t->memo_chained, memory_order_relaxed);
	}
	pthread_mutex_unlock(&fu.lock);
	return s;
}

int fu_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
	const struct fu_thread *t = fu_self;
	if (!t || !t->hi)
		return -1;
	*lo = t->lo;
	*hi = t->hi;
	return 0;
}

#else  /* not x86-64 Linux: libunwind, with the same convention and counters */

static _Atomic uint64_t fu_nstacks;

/* The caller's return addresses from libunwind: ra0 is the return address into the caller of
 * the public entry (frames before it, at most two, are libunwind's and ours). */
static int fu_libunwind(uintptr_t *pcs, int max, uintptr_t ra0)
{
	void *buf[256];
	int n = unw_backtrace(buf, max + 3 < 256 ? max + 3 : 256), i = 0, k = 0;
	atomic_fetch_add_explicit(&fu_nstacks, 1, memory_order_relaxed);
	while (i < n && i < 3 && (uintptr_t)buf[i] != ra0)
		i++;
	for (; i < n && k < max; i++)
		pcs[k++] = (uintptr_t)buf[i];
	return k;
}

int __attribute__((noinline)) fu_backtrace(uintptr_t *pcs, int max)
{
	return fu_libunwind(pcs, max, (uintptr_t)__builtin_return_address(0));
}

void *fu_token_data(uint64_t token)
{
	(void)token;
	return NULL;
}

/* No memo here: the token is always 0 (the caller hashes the stack). */
int __attribute__((noinline)) fu_backtrace_token(uintptr_t *pcs, int max, uint64_t *token)
{
	*token = 0;
	return fu_libunwind(pcs, max, (uintptr_t)__builtin_return_address(0));
}

struct fu_stats fu_stats(void)
{
	uint64_t n = atomic_load(&fu_nstacks);
	return (struct fu_stats){ .stacks = n, .fallbacks = n, .unsupported = n };
}

void fu_flush(void)
{
}

void fu_set_stack_memo(int on)
{
	(void)on;
}

int fu_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
	(void)lo, (void)hi;
	return -1;
}
#endif
