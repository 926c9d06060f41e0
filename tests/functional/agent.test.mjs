// Profile `agent`: recorded multi-turn agent conversations (tests/data/agent/conversations.json)
// replayed through OpenAI's client against the shipped model: tools with nested object,
// array, enum, pattern and format parameters; tool_choice auto, required and named. Every
// call the model makes validates with ajv against its tool's parameters and gets the recorded
// result back. Greedy, the model calls the tools the recording names and its final answers
// carry the results; the whole conversation is the same streamed as whole, and all
// conversations at once as each alone. Sampled hot, every call still validates.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, greedy } from './lib/harness.mjs';
import { replay, checkCall } from './lib/agent_replay.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { tools, conversations } = JSON.parse(
  readFileSync(path.join(here, '..', 'data', 'agent', 'conversations.json'), 'utf8'));

let server;
let client;
before(async () => {
  server = await startServer(['--parallel', '4']);
  client = server.client();
});
after(async () => assert.equal(await server.stop(), 0));

// NOTE(budget): the shipped model's thoughts, calls and answers on these turns take well
// under 200 tokens; a turn that reaches the limit fails the greedy test below.
const greedyRequest = { ...greedy, max_tokens: 200 };
const names = (turn) => turn.flatMap((step) => step.calls.map(([name]) => name));

// The greedy transcript of a conversation replayed whole and alone, made once: the later
// tests compare with it (and still can when run by themselves).
const aloneRuns = new Map();
function alone(conversation) {
  if (!aloneRuns.has(conversation.name)) {
    aloneRuns.set(conversation.name, replay(client, tools, conversation, { request: greedyRequest }));
  }
  return aloneRuns.get(conversation.name);
}

test('greedy: every call validates, the recorded tools are called and the answers carry their results', async () => {
  for (const conversation of conversations) {
    const transcript = await alone(conversation);
    conversation.turns.forEach((turn, t) => {
      const steps = transcript[t];
      const where = `${conversation.name} turn ${t}: ${JSON.stringify(steps)}`;
      assert.deepEqual(names(steps), turn.calls ?? [], where);
      const last = steps.at(-1);
      assert.equal(last.finish, 'stop', where);
      assert.ok(!last.content.includes('<tool_call>'), where);
      for (const text of turn.answer_includes ?? []) assert.ok(last.content.includes(text), `${where}: no '${text}'`);
    });
  }
});

test('streamed (as OpenAI\'s client assembles it), each conversation is the same as whole', async () => {
  for (const conversation of conversations) {
    const streamed = await replay(client, tools, conversation, { request: greedyRequest, stream: true });
    assert.deepEqual(streamed, await alone(conversation), conversation.name);
  }
});

test('all conversations at once, whole and streamed, each the same as alone', async () => {
  for (const conversation of conversations) await alone(conversation);  // alone first, one by one
  const runs = conversations.flatMap((conversation) => [false, true].map(async (stream) => {
    const transcript = await replay(client, tools, conversation, { request: greedyRequest, stream });
    assert.deepEqual(transcript, await alone(conversation), `${conversation.name}${stream ? ' streamed' : ''}`);
  }));
  await Promise.all(runs);
});

test('sampled hot (tool_choice auto, required, named; n > 1): every call validates', async () => {
  const hot = { temperature: 1, max_tokens: 200 };
  let calls = 0;
  // Whole conversations, sampled: the replay checks each call it meets.
  await Promise.all(conversations.map(async (conversation, c) => {
    const transcript = await replay(client, tools, conversation, { request: { ...hot, seed: c } });
    calls += transcript.flat().reduce((sum, step) => sum + step.calls.length, 0);
  }));
  // Each turn's first request with n = 4: every choice of a forced turn is valid calls to
  // an allowed tool; an auto turn's calls are valid where it makes them.
  const firsts = conversations.flatMap((conversation) => conversation.turns.map(async (turn, t) => {
    const messages = [...(conversation.system ? [{ role: 'system', content: conversation.system }] : []),
      { role: 'user', content: turn.user }];
    const toolChoice = turn.tool_choice ?? 'auto';
    const r = await client.chat.completions.create({ messages, tools, tool_choice: toolChoice, ...turn.request, n: 4,
      seed: 10 + t, ...hot });
    for (const choice of r.choices) {
      const where = `${conversation.name} turn ${t} choice ${choice.index}`;
      if (toolChoice !== 'auto') assert.equal(choice.finish_reason, 'tool_calls', `${where}: ${JSON.stringify(choice.message)}`);
      if (choice.finish_reason !== 'tool_calls') continue;
      for (const call of choice.message.tool_calls) {
        checkCall(call, tools, where);
        if (toolChoice.function) assert.equal(call.function.name, toolChoice.function.name, where);
        ++calls;
      }
    }
  }));
  await Promise.all(firsts);
  console.log(`agent: ${calls} sampled tool calls, every one valid`);
  assert.ok(calls >= 10, `${calls} tool calls`);
});
