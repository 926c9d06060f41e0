// Writes tests/data/embeddings/llama_cpp.json: llama.cpp's /v1/embeddings answers (llama-server
// built from source by tools/bench/build_llama_cpp.sh cpu) for the shipped gufo-tiny, as the
// independent reference tests/functional/embeddings.test.mjs holds Gufo's answers to.
// Three cases, one pooling each:
//   last: gufo-tiny made an embedding model the way Qwen3-Embedding's GGUFs are
//         (qwen3.pooling_type = 3, tokenizer.ggml.add_eos_token = true), by
//         `gufo quantize ... q8_0 --override-kv` (the tensors are copied unchanged);
//         llama-server reads both keys from the file.
//   mean: gufo-tiny-q8_0 as shipped (no pooling key: Gufo pools mean), llama-server --pooling mean.
//   cls:  gufo-tiny-q8_0, both servers told --pooling cls.
// Usage: node tools/llama_reference/embeddings.mjs [GUFO] [LLAMA_SERVER]
//   defaults: build/default/bin/gufo, build/llama.cpp-cpu/bin/llama-server
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const gufo = process.argv[2] ?? path.join(root, 'build/default/bin/gufo');
const llamaServer = process.argv[3] ?? path.join(root, 'build/llama.cpp-cpu/bin/llama-server');
const shipped = path.join(root, 'models/gufo-tiny-q8_0.gguf');
const work = mkdtempSync(path.join(tmpdir(), 'gufo-embd-'));
const embedModel = path.join(work, 'gufo-tiny-embed-q8_0.gguf');
execFileSync(gufo, ['quantize', shipped, embedModel, 'q8_0', '--quiet', '--override-kv', 'qwen3.pooling_type=int:3',
  '--override-kv', 'tokenizer.ggml.add_eos_token=bool:true'], { stdio: 'inherit' });

// Short and long texts, special tokens written as text, and token ids taken as they are.
const longText = readFileSync(path.join(root, 'models/reference/gufo-tiny.txt'), 'utf8');
const inputs = [
  'hello world',
  'The quick brown fox jumps over the lazy dog.',
  longText,
  '<|im_start|>user\nWhat does grep -c do?<|im_end|>',
  [8184, 872, 198, 2195, 8185],
];

async function waitReady(port) {
  for (let i = 0; i < 300; ++i) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      if (res.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`llama-server on port ${port} did not become ready`);
}

async function embeddings(model, extraArgs, port) {
  const server = spawn(llamaServer, ['-m', model, '--port', String(port), '--embedding', '-t', '2', '-c', '2048',
    '-b', '2048', '-ub', '2048', '--parallel', '1', ...extraArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => { log += d; });
  try {
    await waitReady(port);
    const vectors = [];
    for (const input of inputs) {  // one at a time: the answer must not depend on batching
      const res = await fetch(`http://127.0.0.1:${port}/v1/embeddings`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ input, encoding_format: 'float' }),
      });
      const body = await res.json();
      if (!res.ok) throw new Error(`llama-server: ${JSON.stringify(body)}`);
      vectors.push(body.data[0].embedding);
    }
    return vectors;
  } catch (e) {
    process.stderr.write(log);
    throw e;
  } finally {
    server.kill('SIGTERM');
  }
}

// The commit of the source that tools/bench/build_llama_cpp.sh built (node-llama-cpp's bundle).
const commit = execFileSync('git', ['-C', path.join(root, 'build/llama.cpp-src/llama.cpp'), 'rev-parse', 'HEAD'])
  .toString().trim();
const cases = [
  { name: 'last', model: 'gufo-tiny-embed', pooling: 'last', vectors: await embeddings(embedModel, [], 18291) },
  { name: 'mean', model: 'gufo-tiny-q8_0', pooling: 'mean', vectors: await embeddings(shipped, ['--pooling', 'mean'], 18292) },
  { name: 'cls', model: 'gufo-tiny-q8_0', pooling: 'cls', vectors: await embeddings(shipped, ['--pooling', 'cls'], 18293) },
];
const out = path.join(root, 'tests/data/embeddings/llama_cpp.json');
writeFileSync(out, JSON.stringify({
  about: 'llama-server /v1/embeddings (L2-normalized) for the shipped gufo-tiny; written by tools/llama_reference/embeddings.mjs',
  llama_cpp_commit: commit,
  inputs,
  cases,
}) + '\n');
console.log(`wrote ${out}`);
