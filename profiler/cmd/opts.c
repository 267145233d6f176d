/* opts.c: the commands' option parser and --help writer over one table per command (opts.h),
 * after perf's parse-options: the table that parses is the one that documents, so the help
 * cannot drift from what is accepted, and every command says "needs a value", "unknown option"
 * and "unexpected argument" the same way. */
#include "cmd/opts.h"
#include "base/cs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The widest option column of --help; a longer one puts its help on the next line. */
#define OPTS_HELP_COLUMN 24

/* A row found for an argument, with where it writes (an included row writes to the value of
 * the row that included its table). */
struct opts_hit {
	const struct opts_option *row;
	void *target;
};

/* The parse of one argv. */
struct opts_state {
	const struct opts_command *c;
	int argc;
	char **argv;
	int i;                      /* the argument being read */
	bool *operand;              /* by index: an operand (not an option or its value) */
};

/* "csampler: CMD: <message>; see 'csampler CMD --help'". Returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int opts_bad(const struct opts_command *c,
							    const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return cs_error(EINVAL, "%s%s%s; see 'csampler%s%s --help'", c->name, *c->name ? ": " : "",
			text, *c->name ? " " : "", c->name);
}

int opts_unexpected(const struct opts_command *c, const char *arg)
{
	return opts_bad(c, "unexpected argument '%s'", arg);
}

int opts_exit_status(int err)
{
	return err > 0 ? 0 : CS_EXIT_ERROR;
}

/* ---- finding the row of an argument ---- */

/* Each row of t (included tables followed) that matches: exact, by the long name name[0..len)
 * (or its prefix when !exact), or by short name when len is 0. Calls stop at the first exact
 * match. Returns how many rows matched; hits[0..2) are the first two. */
static size_t opts_match(const struct opts_option *t, void *included, const char *name,
			 size_t len, char short_name, bool exact, struct opts_hit hits[2])
{
	size_t n = 0;

	for (; t->kind != OPTS_END; t++) {
		bool match;
		if (t->kind == OPTS_INCLUDE) {
			struct opts_hit sub[2];
			size_t k = opts_match(t->table, t->value, name, len, short_name, exact, sub);
			for (size_t j = 0; j < k && j < 2; j++)
				if (n + j < 2)
					hits[n + j] = sub[j];
			n += k;
			if (k && (exact || !len))
				return n;
			continue;
		}
		if (!len)
			match = short_name && t->short_name == short_name;
		else
			match = t->long_name && !strncmp(t->long_name, name, len) &&
				(!exact || !t->long_name[len]);
		if (!match)
			continue;
		if (n < 2)
			hits[n] = (struct opts_hit){ t, included ? included : t->value };
		n++;
		if (exact || !len)
			return n;
	}
	return n;
}

/* The row of long option name[0..len): an exact name, else an unambiguous prefix. 0, or
 * -EINVAL after the message (shown: the argument as given). */
static int opts_find_long(const struct opts_command *c, const char *name, size_t len,
			  const char *shown, struct opts_hit *hit)
{
	struct opts_hit hits[2];

	if (opts_match(c->options, NULL, name, len, 0, true, hits)) {
		*hit = hits[0];
		return 0;
	}
	size_t n = opts_match(c->options, NULL, name, len, 0, false, hits);
	/* two rows of one name (diff's --rank over the filters'): the first is the option */
	if (n == 1 || (n == 2 && !strcmp(hits[0].row->long_name, hits[1].row->long_name))) {
		*hit = hits[0];
		return 0;
	}
	if (n > 1)
		return opts_bad(c, "option '%s' is ambiguous (--%s, --%s%s)", shown,
				hits[0].row->long_name, hits[1].row->long_name, n > 2 ? ", ..." : "");
	return opts_bad(c, "unknown option '%s'", shown);
}

/* ---- applying a row ---- */

static void opts_usage_whole(const struct opts_command *c, FILE *f);

static int opts_apply(struct opts_state *s, const struct opts_hit *h, const char *value)
{
	const struct opts_option *row = h->row;

	switch (row->kind) {
	case OPTS_FLAG:
		*(bool *)h->target = true;
		return 0;
	case OPTS_INT:
		*(int *)h->target = row->number;
		return 0;
	case OPTS_STRING:
		*(const char **)h->target = value;
		return 0;
	case OPTS_CALL:
		return row->call(s->c->name, row, value, h->target);
	case OPTS_HELP:
		opts_usage_whole(s->c, stdout);
		return 1;
	default:
		return 0;
	}
}

/* The value of a row given as "--name[=VALUE]" (as_long) or "-n": the attached one (attached,
 * may be NULL), else the next argument. 0 with *value set (NULL: none), or -EINVAL (printed). */
static int opts_value(struct opts_state *s, const struct opts_option *row, bool as_long,
		      const char *attached, const char **value)
{
	char shown[128];

	if (as_long)
		snprintf(shown, sizeof(shown), "--%s", row->long_name);
	else
		snprintf(shown, sizeof(shown), "-%c", row->short_name);
	*value = attached;
	if (!row->arg)
		return attached ? opts_bad(s->c, "option '%s' takes no value", shown) : 0;
	if (attached)
		return 0;
	bool next = s->i + 1 < s->argc;
	if (row->flags & OPTS_OPTIONAL_VALUE) {
		if (next && row->takes_next && row->takes_next(s->argv[s->i + 1]))
			*value = s->argv[++s->i];
		return 0;
	}
	if (!next)
		return opts_bad(s->c, "option '%s' needs a value", shown);
	*value = s->argv[++s->i];
	return 0;
}

/* "--name", "--name=VALUE", and "-name" with OPTS_ONE_DASH_LONG. */
static int opts_long(struct opts_state *s, const char *arg, const char *name)
{
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	struct opts_hit hit;
	const char *value;
	char shown[128];

	snprintf(shown, sizeof(shown), "%.*s", (int)(name - arg + len), arg);
	int err = opts_find_long(s->c, name, len, shown, &hit);
	if (err < 0)
		return err;
	err = opts_value(s, hit.row, true, eq ? eq + 1 : NULL, &value);
	return err < 0 ? err : opts_apply(s, &hit, value);
}

/* "-a", "-aq" (flags grouped), "-o FILE", "-oFILE". */
static int opts_short(struct opts_state *s, const char *arg)
{
	for (const char *p = arg + 1; *p; p++) {
		struct opts_hit hit[2];
		const char *value;
		if (!opts_match(s->c->options, NULL, NULL, 0, *p, true, hit))
			return opts_bad(s->c, "unknown option '-%c'", *p);
		int err = opts_value(s, hit[0].row, false, hit[0].row->arg && p[1] ? p + 1 : NULL,
				     &value);
		if (!err)
			err = opts_apply(s, &hit[0], value);
		if (err || hit[0].row->arg)
			return err;
	}
	return 0;
}

/* With OPTS_ONE_DASH_LONG, whether "-name" is read as a long option: a long name (exact, or a
 * prefix when its first letter is no short option: "-oFILE" stays -o FILE). */
static bool opts_is_one_dash_long(const struct opts_state *s, const char *arg)
{
	struct opts_hit hits[2];
	size_t len = strcspn(arg + 1, "=");
	if (!(s->c->flags & OPTS_ONE_DASH_LONG) || len < 2)
		return false;
	return opts_match(s->c->options, NULL, arg + 1, len, 0, true, hits) ||
	       !opts_match(s->c->options, NULL, NULL, 0, arg[1], true, hits);
}

/* getopt's order: the options, then "--" when given (at dashdash, or 0), then the operands in
 * their order. Returns the index of the first operand. */
static int opts_move_operands(struct opts_state *s, int dashdash)
{
	char **order = cs_malloc((size_t)(s->argc + 1) * sizeof(*order));
	int n = 0, limit = dashdash ? dashdash : s->argc, first;

	for (int i = 1; i < limit; i++)
		if (!s->operand[i])
			order[n++] = s->argv[i];
	if (dashdash)
		order[n++] = s->argv[dashdash];
	first = n + 1;
	for (int i = 1; i < limit; i++)
		if (s->operand[i])
			order[n++] = s->argv[i];
	for (int i = limit + (dashdash ? 1 : 0); i < s->argc; i++)
		order[n++] = s->argv[i];
	memcpy(s->argv + 1, order, (size_t)n * sizeof(*order));
	free(order);
	return first;
}

/* One argument that starts with '-' (not "--"). */
static int opts_option_arg(struct opts_state *s, const char *a)
{
	if (a[1] == '-')
		return opts_long(s, a, a + 2);
	if (opts_is_one_dash_long(s, a))
		return opts_long(s, a, a + 1);
	return opts_short(s, a);
}

/* Every command's -h, --help, after its own rows: the commands' tables leave it out. */
static const struct opts_option opts_help_rows[] = { OPTS_HELP_ROW, OPTS_END_ROW };

/* c with its table followed by the help row: whole, whose table is rows[0..3). */
static void opts_whole(const struct opts_command *c, struct opts_command *whole,
		       struct opts_option rows[3])
{
	rows[0] = (struct opts_option)OPTS_INCLUDE_ROW(c->options, NULL);
	rows[1] = (struct opts_option)OPTS_INCLUDE_ROW(opts_help_rows, NULL);
	rows[2] = (struct opts_option)OPTS_END_ROW;
	*whole = *c;
	whole->options = rows;
}

int opts_parse(const struct opts_command *c_given, int argc, char **argv, int *first)
{
	struct opts_option rows[3];
	struct opts_command whole;
	const struct opts_command *c = &whole;
	opts_whole(c_given, &whole, rows);
	struct opts_state s = { .c = c, .argc = argc, .argv = argv };
	int err = 0, dashdash = 0, stop = argc;

	s.operand = cs_calloc((size_t)argc + 1, sizeof(*s.operand));
	for (s.i = 1; s.i < argc && !err; s.i++) {
		const char *a = argv[s.i];
		if (!strcmp(a, "--")) {
			dashdash = s.i;
			break;
		}
		if (a[0] == '-' && a[1]) {
			err = opts_option_arg(&s, a);
		} else if (c->flags & OPTS_STOP_AT_OPERAND) {
			stop = s.i;
			break;
		} else {
			s.operand[s.i] = true;
		}
	}
	if (!err && (c->flags & OPTS_STOP_AT_OPERAND))
		*first = dashdash ? dashdash + 1 : stop;
	else if (!err)
		*first = opts_move_operands(&s, dashdash);
	free(s.operand);
	return err;
}

/* ---- --help ---- */

/* A row's option column: "-o, --output FILE", "    --sort KEY", "    --steps [A-B]". */
static void opts_left(const struct opts_option *row, char *buf, size_t len)
{
	const char *arg = row->arg ? row->arg : "";
	bool optional = row->arg && (row->flags & OPTS_OPTIONAL_VALUE);
	char sn[8] = "    ";

	if (row->short_name)
		snprintf(sn, sizeof(sn), "-%c%s", row->short_name, row->long_name ? ", " : "");
	if (row->long_name)
		snprintf(buf, len, "%s--%s%s%s%s%s", sn, row->long_name, *arg ? " " : "",
			 optional ? "[" : "", arg, optional ? "]" : "");
	else
		snprintf(buf, len, "%s%s%s", sn, *arg ? " " : "", arg);
}

/* The widest option column of t's rows up to OPTS_HELP_COLUMN. */
static int opts_column(const struct opts_option *t)
{
	int widest = 0;
	for (; t->kind != OPTS_END; t++) {
		char left[128];
		int w;
		if (t->kind == OPTS_INCLUDE) {
			w = opts_column(t->table);
		} else {
			opts_left(t, left, sizeof(left));
			w = (int)strlen(left);
		}
		if (w > widest && w <= OPTS_HELP_COLUMN)
			widest = w;
	}
	return widest;
}

/* Whether a row before row (in the whole table top) has its long name. */
static bool opts_hidden(const struct opts_option *top, const struct opts_option *row)
{
	struct opts_hit hits[2];
	return row->long_name &&
	       opts_match(top, NULL, row->long_name, strlen(row->long_name), 0, true, hits) &&
	       hits[0].row != row;
}

/* " (default: X)" of a row with OPTS_DEFAULT_*, else "". */
static void opts_default(const struct opts_option *row, char *buf, size_t len)
{
	buf[0] = 0;
	if ((row->flags & OPTS_DEFAULT_STRING) && *(const char *const *)row->value)
		snprintf(buf, len, " (default: %s)", *(const char *const *)row->value);
	else if (row->flags & OPTS_DEFAULT_DOUBLE)
		snprintf(buf, len, " (default: %g)", *(const double *)row->value);
}

static void opts_rows(FILE *f, const struct opts_option *top, const struct opts_option *t,
		      int column)
{
	for (; t->kind != OPTS_END; t++) {
		char left[128], def[128];
		if (t->kind == OPTS_INCLUDE) {
			opts_rows(f, top, t->table, column);
			continue;
		}
		if (!t->help || opts_hidden(top, t))
			continue;
		opts_left(t, left, sizeof(left));
		if ((int)strlen(left) > column)
			fprintf(f, "  %s\n  %-*s ", left, column, "");
		else
			fprintf(f, "  %-*s ", column, left);
		for (const char *h = t->help; *h; h++) {
			fputc(*h, f);
			if (*h == '\n')
				fprintf(f, "  %-*s ", column, "");
		}
		opts_default(t, def, sizeof(def));
		fprintf(f, "%s\n", def);
	}
}

/* --help of c, whose table holds the help row (opts_whole). */
static void opts_usage_whole(const struct opts_command *c, FILE *f)
{
	int column = opts_column(c->options) + 1;

	fputs(c->usage, f);
	if (c->about)
		fprintf(f, "\n%s", c->about);
	fputc('\n', f);
	opts_rows(f, c->options, c->options, column);
	if (c->footer)
		fprintf(f, "\n%s", c->footer);
	if (c->man)
		fprintf(f, "\nThe manual: man %s\n", c->man);
	else
		fprintf(f, "\nThe manual: man csampler-%s\n", c->name);
}

void opts_usage(const struct opts_command *c, FILE *f)
{
	struct opts_option rows[3];
	struct opts_command whole;
	opts_whole(c, &whole, rows);
	opts_usage_whole(&whole, f);
}

/* ---- shared rows ---- */

int opts_pids_call(const char *cmd, const struct opts_option *row, const char *value,
		   void *target)
{
	struct opts_pids *p = target;
	char *copy = cs_strdup(value), *save = NULL;
	int err = 0;
	size_t before = p->n;

	for (char *tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (cs_parse_u64(tok, &v) || v == 0 || v > 0x7fffffff)
			err = cs_error(EINVAL, "invalid PID list '%s': give -p PID[,PID...]", value);
		else if (p->n >= p->max)
			err = cs_error(E2BIG, "too many PIDs: -p takes at most %zu", p->max);
		else {
			p->pids = cs_realloc(p->pids, (p->n + 1) * sizeof(*p->pids));
			p->pids[p->n++] = (pid_t)v;
		}
	}
	free(copy);
	if (!err && p->n == before)
		err = cs_error(EINVAL, "invalid PID list '%s': give -p PID[,PID...]", value);
	return err;
}

int opts_word(const char *cmd, const char *option, const char *const *words, size_t nwords,
	      const char *value, int *out)
{
	struct cs_buf list = { 0 };
	size_t shown = 0, named = 0;
	int err;

	for (size_t i = 0; i < nwords; i++) {
		if (words[i] && !strcmp(words[i], value)) {
			*out = (int)i;
			return 0;
		}
		named += words[i] != NULL;
	}
	for (size_t i = 0; i < nwords; i++) {
		if (!words[i])
			continue;
		shown++;
		cs_buf_printf(&list, "%s%s", shown == 1 ? "" : shown == named ? " or " : ", ",
			      words[i]);
	}
	cs_buf_put(&list, "", 1);
	err = cs_error(EINVAL, "%s%sinvalid --%s '%s': use %s", cmd, *cmd ? ": " : "", option, value,
		       list.data);
	cs_buf_free(&list);
	return err;
}

int opts_json_call(const char *cmd, const struct opts_option *row, const char *value,
		   void *target)
{
	static const char *const formats[] = { "text", "json" };
	int which;
	int err = opts_word(cmd, row->long_name, formats, 2, value, &which);
	if (!err)
		*(bool *)target = which == 1;
	return err;
}

int opts_input(const struct opts_command *c, int argc, char **argv, int first, const char *given,
	       const char **input)
{
	if (given)
		*input = given;
	else if (first < argc)
		*input = argv[first++];
	return first < argc ? opts_unexpected(c, argv[first]) : 0;
}
