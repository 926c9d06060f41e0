// Embedding throughput of gufo serve beside llama-server (built from source by
// tools/bench/build_llama_cpp.sh cpu) on one model, one after the other on the same machine:
// ROUNDS rounds of one request of BATCH inputs (the held-out reference text of
// models/reference, cut into pieces of about 100 tokens), each server with the same threads,
// PARALLEL sequences at once in both (--parallel) and mean pooling.
// Usage: node tools/bench/embeddings_bench.mjs MODEL.gguf [THREADS] [BATCH] [ROUNDS] [PARALLEL]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const [model, threads = '2', batch = '32', rounds = '5', parallel = '4'] = process.argv.slice(2);
if (!model) {
  console.error('usage: node tools/bench/embeddings_bench.mjs MODEL.gguf [THREADS] [BATCH] [ROUNDS]');
  process.exit(2);
}
const gufo = process.env.GUFO_BINARY ?? path.join(root, 'build/default/bin/gufo');
const llama = process.env.LLAMA_SERVER ?? path.join(root, 'build/llama.cpp-cpu/bin/llama-server');
const words = readFileSync(path.join(root, 'models/reference/gufo-tiny.txt'), 'utf8').split(/\s+/);
const inputs = Array.from({ length: Number(batch) }, (_, i) => {
  const start = (i * 37) % Math.max(1, words.length - 60);
  return words.slice(start, start + 60).join(' ');
});

async function run(name, command, args, port) {
  const child = spawn(command, args, { stdio: 'ignore' });
  try {
    for (let i = 0; ; ++i) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i > 600) throw new Error(`${name} did not start`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const once = async () => {
      const t0 = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/v1/embeddings`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ input: inputs, encoding_format: 'float' }),
      });
      const body = await res.json();
      if (!res.ok) throw new Error(`${name}: ${JSON.stringify(body)}`);
      return { ms: performance.now() - t0, tokens: body.usage.prompt_tokens };
    };
    await once();  // warm-up
    const times = [];
    let tokens = 0;
    for (let r = 0; r < Number(rounds); ++r) {
      const { ms, tokens: t } = await once();
      times.push(ms);
      tokens = t;
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    console.log(`| ${name} | ${inputs.length} | ${tokens} | ${median.toFixed(0)} | ${(tokens / (median / 1000)).toFixed(0)} |`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.on('close', r));
  }
}

console.log(`model ${path.basename(model)}, ${threads} threads, --parallel ${parallel}, median of ${rounds} requests`);
console.log('| server | inputs | tokens | ms per request | tokens/s |\n|---|---:|---:|---:|---:|');
await run('gufo serve', gufo, ['serve', '-m', model, '--port', '18391', '-t', threads, '--parallel', parallel,
  '--log-disable', '--pooling', 'mean'], 18391);
await run('llama-server', llama, ['-m', model, '--port', '18392', '-t', threads, '--parallel', parallel, '--embedding',
  '--pooling', 'mean', '-c', '4096', '-b', '2048', '-ub', '2048'], 18392);
