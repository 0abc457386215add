import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { RequestStats } from './request-stats.js';
import { ACME_CHALLENGE_PREFIX, OWNERSHIP_CHALLENGE_PREFIX, type EdgeDirectory } from './edge-directory.js';
import { Pool, type Dispatcher } from 'undici';
import { RouteTable, type Upstream } from './route-table.js';

/** Headers that describe one hop and must not be forwarded (RFC 9110 §7.6.1). */
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

function forwardHeaders(headers: IncomingMessage['headers'], extra: Record<string, string>) {
  const out: Record<string, string | string[]> = {};
  const named = String(headers.connection ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase());
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || named.includes(k)) continue;
    out[k] = v;
  }
  return { ...out, ...extra };
}

/** Connection failures before any answer: safe to try another instance for a bodiless request. */
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ETIMEDOUT']);

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

export interface RouterOptions {
  host: string;
  port: number;
  /** HTTPS listener for custom domains with a certificate; unset: none. */
  httpsPort?: number;
  /** Upstream connect + first-byte timeout. */
  upstreamTimeoutMs?: number;
}

/**
 * The built-in HTTP router: `{app}.{project}.{org}.<domain>` → the application's healthy
 * web instances, round-robin, streaming both ways. Unknown host: 404; no ready instance:
 * 503. A request without a body that fails to connect is retried on the next instance, so
 * an instance crashing or being retired does not surface as an error.
 */
export class RouterServer {
  readonly table = new RouteTable();
  private server: Server | null = null;
  private httpsServer: Server | null = null;
  private directory: EdgeDirectory | null = null;
  private stats: RequestStats | null = null;
  private boundHttpsPort: number | null = null;
  private readonly pools = new Map<string, Pool>();
  private poolSweep: NodeJS.Timeout | null = null;
  private readonly sockets = new Set<Socket | Duplex>();
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

  /** Custom domains, ACME challenges and certificates (set before `listen`). */
  useDirectory(directory: EdgeDirectory) {
    this.directory = directory;
  }

  /** Per-application request counters, flushed to PostgreSQL (set before `listen`). */
  useStats(stats: RequestStats) {
    this.stats = stats;
  }

  async listen(): Promise<number> {
    await this.directory?.start();
    this.stats?.start();
    const server = createServer((req, res) => this.handle(req, res, false));
    this.poolSweep = setInterval(() => this.sweepPools(), 10_000);
    this.poolSweep.unref();
    this.server = server;
    this.boundPort = await this.bind(server, this.options.port);
    if (this.options.httpsPort !== undefined) {
      const directory = this.directory;
      // SNI picks the custom domain's certificate; a name without one fails the handshake.
      const https = createHttpsServer(
        {
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

  private reject(res: ServerResponse, status: number, message: string) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify({ status, message });
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  private handle(req: IncomingMessage, res: ServerResponse, secure: boolean) {
    const requested = RouteTable.normalize(req.headers.host ?? '');
    const url = req.url ?? '/';
    if (url.startsWith('/.well-known/') && this.directory && !secure) {
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
    const first = this.table.pick(host);
    if (first === undefined) return this.reject(res, 404, `No application is served at ${requested || 'this address'}`);
    if (first === null) return this.reject(res, 503, 'The application has no healthy instance right now; retry shortly');
    this.forward(req, res, host, first, new Set(), secure);
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
  private poolOf(upstream: Upstream): Pool {
    let pool = this.pools.get(upstream.instanceId);
    if (!pool) {
      pool = new Pool(`http://${upstream.host}:${upstream.port}`, {
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

  private forward(req: IncomingMessage, res: ServerResponse, host: string, upstream: Upstream, tried: Set<string>, secure: boolean) {
    tried.add(upstream.instanceId);
    this.table.acquire(upstream.instanceId);
    let released = false;
    const release = () => {
      if (!released) {
        released = true;
        this.table.release(upstream.instanceId);
      }
    };
    const remote = req.socket.remoteAddress ?? '';
    const priorFor = req.headers['x-forwarded-for'];
    const withBody = hasBody(req);
    const abort = new AbortController();
    const started = performance.now();
    let status = 502;
    res.on('close', () => {
      release();
      if (!res.writableFinished) abort.abort();
    });
    this.poolOf(upstream).stream(
      {
        method: req.method as Dispatcher.HttpMethod,
        path: req.url ?? '/',
        signal: abort.signal,
        headers: forwardHeaders(req.headers, {
          'x-forwarded-for': priorFor ? `${priorFor}, ${remote}` : remote,
          'x-forwarded-proto': secure ? 'https' : 'http',
          'x-forwarded-host': req.headers.host ?? '',
        }),
        // Request bodies stream through; undici sends them chunked unless a length was given.
        body: withBody ? req : null,
      },
      ({ statusCode, headers }) => {
        status = statusCode;
        res.writeHead(statusCode, forwardHeaders(headers as IncomingMessage['headers'], {}));
        return res;
      },
      (err) => {
        release();
        if (!err) return this.count(upstream, status, started);
        if (res.headersSent) {
          this.count(upstream, 502, started);
          return void res.destroy();
        }
        const code = (err as NodeJS.ErrnoException).code ?? '';
        if (!withBody && (RETRYABLE.has(code) || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') && !abort.signal.aborted) {
          // Not counted: the request goes on to another instance (counted there).
          const next = this.table.pick(host, tried);
          if (next) return this.forward(req, res, host, next, tried, secure);
        }
        this.count(upstream, 502, started);
        if (!abort.signal.aborted) this.reject(res, 502, 'The application did not answer');
      },
    );
  }

  private count(upstream: Upstream, status: number, started: number) {
    if (upstream.owner && this.stats) this.stats.record(upstream.statsKey!, upstream.owner, status, performance.now() - started);
  }

  /** WebSocket and other upgrades: a raw tunnel to one instance. */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    const requested = RouteTable.normalize(req.headers.host ?? '');
    const host = this.directory?.route(requested)?.routeHostname ?? requested;
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
