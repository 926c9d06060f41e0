#!/usr/bin/env bash
# Builds llama.cpp from source, the competitor Gufo's benchmarks compare against, into an
# ignored folder (build/llama.cpp-<flavour>); its code is never committed. The source is the
# git bundle that the npm package node-llama-cpp ships (llama/gitRelease.bundle), pinned by
# the version below so that both sides of a comparison are reproducible.
# Usage: tools/bench/build_llama_cpp.sh cuda|cpu|source [JOBS]
#   cuda:   GGML_CUDA with flash attention for sm_90 (the H200), static, llama-bench only.
#           Builds on any machine with nvcc; run the binary on the GPU machine.
#   cpu:    GGML_NATIVE, for CPU comparisons on the machine that builds it: llama-bench,
#           llama-server (tools/bench/keepalive_latency.mjs compares the servers),
#           llama-lookup (prompt-lookup drafting, beside `gufo run --spec ngram`) and
#           llama-speculative (a draft model, beside `gufo run --draft-model`).
#   source: writes build/llama.cpp-source.tar.xz (~4 MB): the files the cuda flavour's build
#           reads, for a GPU machine with CMake and nvcc but no network, where a 2-core build
#           machine would take hours over the CUDA kernels. There: unpack it outside any git
#           checkout (llama-bench would report that checkout's commit; outside, "unknown",
#           and this script prints the archive's COMMIT), then
#           `LLAMA_CPP_SRC=DIR/llama.cpp tools/bench/build_llama_cpp.sh cuda`.
#   LLAMA_CPP_SRC: build this source tree instead of the bundle's (the cpu flavour needs a
#           whole tree: its llama-server reads the web UI the archive leaves out).
set -euo pipefail
flavour=${1:?usage: build_llama_cpp.sh cuda|cpu|source [JOBS]}
jobs=${2:-$(nproc)}
node_llama_cpp_version=3.22.1
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$root/build/llama.cpp-src"
out="$root/build/llama.cpp-$flavour"
src=${LLAMA_CPP_SRC:-$work/llama.cpp}
if [[ -z ${LLAMA_CPP_SRC:-} ]]; then
  mkdir -p "$work"
  if [[ ! -d "$work/llama.cpp/.git" ]]; then
    (cd "$work" && npm pack --silent "node-llama-cpp@$node_llama_cpp_version" >/dev/null &&
      tar xzf "node-llama-cpp-$node_llama_cpp_version.tgz" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json &&
      git clone -q package/llama/gitRelease.bundle llama.cpp)
  fi
  echo "llama.cpp $(tr -d '\n ' <"$work/package/llama/llama.cpp.info.json") from node-llama-cpp $node_llama_cpp_version"
fi
[[ -f $src/CMakeLists.txt ]] || { echo "build_llama_cpp.sh: no llama.cpp source at $src" >&2; exit 1; }
[[ -f $src/COMMIT ]] && echo "llama.cpp commit $(cat "$src/COMMIT") (from a source archive)"
if [[ $flavour == source ]]; then
  # The other backends' code and the web UI are left out: the cuda flavour never reads them.
  mkdir -p "$root/build"
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/llama.cpp"
  git -C "$src" archive --format=tar HEAD CMakeLists.txt LICENSE cmake common ggml include src tools vendor app licenses |
    tar x -C "$stage/llama.cpp"
  for backend in et metal hexagon sycl vulkan opencl cann openvino webgpu zdnn zendnn virtgpu musa; do
    rm -rf "$stage/llama.cpp/ggml/src/ggml-$backend"
  done
  rm -rf "$stage/llama.cpp/tools/ui" "$stage/llama.cpp/tools/server/public"*
  git -C "$src" log -1 --format=%H >"$stage/llama.cpp/COMMIT"
  tar cf - -C "$stage" llama.cpp | xz -T0 -6 >"$root/build/llama.cpp-source.tar.xz"
  echo "wrote $root/build/llama.cpp-source.tar.xz ($(du -h "$root/build/llama.cpp-source.tar.xz" | cut -f1))"
  exit 0
fi
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF)
targets=(llama-bench)
case "$flavour" in
  cuda)
    # g++-12 where it is installed (the toolchain of Gufo's cuda preset); else the machine's
    # own compilers (a GPU machine's image).
    compilers=()
    if command -v g++-12 >/dev/null && command -v gcc-12 >/dev/null; then
      compilers=(-DCMAKE_CUDA_HOST_COMPILER=g++-12 -DCMAKE_C_COMPILER=gcc-12 -DCMAKE_CXX_COMPILER=g++-12)
    fi
    cmake -S "$src" -B "$out" "${common[@]}" -DGGML_CUDA=ON -DGGML_NATIVE=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" \
      -DGGML_CUDA_FA=ON "${compilers[@]}" -DLLAMA_BUILD_SERVER=OFF ;;
  cpu)
    # llama-lookup and llama-speculative (speculative decoding) are llama.cpp's examples.
    cmake -S "$src" -B "$out" "${common[@]}" -DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_EXAMPLES=ON
    targets+=(llama-server llama-lookup llama-speculative) ;;
  *) echo "build_llama_cpp.sh: flavour must be cuda, cpu or source, not '$flavour'" >&2; exit 2 ;;
esac
cmake --build "$out" --target "${targets[@]}" -j "$jobs"
for t in "${targets[@]}"; do echo "built $out/bin/$t"; done
