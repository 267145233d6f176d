/* cfitable.h: flat unwind tables of one ELF file, for an unwinder that cannot call libdw (the
 * BPF program of `record --mode bpf`). libdw evaluates the file's .eh_frame CFI at each FDE's
 * start (found through .eh_frame_hdr's sorted table) and from one rule change to the next; each
 * range becomes a row with the x86-64 rules such an unwinder can apply: the CFA as rsp or rbp
 * plus an offset, the return address at CFA-8 or undefined (the outermost frame), and rbp
 * unchanged or saved at CFA plus an offset. Anything else (a CFA expression, as in PLT entries)
 * and the space between FDEs becomes a gap row: no rule there. */
#ifndef CSAMPLER_UNWIND_CFITABLE_H
#define CSAMPLER_UNWIND_CFITABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFITABLE_REG_BP 6
#define CFITABLE_REG_SP 7
enum cfitable_flags {
	CFITABLE_BP_SAVED = 1 << 0,  /* the caller's rbp is at CFA + bp_off */
	CFITABLE_END = 1 << 1,       /* the return address is undefined: the outermost frame */
	CFITABLE_GAP = 1 << 2,       /* no rule from here to the next row */
};

struct cfitable_row {
	uint64_t pc;                 /* the file's p_vaddr numbering; valid up to the next row */
	int32_t cfa_off, bp_off;
	uint8_t cfa_reg, flags;
};

/* An executable PT_LOAD segment: an address maps as vaddr = file offset + (vaddr - offset). */
struct cfitable_segment {
	uint64_t vaddr, offset, filesz;
};

struct cfitable {
	struct cfitable_row *rows;   /* sorted by pc */
	size_t nrows;
	struct cfitable_segment *segs;
	size_t nsegs;
	size_t unsupported;          /* FDE ranges that became gap rows (CFA expressions, ...) */
	void *mapped;                /* from the cache: rows point into this mapping of its entry */
	size_t mapped_len;
};

/* Build the table of the ELF file open at fd. Returns 0, or -ENOENT when the file has no
 * .eh_frame_hdr table (no CFI to index: the caller falls back to frame pointers), -errno. */
int cfitable_build(int fd, struct cfitable *t);
/* cfitable_build through the on-disk cache (cfitable_cache.c: $XDG_CACHE_HOME/csampler/cfi-v1,
 * else ~/.cache/csampler/cfi-v1; CSAMPLER_CFI_CACHE=0 turns it off): the rows built by an
 * earlier run for the same file (device, inode, size, mtime), else built and stored. */
int cfitable_build_cached(int fd, struct cfitable *t, bool *from_cache);
/* Whether the cache has an entry for the file open at fd (cfitable_build_cached would read it
 * instead of building). */
bool cfitable_cached(int fd);
void cfitable_free(struct cfitable *t);

/* The load bias of a mapping of the file at start, from file offset pgoff: addresses in it are
 * bias + vaddr. Returns 0, or -ENOENT when pgoff is in no executable segment. */
int cfitable_bias(const struct cfitable *t, uint64_t start, uint64_t pgoff, uint64_t *bias);

#endif
