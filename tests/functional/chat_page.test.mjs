// Profile `chat_page`: the chat page at / (src/server/web/chat.html) in a real browser, Debian's
// headless Chromium driven by puppeteer-core: it loads under its Content-Security-Policy, lists
// the server's models, streams answers equal to the API's own greedy answers (thinking shown
// collapsed, tool calls as blocks, earlier turns sent back), Stop cancels the generation, text
// is never markup, and API errors show inline. A screenshot per scenario goes to
// $GUFO_TEST_ARTIFACTS, else build/test-artifacts/chat_page/. GUFO_CHROMIUM picks the browser.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { startServer, tokenize, model, greedy } from './lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const chromium = process.env.GUFO_CHROMIUM ?? '/usr/bin/chromium';
const artifacts = process.env.GUFO_TEST_ARTIFACTS ?? path.join(root, 'build', 'test-artifacts', 'chat_page');
// The tool-call prompt of models/README.md: the shipped model thinks, then calls get_weather.
const toolPrompt = JSON.parse(readFileSync(path.join(root, 'tools', 'train', 'tool_call_prompt.json'), 'utf8'));
const draftPath = path.join(path.dirname(model), 'gufo-tiny-draft-q8_0.gguf');
const mainId = path.basename(model, '.gguf');
const draftId = 'gufo-tiny-draft-q8_0';
const apiKey = 'sesame';

let server;   // two models: GUFO_MODEL (the default) and the draft model
let browser;

before(async () => {
  if (!existsSync(chromium)) {
    throw new Error(`no Chromium at ${chromium}: install Debian's 'chromium' (scripts/install-deps.sh) `
      + 'or set GUFO_CHROMIUM');
  }
  mkdirSync(artifacts, { recursive: true });
  [server, browser] = await Promise.all([
    startServer(['-m', draftPath, '--parallel', '2']),
    // NOTE(chromium): CI runs as root, where Chromium's sandbox cannot start.
    puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] }),
  ]);
});

after(async () => {
  await browser?.close();
  if (server) assert.equal(await server.stop(), 0);
  console.log(`chat_page: screenshots in ${artifacts}`);
});

// A fresh page (its own tab) on the server's /, with the page's errors collected.
async function openPage(target, { width = 1000, height = 760 } = {}) {
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  const response = await page.goto(`${target.baseURL}/`, { waitUntil: 'load' });
  return { page, response, errors };
}

const shoot = (page, name) => page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });

async function modelOptions(page) {
  await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0, { timeout: 20_000 });
  return page.$$eval('#model option', (options) => options.map((o) => ({ value: o.value, text: o.textContent })));
}

// Sets form fields as a user would leave them (a change event each).
async function fill(page, values) {
  await page.evaluate((values) => {
    for (const [selector, value] of Object.entries(values)) {
      const input = document.querySelector(selector);
      input.value = value;
      input.dispatchEvent(new Event('change'));
    }
  }, values);
}

// Types a message, sends it with Enter and waits until its answer leaves "streaming".
async function ask(page, text, { onStreaming } = {}) {
  const index = await page.$$eval('.message.assistant', (list) => list.length);
  await page.$eval('#input', (input, text) => { input.value = text; }, text);
  await page.focus('#input');
  await page.keyboard.press('Enter');
  await page.waitForFunction((i) => document.querySelectorAll('.message.assistant')[i], {}, index);
  if (onStreaming) await onStreaming(index);
  await page.waitForFunction(
    (i) => document.querySelectorAll('.message.assistant')[i].dataset.state !== 'streaming', { timeout: 60_000 }, index);
  return readAnswer(page, index);
}

function readAnswer(page, index) {
  return page.evaluate((i) => {
    const m = document.querySelectorAll('.message.assistant')[i];
    const thinking = m.querySelector('details.thinking');
    return {
      state: m.dataset.state,
      finish: m.dataset.finish ?? null,
      content: m.querySelector('.content').textContent,
      thinking: thinking ? { open: thinking.open, text: thinking.querySelector('.text').textContent } : null,
      calls: [...m.querySelectorAll('.tool-call')].map((c) => ({
        name: c.querySelector('.name').textContent, arguments: c.querySelector('pre').textContent })),
      error: m.querySelector('.error')?.textContent ?? null,
    };
  }, index);
}

// The same request straight to the API, whole (not streamed).
async function apiAnswer(target, body, headers = {}) {
  const response = await target.fetch('/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).choices[0];
}

// The conversation the page keeps and sends back (a top-level `let` of its script).
const conversationOf = (page) => page.evaluate('conversation');

const sha256 = (text) => createHash('sha256').update(text).digest('base64');

test('/ serves the page under a hash-based CSP; the picker lists the server\'s models', async () => {
  const { page, response, errors } = await openPage(server);
  try {
    assert.equal(response.status(), 200);
    const headers = response.headers();
    assert.equal(headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(headers['cache-control'], 'no-cache');
    // The policy names exactly the page's own script and style.
    const html = await response.text();
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)[1];
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)[1];
    const csp = headers['content-security-policy'];
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /connect-src 'self'/);
    assert.ok(csp.includes(`script-src 'sha256-${sha256(script)}'`), csp);
    assert.ok(csp.includes(`style-src 'sha256-${sha256(style)}'`), csp);
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//, 'the page must load nothing from elsewhere');

    const models = (await (await server.fetch('/v1/models')).json()).data;
    assert.deepEqual(models.map((m) => m.id), [mainId, draftId]);
    const options = await modelOptions(page);
    assert.deepEqual(options.map((o) => o.value), models.map((m) => m.id));
    assert.deepEqual(options.map((o) => o.text.includes('not loaded')), models.map((m) => !m.loaded));
    assert.equal(await page.$eval('#stop', (b) => b.disabled), true);
    assert.deepEqual(errors, []);  // a CSP violation would be one
    await shoot(page, '01-loaded');

    // /index.html is the same page; the page needs no API key even where the API does.
    assert.equal(await (await server.fetch('/index.html')).text(), html);
    const metrics = await server.engineMetrics();
    assert.ok(metrics['gufo_http_requests_total{route="/",status="200"}'] >= 2, JSON.stringify(metrics));
  } finally {
    await page.close();
  }
});

test('a greedy answer streams into the page, equal to the API\'s; the next turn carries it', async () => {
  const { page, errors } = await openPage(server);
  try {
    await modelOptions(page);
    await fill(page, { '#temperature': '0', '#max-tokens': '48', '#system': 'You are a helpful assistant.' });
    const question = 'What is GNU?';
    const first = await ask(page, question);
    const messages = [{ role: 'system', content: 'You are a helpful assistant.' }, { role: 'user', content: question }];
    const expected = await apiAnswer(server, { messages, max_tokens: 48, ...greedy });
    assert.equal(first.state, 'done');
    assert.equal(first.content, expected.message.content);
    assert.equal(first.finish, expected.finish_reason);
    assert.equal(first.thinking, null);  // the model answered after an empty <think></think>

    // A second turn, on the other model: the first answer is sent back as history.
    await page.select('#model', draftId);
    const follow = 'Who started it?';
    const second = await ask(page, follow);
    const history = [...messages, { role: 'assistant', content: first.content }, { role: 'user', content: follow }];
    // The system prompt is not part of the conversation: it is added to each request.
    assert.deepEqual((await conversationOf(page)).slice(0, 3), history.slice(1));
    const expected2 = await apiAnswer(server, { model: draftId, messages: history, max_tokens: 48, ...greedy });
    assert.equal(second.state, 'done');
    assert.equal(second.content, expected2.message.content);
    assert.equal(await page.$$eval('.message.user', (l) => l.length), 2);
    // The picker now shows the draft model loaded.
    await page.waitForFunction((id) => document.querySelector('#model').selectedOptions[0].textContent === id,
      {}, draftId);
    assert.equal(await page.$eval('#stop', (b) => b.disabled), true);
    assert.deepEqual(errors, []);
    await shoot(page, '02-conversation');
  } finally {
    await page.close();
  }
});

test('thinking shows collapsed and a tool call as a block, both as the API returns them', async () => {
  const { page, errors } = await openPage(server);
  try {
    await modelOptions(page);
    await fill(page, { '#temperature': '0', '#max-tokens': '128', '#tools': JSON.stringify(toolPrompt.tools, null, 2) });
    const question = toolPrompt.messages[0].content;
    const answer = await ask(page, question);
    const expected = await apiAnswer(server,
      { messages: toolPrompt.messages, tools: toolPrompt.tools, max_tokens: 128, ...greedy });
    assert.equal(expected.finish_reason, 'tool_calls');
    assert.ok(expected.message.reasoning_content.length > 0, 'the model did not think');
    assert.equal(answer.state, 'done');
    assert.equal(answer.finish, 'tool_calls');
    assert.deepEqual(answer.thinking, { open: false, text: expected.message.reasoning_content });
    assert.equal(answer.content, expected.message.content ?? '');
    assert.equal(answer.calls.length, expected.message.tool_calls.length);
    answer.calls.forEach((call, i) => {
      const want = expected.message.tool_calls[i].function;
      assert.equal(call.name, want.name);
      assert.deepEqual(JSON.parse(call.arguments), JSON.parse(want.arguments));
      assert.equal(call.arguments, JSON.stringify(JSON.parse(want.arguments), null, 2));  // pretty-printed
    });
    // The call goes back as the assistant's turn (the thinking does not), and the server takes it.
    const conversation = await conversationOf(page);
    assert.deepEqual(conversation.at(-1).tool_calls.map((c) => c.function),
      expected.message.tool_calls.map((c) => c.function));
    assert.ok(!JSON.stringify(conversation).includes(expected.message.reasoning_content));
    await page.click('details.thinking summary');
    await shoot(page, '03-thinking-tool-call');
    const follow = { role: 'user', content: 'Thanks. And in Paris?' };
    const next = await ask(page, follow.content);
    assert.equal(next.state, 'done', next.error);
    const expectedNext = await apiAnswer(server, { messages: [...conversation, follow], tools: toolPrompt.tools,
      max_tokens: 128, ...greedy });
    assert.deepEqual(next.calls.map((c) => c.name), (expectedNext.message.tool_calls ?? []).map((c) => c.function.name));
    assert.equal(next.content, expectedNext.message.content ?? '');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('tools that are not a JSON array show an error and send nothing', async () => {
  const { page } = await openPage(server);
  try {
    await modelOptions(page);
    let posts = 0;
    page.on('request', (r) => { if (r.method() === 'POST') posts += 1; });
    const cases = [['[{"type": "function",', /Tools: not valid JSON/], ['{"type": "function"}', /Tools: must be a JSON array/]];
    for (const [tools, message] of cases) {
      await fill(page, { '#tools': tools });
      await page.$eval('#input', (input) => { input.value = 'hi'; });
      await page.click('#send');
      await page.waitForSelector('#page-error:not([hidden])');
      assert.match(await page.$eval('#page-error', (e) => e.textContent), message);
    }
    assert.equal(posts, 0);
    assert.equal(await page.$$eval('.message', (l) => l.length), 0);
    assert.equal(await page.$eval('#input', (i) => i.value), 'hi');  // kept, to fix and send again
    await shoot(page, '04-bad-tools');
  } finally {
    await page.close();
  }
});

test('Stop ends a long answer early; the server cancels it and keeps serving', async () => {
  const { page, errors } = await openPage(server);
  try {
    await modelOptions(page);
    const before = await server.engineMetrics();
    const maxTokens = (await (await server.fetch('/v1/models')).json()).data[0].max_model_len - 64;
    await fill(page, { '#temperature': '1', '#max-tokens': String(maxTokens) });
    // NOTE(stop): the page cannot ask for logit_bias; the test adds it on the way (as errors.test.mjs
    // does) so that the answer cannot end by itself before Stop.
    const banned = Object.fromEntries(tokenize('<|im_end|><|endoftext|>', { special: true }).map((id) => [id, -100]));
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.method() !== 'POST') return r.continue();
      r.continue({ postData: JSON.stringify({ ...JSON.parse(r.postData()), logit_bias: banned, seed: 1 }) });
    });
    // Every length the answer shows while it streams, to see it arrive in pieces.
    await page.evaluate(() => {
      window.seen = new Set();
      new MutationObserver(() => {
        const m = document.querySelector('.message.assistant:last-child');
        if (m?.dataset.state === 'streaming') window.seen.add(m.querySelector('.content').textContent.length);
      }).observe(document.querySelector('#messages'), { subtree: true, childList: true, characterData: true });
    });
    const answer = await ask(page, 'Tell me a long story about GNU.', {
      onStreaming: async (i) => {
        await page.waitForFunction(
          (i) => document.querySelectorAll('.message.assistant .content')[i].textContent.length > 400, { timeout: 30_000 }, i);
        assert.equal(await page.$eval('#stop', (b) => b.disabled), false);
        assert.equal(await page.$eval('#send', (b) => b.disabled), true);
        await page.click('#stop');
      },
    });
    assert.equal(answer.state, 'stopped');
    assert.ok(answer.content.length > 400, answer.content);
    const seen = await page.evaluate(() => [...window.seen].filter((n) => n > 0));
    assert.ok(seen.length >= 5, `the answer did not stream (lengths seen: ${seen})`);
    assert.equal(await page.$eval('#stop', (b) => b.disabled), true);
    assert.equal(await page.$eval('#send', (b) => b.disabled), false);
    await shoot(page, '05-stopped');
    // The engine notices at its next write and frees the sequence; then the server answers again.
    const cancelled = 'gufo_requests_total{outcome="cancelled"}';
    let m;
    for (let i = 0; i < 100; ++i) {
      m = await server.engineMetrics();
      if (m[cancelled] > (before[cancelled] ?? 0)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(m[cancelled], (before[cancelled] ?? 0) + 1);
    assert.equal(m.gufo_running_sequences, 0);
    assert.ok(m.gufo_completion_tokens_total - (before.gufo_completion_tokens_total ?? 0) < maxTokens);
    const after = await apiAnswer(server,
      { messages: [{ role: 'user', content: 'What is GNU?' }], max_tokens: 16, ...greedy });
    assert.ok(after.message.content.length > 0, JSON.stringify(after));
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('markup in a message or an answer is shown as text, never run', async () => {
  const { page, errors } = await openPage(server);
  try {
    await modelOptions(page);
    await fill(page, { '#temperature': '0', '#max-tokens': '24' });
    const markup = '<img src=x id=injected-user onerror="window.pwned=1"><b>bold</b> & </div>';
    const answer = await ask(page, markup);
    const expected = await apiAnswer(server, { messages: [{ role: 'user', content: markup }], max_tokens: 24, ...greedy });
    assert.equal(answer.content, expected.message.content);
    assert.equal(await page.$eval('.message.user .content', (e) => e.textContent), markup);
    // Model output with markup everywhere it can appear: a stream made up here, answered in place
    // of the server's (its keep-alive comments and CRLF line ends too).
    const evil = '<img src=x id=injected-model onerror="window.pwned=2">';
    const event = (delta, finish = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}`;
    const events = [
      ': keep-alive',
      event({ role: 'assistant', reasoning_content: `think ${evil}` }),
      event({ content: `answer ${evil}` }),
      event({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: `f${evil}`, arguments: '{"html": ' } }] }),
      event({ tool_calls: [{ index: 0, function: { arguments: `${JSON.stringify(evil)}}` } }] }),
      event({}, 'tool_calls'),
      'data: [DONE]',
    ];
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.method() !== 'POST') return r.continue();
      r.respond({ status: 200, contentType: 'text/event-stream',
        body: events.map((e) => `${e}\r\n\r\n`).join('') });
    });
    const made = await ask(page, 'again');
    assert.equal(made.state, 'done');
    assert.deepEqual(made.thinking, { open: false, text: `think ${evil}` });
    assert.equal(made.content, `answer ${evil}`);
    assert.deepEqual(made.calls, [{ name: `f${evil}`, arguments: JSON.stringify({ html: evil }, null, 2) }]);
    assert.equal(await page.$$eval('#messages img, #messages b, #injected-user, #injected-model', (l) => l.length), 0);
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.deepEqual(errors, []);
    await shoot(page, '06-markup-as-text');
  } finally {
    await page.close();
  }
});

test('API errors show inline: no key, a wrong key; the right key is remembered', async () => {
  const keyed = await startServer(['--api-key', apiKey, '--parallel', '1']);
  const { page } = await openPage(keyed, { width: 390, height: 760 });  // a phone-sized window
  try {
    await page.waitForSelector('#page-error:not([hidden])');
    assert.match(await page.$eval('#page-error', (e) => e.textContent), /no API key given/);
    await page.click('#settings summary');
    await fill(page, { '#api-key': 'wrong', '#temperature': '0', '#max-tokens': '16' });
    await page.waitForFunction(() => /incorrect API key/.test(document.querySelector('#page-error').textContent));
    const refused = await ask(page, 'What is GNU?');
    assert.equal(refused.state, 'error');
    assert.match(refused.error, /incorrect API key \(HTTP 401\)/);
    await shoot(page, '07-wrong-key');

    await fill(page, { '#api-key': apiKey });
    await modelOptions(page);
    await page.waitForSelector('#page-error', { hidden: true });
    // The refused message stays in the conversation, as the page shows it.
    const messages = [...await conversationOf(page), { role: 'user', content: 'What is GNU?' }];
    assert.equal(messages.length, 2);
    const answered = await ask(page, 'What is GNU?');
    assert.equal(answered.state, 'done', answered.error);
    const expected = await apiAnswer(keyed, { messages, max_tokens: 16, ...greedy }, { Authorization: `Bearer ${apiKey}` });
    assert.equal(answered.content, expected.message.content);
    await shoot(page, '08-right-key-narrow');
    // Kept in localStorage: a reload lists the models at once.
    await page.reload({ waitUntil: 'load' });
    assert.equal(await page.$eval('#api-key', (i) => i.value), apiKey);
    assert.equal((await modelOptions(page)).length, 1);
  } finally {
    await page.close();
    assert.equal(await keyed.stop(), 0);
  }
});
