// Replays a recorded agent conversation (tests/data/agent/conversations.json) against a real
// server: each user turn is sent with the tools; while the model answers with tool calls,
// every call is checked (an offered tool, arguments that validate with ajv against its
// parameters) and answered with the result recorded for that tool; the turn ends with the
// model's text. Returns the transcript: per turn, the steps the model took.
import assert from 'node:assert/strict';
import { assertValid } from './schema_check.mjs';

// One chat completion, whole or streamed (assembled by OpenAI's client, as an agent loop
// would take it), as { message, finish_reason }. Streamed reasoning is gathered from the
// chunks: it is not a field OpenAI's client knows.
async function complete(client, body, stream) {
  if (!stream) {
    const { choices: [choice] } = await client.chat.completions.create(body);
    return { message: choice.message, finish_reason: choice.finish_reason };
  }
  const run = client.chat.completions.stream(body);
  let reasoning = '';
  run.on('chunk', (chunk) => { reasoning += chunk.choices[0]?.delta?.reasoning_content ?? ''; });
  const { choices: [choice] } = await run.finalChatCompletion();
  return { message: { ...choice.message, reasoning_content: reasoning || undefined }, finish_reason: choice.finish_reason };
}

// Asserts that `call` names one of `tools` and that its arguments validate; returns [name, arguments text].
export function checkCall(call, tools, where) {
  assert.equal(call.type, 'function', where);
  assert.match(call.id, /^call_/, where);
  const tool = tools.find((t) => t.function.name === call.function.name);
  assert.ok(tool, `${where}: ${call.function.name} was not offered`);
  assertValid(call.function.arguments, tool.function.parameters, `${where}: ${call.function.name}`);
  return [call.function.name, call.function.arguments];
}

// `request`: fields added to every request (temperature, max_tokens, ...); `stream`: streamed
// requests; `maxSteps`: the requests a turn may take; a turn still calling tools then ends
// there (its last step's finish_reason is 'tool_calls').
export async function replay(client, tools, conversation, { request = {}, stream = false, maxSteps = 4 } = {}) {
  const messages = conversation.system ? [{ role: 'system', content: conversation.system }] : [];
  const transcript = [];
  for (const [turnIndex, turn] of conversation.turns.entries()) {
    messages.push({ role: 'user', content: turn.user });
    const steps = [];
    for (let step = 0; step < maxSteps; ++step) {
      const where = `${conversation.name} turn ${turnIndex} step ${step}`;
      // The turn's tool_choice (and request fields) apply to its first request; a forced
      // call on every round would never let the model answer.
      const first = step === 0 ? { tool_choice: turn.tool_choice ?? 'auto', ...turn.request } : { tool_choice: 'auto' };
      const { message, finish_reason: finish } = await complete(client,
        { messages, tools, ...first, ...request }, stream);
      const reasoning = message.reasoning_content ?? '';
      if (finish === 'tool_calls') {
        const calls = message.tool_calls.map((call, i) => checkCall(call, tools, `${where} call ${i}`));
        steps.push({ reasoning, content: message.content ?? '', calls, finish });
        messages.push({ role: 'assistant', content: message.content ?? '', tool_calls: message.tool_calls,
          ...(reasoning ? { reasoning_content: reasoning } : {}) });
        for (const call of message.tool_calls) {
          const result = turn.results?.[call.function.name] ?? { error: `no such tool result: ${call.function.name}` };
          messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
        }
        continue;
      }
      assert.equal(message.tool_calls ?? undefined, undefined, `${where}: tool calls with finish_reason ${finish}`);
      steps.push({ reasoning, content: message.content ?? '', calls: [], finish });
      messages.push({ role: 'assistant', content: message.content ?? '' });
      break;
    }
    transcript.push(steps);
  }
  return transcript;
}
