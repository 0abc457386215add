import type { FastifyReply, FastifyRequest } from 'fastify';

/** Comment line sent while nothing else is, so proxies and clients keep the connection. */
export const HEARTBEAT_MS = 15_000;
/** How often an open stream asks again whether its reader may still read it. */
export const ACCESS_RECHECK_MS = 5_000;

export interface SseEvent {
  id: string | number;
  event: string;
  data: unknown;
}

/**
 * A small Server-Sent Events writer over Fastify's raw response. (fastify-sse-v2 and
 * @fastify/sse exist; this needs only framing, heartbeats and a close hook, which are a
 * few lines, and it leaves the route's auth and schema handling to Fastify as usual.)
 * Every event carries an `id` so `Last-Event-ID` resumes it.
 */
/** Open streams per HTTP server, so closing the server ends them (they would hold it open). */
const openStreams = new WeakMap<object, Set<SseStream>>();

/** Ends every open stream of `server` (the app's `preClose`). */
export function endStreams(server: object): void {
  for (const stream of [...(openStreams.get(server) ?? [])]) stream.end();
}

export class SseStream {
  private closed = false;
  private readonly cleanups: Array<() => void> = [];
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    heartbeatMs = HEARTBEAT_MS,
  ) {
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    raw.write('retry: 2000\n\n');
    this.heartbeat = setInterval(() => {
      if (!this.closed) raw.write(': ping\n\n');
    }, heartbeatMs);
    this.heartbeat.unref();
    const open = openStreams.get(request.server.server) ?? new Set<SseStream>();
    openStreams.set(request.server.server, open);
    open.add(this);
    this.cleanups.push(() => open.delete(this));
    // The client went away (or the server closes): nothing of this stream may stay behind.
    request.raw.once('close', () => this.finish());
    raw.once('close', () => this.finish());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Runs when the stream ends for any reason (listener removal and the like). */
  onClose(cleanup: () => void): void {
    if (this.closed) cleanup();
    else this.cleanups.push(cleanup);
  }

  /**
   * Asks `check` again every `everyMs` while the stream is open and ends the stream when it
   * throws or the request's credential no longer authenticates (`reauthenticate`): access is
   * checked when a stream opens, and a member removed from the organization, or a deleted API
   * key, must not keep reading its records over a connection opened before.
   */
  recheck(check: () => Promise<unknown>, everyMs = ACCESS_RECHECK_MS): void {
    let checking = false;
    const timer = setInterval(() => {
      if (checking || this.closed) return;
      checking = true;
      Promise.all([check(), this.request.reauthenticate?.() ?? true])
        .then(([, signedIn]) => {
          if (!signedIn) this.end();
        })
        .catch(() => this.end())
        .finally(() => {
          checking = false;
        });
    }, everyMs);
    timer.unref();
    this.onClose(() => clearInterval(timer));
  }

  send(event: SseEvent): void {
    if (this.closed) return;
    const data = JSON.stringify(event.data).replace(/\n/g, '\\n');
    this.reply.raw.write(`id: ${event.id}\nevent: ${event.event}\ndata: ${data}\n\n`);
  }

  /** Ends the response (after an `end` event). */
  end(): void {
    if (!this.closed) this.reply.raw.end();
    this.finish();
  }

  private finish() {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const cleanup of this.cleanups.splice(0)) {
      try {
        cleanup();
      } catch {
        /* a failed cleanup must not stop the others */
      }
    }
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
  }
}

/** The id a reconnecting client resumes after: `Last-Event-ID`, else `?last_event_id=`. */
export function lastEventId(request: FastifyRequest): string | undefined {
  const header = request.headers['last-event-id'];
  const value = Array.isArray(header) ? header[0] : header;
  if (value && value.trim()) return value.trim();
  const query = (request.query as Record<string, unknown> | undefined)?.last_event_id;
  return typeof query === 'string' && query.trim() ? query.trim() : undefined;
}

/**
 * Runs `step` now and again after every `wake()`, never two at once (a wake during a
 * run schedules one more run), until the stream closes.
 */
export function serialPump(stream: SseStream, step: () => Promise<void>, onError: (err: unknown) => void): () => void {
  let running = false;
  let again = false;
  const run = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        if (stream.isClosed) return;
        await step();
      } while (again);
    } catch (err) {
      onError(err);
      stream.end();
    } finally {
      running = false;
    }
  };
  return () => void run();
}
