import { Counter } from 'prom-client';

/** Where a failure of background work is written (any of the platform's pino loggers). */
export interface FailureLogger {
  warn(fields: object, message: string): void;
}

/** The background work whose failure is tolerated (retried at its next turn, or lost at shutdown) but never silent. */
export type BackgroundOperation = 'request_stats_flush' | 'edge_directory_refresh' | 'kubernetes_job_delete' | 'denied_requests_flush';

/**
 * Failures of background work that the platform outlives: a flush of the edge's request
 * counters, a reload of the custom domains, the clean-up of a finished Kubernetes Job. The
 * work goes on (next interval, next sweep), so each failure is a log line and a count here,
 * exposed by /metrics (`slipway_background_failures_total{operation}`) of the process it
 * happened in.
 */
export const backgroundFailures = new Counter<'operation'>({
  name: 'slipway_background_failures_total',
  help: 'Background work that failed and was left to its next turn (or lost at shutdown), by operation',
  labelNames: ['operation'],
  registers: [],
});

export function reportBackgroundFailure(
  logger: FailureLogger | null | undefined,
  operation: BackgroundOperation,
  err: unknown,
  fields: object = {},
): void {
  backgroundFailures.inc({ operation });
  logger?.warn({ err, operation, ...fields }, `${operation.replace(/_/g, ' ')} failed`);
}
