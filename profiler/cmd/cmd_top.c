/* cmd_top.c: `csampler top`: a live view of a recording, like perf top and py-spy top. It is
 * `record` (record.h) with a live consumer: the recorder samples, unwinds, names and writes the
 * data file as usual (to -o FILE, or a temporary file removed at the end), and hands every
 * stack, name, sample and GPU kernel to record/live.h, which aggregates them; once a second
 * (and at each key) this file draws the top functions by self or total samples (Python frames
 * included), a panel of GPU kernels by GPU time when GPU records flow, or the threads.
 *
 * The screen is drawn with plain ANSI escapes (the alternate screen, cursor home, erase to end
 * of line, reverse video): top draws whole lines top to bottom once a second, which needs no
 * cursor optimisation, and a curses terminal description would add a dependency (and
 * termcap lookups) for four sequences every terminal it runs in understands. The terminal goes
 * back to how it was at every exit: q, the end of the command or targets, SIGINT/SIGTERM/SIGHUP
 * (the recorder's handlers stop it; the restore follows), and errors after the start. NO_COLOR
 * (or TERM=dumb) draws without any attribute. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"
#include "record/gpu_setup.h"
#include "record/live.h"
#include "record/record.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define TOP_MAX_ROWS 512
#define TOP_MAX_PIDS 1024

struct top {
	struct live *live;
	struct termios saved;
	bool raw, screen;            /* terminal state to restore */
	bool color;
	bool paused, threads, gpu_view;
	enum live_sort sort;
	bool quit;
	int rows, cols;
	uint64_t start_ns, last_draw_ns, last_samples, delay_ns;
	double rate;
	const char *target;          /* what is profiled, for the header */
	const char *output;          /* -o FILE, or NULL */
	/* the frame, built and written at once */
	struct cs_buf out;
	/* query results */
	struct live_fn fns[TOP_MAX_ROWS];
	struct live_thread ths[TOP_MAX_ROWS];
	struct live_kernel ks[TOP_MAX_ROWS];
};

/* ---- the terminal ---- */

static void top_write(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(1, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static int top_term_enter(struct top *t)
{
	if (tcgetattr(0, &t->saved) < 0)
		return cs_error(errno, "tcgetattr: %s: top needs a terminal", strerror(errno));
	struct termios raw = t->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);   /* ISIG stays: ^C stops as in record */
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(0, TCSANOW, &raw) < 0)
		return cs_error(errno, "tcsetattr: %s", strerror(errno));
	t->raw = true;
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	top_write(enter, sizeof(enter) - 1);
	t->screen = true;
	return 0;
}

static void top_term_leave(struct top *t)
{
	if (t->screen) {
		static const char leave[] = "\033[0m\033[?25h\033[?1049l";
		top_write(leave, sizeof(leave) - 1);
		t->screen = false;
	}
	if (t->raw) {
		tcsetattr(0, TCSANOW, &t->saved);
		t->raw = false;
	}
}

static bool top_size(struct top *t)
{
	struct winsize ws;
	int rows = 24, cols = 80;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
		rows = ws.ws_row, cols = ws.ws_col;
	bool changed = rows != t->rows || cols != t->cols;
	t->rows = rows;
	t->cols = cols;
	return changed;
}

/* ---- drawing ---- */

/* One screen line: cut to the width (never wrapped), the rest of the row erased. attr: an SGR
 * parameter ("7" reverse, "36" cyan) or NULL; none without colour. */
static void top_line(struct top *t, int *row, const char *attr, const char *fmt, ...)
{
	if (*row >= t->rows)
		return;
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if ((int)strlen(text) > t->cols)
		text[t->cols] = 0;
	if (*row)
		cs_buf_printf(&t->out, "\r\n");
	if (attr && t->color)
		cs_buf_printf(&t->out, "\033[%sm%s\033[K\033[0m", attr, text);
	else
		cs_buf_printf(&t->out, "%s\033[K", text);
	(*row)++;
}

static double top_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void top_thread_name(uint32_t tid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/comm", tid);
	buf[0] = 0;
	if (cs_read_small_file(path, buf, len) > 0)
		buf[strcspn(buf, "\n")] = 0;
	else
		snprintf(buf, len, "(exited)");
}

/* How many table rows fit from *row to last, under a header line. */
static size_t top_rows_left(const int *row, int last)
{
	size_t want = last - *row - 1 > 0 ? (size_t)(last - *row - 1) : 0;
	return want > TOP_MAX_ROWS ? TOP_MAX_ROWS : want;
}

static void top_draw_functions(struct top *t, int *row, int last)
{
	uint64_t total = live_samples(t->live);
	size_t want = top_rows_left(row, last);
	size_t n = live_functions(t->live, 0, t->sort, t->fns, want);
	top_line(t, row, "1", "  %%Self  %%Total     Self    Total  Function (module, or file for Python)");
	for (size_t i = 0; i < n; i++) {
		const struct live_fn *f = &t->fns[i];
		top_line(t, row, f->python ? "36" : NULL, "%6.1f%% %6.1f%% %8llu %8llu  %s%s (%s)",
			 top_pct(f->self, total), top_pct(f->total, total),
			 (unsigned long long)f->self, (unsigned long long)f->total,
			 f->python ? "[py] " : "", f->name, f->where);
	}
	if (!n)
		top_line(t, row, NULL, "  (no samples yet)");
}

static void top_draw_threads(struct top *t, int *row, int last)
{
	uint64_t total = live_samples(t->live);
	size_t want = top_rows_left(row, last);
	size_t n = live_threads(t->live, t->ths, want);
	top_line(t, row, "1", "     TID  Name             Samples      %%  Top function (self)");
	for (size_t i = 0; i < n; i++) {
		const struct live_thread *th = &t->ths[i];
		char name[32];
		top_thread_name(th->tid, name, sizeof(name));
		top_line(t, row, NULL, "%8u  %-15s %8llu %5.1f%%  %s (%.1f%%)", th->tid, name,
			 (unsigned long long)th->samples, top_pct(th->samples, total),
			 th->top ? th->top : "?", top_pct(th->top_self, th->samples));
	}
	if (!n)
		top_line(t, row, NULL, "  (no samples yet)");
}

static void top_draw_kernels(struct top *t, int *row, int last)
{
	uint64_t total_ns = 0;
	live_gpu_kernels(t->live, &total_ns);
	size_t want = top_rows_left(row, last);
	size_t n = live_kernels(t->live, t->ks, want);
	top_line(t, row, "1", "   %%GPU   GPU ms    Count   Avg us  Kernel");
	for (size_t i = 0; i < n; i++) {
		const struct live_kernel *k = &t->ks[i];
		top_line(t, row, NULL, "%6.1f%% %8.2f %8llu %8.1f  %s", top_pct(k->total_ns, total_ns),
			 (double)k->total_ns / 1e6, (unsigned long long)k->count,
			 k->count ? (double)k->total_ns / 1e3 / (double)k->count : 0.0, k->name);
	}
	if (!n)
		top_line(t, row, NULL, "  (no GPU kernel records yet)");
}

static void top_draw(struct top *t, uint64_t now)
{
	uint64_t s = (now - t->start_ns) / 1000000000ull, gpu_ns = 0;
	uint64_t kernels = live_gpu_kernels(t->live, &gpu_ns);
	int row = 0;
	t->out.len = 0;
	cs_buf_printf(&t->out, "\033[H");
	char gpu[96] = "";
	if (kernels)
		snprintf(gpu, sizeof(gpu), " | GPU %llu kernels, %.1f ms", (unsigned long long)kernels,
			 (double)gpu_ns / 1e6);
	top_line(t, &row, "7", "csampler top: %s | %llu:%02llu:%02llu | %.0f samples/s | %llu samples%s%s",
		 t->target, (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60),
		 (unsigned long long)(s % 60), t->rate, (unsigned long long)live_samples(t->live), gpu,
		 t->paused ? " | PAUSED" : "");
	top_line(t, &row, NULL, "view: %s | sort: %s | keys: q quit  s sort  t threads  g %s  p pause%s%s",
		 t->gpu_view ? "GPU kernels" : t->threads ? "threads" : "functions",
		 t->sort == LIVE_SORT_SELF ? "self" : "total", t->gpu_view ? "CPU" : "GPU",
		 t->output ? " | writing " : "", t->output ? t->output : "");
	top_line(t, &row, NULL, "%s", "");
	if (t->gpu_view) {
		top_draw_kernels(t, &row, t->rows);
	} else if (kernels && t->rows >= 16) {
		/* functions above, a GPU panel of up to a third of the screen below */
		int panel = t->rows / 3;
		int split = t->rows - panel;
		if (t->threads)
			top_draw_threads(t, &row, split - 1);
		else
			top_draw_functions(t, &row, split - 1);
		while (row < split - 1)
			top_line(t, &row, NULL, "%s", "");
		top_line(t, &row, NULL, "%s", "GPU kernels by GPU time:");
		top_draw_kernels(t, &row, t->rows);
	} else if (t->threads) {
		top_draw_threads(t, &row, t->rows);
	} else {
		top_draw_functions(t, &row, t->rows);
	}
	cs_buf_printf(&t->out, "\033[J");
	top_write(t->out.data, t->out.len);
}

/* ---- the recorder's consumer ---- */

static void top_on_stack(void *arg, uint32_t id, const uint32_t *locs, uint32_t n)
{
	live_stack(((struct top *)arg)->live, id, locs, n);
}

static void top_on_symbol(void *arg, uint32_t loc, const struct sym_frame *frames, int n,
			  const char *module)
{
	live_symbol(((struct top *)arg)->live, loc, frames, n, module);
}

static void top_on_sample(void *arg, uint32_t pid, uint32_t tid, uint32_t stack, uint32_t weight)
{
	live_sample(((struct top *)arg)->live, pid, tid, stack, weight);
}

static void top_on_gpu(void *arg, const struct df_gpu_activity *a, const char *name)
{
	live_gpu_activity(((struct top *)arg)->live, a, name);
}

/* Keys, resizes and the refresh; true once q was pressed. */
static bool top_tick(void *arg, uint64_t now)
{
	struct top *t = arg;
	char keys[64];
	ssize_t n = read(0, keys, sizeof(keys));
	bool redraw = false;
	for (ssize_t i = 0; i < n; i++) {
		switch (keys[i]) {
		case 'q': case 'Q':
			t->quit = true;
			break;
		case 's': case 'S':
			t->sort = t->sort == LIVE_SORT_SELF ? LIVE_SORT_TOTAL : LIVE_SORT_SELF;
			redraw = true;
			break;
		case 't': case 'T':
			t->threads = !t->threads;
			t->gpu_view = false;
			redraw = true;
			break;
		case 'g': case 'G':
			t->gpu_view = !t->gpu_view;
			redraw = true;
			break;
		case 'p': case 'P': case ' ':
			t->paused = !t->paused;
			redraw = true;
			break;
		default:
			break;
		}
	}
	if (top_size(t))
		redraw = true;
	if (now - t->last_draw_ns >= t->delay_ns) {
		uint64_t samples = live_samples(t->live);
		uint64_t dt = now - t->last_draw_ns;
		if (!t->paused) {
			t->rate = dt ? (double)(samples - t->last_samples) * 1e9 / (double)dt : 0;
			t->last_samples = samples;
			t->last_draw_ns = now;
			redraw = true;
		}
	}
	/* paused: the numbers stand still, the keys and a resize still redraw */
	if (redraw && !t->quit)
		top_draw(t, now);
	return t->quit;
}

/* Which of top's valued options a call row is. */
enum top_option { TOP_OPT_LOG, TOP_OPT_FREQ, TOP_OPT_DELAY };

/* What top's options fill. */
struct top_args {
	struct record_opts *o;
	struct top *t;
	const char *log;
};

/* --log FILE, -F HZ and --delay SEC. 0, or -EINVAL (printed). */
static int top_value_option(const char *cmd, const struct opts_option *row, const char *arg,
			    void *target)
{
	struct top_args *a = target;
	uint64_t v;
	double d;

	switch (row->number) {
	case TOP_OPT_LOG:
		if (!*arg)
			return cs_error(EINVAL, "empty log path: give --log FILE");
		a->log = arg;
		return 0;
	case TOP_OPT_FREQ:
		if (cs_parse_u64(arg, &v) || v == 0 || v > 100000)
			return cs_error(EINVAL, "invalid rate '-F %s': give a frequency in Hz from 1 to 100000", arg);
		a->o->sampler.freq_hz = v;
		return 0;
	default:
		if (cs_parse_double(arg, &d) || d < 0.1 || d > 3600)
			return cs_error(EINVAL, "invalid --delay '%s': give seconds from 0.1 to 3600", arg);
		a->t->delay_ns = (uint64_t)(d * 1e9);
		return 0;
	}
}

#define TOP_ROW(s, l, which, argname, text) { .kind = OPTS_CALL, .short_name = (s), \
		.long_name = (l), .value = a, .arg = (argname), .call = top_value_option, \
		.number = (which), .help = (text) }

/* Parse argv into a->o (its command: o->argv, or NULL), a->t and a->log, then check what
 * needs every option: one kind of target, live processes, a terminal. Returns 0, 1 after
 * --help, or -errno after one line. */
static int top_parse_args(int argc, char **argv, struct top_args *a)
{
	struct opts_pids pids = { .max = TOP_MAX_PIDS };
	const struct opts_option options[] = {
		OPTS_CALL_ROW('p', "pid", &pids, "PID[,PID]", opts_pids_call,
			      "attach to running processes"),
		OPTS_CALL_ROW('o', "output", &a->o->output, "FILE", record_output_call,
			      "also keep the data file (default: a temporary file, removed)"),
		TOP_ROW(0, "log", TOP_OPT_LOG, "FILE",
			"launch mode: the command's output (default csampler-top.log)"),
		TOP_ROW('F', "freq", TOP_OPT_FREQ, "HZ", "samples per second (default 999)"),
		TOP_ROW(0, "delay", TOP_OPT_DELAY, "SEC", "seconds between refreshes (default 1)"),
		OPTS_CALL_ROW(0, "gpu", &a->o->gpu_mode, "auto|on|off", record_gpu_mode_call,
			      "GPU capture, as in record (default auto)"),
		OPTS_FLAG_ROW(0, "no-python", &a->o->no_python, "native frames only"),
		{ .kind = OPTS_CALL, .long_name = "mode", .value = &a->o->sampler.mode,
		  .arg = "auto|perf|ptrace", .call = record_sampler_mode_call, .number = 1,
		  .help = "sampling backend, as in record" },
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("top", options);
	int first, err = opts_parse(&cmd, argc, argv, &first);

	a->o->pids = pids.pids;
	a->o->npids = pids.n;
	if (err)
		return err;
	a->t->output = a->o->output;
	if (first < argc)
		a->o->argv = argv + first;
	err = record_check_targets(a->o, "nothing to watch");
	if (!err && (!isatty(0) || !isatty(1)))
		err = cs_error(ENOTTY, "top needs a terminal on its input and output; to profile "
			       "into a file, use csampler record");
	return err;
}

/* What the screen's header names: the command line, or "PID a,b". */
static char *top_target_name(const struct record_opts *o)
{
	char *target;

	if (o->argv) {
		struct cs_buf b = { 0 };
		for (int i = 0; o->argv[i]; i++)
			cs_buf_printf(&b, "%s%s", i ? " " : "", o->argv[i]);
		cs_buf_put(&b, "", 1);
		target = b.data;
	} else {
		struct cs_buf b = { 0 };
		for (size_t i = 0; i < o->npids; i++)
			cs_buf_printf(&b, "%s%d", i ? "," : "PID ", (int)o->pids[i]);
		cs_buf_put(&b, "", 1);
		target = b.data;
	}
	return target;
}

/* The line left on stderr when top ends. */
static void top_print_end(const struct top *t, const struct record_opts *o, const char *log,
			  int status)
{
	uint64_t secs = (cs_monotonic_ns() - t->start_ns) / 1000000000ull;
	if (status != CS_EXIT_ERROR || live_samples(t->live)) {
		fprintf(stderr, "csampler top: %llu samples in %llu s", (unsigned long long)live_samples(t->live),
			(unsigned long long)secs);
		if (t->output)
			fprintf(stderr, "; the data file is %s", t->output);
		if (o->argv)
			fprintf(stderr, "; the command's output is in %s", log);
		fprintf(stderr, "\n");
	}
}

int cmd_top(int argc, char **argv)
{
	struct record_opts o = { .compress = true, .argc_all = argc, .argv_all = argv };
	struct top t = { .sort = LIVE_SORT_SELF, .delay_ns = 1000000000ull };
	struct top_args args = { .o = &o, .t = &t, .log = "csampler-top.log" };
	char *tmp_output = NULL, *target = NULL;
	int status = CS_EXIT_ERROR, err = top_parse_args(argc, argv, &args);
	const char *log = args.log;

	if (err) {
		free(o.pids);
		return opts_exit_status(err);
	}
	status = CS_EXIT_ERROR;
	record_default_sampler(&o.sampler);
	o.sampler.callgraph = SAMPLER_CALLGRAPH_DWARF;
	if (!o.output) {
		const char *dir = getenv("TMPDIR");
		tmp_output = cs_asprintf("%s/csampler-top-%d.data", dir && *dir ? dir : "/tmp", (int)getpid());
		o.output = tmp_output;
	}
	if (o.argv)
		o.child_log = log;
	target = top_target_name(&o);
	t.target = target;
	char why[512] = "";
	if (record_gpu_prepare(&o, why, sizeof(why)))
		goto out;
	o.gpu_off_reason = why[0] ? why : NULL;

	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	t.color = !(nc && *nc) && !(term && !strcmp(term, "dumb"));
	t.live = live_new();
	struct record_live hooks = { .arg = &t, .stack = top_on_stack, .symbol = top_on_symbol,
				     .sample = top_on_sample, .gpu_activity = top_on_gpu,
				     .tick = top_tick, .wake_fd = 0 };
	o.live = &hooks;
	if (top_term_enter(&t))
		goto out;
	top_size(&t);
	t.start_ns = t.last_draw_ns = cs_monotonic_ns();
	top_draw(&t, t.start_ns);
	status = record_run(&o, NULL);
	top_term_leave(&t);
	top_print_end(&t, &o, log, status);
	/* q ends a launched command as a SIGINT would: not an error of top's */
	if (t.quit && status != CS_EXIT_ERROR)
		status = 0;
out:
	top_term_leave(&t);
	if (tmp_output)
		unlink(tmp_output);
	if (o.argv && o.gpu.dir)
		rmdir(o.gpu.dir);
	gpu_setup_free(&o.gpu);
	live_free(t.live);
	cs_buf_free(&t.out);
	free(tmp_output);
	free(target);
	free(o.pids);
	return status;
}
