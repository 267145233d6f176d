/* rec-family.c: test program for `record`: a main thread and two named threads ("alpha",
 * "beta") burn CPU for SECONDS while a forked child renames itself "kid" and execs
 * rec-family in child mode ("kidexec"), which also burns CPU. Exit status: 0.
 * Usage: rec-family SECONDS | rec-family --child SECONDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds = 1.0;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(void)
{
	volatile unsigned long x = 0;
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
}

static void *thread_main(void *name)
{
	prctl(PR_SET_NAME, name);
	burn();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--child")) {
		seconds = atof(argv[2]);
		prctl(PR_SET_NAME, "kidexec");
		burn();
		return 0;
	}
	if (argc > 1)
		seconds = atof(argv[1]);
	prctl(PR_SET_NAME, "family-main");
	pthread_t a, b;
	pthread_create(&a, NULL, thread_main, "alpha");
	pthread_create(&b, NULL, thread_main, "beta");
	pid_t pid = fork();
	if (pid == 0) {
		char secs[32];
		prctl(PR_SET_NAME, "kid");
		snprintf(secs, sizeof(secs), "%g", seconds);
		execl("/proc/self/exe", argv[0], "--child", secs, (char *)NULL);
		_exit(127);
	}
	burn();
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
