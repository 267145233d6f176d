/* offcpu-mix.c: a thread with known shares of off-CPU time, for `record --idle`
 * (tests/record/t-idle.sh). Its thread "worker" repeats a cycle of four phases of PHASE_MS each:
 * blocked in a futex wait (FUTEX_WAIT that times out), asleep (nanosleep, which glibc makes
 * clock_nanosleep), blocked reading a pipe that the thread "writer" writes PHASE_MS after being
 * asked, and spinning. Each phase is its own noinline function, so a sample's stack says which
 * phase it was taken in. At the end it prints, per phase, the wall time it took and the
 * worker's CPU time during it (a profile on CPU time sees the spin phase's CPU time, which is
 * less than its wall time when the machine is busy), and the time it waited for a CPU during it
 * (schedstat's run delay: a thread woken from a wait on a busy machine is runnable, neither
 * blocked nor running, until it gets a CPU, and a sampler of blocked threads does not count it):
 *   futex WALL_NS CPU_NS WAIT_NS / sleep ... / read ... / spin ...
 * Usage: offcpu-mix [CYCLES [PHASE_MS]] (default 4 cycles of 4 x 250 ms). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { PH_FUTEX, PH_SLEEP, PH_READ, PH_SPIN, NPHASES };
static const char *const phase_names[NPHASES] = { "futex", "sleep", "read", "spin" };

static long phase_ms = 250;
static int ask[2], answer[2];          /* worker -> writer, writer -> worker */
static uint32_t futex_word;            /* never woken: each wait times out */
static volatile uint64_t spin_sink;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's time spent runnable and waiting for a CPU (the second field of
 * /proc/thread-self/schedstat), or 0 where the kernel does not keep it. */
static uint64_t run_delay_ns(void)
{
	unsigned long long run = 0, delay = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &delay) != 2)
		delay = 0;
	fclose(f);
	return delay;
}

static struct timespec ns_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

__attribute__((noinline)) static void phase_futex(void)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)phase_ms * 1000000ull;
	for (uint64_t now; (now = clock_ns(CLOCK_MONOTONIC)) < end;) {
		struct timespec rel = ns_ts(end - now);
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &rel, NULL, 0);
	}
}

__attribute__((noinline)) static void phase_sleep(void)
{
	struct timespec rel = ns_ts((uint64_t)phase_ms * 1000000ull);
	while (nanosleep(&rel, &rel) < 0 && errno == EINTR)
		;
}

__attribute__((noinline)) static void phase_read(void)
{
	char c = 'x';
	if (write(ask[1], &c, 1) != 1)
		exit(2);
	while (read(answer[0], &c, 1) < 0 && errno == EINTR)
		;
}

__attribute__((noinline)) static void phase_spin(void)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)phase_ms * 1000000ull;
	while (clock_ns(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 1000; i++)
			spin_sink += (uint64_t)i * 2654435761u;
}

/* Answers each request PHASE_MS later. */
static void *writer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "writer");
	char c;
	while (read(ask[0], &c, 1) == 1) {
		struct timespec rel = ns_ts((uint64_t)phase_ms * 1000000ull);
		while (nanosleep(&rel, &rel) < 0 && errno == EINTR)
			;
		if (write(answer[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static uint64_t wall[NPHASES], cpu[NPHASES], waited[NPHASES];
static long cycles = 4;

static void *worker_main(void *arg)
{
	(void)arg;
	static void (*const phases[NPHASES])(void) = { phase_futex, phase_sleep, phase_read,
						       phase_spin };
	pthread_setname_np(pthread_self(), "worker");
	for (long c = 0; c < cycles; c++) {
		for (int p = 0; p < NPHASES; p++) {
			uint64_t d0 = run_delay_ns();
			uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			phases[p]();
			wall[p] += clock_ns(CLOCK_MONOTONIC) - w0;
			cpu[p] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
			waited[p] += run_delay_ns() - d0;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cycles = atol(argv[1]);
	if (argc > 2)
		phase_ms = atol(argv[2]);
	if (cycles < 1 || phase_ms < 1 || pipe(ask) || pipe(answer)) {
		fprintf(stderr, "usage: offcpu-mix [CYCLES [PHASE_MS]]\n");
		return 2;
	}
	pthread_t writer, worker;
	if (pthread_create(&writer, NULL, writer_main, NULL) ||
	    pthread_create(&worker, NULL, worker_main, NULL))
		return 1;
	pthread_join(worker, NULL);
	close(ask[1]);
	pthread_join(writer, NULL);
	for (int p = 0; p < NPHASES; p++)
		printf("%s %llu %llu %llu\n", phase_names[p], (unsigned long long)wall[p],
		       (unsigned long long)cpu[p], (unsigned long long)waited[p]);
	return 0;
}
