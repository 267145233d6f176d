/* phases.c: a recording with two phases in time, for the readers' --time filter and the
 * multi-rank tests (tests/merge/). The main thread burns S seconds of its own CPU time in
 * phase_one, then S seconds in phase_two, so the first half of the recording is phase_one and
 * the second phase_two whatever the machine's load. With a second argument NAME the process
 * first renames itself NAME (prctl), so that processes of one run can be told apart by --comm.
 * Usage: phases [S [NAME]]   (default 0.4) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile double sink;

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double burn(double seconds, double step)
{
	double end = thread_cpu_s() + seconds, s = 0;
	while (thread_cpu_s() < end)
		for (int i = 0; i < 20000; i++)
			s += i * step;
	return s;
}

/* noipa: never merged with each other (identical code folding) nor inlined */
__attribute__((noipa)) static void phase_one(double seconds)
{
	sink = burn(seconds, 0.5);
	__asm__ volatile("" ::: "memory"); /* not a tail call: phase_one stays on the stack */
}

__attribute__((noipa)) static void phase_two(double seconds)
{
	sink = burn(seconds, 0.25);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 0.4;
	if (s <= 0 || s > 100) {
		fprintf(stderr, "usage: phases [SECONDS [NAME]]\n");
		return 2;
	}
	if (argc > 2)
		prctl(PR_SET_NAME, argv[2], 0, 0, 0);
	phase_one(s);
	phase_two(s);
	return 0;
}
