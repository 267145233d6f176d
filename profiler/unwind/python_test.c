/* python_test.c: unit tests of python.c's CPython 3.11 location-table decoder, on a table
 * CPython 3.11.7 wrote (co_linetable of a 56-code-unit function defined at line 1) and the
 * lines its own co_lines() gives for each code unit. */
#include "base/unit.h"
#include "unwind/python.h"

#include <string.h>

static const char py_test_table_hex[] =
	"8000d80809884189058041d80708883182758075d80c23d00c239d25a00199289c28d00c23d10c23d40c2388"
	"01dd0f12903189768c76880de00c0dd80c0df003010c0ff00001050f";
static const unsigned py_test_lines[56] = {
	1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 8, 7, 7,
};

static size_t py_test_table(uint8_t *out)
{
	size_t n = strlen(py_test_table_hex) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(py_test_table_hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

UNIT_TEST(python_linetable_311)
{
	uint8_t t[128];
	size_t n = py_test_table(t);

	for (unsigned u = 0; u < 56; u++)
		UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, n, 1, u), py_test_lines[u]);
	/* The same function defined at line 100: every line moves by 99. */
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, n, 100, 37), 104);
	/* Past the end of the table: no line. */
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, n, 1, 56), 0);
}

UNIT_TEST(python_linetable_malformed)
{
	uint8_t t[128];
	size_t n = py_test_table(t);

	/* A byte without the entry bit where an entry starts. */
	uint8_t bad[2] = { 0x05, 0x80 };
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(bad, 2, 1, 0), 0);
	/* Cut inside a long-form entry: no read past the end, no line. */
	for (size_t cut = 0; cut < n; cut++)
		UNIT_ASSERT(py_linetable_line_311(t, cut, 1, 55) == 0);
	/* An empty table. */
	UNIT_ASSERT_EQ_INT(py_linetable_line_311(t, 0, 1, 0), 0);
}
