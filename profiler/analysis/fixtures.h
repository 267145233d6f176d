/* fixtures.h: what the readers' unit tests share (report_test.c, stacks_test.c,
 * fold_gpu_test.c): the "app" profile, the folded text of a profile, and a golden-text check.
 * Test-only: the code is in fixtures_test.c, linked into bin/csampler-unit alone. */
#ifndef CSAMPLER_FIXTURES_H
#define CSAMPLER_FIXTURES_H

#include "analysis/fold.h"
#include "analysis/profile_builder.h"

#define FX_LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/* Process "app" (pid 100) with its main thread and a worker (tid 101, "worker"), and its five
 * stacks, into s[0..5):
 *   s[0], s[1]  main;compute;work_a on a.c:10 and a.c:12 (main thread)
 *   s[2]        clone3;start_thread;worker_main;work_b, inlined (worker)
 *   s[3]        main;rec;rec;rec;rec_leaf (main thread)
 *   s[4]        a library without CFI or symbols, /opt/libfoo.so (worker)
 * The tests add the samples. */
void fx_app(struct pbuild *b, const char *rec_leaf, uint32_t s[5]);

/* A run of samples of the app's process (pid 100): count samples of thread tid on stack
 * s[stack] of fx_app, with the sample flags. */
struct fx_run {
	uint32_t stack, tid, count, flags;
};
/* The runs[0..n) in order, each after the last (times follow pb_samples). */
void fx_app_runs(struct pbuild *b, const uint32_t s[5], const struct fx_run *runs, size_t n);

/* fold_write_folded's text for p with o (NULL: the defaults); the caller frees it. */
char *fx_folded(const struct profile *p, const struct fold_opts *o);

/* Fail the test, printing both, when got is not want. */
void fx_expect_text(const char *got, const char *want);
/* Fail the test unless p folds (with o, NULL: the defaults) to want. */
void fx_expect_folded(const struct profile *p, const struct fold_opts *o, const char *want);

#endif
