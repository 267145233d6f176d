/* output.h: `record -o` patterns, so that the processes of one distributed run (torchrun ranks,
 * MPI ranks, several hosts) each write their own file:
 *   %p  the pid of the launched command (attach mode: the first pid given)
 *   %r  the rank: $RANK, else $LOCAL_RANK, else $OMPI_COMM_WORLD_RANK; "norank" when none is set
 *   %h  the host name ('/' written as '_')
 *   %t  the start time, local, YYYYmmdd-HHMMSS
 *   %%  a '%'
 * The rank found is also stored in the data file's header ("rank", "rank_from"). */
#ifndef CSAMPLER_RECORD_OUTPUT_H
#define CSAMPLER_RECORD_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define RECORD_NO_RANK "norank" /* what %r writes when no rank variable is set */

/* What a pattern may name besides the pid. */
struct record_names {
	int64_t rank;            /* -1 when no rank variable is set */
	const char *rank_from;   /* the variable it came from, or NULL */
	char host[256];
	time_t start;
};

/* Fill n from the environment, gethostname() and the clock. A rank variable that is not a
 * number is reported (one warning) and passed over. */
void record_names_init(struct record_names *n);

/* Check a pattern's syntax. Returns 0, or -EINVAL after one line naming the bad sequence. */
int record_output_check(const char *pattern);
/* True when the pattern holds %p (the file can be named only once the command is started). */
bool record_output_needs_pid(const char *pattern);
/* The file name for pattern (checked) with pid and n; the caller frees it. */
char *record_output_expand(const char *pattern, pid_t pid, const struct record_names *n);

#endif
