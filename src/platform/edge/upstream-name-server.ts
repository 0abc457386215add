import { createHash } from 'node:crypto';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIPv4, isIPv6 } from 'node:net';
import * as dnsPacket from 'dns-packet';

/** The zone the name server answers for; nothing else is asked of it. */
const ZONE = 'slipway.internal';
/** Suffix of an instance's address name: `<host>.addr.slipway.internal` resolves to `<host>`. */
const ADDRESS_SUFFIX = `.addr.${ZONE}`;
const NXDOMAIN = 3;
const SERVFAIL = 2;

/** A host name without an address of that family is an empty answer, not a failure. */
function noAddress(err: NodeJS.ErrnoException): Array<{ address: string }> {
  if (err.code === 'ENOTFOUND' || err.code === 'ENODATA') return [];
  throw err;
}

export interface SrvTarget {
  host: string;
  port: number;
}

/**
 * A small authoritative DNS server on loopback from which Caddy reads the instances of each
 * route (its `srv` dynamic upstreams, refreshed every few hundred milliseconds), so a redeploy
 * changes an answer here instead of Caddy's configuration: a configuration load restarts
 * Caddy's servers and closes clients' idle keep-alive connections, an answer change touches no
 * connection. Two kinds of names:
 * - `<hash>.routes.slipway.internal` SRV: the ready instances of one route (`nameOf(host)`);
 * - `<host>.addr.slipway.internal` A: the instance host itself. SRV targets must be domain names
 *   (Go's resolver refuses all-numeric ones such as `127.0.0.1.`), so an IP is wrapped in one.
 */
export class UpstreamNameServer {
  private socket: Socket | null = null;
  private records = new Map<string, SrvTarget[]>();
  private signature = '';

  /** The SRV name of a route's host name (stable across reloads: Caddy caches by name). */
  static nameOf(host: string): string {
    // DNS labels stop at 63 characters and names at 253: a route's host name may not fit as is.
    return `r${createHash('sha256').update(host).digest('hex').slice(0, 24)}.routes.${ZONE}`;
  }

  /** The name an SRV record targets for an instance host; dialed by Caddy as `<name>.:<port>`. */
  static targetOf(host: string): string {
    // An IPv6 address as one label: `::1` → `v6--1` (a label may not start with a dash).
    return `${isIPv6(host) ? `v6${host.replace(/:/g, '-')}` : host}${ADDRESS_SUFFIX}`;
  }

  /** The instance host a target name stands for (inverse of `targetOf`). */
  private static hostOf(target: string): string {
    const host = target.slice(0, -ADDRESS_SUFFIX.length);
    return host.startsWith('v6') && isIPv6(host.slice(2).replace(/-/g, ':')) ? host.slice(2).replace(/-/g, ':') : host;
  }

  get port(): number {
    const address = this.socket?.address();
    return address ? address.port : 0;
  }

  get address(): string {
    return `udp/127.0.0.1:${this.port}`;
  }

  async listen(): Promise<void> {
    if (this.socket) return;
    const socket = createSocket('udp4');
    socket.on('message', (msg, from) => void this.answer(socket, msg, from));
    // A malformed datagram or a closed peer must not take the edge down.
    socket.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve();
      });
    });
    this.socket = socket;
  }

  /** Replaces every route's records; true when an answer changed. */
  set(records: Map<string, SrvTarget[]>): boolean {
    const signature = JSON.stringify([...records].sort(([a], [b]) => (a < b ? -1 : 1)));
    if (signature === this.signature) return false;
    this.signature = signature;
    this.records = new Map([...records].map(([name, targets]) => [name.toLowerCase(), targets]));
    return true;
  }

  async close(): Promise<void> {
    const socket = this.socket;
    this.socket = null;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  private async answer(socket: Socket, msg: Buffer, from: RemoteInfo) {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return; // not DNS: nothing to answer
    }
    const question = query.questions?.[0];
    if (!question || query.type !== 'query') return;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    let answers: dnsPacket.Answer[] = [];
    let rcode = 0;
    try {
      if (name.endsWith(`.routes.${ZONE}`)) {
        const targets = this.records.get(name);
        if (!targets) rcode = NXDOMAIN;
        else if (question.type === 'SRV')
          answers = targets.map((t) => ({
            type: 'SRV',
            name: question.name,
            ttl: 0,
            data: { priority: 10, weight: 10, port: t.port, target: UpstreamNameServer.targetOf(t.host) },
          }));
      } else if (name.endsWith(ADDRESS_SUFFIX)) {
        const host = UpstreamNameServer.hostOf(name);
        const family = question.type === 'A' ? 4 : question.type === 'AAAA' ? 6 : 0;
        if (family) {
          const literal = family === 4 ? isIPv4(host) : isIPv6(host);
          const ips = literal
            ? [host]
            : isIPv4(host) || isIPv6(host)
              ? []
              : (await lookup(host, { family, all: true }).catch(noAddress)).map((a) => a.address);
          answers = ips.map((ip) => ({ type: family === 4 ? 'A' : 'AAAA', name: question.name, ttl: 0, data: ip }));
        }
      } else rcode = NXDOMAIN;
    } catch {
      rcode = SERVFAIL;
    }
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      // Authoritative: Go's resolver takes an empty answer from a non-authoritative server for a lame referral.
      flags: dnsPacket.AUTHORITATIVE_ANSWER | rcode,
      questions: [question],
      answers,
    });
    if (this.socket === socket) socket.send(response, from.port, from.address);
  }
}
