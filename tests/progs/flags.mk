# tests/progs/flags.mk: per-program flags and derived test programs (included by tests/build.mk).
# accuracy and cxx_work are profiled by the end-to-end tests: no frame pointers, so only DWARF CFI
# unwinds them; -g for source lines and inline frames.
bin/tests/accuracy bin/tests/cxx_work: PROG_FLAGS = -O2 -g -fomit-frame-pointer
bin/tests/symbols bin/tests/symbols_cxx: tests/progs/marks.h

# accuracy with work_alpha twice as fast (-DACCURACY_FAST_ALPHA): the "after" of t-compare.sh.
bin/tests/accuracy-fast: tests/progs/accuracy.c
	@mkdir -p bin/tests
	$(CC) -O2 -g -fomit-frame-pointer -DACCURACY_FAST_ALPHA -Wall -pthread -o $@ $<
TEST_PROGRAMS += bin/tests/accuracy-fast

# A stripped copy of accuracy: its frames must show as accuracy-stripped+0xOFFSET.
bin/tests/accuracy-stripped: bin/tests/accuracy
	strip -o $@ $<
TEST_PROGRAMS += bin/tests/accuracy-stripped

# The JIT programs (jit.h): their C callers without frame pointers, so only CFI unwinds them and
# only the JIT-frame recovery gets past the kernels.
bin/tests/jit-kernel bin/tests/jit-fp bin/tests/jit-decoy: PROG_FLAGS = -O2 -g -fomit-frame-pointer
bin/tests/jit-kernel bin/tests/jit-fp bin/tests/jit-decoy: tests/progs/jit.h
bin/tests/jit-decoy: tests/progs/jit-kernel.c
bin/tests/jit-nested: PROG_FLAGS = -O2 -g -fomit-frame-pointer
bin/tests/jit-nested: tests/progs/jit.h tests/progs/jit-kernel.c

# utf8-names: the JIT program of jit-fp.c with names cut mid-character (see the file); its
# source directory is recorded in DWARF under a name that ends with two of the three bytes of
# "加" (printf's octal escapes: make cannot write the bytes itself).
bin/tests/utf8-names: tests/progs/jit-fp.c tests/progs/jit.h
bin/tests/utf8-names: PROG_FLAGS = -O2 -g -fomit-frame-pointer \
	-ffile-prefix-map=tests/progs=$(shell printf 'src-\346\225\260\346\215\256\345\212')
