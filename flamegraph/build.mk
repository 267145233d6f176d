# flamegraph/build.mk: csampler's flamegraph engine (flame and diff), linked into bin/csampler
# and bin/csampler-unit. flame.js and flame.css are turned into C strings at build time by
# flamegraph/embed.c, into $(BUILD)/flamegraph/flame_assets.c.
FLAME_SRCS   := $(filter-out flamegraph/embed.c flamegraph/%_test.c,$(wildcard flamegraph/*.c))
FLAME_OBJS   := $(FLAME_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/flamegraph/flame_assets.o
FLAME_TEST_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard flamegraph/*_test.c))
FLAME_ASSETS := flamegraph/flame.js flamegraph/flame.css

CSAMPLER_EXTRA_OBJS += $(FLAME_OBJS)
PROFILER_TEST_OBJS  += $(FLAME_TEST_OBJS)

# profiler/build.mk reads these lists in its rules before this file is included, so the
# objects are also named here as prerequisites ($^ gathers the prerequisites of all rules).
bin/csampler: $(FLAME_OBJS)
bin/csampler-unit: $(FLAME_OBJS) $(FLAME_TEST_OBJS)

$(BUILD)/flamegraph/embed: flamegraph/embed.c
	@mkdir -p $(dir $@)
	$(CC) $(OPT) $(WARN) -std=gnu11 -o $@ $<

$(BUILD)/flamegraph/flame_assets.c: $(FLAME_ASSETS) $(BUILD)/flamegraph/embed
	@mkdir -p $(dir $@)
	$(BUILD)/flamegraph/embed flame_js flamegraph/flame.js flame_css flamegraph/flame.css > $@.tmp
	mv $@.tmp $@

$(BUILD)/flamegraph/flame_assets.o: $(BUILD)/flamegraph/flame_assets.c
	$(CC) $(CFLAGS) $(CPPFLAGS) -c -o $@ $<
