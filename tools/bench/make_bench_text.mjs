// Writes the ~1 MiB mixed text that the tokenizer benchmark encodes (tools/bench/README.md).
// Deterministic: built only from files pinned by tests/js/package-lock.json and the corpus in
// tests/data/tokenizer, so every machine benchmarks the same bytes.
// Mix: Markdown prose and TypeScript code from the pinned npm packages, in sorted path order,
// with one multilingual corpus case (CJK, Arabic, Hindi, emoji, ...) after every ~2 KB.
// Usage: node tools/bench/make_bench_text.mjs OUT.txt
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TARGET_BYTES = 1 << 20;
const CASE_EVERY_BYTES = 2048;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const modules = path.join(root, "tests/js/node_modules");
const corpus = JSON.parse(readFileSync(path.join(root, "tests/data/tokenizer/corpus.json"), "utf8")).cases;

function walk(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

const files = walk(modules, []).filter(
  (f) => /\.(md|ts)$/.test(f) && !f.endsWith(".map") && statSync(f).size < 200_000);
const prose = files.filter((f) => f.endsWith(".md"));
const code = files.filter((f) => f.endsWith(".ts"));
if (prose.length === 0 || code.length === 0) {
  console.error(`make_bench_text: no .md/.ts files under ${modules}; run npm ci in tests/js`);
  process.exit(1);
}

// Alternate prose and code files so the mix holds through the whole text.
const sources = [];
for (let i = 0; i < Math.max(prose.length, code.length); ++i) {
  if (i < prose.length) sources.push(prose[i]);
  if (i < code.length) sources.push(code[i]);
}

const parts = [];
let bytes = 0;
let since_case = 0;
let case_index = 0;
outer: for (const file of sources) {
  for (const line of readFileSync(file, "utf8").split(/(?<=\n)/)) {
    parts.push(line);
    bytes += Buffer.byteLength(line);
    since_case += Buffer.byteLength(line);
    if (since_case >= CASE_EVERY_BYTES) {
      const text = corpus[case_index++ % corpus.length] + "\n";
      parts.push(text);
      bytes += Buffer.byteLength(text);
      since_case = 0;
    }
    if (bytes >= TARGET_BYTES) break outer;
  }
}
const out = process.argv[2];
if (!out) {
  console.error("usage: node tools/bench/make_bench_text.mjs OUT.txt");
  process.exit(2);
}
writeFileSync(out, parts.join(""));
console.log(`${out}: ${bytes} bytes from ${sources.length} files, ${case_index} corpus cases`);
