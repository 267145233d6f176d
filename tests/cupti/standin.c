/* standin.c: a stand-in libcupti.so.13 for tests on machines without a GPU (all of CI).
 *
 * Built with the real soname and every export tagged with the real version (libcupti.so.13,
 * standin.map), against the real CUPTI 13 headers, it exports exactly the CUPTI functions
 * lib/libcsampler-cupti.so imports (t-cupti.sh compares the two lists). With the test driver it
 * plays CUDA: the standin_* hooks (standin.h) fire the registered callbacks on the calling thread
 * and hand queued activity records back through the registered buffer callbacks, on a worker
 * thread of its own as the real CUPTI does (standin_deliver wakes it, cuptiActivityFlushAll waits
 * for it), concurrently with the program's calls.
 *
 * As the real CUPTI: kernel records carry queued/submitted only after
 * cuptiActivityEnableLatencyTimestamps(1) (else CUPTI_TIMESTAMP_UNKNOWN); NVTX marker records
 * carry the low 32 bits of pthread_self() as their thread id, not the OS thread id.
 * standin_clock (not CUPTI's): the scripted time of the call being made on this thread, else 0;
 * the library reads it at a call's ENTER and EXIT when the stand-in exports it and
 * standin_clock_scripted (an int, set once a call had scripted times) is set.
 *
 * Environment (failure modes of the real thing):
 *   STANDIN_SUBSCRIBE=busy       cuptiSubscribe_v2: MULTIPLE_SUBSCRIBERS, "Nsight Systems 2025.5"
 *   STANDIN_FLUSH=hang           cuptiActivityFlushAll never returns
 *   STANDIN_ERROR=not_initialized|unknown   the timestamp callback and subscribe calls fail */
#include <cupti.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))
#define STANDIN_QUEUE (1 << 20)

struct standin {
	pthread_mutex_t lock;
	CUpti_TimestampCallbackFunc timestamp;
	CUpti_CallbackFunc callback;
	void *userdata;
	int subscribed;
	unsigned char enabled[4][1024];      /* [domain][cbid] */
	unsigned char kinds[64];
	CUpti_BuffersCallbackRequestFunc request;
	CUpti_BuffersCallbackCompleteFunc complete;
	size_t dropped;                      /* reported for the next buffer */
	int latency;                         /* cuptiActivityEnableLatencyTimestamps */
	/* the worker: deliveries asked for and done (standin_deliver, cuptiActivityFlushAll) */
	pthread_t worker;
	int worker_started;
	pthread_cond_t wake, idle;
	unsigned long asked, done;
	size_t queue_len;
	unsigned char queue[STANDIN_QUEUE] __attribute__((aligned(8)));
	unsigned char spare[STANDIN_QUEUE] __attribute__((aligned(8)));  /* the worker's copy */
};

static struct standin st = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .wake = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER };

static CUptiResult standin_error(void)
{
	const char *e = getenv("STANDIN_ERROR");
	if (e && !strcmp(e, "not_initialized"))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (e && !strcmp(e, "unknown"))
		return CUPTI_ERROR_UNKNOWN;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	switch (result) {
	case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
	case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
	case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		*str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
	default: *str = "CUPTI_ERROR (stand-in)"; break;
	}
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	CUptiResult r = standin_error();
	if (r == CUPTI_SUCCESS)
		st.timestamp = f;
	return r;
}

/* inside a scripted call's callbacks: the call's scripted time (standin_call) */
static __thread uint64_t standin_scripted_now;

STANDIN_EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
	if (standin_scripted_now) {
		*timestamp = standin_scripted_now;
	} else if (st.timestamp) {
		*timestamp = st.timestamp();
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);   /* CUPTI's own default on Linux */
		*timestamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
					     CUpti_CallbackFunc callback, void *userdata,
					     CUpti_SubscriberParams *params)
{
	const char *busy = getenv("STANDIN_SUBSCRIBE");
	CUptiResult r = standin_error();
	if (r != CUPTI_SUCCESS)
		return r;
	if (!params || params->structSize != CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if ((busy && !strcmp(busy, "busy")) || st.subscribed) {
		if (params->oldSubscriberName && params->oldSubscriberSize)
			snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
				 "Nsight Systems 2025.5");
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	st.callback = callback;
	st.userdata = userdata;
	st.subscribed = 1;
	*subscriber = (CUpti_SubscriberHandle)&st;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	st.subscribed = 0;
	memset(st.enabled, 0, sizeof(st.enabled));
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
					       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (subscriber != (CUpti_SubscriberHandle)&st || domain <= 0 || domain >= 4 || cbid >= 1024)
		return CUPTI_ERROR_INVALID_PARAMETER;
	st.enabled[domain][cbid] = !!enable;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
							  CUpti_BuffersCallbackCompleteFunc complete)
{
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	st.request = request;
	st.complete = complete;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= sizeof(st.kinds))
		return CUPTI_ERROR_INVALID_KIND;
	st.kinds[kind] = 1;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= sizeof(st.kinds))
		return CUPTI_ERROR_INVALID_KIND;
	st.kinds[kind] = 0;
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
	st.latency = !!enable;
	return CUPTI_SUCCESS;
}

/* Buffer layout (private to the stand-in): records at 8-byte boundaries, each preceded by its
 * size in a uint64_t. */
STANDIN_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
						      CUpti_Activity **record)
{
	uint8_t *p;
	if (!*record) {
		p = buffer;
	} else {
		uint64_t size;
		memcpy(&size, (uint8_t *)*record - 8, 8);
		p = (uint8_t *)*record + ((size + 7) & ~(uint64_t)7);
	}
	if (p + 8 > buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(p + 8);
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
							     size_t *dropped)
{
	pthread_mutex_lock(&st.lock);
	*dropped = st.dropped;
	st.dropped = 0;
	pthread_mutex_unlock(&st.lock);
	return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *id)
{
	if (!node)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*id = (uint64_t)(uintptr_t)node;   /* the stand-in's node handles are their ids */
	return CUPTI_SUCCESS;
}

/* Hand the queued records back: buffers from the client's request callback, filled, given to its
 * complete callback, on the worker thread. The queue is taken whole under the lock (the
 * program's pushes go on meanwhile) and copied out without it. */
static void standin_fill(unsigned char *q, size_t len)
{
	size_t off = 0;
	while (off < len) {
		uint8_t *buf = NULL;
		size_t size = 0, max_records = 0;
		st.request(&buf, &size, &max_records);
		if (!buf || size < 8)
			return;   /* records dropped */
		size_t n = 0;
		while (off < len) {
			uint64_t rs;
			memcpy(&rs, q + off, 8);
			size_t whole = 8 + ((rs + 7) & ~(uint64_t)7);
			if (n + whole > size)
				break;
			memcpy(buf + n, q + off, whole);
			n += whole;
			off += whole;
		}
		st.complete(NULL, 0, buf, size, n);
	}
}

static void *standin_worker(void *arg)
{
	pthread_mutex_lock(&st.lock);
	for (;;) {
		while (st.done == st.asked)
			pthread_cond_wait(&st.wake, &st.lock);
		unsigned long asked = st.asked;
		size_t len = st.queue_len;
		memcpy(st.spare, st.queue, len);
		st.queue_len = 0;
		pthread_mutex_unlock(&st.lock);
		if (st.request && st.complete)
			standin_fill(st.spare, len);
		pthread_mutex_lock(&st.lock);
		st.done = asked;
		pthread_cond_broadcast(&st.idle);
	}
	return NULL;
}

/* A forked child has no worker (threads do not survive fork) and must not find the lock held
 * by one: it starts its own at its first delivery. */
static void standin_prefork(void)
{
	pthread_mutex_lock(&st.lock);
}

static void standin_postfork_parent(void)
{
	pthread_mutex_unlock(&st.lock);
}

static void standin_postfork_child(void)
{
	pthread_mutex_init(&st.lock, NULL);
	pthread_cond_init(&st.wake, NULL);
	pthread_cond_init(&st.idle, NULL);
	st.worker_started = 0;
	st.done = st.asked;
}

__attribute__((constructor)) static void standin_init(void)
{
	pthread_atfork(standin_prefork, standin_postfork_parent, standin_postfork_child);
}

/* Ask the worker for a delivery; wait for it when `wait`. */
static void standin_kick(int wait)
{
	pthread_mutex_lock(&st.lock);
	if (!st.worker_started) {
		if (pthread_create(&st.worker, NULL, standin_worker, NULL)) {
			pthread_mutex_unlock(&st.lock);
			return;
		}
		pthread_detach(st.worker);
		st.worker_started = 1;
	}
	unsigned long want = ++st.asked;
	pthread_cond_signal(&st.wake);
	while (wait && st.done < want)
		pthread_cond_wait(&st.idle, &st.lock);
	pthread_mutex_unlock(&st.lock);
}

STANDIN_EXPORT void standin_deliver(void)
{
	standin_kick(0);
}

/* Wait until everything queued so far was handed back (tests that count deliveries). */
STANDIN_EXPORT void standin_deliver_wait(void)
{
	standin_kick(1);
}

STANDIN_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	const char *hang = getenv("STANDIN_FLUSH");
	if (hang && !strcmp(hang, "hang"))
		for (;;)
			pause();
	standin_kick(1);
	return CUPTI_SUCCESS;
}

/* ---- hooks for the test driver ---- */

static void standin_fire(CUpti_CallbackDomain domain, uint32_t cbid, const char *name,
			 const char *symbol, uint32_t corr, CUpti_ApiCallbackSite site)
{
	if (!st.subscribed || !cbid || !st.enabled[domain][cbid])
		return;
	uint64_t correlation_data = 0;
	CUpti_CallbackData cb = { .callbackSite = site, .functionName = name,
				  .symbolName = symbol, .correlationData = &correlation_data,
				  .correlationId = corr };
	st.callback(st.userdata, domain, cbid, &cb);
}

/* Set once a call with scripted times was made: until then (the benchmark) the library reads
 * this flag and makes no call here (inj_api_now), and a library that calls standin_clock
 * anyway (before 2026-11-27) gets 0 without a thread-local lookup. */
STANDIN_EXPORT int standin_clock_scripted;

STANDIN_EXPORT uint64_t standin_clock(void)
{
	return __builtin_expect(standin_clock_scripted, 0) ? standin_scripted_now : 0;
}

STANDIN_EXPORT void standin_call(const struct standin_call *c)
{
	uint32_t dcorr = c->driver_corr ? c->driver_corr : c->corr;
	if (c->enter_ns && !standin_clock_scripted)
		standin_clock_scripted = 1;
	standin_scripted_now = c->enter_ns;
	standin_fire(CUPTI_CB_DOMAIN_RUNTIME_API, c->runtime_cbid, c->runtime_name, c->symbol,
		     c->corr, CUPTI_API_ENTER);
	standin_fire(CUPTI_CB_DOMAIN_DRIVER_API, c->driver_cbid, c->driver_name, c->symbol, dcorr,
		     CUPTI_API_ENTER);
	if (c->during) {
		standin_scripted_now = 0;   /* the call's own work runs on the clock */
		c->during(c->during_arg);
	}
	standin_scripted_now = c->exit_ns;
	standin_fire(CUPTI_CB_DOMAIN_DRIVER_API, c->driver_cbid, c->driver_name, c->symbol, dcorr,
		     CUPTI_API_EXIT);
	standin_fire(CUPTI_CB_DOMAIN_RUNTIME_API, c->runtime_cbid, c->runtime_name, c->symbol,
		     c->corr, CUPTI_API_EXIT);
	standin_scripted_now = 0;
}

/* original_id == 0: node created (stream capture, cudaGraphAdd*Node); else node cloned from
 * original_id (cudaGraphInstantiate). */
STANDIN_EXPORT void standin_graph_node(uint64_t node_id, uint64_t original_id)
{
	uint32_t cbid = original_id ? CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED :
				      CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED;
	if (!st.subscribed || !st.enabled[CUPTI_CB_DOMAIN_RESOURCE][cbid])
		return;
	CUpti_GraphData g = { .node = (CUgraphNode)(uintptr_t)node_id,
			      .originalNode = (CUgraphNode)(uintptr_t)original_id };
	CUpti_ResourceData rd = { .resourceDescriptor = &g };
	st.callback(st.userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

/* A record of a kind the client did not enable is not produced, as with the real CUPTI. */
STANDIN_EXPORT void standin_push(const void *record, size_t size)
{
	CUpti_ActivityKind kind = ((const CUpti_Activity *)record)->kind;
	if ((unsigned)kind >= sizeof(st.kinds) || !st.kinds[kind])
		return;
	CUpti_ActivityKernel10 k;
	if ((kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) &&
	    size == sizeof(k) && !st.latency) {
		memcpy(&k, record, sizeof(k));
		k.queued = k.submitted = CUPTI_TIMESTAMP_UNKNOWN;
		record = &k;
	}
	uint64_t rs = size;
	size_t whole = 8 + ((size + 7) & ~(size_t)7);
	if (whole > sizeof(st.queue))
		return;
	/* A full queue waits for the worker to hand it back (the tests count every record; the
	 * real CUPTI would drop and count them) */
	for (;;) {
		pthread_mutex_lock(&st.lock);
		if (st.queue_len + whole <= sizeof(st.queue))
			break;
		pthread_mutex_unlock(&st.lock);
		standin_kick(1);
	}
	memcpy(st.queue + st.queue_len, &rs, 8);
	memset(st.queue + st.queue_len + 8, 0, whole - 8);
	memcpy(st.queue + st.queue_len + 8, record, size);
	st.queue_len += whole;
	pthread_mutex_unlock(&st.lock);
}

STANDIN_EXPORT void standin_set_dropped(size_t dropped)
{
	pthread_mutex_lock(&st.lock);
	st.dropped += dropped;
	pthread_mutex_unlock(&st.lock);
}

STANDIN_EXPORT int standin_kind_enabled(int kind)
{
	return kind >= 0 && (size_t)kind < sizeof(st.kinds) && st.kinds[kind];
}

STANDIN_EXPORT int standin_callback_enabled(int domain, uint32_t cbid)
{
	return domain > 0 && domain < 4 && cbid < 1024 && st.enabled[domain][cbid];
}
