/* export.c: the table of export formats (export.h). A new format is one row here and its
 * writer in its own file of this folder. */
#include "export/export.h"
#include "base/search.h"

#include <string.h>

const struct export_format export_formats[] = {
	{ "chrome", "Chrome trace-event JSON: a CPU and GPU timeline for Perfetto, "
		    "chrome://tracing and speedscope", export_chrome_write },
	{ "speedscope", "speedscope's JSON file format: one sampled profile per thread",
	  export_speedscope_write },
	{ "pprof", "pprof profile.proto, gzipped: samples and CPU time per call stack, for "
		   "go tool pprof, Pyroscope, Parca, Grafana", export_pprof_write },
};
const size_t export_nformats = sizeof(export_formats) / sizeof(export_formats[0]);

const struct export_format *export_find(const char *name)
{
	return CS_FIND_NAME(export_formats, export_nformats, name, name);
}
