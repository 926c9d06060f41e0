#!/usr/bin/env bash
# On a GPU machine: build the `cuda` preset, run the GPU operator tests against the CPU
# oracle, and record `gufo diagnose`. Logs go to $OUT (or ./gpu-check-out).
# Usage: scripts/gpu-check.sh
# Needs what scripts/install-deps.sh installs (g++-12, CLI11, GoogleTest, ...). The lent H200
# image has no apt and no g++-12: there, build the `cuda` preset on the CPU machine, carry the
# (strip -g'ed) executables, and run tests/gpu's cuda_backend_test directly.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
status=0
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  cmake --preset cuda -DGUFO_TESTS=ON -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" &&
    cmake --build --preset cuda -j "$(nproc)"
} >"$out/build.log" 2>&1 || { echo "gpu-check: build failed"; tail -n 40 "$out/build.log"; exit 1; }
ctest --preset gpu --output-on-failure >"$out/gpu-tests.log" 2>&1 || status=1
# NOTE(gpu-check): the npm oracles (tests/js) are not installed on a GPU machine; CI runs them.
(cd build/cuda && ctest -L unit -E 'js_oracle|ggml_oracle' -j "$(nproc)") >"$out/unit-tests.log" 2>&1 || status=1
build/cuda/bin/gufo diagnose >"$out/diagnose.txt" 2>&1 || status=1
build/cuda/bin/gufo diagnose --json >"$out/diagnose.json" 2>&1 || status=1
tail -n 5 "$out/gpu-tests.log" "$out/unit-tests.log"
cat "$out/diagnose.txt"
exit $status
