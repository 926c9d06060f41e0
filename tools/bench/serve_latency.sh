#!/usr/bin/env bash
# gufo serve beside llama-server (built from source by build_llama_cpp.sh cpu) on one model:
# sequential one-token requests over one kept-alive connection (keepalive_latency.mjs),
# the servers taking turns, ROUNDS times each.
# Usage: tools/bench/serve_latency.sh [MODEL] [ROUNDS=3] [THREADS=2]
# Env: GUFO (default build/default/bin/gufo), LLAMA_SERVER (default
# build/llama.cpp-cpu/bin/llama-server), GUFO_BEFORE (optional: an older gufo, for a
# before/after comparison in the same run).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model=${1:-$root/models/gufo-tiny-q8_0.gguf}
rounds=${2:-3}
threads=${3:-2}
gufo=${GUFO:-$root/build/default/bin/gufo}
llama=${LLAMA_SERVER:-$root/build/llama.cpp-cpu/bin/llama-server}
for b in "$gufo" "$llama"; do [[ -x "$b" ]] || { echo "serve_latency.sh: no $b" >&2; exit 2; }; done
log=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$log"' EXIT

# Starts a server in the background and waits until /health answers 200.
start() {
  local name=$1 port=$2
  shift 2
  "$@" >"$log/$name.log" 2>&1 &
  for _ in $(seq 1 600); do
    if [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" == 200 ]] &&
       [[ "$name" != gufo || "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/ready")" == 200 ]]; then
      return 0
    fi
    sleep 0.1
  done
  echo "serve_latency.sh: $name did not start:" >&2
  cat "$log/$name.log" >&2
  exit 1
}

start gufo 18181 "$gufo" serve -m "$model" --port 18181 -t "$threads" --parallel 1 --log-disable
start llama-server 18182 "$llama" -m "$model" --port 18182 -t "$threads" --parallel 1 -c 2048
if [[ -n "${GUFO_BEFORE:-}" ]]; then
  start gufo 18183 "$GUFO_BEFORE" serve -m "$model" --port 18183 -t "$threads" --parallel 1
fi
echo "model $(basename "$model"), $threads threads, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
for r in $(seq 1 "$rounds"); do
  node "$root/tools/bench/keepalive_latency.mjs" http://127.0.0.1:18181 30 "gufo serve (round $r)"
  node "$root/tools/bench/keepalive_latency.mjs" http://127.0.0.1:18182 30 "llama-server (round $r)"
  if [[ -n "${GUFO_BEFORE:-}" ]]; then
    node "$root/tools/bench/keepalive_latency.mjs" http://127.0.0.1:18183 30 "gufo serve before (round $r)"
  fi
done
