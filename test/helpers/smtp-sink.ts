/**
 * A loopback SMTP server speaking enough of RFC 5321 for a client (EHLO, AUTH PLAIN, MAIL, RCPT,
 * DATA with dot-unstuffing, RSET, NOOP, QUIT) that keeps every message it accepts. `rejectNext`
 * answers the next DATA with a 451 (a temporary failure the client should retry).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface SunkMail {
  from: string;
  to: string[];
  /** Who authenticated (AUTH PLAIN), if anyone. */
  user: string | null;
  password: string | null;
  /** The message as received, headers and body, CRLF line ends, dot-unstuffed. */
  raw: string;
}

export class SmtpSink {
  readonly mails: SunkMail[] = [];
  rejectNext = 0;
  private server!: Server;
  private readonly sockets = new Set<Socket>();

  async start(): Promise<this> {
    this.server = createServer((socket) => this.session(socket));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }

  private session(socket: Socket) {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = '';
    let inData = false;
    let data: string[] = [];
    let mail: Omit<SunkMail, 'raw'> = { from: '', to: [], user: null, password: null };
    let user: string | null = null;
    let password: string | null = null;
    const say = (line: string) => socket.write(`${line}\r\n`);
    say('220 sink.test ESMTP');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      if (buffer.length > 10 * 1024 * 1024) return socket.destroy();
      let end: number;
      while ((end = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (inData) {
          if (line === '.') {
            inData = false;
            if (this.rejectNext > 0) {
              this.rejectNext -= 1;
              say('451 4.3.0 try again later');
            } else {
              this.mails.push({ ...mail, raw: data.join('\r\n') });
              say('250 2.0.0 Ok: queued');
            }
            data = [];
          } else data.push(line.startsWith('..') ? line.slice(1) : line);
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') {
          say('250-sink.test');
          say('250-AUTH PLAIN');
          say('250 8BITMIME');
        } else if (verb === 'HELO') say('250 sink.test');
        else if (verb === 'AUTH') {
          const [, , initial] = line.split(' ');
          const parts = Buffer.from(initial ?? '', 'base64')
            .toString('utf8')
            .split('\0');
          user = parts[1] ?? null;
          password = parts[2] ?? null;
          say('235 2.7.0 Authentication successful');
        } else if (verb === 'MAIL') {
          mail = { from: /<(.*)>/.exec(line)?.[1] ?? '', to: [], user, password };
          say('250 2.1.0 Ok');
        } else if (verb === 'RCPT') {
          mail.to.push(/<(.*)>/.exec(line)?.[1] ?? '');
          say('250 2.1.5 Ok');
        } else if (verb === 'DATA') {
          inData = true;
          say('354 End data with <CR><LF>.<CR><LF>');
        } else if (verb === 'RSET' || verb === 'NOOP') say('250 2.0.0 Ok');
        else if (verb === 'QUIT') {
          say('221 2.0.0 Bye');
          socket.end();
        } else say('502 5.5.2 Command not recognized');
      }
    });
  }
}

/** A MIME part's body by its content type, decoded from quoted-printable or base64 (enough for nodemailer's output). */
export function mimePart(raw: string, contentType: string): string | null {
  const at = raw.toLowerCase().indexOf(`content-type: ${contentType}`);
  if (at < 0) return null;
  const headersEnd = raw.indexOf('\r\n\r\n', at);
  const headers = raw.slice(at, headersEnd).toLowerCase();
  const rest = raw.slice(headersEnd + 4);
  const body = rest.slice(0, rest.search(/\r\n--[^\r\n]+/) >= 0 ? rest.search(/\r\n--[^\r\n]+/) : undefined);
  if (headers.includes('content-transfer-encoding: base64')) return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (headers.includes('content-transfer-encoding: quoted-printable'))
    return Buffer.from(
      body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
  return body;
}

/** A header's value (unfolded; an encoded-word is decoded when it is UTF-8 base64 or Q). */
export function mailHeader(raw: string, name: string): string | null {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  if (!line) return null;
  return line
    .slice(name.length + 1)
    .trim()
    .replace(/=\?utf-8\?([BQ])\?([^?]*)\?=\s*/gi, (_, enc: string, text: string) =>
      enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : Buffer.from(
            text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
            'latin1',
          ).toString('utf8'),
    );
}
