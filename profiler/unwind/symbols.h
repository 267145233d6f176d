/* symbols.h: naming code locations: a (module, offset) from unwind.h becomes a function name,
 * source file and line, with its chain of inlined frames. The state lives in the unwinding
 * context (files stay open from unwind_mmap, so names resolve after the target exited) and is
 * freed by unwind_free. */
#ifndef CSAMPLER_SYMBOLS_H
#define CSAMPLER_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwind.h"

/* One frame of a symbolized location. The inline chain of one location is returned innermost
 * first; every frame but the last has PROFILE_FRAME_INLINED set. Strings are owned by the
 * context and live until unwind_free. */
struct sym_frame {
	const char *name;          /* demangled; "libfoo.so+0x1a2b" when unnamed */
	const char *file;          /* source file or NULL */
	uint32_t line;             /* 0 when unknown */
	uint32_t flags;            /* PROFILE_FRAME_* */
};

/* Name location loc. is_caller: the offset is a return address (not the leaf of its stack),
 * so look up offset - 1. Returns the number of frames written (>= 1) or -errno. Caches per
 * (module, offset). Works after the target exited: files are kept open from unwind_mmap. */
int sym_resolve(struct unwind_ctx *ctx, struct unwind_loc loc, bool is_caller,
		struct sym_frame *frames, int max);

/* Do now the one-time work of naming locations in the files at paths (their symbol tables, their
 * debug files found, the DWARF sections decompressed: 0.1 s of CPU for Debian's libc), or of
 * naming kernel addresses (reading /proc/kallsyms): what sym_resolve would otherwise do at the
 * first location in each, while the target runs. For the files a command about to be launched
 * will map (files are cached by inode and build id, so its mappings find the work done). A file
 * that cannot be opened is passed over: it will be named as usual, or not at all. The two touch
 * apart parts of ctx: they may run at once in two threads, while nothing else uses ctx. */
void sym_prepare_files(struct unwind_ctx *ctx, const char *const *paths, size_t npaths);
void sym_prepare_kernel(struct unwind_ctx *ctx);

#endif
