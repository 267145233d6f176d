/* records_test.c: unit tests of the record codec (records.c): every record type written with
 * its df_put_* and read back through datafile.c and its df_decode_*, field by field; the byte
 * offsets that csampler-data(5) gives; and the malformed records each decoder refuses. */
#include "base/cs.h"
#include "format/datafile.h"
#include "format/records.h"
#include "base/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t rt_locs[3] = { 7, 8, 9 };
static const struct df_symbol_frame rt_frames[2] = { { 1, 2, 30, 2 }, { 3, 0, 0, 0 } };
static const uint64_t rt_regs[24] = { [0] = 11, [3] = 33, [7] = 77 };
static const uint64_t rt_kips[2] = { 0xffffffff81000000ull, 0xffffffff82000000ull };

static struct df_gpu_launch rt_launch(void)
{
	return (struct df_gpu_launch){ .time = 5, .pid = 6, .tid = 7, .correlation = 8, .stack = 0,
				       .api = 1, .cbid = 211, .domain = 1, .flags = 3,
				       .graph_node_id = 99 };
}

static struct df_gpu_activity rt_activity(void)
{
	return (struct df_gpu_activity){ .kind = DF_GPU_KERNEL, .pid = 6, .correlation = 8,
					 .start = 100, .end = 200, .bytes = 4096, .name = 1,
					 .grid = { 1, 2, 3 }, .block = { 4, 5, 6 } };
}

/* Write one record of every type. */
static void rt_write(const char *path)
{
	struct df_writer *w;
	UNIT_ASSERT(df_writer_open(&w, path, true) == 0);
	df_put_header_kv(w, "rate_hz", "997");
	df_put_string(w, 1, "main");
	df_put_comm(w, &(struct df_comm){ 100, 101, 1234, 1, "worker" });
	df_put_mmap(w, &(struct df_mmap){ 100, 101, 1235, 0x400000, 0x1000, 0x2000, 5, 2,
					  "/usr/bin/app" });
	df_put_task(w, DF_FORK, &(struct df_task){ 102, 100, 102, 101, 1236 });
	df_put_task(w, DF_EXIT, &(struct df_task){ 102, 100, 103, 102, 1237 });
	df_put_lost(w, &(struct df_lost){ 1238, 42 });
	df_put_module(w, &(struct df_module){ 0, 4, "/usr/bin/app", "abcd" });
	df_put_module(w, &(struct df_module){ 1, 0, "[kernel]", NULL });
	df_put_loc(w, &(struct df_loc){ 0, 0, 0x1234567890ull, DF_LOC_CALLER });
	df_put_stack(w, 0, rt_locs, 3);
	df_put_sample(w, &(struct df_sample){ 1239, 100, 101, 3, 0, 2, 5 });
	df_put_symbol(w, 0, rt_frames, 2);
	df_put_raw_sample(w, &(struct df_raw_sample){
		.time = 1240, .pid = 100, .tid = 101, .cpu = 2, .flags = 1,
		.regs_mask = 1u << 0 | 1u << 3 | 1u << 7, .regs = rt_regs, .nkernel = 2,
		.kernel_ips = rt_kips, .stack_size = 5, .stack = "stack" });
	struct df_gpu_launch l = rt_launch();
	df_put_gpu_launch(w, &l);
	struct df_gpu_activity a = rt_activity();
	df_put_gpu_activity(w, &a);
	df_put_gpu_info(w, &(struct df_gpu_info){ .pid = 100, .cupti_version = 26, .launches = 3,
						  .flags = DF_GPU_INFO_HAVE_INFO });
	df_put_gpu_note(w, &(struct df_gpu_note){ 100, 1, "held by Nsight" });
	df_put_task_label(w, &(struct df_task_label){ 100, 7, 3, 1, 1, DF_TASK_LABEL_PROCESS });
	df_put_end(w, &(struct df_end){ 5, 42, 1300, 1 });
	UNIT_ASSERT(df_writer_close(w) == 0);
}

/* Any record, decoded. */
union rt_record {
	struct df_comm comm;
	struct df_mmap mmap;
	struct df_task task;
	struct df_lost lost;
	struct df_loc loc;
	struct df_sample sample;
	struct df_end end;
	struct df_header_kv kv;
	struct df_string str;
	struct df_module module;
	struct df_stack stack;
	struct df_symbol sym;
	struct df_raw_sample raw;
	struct df_gpu_note note;
	struct df_gpu_launch launch;
	struct df_gpu_activity act;
	struct df_gpu_info info;
	struct df_task_label label;
};

static void rt_check_fixed(uint16_t type, const uint8_t *d, size_t len)
{
	union rt_record r;

	switch (type) {
	case DF_COMM:
		UNIT_ASSERT(df_decode_comm(d, len, &r.comm) == 0);
		UNIT_ASSERT(r.comm.pid == 100 && r.comm.tid == 101 && r.comm.time == 1234 &&
			    r.comm.flags == 1 && !strcmp(r.comm.name, "worker"));
		UNIT_ASSERT(len == DF_COMM_FIXED + 7 && !strcmp((const char *)d + 20, "worker"));
		break;
	case DF_MMAP:
		UNIT_ASSERT(df_decode_mmap(d, len, &r.mmap) == 0);
		UNIT_ASSERT(r.mmap.pid == 100 && r.mmap.tid == 101 && r.mmap.time == 1235 &&
			    r.mmap.start == 0x400000 && r.mmap.len == 0x1000 &&
			    r.mmap.pgoff == 0x2000 && r.mmap.prot == 5 && r.mmap.flags == 2 &&
			    !strcmp(r.mmap.path, "/usr/bin/app"));
		UNIT_ASSERT(cs_rd64(d + 24) == 0x1000 && !strcmp((const char *)d + 48, "/usr/bin/app"));
		break;
	case DF_FORK:
	case DF_EXIT:
		UNIT_ASSERT(len == DF_TASK_SIZE && df_decode_task(d, len, &r.task) == 0);
		UNIT_ASSERT(r.task.pid == 102 && r.task.ppid == 100 &&
			    r.task.tid == (type == DF_FORK ? 102u : 103u) &&
			    r.task.ptid == (type == DF_FORK ? 101u : 102u) &&
			    r.task.time == (type == DF_FORK ? 1236u : 1237u));
		break;
	case DF_LOST:
		UNIT_ASSERT(len == DF_LOST_SIZE && df_decode_lost(d, len, &r.lost) == 0);
		UNIT_ASSERT(r.lost.time == 1238 && r.lost.count == 42);
		break;
	case DF_LOC:
		UNIT_ASSERT(len == DF_LOC_SIZE && df_decode_loc(d, len, &r.loc) == 0);
		UNIT_ASSERT(r.loc.id == 0 && r.loc.module == 0 && r.loc.offset == 0x1234567890ull &&
			    r.loc.flags == DF_LOC_CALLER);
		break;
	case DF_SAMPLE:
		UNIT_ASSERT(len == DF_SAMPLE_SIZE && df_decode_sample(d, len, &r.sample) == 0);
		UNIT_ASSERT(r.sample.time == 1239 && r.sample.pid == 100 && r.sample.tid == 101 &&
			    r.sample.cpu == 3 && r.sample.stack == 0 && r.sample.flags == 2 &&
			    r.sample.weight == 5);
		UNIT_ASSERT(cs_rd32(d + 20) == 0 && cs_rd32(d + 28) == 5); /* csampler-data(5) */
		break;
	case DF_END:
		UNIT_ASSERT(len == DF_END_SIZE && df_decode_end(d, len, &r.end) == 0);
		UNIT_ASSERT(r.end.samples == 5 && r.end.lost == 42 && r.end.end_time == 1300 &&
			    r.end.flags == 1);
		break;
	}
}

static void rt_check_variable(uint16_t type, const uint8_t *d, size_t len)
{
	union rt_record r;

	switch (type) {
	case DF_HEADER_KV:
		UNIT_ASSERT(df_decode_header_kv(d, len, &r.kv) == 0);
		UNIT_ASSERT(!strcmp(r.kv.key, "rate_hz") && !strcmp(r.kv.value, "997"));
		break;
	case DF_STRING:
		UNIT_ASSERT(df_decode_string(d, len, &r.str) == 0);
		UNIT_ASSERT(r.str.id == 1 && !strcmp(r.str.text, "main"));
		break;
	case DF_MODULE:
		UNIT_ASSERT(df_decode_module(d, len, &r.module) == 0);
		if (r.module.id == 0)
			UNIT_ASSERT(r.module.flags == 4 && !strcmp(r.module.path, "/usr/bin/app") &&
				    !strcmp(r.module.build_id, "abcd"));
		else
			UNIT_ASSERT(r.module.id == 1 && !strcmp(r.module.path, "[kernel]") &&
				    !strcmp(r.module.build_id, ""));
		break;
	case DF_STACK:
		UNIT_ASSERT(df_decode_stack(d, len, &r.stack) == 0);
		UNIT_ASSERT(r.stack.id == 0 && r.stack.n == 3 && len == 8 + 12);
		for (uint32_t i = 0; i < 3; i++)
			UNIT_ASSERT(df_stack_loc(&r.stack, i) == rt_locs[i]);
		break;
	case DF_SYMBOL:
		UNIT_ASSERT(df_decode_symbol(d, len, &r.sym) == 0);
		UNIT_ASSERT(r.sym.loc == 0 && r.sym.n == 2);
		for (uint32_t i = 0; i < 2; i++) {
			struct df_symbol_frame f = df_symbol_at(&r.sym, i);
			UNIT_ASSERT(!memcmp(&f, &rt_frames[i], sizeof(f)));
		}
		break;
	case DF_RAW_SAMPLE:
		UNIT_ASSERT(df_decode_raw_sample_task(d, len, &r.raw) == 0);
		UNIT_ASSERT(r.raw.time == 1240 && r.raw.pid == 100 && r.raw.tid == 101);
		/* 32 fixed bytes, 3 registers, nkernel and 2 ips, stack_size and 5 bytes */
		UNIT_ASSERT(len == 32 + 3 * 8 + 8 + 2 * 8 + 8 + 5);
		UNIT_ASSERT(cs_rd32(d + 16) == 2 && cs_rd64(d + 24) == 0x89);
		UNIT_ASSERT(cs_rd64(d + 32) == 11 && cs_rd64(d + 40) == 33 && cs_rd64(d + 48) == 77);
		UNIT_ASSERT(cs_rd64(d + 56) == 2 && cs_rd64(d + 64) == rt_kips[0]);
		UNIT_ASSERT(cs_rd64(d + 80) == 5 && !memcmp(d + 88, "stack", 5));
		break;
	case DF_GPU_NOTE:
		UNIT_ASSERT(df_decode_gpu_note(d, len, &r.note) == 0);
		UNIT_ASSERT(r.note.pid == 100 && r.note.severity == 1 &&
			    !strcmp(r.note.text, "held by Nsight"));
		break;
	}
}

static void rt_check_gpu(uint16_t type, const uint8_t *d, size_t len)
{
	union rt_record r, want;

	switch (type) {
	case DF_GPU_LAUNCH:
		UNIT_ASSERT(df_decode_gpu_launch(d, len, &r.launch) == 0);
		want.launch = rt_launch();
		UNIT_ASSERT(!memcmp(&r.launch, &want.launch, sizeof(r.launch)));
		break;
	case DF_GPU_ACTIVITY:
		UNIT_ASSERT(df_decode_gpu_activity(d, len, &r.act) == 0);
		want.act = rt_activity();
		UNIT_ASSERT(!memcmp(&r.act, &want.act, sizeof(r.act)));
		break;
	case DF_GPU_INFO:
		UNIT_ASSERT(df_decode_gpu_info(d, len, &r.info) == 0);
		UNIT_ASSERT(r.info.pid == 100 && r.info.cupti_version == 26 && r.info.launches == 3 &&
			    r.info.flags == DF_GPU_INFO_HAVE_INFO);
		break;
	case DF_TASK_LABEL:
		UNIT_ASSERT(df_decode_task_label(d, len, &r.label) == 0);
		UNIT_ASSERT(r.label.id == 100 && r.label.orig_id == 7 && r.label.rank == 3 &&
			    r.label.input == 1 && r.label.host == 1 &&
			    r.label.flags == DF_TASK_LABEL_PROCESS);
		break;
	}
}

static int rt_check(void *arg, uint16_t type, const uint8_t *d, size_t len)
{
	uint32_t *seen = arg;
	UNIT_ASSERT(type < 32 || (type >= 128 && type < 160));
	seen[type < 128 ? type : type - 128 + 32]++;
	rt_check_fixed(type, d, len);
	rt_check_variable(type, d, len);
	rt_check_gpu(type, d, len);
	return 0;
}

UNIT_TEST(records_round_trip_every_type)
{
	char *path = cs_asprintf("%s/rt.data", unit_tmpdir());
	uint32_t seen[64] = { 0 };
	static const uint16_t types[] = {
		DF_HEADER_KV, DF_COMM, DF_MMAP, DF_FORK, DF_EXIT, DF_LOST, DF_MODULE, DF_LOC,
		DF_STACK, DF_SAMPLE, DF_STRING, DF_SYMBOL, DF_END, DF_RAW_SAMPLE, DF_GPU_LAUNCH,
		DF_GPU_ACTIVITY, DF_GPU_INFO, DF_GPU_NOTE, DF_TASK_LABEL,
	};

	rt_write(path);
	UNIT_ASSERT(df_read(path, rt_check, seen) == 0);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		uint16_t t = types[i];
		UNIT_ASSERT_EQ_INT(seen[t < 128 ? t : t - 128 + 32], t == DF_MODULE ? 2 : 1);
	}
	free(path);
}

UNIT_TEST(records_malformed_refused)
{
	uint8_t b[64] = { 0 };
	struct df_comm comm;
	struct df_stack stack;
	struct df_symbol sym;
	struct df_module module;
	struct df_header_kv kv;
	struct df_gpu_launch launch;
	struct df_sample sample;

	memset(b, 'x', sizeof(b));
	UNIT_ASSERT(df_decode_comm(b, 30, &comm) == -EINVAL);          /* name without NUL */
	UNIT_ASSERT(df_decode_header_kv(b, 10, &kv) == -EINVAL);
	b[3] = 0;
	UNIT_ASSERT(df_decode_header_kv(b, 10, &kv) == -EINVAL);       /* no value's NUL */
	UNIT_ASSERT(df_decode_sample(b, DF_SAMPLE_SIZE - 1, &sample) == -EINVAL);
	UNIT_ASSERT(df_decode_gpu_launch(b, sizeof(launch) - 1, &launch) == -EINVAL);
	/* a stack whose count does not match its length */
	memset(b, 0, sizeof(b));
	b[4] = 3;
	UNIT_ASSERT(df_decode_stack(b, 8 + 8, &stack) == -EINVAL);
	UNIT_ASSERT(df_decode_stack(b, 8 + 12, &stack) == 0 && stack.n == 3);
	b[4] = 0xff, b[5] = 0xff, b[6] = 0xff, b[7] = 0xff;       /* n * 4 overflows 32 bits */
	UNIT_ASSERT(df_decode_stack(b, 8 + 12, &stack) == -EINVAL);
	/* a symbol with no frame, or a partial one */
	memset(b, 0, sizeof(b));
	UNIT_ASSERT(df_decode_symbol(b, 8, &sym) == -EINVAL);
	b[4] = 1;
	UNIT_ASSERT(df_decode_symbol(b, 8 + 15, &sym) == -EINVAL);
	UNIT_ASSERT(df_decode_symbol(b, 8 + 16, &sym) == 0);
	/* a module with a path but no build-id string */
	memset(b, 0, sizeof(b));
	memcpy(b + 8, "/a", 3);
	UNIT_ASSERT(df_decode_module(b, 11, &module) == -EINVAL);
	UNIT_ASSERT(df_decode_module(b, 12, &module) == 0 && !strcmp(module.build_id, ""));
}

/* Any record by its type (the loader's and merge's one decoder): decoded into its member of the
 * union, refused when malformed, -ENOENT for a type without a layout; names for messages; and
 * the id order every reader checks. */
UNIT_TEST(records_any_type_decoded_and_checked)
{
	uint8_t b[64] = { 0 };
	union df_record r;

	UNIT_ASSERT(df_decode_record(DF_SAMPLE, b, DF_SAMPLE_SIZE - 1, &r) == -EINVAL);
	UNIT_ASSERT(df_decode_record(14, b, sizeof(b), &r) == -ENOENT);
	UNIT_ASSERT(df_decode_record(0, b, sizeof(b), &r) == -ENOENT);
	UNIT_ASSERT(df_decode_record(DF_TASK_LABEL + 1, b, sizeof(b), &r) == -ENOENT);
	UNIT_ASSERT(!strcmp(df_record_name(DF_EXIT), "exit"));
	UNIT_ASSERT(!strcmp(df_record_name(DF_LOC), "location"));
	UNIT_ASSERT(!strcmp(df_record_name(DF_GPU_LAUNCH), "GPU launch"));
	UNIT_ASSERT(!strcmp(df_record_name(99), "unknown"));

	/* stack 4 of locations 1, 2, 7 */
	b[0] = 4, b[4] = 3, b[8] = 1, b[12] = 2, b[16] = 7;
	UNIT_ASSERT(df_decode_record(DF_STACK, b, 8 + 12, &r) == 0 && r.stack.n == 3);
	struct df_ids ids = { .strings = 3, .modules = 1, .locs = 8, .stacks = 4 };
	UNIT_ASSERT(df_check_record(DF_STACK, &r, &ids) == 0);
	ids.locs = 7;    /* location 7 not defined yet */
	UNIT_ASSERT(df_check_record(DF_STACK, &r, &ids) == -EINVAL);
	ids.locs = 8, ids.stacks = 5;   /* not the next stack id */
	UNIT_ASSERT(df_check_record(DF_STACK, &r, &ids) == -EINVAL);

	r.str = (struct df_string){ .id = 3, .text = "x" };
	UNIT_ASSERT(df_check_record(DF_STRING, &r, &ids) == 0);
	r.str.id = 2;
	UNIT_ASSERT(df_check_record(DF_STRING, &r, &ids) == -EINVAL);
	r.module = (struct df_module){ .id = 1 };   /* the next module, or an earlier one again */
	UNIT_ASSERT(df_check_record(DF_MODULE, &r, &ids) == 0);
	r.module.id = 2;
	UNIT_ASSERT(df_check_record(DF_MODULE, &r, &ids) == -EINVAL);
	r.loc = (struct df_loc){ .id = 8, .module = 0 };
	UNIT_ASSERT(df_check_record(DF_LOC, &r, &ids) == 0);
	r.loc.module = 1;
	UNIT_ASSERT(df_check_record(DF_LOC, &r, &ids) == -EINVAL);
	r.sample = (struct df_sample){ .stack = 4 };
	UNIT_ASSERT(df_check_record(DF_SAMPLE, &r, &ids) == 0);
	r.sample.stack = 5;
	UNIT_ASSERT(df_check_record(DF_SAMPLE, &r, &ids) == -EINVAL);
	r.label = (struct df_task_label){ .host = 3 };
	UNIT_ASSERT(df_check_record(DF_TASK_LABEL, &r, &ids) == -EINVAL);
	/* symbol of location 0, one frame naming strings 1 and 2, then string 3 */
	memset(b, 0, sizeof(b));
	b[4] = 1, b[8] = 1, b[12] = 2;
	UNIT_ASSERT(df_decode_record(DF_SYMBOL, b, 8 + 16, &r) == 0);
	UNIT_ASSERT(df_check_record(DF_SYMBOL, &r, &ids) == 0);
	b[12] = 3;
	UNIT_ASSERT(df_decode_record(DF_SYMBOL, b, 8 + 16, &r) == 0);
	UNIT_ASSERT(df_check_record(DF_SYMBOL, &r, &ids) == -EINVAL);
	/* types without ids pass */
	UNIT_ASSERT(df_check_record(DF_LOST, &r, &ids) == 0);
}

/* merge rewrites the fixed fields over a copy of a record: a tail it does not know stays. */
UNIT_TEST(records_encode_keeps_tail)
{
	uint8_t b[DF_LOC_SIZE + 4];
	struct df_loc loc;

	memset(b, 0xab, sizeof(b));
	df_encode_fixed(b, &(struct df_loc){ 1, 2, 3, 4 }, DF_LOC_SIZE);
	UNIT_ASSERT(df_decode_loc(b, sizeof(b), &loc) == 0);
	UNIT_ASSERT(loc.id == 1 && loc.module == 2 && loc.offset == 3 && loc.flags == 4);
	UNIT_ASSERT(b[DF_LOC_SIZE] == 0xab && b[DF_LOC_SIZE + 3] == 0xab);
}
