/* symbols.c: the program profiler/unwind/symbols_test.c symbolizes (built -O2 -g; the test derives
 * stripped, debuglink and MiniDebugInfo copies from it). Each MARK(id) records an address the
 * test names; the comments CALLSITE-n mark the lines the test expects for inlined callers.
 * Run with a number of seconds it sleeps (the deleted-file test runs it); otherwise it only
 * computes and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "marks.h"

static inline __attribute__((always_inline)) int sym_inner(int x)
{
	MARK(1);
	return x * 3 + 1;
}

__attribute__((noinline)) int sym_outer(int x)
{
	int r = sym_inner(x); /* CALLSITE-1 */
	return r + 2;
}

static inline __attribute__((always_inline)) int sym_deepest(int x)
{
	MARK(3);
	return x ^ 0x55;
}

static inline __attribute__((always_inline)) int sym_middle(int x)
{
	int r = sym_deepest(x + 1); /* CALLSITE-3b */
	return r * 7;
}

__attribute__((noinline)) int sym_top(int x)
{
	int r = sym_middle(x); /* CALLSITE-3a */
	return r - 1;
}

/* Static: in .symtab only, so a stripped copy cannot name it. */
static __attribute__((noinline)) int secret_fn(int x)
{
	MARK(2);
	return x * x + 11;
}

int main(int argc, char **argv)
{
	int v = sym_outer(argc) + sym_top(argc) + secret_fn(argc);
	if (argc > 1)
		sleep((unsigned)atoi(argv[1]));
	printf("%d\n", v);
	return 0;
}
