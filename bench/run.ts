/**
 * HTTP load benchmark: the real Slipway server and a bare Fastify route, in one run, on
 * loopback. Every case in bench/cases/*.ts is measured with autocannon and reported as a
 * ratio to the bare route; the server's resident memory is read at rest and after load.
 *
 *   npm run bench                            # every case, 5 s each, 10 connections
 *   npm run bench -- --duration 3 --connections 20 --only config
 *
 * The server runs with its embedded PostgreSQL in a temporary directory, or, when
 * DATABASE_URL is set, in a fresh database created on that server (dropped afterwards).
 * Results: a table on stdout and JSON in bench/.results/.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type { BenchCase, BenchContext, BenchTarget, SeededWorld } from './lib/case.js';
import { createScratchDatabase } from '../test/helpers/scratch-database.js';
import { ROOT, startProcess, type RunningServer } from './lib/servers.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: process.env.BENCH_DURATION ?? '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '10' },
    only: { type: 'string' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);
const LOG_LEVEL = args['log-level']!;
const ADMIN = { email: 'bench@example.com', password: `bench-${randomBytes(8).toString('hex')}` };

interface Measurement {
  name: string;
  requests_per_second: number;
  latency_ms: { p50: number; p97_5: number; p99: number; mean: number };
  total_requests: number;
  errors: number;
  non_2xx: number;
}

async function measure(name: string, baseUrl: string, target: BenchTarget): Promise<Measurement> {
  const options = {
    url: `${baseUrl}${target.path}`,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections: CONNECTIONS,
  };
  if (WARMUP > 0) await autocannon({ ...options, duration: WARMUP });
  const r = await autocannon({ ...options, duration: DURATION });
  return {
    name,
    requests_per_second: r.requests.average,
    latency_ms: { p50: r.latency.p50, p97_5: r.latency.p97_5, p99: r.latency.p99, mean: r.latency.average },
    total_requests: r.requests.total,
    errors: r.errors + r.timeouts,
    non_2xx: r.non2xx,
  };
}

async function loadCases(): Promise<BenchCase[]> {
  const dir = join(ROOT, 'bench', 'cases');
  const cases: BenchCase[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const mod = (await import(join(dir, file))) as { default: BenchCase[] };
    cases.push(...mod.default);
  }
  return args.only ? cases.filter((c) => c.name.toLowerCase().includes(args.only!.toLowerCase())) : cases;
}

/** A database for the run: a fresh one on DATABASE_URL's server, or none (embedded). */
async function benchDatabase(): Promise<{ url?: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) return { drop: async () => {} };
  const name = `slipway_bench_${randomBytes(4).toString('hex')}`;
  return createScratchDatabase(base, name);
}

function contextFor(appUrl: string, auth: Record<string, string>): BenchContext {
  let world: Promise<SeededWorld> | undefined;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${appUrl}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  return {
    appUrl,
    auth,
    api,
    world: () =>
      (world ??= (async () => {
        const org = await api('POST', '/v1/organizations', { name: 'Bench' });
        const project = await api('POST', '/v1/projects', { name: 'Web', organization_id: org.id });
        const app = await api('POST', '/v1/applications', { name: 'API', project_id: project.id });
        return { org, project, app };
      })()),
  };
}

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const fixed = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const database = await benchDatabase();
  const servers: RunningServer[] = [];
  try {
    const app = await startProcess(
      'src/main.ts',
      {
        DATA_DIR: dataDir,
        PORT: '0',
        HOST: '127.0.0.1',
        ROUTER_PORT: '0',
        SLIPWAY_ROLE: 'api',
        LOG_LEVEL,
        EMBEDDED_PG_PORT: String(56000 + Math.floor(Math.random() * 4000)),
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        ...(database.url ? { DATABASE_URL: database.url } : {}),
      },
      /Server listening at (http:\/\/127\.0\.0\.1:\d+)/,
    );
    servers.push(app);
    const bare = await startProcess('bench/bare-server.ts', { LOG_LEVEL }, /listening (http:\/\/127\.0\.0\.1:\d+)/);
    servers.push(bare);

    const login = await fetch(`${app.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const cookie = login.headers.get('set-cookie')?.split(';')[0] ?? '';
    const key = (await (
      await fetch(`${app.url}/v1/auth/api-keys`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench' }),
      })
    ).json()) as { key: string };
    const ctx = contextFor(app.url, { 'x-api-key': key.key });

    const cases = await loadCases();
    const targets = [];
    for (const c of cases) targets.push({ name: c.name, target: await c.prepare(ctx) });

    // At rest: started, seeded, idle for a moment.
    await new Promise((r) => setTimeout(r, 2000));
    const rest = { app_rss_mib: mib(app.rss()), bare_rss_mib: mib(bare.rss()) };

    const baseline = await measure('bare Fastify route', bare.url, { path: '/bare' });
    const results: Measurement[] = [baseline];
    for (const { name, target } of targets) results.push(await measure(name, app.url, target));
    const afterLoad = { app_rss_mib: mib(app.rss()) };

    console.log(
      `\n${DURATION} s per case after ${WARMUP} s warm-up, ${CONNECTIONS} connections, LOG_LEVEL=${LOG_LEVEL}, ${cpus().length} CPUs, Node ${process.version}\n`,
    );
    console.log('| case | req/s | ratio to bare | p50 ms | p97.5 ms | p99 ms | non-2xx |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const r of results) {
      console.log(
        `| ${r.name} | ${Math.round(r.requests_per_second)} | ${fixed(r.requests_per_second / baseline.requests_per_second)} | ${r.latency_ms.p50} | ${r.latency_ms.p97_5} | ${r.latency_ms.p99} | ${r.non_2xx + r.errors} |`,
      );
    }
    console.log(
      `\nRSS at rest: server ${rest.app_rss_mib} MiB (bare Fastify ${rest.bare_rss_mib} MiB); server after load ${afterLoad.app_rss_mib} MiB`,
    );

    const outDir = join(ROOT, 'bench', '.results');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `http-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(
      file,
      JSON.stringify(
        {
          when: new Date().toISOString(),
          node: process.version,
          cpus: cpus().length,
          duration_s: DURATION,
          warmup_s: WARMUP,
          connections: CONNECTIONS,
          log_level: LOG_LEVEL,
          database: database.url ? 'DATABASE_URL' : 'embedded',
          memory: { ...rest, after_load_app_rss_mib: afterLoad.app_rss_mib },
          results: results.map((r) => ({ ...r, ratio_to_bare: r.requests_per_second / baseline.requests_per_second })),
        },
        null,
        2,
      ),
    );
    console.log(`results: ${file}`);
    if (results.some((r) => r.non_2xx + r.errors > 0)) {
      console.error('some requests failed: the numbers above are not valid');
      process.exitCode = 1;
    }
  } finally {
    for (const s of servers.reverse()) await s.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
