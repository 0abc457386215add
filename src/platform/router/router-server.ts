import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { RouteTable, type Upstream } from './route-table.js';

/** Headers that describe one hop and must not be forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade',
]);

function forwardHeaders(headers: IncomingMessage['headers'], extra: Record<string, string>) {
  const out: Record<string, string | string[]> = {};
  const named = String(headers.connection ?? '').split(',').map((s) => s.trim().toLowerCase());
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
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 1000 });
  private readonly sockets = new Set<Socket | Duplex>();
  private boundPort: number | null = null;

  constructor(private readonly options: RouterOptions) {}

  get port(): number {
    if (this.boundPort === null) throw new Error('router not listening');
    return this.boundPort;
  }

  get listening(): boolean {
    return this.boundPort !== null;
  }

  async listen(): Promise<number> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
    server.keepAliveTimeout = 5000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    this.boundPort = (server.address() as { port: number }).port;
    return this.boundPort;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.boundPort = null;
    this.agent.destroy();
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
      server.closeAllConnections();
    });
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

  private handle(req: IncomingMessage, res: ServerResponse) {
    const host = RouteTable.normalize(req.headers.host ?? '');
    const first = this.table.pick(host);
    if (first === undefined) return this.reject(res, 404, `No application is served at ${host || 'this address'}`);
    if (first === null) return this.reject(res, 503, 'The application has no healthy instance right now; retry shortly');
    this.forward(req, res, host, first, new Set());
  }

  private forward(req: IncomingMessage, res: ServerResponse, host: string, upstream: Upstream, tried: Set<string>) {
    tried.add(upstream.instanceId);
    this.table.acquire(upstream.instanceId);
    let released = false;
    const release = () => {
      if (!released) { released = true; this.table.release(upstream.instanceId); }
    };
    const remote = req.socket.remoteAddress ?? '';
    const priorFor = req.headers['x-forwarded-for'];
    const proxyReq = httpRequest({
      host: upstream.host, port: upstream.port, method: req.method, path: req.url, agent: this.agent,
      timeout: this.options.upstreamTimeoutMs ?? 60_000,
      headers: forwardHeaders(req.headers, {
        'x-forwarded-for': priorFor ? `${priorFor}, ${remote}` : remote,
        'x-forwarded-proto': 'http',
        'x-forwarded-host': req.headers.host ?? '',
      }),
    });
    let answered = false;
    proxyReq.on('response', (upstreamRes) => {
      answered = true;
      const headers = forwardHeaders(upstreamRes.headers, {});
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, headers);
      upstreamRes.pipe(res);
      upstreamRes.on('end', release);
      upstreamRes.on('error', () => { release(); res.destroy(); });
    });
    proxyReq.on('timeout', () => proxyReq.destroy(Object.assign(new Error('upstream timeout'), { code: 'ETIMEDOUT' })));
    proxyReq.on('error', (err: NodeJS.ErrnoException) => {
      release();
      if (answered) { res.destroy(); return; }
      if (!hasBody(req) && RETRYABLE.has(err.code ?? '') && !res.headersSent) {
        const next = this.table.pick(host, tried);
        if (next) return this.forward(req, res, host, next, tried);
      }
      this.reject(res, 502, 'The application did not answer');
    });
    res.on('close', () => {
      release();
      if (!res.writableFinished) proxyReq.destroy();
    });
    if (hasBody(req)) req.pipe(proxyReq);
    else proxyReq.end();
  }

  /** WebSocket and other upgrades: a raw tunnel to one instance. */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    const host = RouteTable.normalize(req.headers.host ?? '');
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
