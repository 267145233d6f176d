/* pywalk_test.c: the CPython frame walk (pywalk.h) over synthetic frames in this process'
 * memory, read through a read function that counts and can fail: 3.11's entry frames, 3.12's
 * shims, one activation at a time, a generator that yielded, and the bounds. */
#include "base/pywalk.h"
#include "base/unit.h"

#include <errno.h>
#include <string.h>

/* A frame of the tests' own layout: code at 0, previous at 8, instr at 16, owner at 24, is_entry
 * at 25 (3.11) */
struct pywalk_test_frame {
	uint64_t code, previous, instr;
	uint8_t owner, is_entry;
	uint8_t pad[6];
};

static const struct pywalk_layout pywalk_test_311 = {
	.frame_code = 0, .frame_previous = 8, .frame_instr = 16, .frame_is_entry = 25,
	.frame_owner = 24, .owner_generator = 1, .frame_read = 26,
};
static const struct pywalk_layout pywalk_test_312 = {
	.frame_code = 0, .frame_previous = 8, .frame_instr = 16, .frame_owner = 24,
	.owner_generator = 1, .owner_cstack = 3, .frame_read = 25,
};

struct pywalk_test_reader {
	int reads;
	uint64_t fail_at;               /* an address whose read fails (0: none) */
};

static bool pywalk_test_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct pywalk_test_reader *r = arg;

	r->reads++;
	if (addr == r->fail_at)
		return false;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return true;
}

static uint64_t pywalk_test_addr(const struct pywalk_test_frame *f)
{
	return (uint64_t)(uintptr_t)f;
}

/* A walker of layout L over the test frames through r, into out[0..max), passing at most depth
 * frames: every test's set-up. */
static struct pywalk pywalk_test_walker(const struct pywalk_layout *L, struct pywalk_test_reader *r,
					struct pywalk_frame *out, int max, int depth)
{
	return (struct pywalk){ .L = L, .read = pywalk_test_read, .arg = r, .out = out, .max = max,
				.max_depth = depth };
}

/* w again, empty, to stop at the end of the first activation. */
static struct pywalk pywalk_test_one_activation(const struct pywalk *w)
{
	struct pywalk one = *w;
	one.n = 0;
	one.one_activation = true;
	return one;
}

UNIT_TEST(pywalk_frame_read_covers_every_field)
{
	UNIT_ASSERT_EQ_INT(pywalk_frame_read(&pywalk_test_311), 26);
	UNIT_ASSERT_EQ_INT(pywalk_frame_read(&pywalk_test_312), 25);
}

UNIT_TEST(pywalk_311_runs_end_at_entry_frames)
{
	/* f0 <- f1 (entry) | f2 <- f3 (entry): two activations, innermost first */
	struct pywalk_test_frame f[4] = { 0 };
	for (int i = 0; i < 4; i++) {
		f[i].code = 0x1000 + 0x100 * (uint64_t)i;
		f[i].instr = f[i].code + 0x40;
		f[i].previous = i < 3 ? pywalk_test_addr(&f[i + 1]) : 0;
	}
	f[1].is_entry = f[3].is_entry = 1;
	struct pywalk_test_reader r = { 0 };
	struct pywalk_frame out[8];
	struct pywalk w = pywalk_test_walker(&pywalk_test_311, &r, out, 8, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_CHAIN_END);
	UNIT_ASSERT_EQ_INT(w.n, 4);
	UNIT_ASSERT_EQ_INT(r.reads, 4);
	UNIT_ASSERT(out[0].code == 0x1000 && out[0].instr == 0x1040 && out[3].code == 0x1300);
	UNIT_ASSERT(!(out[0].flags & PYWALK_ENTRY) && (out[1].flags & PYWALK_ENTRY) &&
		    (out[3].flags & PYWALK_ENTRY));
	/* one activation: stops at f1, gives what it links to */
	struct pywalk one = pywalk_test_one_activation(&w);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&one, pywalk_test_addr(&f[0])), PYWALK_ACT_END);
	UNIT_ASSERT_EQ_INT(one.n, 2);
	UNIT_ASSERT(one.entry_prev == pywalk_test_addr(&f[2]) && one.entry_at == pywalk_test_addr(&f[1]));
}

UNIT_TEST(pywalk_312_shims_end_runs)
{
	/* f0 <- shim s0 <- shim s1 (an activation showing no frame) <- f1 <- shim s2 */
	struct pywalk_test_frame f0 = { .code = 0x2000 }, f1 = { .code = 0x2100 };
	struct pywalk_test_frame s0 = { .owner = 3 }, s1 = { .owner = 3 }, s2 = { .owner = 3 };
	f0.previous = pywalk_test_addr(&s0);
	s0.previous = pywalk_test_addr(&s1);
	s1.previous = pywalk_test_addr(&f1);
	f1.previous = pywalk_test_addr(&s2);
	struct pywalk_test_reader r = { 0 };
	struct pywalk_frame out[8];
	struct pywalk w = pywalk_test_walker(&pywalk_test_312, &r, out, 8, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f0)), PYWALK_CHAIN_END);
	UNIT_ASSERT_EQ_INT(w.n, 3);
	UNIT_ASSERT(out[0].code == 0x2000 && (out[0].flags & PYWALK_ENTRY));
	UNIT_ASSERT(out[1].code == 0 && (out[1].flags & PYWALK_ENTRY)); /* s1's empty run */
	UNIT_ASSERT(out[2].code == 0x2100 && (out[2].flags & PYWALK_ENTRY));
	struct pywalk one = pywalk_test_one_activation(&w);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&one, pywalk_test_addr(&f0)), PYWALK_ACT_END);
	UNIT_ASSERT_EQ_INT(one.n, 1);
	UNIT_ASSERT(one.entry_at == pywalk_test_addr(&s0) && one.entry_prev == pywalk_test_addr(&s1));
}

/* A shim read while its activation was being entered, its owner byte not stored yet, runs the
 * trampoline all the same: with L.trampoline known it ends the run; without, it is taken as a
 * frame (the two runs joined: what the trampoline check prevents). shim_code reports what the
 * first shim known by its owner runs. */
UNIT_TEST(pywalk_trampoline_frame_is_a_shim)
{
	struct pywalk_test_frame f0 = { .code = 0x2000 }, f1 = { .code = 0x2100 };
	struct pywalk_test_frame torn = { .code = 0x9900 }, s1 = { .code = 0x9900, .owner = 3 };
	f0.previous = pywalk_test_addr(&torn);
	torn.previous = pywalk_test_addr(&f1);
	f1.previous = pywalk_test_addr(&s1);
	struct pywalk_layout L = pywalk_test_312;
	struct pywalk_test_reader r = { 0 };
	struct pywalk_frame out[8];
	struct pywalk w = pywalk_test_walker(&L, &r, out, 8, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f0)), PYWALK_CHAIN_END);
	UNIT_ASSERT_EQ_INT(w.n, 3); /* unknown: the torn shim shown as a frame */
	UNIT_ASSERT(out[1].code == 0x9900 && w.shim_code == 0x9900);
	L.trampoline = w.shim_code;
	w = pywalk_test_walker(&L, &r, out, 8, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f0)), PYWALK_CHAIN_END);
	UNIT_ASSERT_EQ_INT(w.n, 2);
	UNIT_ASSERT(out[0].code == 0x2000 && (out[0].flags & PYWALK_ENTRY));
	UNIT_ASSERT(out[1].code == 0x2100 && (out[1].flags & PYWALK_ENTRY));
	struct pywalk one = pywalk_test_one_activation(&w);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&one, pywalk_test_addr(&f0)), PYWALK_ACT_END);
	UNIT_ASSERT(one.n == 1 && one.entry_at == pywalk_test_addr(&torn) &&
		    one.entry_prev == pywalk_test_addr(&f1));
}

/* 3.12+: owners owner_cstack and the one after (3.14's INTERPRETER and CSTACK) are shims; a
 * higher byte is no frame's (a shim's C stack reused since, read late): the walk is broken,
 * where taking it as a shim would have ended the chain there. */
UNIT_TEST(pywalk_owner_past_the_shims_is_no_frame)
{
	struct pywalk_test_frame f0 = { .code = 0x2000 }, f1 = { .code = 0x2100 };
	struct pywalk_test_frame s0 = { .owner = 4 }, s1 = { .owner = 3 };
	f0.previous = pywalk_test_addr(&s0);
	s0.previous = pywalk_test_addr(&f1);
	f1.previous = pywalk_test_addr(&s1);
	struct pywalk_test_reader r = { 0 };
	struct pywalk_frame out[8];
	struct pywalk w = pywalk_test_walker(&pywalk_test_312, &r, out, 8, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f0)), PYWALK_CHAIN_END);
	UNIT_ASSERT(w.n == 2 && w.nshims == 2);
	s0.owner = 239;
	s0.previous = 0;
	w = pywalk_test_walker(&pywalk_test_312, &r, out, 8, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f0)), PYWALK_BROKEN);
	UNIT_ASSERT(w.n == 1 && w.nshims == 0);
	UNIT_ASSERT(!pywalk_is_shim(&pywalk_test_312, 5) && pywalk_owner_bad(&pywalk_test_312, 5));
	UNIT_ASSERT(!pywalk_owner_bad(&pywalk_test_311, 239)); /* 3.11: no owner check */
}

UNIT_TEST(pywalk_generator_that_yielded_ends_its_activation)
{
	struct pywalk_test_frame g = { .code = 0x3000, .owner = 1 };
	struct pywalk_test_reader r = { 0 };
	struct pywalk_frame out[4];
	struct pywalk w = pywalk_test_walker(&pywalk_test_312, &r, out, 4, 4);
	w.one_activation = true;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&g)), PYWALK_ACT_END);
	UNIT_ASSERT(w.n == 1 && (out[0].flags & PYWALK_GENERATOR) && w.entry_prev == 0);
	/* a whole walk ending at it gives its address, where its caller is looked for */
	struct pywalk_test_frame f = { .code = 0x3100, .previous = pywalk_test_addr(&g) };
	w = pywalk_test_walker(&pywalk_test_312, &r, out, 4, 4);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f)), PYWALK_CHAIN_END);
	UNIT_ASSERT(w.n == 2 && (out[1].flags & PYWALK_GENERATOR) && !w.nshims);
	UNIT_ASSERT(w.last == pywalk_test_addr(&g));
	/* not a generator: the chain just ends, no activation end */
	g.owner = 0;
	w.n = 0;
	w.one_activation = true;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&g)), PYWALK_CHAIN_END);
}

static enum pywalk_check pywalk_test_check(void *arg, uint64_t addr, uint8_t *fb, bool in_run)
{
	(void)arg, (void)addr;
	return fb[0] == 0x66 ? PYWALK_FAIL : fb[0] == 0x77 && in_run ? PYWALK_STOP_UNKNOWN : PYWALK_TAKE;
}

UNIT_TEST(pywalk_bounds_failures_and_check)
{
	struct pywalk_test_frame f[3] = { { .code = 0x4000 }, { .code = 0x4100 }, { .code = 0x4200 } };
	f[0].previous = pywalk_test_addr(&f[1]);
	f[1].previous = pywalk_test_addr(&f[2]);
	struct pywalk_test_reader r = { 0 };
	struct pywalk_frame out[4];
	struct pywalk w = pywalk_test_walker(&pywalk_test_311, &r, out, 2, 8);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_TRUNCATED);
	UNIT_ASSERT_EQ_INT(w.n, 2);
	w.n = 0, w.max = 4, w.max_depth = 1;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_TRUNCATED);
	w.n = 0, w.max_depth = 8, r.fail_at = pywalk_test_addr(&f[2]);
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_BROKEN);
	UNIT_ASSERT_EQ_INT(w.n, 2); /* the frames before stay */
	r.fail_at = 0;
	w.n = 0;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0]) + 4), PYWALK_BROKEN); /* misaligned */
	f[1].code = 0x4101; /* not a code object's address */
	w.n = 0;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_BROKEN);
	f[1].code = 0x4100;
	/* the check: f1 (0x00 low byte) taken; a frame whose first byte says stop, in a run */
	w.n = 0;
	w.check = pywalk_test_check;
	w.one_activation = true;
	f[1].code = 0x4177;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_ACT_END);
	UNIT_ASSERT(w.n == 1 && w.entry_prev == PYWALK_PREV_UNKNOWN &&
		    w.entry_at == pywalk_test_addr(&f[1]));
	f[1].code = 0x4166;
	w.n = 0;
	UNIT_ASSERT_EQ_INT(pywalk_walk(&w, pywalk_test_addr(&f[0])), PYWALK_BROKEN);
}

/* _Py_DebugOffsets' header, as the recorder and the library check it: the cookie, the binary's
 * minor version, free-threaded builds refused whatever their version. */
UNIT_TEST(pywalk_debug_header_checks)
{
	uint8_t d[PYWALK_DEBUG_HEADER] = { 0 };
	uint64_t v = 0x030e0af0, ft = 0;
	memcpy(d, "xdebugpy", 8);
	memcpy(d + 8, &v, 8);
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(d, sizeof(d), 0x030e00f0), 0);
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(d, sizeof(d) - 1, 0x030e00f0), -EINVAL);
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(NULL, sizeof(d), 0x030e00f0), -EINVAL);
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(d, sizeof(d), 0x030d00f0), -EINVAL);
	ft = 1;
	memcpy(d + 16, &ft, 8);
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(d, sizeof(d), 0x030e00f0), -ENOTSUP);
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(d, sizeof(d), 0x030d00f0), -ENOTSUP);
	d[0] = 'y';
	UNIT_ASSERT_EQ_INT(pywalk_debug_header(d, sizeof(d), 0x030e00f0), -EINVAL);
}
