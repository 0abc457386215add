/**
 * The HAProxy driver alone in its own process (as with SLIPWAY_ROLE=edge EDGE_DRIVER=haproxy),
 * routing one host name to one upstream: the haproxy.cfg it renders (Host map, server slots,
 * `X-Forwarded-*`) and the `show stat` reads feeding the counters. With an HTTPS port and a
 * certificate, also a verified custom domain (`shop.bench.localhost`) on that route, served over
 * TLS from the certificate file the driver writes, as in production (`bind … ssl crt-list`).
 *
 *   node --import tsx bench/haproxy-edge-server.ts <upstream port> <port> [<https port> <cert.pem> <key.pem>]
 *
 * prints `<port> <HAProxy master pid>`. `BENCH_HAPROXY_VARIANT` (JSON, for A/B rows in bench/edge.ts)
 * edits the configuration the driver renders: `{"global": [lines], "defaults": [lines],
 * "frontend": [lines], "replace": [[regex, replacement], …]}` (a line the replacements empty is dropped).
 * `BENCH_HAPROXY_EVENTS=<worker stats socket>:<ring>` reads a ring the variant logs requests to (see below).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { findHaproxy } from '../src/config.js';
import { SecretBox } from '../src/platform/crypto/secret-box.js';
import { EdgeDirectory } from '../src/platform/edge/edge-directory.js';
import { HaproxyDriver } from '../src/platform/edge/haproxy-driver.js';
import type { HaproxyProcess } from '../src/platform/edge/haproxy-process.js';
import { RequestStats } from '../src/platform/edge/request-stats.js';
import type { Db } from '../src/platform/db/database.js';

const ROUTE = 'app.bench.localhost';
const TLS_NAME = 'shop.bench.localhost';
const [upstreamPort, port, httpsPort] = [2, 3, 4].map((i) => (process.argv[i] ? Number(process.argv[i]) : undefined));
const [certFile, keyFile] = [process.argv[5], process.argv[6]];
const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-haproxy-'));
const edge = new HaproxyDriver({
  binary: findHaproxy()!,
  directory: join(dir, 'haproxy'),
  host: '127.0.0.1',
  port: port!,
  ...(httpsPort ? { httpsPort } : {}),
});

interface Variant {
  global?: string[];
  defaults?: string[];
  frontend?: string[];
  replace?: Array<[string, string]>;
}
const variant = process.env.BENCH_HAPROXY_VARIANT ? (JSON.parse(process.env.BENCH_HAPROXY_VARIANT) as Variant) : null;
if (variant) {
  // Bench only: the configuration is edited on its way to HAProxy (start and reloads alike).
  const edit = (config: string) =>
    config
      .split('\n')
      .flatMap((line) => {
        let out = line;
        for (const [from, to] of variant.replace ?? []) out = out.replace(new RegExp(from), to);
        if (out.trim() === '' && line.trim() !== '') return [];
        const added =
          line === 'global'
            ? variant.global
            : line === 'defaults'
              ? variant.defaults
              : line.startsWith('frontend ')
                ? variant.frontend
                : [];
        return [out, ...(added ?? []).map((l) => `  ${l}`)];
      })
      .join('\n');
  const haproxy = (edge as unknown as { haproxy: HaproxyProcess }).haproxy;
  const [start, reload] = [haproxy.start.bind(haproxy), haproxy.reload.bind(haproxy)];
  haproxy.start = (config) => start(edit(config));
  haproxy.reload = (config, beforeSwap) => reload(edit(config), beforeSwap);
}

edge.table.set(ROUTE, [
  // An owner, so every answer is counted for an application as in production (no database: not flushed).
  { instanceId: 'bench', host: '127.0.0.1', port: upstreamPort!, owner: { applicationId: 'a', environmentId: 'e', processType: 'web' } },
]);
edge.table.setReady('bench', true);
if (httpsPort && certFile && keyFile) {
  // The custom domain and its certificate as the directory holds them once read from PostgreSQL (here from a snapshot).
  const secrets = new SecretBox({ current: randomBytes(32), previous: [] });
  // No database: its refreshes fail (reported, never serving less) and the seeded names stay.
  const directory = new EdgeDirectory(null as unknown as Db, secrets, 3_600_000, true);
  directory.seed({
    domains: [{ hostname: TLS_NAME, routeHostname: ROUTE, httpsRedirect: false, hsts: false }],
    certificates: [
      {
        hostname: TLS_NAME,
        issuedAt: Date.now(),
        certificatePem: readFileSync(certFile, 'utf8'),
        privateKeyEnc: secrets.seal(readFileSync(keyFile, 'utf8')),
      },
    ],
    maintenance: [],
  });
  edge.useDirectory(directory);
}
// Counted in memory as in production; never flushed here (no database).
edge.useStats(new RequestStats(null as unknown as Db, 3_600_000));
await edge.listen();
const events = process.env.BENCH_HAPROXY_EVENTS;
if (events) {
  // Measuring per-request latency through HAProxy's log (bench/README.md): a variant that logs each request to a
  // ring (`%b %ST %Ta`) and a worker stats socket; this reads the ring as a stream and counts every line as the driver would.
  const [socketPath, ring] = events.split(':');
  const stats = new RequestStats(null as unknown as Db, 3_600_000);
  const owner = { applicationId: 'a', environmentId: 'e', processType: 'web' };
  let rest = '';
  const stream = createConnection(socketPath!);
  stream.setEncoding('latin1');
  stream.on('connect', () => stream.write(`show events ${ring} -w -n\n`));
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!.slice(-4096);
    for (const line of lines) {
      const [backend, status, ms] = line.split(' ');
      if (backend?.startsWith('r_')) stats.record(backend, owner, Number(status), Number(ms));
    }
  });
  stream.on('error', (err) => console.error(`bench: reading HAProxy's events: ${err.message}`));
}
console.log(`${port} ${edge.masterProcess!.pid}`);
process.on(
  'SIGTERM',
  () =>
    void edge.close().then(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    }),
);
