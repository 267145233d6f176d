#!/usr/bin/env bash
# demo.sh: what `make demo` runs: profile a micro training run of splat-train, print the
# report and write flame.svg (all in the repository root).
set -eu
cd "$(dirname "$0")/.."
echo "== csampler record -- bin/splat-train --preset micro" >&2
bin/csampler record -o csampler.data -- bin/splat-train --preset micro
echo "== csampler report" >&2
bin/csampler report -i csampler.data --limit 15
bin/csampler flame -i csampler.data -o flame.svg --title "splat-train --preset micro"
echo "== wrote flame.svg ($(du -h flame.svg | cut -f1)); open it in a browser" >&2
