# kernels/build.mk: splat-train's CUDA backend, included by target/build.mk when $(NVCC) is set
# and it found the static CUDA runtime (SPLAT_CUDA_LIBDIR).
# Defines SPLAT_CUDA_OBJS (build/kernels/*.o from kernels/*.cu) and SPLAT_CUDA_LIBS (the CUDA
# runtime linked statically, so splat-train starts and falls back to the CPU on machines
# without a driver; NVTX is header-only, nvtx3 from the toolkit, and needs only -ldl), plus two
# test programs:
#   bin/tests/splat-gpu-check      the CUDA backend against the double reference and the CPU
#                                  backend (tests/splat/t-gpu-reference.sh; SKIPPED without a GPU)
#   bin/tests/splat-gpu-math-test  kernels/gpu_math.cuh, compiled for the host, against
#                                  target/splat_math.h (runs everywhere)
# sm_90 machine code for Hopper plus compute_90 PTX that newer GPUs compile at load time.
SPLAT_CUDA_ARCH   ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS         ?= -O3 -lineinfo
SPLAT_NVCCFLAGS   := $(NVCCFLAGS) -std=c++17 $(SPLAT_CUDA_ARCH) -Itarget -DSPLAT_HAVE_CUDA -D_GNU_SOURCE \
                     -Xcompiler -Wall,-Wextra,-Wno-unused-parameter --Werror cross-execution-space-call

SPLAT_CUDA_SRCS := $(wildcard kernels/*.cu)
SPLAT_CUDA_OBJS := $(SPLAT_CUDA_SRCS:%.cu=$(BUILD)/%.o)
SPLAT_CUDA_LIBS := -L$(SPLAT_CUDA_LIBDIR) -lcudart_static -ldl -lrt -lpthread -lstdc++

$(BUILD)/kernels/%.o: kernels/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(SPLAT_NVCCFLAGS) -MMD -MP -MF $(@:.o=.d) -c -o $@ $<

# The host-side test programs are C, built with the common rule for $(BUILD)/%.o.
$(BUILD)/kernels/gpu_check.o $(BUILD)/kernels/gpu_math_test.o: CPPFLAGS += -Itarget -DSPLAT_HAVE_CUDA

bin/tests/splat-gpu-check: $(BUILD)/kernels/gpu_check.o $(SPLAT_LIB_OBJS) $(SPLAT_CUDA_OBJS)
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS) -o $@ $^ $(SPLAT_CUDA_LIBS) $(SPLAT_LIBS)

# Only the reference and its helpers: this test needs no CUDA runtime.
bin/tests/splat-gpu-math-test: $(BUILD)/kernels/gpu_math_test.o $(BUILD)/target/reference.o $(BUILD)/target/util.o
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS) -o $@ $^ -lm

TEST_PROGRAMS += $(if $(wildcard kernels/gpu_check.c),bin/tests/splat-gpu-check) \
                 $(if $(wildcard kernels/gpu_math_test.c),bin/tests/splat-gpu-math-test)
