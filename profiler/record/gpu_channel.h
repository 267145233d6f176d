/* gpu_channel.h: the recorder's reader of the files the in-target GPU library writes
 * (CSAMPLER_GPU_DIR/gpu-PID.bin, format in inject/protocol.h). It follows a directory, reads
 * what each file gained since the last poll, validates every byte (the files come from the
 * profiled program: any content must give at most one line per file, never a crash), and hands
 * decoded launches, activities and notes to a sink; record.c turns them into data file records.
 * Per-process status (CUPTI version, clock check, drops) is kept as struct df_gpu_info. */
#ifndef CSAMPLER_GPU_CHANNEL_H
#define CSAMPLER_GPU_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/datafile.h"
#include "inject/protocol.h"
#include "unwind/python.h"

/* One API call with its stack, as the channel hands it on: the data file's launch record
 * (rec: everything but stack and api, the recorder's string and stack ids), the API's name,
 * the return addresses (in process rec.pid, leaf first), and the launching thread's Python
 * frames (innermost first, protocol.h) with their gpu_py_flags. */
struct gpu_channel_launch {
	struct df_gpu_launch rec;  /* flags: DF_GPU_LAUNCH_* of the library */
	uint32_t vendor;           /* enum gpu_vendor_id of the library that wrote it */
	const char *api;           /* "" when unnamed */
	const uint64_t *pcs;
	size_t npcs;
	const struct gpu_py_frame *py;
	size_t npy;
	uint32_t py_flags;
};

struct gpu_sink {
	void (*launch)(void *arg, const struct gpu_channel_launch *l);
	/* An activity; a->name is unset: name is the (demangled) name, or "". */
	void (*activity)(void *arg, const struct df_gpu_activity *a, const char *name);
	/* A line the library left for the user (severity 0 info, 1 warning). */
	void (*note)(void *arg, uint32_t pid, uint32_t severity, const char *text);
};

struct gpu_channel;

/* Follow dir. every_file: every gpu-PID.bin there belongs to this session (a private
 * directory); else only the PIDs given to gpu_channel_add_pid (the per-user directory of
 * `csampler env`). Records that ended before min_time are skipped (attach mode: what the
 * process did before csampler attached). */
struct gpu_channel *gpu_channel_new(const char *dir, bool every_file, uint64_t min_time,
				    const struct gpu_sink *sink, void *arg);
void gpu_channel_add_pid(struct gpu_channel *m, uint32_t pid);
/* Skip records that start after max_time (attach mode: the recording's end; the program goes
 * on writing). */
void gpu_channel_set_max_time(struct gpu_channel *m, uint64_t max_time);
/* Read what was appended. pid 0: every file (and look for new ones); else that process'
 * file. A launch later than time_limit stops the file's reading until a later poll (the
 * recorder has not seen that process' mappings up to then). at_end: the writers are done,
 * an incomplete record at a file's end is reported. */
void gpu_channel_poll(struct gpu_channel *m, uint32_t pid, uint64_t time_limit, bool at_end);
/* Per-process status of every file that held a valid header, in the order found. */
size_t gpu_channel_nprocesses(const struct gpu_channel *m);
const struct df_gpu_info *gpu_channel_process(const struct gpu_channel *m, size_t i,
					      uint64_t *delivered);  /* launches + activities handed on */
/* Totals of what was handed to the sink. */
uint64_t gpu_channel_launches(const struct gpu_channel *m);
uint64_t gpu_channel_activities(const struct gpu_channel *m);
/* Close everything; remove_files: unlink the files read and rmdir the directory (a
 * private one). */
void gpu_channel_free(struct gpu_channel *m, bool remove_files);

/* Parse one buffer as a whole file (unit tests, fuzzing): same checks and sink calls. */
void gpu_channel_buffer(const void *data, size_t len, uint32_t pid, const struct gpu_sink *sink,
			void *arg, struct df_gpu_info *info);

/* Merge a launch's Python frames py[0, npy) (innermost first, inject/protocol.h) into the
 * native stack locs[0, n) of pid, as py_merge_frames does (cut: the record says the frames
 * stop short of the outermost). Returns the new number of locations. */
int gpu_channel_merge_python(struct unwind_ctx *u, uint32_t pid, const struct gpu_py_frame *py,
			     size_t npy, bool cut, struct unwind_loc *locs, int n, int max,
			     enum py_merge_result *result);

#endif
