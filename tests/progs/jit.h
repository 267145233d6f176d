/* jit.h: a tiny JIT for the unwinding tests (tests/record/t-jit.sh): the jit-*.c programs copy
 * hand-assembled machine code into anonymous memory (mapped writable, then made executable, as
 * xbyak and LLVM's JITs do), name it in /tmp/perf-PID.map and call it through a function pointer
 * from C functions built without frame pointers, on the main thread and on a second thread:
 *
 *   main / thread_main -> worker_loop -> jit_caller -> [JIT kernel]
 *
 * The code has no CFI: only the unwinder's recovery of JIT frames can get past it. A program
 * defines JIT_CODE (the bytes), JIT_NAME (its perf-map name), optionally a second kernel
 * (JIT_CODE2, JIT_NAME2; jit_kernel2), and jit_setup(), which fills the parameters the kernel
 * reads, then includes this file; JIT_THREAD_START(), when defined, runs first on each of the
 * two threads. Usage: PROG [SECONDS] (default 2). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* What every kernel reads through its first argument (rdi). */
struct jit_params {
	long iterations;     /* 0: loop count */
	long result;         /* 8: written by the kernel */
	uint64_t decoy;      /* 16: a word the kernel stores into its own frame (jit-decoy) */
	void (*callback)(struct jit_params *); /* 24: what an outer kernel calls (jit-nested) */
};

typedef void (*jit_fn)(struct jit_params *);

static jit_fn jit_kernel;
static __attribute__((unused)) jit_fn jit_kernel2; /* JIT_CODE2, when the program has one */
static volatile long jit_sink;
static double jit_seconds = 2.0;

static void jit_setup(struct jit_params *p); /* defined by the program */

static double jit_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Calls the kernel through a pointer: an indirect call, and work after it so that the call is
 * not turned into a tail jump. The parameters live in this frame, so the kernel's rbp (which it
 * uses as an ordinary register) points into the stack, as oneDNN's call parameters do. */
__attribute__((noinline)) void jit_caller(long iterations)
{
	struct jit_params p = { .iterations = iterations };

	jit_setup(&p);
	jit_kernel(&p);
	jit_sink += p.result;
}

__attribute__((noinline)) void worker_loop(double seconds)
{
	double end = jit_now() + seconds;

	while (jit_now() < end)
		for (int i = 0; i < 50; i++)
			jit_caller(20000);
	__asm__ volatile("" ::: "memory"); /* keep the loop's frame */
}

static void *thread_main(void *arg)
{
#ifdef JIT_THREAD_START
	JIT_THREAD_START();
#endif
	worker_loop(jit_seconds);
	return NULL;
}

/* Map the code the way JITs do (writable, then executable) and name it in the perf map. */
static int jit_load(void)
{
	static const unsigned char code[] = JIT_CODE;
	size_t len = 4096;
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		perror("jit: mmap");
		return -1;
	}
	memset(mem, 0xcc, len); /* int3 around the kernel */
	memcpy(mem, code, sizeof(code));
#ifdef JIT_CODE2
	static const unsigned char code2[] = JIT_CODE2;
	memcpy((char *)mem + len / 2, code2, sizeof(code2));
#endif
	if (mprotect(mem, len, PROT_READ | PROT_EXEC)) {
		perror("jit: mprotect");
		return -1;
	}
	jit_kernel = (jit_fn)mem;
#ifdef JIT_CODE2
	jit_kernel2 = (jit_fn)((char *)mem + len / 2);
#endif

	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f) {
		perror("jit: fopen perf map");
		return -1;
	}
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)mem, sizeof(code), JIT_NAME);
#ifdef JIT_CODE2
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)jit_kernel2, sizeof(code2), JIT_NAME2);
#endif
	if (fclose(f)) {
		perror("jit: write perf map");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		jit_seconds = atof(argv[1]);
	if (jit_load())
		return 1;
	if (pthread_create(&t, NULL, thread_main, NULL)) {
		fprintf(stderr, "jit: pthread_create failed\n");
		return 1;
	}
#ifdef JIT_THREAD_START
	JIT_THREAD_START();
#endif
	worker_loop(jit_seconds);
	pthread_join(t, NULL);
	printf("%ld\n", jit_sink);
	return 0;
}
