#!/usr/bin/env bash
# Builds llama.cpp from source, the competitor Gufo's benchmarks compare against, into an
# ignored folder (build/llama.cpp-<flavour>); its code is never committed. The source is the
# git bundle that the npm package node-llama-cpp ships (llama/gitRelease.bundle), pinned by
# the version below so that both sides of a comparison are reproducible.
# Usage: tools/bench/build_llama_cpp.sh cuda|cpu [JOBS]
#   cuda: GGML_CUDA with flash attention for sm_90 (the H200), static, llama-bench only.
#         Builds on any machine with nvcc; run the binary on the GPU machine.
#   cpu:  GGML_NATIVE, for CPU comparisons on the machine that builds it: llama-bench and
#         llama-server (tools/bench/keepalive_latency.mjs compares the servers).
set -euo pipefail
flavour=${1:?usage: build_llama_cpp.sh cuda|cpu [JOBS]}
jobs=${2:-$(nproc)}
node_llama_cpp_version=3.22.1
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$root/build/llama.cpp-src"
out="$root/build/llama.cpp-$flavour"
mkdir -p "$work"
if [[ ! -d "$work/llama.cpp/.git" ]]; then
  (cd "$work" && npm pack --silent "node-llama-cpp@$node_llama_cpp_version" >/dev/null &&
    tar xzf "node-llama-cpp-$node_llama_cpp_version.tgz" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json &&
    git clone -q package/llama/gitRelease.bundle llama.cpp)
fi
echo "llama.cpp $(cat "$work/package/llama/llama.cpp.info.json" | tr -d '\n ') from node-llama-cpp $node_llama_cpp_version"
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF)
targets=(llama-bench)
case "$flavour" in
  cuda)
    cmake -S "$work/llama.cpp" -B "$out" "${common[@]}" -DGGML_CUDA=ON -DGGML_NATIVE=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" \
      -DGGML_CUDA_FA=ON -DCMAKE_CUDA_HOST_COMPILER=g++-12 -DCMAKE_C_COMPILER=gcc-12 -DCMAKE_CXX_COMPILER=g++-12 \
      -DLLAMA_BUILD_SERVER=OFF ;;
  cpu)
    cmake -S "$work/llama.cpp" -B "$out" "${common[@]}" -DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON
    targets+=(llama-server) ;;
  *) echo "build_llama_cpp.sh: flavour must be cuda or cpu, not '$flavour'" >&2; exit 2 ;;
esac
cmake --build "$out" --target "${targets[@]}" -j "$jobs"
for t in "${targets[@]}"; do echo "built $out/bin/$t"; done
