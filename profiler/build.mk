# profiler/build.mk: bin/csampler and its unit-test runner bin/csampler-unit.
# Every profiler/*.c is part of csampler; *_test.c files hold unit tests (see unit.h).
# flamegraph/build.mk adds its objects to CSAMPLER_EXTRA_OBJS.
PROFILER_SRCS      := $(filter-out %_test.c, $(wildcard profiler/*.c))
PROFILER_OBJS      := $(PROFILER_SRCS:%.c=$(BUILD)/%.o)
PROFILER_TEST_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard profiler/*_test.c))
PROFILER_LIBS      := -ldw -lelf -lz -lzstd -llzma -lstdc++
CSAMPLER_EXTRA_OBJS ?=

bin/csampler: $(PROFILER_OBJS) $(CSAMPLER_EXTRA_OBJS)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(PROFILER_LIBS)

# The unit runner links everything but main.o, plus unit_main.o from tests.
bin/csampler-unit: $(filter-out $(BUILD)/profiler/main.o,$(PROFILER_OBJS)) $(CSAMPLER_EXTRA_OBJS) $(PROFILER_TEST_OBJS) $(BUILD)/tests/unit_main.o
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(PROFILER_LIBS)

PROGRAMS      += bin/csampler
TEST_PROGRAMS += bin/csampler-unit

# record --gpu and env look for libcupti.so.13 in the toolkit csampler was built with too.
ifneq ($(strip $(CUDA_HOME)),)
$(BUILD)/profiler/gpu_setup.o: CPPFLAGS += -DCSAMPLER_CUDA_HOME='"$(CUDA_HOME)"'
endif
