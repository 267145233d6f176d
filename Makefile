# csampler: top-level build. Each area keeps its own fragment (profiler/build.mk,
# flamegraph/build.mk, target/build.mk, tests/build.mk); this file holds what they share.
#   make            install missing Debian packages, build bin/ and lib/
#   make test       build and run every test; last line "N passed, N failed[, N skipped]"
#   make demo       profile a micro training run, print the report, write flame.svg
#   make install    install programs and man pages under $(PREFIX)
#   make fuzz       build the libFuzzer harnesses (clang) and run each for FUZZ_SECONDS (tests/fuzz/)

CC       ?= gcc
ifeq ($(origin NVCC),undefined)
NVCC     := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
endif
# The toolkit's root, asked of nvcc itself: nvcc on PATH may be a wrapper script elsewhere
# (/usr/local/bin/nvcc exec'ing /usr/local/cuda-13.0/bin/nvcc), so its own path says nothing.
ifeq ($(origin CUDA_HOME),undefined)
CUDA_HOME := $(if $(strip $(NVCC)),$(shell $(NVCC) --dryrun -c -x cu /dev/null -o /dev/null 2>&1 | \
               sed -n 's/^\#\$$ TOP=//p' | head -n1))
endif
PREFIX   ?= /usr/local
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wstrict-prototypes
CFLAGS   += $(OPT) $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP -pthread
LDFLAGS  += -pthread
BUILD    := build

.PHONY: all deps test check demo install clean profile profile-micro profile-clean test-gpu \
	check-layout programs bundle
# The dependency step must finish before anything compiles (its packages bring headers such as
# xxhash.h), whatever -j says: a prerequisite list `all: deps programs` lets -j2 start both at
# once. So each entry point runs deps, then builds in a sub-make that inherits the job server.
# tests/build/t-parallel-deps.sh checks the order.
all: deps
	@$(MAKE) --no-print-directory programs

# Runs on every make: a quick dpkg query when everything is present.
DEPS_SCRIPT ?= scripts/install-deps.sh
deps:
	@$(DEPS_SCRIPT)

PROGRAMS :=
TEST_PROGRAMS :=
include profiler/build.mk
-include profiler/inject/build.mk
-include flamegraph/build.mk
-include target/build.mk
include tests/build.mk
include tests/fuzz/build.mk

programs: $(PROGRAMS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CPPFLAGS) -c -o $@ $<

test: deps
	@$(DEPS_SCRIPT) --test
	@$(MAKE) --no-print-directory programs test-programs
	@tests/run.sh

# Copy the non-system shared libraries csampler needs into lib/ (for running bin/ and lib/ on
# another machine, e.g. a GPU node without elfutils).
bundle: all
	@scripts/bundle-libs.sh

# The include rules of the README's design section (also a test in `make test`). The in-target
# library is built first where the toolkit is, so that its imports are checked too.
check-layout: $(if $(HAVE_CUPTI),lib/libcsampler-cupti.so)
	@scripts/check-layout.sh

check: test

demo: deps
	@$(MAKE) --no-print-directory programs
	@scripts/demo.sh

install: deps
	@$(MAKE) --no-print-directory programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	@if [ -d lib ] && ls lib/*.so >/dev/null 2>&1; then install -d $(DESTDIR)$(PREFIX)/lib/csampler && install -m 755 lib/*.so $(DESTDIR)$(PREFIX)/lib/csampler/; fi

clean:
	rm -rf $(BUILD) bin lib tests/out

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
