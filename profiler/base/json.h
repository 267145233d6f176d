/* json.h: one streaming JSON writer for every JSON csampler prints (report, info, compare, the
 * chrome and speedscope exports), and the one string escaper they share. The writer places the
 * commas; the caller says where lines break, so each output keeps its shape. Strings are checked
 * as UTF-8: a byte that does not start a valid sequence (a thread name the kernel cut at 15 bytes
 * mid-character) becomes U+FFFD, so the output always parses. Hand-written rather than a library
 * (json-c, jansson) because the outputs are flat streams that need no tree in memory. */
#ifndef CSAMPLER_JSON_H
#define CSAMPLER_JSON_H

#include "base/cs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a container lays out its members. JSON_INLINE: all on one line. JSON_ROWS: each member
 * on its own line, indented by two spaces. JSON_CLOSE_LINE: with JSON_ROWS, the closing bracket
 * on its own line when there is a member; JSON_EMPTY_LINE: with JSON_ROWS, an empty one reads
 * "[\n]". */
enum json_layout {
	JSON_INLINE = 0,
	JSON_ROWS = 1,
	JSON_CLOSE_LINE = 2,
	JSON_EMPTY_LINE = 4,
};

#define JSON_MAX_DEPTH 32

struct json_writer {
	FILE *f;
	int depth;
	bool line_break;                    /* the next member starts on a new line */
	unsigned layout[JSON_MAX_DEPTH];
	bool any[JSON_MAX_DEPTH];           /* the container has a member already */
	char close[JSON_MAX_DEPTH];         /* '}' or ']' */
};

void json_init(struct json_writer *w, FILE *f);

/* Containers. key names the member in an object; pass NULL in an array or at the top. */
void json_object(struct json_writer *w, const char *key, unsigned layout);
void json_array(struct json_writer *w, const char *key, unsigned layout);
void json_end(struct json_writer *w);
/* The next member of the current container starts on a new line (after its comma); before
 * json_end, the closing bracket does. */
void json_break(struct json_writer *w);

/* Members (key NULL inside an array). json_str writes null for a NULL value; json_double
 * writes null for NaN and infinities, which JSON cannot hold. */
void json_str(struct json_writer *w, const char *key, const char *value);
void json_u64(struct json_writer *w, const char *key, uint64_t v);
void json_i64(struct json_writer *w, const char *key, int64_t v);
void json_double(struct json_writer *w, const char *key, double v, int decimals);
void json_g(struct json_writer *w, const char *key, double v); /* printf's %g */
void json_bool(struct json_writer *w, const char *key, bool v);
void json_null(struct json_writer *w, const char *key);
/* A value the caller formatted as JSON itself (a number printed exactly from integers). */
void json_raw(struct json_writer *w, const char *key, const char *json);

/* Members read from a struct's fields, described once as a table. JSON_FIELD(type, member)
 * writes the member under its own name; JSON_FIELD_AS under another key. Its C type picks the
 * JSON kind: a string for a char pointer (null when NULL), a number for a 32- or 64-bit
 * integer, true/false for a bool; any other type does not compile. JSON_FIELD_DOUBLE gives a
 * double's decimals, and JSON_FIELD_FLAG writes whether a uint32_t member has bit mask set. */
enum json_kind {
	JSON_KIND_U32,
	JSON_KIND_U64,
	JSON_KIND_I32,
	JSON_KIND_I64,
	JSON_KIND_BOOL,
	JSON_KIND_STR,
	JSON_KIND_DOUBLE,  /* arg: decimals */
	JSON_KIND_FLAG,    /* arg: the mask */
};

struct json_field {
	const char *key;
	size_t offset;
	enum json_kind kind;
	uint32_t arg;
};

#define JSON_KIND_OF(x)                                                                     \
	_Generic((x), uint32_t: JSON_KIND_U32, uint64_t: JSON_KIND_U64, int32_t: JSON_KIND_I32, \
		 int64_t: JSON_KIND_I64, bool: JSON_KIND_BOOL, char *: JSON_KIND_STR,          \
		 const char *: JSON_KIND_STR)
#define JSON_FIELD_AS(type, member, key)                                                    \
	{ key, offsetof(type, member), JSON_KIND_OF(((type *)0)->member), 0 }
#define JSON_FIELD(type, member) JSON_FIELD_AS(type, member, #member)
#define JSON_FIELD_DOUBLE(type, member, decimals)                                           \
	{ #member, offsetof(type, member), _Generic(((type *)0)->member, double: JSON_KIND_DOUBLE), \
	  decimals }
#define JSON_FIELD_FLAG(type, member, key, mask)                                            \
	{ key, offsetof(type, member), _Generic(((type *)0)->member, uint32_t: JSON_KIND_FLAG),  \
	  mask }

/* Write row's members that fields[0..n) describe, in their order, into the open container. */
void json_fields(struct json_writer *w, const void *row, const struct json_field *fields,
		 size_t n);
#define JSON_FIELDS(w, row, table) json_fields(w, row, table, sizeof(table) / sizeof((table)[0]))

/* Arrays of rows: under key, one inline object a row of rows[0..n) (each size bytes). With
 * json_rows_each, fn writes each row's members (arg passed along); with json_rows, the members
 * are those fields describes. */
typedef void json_row_fn(struct json_writer *w, const void *row, const void *arg);
void json_rows_each(struct json_writer *w, const char *key, unsigned layout, const void *rows,
		    size_t n, size_t size, json_row_fn *fn, const void *arg);
void json_rows(struct json_writer *w, const char *key, unsigned layout, const void *rows,
	       size_t n, size_t size, const struct json_field *fields, size_t nfields);
#define JSON_ROWS_EACH(w, key, layout, rows, n, fn, arg)                                    \
	json_rows_each(w, key, layout, rows, n, sizeof(*(rows)), fn, arg)
#define JSON_ROWS_OF(w, key, layout, rows, n, table)                                        \
	json_rows(w, key, layout, rows, n, sizeof(*(rows)), table,                          \
		  sizeof(table) / sizeof((table)[0]))

/* The length of the valid UTF-8 sequence at s (shortest form, no surrogates, at most U+10FFFF),
 * or 0 when s[0] does not start one. s must be NUL-terminated. */
size_t json_utf8_len(const unsigned char *s);

/* Append s escaped for a JSON string (without quotes): '"', '\\' and control characters
 * escaped, invalid UTF-8 replaced by U+FFFD. */
void json_escape(struct cs_buf *b, const char *s);
/* Write s as a quoted, escaped JSON string (NULL: ""). */
void json_fputs(FILE *f, const char *s);

#endif
