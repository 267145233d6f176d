/* dump_test.c: unit tests of `csampler dump`'s summary and output (dump_out.c) on made-up
 * snapshots: identical stacks grouped across processes, the process that differs singled out,
 * JSON that parses with hostile names. */
#include "record/dump.h"

#include "base/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct dump_frame frame(const char *name, const char *module)
{
	return (struct dump_frame){ .name = (char *)name, .module = (char *)module };
}

/* 8 ranks: a worker in futex each; the main thread in clock_nanosleep under wait_collective,
 * except rank 3's, which runs spin_elsewhere. */
static void make_job(struct dump_result *r, struct dump_frame *wait, struct dump_frame *spin,
		     struct dump_frame *worker)
{
	memset(r, 0, sizeof(*r));
	r->nprocs = 8;
	r->procs = calloc(8, sizeof(*r->procs));
	for (int i = 0; i < 8; i++) {
		struct dump_process *p = &r->procs[i];
		p->pid = 1000 + i;
		p->rank = i;
		p->nthreads = 2;
		p->threads = calloc(2, sizeof(*p->threads));
		p->threads[0] = (struct dump_thread){ .tid = p->pid, .state = 'S', .syscall = 230,
						      .stack = { wait, 3 } };
		if (i == 3)
			p->threads[0] = (struct dump_thread){ .tid = p->pid, .state = 'R', .syscall = -1,
							      .stack = { spin, 2 } };
		p->threads[1] = (struct dump_thread){ .tid = p->pid + 100, .state = 'S', .syscall = 202,
						      .stack = { worker, 3 } };
	}
}

static void free_job(struct dump_result *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		free(r->procs[i].threads);
	free(r->procs);
}

UNIT_TEST(dump_summary_groups_and_singles_out)
{
	struct dump_frame wait[3] = { frame("clock_nanosleep", "libc.so.6"),
				      frame("wait_collective", "train"), frame("main", "train") };
	struct dump_frame spin[2] = { frame("spin_elsewhere", "train"), frame("main", "train") };
	struct dump_frame worker[3] = { frame("__futex_abstimed_wait_common64", "libc.so.6"),
					frame("pthread_cond_wait", "libc.so.6"),
					frame("worker_idle", "train") };
	struct dump_result r;
	make_job(&r, wait, spin, worker);
	struct dump_summary s;
	dump_summarize(&r, &s);
	UNIT_ASSERT_EQ_INT(s.nprocs, 8);
	UNIT_ASSERT_EQ_INT(s.nthreads, 16);
	UNIT_ASSERT_EQ_INT(s.ngroups, 3);
	UNIT_ASSERT_EQ_INT(s.groups[0].npids, 8);   /* the workers */
	UNIT_ASSERT_EQ_INT(s.groups[1].npids, 7);   /* the waiting mains */
	UNIT_ASSERT_EQ_INT(s.groups[2].npids, 1);
	UNIT_ASSERT_EQ_INT(s.groups[2].pids[0], 1003);
	char where[256];
	dump_thread_where(s.groups[0].example, where, sizeof(where));
	UNIT_ASSERT(!strcmp(where, "waiting in futex: __futex_abstimed_wait_common64 < worker_idle"));
	dump_summary_free(&s);

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	dump_print_text(f, &r, true);
	fclose(f);
	UNIT_ASSERT_CONTAINS_ALL(text,
		"  7 of 8 processes (all but PID 1003 (rank 3)): 7 threads waiting in clock_nanosleep: clock_nanosleep < wait_collective < main\n",
		"  1 of 8 processes (PID 1003 (rank 3)): 1 thread running: spin_elsewhere < main\n",
		"Differs: 7 of 8 processes waiting in clock_nanosleep: clock_nanosleep < wait_collective < main; PID 1003 (rank 3) is elsewhere: running: spin_elsewhere < main\n");
	UNIT_ASSERT(!strstr(text, "Thread 1000"));   /* summary only */
	free(text);
	free_job(&r);
}

UNIT_TEST(dump_summary_leaves_other_kinds_of_process_alone)
{
	/* a launcher that shares no stack with the ranks is not "different from the ranks" */
	struct dump_frame wait[3] = { frame("clock_nanosleep", "libc.so.6"),
				      frame("wait_collective", "train"), frame("main", "train") };
	struct dump_frame spin[2] = { frame("spin_elsewhere", "train"), frame("main", "train") };
	struct dump_frame worker[3] = { frame("futex_wait", "libc.so.6"), frame("x", "libc.so.6"),
					frame("worker_idle", "train") };
	struct dump_frame launcher[2] = { frame("wait4", "libc.so.6"), frame("main", "torchrun") };
	struct dump_result r;
	make_job(&r, wait, spin, worker);
	r.procs = realloc(r.procs, 9 * sizeof(*r.procs));
	struct dump_process *l = &r.procs[8];
	memset(l, 0, sizeof(*l));
	l->pid = 999;
	l->rank = -1;
	l->nthreads = 1;
	l->threads = calloc(1, sizeof(*l->threads));
	l->threads[0] = (struct dump_thread){ .tid = 999, .state = 'S', .syscall = 61,
					      .stack = { launcher, 2 } };
	r.nprocs = 9;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	dump_print_text(f, &r, true);
	fclose(f);
	UNIT_ASSERT(!strstr(text, "PID 999 is elsewhere"));
	UNIT_ASSERT(strstr(text, "Differs: 7 of 8 processes"));
	free(text);
	free_job(&r);
}

UNIT_TEST(dump_json_escapes_and_parses_shape)
{
	struct dump_frame fr[2] = { { .name = "ns::f<\"q\">(char\\*)", .file = "a\tb.cc", .line = 7,
				      .module = "lib\"x.so" },
				    frame("main", "prog") };
	struct dump_process p = { .pid = 5, .rank = -1, .nthreads = 1, .gpu = DUMP_GPU_READ };
	memcpy(p.comm, "we\"ird\\n", 9);
	struct dump_thread t = { .tid = 5, .state = 'D', .syscall = 16, .stack = { fr, 2 } };
	p.threads = &t;
	struct dump_gpu_kernel k = { .correlation = 9, .tid = 5, .age_ns = 2500000, .name = "k<\"1\">",
				     .stack = { fr, 1 } };
	p.kernels = &k;
	p.nkernels = 1;
	p.gpu_launches = 12;
	struct dump_result r = { .procs = &p, .nprocs = 1 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	dump_print_json(f, &r);
	fclose(f);
	UNIT_ASSERT_CONTAINS_ALL(text,
		"\"comm\":\"we\\\"ird\\\\n\"",
		"\"name\":\"ns::f<\\\"q\\\">(char\\\\*)\",\"file\":\"a\\u0009b.cc\",\"line\":7,\"module\":\"lib\\\"x.so\"",
		"\"where\":\"waiting (uninterruptible) in ioctl\"",
		"\"in_flight\":[{\"kernel\":\"k<\\\"1\\\">\",\"correlation\":9,\"tid\":5,\"age_ms\":2.500,\"stack_overwritten\":false",
		"\"launched\":12",
		"\"rank\":null");
	free(text);
}
