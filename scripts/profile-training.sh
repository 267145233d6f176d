#!/usr/bin/env bash
# profile-training.sh: profile one splat-train run with csampler and keep a named, timestamped
# data file and flamegraph: profiles/splat-<preset>-<YYYYmmdd-HHMMSS>.data and .svg, and print
# the report. Arguments are trainer flags (--preset NAME and any other splat-train flag), plus
# csampler record options, told apart by name (-F/--freq, -g/--call-graph, --stack-size,
# -m/--mmap-pages, --keep-raw, --no-compress); anything after a lone "--" goes to csampler.
#   scripts/profile-training.sh --preset m8 --iters 100 -F 499
#   scripts/profile-training.sh --preset micro --threads 1 -- --call-graph fp
set -u
cd "$(dirname "$0")/.."
CSAMPLER=bin/csampler
TRAIN=bin/splat-train
trainer=() record=() preset=micro
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; record+=("$@"); break ;;
	-F|--freq|-g|--call-graph|--stack-size|-m|--mmap-pages)
		[ $# -ge 2 ] || { echo "profile-training: $1 needs a value" >&2; exit 2; }
		record+=("$1" "$2"); shift ;;
	--freq=*|--call-graph=*|--stack-size=*|--mmap-pages=*|--keep-raw|--no-compress) record+=("$1") ;;
	--preset)
		[ $# -ge 2 ] || { echo "profile-training: --preset needs a value" >&2; exit 2; }
		preset=$2; trainer+=("$1" "$2"); shift ;;
	--preset=*) preset=${1#--preset=}; trainer+=("$1") ;;
	*) trainer+=("$1") ;;
	esac
	shift
done
for bin in "$CSAMPLER" "$TRAIN"; do
	[ -x "$bin" ] || { echo "profile-training: $bin is missing; run make" >&2; exit 1; }
done
case "$preset" in *[!A-Za-z0-9_-]*) echo "profile-training: bad preset name '$preset'" >&2; exit 2 ;; esac
mkdir -p profiles
base=profiles/splat-$preset-$(date +%Y%m%d-%H%M%S)
echo "== csampler record ${record[*]:-} -- $TRAIN ${trainer[*]:-}" >&2
"$CSAMPLER" record "${record[@]}" -o "$base.data" -- "$TRAIN" "${trainer[@]}" || exit $?
"$CSAMPLER" report -i "$base.data" || exit $?
"$CSAMPLER" flame -i "$base.data" -o "$base.svg" --title "splat-train ${trainer[*]:-}" || exit $?
echo "== wrote $base.data and $base.svg" >&2
