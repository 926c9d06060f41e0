// Profile `concurrency`: 16 concurrent streaming clients each get exactly what their request
// gets alone (greedy), none is lost, /metrics agrees with what was sent, and a burst beyond
// --parallel plus the queue gets 429s with Retry-After, not failures.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, collectStream, greedy, reasoningOf } from './lib/harness.mjs';

let server;
const topics = ['grep', 'sed', 'awk', 'make', 'gcc', 'gdb', 'bash', 'emacs', 'tar', 'gzip', 'coreutils', 'find',
  'diff', 'patch', 'texinfo', 'autoconf', 'libc', 'screen'];

const request = (i) => ({
  messages: [{ role: 'user', content: `Tell me about GNU ${topics[i % topics.length]} (${i}).` }],
  max_tokens: 20 + (i % 5),
  ...greedy,
});

before(async () => {
  server = await startServer(['--parallel', '4', '--queue', '32', '--block-size', '16']);
});
after(async () => assert.equal(await server.stop(), 0));

test('16 concurrent streams each equal the same request run alone; metrics add up', async () => {
  const client = server.client();
  const n = 16;
  const alone = [];
  for (let i = 0; i < n; ++i) {
    const r = await client.chat.completions.create(request(i));
    alone.push({ text: r.choices[0].message.content, reasoning: reasoningOf(r.choices[0].message), usage: r.usage });
  }
  const before = await server.engineMetrics();
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      client.chat.completions
        .create({ ...request(i), stream: true, stream_options: { include_usage: true } })
        .then(collectStream)),
  );
  const after = await server.engineMetrics();
  let prompt = 0;
  let completion = 0;
  for (let i = 0; i < n; ++i) {
    assert.equal(results[i].text, alone[i].text, `client ${i}`);
    assert.equal(results[i].reasoning, alone[i].reasoning, `client ${i}`);
    assert.ok(['stop', 'length'].includes(results[i].finish), `client ${i}: ${results[i].finish}`);
    assert.equal(results[i].usage.completion_tokens, alone[i].usage.completion_tokens);
    prompt += results[i].usage.prompt_tokens;
    completion += results[i].usage.completion_tokens;
  }
  const delta = (name) => after[name] - (before[name] ?? 0);
  assert.equal(delta('gufo_requests_total{outcome="ok"}'), n);
  assert.equal(delta('gufo_requests_total{outcome="failed"}'), 0);
  assert.equal(delta('gufo_completion_tokens_total'), completion);
  assert.equal(delta('gufo_prompt_tokens_total'), prompt);
  assert.equal(delta('gufo_http_requests_total{route="/v1/chat/completions",status="200"}'), n);
  assert.equal(delta('gufo_time_to_first_token_seconds_count'), n);
  assert.equal(after.gufo_running_sequences, 0);
  assert.equal(after.gufo_queue_depth, 0);
  assert.equal(after.gufo_kv_cache_usage_ratio, 0);
  // The batch really batched: more than one sequence per decode step on average.
  assert.ok(delta('gufo_decode_tokens_total') > 0);
});

test('a burst beyond --parallel and the queue gets 429 with Retry-After; the rest succeed', async () => {
  const small = await startServer(['--parallel', '1', '--queue', '1']);
  try {
    const client = small.client();
    const burst = 8;
    const outcomes = await Promise.allSettled(
      Array.from({ length: burst }, (_, i) => client.chat.completions.create({ ...request(i), max_tokens: 16 })),
    );
    const ok = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    assert.ok(ok.length >= 2, `${ok.length} succeeded`);
    assert.ok(refused.length >= 1, 'no request was refused');
    for (const r of refused) {
      assert.ok(r.reason instanceof OpenAI.RateLimitError, String(r.reason));
      assert.equal(r.reason.status, 429);
      assert.equal(r.reason.headers.get('retry-after'), '1');
      assert.equal(r.reason.error.code, 'rate_limit_exceeded');
    }
    // With retries the client gets through once the server has room again.
    const patient = small.client({ maxRetries: 5 });
    const later = await Promise.all(Array.from({ length: 3 }, (_, i) => patient.chat.completions.create(request(i))));
    assert.equal(later.length, 3);
    const m = await small.engineMetrics();
    assert.equal(m['gufo_http_requests_total{route="/v1/chat/completions",status="429"}'] >= refused.length, true);
  } finally {
    assert.equal(await small.stop(), 0);
  }
});
