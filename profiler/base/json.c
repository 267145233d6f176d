/* json.c: the streaming JSON writer and the UTF-8-checking escaper (see json.h). */
#include "base/json.h"

#include <inttypes.h>
#include <math.h>

void json_init(struct json_writer *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

/* The comma, the line break and the key before a member of the current container. */
static void json_member(struct json_writer *w, const char *key)
{
	int d = w->depth;
	if (d > 0 && d <= JSON_MAX_DEPTH) {
		if (w->any[d - 1])
			fputc(',', w->f);
		if (w->layout[d - 1] & JSON_ROWS)
			fputs("\n  ", w->f);
		else if (w->line_break)
			fputc('\n', w->f);
		w->any[d - 1] = true;
	}
	w->line_break = false;
	if (key) {
		json_fputs(w->f, key);
		fputc(':', w->f);
	}
}

static void json_open(struct json_writer *w, const char *key, unsigned layout, char open)
{
	json_member(w, key);
	fputc(open, w->f);
	if (w->depth < JSON_MAX_DEPTH) {
		w->layout[w->depth] = layout;
		w->any[w->depth] = false;
		w->close[w->depth] = open == '{' ? '}' : ']';
	}
	w->depth++;
}

void json_object(struct json_writer *w, const char *key, unsigned layout)
{
	json_open(w, key, layout, '{');
}

void json_array(struct json_writer *w, const char *key, unsigned layout)
{
	json_open(w, key, layout, '[');
}

void json_end(struct json_writer *w)
{
	if (w->depth <= 0)
		return;
	int d = --w->depth;
	if (w->line_break) /* json_break, then json_end: the bracket on a line of its own */
		fputc('\n', w->f);
	w->line_break = false;
	if (d >= JSON_MAX_DEPTH) /* deeper than any csampler output: the bracket is a guess */
		return (void)fputc('}', w->f);
	unsigned l = w->layout[d];
	if ((l & JSON_ROWS) && (w->any[d] ? (l & JSON_CLOSE_LINE) : (l & JSON_EMPTY_LINE)))
		fputc('\n', w->f);
	fputc(w->close[d], w->f);
}

void json_break(struct json_writer *w)
{
	w->line_break = true;
}

void json_str(struct json_writer *w, const char *key, const char *value)
{
	json_member(w, key);
	if (value)
		json_fputs(w->f, value);
	else
		fputs("null", w->f);
}

void json_u64(struct json_writer *w, const char *key, uint64_t v)
{
	json_member(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void json_i64(struct json_writer *w, const char *key, int64_t v)
{
	json_member(w, key);
	fprintf(w->f, "%" PRId64, v);
}

void json_double(struct json_writer *w, const char *key, double v, int decimals)
{
	json_member(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.*f", decimals, v);
	else
		fputs("null", w->f);
}

void json_g(struct json_writer *w, const char *key, double v)
{
	json_member(w, key);
	if (isfinite(v))
		fprintf(w->f, "%g", v);
	else
		fputs("null", w->f);
}

void json_bool(struct json_writer *w, const char *key, bool v)
{
	json_member(w, key);
	fputs(v ? "true" : "false", w->f);
}

void json_null(struct json_writer *w, const char *key)
{
	json_member(w, key);
	fputs("null", w->f);
}

void json_raw(struct json_writer *w, const char *key, const char *json)
{
	json_member(w, key);
	fputs(json, w->f);
}

void json_fields(struct json_writer *w, const void *row, const struct json_field *fields,
		 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct json_field *f = &fields[i];
		const void *v = (const char *)row + f->offset;
		switch (f->kind) {
		case JSON_KIND_U32:
		case JSON_KIND_U64:
			json_u64(w, f->key, f->kind == JSON_KIND_U32 ? *(const uint32_t *)v
								      : *(const uint64_t *)v);
			break;
		case JSON_KIND_I32:
		case JSON_KIND_I64:
			json_i64(w, f->key, f->kind == JSON_KIND_I32 ? *(const int32_t *)v
								      : *(const int64_t *)v);
			break;
		case JSON_KIND_BOOL:
			json_bool(w, f->key, *(const bool *)v);
			break;
		case JSON_KIND_STR:
			json_str(w, f->key, *(const char *const *)v);
			break;
		case JSON_KIND_DOUBLE:
			json_double(w, f->key, *(const double *)v, (int)f->arg);
			break;
		case JSON_KIND_FLAG:
			json_bool(w, f->key, *(const uint32_t *)v & f->arg);
			break;
		}
	}
}

void json_rows_each(struct json_writer *w, const char *key, unsigned layout, const void *rows,
		    size_t n, size_t size, json_row_fn *fn, const void *arg)
{
	json_array(w, key, layout);
	for (size_t i = 0; i < n; i++) {
		json_object(w, NULL, JSON_INLINE);
		fn(w, (const char *)rows + i * size, arg);
		json_end(w);
	}
	json_end(w);
}

struct json_table {
	const struct json_field *fields;
	size_t n;
};

static void json_table_row(struct json_writer *w, const void *row, const void *arg)
{
	const struct json_table *t = arg;
	json_fields(w, row, t->fields, t->n);
}

void json_rows(struct json_writer *w, const char *key, unsigned layout, const void *rows,
	       size_t n, size_t size, const struct json_field *fields, size_t nfields)
{
	struct json_table t = { fields, nfields };
	json_rows_each(w, key, layout, rows, n, size, json_table_row, &t);
}

size_t json_utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n;
	if (s[0] < 0x80)
		return s[0] ? 1 : 0;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) { /* a NUL stops here too: it is no continuation byte */
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_escape(struct cs_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = json_utf8_len(p);
		if (!n) {
			cs_buf_put(b, "\\ufffd", 6);
			p++;
		} else if (n > 1) {
			cs_buf_put(b, p, n);
			p += n;
		} else if (*p == '"' || *p == '\\') {
			char e[2] = { '\\', (char)*p++ };
			cs_buf_put(b, e, 2);
		} else if (*p < 0x20) {
			cs_buf_printf(b, "\\u%04x", *p++);
		} else {
			cs_buf_put(b, p++, 1);
		}
	}
}

void json_fputs(FILE *f, const char *s)
{
	struct cs_buf b = { 0 };
	cs_buf_put(&b, "\"", 1);
	json_escape(&b, s ? s : "");
	cs_buf_put(&b, "\"", 1);
	fwrite(b.data, 1, b.len, f);
	cs_buf_free(&b);
}
