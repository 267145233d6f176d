/* deepwork.c: the benchmarks' CPU-bound workload: THREADS threads (default 2) each do a fixed
 * amount of work at call depths cycling from 5 to 50 frames of ~512 bytes of stack each (the
 * truncation test of ../shared/reference/profilers.md), in three leaf functions with known
 * shares (50/30/20%). Built with -O2 -fomit-frame-pointer -g: DWARF is the only way up.
 * Prints its own wall time on stderr ("deepwork: N.NNN s") so benchmarks can separate the
 * target's run time from a profiler's post-processing. Usage: deepwork [UNITS] [THREADS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long units = 200;

__attribute__((noinline)) static double leaf_a(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

__attribute__((noinline)) static double leaf_b(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 0.9999999 + 2e-9;
	return x;
}

__attribute__((noinline)) static double leaf_c(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000002 - 1e-9;
	return x;
}

/* One frame of ~512 bytes of live stack, recursing depth times before doing the work. */
__attribute__((noinline)) static double descend(int depth, double x, long n)
{
	volatile char pad[480];
	memset((char *)pad, depth, sizeof(pad));
	if (depth > 0)
		x = descend(depth - 1, x + pad[depth % 480], n);
	else
		x = leaf_a(x, n * 5) + leaf_b(x, n * 3) + leaf_c(x, n * 2);
	return x + pad[7];
}

static void *worker(void *arg)
{
	double x = 1.0;
	(void)arg;
	for (long u = 0; u < units; u++)
		for (int depth = 5; depth <= 50; depth += 5)
			x = descend(depth, x, 10000);
	return (void *)(long)(x > 0);
}

int main(int argc, char **argv)
{
	int threads = 2;
	struct timespec a, b;
	if (argc > 1)
		units = atol(argv[1]);
	if (argc > 2)
		threads = atoi(argv[2]);
	if (units <= 0 || threads <= 0 || threads > 64) {
		fprintf(stderr, "usage: deepwork [UNITS] [THREADS]\n");
		return 2;
	}
	pthread_t t[64];
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 1; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "deepwork: %.3f s\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
