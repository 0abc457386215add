import { latencyPercentile, readRequestStats } from '../../platform/edge/request-stats.js';
import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import type { ApplicationsService } from '../applications/index.js';
import { findProductionEnvironmentId } from '../../platform/environments/index.js';
import { chosenEnvironmentId } from '../../pipeline/index.js';

export const RANGES = { '1h': 3600, '6h': 6 * 3600, '24h': 24 * 3600, '7d': 7 * 86400, '30d': 30 * 86400 } as const;
export type RangeName = keyof typeof RANGES;
const MAX_POINTS = 200;

/**
 * The resource history of an application's production processes. Samples are averaged
 * (CPU, memory) or maxed (instances, restarts) into equal buckets so an answer never has
 * more than 200 points.
 */
export class ObservabilityService {
  constructor(
    private readonly db: Db,
    private readonly apps: ApplicationsService,
  ) {}

  /** Requests the edge served for the application over the last `minutes` (per minute, environment, process type). */
  async requests(userId: string, applicationId: string, minutes: number) {
    await this.apps.authorize(userId, applicationId);
    return readRequestStats(this.db, applicationId, new Date(Math.floor(Date.now() / 60_000) * 60_000 - (minutes - 1) * 60_000));
  }

  /**
   * The application's instances in one environment (production by default) as the runtime
   * last recorded them: what is serving right now, its health and its restarts (`ps`).
   */
  async instances(userId: string, applicationId: string, environment: string | undefined) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = await chosenEnvironmentId(this.db, applicationId, environment);
    const rows = await this.db
      .selectFrom('instances as i')
      .leftJoin('releases as r', 'r.id', 'i.release_id')
      .select(['i.id', 'i.process_type', 'i.ordinal', 'i.state', 'i.restart_count', 'i.last_exit', 'i.started_at', 'i.updated_at'])
      .select('r.version as release_version')
      .where('i.application_id', '=', applicationId)
      .where('i.environment_id', '=', environmentId)
      .orderBy('i.process_type')
      .orderBy('i.ordinal')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      name: `${r.process_type}.${r.ordinal}`,
      process_type: r.process_type,
      state: r.state,
      restarts: r.restart_count,
      last_exit: r.last_exit,
      release_version: r.release_version,
      started_at: r.started_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
    }));
  }

  /** Production's history, or that of `environment` (a slug of the application's project). */
  async history(userId: string, applicationId: string, range: RangeName, environment?: string) {
    await this.apps.authorize(userId, applicationId);
    const environmentId = environment
      ? await chosenEnvironmentId(this.db, applicationId, environment)
      : await findProductionEnvironmentId(this.db, applicationId);
    if (!environmentId) throw notFound('Production environment');
    const seconds = RANGES[range];
    const bucket = Math.max(1, Math.ceil(seconds / MAX_POINTS));
    const { rows } = await sql<{ bucket: Date; cpu: number; memory: number; pods: number; restarts: number }>`
      SELECT date_bin(make_interval(secs => ${bucket}), sampled_at, timestamptz '2000-01-01') AS bucket,
             round(avg(cpu_usage_m))::int AS cpu, round(avg(memory_usage_bytes))::bigint AS memory,
             max(pod_count) AS pods, max(restart_count) AS restarts
      FROM metric_samples
      WHERE application_id = ${applicationId} AND environment_id = ${environmentId}
        AND sampled_at > now() - make_interval(secs => ${seconds})
      GROUP BY 1 ORDER BY 1 DESC LIMIT ${MAX_POINTS}`.execute(this.db);
    return {
      range,
      requests: await this.requestHistory(applicationId, environmentId, seconds),
      history: rows.reverse().map((r) => ({
        timestamp: r.bucket.toISOString(),
        cpu_usage_m: Number(r.cpu),
        memory_usage_bytes: Number(r.memory),
        pod_count: Number(r.pods),
        restart_count: Number(r.restarts),
      })),
    };
  }

  /**
   * The edge's counters of the environment in equal buckets per process type (at most 200 per
   * type; the counters are per minute, so a bucket is never shorter than a minute): requests
   * per second over the bucket, status classes, and latency percentiles from the histogram.
   */
  private async requestHistory(applicationId: string, environmentId: string, seconds: number) {
    const bucket = Math.max(60, Math.ceil(seconds / MAX_POINTS / 60) * 60);
    const { rows } = await sql<{ bucket: Date; process_type: string; requests: string; classes: string[]; buckets: string[] }>`
      SELECT b.bucket, b.process_type, sum(b.requests) AS requests,
             array(SELECT sum(v) FROM request_stats r2, unnest(r2.status_classes) WITH ORDINALITY u(v, i)
                   WHERE r2.application_id = ${applicationId} AND r2.environment_id = ${environmentId} AND r2.process_type = b.process_type
                     AND date_bin(make_interval(secs => ${bucket}), r2.minute, timestamptz '2000-01-01') = b.bucket GROUP BY i ORDER BY i) AS classes,
             array(SELECT sum(v) FROM request_stats r2, unnest(r2.latency_buckets) WITH ORDINALITY u(v, i)
                   WHERE r2.application_id = ${applicationId} AND r2.environment_id = ${environmentId} AND r2.process_type = b.process_type
                     AND date_bin(make_interval(secs => ${bucket}), r2.minute, timestamptz '2000-01-01') = b.bucket GROUP BY i ORDER BY i) AS buckets
      FROM (SELECT date_bin(make_interval(secs => ${bucket}), minute, timestamptz '2000-01-01') AS bucket, process_type, requests
            FROM request_stats
            WHERE application_id = ${applicationId} AND environment_id = ${environmentId}
              AND minute > now() - make_interval(secs => ${seconds})) b
      GROUP BY 1, 2 ORDER BY 1, 2`.execute(this.db);
    return rows.map((r) => {
      const [c1, c2, c3, c4, c5] = r.classes.map(Number);
      const histogram = r.buckets.map(Number);
      return {
        timestamp: r.bucket.toISOString(),
        process_type: r.process_type,
        requests: Number(r.requests),
        requests_per_second: Math.round((Number(r.requests) / bucket) * 1000) / 1000,
        status: { '1xx': c1 ?? 0, '2xx': c2 ?? 0, '3xx': c3 ?? 0, '4xx': c4 ?? 0, '5xx': c5 ?? 0 },
        latency_ms: {
          p50: latencyPercentile(histogram, 0.5),
          p95: latencyPercentile(histogram, 0.95),
          p99: latencyPercentile(histogram, 0.99),
        },
      };
    });
  }
}
