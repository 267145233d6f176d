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

.PHONY: all deps test check demo install clean profile profile-micro profile-clean test-gpu
all: deps programs

# Runs on every make: a quick dpkg query when everything is present.
deps:
	@scripts/install-deps.sh

PROGRAMS :=
TEST_PROGRAMS :=
include profiler/build.mk
-include flamegraph/build.mk
-include target/build.mk
include tests/build.mk
include tests/fuzz/build.mk

programs: $(PROGRAMS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CPPFLAGS) -c -o $@ $<

test: deps
	@scripts/install-deps.sh --test
	@$(MAKE) --no-print-directory programs test-programs
	@tests/run.sh

check: test

demo: deps programs
	@scripts/demo.sh

install: programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	@if [ -d lib ] && ls lib/*.so >/dev/null 2>&1; then install -d $(DESTDIR)$(PREFIX)/lib/csampler && install -m 755 lib/*.so $(DESTDIR)$(PREFIX)/lib/csampler/; fi

clean:
	rm -rf $(BUILD) bin lib tests/out

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
