/* clone-storm.c: for tests/record/t-ptrace.sh. The main thread creates and joins a thread
 * again and again for SECONDS (each a clone event stop under ptrace), spinning a little between
 * them, then spins alone for one more second in spin_tail: under ptrace a sampling interrupt
 * sent just before a clone's event stop is taken by it (the kernel clears a pending interrupt
 * at any trap), and a sampler waiting for that interrupt's own stop never sampled the thread
 * again, so spin_tail had no samples.
 *   clone-storm [SECONDS]   (default 2) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *nothing(void *arg)
{
	return arg;
}

static void __attribute__((noinline)) spin_tail(double seconds)
{
	double end = now_s() + seconds;
	while (now_s() < end)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
	double end = now_s() + (argc > 1 ? atof(argv[1]) : 2.0);
	long threads = 0;
	while (now_s() < end) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, NULL) == 0) {
			pthread_join(t, NULL);
			threads++;
		}
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i;
	}
	spin_tail(1.0);
	fprintf(stderr, "clone-storm: %ld threads\n", threads);
	return 0;
}
