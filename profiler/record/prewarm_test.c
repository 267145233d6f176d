/* prewarm_test.c: unit tests of the files prewarm.c prepares before a launch. */
#include "record/prewarm.h"

#include "base/unit.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool prewarm_test_has(const struct prewarm_files *l, const char *suffix)
{
	size_t n = strlen(suffix);
	for (size_t i = 0; i < l->n; i++) {
		size_t m = strlen(l->paths[i]);
		if (m >= n && !strcmp(l->paths[i] + m - n, suffix))
			return true;
	}
	return false;
}

/* The path of the recorder's own library named soname ("libc.so.6"), or "". */
static int prewarm_test_own(struct dl_phdr_info *info, size_t size, void *arg)
{
	char *out = arg;
	(void)size;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	if (base && !strcmp(base + 1, out)) {
		snprintf(out, 256, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

UNIT_TEST(prewarm_files_of_a_command)
{
	struct prewarm_files l;
	/* found on PATH, with its loader and libc (the recorder's own: the same system's) */
	char libc[256] = "libc.so.6";
	dl_iterate_phdr(prewarm_test_own, libc);
	prewarm_files("sh", &l);
	UNIT_ASSERT(l.n >= 2);
	UNIT_ASSERT(l.paths[0][0] == '/' && access(l.paths[0], X_OK) == 0);
	UNIT_ASSERT(strchr(libc, '/') && prewarm_test_has(&l, libc));
	UNIT_ASSERT(prewarm_test_has(&l, "ld-linux-x86-64.so.2") || prewarm_test_has(&l, ".so.1"));
	prewarm_files_free(&l);

	/* a script: its interpreter, through env too */
	char script[512];
	snprintf(script, sizeof(script), "%s/prewarm-script", unit_tmpdir());
	FILE *f = fopen(script, "w");
	UNIT_ASSERT(f);
	fputs("#!/usr/bin/env sh\necho hi\n", f);
	fclose(f);
	chmod(script, 0755);
	prewarm_files(script, &l);
	UNIT_ASSERT(l.n >= 2 && !strstr(l.paths[0], "prewarm-script") &&
		    !strcmp(strrchr(l.paths[0], '/'), "/sh"));
	UNIT_ASSERT(prewarm_test_has(&l, libc));
	prewarm_files_free(&l);

	/* a file that is not ELF nor a script, and a command that does not exist: nothing but the
	 * file itself, and nothing */
	f = fopen(script, "w");
	fputs("plain text\n", f);
	fclose(f);
	prewarm_files(script, &l);
	UNIT_ASSERT_EQ_INT(l.n, 1);
	prewarm_files_free(&l);
	prewarm_files("csampler-no-such-command-anywhere", &l);
	UNIT_ASSERT_EQ_INT(l.n, 0);
	prewarm_files_free(&l);
}
