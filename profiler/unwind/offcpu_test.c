/* offcpu_test.c: the names of the off-CPU leaf frames. */
#include "base/unit.h"
#include "unwind/offcpu.h"

#include <string.h>

UNIT_TEST(offcpu_names)
{
	char buf[64];
	offcpu_frame_name(202, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: futex]"));
	offcpu_frame_name(230, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: clock_nanosleep]"));
	offcpu_frame_name(0, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: read]"));
	offcpu_frame_name(16, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: ioctl]"));
	offcpu_frame_name(335, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: syscall 335]"));
	offcpu_frame_name((uint64_t)(int64_t)OFFCPU_NOT_IN_SYSCALL, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: not in a syscall]"));
	offcpu_frame_name((uint64_t)(int64_t)OFFCPU_STOPPED, buf, sizeof(buf));
	UNIT_ASSERT(!strcmp(buf, "[off-cpu: stopped]"));
	UNIT_ASSERT(offcpu_syscall_name(-7) == NULL);
}
