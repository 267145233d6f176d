/* cmd_record.c: `csampler record`: parse options into record_opts and run the engine. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/profile.h"
#include "record/gpu_setup.h"
#include "record/output.h"
#include "record/record.h"
#include "analysis/stacks.h"
#include "cmd/opts.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Chosen by measurement (scripts/bench-record.sh, README): 32 KiB reaches the outermost frame
 * on deep stacks where perf's 8 KiB default truncates most of them, at a fraction of the
 * 64 KiB maximum's copying cost. */
#define RECORD_DEFAULT_STACK 32768
#define RECORD_MAX_STACK 65528
#define RECORD_MAX_PIDS 1024 /* record.c polls one pidfd per target */

static int parse_stack_size(const char *s, uint32_t *out)
{
	uint64_t v;
	if (cs_parse_u64(s, &v) || v < 8 || v > RECORD_MAX_STACK)
		return -EINVAL;
	*out = (uint32_t)((v + 7) & ~7ull);
	if (*out > RECORD_MAX_STACK)
		*out = RECORD_MAX_STACK;
	return 0;
}

/* --gpu: fill o->gpu (capture on) or leave it empty (off, why says why). Returns -1 when
 * --gpu on cannot be honoured (the line was printed). Shared with cmd_top.c (cmds.h). */
int record_gpu_prepare(struct record_opts *o, char *why, size_t whylen)
{
	if (o->gpu_mode == GPU_MODE_OFF) {
		snprintf(why, whylen, "--gpu off");
		return 0;
	}
	if (!o->argv && o->gpu_mode == GPU_MODE_ON) {
		/* attach: processes started with `csampler env` write their records already; the
		 * others get the library loaded into them (record/gpu_attach.h) */
		if (gpu_setup_user_dir(&o->gpu, true)) {
			snprintf(why, whylen, "GPU record directory refused");
			return -1;
		}
		char fwhy[512];
		if (gpu_setup_find(&o->gpu, fwhy, sizeof(fwhy)) && !o->gpu.inject_lib) {
			/* only processes started with csampler env give records */
			cs_warn("--gpu on: %s: GPU capture only in processes started with 'csampler env'", fwhy);
			return 0;
		}
		o->gpu_inject = true;   /* libcupti.so.13 is optional: the process may have one */
		return 0;
	}
	if (!o->argv) {
		/* attach: read what `csampler env` made the processes write */
		int err = gpu_setup_user_dir(&o->gpu, false);
		if (err == -ENOENT) {
			snprintf(why, whylen, "no GPU record directory: start the program with csampler env");
			if (o->gpu_mode == GPU_MODE_ON)
				cs_info("--gpu on: no GPU record directory: only programs started with 'csampler env' give GPU records in attach mode");
			return 0;
		}
		if (err) {
			snprintf(why, whylen, "GPU record directory refused");
			return o->gpu_mode == GPU_MODE_ON ? -1 : 0;
		}
		return 0;
	}
	const char *pre = getenv("CUDA_INJECTION64_PATH");
	if (pre && *pre) {
		/* another tool's injection library: replacing it would silently break that tool */
		if (o->gpu_mode == GPU_MODE_ON) {
			cs_error(EBUSY, "--gpu on: CUDA_INJECTION64_PATH is already set (%s): unset it, or use --gpu off to keep it", pre);
			return -1;
		}
		snprintf(why, whylen, "CUDA_INJECTION64_PATH already set");
		return 0;
	}
	if (gpu_setup_find(&o->gpu, why, whylen)) {
		if (o->gpu_mode == GPU_MODE_ON) {
			cs_error(ENOENT, "--gpu on: %s", why);
			return -1;
		}
		gpu_setup_free(&o->gpu);
		return 0;
	}
	if (gpu_setup_private_dir(&o->gpu)) {
		if (o->gpu_mode == GPU_MODE_ON)
			return -1;
		snprintf(why, whylen, "no private directory");
		gpu_setup_free(&o->gpu);
		return 0;
	}
	why[0] = 0;
	return 0;
}

void record_default_sampler(struct sampler_opts *s)
{
	if (!s->freq_hz)
		s->freq_hz = 999;
	if (!s->stack_size)
		s->stack_size = RECORD_DEFAULT_STACK;
	if (s->mmap_pages)
		return;
	/* An unprivileged user may lock perf_event_mlock_kb per CPU (plus RLIMIT_MEMLOCK). */
	s->mmap_pages = SAMPLER_DEFAULT_PAGES;
	if (geteuid() != 0) {
		long kb = cs_read_long_file("/proc/sys/kernel/perf_event_mlock_kb", 516);
		long pages = kb * 1024 / getpagesize() - 1;
		while (s->mmap_pages > 1 && s->mmap_pages > pages)
			s->mmap_pages /= 2;
	}
}

/* Which of record's valued options a call row is. */
enum record_option { RECORD_OPT_CALLGRAPH, RECORD_OPT_STACK, RECORD_OPT_PAGES,
		     RECORD_OPT_DURATION, RECORD_OPT_CGROUP };

/* -g fp, dwarf or dwarf,SIZE. 0, or -EINVAL (printed). */
static int record_callgraph_option(struct record_opts *o, const char *arg)
{
	if (!strcmp(arg, "fp")) {
		o->sampler.callgraph = SAMPLER_CALLGRAPH_FP;
	} else if (!strcmp(arg, "dwarf")) {
		o->sampler.callgraph = SAMPLER_CALLGRAPH_DWARF;
	} else if (!strncmp(arg, "dwarf,", 6)) {
		o->sampler.callgraph = SAMPLER_CALLGRAPH_DWARF;
		if (parse_stack_size(arg + 6, &o->sampler.stack_size))
			return cs_error(EINVAL, "invalid stack size in '-g %s': give bytes from 8 to 65528", arg);
	} else {
		return cs_error(EINVAL, "invalid call-graph mode '%s': use dwarf, dwarf,SIZE or fp", arg);
	}
	return 0;
}

/* -g, --stack-size, -m, --duration and --cgroup into a struct record_opts. 0, or -EINVAL
 * (printed). */
static int record_value_option(const char *cmd, const struct opts_option *row, const char *arg,
			       void *target)
{
	struct record_opts *o = target;
	uint64_t v;
	double d;

	switch (row->number) {
	case RECORD_OPT_CALLGRAPH:
		return record_callgraph_option(o, arg);
	case RECORD_OPT_STACK:
		if (parse_stack_size(arg, &o->sampler.stack_size))
			return cs_error(EINVAL, "invalid stack size '%s': give bytes from 8 to 65528", arg);
		return 0;
	case RECORD_OPT_PAGES:
		if (cs_parse_u64(arg, &v) || v == 0 || (v & (v - 1)) || v > (1u << 20))
			return cs_error(EINVAL, "invalid ring buffer size '-m %s': give a power of two number of pages, e.g. 256", arg);
		o->sampler.mmap_pages = (uint32_t)v;
		o->sampler.mmap_pages_given = true;
		return 0;
	case RECORD_OPT_DURATION:
		if (cs_parse_double(arg, &d) || d <= 0 || d > 1e7)
			return cs_error(EINVAL, "invalid duration '%s': give seconds, e.g. --duration 10", arg);
		o->duration_s = d;
		return 0;
	default:
		if (!*arg)
			return cs_error(EINVAL, "empty cgroup path: give --cgroup /sys/fs/cgroup/...");
		o->sampler.cgroup = arg;
		return 0;
	}
}

int record_output_call(const char *cmd, const struct opts_option *row, const char *value,
		       void *target)
{
	if (!*value)
		return cs_error(EINVAL, "empty output path: give -o FILE");
	*(const char **)target = value;
	return record_output_check(value) < 0 ? -EINVAL : 0;
}

int record_gpu_mode_call(const char *cmd, const struct opts_option *row, const char *value,
			 void *target)
{
	static const char *const words[] = { [GPU_MODE_AUTO] = "auto", [GPU_MODE_ON] = "on",
					     [GPU_MODE_OFF] = "off" };
	int i, err = opts_word(cmd, "gpu", words, sizeof(words) / sizeof(*words), value, &i);
	if (!err)
		*(enum gpu_mode *)target = (enum gpu_mode)i;
	return err;
}

int record_sampler_mode_call(const char *cmd, const struct opts_option *row, const char *value,
			     void *target)
{
	const char *const words[] = { [SAMPLER_MODE_AUTO] = "auto", [SAMPLER_MODE_PERF] = "perf",
				      [SAMPLER_MODE_PTRACE] = "ptrace",
				      [SAMPLER_MODE_BPF] = row->number ? NULL : "bpf" };
	int i, err = opts_word(cmd, "mode", words, sizeof(words) / sizeof(*words), value, &i);
	if (!err)
		*(enum sampler_mode *)target = (enum sampler_mode)i;
	return err;
}

#define RECORD_ROW(s, l, which, argname, text) { .kind = OPTS_CALL, .short_name = (s), \
		.long_name = (l), .value = o, .arg = (argname), .call = record_value_option, \
		.number = (which), .help = (text) }

/* Parse argv into *o (its command: o->argv, or NULL); -F's value into *rate_arg, checked
 * once --mode is known. Returns 0, 1 after --help, or -errno after one line. */
static int record_parse_args(int argc, char **argv, struct record_opts *o, const char **rate_arg)
{
	struct opts_pids pids = { .max = RECORD_MAX_PIDS };
	bool no_compress = false, gpu_latency = false;
	const struct opts_option options[] = {
		OPTS_CALL_ROW('o', "output", &o->output, "FILE", record_output_call,
			      "data file (default ./csampler.data; an old one becomes FILE.old);\n"
			      "%p pid, %r rank ($RANK, $LOCAL_RANK, $OMPI_COMM_WORLD_RANK,\n"
			      "else 'norank'), %h host, %t start time, %% a '%'"),
		OPTS_STRING_ROW('F', "freq", rate_arg, "HZ",
				"samples per second per CPU-busy thread (default 999)"),
		RECORD_ROW('g', "call-graph", RECORD_OPT_CALLGRAPH, "MODE", "dwarf (default), dwarf,SIZE or fp"),
		RECORD_ROW(0, "stack-size", RECORD_OPT_STACK, "BYTES",
			   "user stack bytes copied per sample in dwarf mode (default 32768,\n"
			   "max 65528)"),
		RECORD_ROW('m', "mmap-pages", RECORD_OPT_PAGES, "N",
			   "ring buffer pages per CPU, a power of two (default 2048)"),
		OPTS_CALL_ROW('p', "pid", &pids, "PID[,PID]", opts_pids_call,
			      "attach to running processes and all their threads"),
		RECORD_ROW(0, "duration", RECORD_OPT_DURATION, "SEC", "stop after SEC seconds"),
		OPTS_FLAG_ROW(0, "keep-raw", &o->keep_raw,
			      "also keep the raw registers and stack copies in the file"),
		OPTS_FLAG_ROW(0, "no-compress", &no_compress, "write uncompressed chunks"),
		OPTS_FLAG_ROW(0, "no-python", &o->no_python,
			      "do not read CPython frames: keep the interpreter's native frames"),
		OPTS_FLAG_ROW(0, "no-debuginfod", &o->no_debuginfod,
			      "do not look missing debug info up on the debuginfod servers of\n"
			      "DEBUGINFOD_URLS (the command keeps the variable)"),
		OPTS_CALL_ROW(0, "gpu", &o->gpu_mode, "MODE", record_gpu_mode_call,
			      "auto (default), on or off: CUDA kernels, copies, syncs and NVTX\n"
			      "ranges with the CPU stack of every launch (CUPTI)"),
		OPTS_FLAG_ROW(0, "gpu-latency", &gpu_latency,
			      "also CUPTI's launch-queue timestamps (queued/submitted): exact\n"
			      "queue latency, at about 1.5% more run time on a launch-bound\n"
			      "program; without, latency counts from the launch call's return"),
		OPTS_CALL_ROW(0, "mode", &o->sampler.mode, "MODE", record_sampler_mode_call,
			      "auto (default: bpf where permitted, else perf events, else\n"
			      "ptrace), perf, ptrace or bpf (stacks walked in the kernel;\n"
			      "root or CAP_BPF+CAP_PERFMON)"),
		OPTS_FLAG_ROW('a', "all-processes", &o->sampler.all,
			      "every process of the machine (bpf), until --duration or ^C"),
		RECORD_ROW(0, "cgroup", RECORD_OPT_CGROUP, "PATH",
			   "the processes of one cgroup v2 directory and below (bpf)"),
		OPTS_FLAG_ROW(0, "idle", &o->sampler.idle,
			      "also sample threads off the CPU (blocked, sleeping, waiting):\n"
			      "wall-clock time, each stack ending in [off-cpu: SYSCALL]"),
		OPTS_INT_ROW('q', "quiet", &cs_quiet, 1, "no summary, no live status line"),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("record", options);
	int first, err = opts_parse(&cmd, argc, argv, &first);

	o->pids = pids.pids;
	o->npids = pids.n;
	if (err)
		return err;
	o->compress = !no_compress;
	if (gpu_latency) /* the injected library reads it from the command's environment */
		setenv("CSAMPLER_GPU_LATENCY", "1", 1);
	if (first < argc)
		o->argv = argv + first;
	return 0;
}

/* The checks that need every option: targets, the mode against -a/--cgroup, --keep-raw and
 * -g, the rate against the backend's cap. 0, or -errno (printed). */
static int record_check_opts(struct record_opts *o, const char *rate_arg)
{
	uint64_t v;

	if (o->sampler.all || o->sampler.cgroup) {
		const char *what = o->sampler.all ? "-a" : "--cgroup";
		bool bad = (o->sampler.all && o->sampler.cgroup) || o->argv || o->npids;
		if (bad)
			return cs_error(EINVAL, "%s records by itself: give no command, -p or other target with it", what);
		if (o->sampler.mode == SAMPLER_MODE_AUTO)
			o->sampler.mode = SAMPLER_MODE_BPF; /* the only backend that samples system-wide */
		if (o->sampler.mode != SAMPLER_MODE_BPF)
			return cs_error(EINVAL, "%s needs --mode bpf (perf and ptrace modes sample given processes only)", what);
		if (o->sampler.idle)
			return cs_error(EINVAL, "--idle samples the threads of given processes: not with %s", what);
	}
	o->sampler.keep_raw = o->keep_raw; /* auto then leaves bpf out */
	if (o->keep_raw && o->sampler.mode == SAMPLER_MODE_BPF)
		return cs_error(EINVAL, "--keep-raw keeps stack copies, and bpf mode takes none (the kernel walks the stacks): use --mode perf to keep them");
	if (o->sampler.callgraph == SAMPLER_CALLGRAPH_FP && o->sampler.mode == SAMPLER_MODE_BPF)
		return cs_error(EINVAL, "-g fp chooses perf mode's user stacks; bpf mode walks them itself (unwind rows, else frame pointers): leave -g out");
	if (rate_arg) {
		uint64_t max_rate = sampler_max_rate(o->sampler.mode);
		if (cs_parse_u64(rate_arg, &v) || v == 0 || v > max_rate)
			return cs_error(EINVAL, "invalid rate '-F %s': give a frequency in Hz from 1 to "
					"%llu (%s)", rate_arg, (unsigned long long)max_rate,
					o->sampler.mode == SAMPLER_MODE_PTRACE
						? "ptrace mode's cap"
						: "kernel.perf_event_max_sample_rate");
		o->sampler.freq_hz = v;
	}
	if (!o->sampler.all && !o->sampler.cgroup) {
		int err = record_check_targets(o, "nothing to record");
		if (err < 0)
			return err;
	}
	if (!o->sampler.mmap_pages)
		record_default_sampler(&o->sampler);
	return 0;
}

int record_check_targets(const struct record_opts *o, const char *nothing)
{
	if (o->argv && o->npids)
		return cs_error(EINVAL, "give either a command or -p PID, not both");
	if (!o->argv && !o->npids)
		return cs_error(EINVAL, "%s: give a command after -- or attach with -p PID", nothing);
	for (size_t i = 0; i < o->npids; i++)
		if (kill(o->pids[i], 0) < 0 && errno == ESRCH)
			return cs_error(ESRCH, "no such process %d: check the PID with ps",
					(int)o->pids[i]);
	return 0;
}

/* The top-5 summary on a terminal: read back from the finished file, here rather than in the
 * recording engine, so the writer never depends on the reader. */
static void record_summary_of(const char *written)
{
	struct profile *p;

	if (written && isatty(2) && !cs_quiet && profile_load(written, &p) == 0) {
		stacks_print_summary(p, stderr, 5);
		profile_free(p);
	}
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = {
		.output = "csampler.data",
		.sampler = { .freq_hz = 999, .callgraph = SAMPLER_CALLGRAPH_DWARF,
			     .stack_size = RECORD_DEFAULT_STACK, .mmap_pages = 0 },
		.compress = true,
		.argc_all = argc,
		.argv_all = argv,
	};
	const char *rate_arg = NULL;
	char why[512] = "", *written = NULL;
	int status, err = record_parse_args(argc, argv, &o, &rate_arg);

	if (!err)
		err = record_check_opts(&o, rate_arg);
	if (!err && record_gpu_prepare(&o, why, sizeof(why)))
		err = -EINVAL; /* printed */
	if (err) {
		status = opts_exit_status(err);
		goto out;
	}
	o.gpu_off_reason = why[0] ? why : NULL;
	status = record_run(&o, &written);
	if (o.argv && o.gpu.dir)
		rmdir(o.gpu.dir); /* normally gone already (record_run removes what it read) */
	record_summary_of(written);
out:
	free(written);
	free(o.pids);
	gpu_setup_free(&o.gpu);
	return status;
}
