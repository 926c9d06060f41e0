// Profile `structured`: constrained decoding through OpenAI's client. `response_format:
// {type: "json_object"}` gives JSON objects every time, whole and streamed, at any
// temperature, with n > 1 and beside other requests (whose answers it does not change);
// llama.cpp's `grammar` field (GBNF) is obeyed on both routes; a grammar that needs more
// than max_tokens ends with finish_reason length; what cannot be applied yet (json_schema) or
// does not parse is a 400 naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, collectStream } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const toolPrompt = JSON.parse(readFileSync(path.join(here, '..', '..', 'tools', 'train', 'tool_call_prompt.json'), 'utf8'));

let server;
let client;
before(async () => {
  server = await startServer(['--parallel', '4']);
  client = server.client();
});
after(async () => assert.equal(await server.stop(), 0));

const prompts = [
  'Give me the name and age of a person as JSON.',
  'Describe the grep command as a JSON object with fields name and purpose.',
  'List three colours.',
  'What is GNU?',
];
const jsonMode = { response_format: { type: 'json_object' }, max_tokens: 200 };
const noThinking = { chat_template_kwargs: { enable_thinking: false } };

function assertJsonObject(text, where) {
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${where}: not JSON: ${JSON.stringify(text)}`);
  assert.equal(typeof value, 'object', where);
  assert.ok(value !== null && !Array.isArray(value), `${where}: not an object: ${text}`);
}

test('json_object: every finished answer is a JSON object, whole and streamed, n > 1', async () => {
  let finished = 0;
  let total = 0;
  await Promise.all(prompts.map(async (content, p) => {
    const messages = [{ role: 'user', content }];
    const whole = await client.chat.completions.create({ messages, n: 3, temperature: 0.8, seed: p, ...jsonMode,
      ...noThinking });
    for (const choice of whole.choices) {
      ++total;
      if (choice.finish_reason !== 'stop') continue;
      ++finished;
      assertJsonObject(choice.message.content, `prompt ${p} choice ${choice.index}`);
    }
    const streamed = await collectStream(await client.chat.completions.create({
      messages, temperature: 0.8, seed: 100 + p, stream: true, ...jsonMode, ...noThinking,
    }));
    ++total;
    if (streamed.finish === 'stop') {
      ++finished;
      assertJsonObject(streamed.text, `prompt ${p} streamed`);
    }
  }));
  // The shipped model closes most objects within 200 tokens (at this temperature some strings
  // ramble on to the limit; what is unfinished is not checked, and must not be most).
  assert.ok(finished >= total / 2, `${finished} of ${total} finished`);
});

test('a reasoning model thinks freely first, then answers under the grammar', async () => {
  // The tool-call prompt of models/README.md: the shipped model thinks before it answers.
  const answer = await client.chat.completions.create({
    messages: toolPrompt.messages, tools: toolPrompt.tools, temperature: 0, max_tokens: 200,
    grammar: 'root ::= [ \\n]{0,4} "Answer: " ("yes" | "no") "."',
  });
  const message = answer.choices[0].message;
  assert.ok((message.reasoning_content ?? '').length > 0, 'the shipped model thinks on this prompt');
  assert.match(message.content, /^Answer: (yes|no)\.$/);
  assert.equal(answer.choices[0].finish_reason, 'stop');
});

test('the same greedy answer whole and streamed, and other requests unchanged beside it', async () => {
  const messages = [{ role: 'user', content: prompts[0] }];
  const plain = { messages: [{ role: 'user', content: 'What does grep do?' }], max_tokens: 40, temperature: 0 };
  const alone = (await client.chat.completions.create(plain)).choices[0].message.content;
  const [whole, streamed, beside] = await Promise.all([
    client.chat.completions.create({ messages, temperature: 0, ...jsonMode, ...noThinking }),
    client.chat.completions.create({ messages, temperature: 0, stream: true, ...jsonMode, ...noThinking })
      .then(collectStream),
    client.chat.completions.create(plain),
  ]);
  assertJsonObject(whole.choices[0].message.content, 'greedy');
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(beside.choices[0].message.content, alone);
});

test('grammar (llama.cpp GBNF) on chat and completions; too short a budget ends in length', async () => {
  const grammar = 'root ::= "Answer: " ("yes" | "no") "."';
  const chat = await client.chat.completions.create({
    messages: [{ role: 'user', content: 'Is GNU free software?' }], n: 8, temperature: 1.5, max_tokens: 30, grammar,
    ...noThinking,
  });
  for (const choice of chat.choices) {
    assert.match(choice.message.content, /^Answer: (yes|no)\.$/);
    assert.equal(choice.finish_reason, 'stop');
  }
  const completion = await client.completions.create({ prompt: 'The answer is', max_tokens: 30, grammar, temperature: 1 });
  assert.match(completion.choices[0].text, /^Answer: (yes|no)\.$/);
  const long = await client.completions.create({ prompt: 'x', max_tokens: 5, grammar: 'root ::= "a"{40}' });
  assert.equal(long.choices[0].finish_reason, 'length');
  assert.match(long.choices[0].text, /^a+$/);
});

test('what cannot be applied or does not parse is a 400 naming the field', async () => {
  const messages = [{ role: 'user', content: 'hi' }];
  const cases = [
    [{ grammar: 'root ::= value' }, 'grammar', /grammar:1:10: rule 'value' is used but never defined/],
    [{ grammar: 'root ::= "a" | ' + '('.repeat(300) }, 'grammar', /parentheses nest deeper/],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'response_format.json_schema',
      /not supported yet/],
    [{ response_format: { type: 'yaml' } }, 'response_format.type', /text, json_object or json_schema/],
    [{ response_format: 'json' }, 'response_format', /object with a string 'type'/],
    [{ response_format: { type: 'json_object' }, grammar: 'root ::= "a"' }, 'grammar', /not both/],
    [{ json_schema: { type: 'object' } }, 'json_schema', /not supported yet/],
    [{ response_format: { type: 'json_object', schema: { type: 'object' } } }, 'response_format.schema',
      /not supported yet/],
  ];
  for (const [extra, param, message] of cases) {
    await assert.rejects(client.chat.completions.create({ messages, max_tokens: 4, ...extra }), (e) => {
      assert.equal(e.status, 400, JSON.stringify(extra));
      assert.equal(e.error?.param ?? e.param, param, JSON.stringify(extra));
      assert.match(e.message, message);
      return true;
    });
  }
  const text = await client.chat.completions.create({ messages, max_tokens: 4, response_format: { type: 'text' } });
  assert.equal(text.choices.length, 1);
  // An empty grammar is no grammar, as in llama.cpp.
  const plain = { messages, max_tokens: 12, temperature: 0 };
  assert.equal((await client.chat.completions.create({ ...plain, grammar: '' })).choices[0].message.content,
    (await client.chat.completions.create(plain)).choices[0].message.content);
});

test('the Responses API: text.format json_object constrains, json_schema is a 400 naming text.format', async () => {
  const answer = await client.responses.create({
    input: prompts[0], text: { format: { type: 'json_object' } }, max_output_tokens: 200, temperature: 0,
  });
  assertJsonObject(answer.output_text.trim(), 'responses');
  await assert.rejects(client.responses.create({
    input: prompts[0], text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } },
  }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error?.param ?? e.param, 'text.format.json_schema');
    assert.match(e.message, /'text.format' of type json_schema is not supported yet/);
    return true;
  });
});
