/* steps.c: a training loop of N steps for the step and rank tables (tests/report/t-steps.sh).
 * Each step calls load_batch (LOAD ms of the thread's CPU time) then compute (COMPUTE ms);
 * compute takes STEPS_SLOW_FACTOR (an environment variable, default 3) times as long in steps
 * SLOW_FROM to SLOW_TO (1-based), and STEPS_COMPUTE_SCALE (default 1) multiplies compute's
 * time in every step: a slow rank.
 * Nothing runs between the two calls, so every step is load_batch then compute, back to back.
 * Usage: steps [N [SLOW_FROM SLOW_TO [LOAD COMPUTE]]]   (defaults 30 10 12 2 3) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A macro, not a function: the time stays in the caller's own frame (the rank test wants
 * compute itself as the function where the slow rank spends more). */
#define SPIN(ms, step)                                                  \
	do {                                                            \
		double end_ = thread_cpu_ms() + (ms), s_ = 0;           \
		while (thread_cpu_ms() < end_)                          \
			for (int i_ = 0; i_ < 2000; i_++)               \
				s_ += i_ * (step);                      \
		sink = s_;                                              \
	} while (0)

/* noipa: never inlined nor merged; the asm keeps them off tail calls */
__attribute__((noipa)) static void load_batch(double ms)
{
	SPIN(ms, 0.5);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noipa)) static void compute(double ms)
{
	SPIN(ms, 0.25);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;
	int slow_from = argc > 3 ? atoi(argv[2]) : 10, slow_to = argc > 3 ? atoi(argv[3]) : 12;
	double load = argc > 5 ? atof(argv[4]) : 2, comp = argc > 5 ? atof(argv[5]) : 3;
	const char *scale_env = getenv("STEPS_COMPUTE_SCALE");
	const char *slow_env = getenv("STEPS_SLOW_FACTOR");
	double scale = scale_env ? atof(scale_env) : 1, slow = slow_env ? atof(slow_env) : 3;

	if (n <= 0 || n > 1000000 || !(load > 0) || !(comp > 0) || !(scale > 0) || !(slow > 0)) {
		fprintf(stderr, "usage: steps [N [SLOW_FROM SLOW_TO [LOAD_MS COMPUTE_MS]]]\n");
		return 2;
	}
	for (int i = 1; i <= n; i++) {
		load_batch(load);
		compute(comp * scale * (i >= slow_from && i <= slow_to ? slow : 1));
	}
	return 0;
}
