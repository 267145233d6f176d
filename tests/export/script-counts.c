/* script-counts.c: prints the scripted workload's expected record counts (tests/cupti/script.h)
 * as shell assignments, so that t-chrome.sh checks the export against the script itself. */
#include "script.h"

#include <stdio.h>

int main(void)
{
	printf("KERNELS=%u\nMEMCPYS=%u\nMEMSETS=%u\nSYNCS=%u\nAPIS=%u\nRANGE_NS=%u\n"
	       "FORWARD=%u\nBACKWARD=%u\nWORKER=%u\nWORKERS=%u\n",
	       (unsigned)SCRIPT_KERNELS, (unsigned)SCRIPT_MEMCPYS, (unsigned)SCRIPT_MEMSETS,
	       /* API spans: the library times each call it records (the driver's, by default) */
	       (unsigned)SCRIPT_SYNCS, (unsigned)SCRIPT_SPANS, (unsigned)SCRIPT_RANGE_NS,
	       (unsigned)SCRIPT_STEPS, (unsigned)SCRIPT_STEPS,
	       (unsigned)(SCRIPT_STEPS * SCRIPT_WORKERS), (unsigned)SCRIPT_WORKERS);
	return 0;
}
