/* dump_out.c: `csampler dump`'s output (dump.h): text in the manner of py-spy dump and
 * eu-stack (process, thread, frames leaf first), JSON with every name escaped, and the summary
 * that groups identical stacks across processes, which is where a hang shows: "7 of 8
 * processes wait in X; PID n (rank 3) is in Y". */
#include "record/dump.h"

#include "base/cs.h"
#include "base/json.h"
#include "unwind/offcpu.h"

#include <errno.h>
#include <string.h>

/* The thread's state in words: "running", "waiting in futex", "sleeping", ... */
static void dump_state_words(const struct dump_thread *t, char *buf, size_t len)
{
	const char *sc = t->syscall >= 0 ? offcpu_syscall_name(t->syscall) : NULL;
	char scbuf[32];
	if (t->syscall >= 0 && !sc) {
		snprintf(scbuf, sizeof(scbuf), "syscall %lld", (long long)t->syscall);
		sc = scbuf;
	}
	if (t->error == -ETIMEDOUT) {
		snprintf(buf, len, "did not stop in time (state %c%s%s)", t->state ? t->state : '?',
			 sc ? ", in " : "", sc ? sc : "");
		return;
	}
	if (t->error) {
		snprintf(buf, len, "exited during the dump");
		return;
	}
	switch (t->state) {
	case 'R':
		if (sc)
			snprintf(buf, len, "running (in %s)", sc);
		else
			snprintf(buf, len, "running");
		return;
	case 'T':
		snprintf(buf, len, "stopped (by a signal)%s%s", sc ? " in " : "", sc ? sc : "");
		return;
	case 't':
		snprintf(buf, len, "stopped by a debugger%s%s", sc ? " in " : "", sc ? sc : "");
		return;
	case 'D':
		snprintf(buf, len, "waiting (uninterruptible) in %s", sc ? sc : "the kernel");
		return;
	case 'Z':
		snprintf(buf, len, "zombie");
		return;
	default:
		if (t->syscall == 219)   /* its own number: the wait goes on under another name */
			snprintf(buf, len, "waiting in restart_syscall (a timed wait resumed after an earlier stop)");
		else if (sc)
			snprintf(buf, len, "waiting in %s", sc);
		else
			snprintf(buf, len, "sleeping");
	}
}

/* Frames every stack has (libc's waits, thread start): passed over in short descriptions. */
static bool dump_frame_is_runtime(const struct dump_frame *f)
{
	static const char *const libs[] = { "libc.so", "libc-", "libpthread", "ld-linux", "[vdso]",
					    "libstdc++", "libgcc_s" };
	static const char *const names[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "start_thread", "__clone3", "__clone", "clone" };
	if (f->python)
		return false;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(f->module, libs[i], strlen(libs[i])))
			return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(f->name, names[i]))
			return true;
	return false;
}

void dump_thread_where(const struct dump_thread *t, char *buf, size_t len)
{
	struct cs_buf b = { 0 };
	char state[96];
	dump_state_words(t, state, sizeof(state));
	cs_buf_printf(&b, "%s", state);
	/* the leaf, then the first frames of the program itself (not libc's, not thread start);
	 * in a Python program its Python functions, which say more than the interpreter's */
	bool has_python = false;
	for (size_t i = 0; i < t->stack.n; i++)
		has_python |= t->stack.frames[i].python;
	size_t shown = 0, last = 0;
	for (size_t i = 0; i < t->stack.n && shown < 4; i++) {
		const struct dump_frame *f = &t->stack.frames[i];
		if (i > 0 && (has_python ? !f->python : dump_frame_is_runtime(f)))
			continue;
		cs_buf_printf(&b, "%s%s", shown ? " < " : ": ", f->name);
		shown++;
		last = i;
	}
	for (size_t i = last + 1; shown == 4 && i < t->stack.n; i++)
		if (has_python ? t->stack.frames[i].python : !dump_frame_is_runtime(&t->stack.frames[i])) {
			cs_buf_printf(&b, " < ...");
			break;
		}
	snprintf(buf, len, "%s", b.data ? b.data : "");
	cs_buf_free(&b);
}

/* ---- summary ---- */

static char *dump_key(const struct dump_thread *t)
{
	struct cs_buf b = { 0 };
	char state[96];
	dump_state_words(t, state, sizeof(state));
	cs_buf_printf(&b, "%s", state);
	for (size_t i = 0; i < t->stack.n; i++)
		cs_buf_printf(&b, ";%s", t->stack.frames[i].name);
	cs_buf_put(&b, "", 1);
	return b.data;
}

CS_CMP_FN(dump_group_cmp, struct dump_group,
	CS_CMP(b->npids, a->npids) ?: CS_CMP(b->nthreads, a->nthreads) ?: strcmp(a->key, b->key))

void dump_summarize(const struct dump_result *r, struct dump_summary *s)
{
	size_t cap = 0;
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct dump_process *p = &r->procs[i];
		if (p->error)
			continue;
		s->nprocs++;
		for (size_t k = 0; k < p->nthreads; k++) {
			const struct dump_thread *t = &p->threads[k];
			if (t->error == -ESRCH)
				continue;
			s->nthreads++;
			char *key = dump_key(t);
			struct dump_group *g = NULL;
			for (size_t j = 0; j < s->ngroups && !g; j++)
				if (!strcmp(s->groups[j].key, key))
					g = &s->groups[j];
			if (!g) {
				cs_grow(&s->groups, &cap, s->ngroups + 1, sizeof(*s->groups));
				g = &s->groups[s->ngroups++];
				*g = (struct dump_group){ .key = key, .example = t };
			} else {
				free(key);
			}
			g->nthreads++;
			if (!g->npids || g->pids[g->npids - 1] != p->pid) {
				g->pids = cs_realloc(g->pids, (g->npids + 1) * sizeof(pid_t));
				g->pids[g->npids++] = p->pid;
			}
		}
	}
	cs_qsort(s->groups, s->ngroups, sizeof(*s->groups), dump_group_cmp);
}

void dump_summary_free(struct dump_summary *s)
{
	for (size_t i = 0; i < s->ngroups; i++) {
		free(s->groups[i].key);
		free(s->groups[i].pids);
	}
	free(s->groups);
	memset(s, 0, sizeof(*s));
}

static const struct dump_process *dump_proc(const struct dump_result *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	return NULL;
}

static void dump_who(struct cs_buf *b, const struct dump_result *r, pid_t pid)
{
	const struct dump_process *p = dump_proc(r, pid);
	cs_buf_printf(b, "PID %d", (int)pid);
	if (p && p->rank >= 0)
		cs_buf_printf(b, " (rank %lld)", (long long)p->rank);
}

static bool dump_has(const struct dump_group *g, pid_t pid)
{
	for (size_t i = 0; i < g->npids; i++)
		if (g->pids[i] == pid)
			return true;
	return false;
}

/* Whether pid has a stack in common with a process of g (other than g's own stack): a process
 * of the same kind, which g's absence makes stand out. */
static bool dump_shares(const struct dump_summary *s, const struct dump_group *g, pid_t pid)
{
	for (size_t j = 0; j < s->ngroups; j++) {
		const struct dump_group *o = &s->groups[j];
		if (o == g || !dump_has(o, pid))
			continue;
		for (size_t k = 0; k < g->npids; k++)
			if (g->pids[k] != pid && dump_has(o, g->pids[k]))
				return true;
	}
	return false;
}

/* The processes a group names: all but the few missing, or the few that have it. */
static void dump_group_members(struct cs_buf *b, const struct dump_result *r,
			       const struct dump_summary *s, const struct dump_group *g)
{
	if (g->npids == s->nprocs || s->nprocs < 2)
		return;
	size_t missing = s->nprocs - g->npids;
	const size_t most = 6;
	if (missing < g->npids && missing <= most) {
		cs_buf_printf(b, " (all but ");
		size_t n = 0;
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct dump_process *p = &r->procs[i];
			if (p->error || dump_has(g, p->pid))
				continue;
			if (n++)
				cs_buf_printf(b, ", ");
			dump_who(b, r, p->pid);
		}
		cs_buf_printf(b, ")");
	} else if (g->npids <= most) {
		cs_buf_printf(b, " (");
		for (size_t i = 0; i < g->npids; i++) {
			if (i)
				cs_buf_printf(b, ", ");
			dump_who(b, r, g->pids[i]);
		}
		cs_buf_printf(b, ")");
	}
}

static void dump_print_summary(FILE *f, const struct dump_result *r)
{
	struct dump_summary s;
	dump_summarize(r, &s);
	fprintf(f, "Summary: %zu process%s, %zu threads, %zu distinct stacks\n", s.nprocs,
		s.nprocs == 1 ? "" : "es", s.nthreads, s.ngroups);
	for (size_t i = 0; i < s.ngroups; i++) {
		const struct dump_group *g = &s.groups[i];
		struct cs_buf b = { 0 };
		char where[1024];
		dump_thread_where(g->example, where, sizeof(where));
		cs_buf_printf(&b, "  %zu of %zu processes", g->npids, s.nprocs);
		dump_group_members(&b, r, &s, g);
		cs_buf_printf(&b, ": %zu thread%s %s", g->nthreads, g->nthreads == 1 ? "" : "s", where);
		fprintf(f, "%s\n", b.data);
		cs_buf_free(&b);
	}
	/* the hang signature: among the processes of the same kind (they share some stack), one
	 * missing from a stack most of them have, and where it is instead */
	for (size_t i = 0; s.nprocs >= 3 && i < s.ngroups; i++) {
		const struct dump_group *g = &s.groups[i];
		size_t kind = 0;
		bool *same = cs_calloc(r->nprocs, sizeof(bool));
		for (size_t k = 0; k < r->nprocs; k++) {
			const struct dump_process *p = &r->procs[k];
			if (p->error)
				continue;
			same[k] = dump_has(g, p->pid) || dump_shares(&s, g, p->pid);
			kind += same[k];
		}
		if (g->npids * 2 <= kind || g->npids == kind || kind < 3) {
			free(same);
			continue;
		}
		char where[1024];
		dump_thread_where(g->example, where, sizeof(where));
		for (size_t k = 0; k < r->nprocs; k++) {
			const struct dump_process *p = &r->procs[k];
			if (!same[k] || dump_has(g, p->pid))
				continue;
			struct cs_buf b = { 0 };
			cs_buf_printf(&b, "Differs: %zu of %zu processes %s; ", g->npids, kind, where);
			dump_who(&b, r, p->pid);
			cs_buf_printf(&b, " is elsewhere:");
			/* its stacks that the others do not share */
			size_t n = 0;
			for (size_t j = 0; j < s.ngroups; j++) {
				const struct dump_group *o = &s.groups[j];
				if (o->npids * 2 > kind || !dump_has(o, p->pid))
					continue;
				char w[1024];
				dump_thread_where(o->example, w, sizeof(w));
				cs_buf_printf(&b, "%s %s", n++ ? ";" : "", w);
			}
			if (!n)
				cs_buf_printf(&b, " (no thread apart from the others)");
			fprintf(f, "%s\n", b.data);
			cs_buf_free(&b);
		}
		free(same);
	}
	/* GPU work in flight across processes */
	size_t with = 0, read = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		read += r->procs[i].gpu == DUMP_GPU_READ;
		with += r->procs[i].gpu == DUMP_GPU_READ && r->procs[i].nkernels;
	}
	if (read) {
		struct cs_buf b = { 0 };
		cs_buf_printf(&b, "  GPU: %zu of %zu processes with GPU capture have kernels launched and not finished", with, read);
		if (with && with < read) {
			cs_buf_printf(&b, "; none in ");
			size_t n = 0;
			for (size_t i = 0; i < r->nprocs; i++)
				if (r->procs[i].gpu == DUMP_GPU_READ && !r->procs[i].nkernels) {
					if (n++)
						cs_buf_printf(&b, ", ");
					dump_who(&b, r, r->procs[i].pid);
				}
		}
		fprintf(f, "%s\n", b.data);
		cs_buf_free(&b);
	}
	dump_summary_free(&s);
}

/* ---- text ---- */

static void dump_print_frames(FILE *f, const struct dump_stack *s, const char *indent)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct dump_frame *fr = &s->frames[i];
		if (fr->file && fr->line)
			fprintf(f, "%s%s (%s:%u)%s\n", indent, fr->name, fr->file, fr->line,
				fr->inlined ? " [inlined]" : "");
		else
			fprintf(f, "%s%s (%s)%s\n", indent, fr->name, fr->module,
				fr->inlined ? " [inlined]" : "");
	}
	if (s->incomplete && s->n)
		fprintf(f, "%s... (the unwinder stopped here)\n", indent);
	if (s->python_changed)
		fprintf(f, "%s(the Python frames moved on between the stop and their reading)\n", indent);
}

void dump_print_text(FILE *f, const struct dump_result *r, bool summary_only)
{
	size_t nthreads = 0, nread = 0;
	uint64_t stop_max = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		nthreads += r->procs[i].nthreads;
		nread += !r->procs[i].error;
		if (r->procs[i].stopped_ns > stop_max)
			stop_max = r->procs[i].stopped_ns;
	}
	fprintf(f, "csampler dump: %zu of %zu process%s, %zu threads: read in %.1f ms (each process stopped at most %.1f ms), %.1f ms in all\n",
		nread, r->nprocs, r->nprocs == 1 ? "" : "es", nthreads, (double)r->read_ns / 1e6,
		(double)stop_max / 1e6, (double)r->total_ns / 1e6);
	for (size_t i = 0; i < r->nprocs && !summary_only; i++) {
		const struct dump_process *p = &r->procs[i];
		fprintf(f, "\nProcess %d \"%s\"", (int)p->pid, p->comm);
		if (p->rank >= 0)
			fprintf(f, " rank %lld", (long long)p->rank);
		if (p->error) {
			fprintf(f, ": not read: %s\n", p->error_text);
			continue;
		}
		fprintf(f, " (parent %d), stopped %.2f ms\n", (int)p->ppid, (double)p->stopped_ns / 1e6);
		for (size_t k = 0; k < p->nthreads; k++) {
			const struct dump_thread *t = &p->threads[k];
			char state[96];
			dump_state_words(t, state, sizeof(state));
			fprintf(f, "  Thread %d \"%s\": %s\n", (int)t->tid, t->comm, state);
			dump_print_frames(f, &t->stack, "      ");
		}
		if (p->gpu == DUMP_GPU_READ) {
			fprintf(f, "  GPU: %zu kernel%s launched and not finished (of %llu launched)%s\n",
				p->nkernels, p->nkernels == 1 ? "" : "s",
				(unsigned long long)p->gpu_launches, p->nkernels ? ":" : "");
			for (size_t k = 0; k < p->nkernels; k++) {
				const struct dump_gpu_kernel *g = &p->kernels[k];
				fprintf(f, "    %s: launched %.3f s ago by thread %u (correlation %u)%s\n",
					g->name, (double)g->age_ns / 1e9, g->tid, g->correlation,
					g->stack.n ? ", from" :
					g->stack_overwritten ? " (its launch stack was overwritten since)" : "");
				dump_print_frames(f, &g->stack, "        ");
			}
		} else if (p->gpu == DUMP_GPU_IDLE) {
			fprintf(f, "  GPU: csampler's GPU library is loaded but not capturing (CUDA not initialised yet, or detached)\n");
		}
		if (p->gpu_note)
			fprintf(f, "  GPU: %s\n", p->gpu_note);
	}
	fprintf(f, "\n");
	dump_print_summary(f, r);
}

/* ---- JSON ---- */

static void dump_json_frames(struct json_writer *w, const struct dump_stack *s)
{
	json_array(w, "frames", JSON_INLINE);
	for (size_t i = 0; i < s->n; i++) {
		const struct dump_frame *fr = &s->frames[i];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "name", fr->name);
		json_str(w, "file", fr->file);
		json_u64(w, "line", fr->line);
		json_str(w, "module", fr->module ? fr->module : "");
		json_bool(w, "python", fr->python);
		json_bool(w, "inlined", fr->inlined);
		json_end(w);
	}
	json_end(w);
}

static void dump_json_process(struct json_writer *w, const struct dump_process *p)
{
	static const char *const gpu_states[] = { "none", "idle", "read", "error" };
	json_object(w, NULL, JSON_INLINE);
	json_i64(w, "pid", p->pid);
	json_i64(w, "ppid", p->ppid);
	json_str(w, "comm", p->comm);
	if (p->rank >= 0)
		json_i64(w, "rank", p->rank);
	else
		json_null(w, "rank");
	json_str(w, "error", p->error_text);
	json_double(w, "stopped_ms", (double)p->stopped_ns / 1e6, 3);
	json_array(w, "threads", JSON_INLINE);
	for (size_t k = 0; k < p->nthreads; k++) {
		const struct dump_thread *t = &p->threads[k];
		char state[96], code[2] = { t->state ? t->state : '?', 0 }, number[32];
		dump_state_words(t, state, sizeof(state));
		const char *sc = t->syscall >= 0 ? offcpu_syscall_name(t->syscall) : NULL;
		json_object(w, NULL, JSON_INLINE);
		json_i64(w, "tid", t->tid);
		json_str(w, "comm", t->comm);
		json_str(w, "state", code);
		json_str(w, "where", state);
		if (t->syscall >= 0 && !sc) {
			snprintf(number, sizeof(number), "%lld", (long long)t->syscall);
			sc = number;
		}
		json_str(w, "syscall", sc);
		json_bool(w, "read", !t->error);
		json_bool(w, "incomplete", t->stack.incomplete);
		dump_json_frames(w, &t->stack);
		json_end(w);
	}
	json_end(w);
	json_object(w, "gpu", JSON_INLINE);
	json_str(w, "state", gpu_states[p->gpu]);
	json_str(w, "note", p->gpu_note);
	json_u64(w, "launched", p->gpu_launches);
	json_array(w, "in_flight", JSON_INLINE);
	for (size_t k = 0; k < p->nkernels; k++) {
		const struct dump_gpu_kernel *g = &p->kernels[k];
		json_object(w, NULL, JSON_INLINE);
		json_str(w, "kernel", g->name ? g->name : "");
		json_u64(w, "correlation", g->correlation);
		json_u64(w, "tid", g->tid);
		json_double(w, "age_ms", (double)g->age_ns / 1e6, 3);
		json_bool(w, "stack_overwritten", g->stack_overwritten);
		dump_json_frames(w, &g->stack);
		json_end(w);
	}
	json_end(w);
	json_end(w);
	json_end(w);
}

void dump_print_json(FILE *f, const struct dump_result *r)
{
	struct json_writer w;
	json_init(&w, f);
	json_object(&w, NULL, JSON_INLINE);
	json_double(&w, "read_ms", (double)r->read_ns / 1e6, 3);
	json_double(&w, "total_ms", (double)r->total_ns / 1e6, 3);
	json_array(&w, "processes", JSON_INLINE);
	for (size_t i = 0; i < r->nprocs; i++)
		dump_json_process(&w, &r->procs[i]);
	json_end(&w);
	struct dump_summary s;
	dump_summarize(r, &s);
	json_object(&w, "summary", JSON_INLINE);
	json_u64(&w, "processes", s.nprocs);
	json_u64(&w, "threads", s.nthreads);
	json_array(&w, "groups", JSON_INLINE);
	for (size_t i = 0; i < s.ngroups; i++) {
		const struct dump_group *g = &s.groups[i];
		char where[1024];
		dump_thread_where(g->example, where, sizeof(where));
		json_object(&w, NULL, JSON_INLINE);
		json_str(&w, "where", where);
		json_u64(&w, "threads", g->nthreads);
		json_array(&w, "pids", JSON_INLINE);
		for (size_t k = 0; k < g->npids; k++)
			json_i64(&w, NULL, g->pids[k]);
		json_end(&w);
		dump_json_frames(&w, &g->example->stack);
		json_end(&w);
	}
	json_end(&w);
	json_end(&w);
	json_end(&w);
	fputc('\n', f);
	dump_summary_free(&s);
}
