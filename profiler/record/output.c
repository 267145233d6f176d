/* output.c: `record -o` patterns (%p %r %h %t %%) and the rank of a distributed run's process,
 * as output.h describes. */
#include "record/output.h"

#include "base/cs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The variables launchers set, in the order they are believed: torchrun and most PyTorch
 * launchers set RANK (global) and LOCAL_RANK; Open MPI's mpirun sets OMPI_COMM_WORLD_RANK. */
static const char *const record_rank_vars[] = { "RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK" };

void record_names_init(struct record_names *n)
{
	*n = (struct record_names){ .rank = -1, .start = time(NULL) };
	for (size_t i = 0; i < sizeof(record_rank_vars) / sizeof(record_rank_vars[0]); i++) {
		const char *v = getenv(record_rank_vars[i]);
		uint64_t r;
		if (!v || !*v)
			continue;
		if (cs_parse_u64(v, &r) < 0 || r > INT32_MAX) {
			cs_warn("%s='%s' is not a rank number: ignored", record_rank_vars[i], v);
			continue;
		}
		n->rank = (int64_t)r;
		n->rank_from = record_rank_vars[i];
		break;
	}
	if (gethostname(n->host, sizeof(n->host) - 1) < 0 || !n->host[0])
		snprintf(n->host, sizeof(n->host), "unknown-host");
	for (char *c = n->host; *c; c++)
		if (*c == '/')
			*c = '_';
}

int record_output_check(const char *pattern)
{
	for (const char *c = pattern; *c; c++) {
		if (*c != '%')
			continue;
		c++;
		if (*c && strchr("prht%", *c))
			continue;
		return cs_error(EINVAL, "record: -o '%s': %s; the patterns are %%p (pid), %%r (rank), "
				"%%h (host), %%t (start time) and %%%% (a '%%')", pattern,
				*c ? "unknown pattern" : "a lone '%' at the end");
	}
	return 0;
}

bool record_output_needs_pid(const char *pattern)
{
	for (const char *c = pattern; *c; c++)
		if (*c == '%' && *++c == 'p')
			return true;
		else if (!*c)
			break;
	return false;
}

char *record_output_expand(const char *pattern, pid_t pid, const struct record_names *n)
{
	struct cs_buf b = { 0 };
	for (const char *c = pattern; *c; c++) {
		if (*c != '%' || !c[1]) {
			cs_buf_put(&b, c, 1);
			continue;
		}
		switch (*++c) {
		case 'p':
			cs_buf_printf(&b, "%ld", (long)pid);
			break;
		case 'r':
			if (n->rank >= 0)
				cs_buf_printf(&b, "%lld", (long long)n->rank);
			else
				cs_buf_printf(&b, "%s", RECORD_NO_RANK);
			break;
		case 'h':
			cs_buf_printf(&b, "%s", n->host);
			break;
		case 't': {
			struct tm tm;
			char when[32] = "unknown-time";
			if (localtime_r(&n->start, &tm))
				strftime(when, sizeof(when), "%Y%m%d-%H%M%S", &tm);
			cs_buf_printf(&b, "%s", when);
			break;
		}
		default:
			cs_buf_put(&b, c, 1); /* "%%"; others were refused by record_output_check */
			break;
		}
	}
	cs_buf_put(&b, "", 1);
	return b.data;
}
