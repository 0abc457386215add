import { chmodSync, chownSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';

/** How long the log's lines gather in the socket between reads (counters are flushed every few seconds anyway). */
const READ_EVERY_MS = 25;
/**
 * The longest line kept (characters). Caddy's lines, without the fields the platform drops, are a few hundred
 * bytes; a longer one (a huge URI) is dropped and counted, and its bytes are never held.
 */
export const MAX_ACCESS_LINE_CHARS = 16 * 1024;
/** Connections at once: Caddy holds one (a second while it redials). */
const MAX_CONNECTIONS = 4;
/** The socket's file name in its directory. */
const SOCKET_NAME = 'caddy-access.sock';

/** The fields of one line of Caddy's JSON access log the edge reads (Caddy 2.6+), checked by `parseAccessLine`. */
export interface CaddyAccessEntry {
  request: { host: string; method: string; uri: string; remote_ip?: string };
  status: number;
  /** Seconds. */
  duration: number;
}

/** Why a line was not counted for any route. */
export type AccessLogDropReason = 'malformed' | 'oversized' | 'unknown_host';

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;

/**
 * One line of the log, checked field by field: an object with `request.host`, `.method`, `.uri`
 * (strings of bounded length), `status` (an HTTP status, 0 for a request Caddy aborted) and
 * `duration` (seconds, finite, at most a day). Anything else is null: the line counts for nothing.
 */
export function parseAccessLine(line: string): CaddyAccessEntry | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const { request, status, duration } = value as Record<string, unknown>;
  if (!request || typeof request !== 'object' || Array.isArray(request)) return null;
  const { host, method, uri, remote_ip } = request as Record<string, unknown>;
  if (!isText(host, 300) || !isText(method, 32) || !isText(uri, MAX_ACCESS_LINE_CHARS)) return null;
  if (remote_ip !== undefined && !isText(remote_ip, 64)) return null;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 0 || status > 999) return null;
  if (typeof duration !== 'number' || !Number.isFinite(duration) || duration < 0 || duration > 86_400) return null;
  return { request: { host, method, uri, ...(remote_ip !== undefined ? { remote_ip } : {}) }, status, duration };
}

export interface CaddyAccessLogOptions {
  /** The directory the socket is made in: created (or taken over) owner-only for the platform. */
  directory: string;
  /**
   * A group whose members may connect too (Caddy running as its own user: its group). The
   * directory is then 0710 and the socket 0660 with that group; without it both are owner-only.
   */
  groupId?: number;
  /** Pause between reads (batches many lines per read); default READ_EVERY_MS. */
  readEveryMs?: number;
  onEntry: (entry: CaddyAccessEntry) => void;
  onDrop: (reason: AccessLogDropReason) => void;
}

/**
 * The receiving end of Caddy's access log: a unix socket in a directory only the platform's
 * user (and, when configured, Caddy's group) can enter, which Caddy's `net` log writer connects
 * to (`unix//<path>`; Caddy keeps that connection across configuration loads and dials it
 * again when it breaks). Tenant code never has a way in: no TCP port on loopback, a path its
 * sandbox neither sees nor may open. Every line is checked (`parseAccessLine`), bounded in
 * length, read in bounded batches; what fails is dropped and counted through `onDrop`.
 */
export class CaddyAccessLog {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  readonly socketPath: string;

  constructor(private readonly options: CaddyAccessLogOptions) {
    this.socketPath = join(options.directory, SOCKET_NAME);
  }

  /** Caddy's network address of the socket (`unix//abs/path`). */
  get address(): string {
    return `unix/${this.socketPath}`;
  }

  async listen(): Promise<void> {
    if (this.server) return;
    this.prepareDirectory();
    rmSync(this.socketPath, { force: true }); // a previous run's socket
    const server = createServer((socket) => this.accept(socket));
    server.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => resolve());
    });
    const { groupId } = this.options;
    if (groupId !== undefined) chownSync(this.socketPath, process.getuid!(), groupId);
    chmodSync(this.socketPath, groupId !== undefined ? 0o660 : 0o600);
    this.server = server;
  }

  /**
   * The socket's directory, owned by this process's user, never a symlink, owner-only (or
   * owner plus Caddy's group, search only): connecting needs search permission on it.
   */
  private prepareDirectory() {
    const { directory, groupId } = this.options;
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    const stat = lstatSync(directory);
    if (!stat.isDirectory() || stat.uid !== process.getuid!())
      throw new Error(`${directory} must be a directory owned by the platform's user (the edge's access log socket lives there)`);
    if (groupId !== undefined) chownSync(directory, stat.uid, groupId);
    chmodSync(directory, groupId !== undefined ? 0o710 : 0o700);
  }

  private accept(socket: Socket) {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => {}); // Caddy reconnects; a broken line is one lost count
    socket.setEncoding('utf8');
    // Split by hand: one line per proxied request, and readline's per-line events cost as much as the parse.
    let rest = '';
    /** Inside a line already past the bound: its bytes are skipped up to its end. */
    let skipping = false;
    socket.on('data', (chunk: string) => {
      // One batch is one read: at most a socket read (64 KiB) after at most one line's start.
      const text = rest + chunk;
      rest = '';
      let start = 0;
      for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
        if (skipping) skipping = false;
        else if (end - start > MAX_ACCESS_LINE_CHARS) this.options.onDrop('oversized');
        else this.parse(text.slice(start, end));
        start = end + 1;
      }
      if (text.length - start > MAX_ACCESS_LINE_CHARS) {
        // A line without its end past the bound: dropped now, its remaining bytes skipped up to its end.
        if (!skipping) this.options.onDrop('oversized');
        skipping = true;
      } else if (!skipping) rest = text.slice(start);
      // Caddy writes one line per request: read them in batches (one read for many lines, not one each).
      socket.pause();
      setTimeout(() => socket.resume(), this.options.readEveryMs ?? READ_EVERY_MS).unref();
    });
  }

  private parse(line: string) {
    if (line.trim() === '') return;
    const entry = parseAccessLine(line);
    if (entry) this.options.onEntry(entry);
    else this.options.onDrop('malformed');
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(this.socketPath, { force: true });
  }
}
