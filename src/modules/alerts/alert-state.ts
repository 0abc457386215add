import { latencyPercentile } from '../../platform/edge/request-stats.js';

export const ALERT_METRICS = ['error_rate', 'p95_latency_ms', 'restarts', 'memory_percent', 'log_matches'] as const;
export type AlertMetric = (typeof ALERT_METRICS)[number];
export type AlertState = 'ok' | 'pending' | 'firing' | 'resolved';

/**
 * Cumulative counters of a rule's scope: the edge's requests (5xx, latency buckets), crash
 * restarts and a `log_matches` rule's matched lines (absent in counters stored before it existed).
 */
export interface Counters {
  requests: number;
  errors: number;
  buckets: number[];
  restarts: number;
  matches?: number;
}

/** What one evaluation added: counters now minus counters at the previous evaluation. */
export interface Sample extends Counters {
  at: number;
}

/** Most samples a rule keeps (a long window evaluated often keeps the newest). */
export const MAX_SAMPLES = 720;

// Instances replaced by a deployment take their restart counts with them: a counter going down adds nothing.
const gain = (now: number, before: number) => Math.max(0, now - before);

export function delta(now: Counters, before: Counters, at: number): Sample {
  return {
    at,
    requests: gain(now.requests, before.requests),
    errors: gain(now.errors, before.errors),
    buckets: now.buckets.map((v, i) => gain(v, before.buckets[i] ?? 0)),
    restarts: gain(now.restarts, before.restarts),
    matches: gain(now.matches ?? 0, before.matches ?? 0),
  };
}

/** The samples still inside the window after adding `next`. */
export function slide(samples: Sample[], next: Sample, windowSeconds: number): Sample[] {
  const from = next.at - windowSeconds * 1000;
  return [...samples, next].filter((s) => s.at > from).slice(-MAX_SAMPLES);
}

/**
 * The metric over the window; null when there is too little to judge (fewer than `minRequests`
 * requests). `memoryPercent` is read from the metrics samples, not from the counters: a level, not a count.
 */
export function valueOf(metric: AlertMetric, samples: Sample[], minRequests: number, memoryPercent: number | null = null): number | null {
  const sum = (f: (s: Sample) => number) => samples.reduce((n, s) => n + f(s), 0);
  if (metric === 'memory_percent') return memoryPercent;
  if (metric === 'restarts') return sum((s) => s.restarts);
  if (metric === 'log_matches') return sum((s) => s.matches ?? 0);
  const requests = sum((s) => s.requests);
  if (requests < minRequests) return null;
  if (metric === 'error_rate') return Math.round((sum((s) => s.errors) / requests) * 1000) / 1000;
  const width = Math.max(0, ...samples.map((s) => s.buckets.length));
  const buckets = Array.from({ length: width }, (_, i) => sum((s) => s.buckets[i] ?? 0));
  return latencyPercentile(buckets, 0.95);
}

/**
 * The next state: a breach makes an ok rule pending, a pending rule firing once it has breached
 * for `forSeconds`; a firing rule that no longer breaches is resolved, a pending one ok again.
 */
export function nextState(state: AlertState, since: Date, breached: boolean, forSeconds: number, now: number): AlertState {
  if (breached) {
    if (state === 'ok' || state === 'resolved') return 'pending';
    if (state === 'pending' && now - since.getTime() >= forSeconds * 1000) return 'firing';
    return state;
  }
  if (state === 'firing') return 'resolved';
  if (state === 'pending') return 'ok';
  return state;
}
