/* pprof_test.c: unit tests of the pprof export (pprof.c) on profiles built in memory: the
 * export is gunzipped and its protobuf walked here (a reader of the few wire types pprof.c
 * writes) to check each sample's labels (pid, tid, thread_name with the process' name for a
 * thread never named, rank from the header as a number or a string) and that one call stack
 * on two threads is two samples. */
#include "export/export.h"
#include "analysis/profile_builder.h"
#include "base/cs.h"
#include "base/unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Gunzip the export of p into *out; returns its length. */
static size_t pprof_test_export(const struct profile *p, unsigned char **out)
{
	char *gz = NULL;
	size_t gzlen = 0;
	FILE *f = open_memstream(&gz, &gzlen);
	UNIT_ASSERT(f && export_pprof_write(f, p) == 0 && fclose(f) == 0);
	size_t cap = 1 << 20;
	unsigned char *buf = cs_malloc(cap);
	z_stream z = { .next_in = (Bytef *)gz, .avail_in = (uInt)gzlen, .next_out = buf,
		       .avail_out = (uInt)cap };
	UNIT_ASSERT(inflateInit2(&z, 15 + 16) == Z_OK);
	UNIT_ASSERT(inflate(&z, Z_FINISH) == Z_STREAM_END);
	size_t n = z.total_out;
	inflateEnd(&z);
	free(gz);
	*out = buf;
	return n;
}

static uint64_t pt_varint(const unsigned char **p, const unsigned char *end)
{
	uint64_t v = 0;
	for (int shift = 0; *p < end; shift += 7) {
		unsigned char c = *(*p)++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return v;
}

/* The next field of [*p, end): its number, and its value (varints) or bytes (length-
 * delimited). Returns false at the end. */
static bool pt_field(const unsigned char **p, const unsigned char *end, uint32_t *field,
		     uint64_t *value, const unsigned char **bytes, size_t *len)
{
	if (*p >= end)
		return false;
	uint64_t key = pt_varint(p, end);
	*field = (uint32_t)(key >> 3);
	if ((key & 7) == 0) {
		*value = pt_varint(p, end);
		*bytes = NULL;
	} else {
		UNIT_ASSERT((key & 7) == 2);
		*len = pt_varint(p, end);
		*bytes = *p;
		*p += *len;
		UNIT_ASSERT(*p <= end);
	}
	return true;
}

struct pt_sample {
	char labels[256]; /* "pid=1 tid=2 thread_name=x rank=3 " */
};

/* The samples' labels as text, with the string table resolved; returns their number. */
static size_t pt_samples(const unsigned char *msg, size_t len, struct pt_sample *out, size_t max)
{
	const char *strings[256];
	size_t nstrings = 0, nsamples = 0;
	const unsigned char *p = msg, *end = msg + len, *bytes;
	uint32_t field;
	uint64_t value;
	size_t blen;

	/* First pass: the string table (field 6), copied as C strings. */
	while (pt_field(&p, end, &field, &value, &bytes, &blen))
		if (field == 6 && nstrings < 256) {
			char *s = cs_malloc(blen + 1);
			memcpy(s, bytes, blen);
			s[blen] = 0;
			strings[nstrings++] = s;
		}
	p = msg;
	while (pt_field(&p, end, &field, &value, &bytes, &blen)) {
		if (field != 2 || nsamples >= max)
			continue;
		struct pt_sample *s = &out[nsamples++];
		s->labels[0] = 0;
		const unsigned char *sp = bytes, *send = bytes + blen, *lb;
		size_t llen;
		while (pt_field(&sp, send, &field, &value, &lb, &llen)) {
			if (field != 3)
				continue;
			const unsigned char *lp = lb, *lend = lb + llen, *x;
			uint64_t key = 0, str = 0, num = 0;
			size_t xl;
			while (pt_field(&lp, lend, &field, &value, &x, &xl))
				*(field == 1 ? &key : field == 2 ? &str : &num) = value;
			UNIT_ASSERT(key < nstrings && str < nstrings);
			size_t used = strlen(s->labels);
			if (str)
				snprintf(s->labels + used, sizeof(s->labels) - used, "%s=%s ",
					 strings[key], strings[str]);
			else
				snprintf(s->labels + used, sizeof(s->labels) - used, "%s=%llu ",
					 strings[key], (unsigned long long)num);
		}
	}
	for (size_t i = 0; i < nstrings; i++)
		free((char *)strings[i]);
	return nsamples;
}

/* One sample of "main" on (pid, tid) exports as one pprof sample with these labels; b is
 * freed. */
static void pt_expect_one_sample(struct pbuild *b, uint32_t pid, uint32_t tid, const char *labels)
{
	struct pt_sample s[8];
	unsigned char *msg;
	pb_samples(b, pid, tid, pb_stack(b, "main"), 1, 0);
	size_t len = pprof_test_export(&b->p, &msg);
	UNIT_ASSERT_EQ_INT(pt_samples(msg, len, s, 8), 1);
	UNIT_ASSERT(!strcmp(s[0].labels, labels));
	free(msg);
	pb_free(b);
}

UNIT_TEST(pprof_labels_per_thread_and_rank)
{
	struct pbuild b;
	struct pt_sample s[8];
	unsigned char *msg;

	pb_init(&b);
	pb_header(&b, "rate_hz", "1000");
	pb_header(&b, "rank", "3");
	pb_process(&b, 10, 1, "trainer");
	pb_thread(&b, 10, 10, "trainer");
	pb_thread(&b, 10, 11, "");               /* never named: the process' name */
	uint32_t st = pb_stack(&b, "main;step;matmul");
	pb_samples(&b, 10, 10, st, 3, 0);
	pb_samples(&b, 10, 11, st, 2, 0);
	size_t len = pprof_test_export(&b.p, &msg);
	size_t n = pt_samples(msg, len, s, 8);
	UNIT_ASSERT_EQ_INT(n, 2); /* one stack, two threads: two samples */
	UNIT_ASSERT(!strcmp(s[0].labels, "pid=10 tid=10 thread_name=trainer rank=3 "));
	UNIT_ASSERT(!strcmp(s[1].labels, "pid=10 tid=11 thread_name=trainer rank=3 "));
	free(msg);
	pb_free(&b);

	/* No rank ("norank": none of RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK was set), no rank
	 * label; likewise without a rank header. */
	pb_init(&b);
	pb_header(&b, "rank", "norank");
	pb_process(&b, 5, 1, "w");
	pt_expect_one_sample(&b, 5, 5, "pid=5 tid=5 thread_name=w ");
	pb_init(&b);
	pt_expect_one_sample(&b, 5, 6, "pid=5 tid=6 ");
}
