/**
 * The edge's cost, all in one run: autocannon against one small instance directly, through
 * the built-in edge (its own process), and through Caddy (when installed; reverse_proxy
 * configured through its admin API's POST /load, as the Caddy driver would).
 *
 * Rounds are interleaved (direct, built-in, Caddy, direct, …) and the medians reported, so a
 * burst of load from elsewhere on the machine hits every path alike.
 *
 *   npx tsx bench/edge.ts [--seconds 5] [--connections 50] [--rounds 3] [--rate 0]
 *
 * `--rate N` caps every connection at N requests/s (autocannon's overallRate / connections):
 * latency at a moderate, fixed load instead of at saturation.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import autocannon from 'autocannon';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const seconds = arg('--seconds', 5);
const connections = arg('--connections', 50);
const rounds = arg('--rounds', 3);
const rate = arg('--rate', 0);
const HOST = 'app.bench.localhost';

const UPSTREAM = `require('http').createServer((q, s) => s.end('hello from the instance')).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;

const children: ChildProcess[] = [];

async function firstLine(child: ChildProcess): Promise<string> {
  let text = '';
  for await (const chunk of child.stdout!) {
    text += chunk;
    if (text.includes('\n')) return text.split('\n')[0]!.trim();
  }
  throw new Error('process ended before printing its port');
}

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

async function load(port: number, host?: string) {
  const opts = {
    url: `http://127.0.0.1:${port}/`,
    connections,
    ...(rate ? { overallRate: rate } : {}),
    ...(host ? { headers: { host } } : {}),
  };
  await autocannon({ ...opts, duration: 1 });
  const r = await autocannon({ ...opts, duration: seconds });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

async function startCaddy(upstreamPort: number, dir: string): Promise<number | null> {
  if (!existsSync('/usr/bin/caddy')) return null;
  const [admin, port] = [await freePort(), await freePort()];
  // The initial configuration only moves the admin API off its fixed port; routes come through POST /load.
  const initial = join(dir, 'caddy.json');
  writeFileSync(initial, JSON.stringify({ admin: { listen: `127.0.0.1:${admin}` } }));
  const caddy = spawn('caddy', ['run', '--config', initial], {
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: 'ignore',
  });
  children.push(caddy);
  const config = {
    admin: { listen: `127.0.0.1:${admin}` },
    logging: { logs: { default: { level: 'ERROR' } } },
    apps: {
      http: {
        servers: {
          edge: {
            listen: [`127.0.0.1:${port}`],
            automatic_https: { disable: true },
            routes: [
              { match: [{ host: [HOST] }], handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: `127.0.0.1:${upstreamPort}` }] }] },
            ],
          },
        },
      },
    },
  };
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${admin}/load`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(config),
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return port;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('caddy did not accept its configuration');
}

const dir = mkdtempSync(join(tmpdir(), 'slipway-edge-bench-'));
try {
  const upstream = spawn(process.execPath, ['-e', UPSTREAM], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(upstream);
  const upstreamPort = Number(await firstLine(upstream));
  const edge = spawn(process.execPath, ['--import', 'tsx', 'bench/edge-server.ts', String(upstreamPort)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(edge);
  const edgePort = Number(await firstLine(edge));
  const caddyPort = await startCaddy(upstreamPort, dir);

  type Result = Awaited<ReturnType<typeof load>>;
  const runs: Record<'direct' | 'builtin' | 'caddy', Result[]> = { direct: [], builtin: [], caddy: [] };
  for (let round = 0; round < rounds; round++) {
    runs.direct.push(await load(upstreamPort));
    runs.builtin.push(await load(edgePort, HOST));
    if (caddyPort) runs.caddy.push(await load(caddyPort, HOST));
  }
  const median = (list: Result[], pick: (r: Result) => number) => {
    const sorted = list.map(pick).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  const summary = (list: Result[]) =>
    list.length === 0
      ? null
      : {
          rps: median(list, (r) => r.rps),
          p50: median(list, (r) => r.p50),
          p99: median(list, (r) => r.p99),
          errors: list.reduce((n, r) => n + r.errors, 0),
        };
  const direct = summary(runs.direct)!;
  const load_ = rate ? `${rate} req/s overall` : 'as fast as possible';
  console.log(
    `one instance, ${connections} connections, ${load_}, ${seconds} s each after 1 s warm-up, median of ${rounds} interleaved rounds:`,
  );
  console.log('| path | req/s | ratio to direct | p50 ms | p99 ms | added p99 ms | errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const [name, list] of [
    ['direct', runs.direct],
    ['built-in edge', runs.builtin],
    ['Caddy', runs.caddy],
  ] as const) {
    const r = summary(list);
    if (!r) continue;
    console.log(
      `| ${name} | ${r.rps.toFixed(0)} | ${(r.rps / direct.rps).toFixed(2)} | ${r.p50} | ${r.p99} | ${list === runs.direct ? '' : r.p99 - direct.p99} | ${r.errors} |`,
    );
  }
  console.log(
    'rounds (req/s):',
    JSON.stringify(Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, v.map((r) => Math.round(r.rps))]))),
  );
} finally {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
