/* phases.c: a recording with two phases in time, for the readers' --time filter and the
 * multi-rank tests (tests/merge/). The main thread burns S seconds of its own CPU time in
 * phase_one, sleeps GAP seconds, then burns S seconds in phase_two: the first half of the
 * recording is phase_one and the second phase_two, and the idle gap in the middle keeps the
 * halves apart when the machine's load stretches one phase's wall time more than the other's
 * (by less than GAP). With NAME the process first renames itself NAME (prctl), so that
 * processes of one run can be told apart by --comm.
 * Usage: phases [S [GAP [NAME]]]   (defaults 0.4 and 0) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

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
	double s = argc > 1 ? atof(argv[1]) : 0.4, gap = argc > 2 ? atof(argv[2]) : 0;
	if (s <= 0 || s > 100 || gap < 0 || gap > 100) {
		fprintf(stderr, "usage: phases [SECONDS [GAP [NAME]]]\n");
		return 2;
	}
	if (argc > 3)
		prctl(PR_SET_NAME, argv[3], 0, 0, 0);
	phase_one(s);
	usleep((useconds_t)(gap * 1e6));
	phase_two(s);
	return 0;
}
