import { request } from 'node:http';
import type { ProbeResult } from './diagnosis.js';

export interface HealthTarget {
  host: string;
  port: number;
  path: string;
  /** Host header to send (the application's `health_check_host`), else `host:port`. */
  hostHeader?: string | null;
}

/** A failed request's error in words a user acts on. */
function failureWords(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    // A sandboxed instance is reached through its network helper, which accepts and then closes
    // when nothing listens inside: the same fact as a refusal, from the app's side.
    case 'ECONNRESET':
      return 'connection closed without an answer (nothing accepted it on that port)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return err.code ? `${err.code.toLowerCase()}` : err.message;
  }
}

/** One GET and what it got: ok on a 2xx answer within `timeoutMs`. */
export function probeResult(target: HealthTarget, timeoutMs = 2000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let timedOut = false;
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
        const status = res.statusCode ?? null;
        const ok = status !== null && status >= 200 && status < 300;
        resolve({ ok, status, result: `HTTP ${status}` });
      },
    );
    req.on('timeout', () => {
      timedOut = true;
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({
        ok: false,
        status: null,
        result: timedOut ? `no answer within ${Math.round(timeoutMs / 100) / 10}s` : failureWords(err),
      }),
    );
    req.end();
  });
}

/** One GET: true on a 2xx answer within `timeoutMs`. */
export async function probe(target: HealthTarget, timeoutMs = 2000): Promise<boolean> {
  return (await probeResult(target, timeoutMs)).ok;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Probes stay at most this far apart while an app is still starting (a loopback GET costs next to nothing). */
const STARTING_INTERVAL_MS = 100;
/** How long an app counts as starting for the poll (most answer within a few seconds). */
const STARTING_MS = 5000;

/**
 * Probes until a 2xx answer, the deadline, or `shouldStop()`; polls fast at first so an
 * app that starts instantly is seen within milliseconds, at most 100 ms apart for its first
 * 5 s (a wider step there cost a deploy up to 320 ms after the app answered: bench/README.md),
 * then backs off to 500 ms.
 * `onProbe` sees every result (the last one says what a failed check got).
 */
export async function waitHealthy(
  target: HealthTarget,
  deadline: number,
  shouldStop: () => boolean = () => false,
  onProbe: (result: ProbeResult) => void = () => {},
): Promise<boolean> {
  let interval = 20;
  const started = Date.now();
  while (Date.now() < deadline && !shouldStop()) {
    const result = await probeResult(target, Math.max(100, Math.min(2000, deadline - Date.now())));
    onProbe(result);
    if (result.ok) return true;
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())));
    interval = Math.min(interval * 2, Date.now() - started < STARTING_MS ? STARTING_INTERVAL_MS : 500);
  }
  return false;
}
