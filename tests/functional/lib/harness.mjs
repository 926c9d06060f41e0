// Starts a real `gufo serve` on a free loopback port for a test file and stops it after, with
// SIGTERM, checking that it exits 0. The binary and model come from the environment:
// GUFO_BINARY (default build/default/bin/gufo) and GUFO_MODEL (the shipped model by default).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const binary = process.env.GUFO_BINARY ?? path.join(root, 'build', 'default', 'bin', 'gufo');
export const model = process.env.GUFO_MODEL ?? path.join(root, 'models', 'gufo-tiny-q8_0.gguf');

export class Server {
  constructor(child, port, exited) {
    this.child = child;
    this.port = port;
    this.baseURL = `http://127.0.0.1:${port}`;
    this.exited = exited;
  }

  // The official client, pointed at this server; no retries unless asked, so a 429 shows.
  client(options = {}) {
    return new OpenAI({ baseURL: `${this.baseURL}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000, ...options });
  }

  async fetch(route, init = {}) {
    return fetch(`${this.baseURL}${route}`, init);
  }

  // /metrics as { 'name{labels}': value }.
  async metrics() {
    const text = await (await this.fetch('/metrics')).text();
    const out = {};
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const at = line.lastIndexOf(' ');
      out[line.slice(0, at)] = Number(line.slice(at + 1));
    }
    return out;
  }

  // /metrics with one model's engine series under their plain names ('gufo_requests_total{
  // outcome="ok"}', 'gufo_running_sequences'): its model="<id>" label dropped and other models'
  // series left out. `id` defaults to the default model: the first that /v1/models lists, or
  // behind --api-key the first in /metrics (the default while it stays loaded).
  async engineMetrics(id) {
    const listed = await this.fetch('/v1/models').then((r) => (r.ok ? r.json() : null), () => null);
    const all = await this.metrics();
    const first = Object.keys(all).map((k) => /^gufo_running_sequences\{model="((?:[^"\\]|\\.)*)"\}$/.exec(k))
      .find(Boolean)?.[1];
    const model = id ?? listed?.data?.[0]?.id ?? first;
    const out = {};
    for (const [key, value] of Object.entries(all)) {
      const m = /^([^{]+)\{model="((?:[^"\\]|\\.)*)",?(.*)\}$/.exec(key);
      if (!m) {
        out[key] = value;
      } else if (m[2] === model) {
        out[m[3] ? `${m[1]}{${m[3]}}` : m[1]] = value;
      }
    }
    return out;
  }

  // SIGTERM; resolves with the exit code (a clean shutdown is 0). A server still running 30 s
  // later is killed (its code is then null, which no test takes for a clean exit).
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    const { code } = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

// Spawns `gufo serve -m <model> --port 0 <args>` without waiting for anything: the child,
// its stderr so far (log()), when it exits ({ code, signal }), and the port once it listens.
// `binaryPath` (default GUFO_BINARY's) serves another build: the qualifier's replay runs two.
export function launchServer(args = [], { env = {}, modelPath = model, port = 0, binaryPath = binary } = {}) {
  if (!existsSync(binaryPath)) throw new Error(`no gufo binary at ${binaryPath} (set GUFO_BINARY)`);
  // modelPath null: no -m (the args name the models, e.g. --models-dir).
  const modelArgs = modelPath === null ? [] : ['-m', modelPath];
  const child = spawn(binaryPath, ['serve', ...modelArgs, '--port', String(port), '-t', '2', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  // 'close', not 'exit': by then stderr is read to its end, so log() is whole.
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gufo serve did not start:\n${log}`)), 60_000);
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`gufo serve exited with ${code}:\n${log}`));
    });
  });
  listening.catch(() => {});  // a caller that expects a failure need not wait for the port
  return { child, log: () => log, exited, listening };
}

// Starts `gufo serve -m <model> --port 0 <args>` and waits until /ready says so.
export async function startServer(args = [], { env = {}, modelPath = model, binaryPath = binary } = {}) {
  if (modelPath !== null && !existsSync(modelPath)) throw new Error(`no model at ${modelPath} (set GUFO_MODEL)`);
  // The suite compares answers across batches, cache hits and servers: the default server
  // promises them equal bit for bit (README, "Serving").
  const launched = launchServer(args, { env, modelPath, binaryPath });
  let port;
  try {
    port = await launched.listening;
  } catch (e) {
    launched.child.kill('SIGKILL');  // a server that never listened must not stay behind
    throw e;
  }
  const server = new Server(launched.child, port, launched.exited);
  server.log = launched.log;
  for (let i = 0; i < 600; ++i) {
    const ready = await server.fetch('/ready').then((r) => r.status === 200, () => false);
    if (ready) return server;
    await new Promise((r) => setTimeout(r, 100));
  }
  await server.stop();
  throw new Error(`gufo serve never became ready:\n${server.log()}`);
}

// Token ids of `text` with the model's tokenizer (the real binary: `gufo tokenize`);
// `special` matches control tokens such as <|im_end|>.
export function tokenize(text, { special = false, modelPath = model } = {}) {
  const args = ['tokenize', '-m', modelPath, '--json', '--no-bos', ...(special ? ['--special'] : [])];
  const out = execFileSync(binary, args, { input: text });
  return JSON.parse(out.toString());
}

// The text of token ids (the real binary: `gufo detokenize`).
export function detokenize(ids, { modelPath = model } = {}) {
  return execFileSync(binary, ['detokenize', '-m', modelPath], { input: JSON.stringify(ids) }).toString();
}

// The text (and reasoning) of a streamed completion, and its finish reason, from the official
// client's stream.
export async function collectStream(stream) {
  let text = '';
  let reasoning = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? c.text ?? '';
      reasoning += c.delta?.reasoning_content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, reasoning, finish, usage };
}

// A chat answer's reasoning_content, '' when the model did not think.
export const reasoningOf = (message) => message.reasoning_content ?? '';

export const greedy = { temperature: 0 };
