/* cmd_record.c: `csampler record`: parse options into record_opts and run the engine. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "analysis/profile.h"
#include "record/gpu_setup.h"
#include "record/output.h"
#include "record/record.h"
#include "analysis/stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Chosen by measurement (scripts/bench-record.sh, README): 32 KiB reaches the outermost frame
 * on deep stacks where perf's 8 KiB default truncates most of them, at a fraction of the
 * 64 KiB maximum's copying cost. */
#define RECORD_DEFAULT_STACK 32768
#define RECORD_MAX_STACK 65528
#define RECORD_DEFAULT_PAGES 2048
#define RECORD_MAX_PIDS 1024 /* record.c polls one pidfd per target */

static const char record_usage[] =
	"usage: csampler record [options] -- COMMAND [ARGS...]\n"
	"       csampler record [options] -p PID[,PID...] [--duration SEC]\n"
	"       csampler record --mode bpf -a|--cgroup PATH [--duration SEC]\n"
	"\n"
	"  -o, --output FILE      data file (default ./csampler.data; an old one becomes FILE.old);\n"
	"                         %p pid, %r rank ($RANK, $LOCAL_RANK, $OMPI_COMM_WORLD_RANK,\n"
	"                         else 'norank'), %h host, %t start time, %% a '%'\n"
	"  -F, --freq HZ          samples per second per CPU-busy thread (default 999)\n"
	"  -g, --call-graph MODE  dwarf (default), dwarf,SIZE or fp\n"
	"      --stack-size BYTES user stack bytes copied per sample in dwarf mode (default 32768, max 65528)\n"
	"  -m, --mmap-pages N     ring buffer pages per CPU, a power of two (default 2048)\n"
	"  -p, --pid PID[,PID]    attach to running processes and all their threads\n"
	"      --duration SEC     stop after SEC seconds\n"
	"      --keep-raw         also keep the raw registers and stack copies in the file\n"
	"      --no-compress      write uncompressed chunks\n"
	"      --no-python        do not read CPython frames: keep the interpreter's native frames\n"
	"      --no-debuginfod    do not look missing debug info up on the debuginfod servers of\n"
	"                         DEBUGINFOD_URLS (the command keeps the variable)\n"
	"      --gpu MODE         auto (default), on or off: CUDA kernels, copies, syncs and NVTX\n"
	"                         ranges with the CPU stack of every launch (CUPTI)\n"
	"      --gpu-latency      also CUPTI's launch-queue timestamps (queued/submitted): exact\n"
	"                         queue latency, at about 1.5% more run time on a launch-bound\n"
	"                         program; without, latency counts from the launch call's return\n"
	"      --mode MODE        auto (default: perf events, else ptrace), perf, ptrace or bpf\n"
	"                         (stacks walked in the kernel; root or CAP_BPF+CAP_PERFMON)\n"
	"  -a, --all-processes    every process of the machine (bpf), until --duration or ^C\n"
	"      --cgroup PATH      the processes of one cgroup v2 directory and below (bpf)\n"
	"      --idle             also sample threads off the CPU (blocked, sleeping, waiting):\n"
	"                         wall-clock time, each stack ending in [off-cpu: SYSCALL]\n"
	"  -q, --quiet            no summary, no live status line\n";

__attribute__((format(printf, 1, 2))) static int record_bad(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "csampler: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return CS_EXIT_ERROR;
}

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

static int parse_pids(const char *s, struct record_opts *o)
{
	char *copy = cs_strdup(s), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (cs_parse_u64(tok, &v) || v == 0 || v > 0x7fffffff) {
			free(copy);
			return -EINVAL;
		}
		if (o->npids >= RECORD_MAX_PIDS) {
			free(copy);
			return -E2BIG;
		}
		o->pids = cs_realloc(o->pids, (o->npids + 1) * sizeof(pid_t));
		o->pids[o->npids++] = (pid_t)v;
	}
	free(copy);
	return o->npids ? 0 : -EINVAL;
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
	s->mmap_pages = RECORD_DEFAULT_PAGES;
	if (geteuid() != 0) {
		long kb = cs_read_long_file("/proc/sys/kernel/perf_event_mlock_kb", 516);
		long pages = kb * 1024 / getpagesize() - 1;
		while (s->mmap_pages > 1 && s->mmap_pages > pages)
			s->mmap_pages /= 2;
	}
}

/* A getopt_long option handler's "go on to the next option". */
#define RECORD_OPT_NEXT (-1)

/* The long options without a short letter. */
enum { OPT_STACK = 256, OPT_DURATION, OPT_KEEP_RAW, OPT_NO_PYTHON, OPT_NO_COMPRESS, OPT_GPU,
       OPT_MODE, OPT_IDLE, OPT_NO_DEBUGINFOD, OPT_GPU_LATENCY, OPT_CGROUP };

/* -g fp, dwarf or dwarf,SIZE. RECORD_OPT_NEXT, or the exit status (printed). */
static int record_callgraph_option(struct record_opts *o, const char *arg)
{
	if (!strcmp(arg, "fp")) {
		o->sampler.callgraph = SAMPLER_CALLGRAPH_FP;
	} else if (!strcmp(arg, "dwarf")) {
		o->sampler.callgraph = SAMPLER_CALLGRAPH_DWARF;
	} else if (!strncmp(arg, "dwarf,", 6)) {
		o->sampler.callgraph = SAMPLER_CALLGRAPH_DWARF;
		if (parse_stack_size(arg + 6, &o->sampler.stack_size))
			return record_bad("invalid stack size in '-g %s': give bytes from 8 to 65528", arg);
	} else {
		return record_bad("invalid call-graph mode '%s': use dwarf, dwarf,SIZE or fp", arg);
	}
	return RECORD_OPT_NEXT;
}

/* --gpu auto|on|off and --mode auto|perf|ptrace|bpf (c says which). RECORD_OPT_NEXT, or the
 * exit status (printed). */
static int record_mode_option(int c, struct record_opts *o, const char *arg)
{
	static const char *const gpu_modes[] = { [GPU_MODE_AUTO] = "auto", [GPU_MODE_ON] = "on",
						 [GPU_MODE_OFF] = "off" };
	static const char *const modes[] = { [SAMPLER_MODE_AUTO] = "auto",
					     [SAMPLER_MODE_PERF] = "perf",
					     [SAMPLER_MODE_PTRACE] = "ptrace",
					     [SAMPLER_MODE_BPF] = "bpf" };
	bool gpu = c == OPT_GPU;
	const char *const *names = gpu ? gpu_modes : modes;
	size_t n = gpu ? sizeof(gpu_modes) / sizeof(*gpu_modes) : sizeof(modes) / sizeof(*modes);

	for (size_t i = 0; i < n; i++) {
		if (names[i] && !strcmp(arg, names[i])) {
			if (gpu)
				o->gpu_mode = (enum gpu_mode)i;
			else
				o->sampler.mode = (enum sampler_mode)i;
			return RECORD_OPT_NEXT;
		}
	}
	return gpu ? record_bad("invalid --gpu '%s': use auto, on or off", arg)
		   : record_bad("invalid --mode '%s': use auto, perf, ptrace or bpf", arg);
}

/* One option of record (c, with optarg) into *o. RECORD_OPT_NEXT, or the exit status to
 * return now (after --help, or a bad value: printed). */
static int record_option(int c, struct record_opts *o, const char **rate_arg, char **argv)
{
	uint64_t v;

	switch (c) {
	case 'o':
		if (!*optarg)
			return record_bad("empty output path: give -o FILE");
		if (record_output_check(optarg) < 0)
			return CS_EXIT_ERROR;
		o->output = optarg;
		return RECORD_OPT_NEXT;
	case 'F':
		*rate_arg = optarg; /* checked against the backend's cap once --mode is known */
		return RECORD_OPT_NEXT;
	case 'a':
		o->sampler.all = true;
		return RECORD_OPT_NEXT;
	case OPT_CGROUP:
		if (!*optarg)
			return record_bad("empty cgroup path: give --cgroup /sys/fs/cgroup/...");
		o->sampler.cgroup = optarg;
		return RECORD_OPT_NEXT;
	case 'g':
		return record_callgraph_option(o, optarg);
	case OPT_STACK:
		if (parse_stack_size(optarg, &o->sampler.stack_size))
			return record_bad("invalid stack size '%s': give bytes from 8 to 65528", optarg);
		return RECORD_OPT_NEXT;
	case 'm':
		if (cs_parse_u64(optarg, &v) || v == 0 || (v & (v - 1)) || v > (1u << 20))
			return record_bad("invalid ring buffer size '-m %s': give a power of two number of pages, e.g. 256", optarg);
		o->sampler.mmap_pages = (uint32_t)v;
		return RECORD_OPT_NEXT;
	case 'p':
		if ((c = parse_pids(optarg, o)) == -E2BIG)
			return record_bad("too many PIDs: -p takes at most %d", RECORD_MAX_PIDS);
		if (c)
			return record_bad("invalid PID list '%s': give -p PID[,PID...]", optarg);
		return RECORD_OPT_NEXT;
	case OPT_DURATION: {
		double d;
		if (cs_parse_double(optarg, &d) || d <= 0 || d > 1e7)
			return record_bad("invalid duration '%s': give seconds, e.g. --duration 10", optarg);
		o->duration_s = d;
		return RECORD_OPT_NEXT;
	}
	case OPT_KEEP_RAW:
		o->keep_raw = true;
		return RECORD_OPT_NEXT;
	case OPT_NO_COMPRESS:
		o->compress = false;
		return RECORD_OPT_NEXT;
	case OPT_NO_PYTHON:
		o->no_python = true;
		return RECORD_OPT_NEXT;
	case OPT_NO_DEBUGINFOD:
		o->no_debuginfod = true;
		return RECORD_OPT_NEXT;
	case OPT_GPU_LATENCY:
		/* the injected library reads it from the command's environment */
		setenv("CSAMPLER_GPU_LATENCY", "1", 1);
		return RECORD_OPT_NEXT;
	case OPT_GPU:
	case OPT_MODE:
		return record_mode_option(c, o, optarg);
	case OPT_IDLE:
		o->sampler.idle = true;
		return RECORD_OPT_NEXT;
	case 'q':
		cs_quiet = 1;
		return RECORD_OPT_NEXT;
	case 'h':
		fputs(record_usage, stdout);
		return 0;
	default:
		if (optopt && optopt < 256)
			fprintf(stderr, "csampler: record: unknown option '-%c' or missing value; see 'csampler record --help'\n", optopt);
		else
			fprintf(stderr, "csampler: record: unknown option '%s' or missing value; see 'csampler record --help'\n",
				argv[optind - 1]);
		return CS_EXIT_ERROR;
	}
	return RECORD_OPT_NEXT;
}

/* The checks that need every option: targets, the mode against -a/--cgroup, --keep-raw and
 * -g, the rate against the backend's cap. RECORD_OPT_NEXT, or the exit status to return
 * (printed; o->pids freed). */
static int record_check_opts(struct record_opts *o, const char *rate_arg)
{
	uint64_t v;

	if (o->sampler.all || o->sampler.cgroup) {
		const char *what = o->sampler.all ? "-a" : "--cgroup";
		bool bad = (o->sampler.all && o->sampler.cgroup) || o->argv || o->npids;
		free(o->pids);
		o->pids = NULL;
		if (bad)
			return record_bad("%s records by itself: give no command, -p or other target with it", what);
		if (o->sampler.mode == SAMPLER_MODE_AUTO)
			o->sampler.mode = SAMPLER_MODE_BPF; /* the only backend that samples system-wide */
		if (o->sampler.mode != SAMPLER_MODE_BPF)
			return record_bad("%s needs --mode bpf (perf and ptrace modes sample given processes only)", what);
		if (o->sampler.idle)
			return record_bad("--idle samples the threads of given processes: not with %s", what);
	}
	if (o->keep_raw && o->sampler.mode == SAMPLER_MODE_BPF) {
		free(o->pids);
		return record_bad("--keep-raw keeps stack copies, and bpf mode takes none (the kernel walks the stacks): use --mode perf to keep them");
	}
	if (o->sampler.callgraph == SAMPLER_CALLGRAPH_FP && o->sampler.mode == SAMPLER_MODE_BPF) {
		free(o->pids);
		return record_bad("-g fp chooses perf mode's user stacks; bpf mode walks them itself (unwind rows, else frame pointers): leave -g out");
	}
	if (rate_arg) {
		uint64_t max_rate = sampler_max_rate(o->sampler.mode);
		if (cs_parse_u64(rate_arg, &v) || v == 0 || v > max_rate) {
			fprintf(stderr,
				"csampler: invalid rate '-F %s': give a frequency in Hz from 1 to %llu (%s)\n",
				rate_arg, (unsigned long long)max_rate,
				o->sampler.mode == SAMPLER_MODE_PTRACE ? "ptrace mode's cap"
								       : "kernel.perf_event_max_sample_rate");
			free(o->pids);
			return CS_EXIT_ERROR;
		}
		o->sampler.freq_hz = v;
	}
	if (o->argv && o->npids) {
		free(o->pids);
		return record_bad("give either a command or -p PID, not both");
	}
	if (!o->argv && !o->npids && !o->sampler.all && !o->sampler.cgroup)
		return record_bad("nothing to record: give a command after -- or attach with -p PID");
	if (!o->sampler.mmap_pages)
		record_default_sampler(&o->sampler);
	for (size_t i = 0; i < o->npids; i++) {
		if (kill(o->pids[i], 0) < 0 && errno == ESRCH) {
			fprintf(stderr, "csampler: no such process %d: check the PID with ps\n", (int)o->pids[i]);
			free(o->pids);
			return CS_EXIT_ERROR;
		}
	}
	return RECORD_OPT_NEXT;
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
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "freq", required_argument, NULL, 'F' },
		{ "call-graph", required_argument, NULL, 'g' },
		{ "stack-size", required_argument, NULL, OPT_STACK },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "keep-raw", no_argument, NULL, OPT_KEEP_RAW },
		{ "no-compress", no_argument, NULL, OPT_NO_COMPRESS },
		{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
		{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
		{ "gpu", required_argument, NULL, OPT_GPU },
		{ "gpu-latency", no_argument, NULL, OPT_GPU_LATENCY },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "all-processes", no_argument, NULL, 'a' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct record_opts o = {
		.output = "csampler.data",
		.sampler = { .freq_hz = 999, .callgraph = SAMPLER_CALLGRAPH_DWARF,
			     .stack_size = RECORD_DEFAULT_STACK, .mmap_pages = 0 },
		.compress = true,
		.argc_all = argc,
		.argv_all = argv,
	};
	int c, status;
	const char *rate_arg = NULL;

	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option, which starts the command (as perf record does) */
	while ((c = getopt_long(argc, argv, "+o:F:g:m:p:aqh", longopts, NULL)) != -1)
		if ((status = record_option(c, &o, &rate_arg, argv)) != RECORD_OPT_NEXT)
			return status;
	if (optind < argc)
		o.argv = argv + optind;
	if ((status = record_check_opts(&o, rate_arg)) != RECORD_OPT_NEXT)
		return status;
	char why[512] = "";
	if (record_gpu_prepare(&o, why, sizeof(why))) {
		free(o.pids);
		gpu_setup_free(&o.gpu);
		return CS_EXIT_ERROR;
	}
	o.gpu_off_reason = why[0] ? why : NULL;
	char *written = NULL;
	status = record_run(&o, &written);
	if (o.argv && o.gpu.dir)
		rmdir(o.gpu.dir); /* normally gone already (record_run removes what it read) */
	record_summary_of(written);
	free(written);
	free(o.pids);
	gpu_setup_free(&o.gpu);
	return status;
}
