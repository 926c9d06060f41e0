// Profile `long-context`: prompts just inside the context are served (and their token counts
// reported exactly); prompts past it, or prompt plus max_tokens past it, get a clean 400
// that names both numbers, and the server goes on serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, tokenize, greedy } from './lib/harness.mjs';

let server;
let client;
let nCtx;

// Text of exactly `n` tokens: whole words of a Debian-doc-like sentence, cut by token count.
function textOfTokens(n) {
  const words = 'the GNU project develops free software such as compilers editors and shells for everyone '.split(' ');
  let text = '';
  let i = 0;
  while (tokenize(text).length < n) {
    const chunk = [];
    for (let k = 0; k < 64; ++k) chunk.push(words[i++ % words.length]);
    text += ` ${chunk.join(' ')}`;
  }
  // Trim word by word until the count fits, then pad with single-token spaces if needed.
  let parts = text.split(' ');
  while (tokenize(parts.join(' ')).length > n) parts = parts.slice(0, -1);
  return parts.join(' ');
}

before(async () => {
  server = await startServer(['--parallel', '2']);
  client = server.client();
  const models = await client.models.list();
  nCtx = models.data[0].max_model_len;
  assert.ok(nCtx >= 64, `context ${nCtx}`);
});
after(async () => assert.equal(await server.stop(), 0));

test('a prompt a few tokens short of the context is served', async () => {
  const prompt = textOfTokens(nCtx - 8);
  const n = tokenize(prompt).length;
  const r = await client.completions.create({ prompt, max_tokens: nCtx - n, ...greedy });
  assert.equal(r.usage.prompt_tokens, n);
  assert.ok(r.usage.prompt_tokens + r.usage.completion_tokens <= nCtx);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  // Without max_tokens the answer may run to the end of the context and stops there.
  const open = await client.completions.create({ prompt, ...greedy });
  assert.ok(open.usage.prompt_tokens + open.usage.completion_tokens <= nCtx);
});

test('a prompt past the context is a 400 naming both numbers', async () => {
  const prompt = textOfTokens(nCtx + 20);
  const n = tokenize(prompt).length;
  await assert.rejects(client.completions.create({ prompt, max_tokens: 4 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.error.code, 'context_length_exceeded');
    assert.equal(e.error.param, 'prompt');
    assert.match(e.message, new RegExp(`\\b${nCtx}\\b`));
    assert.match(e.message, new RegExp(`\\b${n}\\b`));
    return true;
  });
  const chatPrompt = [{ role: 'user', content: prompt }];
  await assert.rejects(client.chat.completions.create({ messages: chatPrompt }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.param, 'messages');
    assert.match(e.message, new RegExp(`\\b${nCtx}\\b`));
    return true;
  });
});

test('prompt plus max_tokens past the context is a 400; the server still serves', async () => {
  const prompt = textOfTokens(nCtx / 2);
  const n = tokenize(prompt).length;
  await assert.rejects(client.completions.create({ prompt, max_tokens: nCtx }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.param, 'max_tokens');
    assert.match(e.message, new RegExp(`\\b${n + nCtx}\\b`));
    return true;
  });
  const ok = await client.completions.create({ prompt: 'The GNU Project', max_tokens: 4, ...greedy });
  assert.equal(ok.usage.completion_tokens, 4);
});
