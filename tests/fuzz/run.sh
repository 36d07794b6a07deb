#!/usr/bin/env bash
# Runs every fuzz harness built in BUILD for SECONDS each, one at a time (docs/fuzzing.md).
# Usage: tests/fuzz/run.sh BUILD SECONDS [harness ...]   (make fuzz calls it)
#
# Each harness starts from a copy of its seed corpus (tests/fuzz/corpus/<harness>, copied
# into BUILD/corpus/<harness>, which keeps what earlier runs found) and its dictionary
# (tests/fuzz/<harness>.dict) if there is one. Crash, leak, timeout and out-of-memory inputs
# are kept in BUILD/artifacts; logs in BUILD/logs. Exits 1 if any harness failed.
set -uo pipefail
build=${1:?build folder}
seconds=${2:?seconds per harness}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ]; then
  harnesses=("$@")
else
  mapfile -t harnesses < "$build/fuzz-harnesses.txt"
fi
mkdir -p "$build/artifacts" "$build/logs"
# Leaks are bugs too (libFuzzer checks each input); the sanitizers stop at the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_WAIT_POLICY=passive
failed=()
total_runs=0
start=$SECONDS
for h in "${harnesses[@]}"; do
  [ -n "$h" ] || continue
  bin="$build/tests/fuzz/$h"
  corpus="$build/corpus/$h"
  mkdir -p "$corpus"
  [ -d "$here/corpus/$h" ] && cp -n "$here/corpus/$h"/* "$corpus"/ 2>/dev/null
  dict=()
  [ -f "$here/$h.dict" ] && dict=(-dict="$here/$h.dict")
  log="$build/logs/$h.log"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$h-" "${dict[@]}" "$corpus" > "$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  total_runs=$((total_runs + ${runs:-0}))
  if [ $rc -eq 0 ]; then
    printf 'fuzz: %-10s ok      %8s runs, corpus %s files\n' "$h" "${runs:-?}" \
      "$(find "$corpus" -type f | wc -l)"
  else
    printf 'fuzz: %-10s FAILED  (exit %d): see %s and %s/artifacts\n' "$h" $rc "$log" "$build"
    grep -E 'ERROR|fuzz check failed|fuzz_(ops|conv):|SUMMARY|runtime error' "$log" | head -5 |
      sed 's/^/    /'
    failed+=("$h")
  fi
done
echo "fuzz: ${#harnesses[@]} harnesses, $total_runs inputs in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
