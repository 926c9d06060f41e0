// Profile `tools`: a chat with `tools` makes the shipped model answer with a tool call, which
// the server returns as message.tool_calls (whole and streamed, finish_reason "tool_calls");
// a tool's answer goes back through the template; sampled tries call a tool most of the time.
// tool_choice required / named / auto constrain the calls (server/tool_grammar.h): every call
// returned, sampled hot, whole or streamed (assembled by OpenAI's client), with n > 1, names
// an offered (the named) tool and its arguments validate with ajv against its parameters.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
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

  // Streamed, a call is announced once (index, id, name) and its arguments follow in pieces
  // as the model writes them; put together as OpenAI's client does, they are the whole answer's.
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const calls = [];
  let pieces = 0;
  let finish = null;
  let content = '';
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    content += c.delta.content ?? '';
    for (const d of c.delta.tool_calls ?? []) {
      ++pieces;
      if (calls[d.index] === undefined) {
        assert.match(d.id, /^call_/);
        assert.equal(d.type, 'function');
        calls[d.index] = { name: d.function.name, arguments: d.function.arguments ?? '' };
      } else {
        assert.equal(d.id, undefined);
        assert.equal(d.function.name, undefined);
        calls[d.index].arguments += d.function.arguments;
      }
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.ok(!content.includes('<tool_call>'), content);
  assert.ok(pieces > calls.length + 1, `the arguments came in ${pieces} pieces for ${calls.length} calls`);
  assert.deepEqual(calls.map((c) => [c.name, c.arguments]),
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

test('a tool_choice naming a tool that was not offered is a 400 naming the field', async () => {
  await assert.rejects(client.chat.completions.create({
    messages: prompt.messages, tools: prompt.tools, max_tokens: 8,
    tool_choice: { type: 'function', function: { name: 'delete_everything' } },
  }), (e) => e.status === 400 && e.error.param === 'tool_choice.function.name');
});

// The shipped tools with bounded strings and no other members, so that every constrained
// call ends well within max_tokens (an unbounded string can ramble on at temperature 1).
const boundedTools = prompt.tools.map((t) => {
  const properties = Object.fromEntries(Object.entries(t.function.parameters.properties).map(([k, v]) =>
    [k, v.enum ? v : { ...v, maxLength: 24 }]));
  return { type: 'function', function: { ...t.function,
    parameters: { ...t.function.parameters, properties, additionalProperties: false } } };
});
const schemaOf = Object.fromEntries(boundedTools.map((t) => [t.function.name, t.function.parameters]));
const ajv = new Ajv2020({ strict: false, allErrors: true });
const validators = Object.fromEntries(Object.entries(schemaOf).map(([n, s]) => [n, ajv.compile(s)]));
const hot = { temperature: 1, max_tokens: 400, chat_template_kwargs: { enable_thinking: false } };

// Every call parses, names one of `allowed` and its arguments validate; returns the count.
function assertValidCalls(calls, allowed, where) {
  assert.ok(calls.length >= 1, `${where}: no tool call`);
  for (const call of calls) {
    assert.equal(call.type, 'function', where);
    assert.match(call.id, /^call_/, where);
    assert.ok(allowed.includes(call.function.name), `${where}: ${call.function.name} is not one of ${allowed}`);
    let args;
    assert.doesNotThrow(() => { args = JSON.parse(call.function.arguments); }, `${where}: ${call.function.arguments}`);
    const validate = validators[call.function.name];
    assert.ok(validate(args), `${where}: ${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
  }
  return calls.length;
}

// A streamed answer as OpenAI's client assembles it (ChatCompletionStream), and the finish reasons seen.
async function streamed(request) {
  const stream = client.chat.completions.stream(request);
  const finishes = [];
  stream.on('chunk', (chunk) => { for (const c of chunk.choices) if (c.finish_reason) finishes.push(c.finish_reason); });
  return { completion: await stream.finalChatCompletion(), finishes };
}

test('tool_choice required: every answer is valid calls, sampled hot, whole, streamed and n > 1', async () => {
  const names = boundedTools.map((t) => t.function.name);
  let answers = 0;
  for (const seed of [1, 2, 3]) {
    const request = { messages: prompt.messages, tools: boundedTools, tool_choice: 'required', seed, ...hot };
    const whole = await client.chat.completions.create({ ...request, n: 4 });
    for (const choice of whole.choices) {
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message));
      assert.equal(choice.message.content ?? '', '');
      assertValidCalls(choice.message.tool_calls, names, `seed ${seed} choice ${choice.index}`);
      ++answers;
    }
    const { completion, finishes } = await streamed({ ...request, n: 2, seed: 100 + seed });
    assert.deepEqual(finishes, ['tool_calls', 'tool_calls']);
    for (const choice of completion.choices) {
      assertValidCalls(choice.message.tool_calls, names, `streamed seed ${seed} choice ${choice.index}`);
      ++answers;
    }
  }
  assert.equal(answers, 18);
});

test('a named tool_choice: every call is to that tool, valid, though the model would call another', async () => {
  // Greedy, the model calls get_weather on this prompt; with get_time named it calls get_time.
  const request = {
    messages: prompt.messages, tools: boundedTools, ...hot,
    tool_choice: { type: 'function', function: { name: 'get_time' } },
  };
  const greedyAnswer = await client.chat.completions.create({ ...request, ...greedy });
  assertValidCalls(greedyAnswer.choices[0].message.tool_calls, ['get_time'], 'greedy');
  const whole = await client.chat.completions.create({ ...request, n: 5, seed: 7 });
  for (const choice of whole.choices) {
    assert.equal(choice.finish_reason, 'tool_calls');
    assertValidCalls(choice.message.tool_calls, ['get_time'], `choice ${choice.index}`);
  }
  const { completion, finishes } = await streamed({ ...request, seed: 8 });
  assert.deepEqual(finishes, ['tool_calls']);
  assertValidCalls(completion.choices[0].message.tool_calls, ['get_time'], 'streamed');
});

test('parallel_tool_calls false: exactly one call', async () => {
  const r = await client.chat.completions.create({
    messages: prompt.messages, tools: boundedTools, tool_choice: 'required', parallel_tool_calls: false, n: 6, seed: 11, ...hot,
  });
  for (const choice of r.choices) {
    assert.equal(choice.message.tool_calls.length, 1);
    assertValidCalls(choice.message.tool_calls, Object.keys(schemaOf), `choice ${choice.index}`);
  }
});

test('tool_choice required after free thinking: the thoughts apart, then a valid call', async () => {
  // The shipped tools as they are (the model thinks on this prompt as it was trained).
  const r = await client.chat.completions.create({
    messages: prompt.messages, tools: prompt.tools, tool_choice: 'required', max_tokens: 600, ...greedy,
  });
  const choice = r.choices[0];
  assert.ok((choice.message.reasoning_content ?? '').length > 0, 'the shipped model thinks on this prompt');
  assert.equal(choice.finish_reason, 'tool_calls');
  for (const call of choice.message.tool_calls) {
    const schema = prompt.tools.find((t) => t.function.name === call.function.name).function.parameters;
    const validate = ajv.compile(schema);
    assert.ok(validate(JSON.parse(call.function.arguments)), call.function.arguments);
  }
});

test('tool_choice auto: the model may answer in text, and every call it makes is valid', async () => {
  let calls = 0;
  const r = await client.chat.completions.create({
    messages: prompt.messages, tools: boundedTools, n: 12, seed: 21, ...hot, temperature: 1.2,
  });
  for (const choice of r.choices) {
    if (choice.finish_reason === 'length') continue;  // free text may ramble to the limit
    if (choice.finish_reason === 'tool_calls') {
      calls += assertValidCalls(choice.message.tool_calls, Object.keys(schemaOf), `choice ${choice.index}`);
    } else {
      assert.equal(choice.message.tool_calls ?? undefined, undefined);
      assert.ok(!(choice.message.content ?? '').includes('<tool_call>'), choice.message.content);
    }
  }
  assert.ok(calls > 0, 'some sampled answers call a tool');
});

test('tool problems are 400s naming the field', async () => {
  const badTools = [boundedTools[0], { type: 'function', function: { name: 'x', parameters: { type: 'object',
    properties: { a: { type: 'array', uniqueItems: true } } } } }];
  const cases = [
    [{ tools: badTools }, 'tools[1].function.parameters', /'tools\[1\].function.parameters': #\/properties\/a: 'uniqueItems' is not supported/],
    [{ tools: [{ type: 'function', function: { name: 'x', parameters: { type: 'string' } } }] },
      'tools[0].function.parameters', /arguments are a JSON object/],
    [{ tools: boundedTools, tool_choice: 'required', response_format: { type: 'json_object' } }, 'response_format',
      /forces a tool call/],
    [{ tools: boundedTools, tool_choice: { type: 'function', function: { name: 'get_time' } }, grammar: 'root ::= "a"' },
      'grammar', /forces a tool call/],
  ];
  for (const [extra, param, message] of cases) {
    await assert.rejects(client.chat.completions.create({ messages: prompt.messages, max_tokens: 8, ...extra }), (e) => {
      assert.equal(e.status, 400, JSON.stringify(extra));
      assert.equal(e.error?.param ?? e.param, param);
      assert.match(e.message, message);
      return true;
    });
  }
  // With tool_choice none the tools are not offered, so their schemas are not compiled.
  const none = await client.chat.completions.create({ messages: prompt.messages, max_tokens: 4, tools: badTools, tool_choice: 'none' });
  assert.equal(none.choices.length, 1);
});
