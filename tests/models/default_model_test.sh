#!/bin/bash
# Commands without -m (run, chat, quality, tokenize, detokenize, render-template) use the
# shipped gufo-tiny (src/cli/default_model.h); a GUFO_MODEL that names a missing file is one
# line on stderr and exit 1; greedy decoding of the tool-call prompt gives a well-formed
# <tool_call>.
#   default_model_test.sh GUFO_BINARY TOOL_CALL_PROMPT_JSON      (run by ctest: model_default)
set -u
gufo=$1
prompt_json=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A fixed seed: run draws a new one each time, and some seeds end the text early (EOS).
out=$("$gufo" run -p "The GNU Project" -n 24 --seed 1 2>"$tmp/err") || fail "run without -m: $(cat "$tmp/err")"
[ "${#out}" -ge 40 ] || fail "run without -m printed too little: '$out'"

models=$(dirname "$prompt_json")/../../models
"$gufo" quality --text "$models/reference/gufo-tiny.txt" --reference "$models/reference/gufo-tiny.npy" \
  >"$tmp/quality" 2>"$tmp/err" || fail "quality without -m: $(cat "$tmp/err")"
grep -q '^top-1' "$tmp/quality" || fail "quality without -m: no top-1 line in '$(cat "$tmp/quality")'"
chat=$(echo "What does ls do?" | "$gufo" chat -n 24 --temp 0 2>"$tmp/err") || fail "chat without -m: $(cat "$tmp/err")"
[ -n "$chat" ] || fail "chat without -m printed nothing"

ids=$(printf 'hello world' | "$gufo" tokenize --json 2>"$tmp/err") || fail "tokenize without -m: $(cat "$tmp/err")"
[[ "$ids" =~ ^\[[0-9]+(,[0-9]+)*\]$ ]] || fail "tokenize without -m: '$ids'"
text=$(printf '%s' "$ids" | "$gufo" detokenize 2>"$tmp/err") || fail "detokenize without -m: $(cat "$tmp/err")"
[ "$text" = "hello world" ] || fail "detokenize without -m: '$text'"

"$gufo" render-template --messages "$prompt_json" >"$tmp/prompt.txt" 2>"$tmp/err" ||
  fail "render-template without -m: $(cat "$tmp/err")"
grep -q '^<tools>$' "$tmp/prompt.txt" || fail "the rendered tool prompt has no <tools> block"
prompt=$(cat "$tmp/prompt.txt"; echo .)  # keep the trailing newline of the generation prompt
answer=$("$gufo" run -p "${prompt%.}" -n 96 --temp 0 --stop '</tool_call>' 2>"$tmp/err") ||
  fail "run on the tool prompt: $(cat "$tmp/err")"
[[ "$answer" == *'<tool_call>'*'{"name": "get_weather", "arguments": {'* ]] ||
  fail "greedy answer to the tool prompt has no get_weather call: '$answer'"

GUFO_MODEL="$tmp/missing.gguf" "$gufo" run -p hi -n 1 >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" -eq 1 ] || fail "missing GUFO_MODEL: exit code $code"
# (a CUDA build on a machine without a GPU first notes that --device auto uses the CPU)
[ "$(grep -v ': using the CPU: ' "$tmp/err")" = "gufo: error: GUFO_MODEL=$tmp/missing.gguf: no such model file" ] ||
  fail "missing GUFO_MODEL: '$(cat "$tmp/err")'"
[ ! -s "$tmp/out" ] || fail "missing GUFO_MODEL: printed '$(cat "$tmp/out")'"

mkdir "$tmp/empty"
GUFO_MODELS_DIR="$tmp/empty" "$gufo" tokenize --json <<<"x" >/dev/null 2>"$tmp/err" ||
  fail "GUFO_MODELS_DIR without the model should fall through to the next folder: $(cat "$tmp/err")"

if [ "$failures" -eq 0 ]; then echo "default model: all checks passed"; fi
exit "$failures"
