import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import * as dnsPacket from 'dns-packet';

/**
 * A tiny authoritative DNS server on loopback (UDP) for the domain ownership check: it answers
 * TXT questions from `txt` (name → values), NXDOMAIN for anything else. The platform is pointed
 * at it with DOMAIN_DNS_SERVER=`address`.
 */
export class TxtServer {
  /** TXT values per lower-case name. */
  readonly txt = new Map<string, string[]>();
  /** Names asked, in order. */
  readonly asked: string[] = [];
  private socket!: Socket;

  async start(): Promise<this> {
    this.socket = createSocket('udp4');
    this.socket.on('message', (message, remote) => {
      let query: dnsPacket.Packet;
      try {
        query = dnsPacket.decode(message);
      } catch {
        return;
      }
      const question = query.questions?.[0];
      if (!question) return;
      const name = question.name.toLowerCase();
      this.asked.push(name);
      const values = question.type === 'TXT' ? this.txt.get(name) : undefined;
      const answer = dnsPacket.encode({
        type: 'response',
        id: query.id,
        flags: dnsPacket.AUTHORITATIVE_ANSWER | (values || this.txt.has(name) ? 0 : 3), // rcode 3: NXDOMAIN
        questions: [question],
        answers: (values ?? []).map((data) => ({ type: 'TXT' as const, name: question.name, ttl: 5, class: 'IN' as const, data })),
      });
      this.socket.send(answer, remote.port, remote.address);
    });
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
    return this;
  }

  /** `address:port`, what DOMAIN_DNS_SERVER takes. */
  get address(): string {
    const { port } = this.socket.address() as AddressInfo;
    return `127.0.0.1:${port}`;
  }

  /** Publishes the TXT record the platform asks a domain's owner to add. */
  prove(hostname: string, token: string) {
    const name = `_slipway-challenge.${hostname}`;
    this.txt.set(name, [...(this.txt.get(name) ?? []), token]);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}
