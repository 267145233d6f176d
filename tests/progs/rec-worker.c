/* rec-worker.c: test program for the fault, privilege and load tests of `record`.
 * THREADS threads (the main thread and THREADS-1 more, named "worker") burn CPU in
 * worker_burn() for SECONDS of wall time, then the program ends as THEN says:
 *   exit        exit 0
 *   segv        a real segmentation fault (a store through a null pointer), no core file
 *   done:FILE   write "done" to FILE, then exit 0 (proof that it finished normally)
 * While it burns, each thread's stack holds the text "rec-worker-stack-secret-PID", so a test
 * can tell whether raw stack bytes reached a data file.
 * Usage: rec-worker THREADS SECONDS [exit|segv|done:FILE] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double seconds = 1.0;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void worker_burn(const char *secret)
{
	volatile unsigned long x = 0;
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x += i + (unsigned char)secret[i & 15];
}

/* The secret lives in this frame, below worker_burn's, for as long as the thread burns. */
__attribute__((noinline)) static void worker_run(void)
{
	char secret[64];
	snprintf(secret, sizeof(secret), "rec-worker-stack-secret-%d", (int)getpid());
	worker_burn(secret);
	__asm__ volatile("" : : "r"(secret) : "memory");
}

static void *worker_thread(void *arg)
{
	prctl(PR_SET_NAME, "worker");
	worker_run();
	return NULL;
}

__attribute__((noinline)) static void worker_crash(void)
{
	struct rlimit none = { 0, 0 };
	setrlimit(RLIMIT_CORE, &none);
	*(volatile int *)NULL = 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rec-worker THREADS SECONDS [exit|segv|done:FILE]\n");
		return 2;
	}
	int nthreads = atoi(argv[1]);
	const char *then = argc > 3 ? argv[3] : "exit";
	seconds = atof(argv[2]);
	if (nthreads < 1 || nthreads > 256)
		nthreads = 1;
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	for (int i = 1; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker_thread, NULL);
	worker_run();
	for (int i = 1; i < nthreads; i++)
		pthread_join(t[i], NULL);
	free(t);
	if (!strcmp(then, "segv")) {
		worker_crash();
	} else if (!strncmp(then, "done:", 5)) {
		FILE *f = fopen(then + 5, "w");
		if (!f || fputs("done\n", f) < 0 || fclose(f))
			return 1;
	}
	return 0;
}
