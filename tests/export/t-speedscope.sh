#!/usr/bin/env bash
# t-speedscope.sh: the Chrome trace in a real viewer. The Perfetto UI cannot be installed here,
# but speedscope (npm, under tests/node_modules, installed from tests/package-lock.json when
# missing) imports Chrome trace-event files: speedscope.js opens its index.html in Debian's
# headless Chromium (playwright-core, as tests/flame/t-browser.sh), loads the export of the
# stand-in workload, and checks the profiles, thread names, nesting and function names.
# Screenshot: tests/out/export-speedscope.png.
source "$CSAMPLER_ROOT/tests/lib.sh"
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

if [ -z "$CHROMIUM" ]; then
	skip "export/speedscope: Debian's chromium is not installed (scripts/install-deps.sh --test installs it)"
	finish
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	skip "export/speedscope: node and npm are needed to run playwright-core and speedscope"
	finish
fi
if [ ! -x "$DRIVER" ] || [ ! -f "$CSAMPLER_ROOT/lib/libcsampler-cupti.so" ]; then
	if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
		skip "export/speedscope: no CUDA toolkit with CUPTI headers, so the stand-in is not built"
	else
		fail "export/speedscope: the stand-in test programs were not built (make test-programs)"
	fi
	finish
fi
if [ ! -f "$CSAMPLER_ROOT/tests/node_modules/playwright-core/package.json" ] ||
   [ ! -f "$CSAMPLER_ROOT/tests/node_modules/speedscope/dist/release/index.html" ]; then
	if ! (cd "$CSAMPLER_ROOT/tests" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
		>npm.log 2>&1; then
		skip "export/speedscope: npm could not install playwright-core and speedscope: $(tail -n 2 npm.log | tr '\n' ' ')"
		finish
	fi
fi

# -F 19999: the workload's main thread runs about 3 ms of CPU, which the default rate sampled
# once or not at all (its sampled functions are checked below); 45-70 samples at this rate.
LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record -F 19999 --gpu on -o g.data -- \
	sh -c 'exec "$0" workload "$CUDA_INJECTION64_PATH"' "$DRIVER" >rec.out 2>rec.err &&
	"$CSAMPLER" -q export --format chrome -i g.data -o trace.json 2>export.err || {
	fail "export/speedscope: recording or exporting failed: $(tail -n 3 rec.err export.err | tr '\n' ' ')"
	finish
}
mkdir -p "$CSAMPLER_ROOT/tests/out"
shot=$CSAMPLER_ROOT/tests/out/export-speedscope.png
rm -f "$shot"
CHROMIUM=$CHROMIUM timeout 240 node "$CSAMPLER_ROOT/tests/export/speedscope.js" trace.json "$shot" \
	>browser.out 2>browser.err
rc=$?
cat browser.out
if [ $rc != 0 ] && ! grep -q '^FAIL:' browser.out; then
	fail "export/speedscope: speedscope.js exited with status $rc: $(tail -n 3 browser.err | tr '\n' ' ')"
fi
finish
