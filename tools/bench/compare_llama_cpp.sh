#!/usr/bin/env bash
# `gufo bench` and llama.cpp's CPU backend (tools/bench/llama_cpp) on the same GGUFs and
# threads, run back to back per model so both see the same machine state (on a shared VM,
# memory bandwidth, and so decode speed, drifts by 30%+ over minutes).
# Usage: tools/bench/compare_llama_cpp.sh GUFO_BINARY THREADS MODEL.gguf...
# Needs `npm install --omit=optional --ignore-scripts` in tools/bench/llama_cpp first (it keeps
# the lock file; npm 11's `npm ci` rejects the lock for lacking the other platforms' optional
# packages). On a busy machine, run it as `nice -n -20` (and with the kernel's autogroup off:
# /proc/sys/kernel/sched_autogroup_enabled = 0) so that other processes cannot preempt the
# spinning worker threads of either engine. Not chrt: llama.cpp's spin-waits livelock under
# SCHED_FIFO when its threads outnumber the cores.
set -euo pipefail
gufo=$1
threads=$2
shift 2
here="$(cd "$(dirname "$0")" && pwd)"
for model in "$@"; do
  echo "## $(basename "$model")"
  "$gufo" bench -m "$model" -p 512 -n 128 -r 3 -t "$threads" | tail -n +3
  node "$here/llama_cpp/llama_cpp_bench.mjs" -m "$model" -p 512 -n 128 -r 3 -t "$threads" | tail -n +3
done
