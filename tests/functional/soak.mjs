// The soak of `gufo qualify`'s stage 4: concurrent agent conversations against one `gufo
// serve` for a while, sampled in windows, so that drift shows: the server's resident memory,
// request latency percentiles and throughput, window by window. Each worker holds a
// conversation that grows turn by turn (the assistant's answers stay in it, as an agent's do)
// and starts a new one when the context would overflow; every answer must be a 200.
// Usage: node soak.mjs --binary GUFO --model M --seconds S [--workers 4] [--window 10]
//          --out RESULT.json
// RESULT.json: {"workers", "seconds", "window_seconds", "errors": [...], "windows":
// [{"t", "rss_kb", "requests", "completion_tokens", "p50_ms", "p95_ms"}]}.
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startServer } from './lib/harness.mjs';

const { values: a } = parseArgs({
  options: {
    binary: { type: 'string' },
    model: { type: 'string' },
    seconds: { type: 'string', default: '600' },
    workers: { type: 'string', default: '4' },
    window: { type: 'string', default: '10' },
    out: { type: 'string' },
  },
});
for (const required of ['binary', 'model', 'out']) {
  if (!a[required]) {
    console.error(`soak.mjs: --${required} is required`);
    process.exit(2);
  }
}
const seconds = Number(a.seconds), workers = Number(a.workers), windowSeconds = Number(a.window);
if (!(seconds > 0 && workers > 0 && windowSeconds > 0)) {
  console.error('soak.mjs: --seconds, --workers and --window must be positive numbers');
  process.exit(2);
}

const topics = ['grep', 'sed', 'awk', 'make', 'gcc', 'gdb', 'bash', 'tar', 'gzip', 'find', 'diff', 'emacs'];
const server = await startServer(['--parallel', String(workers), '--ctx', '1024'],
  { binaryPath: a.binary, modelPath: a.model });
// The server's resident memory, or null (and an error) when it cannot be read: a server that
// died must show as a failure, not end the soak without its result.
const rssKb = () => {
  try {
    const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  } catch (e) {
    errors.push(`cannot read the server's memory: ${e.message}`);
    return null;
  }
};

const errors = [];
let done = [];  // { ms, tokens } of the requests finished in this window
const deadline = Date.now() + seconds * 1000;

async function worker(id) {
  let messages = [];
  for (let turn = 0; Date.now() < deadline; ++turn) {
    if (messages.length >= 12) messages = [];  // a new conversation before the context fills
    messages.push({ role: 'user', content: `Step ${turn}: what does GNU ${topics[(id + turn) % topics.length]} do next?` });
    const start = performance.now();
    try {
      const res = await server.fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages, max_tokens: 32, temperature: 0.7, seed: id * 100000 + turn }),
      });
      const body = await res.json();
      if (res.status !== 200 || !body.choices) throw new Error(`${res.status} ${JSON.stringify(body).slice(0, 200)}`);
      messages.push({ role: 'assistant', content: body.choices[0].message.content ?? '' });
      done.push({ ms: performance.now() - start, tokens: body.usage.completion_tokens });
    } catch (e) {
      errors.push(`worker ${id} turn ${turn}: ${e.message}`);
      messages = [];
      if (errors.length > 20) return;
    }
  }
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);
const windows = [];
const started = Date.now();
const sampler = setInterval(() => {
  const window = done;
  done = [];
  const ms = window.map((r) => r.ms).sort((x, y) => x - y);
  windows.push({
    t: Math.round((Date.now() - started) / 1000),
    rss_kb: rssKb(),
    requests: window.length,
    completion_tokens: window.reduce((s, r) => s + r.tokens, 0),
    p50_ms: percentile(ms, 0.5),
    p95_ms: percentile(ms, 0.95),
  });
}, windowSeconds * 1000);

await Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));
clearInterval(sampler);
const code = await server.stop();
if (code !== 0) errors.push(`the server exited with ${code} on SIGTERM`);
writeFileSync(a.out, JSON.stringify({ workers, seconds, window_seconds: windowSeconds, errors, windows }, null, 1));
console.log(`soak: ${windows.length} windows, ${errors.length} errors`);
