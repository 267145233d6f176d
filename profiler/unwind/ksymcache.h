/* ksymcache.h: the kernel image's text symbols kept on disk between recordings, so that a
 * recording need not read /proc/kallsyms (the kernel formats every one of its symbols for
 * that read: 67 ms of system CPU on the 2-vCPU VM, a third of a `record --mode bpf` start-up).
 * Only the symbols in [_stext, _etext) are kept: they are fixed from boot to boot's end. The
 * entry is named by the boot's id (/proc/sys/kernel/random/boot_id) and holds the kernel's
 * release and version; symbols outside that range (modules, BPF programs, ftrace trampolines)
 * come and go, so an address there has /proc/kallsyms read whole (symbols.c). Nothing here is
 * required: any failure means reading /proc/kallsyms. CSAMPLER_KSYM_CACHE=0 turns it off. */
#ifndef CSAMPLER_UNWIND_KSYMCACHE_H
#define CSAMPLER_UNWIND_KSYMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/elfcache.h"

struct ksymcache_table {
	struct kallsym *syms;      /* sorted by address; names point into map */
	size_t n;
	uint64_t lo, hi;           /* the kernel image's text, [_stext, _etext): what syms cover */
	void *map;                 /* the entry, mapped */
	size_t map_size;
};

/* This boot's entry into *t: 0, or -errno (none, another boot's or kernel's, damaged). */
int ksymcache_read(struct ksymcache_table *t);
/* Keep the symbols of syms[0, n) (sorted by address, as read from /proc/kallsyms) that lie in
 * the kernel image's text as this boot's entry, in place of any other boot's. */
void ksymcache_write(const struct kallsym *syms, size_t n);
void ksymcache_free(struct ksymcache_table *t);

/* For the unit tests: the same, with the folder and the boot's key given. */
int ksymcache_read_at(const char *dir, const char *boot, struct ksymcache_table *t);
void ksymcache_write_at(const char *dir, const char *boot, const struct kallsym *syms, size_t n);

#endif
