/* pywalk.c: the one CPython frame chain walk (pywalk.h), for the recorder and the in-target
 * library alike: every read goes through the caller's read function, every step is bounded. */
#include "base/pywalk.h"

#include <errno.h>
#include <string.h>

static uint32_t pywalk_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static uint64_t pywalk_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

uint32_t pywalk_frame_read(const struct pywalk_layout *L)
{
	uint32_t n = pywalk_max(pywalk_max(L->frame_code, L->frame_previous), L->frame_instr) + 8;
	return pywalk_max(n, pywalk_max(L->frame_owner, L->frame_is_entry) + 1);
}

int pywalk_debug_header(const uint8_t *d, size_t n, uint32_t version)
{
	if (!d || n < PYWALK_DEBUG_HEADER || memcmp(d, "xdebugpy", 8))
		return -EINVAL;
	if (pywalk_u64(d, 16))
		return -ENOTSUP;
	return (pywalk_u64(d, 8) >> 16) == (version >> 16) ? 0 : -EINVAL;
}

/* 3.12+: the shim under a run's first frame, previous prev, at addr: it ends the run. Returns
 * whether the walk stops there (one_activation). */
static bool pywalk_shim(struct pywalk *w, uint64_t addr, uint64_t prev, int run_first)
{
	if (w->shims && w->nshims < w->max_shims)
		w->shims[w->nshims] = addr;
	w->nshims++;
	if (w->one_activation) {
		w->entry_prev = prev;
		w->entry_at = addr;
		return true;
	}
	if (w->n > run_first)
		w->out[w->n - 1].flags |= PYWALK_ENTRY;
	else if (w->n < w->max)
		/* no frame shown in this activation: a run of its own */
		w->out[w->n++] = (struct pywalk_frame){ 0, 0, 0, PYWALK_ENTRY, 0 };
	return false;
}

enum pywalk_end pywalk_walk(struct pywalk *w, uint64_t frame)
{
	const struct pywalk_layout *L = w->L;
	uint8_t fb[PYWALK_FRAME_MAX];
	int run_first = w->n;

	if (L->frame_read > sizeof(fb))
		return PYWALK_BROKEN;
	for (int depth = 0; frame; depth++) {
		if (depth >= w->max_depth || w->n >= w->max)
			return PYWALK_TRUNCATED;
		if (frame & 7 || !w->read(w->arg, frame, fb, L->frame_read))
			return PYWALK_BROKEN;
		w->last = frame;
		enum pywalk_check c = w->check ? w->check(w->arg, frame, fb, w->n > run_first)
					       : PYWALK_TAKE;
		if (c == PYWALK_FAIL)
			return PYWALK_BROKEN;
		if (c == PYWALK_STOP_UNKNOWN && w->one_activation) {
			w->entry_prev = PYWALK_PREV_UNKNOWN;
			w->entry_at = frame;
			return PYWALK_ACT_END;
		}
		uint8_t owner = fb[L->frame_owner];
		if (pywalk_owner_bad(L, owner))
			return PYWALK_BROKEN; /* not a frame (any more) */
		uint64_t prev = pywalk_u64(fb, L->frame_previous);
		uint64_t code = pywalk_u64(fb, L->frame_code) & ~(uint64_t)L->code_tag;
		bool shim = pywalk_is_shim(L, owner);
		if (shim && !w->shim_code)
			w->shim_code = code;
		if (shim || (L->trampoline && code == L->trampoline)) {
			if (pywalk_shim(w, frame, prev, run_first))
				return PYWALK_ACT_END;
			run_first = w->n;
			frame = prev;
			continue;
		}
		if (!code || code & 7 || code >= (1ull << 47))
			return PYWALK_BROKEN; /* not a frame (any more) */
		uint8_t flags = owner == L->owner_generator ? PYWALK_GENERATOR : 0;
		if (L->frame_is_entry && fb[L->frame_is_entry])
			flags |= PYWALK_ENTRY;
		w->out[w->n++] = (struct pywalk_frame){ code, pywalk_u64(fb, L->frame_instr), owner,
							flags, 0 };
		if (flags & PYWALK_ENTRY)
			run_first = w->n;
		/* one_activation: a generator that yielded since has no previous frame (3.12+: nor
		 * shim) */
		if (w->one_activation && ((flags & PYWALK_ENTRY) || (!prev && (flags & PYWALK_GENERATOR)))) {
			w->entry_prev = prev;
			w->entry_at = frame;
			return PYWALK_ACT_END;
		}
		frame = prev;
	}
	return PYWALK_CHAIN_END;
}
