/* report-mix.c: a two-thread CPU workload with known shares, profiled by tests/report/.
 * The main thread burns 2*S seconds of its own CPU time in hot_main (reached through
 * chain_outer -> chain_inner); a thread named "rm-worker" burns S seconds in hot_worker.
 * Shares of self samples are therefore about 2/3 and 1/3 whatever the machine's load.
 * Usage: report-mix [S]   (default 0.3) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void hot_main(double seconds)
{
	double end = thread_cpu_s() + seconds, s = 0;
	while (thread_cpu_s() < end)
		for (int i = 0; i < 20000; i++)
			s += i * 0.5;
	sink = s;
}

__attribute__((noinline)) static void hot_worker(double seconds)
{
	double end = thread_cpu_s() + seconds, s = 0;
	while (thread_cpu_s() < end)
		for (int i = 0; i < 20000; i++)
			s += i * 0.25;
	sink = s;
}

__attribute__((noinline)) static void chain_inner(double seconds)
{
	hot_main(seconds);
	sink += 1;
}

__attribute__((noinline)) static void chain_outer(double seconds)
{
	chain_inner(seconds);
	sink += 1;
}

static void *worker(void *arg)
{
	hot_worker(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 0.3;
	pthread_t t;

	if (pthread_create(&t, NULL, worker, &s)) {
		fprintf(stderr, "report-mix: pthread_create failed\n");
		return 1;
	}
	pthread_setname_np(t, "rm-worker");
	chain_outer(2 * s);
	pthread_join(t, NULL);
	return 0;
}
