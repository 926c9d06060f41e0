#!/usr/bin/env bash
# The whole GPU check in one command, on a GPU machine (ctest labels gpu-fast and gpu):
#   1. the device (nvidia-smi) and `gufo diagnose`;
#   2. tests/ops: every CUDA operator against its CPU twin (gpu-fast);
#   3. tests/gpu: the whole model on CUDA against transformers and the CPU backend, batch
#      invariance, CUDA graphs, errors (gpu);
#   4. the shipped models' declared quality limits (models/limits.json) and --validate-prefill
#      on CUDA;
#   5. with --bench: tools/bench/gpu_bench.sh (gufo bench beside llama-bench).
# Usage: scripts/gpu-check.sh [--pack PACK.tar.xz] [--bench]
#   --pack: binaries made by scripts/gpu-pack.sh on a build machine (for GPU machines without
#           Gufo's toolchain); without it the `cuda` preset is built here.
# Logs go to $OUT (or ./gpu-check-out); the last lines printed are the summary.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
pack="" bench=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --pack) pack=$2; shift 2 ;;
    --bench) bench=1; shift ;;
    *) echo "usage: scripts/gpu-check.sh [--pack PACK.tar.xz] [--bench]" >&2; exit 2 ;;
  esac
done
repo=$PWD
if [[ -n $pack ]]; then
  bin=/tmp/gufo-pack/bin
  mkdir -p /tmp/gufo-pack && tar xJf "$pack" -C /tmp/gufo-pack || { echo "gpu-check: cannot unpack $pack"; exit 1; }
  export LD_LIBRARY_PATH=/tmp/gufo-pack/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # NOTE(gpu-check): the test programs name the source tree and the gufo binary by the paths
  # they were built with (GUFO_TEST_DATA_DIR, GUFO_BINARY); give them those paths here.
  built_root=$( (strings "$bin/cuda_forward_test" 2>/dev/null || true) | grep -m1 -o "/[^ ]*/tests/data" | sed "s|/tests/data$||")
  built_root=${built_root:-/work/main}
  if [[ -n $built_root && $built_root != "$repo" && ! -e $built_root ]]; then
    mkdir -p "$(dirname "$built_root")" && ln -s "$repo" "$built_root"
  fi
  mkdir -p "$repo/build/cuda/bin" && cp "$bin/gufo" "$repo/build/cuda/bin/gufo"
else
  bin=build/cuda/bin
  { cmake --preset cuda && cmake --build --preset cuda-compile -j "$(nproc)"; } >"$out/build.log" 2>&1 ||
    { echo "gpu-check: build failed"; tail -n 40 "$out/build.log"; exit 1; }
  cp build/cuda/tests/gpu/cuda_backend_test build/cuda/tests/gpu/cuda_forward_test build/cuda/tests/ops/ops_test "$bin/"
fi
gufo="$repo/build/cuda/bin/gufo"
declare -a summary
step() {  # step NAME LOG COMMAND...: runs, logs, records pass/fail
  local name=$1 log=$2
  shift 2
  local start=$SECONDS
  if "$@" >"$out/$log" 2>&1; then summary+=("PASS $name ($((SECONDS - start)) s)"); else summary+=("FAIL $name ($((SECONDS - start)) s): see $log"); fi
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader >"$out/device.txt" 2>&1
"$gufo" diagnose >>"$out/device.txt" 2>&1
step "ops (gpu-fast)" ops.log "$bin/ops_test"
step "backend (gpu)" backend.log "$bin/cuda_backend_test"
step "forward (gpu)" forward.log "$bin/cuda_forward_test"
for m in gufo-tiny-q8_0:gufo-tiny gufo-tiny-q4_k_m:gufo-tiny gufo-tiny-moe-q8_0:gufo-tiny-moe gufo-tiny-draft-q8_0:gufo-tiny-draft; do
  model=${m%%:*} ref=${m##*:}
  step "quality limits $model (cuda)" "quality-$model.log" "$gufo" quality --device cuda -m "models/$model.gguf" \
    --text "models/reference/$ref.txt" --reference "models/reference/$ref.npy" --limits models/limits.json --validate-prefill
done
step "run --validate-prefill (cuda)" validate.log "$gufo" run --device cuda -p "The GNU General Public License" -n 32 \
  --temp 0 --validate-prefill
if [[ $bench -eq 1 ]]; then
  step "bench" bench.log tools/bench/gpu_bench.sh "$gufo" "$bin/llama-bench"
fi
grep -hE "^\[  (PASSED|FAILED)|tests? ran" "$out"/ops.log "$out"/backend.log "$out"/forward.log >"$out/counts.txt" 2>/dev/null
cat "$out/device.txt" | head -n 3
printf '%s\n' "${summary[@]}"
! printf '%s\n' "${summary[@]}" | grep -q '^FAIL'
