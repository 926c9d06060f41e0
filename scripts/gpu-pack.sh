#!/usr/bin/env bash
# On a build machine with nvcc (any machine scripts/install-deps.sh set up): builds the `cuda`
# preset and packs what scripts/gpu-check.sh runs on a GPU machine (gufo and the GPU test
# programs) with scripts/pack-binaries.sh. llama-bench has a pack of its own
# (tools/bench/pack_llama_cpp.sh): it is too large to travel with this one.
# Usage: scripts/gpu-pack.sh [OUT_DIR]     (default build/gpu-pack; writes OUT_DIR/pack.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-pack}
cmake --preset cuda >/dev/null
cmake --build --preset cuda-compile
mkdir -p "$out"
scripts/pack-binaries.sh build/cuda/bin/gufo build/cuda/tests/gpu/cuda_backend_test \
  build/cuda/tests/gpu/cuda_forward_test build/cuda/tests/ops/ops_test >"$out/pack.tar.xz"
echo "gpu-pack: $out/pack.tar.xz ($(du -h "$out/pack.tar.xz" | cut -f1))"
