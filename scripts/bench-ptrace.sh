#!/usr/bin/env bash
# bench-ptrace.sh: what each sampling backend costs the target, side by side in one run. A C
# program does a fixed amount of arithmetic split over T threads (1, 2, 8); it runs alone, under
# `csampler record --mode perf` and under `--mode ptrace`, at 99 and 999 Hz, ROUNDS times with
# the configurations interleaved. Prints the fastest and the median wall time of the program's
# work (what a user waits for: a thread stopped by ptrace loses wall time, not CPU time), the
# slowdown of the fastest against the fastest alone (on a shared machine the fastest round is the
# least disturbed one), and the sampling rate achieved per busy thread next to the requested one.
#   ROUNDS=3 WORK=1800 [RATES="99 999"] [THREADS="1 2 8"] scripts/bench-ptrace.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
WORK=${WORK:-1800}         # millions of loop iterations in all, split over the threads
RATES=${RATES:-99 999}
THREADS=${THREADS:-1 2 8}
CSAMPLER=${CSAMPLER:-bin/csampler}
W=$(mktemp -d /tmp/csampler-bench-ptrace.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat >"$W/work.c" <<'CEOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long per_thread;
static void *work(void *arg) {
	volatile unsigned long x = (unsigned long)arg;
	for (long i = 0; i < per_thread; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
	return NULL;
}
int main(int argc, char **argv) {
	int n = atoi(argv[1]);
	per_thread = atol(argv[2]) * 1000000L / n;
	pthread_t th[64];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, work, (void *)(long)i);
	for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.4f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
CEOF
cc -O2 -pthread -o "$W/work" "$W/work.c"

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
fastest() { sort -n | head -n 1; }
# run MODE RATE THREADS -> "wall_s samples"
run() {
	if [ "$1" = alone ]; then
		echo "$("$W/work" "$3" "$WORK") 0"
		return
	fi
	local wall samples
	wall=$("$CSAMPLER" record -q --mode "$1" -F "$2" -o "$W/x.data" -- "$W/work" "$3" "$WORK" 2>"$W/err")
	samples=$(sed -n 's/^csampler: \([0-9]*\) samples.*/\1/p' "$W/err")
	echo "$wall ${samples:-0}"
}

declare -A walls samples
configs=()
for t in $THREADS; do
	configs+=("alone 0 $t")
	for rate in $RATES; do
		for mode in perf ptrace; do configs+=("$mode $rate $t"); done
	done
done
for r in $(seq "$ROUNDS"); do
	for c in "${configs[@]}"; do
		read -r wall n <<<"$(run $c)"
		walls[$c]+="$wall "
		samples[$c]+="$n "
	done
done

echo "target: $WORK M iterations over T threads on $(nproc) CPUs; $ROUNDS rounds (wall time of the work)"
printf "%-8s %7s %6s %10s %10s %9s %14s\n" threads mode Hz "fastest s" "median s" slowdown "Hz per thread"
for t in $THREADS; do
	base=$(echo ${walls["alone 0 $t"]} | tr ' ' '\n' | fastest)
	printf "%-8s %7s %6s %10.3f %10.3f %9s %14s\n" "$t" alone - "$base" \
		"$(echo ${walls["alone 0 $t"]} | tr ' ' '\n' | median)" - -
	for rate in $RATES; do
		for mode in perf ptrace; do
			c="$mode $rate $t"
			w=$(echo ${walls[$c]} | tr ' ' '\n' | fastest)
			m=$(echo ${walls[$c]} | tr ' ' '\n' | median)
			n=$(echo ${samples[$c]} | tr ' ' '\n' | median)
			# busy threads: min(T, CPUs) run at once, each sampled while it runs
			busy=$(( t < $(nproc) ? t : $(nproc) ))
			printf "%-8s %7s %6s %10.3f %10.3f %+8.1f%% %14.0f\n" "$t" "$mode" "$rate" "$w" "$m" \
				"$(echo "$w $base" | awk '{ print ($1 / $2 - 1) * 100 }')" \
				"$(echo "$n $m $busy" | awk '{ print $1 / $2 / $3 }')"
		done
	done
done
