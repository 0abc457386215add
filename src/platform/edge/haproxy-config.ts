import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { maintenancePage, type MaintenanceWindow } from './maintenance-page.js';
import { LATENCY_BOUNDS_MS } from './request-stats.js';

/** One server slot of a route's backend: an instance's address, or free (in maintenance, pointing nowhere). */
export interface HaproxySlot {
  /** `host:port` (`[v6]:port`), or null for a free slot. */
  address: string | null;
  /** `ready` takes new requests; `drain` only finishes its own (a retired instance); `free` is unused. */
  state: 'ready' | 'drain' | 'free';
}

/** One route as HAProxy serves it: its backend (one per platform host name) and the names that lead there. */
export interface HaproxyRoute {
  host: string;
  backend: string;
  /** Custom domains served under this route (plain HTTP), besides `host`. */
  names: string[];
  slots: HaproxySlot[];
  maintenance?: { window: MaintenanceWindow; applicationId: string | undefined };
}

export interface HaproxyTlsName {
  hostname: string;
  /** One file: the certificate chain, then its key (written 0600 by the platform). */
  pemFile: string;
  hsts: boolean;
  /** Plain HTTP to this name answers 308 to HTTPS. */
  redirect: boolean;
}

export interface HaproxyConfigInput {
  dir: string;
  /** The unprivileged uid/gid of the workers when the master runs as root; null otherwise. */
  worker: { uid: number; gid: number } | null;
  listenHost: string;
  port: number;
  httpsPort: number | null;
  responderPort: number;
  routes: HaproxyRoute[];
  tls: HaproxyTlsName[];
}

/** The files HAProxy reads when it (re)loads: the configuration and the maps, pages and list it names. */
export interface HaproxyFiles {
  config: string;
  /** File name (in the directory) → content. */
  files: Map<string, string>;
}

/** HAProxy answers a `return` from one buffer (16 KiB, less its rewrite reserve): a page past this falls back to the default. */
const MAX_PAGE_BYTES = 12 * 1024;

/** The stick table HAProxy counts each route's response times in: one entry per route backend, one `gpc` per bucket. */
export const LATENCY_TABLE = 'latency';

/**
 * The rules that count a route's response in its latency bucket (LATENCY_BOUNDS_MS: bucket i holds
 * bound[i-1] < ms ≤ bound[i], the last one the slower ones). The time is `%Tr`, from the request sent
 * to the instance until its response headers came back (Debian's 2.6 has no fetch of the whole
 * response's time at this point): for an instance that answers at once, the built-in edge's time.
 */
function latencyRules(backend: string): string[] {
  const bucket = (i: number) => {
    const upper = LATENCY_BOUNDS_MS[i];
    if (i === 0) return `le ${upper}`;
    const lower = LATENCY_BOUNDS_MS[i - 1]! + 1;
    return upper === undefined ? `ge ${lower}` : `${lower}:${upper}`;
  };
  return [
    `  http-request track-sc0 str(${backend}) table ${LATENCY_TABLE}`,
    '  http-response set-var-fmt(txn.tr) %Tr',
    ...Array.from(
      { length: LATENCY_BOUNDS_MS.length + 1 },
      (_, i) => `  http-response sc-inc-gpc(${i},0) if { var(txn.tr) -m int ${bucket(i)} }`,
    ),
  ];
}

/** A route's backend name: stable across reloads (its counters are read by it) and free of anything the host name holds. */
export const backendName = (host: string) => `r_${createHash('sha256').update(host).digest('hex').slice(0, 20)}`;

/** An address `set server … addr` takes (an IP literal) as host and port, or null. */
export function splitAddress(address: string): { ip: string; port: number } | null {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m || !isIP(m[1]!)) return null;
  return { ip: m[1]!, port: Number(m[2]) };
}

/** Paths enter the configuration unquoted: only plain characters (a data directory with others is refused at start). */
export const isPlainPath = (path: string) => /^\/[A-Za-z0-9._/-]*$/.test(path);

const json = (status: number, message: string) => `'${JSON.stringify({ status, message })}'`;

/** The maintenance page (the shared one; too long for HAProxy's buffer: the default page). */
export function haproxyMaintenancePage(window: MaintenanceWindow, applicationId: string | undefined): string {
  const page = maintenancePage(window, applicationId);
  if (Buffer.byteLength(page) <= MAX_PAGE_BYTES) return page;
  return maintenancePage({ ...window, message: null }, applicationId);
}

/**
 * The configuration for the current routes. Host → backend is a map lookup (one per request,
 * whatever the number of routes); each backend has a fixed number of server slots whose
 * addresses and states the platform changes at runtime (a deployment switch needs no reload).
 * Tenant text never enters this file: pages are files it names, host names are map entries.
 */
export function renderHaproxyConfig(input: HaproxyConfigInput): HaproxyFiles {
  const { dir } = input;
  const files = new Map<string, string>();
  const bind = (port: number) =>
    `${input.listenHost === '' ? '0.0.0.0' : input.listenHost.includes(':') ? `[${input.listenHost}]` : input.listenHost}:${port}`;
  const hosts: string[] = [];
  const redirects: string[] = [];
  const hsts: string[] = [];
  for (const r of input.routes) for (const name of [r.host, ...r.names]) hosts.push(`${name} ${r.backend}`);
  const lines = [
    '# Written by Slipway (the edge driver for HAProxy); replaced whole when a route, domain or certificate comes or goes.',
    'global',
    // Threads: HAProxy's default, one per CPU it may use (one thread cost more per request and capped throughput, bench/README.md).
    '  master-worker',
    '  daemon',
    ...(input.worker ? [`  uid ${input.worker.uid}`, `  gid ${input.worker.gid}`] : []),
    // Processes of an earlier configuration (long requests, WebSockets) end after this.
    '  hard-stop-after 120s',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 60s',
    '  timeout client-fin 30s',
    '  timeout http-request 60s',
    '  timeout http-keep-alive 75s',
    '  timeout server 1h',
    '  timeout tunnel 1h',
    // After a reload the old process answers the next request on an idle connection with Connection: close, not a cut.
    '  option idle-close-on-response',
    '  option forwardfor',
    // A refused connection or an idle one the instance closed is retried on another slot. `empty-response` makes
    // HAProxy copy every request (5–7 % of its CPU per request, bench/README.md): kept, as the built-in edge retries too.
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response',
    `  http-error status 502 content-type application/json string ${json(502, 'The application did not answer')}`,
    `  http-error status 504 content-type application/json string ${json(504, 'The application did not answer in time')}`,
    // No slot ready (not `nbsrv() eq 0`: a new worker reads 0 for its first moments after a reload).
    `  http-error status 503 content-type application/json string ${json(503, 'The application has no healthy instance right now; retry shortly')} hdr Retry-After 1`,
  ];
  const frontend = (name: string, https: boolean) => [
    `frontend ${name}`,
    https ? `  bind ${bind(input.httpsPort!)} ssl crt-list ${dir}/crt.list strict-sni` : `  bind ${bind(input.port)}`,
    '  http-request set-var(txn.host) req.hdr(host),field(1,:),lower',
    `  http-request set-header X-Forwarded-Proto ${https ? 'https' : 'http'}`,
    '  http-request set-header X-Forwarded-Host %[req.hdr(host)]',
    `  http-request set-var(txn.route) var(txn.host),map(${dir}/hosts.map)`,
    ...(https
      ? [
          `  http-request set-var(txn.hsts) var(txn.host),map(${dir}/hsts.map)`,
          '  http-after-response set-header Strict-Transport-Security max-age=31536000 if { var(txn.hsts) -m found }',
        ]
      : [`  http-request set-var(txn.redirect) var(txn.host),map(${dir}/redirect.map)`]),
    // A request with a body is sent once: an instance that took it and closed without answering may have acted on it
    // (`empty-response` would send it again, up to `retries` times). Bodiless ones are retried, as the built-in edge does.
    '  http-request disable-l7-retry if { req.hdr_cnt(transfer-encoding) gt 0 } or { req.hdr_cnt(content-length) gt 0 } !{ req.hdr(content-length) -m str 0 }',
    '  use_backend responder if { path_beg /.well-known/acme-challenge/ /.well-known/slipway-domain/ }',
    '  use_backend %[var(txn.route)] if { var(txn.route) -m found }',
    '  default_backend unknown',
  ];
  lines.push(...frontend('http', false));
  if (input.httpsPort !== null && input.tls.length > 0) {
    lines.push(...frontend('https', true));
    for (const t of input.tls) {
      if (t.hsts) hsts.push(`${t.hostname} 1`);
      if (t.redirect) redirects.push(`${t.hostname} 1`);
    }
  }
  lines.push(
    'backend unknown',
    `  http-request return status 404 content-type application/json string ${json(404, 'No application is served at this address')}`,
    'backend responder',
    `  server responder 127.0.0.1:${input.responderPort}`,
    // Sized for every route (a full table would drop a route's counts); its `show table` stays inside the CLI's answer bound.
    `backend ${LATENCY_TABLE}`,
    `  stick-table type string len 32 size ${Math.max(64, 2 * input.routes.length)} store gpc(${LATENCY_BOUNDS_MS.length + 1})`,
  );
  const httpsSuffix = input.httpsPort === 443 ? '' : `:${input.httpsPort}`;
  for (const route of input.routes) {
    lines.push(`backend ${route.backend}`);
    if (input.httpsPort !== null)
      lines.push(
        `  http-request redirect location https://%[var(txn.host)]${httpsSuffix}%[capture.req.uri] code 308 if { var(txn.redirect) -m found }`,
      );
    if (route.maintenance) {
      const page = `page-${route.backend}.html`;
      files.set(page, haproxyMaintenancePage(route.maintenance.window, route.maintenance.applicationId));
      const retryAfter = Math.max(0, Math.floor(route.maintenance.window.retryAfter));
      lines.push(
        `  http-request return status 503 content-type "text/html; charset=utf-8" file ${dir}/${page} hdr Retry-After ${retryAfter} hdr Cache-Control no-store`,
      );
    }
    lines.push(...latencyRules(route.backend));
    route.slots.forEach((slot, i) => {
      const at = slot.address && slot.state !== 'free' ? slot.address : '127.0.0.1:1';
      lines.push(`  server s${i} ${at}${slot.state === 'ready' ? '' : ' disabled'}`);
    });
  }
  files.set('hosts.map', hosts.map((l) => `${l}\n`).join(''));
  files.set('redirect.map', redirects.map((l) => `${l}\n`).join(''));
  files.set('hsts.map', hsts.map((l) => `${l}\n`).join(''));
  files.set('crt.list', input.tls.map((t) => `${t.pemFile} ${t.hostname}\n`).join(''));
  lines.push('');
  return { config: lines.join('\n'), files };
}
