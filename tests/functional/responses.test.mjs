// Profile `responses`: OpenAI's Responses API (POST /v1/responses) with OpenAI's own client.
// Every answer is checked against the same greedy request through the chat API on the same
// server: text, reasoning, function calls. Streams add up to the whole response;
// previous_response_id carries the conversation (and store: false does not); function call
// outputs go back through the template; bad input is a 400 naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServer, greedy, reasoningOf } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const toolPrompt = JSON.parse(readFileSync(path.join(here, '..', '..', 'tools', 'train', 'tool_call_prompt.json'), 'utf8'));
const tools = toolPrompt.tools.map((t) => ({ type: 'function', ...t.function }));  // the Responses API's flat tools

let server;
let client;
let model;

before(async () => {
  server = await startServer(['--parallel', '2']);
  client = server.client();
  model = (await client.models.list()).data[0].id;
});
after(async () => assert.equal(await server.stop(), 0));

const reasoningText = (response) => response.output.filter((i) => i.type === 'reasoning')
  .flatMap((i) => i.content ?? []).map((c) => c.text).join('');
const calls = (response) => response.output.filter((i) => i.type === 'function_call');

test('a response is the chat answer in the Responses shape, whole and streamed', async () => {
  const request = { model, input: 'What is GNU?', max_output_tokens: 48, temperature: 0 };
  const whole = await client.responses.create(request);
  assert.equal(whole.object, 'response');
  assert.match(whole.id, /^resp_/);
  assert.ok(['completed', 'incomplete'].includes(whole.status));
  const chat = await client.chat.completions.create({ messages: [{ role: 'user', content: 'What is GNU?' }], max_tokens: 48, ...greedy });
  assert.equal(whole.output_text, chat.choices[0].message.content);
  assert.equal(reasoningText(whole), reasoningOf(chat.choices[0].message));
  assert.equal(whole.status === 'incomplete', chat.choices[0].finish_reason === 'length');
  assert.equal(whole.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(whole.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(whole.usage.total_tokens, chat.usage.total_tokens);

  const stream = client.responses.stream({ ...request, store: false });
  const events = [];
  for await (const event of stream) events.push(event);
  const streamed = await stream.finalResponse();
  assert.equal(streamed.output_text, whole.output_text);
  assert.equal(reasoningText(streamed), reasoningText(whole));
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  assert.equal(events[0].type, 'response.created');
  assert.equal(events.at(-1).type, whole.status === 'incomplete' ? 'response.incomplete' : 'response.completed');
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.equal(deltas, whole.output_text);
});

test('previous_response_id carries the conversation; instructions do not carry over', async () => {
  const first = await client.responses.create({ model, input: 'What is GNU?', instructions: 'Be brief.', max_output_tokens: 32, temperature: 0 });
  const second = await client.responses.create({ model, input: 'And Debian?', previous_response_id: first.id, max_output_tokens: 32, temperature: 0 });
  assert.equal(second.previous_response_id, first.id);
  const firstAnswer = { role: 'assistant', content: first.output_text };
  if (reasoningText(first)) firstAnswer.reasoning_content = reasoningText(first);
  const chat = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'What is GNU?' }, firstAnswer, { role: 'user', content: 'And Debian?' }],
    max_tokens: 32, ...greedy,
  });
  assert.equal(second.output_text, chat.choices[0].message.content);
  assert.equal(second.usage.input_tokens, chat.usage.prompt_tokens);

  const unstored = await client.responses.create({ model, input: 'hi', store: false, max_output_tokens: 4 });
  for (const id of [unstored.id, 'resp_nope']) {
    await assert.rejects(client.responses.create({ model, input: 'x', previous_response_id: id, max_output_tokens: 4 }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, 'previous_response_id');
      assert.equal(e.code, 'previous_response_not_found');
      return true;
    });
  }
});

test('tools: a function_call item, the chat call; its output goes back', async () => {
  const request = { model, input: toolPrompt.messages, tools, max_output_tokens: 128, temperature: 0 };
  const whole = await client.responses.create(request);
  const [call] = calls(whole);
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  const chat = (await client.chat.completions.create({
    messages: toolPrompt.messages, tools: toolPrompt.tools, max_tokens: 128, ...greedy,
  })).choices[0];
  assert.equal(call.arguments, chat.message.tool_calls[0].function.arguments);
  assert.equal(reasoningText(whole), reasoningOf(chat.message));

  // Streamed, the call's arguments come in deltas as the model writes them.
  const stream = client.responses.stream(request);
  let argumentDeltas = 0;
  for await (const event of stream) if (event.type === 'response.function_call_arguments.delta') ++argumentDeltas;
  const streamed = await stream.finalResponse();
  assert.deepEqual(calls(streamed).map((c) => [c.name, c.arguments]), [[call.name, call.arguments]]);
  assert.ok(argumentDeltas > 1, `the arguments came in ${argumentDeltas} deltas`);

  const output = '{"temperature": 21, "condition": "sunny"}';
  const answer = await client.responses.create({
    model, tools, previous_response_id: whole.id, max_output_tokens: 64, temperature: 0,
    input: [{ type: 'function_call_output', call_id: call.call_id, output }],
  });
  assert.ok(answer.usage.input_tokens > whole.usage.input_tokens);
  assert.ok(answer.usage.input_tokens_details.cached_tokens > 0);
  // The streamed response was stored with its call too: the same conversation follows from it.
  const [streamedCall] = calls(streamed);
  const fromStreamed = await client.responses.create({
    model, tools, previous_response_id: streamed.id, max_output_tokens: 8, temperature: 0,
    input: [{ type: 'function_call_output', call_id: streamedCall.call_id, output }],
  });
  assert.equal(fromStreamed.usage.input_tokens, answer.usage.input_tokens);

  const none = await client.responses.create({ ...request, tool_choice: 'none' });
  assert.equal(calls(none).length, 0);
  const named = await client.responses.create({ ...request, tool_choice: { type: 'function', name: 'get_time' } });
  for (const c of calls(named)) assert.equal(c.name, 'get_time');
});

test('max_output_tokens beyond the context is a bound, not an error', async () => {
  const response = await client.responses.create({ model, input: 'What is GNU?', max_output_tokens: 1_000_000, temperature: 0 });
  const chat = await client.chat.completions.create({ messages: [{ role: 'user', content: 'What is GNU?' }], ...greedy });
  assert.equal(response.output_text, chat.choices[0].message.content);
});

test('bad input is a 400 naming the field', async () => {
  const cases = [
    [{ model }, 'input'],
    [{ model, input: 5 }, 'input'],
    [{ model, input: [] }, 'input'],
    [{ model, input: [{ role: 'wizard', content: 'x' }] }, 'input[0].role'],
    [{ model, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].type'],
    [{ model, input: [{ type: 'function_call_output' }] }, 'input[0]'],
    [{ model, input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ model, input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
    [{ model, input: 'x', temperature: 3 }, 'temperature'],
    [{ model, input: 'x', tools, tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice.name'],
  ];
  for (const [body, field] of cases) {
    await assert.rejects(client.responses.create(body), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${field}: ${e}`);
      assert.equal(e.param, field, e.message);
      return true;
    });
  }
  await assert.rejects(client.responses.create({ model: 'gpt-5', input: 'x' }), (e) => e instanceof OpenAI.NotFoundError);
});
