# tests/build.mk: the unit runner's main and the test programs the end-to-end tests profile.
# tests/progs/NAME.c (or .cc) becomes bin/tests/NAME. A program that needs its own flags sets
# them with a target-specific variable, e.g.  bin/tests/deep: PROG_FLAGS = -O2 -fomit-frame-pointer
PROG_FLAGS ?= -O2 -g
TEST_PROG_C   := $(patsubst tests/progs/%.c,bin/tests/%,$(wildcard tests/progs/*.c))
TEST_PROG_CXX := $(patsubst tests/progs/%.cc,bin/tests/%,$(wildcard tests/progs/*.cc))

bin/tests/%: tests/progs/%.c
	@mkdir -p bin/tests
	$(CC) $(PROG_FLAGS) -Wall -pthread -o $@ $< $(PROG_LIBS)

bin/tests/%: tests/progs/%.cc
	@mkdir -p bin/tests
	$(CXX) $(PROG_FLAGS) -Wall -pthread -o $@ $< $(PROG_LIBS)

-include tests/progs/flags.mk

# Fragments that add to TEST_PROGRAMS come before the rule below: make expands a rule's
# prerequisites when it reads the rule, so a later addition would never be built.
-include tests/cupti/build.mk
-include tests/export/build.mk
-include tests/unwind/build.mk

TEST_PROGRAMS += $(TEST_PROG_C) $(TEST_PROG_CXX)
test-programs: $(TEST_PROGRAMS)
.PHONY: test-programs

# Programs of the record tests (tests/record/) that need libraries.
bin/tests/deny-perf: PROG_LIBS = -lseccomp
