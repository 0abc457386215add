import { lookup } from 'node:dns/promises';
import { connect as tcpConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { isPublicAddress } from '../../platform/net/public-address.js';
import { postDelivery } from '../webhooks/index.js';
import { jsonLines, otlpLogs, syslogFrame, type DrainLine } from './formats.js';

export interface DrainTarget {
  kind: 'syslog' | 'https' | 'otlp';
  url: string;
  secret: string | null;
  ca: string | null;
}

export interface TransportOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

/** Sends one batch; rejects with a message that names no address or credential. */
export interface DrainTransport {
  send(lines: DrainLine[]): Promise<void>;
  close(): void;
}

/** Resolves a host and refuses it unless every address is public (or private ones are allowed): checked at each connect. */
async function checkedAddress(host: string, allowPrivate: boolean): Promise<string> {
  const addresses = isIP(host) ? [{ address: host }] : await lookup(host, { all: true, verbatim: true });
  if (addresses.length === 0) throw new Error('the drain’s host has no address');
  if (!allowPrivate && !addresses.every((a) => isPublicAddress(a.address)))
    throw new Error('the drain’s host is private or loopback (allowed only with WEBHOOK_ALLOW_PRIVATE=true)');
  return addresses[0]!.address;
}

/** RFC 5424 over one kept TCP or TLS connection (`syslog+tcp://host:port`, `syslog+tls://host:port`), reopened when it drops. */
class SyslogTransport implements DrainTransport {
  private socket: Socket | null = null;

  constructor(
    private readonly target: DrainTarget,
    private readonly options: TransportOptions,
  ) {}

  private async open(): Promise<Socket> {
    if (this.socket && !this.socket.destroyed) return this.socket;
    const url = new URL(this.target.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const address = await checkedAddress(host, this.options.allowPrivate);
    const port = Number(url.port || (url.protocol === 'syslog+tls:' ? 6514 : 514));
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s =
        url.protocol === 'syslog+tls:'
          ? tlsConnect({ host: address, port, servername: isIP(host) ? undefined : host, ca: this.target.ca ?? undefined }, () =>
              resolve(s),
            )
          : tcpConnect({ host: address, port }, () => resolve(s));
      s.setTimeout(this.options.timeoutMs, () => s.destroy(new Error(`no connection within ${this.options.timeoutMs} ms`)));
      s.once('error', reject);
    });
    socket.setTimeout(0);
    socket.setKeepAlive(true);
    socket.removeAllListeners('error');
    socket.on('error', () => socket.destroy());
    // The server says nothing back in RFC 5424 over TCP; whatever it sends is read and dropped.
    socket.on('data', () => {});
    this.socket = socket;
    return socket;
  }

  async send(lines: DrainLine[]): Promise<void> {
    const socket = await this.open();
    const frames = Buffer.concat(lines.map(syslogFrame));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`the syslog server took no data within ${this.options.timeoutMs} ms`));
      }, this.options.timeoutMs);
      socket.write(frames, (err) => {
        clearTimeout(timer);
        if (err) {
          socket.destroy();
          reject(new Error(`the syslog connection failed (${(err as NodeJS.ErrnoException).code ?? err.message})`));
        } else resolve();
      });
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }
}

/** One POST per batch: JSON lines with the shared secret (https), or an OTLP/HTTP JSON logs request (otlp). */
class HttpTransport implements DrainTransport {
  constructor(
    private readonly target: DrainTarget,
    private readonly options: TransportOptions,
  ) {}

  async send(lines: DrainLine[]): Promise<void> {
    const otlp = this.target.kind === 'otlp';
    const headers: Record<string, string> = {
      'user-agent': 'Slipway-LogDrain/1',
      'content-type': otlp ? 'application/json' : 'application/x-ndjson',
    };
    if (this.target.secret) {
      if (otlp) headers.authorization = `Bearer ${this.target.secret}`;
      else headers['x-slipway-drain-secret'] = this.target.secret;
    }
    const body = otlp ? JSON.stringify(otlpLogs(lines)) : jsonLines(lines);
    const status = await postDelivery(this.target.url, body, headers, this.options);
    if (status < 200 || status >= 300) throw new Error(`the drain answered ${status}`);
  }

  close(): void {}
}

export function transportFor(target: DrainTarget, options: TransportOptions): DrainTransport {
  return target.kind === 'syslog' ? new SyslogTransport(target, options) : new HttpTransport(target, options);
}
