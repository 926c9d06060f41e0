#!/usr/bin/env bash
# Fuzzes the GGUF reader for DURATION_S seconds, starting from a scratch corpus seeded with
# the committed test files, and prints how many inputs ran. Crashing inputs are saved in
# the scratch directory (path printed); copy them to tests/data/bad/ with a line in
# tests/data/bad/expected_fuzz.txt.
# Usage: tests/fuzz/run_fuzz.sh DURATION_S [BUILD_DIR | FUZZER]
#   BUILD_DIR (default build/asan) is a build of the `asan` preset; FUZZER a fuzzer binary.
set -euo pipefail

duration=${1:?usage: run_fuzz.sh DURATION_S [BUILD_DIR | FUZZER]}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${2:-$root/build/asan}
if [[ -d $target ]]; then
  fuzzer=$target/tests/fuzz/gguf_reader_fuzz
else
  fuzzer=$target
fi
if [[ ! -x $fuzzer ]]; then
  echo "run_fuzz.sh: no fuzzer at $fuzzer; build it with: cmake --preset asan && cmake --build --preset asan" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gguf_fuzz.XXXXXX")
mkdir -p "$work/corpus" "$work/artifacts"
cp "$root"/tests/data/bad/*.gguf "$root"/tests/data/good/*.gguf "$work/corpus/"
echo "run_fuzz.sh: fuzzing for ${duration}s in $work"

status=0
"$fuzzer" "$work/corpus" \
  -max_total_time="$duration" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/tests/fuzz/gguf.dict" -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1 >"$work/fuzz.log" 2>&1 || status=$?

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/fuzz.log" | grep -o '[0-9]*$' || echo 0)
echo "run_fuzz.sh: $executions executions in ${duration}s, corpus now $(ls "$work/corpus" | wc -l) files"
if [[ $status -ne 0 ]] || [[ -n $(ls -A "$work/artifacts") ]]; then
  echo "run_fuzz.sh: the fuzzer found a problem (exit $status); inputs in $work/artifacts, log $work/fuzz.log" >&2
  tail -n 40 "$work/fuzz.log" >&2
  exit 1
fi
rm -rf "$work"
