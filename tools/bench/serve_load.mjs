// Load figure for `gufo serve`: starts the server on a free port, then for each client count
// N drives it with N concurrent streaming clients until a fixed number of requests is done,
// and reports aggregate generated tokens/s, time to first token and inter-token latency
// (p50/p99) per N, as a markdown table (and JSON with --json). A benchmark, not a test.
// Usage: node tools/bench/serve_load.mjs --binary build/default/bin/gufo -m MODEL.gguf
//          [--clients 1,4,16] [--requests 32] [--max-tokens 64] [--parallel 16] [--threads 2] [--json]
//          [--spec none|ngram] [--prompt gnu|code] [--url http://HOST:PORT]
//   --spec: the server's speculative decoding (gufo serve --spec); --prompt code: an answer that
//   repeats its prompt (a code edit: where prompt lookup drafts well), greedy; gnu (default):
//   free prose, sampled. --url: drive a server already running there (another engine, e.g.
//   llama-server with the same model) instead of starting gufo serve; -m then only names it.
// No npm packages: plain fetch and server-sent events.
import { spawn } from 'node:child_process';

function parseArgs(argv) {
  const o = { binary: 'build/default/bin/gufo', model: null, clients: [1, 4, 16], requests: 32, maxTokens: 64,
    parallel: 16, threads: 2, json: false, spec: 'none', prompt: 'gnu' };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--binary') o.binary = next();
    else if (a === '-m' || a === '--model') o.model = next();
    else if (a === '--clients') o.clients = next().split(',').map(Number);
    else if (a === '--requests') o.requests = Number(next());
    else if (a === '--max-tokens') o.maxTokens = Number(next());
    else if (a === '--parallel') o.parallel = Number(next());
    else if (a === '--threads') o.threads = Number(next());
    else if (a === '--json') o.json = true;
    else if (a === '--spec') o.spec = next();
    else if (a === '--prompt') o.prompt = next();
    else if (a === '--url') o.url = next();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model) throw new Error('-m MODEL.gguf is required');
  if (!['gnu', 'code'].includes(o.prompt)) throw new Error('--prompt must be gnu or code');
  if (o.clients.some((n) => !(n >= 1)) || !(o.requests >= 1) || !(o.maxTokens >= 1)) throw new Error('bad numbers');
  return o;
}

async function startServer(o) {
  const child = spawn(o.binary, ['serve', '-m', o.model, '--port', '0', '-t', String(o.threads), '--parallel',
    String(o.parallel), '--queue', '256', '--no-prefix-cache', '--spec', o.spec], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    child.stderr.on('data', (c) => {
      log += c;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`gufo serve exited (${code}):\n${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    if (await fetch(`${base}/ready`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, base };
}

// One streamed request; returns { tokens, ttft, gaps[] } in seconds.
// Code to continue (a raw completion: functions in one pattern, the next to write), as
// `gufo run` was measured with prompt lookup (BENCHMARKS.md, speculative decoding).
const codePrompt = (i) => `# module ${i}\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\n` +
  `def mul(a, b):\n`;

async function one(base, i, maxTokens, prompt) {
  const common = { max_tokens: maxTokens, seed: i, stream: true, stream_options: { include_usage: true } };
  // End-of-turn tokens are not banned: requests end where the model ends them, as in real use.
  const [route, body] = prompt === 'code'
    ? ['/v1/completions', { prompt: codePrompt(i), temperature: 0, ...common }]
    : ['/v1/chat/completions', {
      messages: [{ role: 'user', content: `Request ${i}: tell me about the GNU project and free software.` }],
      temperature: 0.8, ...common }];
  const start = performance.now();
  const res = await fetch(`${base}${route}`, { method: 'POST', body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' } });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffer = '';
  let last = null;
  let ttft = null;
  const gaps = [];
  let tokens = 0;
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let at;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
      const delta = chunk.choices[0]?.delta?.content ?? chunk.choices[0]?.text;
      if (!delta) continue;
      const now = performance.now();
      if (ttft === null) ttft = (now - start) / 1000;
      else gaps.push((now - last) / 1000);
      last = now;
    }
  }
  return { tokens, ttft: ttft ?? (performance.now() - start) / 1000, gaps };
}

function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(o) {
  const { child, base } = o.url ? { child: null, base: o.url } : await startServer(o);
  const rows = [];
  try {
    await one(base, -1, 8, o.prompt);  // warm-up: page the weights in
    for (const n of o.clients) {
      let next = 0;
      const results = [];
      const start = performance.now();
      await Promise.all(Array.from({ length: n }, async () => {
        while (next < o.requests) results.push(await one(base, next++, o.maxTokens, o.prompt));
      }));
      const seconds = (performance.now() - start) / 1000;
      const tokens = results.reduce((s, r) => s + r.tokens, 0);
      const gaps = results.flatMap((r) => r.gaps);
      const ttfts = results.map((r) => r.ttft);
      rows.push({ clients: n, requests: results.length, tokens, seconds, tokens_per_second: tokens / seconds,
        ttft_p50_ms: 1000 * percentile(ttfts, 50), ttft_p99_ms: 1000 * percentile(ttfts, 99),
        itl_p50_ms: 1000 * percentile(gaps, 50), itl_p99_ms: 1000 * percentile(gaps, 99) });
    }
  } finally {
    child?.kill('SIGTERM');
  }
  return rows;
}

const o = parseArgs(process.argv.slice(2));
const rows = await run(o);
if (o.json) {
  console.log(JSON.stringify({ model: o.model, max_tokens: o.maxTokens, parallel: o.parallel, threads: o.threads, rows }, null, 2));
} else {
  console.log(`model ${o.model}, ${o.requests} requests of up to ${o.maxTokens} tokens per client count, ` +
    `--parallel ${o.parallel}, ${o.threads} threads\n`);
  console.log('| clients | requests | generated tokens | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.clients} | ${r.requests} | ${r.tokens} | ${r.tokens_per_second.toFixed(1)} | ` +
      `${r.ttft_p50_ms.toFixed(0)} | ${r.ttft_p99_ms.toFixed(0)} | ${r.itl_p50_ms.toFixed(1)} | ${r.itl_p99_ms.toFixed(1)} |`);
  }
}
