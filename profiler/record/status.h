/* status.h: the one-line live status `record` shows on a terminal while it records (elapsed
 * time, samples per second, lost samples, threads and processes, GPU records and drops, the data
 * file's size), refreshed once a second and removed at the end.
 *
 * The line lives on the terminal's last row, below a scrolling region that holds every other
 * row (DECSTBM, as apt's progress bar does): what the recorded command writes to the same
 * terminal scrolls above it and is never overwritten or interleaved with it, and nothing of the
 * line is left in the scrollback. Only when stderr is a terminal and -q is not given. */
#ifndef CSAMPLER_RECORD_STATUS_H
#define CSAMPLER_RECORD_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct record_status {
	bool on;                  /* stderr is a terminal, not -q, and the terminal has room */
	bool drawn;               /* the scrolling region is set */
	int rows, cols;
	uint64_t start_ns, last_draw_ns, last_samples;
};

/* What the line shows, from the recorder's counters. */
struct record_status_counts {
	uint64_t samples, lost;
	uint64_t threads, processes;
	uint64_t gpu_records, gpu_dropped;
	bool gpu;                 /* GPU capture is on: show its counts */
	uint64_t file_bytes;
};

/* Decide whether the line is shown (isatty(2), not cs_quiet, at least 4 rows). */
void record_status_init(struct record_status *st, uint64_t start_ns);
/* Draw the line when a second has passed since the last one (or force). */
void record_status_update(struct record_status *st, uint64_t now_ns,
			  const struct record_status_counts *c, bool force);
/* The terminal was resized (SIGWINCH): the region is set again at the next update. */
void record_status_resized(struct record_status *st);
/* Remove the line and give the terminal its whole height back. */
void record_status_clear(struct record_status *st);
/* The line's text for the counts, at most len - 1 characters (exposed for the unit tests). */
void record_status_format(char *buf, size_t len, uint64_t elapsed_ns, double rate,
			  const struct record_status_counts *c);

#endif
