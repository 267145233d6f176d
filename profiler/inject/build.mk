# profiler/inject/build.mk: lib/libcsampler-cupti.so, the library the CUDA driver loads into the
# profiled program (CUDA_INJECTION64_PATH). Built when the CUDA toolkit (its CUPTI) is present.
# It links libcupti by its real soname (libcupti.so.13, symbols versioned like the real one) and
# libunwind.so.8 (Debian's libunwind.a is not PIC). RUNPATH: $ORIGIN first (a libunwind.so.8
# bundled beside it), then the toolkit's lib dir; LD_LIBRARY_PATH overrides both (tests use it to
# put the stand-in libcupti in place).
INJECT_CUPTI_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so.13 $(CUDA_HOME)/lib/libcupti.so.13 \
                         $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so.13))
ifneq ($(and $(strip $(CUDA_HOME)),$(INJECT_CUPTI_LIBDIR),$(wildcard $(CUDA_HOME)/include/cupti.h)),)
INJECT_LIBDIR  := $(patsubst %/,%,$(dir $(INJECT_CUPTI_LIBDIR)))
INJECT_CFLAGS  := $(OPT) $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP -pthread -fPIC -fvisibility=hidden \
                  -Iprofiler -isystem $(CUDA_HOME)/include
# TLS descriptors: the launch path's thread-local lookup costs a load once glibc placed the
# dlopen'd library's TLS in its static block (falls back to the dynamic lookup otherwise).
ifeq ($(shell uname -m),x86_64)
INJECT_CFLAGS  += -mtls-dialect=gnu2
endif
INJECT_LDFLAGS := -shared -pthread -Wl,-z,defs -Wl,--as-needed -Wl,--enable-new-dtags \
                  -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,$(INJECT_LIBDIR) -L$(INJECT_LIBDIR)
# base/pywalk.c: the CPython frame walk, the recorder's too, compiled again with the library's
# flags (as uftrace compiles its utils into libmcount).
INJECT_OBJS    := $(BUILD)/inject/cupti.o $(BUILD)/inject/fastunwind.o $(BUILD)/inject/base/pywalk.o

$(BUILD)/inject/%.o: profiler/inject/%.c
	@mkdir -p $(dir $@)
	$(CC) $(INJECT_CFLAGS) -c -o $@ $<

$(BUILD)/inject/base/%.o: profiler/base/%.c
	@mkdir -p $(dir $@)
	$(CC) $(INJECT_CFLAGS) -c -o $@ $<

lib/libcsampler-cupti.so: $(INJECT_OBJS)
	@mkdir -p lib
	$(CC) $(INJECT_LDFLAGS) -o $@ $^ -l:libcupti.so.13 -lunwind

PROGRAMS += lib/libcsampler-cupti.so
HAVE_CUPTI := 1
endif
