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
 * happened in. A plain count, not a prom-client metric: the edge process, which has no
 * /metrics, then never loads prom-client (the metrics module reads these counts when scraped).
 */
const failures = new Map<BackgroundOperation, number>();

/** Failures of each operation in this process since it started. */
export function backgroundFailureCounts(): ReadonlyMap<BackgroundOperation, number> {
  return failures;
}

export function reportBackgroundFailure(
  logger: FailureLogger | null | undefined,
  operation: BackgroundOperation,
  err: unknown,
  fields: object = {},
): void {
  failures.set(operation, (failures.get(operation) ?? 0) + 1);
  logger?.warn({ err, operation, ...fields }, `${operation.replace(/_/g, ' ')} failed`);
}
