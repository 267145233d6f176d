/* gpu-writer: a test program that plays the in-target GPU library's part without CUDA: it
 * writes $CSAMPLER_GPU_DIR/gpu-PID.bin in the format of profiler/inject/protocol.h, with
 * launch stacks taken from its own call path (launch_forward / launch_backward called from
 * train_step), so tests/record/t-gpu.sh can check that `csampler record --gpu on` merges them,
 * names every launch stack exactly, and counts durations, drops and lost timestamps.
 *
 *   gpu-writer MODE [SECONDS]
 *   MODE: ok        20 forward + 10 backward kernels (50 us / 120 us), a copy, a memset, a
 *                   sync, an NVTX range, an API span, a record with lost timestamps, stats
 *         fork      ok in this process and in a forked child (two files)
 *         garbled   ok's first records, then a record whose size is not a multiple of 8
 *         truncated ok, then half a launch's records at the end
 *         badmagic  a file that does not start with the magic
 *         subscriber  CUPTI held by another tool: info and a note only
 *         none      no file at all
 *         stream    launches every 10 ms for SECONDS (attach tests)
 *         runtime   5 launches through stand-ins of the runtime's API, nvcc's stub and host
 *                   wrapper, and 5 through an API inlined into the launching function
 *         flame     for the GPU flame graphs (tests/flame/t-gpu.sh): nested NVTX ranges "step"
 *                   around everything, "forward" around 4 forward kernels and "reduce<&>"
 *                   around 3 templated kernels (mangled, 30 us and 7 us); then the copy,
 *                   memset and sync of ok under "step" only
 * It spins on the CPU a little so that the profile has samples. */
#include "../../profiler/inject/protocol.h"

#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FWD_NS 50000ull
#define BWD_NS 120000ull

static int out_fd = -1;
static uint32_t next_corr = 100, next_stack = 1;
static int thread_written;   /* the GPU_REC_THREAD that opens this file's calls */
static unsigned char chunk[1 << 16];
static size_t chunk_len;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void flush_chunk(void)
{
	if (chunk_len && write(out_fd, chunk, chunk_len) != (ssize_t)chunk_len)
		perror("gpu-writer: write");
	chunk_len = 0;
}

/* Append one record (header, fixed part, tail, padding to 8) to the chunk. */
static void put(uint16_t type, const void *fixed, size_t flen, const void *tail, size_t tlen)
{
	struct gpu_rec h = { type, 0, (uint32_t)((sizeof(h) + flen + tlen + 7) & ~7ul) };
	if (chunk_len + h.size > sizeof(chunk))
		flush_chunk();
	memset(chunk + chunk_len, 0, h.size);
	memcpy(chunk + chunk_len, &h, sizeof(h));
	memcpy(chunk + chunk_len + sizeof(h), fixed, flen);
	if (tlen)
		memcpy(chunk + chunk_len + sizeof(h) + flen, tail, tlen);
	chunk_len += h.size;
}

static void open_file(const char *mode)
{
	const char *dir = getenv("CSAMPLER_GPU_DIR");
	char path[4096];
	if (!dir) {
		fprintf(stderr, "gpu-writer: CSAMPLER_GPU_DIR is not set\n");
		exit(2);
	}
	snprintf(path, sizeof(path), "%s/gpu-%d.bin", dir, (int)getpid());
	out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (out_fd < 0) {
		perror(path);
		exit(2);
	}
	struct gpu_file_header h = { .version = GPU_PROTOCOL_VERSION, .pid = (uint32_t)getpid(),
				     .ppid = (uint32_t)getppid(), .header_size = sizeof(h),
				     .start_ns = now_ns() };
	memcpy(h.magic, GPU_FILE_MAGIC, 8);
	if (!strcmp(mode, "badmagic"))
		memcpy(h.magic, "NOTAGPU!", 8);
	if (write(out_fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		perror("gpu-writer: write");
	thread_written = 0;
	next_stack = 1;
}

static void put_info(uint32_t status)
{
	struct gpu_info i = { .cupti_version = 130001, .status = status };
	i.clock_before_ns = now_ns();
	i.cupti_ns = i.clock_before_ns + 377;
	i.clock_after_ns = i.clock_before_ns + 1000;
	i.clock_offset_ns = (int64_t)i.cupti_ns - (int64_t)(i.clock_before_ns + i.clock_after_ns) / 2;
	i.clock_offset_ns = -123; /* what the test expects to see */
	put(GPU_REC_INFO, &i, sizeof(i), NULL, 0);
}

/* What the library does for a call (protocol 3): the thread once, the stack (the return
 * addresses above the CUDA call, leaf first; frame 0 of backtrace() is this function itself)
 * and the API's name, then the call record with its span [start, start + duration]. The real
 * library writes a stack once and names it by id after; this writes each one anew, under a new
 * id, which the format allows. */
static __attribute__((noinline)) uint32_t fake_cuda_call(const char *api, uint32_t cbid,
							  uint64_t start, uint32_t duration, int skip)
{
	void *frames[GPU_MAX_FRAMES + 2];
	int n = backtrace(frames, GPU_MAX_FRAMES + 1);
	/* frames[skip] is the return address into the function that made the CUDA call */
	if (skip > 1 && n > 1) {
		memmove(frames + 1, frames + skip, (size_t)(n - skip) * sizeof(frames[0]));
		n -= skip - 1;
	}
	if (!thread_written) {
		struct gpu_thread th = { .tid = (uint32_t)syscall(SYS_gettid) };
		put(GPU_REC_THREAD, &th, sizeof(th), NULL, 0);
		thread_written = 1;
	}
	struct {
		struct gpu_stack s;
		uint64_t pcs[GPU_MAX_FRAMES];
	} st = { .s = { .id = next_stack++, .nframes = (uint16_t)(n > 1 ? n - 1 : 0) } };
	for (int i = 1; i < n; i++)
		st.pcs[i - 1] = (uint64_t)(uintptr_t)frames[i];
	put(GPU_REC_STACK, &st, sizeof(st.s) + st.s.nframes * 8, NULL, 0);
	struct gpu_api_name an = { .cbid = cbid, .domain = GPU_DOMAIN_RUNTIME,
				   .len = (uint16_t)(strlen(api) + 1) };
	put(GPU_REC_API_NAME, &an, sizeof(an), api, an.len);
	uint32_t corr = next_corr++;
	struct gpu_call c = { .start = start, .duration = duration, .correlation = corr,
			      .stack = st.s.id, .cbid = (uint16_t)cbid, .domain = GPU_DOMAIN_RUNTIME };
	put(GPU_REC_CALL, &c, sizeof(c), NULL, 0);
	return corr;
}

static __attribute__((noinline)) uint32_t fake_cuda_launch(const char *api, uint32_t cbid)
{
	uint32_t corr = fake_cuda_call(api, cbid, now_ns(), 1000, 2);
	__asm__ volatile("" ::: "memory");
	return corr;
}

static void put_kernel(uint32_t corr, const char *name, uint64_t dur)
{
	uint64_t t = now_ns();
	struct gpu_kernel k = { .start = t + 1000, .end = t + 1000 + dur, .queued = t + 10,
				.submitted = t + 500, .correlation = corr, .stream = 7,
				.grid = { 64, 1, 1 }, .block = { 256, 1, 1 },
				.name_len = (uint32_t)strlen(name) + 1, .registers = 32 };
	put(GPU_REC_KERNEL, &k, sizeof(k), name, k.name_len);
}

static volatile uint64_t sink;

static void spin_ms(int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
	while (now_ns() < end)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t)i * 2654435761u;
}

static __attribute__((noinline)) void launch_forward(void)
{
	uint32_t corr = fake_cuda_launch("cudaLaunchKernel", 211);
	put_kernel(corr, "_Z14render_forwardPfi", FWD_NS);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
}

static __attribute__((noinline)) void launch_backward(void)
{
	uint32_t corr = fake_cuda_launch("cudaLaunchKernel", 211);
	put_kernel(corr, "render_backward", BWD_NS);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void copy_and_sync(void)
{
	uint64_t t = now_ns();
	uint32_t corr = fake_cuda_launch("cudaMemcpyAsync", 41);
	struct gpu_memcpy c = { .start = t + 100, .end = t + 2100, .bytes = 4096, .correlation = corr,
				.stream = 7, .copy_kind = GPU_COPY_HTOD, .async = 1 };
	put(GPU_REC_MEMCPY, &c, sizeof(c), NULL, 0);
	corr = fake_cuda_launch("cudaMemsetAsync", 51);
	struct gpu_memset m = { .start = t + 3000, .end = t + 3500, .bytes = 1024, .correlation = corr,
				.stream = 7 };
	put(GPU_REC_MEMSET, &m, sizeof(m), NULL, 0);
	corr = fake_cuda_call("cudaStreamSynchronize", 131, t, 9500, 1);
	struct gpu_sync y = { .start = t + 4000, .end = t + 9000, .correlation = corr, .type = 3,
			      .stream = 7 };
	put(GPU_REC_SYNC, &y, sizeof(y), NULL, 0);
	__asm__ volatile("" ::: "memory");
}

/* Kernels whose demangled names hold < > & (templates, references). */
static __attribute__((noinline)) void launch_template(void)
{
	uint32_t corr = fake_cuda_launch("cudaLaunchKernel", 211);
	put_kernel(corr, "_Z6reduceIfLi256EEvPT_", 30000); /* void reduce<float, 256>(float*) */
	corr = fake_cuda_launch("cudaLaunchKernel", 211);
	put_kernel(corr, "_Z4scanIiEvRKT_", 7000);          /* void scan<int>(int const&) */
	__asm__ volatile("" ::: "memory");
}

/* A program built with nvcc and the static runtime launches through the runtime's API, nvcc's
 * launch stub and the host wrapper named as the kernel: these stand in for them with those
 * names (C names for the stub's mangled one: its raw name gives the kernel's identifier). The
 * recorder trims them from the launch stack, which then ends in launch_blur. An inline copy of
 * the API in the program's function (as cuda_runtime.h's launch template is) leaves that
 * function's frame, whose inline chain starts with the API. */
static __attribute__((noinline)) uint32_t cudaLaunchKernel(void)
{
	uint32_t corr = fake_cuda_call("cudaLaunchKernel", 211, now_ns(), 1000, 1);
	__asm__ volatile("" ::: "memory");
	return corr;
}

static __attribute__((noinline)) uint32_t __device_stub__Z11blur_kernelPfi(void)
{
	uint32_t corr = cudaLaunchKernel();
	__asm__ volatile("" ::: "memory");
	return corr;
}

static __attribute__((noinline)) uint32_t blur_kernel(void)
{
	uint32_t corr = __device_stub__Z11blur_kernelPfi();
	__asm__ volatile("" ::: "memory");
	return corr;
}

static inline __attribute__((always_inline)) uint32_t cudaLaunchCooperativeKernel(void)
{
	uint32_t corr = fake_cuda_call("cudaLaunchCooperativeKernel", 214, now_ns(), 1000, 1);
	__asm__ volatile("" ::: "memory");
	return corr;
}

static __attribute__((noinline)) void launch_blur(void)
{
	put_kernel(blur_kernel(), "_Z11blur_kernelPfi", FWD_NS);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void launch_inline(void)
{
	put_kernel(cudaLaunchCooperativeKernel(), "_Z11blur_kernelPfi", FWD_NS);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void train_step(int fwd, int bwd)
{
	for (int i = 0; i < fwd; i++)
		launch_forward();
	for (int i = 0; i < bwd; i++)
		launch_backward();
	__asm__ volatile("" ::: "memory");
}

static void put_marker(const char *name, uint64_t start, uint64_t end)
{
	struct gpu_marker m = { .start = start, .end = end, .id = 1, .tid = (uint32_t)syscall(SYS_gettid),
				.name_len = (uint32_t)strlen(name) + 1 };
	put(GPU_REC_MARKER, &m, sizeof(m), name, m.name_len);
}

static void put_stats(uint64_t launches, uint64_t activities)
{
	struct gpu_stats s = { .launches = launches, .activities = activities, .dropped = 2,
			       .buffers = 1 };
	put(GPU_REC_STATS, &s, sizeof(s), NULL, 0);
}

static void play_runtime(void)
{
	open_file("runtime");
	put_info(GPU_STATUS_OK);
	for (int i = 0; i < 5; i++) {
		launch_blur();
		launch_inline();
	}
	put_stats(10, 10);
	flush_chunk();
	spin_ms(100);
}

static void play_ok(const char *mode)
{
	open_file(mode);
	put_info(GPU_STATUS_OK);
	flush_chunk();
	spin_ms(150);
	uint64_t t0 = now_ns();
	train_step(20, 10);
	if (!strcmp(mode, "garbled")) {
		flush_chunk();
		struct gpu_rec bad = { GPU_REC_KERNEL, 0, 12 };
		if (write(out_fd, &bad, sizeof(bad)) < 0)
			perror("write");
		copy_and_sync(); /* lost behind the corrupt record */
		flush_chunk();
		spin_ms(150);
		return;
	}
	copy_and_sync();
	put_marker("forward", t0, now_ns());
	struct gpu_kernel lost = { .correlation = 99999, .name_len = 0 };
	put(GPU_REC_KERNEL, &lost, sizeof(lost), NULL, 0);
	flush_chunk();
	spin_ms(150);
	put_stats(33, 36);
	flush_chunk();
	if (!strcmp(mode, "truncated")) {
		uint32_t corr = fake_cuda_launch("cudaLaunchKernel", 211);
		(void)corr;
		if (write(out_fd, chunk, chunk_len / 2) < 0)
			perror("write");
		chunk_len = 0;
	}
}

static __attribute__((noinline)) void play_flame(void)
{
	open_file("flame");
	put_info(GPU_STATUS_OK);
	flush_chunk();
	spin_ms(100);
	uint64_t t0 = now_ns();
	train_step(4, 0);
	uint64_t t1 = now_ns();
	for (int i = 0; i < 3; i++)
		launch_template();
	uint64_t t2 = now_ns();
	copy_and_sync();
	put_marker("forward", t0, t1);
	put_marker("reduce<&>", t1, t2);
	put_marker("step", t0, now_ns());
	flush_chunk();
	spin_ms(100);
	flush_chunk();
}

static void play_stream(double seconds)
{
	open_file("stream");
	put_info(GPU_STATUS_OK);
	flush_chunk();
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	while (now_ns() < end) {
		train_step(1, 1);
		flush_chunk();
		spin_ms(10);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ok";

	if (!strcmp(mode, "none")) {
		spin_ms(200);
	} else if (!strcmp(mode, "subscriber")) {
		open_file(mode);
		put_info(GPU_STATUS_OTHER_SUBSCRIBER);
		const char *text = "CUPTI is held by another subscriber (Nsight Systems): CPU-only";
		struct gpu_note n = { .len = (uint32_t)strlen(text) + 1, .severity = 1 };
		put(GPU_REC_NOTE, &n, sizeof(n), text, n.len);
		flush_chunk();
		spin_ms(200);
	} else if (!strcmp(mode, "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			play_ok("ok");
			_exit(0);
		}
		play_ok("ok");
		waitpid(pid, NULL, 0);
	} else if (!strcmp(mode, "flame")) {
		play_flame();
	} else if (!strcmp(mode, "runtime")) {
		play_runtime();
	} else if (!strcmp(mode, "stream")) {
		play_stream(argc > 2 ? atof(argv[2]) : 3.0);
	} else if (!strcmp(mode, "ok") || !strcmp(mode, "garbled") || !strcmp(mode, "truncated") ||
		   !strcmp(mode, "badmagic")) {
		play_ok(mode);
	} else {
		fprintf(stderr, "gpu-writer: unknown mode %s\n", mode);
		return 2;
	}
	printf("gpu-writer: %s done\n", mode);
	return 0;
}
