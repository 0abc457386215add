import { request } from 'node:http';

export interface HealthTarget {
  host: string;
  port: number;
  path: string;
  /** Host header to send (the application's `health_check_host`), else `host:port`. */
  hostHeader?: string | null;
}

/** One GET: true on a 2xx answer within `timeoutMs`. */
export function probe(target: HealthTarget, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        path: target.path,
        method: 'GET',
        headers: { host: target.hostHeader || `${target.host}:${target.port}`, 'user-agent': 'slipway-health-check', connection: 'close' },
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Probes until a 2xx answer, the deadline, or `shouldStop()`; polls fast at first so an
 * app that starts instantly is seen within milliseconds, then backs off to 500 ms.
 */
export async function waitHealthy(target: HealthTarget, deadline: number, shouldStop: () => boolean = () => false): Promise<boolean> {
  let interval = 20;
  while (Date.now() < deadline && !shouldStop()) {
    if (await probe(target, Math.max(100, Math.min(2000, deadline - Date.now())))) return true;
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())));
    interval = Math.min(interval * 2, 500);
  }
  return false;
}
