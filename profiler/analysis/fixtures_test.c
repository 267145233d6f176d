/* fixtures_test.c: the readers' shared unit-test fixtures (fixtures.h). */
#include "analysis/fixtures.h"
#include "analysis/fold.h"
#include "analysis/stacks.h"
#include "base/unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fx_app(struct pbuild *b, const char *rec_leaf, uint32_t s[5])
{
	char rec[256];
	pb_process(b, 100, 1, "app");
	pb_thread(b, 100, 100, "app");
	pb_thread(b, 100, 101, "worker");
	s[0] = pb_stack(b, "_start;__libc_start_main@" FX_LIBC ";main=app.c:40;compute;"
			   "work_a=a.c:10");
	s[1] = pb_stack(b, "_start;__libc_start_main@" FX_LIBC ";main=app.c:40;compute;"
			   "work_a=a.c:12");
	s[2] = pb_stack(b, "clone3@" FX_LIBC ";start_thread@" FX_LIBC ";worker_main=w.c:3;"
			   "work_b_[i]=w.c:7");
	snprintf(rec, sizeof(rec), "_start;__libc_start_main@" FX_LIBC ";main=app.c:41;rec;rec;rec;%s",
		 rec_leaf);
	s[3] = pb_stack(b, rec);
	s[4] = pb_stack(b, "libfoo.so+0x1234@/opt/libfoo.so;foo_leaf@/opt/libfoo.so");
	pb_module(b, "/opt/libfoo.so", PROFILE_MODULE_NO_CFI | PROFILE_MODULE_NO_SYMBOLS);
}

void fx_app_runs(struct pbuild *b, const uint32_t s[5], const struct fx_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pb_samples(b, 100, runs[i].tid, s[runs[i].stack], runs[i].count, runs[i].flags);
}

char *fx_folded(const struct profile *p, const struct fold_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	UNIT_ASSERT(f);
	UNIT_ASSERT(fold_write_folded(f, p, o) == 0);
	fclose(f);
	return text;
}

void fx_expect_text(const char *got, const char *want)
{
	if (strcmp(got, want)) {
		fprintf(stderr, "got:\n%s\nwanted:\n%s\n", got, want);
		UNIT_ASSERT(!"text differs from the golden text");
	}
}

void fx_expect_folded(const struct profile *p, const struct fold_opts *o, const char *want)
{
	char *text = fx_folded(p, o);
	fx_expect_text(text, want);
	free(text);
}
