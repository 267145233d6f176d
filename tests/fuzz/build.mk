# tests/fuzz/build.mk: `make fuzz`: libFuzzer harnesses built with clang
# (-fsanitize=fuzzer,address,undefined) over the same sources as bin/csampler, run one after
# the other for FUZZ_SECONDS each by tests/fuzz/run.sh, which prints each harness's
# executions, crashes, libFuzzer coverage and the line coverage of the reader files.
#   make fuzz                    build, then run every harness for 60 s
#   make fuzz FUZZ_SECONDS=600   longer runs; FUZZ_ONLY=folded runs one harness
#   make fuzz-build              build only: bin/fuzz/fuzz_NAME and bin/fuzz/fuzz_NAME-cov
# A harness is tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput, seeded from
# tests/fuzz/seeds/NAME/; adding one is one line here:  FUZZ_HARNESSES += NAME
# (optionally FUZZ_FILES_NAME := the basenames whose line coverage run.sh reports, and
# FUZZ_SRCS_NAME := sources outside bin/csampler that only this harness links).
# Objects go under build/fuzz/{asan,cov}/, the working corpora and crash artifacts under
# build/fuzz/{corpus,artifacts}/NAME/.
FUZZ_HARNESSES := datafile
FUZZ_HARNESSES += folded
FUZZ_FILES_datafile := datafile.c profile.c stacks.c report.c gpu.c
FUZZ_FILES_folded   := flame_folded.c flame_input.c flame_tree.c flame_layout.c flame_svg.c

FUZZ_SECONDS ?= 60
FUZZ_ONLY    ?= $(FUZZ_HARNESSES)
FUZZ_CC      ?= clang
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_CFLAGS  := -g -O1 -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -pthread -MMD -MP \
		-Iprofiler -Wall -Wno-unused-parameter -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
# ASan + UBSan (every UB report is fatal, so it counts as a crash), with libFuzzer's
# coverage instrumentation; the -cov build measures line coverage of the final corpus.
FUZZ_ASAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_COV     := -fprofile-instr-generate -fcoverage-mapping

# Everything bin/csampler is made of but its main(), plus the generated flame assets.
FUZZ_LIB_SRCS := $(filter-out %/main.c,$(PROFILER_SRCS)) $(FLAME_SRCS) \
		 $(BUILD)/flamegraph/flame_assets.c
FUZZ_ASAN_OBJS := $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/asan/%.o)
FUZZ_COV_OBJS  := $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/cov/%.o)
FUZZ_BINS      := $(foreach h,$(FUZZ_HARNESSES),bin/fuzz/fuzz_$(h) bin/fuzz/fuzz_$(h)-cov)

.PHONY: fuzz fuzz-build fuzz-deps
fuzz-deps:
	@scripts/install-deps.sh --fuzz

# The builds start only once the compiler is installed.
fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)

fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh \
		$(foreach h,$(FUZZ_ONLY),$(h):"$(FUZZ_FILES_$(h))")

# `make test` builds the ASan harnesses where clang has libFuzzer's runtime (libclang-rt-dev,
# which scripts/install-deps.sh --test installs), so that t-regress.sh replays the regression
# inputs under the sanitizers in every run (about a minute of building on 2 CPUs); elsewhere
# harnesses built once are kept current (a stale harness never tests old code), and
# t-regress.sh says SKIPPED without them.
FUZZ_RUNTIME := $(wildcard $(shell $(FUZZ_CC) -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(shell uname -m).a)
test-programs: $(if $(FUZZ_RUNTIME),$(FUZZ_HARNESSES:%=bin/fuzz/fuzz_%),$(wildcard $(FUZZ_HARNESSES:%=bin/fuzz/fuzz_%)))

# (each source with its own flags from profiler/build.mk, SRC_CPPFLAGS_<source>: the bpf
# backend's, the CUDA toolkit's path; and the BPF skeleton first where a source includes it)
$(FUZZ_BUILD)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(SRC_CPPFLAGS_$<) $(FUZZ_ASAN) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/cov/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(SRC_CPPFLAGS_$<) $(FUZZ_COV) -fsanitize=fuzzer-no-link -c -o $@ $<

$(foreach s,$(BPF_SKELETON_USERS),$(FUZZ_BUILD)/asan/$(s:.c=.o) $(FUZZ_BUILD)/cov/$(s:.c=.o)): \
	$(if $(BPF_SKELETON_USERS),$(BUILD)/bpf/sampler_bpf.skel.h)

# $(call fuzz_own_objs,asan|cov,NAME): the objects of FUZZ_SRCS_NAME (a function, so that
# its % is not taken for the pattern rules' stem).
fuzz_own_objs = $(patsubst %.c,$(FUZZ_BUILD)/$1/%.o,$(FUZZ_SRCS_$2))

.SECONDEXPANSION:
bin/fuzz/fuzz_%: $(FUZZ_BUILD)/asan/tests/fuzz/fuzz_%.o $(FUZZ_ASAN_OBJS) \
		 $$(call fuzz_own_objs,asan,$$*)
	@mkdir -p bin/fuzz
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_ASAN) -pthread -o $@ $^ $(PROFILER_LIBS)

bin/fuzz/fuzz_%-cov: $(FUZZ_BUILD)/cov/tests/fuzz/fuzz_%.o $(FUZZ_COV_OBJS) \
		     $$(call fuzz_own_objs,cov,$$*)
	@mkdir -p bin/fuzz
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_COV) -pthread -o $@ $^ $(PROFILER_LIBS)

# Keep the objects between runs (make would delete them as intermediates of the patterns).
.SECONDARY: $(FUZZ_ASAN_OBJS) $(FUZZ_COV_OBJS) \
	    $(foreach h,$(FUZZ_HARNESSES),$(FUZZ_BUILD)/asan/tests/fuzz/fuzz_$(h).o \
	    $(FUZZ_BUILD)/cov/tests/fuzz/fuzz_$(h).o $(call fuzz_own_objs,asan,$(h)) \
	    $(call fuzz_own_objs,cov,$(h)))
