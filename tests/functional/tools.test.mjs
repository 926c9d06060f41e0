// Profile `tools`: a chat with `tools` makes the shipped model answer with a tool call, which
// the server returns as message.tool_calls (whole and streamed, finish_reason "tool_calls");
// a tool's answer goes back through the template; sampled tries call a tool most of the time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, greedy } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const prompt = JSON.parse(readFileSync(path.join(here, '..', '..', 'tools', 'train', 'tool_call_prompt.json'), 'utf8'));
const names = prompt.tools.map((t) => t.function.name);

let server;
let client;

before(async () => {
  server = await startServer(['--parallel', '4']);
  client = server.client();
});
after(async () => assert.equal(await server.stop(), 0));

function assertCall(call) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  assert.ok(names.includes(call.function.name), call.function.name);
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args, 'object');
  return args;
}

test('a greedy answer is a tool call, the same whole and streamed', async () => {
  const request = { messages: prompt.messages, tools: prompt.tools, max_tokens: 128, ...greedy };
  const whole = await client.chat.completions.create(request);
  const choice = whole.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length >= 1, true);
  const args = assertCall(choice.message.tool_calls[0]);
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  assert.equal(typeof args.city, 'string');
  assert.ok(!(choice.message.content ?? '').includes('<tool_call>'));

  const stream = await client.chat.completions.create({ ...request, stream: true });
  const calls = [];
  let finish = null;
  let content = '';
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    content += c.delta.content ?? '';
    for (const d of c.delta.tool_calls ?? []) calls[d.index] = d;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.ok(!content.includes('<tool_call>'), content);
  assert.deepEqual(calls.map((c) => [c.function.name, c.function.arguments]),
    choice.message.tool_calls.map((c) => [c.function.name, c.function.arguments]));
});

test('the tool result goes back through the template and gets an answer', async () => {
  const first = await client.chat.completions.create({ messages: prompt.messages, tools: prompt.tools, max_tokens: 128, ...greedy });
  const call = first.choices[0].message.tool_calls[0];
  const messages = [
    ...prompt.messages,
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 21, condition: 'sunny' }) },
  ];
  const answer = await client.chat.completions.create({ messages, tools: prompt.tools, max_tokens: 64, ...greedy });
  assert.ok(['stop', 'length', 'tool_calls'].includes(answer.choices[0].finish_reason));
  assert.ok(answer.usage.prompt_tokens > first.usage.prompt_tokens);
  // The earlier turns' blocks come from the prefix cache.
  assert.ok(answer.usage.prompt_tokens_details.cached_tokens > 0);
});

test('most sampled tries call a tool (n = 20 at the trained temperature)', async () => {
  const r = await client.chat.completions.create({
    messages: prompt.messages, tools: prompt.tools, max_tokens: 128, n: 20, temperature: prompt.temperature, seed: 5,
  });
  let wellFormed = 0;
  for (const c of r.choices) {
    if (c.finish_reason !== 'tool_calls') continue;
    try {
      assertCall(c.message.tool_calls[0]);
      ++wellFormed;
    } catch {
      // a malformed call counts as a miss
    }
  }
  assert.ok(wellFormed >= 14, `${wellFormed}/20 tries made a well-formed tool call`);
});

test('tool_choice "none" never returns tool calls, and the tools are not offered', async () => {
  const request = { messages: prompt.messages, tools: prompt.tools, tool_choice: 'none', max_tokens: 128, ...greedy };
  const whole = await client.chat.completions.create(request);
  const choice = whole.choices[0];
  assert.notEqual(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls ?? undefined, undefined);
  const offered = await client.chat.completions.create({ ...request, tool_choice: undefined, max_tokens: 1 });
  assert.ok(whole.usage.prompt_tokens < offered.usage.prompt_tokens, 'the tool list is left out of the prompt');
  const stream = await client.chat.completions.create({ ...request, stream: true });
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    assert.equal(c?.delta?.tool_calls, undefined);
    assert.notEqual(c?.finish_reason, 'tool_calls');
  }
});

test('a named tool_choice returns only calls to that tool; a call to any other tool stays text', async () => {
  // Greedy, the model calls get_weather; with get_time named, that call is not one it may make.
  const request = {
    messages: prompt.messages, tools: prompt.tools, max_tokens: 128, ...greedy,
    tool_choice: { type: 'function', function: { name: 'get_time' } },
  };
  for (const stream of [false, true]) {
    let content = '';
    let calls = [];
    let finish = null;
    if (stream) {
      for await (const chunk of await client.chat.completions.create({ ...request, stream })) {
        const c = chunk.choices[0];
        if (!c) continue;
        content += c.delta.content ?? '';
        calls.push(...(c.delta.tool_calls ?? []));
        if (c.finish_reason) finish = c.finish_reason;
      }
    } else {
      const c = (await client.chat.completions.create(request)).choices[0];
      content = c.message.content ?? '';
      calls = c.message.tool_calls ?? [];
      finish = c.finish_reason;
    }
    for (const call of calls) assert.equal(call.function.name, 'get_time', `stream ${stream}`);
    if (calls.length === 0) {
      assert.notEqual(finish, 'tool_calls');
      assert.ok(content.includes('get_weather'), `stream ${stream}: the refused call is returned as text: ${content}`);
    }
  }
});

test('a tool_choice naming a tool that was not offered is a 400 naming the field', async () => {
  await assert.rejects(client.chat.completions.create({
    messages: prompt.messages, tools: prompt.tools, max_tokens: 8,
    tool_choice: { type: 'function', function: { name: 'delete_everything' } },
  }), (e) => e.status === 400 && e.error.param === 'tool_choice.function.name');
});
