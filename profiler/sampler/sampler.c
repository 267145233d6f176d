/* sampler.c: the backend-independent half of the sampler: picking the backend (--mode, or
 * auto's walk down the ordered list of backends: bpf, perf events, ptrace), dispatching through its ops table, the batch of
 * copied-out events both backends fill, and the /proc readers that describe a process that
 * existed before sampling started. */
#include "sampler/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The errors that mean "perf events are not allowed here", as opposed to a bad setting: auto
 * mode falls back to ptrace on these only. */
static bool sampler_refused(int err)
{
	return err == EACCES || err == EPERM || err == ENOSYS || err == EOPNOTSUPP;
}

static const char *sampler_refusal_cause(int err)
{
	static char buf[160];
	long paranoid = cs_read_long_file("/proc/sys/kernel/perf_event_paranoid", -99);
	if (err == ENOSYS || err == EOPNOTSUPP)
		return "this kernel or sandbox (gVisor?) has no perf events";
	if (paranoid >= 3) {
		snprintf(buf, sizeof(buf), "kernel.perf_event_paranoid is %ld", paranoid);
		return buf;
	}
	snprintf(buf, sizeof(buf), "%s: no CAP_PERFMON, a seccomp filter or a container policy",
		 strerror(err));
	return buf;
}

/* Both refused: one line naming both causes and the ways out. */
static int sampler_refused_twice(int perf_err, int ptrace_err, pid_t pid, bool attach)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (attach && stat(path, &st) == 0 && st.st_uid != geteuid() && geteuid() != 0)
		return cs_error(perf_err,
				"not permitted to profile PID %d (owned by uid %u): perf_event_open and ptrace both refuse another user's process; run csampler as that user or as root",
				(int)pid, (unsigned)st.st_uid);
	long scope = cs_read_long_file("/proc/sys/kernel/yama/ptrace_scope", -1);
	char why_ptrace[160];
	if (ptrace_err == EPERM && scope >= 1 && attach)
		snprintf(why_ptrace, sizeof(why_ptrace),
			 "kernel.yama.ptrace_scope is %ld (lower it with 'sysctl kernel.yama.ptrace_scope=0', or run as root)",
			 scope);
	else if (ptrace_err == EPERM)
		snprintf(why_ptrace, sizeof(why_ptrace),
			 "%s (another tracer such as gdb or strace is attached, or a seccomp filter forbids ptrace)",
			 strerror(ptrace_err));
	else
		snprintf(why_ptrace, sizeof(why_ptrace), "%s", strerror(ptrace_err));
	return cs_error(perf_err,
			"cannot sample%s%.0d: perf_event_open is refused (%s) and so is ptrace (%s); run as root or with CAP_PERFMON, or lower kernel.perf_event_paranoid",
			attach ? " PID " : "", attach ? (int)pid : 0, sampler_refusal_cause(perf_err),
			why_ptrace);
}

/* The backends in the order auto mode tries them: bpf where permitted and suited to the
 * options, else perf events, else ptrace. */
static const struct sampler_ops *const sampler_backends[] = {
	&sampler_bpf_ops,
	&sampler_perf_ops,
	&sampler_ptrace_ops,
};
#define SAMPLER_NBACKENDS (sizeof(sampler_backends) / sizeof(sampler_backends[0]))

static const struct sampler_ops *sampler_backend(enum sampler_mode mode)
{
	for (size_t i = 0; i < SAMPLER_NBACKENDS; i++)
		if (sampler_backends[i]->mode == mode)
			return sampler_backends[i];
	return NULL;
}

const char *sampler_mode_name(enum sampler_mode mode)
{
	switch (mode) {
	case SAMPLER_MODE_PERF:
		return "perf";
	case SAMPLER_MODE_PTRACE:
		return "ptrace";
	case SAMPLER_MODE_BPF:
		return "bpf";
	default:
		return "auto";
	}
}

uint64_t sampler_max_rate(enum sampler_mode mode)
{
	const struct sampler_ops *ops = sampler_backend(mode);
	if (ops)
		return ops->max_rate();
	uint64_t max = 0;
	for (size_t i = 0; i < SAMPLER_NBACKENDS; i++)
		if (sampler_backends[i]->max_rate() > max)
			max = sampler_backends[i]->max_rate();
	return max;
}

static int sampler_try(const struct sampler_ops *ops, struct sampler **out,
		       const struct sampler_opts *opts, pid_t child, const pid_t *pids, size_t npids)
{
	return pids ? ops->open_attach(out, opts, pids, npids) : ops->open_launch(out, opts, child);
}

/* "; NAME WHAT" appended to the line that says why a backend was not used. */
static void choice_add(char *buf, size_t len, const char *name, const char *what, const char *why)
{
	size_t n = strlen(buf);
	if (n < len)
		snprintf(buf + n, len - n, "; %s %s%s", name, what, why);
}

/* A failed start of a backend auto goes on from (bpf: the verifier, missing BTF, locked memory):
 * the choice says it, and *warn (len bytes) gets the one line to print if the next backend
 * records; a refused perf_event_open says its own line instead (a seccomp filter refuses both).
 * A target that is gone (ESRCH) is left to the next backend to explain; a failure already said
 * in one line is not said again. */
static void sampler_auto_failed(const struct sampler_ops *ops, int err, char *choice, size_t len,
				char *warn, size_t wlen)
{
	char cause[192] = "";
	bool said = err & SAMPLER_SAID_BIT;
	err &= ~SAMPLER_SAID_BIT;
	if (ops->open_cause)
		ops->open_cause(err, cause, sizeof(cause));
	else
		snprintf(cause, sizeof(cause), "%s", strerror(err));
	choice_add(choice, len, ops->name, "failed: ", cause);
	if (!said && err != ESRCH)
		snprintf(warn, wlen, "%s: could not start (%s): sampling with perf events instead (--mode %s says more, --mode perf says nothing)",
			 ops->name, cause, ops->name);
}

static int sampler_open_any(struct sampler **out, const struct sampler_opts *opts, pid_t child,
			    const pid_t *pids, size_t npids)
{
	bool attach = pids != NULL;
	pid_t first = attach ? pids[0] : child;
	char choice[384], why[192], warn[384] = "";
	int ret, perf_err = 0;

	if (opts->mode != SAMPLER_MODE_AUTO) {
		const struct sampler_ops *ops = sampler_backend(opts->mode);
		if (!ops)
			return cs_error(EINVAL, "unknown sampling backend");
		ret = sampler_try(ops, out, opts, child, pids, npids);
		if (!ret) {
			snprintf((*out)->choice, sizeof((*out)->choice), "--mode %s", sampler_mode_name(opts->mode));
			return 0;
		}
		if (-ret & SAMPLER_SAID_BIT)
			return -(-ret & ~SAMPLER_SAID_BIT); /* already said */
		return ops->explain_open_error(-ret, first, attach);
	}
	/* auto: the first backend of the list that is tried and not refused */
	snprintf(choice, sizeof(choice), "auto");
	for (size_t i = 0; i < SAMPLER_NBACKENDS; i++) {
		const struct sampler_ops *ops = sampler_backends[i];
		const char *unsuited = ops->unsuited ? ops->unsuited(opts) : NULL;
		if (unsuited) {
			choice_add(choice, sizeof(choice), ops->name, "not used: ", unsuited);
			continue;
		}
		if (ops->refused && ops->refused(opts, why, sizeof(why))) {
			choice_add(choice, sizeof(choice), ops->name, "refused: ", why);
			continue;
		}
		ret = sampler_try(ops, out, opts, child, pids, npids);
		if (!ret) {
			snprintf((*out)->choice, sizeof((*out)->choice), "%s", choice);
			if (perf_err && ops == &sampler_ptrace_ops)
				cs_warn("perf_event_open is refused (%s): sampling with ptrace instead, which stops each running thread for a few microseconds per sample (--mode ptrace to say so, see csampler-record(1))",
					sampler_refusal_cause(perf_err));
			else if (warn[0])
				cs_warn("%s", warn);
			return 0;
		}
		if (ops->auto_falls_back) {
			sampler_auto_failed(ops, -ret, choice, sizeof(choice), warn, sizeof(warn));
			continue;
		}
		if (-ret & SAMPLER_SAID_BIT)
			return -(-ret & ~SAMPLER_SAID_BIT);
		if (!sampler_refused(-ret))
			return ops->explain_open_error(-ret, first, attach);
		if (ops == &sampler_perf_ops) {
			perf_err = -ret;
			choice_add(choice, sizeof(choice), ops->name, "refused: ",
				   sampler_refusal_cause(perf_err));
		} else if (ops == &sampler_ptrace_ops && perf_err) {
			return sampler_refused_twice(perf_err, -ret, first, attach);
		} else {
			choice_add(choice, sizeof(choice), ops->name, "refused: ", strerror(-ret));
			if (i + 1 == SAMPLER_NBACKENDS)
				return ops->explain_open_error(-ret, first, attach);
		}
	}
	return cs_error(EPERM, "cannot sample: every backend is refused (%s)", choice);
}

int sampler_open_launch(struct sampler **out, const struct sampler_opts *opts, pid_t child)
{
	return sampler_open_any(out, opts, child, NULL, 0);
}

int sampler_open_attach(struct sampler **out, const struct sampler_opts *opts, const pid_t *pids,
			size_t npids)
{
	return sampler_open_any(out, opts, 0, pids, npids);
}

int sampler_pollfds(struct sampler *s, struct pollfd *fds, int max)
{
	return s->ops->pollfds(s, fds, max);
}

struct sampler_batch *sampler_collect(struct sampler *s)
{
	return s->ops->collect(s);
}

int sampler_drain(struct sampler *s, sampler_fn fn, void *arg)
{
	struct sampler_batch *b = sampler_collect(s);
	if (!b)
		return 0;
	int ret = sampler_batch_deliver(b, fn, arg);
	sampler_batch_free(b);
	return ret;
}

void sampler_disable(struct sampler *s)
{
	s->ops->disable(s);
}

uint64_t sampler_task_clock_ns(struct sampler *s)
{
	return s ? s->ops->task_clock_ns(s) : 0;
}

bool sampler_has_kernel(const struct sampler *s)
{
	return s->ops->has_kernel(s);
}

const char *sampler_name(const struct sampler *s)
{
	return s->ops->name;
}

const char *sampler_choice(const struct sampler *s)
{
	return s->choice;
}

const char *sampler_callgraph(const struct sampler *s)
{
	return s->ops->callgraph;
}

bool sampler_holds_threads(const struct sampler *s)
{
	return s->ops->holds_threads;
}

bool sampler_python_at_sample(const struct sampler *s)
{
	return s->ops->python_at_sample;
}

bool sampler_catching_up(struct sampler *s)
{
	return s->ops->catching_up && s->ops->catching_up(s);
}

bool sampler_wakes_each_sample(const struct sampler *s)
{
	return s->ops->wakes_each_sample && s->ops->wakes_each_sample(s);
}

const char *sampler_kernel_note(const struct sampler *s)
{
	/* ptrace never sees kernel frames; perf events lose them to perf_event_paranoid */
	if (s->ops == &sampler_perf_ops && !s->ops->has_kernel(s))
		return "kernel frames are not captured (perf_event_paranoid forbids it for this user)";
	return NULL;
}

const char *sampler_event_name(const struct sampler *s)
{
	if (s->ops == &sampler_ptrace_ops)
		return s->opts.idle ? "wall-clock" : "cpu-clock (ptrace)";
	return s->opts.idle ? "cpu-clock+idle" : "cpu-clock";
}

int sampler_child_exit(struct sampler *s, pid_t child, int *status)
{
	if (!s || !s->ops->child_exit)
		return -ENOSYS;
	return s->ops->child_exit(s, child, status);
}

void sampler_describe(struct sampler *s, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	if (s && s->ops->describe)
		s->ops->describe(s, buf, len);
}

void sampler_close(struct sampler *s)
{
	if (s)
		s->ops->close(s);
}

/* ---- the batch of copied-out events ---- */

struct sampler_batch {
	struct cs_buf arena;
	struct sampler_pending *pend;
	size_t npend;
	uint64_t nsamples;
};

struct sampler_pending *sampler_events_push(struct sampler_events *e, enum sampler_event_type type)
{
	cs_grow(&e->pend, &e->cap_pend, e->npend + 1, sizeof(*e->pend));
	struct sampler_pending *p = &e->pend[e->npend++];
	memset(p, 0, sizeof(*p));
	p->ev.type = type;
	p->off_a = p->off_b = p->off_c = p->off_d = p->off_e = SIZE_MAX;
	return p;
}

size_t sampler_events_keep(struct sampler_events *e, const void *data, size_t len)
{
	/* 8-byte aligned so that u64 arrays can be read in place */
	size_t pad = (8 - (e->arena.len & 7)) & 7;
	static const uint8_t zero[8];
	if (pad)
		cs_buf_put(&e->arena, zero, pad);
	size_t off = e->arena.len;
	cs_buf_put(&e->arena, data, len);
	return off;
}

static int cmp_pending(const void *a, const void *b)
{
	const struct sampler_pending *x = a, *y = b;
	if (x->ev.time != y->ev.time)
		return x->ev.time < y->ev.time ? -1 : 1;
	/* side-band records before samples at the same time */
	return (x->ev.type == SAMPLER_EV_SAMPLE) - (y->ev.type == SAMPLER_EV_SAMPLE);
}

struct sampler_batch *sampler_events_take(struct sampler_events *e)
{
	if (!e->npend) {
		e->arena.len = 0;
		return NULL;
	}
	qsort(e->pend, e->npend, sizeof(*e->pend), cmp_pending);
	/* The batch takes the arena and the pending array; the set starts new ones. */
	struct sampler_batch *b = cs_calloc(1, sizeof(*b));
	b->arena = e->arena;
	b->pend = e->pend;
	b->npend = e->npend;
	for (size_t i = 0; i < b->npend; i++)
		b->nsamples += b->pend[i].ev.type == SAMPLER_EV_SAMPLE;
	/* The next set starts at this one's size: growing from nothing again would copy the
	 * arena and the array a few times per batch (a few percent of a bpf recording's CPU). */
	e->arena = (struct cs_buf){ .data = cs_malloc(b->arena.len + 1), .cap = b->arena.len + 1 };
	e->cap_pend = b->npend;
	e->pend = cs_malloc(e->cap_pend * sizeof(*e->pend));
	e->npend = 0;
	return b;
}

void sampler_events_free(struct sampler_events *e)
{
	cs_buf_free(&e->arena);
	free(e->pend);
	memset(e, 0, sizeof(*e));
}

size_t sampler_batch_bytes(const struct sampler_batch *b)
{
	return b->arena.cap + b->npend * sizeof(*b->pend);
}

uint64_t sampler_batch_samples(const struct sampler_batch *b)
{
	return b->nsamples;
}

/* Point pe's event at its data in arena (its path, name, stack and frames). */
static void sampler_pending_resolve(const struct cs_buf *arena, struct sampler_pending *pe)
{
	struct sampler_event *ev = &pe->ev;
	const char *a = pe->off_a != SIZE_MAX ? arena->data + pe->off_a : NULL;
	switch (ev->type) {
	case SAMPLER_EV_SAMPLE:
		ev->sample.snap.stack = (const uint8_t *)a;
		ev->sample.snap.kernel_ips =
			pe->off_b != SIZE_MAX ? (const uint64_t *)(arena->data + pe->off_b) : NULL;
		ev->sample.snap.user_ips =
			pe->off_c != SIZE_MAX ? (const uint64_t *)(arena->data + pe->off_c) : NULL;
		ev->sample.mem = pe->off_d != SIZE_MAX ? (const uint8_t *)arena->data + pe->off_d : NULL;
		if (!ev->sample.mem)
			ev->sample.mem_size = 0;
		ev->sample.py = pe->off_e != SIZE_MAX ?
			(const struct pywalk_frame *)(arena->data + pe->off_e) : NULL;
		if (!ev->sample.py)
			ev->sample.npy = 0;
		/* the frames' code fingerprints follow them */
		ev->sample.py_fp = ev->sample.py ?
			(const uint64_t *)(ev->sample.py + ev->sample.npy) : NULL;
		if (!ev->sample.weight)
			ev->sample.weight = 1;
		break;
	case SAMPLER_EV_MMAP:
		ev->mmap.path = a ? a : "";
		break;
	case SAMPLER_EV_COMM:
		ev->comm.comm = a ? a : "";
		break;
	default:
		break;
	}
}

void sampler_events_each(struct sampler_events *e, sampler_fn fn, void *arg)
{
	qsort(e->pend, e->npend, sizeof(*e->pend), cmp_pending);
	for (size_t i = 0; i < e->npend; i++) {
		if (e->pend[i].seen || e->pend[i].ev.type == SAMPLER_EV_SAMPLE)
			continue;
		e->pend[i].seen = true;
		sampler_pending_resolve(&e->arena, &e->pend[i]);
		fn(arg, &e->pend[i].ev);
	}
}

int sampler_batch_deliver(struct sampler_batch *b, sampler_fn fn, void *arg)
{
	int ret = 0;
	for (size_t i = 0; i < b->npend && !ret; i++) {
		sampler_pending_resolve(&b->arena, &b->pend[i]);
		ret = fn(arg, &b->pend[i].ev);
	}
	return ret;
}

void sampler_batch_free(struct sampler_batch *b)
{
	if (!b)
		return;
	cs_buf_free(&b->arena);
	free(b->pend);
	free(b);
}
