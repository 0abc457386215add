/**
 * Soak (issue 37): a real Slipway under steady mixed load for a long while, sampled every window,
 * to see whether memory, open files and latency stay flat. No assertions: figures only.
 *
 *   npx tsx bench/soak.ts                       # 600 s, 30 s windows
 *   npx tsx bench/soak.ts --duration 90 --apps 2 --api-rate 100 --edge-rate 200
 *
 * What runs, on loopback: `dist/main.js` as `npm start` runs it (run `npm run build` first) (the `all` role: API, worker, and the
 * edge as its own process) on a fresh DATA_DIR with the embedded PostgreSQL; `--apps` tiny Python
 * apps built and deployed through the real pipeline (source build, release, sandboxed instance), each
 * printing a log line a second. Then, for `--duration` seconds:
 * - `--api-connections` keep-alive connections of reads (application detail, the project's
 *   application list, configuration, releases, deployments, images), paced to `--api-rate` req/s in all;
 * - configuration writes (PATCH of one variable per app) at `--writes` per second;
 * - a new release of one app (round robin) deployed every `--redeploy` seconds;
 * - `--streams` SSE log streams, each dropped and resumed with Last-Event-ID every `--reconnect` s;
 * - `--edge-connections` keep-alive connections through the edge to the apps, paced to `--edge-rate`.
 * Rates are paced (open loop per connection) so that the figures compare like with like across windows
 * on a shared machine; `--api-rate 0` / `--edge-rate 0` run the connections as fast as they go.
 *
 * Every `--window` seconds it samples RSS, PSS (`/proc/<pid>/smaps_rollup`) and open fds of the
 * control-plane process, the edge process (DATA_DIR/edge/edge.pid), the instance shims and what runs
 * under them (sandbox, pasta, the app), and the embedded PostgreSQL (postmaster and backends), with
 * CPU seconds from `/proc/<pid>/stat`, the load average, and the window's request latencies and errors.
 * At the end: a table per window, a verdict per series (first vs last window, flat = within ±10 %),
 * and the failed request counts. JSON in bench/.results/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TestRepo } from '../test/helpers/git-repo.js';
import { pythonHttpApp } from '../test/helpers/python-app.js';
import { ROOT } from './lib/servers.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '600' },
    window: { type: 'string', default: '30' },
    apps: { type: 'string', default: '3' },
    'api-connections': { type: 'string', default: '30' },
    'api-rate': { type: 'string', default: '150' },
    writes: { type: 'string', default: '3' },
    redeploy: { type: 'string', default: '60' },
    streams: { type: 'string', default: '4' },
    reconnect: { type: 'string', default: '20' },
    'edge-connections': { type: 'string', default: '20' },
    'edge-rate': { type: 'string', default: '300' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const DURATION = Number(args.duration);
const WINDOW = Number(args.window);
const APPS = Number(args.apps);
const API_CONNECTIONS = Number(args['api-connections']);
const API_RATE = Number(args['api-rate']);
const WRITES = Number(args.writes);
const REDEPLOY = Number(args.redeploy);
const STREAMS = Number(args.streams);
const RECONNECT = Number(args.reconnect);
const EDGE_CONNECTIONS = Number(args['edge-connections']);
const EDGE_RATE = Number(args['edge-rate']);

const ADMIN = { email: 'soak@example.com', password: 'soak-admin-password-123' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = (bytes: number) => Math.round(bytes / 1048576);

// ---------------------------------------------------------------- processes, from /proc

interface ProcInfo {
  ppid: number;
  cpuSeconds: number;
}

function processTable(): Map<number, ProcInfo> {
  const table = new Map<number, ProcInfo>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(entry), { ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100 });
    } catch {
      /* ended meanwhile */
    }
  }
  return table;
}

function descendants(table: Map<number, ProcInfo>, root: number): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, p] of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  const out: number[] = [];
  const stack = [...(children.get(root) ?? [])];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
};

interface GroupSample {
  processes: number;
  rss_mib: number;
  pss_mib: number;
  fds: number;
  cpu_seconds: number;
}

/** Sums RSS, PSS and open fds over `pids` (processes that ended meanwhile count as nothing). */
function sampleGroup(pids: number[], table: Map<number, ProcInfo>): GroupSample {
  let rss = 0;
  let pss = 0;
  let fds = 0;
  let cpu = 0;
  let processes = 0;
  for (const pid of pids) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rss += Number(/^Rss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
      pss += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
      fds += readdirSync(`/proc/${pid}/fd`).length;
      cpu += table.get(pid)?.cpuSeconds ?? 0;
      processes++;
    } catch {
      /* ended meanwhile */
    }
  }
  return { processes, rss_mib: MiB(rss), pss_mib: MiB(pss), fds, cpu_seconds: Math.round(cpu * 100) / 100 };
}

function pidFrom(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]!.trim());
    return pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function samplePlatform(controlPlane: number, dataDir: string) {
  const table = processTable();
  const edge = pidFrom(join(dataDir, 'edge', 'edge.pid'));
  const postmaster = pidFrom(join(dataDir, 'postgres', 'postmaster.pid'));
  // Shims are started detached (own session) but stay children of the control plane while it lives.
  const shims = descendants(table, controlPlane).filter((pid) => cmdline(pid).includes('instance-shim'));
  const underShims = shims.flatMap((pid) => descendants(table, pid));
  return {
    control_plane: sampleGroup([controlPlane], table),
    edge: sampleGroup(edge ? [edge] : [], table),
    shims: sampleGroup(shims, table),
    instances: sampleGroup(underShims, table),
    postgres: sampleGroup(postmaster ? [postmaster, ...descendants(table, postmaster)] : [], table),
  };
}

// ---------------------------------------------------------------- HTTP

interface Answer {
  status: number;
  body: string;
}

function http(
  agent: Agent,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {},
): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent,
        method: options.method ?? 'GET',
        timeout: options.timeoutMs ?? 30_000,
        headers: { ...options.headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (body.length < 1_000_000) body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 180_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** The fields of API answers this bench reads. */
interface ApiRecord {
  id: string;
  slug: string;
  key: string;
  image_id: string;
  release_id: string;
  deployment_id: string;
  built?: boolean;
  complete?: boolean;
  error?: boolean;
  error_detail?: string | null;
  deploy_metadata: { url: string };
}

// ---------------------------------------------------------------- the window's counters

class Window {
  readonly api: number[] = [];
  apiErrors = 0; // socket errors and 5xx
  apiOther = 0; // 4xx (a bench bug, or throttling)
  readonly writes: number[] = [];
  writeErrors = 0;
  readonly edge: number[] = [];
  edgeFailures = 0;
  readonly edgeFailureSamples: string[] = [];
  sseEvents = 0;
  sseReconnects = 0;
  sseErrors = 0;
  sseDuplicates = 0;
  readonly redeploys: Array<{ app: number; ms: number; outcome: string }> = [];
}

async function main() {
  if (!existsSync('/proc/self/smaps_rollup')) throw new Error('needs Linux /proc (smaps_rollup)');
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-soak-'));
  const repo = new TestRepo('slipway-soak-repo-');
  repo.commit({
    'server.py': pythonHttpApp(
      "f\"pid={os.getpid()} counter={os.environ.get('SOAK_COUNTER', '-')}\"",
      [
        'import threading, time',
        'def tick():',
        '    n = 0',
        '    while True:',
        '        n += 1',
        "        print(f'tick {n}', flush=True)",
        '        time.sleep(1)',
        'threading.Thread(target=tick, daemon=True).start()',
      ].join('\n'),
    ),
    Procfile: 'web: python3 server.py\n',
  });
  const routerPort = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: args['log-level']!,
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(await freePort()),
    ROUTER_HOST: '127.0.0.1',
    ROUTER_PORT: String(routerPort),
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    SOURCE_PATH_ALLOWLIST: tmpdir(),
  };
  // As `npm start` runs it: the compiled program (the edge process it spawns runs the same, with the same node flags).
  if (!existsSync(join(ROOT, 'dist', 'main.js')))
    throw new Error('run `npm run build` first: the soak runs dist/main.js as `npm start` does');
  const child: ChildProcess = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Only the start and the last 64 KB are kept (for errors); everything is read so the pipe never fills.
  let head = '';
  let tail = '';
  const onOutput = (d: Buffer) => {
    if (head.length < 20_000) head += d;
    tail = (tail + d).slice(-65_536);
  };
  child.stdout!.on('data', onOutput);
  child.stderr!.on('data', onOutput);

  const stopAll = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(30_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    // Whatever outlived it: the edge, instances, the embedded PostgreSQL (all of this run's DATA_DIR).
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
        if (environ.includes(`DATA_DIR=${dataDir}`)) process.kill(Number(entry), 'SIGKILL');
      } catch {
        /* gone, or not ours */
      }
    }
    const postmaster = pidFrom(join(dataDir, 'postgres', 'postmaster.pid'));
    if (postmaster)
      try {
        process.kill(postmaster, 'SIGINT');
        await until('PostgreSQL to stop', async () => !existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 30_000);
      } catch {
        /* gone */
      }
    rmSync(dataDir, { recursive: true, force: true });
    repo.remove();
  };

  try {
    const apiUrl = await until(
      'the control plane to listen',
      async () => {
        if (child.exitCode !== null) throw new Error(`the control plane exited:\n${head}\n…\n${tail}`);
        return /(?:Server listening at|API listening on) (http:\/\/127\.0\.0\.1:\d+)/.exec(head)?.[1];
      },
      120_000,
    );
    const setupAgent = new Agent({ keepAlive: true, maxSockets: 8 });
    const login = await fetch(`${apiUrl}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const cookie = login.headers.get('set-cookie')?.split(';')[0] ?? '';
    const { key } = (await (
      await fetch(`${apiUrl}/v1/auth/api-keys`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'soak' }),
      })
    ).json()) as { key: string };
    const auth = { 'x-api-key': key };
    const call = async (method: string, path: string, body?: unknown): Promise<ApiRecord> => {
      const r = await http(setupAgent, `${apiUrl}/v1${path}`, { method, headers: auth, body });
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 500)}`);
      return JSON.parse(r.body || '{}') as ApiRecord;
    };

    /** Creates a release of the app's latest image and deploys it; resolves with the outcome. */
    const releaseAndDeploy = async (appId: string) => {
      const { release_id } = await call('POST', `/releases/${appId}/create`);
      const release = await until('the release', async () => {
        const d = await call('GET', `/releases/${release_id}/detail`);
        return d.built || d.error ? d : null;
      });
      if (release.error) return { outcome: `release error: ${release.error_detail}`, deployment: null };
      const { deployment_id } = await call('POST', `/releases/${release_id}/deploy`);
      const deployment = await until('the deployment', async () => {
        const d = await call('GET', `/deployments/${deployment_id}/detail`);
        return d.complete || d.error ? d : null;
      });
      return { outcome: deployment.error ? `deployment error: ${deployment.error_detail ?? ''}` : 'ok', deployment };
    };

    const setupStarted = Date.now();
    const org = await call('POST', '/organizations', { name: 'Soak' });
    const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
    const apps = await Promise.all(
      Array.from({ length: APPS }, async (_, i) => {
        const app = await call('POST', '/applications', { name: `App ${i + 1}`, project_id: project.id });
        await call('PATCH', `/applications/${app.id}/settings`, {
          github_repository: repo.dir,
          health_check_path: '/',
          deployment_timeout: 60,
        });
        const variable = await call('POST', `/configurations/${app.id}`, { name: 'SOAK_COUNTER', value: '0' });
        const { image_id } = await call('POST', `/images/${app.id}/build`);
        const image = await until('the build', async () => {
          const d = await call('GET', `/images/${image_id}/detail`);
          return d.built || d.error ? d : null;
        });
        if (image.error) throw new Error(`build of app ${i + 1} failed: ${image.error_detail}`);
        const first = await releaseAndDeploy(app.id);
        if (first.outcome !== 'ok') throw new Error(`first deployment of app ${i + 1}: ${first.outcome}`);
        const host = new URL(first.deployment!.deploy_metadata.url).hostname;
        return { id: app.id as string, slug: app.slug as string, variableId: variable.id as string, host };
      }),
    );
    console.log(`${APPS} apps built and deployed in ${Math.round((Date.now() - setupStarted) / 1000)} s; soak for ${DURATION} s`);

    // ------------------------------------------------------------ load
    let stopped = false;
    let win = new Window();
    const totals = { api: 0, apiErrors: 0, apiOther: 0, writes: 0, writeErrors: 0, edge: 0, edgeFailures: 0 };

    /** Sleeps `ms`, or less once the soak is over. */
    const nap = async (ms: number) => {
      const end = Date.now() + ms;
      while (!stopped && Date.now() < end) await sleep(Math.min(500, end - Date.now()));
    };
    /** One paced connection: `fn` every `intervalMs` (or back to back when 0). */
    const paced = async (intervalMs: number, offsetMs: number, fn: () => Promise<void>) => {
      await nap(offsetMs);
      let next = Date.now();
      while (!stopped) {
        await fn();
        if (intervalMs > 0) {
          next += intervalMs;
          const wait = next - Date.now();
          if (wait > 0) await nap(wait);
          else next = Date.now(); // fell behind: do not burst to catch up
        }
      }
    };

    const readPaths = (i: number) => {
      const app = apps[i % apps.length]!;
      return [
        `/v1/applications/${org.slug}/${project.slug}/${app.slug}`,
        `/v1/applications/${org.slug}/${project.slug}`,
        `/v1/configurations/${app.id}`,
        `/v1/releases/${app.id}`,
        `/v1/applications/${app.id}/deployments`,
        `/v1/images/${app.id}`,
      ][Math.floor(i / apps.length) % 6]!;
    };
    const apiAgent = new Agent({ keepAlive: true, maxSockets: API_CONNECTIONS });
    let readCounter = 0;
    const apiInterval = API_RATE > 0 ? (API_CONNECTIONS * 1000) / API_RATE : 0;
    const apiLoops = Array.from({ length: API_CONNECTIONS }, (_, c) =>
      paced(apiInterval, (c * apiInterval) / API_CONNECTIONS, async () => {
        const began = performance.now();
        try {
          const r = await http(apiAgent, `${apiUrl}${readPaths(readCounter++)}`, { headers: auth });
          win.api.push(performance.now() - began);
          totals.api++;
          if (r.status >= 500) {
            win.apiErrors++;
            totals.apiErrors++;
          } else if (r.status >= 300) {
            win.apiOther++;
            totals.apiOther++;
          }
        } catch {
          win.apiErrors++;
          totals.apiErrors++;
          totals.api++;
        }
      }),
    );

    const writeAgent = new Agent({ keepAlive: true, maxSockets: 2 });
    let writeCounter = 0;
    const writeLoop = paced(WRITES > 0 ? 1000 / WRITES : 1000, 0, async () => {
      if (WRITES <= 0) return;
      const n = writeCounter++;
      const app = apps[n % apps.length]!;
      const began = performance.now();
      try {
        const r = await http(writeAgent, `${apiUrl}/v1/configurations/${app.id}/${app.variableId}`, {
          method: 'PATCH',
          headers: auth,
          body: { value: String(n) },
        });
        win.writes.push(performance.now() - began);
        totals.writes++;
        if (r.status !== 200) {
          win.writeErrors++;
          totals.writeErrors++;
        }
      } catch {
        win.writeErrors++;
        totals.writes++;
        totals.writeErrors++;
      }
    });

    let redeployCounter = 0;
    const redeployLoop = paced(REDEPLOY * 1000, REDEPLOY * 1000, async () => {
      if (stopped) return;
      const i = redeployCounter++ % apps.length;
      const began = Date.now();
      const target = win;
      try {
        const { outcome } = await releaseAndDeploy(apps[i]!.id);
        target.redeploys.push({ app: i + 1, ms: Date.now() - began, outcome });
      } catch (err) {
        target.redeploys.push({ app: i + 1, ms: Date.now() - began, outcome: (err as Error).message.slice(0, 200) });
      }
    });

    const streamAgent = new Agent({ keepAlive: false });
    const openStreams = new Set<ReturnType<typeof request>>();
    const streamLoops = Array.from({ length: STREAMS }, async (_, s) => {
      const app = apps[s % apps.length]!;
      const seen = new Set<string>();
      let lastId: string | undefined;
      await nap((s * RECONNECT * 1000) / Math.max(1, STREAMS));
      while (!stopped) {
        await new Promise<void>((done) => {
          let dropping = false;
          const req = request(
            `${apiUrl}/v1/applications/${app.id}/logs/stream`,
            { agent: streamAgent, headers: { ...auth, accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) } },
            (res) => {
              if (res.statusCode !== 200) {
                win.sseErrors++;
                res.resume();
                res.on('end', () => setTimeout(done, 1000));
                return;
              }
              let buffer = '';
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => {
                buffer += chunk;
                let cut: number;
                while ((cut = buffer.indexOf('\n\n')) >= 0) {
                  const event = buffer.slice(0, cut);
                  buffer = buffer.slice(cut + 2);
                  const id = /^id: ?(.*)$/m.exec(event)?.[1];
                  if (!/^event: ?log$/m.test(event)) continue;
                  win.sseEvents++;
                  if (id !== undefined) {
                    if (seen.has(id)) win.sseDuplicates++;
                    seen.add(id);
                    lastId = id;
                  }
                }
                if (buffer.length > 1_000_000) buffer = '';
              });
              res.on('error', () => {});
              res.on('close', () => {
                openStreams.delete(req);
                clearTimeout(drop);
                if (!dropping && !stopped) win.sseErrors++;
                done();
              });
              const drop = setTimeout(() => {
                dropping = true;
                req.destroy();
              }, RECONNECT * 1000);
            },
          );
          req.on('error', () => {
            if (!dropping && !stopped) {
              win.sseErrors++;
              setTimeout(done, 1000);
            }
          });
          openStreams.add(req);
          req.end();
        });
        if (!stopped) win.sseReconnects++;
      }
    });

    const edgeAgent = new Agent({ keepAlive: true, maxSockets: EDGE_CONNECTIONS });
    const edgeInterval = EDGE_RATE > 0 ? (EDGE_CONNECTIONS * 1000) / EDGE_RATE : 0;
    const edgeLoops = Array.from({ length: EDGE_CONNECTIONS }, (_, c) =>
      paced(edgeInterval, (c * edgeInterval) / EDGE_CONNECTIONS, async () => {
        const host = apps[c % apps.length]!.host;
        const began = performance.now();
        try {
          const r = await http(edgeAgent, `http://127.0.0.1:${routerPort}/`, { headers: { host } });
          win.edge.push(performance.now() - began);
          totals.edge++;
          if (r.status !== 200) {
            win.edgeFailures++;
            totals.edgeFailures++;
            if (win.edgeFailureSamples.length < 5) win.edgeFailureSamples.push(`${r.status} ${r.body.slice(0, 80)}`);
          }
        } catch (err) {
          win.edgeFailures++;
          totals.edge++;
          totals.edgeFailures++;
          if (win.edgeFailureSamples.length < 5) win.edgeFailureSamples.push((err as Error).message);
        }
      }),
    );

    // ------------------------------------------------------------ windows
    const controlPlane = child.pid!;
    const rows: Array<ReturnType<typeof summarize>> = [];
    const startedAt = Date.now();
    let previous = samplePlatform(controlPlane, dataDir);
    const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
    function summarize(w: Window, t: number, processes: ReturnType<typeof samplePlatform>, cpu: Record<string, number>) {
      const api = [...w.api].sort((a, b) => a - b);
      const edge = [...w.edge].sort((a, b) => a - b);
      const writes = [...w.writes].sort((a, b) => a - b);
      return {
        t,
        load1: Math.round(loadavg()[0]! * 100) / 100,
        api: { requests: api.length, p50: percentile(api, 50), p99: percentile(api, 99), errors: w.apiErrors, other_non_2xx: w.apiOther },
        writes: { requests: writes.length, p99: percentile(writes, 99), errors: w.writeErrors },
        edge: {
          requests: edge.length,
          p50: percentile(edge, 50),
          p99: percentile(edge, 99),
          failures: w.edgeFailures,
          samples: w.edgeFailureSamples,
        },
        sse: { events: w.sseEvents, reconnects: w.sseReconnects, errors: w.sseErrors, duplicates: w.sseDuplicates },
        redeploys: w.redeploys,
        processes,
        cpu_percent: cpu,
      };
    }
    while (Date.now() - startedAt < DURATION * 1000) {
      await sleep(Math.min(WINDOW * 1000, DURATION * 1000 - (Date.now() - startedAt)));
      const done = win;
      win = new Window();
      const processes = samplePlatform(controlPlane, dataDir);
      const seconds = WINDOW;
      const pct = (now: GroupSample, before: GroupSample) =>
        Math.max(0, Math.round(((now.cpu_seconds - before.cpu_seconds) / seconds) * 100));
      const cpu = {
        control_plane: pct(processes.control_plane, previous.control_plane),
        edge: pct(processes.edge, previous.edge),
        postgres: pct(processes.postgres, previous.postgres),
      };
      previous = processes;
      const row = summarize(done, Math.round((Date.now() - startedAt) / 1000), processes, cpu);
      rows.push(row);
      const p = row.processes;
      console.log(
        `t=${row.t}s load ${row.load1} | api ${row.api.requests} p50 ${row.api.p50} p99 ${row.api.p99} err ${row.api.errors} | ` +
          `writes ${row.writes.requests} err ${row.writes.errors} | edge ${row.edge.requests} p50 ${row.edge.p50} p99 ${row.edge.p99} failed ${row.edge.failures} | ` +
          `sse ${row.sse.events} ev ${row.sse.reconnects} rc ${row.sse.errors} err | redeploys ${row.redeploys.map((r) => `${r.outcome}/${r.ms}ms`).join(',') || '-'} | ` +
          `cp ${p.control_plane.rss_mib}/${p.control_plane.pss_mib} MiB ${p.control_plane.fds} fds | edge ${p.edge.rss_mib}/${p.edge.pss_mib} MiB ${p.edge.fds} fds | ` +
          `shims ${p.shims.processes}: ${p.shims.pss_mib} MiB ${p.shims.fds} fds | pg ${p.postgres.processes}: ${p.postgres.pss_mib} MiB ${p.postgres.fds} fds`,
      );
    }
    stopped = true;
    for (const req of openStreams) req.destroy();
    await Promise.race([Promise.all([...apiLoops, writeLoop, redeployLoop, ...streamLoops, ...edgeLoops]), sleep(120_000)]);
    for (const a of [apiAgent, writeAgent, streamAgent, edgeAgent, setupAgent]) a.destroy();
    report(rows, totals, loadAtStart);
  } finally {
    await stopAll();
  }
}

function report(
  rows: Array<{
    t: number;
    load1: number;
    api: { requests: number; p50: number; p99: number; errors: number; other_non_2xx: number };
    writes: { requests: number; p99: number; errors: number };
    edge: { requests: number; p50: number; p99: number; failures: number };
    sse: { events: number; reconnects: number; errors: number; duplicates: number };
    redeploys: Array<{ app: number; ms: number; outcome: string }>;
    processes: Record<'control_plane' | 'edge' | 'shims' | 'instances' | 'postgres', GroupSample>;
    cpu_percent: Record<string, number>;
  }>,
  totals: Record<string, number>,
  loadAtStart: number[],
) {
  const s = (x: number) => Math.round(x / WINDOW);
  console.log(
    `\nSoak: ${DURATION} s, ${WINDOW} s windows, ${APPS} apps, ${cpus().length} CPUs, load average at start ${loadAtStart.join(' ')}`,
  );
  console.log(
    `Load: ${API_CONNECTIONS} API connections at ${API_RATE || 'max'} req/s, ${WRITES} config writes/s, a redeploy every ${REDEPLOY} s, ` +
      `${STREAMS} SSE log streams resumed every ${RECONNECT} s, ${EDGE_CONNECTIONS} edge connections at ${EDGE_RATE || 'max'} req/s\n`,
  );
  console.log(
    '| t s | load | API req/s | API p50 / p99 ms | API errors | writes (err) | edge req/s | edge p50 / p99 ms | edge failed | SSE events / reconnects / errors / dup | redeploys |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of rows)
    console.log(
      `| ${r.t} | ${r.load1} | ${s(r.api.requests)} | ${r.api.p50} / ${r.api.p99} | ${r.api.errors}${r.api.other_non_2xx ? ` (+${r.api.other_non_2xx} 4xx)` : ''} | ${r.writes.requests} (${r.writes.errors}) | ` +
        `${s(r.edge.requests)} | ${r.edge.p50} / ${r.edge.p99} | ${r.edge.failures} | ${r.sse.events} / ${r.sse.reconnects} / ${r.sse.errors} / ${r.sse.duplicates} | ` +
        `${r.redeploys.map((d) => (d.outcome === 'ok' ? `${(d.ms / 1000).toFixed(1)} s` : d.outcome)).join(', ') || '–'} |`,
    );
  console.log(
    '\n| t s | control plane RSS / PSS MiB, fds, CPU % | edge RSS / PSS MiB, fds, CPU % | shims n: PSS MiB, fds | under the shims n: PSS MiB, fds | PostgreSQL n: RSS / PSS MiB, fds, CPU % |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const p = r.processes;
    console.log(
      `| ${r.t} | ${p.control_plane.rss_mib} / ${p.control_plane.pss_mib}, ${p.control_plane.fds}, ${r.cpu_percent.control_plane} | ` +
        `${p.edge.rss_mib} / ${p.edge.pss_mib}, ${p.edge.fds}, ${r.cpu_percent.edge} | ${p.shims.processes}: ${p.shims.pss_mib}, ${p.shims.fds} | ` +
        `${p.instances.processes}: ${p.instances.pss_mib}, ${p.instances.fds} | ${p.postgres.processes}: ${p.postgres.rss_mib} / ${p.postgres.pss_mib}, ${p.postgres.fds}, ${r.cpu_percent.postgres} |`,
    );
  }
  const series: Array<[string, (r: (typeof rows)[number]) => number]> = [
    ['control plane PSS MiB', (r) => r.processes.control_plane.pss_mib],
    ['control plane RSS MiB', (r) => r.processes.control_plane.rss_mib],
    ['control plane fds', (r) => r.processes.control_plane.fds],
    ['edge PSS MiB', (r) => r.processes.edge.pss_mib],
    ['edge fds', (r) => r.processes.edge.fds],
    ['shims PSS MiB', (r) => r.processes.shims.pss_mib],
    ['shims fds', (r) => r.processes.shims.fds],
    ['under the shims PSS MiB', (r) => r.processes.instances.pss_mib],
    ['PostgreSQL PSS MiB', (r) => r.processes.postgres.pss_mib],
    ['PostgreSQL fds', (r) => r.processes.postgres.fds],
    ['API p50 ms', (r) => r.api.p50],
    ['API p99 ms', (r) => r.api.p99],
    ['edge p50 ms', (r) => r.edge.p50],
    ['edge p99 ms', (r) => r.edge.p99],
  ];
  console.log('');
  if (rows.length >= 2) {
    const first = rows[0]!;
    const last = rows.at(-1)!;
    for (const [name, of] of series) {
      const a = of(first);
      const b = of(last);
      const change = a === 0 ? (b === 0 ? 0 : Infinity) : ((b - a) / a) * 100;
      const verdict = Math.abs(change) <= 10 ? 'flat' : change > 0 ? 'GREW' : 'fell';
      const max = Math.max(...rows.map(of));
      console.log(`${name}: ${a} → ${b} (${change >= 0 ? '+' : ''}${change.toFixed(1)} %, max ${max}): ${verdict}`);
    }
  }
  const redeploys = rows.flatMap((r) => r.redeploys);
  const sse = rows.reduce(
    (acc, r) => ({
      events: acc.events + r.sse.events,
      reconnects: acc.reconnects + r.sse.reconnects,
      errors: acc.errors + r.sse.errors,
      duplicates: acc.duplicates + r.sse.duplicates,
    }),
    { events: 0, reconnects: 0, errors: 0, duplicates: 0 },
  );
  console.log(
    `\nFailed app requests through the edge: ${totals.edgeFailures} of ${totals.edge}. API errors (5xx or socket): ${totals.apiErrors} of ${totals.api}` +
      ` (4xx: ${totals.apiOther}). Config writes failed: ${totals.writeErrors} of ${totals.writes}. Redeploys: ${redeploys.filter((d) => d.outcome === 'ok').length} ok of ${redeploys.length}` +
      `${
        redeploys.some((d) => d.outcome !== 'ok')
          ? ` (${redeploys
              .filter((d) => d.outcome !== 'ok')
              .map((d) => d.outcome)
              .join('; ')})`
          : ''
      }. ` +
      `SSE: ${sse.events} log events, ${sse.reconnects} resumes, ${sse.errors} errors, ${sse.duplicates} duplicates.`,
  );
  mkdirSync(join(ROOT, 'bench', '.results'), { recursive: true });
  const file = join(ROOT, 'bench', '.results', `soak-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ options: args, load_at_start: loadAtStart, totals, windows: rows }, null, 2));
  console.log(`JSON: ${file}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
