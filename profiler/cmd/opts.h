/* opts.h: the commands' option parser. Each command describes its options once, in a table of
 * struct opts_option (local to the command, so that rows point at its variables, as perf's
 * parse-options tables do); opts_parse() reads argv with it, and the same table writes
 * `--help` (opts_usage()), which names the command's man page. One printer says "needs a
 * value", "unknown option" and "unexpected argument" for every command.
 *
 * What argv may hold, for every command: long options with "--name VALUE" or "--name=VALUE"
 * (an unambiguous prefix of the name is enough, as with getopt_long), short options "-o VALUE",
 * "-oVALUE" and grouped flags "-aq", "--" to end the options, and operands. A value that is
 * required is the next argument whatever it looks like ("--limit -3" gives --limit "-3"). */
#ifndef CSAMPLER_OPTS_H
#define CSAMPLER_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

enum opts_kind {
	OPTS_END = 0,   /* the last row */
	OPTS_FLAG,      /* value: bool *, set to true */
	OPTS_INT,       /* value: int *, set to the row's number (--cpu, --gpu: one field) */
	OPTS_STRING,    /* value: const char **, set to the option's value */
	OPTS_CALL,      /* call(cmd, row, option's value, value) */
	OPTS_HELP,      /* print --help on standard output; opts_parse returns 1 (every
			 * command has -h, --help after its own rows: tables leave it out) */
	OPTS_INCLUDE,   /* rows of another table (table), whose calls get this row's value */
};

/* Flags of a row. */
#define OPTS_OPTIONAL_VALUE 1u /* the value may be left out: "--steps" or "--steps=3-4", and
				* the next argument when the row's takes_next accepts it */
#define OPTS_DEFAULT_STRING 2u /* --help adds "(default: X)", X the const char * at value
				* when not NULL: the help cannot drift from the default */
#define OPTS_DEFAULT_DOUBLE 4u /* the same for the double at value */

struct opts_option;

/* A call row's handler: set target from value (NULL for a row without a value). cmd names the
 * command for messages. Returns 0, 1 to stop with exit status 0 (after printing what the
 * option asked for), or -errno after one line on stderr. */
typedef int (*opts_call_fn)(const char *cmd, const struct opts_option *row, const char *value,
			    void *target);

struct opts_option {
	enum opts_kind kind;
	char short_name;            /* 0: none */
	const char *long_name;      /* NULL: none */
	void *value;                /* where the option goes (see enum opts_kind) */
	const char *arg;            /* the value's name in --help ("FILE"); NULL: no value */
	const char *help;           /* --help's text; '\n' starts an aligned line */
	opts_call_fn call;          /* OPTS_CALL */
	int number;                 /* OPTS_INT's value; a call row's own use (which option) */
	unsigned flags;             /* OPTS_OPTIONAL_VALUE, OPTS_DEFAULT_* */
	bool (*takes_next)(const char *arg); /* OPTS_OPTIONAL_VALUE: whether a separate next
					      * argument is the value */
	const struct opts_option *table; /* OPTS_INCLUDE */
};

#define OPTS_FLAG_ROW(s, l, v, h) { .kind = OPTS_FLAG, .short_name = (s), .long_name = (l), \
				    .value = (v), .help = (h) }
#define OPTS_INT_ROW(s, l, v, n, h) { .kind = OPTS_INT, .short_name = (s), .long_name = (l), \
				      .value = (v), .number = (n), .help = (h) }
#define OPTS_STRING_ROW(s, l, v, a, h) { .kind = OPTS_STRING, .short_name = (s), \
					 .long_name = (l), .value = (v), .arg = (a), .help = (h) }
#define OPTS_CALL_ROW(s, l, v, a, f, h) { .kind = OPTS_CALL, .short_name = (s), \
					  .long_name = (l), .value = (v), .arg = (a), \
					  .call = (f), .help = (h) }
#define OPTS_INCLUDE_ROW(t, v) { .kind = OPTS_INCLUDE, .table = (t), .value = (v) }
#define OPTS_HELP_ROW { .kind = OPTS_HELP, .short_name = 'h', .long_name = "help", \
			.help = "show this help" }
#define OPTS_END_ROW { .kind = OPTS_END }

/* Flags of a command. */
#define OPTS_STOP_AT_OPERAND 1u /* the first operand ends the options (it starts a command
				 * line, as in record -- CMD); otherwise options and operands mix
				 * and the operands are moved behind the options, as getopt does */
#define OPTS_ONE_DASH_LONG 2u   /* "-name" is a long option too (flamegraph.pl's Getopt::Long) */

struct opts_command {
	const char *name;           /* "report"; "" for csampler's own options */
	const char *usage;          /* "usage: ..." lines, each ending in '\n' */
	const char *about;          /* what the command does: lines after usage, or NULL */
	const char *footer;         /* lines after the options (keys, exit status), or NULL */
	const char *man;            /* the man page; NULL: "csampler-" and the name */
	const struct opts_option *options;
	unsigned flags;             /* OPTS_STOP_AT_OPERAND, OPTS_ONE_DASH_LONG */
};

/* Read argv[1..argc) with c's table. *first is set to the index of the first operand (the
 * operands are argv[*first..argc), argv[argc] stays NULL). Returns 0, 1 when the command is
 * done (--help printed), or -errno after one line on stderr. */
int opts_parse(const struct opts_command *c, int argc, char **argv, int *first);

/* The exit status of a command whose opts_parse returned err (not 0): 0 after --help, else
 * CS_EXIT_ERROR. */
int opts_exit_status(int err);

/* --help: usage, about, the options in table order (a row that an earlier one of the same
 * long name hides is left out: it cannot be reached), the footer and the man page. */
void opts_usage(const struct opts_command *c, FILE *f);

/* "csampler: CMD: unexpected argument 'ARG'; see 'csampler CMD --help'". Returns -EINVAL. */
int opts_unexpected(const struct opts_command *c, const char *arg);

/* A reader's data file: given (-i FILE) when not NULL, else the one operand argv[first] when
 * there is one (`csampler report my.data`); *input is left alone without either. Returns 0,
 * or -EINVAL after "unexpected argument" for any other operand. */
int opts_input(const struct opts_command *c, int argc, char **argv, int first, const char *given,
	       const char **input);

/* A call row for "-p PID[,PID...]" (record, top, dump): value is a struct opts_pids. */
struct opts_pids {
	pid_t *pids;                /* cs_realloc'd; the caller frees */
	size_t n;
	size_t max;                 /* at most this many in all */
};
int opts_pids_call(const char *cmd, const struct opts_option *row, const char *value,
		   void *target);

/* A word out of a list (--gpu auto|on|off): *out becomes value's index in words (NULL entries
 * are skipped). Returns 0, or -EINVAL after "CMD: invalid --OPTION 'VALUE': use a, b or c". */
int opts_word(const char *cmd, const char *option, const char *const *words, size_t nwords,
	      const char *value, int *out);

/* A call row for "--format text|json": value is a bool *, true for json. */
int opts_json_call(const char *cmd, const struct opts_option *row, const char *value,
		   void *target);

#endif
