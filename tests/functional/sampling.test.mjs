// Profile `sampling`: every sampling field has a visible effect, the same seed gives the same
// text, n > 1 gives n choices, log-probabilities are sane, and stop strings end the text
// without ever being emitted (whole answers and streams alike).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, collectStream, tokenize, detokenize, greedy } from './lib/harness.mjs';

let server;
let client;
const messages = [{ role: 'user', content: 'Write a few sentences about the GNU project and free software.' }];
// The raw text (reasoning_format none): these tests look at the tokens themselves, and the
// model's <think> block is part of them (tests/functional/reasoning.test.mjs splits it).
const ask = (extra = {}) =>
  client.chat.completions.create({ messages, max_tokens: 32, reasoning_format: 'none', ...extra });

before(async () => {
  server = await startServer(['--parallel', '4']);
  client = server.client();
});
after(async () => assert.equal(await server.stop(), 0));

test('temperature 0 is deterministic and max_tokens bounds the answer', async () => {
  const a = await ask(greedy);
  const b = await ask(greedy);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.equal(a.choices[0].message.role, 'assistant');
  assert.ok(a.usage.completion_tokens <= 32);
  if (a.choices[0].finish_reason === 'length') assert.equal(a.usage.completion_tokens, 32);
  assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
  const short = await ask({ ...greedy, max_tokens: 3 });
  assert.equal(short.usage.completion_tokens, 3);
  assert.equal(short.choices[0].finish_reason, 'length');
  assert.ok(a.choices[0].message.content.startsWith(short.choices[0].message.content));
});

test('the same seed gives the same text; other seeds give other texts', async () => {
  const hot = { temperature: 1.2, max_tokens: 24 };
  const a = await ask({ ...hot, seed: 7 });
  const b = await ask({ ...hot, seed: 7 });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const others = new Set();
  for (const seed of [1, 2, 3, 4]) others.add((await ask({ ...hot, seed })).choices[0].message.content);
  assert.ok(others.size >= 2, `four seeds gave ${others.size} distinct texts`);
});

test('top_k 1, a tiny top_p and min_p 1 all reduce sampling to greedy', async () => {
  const want = (await ask(greedy)).choices[0].message.content;
  for (const filter of [{ top_k: 1 }, { top_p: 1e-9 }, { min_p: 1 }]) {
    const got = await ask({ temperature: 1.5, seed: 3, ...filter });
    assert.equal(got.choices[0].message.content, want, JSON.stringify(filter));
  }
  // Without a filter, the same hot sampling does not follow greedy.
  const texts = new Set();
  for (const seed of [3, 4, 5]) texts.add((await ask({ temperature: 1.5, seed })).choices[0].message.content);
  assert.ok([...texts].some((t) => t !== want), 'hot sampling without a filter gave the greedy text for seeds 3, 4, 5');
});

test('logit_bias forces and bans tokens', async () => {
  const base = (await ask(greedy)).choices[0].message.content;
  const ids = tokenize(base);
  assert.ok(ids.length > 0);
  // +100 on one token: greedy then picks nothing else.
  const forced = ids[Math.min(3, ids.length - 1)];
  const all = await ask({ ...greedy, max_tokens: 6, logit_bias: { [forced]: 100 }, logprobs: true });
  const tokens = all.choices[0].logprobs.content.map((e) => e.token);
  assert.equal(tokens.length, 6);
  assert.ok(tokens.every((t) => t === tokens[0]), JSON.stringify(tokens));
  assert.equal(tokens[0], detokenize([forced]));
  // -100 on every token of the greedy answer: the answer changes.
  const banned = Object.fromEntries(ids.map((id) => [id, -100]));
  const other = await ask({ ...greedy, logit_bias: banned });
  assert.notEqual(other.choices[0].message.content, base);
});

test('presence, frequency and repetition penalties change a greedy answer', async () => {
  const long = { ...greedy, max_tokens: 64 };
  const base = (await ask(long)).choices[0].message.content;
  for (const penalty of [{ frequency_penalty: 2 }, { presence_penalty: 2 }, { repetition_penalty: 1.8 }]) {
    const got = (await ask({ ...long, ...penalty })).choices[0].message.content;
    assert.notEqual(got, base, JSON.stringify(penalty));
  }
  // Negative penalties reward repetition: fewer distinct tokens than with positive ones.
  const repeat = tokenize((await ask({ ...long, frequency_penalty: -2 })).choices[0].message.content);
  const varied = tokenize((await ask({ ...long, frequency_penalty: 2 })).choices[0].message.content);
  assert.ok(new Set(repeat).size <= new Set(varied).size, `${new Set(repeat).size} vs ${new Set(varied).size}`);
});

test('n choices come back indexed, and their tokens add up in usage', async () => {
  const r = await ask({ n: 3, temperature: 1.0, seed: 11, max_tokens: 16 });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.ok(new Set(r.choices.map((c) => c.message.content)).size >= 2);
  for (const c of r.choices) assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.ok(r.usage.completion_tokens >= 3 && r.usage.completion_tokens <= 48);
  // Each choice is what that choice's seed gives alone (choice i uses seed + i).
  const second = await ask({ temperature: 1.0, seed: 12, max_tokens: 16 });
  assert.equal(second.choices[0].message.content, r.choices[1].message.content);
  // Streaming with n: every choice ends with its own finish_reason.
  const stream = await ask({ n: 2, temperature: 1.0, seed: 11, max_tokens: 8, stream: true });
  const finished = new Set();
  for await (const chunk of stream) for (const c of chunk.choices) if (c.finish_reason) finished.add(c.index);
  assert.deepEqual([...finished].sort(), [0, 1]);
});

test('logprobs: the chosen token first under greedy, probabilities that sum to at most 1', async () => {
  const r = await ask({ ...greedy, max_tokens: 8, logprobs: true, top_logprobs: 5 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 5);
    assert.equal(entry.top_logprobs[0].token, entry.token);
    assert.ok(Math.abs(entry.top_logprobs[0].logprob - entry.logprob) < 1e-5);
    let mass = 0;
    for (let i = 0; i < 5; ++i) {
      mass += Math.exp(entry.top_logprobs[i].logprob);
      if (i > 0) assert.ok(entry.top_logprobs[i - 1].logprob >= entry.top_logprobs[i].logprob);
    }
    assert.ok(mass <= 1 + 1e-4, `top-5 mass ${mass}`);
  }
  const joined = Buffer.concat(content.map((e) => Buffer.from(e.bytes))).toString('utf8');
  assert.equal(joined, r.choices[0].message.content);
  // Legacy completions: the logprobs integer asks for that many alternatives.
  const c = await client.completions.create({ prompt: 'The GNU Project', max_tokens: 5, temperature: 0, logprobs: 2 });
  assert.equal(c.choices[0].logprobs.tokens.length, 5);
  assert.equal(c.choices[0].logprobs.top_logprobs[0] && Object.keys(c.choices[0].logprobs.top_logprobs[0]).length, 2);
});

test('stop strings end the text before them, whole and streamed', async () => {
  const full = (await ask({ ...greedy, max_tokens: 48 })).choices[0].message.content;
  assert.ok(full.length >= 12, `answer too short for the test: ${JSON.stringify(full)}`);
  // A short printable-ASCII window from the middle of the answer.
  let at = 6;
  while (at + 3 <= full.length && !/^[\x20-\x7e]{3}$/.test(full.slice(at, at + 3))) ++at;
  assert.ok(at + 3 <= full.length, `no ASCII window in ${JSON.stringify(full)}`);
  const stop = full.slice(at, at + 3);
  const want = full.slice(0, full.indexOf(stop));
  const whole = await ask({ ...greedy, max_tokens: 48, stop });
  assert.equal(whole.choices[0].message.content, want);
  assert.equal(whole.choices[0].finish_reason, 'stop');
  const streamed = await collectStream(await ask({ ...greedy, max_tokens: 48, stop: ['never there', stop], stream: true }));
  assert.equal(streamed.text, want);
  assert.equal(streamed.finish, 'stop');
});
