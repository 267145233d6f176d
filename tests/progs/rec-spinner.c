/* rec-spinner.c: test program for `record -p`: spins until killed, answering every line
 * written to the FIFO given as argv[1] by appending "pong N" to the file argv[2] (proof that it
 * is still running and responsive after csampler detaches). After 2 s it starts a second
 * thread named "late", so attach tests can check threads created after attaching.
 * Usage: rec-spinner FIFO REPLYFILE */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char *reply_path;

static void *late_thread(void *arg)
{
	prctl(PR_SET_NAME, "late");
	volatile unsigned long x = 0;
	for (;;)
		x++;
	return NULL;
}

static void *fifo_thread(void *fifo)
{
	char buf[256];
	int n = 0;
	for (;;) {
		int fd = open(fifo, O_RDONLY);
		if (fd < 0)
			return NULL;
		while (read(fd, buf, sizeof(buf)) > 0) {
			FILE *f = fopen(reply_path, "a");
			if (f) {
				fprintf(f, "pong %d\n", ++n);
				fclose(f);
			}
		}
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	struct timespec start, now;
	if (argc < 3) {
		fprintf(stderr, "usage: rec-spinner FIFO REPLYFILE\n");
		return 2;
	}
	reply_path = argv[2];
	prctl(PR_SET_NAME, "spinner");
	pthread_create(&t, NULL, fifo_thread, argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	volatile unsigned long x = 0;
	int late = 0;
	for (;;) {
		for (int i = 0; i < 1000000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!late && now.tv_sec - start.tv_sec >= 2) {
			late = 1;
			pthread_create(&t, NULL, late_thread, NULL);
		}
	}
}
