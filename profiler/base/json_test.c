/* json_test.c: unit tests of the JSON writer and its escaper (json.c). */
#include "base/json.h"
#include "base/unit.h"

#include <math.h>
#include <string.h>

/* What the writer wrote, NUL-terminated (the caller frees). */
static char *json_test_run(void (*write)(struct json_writer *w))
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	UNIT_ASSERT(f);
	struct json_writer w;
	json_init(&w, f);
	write(&w);
	UNIT_ASSERT(w.depth == 0);
	fclose(f);
	return text;
}

static char *json_test_escape(const char *s)
{
	struct cs_buf b = { 0 };
	json_escape(&b, s);
	cs_buf_put(&b, "", 1);
	return b.data;
}

UNIT_TEST(json_escape_specials)
{
	char *e = json_test_escape("a\"b\\c\n\x01\x7f/");
	UNIT_ASSERT(!strcmp(e, "a\\\"b\\\\c\\u000a\\u0001\x7f/"));
	free(e);
}

UNIT_TEST(json_escape_utf8)
{
	/* "训练-数据加载器" cut at 15 bytes, as the kernel cuts a thread's name: 训练-数据 is 13
	 * bytes, then two of 加's three. The valid part stays, the cut character becomes one
	 * U+FFFD per byte. */
	char *e = json_test_escape("\xe8\xae\xad\xe7\xbb\x83-\xe6\x95\xb0\xe6\x8d\xae\xe5\x8a");
	UNIT_ASSERT(!strcmp(e, "\xe8\xae\xad\xe7\xbb\x83-\xe6\x95\xb0\xe6\x8d\xae\\ufffd\\ufffd"));
	free(e);
	/* a lone continuation byte, an overlong '/', a surrogate, past U+10FFFF, a 0xff byte */
	e = json_test_escape("a\x80" "b\xc0\xaf" "c\xed\xa0\x80" "d\xf4\x90\x80\x80" "e\xff");
	UNIT_ASSERT(!strcmp(e, "a\\ufffdb\\ufffd\\ufffdc\\ufffd\\ufffd\\ufffdd\\ufffd\\ufffd"
			       "\\ufffd\\ufffde\\ufffd"));
	free(e);
	/* every length of valid sequence passes through */
	e = json_test_escape("\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5");
	UNIT_ASSERT(!strcmp(e, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5"));
	free(e);
	UNIT_ASSERT_EQ_INT(json_utf8_len((const unsigned char *)"\xe8\xae"), 0);
	UNIT_ASSERT_EQ_INT(json_utf8_len((const unsigned char *)"\xf0\x9f\x94\xa5"), 4);
}

static void json_test_inline(struct json_writer *w)
{
	json_object(w, NULL, JSON_INLINE);
	json_str(w, "name", "x\"y");
	json_str(w, "none", NULL);
	json_u64(w, "n", UINT64_MAX);
	json_i64(w, "i", -3);
	json_double(w, "d", 1.0 / 3, 3);
	json_double(w, "nan", NAN, 2);
	json_g(w, "g", 2500.0);
	json_bool(w, "b", true);
	json_null(w, "z");
	json_raw(w, "r", "1.500");
	json_array(w, "empty", JSON_INLINE);
	json_end(w);
	json_array(w, "a", JSON_INLINE);
	json_u64(w, NULL, 1);
	json_object(w, NULL, JSON_INLINE);
	json_end(w);
	json_end(w);
	json_end(w);
}

UNIT_TEST(json_writer_commas)
{
	char *t = json_test_run(json_test_inline);
	UNIT_ASSERT(!strcmp(t, "{\"name\":\"x\\\"y\",\"none\":null,\"n\":18446744073709551615,"
			       "\"i\":-3,\"d\":0.333,\"nan\":null,\"g\":2500,\"b\":true,\"z\":null,\"r\":1.500,"
			       "\"empty\":[],\"a\":[1,{}]}"));
	free(t);
}

static void json_test_layouts(struct json_writer *w)
{
	json_object(w, NULL, JSON_INLINE);
	json_u64(w, "a", 1);
	json_break(w);
	json_array(w, "rows", JSON_ROWS);
	json_u64(w, NULL, 1);
	json_u64(w, NULL, 2);
	json_end(w);
	json_array(w, "none", JSON_ROWS);
	json_end(w);
	json_array(w, "closed", JSON_ROWS | JSON_CLOSE_LINE);
	json_u64(w, NULL, 3);
	json_end(w);
	json_array(w, "closed_empty", JSON_ROWS | JSON_CLOSE_LINE);
	json_end(w);
	json_array(w, "open_empty", JSON_ROWS | JSON_CLOSE_LINE | JSON_EMPTY_LINE);
	json_end(w);
	json_break(w);
	json_end(w);
}

UNIT_TEST(json_writer_layouts)
{
	char *t = json_test_run(json_test_layouts);
	UNIT_ASSERT(!strcmp(t, "{\"a\":1,\n\"rows\":[\n  1,\n  2],\"none\":[],"
			       "\"closed\":[\n  3\n],\"closed_empty\":[],\"open_empty\":[\n]\n}"));
	free(t);
}

/* json_fields and json_rows: each kind its C type picks, a flag, a double's decimals, a
 * renamed key, NULL strings, and an empty array of rows. */
struct json_test_row {
	const char *name;
	uint32_t small;
	uint64_t big;
	int32_t neg;
	int64_t neg64;
	bool yes;
	double share;
	uint32_t flags;
};

static const struct json_field json_test_fields[] = {
	JSON_FIELD(struct json_test_row, name), JSON_FIELD(struct json_test_row, small),
	JSON_FIELD_AS(struct json_test_row, big, "large"), JSON_FIELD(struct json_test_row, neg),
	JSON_FIELD(struct json_test_row, neg64), JSON_FIELD(struct json_test_row, yes),
	JSON_FIELD_DOUBLE(struct json_test_row, share, 2),
	JSON_FIELD_FLAG(struct json_test_row, flags, "second", 2),
	JSON_FIELD_FLAG(struct json_test_row, flags, "third", 4),
};

static const struct json_test_row json_test_rows[2] = {
	{ "a\"b", 4000000000u, UINT64_MAX, -5, INT64_MIN, true, 1.0 / 3, 2 },
	{ NULL, 0, 0, 0, 0, false, 0, 4 },
};

static void json_test_table(struct json_writer *w)
{
	json_object(w, NULL, JSON_INLINE);
	JSON_FIELDS(w, &json_test_rows[0], json_test_fields);
	JSON_ROWS_OF(w, "rows", JSON_INLINE, json_test_rows, 2, json_test_fields);
	JSON_ROWS_OF(w, "none", JSON_ROWS | JSON_CLOSE_LINE | JSON_EMPTY_LINE, json_test_rows, 0,
		     json_test_fields);
	json_end(w);
}

UNIT_TEST(json_writer_field_tables)
{
	char *t = json_test_run(json_test_table);
	const char *first = "\"name\":\"a\\\"b\",\"small\":4000000000,\"large\":18446744073709551615,"
			    "\"neg\":-5,\"neg64\":-9223372036854775808,\"yes\":true,\"share\":0.33,"
			    "\"second\":true,\"third\":false";
	const char *second = "\"name\":null,\"small\":0,\"large\":0,\"neg\":0,\"neg64\":0,"
			     "\"yes\":false,\"share\":0.00,\"second\":false,\"third\":true";
	char *want = cs_asprintf("{%s,\"rows\":[{%s},{%s}],\"none\":[\n]}", first, first, second);
	if (strcmp(t, want))
		fprintf(stderr, "got:  %s\nwant: %s\n", t, want);
	UNIT_ASSERT(!strcmp(t, want));
	free(want);
	free(t);
}
