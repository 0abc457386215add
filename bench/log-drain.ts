/**
 * Issue 33: a log drain that is down never slows the application. Two copies of one app (each
 * request prints a log line) in one organization; one has a syslog drain pointed at a blackhole
 * (a TCP server that accepts and never reads, so the drain's socket fills and stalls), the other
 * none, a third one drained to a server that reads (a healthy drain). autocannon (a child process, so
 * its own CPU is not the platform's) through the built-in edge, the cases interleaved in short slices
 * (A B C, B C A, C A B, …) so a slow stretch of a shared machine hits each alike; per round the drained
 * cases are compared with the undrained one next to them (a ratio), and the ratios' median and spread
 * say whether a difference stands out of the noise. CPU per request is the platform process's own
 * (edge, log capture, the drains) over the requests of the slice.
 *
 *   npx tsx bench/log-drain.ts [--rounds 9] [--seconds 3] [--connections 10]
 *
 * In-process platform (like bench/deploy.ts), local runtime, embedded PostgreSQL in a temporary directory.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { start } from '../src/lifecycle.js';
import { openPlatform } from '../src/platform/bootstrap.js';
import type { LocalRuntime } from '../src/platform/runtime/local/local-runtime.js';
import { composePlatform, createIdentity } from '../src/services.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) || fallback : fallback;
};
const rounds = Math.max(3, arg('--rounds', 9));
const seconds = arg('--seconds', 3);
const connections = arg('--connections', 10);
// One log line per request: the drain has work on every request.
const APP =
  "require('http').createServer((q, s) => { console.log('GET ' + q.url + ' ' + Date.now() + ' ' + 'x'.repeat(100)); s.end('ok'); })" +
  ".listen(Number(process.env.PORT), '127.0.0.1');\n";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-drain-'));
  const repoDir = join(dataDir, 'repo');
  execFileSync('sh', [
    '-c',
    `mkdir -p ${repoDir} && cd ${repoDir} && git init -q -b main && git config user.email b@e && git config user.name b`,
  ]);
  writeFileSync(join(repoDir, 'app.js'), APP);
  writeFileSync(join(repoDir, 'Procfile'), 'web: node app.js\n');
  execFileSync('sh', ['-c', `cd ${repoDir} && git add -A && git commit -q -m app`]);

  // The blackhole: accepts, never reads (the kernel's buffers fill, then the drain's writes stall).
  const held: Socket[] = [];
  const blackhole = createServer((socket) => {
    socket.pause();
    held.push(socket);
  });
  await new Promise<void>((r) => blackhole.listen(0, '127.0.0.1', r));
  const blackholePort = (blackhole.address() as { port: number }).port;
  // A healthy syslog server for comparison: reads and discards.
  const sink = createServer((socket) => socket.resume());
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkPort = (sink.address() as { port: number }).port;

  const config = loadConfig(
    { RUNTIME_ISOLATION: process.env.RUNTIME_ISOLATION, DEPLOY_STABILITY_WINDOW_SECONDS: '0' },
    {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: 40000 + Math.floor(Math.random() * 10000),
      LOG_LEVEL: 'silent',
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      EDGE_PROCESS: 'in-process',
      WEBHOOK_ALLOW_PRIVATE: true,
      RUNTIME_STOP_GRACE_MS: 2000,
    },
  );
  const platform = await openPlatform(config);
  const { ctx } = platform;
  const logger = pino({ level: 'silent' });
  const composition = composePlatform(ctx, logger);
  const app = await buildApp(ctx, { composition, loggerInstance: logger });
  const running = await start({ composition, logger, workers: true, http: { app } });
  try {
    const { users, auth } = createIdentity(ctx);
    const user = await users.create({ username: 'bench', email: 'bench@example.com', password: 'bench-password-1', is_admin: true });
    const { key } = await auth.createApiKey(user.id, 'bench');
    const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
      const r = await app.inject({ method, url: `/v1${url}`, headers: { 'x-api-key': key }, ...(payload ? { payload } : {}) });
      if (r.statusCode >= 300) throw new Error(`${method} ${url}: ${r.statusCode} ${r.body}`);
      return r.json();
    };
    const org = await call('POST', '/organizations', { name: 'Bench' });
    const project = await call('POST', '/projects', { name: 'Bench', organization_id: org.id });
    const local = ctx.runtime as LocalRuntime;

    const deployApp = async (name: string) => {
      const a = await call('POST', '/applications', { name, project_id: project.id });
      await call('PATCH', `/applications/${a.id}/settings`, { github_repository: repoDir, auto_deploy_branch: 'main' });
      const image = await call('POST', `/images/${a.id}/build`);
      await until('the build', async () => (await call('GET', `/images/${image.image_id}/detail`)).built);
      const release = await call('POST', `/releases/${a.id}/create`);
      await until('the release', async () => (await call('GET', `/releases/${release.release_id}/detail`)).built);
      const { deployment_id } = await call('POST', `/releases/${release.release_id}/deploy`);
      await until('the deployment', async () => {
        const d = await ctx.db.selectFrom('deployments').select('status').where('id', '=', deployment_id).executeTakeFirstOrThrow();
        if (d.status === 'error') throw new Error('deployment failed');
        return d.status === 'complete';
      });
      const host = `${a.slug}.${project.slug}.${org.slug}.localhost`;
      await until('the route', async () => local.router.table.upstreams(host).length > 0);
      return { id: a.id, slug: a.slug as string, host };
    };
    const drained = await deployApp('drained');
    const quiet = await deployApp('quiet');
    const healthy = await deployApp('healthy');
    await call('POST', `/organizations/${org.slug}/log-drains`, {
      kind: 'syslog',
      url: `syslog+tcp://127.0.0.1:${sinkPort}`,
      application: `${project.slug}/${healthy.slug}`,
      sources: ['runtime'],
    });
    const drain = await call('POST', `/organizations/${org.slug}/log-drains`, {
      kind: 'syslog',
      url: `syslog+tcp://127.0.0.1:${blackholePort}`,
      application: `${project.slug}/${drained.slug}`,
      sources: ['runtime'],
    });

    const autocannonBin = new URL('../node_modules/.bin/autocannon', import.meta.url).pathname;
    const load = async (host: string) => {
      const cpu = process.cpuUsage();
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          autocannonBin,
          ['-j', '-c', String(connections), '-d', String(seconds), '-H', `host=${host}`, `http://127.0.0.1:${local.router.port}/`],
          { maxBuffer: 16 * 1024 * 1024 },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        ),
      );
      const used = process.cpuUsage(cpu);
      const r = JSON.parse(out) as {
        requests: { average: number; total: number };
        latency: { p50: number; p99: number };
        errors: number;
        non2xx: number;
      };
      return {
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        errors: r.errors + r.non2xx,
        cpuUs: (used.user + used.system) / Math.max(1, r.requests.total),
      };
    };
    type Round = Awaited<ReturnType<typeof load>>;
    const cases = [
      { name: 'no drain', host: quiet.host, rounds: [] as Round[] },
      { name: 'drain to a healthy server', host: healthy.host, rounds: [] as Round[] },
      { name: 'drain to a blackhole', host: drained.host, rounds: [] as Round[] },
    ];
    const loadBefore = loadavg();
    // Warm each (and let the drains connect and fill the blackhole's buffers).
    for (const c of cases) await load(c.host);
    // A blackhole that still takes data (the kernel's buffers not full yet) measures a healthy drain:
    // load its app until the drain reports its first stalled send (bounded), so the rounds see it stalled.
    const drainState = async () =>
      (await call('GET', `/organizations/${org.slug}/log-drains`)).find((d: { id: string }) => d.id === drain.id) as
        { lines_sent: number; failed_sends: number; last_error: string | null } | undefined;
    for (let i = 0; i < 30 && !(await drainState())?.failed_sends; i++) await load(drained.host);
    const stalled = await drainState();
    console.log(`blackhole drain before the rounds: ${JSON.stringify(stalled)}`);
    for (let i = 0; i < rounds; i++) {
      // Rotate which goes first, so a slow stretch of the machine hits every case alike.
      for (let j = 0; j < cases.length; j++) {
        const c = cases[(i + j) % cases.length]!;
        c.rounds.push(await load(c.host));
      }
    }
    const after = (await call('GET', `/organizations/${org.slug}/log-drains`)).find((d: { id: string }) => d.id === drain.id);
    const loadAfter = loadavg();
    const spread = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return `${sorted[0]!.toFixed(2)}–${sorted[sorted.length - 1]!.toFixed(2)}`;
    };
    const row = (name: string, xs: Round[]) =>
      `  ${name.padEnd(28)} ${median(xs.map((x) => x.rps))
        .toFixed(0)
        .padStart(6)} req/s   p50 ${median(xs.map((x) => x.p50))} ms   p99 ${median(xs.map((x) => x.p99))} ms   ` +
      `CPU ${median(xs.map((x) => x.cpuUs)).toFixed(0)} µs/request   errors ${xs.reduce((n, x) => n + x.errors, 0)}`;
    console.log(
      `log drain bench: ${rounds} interleaved rounds of ${seconds} s per case, ${connections} connections, through the edge; medians`,
    );
    console.log(
      `  load average before ${loadBefore.map((x) => x.toFixed(1)).join(' ')}, after ${loadAfter.map((x) => x.toFixed(1)).join(' ')}`,
    );
    for (const c of cases) console.log(row(c.name, c.rounds));
    // Round by round against the undrained case measured in the same round.
    const base = cases[0]!.rounds;
    for (const c of cases.slice(1)) {
      const rps = c.rounds.map((x, i) => x.rps / base[i]!.rps);
      const p99 = c.rounds.map((x, i) => x.p99 / Math.max(1, base[i]!.p99));
      const cpu = c.rounds.map((x, i) => x.cpuUs / base[i]!.cpuUs);
      console.log(
        `  ${c.name} / no drain, per round: req/s ×${median(rps).toFixed(2)} (${spread(rps)}), p99 ×${median(p99).toFixed(2)} (${spread(p99)}), ` +
          `CPU/request ×${median(cpu).toFixed(2)} (${spread(cpu)})`,
      );
    }
    console.log(
      `  the drain afterwards: ${JSON.stringify({ lines_sent: after?.lines_sent, lines_dropped: after?.lines_dropped, failed_sends: after?.failed_sends, last_error: after?.last_error })}`,
    );
  } finally {
    await running.stop();
    await platform.close();
    for (const s of held) s.destroy();
    blackhole.close();
    sink.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
