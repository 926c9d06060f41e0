#!/usr/bin/env bash
# Packs the llama-bench that build_llama_cpp.sh cuda built (scripts/pack-binaries.sh) into
# build/llama-pack/, split into parts small enough to travel to the GPU machine beside the
# repository one call at a time (its CUDA fatbin is ~37 MB compressed).
# Usage: tools/bench/pack_llama_cpp.sh [PART_SIZE]    (default 7800k; parts part.aa, part.ab, ...)
# On the GPU machine: cat PARTS... | xz -d | tar x -C DIR; DIR/bin/llama-bench with
# LD_LIBRARY_PATH=DIR/lib:/usr/local/cuda/lib64.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/llama.cpp-cuda/bin/llama-bench
[[ -x $bin ]] || { echo "pack_llama_cpp: build it first: tools/bench/build_llama_cpp.sh cuda" >&2; exit 1; }
mkdir -p build/llama-pack
rm -f build/llama-pack/part.*
scripts/pack-binaries.sh "$bin" | split -b "${1:-7800k}" - build/llama-pack/part.
ls -la build/llama-pack
