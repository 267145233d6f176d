/* prewarm.h: the symbolizer's one-time work (kallsyms, the symbol tables and debug files of the
 * files a command will map) done in threads before a launched command runs, so that it is not
 * taken from the command's CPU time (prewarm.c). */
#ifndef CSAMPLER_PREWARM_H
#define CSAMPLER_PREWARM_H

#include <stdbool.h>

#include "unwind/unwind.h"

struct prewarm;

#define PREWARM_MAX_FILES 24

/* The files command will map, as far as can be told before it runs: its executable (found on
 * PATH as execvp finds it; for a script, its interpreter), the dynamic loader it names, and the
 * libraries it needs that the recorder has loaded under the same name. */
struct prewarm_files {
	size_t n;
	char *paths[PREWARM_MAX_FILES];
};
void prewarm_files(const char *command, struct prewarm_files *out);
void prewarm_files_free(struct prewarm_files *l);

/* Start preparing, in threads, the files command (argv[0] of a launch) will map, and with
 * kernel /proc/kallsyms. ctx is the threads' until prewarm_finish: the caller touches nothing
 * of it meanwhile. *out is set (prewarm_finish takes it in any case); 0, or -errno when a
 * thread could not start (that part is then left to the first sample that needs it). */
int prewarm_start(struct prewarm **out, struct unwind_ctx *ctx, const char *command, bool kernel);
/* Whether the kernel's symbols are worth reading before the launch: root, and kallsyms shows
 * root its addresses (kernel.kptr_restrict below 2). Otherwise they are read at the first kernel
 * frame, if any (and a warning says why they show as addresses). */
bool prewarm_kernel_wanted(void);
/* Wait for the thread and free p (NULL: nothing). */
void prewarm_finish(struct prewarm *p);

#endif
