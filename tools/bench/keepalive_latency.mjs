// Latency of sequential one-token requests over one kept-alive connection, the way every
// HTTP client library talks to a server (OpenAI's client, undici, requests.Session). Each
// request is POST /v1/completions {"prompt": ..., "max_tokens": 1}; the prompt is the same
// every time, so a prefix cache makes the work per request tiny and what is left is the
// server's own overhead (a transport that holds back small writes shows up here as ~40 ms).
// Usage: node tools/bench/keepalive_latency.mjs URL [N=30] [LABEL]
// Prints one JSON line: label, requests, connections used, p50/p90/max/mean in ms.
import http from 'node:http';

const [url, n = '30', label = url] = process.argv.slice(2);
if (!url) {
  console.error('usage: keepalive_latency.mjs URL [N] [LABEL]');
  process.exit(2);
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const sockets = new Set();
const body = JSON.stringify({ prompt: 'The GNU General Public License', max_tokens: 1, temperature: 0 });

function post() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(`${url}/v1/completions`, {
      method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${res.statusCode}: ${text}`));
        resolve(Number(process.hrtime.bigint() - started) / 1e6);
      });
    });
    req.on('socket', (s) => sockets.add(s));
    req.on('error', reject);
    req.end(body);
  });
}

for (let i = 0; i < 3; ++i) await post();  // warm-up: the connection, the prefix cache
const ms = [];
for (let i = 0; i < Number(n); ++i) ms.push(await post());
ms.sort((a, b) => a - b);
const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
const round = (x) => Math.round(x * 100) / 100;
console.log(JSON.stringify({
  label, requests: ms.length, connections: sockets.size, p50_ms: round(at(0.5)), p90_ms: round(at(0.9)),
  max_ms: round(ms[ms.length - 1]), mean_ms: round(ms.reduce((a, b) => a + b, 0) / ms.length),
}));
agent.destroy();
