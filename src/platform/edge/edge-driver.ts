import type { EdgeDirectory } from './edge-directory.js';
import type { RequestStats } from './request-stats.js';
import type { RouteTable } from './route-table.js';

/** The one per-request line of the edge (written at `debug`: see docs/api-decisions.md). */
export interface EdgeRequestLogger {
  /** The logger's level (pino's names): the per-request line is written at `debug` and `trace`. */
  readonly level: string;
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export const logsRequests = (logger: EdgeRequestLogger | null) => logger?.level === 'debug' || logger?.level === 'trace';

/**
 * The edge as a port: what the runtime needs from whatever proxies traffic to application
 * instances. The route table is the desired state (host name → healthy instances); the
 * runtime changes it and calls `apply()`, which resolves once new requests follow it. The
 * built-in router serves from the table itself; the Caddy driver renders it into one
 * configuration loaded atomically. A driver never drops a request on a route switch.
 */
export interface EdgeDriver {
  readonly name: 'builtin' | 'caddy' | 'nginx' | 'haproxy';
  readonly table: RouteTable;
  readonly listening: boolean;
  /** The plain HTTP port serving applications. */
  readonly port: number;
  /** The HTTPS port, or null when the edge serves no HTTPS. */
  readonly httpsPort: number | null;
  /** Custom domains, challenges and certificates (set before `listen`). */
  useDirectory(directory: EdgeDirectory): void;
  /** Per-application request counters (set before `listen`). */
  useStats(stats: RequestStats): void;
  useLogger(logger: EdgeRequestLogger): void;
  listen(): Promise<number>;
  /** Makes the table's current content live; resolves once new requests follow it. */
  apply(): Promise<void>;
  /**
   * Requests and WebSocket connections this edge has open to an instance now. Only an edge the
   * requests pass through knows (the built-in router); the others leave it out.
   */
  openConnections?(instanceId: string): number;
  /** Resolves when requests in flight to these instances have finished (or after `timeoutMs`). */
  drain(instanceIds: string[], timeoutMs: number): Promise<void>;
  /** An edge that runs apart from the control plane keeps serving after `close()` (an upgrade's stop). */
  keepServing?(): void;
  close(): Promise<void>;
}
