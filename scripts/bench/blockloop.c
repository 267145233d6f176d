/* blockloop.c: a loop that blocks about 1000 times a second, for scripts/bench-idle.sh: each
 * iteration does a fixed amount of arithmetic (about 0.5 ms on the machine that calibrates it)
 * and then sleeps 0.5 ms. Prints "blockloop: SECONDS s" for the whole loop, so a profiler's
 * cost shows as the loop's slowdown.
 *   blockloop ITERATIONS [WORK_PER_ITERATION]   (WORK 0 or absent: calibrate to 0.5 ms) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work(long n)
{
	uint64_t x = sink;
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

__attribute__((noinline)) static void block(void)
{
	struct timespec half = { 0, 500000 };
	nanosleep(&half, NULL);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 2000;
	long n = argc > 2 ? atol(argv[2]) : 0;
	if (n <= 0) {
		/* the fastest of a few tries: the machine may be busy */
		double best = 1e9;
		for (int t = 0; t < 5; t++) {
			double t0 = now();
			work(1000000);
			double d = now() - t0;
			best = d < best ? d : best;
		}
		n = (long)(1000000 * 0.0005 / best);
		printf("%ld\n", n);
		return 0;
	}
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		work(n);
		block();
	}
	fprintf(stderr, "blockloop: %.4f s\n", now() - t0);
	return 0;
}
