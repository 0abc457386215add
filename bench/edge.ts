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
 *
 * HTTPS rows (`…Tls`): nginx `auto` (with and without Debian's access log) and the HAProxy driver serve
 * the same certificate (RSA 2048 as the platform's ACME issuer makes, self-signed here for
 * `shop.bench.localhost`); autocannon keeps its connections alive, so the handshake happens once
 * per connection (50 per round) and the rows measure TLS record work, not handshakes, e.g.
 * `--paths direct,nginxAuto,nginxAutoTls,haproxyDriver,haproxyDriverTls`.
 *
 * `--variant '{"global":["nbthread 1"]}'` adds two rows (`haproxyVariant`, `haproxyVariantTls`): a second
 * HAProxy driver whose configuration is edited as bench/haproxy-edge-server.ts describes, in the
 * same interleaved rounds as the driver as shipped (an A/B of one setting).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
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
/** The name served over HTTPS (a verified custom domain of HOST's route for the HAProxy driver). */
const TLS_HOST = 'shop.bench.localhost';
const variantArg = process.argv.indexOf('--variant');
const variant = variantArg >= 0 ? process.argv[variantArg + 1]! : null;

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

async function load(port: number, host: string | undefined, pids: number[], tls = false) {
  const opts = {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/`,
    connections,
    // Every answer must be the instance's: a proxy answering by itself would count as an error.
    expectBody: 'hello from the instance',
    ...(rate ? { overallRate: rate } : {}),
    ...(host ? { headers: { host } } : {}),
    ...(tls ? { servername: host } : {}),
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

/** A self-signed certificate for TLS_HOST (RSA 2048, as the platform's ACME issuer requests). */
function makeCertificate(dir: string): { cert: string; key: string } {
  const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${TLS_HOST}`];
  execFileSync('openssl', [...args, '-addext', `subjectAltName=DNS:${TLS_HOST}`, '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { cert, key };
}

/**
 * nginx (Debian's `nginx-light`) started by the bench: `workers` worker processes (a number or
 * `auto`), one server for the host name (and, with `tls`, an `ssl` listener for TLS_HOST with that certificate), `proxy_pass` to an upstream block that keeps up to 64
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
  tls: { cert: string; key: string } | null = null,
): Promise<{ port: number; tlsPort: number; pids: () => number[] } | null> {
  if (!NGINX) return null;
  const port = await freePort();
  const tlsPort = tls ? await freePort() : 0;
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
    ${tls ? `listen 127.0.0.1:${tlsPort} ssl reuseport; ssl_certificate ${tls.cert}; ssl_certificate_key ${tls.key};` : ''}
    server_name ${HOST} ${TLS_HOST};
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
    if (up) return { port, tlsPort, pids: () => withChildren(nginx.pid!) };
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
 * master-worker, the Host map and server slots, HTTPS for TLS_HOST (a custom domain of the route, its
 * certificate written by the driver); counters read from `show stat` each second. Its CPU is HAProxy's
 * (master and worker) and the driver process's. `variant`: the configuration edits of an A/B row.
 */
async function startDriverHaproxy(
  upstreamPort: number,
  tls: { cert: string; key: string },
  variant: string | null = null,
): Promise<{ port: number; tlsPort: number; pids: () => number[] } | null> {
  if (!HAPROXY) return null;
  const tlsPort = await freePort();
  const driver = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/haproxy-edge-server.ts', String(upstreamPort), String(await freePort()), String(tlsPort), tls.cert, tls.key],
    // BENCH_HAPROXY_EVENTS (a reader of the variant's request log, bench/haproxy-edge-server.ts) goes to the variant only.
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: variant ? { ...process.env, BENCH_HAPROXY_VARIANT: variant } : { ...process.env, BENCH_HAPROXY_EVENTS: '' },
    },
  );
  children.push(driver);
  const [port, master] = (await firstLine(driver)).split(' ').map(Number);
  return { port: port!, tlsPort, pids: () => [driver.pid!, ...withChildren(master!)] };
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
  const certificate = makeCertificate(dir);
  const either = (...names: string[]) => names.some(measured);
  const nginxOne = measured('nginxOne') ? await startNginx(upstreamPort, dir, '1') : null;
  const nginxAuto = either('nginxAuto', 'nginxAutoTls') ? await startNginx(upstreamPort, dir, 'auto', false, certificate) : null;
  const nginxLogged = either('nginxLogged', 'nginxLoggedTls') ? await startNginx(upstreamPort, dir, 'auto', true, certificate) : null;
  const nginxDriver = measured('nginxDriver') ? await startDriverNginx(upstreamPort) : null;
  const haproxyDriver = either('haproxyDriver', 'haproxyDriverTls') ? await startDriverHaproxy(upstreamPort, certificate) : null;
  const haproxyVariant =
    variant && either('haproxyVariant', 'haproxyVariantTls') ? await startDriverHaproxy(upstreamPort, certificate, variant) : null;
  if (!HAPROXY) console.error('HAProxy is not installed (apt-get install haproxy): its row is skipped');
  if (!NGINX) console.error('nginx is not installed (apt-get install nginx-light): its rows are skipped');

  type Result = Awaited<ReturnType<typeof load>>;
  const runs: Record<
    | 'direct'
    | 'nginxOne'
    | 'nginxAuto'
    | 'nginxLogged'
    | 'nginxDriver'
    | 'haproxyDriver'
    | 'haproxyVariant'
    | 'nginxAutoTls'
    | 'nginxLoggedTls'
    | 'haproxyDriverTls'
    | 'haproxyVariantTls'
    | 'builtin'
    | 'caddy'
    | 'caddyStatic'
    | 'relay',
    Result[]
  > = {
    direct: [],
    nginxOne: [],
    nginxAuto: [],
    nginxLogged: [],
    nginxDriver: [],
    haproxyDriver: [],
    haproxyVariant: [],
    nginxAutoTls: [],
    nginxLoggedTls: [],
    haproxyDriverTls: [],
    haproxyVariantTls: [],
    builtin: [],
    caddy: [],
    caddyStatic: [],
    relay: [],
  };
  for (let round = 0; round < rounds; round++) {
    runs.direct.push(await load(upstreamPort, undefined, [upstream.pid!]));
    if (nginxOne) runs.nginxOne.push(await load(nginxOne.port, HOST, nginxOne.pids()));
    if (nginxAuto && measured('nginxAuto')) runs.nginxAuto.push(await load(nginxAuto.port, HOST, nginxAuto.pids()));
    if (nginxLogged && measured('nginxLogged')) runs.nginxLogged.push(await load(nginxLogged.port, HOST, nginxLogged.pids()));
    if (nginxDriver) runs.nginxDriver.push(await load(nginxDriver.port, HOST, nginxDriver.pids()));
    if (haproxyDriver && measured('haproxyDriver')) runs.haproxyDriver.push(await load(haproxyDriver.port, HOST, haproxyDriver.pids()));
    if (haproxyVariant && measured('haproxyVariant'))
      runs.haproxyVariant.push(await load(haproxyVariant.port, HOST, haproxyVariant.pids()));
    if (nginxAuto && measured('nginxAutoTls')) runs.nginxAutoTls.push(await load(nginxAuto.tlsPort, TLS_HOST, nginxAuto.pids(), true));
    if (nginxLogged && measured('nginxLoggedTls'))
      runs.nginxLoggedTls.push(await load(nginxLogged.tlsPort, TLS_HOST, nginxLogged.pids(), true));
    if (haproxyDriver && measured('haproxyDriverTls'))
      runs.haproxyDriverTls.push(await load(haproxyDriver.tlsPort, TLS_HOST, haproxyDriver.pids(), true));
    if (haproxyVariant && measured('haproxyVariantTls'))
      runs.haproxyVariantTls.push(await load(haproxyVariant.tlsPort, TLS_HOST, haproxyVariant.pids(), true));
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
  // Against nginx auto of the same scheme, round by round (the rounds are interleaved: a burst of load elsewhere hits both).
  const perRound = (list: Result[], base: Result[], pick: (r: Result) => number) => {
    const ratios = list.flatMap((r, i) => (base[i] ? [pick(r) / pick(base[i]!)] : [])).sort((x, y) => x - y);
    return ratios.length ? ratios[Math.floor(ratios.length / 2)]!.toFixed(2) : '';
  };
  console.log(
    '| path | req/s | ratio to direct | p50 ms | p99 ms | added p99 ms | errors | CPU µs/request | load generator µs/request | req/s × nginx auto | CPU × nginx auto |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [name, list] of [
    ['direct', runs.direct],
    ['nginx, 1 worker (keepalive upstream, no log)', runs.nginxOne],
    [`nginx, auto (${cpus().length} workers)`, runs.nginxAuto],
    [`nginx, auto, Debian's default access log (combined, a write per request)`, runs.nginxLogged],
    [`nginx driver (Slipway's nginx.conf, auto, its access log read by the platform)`, runs.nginxDriver],
    [`HAProxy driver (Slipway's haproxy.cfg, show stat counters)`, runs.haproxyDriver],
    [`HAProxy driver, variant ${variant}`, runs.haproxyVariant],
    [`HTTPS: nginx, auto (${cpus().length} workers, no log)`, runs.nginxAutoTls],
    [`HTTPS: nginx, auto, Debian's default access log`, runs.nginxLoggedTls],
    [`HTTPS: HAProxy driver (certificate from the platform, crt-list)`, runs.haproxyDriverTls],
    [`HTTPS: HAProxy driver, variant ${variant}`, runs.haproxyVariantTls],
    ['built-in edge', runs.builtin],
    ['Caddy (driver: SRV upstreams, access log)', runs.caddy],
    ['Caddy (static upstream, no log)', runs.caddyStatic],
    ['raw TCP relay (floor: no HTTP, no routing)', runs.relay],
  ] as const) {
    const r = summary(list);
    if (!r) continue;
    const base = name.startsWith('HTTPS') ? runs.nginxAutoTls : runs.nginxAuto;
    const vsNginx =
      list === runs.direct || list === base
        ? ['', '']
        : [perRound(list, base, (x) => x.rps), perRound(list, base, (x) => x.cpuUsPerRequest)];
    console.log(
      `| ${name} | ${r.rps.toFixed(0)} | ${(r.rps / direct.rps).toFixed(2)} | ${r.p50} | ${r.p99} | ${list === runs.direct ? '' : r.p99 - direct.p99} | ${r.errors} | ${r.cpu.toFixed(0)} | ${r.generator.toFixed(0)} | ${vsNginx[0]} | ${vsNginx[1]} |`,
    );
  }
  const measuredRuns = Object.entries(runs).filter(([, v]) => v.length > 0);
  console.log('rounds (req/s):', JSON.stringify(Object.fromEntries(measuredRuns.map(([k, v]) => [k, v.map((r) => Math.round(r.rps))]))));
  console.log(
    'rounds (CPU µs/request):',
    JSON.stringify(Object.fromEntries(measuredRuns.map(([k, v]) => [k, v.map((r) => Math.round(r.cpuUsPerRequest))]))),
  );
  for (const [a, b] of [
    [runs.haproxyVariant, runs.haproxyDriver],
    [runs.haproxyVariantTls, runs.haproxyDriverTls],
  ] as const)
    if (a.length > 0)
      console.log(
        `variant against the driver as shipped${a === runs.haproxyVariantTls ? ' (HTTPS)' : ''}, medians of per-round ratios: req/s × ${perRound(a, b, (x) => x.rps)}, CPU per request × ${perRound(a, b, (x) => x.cpuUsPerRequest)}`,
      );
} finally {
  // Caddy writes to its data directory until it has exited.
  await Promise.all(children.map((c) => (c.exitCode === null ? (c.kill('SIGTERM'), once(c, 'exit')) : null)));
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}
