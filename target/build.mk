# target/build.mk: bin/splat-train (the Gaussian-splatting trainer csampler ships as a workload),
# its test program bin/tests/splat-check, and the profiling targets.
#
# CUDA: when $(NVCC) is set and kernels/build.mk exists, that fragment is included and must
# define
#   SPLAT_CUDA_OBJS  objects implementing splat_cuda_backend and splat_cuda_probe (backend.h)
#   SPLAT_CUDA_LIBS  what linking them needs (e.g. -L/usr/local/cuda/lib64 -lcudart_static
#                    -ldl -lrt -lstdc++), with the runtime linked statically so the binary starts
#                    on a machine without a driver
# and its own rules building SPLAT_CUDA_OBJS. The host objects are then compiled with
# -DSPLAT_HAVE_CUDA. Otherwise splat-train is CPU-only and `--backend cuda` is an error.
SPLAT_SRCS       := $(wildcard target/*.c)
SPLAT_OBJS       := $(SPLAT_SRCS:%.c=$(BUILD)/%.o)
SPLAT_LIB_OBJS   := $(filter-out $(BUILD)/target/main.o,$(SPLAT_OBJS))
SPLAT_LIBS       := -lz -lm
SPLAT_CUDA_OBJS  :=
SPLAT_CUDA_LIBS  :=
SPLAT_WITH_CUDA  := 0
# The static CUDA runtime under the toolkit root the top Makefile found (CUDA_HOME); toolkits
# keep it in lib64, lib or targets/x86_64-linux/lib.
SPLAT_CUDA_LIBDIR := $(if $(strip $(NVCC)),$(patsubst %/,%,$(dir $(firstword $(wildcard \
                       $(addsuffix /libcudart_static.a,$(CUDA_HOME)/lib64 $(CUDA_HOME)/lib \
                       $(CUDA_HOME)/targets/x86_64-linux/lib))))))
ifneq ($(strip $(NVCC)),)
ifeq ($(SPLAT_CUDA_LIBDIR),)
$(warning splat-train: nvcc is $(NVCC) but no libcudart_static.a under CUDA_HOME='$(CUDA_HOME)'; \
  building the CPU backend only (set CUDA_HOME=/path/to/toolkit to enable CUDA))
else ifneq ($(wildcard kernels/build.mk),)
include kernels/build.mk
SPLAT_WITH_CUDA  := 1
$(SPLAT_OBJS) $(BUILD)/tests/splat/check.o: CPPFLAGS += -DSPLAT_HAVE_CUDA
endif
endif

# Rebuild the host objects when CUDA support comes or goes (the .d files cannot see that).
SPLAT_STAMP := $(BUILD)/target/config.stamp
$(shell mkdir -p $(BUILD)/target && { [ "$$(cat $(SPLAT_STAMP) 2>/dev/null)" = "cuda=$(SPLAT_WITH_CUDA)" ] || echo "cuda=$(SPLAT_WITH_CUDA)" > $(SPLAT_STAMP); })
$(SPLAT_OBJS) $(BUILD)/tests/splat/check.o: $(SPLAT_STAMP)

bin/splat-train: $(SPLAT_OBJS) $(SPLAT_CUDA_OBJS)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(SPLAT_CUDA_LIBS) $(SPLAT_LIBS)

# Gradient, reference and teacher checks (tests/splat/check.c) over the trainer's own modules.
bin/tests/splat-check: $(BUILD)/tests/splat/check.o $(SPLAT_LIB_OBJS) $(SPLAT_CUDA_OBJS)
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS) -o $@ $^ $(SPLAT_CUDA_LIBS) $(SPLAT_LIBS)

PROGRAMS      += bin/splat-train
TEST_PROGRAMS += bin/tests/splat-check

# Profiling (csampler record / report / flame):
#   make profile-micro                     profile a micro run, write flamegraph.svg
#   make profile PROFILE_ARGS="--preset m8" profile any run, named and timestamped in profiles/
#   make profile-clean                     remove what these two wrote
PROFILE_ARGS ?= --preset micro
PROFILE_DATA := profiles/micro.data

profile: bin/csampler bin/splat-train
	scripts/profile-training.sh $(PROFILE_ARGS)

profile-micro: bin/csampler bin/splat-train
	@mkdir -p profiles
	bin/csampler record -o $(PROFILE_DATA) -- bin/splat-train --preset micro
	bin/csampler report -i $(PROFILE_DATA)
	bin/csampler flame -i $(PROFILE_DATA) -o flamegraph.svg
	@echo "wrote flamegraph.svg ($(PROFILE_DATA) holds the samples)"

profile-clean:
	rm -f flamegraph.svg $(PROFILE_DATA) profiles/splat-*.svg profiles/splat-*.data
	@rmdir profiles 2>/dev/null || true

# The CUDA checks: CUDA against the double reference, then a micro run on CUDA; both print
# SKIPPED with the reason when this build or machine has no usable CUDA device.
test-gpu: programs test-programs
	@TEST_FILTER=splat/t-gpu tests/run.sh
