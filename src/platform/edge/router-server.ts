import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import type { RequestStats } from './request-stats.js';
import { loadUndici } from '../http/load-undici.js';
import { ACME_CHALLENGE_PREFIX, OWNERSHIP_CHALLENGE_PREFIX, type EdgeDirectory } from './edge-directory.js';
import { logsRequests, type EdgeDriver, type EdgeRequestLogger } from './edge-driver.js';
import { RouteTable, type Upstream } from './route-table.js';
import { answerMaintenance } from './maintenance-page.js';

/** Headers that describe one hop and must not be forwarded (RFC 9110 §7.6.1), and those the edge sets itself. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);
const SET_BY_EDGE = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']);
/** Lengths of every name above: most headers are skipped by length without lower-casing them. */
const FILTERED_LENGTHS = new Set([...HOP_BY_HOP, ...SET_BY_EDGE].map((h) => h.length));

/** Header names a `Connection` header lists (they are hop-by-hop too); null for the usual `keep-alive`/`close`. */
function namedByConnection(value: string | undefined): Set<string> | null {
  if (value === undefined || value === 'keep-alive' || value === 'close') return null;
  const names = value
    .toLowerCase()
    .split(',')
    .map((s) => s.trim());
  const extra = names.filter((n) => n !== 'keep-alive' && n !== 'close' && n !== '');
  return extra.length ? new Set(extra) : null;
}

/** Connection failures before any answer: safe to try another instance for a bodiless request. */
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** Normalized host names by raw `Host` header: the same few headers arrive again and again. */
const HOST_CACHE_LIMIT = 4096;

export interface RouterOptions {
  host: string;
  port: number;
  /** HTTPS listener for custom domains with a certificate; unset: none. */
  httpsPort?: number;
  /** Upstream connect + first-byte timeout. */
  upstreamTimeoutMs?: number;
  /** How long a request without a body waits for an instance while every one refuses connections (0: answer 502 at once). */
  retryWindowMs?: number;
  /**
   * false for a proxy daemon's responder (HAProxy, nginx), which answers unknown hosts and challenges and never
   * proxies: it does not load undici (~0.8 MB to compile at start).
   */
  proxies?: boolean;
}

/** Pause between two tries of a held request: the routes may have changed meanwhile. */
const HELD_RETRY_MS = 200;

/**
 * The built-in edge driver: `{app}.{project}.{org}.<domain>` (or a verified custom domain) →
 * the application's healthy web instances, round-robin, streaming both ways over keep-alive
 * pools (undici) per instance. Unknown host: 404; no ready instance: 503. A request without a
 * body that fails to connect is retried on the next instance, so an instance crashing or being
 * retired does not surface as an error. Routes are served from the table itself: `apply()` has
 * nothing to do.
 */
export class RouterServer implements EdgeDriver {
  readonly name = 'builtin' as const;
  readonly table = new RouteTable();
  private server: Server | null = null;
  private httpsServer: Server | null = null;
  private directory: EdgeDirectory | null = null;
  private stats: RequestStats | null = null;
  private logger: EdgeRequestLogger | null = null;
  private logRequests = false;
  private boundHttpsPort: number | null = null;
  private readonly pools = new Map<string, Pool>();
  /** undici's Pool, loaded by listen() (a responder, which never proxies, does without). */
  private PoolClass: typeof Pool | null = null;
  private poolSweep: NodeJS.Timeout | null = null;
  private readonly sockets = new Set<Socket | Duplex>();
  private readonly hosts = new Map<string, string>();
  private boundPort: number | null = null;

  constructor(private readonly options: RouterOptions) {}

  get port(): number {
    if (this.boundPort === null) throw new Error('router not listening');
    return this.boundPort;
  }

  /** The HTTPS port, or null when the edge serves no HTTPS. */
  get httpsPort(): number | null {
    return this.boundHttpsPort;
  }

  get listening(): boolean {
    return this.boundPort !== null;
  }

  useDirectory(directory: EdgeDirectory) {
    this.directory = directory;
    if (this.logger) directory.useLogger(this.logger);
  }

  useStats(stats: RequestStats) {
    this.stats = stats;
    if (this.logger) stats.useLogger(this.logger);
  }

  /** The per-request line is written only when the logger is at `debug` (checked once, not per request). */
  useLogger(logger: EdgeRequestLogger) {
    this.logger = logger;
    this.logRequests = logsRequests(logger);
    this.directory?.useLogger(logger);
    this.stats?.useLogger(logger);
  }

  async apply(): Promise<void> {}

  openConnections(instanceId: string): number {
    return this.table.inflightOf(instanceId);
  }

  drain(instanceIds: string[], timeoutMs: number): Promise<void> {
    return this.table.drain(instanceIds, timeoutMs);
  }

  async listen(): Promise<number> {
    if (this.options.proxies !== false) this.PoolClass ??= (await loadUndici()).Pool;
    await this.directory?.start();
    this.stats?.start();
    const server = createServer({ noDelay: true }, (req, res) => this.handle(req, res, false));
    this.poolSweep = setInterval(() => this.sweepPools(), 10_000);
    this.poolSweep.unref();
    this.server = server;
    this.boundPort = await this.bind(server, this.options.port);
    if (this.options.httpsPort !== undefined) {
      const directory = this.directory;
      // SNI picks the custom domain's certificate; a name without one fails the handshake.
      const https = createHttpsServer(
        {
          noDelay: true,
          SNICallback: (name, cb) => cb(null, directory?.secureContext(RouteTable.normalize(name))),
        },
        (req, res) => this.handle(req, res, true),
      );
      this.httpsServer = https;
      this.boundHttpsPort = await this.bind(https, this.options.httpsPort);
    }
    return this.boundPort;
  }

  private async bind(server: Server, port: number): Promise<number> {
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    server.on(server === this.server ? 'connection' : 'secureConnection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.options.host, () => resolve());
    });
    return (server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    const servers = [this.server, this.httpsServer].filter((s): s is Server => s !== null);
    this.server = null;
    this.httpsServer = null;
    this.boundPort = null;
    this.boundHttpsPort = null;
    this.directory?.stop();
    await this.stats?.stop();
    if (this.poolSweep) clearInterval(this.poolSweep);
    this.poolSweep = null;
    await Promise.all([...this.pools.values()].map((p) => p.destroy().catch(() => {}))); // shutdown
    this.pools.clear();
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            for (const s of this.sockets) s.destroy();
            server.closeAllConnections();
          }),
      ),
    );
  }

  reject(res: ServerResponse, status: number, message: string) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify({ status, message });
    const headers: Record<string, string | number> = {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    };
    // No healthy instance is a passing state (a restart, a deploy): clients may come back shortly.
    if (status === 503) headers['retry-after'] = 1;
    res.writeHead(status, headers);
    res.end(body);
  }

  private normalizedHost(raw: string | undefined): string {
    if (raw === undefined) return '';
    let host = this.hosts.get(raw);
    if (host === undefined) {
      if (this.hosts.size >= HOST_CACHE_LIMIT) this.hosts.clear();
      host = RouteTable.normalize(raw);
      this.hosts.set(raw, host);
    }
    return host;
  }

  private handle(req: IncomingMessage, res: ServerResponse, secure: boolean) {
    const requested = this.normalizedHost(req.headers.host);
    const url = req.url ?? '/';
    if (!secure && this.directory && url.startsWith('/.well-known/')) {
      if (url.startsWith(ACME_CHALLENGE_PREFIX) || url.startsWith(OWNERSHIP_CHALLENGE_PREFIX))
        return void this.answerChallenge(requested, url, res);
    }
    const domain = this.directory?.route(requested);
    if (domain) {
      if (!secure && domain.httpsRedirect && this.boundHttpsPort !== null && this.directory!.hasCertificate(requested)) {
        res.writeHead(308, { location: `https://${req.headers.host ?? requested}${url}`, 'content-length': 0 });
        return void res.end();
      }
      if (secure && domain.hsts) res.setHeader('strict-transport-security', 'max-age=31536000');
    }
    const host = domain?.routeHostname ?? requested;
    const owner = this.directory ? this.table.ownerOf(host) : undefined;
    const maintenance = this.directory?.maintenanceOf(owner?.environmentId);
    if (maintenance) return answerMaintenance(res, maintenance, owner?.applicationId, req.method === 'HEAD');
    const first = this.table.pick(host);
    if (first === undefined) return this.reject(res, 404, `No application is served at ${requested || 'this address'}`);
    if (first === null) return this.reject(res, 503, 'The application has no healthy instance right now; retry shortly');
    new ProxiedRequest(this, req, res, host, secure).send(first);
  }

  /** ACME HTTP-01 answers and domain ownership tokens, for any host name (they prove it reaches this edge). */
  private async answerChallenge(host: string, url: string, res: ServerResponse) {
    try {
      const acme = url.startsWith(ACME_CHALLENGE_PREFIX);
      const token = decodeURIComponent(url.slice((acme ? ACME_CHALLENGE_PREFIX : OWNERSHIP_CHALLENGE_PREFIX).length).split('?')[0]!);
      const answer = acme ? await this.directory!.acmeAnswer(token) : await this.directory!.ownershipAnswer(host, token);
      if (answer === undefined) return this.reject(res, 404, 'No such challenge');
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    } catch {
      this.reject(res, 503, 'Challenge store unavailable; retry shortly');
    }
  }

  /** The keep-alive connection pool of one instance (created on first use, closed when the instance leaves every route). */
  poolOf(upstream: Upstream): Pool {
    let pool = this.pools.get(upstream.instanceId);
    if (!pool) {
      if (!this.PoolClass) throw new Error('this edge server does not proxy (a responder)');
      pool = new this.PoolClass(`http://${upstream.host}:${upstream.port}`, {
        connections: 256,
        keepAliveTimeout: 4000,
        headersTimeout: this.options.upstreamTimeoutMs ?? 60_000,
        bodyTimeout: 0,
      });
      this.pools.set(upstream.instanceId, pool);
    }
    return pool;
  }

  /** Closes the pools of instances no route names any more (retired after draining). */
  private sweepPools() {
    const live = this.table.instanceIds();
    for (const [id, pool] of this.pools) {
      if (live.has(id)) continue;
      this.pools.delete(id);
      void pool.close().catch(() => {}); // no route uses it any more; its sockets go with it
    }
  }

  /** Whether a request that started at `started` may still wait for an instance (see RouterOptions.retryWindowMs). */
  mayHold(started: number): boolean {
    const window = this.options.retryWindowMs ?? 0;
    return window > 0 && performance.now() - started + HELD_RETRY_MS < window;
  }

  /** Counts a finished request and writes its line (at debug). */
  finished(upstream: Upstream, req: IncomingMessage, host: string, status: number, started: number) {
    const elapsedMs = performance.now() - started;
    if (upstream.owner && this.stats) this.stats.record(upstream.statsKey!, upstream.owner, status, elapsedMs);
    if (this.logRequests)
      this.logger!.debug(
        {
          host,
          method: req.method,
          path: req.url,
          status,
          ms: Math.round(elapsedMs * 10) / 10,
          instance: upstream.instanceId,
          application: upstream.owner?.applicationId,
          client: req.socket.remoteAddress,
        },
        'edge request',
      );
  }

  /** WebSocket and other upgrades: a raw tunnel to one instance. */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    const requested = this.normalizedHost(req.headers.host);
    const host = this.directory?.route(requested)?.routeHostname ?? requested;
    if (this.directory?.maintenanceOf(this.table.ownerOf(host)?.environmentId)) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\r\n');
      return;
    }
    const upstream = this.table.pick(host);
    if (!upstream) {
      socket.end(`HTTP/1.1 ${upstream === undefined ? '404 Not Found' : '503 Service Unavailable'}\r\nconnection: close\r\n\r\n`);
      return;
    }
    this.sockets.add(socket);
    this.table.acquire(upstream.instanceId);
    const target = connect(upstream.port, upstream.host, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      target.write(lines.join('\r\n') + '\r\n\r\n');
      if (head.length) target.write(head);
      target.pipe(socket);
      socket.pipe(target);
    });
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      this.table.release(upstream.instanceId);
      this.sockets.delete(socket);
      target.destroy();
      socket.destroy();
    };
    target.on('error', finish);
    target.on('close', finish);
    socket.on('error', finish);
    socket.on('close', finish);
  }
}

/**
 * One request on its way through the edge: the undici dispatch handler that streams the
 * instance's answer into the client's response. One object per request (no closures, no
 * AbortController, no header objects): the hot path of the edge, shaped by profiling.
 */
class ProxiedRequest implements Dispatcher.DispatchHandlers {
  private upstream!: Upstream;
  private tried: Set<string> | null = null;
  private abort: ((err?: Error) => void) | null = null;
  private resume: (() => void) | null = null;
  private readonly started = performance.now();
  private status = 502;
  private released = true;
  private clientGone = false;
  private readonly withBody: boolean;
  private readonly headers: string[];

  constructor(
    private readonly router: RouterServer,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly host: string,
    secure: boolean,
  ) {
    const h = req.headers;
    this.withBody = h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0');
    this.headers = upstreamHeaders(req, secure);
    res.on('close', this.onClientClose);
  }

  /** A held request tries the host's current route again, every instance included. */
  private readonly tryAgain = () => {
    if (this.clientGone) return;
    this.tried = null;
    const next = this.router.table.pick(this.host);
    if (next) return this.send(next);
    if (next === null && this.router.mayHold(this.started)) return void setTimeout(this.tryAgain, HELD_RETRY_MS);
    this.router.finished(this.upstream, this.req, this.host, next === undefined ? 404 : 503, this.started);
    if (next === undefined) this.router.reject(this.res, 404, `No application is served at ${this.host}`);
    else this.router.reject(this.res, 503, 'The application has no healthy instance right now; retry shortly');
  };

  private readonly onClientClose = () => {
    this.release();
    if (this.res.writableFinished) return;
    this.clientGone = true;
    this.abort?.();
  };

  send(upstream: Upstream) {
    this.upstream = upstream;
    this.released = false;
    this.router.table.acquire(upstream.instanceId);
    this.router.poolOf(upstream).dispatch(
      {
        method: this.req.method as Dispatcher.HttpMethod,
        path: this.req.url ?? '/',
        headers: this.headers,
        // Request bodies stream through; undici sends them chunked unless a length was given.
        body: this.withBody ? this.req : null,
      },
      this,
    );
  }

  private release() {
    if (this.released) return;
    this.released = true;
    this.router.table.release(this.upstream.instanceId);
  }

  onConnect(abort: (err?: Error) => void) {
    if (this.clientGone) return abort();
    this.abort = abort;
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx informational answers are not relayed
    this.status = statusCode;
    this.resume = resume;
    this.res.writeHead(statusCode, responseHeaders(raw));
    return true;
  }

  onData(chunk: Buffer): boolean {
    const more = this.res.write(chunk);
    if (!more) this.res.once('drain', this.resume!);
    return more;
  }

  onComplete() {
    this.res.end();
    this.release();
    this.router.finished(this.upstream, this.req, this.host, this.status, this.started);
  }

  onError(err: Error) {
    this.release();
    this.abort = null;
    if (this.res.headersSent) {
      this.router.finished(this.upstream, this.req, this.host, 502, this.started);
      return void this.res.destroy();
    }
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (!this.withBody && !this.clientGone && RETRYABLE.has(code)) {
      // Not counted: the request goes on to another instance (counted there).
      (this.tried ??= new Set()).add(this.upstream.instanceId);
      const next = this.router.table.pick(this.host, this.tried);
      if (next) return this.send(next);
      // Every instance refused: they may be being replaced (a control plane restarting them). Hold the request a moment.
      if (this.router.mayHold(this.started)) return void setTimeout(this.tryAgain, HELD_RETRY_MS);
    }
    this.router.finished(this.upstream, this.req, this.host, 502, this.started);
    if (!this.clientGone) this.router.reject(this.res, 502, 'The application did not answer');
  }
}

/** The request's headers for the instance, as undici's flat array: hop-by-hop ones out, `X-Forwarded-*` set. */
function upstreamHeaders(req: IncomingMessage, secure: boolean): string[] {
  const raw = req.rawHeaders;
  const named = namedByConnection(req.headers.connection);
  const out: string[] = [];
  let priorFor: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (FILTERED_LENGTHS.has(name.length) || named) {
      const lower = name.toLowerCase();
      if (lower === 'x-forwarded-for') {
        priorFor = priorFor === undefined ? raw[i + 1] : `${priorFor}, ${raw[i + 1]}`;
        continue;
      }
      if (HOP_BY_HOP.has(lower) || SET_BY_EDGE.has(lower) || named?.has(lower)) continue;
    }
    out.push(name, raw[i + 1]!);
  }
  const remote = req.socket.remoteAddress ?? '';
  out.push(
    'x-forwarded-for',
    priorFor === undefined ? remote : `${priorFor}, ${remote}`,
    'x-forwarded-proto',
    secure ? 'https' : 'http',
    'x-forwarded-host',
    req.headers.host ?? '',
  );
  return out;
}

/** The instance's response headers for the client (flat array, hop-by-hop ones out). */
function responseHeaders(raw: Buffer[]): string[] {
  const out: string[] = [];
  let named: Set<string> | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1');
    const value = raw[i + 1]!.toString('latin1');
    if (FILTERED_LENGTHS.has(name.length)) {
      const lower = name.toLowerCase();
      if (lower === 'connection') named = namedByConnection(value);
      if (HOP_BY_HOP.has(lower)) continue;
    }
    out.push(name, value);
  }
  if (named === null) return out;
  const kept: string[] = [];
  for (let i = 0; i < out.length; i += 2) if (!named.has(out[i]!.toLowerCase())) kept.push(out[i]!, out[i + 1]!);
  return kept;
}
