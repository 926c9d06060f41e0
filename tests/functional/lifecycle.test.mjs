// Profile `lifecycle`: start-up and shutdown cannot hang. A model that cannot be loaded ends
// the process with one line and exit 1; a taken port is an error, not a second server;
// SIGTERM/SIGINT end the process at any moment (while the model loads, while serving, while
// draining, where a second signal cancels what is still running); every request gets an
// access-log line, unless --log-disable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launchServer, startServer, binary, model, tokenize } from './lib/harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The lines a failed start printed, without the notice that --device auto chose the CPU.
const errorLines = (log) => log.split('\n').filter((l) => l && !l.includes(': using the CPU: '));

let scratch;
let bigModel;  // slow enough to load that a signal surely arrives while it loads

before(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'gufo-lifecycle-'));
  bigModel = path.join(scratch, 'qwen3-0.6b-q8_0.gguf');
  execFileSync(binary, ['synth', '--arch', 'qwen3', '--shape', '0.6b', '--type', 'q8_0', '-o', bigModel, '--quiet']);
});
after(() => rmSync(scratch, { recursive: true, force: true }));

// Resolves with the exit, or rejects if the process is still there after `ms`.
function exitWithin(launched, ms) {
  return Promise.race([
    launched.exited,
    sleep(ms).then(() => {
      launched.child.kill('SIGKILL');
      throw new Error(`still running ${ms} ms later:\n${launched.log()}`);
    }),
  ]);
}

test('a model that cannot be loaded ends the process with one line and exit 1', async () => {
  const fifo = path.join(scratch, 'fifo.gguf');
  execFileSync('mkfifo', [fifo]);
  const truncated = path.join(scratch, 'truncated.gguf');
  writeFileSync(truncated, readFileSync(model).subarray(0, 4096));
  const notGguf = path.join(scratch, 'notes.gguf');
  writeFileSync(notGguf, 'these are not weights\n');
  const cases = [...Array(8).fill('/nope.gguf'), fifo, truncated, notGguf, scratch];
  await Promise.all(cases.map(async (bad) => {
    const launched = launchServer([], { modelPath: bad });
    const { code } = await exitWithin(launched, 10_000);
    assert.equal(code, 1, launched.log());
    const lines = errorLines(launched.log());
    assert.equal(lines.length, 1, launched.log());
    assert.match(lines[0], /^gufo: error: .+/);
    assert.ok(lines[0].includes(bad), lines[0]);
  }));
});

test('a port another server listens on is an error, and the first server keeps serving', async () => {
  const first = await startServer();
  try {
    const second = launchServer([], { port: first.port });
    const { code } = await exitWithin(second, 10_000);
    assert.equal(code, 1);
    assert.match(second.log(), /cannot listen on 127\.0\.0\.1:\d+: Address already in use/);
    assert.equal(errorLines(second.log()).length, 1, second.log());
    for (let i = 0; i < 8; ++i) {  // every connection reaches the first server
      const r = await first.client().chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      assert.equal(r.choices.length, 1);
    }
  } finally {
    assert.equal(await first.stop(), 0);
  }
});

test('SIGTERM or SIGINT while the model loads ends the process at once', async () => {
  for (const signal of ['SIGTERM', 'SIGINT']) {
    const launched = launchServer([], { modelPath: bigModel });
    const port = await launched.listening;
    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    assert.equal(ready.status, 503, 'the model should still be loading');
    assert.deepEqual(await ready.json(), { status: 'loading' });
    launched.child.kill(signal);
    const { code } = await exitWithin(launched, 3_000);
    assert.equal(code, 0, launched.log());
    assert.match(launched.log(), new RegExp(`${signal} while starting: exiting`));
    assert.doesNotMatch(launched.log(), /gufo serve: ready/);
  }
});

test('a signal at any moment of start-up never hangs', async () => {
  await Promise.all(Array.from({ length: 8 }, async (_, i) => {
    const launched = launchServer([]);
    await launched.listening;
    await sleep(i * 15);  // from "listening" to well after "ready"
    launched.child.kill(i % 2 ? 'SIGINT' : 'SIGTERM');
    const { code } = await exitWithin(launched, 10_000);
    assert.equal(code, 0, launched.log());
  }));
});

test('a second signal cancels the requests still running and the process exits', async () => {
  const server = await startServer(['--grace', '600'], { modelPath: bigModel });
  const ends = tokenize('<|im_end|><|endoftext|>', { special: true, modelPath: bigModel });
  const stream = await server.client().chat.completions.create({
    messages: [{ role: 'user', content: 'Count to a thousand.' }], max_tokens: 1000, stream: true,
    logit_bias: Object.fromEntries(ends.map((t) => [t, -100])),  // no early end
  });
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next();
  server.child.kill('SIGINT');
  for (let i = 0; i < 250 && !/SIGINT: finishing/.test(server.log()); ++i) await sleep(20);
  assert.match(server.log(), /SIGINT: finishing running requests/);
  await sleep(500);
  assert.equal(server.child.exitCode, null, 'the first signal drains; the stream still runs');
  server.child.kill('SIGINT');
  const drained = (async () => {
    try {
      for (let r = await iterator.next(); !r.done; r = await iterator.next());
    } catch {
      // a cancelled stream may end as a closed connection
    }
  })();
  const { code } = await exitWithin(server, 10_000);
  assert.equal(code, 0, server.log());
  assert.match(server.log(), /second signal: cancelling running requests/);
  await drained;
});

test('each request gets an access-log line, unless --log-disable', async () => {
  for (const quiet of [false, true]) {
    const server = await startServer(quiet ? ['--log-disable'] : []);
    const r = await server.client().chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    await server.fetch('/no/such/route');
    assert.equal(await server.stop(), 0);
    const log = server.log();
    const generated = `"POST /v1/chat/completions" 200 ${r.usage.prompt_tokens}+${r.usage.completion_tokens} tokens`;
    assert.equal(log.includes(generated), !quiet, log);
    assert.equal(/127\.0\.0\.1 "GET \/no\/such\/route" 404 \d+ ms/.test(log), !quiet, log);
    assert.equal(/127\.0\.0\.1 "GET \/ready" 200 \d+ ms/.test(log), !quiet, log);
  }
});
