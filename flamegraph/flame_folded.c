/* flame_folded.c: a streaming reader of folded stacks, "root;...;leaf COUNT" per line, as
 * csampler folded, perf + stackcollapse-perf.pl, inferno-collapse and py-spy write them, and
 * difffolded.pl's "stack BEFORE AFTER". Lines are read one at a time; the previous line is kept
 * so that sorted input (the usual case) tells the tree which leading frames are unchanged. */
#include "flame.h"
#include "base/cs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct flame_folded_ctx {
	struct fold_frame *frames;
	size_t cap;
	char *prev;             /* the previous stack's text, as it was read */
	size_t prev_len, prev_cap;
	bool have_prev;
};

static bool flame_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Split a trailing " NUMBER" (digits with an optional fraction) off s[0..*len). Returns true
 * and shortens *len to the text before the whitespace. */
static bool flame_take_count(const char *s, size_t *len, double *count)
{
	size_t end = *len, i = end;
	bool dot = false;
	while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || (s[i - 1] == '.' && !dot))) {
		if (s[i - 1] == '.')
			dot = true;
		i--;
	}
	if (i == end || i == 0 || !flame_is_space(s[i - 1]) || s[i] < '0' || s[i] > '9')
		return false;
	char num[64];
	if (end - i >= sizeof(num))
		return false;
	memcpy(num, s + i, end - i);
	num[end - i] = 0;
	*count = strtod(num, NULL);
	while (i > 0 && flame_is_space(s[i - 1]))
		i--;
	*len = i;
	return true;
}

/* Strip a "_[k]"-style annotation from name[0..*len) and return its flag. */
static uint32_t flame_take_annotation(const char *name, size_t *len)
{
	size_t n = *len;
	if (n < 4 || name[n - 4] != '_' || name[n - 3] != '[' || name[n - 1] != ']')
		return 0;
	uint32_t flag;
	switch (name[n - 2]) {
	case 'k': flag = PROFILE_FRAME_KERNEL; break;
	case 'i': flag = PROFILE_FRAME_INLINED; break;
	case 'j': flag = PROFILE_FRAME_JIT; break;
	default: return 0;
	}
	*len = n - 4;
	return flag;
}

/* How many leading frames of stack (frame ends at ends[k]) are the same text as prev. */
static size_t flame_same_prefix(const struct flame_folded_ctx *c, const char *stack,
				size_t len, const size_t *ends, size_t nframes)
{
	if (!c->have_prev)
		return 0;
	size_t l = 0, m = len < c->prev_len ? len : c->prev_len;
	while (l < m && stack[l] == c->prev[l])
		l++;
	/* Compare as if both ended with ';': a frame is the same when its ';' matched too. */
	if ((l == len || stack[l] == ';') && (l == c->prev_len || c->prev[l] == ';'))
		l++;
	size_t k = 0;
	while (k < nframes && ends[k] + 1 <= l)
		k++;
	return k;
}

/* Split stack[0..len) at ';' into c->frames (empty frames are skipped); ends[k] is where
 * frame k's text ends. Returns the number of frames. */
static size_t flame_split(struct flame_folded_ctx *c, char *stack, size_t len, size_t **ends,
			  size_t *ends_cap)
{
	size_t n = 0, start = 0;
	while (start <= len) {
		char *semi = memchr(stack + start, ';', len - start);
		size_t stop = semi ? (size_t)(semi - stack) : len;
		if (stop > start) {
			cs_grow(&c->frames, &c->cap, n + 1, sizeof(*c->frames));
			cs_grow(ends, ends_cap, n + 1, sizeof(**ends));
			c->frames[n] = (struct fold_frame){ .name = stack + start };
			(*ends)[n++] = stop;
		}
		start = stop + 1;
	}
	return n;
}

int flame_folded_read(FILE *f, const char *name, const struct flame_folded_ops *ops, void *arg,
		      struct flame_folded_stats *st)
{
	struct flame_folded_ctx c = { 0 };
	char *line = NULL;
	size_t line_cap = 0, *ends = NULL, ends_cap = 0;
	ssize_t got;
	int err = 0;

	while ((got = getline(&line, &line_cap, f)) >= 0) {
		size_t len = got;
		double counts[2];
		int ncounts = 0;
		uint64_t hash[2];

		st->lines++;
		/* Folded text never holds a NUL byte; a file that does is binary, and random bytes
		 * can end a line in " 123" by chance, which must not pass for a stack. */
		if (memchr(line, 0, len)) {
			err = cs_error(EINVAL, "%s is binary (a NUL byte on line %llu), not folded "
				       "stacks or a csampler data file; give `csampler record`'s "
				       "output or folded text", name, (unsigned long long)st->lines);
			break;
		}
		while (len > 0 && flame_is_space(line[len - 1]))
			len--;
		if (len == 0)
			continue;
		if (!flame_take_count(line, &len, &counts[1])) {
			if (!st->ignored++)
				st->first_ignored = st->lines;
			continue;
		}
		ncounts = 1;
		if (flame_take_count(line, &len, &counts[0])) {
			ncounts = 2; /* difffolded.pl: BEFORE AFTER */
			st->two_counts++;
		} else {
			counts[0] = counts[1];
		}
		st->stacks++;

		flame_hash128(line, len, hash);
		if (ops->seen) {
			err = ops->seen(arg, hash, counts, ncounts);
			if (!err)
				continue;
			if (err != -ENOENT)
				break;
		}
		/* Split into frames; keep the raw text for the next line's prefix test. */
		char *stack = line;
		size_t nframes = flame_split(&c, stack, len, &ends, &ends_cap);
		size_t same = flame_same_prefix(&c, stack, len, ends, nframes);
		cs_grow(&c.prev, &c.prev_cap, len + 1, 1);
		memcpy(c.prev, stack, len);
		c.prev_len = len;
		c.have_prev = true;
		for (size_t k = 0; k < nframes; k++) {
			size_t nlen = ends[k] - (c.frames[k].name - stack);
			c.frames[k].flags = flame_take_annotation(c.frames[k].name, &nlen);
			((char *)c.frames[k].name)[nlen] = 0;
		}
		err = ops->stack(arg, c.frames, nframes, same, hash, counts, ncounts);
		if (err)
			break;
	}
	if (!err && ferror(f))
		err = cs_error(errno ? errno : EIO, "read %s: %s; check the file", name,
			       strerror(errno ? errno : EIO));
	free(line);
	free(ends);
	free(c.frames);
	free(c.prev);
	return err;
}
