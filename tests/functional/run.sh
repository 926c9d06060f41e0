#!/usr/bin/env bash
# Runs the functional suite of `gufo serve` (or some of its profiles) against a real server:
#   tests/functional/run.sh                      every profile
#   tests/functional/run.sh sampling errors      those profiles only
# Profiles: sampling, cache, concurrency, long_context, errors, tools, reasoning, lifecycle, anthropic,
# responses, models, chat_page, embeddings, structured, pressure, speculative (one file each,
# *.test.mjs).
# GUFO_BINARY (default build/default/bin/gufo) and GUFO_MODEL (default the shipped
# models/gufo-tiny-q8_0.gguf) choose what is tested. Installs the pinned client on first use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ ! -d "$here/node_modules/openai" || ! -d "$here/node_modules/@anthropic-ai/sdk" || ! -d "$here/node_modules/puppeteer-core" || ! -d "$here/node_modules/ajv" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
profiles=("$@")
if ((${#profiles[@]} == 0)); then profiles=(sampling cache concurrency long_context errors tools reasoning lifecycle anthropic responses models chat_page embeddings structured pressure speculative); fi
files=()
for p in "${profiles[@]}"; do
  [[ -f "$here/$p.test.mjs" ]] || { echo "run.sh: no profile '$p' (have: sampling cache concurrency long_context errors tools reasoning lifecycle anthropic responses models chat_page embeddings structured pressure speculative)" >&2; exit 2; }
  files+=("$here/$p.test.mjs")
done
exec node --test --test-concurrency=1 "${files[@]}"
