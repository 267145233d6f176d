#!/usr/bin/env bash
# tests/fuzz/run.sh: what `make fuzz` runs after building (tests/fuzz/build.mk). For each
# argument NAME:"FILES", runs bin/fuzz/fuzz_NAME for FUZZ_SECONDS (one harness at a time, at
# nice 10) over build/fuzz/corpus/NAME (kept between runs) and tests/fuzz/seeds/NAME, then
# replays the final corpus through bin/fuzz/fuzz_NAME-cov for the line coverage of FILES
# (basenames of source files). Prints per harness: executions, exec/s, crashes, libFuzzer's
# 'cov:' edges, line coverage. Crash inputs land in build/fuzz/artifacts/NAME/. Exit 1 when a
# harness crashed. FUZZ_ARGS adds libFuzzer options (e.g. FUZZ_ARGS=-runs=1000000).
set -u
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
status=0
summary=""
for arg in "$@"; do
  name=${arg%%:*}
  files=${arg#*:}
  bin=bin/fuzz/fuzz_$name
  corpus=build/fuzz/corpus/$name
  artifacts=build/fuzz/artifacts/$name
  log=build/fuzz/$name.log
  mkdir -p "$corpus" "$artifacts"
  seeds=tests/fuzz/seeds/$name
  [ -d "$seeds" ] || seeds=""
  before=$(ls "$artifacts" | wc -l)
  echo "fuzz: $name for ${seconds}s (log: $log)"
  # -close_fd_mask=2: the readers' one-line errors would flood the log; sanitizer reports
  # still come through. -timeout: a single input running 10 s counts as a hang (a crash).
  # shellcheck disable=SC2086
  nice -n 10 "$bin" -max_total_time="$seconds" -print_final_stats=1 -close_fd_mask=2 \
    -timeout=10 -rss_limit_mb=2048 -max_len=16384 -artifact_prefix="$artifacts/" \
    ${FUZZ_ARGS:-} "$corpus" $seeds >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n1)
  units=$(grep -o 'corp: [0-9]*' "$log" | tail -n1 | tr -dc 0-9) # libFuzzer's, not the dir's
  crashes=$(( $(ls "$artifacts" | wc -l) - before ))
  if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then
    status=1
    echo "fuzz: $name FAILED (exit $rc); the report:"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 8
  fi
  # Line coverage: replay the corpus (-runs=0 executes each input once) in the -cov build.
  lines="(no coverage build)"
  if [ -x "$bin-cov" ] && command -v llvm-profdata >/dev/null && command -v llvm-cov >/dev/null; then
    rm -f "build/fuzz/$name.profraw"
    LLVM_PROFILE_FILE="build/fuzz/$name.profraw" "$bin-cov" -runs=0 -close_fd_mask=2 \
      "$corpus" $seeds >/dev/null 2>&1
    llvm-profdata merge -sparse -o "build/fuzz/$name.profdata" "build/fuzz/$name.profraw"
    srcs=""
    for f in $files; do
      srcs="$srcs $(find profiler flamegraph -name "$f" -not -path '*/build/*' | head -n1)"
    done
    # llvm-cov report's columns: file, regions (3), functions (3), lines (3), branches (3).
    # Without FILES (FUZZ_FILES_NAME unset): only the total over everything linked.
    lines=$(llvm-cov report "$bin-cov" -instr-profile="build/fuzz/$name.profdata" $srcs |
      awk -v files="$files" 'NR > 2 && NF >= 10 && $1 !~ /^-/ {
             n = $8 - $9; f = $1; sub(/.*\//, "", f)
             if (f == "TOTAL") tot = sprintf("total %d/%d lines (%s)", n, $8, $10)
             else if (files != "") out = out sprintf("%s %s, ", f, $10) }
           END { print out tot }')
  fi
  line="$name: ${execs:-0} executions, ${rate:-0} exec/s, $crashes crashes, libFuzzer ${cov:-cov: ?}, corpus ${units:-0} inputs; line coverage: $lines"
  echo "fuzz: $line"
  summary="$summary$line"$'\n'
done
echo "fuzz summary (${seconds}s each):"
printf '%s' "$summary"
exit $status
