// Profile `anthropic`: Anthropic's Messages API, driven by Anthropic's own client
// (@anthropic-ai/sdk). Every answer is checked against the same request through OpenAI's
// chat API on the same server (greedy, so both must agree): text, thinking, tool calls.
// Streams add up to the whole message; stop_reason, stop_sequence and usage are right;
// count_tokens equals a message's input_tokens; bad input gets Anthropic's error shape.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, greedy, reasoningOf } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const toolPrompt = JSON.parse(readFileSync(path.join(here, '..', '..', 'tools', 'train', 'tool_call_prompt.json'), 'utf8'));
// The same tools in Anthropic's shape.
const tools = toolPrompt.tools.map((t) => ({
  name: t.function.name, description: t.function.description, input_schema: t.function.parameters,
}));
const question = [{ role: 'user', content: 'What is GNU?' }];

let server;
let client;  // Anthropic's
let openai;
let model;

before(async () => {
  server = await startServer(['--parallel', '2', '--api-key', 'sesame']);
  client = new Anthropic({ baseURL: server.baseURL, apiKey: 'sesame', maxRetries: 0, timeout: 120_000 });
  openai = server.client({ apiKey: 'sesame' });
  model = (await openai.models.list()).data[0].id;
});
after(async () => assert.equal(await server.stop(), 0));

const textOf = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
const thinkingOf = (message) => message.content.filter((b) => b.type === 'thinking').map((b) => b.thinking).join('');

test('a message is the OpenAI chat answer in Anthropic\'s shape, whole and streamed', async () => {
  const request = { model, max_tokens: 48, messages: question, temperature: 0 };
  const whole = await client.messages.create(request);
  assert.equal(whole.type, 'message');
  assert.equal(whole.role, 'assistant');
  assert.equal(whole.model, model);
  assert.match(whole.id, /^msg_/);
  assert.ok(['end_turn', 'max_tokens'].includes(whole.stop_reason), whole.stop_reason);
  assert.equal(whole.stop_sequence, null);
  const chat = await openai.chat.completions.create({ messages: question, max_tokens: 48, ...greedy });
  assert.equal(textOf(whole), chat.choices[0].message.content);
  assert.equal(thinkingOf(whole), reasoningOf(chat.choices[0].message));
  assert.equal(whole.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(whole.usage.output_tokens, chat.usage.completion_tokens);

  const events = [];
  const stream = client.messages.stream(request);
  stream.on('streamEvent', (e) => events.push(e));
  const streamed = await stream.finalMessage();
  assert.deepEqual(streamed.content, whole.content);
  assert.equal(streamed.stop_reason, whole.stop_reason);
  assert.equal(streamed.usage.output_tokens, whole.usage.output_tokens);
  assert.equal(events[0].type, 'message_start');
  assert.equal(events.at(-1).type, 'message_stop');
  assert.equal(events.at(-2).type, 'message_delta');
  // Blocks open and close in order, one at a time.
  let open = -1;
  for (const e of events) {
    if (e.type === 'content_block_start') {
      assert.equal(e.index, open + 1);
      open = e.index;
    }
    if (e.type === 'content_block_delta') assert.equal(e.index, open);
    if (e.type === 'content_block_stop') assert.equal(e.index, open);
  }
});

test('system (a string or text blocks), stop_sequences and max_tokens', async () => {
  const system = 'You are a terse assistant.';
  const asString = await client.messages.create({ model, max_tokens: 32, system, messages: question, temperature: 0 });
  const asBlocks = await client.messages.create({
    model, max_tokens: 32, system: [{ type: 'text', text: system }], messages: question, temperature: 0,
  });
  assert.deepEqual(asBlocks.content, asString.content);
  const noSystem = await client.messages.create({ model, max_tokens: 32, messages: question, temperature: 0 });
  assert.ok(asString.usage.input_tokens > noSystem.usage.input_tokens);

  const full = textOf(noSystem);
  assert.ok(full.length >= 8, full);
  const stop = full.slice(4, 7);
  for (const streamed of [false, true]) {
    const request = { model, max_tokens: 32, messages: question, temperature: 0, stop_sequences: [stop] };
    const cut = streamed ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
    assert.equal(cut.stop_reason, 'stop_sequence');
    assert.equal(cut.stop_sequence, stop);
    assert.equal(textOf(cut), full.slice(0, full.indexOf(stop)));
  }
  const short = await client.messages.create({ model, max_tokens: 3, messages: question, temperature: 0 });
  assert.equal(short.stop_reason, 'max_tokens');
  assert.equal(short.usage.output_tokens, 3);
});

test('tools: thinking, then a tool_use block; its tool_result goes back through the template', async () => {
  const request = { model, max_tokens: 128, messages: toolPrompt.messages, tools, temperature: 0 };
  const whole = await client.messages.create(request);
  assert.equal(whole.stop_reason, 'tool_use');
  const use = whole.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.match(use.id, /^toolu_/);
  assert.equal(typeof use.input.city, 'string');
  // The OpenAI route's answer to the same request: the same thoughts and the same call.
  const chat = (await openai.chat.completions.create({
    messages: toolPrompt.messages, tools: toolPrompt.tools, max_tokens: 128, ...greedy,
  })).choices[0];
  assert.ok(thinkingOf(whole).length > 0);
  assert.equal(thinkingOf(whole), reasoningOf(chat.message));
  assert.deepEqual(use.input, JSON.parse(chat.message.tool_calls[0].function.arguments));

  // Streamed, the tool_use input comes in input_json_delta pieces as the model writes it.
  const stream = client.messages.stream(request);
  let inputPieces = 0;
  stream.on('streamEvent', (e) => { if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta') ++inputPieces; });
  const streamed = await stream.finalMessage();
  assert.ok(inputPieces > 1, `the input came in ${inputPieces} pieces`);
  assert.equal(streamed.stop_reason, 'tool_use');
  assert.equal(streamed.stop_sequence, null);
  assert.deepEqual(streamed.content.filter((b) => b.type !== 'tool_use'), whole.content.filter((b) => b.type !== 'tool_use'));
  const streamedUse = streamed.content.find((b) => b.type === 'tool_use');
  assert.deepEqual([streamedUse.name, streamedUse.input], [use.name, use.input]);

  const answer = await client.messages.create({
    ...request,
    max_tokens: 64,
    messages: [
      ...toolPrompt.messages,
      { role: 'assistant', content: whole.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temperature": 21, "condition": "sunny"}' }] },
    ],
  });
  assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(answer.stop_reason));
  assert.ok(answer.usage.input_tokens > whole.usage.input_tokens);
  // The earlier turns come from the prefix cache, whole and streamed.
  assert.ok(answer.usage.cache_read_input_tokens > 0);
  const again = await client.messages.stream({ ...request, max_tokens: 64, messages: [...toolPrompt.messages] }).finalMessage();
  assert.ok(again.usage.cache_read_input_tokens > 0, JSON.stringify(again.usage));
  assert.equal(again.usage.input_tokens, whole.usage.input_tokens);
});

test('tool_choice none never returns a call; a named tool is the one called', async () => {
  const none = await client.messages.create({
    model, max_tokens: 128, messages: toolPrompt.messages, tools, tool_choice: { type: 'none' }, temperature: 0,
  });
  assert.notEqual(none.stop_reason, 'tool_use');
  assert.ok(!none.content.some((b) => b.type === 'tool_use'));
  const named = await client.messages.create({
    model, max_tokens: 128, messages: toolPrompt.messages, tools, tool_choice: { type: 'tool', name: 'get_time' }, temperature: 0,
  });
  // Greedy, the model would call get_weather: with get_time named, the answer is constrained
  // to calls to get_time.
  const uses = named.content.filter((b) => b.type === 'tool_use');
  assert.ok(uses.length >= 1, JSON.stringify(named.content));
  for (const use of uses) assert.equal(use.name, 'get_time');
  assert.equal(named.stop_reason, 'tool_use');
});

test('max_tokens beyond the context is a bound, not an error (clients send 32000)', async () => {
  const message = await client.messages.create({ model, max_tokens: 32000, messages: question, temperature: 0 });
  const chat = await openai.chat.completions.create({ messages: question, ...greedy });  // no limit: to the context
  assert.equal(textOf(message), chat.choices[0].message.content);
});

test('count_tokens equals the input_tokens of the message', async () => {
  for (const request of [
    { model, messages: question },
    { model, messages: question, system: 'Be brief.' },
    { model, messages: toolPrompt.messages, tools },
  ]) {
    const counted = await client.messages.countTokens(request);
    const message = await client.messages.create({ ...request, max_tokens: 1, temperature: 0 });
    assert.equal(counted.input_tokens, message.usage.input_tokens);
  }
});

test('bad input gets Anthropic\'s error shape, naming the field', async () => {
  const cases = [
    [{ model, messages: question }, 'max_tokens'],
    [{ model, max_tokens: 8, messages: [] }, 'messages'],
    [{ model, max_tokens: 8, messages: [{ role: 'system', content: 'x' }] }, 'messages.0.role'],
    [{ model, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }, 'messages.0.content.0.type'],
    [{ model, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'tool_result' }] }] }, 'messages.0.content.0.tool_use_id'],
    [{ model, max_tokens: 8, messages: question, temperature: 1.5 }, 'temperature'],
    [{ model, max_tokens: 8, messages: question, tools: [{ name: 'f' }] }, 'tools.0.input_schema'],
    [{ model, max_tokens: 8, messages: question, tools, tool_choice: { type: 'tool', name: 'nope' } }, 'tool_choice.name'],
    [{ model, max_tokens: 8, messages: question, stop_sequences: [''] }, 'stop_sequences'],
    [{ model, max_tokens: 0, messages: question }, 'max_tokens'],
  ];
  for (const [body, field] of cases) {
    await assert.rejects(client.messages.create(body), (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, `${field}: ${e}`);
      assert.equal(e.error.type, 'error');
      assert.equal(e.error.error.type, 'invalid_request_error');
      assert.ok(e.error.error.message.includes(field), `${field}: ${e.error.error.message}`);
      return true;
    });
  }
  await assert.rejects(client.messages.create({ model: 'claude-sonnet-4', max_tokens: 8, messages: question }), (e) => {
    assert.ok(e instanceof Anthropic.NotFoundError, String(e));
    assert.equal(e.error.error.type, 'not_found_error');
    return true;
  });
  const stranger = new Anthropic({ baseURL: server.baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(stranger.messages.create({ model, max_tokens: 8, messages: question }), (e) => {
    assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
    assert.equal(e.error.error.type, 'authentication_error');
    return true;
  });
  const raw = await server.fetch('/v1/messages', {
    method: 'POST', headers: { 'x-api-key': 'sesame', 'Content-Type': 'application/json' }, body: '{"model": ',
  });
  assert.equal(raw.status, 400);
  assert.equal((await raw.json()).error.type, 'invalid_request_error');
});
