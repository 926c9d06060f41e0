// Profile `speculative`: a server that drafts by prompt lookup (`--spec ngram`; here
// `--draft-min 2`, so it drafts wherever the lookup finds tokens, whatever the timings) answers
// exactly what a server that does not draft answers: greedy and seeded, streamed or not,
// several choices, several requests at once. Its usage reports the drafts kept and refused, a
// request can turn drafting off or tune it, one that asks for a draft model gets a 400, and
// /metrics counts the drafts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, collectStream, greedy, reasoningOf } from './lib/harness.mjs';

let drafting;
let plain;
let draftedOnPlain = 0;  // the one request that asked the plain server for drafts

before(async () => {
  [drafting, plain] = await Promise.all([
    startServer(['--parallel', '4', '--spec', 'ngram', '--draft-min', '2']),
    startServer(['--parallel', '4']),
  ]);
});
after(async () => {
  assert.equal(await drafting.stop(), 0);
  assert.equal(await plain.stop(), 0);
});

// Prompts whose answers repeat what they were given (where prompt lookup drafts well), and one
// that does not.
const prompts = [
  'Copy this list exactly, one item a line: apples, pears, plums, cherries, apples, pears, plums, cherries.',
  'Repeat after me three times: the quick brown fox jumps over the lazy dog.',
  'def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\nWrite mul and div the same way.',
  'Tell me a story about a lighthouse keeper.',
];

async function answer(server, content, extra = {}) {
  return server.client().chat.completions.create({
    messages: [{ role: 'user', content }], max_tokens: 64, ...greedy, ...extra,
  });
}

test('greedy answers are the same with drafts, and their usage counts the drafts', async () => {
  let accepted = 0;
  for (const content of prompts) {
    const [a, b] = await Promise.all([answer(drafting, content), answer(plain, content)]);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content, content);
    assert.equal(reasoningOf(a.choices[0].message), reasoningOf(b.choices[0].message), content);
    assert.equal(a.choices[0].finish_reason, b.choices[0].finish_reason);
    assert.equal(a.usage.completion_tokens, b.usage.completion_tokens);
    assert.equal(b.usage.completion_tokens_details, undefined);
    const details = a.usage.completion_tokens_details;
    if (details) {
      assert.ok(details.accepted_prediction_tokens >= 0 && details.rejected_prediction_tokens >= 0);
      assert.ok(details.accepted_prediction_tokens <= a.usage.completion_tokens);
      accepted += details.accepted_prediction_tokens;
    }
  }
  assert.ok(accepted > 0, 'no draft was ever kept');
});

test('seeded choices and streams are the same with drafts, all at once', async () => {
  const sampled = { temperature: 0.8, seed: 11, n: 2, max_tokens: 48 };
  const runs = prompts.map(async (content) => {
    const [a, b] = await Promise.all([answer(drafting, content, sampled), answer(plain, content, sampled)]);
    for (let i = 0; i < 2; ++i) assert.equal(a.choices[i].message.content, b.choices[i].message.content, content);
    const stream = { stream: true, stream_options: { include_usage: true } };
    const [s, t] = await Promise.all([
      collectStream(await answer(drafting, content, stream)), collectStream(await answer(plain, content, stream)),
    ]);
    assert.equal(s.text, t.text, content);
    assert.equal(s.reasoning, t.reasoning, content);
    assert.equal(s.usage.completion_tokens, t.usage.completion_tokens);
  });
  await Promise.all(runs);
});

test('a request turns drafting off or tunes it; a draft model is refused', async () => {
  const content = prompts[0];
  const off = await answer(drafting, content, { spec: 'none' });
  assert.equal(off.usage.completion_tokens_details, undefined);
  const on = await answer(plain, content, { spec: 'ngram', draft_min: 1, draft_max: 3 });
  assert.equal(on.choices[0].message.content, off.choices[0].message.content);
  const details = on.usage.completion_tokens_details;
  assert.ok(details, 'drafts asked for, none made');
  draftedOnPlain = details.accepted_prediction_tokens + details.rejected_prediction_tokens;
  for (const [extra, param] of [
    [{ spec: 'draft' }, 'spec'], [{ spec: 'medusa' }, 'spec'], [{ draft_max: 0 }, 'draft_max'],
    [{ draft_min: 5, draft_max: 4 }, 'draft_min'],
  ]) {
    await assert.rejects(answer(drafting, content, extra), (e) => e.status === 400 && e.param === param,
      JSON.stringify(extra));
  }
});

test('/metrics counts the drafts verified and kept', async () => {
  const m = await drafting.engineMetrics();
  const drafted = m['gufo_draft_tokens_total{drafter="ngram"}'];
  const kept = m['gufo_draft_tokens_accepted_total{drafter="ngram"}'];
  assert.ok(drafted > 0 && kept > 0 && kept <= drafted, JSON.stringify({ drafted, kept }));
  assert.ok(m['gufo_draft_acceptance_ratio{drafter="ngram"}'] > 0);
  assert.ok(m['gufo_draft_accepted_length_mean{drafter="ngram"}'] > 0);
  assert.equal((await plain.engineMetrics())['gufo_draft_tokens_total{drafter="ngram"}'], draftedOnPlain);
});
