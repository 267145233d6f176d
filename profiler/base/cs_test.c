/* cs_test.c: unit tests of the shared helpers in cs.c. */
#include "base/cs.h"
#include "base/unit.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

UNIT_TEST(cs_xml_escape)
{
	struct cs_buf b = { 0 };
	cs_buf_xml_escape(&b, "<script>a&b\"'</script>");
	UNIT_ASSERT(!strcmp(b.data, "&lt;script&gt;a&amp;b&quot;&#39;&lt;/script&gt;"));
	cs_buf_free(&b);
}

UNIT_TEST(cs_parse_numbers)
{
	uint64_t v;
	double d;
	UNIT_ASSERT(cs_parse_u64("999", &v) == 0 && v == 999);
	UNIT_ASSERT(cs_parse_u64("0x10", &v) == 0 && v == 16);
	UNIT_ASSERT(cs_parse_u64("-1", &v) < 0);
	UNIT_ASSERT(cs_parse_u64("12abc", &v) < 0);
	UNIT_ASSERT(cs_parse_u64("", &v) < 0);
	UNIT_ASSERT(cs_parse_double("2.5", &d) == 0 && d == 2.5);
	UNIT_ASSERT(cs_parse_double("nan", &d) < 0);
}

UNIT_TEST(cs_demangle_names)
{
	char *d = cs_demangle("_ZN2ns3fooEi");
	UNIT_ASSERT(d && !strcmp(d, "ns::foo(int)"));
	free(d);
	UNIT_ASSERT(!cs_demangle("main"));          /* not mangled */
	UNIT_ASSERT(!cs_demangle("_Zbogus@@"));     /* does not demangle */
	UNIT_ASSERT(!cs_demangle(""));
}

UNIT_TEST(cs_heap_prepare_keeps_big_blocks_in_the_heap)
{
	/* glibc maps a block of 8 MiB of its own and unmaps it at its free by default; prepared,
	 * it comes from the heap, and the heap keeps it after the free */
	struct mallinfo2 before = mallinfo2();
	cs_heap_prepare(4u << 20);
	struct mallinfo2 prepared = mallinfo2();
	UNIT_ASSERT(prepared.arena >= before.arena + (4u << 20));
	char *block = malloc(8u << 20);
	UNIT_ASSERT(block != NULL);
	memset(block, 1, 8u << 20);
	UNIT_ASSERT(mallinfo2().hblkhd == prepared.hblkhd);
	free(block);
	UNIT_ASSERT(mallinfo2().arena >= prepared.arena);
}
