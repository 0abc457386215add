/**
 * Deploy latency: time from `POST /releases/{id}/deploy` until the release is healthy and
 * routed, for an app that starts instantly, split into the app's own start (measured by
 * running its command directly) and the platform's overhead; then the same for a redeploy
 * (previous release running, so the rollout also retires it). Last, the router's cost:
 * autocannon against the instance directly and through the router. Also a configuration-only
 * release (`POST /applications/{id}/config-release`, no build): request → the router answering
 * with the new value.
 *
 *   npx tsx bench/deploy.ts [--iterations 5] [--router-seconds 3]
 *   RUNTIME_ISOLATION=none npx tsx bench/deploy.ts     # without the sandbox
 *
 * Bounded (each wait times out) and loopback only: embedded PostgreSQL in a temp dir, the
 * router on 127.0.0.1, the API driven in-process through `inject`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openPlatform } from '../src/platform/bootstrap.js';
import { probe } from '../src/platform/runtime/health-check.js';
import type { LocalRuntime } from '../src/platform/runtime/local/local-runtime.js';
import { start } from '../src/lifecycle.js';
import { composePlatform, createIdentity } from '../src/services.js';
import { pino } from 'pino';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) || fallback : fallback;
};
const iterations = arg('--iterations', 5);
const routerSeconds = arg('--router-seconds', 3);
const APP =
  "require('http').createServer((q, s) => s.end('ok ' + (process.env.GREETING || ''))).listen(Number(process.env.PORT), '127.0.0.1');\n";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000, everyMs = 5): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The app's own start: spawn its command, poll like the health check does, until 2xx. */
async function appStartMs(dir: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn('sh', ['-c', 'node app.js'], {
    cwd: dir,
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: 'ignore',
    detached: true,
  });
  try {
    await until('the app to answer', () => probe({ host: '127.0.0.1', port, path: '/' }, 500), 10_000, 5);
    return performance.now() - started;
  } finally {
    process.kill(-child.pid!, 'SIGKILL');
  }
}

/** The body the router answers for `host` (null on any failure). */
function routedBody(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host }, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? body : null));
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const repoDir = join(dataDir, 'repo');
  execFileSync('sh', [
    '-c',
    `mkdir -p ${repoDir} && cd ${repoDir} && git init -q -b main && git config user.email b@e && git config user.name b`,
  ]);
  writeFileSync(join(repoDir, 'app.js'), APP);
  writeFileSync(join(repoDir, 'Procfile'), 'web: node app.js\n');
  execFileSync('sh', ['-c', `cd ${repoDir} && git add -A && git commit -q -m app`]);

  // RUNTIME_ISOLATION=none in the environment measures without the sandbox (issue 10's overhead).
  const config = loadConfig(
    // The stability window (default 20 s) holds the traffic switch of a redeploy for its length: 0 here unless set,
    // to measure the platform's own time (DEPLOY_STABILITY_WINDOW_SECONDS=20 npx tsx bench/deploy.ts adds it).
    {
      RUNTIME_ISOLATION: process.env.RUNTIME_ISOLATION,
      DEPLOY_STABILITY_WINDOW_SECONDS: process.env.DEPLOY_STABILITY_WINDOW_SECONDS ?? '0',
    },
    {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: 40000 + Math.floor(Math.random() * 10000),
      LOG_LEVEL: 'silent',
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      // In-process: `local.router` below is read directly (the separate edge process has its own).
      EDGE_PROCESS: 'in-process',
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 2000,
    },
  );
  const platform = await openPlatform(config);
  const { ctx } = platform;
  const logger = pino({ level: 'silent' });
  const composition = composePlatform(ctx, logger);
  const app = await buildApp(ctx, { composition, loggerInstance: logger });
  const running = await start({ composition, logger, workers: true, http: { app } });
  try {
    // An administrator: the bench builds from a local path (issue 10's source policy).
    const { users, auth } = createIdentity(ctx);
    const user = await users.create({
      username: 'bench',
      email: 'bench@example.com',
      password: 'bench-password-1',
      is_admin: true,
    });
    const { key } = await auth.createApiKey(user.id, 'bench');
    const headers = { 'x-api-key': key };
    const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
      const r = await app.inject({ method, url: `/v1${url}`, headers, ...(payload ? { payload } : {}) });
      if (r.statusCode >= 300) throw new Error(`${method} ${url}: ${r.statusCode} ${r.body}`);
      return r.json();
    };
    const org = await call('POST', '/organizations', { name: 'Bench' });
    const project = await call('POST', '/projects', { name: 'Bench', organization_id: org.id });

    const cold = { total: [] as number[], queue: [] as number[] };
    const warm = { total: [] as number[], queue: [] as number[] };
    const appStarts: number[] = [];
    const configReleases: number[] = [];
    const local = ctx.runtime as LocalRuntime;

    /** Where a config-only release's time goes, per stage (ms), from the records' timestamps and the deploy log's. */
    const configStages: Record<string, number[]> = {};
    /** A runtime variable changed, then released with no build: POST → the new value served through the router. */
    const configReleaseOnce = async (applicationId: string, host: string, value: string) => {
      await call('POST', `/configurations/${applicationId}`, { name: 'GREETING', value, secret: false, buildtime: false });
      const posted = performance.now();
      const postedAt = Date.now();
      const { release_id, deployment_id } = await call('POST', `/applications/${applicationId}/config-release`);
      await until('the new configuration served', async () => (await routedBody(local.router.port, host)) === `ok ${value}`, 30_000, 5);
      const servedAt = Date.now();
      configReleases.push(performance.now() - posted);
      const release = await ctx.db.selectFrom('releases').selectAll().where('id', '=', release_id).executeTakeFirstOrThrow();
      const deployment = await until('the deployment record', async () => {
        const row = await ctx.db.selectFrom('deployments').selectAll().where('id', '=', deployment_id).executeTakeFirstOrThrow();
        return row.status === 'complete' || row.status === 'error' ? row : null;
      });
      const at = (pattern: RegExp) => {
        const m = new RegExp(`^(\\S+) ${pattern.source}`, 'm').exec(deployment.deploy_log);
        return m ? Date.parse(m[1]!) : NaN;
      };
      const marks: Array<[string, number]> = [
        // The release job starts while the request is still answering (woken in-process): one stage.
        ['request → release job started', release.started_at!.getTime()],
        ['release job runs (freeze configuration)', release.finished_at!.getTime()],
        ['deploy job waits for a worker', deployment.started_at!.getTime()],
        ['setup (plan, prepare) → instances starting', at(/Deploy: starting/)],
        ['instances launched (sandbox, spawn)', at(/Rollout: waiting for/)],
        ['health check passes → routed', at(/Rollout: .* now routes to/)],
        ['router serves the new value (seen by the poller)', servedAt],
      ];
      let previous = postedAt;
      for (const [stage, time] of marks) {
        (configStages[stage] ??= []).push(time - previous);
        previous = time;
      }
    };

    /** POST deploy → the moment the log says the route switched (healthy and serving). */
    const deployOnce = async (releaseId: string, into: { total: number[]; queue: number[] }) => {
      const posted = Date.now();
      const { deployment_id } = await call('POST', `/releases/${releaseId}/deploy`);
      const d = await until('the deployment', async () => {
        const row = await ctx.db.selectFrom('deployments').selectAll().where('id', '=', deployment_id).executeTakeFirstOrThrow();
        return row.status === 'complete' || row.status === 'error' ? row : null;
      });
      if (d.status !== 'complete') throw new Error(`deployment failed: ${d.error_detail}`);
      const routed = /^(\S+) Rollout: .* now routes to/m.exec(d.deploy_log);
      into.total.push(Date.parse(routed![1]!) - posted);
      into.queue.push(d.started_at!.getTime() - posted);
    };

    for (let i = 0; i < iterations; i++) {
      const a = await call('POST', '/applications', { name: `app ${i}`, project_id: project.id });
      await call('PATCH', `/applications/${a.id}/settings`, { github_repository: repoDir, auto_deploy_branch: 'main' });
      const image = await call('POST', `/images/${a.id}/build`);
      const built = await until(
        'the build',
        async () => {
          const x = await call('GET', `/images/${image.image_id}/detail`);
          return x.built || x.error ? x : null;
        },
        60_000,
        20,
      );
      if (!built.built) throw new Error(`build failed: ${built.error_detail}`);
      const release = await call('POST', `/releases/${a.id}/create`);
      await until(
        'the release',
        async () => {
          const x = await call('GET', `/releases/${release.release_id}/detail`);
          return x.built || x.error ? x : null;
        },
        60_000,
        20,
      );
      appStarts.push(await appStartMs(repoDir));
      await deployOnce(release.release_id, cold);
      await deployOnce(release.release_id, warm);
      await configReleaseOnce(a.id, `app-${i}.bench.bench.localhost`, `v${i}`);
    }

    // Router cost: the last application's instance, directly and through the router.
    const instance = local.runtimeService.driver.list().find((s) => s.port !== null)!;
    const hostname =
      local.router.table.upstreams(`app-${iterations - 1}.bench.bench.localhost`).length > 0
        ? `app-${iterations - 1}.bench.bench.localhost`
        : null;
    const load = async (port: number, host?: string) => {
      const r = await autocannon({
        url: `http://127.0.0.1:${port}/`,
        connections: 10,
        duration: routerSeconds,
        ...(host ? { headers: { host } } : {}),
      });
      return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx };
    };
    const direct = await load(instance.port!);
    const routed = hostname ? await load(local.router.port, hostname) : null;

    const start = median(appStarts);
    console.log(`deploy bench: ${iterations} applications, app start measured by running it directly`);
    console.log(`  app's own start (spawn → first 2xx):       ${fmt(appStarts)}`);
    console.log(`  first deploy, POST → healthy and routed:   ${fmt(cold.total)}`);
    console.log(`    of which waiting for a worker:           ${fmt(cold.queue)}`);
    console.log(`    platform overhead (total − app start):   median ${(median(cold.total) - start).toFixed(0)} ms`);
    console.log(`  redeploy, POST → new release routed:       ${fmt(warm.total)}`);
    console.log(`    platform overhead (total − app start):   median ${(median(warm.total) - start).toFixed(0)} ms`);
    console.log(`  config-only release, POST → new value served: ${fmt(configReleases)}`);
    for (const [stage, times] of Object.entries(configStages)) console.log(`    ${stage.padEnd(68)} ${fmt(times)}`);
    console.log(
      `  one instance, 10 connections, ${routerSeconds} s:  direct ${direct.rps.toFixed(0)} req/s (p99 ${direct.p99} ms)` +
        (routed ? `, through the router ${routed.rps.toFixed(0)} req/s (p99 ${routed.p99} ms, ${routed.errors} errors)` : ''),
    );
    console.log(
      JSON.stringify({
        bench: 'deploy',
        iterations,
        app_start_ms: median(appStarts),
        deploy_ms: median(cold.total),
        deploy_overhead_ms: median(cold.total) - start,
        deploy_queue_ms: median(cold.queue),
        redeploy_ms: median(warm.total),
        redeploy_overhead_ms: median(warm.total) - start,
        config_release_ms: median(configReleases),
        config_release_stages_ms: Object.fromEntries(Object.entries(configStages).map(([k, v]) => [k, median(v)])),
        stability_window_seconds: config.DEPLOY_STABILITY_WINDOW_SECONDS,
        direct_rps: direct.rps,
        router_rps: routed?.rps ?? null,
        router_p99_ms: routed?.p99 ?? null,
      }),
    );
  } finally {
    await running.stop();
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
