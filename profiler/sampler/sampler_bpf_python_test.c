/* sampler_bpf_python_test.c: unit tests of bpf_python_walk, the user-space half of the Python
 * frames the BPF program reads at the sample: hand-made ring records in 3.11's and 3.12's frame
 * layouts (and 3.14's, with its user frames' stack pointers), walked by base/pywalk.c into runs
 * per native activation. */
#include "sampler/backend.h"
#include "sampler/sampler_bpf_shared.h"

#include "base/pywalk.h"
#include "base/unit.h"

#include <errno.h>
#include <string.h>

/* 3.11's _PyInterpreterFrame (python.c's layout table) and 3.12's */
static const struct pywalk_layout L311 = { .frame_code = 32, .frame_previous = 48,
	.frame_instr = 56, .frame_is_entry = 68, .frame_owner = 69, .owner_generator = 1,
	.owner_cstack = 0, .frame_read = 70 };
static const struct pywalk_layout L312 = { .frame_code = 0, .frame_previous = 8,
	.frame_instr = 56, .frame_is_entry = 0, .frame_owner = 70, .owner_generator = 1,
	.owner_cstack = 3, .frame_read = 71 };

/* A record of no user frames and nf frames at addrs[i] (code[i], owner[i], entry[i]), each
 * linked to the next (the last to 0), then nacts activations' current frames. */
struct rec {
	uint8_t b[sizeof(struct csb_sample) + 8 * sizeof(struct csb_pyframe) + 8 * 8];
	size_t size;
};

static struct csb_sample *rec_make(struct rec *x, int nf, const uint64_t *addrs,
				   const uint64_t *code, const uint8_t *owner, const bool *entry,
				   int nacts, const uint64_t *acts)
{
	memset(x, 0, sizeof(*x));
	struct csb_sample *r = (struct csb_sample *)x->b;
	size_t at = offsetof(struct csb_sample, user);
	r->py_state = CSB_PY_END;
	r->npy = (uint32_t)nf;
	r->py_nacts = (uint32_t)nacts;
	r->py_first = addrs[0];
	struct csb_pyframe *f = (struct csb_pyframe *)(x->b + at);
	for (int i = 0; i < nf; i++) {
		uint64_t prev = i + 1 < nf ? addrs[i + 1] : 0;
		f[i] = (struct csb_pyframe){ code[i], code[i] + 0x40, prev |
			(uint64_t)owner[i] << CSB_PYLINK_OWNER_SHIFT | (entry[i] ? CSB_PYLINK_ENTRY : 0),
			0x100 + (uint64_t)i };
	}
	memcpy(x->b + at + (size_t)nf * sizeof(*f), acts, (size_t)nacts * 8);
	x->size = at + (size_t)nf * sizeof(*f) + (size_t)nacts * 8;
	return r;
}

/* 3.11: a callback from C caught being entered: its _PyCFrame is linked to its frame, whose
 * is_entry is not set yet; its run ends there all the same (not taken for the outer
 * activation's), and each frame keeps its code object's fingerprint. */
UNIT_TEST(bpf_python_walk_311_entering)
{
	struct rec x;
	uint64_t addrs[] = { 0x1000, 0x2000, 0x3000 }, code[] = { 0xa000, 0xb000, 0xc000 };
	uint8_t owner[] = { 0, 0, 0 };
	bool entry[] = { false, false, true };
	uint64_t acts[] = { 0x1000, 0x2000 }, fp[CSB_PY_MAX];
	struct pywalk_frame out[CSB_PY_MAX];
	struct csb_sample *r = rec_make(&x, 3, addrs, code, owner, entry, 2, acts);

	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L311, out, fp), 3);
	UNIT_ASSERT(out[0].code == 0xa000 && (out[0].flags & PYWALK_ENTRY));
	UNIT_ASSERT(out[1].code == 0xb000 && !(out[1].flags & PYWALK_ENTRY));
	UNIT_ASSERT(out[2].code == 0xc000 && (out[2].flags & PYWALK_ENTRY));
	UNIT_ASSERT(out[0].instr == 0xa040 && fp[0] == 0x100 && fp[2] == 0x102);
	/* without the _PyCFrames, the frames' own is_entry: one run */
	r = rec_make(&x, 3, addrs, code, owner, entry, 0, acts);
	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L311, out, fp), 3);
	UNIT_ASSERT(!(out[0].flags & PYWALK_ENTRY) && (out[2].flags & PYWALK_ENTRY));
}

/* An activation whose current frame is not in the chain (its _PyCFrame linked, its frame not
 * yet: garbage) is not used; nor a record cut short of its frames. */
UNIT_TEST(bpf_python_walk_refuses)
{
	struct rec x;
	uint64_t addrs[] = { 0x1000, 0x2000 }, code[] = { 0xa000, 0xb000 };
	uint8_t owner[] = { 0, 0 };
	bool entry[] = { false, true };
	uint64_t acts[] = { 0x1000, 0x5000 }, fp[CSB_PY_MAX];
	struct pywalk_frame out[CSB_PY_MAX];
	struct csb_sample *r = rec_make(&x, 2, addrs, code, owner, entry, 2, acts);

	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L311, out, fp), -EAGAIN);
	acts[1] = 0x2000;
	r = rec_make(&x, 2, addrs, code, owner, entry, 2, acts);
	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L311, out, fp), 2);
	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size - 1, &L311, out, fp), -EINVAL);
	r->py_state = CSB_PY_FAULT;
	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L311, out, fp), -EINVAL);
}

/* 3.12: runs end at the shim frames (owned by the C stack), which are not shown. */
UNIT_TEST(bpf_python_walk_312_shims)
{
	struct rec x;
	uint64_t addrs[] = { 0x1000, 0x7f00, 0x2000, 0x7e00 };
	uint64_t code[] = { 0xa000, 0x9000, 0xb000, 0x9000 }, fp[CSB_PY_MAX];
	uint8_t owner[] = { 0, 3, 0, 3 };
	bool entry[] = { false, false, false, false };
	uint64_t acts[] = { 0x1000, 0x2000 };
	struct pywalk_frame out[CSB_PY_MAX];
	struct csb_sample *r = rec_make(&x, 4, addrs, code, owner, entry, 2, acts);

	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L312, out, fp), 2);
	UNIT_ASSERT(out[0].code == 0xa000 && (out[0].flags & PYWALK_ENTRY));
	UNIT_ASSERT(out[1].code == 0xb000 && (out[1].flags & PYWALK_ENTRY));
	UNIT_ASSERT(fp[0] == 0x100 && fp[1] == 0x102);
}

/* 3.12+: a chain that begins with a shim (an activation entered or returning at the sample,
 * with no frame of its own) gives a run of one frame of code 0 whose fp is the shim's address
 * and whose instr the frame it links to, where the recorder looks for the frame it ran. */
UNIT_TEST(bpf_python_walk_312_entry_only_run)
{
	struct rec x;
	uint64_t addrs[] = { 0x7f00, 0x2000, 0x7e00 };
	uint64_t code[] = { 0x9000, 0xb000, 0x9000 }, fp[CSB_PY_MAX];
	uint8_t owner[] = { 3, 0, 3 };
	bool entry[] = { false, false, false };
	uint64_t acts[] = { 0x2000 };
	struct pywalk_frame out[CSB_PY_MAX];
	struct csb_sample *r = rec_make(&x, 3, addrs, code, owner, entry, 1, acts);

	UNIT_ASSERT_EQ_INT(bpf_python_walk(r, x.size, &L312, out, fp), 2);
	UNIT_ASSERT(out[0].code == 0 && (out[0].flags & PYWALK_ENTRY));
	UNIT_ASSERT(fp[0] == 0x7f00 && out[0].instr == 0x2000);
	UNIT_ASSERT(out[1].code == 0xb000 && fp[1] == 0x101);
}

/* 3.14: f_executable tagged (bit 0), shims owned by the interpreter (3) or the C stack (4), and
 * (CSB_USER_SPS) each user frame's sp after the kernel frames: each run's activation is the user
 * frame whose [sp, caller's sp) holds its shim; a shim past the sampled stack places nothing. */
UNIT_TEST(bpf_python_walk_314_acts)
{
	static const struct pywalk_layout L314 = { .frame_code = 0, .frame_previous = 8,
		.frame_instr = 56, .frame_owner = 74, .owner_generator = 1, .owner_cstack = 3,
		.code_tag = 1, .frame_read = 75 };
	enum { NUSER = 4, NPY = 4 };
	uint8_t b[sizeof(struct csb_sample) + NPY * sizeof(struct csb_pyframe) + NUSER * 8];
	uint64_t addrs[NPY] = { 0x1000, 0x7900, 0x2000, 0x7e00 };
	uint64_t code[NPY] = { 0xa001, 0x9001, 0xb001, 0x9001 }, fp[CSB_PY_MAX];
	uint8_t owner[NPY] = { 0, 3, 0, 4 };
	uint64_t sps[NUSER] = { 0x7000, 0x7800, 0x7c00, 0x8000 };
	struct pywalk_frame out[CSB_PY_MAX];

	for (int pass = 0; pass < 2; pass++) {
		memset(b, 0, sizeof(b));
		struct csb_sample *r = (struct csb_sample *)b;
		r->nuser = NUSER;
		r->npy = NPY;
		r->py_state = CSB_PY_END;
		r->py_first = addrs[0];
		r->flags = CSB_USER_SPS;
		size_t at = offsetof(struct csb_sample, user) + NUSER * 8;
		struct csb_pyframe *f = (struct csb_pyframe *)(b + at);
		for (int i = 0; i < NPY; i++)
			f[i] = (struct csb_pyframe){ code[i], (code[i] & ~1ull) + 0x40,
				(i + 1 < NPY ? addrs[i + 1] : 0) |
				(uint64_t)owner[i] << CSB_PYLINK_OWNER_SHIFT, 0x100 + (uint64_t)i };
		size_t at_sps = CSB_KERNEL_AT(NUSER, NPY, 0);
		memcpy(b + at_sps, sps, sizeof(sps));
		size_t size = at_sps + sizeof(sps);
		UNIT_ASSERT_EQ_INT(bpf_python_walk(r, size, &L314, out, fp), 2);
		UNIT_ASSERT(out[0].code == 0xa000 && out[1].code == 0xb000);
		UNIT_ASSERT((out[0].flags & PYWALK_ENTRY) && (out[1].flags & PYWALK_ENTRY));
		if (pass == 0) {
			UNIT_ASSERT_EQ_INT(out[0].act, 2); /* 0x7900 in user frame 1's [0x7800, 0x7c00) */
			UNIT_ASSERT_EQ_INT(out[1].act, 3); /* 0x7e00 in user frame 2's */
			/* without the stack pointers: nothing placed */
			r->flags = 0;
			UNIT_ASSERT_EQ_INT(bpf_python_walk(r, size, &L314, out, fp), 2);
			UNIT_ASSERT(out[0].act == 0 && out[1].act == 0);
			addrs[3] = 0x9000; /* the outer shim past the sampled stack */
		} else {
			UNIT_ASSERT_EQ_INT(out[0].act, 2);
			UNIT_ASSERT_EQ_INT(out[1].act, 0);
		}
	}
}
