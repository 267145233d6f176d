/* deny-perf.c: runs a command with perf_event_open failing with EACCES (a seccomp filter),
 * the way a container or a locked-down kernel refuses perf events; with --ptrace, ptrace fails
 * with EPERM as well (a sandbox that allows neither). For the error-path and fallback tests.
 * Usage: deny-perf [--ptrace] COMMAND [ARGS...] */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	int deny_ptrace = argc > 1 && !strcmp(argv[1], "--ptrace");
	argv += deny_ptrace;
	argc -= deny_ptrace;
	if (argc < 2) {
		fprintf(stderr, "usage: deny-perf [--ptrace] COMMAND [ARGS...]\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(perf_event_open), 0) ||
	    (deny_ptrace && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ptrace), 0)) ||
	    seccomp_load(ctx)) {
		fprintf(stderr, "deny-perf: cannot install the seccomp filter\n");
		return 2;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "deny-perf: exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}
