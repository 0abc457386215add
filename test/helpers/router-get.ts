import { request, type Agent } from 'node:http';

/**
 * A GET to 127.0.0.1:`port` with the given Host header (how tests reach apps through the
 * router); rejects on a socket error or after `timeoutMs`.
 */
export function routerGet(
  port: number,
  host: string,
  path = '/',
  timeoutMs = 5000,
  agent: Agent | false = false,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, timeout: timeoutMs, agent }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}
