import type { GuardMeasures, GuardSettings, RequestCounts } from '../../platform/db/schema.js';
import { latencyPercentile } from '../../platform/edge/request-stats.js';

/** A threshold crossed: which measure, its value and the limit (for the log, `error_detail` and the event). */
export interface GuardBreach {
  measure: '5xx_ratio' | 'p95_latency' | 'restarts' | 'alert';
  value: number;
  threshold: number;
  detail: string;
}

/** Counters since the watch started: now minus the start (each array element-wise). */
export function countsSince(now: RequestCounts, start: RequestCounts): RequestCounts {
  const minus = (a: number[], b: number[]) => a.map((v, i) => Number(v) - Number(b[i] ?? 0));
  return {
    requests: Number(now.requests) - Number(start.requests),
    classes: minus(now.classes, start.classes),
    buckets: minus(now.buckets, start.buckets),
  };
}

export function measure(window: RequestCounts, baseline: RequestCounts, restarts: number, settings: GuardSettings): GuardMeasures {
  const errors = window.classes[4] ?? 0;
  const enough = (c: RequestCounts) => Number(c.requests) >= settings.min_requests;
  return {
    requests: window.requests,
    errors_5xx: errors,
    error_ratio: window.requests > 0 ? Math.round((errors / window.requests) * 1000) / 1000 : null,
    p95_ms: enough(window) ? latencyPercentile(window.buckets.map(Number), 0.95) : null,
    baseline_p95_ms: enough(baseline) ? latencyPercentile(baseline.buckets.map(Number), 0.95) : null,
    restarts,
  };
}

/**
 * The first threshold the measures cross, or null. Ratios are judged only once the window has
 * `min_requests` requests (a handful of requests says nothing); latency only against a previous
 * release that had as many in its last window.
 */
export function breachOf(m: GuardMeasures, s: GuardSettings): GuardBreach | null {
  if (s.max_error_ratio !== null && m.requests >= s.min_requests && m.error_ratio !== null && m.error_ratio > s.max_error_ratio) {
    return {
      measure: '5xx_ratio',
      value: m.error_ratio,
      threshold: s.max_error_ratio,
      detail: `5xx ratio ${m.error_ratio} (${m.errors_5xx} of ${m.requests} requests) above the guard's ${s.max_error_ratio}`,
    };
  }
  if (s.max_p95_factor !== null && m.p95_ms !== null && m.baseline_p95_ms !== null && m.p95_ms > m.baseline_p95_ms * s.max_p95_factor) {
    return {
      measure: 'p95_latency',
      value: m.p95_ms,
      threshold: Math.round(m.baseline_p95_ms * s.max_p95_factor * 100) / 100,
      detail: `p95 latency ${m.p95_ms} ms above ${s.max_p95_factor}× the previous release's ${m.baseline_p95_ms} ms`,
    };
  }
  if (s.max_restarts !== null && m.restarts > s.max_restarts) {
    return {
      measure: 'restarts',
      value: m.restarts,
      threshold: s.max_restarts,
      detail: `${m.restarts} instance crash restarts above the guard's ${s.max_restarts}`,
    };
  }
  return null;
}
