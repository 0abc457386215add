import { Agent, request, type RequestOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface HttpsAnswer {
  status: number;
  body: string;
  serial: string;
  authorized: boolean;
  headers: Record<string, unknown>;
}

/** A GET over HTTPS to the edge on 127.0.0.1 for `host` (SNI and Host), trusting only `ca`. */
export function httpsGet(port: number, host: string, ca: string, agent: Agent | false = false): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const options: RequestOptions = { host: '127.0.0.1', port, servername: host, path: '/', headers: { host }, ca, agent, timeout: 10_000 };
    const req = request(options, (res) => {
      const socket = res.socket as TLSSocket;
      const serial = socket.getPeerCertificate().serialNumber;
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body, serial, authorized: socket.authorized, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** GETs over HTTPS from 4 loops (half keep-alive) until `stop` settles; every failure is counted. */
export async function httpsLoad(port: number, host: string, ca: string, stop: Promise<unknown>) {
  const report = { total: 0, failed: 0, failures: [] as string[], bodies: [] as string[], serials: new Set<string>() };
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 2, ca });
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  await Promise.all(
    [0, 1, 2, 3].map(async (i) => {
      while (!done) {
        report.total++;
        try {
          const r = await httpsGet(port, host, ca, i % 2 === 0 ? keepAlive : false);
          if (r.status !== 200) {
            report.failed++;
            report.failures.push(`status ${r.status}`);
            continue;
          }
          report.serials.add(r.serial);
          const version = r.body.split(':')[0]!;
          if (!report.bodies.includes(version)) report.bodies.push(version);
        } catch (err) {
          report.failed++;
          report.failures.push((err as Error).message);
        }
      }
    }),
  );
  keepAlive.destroy();
  return report;
}
