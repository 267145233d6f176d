#!/usr/bin/env bash
# bench-gpu-launch.sh: what lib/libcsampler-cupti.so costs on the CUDA launch path, per launch,
# and what it writes.
#
#   scripts/bench-gpu-launch.sh [ROUNDS] [SECONDS] [BASE_REV]   (default 10 rounds of 1 s per figure)
#   EXTRA=1 scripts/bench-gpu-launch.sh ...   also bursts and call-path counts (below)
#
# The test driver (tests/cupti/driver.c, `driver bench`) makes launches against the stand-in
# libcupti, which fires the library's callbacks on the calling thread as CUDA does (a runtime
# ENTER, a nested driver ENTER, their EXITs), from 50 distinct call paths 20 to 40 frames deep
# taken in turn, in bursts every millisecond at 10k and 100k launches/s; each launch is timed
# alone, and the stand-in's worker thread completes activity buffers meanwhile. The rounds are
# interleaved (every configuration once per round); the figure is the median of ROUNDS.
#
# The floor, what CUPTI and the stand-in cost before csampler does anything:
#   no injection        the stand-in's call alone (no subscriber)
#   empty callback      CSAMPLER_GPU_FLOOR=empty: callbacks subscribed, inj_callback returns at once
#   activity only       CSAMPLER_GPU_FLOOR=activity: activity kinds on, no callbacks
#   empty + activity    CSAMPLER_GPU_FLOOR=both
# The capture, by subscription (CSAMPLER_GPU_SUBSCRIBE) and with stacks off:
#   runtime only / driver only (the default) / both
#   no stack memo       CSAMPLER_GPU_STACK_MEMO=0: every stack unwound (fastunwind.c's memo off)
#   no stacks           CSAMPLER_GPU_STACK=0
# The previous library, built from BASE_REV (default: the commit before issue 20's changes; give
# /work/main's HEAD to compare with the merged tree) into a temporary directory, as shipped and
# without stacks.
# At 10k/s, the columns "first" and "others" split the launches: the first of each burst (after
# the millisecond's sleep, when other processes had the CPU and its caches) and the rest.
# Budget (issue 20): the library's own work, capture minus "empty + activity", at most 250 ns.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-10}
SECONDS_PER=${2:-1}
BASE_REV=${3:-079fd65f61f8a41a2abc73cfb5eb83b07db3666c}
LIB=$ROOT/lib/libcsampler-cupti.so
DRIVER=$ROOT/bin/tests/cupti/driver
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	make -s programs test-programs >/dev/null || exit 1
fi
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	echo "bench-gpu-launch: lib/libcsampler-cupti.so or the test driver is not built (no CUDA toolkit?)" >&2
	exit 1
fi
export LD_LIBRARY_PATH=$ROOT/bin/tests/cupti/standin
DIR=$(mktemp -d /tmp/bench-gpu.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/out" "$DIR/base"

# The previous library: its sources at BASE_REV (every .c of profiler/inject: fastunwind.c
# too, and base/pywalk.c where the library compiles it in), built as profiler/inject/build.mk
# does.
BASE=
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CUPTI_DIR=$(dirname "$(ls "$CUDA_HOME"/lib64/libcupti.so.13 "$CUDA_HOME"/lib/libcupti.so.13 2>/dev/null | head -n 1)")
# (every .c of profiler/inject: cupti.c, and fastunwind.c from issue 20 on; the TLS dialect where
# its build.mk asks for it)
TLS=
PYWALK=
git cat-file -e "$BASE_REV:profiler/base/pywalk.c" 2>/dev/null && PYWALK="profiler/base/pywalk.c profiler/base/pywalk.h"
if git cat-file -e "$BASE_REV" 2>/dev/null &&
   git archive "$BASE_REV" profiler/inject $PYWALK | tar -x -C "$DIR/base" &&
   { ! grep -q mtls-dialect=gnu2 "$DIR/base/profiler/inject/build.mk" 2>/dev/null ||
     [ "$(uname -m)" != x86_64 ] || TLS=-mtls-dialect=gnu2; } &&
   cc -O2 -g -std=gnu11 -D_GNU_SOURCE -pthread -fPIC -fvisibility=hidden $TLS -I"$DIR/base/profiler" \
      -isystem "$CUDA_HOME/include" -shared -Wl,--as-needed -o "$DIR/base/libcsampler-cupti.so" \
      "$DIR/base/profiler/inject/"*.c ${PYWALK:+"$DIR/base/profiler/base/pywalk.c"} \
      -L"$CUPTI_DIR" -l:libcupti.so.13 -lunwind 2>"$DIR/base/err"; then
	BASE=$DIR/base/libcsampler-cupti.so
else
	echo "bench-gpu-launch: could not build the library of $BASE_REV: previous columns left out" \
	     "($(head -c 300 "$DIR/base/err" 2>/dev/null))" >&2
fi

# configurations: label, library (none, new, base), environment
CONFIGS=(
	"no injection|none|"
	"empty callback|new|CSAMPLER_GPU_FLOOR=empty"
	"activity only|new|CSAMPLER_GPU_FLOOR=activity"
	"empty + activity|new|CSAMPLER_GPU_FLOOR=both"
	"capture, runtime only|new|CSAMPLER_GPU_SUBSCRIBE=runtime"
	"capture, driver only (shipped)|new|CSAMPLER_GPU_SUBSCRIBE=driver"
	"capture, both|new|CSAMPLER_GPU_SUBSCRIBE=both"
	"capture, no stack memo|new|CSAMPLER_GPU_STACK_MEMO=0"
	"capture, no stacks|new|CSAMPLER_GPU_STACK=0"
)
[ -n "$BASE" ] && CONFIGS+=("previous (${BASE_REV:0:7}), shipped|base|" "previous, no stacks|base|CSAMPLER_GPU_STACK=0")

# one LIB ENV RATE: "ns bytes-per-100k-launches first-of-burst-ns others-ns" of one run
one() {
	rm -f "$DIR"/out/*
	local lib=$1 envs=$2 rate=$3 n=$(($3 * SECONDS_PER))
	case $lib in none) lib=none ;; new) lib=$LIB ;; base) lib=$BASE ;; esac
	local ns
	ns=$(env CSAMPLER_GPU_DIR="$DIR/out" $envs "$DRIVER" bench "$lib" "$rate" "$n" 2>"$DIR/split") || ns=nan
	local bytes split
	bytes=$(cat "$DIR"/out/gpu-*.bin 2>/dev/null | wc -c)
	split=$(sed -n 's/^bench: first of a burst \([0-9.]*\) ns, the others \([0-9.]*\) ns$/\1 \2/p' "$DIR/split")
	echo "$ns $((bytes * 100000 / (n + 50))) ${split:-nan nan}"
}
median() { sort -n | awk '{v[NR]=$1} END {if (NR) printf "%.1f\n", (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

declare -A ns=() by=() first=() others=()
for r in $(seq "$ROUNDS"); do
	for rate in 10000 100000; do
		for i in "${!CONFIGS[@]}"; do
			IFS='|' read -r label lib envs <<<"${CONFIGS[$i]}"
			read -r t b f o <<<"$(one "$lib" "$envs" "$rate")"
			ns[$i,$rate]+="$t "
			by[$i,$rate]+="$b "
			first[$i,$rate]+="$f "
			others[$i,$rate]+="$o "
		done
	done
done
m() { echo "$1" | tr ' ' '\n' | grep . | grep -v nan | median; }
printf '%-36s %10s %10s %10s %10s %18s\n' "ns per launch" "10k/s" "(first" "others)" "100k/s" \
	"bytes/100k launches"
for i in "${!CONFIGS[@]}"; do
	IFS='|' read -r label lib envs <<<"${CONFIGS[$i]}"
	printf '%-36s %10s %10s %10s %10s %18s\n' "$label" "$(m "${ns[$i,10000]}")" \
		"$(m "${first[$i,10000]}")" "$(m "${others[$i,10000]}")" "$(m "${ns[$i,100000]}")" \
		"$(m "${by[$i,100000]}")"
done
echo "(median of $ROUNDS interleaved rounds of ${SECONDS_PER} s; 50 call paths 20-40 frames deep; $(nproc) CPUs)"

# EXTRA=1: the shipped library against the memo off, (1) at 10k/s in bursts of 10 (the table
# above), 100 and 1000 launches: what a burst's first launches cost after the sleep; (2) at
# 100k/s from 50, 200 and 1000 call paths: more distinct stacks than the memo keeps per thread.
[ "${EXTRA:-0}" = 1 ] || exit 0
declare -A ex=()
EXTRAS=("10k/s, bursts of 10|10000 50 10" "10k/s, bursts of 100|10000 50 100"
	"10k/s, bursts of 1000|10000 50 1000" "100k/s, 50 paths|100000 50 100"
	"100k/s, 200 paths|100000 200 100" "100k/s, 1000 paths|100000 1000 100")
for r in $(seq "$ROUNDS"); do
	for i in "${!EXTRAS[@]}"; do
		IFS='|' read -r label args <<<"${EXTRAS[$i]}"
		read -r rate paths burst <<<"$args"
		for memo in 1 0; do
			rm -f "$DIR"/out/*
			t=$(env CSAMPLER_GPU_DIR="$DIR/out" CSAMPLER_GPU_STACK_MEMO=$memo "$DRIVER" bench "$LIB" \
			    "$rate" "$((rate * SECONDS_PER))" "$paths" "$burst" 2>/dev/null) || t=nan
			ex[$i,$memo]+="$t "
		done
	done
done
printf '\n%-36s %12s %12s\n' "ns per launch (shipped)" "stack memo" "memo off"
for i in "${!EXTRAS[@]}"; do
	IFS='|' read -r label args <<<"${EXTRAS[$i]}"
	printf '%-36s %12s %12s\n' "$label" "$(m "${ex[$i,1]}")" "$(m "${ex[$i,0]}")"
done
