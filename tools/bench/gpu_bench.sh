#!/usr/bin/env bash
# Gufo's CUDA backend beside llama.cpp's (built from source by tools/bench/build_llama_cpp.sh
# cuda: sm_90, flash attention) on the same synthetic GGUFs, one model after the other in one
# run: pp512, pp2048, tg128 at depth 0 and 4096. The models are made here by `gufo synth` (real
# shapes, random weights), so nothing is downloaded.
# Usage: tools/bench/gpu_bench.sh GUFO [LLAMA_BENCH]
#   MODELS="qwen3:8b qwen3:1.7b qwen3moe:30b-a3b" (ARCH:SHAPE of gufo synth) by default.
#   ARGS="-p 512,2048 -n 128 -d 0,4096 -r 3" by default: the tests, the same for both sides.
set -uo pipefail
gufo=$1
llama_bench=${2:-}
dir=${BENCH_DIR:-/tmp/gufo-bench}
mkdir -p "$dir"
for entry in ${MODELS:-qwen3:8b qwen3:1.7b qwen3moe:30b-a3b}; do
  arch=${entry%%:*} shape=${entry##*:}
  model="$dir/$arch-$shape-q4_k_m.gguf"
  [[ -f $model ]] || "$gufo" synth --arch "$arch" --shape "$shape" --type q4_k_m -o "$model" >/dev/null || exit 1
  echo "## $arch $shape q4_k_m ($(du -h "$model" | cut -f1))"
  # shellcheck disable=SC2086  # ARGS is a list of flags
  "$gufo" bench --device cuda -m "$model" ${ARGS:--p 512,2048 -n 128 -d 0,4096 -r 3}
  if [[ -x $llama_bench ]]; then
    # shellcheck disable=SC2086
    "$llama_bench" -m "$model" -ngl 99 -fa 1 ${ARGS:--p 512,2048 -n 128 -d 0,4096 -r 3} -o md
  fi
done
