# tests/unwind/build.mk: bin/tests/unwind/fastunwind-test, profiler/inject/fastunwind.c checked
# against libunwind frame by frame (t-fastunwind.sh) and benchmarked (scripts/bench-unwind.sh).
# fu-frames.c is built twice: without frame pointers (the -O2 default) and with them.
FU_TEST_DIR    := bin/tests/unwind
FU_TEST_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -pthread \
                  -Iprofiler/inject -Itests/unwind
FU_TEST_DEPS   := tests/unwind/fu-test.h profiler/inject/fastunwind.h

$(FU_TEST_DIR)/libfu-lib.so: tests/unwind/fu-lib.c $(FU_TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(FU_TEST_CFLAGS) -fPIC -shared -o $@ $<

$(FU_TEST_DIR)/libfu-dl.so: tests/unwind/fu-lib.c $(FU_TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(FU_TEST_CFLAGS) -DFU_DL -fPIC -shared -o $@ $<

$(FU_TEST_DIR)/fu-nofp.o: tests/unwind/fu-frames.c $(FU_TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(FU_TEST_CFLAGS) -fomit-frame-pointer -DFU_SUFFIX=nofp -c -o $@ $<

$(FU_TEST_DIR)/fu-fp.o: tests/unwind/fu-frames.c $(FU_TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(FU_TEST_CFLAGS) -fno-omit-frame-pointer -DFU_SUFFIX=fp -c -o $@ $<

# -rdynamic: the libraries call back into fu_next, and the checks name frames with dladdr.
$(FU_TEST_DIR)/fastunwind-test: tests/unwind/fastunwind-test.c profiler/inject/fastunwind.c \
    $(FU_TEST_DIR)/fu-nofp.o $(FU_TEST_DIR)/fu-fp.o $(FU_TEST_DIR)/libfu-lib.so $(FU_TEST_DEPS)
	$(CC) $(FU_TEST_CFLAGS) -fomit-frame-pointer -rdynamic -o $@ tests/unwind/fastunwind-test.c \
	  profiler/inject/fastunwind.c $(FU_TEST_DIR)/fu-nofp.o $(FU_TEST_DIR)/fu-fp.o \
	  -L$(FU_TEST_DIR) -lfu-lib -Wl,-rpath,'$$ORIGIN' -lunwind -ldl

TEST_PROGRAMS += $(FU_TEST_DIR)/fastunwind-test $(FU_TEST_DIR)/libfu-dl.so
