/* static-loop.c: a statically linked program (no libc.so, so no dlopen to call) that sleeps
 * SECONDS in 10 ms steps: the target t-gpu-attach.sh attaches to with --gpu on. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) * 100 : 300;
	struct timespec ts = { 0, 10000000 };
	for (long i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	return 0;
}
