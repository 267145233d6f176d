/* cmds.h: the entry points of the subcommands, one per profiler/cmd/cmd_<name>.c (flame and diff
 * share cmd_flame.c). Each takes argv with argv[0] = the subcommand name and returns the process
 * exit status; each parses its options with one table of cmd/opts.h. */
#ifndef CSAMPLER_CMDS_H
#define CSAMPLER_CMDS_H

#include <stddef.h>

#include "cmd/opts.h"

/* One row per subcommand (commands.c, in the order `csampler --help` lists them). */
struct cmd_entry {
	const char *name;            /* "report" */
	int (*run)(int argc, char **argv);
	const char *summary;         /* its line in `csampler --help` */
	const char *usage;           /* what its --help prints: "usage: ..." lines, */
	const char *about;           /* what it does (or NULL), */
	const char *footer;          /* and lines after the options (or NULL) */
	unsigned flags;              /* OPTS_STOP_AT_OPERAND, OPTS_ONE_DASH_LONG */
};
extern const struct cmd_entry cmd_entries[];
extern const size_t cmd_nentries;
/* The row of subcommand name, or NULL. */
const struct cmd_entry *cmd_find(const char *name);
/* The opts_command of subcommand name over its option table: its row's texts and flags, its
 * man page csampler-NAME (opts_usage). */
struct opts_command cmd_describe(const char *name, const struct opts_option *options);

int cmd_record(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_folded(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* `report --compare` (cmd_compare.c), with report's parsed options. */
struct report_opts;
struct profile_filter;
int report_compare(const struct report_opts *o, const struct profile_filter *filter);

/* Shared by `record` and `top` (cmd_record.c): --gpu's set-up, and the sampler's defaults
 * (rate, stack copy, ring pages for this user) for fields left 0. */
struct record_opts;
struct sampler_opts;
int record_gpu_prepare(struct record_opts *o, char *why, size_t whylen);
void record_default_sampler(struct sampler_opts *s);
/* A command or -p PIDs, not both, not neither (nothing: "nothing to record"), and every PID
 * alive. 0, or -errno after one line. */
int record_check_targets(const struct record_opts *o, const char *nothing);
/* Call rows (cmd/opts.h) of -o FILE (value: const char **; a pattern of record/output.h),
 * --gpu auto|on|off (value: enum gpu_mode *) and --mode
 * auto|perf|ptrace|bpf (value: enum sampler_mode *; a row number of 1 leaves bpf out). */
struct opts_option;
int record_output_call(const char *cmd, const struct opts_option *row, const char *value,
		       void *target);
int record_gpu_mode_call(const char *cmd, const struct opts_option *row, const char *value,
			 void *target);
int record_sampler_mode_call(const char *cmd, const struct opts_option *row, const char *value,
			     void *target);

#endif
