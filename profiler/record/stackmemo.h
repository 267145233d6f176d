/* stackmemo.h: the recorder's memo of stacks the kernel walked (`--mode bpf`, `-g fp`). A
 * sample whose process (and the generation of its mappings), unwind flags, frame-pointer marks
 * and return addresses are those of an earlier sample gets that sample's stack id and flags
 * without being unwound, merged with Python frames or interned again: on a training loop
 * nearly every sample repeats an earlier stack (deepwork: 388 stacks in 41,730 samples).
 * Only stacks that nothing else changes are remembered (the caller's rule: no Python frames,
 * not off-CPU). Bounded: a fixed table of slots (a new key takes its slot's place) and an
 * arena of keys emptied, with the table, when full. */
#ifndef CSAMPLER_RECORD_STACKMEMO_H
#define CSAMPLER_RECORD_STACKMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest key remembered, in 64-bit words: 5 words of header, the kernel frames and the
 * user frames (bpf: 127 + 255 at most). Longer stacks are not remembered. */
#define STACKMEMO_MAX_WORDS 512

struct stackmemo_key {
	uint64_t hash;
	uint32_t n;                        /* words in w */
	uint64_t w[STACKMEMO_MAX_WORDS];
};

struct stackmemo_val {
	uint32_t stack;                    /* the data file's stack id */
	uint32_t flags;                    /* the sample's PROFILE_SAMPLE_* flags */
};

struct stackmemo {
	struct stackmemo_slot *slots;      /* STACKMEMO_SLOTS, allocated at the first put */
	uint64_t *arena;                   /* the keys' words */
	size_t arena_used, arena_cap;
	uint64_t hits, misses, resets;
};

/* The key of a sample into *k: false when it is too long to remember. gen is the generation
 * of the process' mappings (unwind_proc_generation): a key made under another is another key. */
bool stackmemo_key_make(struct stackmemo_key *k, uint32_t pid, uint64_t gen, uint32_t unwind_flags,
			const uint64_t fp_mask[2], const uint64_t *kernel, size_t nkernel,
			const uint64_t *user, size_t nuser);
/* The value remembered under k (compared in full) into *out: true when found. */
bool stackmemo_find(struct stackmemo *m, const struct stackmemo_key *k, struct stackmemo_val *out);
/* Remember v under k, in the place of whatever its slot held. */
void stackmemo_put(struct stackmemo *m, const struct stackmemo_key *k, struct stackmemo_val v);
void stackmemo_free(struct stackmemo *m);

#endif
