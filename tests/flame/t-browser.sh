#!/usr/bin/env bash
# The flame graph in a real browser: Debian's headless Chromium driven by playwright-core
# (npm, under tests/node_modules, installed here from tests/package-lock.json when missing).
# browser.js opens the SVG from a file, hovers a frame and checks the details line and the
# tooltip, clicks to zoom and checks the widths, reloads (state kept in the URL), resets,
# searches (button, Ctrl-F, case toggle, stepping with n/N) and checks Matched %, and saves a
# screenshot to tests/out/flame-browser.png. Also a differential graph's tooltip and colours,
# --negate's swapped colours, and GPU graphs of a file recorded from bin/tests/gpu-writer
# (flame --gpu, flame --both): GPU frames coloured apart from CPU frames, their tooltip (time,
# calls, share of the total and of the GPU root), zoom and search on them; screenshot
# tests/out/flame-gpu.png. Python frames (py-spy's notation) in orange, apart from native ones.
# A graph made tall by one rare deep stack opens on its root and widest frames.
source "$CSAMPLER_ROOT/tests/lib.sh"
DATA=$CSAMPLER_ROOT/tests/flame/data
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

if [ -z "$CHROMIUM" ]; then
	skip "browser: Debian's chromium is not installed (scripts/install-deps.sh --test installs it)"
	finish
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	skip "browser: node and npm are needed to run playwright-core"
	finish
fi
if [ ! -f "$CSAMPLER_ROOT/tests/node_modules/playwright-core/package.json" ]; then
	if ! (cd "$CSAMPLER_ROOT/tests" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
		>npm.log 2>&1; then
		skip "browser: npm could not install playwright-core: $(tail -n 2 npm.log | tr '\n' ' ')"
		finish
	fi
fi

cat >browser.folded <<'IN'
main;foo;bar 30
main;foo;baz 20
main;qux;bar 10
main;<script>alert(1)</script>&amp 15
main;std::vector<int>::push_back(int&&) 5
main;memcpy 10
main;sys_read_[k] 5
main;inl_fn_[i] 5
IN
"$CSAMPLER" -q flame browser.folded -o flame.svg && "$CSAMPLER" flame --dump-layout browser.folded >flame.layout &&
	"$CSAMPLER" -q diff "$DATA/before.folded" "$DATA/after.folded" -o diff.svg &&
	"$CSAMPLER" -q diff --negate "$DATA/before.folded" "$DATA/after.folded" -o neg.svg || {
	fail "browser: csampler could not draw the test graphs"
	finish
}
# GPU frames: gpu-writer plays the in-target library (no GPU needed).
W=$TPROG/gpu-writer
if ! CSAMPLER_GPU_LIB=$W CSAMPLER_CUPTI_PATH=$W "$CSAMPLER" record --gpu on -o gpu.data -- "$W" flame \
	>gpu.out 2>gpu.err || ! "$CSAMPLER" -q flame --gpu gpu.data -o gpu.svg ||
	! "$CSAMPLER" -q flame --both gpu.data -o both.svg; then
	fail "browser: could not record or draw the CPU and GPU graph: $(tail -n 2 gpu.err | tr '\n' ' ')"
	finish
fi
# Python frames among native ones: five distinct Python frames (<module>, main, train_step,
# load, step).
cat >python.folded <<'IN'
python3;_start;Py_RunMain;<module> (train.py:30);main (train.py:25);train_step (train.py:12);PyObject_Call;conv2d 40
python3;_start;Py_RunMain;<module> (train.py:30);main (train.py:25);load (data.py:8);read_[k] 10
python3;_start;Py_RunMain;<module> (train.py:30);main (train.py:25);step (opt.py:14);malloc 10
IN
"$CSAMPLER" -q flame python.folded -o python.svg || { fail "browser: csampler could not draw python.folded"; finish; }
# One rare sample 276 frames deep (Python's start-up imports) under wide, shallow ones: a graph
# 4,523 px tall that must open on its root and widest frames.
{
	echo "python3;_start;Py_RunMain;main;train;step 4000"
	echo "python3;_start;Py_RunMain;main;train;load 3000"
	echo "python3;_start;Py_RunMain;main;eval 2000"
	printf 'python3;_start;Py_RunMain'; for i in $(seq 273); do printf ';import_%d' "$i"; done; echo " 1"
} >deep.folded
"$CSAMPLER" -q flame deep.folded -o deep.svg && "$CSAMPLER" -q flame --inverted deep.folded -o deep-inv.svg ||
	{ fail "browser: csampler could not draw deep.folded"; finish; }
mkdir -p "$CSAMPLER_ROOT/tests/out"
shot=$CSAMPLER_ROOT/tests/out/flame-browser.png
gpushot=$CSAMPLER_ROOT/tests/out/flame-gpu.png
rm -f "$shot" "$gpushot"
CHROMIUM=$CHROMIUM timeout 240 node "$CSAMPLER_ROOT/tests/flame/browser.js" test flame.svg flame.layout \
	diff.svg "$shot" neg.svg gpu.svg both.svg "$gpushot" python.svg deep.svg deep-inv.svg \
	>browser.out 2>browser.err
rc=$?
cat browser.out
# A failed check has printed its FAIL line; anything else that stopped node is one more.
if [ $rc != 0 ] && ! grep -q '^FAIL:' browser.out; then
	fail "browser: browser.js exited with status $rc: $(tail -n 3 browser.err | tr '\n' ' ')"
fi
finish
