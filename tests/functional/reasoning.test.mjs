// Profile `reasoning`: the model's <think> block comes back as message.reasoning_content
// (delta.reasoning_content when streamed), as llama.cpp's and vLLM's servers return it, and
// never inside the content or the tool calls; `reasoning_format: "none"` (per request) and
// `--reasoning-format none` (per server) give the raw text; a cut-short block is reasoning.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, collectStream, greedy, reasoningOf } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
// The tool-call prompt of models/README.md: the shipped model thinks before it calls.
const toolPrompt = JSON.parse(readFileSync(path.join(here, '..', '..', 'tools', 'train', 'tool_call_prompt.json'), 'utf8'));
const thinking = { messages: toolPrompt.messages, tools: toolPrompt.tools, max_tokens: 128, ...greedy };
// A plain question: the model answers after an empty <think></think>.
const plain = { messages: [{ role: 'user', content: 'What is GNU?' }], max_tokens: 48, ...greedy };

let server;
let client;

before(async () => {
  server = await startServer(['--parallel', '2']);
  client = server.client();
});
after(async () => assert.equal(await server.stop(), 0));

const callsOf = (message) => (message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]);

test('thoughts come back as reasoning_content; the raw text holds them in <think>', async () => {
  const split = (await client.chat.completions.create(thinking)).choices[0];
  const raw = (await client.chat.completions.create({ ...thinking, reasoning_format: 'none' })).choices[0];
  const reasoning = reasoningOf(split.message);
  assert.ok(reasoning.length > 0, 'the model did not think');
  assert.ok(!reasoning.includes('<think>') && !reasoning.includes('</think>'), reasoning);
  assert.ok(!(split.message.content ?? '').includes('think>'), split.message.content);
  assert.equal(raw.message.reasoning_content, undefined);
  assert.match(raw.message.content, /^<think>\s*([\s\S]*?)\s*<\/think>/);
  assert.equal(/^<think>\s*([\s\S]*?)\s*<\/think>/.exec(raw.message.content)[1], reasoning);
  // The tool calls are the same either way: thoughts never leak into them.
  assert.equal(split.finish_reason, 'tool_calls');
  assert.deepEqual(callsOf(split.message), callsOf(raw.message));
});

test('streamed reasoning deltas add up to the whole answer, and come before the calls', async () => {
  const whole = (await client.chat.completions.create(thinking)).choices[0];
  const stream = await client.chat.completions.create({ ...thinking, stream: true });
  let reasoning = '';
  let content = '';
  const order = [];
  const calls = [];
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.reasoning_content) {
      reasoning += c.delta.reasoning_content;
      if (order.at(-1) !== 'reasoning') order.push('reasoning');
    }
    if (c.delta.content) content += c.delta.content;
    for (const d of c.delta.tool_calls ?? []) {  // a call's first piece names it, later ones add arguments
      if (calls[d.index] === undefined) calls[d.index] = [d.function.name, ''];
      calls[d.index][1] += d.function.arguments ?? '';
      if (order.at(-1) !== 'calls') order.push('calls');
    }
  }
  assert.equal(reasoning, reasoningOf(whole.message));
  assert.equal(content, whole.message.content ?? '');
  assert.deepEqual(calls, callsOf(whole.message));
  assert.deepEqual(order, ['reasoning', 'calls']);
});

test('empty thoughts give no reasoning_content and a content without the tags', async () => {
  const split = (await client.chat.completions.create(plain)).choices[0];
  const raw = (await client.chat.completions.create({ ...plain, reasoning_format: 'none' })).choices[0];
  assert.match(raw.message.content, /^<think>\s*<\/think>\s*/);
  assert.equal(split.message.reasoning_content, undefined);
  assert.equal(split.message.content, raw.message.content.replace(/^<think>\s*<\/think>\s*/, ''));
  const streamed = await collectStream(await client.chat.completions.create({ ...plain, stream: true }));
  assert.equal(streamed.text, split.message.content);
  assert.equal(streamed.reasoning, '');
});

test('a block cut short by max_tokens is reasoning, with finish_reason length', async () => {
  const full = reasoningOf((await client.chat.completions.create(thinking)).choices[0].message);
  const cut = (await client.chat.completions.create({ ...thinking, max_tokens: 4 })).choices[0];
  assert.equal(cut.finish_reason, 'length');
  const partial = reasoningOf(cut.message);
  assert.ok(partial.length > 0 && full.startsWith(partial), `${JSON.stringify(partial)} / ${JSON.stringify(full)}`);
  assert.equal(cut.message.content, '');
});

test('thinking turned off in the template: no reasoning at all', async () => {
  const r = (await client.chat.completions.create({ ...plain, chat_template_kwargs: { enable_thinking: false } })).choices[0];
  assert.equal(r.message.reasoning_content, undefined);
  assert.ok(!r.message.content.includes('think>'), r.message.content);
  assert.ok(r.message.content.length > 0);
});

test('an unknown reasoning_format is a 400 naming the field', async () => {
  await assert.rejects(client.chat.completions.create({ ...plain, reasoning_format: 'hidden' }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.param, 'reasoning_format');
    return true;
  });
});

test('--reasoning-format none serves the raw text; a request can still ask for the split', async () => {
  const rawServer = await startServer(['--parallel', '1', '--reasoning-format', 'none']);
  try {
    const c = rawServer.client();
    const raw = (await c.chat.completions.create(thinking)).choices[0];
    assert.equal(raw.message.reasoning_content, undefined);
    assert.match(raw.message.content, /^<think>/);
    const split = (await c.chat.completions.create({ ...thinking, reasoning_format: 'deepseek' })).choices[0];
    assert.ok(reasoningOf(split.message).length > 0);
  } finally {
    assert.equal(await rawServer.stop(), 0);
  }
});
