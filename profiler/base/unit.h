/* unit.h: a tiny unit-test harness. Tests live beside the code in profiler/<module>_test.c:
 *
 *     UNIT_TEST(datafile_roundtrip) { ... UNIT_ASSERT(x == 3); ... }
 *
 * bin/csampler-unit runs every registered test in its own forked child, so a crash is reported as
 * that test's failure, and prints "PASS: unit/<name>" or "FAIL: unit/<name>: <why>". */
#ifndef CSAMPLER_UNIT_H
#define CSAMPLER_UNIT_H

#include <stdio.h>
#include <stdlib.h>

typedef void (*unit_fn)(void);
void unit_register(const char *name, unit_fn fn);
/* Directory for scratch files, unique per test (created by the runner, removed afterwards). */
const char *unit_tmpdir(void);
/* Capture what the test writes to stderr from unit_stderr_begin() on; unit_stderr_end() puts
 * it back and copies what was written into out (NUL-terminated, cut to len - 1 bytes). */
void unit_stderr_begin(void);
void unit_stderr_end(char *out, size_t len);

/* Fail the test (named by file and line) unless text holds every string of needles, a NULL-ended
 * list; the message names the first one missing and prints the text. */
void unit_contains_all(const char *file, int line, const char *text, const char *const *needles);
#define UNIT_ASSERT_CONTAINS_ALL(text, ...) \
	unit_contains_all(__FILE__, __LINE__, (text), (const char *const[]){ __VA_ARGS__, NULL })

#define UNIT_TEST(name)                                                           \
	static void unit_test_##name(void);                                         \
	__attribute__((constructor)) static void unit_register_##name(void)         \
	{ unit_register(#name, unit_test_##name); }                                 \
	static void unit_test_##name(void)

#define UNIT_ASSERT(cond)                                                         \
	do {                                                                        \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,       \
				__LINE__, #cond);                                           \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

#define UNIT_ASSERT_EQ_INT(a, b)                                                  \
	do {                                                                        \
		long long unit_a_ = (long long)(a), unit_b_ = (long long)(b);          \
		if (unit_a_ != unit_b_) {                                              \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",     \
				__FILE__, __LINE__, #a, unit_a_, #b, unit_b_);              \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

#endif
