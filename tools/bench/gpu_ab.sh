#!/usr/bin/env bash
# Several gufo builds side by side on the GPU machine, for a kernel change before it lands: on
# the same synthetic GGUFs (gufo synth: real shapes, random weights), each build's `gufo bench
# --device cuda` in turn, model by model, so that every build meets the same machine and clocks
# in one device call. A build may travel as an xz-compressed binary (~1.7 MB, where a whole
# pack is 5 MB): it runs with the libraries of the pack that gpu-check.sh unpacked.
# Usage: tools/bench/gpu_ab.sh NAME=GUFO [NAME=GUFO ...]
#   GUFO: a gufo binary, or one compressed with xz (PATH.xz).
#   MODELS="qwen3:8b qwen3:1.7b" (ARCH:SHAPE of gufo synth), BENCH="-p 512 -n 128 -d 0,4096 -r 2",
#   BENCH_DIR=/tmp/gufo-bench (models and unpacked binaries), ROUNDS=1 (the whole, again: machines
#   drift within a call, so a second round says what is noise).
# Prints, per round and model, each build's bench lines under "## MODEL NAME".
set -uo pipefail
[[ $# -ge 1 ]] || { echo "usage: gpu_ab.sh NAME=GUFO [NAME=GUFO ...]" >&2; exit 2; }
dir=${BENCH_DIR:-/tmp/gufo-bench}
mkdir -p "$dir"
names=() bins=()
for arg in "$@"; do
  name=${arg%%=*} bin=${arg#*=}
  [[ $name != "$arg" && -n $name && -f $bin ]] || { echo "gpu_ab.sh: '$arg' is not NAME=an existing file" >&2; exit 2; }
  if [[ $bin == *.xz ]]; then
    xz -dc "$bin" >"$dir/gufo-$name" && chmod +x "$dir/gufo-$name" || { echo "gpu_ab.sh: cannot unpack $bin" >&2; exit 1; }
    bin=$dir/gufo-$name
  fi
  names+=("$name") bins+=("$bin")
done
rounds=${ROUNDS:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "gpu_ab.sh: ROUNDS must be a whole number from 1, not '$rounds'" >&2; exit 2; }
for round in $(seq "$rounds"); do
  for entry in ${MODELS:-qwen3:8b qwen3:1.7b}; do
    arch=${entry%%:*} shape=${entry##*:}
    model="$dir/$arch-$shape-q4_k_m.gguf"
    if [[ ! -f $model ]]; then
      "${bins[0]}" synth --arch "$arch" --shape "$shape" --type q4_k_m -o "$model" >/dev/null ||
        { echo "gpu_ab.sh: gufo synth --arch $arch --shape $shape failed" >&2; exit 1; }
    fi
    for i in "${!names[@]}"; do
      echo "## $arch $shape ${names[$i]} (round $round)"
      # shellcheck disable=SC2086  # BENCH is a list of flags
      "${bins[$i]}" bench --device cuda -m "$model" ${BENCH:--p 512 -n 128 -d 0,4096 -r 2} 2>&1 | grep -E "^\| .*(pp|tg)"
    done
  done
done
