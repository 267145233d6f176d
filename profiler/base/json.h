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

/* The length of the valid UTF-8 sequence at s (shortest form, no surrogates, at most U+10FFFF),
 * or 0 when s[0] does not start one. s must be NUL-terminated. */
size_t json_utf8_len(const unsigned char *s);

/* Append s escaped for a JSON string (without quotes): '"', '\\' and control characters
 * escaped, invalid UTF-8 replaced by U+FFFD. */
void json_escape(struct cs_buf *b, const char *s);
/* Write s as a quoted, escaped JSON string (NULL: ""). */
void json_fputs(FILE *f, const char *s);

#endif
