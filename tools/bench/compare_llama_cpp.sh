#!/usr/bin/env bash
# `gufo bench` beside llama.cpp's llama-bench built from source for this machine
# (tools/bench/build_llama_cpp.sh cpu: GGML_NATIVE) on the same GGUFs and threads, run back to
# back per model so both see the same machine state (on a shared VM, memory bandwidth, and so
# decode speed, drifts by 30%+ over minutes). ROUNDS=2 runs the whole twice (the order of the
# two engines swapped in the second round), so that drift shows as a difference of rounds.
# Usage: [ROUNDS=N] [LLAMA_BENCH=PATH] tools/bench/compare_llama_cpp.sh GUFO_BINARY THREADS MODEL.gguf...
#   LLAMA_BENCH: default build/llama.cpp-cpu/bin/llama-bench. (Until session 17 this script ran
#   node-llama-cpp's prebuilt CPU backend instead: BENCHMARKS.md's rows of sessions 4 and 5.)
# On a busy machine, run it as `nice -n -20` (and with the kernel's autogroup off:
# /proc/sys/kernel/sched_autogroup_enabled = 0) so that other processes cannot preempt the
# spinning worker threads of either engine. Not chrt: llama.cpp's spin-waits livelock under
# SCHED_FIFO when its threads outnumber the cores.
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: compare_llama_cpp.sh GUFO_BINARY THREADS MODEL.gguf..." >&2; exit 2; }
gufo=$1
threads=$2
shift 2
root="$(cd "$(dirname "$0")/../.." && pwd)"
llama_bench=${LLAMA_BENCH:-$root/build/llama.cpp-cpu/bin/llama-bench}
[[ -x $llama_bench ]] || { echo "compare_llama_cpp: no $llama_bench (tools/bench/build_llama_cpp.sh cpu builds it)" >&2; exit 1; }
run_gufo() { "$gufo" bench -m "$1" -p 512 -n 128 -r 3 -t "$threads" | tail -n +3; }
run_llama() { "$llama_bench" -m "$1" -p 512 -n 128 -r 3 -t "$threads" -o md | tail -n +3; }
rounds=${ROUNDS:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare_llama_cpp.sh: ROUNDS must be a whole number from 1, not '$rounds'" >&2; exit 2; }
for round in $(seq "$rounds"); do
  for model in "$@"; do
    echo "## $(basename "$model") (round $round)"
    if ((round % 2 == 1)); then run_gufo "$model"; run_llama "$model"; else run_llama "$model"; run_gufo "$model"; fi
  done
done
