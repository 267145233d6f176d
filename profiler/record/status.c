/* status.c: `record`'s live status line (status.h). Plain ANSI/VT100 escapes written to stderr
 * in one write(2) per update: DECSTBM (ESC [ top ; bottom r) keeps the last row out of the
 * scrolling region, ESC 7 / ESC 8 save and restore the cursor around the drawing, so the
 * command's own output (it shares the terminal) goes on where it was. No curses: the line is
 * one row of text and a terminal description would add a dependency for three sequences that
 * every terminal csampler runs in (xterm, tmux, screen, VS Code) understands. */
#include "record/status.h"

#include "base/cs.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define STATUS_MIN_ROWS 4
#define STATUS_PERIOD_NS 1000000000ull

static void status_write(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(2, s, n);
		if (w <= 0)
			return; /* a terminal that went away: the recording goes on */
		s += w;
		n -= (size_t)w;
	}
}

static bool status_size(int *rows, int *cols)
{
	struct winsize ws;
	if (ioctl(2, TIOCGWINSZ, &ws) < 0 || ws.ws_row < STATUS_MIN_ROWS || ws.ws_col < 20)
		return false;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return true;
}

void record_status_init(struct record_status *st, uint64_t start_ns)
{
	memset(st, 0, sizeof(*st));
	st->start_ns = st->last_draw_ns = start_ns;
	st->on = !cs_quiet && isatty(2) && status_size(&st->rows, &st->cols);
}

static void status_human_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else if (b < 1ull << 20)
		snprintf(buf, len, "%.1f KB", (double)b / 1024.0);
	else if (b < 1ull << 30)
		snprintf(buf, len, "%.1f MB", (double)b / 1048576.0);
	else
		snprintf(buf, len, "%.1f GB", (double)b / 1073741824.0);
}

void record_status_format(char *buf, size_t len, uint64_t elapsed_ns, double rate,
			  const struct record_status_counts *c)
{
	uint64_t s = elapsed_ns / 1000000000ull;
	char size[32], gpu[96] = "";
	status_human_bytes(size, sizeof(size), c->file_bytes);
	if (c->gpu)
		snprintf(gpu, sizeof(gpu), " | GPU %llu records, %llu dropped",
			 (unsigned long long)c->gpu_records, (unsigned long long)c->gpu_dropped);
	snprintf(buf, len, "csampler: %llu:%02llu:%02llu | %.0f samples/s | %llu lost | %llu threads, %llu process%s%s | %s",
		 (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60),
		 (unsigned long long)(s % 60), rate, (unsigned long long)c->lost,
		 (unsigned long long)c->threads, (unsigned long long)c->processes,
		 c->processes == 1 ? "" : "es", gpu, size);
}

/* Keep the last row out of the scrolling region: a newline first makes room when the cursor is
 * on that row (the text scrolls up one line), then the region is set (which homes the cursor:
 * saved and restored around it) and the cursor is put back inside it. */
static void status_reserve(struct record_status *st)
{
	char seq[96];
	int n = snprintf(seq, sizeof(seq), "\n\0337\033[1;%dr\0338\033[1A", st->rows - 1);
	status_write(seq, (size_t)n);
	st->drawn = true;
}

void record_status_update(struct record_status *st, uint64_t now_ns,
			  const struct record_status_counts *c, bool force)
{
	if (!st->on || (!force && now_ns - st->last_draw_ns < STATUS_PERIOD_NS))
		return;
	if (!st->drawn) {
		if (!status_size(&st->rows, &st->cols)) {
			st->on = false; /* a terminal too small for a line of its own */
			return;
		}
		status_reserve(st);
	}
	uint64_t dt = now_ns - st->last_draw_ns;
	double rate = dt && c->samples >= st->last_samples
			      ? (double)(c->samples - st->last_samples) * 1e9 / (double)dt
			      : 0.0;
	st->last_draw_ns = now_ns;
	st->last_samples = c->samples;
	char text[512], out[700];
	record_status_format(text, sizeof(text), now_ns - st->start_ns, rate, c);
	if ((int)strlen(text) > st->cols - 1)
		text[st->cols - 1] = 0; /* never wrap: a wrapped line would scroll the region */
	int n = snprintf(out, sizeof(out), "\0337\033[%d;1H\033[2K%s\0338", st->rows, text);
	status_write(out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

void record_status_resized(struct record_status *st)
{
	if (!st->on || !st->drawn)
		return;
	int rows, cols;
	if (!status_size(&rows, &cols)) {
		record_status_clear(st);
		st->on = false;
		return;
	}
	/* the old last row may now be anywhere: erase it, then reserve the new one */
	char seq[96];
	int n = snprintf(seq, sizeof(seq), "\0337\033[r\033[%d;1H\033[2K\0338", st->rows);
	status_write(seq, (size_t)n);
	st->rows = rows;
	st->cols = cols;
	n = snprintf(seq, sizeof(seq), "\0337\033[1;%dr\0338", st->rows - 1);
	status_write(seq, (size_t)n);
	st->last_draw_ns = 0; /* redraw at the next update */
}

void record_status_clear(struct record_status *st)
{
	if (!st->drawn)
		return;
	/* the whole height back (ESC [ r), the line erased, the cursor where the output was */
	char seq[96];
	int n = snprintf(seq, sizeof(seq), "\0337\033[r\033[%d;1H\033[2K\0338", st->rows);
	status_write(seq, (size_t)n);
	st->drawn = false;
}
