/* stackmemo.c: the recorder's memo of kernel-walked stacks (stackmemo.h). Hand-written rather
 * than on base/hash.h's tables: those grow without bound and own no key memory, where this
 * memo must stay a fixed size on `record -a` of a whole machine and keep its keys (a few
 * hundred bytes each) in one arena, compared in full with one memcmp. */
#include "record/stackmemo.h"

#include "base/cs.h"

#include <stdlib.h>
#include <string.h>

#define STACKMEMO_SLOTS (1u << 15)             /* 1 MiB of slots */
#define STACKMEMO_ARENA_MAX ((size_t)1 << 20)  /* 8 MiB of keys, then everything is forgotten */
#define STACKMEMO_HEAD 5                       /* pid and flags, gen, fp marks (2), counts */

struct stackmemo_slot {
	uint64_t hash;
	uint32_t pos, n;                   /* the key's words in the arena; n 0: empty */
	struct stackmemo_val val;
};

bool stackmemo_key_make(struct stackmemo_key *k, uint32_t pid, uint64_t gen, uint32_t unwind_flags,
			const uint64_t fp_mask[2], const uint64_t *kernel, size_t nkernel,
			const uint64_t *user, size_t nuser)
{
	if (nkernel > STACKMEMO_MAX_WORDS - STACKMEMO_HEAD ||
	    nuser > STACKMEMO_MAX_WORDS - STACKMEMO_HEAD - nkernel)
		return false;
	k->w[0] = (uint64_t)pid << 32 | unwind_flags;
	k->w[1] = gen;
	k->w[2] = fp_mask[0];                              /* user frames 0-63 found by fp */
	k->w[3] = fp_mask[1];                              /* 64-127 */
	k->w[4] = (uint64_t)nkernel << 32 | nuser;
	if (nkernel)
		memcpy(k->w + STACKMEMO_HEAD, kernel, nkernel * 8);
	if (nuser)
		memcpy(k->w + STACKMEMO_HEAD + nkernel, user, nuser * 8);
	k->n = (uint32_t)(STACKMEMO_HEAD + nkernel + nuser);
	k->hash = cs_hash_bytes(k->w, (size_t)k->n * 8, 0);
	return true;
}

static struct stackmemo_slot *stackmemo_slot_of(struct stackmemo *m, uint64_t hash)
{
	return &m->slots[hash & (STACKMEMO_SLOTS - 1)];
}

bool stackmemo_find(struct stackmemo *m, const struct stackmemo_key *k, struct stackmemo_val *out)
{
	const struct stackmemo_slot *s = m->slots ? stackmemo_slot_of(m, k->hash) : NULL;
	if (s && s->n == k->n && s->hash == k->hash &&
	    !memcmp(m->arena + s->pos, k->w, (size_t)k->n * 8)) {
		*out = s->val;
		m->hits++;
		return true;
	}
	m->misses++;
	return false;
}

void stackmemo_put(struct stackmemo *m, const struct stackmemo_key *k, struct stackmemo_val v)
{
	if (!m->slots)
		m->slots = cs_calloc(STACKMEMO_SLOTS, sizeof(*m->slots));
	if (m->arena_used + k->n > m->arena_cap) {
		if (m->arena_cap < STACKMEMO_ARENA_MAX) {
			size_t cap = m->arena_cap ? m->arena_cap * 2 : (size_t)1 << 14;
			while (cap < m->arena_used + k->n)
				cap *= 2;
			if (cap > STACKMEMO_ARENA_MAX)
				cap = STACKMEMO_ARENA_MAX;
			m->arena = cs_realloc(m->arena, cap * sizeof(*m->arena));
			m->arena_cap = cap;
		}
		if (m->arena_used + k->n > m->arena_cap) {
			/* full: start again (keys of evicted slots are never reclaimed otherwise) */
			memset(m->slots, 0, STACKMEMO_SLOTS * sizeof(*m->slots));
			m->arena_used = 0;
			m->resets++;
		}
	}
	struct stackmemo_slot *s = stackmemo_slot_of(m, k->hash);
	memcpy(m->arena + m->arena_used, k->w, (size_t)k->n * 8);
	*s = (struct stackmemo_slot){ k->hash, (uint32_t)m->arena_used, k->n, v };
	m->arena_used += k->n;
}

void stackmemo_free(struct stackmemo *m)
{
	free(m->slots);
	free(m->arena);
	*m = (struct stackmemo){ 0 };
}
