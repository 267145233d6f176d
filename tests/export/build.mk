# tests/export/build.mk: script-counts, the scripted workload's expected counts for t-chrome.sh
# (only with the CUPTI headers, like tests/cupti/build.mk whose flags it uses).
ifeq ($(HAVE_CUPTI),1)
bin/tests/export/script-counts: tests/export/script-counts.c tests/cupti/script.h
	@mkdir -p $(dir $@)
	$(CC) $(CUPTI_TEST_CFLAGS) -o $@ $<

TEST_PROGRAMS += bin/tests/export/script-counts
endif
