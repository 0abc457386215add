/**
 * Idle event streams cost nothing measurable: API latency (autocannon, GET of an
 * application's deployment list, 10 connections, 5 s) with no stream open, then with 200 idle SSE
 * clients (100 on `/applications/{id}/events`, 100 on `/applications/{id}/logs/stream`),
 * in 3 interleaved rounds; medians of the rounds' p50 and p99 and of req/s.
 * Usage: npx tsx bench/streams.ts   (real server, SLIPWAY_ROLE=api, embedded PostgreSQL)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { startProcess } from './lib/servers.js';

const ROUNDS = 3;
const CLIENTS = 200;
const DURATION = 5;
const ADMIN = { email: 'bench@example.com', password: 'bench-password-123' };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Opens `n` SSE connections that stay idle (they only receive `: ping` comments). */
async function openIdleStreams(base: string, paths: string[], n: number, key: string): Promise<() => void> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const requests: http.ClientRequest[] = [];
  await Promise.all(
    Array.from(
      { length: n },
      (_, i) =>
        new Promise<void>((ok, fail) => {
          const req = http.get(
            `${base}${paths[i % paths.length]}`,
            { agent, headers: { 'x-api-key': key, accept: 'text/event-stream' } },
            (res) => {
              if (res.statusCode !== 200) fail(new Error(`stream answered ${res.statusCode}`));
              res.on('data', () => {});
              res.on('error', () => {});
              ok();
            },
          );
          req.on('error', () => {});
          requests.push(req);
        }),
    ),
  );
  return () => {
    for (const r of requests) r.destroy();
    agent.destroy();
  };
}

async function measure(url: string, key: string) {
  const r = await autocannon({ url, connections: 10, duration: DURATION, headers: { 'x-api-key': key } });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`failed requests: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-streams-'));
  const server = await startProcess(
    'src/main.ts',
    {
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      ROUTER_PORT: '0',
      SLIPWAY_ROLE: 'api',
      LOG_LEVEL: 'warn',
      EMBEDDED_PG_PORT: String(56000 + Math.floor(Math.random() * 4000)),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
    },
    /(?:Server listening at|API listening on) (http:\/\/127\.0\.0\.1:\d+)/,
  );
  try {
    const base = server.url;
    const login = await fetch(`${base}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const cookie = login.headers.get('set-cookie')?.split(';')[0] ?? '';
    const { key } = (await (
      await fetch(`${base}/v1/auth/api-keys`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench' }),
      })
    ).json()) as { key: string };
    const api = async (path: string, body: unknown) =>
      (
        await fetch(`${base}/v1${path}`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json() as Promise<{ id: string }>;
    const org = await api('/organizations', { name: 'Bench' });
    const project = await api('/projects', { name: 'Web', organization_id: org.id });
    const app = await api('/applications', { name: 'API', project_id: project.id });
    const target = `${base}/v1/applications/${app.id}/deployments`;
    const streams = [`/v1/applications/${app.id}/events`, `/v1/applications/${app.id}/logs/stream`];
    await autocannon({ url: target, connections: 10, duration: 1, headers: { 'x-api-key': key } }); // warm-up

    const without: Array<Awaited<ReturnType<typeof measure>>> = [];
    const withStreams: typeof without = [];
    for (let round = 1; round <= ROUNDS; round++) {
      without.push(await measure(target, key));
      const close = await openIdleStreams(base, streams, CLIENTS, key);
      withStreams.push(await measure(target, key));
      close();
      console.log(
        `round ${round}: no streams p50 ${without.at(-1)!.p50} ms p99 ${without.at(-1)!.p99} ms ${Math.round(without.at(-1)!.rps)} req/s; ` +
          `${CLIENTS} idle streams p50 ${withStreams.at(-1)!.p50} ms p99 ${withStreams.at(-1)!.p99} ms ${Math.round(withStreams.at(-1)!.rps)} req/s`,
      );
    }
    const row = (name: string, rs: typeof without) =>
      `| ${name} | ${Math.round(median(rs.map((r) => r.rps)))} | ${median(rs.map((r) => r.p50))} | ${median(rs.map((r) => r.p99))} |`;
    console.log(
      `\n| GET application deployments, 10 connections | req/s | p50 ms | p99 ms |\n|---|---:|---:|---:|\n${row('no stream open', without)}\n${row(`${CLIENTS} idle SSE clients`, withStreams)}`,
    );
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
