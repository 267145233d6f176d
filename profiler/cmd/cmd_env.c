/* cmd_env.c: `csampler env -- CMD [ARGS]`: run CMD with GPU capture set up (the variables of
 * gpu_setup.h) and its gpu-PID.bin files in the per-user directory, so that a later
 * `csampler record -p PID` merges the GPU records of PID into its profile. Like env(1), it
 * execs CMD in place: the PID the user sees is CMD's. */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "cmd/opts.h"
#include "record/gpu_setup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_env(int argc, char **argv)
{
	struct gpu_setup g = { 0 };
	char why[512];
	bool print = false;
	const struct opts_option options[] = {
		OPTS_FLAG_ROW(0, "print", &print,
			      "print the variables (shell syntax) instead of running a command"),
		OPTS_END_ROW,
	};
	const struct opts_command cmd = cmd_describe("env", options);
	int i, err = opts_parse(&cmd, argc, argv, &i);

	if (err)
		return opts_exit_status(err);
	if (i >= argc && !print)
		return opts_exit_status(cs_error(EINVAL, "env: no command: give one after --, e.g. "
						 "csampler env -- python train.py"));
	if (gpu_setup_find(&g, why, sizeof(why))) {
		cs_error(ENOENT, "env: %s", why);
		gpu_setup_free(&g);
		return CS_EXIT_ERROR;
	}
	if (gpu_setup_user_dir(&g, true)) {
		gpu_setup_free(&g);
		return CS_EXIT_ERROR;
	}
	const char *pre = getenv("CUDA_INJECTION64_PATH");
	if (pre && *pre && strcmp(pre, g.inject_lib))
		cs_warn("env: CUDA_INJECTION64_PATH was %s: replaced by csampler's library", pre);
	extern char **environ;
	char **env = gpu_setup_env(&g, environ);
	if (print) {
		/* the four variables are the last entries of env */
		size_t n = 0;
		while (env[n])
			n++;
		for (size_t k = n - 4; k < n; k++) {
			const char *eq = strchr(env[k], '=');
			printf("export %.*s='", (int)(eq - env[k]), env[k]);
			for (const char *c = eq + 1; *c; c++) /* shell quoting: ' becomes '\'' */
				fputs(*c == '\'' ? "'\\''" : (char[]){ *c, 0 }, stdout);
			printf("'\n");
		}
		gpu_setup_free_env(env);
		gpu_setup_free(&g);
		return 0;
	}
	execvpe(argv[i], argv + i, env);
	int e = errno;
	if (e == ENOENT)
		cs_error(e, "env: %s: command not found", argv[i]);
	else
		cs_error(e, "env: cannot execute %s: %s", argv[i], strerror(e));
	gpu_setup_free_env(env);
	gpu_setup_free(&g);
	return e == ENOENT ? CS_EXIT_NOTFOUND : CS_EXIT_NOEXEC;
}
