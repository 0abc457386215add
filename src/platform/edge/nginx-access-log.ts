import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync } from 'node:fs';
import type { AccessLogDropReason } from './caddy-access-log.js';

/** How often the log is read (nginx writes it in 64 KiB batches or once a second). */
const READ_EVERY_MS = 200;
/** Longest line kept (characters): longer ones (a huge URI) are dropped and counted, their bytes never held. */
export const MAX_NGINX_LINE_CHARS = 16 * 1024;
/** Most bytes read per tick: a burst is read over several ticks, never all at once. */
const READ_BUDGET_BYTES = 1024 * 1024;
/** Once read this far and caught up, the file is emptied (nginx appends, so it writes at the start again). */
const TRUNCATE_AT_BYTES = 4 * 1024 * 1024;

/** One request of nginx's access log (the `slipway` log format of nginx-config.ts). */
export interface NginxAccessEntry {
  /** The platform host name of the server block that answered (empty: no route). */
  route: string;
  status: number;
  /** Seconds. */
  duration: number;
  /** Empty unless the configuration logs each request's method, client and URI (ACCESS_LOG_FORMAT_WITH_REQUEST). */
  method: string;
  uri: string;
  remoteIp: string;
}

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;
const CODE_0 = 48;
const CODE_SPACE = 32;
const CODE_DASH = 45;
const CODE_OPEN_BRACE = 123;
const MAX_ROUTE_CHARS = 300;
const MAX_METHOD_CHARS = 32;
const MAX_CLIENT_CHARS = 64;

/**
 * One line, checked field by field; anything else is null (it counts for nothing). The line is
 * `route status seconds[ method client uri]` (nginx-config.ts); a JSON line is the format of
 * earlier versions, which an adopted nginx writes until the platform's first reload.
 */
export function parseNginxLine(line: string): NginxAccessEntry | null {
  if (line.charCodeAt(0) === CODE_OPEN_BRACE) return parseJsonLine(line);
  const routeEnd = line.indexOf(' ');
  if (routeEnd < 0 || routeEnd > MAX_ROUTE_CHARS || line.length < routeEnd + 6 || line.charCodeAt(routeEnd + 4) !== CODE_SPACE) return null;
  let status = 0;
  for (let i = routeEnd + 1; i < routeEnd + 4; i++) {
    const digit = line.charCodeAt(i) - CODE_0;
    if (digit < 0 || digit > 9) return null;
    status = status * 10 + digit;
  }
  const durationEnd = line.indexOf(' ', routeEnd + 5);
  const durationText = line.slice(routeEnd + 5, durationEnd < 0 ? line.length : durationEnd);
  // `$request_time` is seconds with milliseconds (`0.004`); Number('') would be 0.
  const duration = durationText === '' ? NaN : Number(durationText);
  if (!(duration >= 0 && duration <= 86_400)) return null;
  // nginx writes `-` for a variable never set (a request refused before its server block ran).
  const route = routeEnd === 1 && line.charCodeAt(0) === CODE_DASH ? '' : line.slice(0, routeEnd);
  if (durationEnd < 0) return { route, status, duration, method: '', uri: '', remoteIp: '' };
  const methodEnd = line.indexOf(' ', durationEnd + 1);
  const clientEnd = methodEnd < 0 ? -1 : line.indexOf(' ', methodEnd + 1);
  if (clientEnd < 0 || methodEnd - durationEnd - 1 > MAX_METHOD_CHARS || clientEnd - methodEnd - 1 > MAX_CLIENT_CHARS) return null;
  return {
    route,
    status,
    duration,
    method: line.slice(durationEnd + 1, methodEnd),
    remoteIp: line.slice(methodEnd + 1, clientEnd),
    uri: line.slice(clientEnd + 1),
  };
}

function parseJsonLine(line: string): NginxAccessEntry | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const { route, status, duration, method, uri, remote_ip } = value as Record<string, unknown>;
  if (
    !isText(route, MAX_ROUTE_CHARS) ||
    !isText(method, MAX_METHOD_CHARS) ||
    !isText(uri, MAX_NGINX_LINE_CHARS) ||
    !isText(remote_ip, MAX_CLIENT_CHARS)
  )
    return null;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 0 || status > 999) return null;
  if (typeof duration !== 'number' || !Number.isFinite(duration) || duration < 0 || duration > 86_400) return null;
  return { route, status, duration, method, uri, remoteIp: remote_ip };
}

export interface NginxAccessLogOptions {
  path: string;
  onEntry: (entry: NginxAccessEntry) => void;
  onDrop: (reason: AccessLogDropReason) => void;
  readEveryMs?: number;
}

/**
 * The platform's reader of nginx's access log: a file in the platform's own directory that the
 * nginx master opened (the workers inherit the descriptor), read from where it was at start,
 * in bounded batches, line by bounded line. Once read past TRUNCATE_AT_BYTES and caught up it is
 * emptied, so the file stays bounded while the platform reads it (lines nginx appends in the
 * instant between the last read and the truncation are lost: counts only).
 */
export class NginxAccessLog {
  private fd: number | null = null;
  private position = 0;
  private timer: NodeJS.Timeout | null = null;
  private rest = '';
  /** Inside a line already past the bound: its bytes are skipped up to its end. */
  private skipping = false;
  private readonly buffer = Buffer.alloc(64 * 1024);

  constructor(private readonly options: NginxAccessLogOptions) {}

  /** Starts reading at the file's current end (lines of before were counted by the previous reader, or by none). */
  start() {
    this.open();
    if (this.fd !== null) this.position = fstatSync(this.fd).size;
    this.timer = setInterval(() => this.read(), this.options.readEveryMs ?? READ_EVERY_MS);
    this.timer.unref();
  }

  /** Reads what nginx wrote since the last read (also called before counters must be complete). */
  read() {
    if (this.fd === null && !this.open()) return;
    const fd = this.fd!;
    const size = fstatSync(fd).size;
    if (size < this.position) {
      // Emptied by someone else (an operator's logrotate): start over at its beginning.
      this.position = 0;
      this.rest = '';
    }
    let budget = READ_BUDGET_BYTES;
    while (budget > 0) {
      const n = readSync(fd, this.buffer, 0, Math.min(this.buffer.length, budget), this.position);
      if (n === 0) break;
      this.position += n;
      budget -= n;
      // nginx's escaping keeps the log ASCII (a JSON line of before may hold UTF-8: its bytes count as characters).
      this.lines(this.buffer.toString('latin1', 0, n));
    }
    if (this.position >= TRUNCATE_AT_BYTES && this.position === fstatSync(fd).size) {
      ftruncateSync(fd, 0);
      this.position = 0;
    }
  }

  private open(): boolean {
    try {
      // Never through a symlink: the file is nginx's, in the platform's directory.
      this.fd = openSync(this.options.path, constants.O_RDWR | constants.O_NOFOLLOW);
      return true;
    } catch {
      return false; // not written yet
    }
  }

  private lines(chunk: string) {
    const text = this.rest + chunk;
    this.rest = '';
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      if (this.skipping) this.skipping = false;
      else if (end - start > MAX_NGINX_LINE_CHARS) this.options.onDrop('oversized');
      else this.parse(text.slice(start, end));
      start = end + 1;
    }
    if (text.length - start > MAX_NGINX_LINE_CHARS) {
      if (!this.skipping) this.options.onDrop('oversized');
      this.skipping = true;
    } else if (!this.skipping) this.rest = text.slice(start);
  }

  private parse(line: string) {
    if (line.trim() === '') return;
    const entry = parseNginxLine(line);
    if (entry) this.options.onEntry(entry);
    else this.options.onDrop('malformed');
  }

  close() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.fd !== null) {
      this.read();
      closeSync(this.fd);
    }
    this.fd = null;
  }
}
