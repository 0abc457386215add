/**
 * The edge's cost, all in one run: autocannon against one small instance directly, through
 * the built-in edge (its own process, as `SLIPWAY_ROLE=edge`), and through Caddy (when
 * installed) twice: driven by the platform's Caddy driver in its own process (the instance
 * from its SRV name server, the access log counted by the platform), and with a plain static
 * `reverse_proxy` and no access log (Caddy's own floor); nginx (when installed) with one worker
 * and with `auto` workers, `proxy_pass` to a keepalive upstream, no access log and (`auto`) with the
 * access log Debian's default configuration writes, and nginx as the platform's nginx driver
 * configures it (bench/nginx-edge-server.ts: its access log read and counted by the platform); HAProxy as the platform's HAProxy
 * driver configures it (bench/haproxy-edge-server.ts); last, a raw TCP relay that parses
 * nothing (the floor of any proxy process: two sockets per request, no HTTP work).
 *
 * Rounds are interleaved (direct, built-in, Caddy, direct, …) and the medians reported, so a
 * burst of load from elsewhere on the machine hits every path alike. Besides req/s and latency,
 * each row gives the CPU time the proxy's processes spent per request (from /proc, user +
 * system), which the other load on a shared machine disturbs far less than req/s.
 *
 *   npx tsx bench/edge.ts [--seconds 5] [--connections 50] [--rounds 3] [--rate 0]
 *
 * `--rate N` caps every connection at N requests/s (autocannon's overallRate / connections):
 * latency at a moderate, fixed load instead of at saturation. `--paths direct,nginxAuto,…` runs only
 * those rows (the names of `runs` below), e.g. `--paths direct,nginxAuto,nginxLogged,nginxDriver`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
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
const pathsArg = process.argv.indexOf('--paths');
const only = pathsArg >= 0 ? new Set(process.argv[pathsArg + 1]!.split(',')) : null;
/** Whether a row is measured (all by default). */
const measured = (name: string) => !only || only.has(name);
const HOST = 'app.bench.localhost';

// A raw TCP relay: no HTTP parsing at all (no routing, headers or counters), the floor of what any proxy process costs.
const RELAY = `const net = require('net'); const up = Number(process.argv[1]);
net.createServer((c) => { const u = net.connect(up, '127.0.0.1'); c.pipe(u).pipe(c); c.on('error', () => u.destroy()); u.on('error', () => c.destroy()); })
  .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;

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

/** CPU time (ms, user + system) a process has used so far. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

async function load(port: number, host: string | undefined, pids: number[]) {
  const opts = {
    url: `http://127.0.0.1:${port}/`,
    connections,
    // Every answer must be the instance's: a proxy answering by itself would count as an error.
    expectBody: 'hello from the instance',
    ...(rate ? { overallRate: rate } : {}),
    ...(host ? { headers: { host } } : {}),
  };
  await autocannon({ ...opts, duration: 1 });
  const cpu = () => pids.reduce((n, pid) => n + cpuMs(pid), 0);
  const before = cpu();
  const generatorBefore = process.cpuUsage(); // autocannon runs in this process
  const r = await autocannon({ ...opts, duration: seconds });
  const generator = process.cpuUsage(generatorBefore);
  const requests = Math.max(1, r.requests.total);
  const cpuUsPerRequest = ((cpu() - before) * 1000) / requests;
  const generatorUsPerRequest = (generator.user + generator.system) / requests;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx + r.mismatches,
    cpuUsPerRequest,
    generatorUsPerRequest,
  };
}

/** The processes of a process tree (nginx's master and its workers), for CPU accounting. */
function withChildren(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    /* ended */
  }
  return [pid, ...children.flatMap(withChildren)];
}

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

/**
 * nginx (Debian's `nginx-light`) started by the bench: `workers` worker processes (a number or
 * `auto`), one server for the host name, `proxy_pass` to an upstream block that keeps up to 64
 * idle connections to the instance open (HTTP/1.1, `Connection` cleared), the `X-Forwarded-*`
 * headers the built-in edge sets; no access log, or (`accessLog`) the one Debian's default
 * nginx.conf writes (`access_log /var/log/nginx/access.log;`: the `combined` format, one write per
 * request); null when nginx is not installed.
 */
async function startNginx(
  upstreamPort: number,
  dir: string,
  workers: string,
  accessLog = false,
): Promise<{ port: number; pids: () => number[] } | null> {
  if (!NGINX) return null;
  const port = await freePort();
  const home = join(dir, `nginx-${workers}${accessLog ? '-log' : ''}`);
  mkdirSync(home, { recursive: true, mode: 0o755 });
  const temp = (name: string) => `${name}_temp_path ${join(home, name)};`;
  writeFileSync(
    join(home, 'nginx.conf'),
    `worker_processes ${workers};
daemon off;
pid ${join(home, 'nginx.pid')};
error_log stderr error;
events { worker_connections 4096; }
http {
  access_log ${accessLog ? join(home, 'access.log') : 'off'};
  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}
  upstream instance { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port} reuseport;
    server_name ${HOST};
    location / {
      proxy_pass http://instance;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }
}
`,
  );
  // A session of its own, as nginx runs as a service and as the nginx driver's daemon does: with the
  // scheduler's autogroups (sched_autogroup_enabled) a process in the bench's session shares one slot
  // with the load generator, which favoured the plain rows 2–5× on a loaded machine (bench/README.md).
  const nginx = spawn(NGINX, ['-p', home, '-c', join(home, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'inherit'], detached: true });
  children.push(nginx);
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/`, { headers: { host: HOST } }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { port, pids: () => withChildren(nginx.pid!) };
    if (nginx.exitCode !== null) throw new Error(`nginx exited with ${nginx.exitCode}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('nginx did not answer');
}

/** A Caddy with its admin API on a free port and nothing else; null when caddy is not installed. */
async function startCaddy(dir: string): Promise<{ admin: number; pid: number } | null> {
  if (!existsSync('/usr/bin/caddy')) return null;
  const admin = await freePort();
  const initial = join(dir, `caddy-${admin}.json`);
  writeFileSync(initial, JSON.stringify({ admin: { listen: `127.0.0.1:${admin}` } }));
  const caddy = spawn('caddy', ['run', '--config', initial], {
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: 'ignore',
  });
  children.push(caddy);
  return { admin, pid: caddy.pid! };
}

/** Caddy with one static `reverse_proxy` route, no access log. */
async function startStaticCaddy(upstreamPort: number, dir: string): Promise<{ port: number; pids: number[] } | null> {
  const caddy = await startCaddy(dir);
  if (!caddy) return null;
  const { admin } = caddy;
  const port = await freePort();
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
    if (ok) return { port, pids: [caddy.pid] };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('caddy did not accept its configuration');
}

/** Caddy configured by the platform's Caddy driver (bench/caddy-edge-server.ts) in its own process. */
async function startDriverCaddy(upstreamPort: number, dir: string): Promise<{ port: number; pids: number[] } | null> {
  const caddy = await startCaddy(dir);
  if (!caddy) return null;
  const driver = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/caddy-edge-server.ts', String(upstreamPort), `http://127.0.0.1:${caddy.admin}`, String(await freePort())],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(driver);
  return { port: Number(await firstLine(driver)), pids: [caddy.pid, driver.pid!] };
}

/**
 * nginx configured by the platform's nginx driver (bench/nginx-edge-server.ts) in its own process:
 * `worker_processes auto`, keepalive upstream, its access log read and counted by the driver.
 * Its CPU is nginx's (master and workers) and the driver process's (it reads the log).
 */
async function startDriverNginx(upstreamPort: number): Promise<{ port: number; pids: () => number[] } | null> {
  if (!NGINX) return null;
  const driver = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/nginx-edge-server.ts', String(upstreamPort), String(await freePort())],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(driver);
  const [port, master] = (await firstLine(driver)).split(' ').map(Number);
  return { port: port!, pids: () => [driver.pid!, ...withChildren(master!)] };
}

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));

/**
 * HAProxy configured by the platform's HAProxy driver (bench/haproxy-edge-server.ts) in its own process:
 * master-worker, one thread per CPU, the Host map and server slots; counters read from `show stat` each second.
 * Its CPU is HAProxy's (master and worker) and the driver process's.
 */
async function startDriverHaproxy(upstreamPort: number): Promise<{ port: number; pids: () => number[] } | null> {
  if (!HAPROXY) return null;
  const driver = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/haproxy-edge-server.ts', String(upstreamPort), String(await freePort())],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(driver);
  const [port, master] = (await firstLine(driver)).split(' ').map(Number);
  return { port: port!, pids: () => [driver.pid!, ...withChildren(master!)] };
}

const loadBefore = loadavg();
const dir = mkdtempSync(join(tmpdir(), 'slipway-edge-bench-'));
try {
  const upstream = spawn(process.execPath, ['-e', UPSTREAM], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(upstream);
  const upstreamPort = Number(await firstLine(upstream));
  const edge = measured('builtin')
    ? spawn(process.execPath, ['--import', 'tsx', 'bench/edge-server.ts', String(upstreamPort)], { stdio: ['ignore', 'pipe', 'inherit'] })
    : null;
  if (edge) children.push(edge);
  const edgePort = edge ? Number(await firstLine(edge)) : 0;
  const relay = measured('relay')
    ? spawn(process.execPath, ['-e', RELAY, String(upstreamPort)], { stdio: ['ignore', 'pipe', 'inherit'] })
    : null;
  if (relay) children.push(relay);
  const relayPort = relay ? Number(await firstLine(relay)) : 0;
  const caddyDriver = measured('caddy') ? await startDriverCaddy(upstreamPort, dir) : null;
  const caddyStatic = measured('caddyStatic') ? await startStaticCaddy(upstreamPort, dir) : null;
  const nginxOne = measured('nginxOne') ? await startNginx(upstreamPort, dir, '1') : null;
  const nginxAuto = measured('nginxAuto') ? await startNginx(upstreamPort, dir, 'auto') : null;
  const nginxLogged = measured('nginxLogged') ? await startNginx(upstreamPort, dir, 'auto', true) : null;
  const nginxDriver = measured('nginxDriver') ? await startDriverNginx(upstreamPort) : null;
  const haproxyDriver = measured('haproxyDriver') ? await startDriverHaproxy(upstreamPort) : null;
  if (!HAPROXY) console.error('HAProxy is not installed (apt-get install haproxy): its row is skipped');
  if (!NGINX) console.error('nginx is not installed (apt-get install nginx-light): its rows are skipped');

  type Result = Awaited<ReturnType<typeof load>>;
  const runs: Record<
    'direct' | 'nginxOne' | 'nginxAuto' | 'nginxLogged' | 'nginxDriver' | 'haproxyDriver' | 'builtin' | 'caddy' | 'caddyStatic' | 'relay',
    Result[]
  > = {
    direct: [],
    nginxOne: [],
    nginxAuto: [],
    nginxLogged: [],
    nginxDriver: [],
    haproxyDriver: [],
    builtin: [],
    caddy: [],
    caddyStatic: [],
    relay: [],
  };
  for (let round = 0; round < rounds; round++) {
    runs.direct.push(await load(upstreamPort, undefined, [upstream.pid!]));
    if (nginxOne) runs.nginxOne.push(await load(nginxOne.port, HOST, nginxOne.pids()));
    if (nginxAuto) runs.nginxAuto.push(await load(nginxAuto.port, HOST, nginxAuto.pids()));
    if (nginxLogged) runs.nginxLogged.push(await load(nginxLogged.port, HOST, nginxLogged.pids()));
    if (nginxDriver) runs.nginxDriver.push(await load(nginxDriver.port, HOST, nginxDriver.pids()));
    if (haproxyDriver) runs.haproxyDriver.push(await load(haproxyDriver.port, HOST, haproxyDriver.pids()));
    if (edge) runs.builtin.push(await load(edgePort, HOST, [edge.pid!]));
    if (caddyDriver) runs.caddy.push(await load(caddyDriver.port, HOST, caddyDriver.pids));
    if (caddyStatic) runs.caddyStatic.push(await load(caddyStatic.port, HOST, caddyStatic.pids));
    if (relay) runs.relay.push(await load(relayPort, HOST, [relay.pid!]));
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
          cpu: median(list, (r) => r.cpuUsPerRequest),
          generator: median(list, (r) => r.generatorUsPerRequest),
        };
  const direct = summary(runs.direct)!;
  const load_ = rate ? `${rate} req/s overall` : 'as fast as possible';
  console.log(
    `one instance, ${connections} connections, ${load_}, ${seconds} s each after 1 s warm-up, median of ${rounds} interleaved rounds, load average ${loadBefore
      .map((n) => n.toFixed(1))
      .join(' ')} before, ${loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')} after:`,
  );
  console.log('| path | req/s | ratio to direct | p50 ms | p99 ms | added p99 ms | errors | CPU µs/request | load generator µs/request |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [name, list] of [
    ['direct', runs.direct],
    ['nginx, 1 worker (keepalive upstream, no log)', runs.nginxOne],
    [`nginx, auto (${cpus().length} workers)`, runs.nginxAuto],
    [`nginx, auto, Debian's default access log (combined, a write per request)`, runs.nginxLogged],
    [`nginx driver (Slipway's nginx.conf, auto, its access log read by the platform)`, runs.nginxDriver],
    [`HAProxy driver (Slipway's haproxy.cfg, ${cpus().length} threads, show stat counters)`, runs.haproxyDriver],
    ['built-in edge', runs.builtin],
    ['Caddy (driver: SRV upstreams, access log)', runs.caddy],
    ['Caddy (static upstream, no log)', runs.caddyStatic],
    ['raw TCP relay (floor: no HTTP, no routing)', runs.relay],
  ] as const) {
    const r = summary(list);
    if (!r) continue;
    console.log(
      `| ${name} | ${r.rps.toFixed(0)} | ${(r.rps / direct.rps).toFixed(2)} | ${r.p50} | ${r.p99} | ${list === runs.direct ? '' : r.p99 - direct.p99} | ${r.errors} | ${r.cpu.toFixed(0)} | ${r.generator.toFixed(0)} |`,
    );
  }
  console.log(
    'rounds (req/s):',
    JSON.stringify(Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, v.map((r) => Math.round(r.rps))]))),
  );
} finally {
  // Caddy writes to its data directory until it has exited.
  await Promise.all(children.map((c) => (c.exitCode === null ? (c.kill('SIGTERM'), once(c, 'exit')) : null)));
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}
