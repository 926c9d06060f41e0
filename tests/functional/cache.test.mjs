// Profile `cache`: a multi-turn chat reuses the KV blocks of the earlier turns (the prefix
// cache reports cached_tokens > 0), and greedy answers are the same as from a server that
// caches nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, collectStream, greedy, reasoningOf } from './lib/harness.mjs';

let cached;
let uncached;

before(async () => {
  [cached, uncached] = await Promise.all([
    startServer(['--parallel', '2', '--block-size', '16']),
    startServer(['--parallel', '2', '--no-prefix-cache']),
  ]);
});
after(async () => {
  assert.equal(await cached.stop(), 0);
  assert.equal(await uncached.stop(), 0);
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
