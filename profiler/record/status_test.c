/* status_test.c: unit tests of record's live status line text (status.c). */
#include "record/status.h"

#include "base/unit.h"

#include <string.h>

UNIT_TEST(record_status_format)
{
	char buf[512];
	struct record_status_counts c = { .samples = 5000, .lost = 7, .threads = 12, .processes = 1,
					  .file_bytes = 3u << 20 };
	record_status_format(buf, sizeof(buf), 3725ull * 1000000000ull, 997.4, &c);
	UNIT_ASSERT(strstr(buf, "1:02:05"));
	UNIT_ASSERT(strstr(buf, "997 samples/s"));
	UNIT_ASSERT(strstr(buf, "7 lost"));
	UNIT_ASSERT(strstr(buf, "12 threads, 1 process |"));
	UNIT_ASSERT(strstr(buf, "3.0 MB"));
	UNIT_ASSERT(!strstr(buf, "GPU"));
	c.gpu = true;
	c.gpu_records = 42;
	c.gpu_dropped = 3;
	c.processes = 8;
	c.file_bytes = 100;
	record_status_format(buf, sizeof(buf), 0, 0, &c);
	UNIT_ASSERT(strstr(buf, "0:00:00"));
	UNIT_ASSERT(strstr(buf, "8 processes"));
	UNIT_ASSERT(strstr(buf, "GPU 42 records, 3 dropped"));
	UNIT_ASSERT(strstr(buf, "| 100 B"));
	/* a short buffer cuts, never overflows */
	record_status_format(buf, 16, 0, 0, &c);
	UNIT_ASSERT(strlen(buf) == 15);
}
