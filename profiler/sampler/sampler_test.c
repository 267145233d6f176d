/* sampler_test.c: the list of backends: each --mode names one backend, -F's cap is the chosen
 * backend's (ptrace's own, not perf_event_max_sample_rate), auto's is the highest of those it
 * tries, a backend refused before trying says why, and auto leaves bpf out for the options it
 * cannot serve. */
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
	UNIT_ASSERT(sampler_ptrace_ops.holds_threads && !sampler_perf_ops.holds_threads);
}

/* auto leaves bpf out for what it cannot do (--keep-raw, -g fp), says why, and uses it
 * otherwise; a failed bpf start falls back, perf's does not (it is explained instead). */
UNIT_TEST(sampler_bpf_unsuited_options)
{
	struct sampler_opts o = { .mode = SAMPLER_MODE_AUTO, .freq_hz = 99 };
	UNIT_ASSERT(sampler_bpf_unsuited(&o) == NULL);
	o.keep_raw = true;
	UNIT_ASSERT(sampler_bpf_unsuited(&o) && strstr(sampler_bpf_unsuited(&o), "--keep-raw"));
	o.keep_raw = false;
	o.callgraph = SAMPLER_CALLGRAPH_FP;
	UNIT_ASSERT(sampler_bpf_unsuited(&o) && strstr(sampler_bpf_unsuited(&o), "-g fp"));
	UNIT_ASSERT(sampler_bpf_ops.auto_falls_back && sampler_bpf_ops.open_cause);
	UNIT_ASSERT(!sampler_perf_ops.auto_falls_back && !sampler_perf_ops.unsuited);
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
