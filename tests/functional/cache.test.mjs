// Profile `cache`: a multi-turn chat reuses the KV blocks of the earlier turns (the prefix
// cache reports cached_tokens > 0), and greedy answers are the same as from a server that
// caches nothing; llama.cpp's slot API saves a slot's context to a file, erases it and
// restores it into the cache, and refuses names that leave --slot-save-path.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, collectStream, greedy, reasoningOf } from './lib/harness.mjs';

let cached;
let uncached;
const slotDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gufo-slots-'));

before(async () => {
  [cached, uncached] = await Promise.all([
    startServer(['--parallel', '2', '--block-size', '16', '--slot-save-path', slotDir]),
    startServer(['--parallel', '2', '--no-prefix-cache']),
  ]);
});
after(async () => {
  assert.equal(await cached.stop(), 0);
  assert.equal(await uncached.stop(), 0);
  fs.rmSync(slotDir, { recursive: true, force: true });
});

const system = {
  role: 'system',
  content: 'You are a helpful assistant who knows the GNU tools well. Answer briefly and precisely, in plain English, ' +
    'and say so when you do not know. Prefer examples that use the command line.',
};

async function chat(server, messages, extra = {}) {
  return server.client().chat.completions.create({ messages, max_tokens: 24, ...greedy, ...extra });
}

test('a multi-turn chat reuses its prefix and answers as an uncached server does', async () => {
  const messages = [system, { role: 'user', content: 'What does grep do?' }];
  for (let turn = 0; turn < 3; ++turn) {
    const a = await chat(cached, messages);
    const b = await chat(uncached, messages);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content, `turn ${turn}`);
    assert.equal(reasoningOf(a.choices[0].message), reasoningOf(b.choices[0].message), `turn ${turn}`);
    assert.equal(b.usage.prompt_tokens_details.cached_tokens, 0);
    if (turn > 0) {
      const reused = a.usage.prompt_tokens_details.cached_tokens;
      assert.ok(reused > 0, `turn ${turn}: nothing reused`);
      assert.ok(reused < a.usage.prompt_tokens);
    }
    messages.push({ role: 'assistant', content: a.choices[0].message.content });
    messages.push({ role: 'user', content: ['And sed?', 'Give an example.', 'Thanks.'][turn] });
  }
});

test('the same request again is served from the cache, streamed or not, with the same answer', async () => {
  const messages = [system, { role: 'user', content: 'Name three GNU programs.' }];
  const first = await chat(cached, messages);
  const again = await chat(cached, messages);
  assert.equal(again.choices[0].message.content, first.choices[0].message.content);
  assert.equal(reasoningOf(again.choices[0].message), reasoningOf(first.choices[0].message));
  assert.ok(again.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens - 16);
  const streamed = await collectStream(await chat(cached, messages, { stream: true, stream_options: { include_usage: true } }));
  assert.equal(streamed.text, first.choices[0].message.content);
  assert.equal(streamed.reasoning, reasoningOf(first.choices[0].message));
  assert.ok(streamed.usage.prompt_tokens_details.cached_tokens > 0);
  const m = await cached.engineMetrics();
  assert.ok(m.gufo_prompt_tokens_cached_total > 0);
  assert.ok(m.gufo_prefix_cache_hit_ratio > 0 && m.gufo_prefix_cache_hit_ratio < 1);
});

test('agents share a long system prompt across different questions', async () => {
  const questions = ['What is Emacs?', 'What is Bash?', 'What is GCC?'];
  const reused = [];
  for (const q of questions) {
    const r = await chat(cached, [system, { role: 'user', content: q }]);
    const u = await chat(uncached, [system, { role: 'user', content: q }]);
    assert.equal(r.choices[0].message.content, u.choices[0].message.content);
    assert.equal(reasoningOf(r.choices[0].message), reasoningOf(u.choices[0].message));
    reused.push(r.usage.prompt_tokens_details.cached_tokens);
  }
  assert.ok(reused.slice(1).every((n) => n >= 16), `cached tokens per question: ${reused}`);
});

async function slotAction(server, id, action, body = {}) {
  const res = await server.fetch(`/slots/${id}?action=${action}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

test('a slot saved, erased and restored serves its context from the cache again', async () => {
  // Both slots forget what earlier tests left in them, and what only they led to.
  for (const id of [0, 1]) assert.equal((await slotAction(cached, id, 'erase')).status, 200);
  const messages = [system, { role: 'user', content: 'What is awk for?' }];
  const first = await chat(cached, messages, { id_slot: 1 });
  const slots = await (await cached.fetch('/slots')).json();
  assert.equal(slots.length, 2);
  assert.equal(slots[1].n_tokens, first.usage.prompt_tokens + first.usage.completion_tokens);
  assert.equal(slots[1].is_processing, false);

  const saved = await slotAction(cached, 1, 'save', { filename: 'awk.slot' });
  assert.equal(saved.status, 200, JSON.stringify(saved.json));
  assert.equal(saved.json.n_saved, slots[1].n_tokens);
  assert.equal(saved.json.n_written, fs.statSync(path.join(slotDir, 'awk.slot')).size);
  assert.equal(fs.statSync(path.join(slotDir, 'awk.slot')).mode & 0o777, 0o600);

  const erased = await slotAction(cached, 1, 'erase');
  assert.deepEqual(erased.json, { id_slot: 1, n_erased: saved.json.n_saved });
  const cold = await chat(cached, messages, { id_slot: 0 });
  assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal((await slotAction(cached, 0, 'erase')).status, 200);

  const restored = await slotAction(cached, 1, 'restore', { filename: 'awk.slot' });
  assert.equal(restored.status, 200, JSON.stringify(restored.json));
  assert.equal(restored.json.n_restored, saved.json.n_saved);
  const warm = await chat(cached, messages, { id_slot: 1 });
  // Every block of the prompt but the one it shares with the saved answer (a full block, which
  // only a prompt with those tokens too could take).
  const reused = warm.usage.prompt_tokens_details.cached_tokens;
  assert.ok(reused > 0 && reused >= warm.usage.prompt_tokens - 16, `cached ${reused} of ${warm.usage.prompt_tokens}`);
  assert.equal(warm.choices[0].message.content, first.choices[0].message.content);
  assert.equal(cold.choices[0].message.content, first.choices[0].message.content);
});

test('slot actions refuse bad names, ids, actions and files, and need --slot-save-path', async () => {
  const refused = [
    [1, 'save', { filename: '../escape.slot' }, 'filename'],
    [1, 'save', { filename: '' }, 'filename'],
    [1, 'restore', {}, 'filename'],
    [1, 'explode', {}, 'action'],
    ['x', 'erase', {}, 'id_slot'],
  ];
  for (const [id, action, body, param] of refused) {
    const r = await slotAction(cached, id, action, body);
    assert.equal(r.status, 400, `${id} ${action} ${JSON.stringify(body)}`);
    assert.equal(r.json.error.param, param);
  }
  const far = await slotAction(cached, 9, 'erase');
  assert.equal(far.status, 400);
  assert.match(far.json.error.message, /slots are 0\.\.1/);
  const missing = await slotAction(cached, 0, 'restore', { filename: 'nope.slot' });
  assert.equal(missing.status, 400);
  assert.match(missing.json.error.message, /^nope\.slot: cannot read the session/);
  assert.ok(!fs.existsSync(path.join(os.tmpdir(), 'escape.slot')));
  const off = await slotAction(uncached, 0, 'erase');
  assert.equal(off.status, 501);
  assert.match(off.json.error.message, /--slot-save-path/);
});
