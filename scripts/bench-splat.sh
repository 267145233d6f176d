#!/usr/bin/env bash
# bench-splat.sh: splat-train's quality and speed on the CPU backend (and on CUDA when this
# build and machine have it): test PSNR, train PSNR, ms/iteration and total time of micro and
# m8, next to the goals of issue 5 (micro >= 20 dB and < 60 s on 2 cores, m8 >= 26 dB).
#   scripts/bench-splat.sh [--quick] [--threads N] [--seed N]
#     --quick      micro only
set -u
cd "$(dirname "$0")/.."
TRAIN=bin/splat-train
presets="micro m8"
threads=$(nproc)
seed=1
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) presets="micro" ;;
	--threads) threads=$2; shift ;;
	--seed) seed=$2; shift ;;
	-h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-splat: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$TRAIN" ] || { echo "bench-splat: $TRAIN is missing; run make" >&2; exit 1; }

backends="cpu"
if "$TRAIN" --backend cuda --preset m8-smoke --iters 1 --downsample 4 --log-interval 0 >/dev/null 2>&1; then
	backends="cpu cuda"
fi

goal() { # preset -> PSNR goal, time goal
	case "$1" in micro) echo "20 60" ;; m8) echo "26 -" ;; *) echo "- -" ;; esac
}

echo "splat-train benchmark: $(uname -n), $(nproc) cores, seed $seed, CPU threads $threads"
printf '%-7s %-5s %9s %10s %9s %10s %8s %s\n' preset backend "test dB" "train dB" "iter0 dB" "ms/iter" "total s" "goals"
status=0
for b in $backends; do
	for p in $presets; do
		out=$("$TRAIN" --preset "$p" --backend "$b" --threads "$threads" --seed "$seed" --log-interval 0 2>/dev/null)
		if [ $? != 0 ]; then
			printf '%-7s %-5s failed\n' "$p" "$b"; status=1; continue
		fi
		test=$(sed -n 's/^test PSNR \([0-9.]*\) dB (iteration 0: \([0-9.]*\).*/\1/p' <<<"$out")
		init=$(sed -n 's/^test PSNR [0-9.]* dB (iteration 0: \([0-9.]*\).*/\1/p' <<<"$out")
		train=$(sed -n 's/^train PSNR \([0-9.]*\).*/\1/p' <<<"$out")
		total=$(sed -n 's/^time \([0-9.]*\) s (\([0-9.]*\) ms\/iter.*/\1/p' <<<"$out")
		msit=$(sed -n 's/^time \([0-9.]*\) s (\([0-9.]*\) ms\/iter.*/\2/p' <<<"$out")
		read -r gpsnr gtime < <(goal "$p")
		verdict=""
		if [ "$gpsnr" != - ]; then
			if awk -v a="$test" -v g="$gpsnr" 'BEGIN { exit !(a >= g) }'; then verdict="PSNR>=$gpsnr ok"
			else verdict="PSNR>=$gpsnr MISSED"; status=1; fi
		fi
		if [ "$gtime" != - ] && [ "$b" = cpu ]; then
			if awk -v a="$total" -v g="$gtime" 'BEGIN { exit !(a < g) }'; then verdict="$verdict, <${gtime}s ok"
			else verdict="$verdict, <${gtime}s MISSED"; status=1; fi
		fi
		printf '%-7s %-5s %9s %10s %9s %10s %8s %s\n' "$p" "$b" "$test" "$train" "$init" "$msit" "$total" "$verdict"
	done
done
exit $status
