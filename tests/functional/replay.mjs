// The serving stage of `gufo qualify` (src/qualify/serving_stage.cpp): one fixed set of
// requests, each deterministic (greedy or seeded), sent to two builds' servers in turn,
// A B then B A round after round, so that both meet the same state of the machine. Writes,
// for each request, each build's answer (what a client sees, without ids and timestamps),
// whether that answer was the same in every round, and each round's latency in milliseconds.
// Usage: node tests/functional/replay.mjs --baseline GUFO --candidate GUFO --out OUT.json
//          [--model M.gguf] [--rounds 5]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startServer, collectStream, model as defaultModel } from './lib/harness.mjs';

const { values: opt } = parseArgs({
  options: {
    baseline: { type: 'string' },
    candidate: { type: 'string' },
    out: { type: 'string' },
    model: { type: 'string', default: defaultModel },
    rounds: { type: 'string', default: '5' },
  },
});
for (const name of ['baseline', 'candidate', 'out']) {
  if (!opt[name]) {
    console.error(`replay: --${name} is required`);
    process.exit(2);
  }
}
const rounds = Number(opt.rounds);
if (!Number.isInteger(rounds) || rounds < 2) {
  console.error(`replay: --rounds: '${opt.rounds}' is not an integer of at least 2`);
  process.exit(2);
}

const ask = [{ role: 'user', content: 'Write a few sentences about the GNU project and free software.' }];
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const person = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
  required: ['name', 'age'],
  additionalProperties: false,
};

// name -> (client) => the answer a client would compare. Covers the functional profiles'
// request kinds: greedy and seeded sampling, stop strings, logprobs, n > 1, streaming, raw
// completions, structured output and tool calls.
const requests = {
  chat_greedy: (c) => c.chat.completions.create({ messages: ask, max_tokens: 48, temperature: 0 }),
  chat_seeded: (c) => c.chat.completions.create({ messages: ask, max_tokens: 32, temperature: 1.0, seed: 7 }),
  chat_stop: (c) => c.chat.completions.create({ messages: ask, max_tokens: 48, temperature: 0, stop: ['.', '\n'] }),
  chat_logprobs: (c) =>
    c.chat.completions.create({ messages: ask, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 }),
  chat_n2: (c) => c.chat.completions.create({ messages: ask, max_tokens: 16, temperature: 0.8, seed: 11, n: 2 }),
  chat_stream: async (c) =>
    collectStream(await c.chat.completions.create({ messages: ask, max_tokens: 32, temperature: 0, stream: true })),
  completion: (c) => c.completions.create({ prompt: 'The GNU General Public License', max_tokens: 32, temperature: 0 }),
  json_schema: (c) =>
    c.chat.completions.create({
      messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
      max_tokens: 64,
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } },
    }),
  tool_required: (c) =>
    c.chat.completions.create({
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      max_tokens: 64,
      temperature: 0,
      tools: [weather],
      tool_choice: 'required',
    }),
  long_prompt: (c) =>
    c.chat.completions.create({
      messages: [{ role: 'user', content: `${'Free software respects the freedom of its users. '.repeat(40)}Summarize.` }],
      max_tokens: 16,
      temperature: 0,
    }),
};

// What a client compares: choices without ids, timestamps or usage timings.
function answerOf(response) {
  if (response.choices === undefined) return response;  // a collected stream
  return response.choices.map((c) => ({
    index: c.index,
    finish_reason: c.finish_reason,
    text: c.message?.content ?? c.text ?? null,
    reasoning: c.message?.reasoning_content ?? null,
    tool_calls: (c.message?.tool_calls ?? []).map((t) => ({ name: t.function.name, arguments: t.function.arguments })),
    // The values too: with bit-identical logits they are equal, and a changed value with the
    // same argmax is a changed build.
    logprobs:
      c.logprobs?.content?.map((l) => ({
        token: l.token,
        logprob: l.logprob,
        top: l.top_logprobs.map((t) => [t.token, t.logprob]),
      })) ?? null,
  }));
}

const servers = {};
try {
  for (const side of ['baseline', 'candidate']) {
    servers[side] = await startServer([], { binaryPath: opt[side], modelPath: opt.model });
  }
  const results = Object.fromEntries(
    Object.keys(requests).map((name) => [name, { answers: {}, stable: { baseline: true, candidate: true }, latency_ms: { baseline: [], candidate: [] } }]),
  );
  for (let round = 0; round < rounds; ++round) {
    const order = round % 2 === 0 ? ['baseline', 'candidate'] : ['candidate', 'baseline'];
    for (const [name, send] of Object.entries(requests)) {
      for (const side of order) {
        const client = servers[side].client();
        const start = performance.now();
        let response;
        try {
          response = await send(client);
        } catch (e) {
          throw new Error(`${name} on the ${side} (${opt[side]}), round ${round}: ${e.message}`);
        }
        const answer = JSON.stringify(answerOf(response));
        results[name].latency_ms[side].push(performance.now() - start);
        if (results[name].answers[side] === undefined) results[name].answers[side] = answer;
        if (results[name].answers[side] !== answer) results[name].stable[side] = false;
      }
    }
  }
  const out = Object.entries(results).map(([name, r]) => ({
    name,
    same: r.answers.baseline === r.answers.candidate,
    stable: r.stable,
    answers: { baseline: JSON.parse(r.answers.baseline), candidate: JSON.parse(r.answers.candidate) },
    latency_ms: r.latency_ms,
  }));
  writeFileSync(opt.out, `${JSON.stringify({ rounds, model: opt.model, requests: out }, null, 2)}\n`);
  console.log(`replay: ${out.length} requests, ${rounds} rounds, ${out.filter((r) => r.same).length} answers the same`);
} finally {
  for (const [side, server] of Object.entries(servers)) {
    const code = await server.stop();
    if (code !== 0) {
      console.error(`replay: the ${side}'s server exited ${code} on SIGTERM`);
      process.exitCode = 1;
    }
  }
}
