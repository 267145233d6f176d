/* accuracy.c: a workload whose profile is known, for the end-to-end accuracy tests and the
 * benchmark. Usage: accuracy SECONDS
 *
 * Two threads (the main thread and one worker) repeat rounds until SECONDS have passed. A round
 * runs work_alpha for 5 units, work_beta for 3 and work_gamma for 2; a unit is the same number of
 * iterations of the same kind of arithmetic (one multiply-add chain), so the true shares of CPU
 * time are 50%, 30% and 20%. Each leaf is reached through 24 distinct functions (level_00 ..
 * level_23) that keep 384 bytes of stack each (about 10 KB of stack at the leaf, more than perf's
 * default 8 KB copy). work_gamma is always inlined into gamma_caller, so a profiler must show it
 * as an inlined frame to get its share right. Built with -O2 -fomit-frame-pointer
 * (tests/progs/flags.mk): only DWARF CFI can unwind it.
 *
 * Built with -DACCURACY_FAST_ALPHA (bin/tests/accuracy-fast), work_alpha does its units in half
 * the iterations: twice as fast, so a round's split becomes 2.5 : 3 : 2 (33%, 40%, 27%), the
 * "after" of report --compare's test (tests/report/t-compare.sh). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT_ITERATIONS 200000L
#ifdef ACCURACY_FAST_ALPHA
#define ALPHA_SPEEDUP 2
#else
#define ALPHA_SPEEDUP 1
#endif

/* One unit of work: a dependency chain the compiler can neither vectorise nor fold. The
 * constants differ per leaf so identical-code folding cannot merge the leaves. */
#define SPIN(x, units, mul, add) SPIN_N(x, (units) * UNIT_ITERATIONS, mul, add)
#define SPIN_N(x, iterations, mul, add)                                             \
	for (long i_ = 0; i_ < (iterations); i_++) {                                \
		(x) = (x) * (mul) + (add);                                          \
		__asm__ volatile("" : "+r"(x));                                     \
	}

static __attribute__((noinline, noclone)) uint64_t work_alpha(uint64_t x, long units)
{
	SPIN_N(x, units * UNIT_ITERATIONS / ALPHA_SPEEDUP, 6364136223846793005ULL,
	       1442695040888963407ULL);
	return x;
}

static __attribute__((noinline, noclone)) uint64_t work_beta(uint64_t x, long units)
{
	SPIN(x, units, 2862933555777941757ULL, 3037000493ULL);
	return x;
}

static inline __attribute__((always_inline)) uint64_t work_gamma(uint64_t x, long units)
{
	SPIN(x, units, 3935559000370003845ULL, 2691343689449507681ULL);
	return x;
}

static __attribute__((noinline, noclone)) uint64_t gamma_caller(uint64_t x, long units)
{
	uint64_t r = work_gamma(x, units);
	__asm__ volatile("" : "+r"(r)); /* no tail position */
	return r + 1;
}

enum leaf { LEAF_ALPHA, LEAF_BETA, LEAF_GAMMA };

static __attribute__((noinline, noclone)) uint64_t dispatch(int leaf, uint64_t x, long units)
{
	uint64_t r;

	switch (leaf) {
	case LEAF_ALPHA:
		r = work_alpha(x, units);
		break;
	case LEAF_BETA:
		r = work_beta(x, units);
		break;
	default:
		r = gamma_caller(x, units);
		break;
	}
	__asm__ volatile("" : "+r"(r));
	return r ^ 1;
}

/* level_N calls NEXT with 384 bytes of its own stack in use; using pad after the call keeps the
 * call out of tail position. */
#define LEVEL(n, next)                                                                  \
	static __attribute__((noinline, noclone)) uint64_t level_##n(int leaf, uint64_t x,  \
								      long units)       \
	{                                                                               \
		volatile unsigned char pad[384];                                        \
		pad[x % sizeof(pad)] = (unsigned char)x;                                \
		uint64_t r = next(leaf, x + pad[x % sizeof(pad)], units);               \
		pad[r % sizeof(pad)] = (unsigned char)r;                                \
		return r + pad[r % sizeof(pad)];                                        \
	}

LEVEL(23, dispatch)
LEVEL(22, level_23)
LEVEL(21, level_22)
LEVEL(20, level_21)
LEVEL(19, level_20)
LEVEL(18, level_19)
LEVEL(17, level_18)
LEVEL(16, level_17)
LEVEL(15, level_16)
LEVEL(14, level_15)
LEVEL(13, level_14)
LEVEL(12, level_13)
LEVEL(11, level_12)
LEVEL(10, level_11)
LEVEL(09, level_10)
LEVEL(08, level_09)
LEVEL(07, level_08)
LEVEL(06, level_07)
LEVEL(05, level_06)
LEVEL(04, level_05)
LEVEL(03, level_04)
LEVEL(02, level_03)
LEVEL(01, level_02)
LEVEL(00, level_01)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct run {
	double until;
	uint64_t seed;
	long rounds;
};

static void *run_rounds(void *arg)
{
	struct run *r = arg;
	uint64_t x = r->seed;

	while (now_s() < r->until) {
		x = level_00(LEAF_ALPHA, x, 5);
		x = level_00(LEAF_BETA, x, 3);
		x = level_00(LEAF_GAMMA, x, 2);
		r->rounds++;
	}
	r->seed = x;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	if (seconds <= 0 || seconds > 3600) {
		fprintf(stderr, "usage: accuracy SECONDS (0 < SECONDS <= 3600)\n");
		return 2;
	}
	struct run main_run = { now_s() + seconds, 1, 0 }, worker_run = main_run;
	worker_run.seed = 2;
	pthread_t worker;
	if (pthread_create(&worker, NULL, run_rounds, &worker_run) != 0) {
		fprintf(stderr, "accuracy: pthread_create failed\n");
		return 1;
	}
	run_rounds(&main_run);
	pthread_join(worker, NULL);
	printf("accuracy: %ld + %ld rounds (%llx)\n", main_run.rounds, worker_run.rounds,
	       (unsigned long long)(main_run.seed ^ worker_run.seed));
	return 0;
}
