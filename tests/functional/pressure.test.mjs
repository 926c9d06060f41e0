// Profile `pressure` (stage 4 of `gufo qualify`): the server under memory pressure and faults.
// A KV pool far smaller than --parallel sequences need makes requests wait for blocks, and a
// burst past the queue gets 429s: every request is answered, none is lost or fails. A failed
// allocation in one forward step (GUFO_FAULTS=forward_oom_at) fails only the requests in that
// step, with an error that names it, and the server goes on serving. A lost device
// (device_lost_at) fails every request with a 5xx, never a hang; /health then says so, and the
// process still stops cleanly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, greedy } from './lib/harness.mjs';

const topics = ['grep', 'sed', 'awk', 'make', 'gcc', 'gdb', 'bash', 'emacs', 'tar', 'gzip', 'find', 'diff'];
const request = (i, maxTokens = 24) => ({
  messages: [{ role: 'user', content: `Write about GNU ${topics[i % topics.length]} and its history (${i}).` }],
  max_tokens: maxTokens,
  ...greedy,
});

// Each request's fate, by plain fetch (no client retries or parsing): { status, body, text,
// retryAfter }.
async function send(server, body) {
  const res = await server.fetch('/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // left null: asserted on below
  }
  return { status: res.status, body: json, text, retryAfter: res.headers.get('retry-after') };
}

const completed = (r) => r.status === 200 && r.body?.choices?.[0]?.message !== undefined && !r.body.error;
const failedWith = (r, pattern) =>
  (r.status >= 500 || (r.status === 200 && r.body?.error)) && pattern.test(r.body?.error?.message ?? '');

test('a KV pool smaller than the parallel sequences need: requests wait or get 429, none is lost', async () => {
  // Two sequences of ~50 positions each would need 100; the pool holds 64. Sixteen requests at
  // once are far past --parallel + --queue (4).
  const server = await startServer(['--parallel', '2', '--queue', '2', '--ctx', '64', '--kv-tokens', '64',
    '--block-size', '16']);
  try {
    const burst = 16;
    const results = await Promise.all(Array.from({ length: burst }, (_, i) => send(server, request(i))));
    assert.equal(results.length, burst);
    const ok = results.filter(completed);
    const refused = results.filter((r) => r.status === 429);
    for (const r of results) assert.ok(completed(r) || r.status === 429, `${r.status} ${r.text.slice(0, 200)}`);
    assert.ok(ok.length >= 2, `only ${ok.length} completed`);
    assert.ok(refused.length >= 1, 'nothing was refused past --parallel + --queue');
    // Everything was given back: a full-length request still fits afterwards.
    assert.ok(completed(await send(server, request(99))));
    const m = await server.engineMetrics();
    assert.equal(m['gufo_requests_total{outcome="failed"}'] ?? 0, 0);
    assert.equal(m.gufo_running_sequences, 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('a failed allocation mid-batch fails only that step\'s requests; the rest complete', async () => {
  // Forward call 6 fails; at most four of the six requests share a step (--parallel 4).
  const server = await startServer(['--parallel', '4', '--block-size', '16'],
    { env: { GUFO_FAULTS: 'forward_oom_at=6' } });
  try {
    assert.match(server.log(), /GUFO_FAULTS: forward call 6 fails as out of memory/);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => send(server, request(i))));
    const failed = results.filter((r) => failedWith(r, /injected out-of-memory/));
    for (const r of results) assert.ok(completed(r) || failedWith(r, /injected out-of-memory/), r.text.slice(0, 300));
    assert.ok(failed.length >= 1, 'the injected failure failed no request');
    assert.ok(failed.length < results.length, 'every request failed: the failure was not confined to its step');
    // The server goes on: new requests complete, and it is healthy.
    assert.ok(completed(await send(server, request(7))));
    assert.equal((await server.fetch('/health')).status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('a request that fails before its first token gets a real 500, chat and embeddings alike', async () => {
  for (const first of ['chat', 'embeddings']) {
    const server = await startServer([], { env: { GUFO_FAULTS: 'forward_oom_at=1' } });
    try {
      const embeddings = () => server.fetch('/v1/embeddings', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ input: 'The GNU project' }),
      });
      if (first === 'chat') {
        const r = await send(server, request(0));
        assert.equal(r.status, 500, r.text);
        assert.match(r.body.error.message, /injected out-of-memory/);
        const res = await embeddings();  // forward call 2 runs
        const text = await res.text();
        assert.equal(res.status, 200, text);
        const answer = JSON.parse(text);
        assert.equal(answer.error, undefined, text);
        assert.ok(answer.data[0].embedding.length > 0, text);
      } else {
        const res = await embeddings();
        const text = await res.text();
        assert.equal(res.status, 500, text);
        assert.match(JSON.parse(text).error.message, /injected out-of-memory/);
        assert.ok(completed(await send(server, request(0))));
      }
    } finally {
      assert.equal(await server.stop(), 0);
    }
  }
});

test('a lost device fails every request with a 5xx, never a hang; /health says so', async () => {
  const server = await startServer(['--parallel', '4'], { env: { GUFO_FAULTS: 'device_lost_at=4' } });
  try {
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => send(server, request(i, 64))));
    for (const r of results) assert.ok(failedWith(r, /injected device loss/), `${r.status} ${r.text.slice(0, 300)}`);
    const after = await send(server, request(5));
    assert.equal(after.status, 503, after.text);
    assert.match(after.body.error.message, /the device failed/);
    assert.equal(after.retryAfter, null, 'a lost device is no reason to retry here');
    const health = await server.fetch('/health');
    assert.equal(health.status, 503);
    assert.match((await health.json()).error, /injected device loss/);
    assert.equal((await server.fetch('/ready')).status, 503);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});
