// Profile `models`: several models in one server. `--models-dir` lists every GGUF under
// /v1/models and a request picks one by id; each answers as a server of that model alone
// would; models load on first use and at most --max-loaded stay (the least recently used
// goes, and comes back when asked for); a model that cannot load fails its requests, not
// the server; `-m` given twice serves both, the first as the default, and /metrics has each
// one's engine series under its own model label.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, launchServer, model, greedy } from './lib/harness.mjs';

const modelsDir = path.dirname(model);
const question = [{ role: 'user', content: 'What is GNU?' }];
const ask = (client, id) => client.chat.completions.create({ model: id, messages: question, max_tokens: 24, ...greedy });
const loadedIds = async (client) => (await client.models.list()).data.filter((m) => m.loaded).map((m) => m.id);

let scratch;
before(() => { scratch = mkdtempSync(path.join(tmpdir(), 'gufo-models-')); });
after(() => rmSync(scratch, { recursive: true, force: true }));

test('--models-dir: every GGUF listed, each answering as itself, at most --max-loaded loaded', async () => {
  const server = await startServer(['--models-dir', modelsDir, '--max-loaded', '2'], { modelPath: null });
  const alone = await startServer([]);  // the shipped model by itself: the oracle for its answers
  try {
    const client = server.client();
    const ids = (await client.models.list()).data.map((m) => m.id);
    assert.deepEqual(ids, ['gufo-tiny-draft-q8_0', 'gufo-tiny-moe-q8_0', 'gufo-tiny-q4_k_m', 'gufo-tiny-q8_0']);
    assert.deepEqual(await loadedIds(client), ['gufo-tiny-draft-q8_0']);  // the default, loaded at start

    const answer = await ask(client, 'gufo-tiny-q8_0');
    assert.equal(answer.model, 'gufo-tiny-q8_0');
    assert.equal(answer.choices[0].message.content, (await ask(alone.client())).choices[0].message.content);
    const retrieved = await client.models.retrieve('gufo-tiny-q8_0');
    assert.equal(retrieved.loaded, true);
    assert.ok(retrieved.max_model_len > 0);

    // Two models loaded (the default and q8_0); a third one sends the least recently used away.
    const moe = await ask(client, 'gufo-tiny-moe-q8_0');
    assert.equal(moe.model, 'gufo-tiny-moe-q8_0');
    assert.deepEqual((await loadedIds(client)).sort(), ['gufo-tiny-moe-q8_0', 'gufo-tiny-q8_0']);
    // Asked again, the default comes back (and q8_0, now the oldest, goes).
    const back = await client.chat.completions.create({ messages: question, max_tokens: 4, ...greedy });
    assert.equal(back.model, 'gufo-tiny-draft-q8_0');
    assert.deepEqual((await loadedIds(client)).sort(), ['gufo-tiny-draft-q8_0', 'gufo-tiny-moe-q8_0']);

    // Requests racing for a model that is not loaded share its one load.
    const many = await Promise.all(Array.from({ length: 4 }, () => ask(client, 'gufo-tiny-q4_k_m')));
    assert.ok(many.every((r) => r.choices[0].message.content === many[0].choices[0].message.content));
    assert.equal((server.log().match(/loaded gufo-tiny-q4_k_m:/g) ?? []).length, 1);

    await assert.rejects(ask(client, 'llama-70b'), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError);
      assert.ok(e.message.includes("'gufo-tiny-q8_0'"), e.message);  // says what there is
      return true;
    });
  } finally {
    assert.equal(await server.stop(), 0);
    assert.equal(await alone.stop(), 0);
  }
});

test('a model that cannot be loaded fails its requests, not the server', async () => {
  const dir = path.join(scratch, 'mixed');
  mkdirSync(dir);
  copyFileSync(model, path.join(dir, 'a-good.gguf'));
  writeFileSync(path.join(dir, 'b-broken.gguf'), Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(60, 0xff)]));
  const server = await startServer(['--models-dir', dir], { modelPath: null });
  try {
    const client = server.client();
    for (let i = 0; i < 2; ++i) {  // and again: it is tried again, and fails again
      await assert.rejects(ask(client, 'b-broken'), (e) => {
        assert.equal(e.status, 500);
        assert.equal(e.code, 'model_load_failed');
        assert.ok(e.message.includes("model 'b-broken' could not be loaded"), e.message);
        return true;
      });
    }
    assert.equal((await ask(client, 'a-good')).model, 'a-good');
    assert.equal((await server.fetch('/ready')).status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('-m given twice serves both, the first as the default; duplicate ids are refused', async () => {
  const moePath = path.join(modelsDir, 'gufo-tiny-moe-q8_0.gguf');
  const server = await startServer(['-m', moePath], {});  // harness: -m <shipped model> first
  try {
    const client = server.client();
    assert.deepEqual((await client.models.list()).data.map((m) => m.id), ['gufo-tiny-q8_0', 'gufo-tiny-moe-q8_0']);
    assert.equal((await client.chat.completions.create({ messages: question, max_tokens: 2 })).model, 'gufo-tiny-q8_0');
    assert.equal((await ask(client, 'gufo-tiny-moe-q8_0')).model, 'gufo-tiny-moe-q8_0');
    // /metrics: one series per loaded model, each counting its own requests and tokens.
    await ask(client, 'gufo-tiny-moe-q8_0');
    const m = await server.metrics();
    assert.equal(m['gufo_requests_total{model="gufo-tiny-q8_0",outcome="ok"}'], 1);
    assert.equal(m['gufo_requests_total{model="gufo-tiny-moe-q8_0",outcome="ok"}'], 2);
    assert.equal(m['gufo_completion_tokens_total{model="gufo-tiny-q8_0"}'], 2);
    const moe = await server.engineMetrics('gufo-tiny-moe-q8_0');
    assert.ok(moe.gufo_completion_tokens_total > 2 && moe.gufo_completion_tokens_total <= 48);
    assert.equal(moe.gufo_time_to_first_token_seconds_count, 2);
    assert.equal((await server.engineMetrics()).gufo_time_to_first_token_seconds_count, 1);  // the default model's
  } finally {
    assert.equal(await server.stop(), 0);
  }
  const clash = launchServer(['--models-dir', modelsDir]);  // -m gufo-tiny-q8_0 and the folder's copy
  const { code } = await clash.exited;
  assert.equal(code, 1);
  assert.match(clash.log(), /gufo: error: two models are named 'gufo-tiny-q8_0'/);
});
