/**
 * The edge's cost, all in one run: autocannon against one small instance directly, through
 * the built-in edge (its own process), and through Caddy (when installed; reverse_proxy
 * configured through its admin API's POST /load, as the Caddy driver would).
 *
 *   npx tsx bench/edge.ts [--seconds 5] [--connections 50]
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
  const opts = { url: `http://127.0.0.1:${port}/`, connections, ...(host ? { headers: { host } } : {}) };
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

  const direct = await load(upstreamPort);
  const builtin = await load(edgePort, HOST);
  const caddy = caddyPort ? await load(caddyPort, HOST) : null;
  console.log(`one instance, ${connections} connections, ${seconds} s each (after 1 s warm-up):`);
  console.log('| path | req/s | ratio to direct | p50 ms | p99 ms | added p99 ms | errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const [name, r] of [
    ['direct', direct],
    ['built-in edge', builtin],
    ['Caddy', caddy],
  ] as const) {
    if (!r) continue;
    console.log(
      `| ${name} | ${r.rps.toFixed(0)} | ${(r.rps / direct.rps).toFixed(2)} | ${r.p50} | ${r.p99} | ${r === direct ? '' : r.p99 - direct.p99} | ${r.errors} |`,
    );
  }
} finally {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
