/* output_test.c: unit tests of the `record -o` patterns (output.c). */
#include "record/output.h"

#include "base/unit.h"

#include <stdlib.h>
#include <string.h>

UNIT_TEST(record_output_expand)
{
	struct record_names n = { .rank = 3, .rank_from = "RANK", .host = "node7", .start = 0 };
	char *s = record_output_expand("prof.%h.%r.%p.100%%.data", 4242, &n);
	UNIT_ASSERT(!strcmp(s, "prof.node7.3.4242.100%.data"));
	free(s);
	n.rank = -1;
	s = record_output_expand("r%r", 1, &n);
	UNIT_ASSERT(!strcmp(s, "r" RECORD_NO_RANK));
	free(s);
	s = record_output_expand("plain.data", 1, &n);
	UNIT_ASSERT(!strcmp(s, "plain.data"));
	free(s);
	n.start = 86400 * 365;
	s = record_output_expand("%t", 1, &n);
	UNIT_ASSERT(strlen(s) == 15 && s[8] == '-');
	free(s);
}

UNIT_TEST(record_output_check)
{
	UNIT_ASSERT(record_output_check("a%p%r%h%t%%.data") == 0);
	UNIT_ASSERT(record_output_check("a%q.data") < 0);
	UNIT_ASSERT(record_output_check("a%") < 0);
	UNIT_ASSERT(record_output_needs_pid("x.%p"));
	UNIT_ASSERT(!record_output_needs_pid("x.%%p"));
	UNIT_ASSERT(!record_output_needs_pid("x%"));
}

UNIT_TEST(record_output_rank_env)
{
	struct record_names n;
	unsetenv("RANK");
	setenv("LOCAL_RANK", "5", 1);
	setenv("OMPI_COMM_WORLD_RANK", "9", 1);
	record_names_init(&n);
	UNIT_ASSERT(n.rank == 5 && !strcmp(n.rank_from, "LOCAL_RANK"));
	setenv("RANK", "12", 1);
	record_names_init(&n);
	UNIT_ASSERT(n.rank == 12 && !strcmp(n.rank_from, "RANK"));
	unsetenv("RANK");
	unsetenv("LOCAL_RANK");
	unsetenv("OMPI_COMM_WORLD_RANK");
	record_names_init(&n);
	UNIT_ASSERT(n.rank == -1 && !n.rank_from && n.host[0]);
}
