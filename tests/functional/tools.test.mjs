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
