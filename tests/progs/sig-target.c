/* sig-target.c: a program with its own signal handling, for tests/record/t-target-signals.sh,
 * which runs it alone and under `csampler record` in each mode and compares what it prints.
 * A second thread spins the whole time, so a ptrace sampler keeps stopping threads while the
 * main thread:
 *   - forks three children that exit 3, 4 and 5 (SIGCHLD handler, SA_RESTART) and reaps them;
 *   - blocks in read() on a pipe that a child fills after 300 ms;
 *   - sleeps 300 ms in nanosleep();
 *   - raises SIGUSR1 five times (handler counts);
 *   - then spins until the file named by argv[1] exists, while the test sends SIGUSR1 three
 *     times and SIGSTOP/SIGCONT from outside (it writes "spinning" to stdout first).
 * It prints one line per step: what a call returned and how often it saw EINTR. Times are
 * checked but not printed, so that the transcript is the same on every run. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_count, chld_count, stop_spinner;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

static void on_chld(int sig)
{
	(void)sig;
	chld_count++;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin_for(double secs)
{
	volatile unsigned long x = 0;
	double end = now_s() + secs;
	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!stop_spinner)
		spin_for(0.01);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sig-target GO_FILE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);

	pthread_t th;
	pthread_create(&th, NULL, spinner, NULL);
	spin_for(0.2);

	/* children and SIGCHLD */
	pid_t kids[3];
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			spin_for(0.05);
			_exit(3 + i);
		}
	}
	for (int i = 0; i < 3; i++) {
		int st = 0, eintr = 0;
		pid_t r;
		while ((r = waitpid(kids[i], &st, 0)) < 0 && errno == EINTR)
			eintr++;
		printf("child %d: %s %d, waitpid eintr %d\n", i, r == kids[i] && WIFEXITED(st) ? "exit" : "other",
		       WIFEXITED(st) ? WEXITSTATUS(st) : -1, eintr);
	}
	printf("sigchld seen: %s\n", chld_count > 0 ? "yes" : "no");

	/* a blocking read, filled later by a child */
	int fds[2];
	if (pipe(fds) < 0)
		return 1;
	pid_t writer = fork();
	if (writer == 0) {
		struct timespec ts = { 0, 300000000 };
		nanosleep(&ts, NULL);
		ssize_t w = write(fds[1], "hello", 5);
		_exit(w == 5 ? 0 : 1);
	}
	char buf[16];
	int eintr = 0;
	ssize_t got;
	double t0 = now_s();
	while ((got = read(fds[0], buf, sizeof(buf))) < 0 && errno == EINTR)
		eintr++;
	double waited = now_s() - t0;
	printf("read: %zd bytes \"%.*s\", eintr %d, waited %s\n", got, got > 0 ? (int)got : 0, buf, eintr,
	       waited > 0.2 ? "yes" : "no");
	waitpid(writer, NULL, 0);

	/* nanosleep */
	struct timespec req = { 0, 300000000 }, rem;
	t0 = now_s();
	int ret, sleep_eintr = 0;
	while ((ret = nanosleep(&req, &rem)) < 0 && errno == EINTR) {
		sleep_eintr++;
		req = rem;
	}
	double slept = now_s() - t0;
	printf("nanosleep: %d, eintr %d, slept the whole 300 ms: %s\n", ret, sleep_eintr,
	       slept >= 0.299 ? "yes" : "no");

	/* SIGUSR1 from itself */
	for (int i = 0; i < 5; i++)
		raise(SIGUSR1);
	printf("usr1 after raise: %d\n", (int)usr1_count);

	/* SIGUSR1, SIGSTOP and SIGCONT from outside, until GO_FILE exists */
	printf("spinning\n");
	double give_up = now_s() + 30;
	while (access(argv[1], F_OK) != 0 && now_s() < give_up)
		spin_for(0.01);
	printf("usr1 total: %d\n", (int)usr1_count);
	stop_spinner = 1;
	pthread_join(th, NULL);
	printf("done\n");
	return 0;
}
