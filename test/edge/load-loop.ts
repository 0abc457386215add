import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * GETs from 4 loops (2 on keep-alive connections, 2 on a new connection each) until `stop`
 * settles. Nothing is retried (every error or non-200 is a failure), except with
 * `retryOnReusedConnection`: a GET whose kept-alive connection the server closed as it was sent
 * (RFC 9112 §9.3.1: clients retry idempotent requests then; browsers do) is sent again once on
 * a new connection and counted in `retriedOnReusedConnection`. A request on a new connection is never retried.
 */
export async function loadThroughEdge(port: number, host: string, stop: Promise<unknown>, ca?: string, retryOnReusedConnection = false) {
  const report = { total: 0, failures: [] as string[], bodies: [] as string[], retriedOnReusedConnection: 0 };
  const keepAlive = ca ? new HttpsAgent({ keepAlive: true, maxSockets: 2, ca }) : new HttpAgent({ keepAlive: true, maxSockets: 2 });
  const get = (agent: HttpAgent | HttpsAgent | false) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const options = { host: '127.0.0.1', port, path: '/', headers: { host }, agent, timeout: 10_000, servername: host, ca };
      const req: ClientRequest = (ca ? httpsRequest : httpRequest)(options, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => reject(Object.assign(err, { reused: req.reusedSocket && !res })));
      let res = false;
      req.on('response', () => (res = true));
      req.end();
    });
  let done = false;
  void stop.finally(() => (done = true));
  await Promise.all(
    [0, 1, 2, 3].map(async (i) => {
      while (!done) {
        report.total++;
        const agent = i % 2 === 0 ? keepAlive : false;
        try {
          const r = await get(agent).catch((err: Error & { reused?: boolean }) => {
            if (!(retryOnReusedConnection && err.reused)) throw err;
            report.retriedOnReusedConnection++;
            return get(false);
          });
          if (r.status !== 200) report.failures.push(`status ${r.status}: ${r.body.slice(0, 100)}`);
          else if (!report.bodies.includes(r.body.split(':')[0]!)) report.bodies.push(r.body.split(':')[0]!);
        } catch (err) {
          report.failures.push((err as Error).message);
        }
      }
    }),
  );
  keepAlive.destroy();
  return report;
}
