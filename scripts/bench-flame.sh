#!/usr/bin/env bash
# bench-flame.sh: csampler flame on a big folded profile, side by side with flamegraph.pl in
# the same run when FLAMEGRAPH_PL names one (it is not packaged in Debian; e.g. a checkout of
# github.com/brendangregg/FlameGraph), and the SVG opened and zoomed in headless Chromium.
#
#   scripts/bench-flame.sh [LINES] [UNIQUE_STACKS]     (default 1000000 200000)
#   FLAMEGRAPH_PL=/path/to/flamegraph.pl scripts/bench-flame.sh
#   PREV_CSAMPLER=/path/to/old/bin/csampler scripts/bench-flame.sh   (a previous build, same run)
#
# The input is generated (seeded, so every run sees the same file): stacks 10 to 40 frames
# deep over 8000 function names (C++-style, C-style and kernel "_[k]" frames), drawn as
# random walks so that they share prefixes like real call trees, each unique stack at least
# once and the lines in random order (the hard case: no shared prefix between neighbours).
# Prints wall time, CPU time, peak RSS and SVG size for each tool, and the ratios.
# Goals (issue 4): csampler under 2 s and under 5 MB of SVG, at least 20x faster than
# flamegraph.pl, and the SVG open + zoom in Chromium under 1 s.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
LINES=${1:-1000000}
UNIQUE=${2:-200000}
DIR=${BENCH_DIR:-/tmp/csampler-bench-flame}
CSAMPLER=$ROOT/bin/csampler
mkdir -p "$DIR"

[ -x "$CSAMPLER" ] || { echo "bench-flame: build first (make programs)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-flame: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-flame: needs python3 for the input generator" >&2; exit 1; }

INPUT=$DIR/stacks-$LINES-$UNIQUE.folded
if [ ! -s "$INPUT" ]; then
	echo "generating $INPUT ($LINES lines, $UNIQUE unique stacks) ..." >&2
	python3 - "$LINES" "$UNIQUE" >"$INPUT.tmp" <<'EOF' || exit 1
import random, sys
lines, unique = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(42)
words = ["update", "render", "splat", "gradient", "tile", "sort", "project", "cov", "alpha",
         "blend", "loss", "adam", "step", "densify", "prune", "load", "decode", "image",
         "camera", "ray", "sh", "eval", "reduce", "scan", "radix", "copy", "alloc", "free",
         "lock", "wait", "queue", "worker", "thread", "batch", "kernel", "launch"]
spaces = ["splat", "train", "math", "io", "std", "detail", "cuda", "cpu", "util"]
def name(i):
    r = random.Random(i * 7919 + 1)
    kind = r.random()
    base = "_".join(r.choice(words) for _ in range(r.randint(1, 3)))
    if kind < 0.5:
        return "%s::%s::%s(float const*, int)" % (r.choice(spaces), r.choice(spaces), base)
    if kind < 0.6:
        return base + "_[k]"
    return base + "_%d" % r.randint(0, 99)
pool = [name(i) for i in range(8000)]
seen, stacks = set(), []
while len(stacks) < unique:
    path = ["splat-train", "_start", "__libc_start_main", "main"]
    h = 1
    for d in range(rng.randint(6, 36)):
        h = (h * 1000003 + min(int(rng.expovariate(0.45)), 11) + 1) & 0xffffffff
        path.append(pool[h % len(pool)])
    s = ";".join(path)
    if s not in seen:
        seen.add(s)
        stacks.append(s)
picks = list(range(unique)) + [rng.randrange(unique) for _ in range(lines - unique)]
rng.shuffle(picks)
out = sys.stdout
for i in picks:
    out.write("%s %d\n" % (stacks[i], rng.randint(1, 50)))
EOF
	mv "$INPUT.tmp" "$INPUT"
fi
echo "input: $INPUT: $(wc -l <"$INPUT") lines, $(du -m "$INPUT" | cut -f1) MB"

# run NAME OUTPUT COMMAND...: time one tool; sets WALL, CPU, RSS_MB, SIZE_MB.
run() {
	local name=$1 out=$2
	shift 2
	cat "$INPUT" >/dev/null # both tools read it from the page cache
	if ! /usr/bin/time -v -o "$DIR/$name.time" "$@" >"$out" 2>"$DIR/$name.err"; then
		echo "$name failed: $(tail -n 3 "$DIR/$name.err")" >&2
		return 1
	fi
	WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0;
		for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.2f", s }' "$DIR/$name.time")
	CPU=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' \
		"$DIR/$name.time")
	RSS_MB=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$DIR/$name.time")
	SIZE_MB=$(awk -v b="$(stat -c %s "$out")" 'BEGIN { printf "%.2f", b / 1048576 }')
	printf "%-14s wall %6.2f s  cpu %6.2f s  peak RSS %6s MB  SVG %8s MB\n" "$name" "$WALL" \
		"$CPU" "$RSS_MB" "$SIZE_MB"
}

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run "csampler" "$DIR/csampler.svg" "$CSAMPLER" -q flame "$INPUT" || exit 1
CS_WALL=$WALL CS_CPU=$CPU CS_SIZE=$SIZE_MB
frames=$(grep -o '"frames":\[[^]]*' "$DIR/csampler.svg" | tr -cd , | wc -c)
echo "               $(( (frames + 1) / 3 )) frames in the SVG, narrower ones merged per parent"

if [ -n "${FLAMEGRAPH_PL:-}" ]; then
	if run "flamegraph.pl" "$DIR/flamegraph-pl.svg" perl "$FLAMEGRAPH_PL" "$INPUT"; then
		awk -v a="$WALL" -v b="$CS_WALL" -v c="$CPU" -v d="$CS_CPU" 'BEGIN {
			printf "ratio          csampler is %.1fx faster (wall), %.1fx (cpu) than flamegraph.pl\n",
				a / b, c / d }'
	fi
else
	echo "flamegraph.pl  skipped: set FLAMEGRAPH_PL=/path/to/flamegraph.pl to compare"
fi

if [ -n "${PREV_CSAMPLER:-}" ]; then
	if run "previous" "$DIR/previous.svg" "$PREV_CSAMPLER" -q flame "$INPUT"; then
		same=$(cmp -s "$DIR/previous.svg" "$DIR/csampler.svg" && echo identical || echo different)
		awk -v a="$WALL" -v b="$CS_WALL" -v c="$CPU" -v d="$CS_CPU" -v same="$same" 'BEGIN {
			printf "ratio          previous/csampler %.2fx (wall), %.2fx (cpu); SVGs %s\n",
				a / b, c / d, same }'
	fi
fi

if command -v chromium >/dev/null && [ -f "$ROOT/tests/node_modules/playwright-core/package.json" ]; then
	res=$(timeout 120 node "$ROOT/tests/flame/browser.js" bench "$DIR/csampler.svg" \
		"$DIR/csampler-zoomed.png" 2>"$DIR/browser.err")
	if [ -n "$res" ]; then
		echo "$res" | node -e '
const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(`chromium       open ${r.open_ms} ms (${r.rects_open} frames drawn), zoom ${r.zoom_ms} ms ` +
	`(${r.rects_zoom} frames), total ${r.open_ms + r.zoom_ms} ms`);'
	else
		echo "chromium       failed: $(tail -n 2 "$DIR/browser.err")"
	fi
else
	echo "chromium       skipped: needs Debian's chromium and tests/node_modules (cd tests && npm ci)"
fi
awk -v w="$CS_WALL" -v s="$CS_SIZE" 'BEGIN {
	printf "goals          csampler < 2 s: %s (%.2f s); SVG < 5 MB: %s (%.2f MB)\n",
		w < 2 ? "yes" : "NO", w, s < 5 ? "yes" : "NO", s }'
