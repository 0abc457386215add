/**
 * HTTP load benchmark: Slipway as `npm start` runs it (compiled `dist/main.js`), a bare Fastify
 * route, and a hand-written Fastify route doing the same reads as the application detail over
 * `pg` (bench/handwritten-server.ts), in one run, on loopback. Cases are interleaved round by
 * round (the machine is shared and noisy) and each figure is the median of the rounds.
 *
 *   npm run build && npm run bench            # 3 rounds, 8 s per case, 50 connections
 *   npm run bench -- --rounds 5 --duration 5 --connections 10 --only config
 *   npm run bench -- --rounds 1 --only detail --profile /tmp/prof   # CPU profile of the server
 *
 * The server runs with its embedded PostgreSQL in a temporary directory, or, when
 * DATABASE_URL is set, in a fresh database created on that server (dropped afterwards).
 * Results: a table on stdout and JSON in bench/.results/.
 *
 *   npm run bench -- soak --duration 600    # a first argument without dashes runs bench/<name>.ts
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type { BenchCase, BenchTarget } from './lib/case.js';
import { ROOT, cpuSeconds, startProcess, type RunningServer } from './lib/servers.js';
import { startSlipway } from './lib/slipway.js';

const named = process.argv[2];
if (named && /^[a-z][a-z0-9-]*$/.test(named)) {
  const file = join(ROOT, 'bench', `${named}.ts`);
  if (!existsSync(file)) throw new Error(`no benchmark bench/${named}.ts`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', file, ...process.argv.slice(3)], { cwd: ROOT, stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: process.env.BENCH_DURATION ?? '8' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
    // Writes V8 CPU profiles of the Slipway server and the hand-written baseline (Chrome DevTools, speedscope).
    profile: { type: 'string' },
    'log-level': { type: 'string', default: 'info' },
    // Extra node flags for the Slipway server, e.g. to compare V8 settings.
    'node-flags': { type: 'string', default: '' },
  },
});
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);
const ROUNDS = Number(args.rounds);
const LOG_LEVEL = args['log-level']!;

interface Measurement {
  name: string;
  requests_per_second: number;
  latency_ms: { p50: number; p97_5: number; p99: number; mean: number };
  total_requests: number;
  errors: number;
  non_2xx: number;
  /** CPU time per request of the process answering, and of the database (the embedded PostgreSQL's processes). */
  cpu_ms_per_request: { server: number; database: number };
}

async function measure(
  name: string,
  baseUrl: string,
  target: BenchTarget,
  serverPid: number,
  databaseRootPid: number,
): Promise<Measurement> {
  const options = {
    url: `${baseUrl}${target.path}`,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections: CONNECTIONS,
  };
  // One request after the load, answered after whatever the load left in flight (slow writes keep
  // the server and the database busy after autocannon stops), so the next case starts on a quiet database.
  const drain = () =>
    fetch(options.url, { method: options.method, headers: options.headers, body: options.body }).then((r) => r.arrayBuffer());
  await drain();
  if (WARMUP > 0) await autocannon({ ...options, duration: WARMUP });
  const server0 = cpuSeconds(serverPid).self;
  const database0 = cpuSeconds(databaseRootPid).descendants;
  const r = await autocannon({ ...options, duration: DURATION });
  const perRequest = (seconds: number) => Math.round(((seconds * 1000) / Math.max(1, r.requests.total)) * 1000) / 1000;
  const cpu = {
    server: perRequest(cpuSeconds(serverPid).self - server0),
    database: perRequest(cpuSeconds(databaseRootPid).descendants - database0),
  };
  await drain();
  return {
    cpu_ms_per_request: cpu,
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

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const fixed = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** One figure per case: the median of its rounds, field by field. */
function medianOf(rounds: Measurement[]): Measurement {
  const pick = (f: (m: Measurement) => number) => median(rounds.map(f));
  return {
    name: rounds[0]!.name,
    requests_per_second: pick((m) => m.requests_per_second),
    latency_ms: {
      p50: pick((m) => m.latency_ms.p50),
      p97_5: pick((m) => m.latency_ms.p97_5),
      p99: pick((m) => m.latency_ms.p99),
      mean: pick((m) => m.latency_ms.mean),
    },
    cpu_ms_per_request: { server: pick((m) => m.cpu_ms_per_request.server), database: pick((m) => m.cpu_ms_per_request.database) },
    total_requests: rounds.reduce((n, m) => n + m.total_requests, 0),
    errors: rounds.reduce((n, m) => n + m.errors, 0),
    non_2xx: rounds.reduce((n, m) => n + m.non_2xx, 0),
  };
}

async function main() {
  const loadBefore = loadavg();
  const servers: RunningServer[] = [];
  const slipway = await startSlipway({
    logLevel: LOG_LEVEL,
    nodeFlags: [
      ...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : []),
      ...args['node-flags'].split(' ').filter(Boolean),
    ],
  });
  const { server: app, ctx } = slipway;
  try {
    const bare = await startProcess('bench/bare-server.ts', { LOG_LEVEL }, /listening (http:\/\/127\.0\.0\.1:\d+)/);
    servers.push(bare);
    const handwritten = await startProcess(
      'bench/handwritten-server.ts',
      { LOG_LEVEL, DATABASE_URL: slipway.databaseUrl },
      /listening (http:\/\/127\.0\.0\.1:\d+)/,
      args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}/handwritten`] : [],
    );
    servers.push(handwritten);
    const best = await startProcess(
      'bench/handwritten-best-server.ts',
      { LOG_LEVEL, DATABASE_URL: slipway.databaseUrl },
      /listening (http:\/\/127\.0\.0\.1:\d+)/,
      args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}/handwritten-best`] : [],
    );
    servers.push(best);

    const world = await ctx.world();

    const bestName = (name: string) => `hand-written (best): ${name.replace(/^(GET|POST) /, '')}`;
    const runs: { name: string; url: string; pid: number; target: BenchTarget; baseline?: string }[] = [
      { name: 'bare Fastify route', url: bare.url, pid: bare.pid, target: { path: '/bare' } },
      {
        // Issue 15's baseline, kept as a second line: unprepared statements, the key looked up on every request.
        name: 'hand-written application detail, issue 15 (3 unprepared queries, no cache)',
        url: handwritten.url,
        pid: handwritten.pid,
        target: { path: `/v1/applications/${world.org.slug}/${world.project.slug}/${world.app.slug}`, headers: ctx.auth },
        baseline: bestName('GET application detail'),
      },
    ];
    for (const c of await loadCases()) {
      const target = await c.prepare(ctx);
      if (c.handwritten) runs.push({ name: bestName(c.name), url: best.url, pid: best.pid, target });
      runs.push({ name: c.name, url: app.url, pid: app.pid, target, baseline: c.handwritten ? bestName(c.name) : undefined });
    }
    if (!runs.some((r) => r.name === bestName('GET application detail'))) runs.splice(1, 1);

    // At rest: started, seeded, idle for a moment.
    await new Promise((r) => setTimeout(r, 2000));
    const rest = { app_rss_mib: mib(app.rss()), bare_rss_mib: mib(bare.rss()) };

    const rounds = new Map<string, Measurement[]>(runs.map((r) => [r.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const run of runs) {
        const m = await measure(run.name, run.url, run.target, run.pid, app.pid);
        rounds.get(run.name)!.push(m);
        console.error(`round ${round}/${ROUNDS} ${run.name}: ${Math.round(m.requests_per_second)} req/s, p99 ${m.latency_ms.p99} ms`);
      }
    }
    const results = runs.map((r) => medianOf(rounds.get(r.name)!));
    const baseline = results[0]!;
    const byName = new Map(results.map((r) => [r.name, r]));
    const ratioToHandwritten = (i: number) => {
      const against = runs[i]!.baseline && byName.get(runs[i]!.baseline!);
      return against ? results[i]!.requests_per_second / against.requests_per_second : NaN;
    };
    const afterLoad = { app_rss_mib: mib(app.rss()) };

    console.log(
      `\nmedians of ${ROUNDS} interleaved rounds, ${DURATION} s per case after ${WARMUP} s warm-up, ${CONNECTIONS} connections, LOG_LEVEL=${LOG_LEVEL}, ${cpus().length} CPUs, Node ${process.version}, load average ${loadBefore.map((n) => n.toFixed(1)).join(' ')} before, ${loadavg()
        .map((n) => n.toFixed(1))
        .join(' ')} after\n`,
    );
    console.log(
      '| case | req/s | ratio to bare | ratio to best hand-written | p50 ms | p97.5 ms | p99 ms | server CPU ms/req | database CPU ms/req | non-2xx |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const [i, r] of results.entries()) {
      console.log(
        `| ${r.name} | ${Math.round(r.requests_per_second)} | ${fixed(r.requests_per_second / baseline.requests_per_second)} | ${fixed(ratioToHandwritten(i))} | ${r.latency_ms.p50} | ${r.latency_ms.p97_5} | ${r.latency_ms.p99} | ${r.cpu_ms_per_request.server} | ${r.cpu_ms_per_request.database} | ${r.non_2xx + r.errors} |`,
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
          rounds: ROUNDS,
          duration_s: DURATION,
          warmup_s: WARMUP,
          connections: CONNECTIONS,
          log_level: LOG_LEVEL,
          database: process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded',
          memory: { ...rest, after_load_app_rss_mib: afterLoad.app_rss_mib },
          load_average: { before: loadBefore, after: loadavg() },
          results: results.map((r, i) => ({
            ...r,
            baseline: runs[i]!.baseline ?? null,
            ratio_to_bare: r.requests_per_second / baseline.requests_per_second,
            ratio_to_handwritten: Number.isFinite(ratioToHandwritten(i)) ? ratioToHandwritten(i) : null,
          })),
          per_round: Object.fromEntries(rounds),
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
    await slipway.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
