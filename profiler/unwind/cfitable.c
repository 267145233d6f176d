/* cfitable.c: flat unwind tables from .eh_frame (cfitable.h). libdw does the CFI evaluation
 * (dwarf_cfi_addrframe, dwarf_frame_cfa, dwarf_frame_register); only the FDE start list is
 * read by hand, from .eh_frame_hdr's binary-search table, because libdw has no call that lists
 * FDEs by address and probing every byte of a large text segment would take seconds. */
#include "unwind/cfitable.h"

#include "base/cs.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CFITABLE_REG_RA 16

static void cfitable_push(struct cfitable *t, size_t *cap, struct cfitable_row row)
{
	/* a row equal in rules to the one before it adds nothing */
	if (t->nrows) {
		struct cfitable_row *p = &t->rows[t->nrows - 1];
		if (p->cfa_reg == row.cfa_reg && p->cfa_off == row.cfa_off && p->bp_off == row.bp_off &&
		    p->flags == row.flags)
			return;
		if (p->pc == row.pc) {
			*p = row;
			return;
		}
	}
	cs_grow(&t->rows, cap, t->nrows + 1, sizeof(*t->rows));
	t->rows[t->nrows++] = row;
}

/* The offset N of a "saved at CFA + N" rule in libdw's form: DW_OP_call_frame_cfa, then
 * nothing, DW_OP_plus_uconst N, or DW_OP_consts N and DW_OP_plus; returns -1 otherwise. */
static int cfa_relative(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (!nops || ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (nops == 1)
		return *off = 0, 0;
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst)
		return *off = (int64_t)ops[1].number, 0;
	if (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus)
		return *off = (int64_t)ops[1].number, 0;
	return -1;
}

/* The row for one frame state, or a gap row when its rules are beyond cfitable_row. */
static struct cfitable_row cfitable_row_of(Dwarf_Frame *frame, uint64_t pc)
{
	struct cfitable_row gap = { .pc = pc, .flags = CFITABLE_GAP }, row = { .pc = pc };
	Dwarf_Op *ops, mem[3];
	size_t nops;
	int64_t off;

	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != CFITABLE_REG_SP && ops[0].number != CFITABLE_REG_BP) ||
	    (int64_t)ops[0].number2 != (int16_t)ops[0].number2)
		return gap;
	row.cfa_reg = (uint8_t)ops[0].number;
	row.cfa_off = (int32_t)ops[0].number2;
	if (dwarf_frame_register(frame, CFITABLE_REG_RA, mem, &ops, &nops))
		return gap;
	if (nops == 0 && ops == mem)
		row.flags |= CFITABLE_END;      /* undefined */
	else if (cfa_relative(ops, nops, &off) || off != -8)
		return gap;
	if (dwarf_frame_register(frame, CFITABLE_REG_BP, mem, &ops, &nops))
		return gap;
	if (nops == 0)
		return row;                      /* same value, or undefined: left as it is */
	if (cfa_relative(ops, nops, &off) || off != (int16_t)off)
		return gap;
	row.flags |= CFITABLE_BP_SAVED;
	row.bp_off = (int32_t)off;
	return row;
}

/* .eh_frame_hdr's table: version 1, then the encodings of eh_frame_ptr, fde_count and the
 * table; the table as GNU ld and lld write it (DW_EH_PE_datarel | DW_EH_PE_sdata4: pairs of
 * int32 relative to the section's address), sorted by start. */
static int cfitable_fde_starts(Elf *elf, uint64_t **out, size_t *n)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || d->d_size < 12)
			return -ENOENT;
		const uint8_t *p = d->d_buf;
		if (p[0] != 1 || p[2] != (DW_EH_PE_udata4) || p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) ||
		    p[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4))
			return -ENOENT;
		uint32_t count;
		memcpy(&count, p + 8, 4);
		if (12 + (uint64_t)count * 8 > d->d_size)
			return -ENOENT;
		*out = cs_calloc(count ? count : 1, sizeof(**out));
		for (uint32_t i = 0; i < count; i++) {
			int32_t rel;
			memcpy(&rel, p + 12 + 8 * (size_t)i, 4);
			(*out)[i] = sh.sh_addr + (int64_t)rel;
		}
		*n = count;
		return 0;
	}
	return -ENOENT;
}

int cfitable_build(int fd, struct cfitable *t)
{
	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Dwarf_CFI *cfi = NULL;
	uint64_t *starts = NULL;
	size_t nstarts = 0, cap = 0, capseg = 0, nph;
	int ret = -ENOENT;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph))
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			cs_grow(&t->segs, &capseg, t->nsegs + 1, sizeof(*t->segs));
			t->segs[t->nsegs++] = (struct cfitable_segment){ ph.p_vaddr, ph.p_offset, ph.p_filesz };
		}
	}
	if (!t->nsegs || (ret = cfitable_fde_starts(elf, &starts, &nstarts)))
		goto out;
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi) {
		ret = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < nstarts; i++) {
		uint64_t pc = starts[i], next = i + 1 < nstarts ? starts[i + 1] : UINT64_MAX;
		while (pc < next) {
			Dwarf_Frame *frame;
			Dwarf_Addr start, end;
			if (dwarf_cfi_addrframe(cfi, pc, &frame))
				break;
			if (dwarf_frame_info(frame, &start, &end, NULL) < 0 || end <= pc) {
				free(frame);
				break;
			}
			struct cfitable_row row = cfitable_row_of(frame, pc);
			t->unsupported += (row.flags & CFITABLE_GAP) != 0;
			cfitable_push(t, &cap, row);
			free(frame);
			pc = end;
		}
		if (pc < next)
			cfitable_push(t, &cap, (struct cfitable_row){ .pc = pc, .flags = CFITABLE_GAP });
	}
	ret = t->nrows ? 0 : -ENOENT;
out:
	free(starts);
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	if (ret)
		cfitable_free(t);
	return ret;
}

void cfitable_free(struct cfitable *t)
{
	if (t->mapped)
		munmap(t->mapped, t->mapped_len);
	else
		free(t->rows);
	free(t->segs);
	memset(t, 0, sizeof(*t));
}

int cfitable_bias(const struct cfitable *t, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	for (size_t i = 0; i < t->nsegs; i++) {
		const struct cfitable_segment *s = &t->segs[i];
		if (pgoff >= (s->offset & ~0xfffull) && pgoff < s->offset + s->filesz) {
			*bias = start - (pgoff + s->vaddr - s->offset);
			return 0;
		}
	}
	return -ENOENT;
}
