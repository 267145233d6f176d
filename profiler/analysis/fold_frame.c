/* fold_frame.c: the frame helpers that the CPU fold (stacks.c), the GPU fold (fold_gpu.c) and
 * the readers of folded stacks share (fold_frame.h): a profile frame as a fold_frame, a frame
 * in folded text, and the time one CPU sample stands for. */
#include "analysis/fold_frame.h"

#include "base/cs.h"

#include <string.h>

uint64_t fold_cpu_period_ns(const struct profile *p)
{
	const char *rate = profile_header(p, "rate_hz");
	double hz;
	if (!rate || cs_parse_double(rate, &hz) || !(hz > 0) || hz > 1e9)
		return 0;
	return (uint64_t)(1e9 / hz + 0.5);
}

void fold_frame_of(const struct profile *p, uint32_t fid, struct fold_frame *out)
{
	const struct profile_frame *f = profile_frame_at(p, fid);
	const char *module = f->module < p->nmodules ? profile_str(p, p->modules[f->module].path)
						     : "";
	out->name = profile_str(p, f->name);
	if (!*out->name)
		out->name = *module ? cs_basename(module) : "[missing frame]";
	out->module = *module ? cs_basename(module) : NULL;
	out->file = f->file ? profile_str(p, f->file) : NULL;
	out->line = f->line;
	out->flags = f->flags;
}

/* ';' separates frames and a newline ends the record: neither may appear in a name. */
static void fold_put_escaped(struct cs_buf *b, const char *s)
{
	while (*s) {
		size_t run = strcspn(s, ";\n\r");
		cs_buf_put(b, s, run);
		s += run;
		if (!*s)
			break;
		cs_buf_put(b, *s == ';' ? ":" : "?", 1);
		s++;
	}
}

void fold_format_frame(struct cs_buf *b, const struct fold_frame *f)
{
	fold_put_escaped(b, f->name);
	/* A Python frame as py-spy writes it: "function (file.py:line)". */
	if (f->flags & PROFILE_FRAME_PYTHON) {
		if (f->file) {
			cs_buf_put(b, " (", 2);
			fold_put_escaped(b, f->file);
			cs_buf_printf(b, ":%u)", f->line);
		}
		return;
	}
	if (f->flags & PROFILE_FRAME_KERNEL)
		cs_buf_put(b, "_[k]", 4);
	else if (f->flags & PROFILE_FRAME_JIT)
		cs_buf_put(b, "_[j]", 4);
	else if (f->flags & PROFILE_FRAME_INLINED)
		cs_buf_put(b, "_[i]", 4);
}

void fold_format_stack(struct cs_buf *b, const struct fold_frame *frames, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			cs_buf_put(b, ";", 1);
		fold_format_frame(b, &frames[i]);
	}
}
