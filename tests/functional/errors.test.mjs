// Profile `errors`: malformed JSON, wrong types, missing fields, huge bodies, bad API keys and
// a client that disconnects mid-stream all get a clean answer (OpenAI's error body, or a
// cancelled generation whose KV blocks are freed), and the server keeps serving afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, tokenize, greedy } from './lib/harness.mjs';

let server;

before(async () => {
  server = await startServer(['--parallel', '2', '--max-body', '65536', '--api-key', 'sesame']);
});
after(async () => assert.equal(await server.stop(), 0));

const auth = { Authorization: 'Bearer sesame', 'Content-Type': 'application/json' };

async function post(body, headers = auth, route = '/v1/chat/completions') {
  const res = await server.fetch(route, { method: 'POST', headers, body });
  const json = await res.json();
  return { status: res.status, error: json.error, json };
}

function assertErrorBody(error) {
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(typeof error.type, 'string');
  assert.ok('param' in error && 'code' in error);
}

test('malformed JSON is a 400 with an OpenAI error body', async () => {
  for (const body of ['{"messages": [', 'not json', '', '[1, 2]', '{"messages": "x", }']) {
    const r = await post(body);
    assert.equal(r.status, 400, body);
    assertErrorBody(r.error);
  }
});

test('wrong types, bad values and missing fields are 400s naming the field', async () => {
  const messages = [{ role: 'user', content: 'hi' }];
  const cases = [
    [{}, 'messages'],
    [{ messages: 'hi' }, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ content: 'no role' }] }, 'messages[0].role'],
    [{ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
    [{ messages: [{ role: 'user', content: 42 }] }, 'messages[0].content'],
    [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0]'],
    [{ messages, temperature: 'hot' }, 'temperature'],
    [{ messages, temperature: 3 }, 'temperature'],
    [{ messages, top_p: 0 }, 'top_p'],
    [{ messages, max_tokens: 0 }, 'max_tokens'],
    [{ messages, max_tokens: 1.5 }, 'max_tokens'],
    [{ messages, n: 1000 }, 'n'],
    [{ messages, stop: [1, 2] }, 'stop'],
    [{ messages, stream: 'yes' }, 'stream'],
    [{ messages, seed: 'x' }, 'seed'],
    [{ messages, logit_bias: { abc: 1 } }, 'logit_bias'],
    [{ messages, logit_bias: { 1: 500 } }, 'logit_bias'],
    [{ messages, top_logprobs: 3 }, 'top_logprobs'],
    [{ messages, logprobs: true, top_logprobs: 50 }, 'top_logprobs'],
    [{ messages, presence_penalty: -5 }, 'presence_penalty'],
  ];
  for (const [body, param] of cases) {
    const r = await post(JSON.stringify(body));
    assert.equal(r.status, 400, JSON.stringify(body));
    assertErrorBody(r.error);
    assert.equal(r.error.param, param, JSON.stringify(body));
  }
  const completions = await post(JSON.stringify({ prompt: 5 }), auth, '/v1/completions');
  assert.equal(completions.status, 400);
  assert.equal(completions.error.param, 'prompt');
});

test('unknown fields are ignored, as OpenAI clients expect', async () => {
  const r = await post(JSON.stringify({
    messages: [{ role: 'user', content: 'hi', name: 'alice' }], max_tokens: 2, temperature: 0,
    some_future_field: { x: 1 }, user: 'u-1', tool_choice: 'none', parallel_tool_calls: false,
  }));
  assert.equal(r.status, 200);
  assert.equal(r.json.object, 'chat.completion');
});

test('a body over --max-body is a 413 with an error body', async () => {
  const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(100_000) }] });
  const r = await post(big);
  assert.equal(r.status, 413);
  assertErrorBody(r.error);
});

test('a missing or wrong API key is a 401 on /v1 routes; /health needs none', async () => {
  for (const apiKey of ['wrong', 'sesame-', 'sesam', 'Sesame']) {
    const client = server.client({ apiKey });
    await assert.rejects(client.chat.completions.create({ messages: [{ role: 'user', content: 'x' }] }), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, `${apiKey}: ${e}`);
      assert.equal(e.error.code, 'invalid_api_key');
      return true;
    });
  }
  const bare = await server.fetch('/v1/models');
  assert.equal(bare.status, 401);
  assert.equal((await server.fetch('/health')).status, 200);
  assert.equal((await server.fetch('/ready')).status, 200);
  const models = await server.client({ apiKey: 'sesame' }).models.list();
  assert.equal(models.data.length, 1);
  const unknown = await server.fetch('/v1/nothing', { headers: auth });
  assert.equal(unknown.status, 404);
  assertErrorBody((await unknown.json()).error);
});

test('the Bearer scheme is matched case-insensitively (RFC 7235); other schemes are refused', async () => {
  for (const scheme of ['bearer', 'BEARER', 'Bearer  ', 'bEaReR']) {
    const r = await server.fetch('/v1/models', { headers: { Authorization: `${scheme} sesame` } });
    assert.equal(r.status, 200, scheme);
  }
  for (const header of ['Basic sesame', 'Bearer', 'Bearersesame', 'sesame']) {
    const r = await server.fetch('/v1/models', { headers: { Authorization: header } });
    assert.equal(r.status, 401, header);
    assert.equal((await r.json()).error.code, 'invalid_api_key');
  }
});

test('GET /v1/models/{id} answers for the served model; an unknown model is a 404 model_not_found', async () => {
  const client = server.client({ apiKey: 'sesame' });
  const [listed] = (await client.models.list()).data;
  const retrieved = await client.models.retrieve(listed.id);
  assert.deepEqual(retrieved, listed);
  const notFound = (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError, String(e));
    assert.equal(e.error.code, 'model_not_found');
    assert.equal(e.error.param, 'model');
    assert.ok(e.error.message.includes('gpt-4o'), e.error.message);
    return true;
  };
  await assert.rejects(client.models.retrieve('gpt-4o'), notFound);
  const messages = [{ role: 'user', content: 'hi' }];
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages, max_tokens: 1 }), notFound);
  await assert.rejects(client.completions.create({ model: 'gpt-4o', prompt: 'x', max_tokens: 1 }), notFound);
  // Naming the served model, or none, is fine.
  const named = await client.chat.completions.create({ model: listed.id, messages, max_tokens: 1 });
  assert.equal(named.model, listed.id);
});

test('/metrics labels requests by route, never by the raw path', async () => {
  for (const route of ['/v1/models/abc', '/v1/models/def', '/random/1', '/random/2']) {
    await server.fetch(route, { headers: auth });
  }
  const metrics = await server.metrics();
  const routes = new Set(Object.keys(metrics).filter((k) => k.startsWith('gufo_http_requests_total'))
    .map((k) => /route="([^"]*)"/.exec(k)[1]));
  assert.ok(routes.has('/v1/models/{id}'), [...routes].join(' '));
  assert.ok(routes.has('other'), [...routes].join(' '));
  for (const route of routes) assert.ok(!/abc|def|random/.test(route), route);
});

test('a client that disconnects mid-stream cancels its generation; the server goes on', async () => {
  const client = server.client({ apiKey: 'sesame' });
  const before = await server.engineMetrics();
  const controller = new AbortController();
  // A generation that cannot end by itself (end-of-turn tokens banned) and runs to the end of
  // the context: far more than the socket buffers hold, so the server is still writing when
  // the client goes.
  const nCtx = (await client.models.list()).data[0].max_model_len;
  const banned = Object.fromEntries(tokenize('<|im_end|><|endoftext|>', { special: true }).map((id) => [id, -100]));
  const stream = await client.chat.completions.create(
    { messages: [{ role: 'user', content: 'Tell me a long story about GNU.' }], max_tokens: nCtx - 64,
      temperature: 1, seed: 1, stream: true, logit_bias: banned },
    { signal: controller.signal },
  );
  let chunks = 0;
  for await (const _ of stream) {
    if (++chunks === 3) {
      controller.abort();
      break;
    }
  }
  // The engine notices at its next write and frees the sequence.
  let m;
  for (let i = 0; i < 100; ++i) {
    m = await server.engineMetrics();
    if (m['gufo_requests_total{outcome="cancelled"}'] > (before['gufo_requests_total{outcome="cancelled"}'] ?? 0)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(m['gufo_requests_total{outcome="cancelled"}'], (before['gufo_requests_total{outcome="cancelled"}'] ?? 0) + 1);
  assert.equal(m.gufo_running_sequences, 0);
  assert.equal(m.gufo_kv_cache_usage_ratio, 0);
  assert.ok(m.gufo_completion_tokens_total - (before.gufo_completion_tokens_total ?? 0) < nCtx - 64);
  const after = await client.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, ...greedy });
  assert.equal(after.usage.completion_tokens, 3);
});

test('SIGTERM lets a running stream finish, refuses new requests, and exits 0', async () => {
  const own = await startServer(['--parallel', '2', '--grace', '30']);
  const client = own.client();
  const nCtx = (await client.models.list()).data[0].max_model_len;
  // The end tokens banned, the stream runs to its length: it is still running when the
  // refused request comes (else the drain could end first, and the refusal be a closed port).
  const ends = tokenize('<|im_end|><|endoftext|>', { special: true });
  assert.equal(ends.length, 2);
  const maxTokens = Math.min(nCtx - 64, 512);
  const stream = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'Tell me about GNU.' }], max_tokens: maxTokens,
    temperature: 1, seed: 2, logit_bias: Object.fromEntries(ends.map((id) => [String(id), -100])),
    stream: true, stream_options: { include_usage: true },
  });
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next();  // the stream is running
  own.child.kill('SIGTERM');
  // Once the server says it is draining (it refuses before it says so), a new request gets 503.
  for (let i = 0; i < 100 && !/SIGTERM/.test(own.log()); ++i) await new Promise((r) => setTimeout(r, 20));
  await assert.rejects(client.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], max_tokens: 1 }),
    (e) => e.status === 503);
  let finish = null;
  let usage = null;
  for (let r = await iterator.next(); !r.done; r = await iterator.next()) {
    if (r.value.usage) usage = r.value.usage;
    for (const c of r.value.choices) if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'length');  // it ran to its end, not cut by the shutdown
  assert.equal(usage?.completion_tokens, maxTokens);
  const { code } = await own.exited;
  assert.equal(code, 0);
});
