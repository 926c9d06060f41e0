// llama.cpp's CPU backend timed the way `gufo bench` times Gufo, on the same GGUF and threads:
// pp<P> = one batch of P tokens into an empty context; tg<N> = N tokens generated one per
// step after one prompt token; `@ d<D>` first fills D tokens of context. Tokens are random
// ids (like llama-bench), t/s mean ± sample stdev over -r repetitions after one warm-up.
// The engine is llama.cpp as node-llama-cpp ships it prebuilt (no build, no GPU).
// Usage (after `npm ci --omit=optional --ignore-scripts` here):
//   node llama_cpp_bench.mjs -m M.gguf [-p 512] [-n 128] [-d 0] [-r 3] [-t 2]
import {getLlama} from "node-llama-cpp";
import {parseArgs} from "node:util";
import {statSync} from "node:fs";

const {values} = parseArgs({
  options: {
    model: {type: "string", short: "m"},
    prompt: {type: "string", short: "p", default: "512"},
    gen: {type: "string", short: "n", default: "128"},
    depth: {type: "string", short: "d", default: "0"},
    reps: {type: "string", short: "r", default: "3"},
    threads: {type: "string", short: "t", default: "2"},
  },
});
if (!values.model) {
  console.error("llama_cpp_bench: -m M.gguf is required");
  process.exit(2);
}
const list = (text) => text.split(",").filter((s) => s !== "").map(Number);
const prompts = list(values.prompt);
const gens = list(values.gen);
const depths = list(values.depth);
const reps = Number(values.reps);
const threads = Number(values.threads);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: values.model, gpuLayers: 0});
const maxTokens = Math.max(...depths) + Math.max(...prompts, 1) + Math.max(...gens, 1) + 8;
const context = await model.createContext({
  contextSize: maxTokens,
  batchSize: Math.max(512, ...prompts),
  threads,
  sequences: 1,
});
const sequence = context.getSequence();
const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? 1000;
let seed = 1234;
const randomTokens = (n) => {
  const out = [];
  for (let i = 0; i < n; ++i) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    out.push(seed % nVocab);
  }
  return out;
};

async function fill(depth) {
  await sequence.clearHistory();
  if (depth > 0) await sequence.evaluateWithoutGeneratingNewTokens(randomTokens(depth));
}

async function timePrompt(depth, n) {
  await fill(depth);
  const tokens = randomTokens(n);
  const start = process.hrtime.bigint();
  await sequence.evaluateWithoutGeneratingNewTokens(tokens);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function timeGen(depth, n) {
  await fill(depth);
  // One token in, then n single-token steps, each sampled greedily.
  let produced = 0;
  const start = process.hrtime.bigint();
  for await (const token of sequence.evaluate(randomTokens(1), {temperature: 0})) {
    if (++produced >= n) break;
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function stats(rates) {
  const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
  const variance = rates.length > 1 ? rates.reduce((a, b) => a + (b - mean) ** 2, 0) / (rates.length - 1) : 0;
  return {mean, stdev: Math.sqrt(variance)};
}

const sizeGiB = statSync(values.model).size / 2 ** 30;
const rows = [];
for (const depth of depths) {
  for (const [kind, counts] of [["pp", prompts], ["tg", gens]]) {
    for (const n of counts) {
      if (n <= 0) continue;
      const time = kind === "pp" ? timePrompt : timeGen;
      await time(depth, n);  // warm-up
      const rates = [];
      for (let r = 0; r < reps; ++r) rates.push(n / (await time(depth, n)));
      const {mean, stdev} = stats(rates);
      rows.push({test: `${kind}${n}${depth > 0 ? ` @ d${depth}` : ""}`, mean, stdev});
    }
  }
}
console.log(`| model | size | backend | threads | test | t/s |`);
console.log(`| --- | ---: | --- | ---: | --- | ---: |`);
const name = values.model.split("/").pop();
for (const row of rows) {
  console.log(`| ${name} | ${sizeGiB.toFixed(2)} GiB | llama.cpp CPU (node-llama-cpp 3.22.1) | ${threads} | ${row.test} | ` +
              `${row.mean.toFixed(2)} ± ${row.stdev.toFixed(2)} |`);
}
await context.dispose();
await model.dispose();
