#!/usr/bin/env bash
# t-cli.sh: splat-train's command line and outputs. Bad input (unknown preset or flag, a value
# out of range or not a number, an unwritable output, --backend cuda without CUDA) gets one
# clear line on stderr and a non-zero exit, before any training; --save writes a standard 3DGS
# .ply, --save-images PNGs of the test renders and ground truth; --log-interval 0 is quiet.
source "$CSAMPLER_ROOT/tests/lib.sh"
TRAIN=$CSAMPLER_ROOT/bin/splat-train

# bad NAME PATTERN ARGS...: exit non-zero, exactly one stderr line, matching PATTERN, no stdout.
bad() {
	local name=$1 pattern=$2; shift 2
	local rc lines
	timeout 20 "$TRAIN" "$@" >out.txt 2>err.txt
	rc=$?
	lines=$(wc -l <err.txt)
	if [ "$rc" = 0 ] || [ "$rc" -ge 124 ]; then
		fail "splat/cli-$name: exit status $rc for '$*'"
	elif [ "$lines" != 1 ] || ! grep -q -- "$pattern" err.txt || [ -s out.txt ]; then
		fail "splat/cli-$name: expected one line matching '$pattern', got $lines: $(head -c 300 err.txt out.txt | tr '\n' ' ')"
	else
		pass "splat/cli-$name: exit $rc: $(cat err.txt)"
	fi
}

bad unknown-preset "unknown preset 'm99'" --preset m99
bad unknown-flag "unknown option '--learning-rate'" --learning-rate 3
bad stray-argument "unexpected argument" micro
bad iters-range "out of range" --iters -1
bad iters-not-number "needs an integer" --iters ten
bad threads-range "out of range" --threads 0
bad width-range "out of range" --width 8
bad seed-negative "non-negative integer" --seed -3
bad downsample-and-size "not both" --downsample 2 --width 64
bad missing-value "needs a value" --iters
bad backend-name "unknown backend 'metal'" --backend metal
bad save-unwritable "not writable\|No such file" --save /nonexistent-dir/out.ply
bad save-directory "is a directory" --save /tmp
bad save-images-file "not a directory\|mkdir" --save-images /etc/hostname/x

# --backend cuda: an error line unless this build has CUDA and a usable device.
if "$TRAIN" --backend cuda --preset m8-smoke --iters 1 --downsample 4 --log-interval 0 >out.txt 2>err.txt; then
	pass "splat/cli-backend-cuda: CUDA usable here; the run succeeded"
elif [ "$(wc -l <err.txt)" = 1 ] && grep -q -- "--backend cuda" err.txt; then
	pass "splat/cli-backend-cuda: $(cat err.txt)"
else
	fail "splat/cli-backend-cuda: $(head -c 300 err.txt | tr '\n' ' ')"
fi

if "$TRAIN" --help >help.txt && grep -q -- '--max-gaussians' help.txt && grep -q 'm10' help.txt; then
	pass "splat/cli-help: lists the flags and presets"
else
	fail "splat/cli-help: --help does not list the flags and presets"
fi

# Outputs of a short, small run.
if "$TRAIN" --preset m8-smoke --iters 3 --downsample 4 --threads 2 --log-interval 0 --save out.ply \
	--save-images imgs >run.txt 2>run.err; then
	if grep -q '^iter ' run.txt; then
		fail "splat/cli-quiet: --log-interval 0 still logged iterations"
	else
		pass "splat/cli-quiet: no iteration lines with --log-interval 0"
	fi
	for key in "test PSNR" "train PSNR" "gaussians" "time" "backend cpu"; do
		grep -q "^$key" run.txt || fail "splat/cli-summary: no '$key' line"
	done
	grep -q "^backend cpu" run.txt && pass "splat/cli-summary: final PSNR, Gaussian count, time and backend"
	n=$(sed -n 's/^element vertex \([0-9]*\)$/\1/p' out.ply)
	header=$(grep -a -b -o 'end_header' out.ply | head -n 1 | cut -d: -f1)
	props=$(grep -a -c '^property float ' out.ply)
	size=$(stat -c %s out.ply)
	expected=$((header + 11 + n * 62 * 4))
	if head -n 2 out.ply | grep -q 'binary_little_endian' && [ "$props" = 62 ] && [ "$size" = "$expected" ] &&
		grep -a -q '^property float f_rest_44$' out.ply && grep -a -q '^property float rot_3$' out.ply; then
		pass "splat/cli-ply: $n Gaussians, 62 float properties, $size bytes"
	else
		fail "splat/cli-ply: n=$n props=$props size=$size expected=$expected"
	fi
	pngs=$(ls imgs/*.png 2>/dev/null | wc -l)
	sig=$(head -c 8 imgs/test_00_render.png 2>/dev/null | od -An -tx1 | tr -d ' \n')
	if [ "$pngs" = 6 ] && [ "$sig" = 89504e470d0a1a0a ]; then
		pass "splat/cli-images: 3 test renders and 3 ground truths as PNG"
	else
		fail "splat/cli-images: $pngs PNG files, signature '$sig'"
	fi
else
	fail "splat/cli-outputs: splat-train failed: $(tail -n 2 run.err | tr '\n' ' ')"
fi
finish
