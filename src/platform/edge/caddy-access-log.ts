import { createServer, type Server, type Socket } from 'node:net';

/** How long the log's lines gather in the socket between reads (counters are flushed every few seconds anyway). */
const READ_EVERY_MS = 25;

/** The fields of one line of Caddy's JSON access log the edge reads (Caddy 2.6+). */
export interface CaddyAccessEntry {
  request?: { host?: string; method?: string; uri?: string; remote_ip?: string };
  status?: number;
  /** Seconds. */
  duration?: number;
}

/**
 * The receiving end of Caddy's access log: a TCP listener on loopback that Caddy's `net` log
 * writer connects to (Caddy keeps that connection across configuration loads and dials it again
 * when it breaks); every JSON line is handed to `onEntry`. The platform counts requests from it
 * as the built-in edge counts its own.
 */
export class CaddyAccessLog {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly onEntry: (entry: CaddyAccessEntry) => void) {}

  get address(): string {
    const address = this.server?.address();
    return `tcp/127.0.0.1:${address && typeof address === 'object' ? address.port : 0}`;
  }

  async listen(): Promise<void> {
    if (this.server) return;
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {}); // Caddy reconnects; a broken line is one lost count
      socket.setEncoding('utf8');
      // Split by hand: one line per proxied request, and readline's per-line events cost as much as the parse.
      let rest = '';
      socket.on('data', (chunk: string) => {
        const text = rest + chunk;
        let start = 0;
        for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
          this.parse(text.slice(start, end));
          start = end + 1;
        }
        rest = text.slice(start);
        // Caddy writes one line per request: read them in batches (one read for many lines, not one each).
        socket.pause();
        setTimeout(() => socket.resume(), READ_EVERY_MS).unref();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  private parse(line: string) {
    let entry: CaddyAccessEntry;
    try {
      entry = JSON.parse(line) as CaddyAccessEntry;
    } catch {
      return; // not a log line: nothing to count
    }
    this.onEntry(entry);
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
