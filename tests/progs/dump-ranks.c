/* dump-ranks.c: a stand-in for a hung distributed job, for `csampler dump` (tests/live/
 * t-dump.sh, scripts/bench-dump.sh).
 *
 *   dump-ranks NPROC NTHREADS ODD_RANK [EXIT_AFTER_MS [STAGGER_MS]]
 *
 * Starts NPROC rank processes (each exec'd again with RANK=r in its environment, as torchrun
 * does), each with NTHREADS - 1 worker threads parked in ranks_worker_idle (a condition
 * variable: futex). Every rank's main thread waits in ranks_wait_collective (nanosleep) except
 * ODD_RANK's, which spins in ranks_spin_elsewhere (-1: none). With EXIT_AFTER_MS, rank r exits
 * by itself after EXIT_AFTER_MS + STAGGER_MS * r ms (default 150: one after the other). The launcher prints "ready PID..." (the ranks' PIDs) once
 * every rank has all its threads, then waits for them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))

static pthread_mutex_t ranks_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ranks_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t ranks_parked_cond = PTHREAD_COND_INITIALIZER;
static int ranks_parked;
static pid_t ranks_tids[1024];
static volatile int ranks_never;
static volatile unsigned long ranks_sink;

NOIPA void *ranks_worker_idle(void *arg)
{
	pthread_mutex_lock(&ranks_lock);
	if (ranks_parked < 1024)
		ranks_tids[ranks_parked] = gettid();
	ranks_parked++;
	pthread_cond_broadcast(&ranks_parked_cond);
	while (!ranks_never)
		pthread_cond_wait(&ranks_cond, &ranks_lock);
	pthread_mutex_unlock(&ranks_lock);
	return arg;
}

NOIPA void ranks_wait_collective(void)
{
	struct timespec ts = { 3600, 0 };
	while (!ranks_never)
		nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory");
}

NOIPA void ranks_spin_elsewhere(void)
{
	for (;;)
		ranks_sink++;
}

NOIPA static int ranks_rank_main(int rank, int nthreads, int odd, long exit_ms, long stagger_ms,
				 int ready_fd)
{
	for (int i = 1; i < nthreads; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, ranks_worker_idle, NULL))
			return 1;
	}
	/* ready once every worker is parked: counted, and seen asleep by the kernel */
	pthread_mutex_lock(&ranks_lock);
	while (ranks_parked < nthreads - 1)
		pthread_cond_wait(&ranks_parked_cond, &ranks_lock);
	pthread_mutex_unlock(&ranks_lock);
	for (int i = 0; i < nthreads - 1 && i < 1024; i++) {
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)ranks_tids[i]);
		for (int tries = 0; tries < 2000; tries++) {
			FILE *f = fopen(path, "r");
			size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
			if (f)
				fclose(f);
			buf[n] = 0;
			const char *paren = strrchr(buf, ')');
			if (paren && paren[1] == ' ' && paren[2] == 'S')
				break;
			usleep(1000);
		}
	}
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	close(ready_fd);
	if (exit_ms > 0) {
		exit_ms += stagger_ms * rank;
		struct timespec ts = { exit_ms / 1000, (exit_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		_exit(0);
	}
	if (rank == odd)
		ranks_spin_elsewhere();
	else
		ranks_wait_collective();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 8 && !strcmp(argv[1], "--rank"))
		return ranks_rank_main(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atol(argv[5]),
				       atol(argv[6]), atoi(argv[7]));
	if (argc < 4) {
		fprintf(stderr, "usage: dump-ranks NPROC NTHREADS ODD_RANK [EXIT_AFTER_MS [STAGGER_MS]]\n");
		return 2;
	}
	int nproc = atoi(argv[1]);
	const char *exit_ms = argc > 4 ? argv[4] : "0";
	const char *stagger_ms = argc > 5 ? argv[5] : "150";
	int ready[2];
	if (nproc < 1 || pipe(ready) < 0)
		return 2;
	pid_t *pids = calloc((size_t)nproc, sizeof(pid_t));
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 2;
	self[len] = 0;
	for (int r = 0; r < nproc; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return 1;
		if (pids[r] == 0) {
			char rank[16], fd[16];
			snprintf(rank, sizeof(rank), "%d", r);
			snprintf(fd, sizeof(fd), "%d", ready[1]);
			close(ready[0]);
			setenv("RANK", rank, 1);
			execl(self, argv[0], "--rank", rank, argv[2], argv[3], exit_ms, stagger_ms,
			      fd, (char *)NULL);
			_exit(127);
		}
	}
	close(ready[1]);
	char c;
	for (int r = 0; r < nproc; r++)
		if (read(ready[0], &c, 1) != 1)
			return 1;
	printf("ready");
	for (int r = 0; r < nproc; r++)
		printf(" %d", (int)pids[r]);
	printf("\n");
	fflush(stdout);
	int st;
	while (wait(&st) > 0)
		;
	return 0;
}
