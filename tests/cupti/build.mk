# tests/cupti/build.mk: the stand-in libcupti.so.13 (two builds: the real version tag and another
# one) and the driver that plays a CUDA program against lib/libcsampler-cupti.so. Only with the
# CUDA toolkit's CUPTI headers (profiler/inject/build.mk sets HAVE_CUPTI).
ifeq ($(HAVE_CUPTI),1)
CUPTI_TEST_DIR    := bin/tests/cupti
CUPTI_TEST_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -pthread \
                     -Iprofiler -Itests/cupti -isystem $(CUDA_HOME)/include

$(CUPTI_TEST_DIR)/standin/libcupti.so.13: tests/cupti/standin.c tests/cupti/standin.h tests/cupti/standin.map
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -fPIC -fvisibility=hidden -shared -Wl,-soname,libcupti.so.13 \
	  -Wl,--version-script=tests/cupti/standin.map -o $@ $<

$(CUPTI_TEST_DIR)/other-tag/libcupti.so.13: tests/cupti/standin.c tests/cupti/standin.h tests/cupti/standin-other.map
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -fPIC -fvisibility=hidden -shared -Wl,-soname,libcupti.so.13 \
	  -Wl,--version-script=tests/cupti/standin-other.map -o $@ $<

# -rdynamic: the checker names the recorded return addresses with dladdr.
$(CUPTI_TEST_DIR)/driver: tests/cupti/driver.c tests/cupti/script.h tests/cupti/standin.h profiler/inject/protocol.h
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -rdynamic -o $@ $< -ldl

# The launch path of a Python script (ctypes): t-python-launch.sh.
$(CUPTI_TEST_DIR)/libpylaunch.so: tests/cupti/pylaunch.c tests/cupti/standin.h
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -fPIC -fvisibility=hidden -shared -o $@ $< -ldl

# A running CUDA program that record -p --gpu on attaches to (t-gpu-attach.sh), a library whose
# loading ends the process, and a statically linked program (skipped where there is no libc.a).
$(CUPTI_TEST_DIR)/attach-target: tests/cupti/attach-target.c tests/cupti/standin.h
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -o $@ $< -ldl

$(CUPTI_TEST_DIR)/attach-exit.so: tests/cupti/attach-exit.c profiler/inject/attach.h
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -fPIC -fvisibility=hidden -shared -o $@ $<

$(CUPTI_TEST_DIR)/static-loop: tests/cupti/static-loop.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -static -o $@ $< || echo "no static libc: t-gpu-attach.sh skips its static case"

# A program stuck with kernels in flight, for csampler dump (tests/live/t-dump.sh); -rdynamic
# so that its launch functions are named without debug info too.
$(CUPTI_TEST_DIR)/inflight: tests/cupti/inflight.c tests/cupti/standin.h
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -rdynamic -o $@ $< -ldl

TEST_PROGRAMS += $(CUPTI_TEST_DIR)/inflight
TEST_PROGRAMS += $(CUPTI_TEST_DIR)/standin/libcupti.so.13 $(CUPTI_TEST_DIR)/other-tag/libcupti.so.13 \
                 $(CUPTI_TEST_DIR)/driver $(CUPTI_TEST_DIR)/libpylaunch.so $(CUPTI_TEST_DIR)/attach-target \
                 $(CUPTI_TEST_DIR)/attach-exit.so $(CUPTI_TEST_DIR)/static-loop
endif
