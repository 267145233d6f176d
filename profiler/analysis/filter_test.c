/* filter_test.c: unit tests of the readers' shared filters (filter.c): --time parsing and
 * profile_filter_apply() on synthetic profiles, GPU launches renumbered with the activities
 * that point at them. */
#include "analysis/filter.h"
#include "analysis/profile_builder.h"

#include "base/cs.h"
#include "base/unit.h"

#include <stdlib.h>
#include <string.h>

UNIT_TEST(filter_time_syntax)
{
	static const char *const good[] = { "1.5,2", "1.5,", ",2", "3", ",", "10%/2", "0%-10%",
					    "10%/1,10%/10", "0%-10%,50%-60%", "100%/1", "25%/4" };
	static const char *const bad[] = { "", "x", "2,1", "1,2,3", "-1,", "1,x", "10%/0", "60%/2",
					   "20%-10%", "0%-101%", "10%", "10%/1,", "%/1", "inf,",
					   "nan,1", "10%/2x" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct profile_filter f = PROFILE_FILTER_ALL;
		if (profile_filter_parse_time(&f, "test", good[i]) != 0) {
			fprintf(stderr, "refused '%s'\n", good[i]);
			UNIT_ASSERT(0);
		}
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct profile_filter f = PROFILE_FILTER_ALL;
		if (profile_filter_parse_time(&f, "test", bad[i]) == 0) {
			fprintf(stderr, "accepted '%s'\n", bad[i]);
			UNIT_ASSERT(0);
		}
	}
	struct profile_filter f = PROFILE_FILTER_ALL;
	UNIT_ASSERT(profile_filter_parse_time(&f, "test", "10%/2,0%-5%") == 0);
	UNIT_ASSERT(f.nranges == 2 && f.ranges[0].pct && f.ranges[0].lo == 10 &&
		    f.ranges[0].hi == 20 && f.ranges[1].lo == 0 && f.ranges[1].hi == 5);
}

/* 100 samples 1 ms apart: pid 10 (threads 10 "main", 11 "worker") then pid 20 ("other"). */
static void build(struct pbuild *b)
{
	pb_init(b);
	uint32_t a = pb_stack(b, "_start;main;work_a"), w = pb_stack(b, "clone;start_thread;work_w");
	uint32_t o = pb_stack(b, "_start;main;other");
	pb_samples(b, 10, 10, a, 40, 0);
	pb_samples(b, 10, 11, w, 20, 0);
	pb_samples(b, 20, 20, o, 40, 0);
	pb_thread(b, 10, 10, "main");
	pb_thread(b, 10, 11, "worker");
	pb_thread(b, 20, 20, "other");
	pb_process(b, 10, 1, "main");
	pb_process(b, 20, 1, "other");
	b->p.end_ns = b->p.start_ns + 100 * 1000000ull;
}

/* A filter of identities (-1, NULL: all). */
static struct profile_filter id_filter(int64_t pid, int64_t tid, int64_t rank, const char *comm)
{
	return (struct profile_filter){ .pid = pid, .tid = tid, .rank = rank, .comm = comm };
}

/* The filter of --time spec. */
static struct profile_filter time_filter(const char *spec)
{
	struct profile_filter f = PROFILE_FILTER_ALL;
	UNIT_ASSERT(profile_filter_parse_time(&f, "test", spec) == 0);
	return f;
}

static uint64_t apply(struct profile_filter f, uint64_t *start, uint64_t *end)
{
	struct pbuild b;
	build(&b);
	UNIT_ASSERT(profile_filter_apply(&b.p, &f, "test") == 0);
	uint64_t n = b.p.nsamples, sum = 0;
	for (size_t i = 0; i < b.p.nthreads; i++)
		sum += b.p.threads[i].samples;
	UNIT_ASSERT_EQ_INT(sum, n);
	UNIT_ASSERT(b.p.filtered.text && b.p.filtered.nsamples == 100);
	if (start)
		*start = b.p.start_ns - 1000000000ull, *end = b.p.end_ns - 1000000000ull;
	pb_free(&b);
	return n;
}

UNIT_TEST(filter_apply_samples)
{
	uint64_t s, e;
	UNIT_ASSERT_EQ_INT(apply(id_filter(10, -1, -1, NULL), NULL, NULL), 60);
	UNIT_ASSERT_EQ_INT(apply(id_filter(-1, 11, -1, NULL), NULL, NULL), 20);
	UNIT_ASSERT_EQ_INT(apply(id_filter(-1, -1, -1, "worker"), NULL, NULL), 20);
	UNIT_ASSERT_EQ_INT(apply(id_filter(-1, -1, -1, "main"), NULL, NULL), 60); /* the process' name */
	UNIT_ASSERT_EQ_INT(apply(id_filter(-1, -1, 0, NULL), NULL, NULL), 0);     /* no rank recorded */
	/* samples at 0, 1, ..., 99 ms of a 100 ms recording */
	UNIT_ASSERT_EQ_INT(apply(time_filter("10%/1"), &s, &e), 10);
	UNIT_ASSERT(s == 0 && e == 10000000);
	UNIT_ASSERT_EQ_INT(apply(time_filter("10%/10"), NULL, NULL), 10);
	UNIT_ASSERT_EQ_INT(apply(time_filter("0%-50%"), NULL, NULL), 50);
	UNIT_ASSERT_EQ_INT(apply(time_filter("10%/1,10%/3"), NULL, NULL), 20);
	UNIT_ASSERT_EQ_INT(apply(time_filter("0.010,0.019"), &s, &e), 10); /* closed: 10 .. 19 ms */
	UNIT_ASSERT(s == 10000000 && e == 19000000);
	UNIT_ASSERT_EQ_INT(apply(time_filter("0.090"), NULL, NULL), 10);
	UNIT_ASSERT_EQ_INT(apply(time_filter(",0.0095"), NULL, NULL), 10);
	UNIT_ASSERT_EQ_INT(apply(time_filter("5,"), NULL, NULL), 0);
}

UNIT_TEST(filter_apply_ranks_and_gpu)
{
	struct pbuild b;
	build(&b);
	/* a merged file: pid 10 is rank 0, pid 20 rank 1 */
	b.p.labels = cs_calloc(4, sizeof(*b.p.labels));
	b.p.labels[b.p.nlabels++] = (struct profile_label){ .id = 10, .orig_id = 10, .rank = 0 };
	b.p.labels[b.p.nlabels++] = (struct profile_label){ .id = 20, .orig_id = 7, .rank = 1 };
	/* launches: 0 (pid 10, 5 ms), 1 (pid 20, 50 ms), 2 (pid 20, 90 ms); activities of the
	 * last two, the first run inside 0%-80%, the second after it */
	struct profile *p = &b.p;
	p->gpu_launches = cs_calloc(3, sizeof(*p->gpu_launches));
	p->gpu_activities = cs_calloc(2, sizeof(*p->gpu_activities));
	const uint64_t t0 = p->start_ns, ms = 1000000;
	p->gpu_launches[0] = (struct profile_gpu_launch){ .time = t0 + 5 * ms, .pid = 10, .tid = 10 };
	p->gpu_launches[1] = (struct profile_gpu_launch){ .time = t0 + 50 * ms, .pid = 20, .tid = 20,
							  .correlation = 1 };
	p->gpu_launches[2] = (struct profile_gpu_launch){ .time = t0 + 90 * ms, .pid = 20, .tid = 20,
							  .correlation = 2 };
	p->ngpu_launches = 3;
	p->gpu_activities[0] = (struct profile_gpu_activity){ .kind = PROFILE_GPU_KERNEL, .pid = 20,
		.correlation = 1, .start = t0 + 60 * ms, .end = t0 + 61 * ms, .launch = 1,
		.node_launch = PROFILE_GPU_NO_LAUNCH };
	p->gpu_activities[1] = (struct profile_gpu_activity){ .kind = PROFILE_GPU_KERNEL, .pid = 20,
		.correlation = 2, .start = t0 + 95 * ms, .end = t0 + 96 * ms, .launch = 2,
		.node_launch = PROFILE_GPU_NO_LAUNCH };
	p->ngpu_activities = 2;

	struct profile_filter f = time_filter("0%-80%");
	f.rank = 1;
	UNIT_ASSERT(profile_filter_apply(p, &f, "test") == 0);
	/* rank 1 is pid 20: its samples at 60..79 ms; the kernel at 60 ms and its launch stay,
	 * renumbered (launch 0 was pid 10's), the kernel at 95 ms and its launch go */
	UNIT_ASSERT_EQ_INT(p->nsamples, 20);
	UNIT_ASSERT_EQ_INT(p->nprocesses, 1);
	UNIT_ASSERT_EQ_INT(p->processes[0].pid, 20);
	UNIT_ASSERT_EQ_INT(p->ngpu_activities, 1);
	UNIT_ASSERT_EQ_INT(p->ngpu_launches, 1);
	UNIT_ASSERT_EQ_INT(p->gpu_activities[0].launch, 0);
	UNIT_ASSERT_EQ_INT(p->gpu_launches[0].correlation, 1);
	UNIT_ASSERT(!strcmp(p->filtered.text, "rank 1, time 0%-80%"));
	pb_free(&b);
}

/* --idle / --no-idle: samples by PROFILE_SAMPLE_OFFCPU, with their weights. */
UNIT_TEST(filter_apply_idle)
{
	for (int idle = 0; idle < 2; idle++) {
		struct pbuild b;
		struct profile_filter f = PROFILE_FILTER_ALL;
		pb_init(&b);
		uint32_t run = pb_stack(&b, "_start;main;spin");
		uint32_t wait = pb_stack(&b, "_start;main;read;[off-cpu: read]");
		pb_samples(&b, 10, 10, run, 30, 0);
		pb_sample_weighted(&b, 10, 10, wait, 70, PROFILE_SAMPLE_OFFCPU);
		pb_thread(&b, 10, 10, "main");
		pb_process(&b, 10, 1, "main");
		f.idle = idle ? PROFILE_FILTER_IDLE_OFFCPU : PROFILE_FILTER_IDLE_ONCPU;
		UNIT_ASSERT(profile_filter_active(&f));
		UNIT_ASSERT(profile_filter_apply(&b.p, &f, "test") == 0);
		UNIT_ASSERT_EQ_INT(b.p.nsamples, idle ? 70 : 30);
		for (size_t i = 0; i < b.p.nsamples_records; i++)
			UNIT_ASSERT(!!(b.p.samples[i].flags & PROFILE_SAMPLE_OFFCPU) == idle);
		UNIT_ASSERT(b.p.filtered.idle == (idle ? PROFILE_FILTER_IDLE_OFFCPU
						       : PROFILE_FILTER_IDLE_ONCPU));
		UNIT_ASSERT(strstr(b.p.filtered.text, idle ? "off-CPU only" : "on-CPU only"));
		pb_free(&b);
	}
}
