/** The guard's judgement on measured counters (the HTTP proof is guarded-rollouts.test.ts). */
import { describe, expect, it } from 'vitest';
import type { GuardSettings, RequestCounts } from '../../src/platform/db/schema.js';
import { latencyPercentile } from '../../src/platform/edge/request-stats.js';
import { breachOf, countsSince, measure } from '../../src/modules/guards/guard-verdict.js';

const settings: GuardSettings = { window_seconds: 60, max_error_ratio: 0.2, max_p95_factor: 2, max_restarts: 1, min_requests: 10 };
/** `n` requests, all 2xx but `errors`, all in latency bucket `bucket` (bounds 1, 2, 5, 10, 25 ms…). */
const counts = (n: number, bucket: number, errors = 0): RequestCounts => {
  const buckets = new Array<number>(14).fill(0);
  buckets[bucket] = n;
  return { requests: n, classes: [0, n - errors, 0, 0, errors], buckets };
};

describe('guard verdict', () => {
  it('subtracts the counters at the start of the watch', () => {
    expect(countsSince(counts(30, 2, 5), counts(10, 2, 1))).toEqual(counts(20, 2, 4));
  });

  it('judges the 5xx ratio only past min_requests', () => {
    expect(breachOf(measure(counts(9, 2, 9), counts(0, 0), 0, settings), settings)).toBeNull();
    expect(breachOf(measure(counts(10, 2, 3), counts(0, 0), 0, settings), settings)).toMatchObject({
      measure: '5xx_ratio',
      value: 0.3,
      threshold: 0.2,
    });
  });

  it("judges p95 against the previous release's window, and not without one", () => {
    const slow = counts(20, 4); // 10-25 ms
    const fast = counts(20, 1); // 1-2 ms
    expect(breachOf(measure(slow, fast, 0, settings), settings)).toMatchObject({ measure: 'p95_latency' });
    expect(breachOf(measure(slow, counts(5, 1), 0, settings), settings)).toBeNull();
    expect(breachOf(measure(fast, fast, 0, settings), settings)).toBeNull();
  });

  it('counts crash restarts, and ignores unset thresholds', () => {
    expect(breachOf(measure(counts(0, 0), counts(0, 0), 2, settings), settings)).toMatchObject({ measure: 'restarts', value: 2 });
    const none = { ...settings, max_error_ratio: null, max_p95_factor: null, max_restarts: null };
    expect(breachOf(measure(counts(20, 4, 20), counts(20, 1), 5, none), none)).toBeNull();
  });

  it('reads percentiles off the histogram', () => {
    expect(latencyPercentile([0, 0, 0], 0.5)).toBeNull();
    expect(latencyPercentile([0, 10, 0], 0.5)).toBe(1.5);
    expect(latencyPercentile([90, 0, 10], 0.95)).toBe(3.5);
  });
});
