/* report_common.c: what report_text.c and report_json.c share (percentages, durations, the
 * command, row limits, library and frame markers). Below both renderers, so that report.c,
 * which picks one, is the only file above them: no include circle. */
#include "analysis/report_common.h"

#include "base/cs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

double report_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

double report_duration_s(const struct profile *p)
{
	return p->end_ns > p->start_ns ? (double)(p->end_ns - p->start_ns) / 1e9 : 0.0;
}

/* The requested sampling rate from the header, or 0 when unknown. */
double report_rate_hz(const struct profile *p)
{
	const char *s = profile_header(p, "rate_hz");
	double v;
	return s && cs_parse_double(s, &v) == 0 && v > 0 ? v : 0.0;
}

/* The profiled command ("target"), or csampler's own command line when that is all there is. */
const char *report_command(const struct profile *p)
{
	const char *s = profile_header(p, "target");
	if (!s || !*s)
		s = profile_header(p, "cmdline");
	return s && *s ? s : NULL;
}

size_t report_rows(size_t n, const struct report_opts *o)
{
	return o->limit && o->limit < n ? o->limit : n;
}

const char *report_library_name(const char *path)
{
	return *path ? cs_basename(path) : "(unknown)";
}

/* perf's marker of where a function runs: [k] kernel, [j] JIT, [i] inlined, [.] user; and
 * [o] for record --idle's off-CPU leaves. */
const char *report_frame_marker(uint32_t flags)
{
	if (flags & PROFILE_FRAME_OFFCPU)
		return "[o]";
	if (flags & PROFILE_FRAME_KERNEL)
		return "[k]";
	if (flags & PROFILE_FRAME_JIT)
		return "[j]";
	if (flags & PROFILE_FRAME_INLINED)
		return "[i]";
	return "[.]";
}

/* Whether the file was recorded with --idle (its header says so). */
bool report_idle_recorded(const struct profile *p)
{
	const char *idle = profile_header(p, "idle");
	return idle && !strcmp(idle, "yes");
}
