# profiler/build.mk: bin/csampler and its unit-test runner bin/csampler-unit, from explicit
# source lists per folder (no wildcard: a file in a folder is part of csampler only when it is
# named here, so the in-target library under inject/ can never be linked into the CLI).
# Each folder's *_test.c files hold its unit tests (see base/unit.h). Sources include each
# other as "folder/file.h" (-Iprofiler); `make check-layout` enforces which folder may include
# which (scripts/check-layout.sh, the README's design section).
# flamegraph/build.mk adds its objects to CSAMPLER_EXTRA_OBJS.
PROFILER_CMD      := opts opts_filter commands cmd_env cmd_export cmd_flame cmd_folded cmd_info cmd_merge cmd_record cmd_report cmd_compare cmd_dump cmd_top
PROFILER_BASE     := cs json hash gpu_vendor pywalk
PROFILER_FORMAT   := datafile records merge
PROFILER_SAMPLER  := sampler sampler_perf sampler_ptrace sampler_bpf sampler_bpf_tables sampler_bpf_python proc idle snapshot
PROFILER_UNWIND   := elfcache unwind symbols ksymcache python jit offcpu cfitable cfitable_cache
PROFILER_RECORD   := record stackmemo prewarm gpu_channel gpu_setup gpu_attach output status dump dump_out live
PROFILER_ANALYSIS := profile filter stacks fold_frame fold fold_gpu report report_common report_text report_json gpu gpu_idle compare steps report_steps
PROFILER_EXPORT   := export chrome speedscope pprof
PROFILER_SRCS := profiler/main.c \
	$(PROFILER_CMD:%=profiler/cmd/%.c) $(PROFILER_BASE:%=profiler/base/%.c) \
	$(PROFILER_FORMAT:%=profiler/format/%.c) $(PROFILER_SAMPLER:%=profiler/sampler/%.c) \
	$(PROFILER_UNWIND:%=profiler/unwind/%.c) $(PROFILER_RECORD:%=profiler/record/%.c) \
	$(PROFILER_ANALYSIS:%=profiler/analysis/%.c) $(PROFILER_EXPORT:%=profiler/export/%.c)
PROFILER_TESTS := cmd/opts base/cs base/json base/search base/hash base/gpu_vendor base/pywalk format/datafile format/records unwind/unwind unwind/symbols unwind/ksymcache sampler/sampler_ptrace \
	analysis/profile_builder analysis/fixtures analysis/filter analysis/stacks analysis/fold_gpu analysis/report \
	analysis/gpu analysis/gpu_idle analysis/steps record/gpu_channel record/stackmemo record/output record/prewarm record/status record/dump record/live unwind/python unwind/jit analysis/compare \
	export/pprof unwind/offcpu unwind/cfitable sampler/sampler sampler/sampler_bpf_python
PROFILER_OBJS      := $(PROFILER_SRCS:%.c=$(BUILD)/%.o)
PROFILER_TEST_OBJS := $(PROFILER_TESTS:%=$(BUILD)/profiler/%_test.o)
PROFILER_LIBS      := -ldw -lelf -lz -lzstd -lstdc++ -lm
CSAMPLER_EXTRA_OBJS ?=

$(BUILD)/profiler/%.o $(BUILD)/flamegraph/%.o $(BUILD)/tests/%.o: CPPFLAGS += -Iprofiler

# $ORIGIN/../lib: libraries bundled beside a copied build (scripts/bundle-libs.sh) come first.
bin/csampler: $(PROFILER_OBJS) $(CSAMPLER_EXTRA_OBJS)
	@mkdir -p bin
	$(CC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../lib' -o $@ $^ $(PROFILER_LIBS)

# The unit runner links everything but main.o, plus unit_main.o from tests; the same run path,
# so that tests/run.sh (make test-gpu) runs it on a GPU node that has the bundled libraries only.
bin/csampler-unit: $(filter-out $(BUILD)/profiler/main.o,$(PROFILER_OBJS)) $(CSAMPLER_EXTRA_OBJS) $(PROFILER_TEST_OBJS) $(BUILD)/tests/unit_main.o
	@mkdir -p bin
	$(CC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../lib' -o $@ $^ $(PROFILER_LIBS)

PROGRAMS      += bin/csampler
TEST_PROGRAMS += bin/csampler-unit

# Preprocessor flags of single sources: SRC_CPPFLAGS_<source>, given to its object here and to
# its objects in the fuzz builds (tests/fuzz/build.mk), so that both compile the same code.
# record --gpu and env look for libcupti.so.13 in the toolkit csampler was built with too.
ifneq ($(strip $(CUDA_HOME)),)
SRC_CPPFLAGS_profiler/record/gpu_setup.c := -DCSAMPLER_CUDA_HOME='"$(CUDA_HOME)"'
$(BUILD)/profiler/record/gpu_setup.o: CPPFLAGS += $(SRC_CPPFLAGS_profiler/record/gpu_setup.c)
endif

# record --mode bpf: the BPF program (sampler/sampler_bpf.bpf.c) is compiled with clang -target
# bpf against this machine's kernel BTF (CO-RE: it relocates on other kernels) and embedded as a
# bpftool skeleton. Without clang, bpftool, libbpf's headers or /sys/kernel/btf/vmlinux the
# backend is left out and `--mode bpf` names what was missing (CSAMPLER_BPF_MISSING).
BPF_CLANG   ?= $(shell command -v clang 2>/dev/null)
BPFTOOL     ?= $(shell command -v bpftool 2>/dev/null || ls /usr/sbin/bpftool 2>/dev/null)
BPF_VMLINUX ?= /sys/kernel/btf/vmlinux
BPF_MISSING := $(if $(strip $(BPF_CLANG)),,clang) $(if $(strip $(BPFTOOL)),,bpftool) \
	$(if $(wildcard /usr/include/bpf/libbpf.h),,libbpf-dev) $(if $(wildcard $(BPF_VMLINUX)),,$(BPF_VMLINUX))
BPF_MISSING := $(strip $(BPF_MISSING))
ifeq ($(BPF_MISSING),)
$(BUILD)/bpf/vmlinux.h:
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file $(BPF_VMLINUX) format c > $@.tmp && mv $@.tmp $@
$(BUILD)/bpf/sampler_bpf.bpf.o: profiler/sampler/sampler_bpf.bpf.c profiler/sampler/sampler_bpf_shared.h $(BUILD)/bpf/vmlinux.h
	$(BPF_CLANG) -O2 -g -target bpf -D__TARGET_ARCH_x86 -I$(BUILD)/bpf -Iprofiler -c -o $@ $<
$(BUILD)/bpf/sampler_bpf.skel.h: $(BUILD)/bpf/sampler_bpf.bpf.o
	$(BPFTOOL) gen skeleton $< name sampler_bpf > $@.tmp && mv $@.tmp $@
BPF_SKELETON_USERS := profiler/sampler/sampler_bpf.c
$(BUILD)/profiler/sampler/sampler_bpf.o: $(BUILD)/bpf/sampler_bpf.skel.h
SRC_CPPFLAGS_profiler/sampler/sampler_bpf.c := -DCSAMPLER_HAVE_BPF -I$(BUILD)/bpf
SRC_CPPFLAGS_profiler/sampler/sampler_bpf_tables.c := -DCSAMPLER_HAVE_BPF -I$(BUILD)/bpf
SRC_CPPFLAGS_profiler/sampler/sampler_bpf_python.c := -DCSAMPLER_HAVE_BPF -I$(BUILD)/bpf
PROFILER_LIBS += -lbpf
else
SRC_CPPFLAGS_profiler/sampler/sampler_bpf.c := -DCSAMPLER_BPF_MISSING='"$(BPF_MISSING)"'
endif
$(BUILD)/profiler/sampler/sampler_bpf.o: CPPFLAGS += $(SRC_CPPFLAGS_profiler/sampler/sampler_bpf.c)
$(BUILD)/profiler/sampler/sampler_bpf_tables.o: CPPFLAGS += $(SRC_CPPFLAGS_profiler/sampler/sampler_bpf_tables.c)
$(BUILD)/profiler/sampler/sampler_bpf_python.o: CPPFLAGS += $(SRC_CPPFLAGS_profiler/sampler/sampler_bpf_python.c)
