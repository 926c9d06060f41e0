// Profile `embeddings`: POST /v1/embeddings with OpenAI's own client. The vectors are held to
// llama.cpp's (tests/data/embeddings/llama_cpp.json, written by
// tools/llama_reference/embeddings.mjs with llama-server built from source) for the three
// poolings: last (gufo-tiny made an embedding model as Qwen3-Embedding's GGUFs are:
// qwen3.pooling_type = 3 and tokenizer.ggml.add_eos_token, set by `gufo quantize
// --override-kv`), mean (the shipped model, which declares no pooling) and cls (--pooling).
// They do not depend on batching: a batch of inputs, one input alone, and prompts cut into
// small steps give the same bits. Bad requests get OpenAI's 400s naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { binary, model, startServer, tokenize } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const reference = JSON.parse(readFileSync(path.join(here, '../data/embeddings/llama_cpp.json'), 'utf8'));
const refCase = (name) => reference.cases.find((c) => c.name === name);
// NOTE(embeddings): measured on gufo-tiny q8_0, 2026-12-05: 1 - cosine <= 1.7e-4 and
// |difference| <= 2.7e-3 per component against llama.cpp (both quantize activations to
// Q8_0, in different orders); the limits are about twice that.
const kMaxCosineGap = 4e-4;
const kMaxComponentGap = 6e-3;

let scratch;
let embedModel;
before(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'gufo-embeddings-'));
  embedModel = path.join(scratch, 'gufo-tiny-embed-q8_0.gguf');
  execFileSync(binary, ['quantize', model, embedModel, 'q8_0', '--quiet', '--override-kv', 'qwen3.pooling_type=int:3',
    '--override-kv', 'tokenizer.ggml.add_eos_token=bool:true']);
});
after(() => rmSync(scratch, { recursive: true, force: true }));

const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);
const norm = (a) => Math.sqrt(dot(a, a));

// Each vector is a unit vector within the limits of its reference, and nearer to it than to
// any other input's reference (so that a wrong pooling or a lost EOS cannot pass).
function assertMatchesReference(vectors, expected, what) {
  assert.equal(vectors.length, expected.length);
  vectors.forEach((v, i) => {
    assert.equal(v.length, expected[i].length, `${what}[${i}] width`);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5, `${what}[${i}] is not a unit vector: ${norm(v)}`);
    const gap = 1 - dot(v, expected[i]);
    const worst = Math.max(...v.map((x, j) => Math.abs(x - expected[i][j])));
    assert.ok(gap <= kMaxCosineGap, `${what}[${i}]: 1 - cosine ${gap}`);
    assert.ok(worst <= kMaxComponentGap, `${what}[${i}]: largest component difference ${worst}`);
    expected.forEach((other, j) => {
      // (cls: inputs 3 and 4 begin with the same token, so their references are one vector)
      if (j !== i && JSON.stringify(other) !== JSON.stringify(expected[i])) {
        assert.ok(1 - dot(v, other) > gap, `${what}[${i}] is as near input ${j}'s reference as its own`);
      }
    });
  });
}

const embed = async (client, input, extra = {}) => (await client.embeddings.create({ input, ...extra }));
const vectorsOf = (answer) => answer.data.sort((a, b) => a.index - b.index).map((d) => Array.from(d.embedding));

for (const { name, args, modelOf } of [
  { name: 'last', args: [], modelOf: () => embedModel },
  { name: 'mean', args: [], modelOf: () => model },
  { name: 'cls', args: ['--pooling', 'cls'], modelOf: () => model },
]) {
  test(`${name} pooling: llama.cpp's vectors, whatever the batch`, async () => {
    const expected = refCase(name).vectors;
    const server = await startServer(args, { modelPath: modelOf() });
    const chunked = await startServer([...args, '-b', '16'], { modelPath: modelOf() });  // prompts in 16-token steps
    try {
      const client = server.client();
      // All five inputs in one request, as the client sends them by default (base64).
      const texts = reference.inputs.slice(0, 4);
      const batched = await embed(client, texts);
      const ids = await embed(client, reference.inputs[4]);
      const vectors = [...vectorsOf(batched), ...vectorsOf(ids)];
      assertMatchesReference(vectors, expected, name);

      // usage counts every token the model saw: EOS closes each text of the embedding model.
      const eos = name === 'last' ? 1 : 0;
      const counted = texts.reduce((n, t) => n + tokenize(t, { special: true }).length + eos, 0);
      assert.equal(batched.usage.prompt_tokens, counted);
      assert.equal(batched.usage.total_tokens, counted);

      // One at a time, as floats, and through 16-token steps: the same bits.
      for (let i = 0; i < texts.length; ++i) {
        const alone = vectorsOf(await embed(client, texts[i], { encoding_format: 'float' }))[0];
        assert.deepEqual(Float32Array.from(alone), Float32Array.from(vectors[i]), `input ${i} alone`);
      }
      assert.deepEqual(vectorsOf(await embed(chunked.client(), texts)), vectors.slice(0, 4));
    } finally {
      assert.equal(await chunked.stop(), 0);
      assert.equal(await server.stop(), 0);
    }
  });
}

test('dimensions: the first N components, made unit length again', async () => {
  const server = await startServer([]);
  try {
    const client = server.client();
    const full = vectorsOf(await embed(client, 'hello world'))[0];
    const short = vectorsOf(await embed(client, 'hello world', { dimensions: 64 }))[0];
    assert.equal(short.length, 64);
    const head = full.slice(0, 64);
    const scale = norm(head);
    short.forEach((x, i) => assert.ok(Math.abs(x - head[i] / scale) < 1e-6, `component ${i}`));
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('embeddings beside a running generation leave both answers as they are alone', async () => {
  const server = await startServer([]);
  try {
    const client = server.client();
    const question = { messages: [{ role: 'user', content: 'What does grep do?' }], max_tokens: 48, temperature: 0 };
    const aloneAnswer = (await client.chat.completions.create(question)).choices[0].message.content;
    const aloneVector = vectorsOf(await embed(client, reference.inputs[2]))[0];
    const [answer, vectors] = await Promise.all([
      client.chat.completions.create(question),
      Promise.all(Array.from({ length: 3 }, () => embed(client, reference.inputs[2]))),
    ]);
    assert.equal(answer.choices[0].message.content, aloneAnswer);
    for (const v of vectors) assert.deepEqual(vectorsOf(v)[0], aloneVector);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('bad requests: 400 naming the field, 404 for an unknown model', async () => {
  const server = await startServer(['-c', '64']);
  const none = await startServer(['--pooling', 'none']);
  try {
    const post = async (s, body) => {
      const res = await s.fetch('/v1/embeddings', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
      });
      return { status: res.status, error: (await res.json()).error };
    };
    const cases = [
      [{}, 'input', /required/],
      [{ input: '' }, 'input', /empty string/],
      [{ input: [] }, 'input', /empty array/],
      [{ input: ['a', 3] }, 'input', /input\[1\]/],
      [{ input: [1, 'a'] }, 'input', /mixes token ids/],
      [{ input: [[1, 2], []] }, 'input', /input\[1\]' is an empty array/],
      [{ input: [99999] }, 'input', /token id 99999/],
      [{ input: { text: 'a' } }, 'input', /must be a string/],
      [{ input: Array(2049).fill('a') }, 'input', /at most 2048/],
      [{ input: 'a', encoding_format: 'int8' }, 'encoding_format', /float.*base64/],
      [{ input: 'a', dimensions: 0 }, 'dimensions', /1 to the model's 512/],
      [{ input: 'a', dimensions: 513 }, 'dimensions', /1 to the model's 512/],
      [{ input: 'word '.repeat(100) }, 'input', /context holds 64/],
    ];
    for (const [body, param, message] of cases) {
      const { status, error } = await post(server, body);
      assert.equal(status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(error.param, param, JSON.stringify(body).slice(0, 80));
      assert.match(error.message, message);
    }
    const unknown = await post(server, { input: 'a', model: 'nope' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.error.code, 'model_not_found');
    const pooled = await post(none, { input: 'a' });
    assert.equal(pooled.status, 400);
    assert.equal(pooled.error.code, 'model_not_supported');
    assert.match(pooled.error.message, /pools with 'none'/);
    // Still serving after all that.
    assert.equal((await post(server, { input: 'a' })).status, 200);
  } finally {
    assert.equal(await none.stop(), 0);
    assert.equal(await server.stop(), 0);
  }
});
