/* marks.h: MARK(id) records the address of the point where it stands in the section cs_marks,
 * as {int32 offset from the entry to the point, int32 id}, so a test can find that address in
 * the binary without running it (a PC-relative offset needs no dynamic relocation in a PIE).
 * The nop after the label keeps the address inside the enclosing (possibly inlined) scope. */
#ifndef CSAMPLER_TEST_MARKS_H
#define CSAMPLER_TEST_MARKS_H

#define MARK_STR2(x) #x
#define MARK_STR(x) MARK_STR2(x)
#define MARK(id)                                                                    \
	__asm__ volatile("1: nop\n\t"                                               \
			 ".pushsection cs_marks,\"a\"\n\t"                          \
			 ".balign 4\n\t"                                            \
			 ".long 1b - .\n\t"                                         \
			 ".long " MARK_STR(id) "\n\t"                               \
			 ".popsection")

#endif
