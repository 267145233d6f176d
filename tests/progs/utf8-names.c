/* utf8-names.c: names that end in the middle of a UTF-8 character, for the escaping tests
 * (tests/report/t-utf8-names.sh). Both threads are named "训练-数据加载器" with
 * prctl(PR_SET_NAME), which the kernel cuts at 15 bytes: "训练-数据" and two of the three
 * bytes of "加". The JIT kernel of jit-fp.c is named in the perf map with the same cut name
 * plus "_kernel". flags.mk maps the source directory to a cut name too, so DWARF's file names
 * end mid-character. Usage: utf8-names [SECONDS] (default 2). */
#include <sys/prctl.h>

#define JIT_NAME "\xe8\xae\xad\xe7\xbb\x83-\xe6\x95\xb0\xe6\x8d\xae\xe5\x8a_kernel"
#define JIT_THREAD_START() prctl(PR_SET_NAME, "训练-数据加载器")
#include "jit-fp.c"
