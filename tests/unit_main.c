/* unit_main.c: runner for the unit tests registered with UNIT_TEST (profiler/base/unit.h).
 * Each test runs in a forked child with its own scratch directory; a non-zero exit, a signal or a
 * 60 s timeout is a failure. Usage: csampler-unit [NAME-SUBSTRING]. */
#include "base/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct unit_entry {
	const char *name;
	unit_fn fn;
};

static struct unit_entry unit_entries[512];
static int unit_count;
static char unit_dir[256];

void unit_register(const char *name, unit_fn fn)
{
	if (unit_count < (int)(sizeof(unit_entries) / sizeof(unit_entries[0])))
		unit_entries[unit_count++] = (struct unit_entry){ name, fn };
}

const char *unit_tmpdir(void)
{
	return unit_dir;
}

/* The real stderr while unit_stderr_begin() captures it, else -1. */
static int unit_saved_stderr = -1;

static void unit_stderr_path(char *path, size_t len)
{
	snprintf(path, len, "%s/stderr.txt", unit_dir);
}

void unit_stderr_begin(void)
{
	char path[512];
	unit_stderr_path(path, sizeof(path));
	fflush(stderr);
	unit_saved_stderr = dup(2);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (unit_saved_stderr < 0 || fd < 0 || dup2(fd, 2) != 2) {
		fprintf(stderr, "unit: capturing stderr into %s: %s\n", path, strerror(errno));
		exit(1);
	}
	close(fd);
}

void unit_stderr_end(char *out, size_t len)
{
	char path[512];
	unit_stderr_path(path, sizeof(path));
	fflush(stderr);
	dup2(unit_saved_stderr, 2);
	close(unit_saved_stderr);
	unit_saved_stderr = -1;
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(out, 1, len - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
}

void unit_contains_all(const char *file, int line, const char *text, const char *const *needles)
{
	for (; *needles; needles++) {
		if (text && strstr(text, *needles))
			continue;
		fprintf(stderr, "%s:%d: the text lacks \"%s\"; it is:\n%s\n", file, line, *needles,
			text ? text : "(null)");
		exit(1);
	}
}

static int unit_cmp(const void *a, const void *b)
{
	return strcmp(((const struct unit_entry *)a)->name, ((const struct unit_entry *)b)->name);
}

int main(int argc, char **argv)
{
	int failed = 0;

	qsort(unit_entries, unit_count, sizeof(unit_entries[0]), unit_cmp);
	for (int i = 0; i < unit_count; i++) {
		const struct unit_entry *e = &unit_entries[i];
		int status;
		pid_t pid;

		if (argc > 1 && !strstr(e->name, argv[1]))
			continue;
		snprintf(unit_dir, sizeof(unit_dir), "/tmp/csampler-unit-%d-XXXXXX", (int)getpid());
		if (!mkdtemp(unit_dir)) {
			printf("FAIL: unit/%s: mkdtemp: %s\n", e->name, strerror(errno));
			failed++;
			continue;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			alarm(60);
			e->fn();
			fflush(NULL);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0) {
			printf("FAIL: unit/%s: fork/waitpid: %s\n", e->name, strerror(errno));
			failed++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("PASS: unit/%s\n", e->name);
		} else if (WIFSIGNALED(status)) {
			printf("FAIL: unit/%s: killed by signal %d (%s)\n", e->name, WTERMSIG(status),
			       strsignal(WTERMSIG(status)));
			failed++;
		} else {
			printf("FAIL: unit/%s: exit status %d\n", e->name, WEXITSTATUS(status));
			failed++;
		}
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", unit_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "warning: could not remove %s\n", unit_dir);
	}
	return failed ? 1 : 0;
}
