/* standin.h: the test hooks of the stand-in libcupti (tests/cupti/standin.c). The test driver
 * plays the CUDA program and its GPU through them: it makes API calls (the stand-in fires the
 * subscriber's callbacks on the calling thread), creates graph nodes, and queues the activity
 * records the GPU would produce, which the stand-in hands back in CUPTI buffers. */
#ifndef CSAMPLER_TEST_STANDIN_H
#define CSAMPLER_TEST_STANDIN_H

#include <stddef.h>
#include <stdint.h>

/* One API call: a runtime call with a driver call inside it (either may be absent: cbid 0).
 * The driver call shares the runtime call's correlation id unless driver_corr is set. */
struct standin_call {
	uint32_t runtime_cbid, driver_cbid;
	const char *runtime_name, *driver_name, *symbol;
	uint32_t corr, driver_corr;
	/* what cuptiGetTimestamp says on this thread during the ENTER callbacks and during the
	 * EXIT ones (the API span the library times); 0: the clock */
	uint64_t enter_ns, exit_ns;
	/* run between the ENTER and the EXIT callbacks, on the calling thread (NULL: nothing): the
	 * call's own work, a launch's CPU cost or a synchronisation's wait, inside its API span */
	void (*during)(void *arg);
	void *during_arg;
};

typedef void (*standin_call_fn)(const struct standin_call *c);
typedef void (*standin_graph_node_fn)(uint64_t node_id, uint64_t original_id);
typedef void (*standin_push_fn)(const void *record, size_t size);
typedef void (*standin_set_dropped_fn)(size_t dropped);
typedef void (*standin_deliver_fn)(void);   /* standin_deliver, standin_deliver_wait */
typedef uint64_t (*standin_clock_fn)(void);
typedef int (*standin_kind_enabled_fn)(int kind);
typedef int (*standin_callback_enabled_fn)(int domain, uint32_t cbid);

#endif
