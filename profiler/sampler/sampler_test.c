/* sampler_test.c: the list of backends: each --mode names one backend, -F's cap is the chosen
 * backend's (ptrace's own, not perf_event_max_sample_rate), auto's is the highest of those it
 * tries, and a backend refused before trying says why. */
#include "base/unit.h"
#include "sampler/backend.h"

#include <string.h>

UNIT_TEST(sampler_modes_and_caps)
{
	UNIT_ASSERT(!strcmp(sampler_mode_name(SAMPLER_MODE_BPF), "bpf"));
	UNIT_ASSERT(!strcmp(sampler_mode_name(SAMPLER_MODE_PTRACE), "ptrace"));
	UNIT_ASSERT(!strcmp(sampler_mode_name(SAMPLER_MODE_AUTO), "auto"));
	UNIT_ASSERT(sampler_max_rate(SAMPLER_MODE_PTRACE) == 100000);
	UNIT_ASSERT(sampler_max_rate(SAMPLER_MODE_PERF) == sampler_perf_max_rate());
	UNIT_ASSERT(sampler_max_rate(SAMPLER_MODE_BPF) == sampler_perf_max_rate());
	uint64_t want = sampler_perf_max_rate() > 100000 ? sampler_perf_max_rate() : 100000;
	UNIT_ASSERT(sampler_max_rate(SAMPLER_MODE_AUTO) == want);
	/* auto never tries bpf, and says why */
	UNIT_ASSERT(sampler_bpf_ops.not_auto && strstr(sampler_bpf_ops.not_auto, "root"));
	UNIT_ASSERT(!sampler_perf_ops.not_auto && !sampler_ptrace_ops.not_auto);
	UNIT_ASSERT(sampler_ptrace_ops.holds_threads && !sampler_perf_ops.holds_threads);
}

UNIT_TEST(sampler_bpf_refusal_says_why)
{
	struct sampler_opts o = { .mode = SAMPLER_MODE_BPF, .freq_hz = 99 };
	char why[192] = "";
	if (sampler_bpf_refused(&o, why, sizeof(why)))
		UNIT_ASSERT(why[0] != 0);
	else
		UNIT_ASSERT(why[0] == 0);
}
